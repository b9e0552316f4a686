//! Agent controller: Agent spec → host record (role, hostname, approval, disk, pool), and
//! deregistration on delete. Status is written by the persister from the store.
//!
//! `dereference` reads, `plan` decides, `apply` writes.

mod apply;
mod dereference;
mod plan;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::controller::{Action, Controller};
use manager::cache::Cached;
use manager::controller::{Error, set_finalizer};

use super::context::Context;
use super::finalizer::{FinalizerStep, finalizer_step};
use crate::api::agent::Agent;

pub use apply::AGENT_FINALIZER;
use apply::FIELD_MANAGER;
pub use dereference::Dereferenced;
pub use plan::{Plan, binding_error, host_spec, plan};

/// The Agent controller, on the Agents watch it shares with the persister.
pub(super) async fn run(
    ctx: Arc<Context>,
    mut agents: Cached<Agent>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let trigger = agents.triggers.remove(0);
    Controller::for_stream(trigger, agents.store.clone())
        .graceful_shutdown_on(stop)
        .run(
            reconcile,
            super::context::error_policy(|c| &c.metrics.agent),
            ctx,
        )
        .for_each(|_| async {})
        .await
}

pub async fn reconcile(agent: Arc<Agent>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.metrics.agent.reconciled();
    match finalizer_step(agent.as_ref(), AGENT_FINALIZER) {
        FinalizerStep::Add => {
            set_finalizer(
                &ctx.client,
                agent.as_ref(),
                FIELD_MANAGER,
                AGENT_FINALIZER,
                true,
            )
            .await?
        }
        FinalizerStep::Proceed => {}
        FinalizerStep::Cleanup => {
            apply::deregister(&agent, &ctx).await?;
            return Ok(Action::await_change());
        }
        FinalizerStep::Gone => return Ok(Action::await_change()),
    }
    let read = dereference::dereference(&agent, &ctx).await?;
    let plan = plan(&agent.spec, &read);
    Ok(apply::apply(&agent, &ctx, plan))
}

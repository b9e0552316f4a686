//! InfraEnv controller: builds the discovery ignition from the InfraEnv, its pull secret and the
//! NMStateConfigs it selects, publishes the image URLs, and registers the infra-env with the
//! REST API. Any content change moves the ISO URL and `createdTime`.
//!
//! `dereference` reads, `plan` (with the pure `image`) decides, `status` builds the status and
//! its event, `apply` writes.

mod apply;
mod dereference;
mod image;
mod plan;
mod status;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use manager::cache::{Cached, TriggerStream};
use manager::controller::{Error, set_finalizer};

use super::context::Context;
use super::finalizer::{FinalizerStep, finalizer_step};
use crate::api::hive::ClusterDeployment;
use crate::api::infraenv::InfraEnv;
use crate::api::nmstateconfig::NMStateConfig;

pub use super::context::ImageSettings;
use apply::STATUS_MANAGER;
pub use dereference::{BoundCluster, Dereferenced};
pub use image::{
    ImageRevision, ImageUrls, content_rev, current_token, image_urls, static_network_of,
};
pub use plan::{DEFAULT_OS_VERSION, Problem, decide};
pub use status::status;

pub const INFRAENV_FINALIZER: &str = "infraenv.agent-install.openshift.io/ai-deprovision";

/// What else reconciles an InfraEnv: NMStateConfigs, pull secrets and ClusterDeployments change
/// what its image holds.
pub(super) struct Triggers {
    pub nmstate_configs: TriggerStream<NMStateConfig>,
    pub secrets: TriggerStream<Secret>,
    pub cds: TriggerStream<ClusterDeployment>,
}

/// The InfraEnv controller: an InfraEnv change, and any [`Triggers`] change in its namespace.
pub(super) async fn run(
    ctx: Arc<Context>,
    infraenvs: Cached<InfraEnv>,
    triggers: Triggers,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ie_store = infraenvs.store.clone();
    let in_namespace_of = move |ns: Option<String>| {
        manager::cache::in_namespace(&ie_store, &ns.unwrap_or_default())
            .iter()
            .map(ObjectRef::from_obj)
            .collect::<Vec<_>>()
    };
    let (by_ns1, by_ns2, by_ns3) = (
        in_namespace_of.clone(),
        in_namespace_of.clone(),
        in_namespace_of,
    );
    let mut trigger = infraenvs.triggers;
    Controller::for_stream(trigger.remove(0), infraenvs.store)
        // Re-run every InfraEnv of the namespace (they are few).
        .watches_stream(triggers.nmstate_configs, move |o| {
            by_ns1(o.metadata.namespace)
        })
        .watches_stream(triggers.secrets, move |o| by_ns2(o.metadata.namespace))
        .watches_stream(triggers.cds, move |o| by_ns3(o.metadata.namespace))
        .graceful_shutdown_on(stop)
        .run(
            reconcile,
            super::context::error_policy(|c| &c.metrics.infraenv),
            ctx,
        )
        .for_each(|_| async {})
        .await
}

pub async fn reconcile(ie: Arc<InfraEnv>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.metrics.infraenv.reconciled();
    match finalizer_step(ie.as_ref(), INFRAENV_FINALIZER) {
        FinalizerStep::Add => {
            set_finalizer(
                &ctx.client,
                ie.as_ref(),
                STATUS_MANAGER,
                INFRAENV_FINALIZER,
                true,
            )
            .await?
        }
        FinalizerStep::Proceed => {}
        FinalizerStep::Cleanup => {
            ctx.store.remove_infra_env(&ie.uid().unwrap_or_default());
            set_finalizer(
                &ctx.client,
                ie.as_ref(),
                STATUS_MANAGER,
                INFRAENV_FINALIZER,
                false,
            )
            .await?;
            return Ok(Action::await_change());
        }
        FinalizerStep::Gone => return Ok(Action::await_change()),
    }
    sync(&ie, &ctx).await
}

/// Read, decide, status, apply (`docs/architecture.md`, "How to add a controller").
pub(crate) async fn sync(ie: &InfraEnv, ctx: &Context) -> Result<Action, Error> {
    let now = Timestamp::now();
    // Only this core writes the status: decide from the one it wrote last while the watch
    // cache does not show it yet (else the status went again, with a new createdTime, and
    // ImageCreated was said twice).
    let ie = &as_written(ie, ctx.infra_env_statuses.get(&apply::written_key(ie)));
    let read = dereference::dereference(ie, ctx).await?;
    let outcome = decide(ie, &read, &ctx.images);
    let (status, event) = status(ie, &outcome, now);
    apply::apply(ie, ctx, &outcome, &status, event.as_ref()).await?;
    Ok(plan::next_look(ie, &outcome))
}

/// The InfraEnv with the status this core wrote last, when it has one the cache lags behind.
pub(crate) fn as_written(
    ie: &InfraEnv,
    written: Option<crate::api::infraenv::InfraEnvStatus>,
) -> std::borrow::Cow<'_, InfraEnv> {
    match written {
        Some(status) if ie.status.as_ref() != Some(&status) => {
            let mut newer = ie.clone();
            newer.status = Some(status);
            std::borrow::Cow::Owned(newer)
        }
        _ => std::borrow::Cow::Borrowed(ie),
    }
}

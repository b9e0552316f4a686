//! The apply phase: the store follows the plan; on delete, the host is deregistered and the
//! finalizer released.

use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use manager::controller::Error;

use super::plan::Plan;
use crate::api::agent::Agent;
use crate::service::controllers::context::Context;

pub const AGENT_FINALIZER: &str = "agent.agent-install.openshift.io/ai-deprovision";
/// Owns the Agent's finalizer (the persister writes status under its own manager).
pub(super) const FIELD_MANAGER: &str = "assisted-core-agent";

/// The store follows the host spec; a missing ClusterDeployment is looked at again later.
pub(super) fn apply(agent: &Agent, ctx: &Context, plan: Plan) -> Action {
    if !ctx
        .store
        .sync_host_spec(&agent.name_any(), &plan.spec, plan.spec_error)
    {
        tracing::debug!(agent = %agent.name_any(), "no host record for this Agent yet");
    }
    plan.recheck
        .map(Action::requeue)
        .unwrap_or_else(Action::await_change)
}

/// The Agent is being deleted: the host leaves the store, then the finalizer goes.
pub(super) async fn deregister(agent: &Agent, ctx: &Context) -> Result<(), Error> {
    tracing::info!(agent = %agent.name_any(), "Agent deleted: deregistering the host");
    ctx.store.remove_host(&agent.name_any());
    release_finalizer(ctx, agent).await
}

/// Drops the deregistration finalizer whoever added it: the persister creates Agents with it
/// (one write fewer per host), so it is not this controller's applied field. A merge patch of
/// the remaining list, conditional on the resourceVersion read, so a concurrent change of the
/// list fails (and is retried) instead of being overwritten.
async fn release_finalizer(ctx: &Context, agent: &Agent) -> Result<(), Error> {
    if !agent.finalizers().iter().any(|f| f == AGENT_FINALIZER) {
        return Ok(());
    }
    let rest: Vec<&String> = agent
        .finalizers()
        .iter()
        .filter(|f| *f != AGENT_FINALIZER)
        .collect();
    let patch = serde_json::json!({"metadata": {
        "finalizers": rest,
        "resourceVersion": agent.resource_version(),
    }});
    let api: Api<Agent> =
        Api::namespaced(ctx.client.clone(), &agent.namespace().unwrap_or_default());
    match api
        .patch(
            &agent.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(source) => Err(Error::Apply {
            what: format!("finalizer of Agent {}", agent.name_any()),
            source,
        }),
    }
}

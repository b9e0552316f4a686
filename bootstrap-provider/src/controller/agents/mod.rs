//! The Agent controller: an Agent that booted the discovery ISO of one of our InfraEnvs is
//! matched to its Machine by the boot MAC of the BareMetalHost the Machine's Metal3Machine
//! consumes, then given its role, hostname, node labels and installation disk, and approved
//! (workers that arrive during the day-1 install wait for day-2). Foreign Agents are ignored.
//!
//! `dereference.rs` reads (the caches, and the hosts' `metaData` Secrets), `plan.rs` decides
//! (pure; the Agent's fields in `desired.rs`), `apply.rs` writes; `triggers.rs` maps a watched
//! Metal3Machine, host or AgentClusterInstall to the Agents it concerns.

pub mod apply;
pub mod dereference;
pub mod desired;
pub mod plan;
pub mod triggers;

use std::sync::Arc;

use assisted_api::Agent;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller};
use manager::controller::Fingerprints;
use tokio::sync::watch;

use super::caches::AgentTriggers;
use super::fingerprints::{claim_fields, hold_fields, host_identity_fields};
use super::{Context, Error, object_key};

async fn reconcile(agent: Arc<Agent>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.agent_metrics.reconciled();
    let dereferenced = dereference::dereference(&ctx.client, &ctx.caches, agent.clone()).await?;
    let plan = plan::plan(&dereferenced);
    apply::apply(&ctx, &agent, &plan).await
}

fn error_policy(agent: Arc<Agent>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.agent_metrics.failed(error.phase());
    super::retry(&agent.name_any(), error)
}

pub async fn run(ctx: Arc<Context>, triggers: AgentTriggers, shutdown: watch::Receiver<bool>) {
    // Agents are created by the assisted core with their InfraEnv's agent labels, the shard's
    // watch-filter label among them; Agents of InfraEnvs not made here are ignored.
    let store = ctx.caches.agents.clone();
    let controller = Controller::for_stream(triggers.agents, store.clone());
    let (s1, s2, s3) = (store.clone(), store.clone(), store.clone());
    // Only the fields matching reads re-queue Agents (see `Fingerprints`).
    let (seen_m3m, seen_bmh, seen_aci) = (
        Fingerprints::default(),
        Fingerprints::default(),
        Fingerprints::default(),
    );
    let controller = controller
        .watches_stream(triggers.metal3machines, move |m| {
            if !seen_m3m.changed(object_key(&m), claim_fields(&m)) {
                return Vec::new();
            }
            triggers::agents_in(&s1.state(), m.namespace())
        })
        .watches_stream(triggers.hosts, move |h| {
            if !seen_bmh.changed(object_key(&h), host_identity_fields(&h)) {
                return Vec::new();
            }
            triggers::agents_in(&s2.state(), h.namespace())
        })
        // Held workers are approved when their cluster reaches adding-hosts.
        .watches_stream(triggers.acis, move |aci| {
            if !seen_aci.changed(object_key(&aci), hold_fields(&aci)) {
                return Vec::new();
            }
            triggers::agents_in(&s3.state(), aci.namespace())
        });
    super::drive(controller, reconcile, error_policy, ctx, shutdown, "agent").await;
}

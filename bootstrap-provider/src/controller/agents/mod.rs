//! The Agent controller: an Agent that booted the discovery ISO of one of our InfraEnvs is
//! matched to its Machine by the boot MAC of the BareMetalHost the Machine's Metal3Machine
//! consumes, then given its role, hostname, node labels and installation disk, and approved
//! (workers that arrive during the day-1 install wait for day-2). Foreign Agents are ignored.

pub mod dereference;
pub mod desired;
pub mod plan;

use std::sync::Arc;

use assisted_api::Agent;
use assisted_api::infraenv::INFRAENV_NAME_LABEL;
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use manager::controller::Fingerprints;
use serde_json::json;
use tokio::sync::watch;

use crate::controller::matching::BAREMETALHOST_ANNOTATION;

use super::caches::AgentTriggers;
use super::{Context, Error, apply_params, publish};

async fn reconcile(agent: Arc<Agent>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.agent_metrics.reconciled();
    let dereferenced = dereference::dereference(&ctx.client, &ctx.caches, agent.clone()).await?;
    let plan = plan::plan(&dereferenced);
    if let Some(desired) = &plan.desired {
        let patch = json!({
            "apiVersion": Agent::api_version(&()),
            "kind": Agent::kind(&()),
            "metadata": {
                "name": agent.name_any(),
                "labels": desired.labels,
                "annotations": desired.annotations,
            },
            "spec": desired.spec,
        });
        // Sent before and still held by the Agent: not sent again.
        let key = key(agent.as_ref());
        let (skip, hash) =
            manager::controller::unchanged(&ctx.applied, &key, Some(agent.as_ref()), &patch);
        if !skip {
            Api::<Agent>::namespaced(ctx.client.clone(), &agent.namespace().unwrap_or_default())
                .patch(&agent.name_any(), &apply_params(), &Patch::Apply(&patch))
                .await
                .map_err(|source| Error::Apply {
                    what: format!("Agent {}", agent.name_any()),
                    source,
                })?;
            ctx.applied.record(&key, hash);
        }
    } else if let Some(status) = &plan.match_status {
        // A merge patch, not an apply: applying only the annotation would drop every field
        // this manager applied before (labels, role, approval) from an Agent that lost its match.
        let patch = json!({"metadata": {"annotations": {plan::MATCH_ANNOTATION: status}}});
        // The next apply must go out whatever it holds.
        ctx.applied.record(&key(agent.as_ref()), 0);
        Api::<Agent>::namespaced(ctx.client.clone(), &agent.namespace().unwrap_or_default())
            .patch(
                &agent.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|source| Error::Apply {
                what: format!("Agent {} match annotation", agent.name_any()),
                source,
            })?;
    }
    for event in &plan.events {
        publish(
            &ctx,
            &agent.object_ref(&()),
            event.warning,
            event.reason,
            event.note.clone(),
        )
        .await;
    }
    Ok(Action::await_change())
}

fn error_policy(agent: Arc<Agent>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.agent_metrics.failed(error.phase());
    super::retry(&agent.name_any(), error)
}

fn key<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.clone().unwrap_or_default(),
        object.meta().name.clone().unwrap_or_default()
    )
}

/// Agents of our InfraEnvs in a namespace: re-matched when a host or Metal3Machine changes.
fn agents_in(store: &Store<Agent>, namespace: Option<String>) -> Vec<ObjectRef<Agent>> {
    store
        .state()
        .into_iter()
        .filter(|a| a.namespace() == namespace && a.labels().contains_key(INFRAENV_NAME_LABEL))
        .map(|a| ObjectRef::from_obj(&*a))
        .collect()
}

pub async fn run(ctx: Arc<Context>, triggers: AgentTriggers, mut shutdown: watch::Receiver<bool>) {
    // Agents are created by the assisted core and never carry the watch-filter label: they are
    // watched unfiltered (in the watched namespace) and ignored unless their InfraEnv is ours.
    let store = ctx.caches.agents.clone();
    let controller = Controller::for_stream(triggers.agents, store.clone());
    let (s1, s2, s3) = (store.clone(), store.clone(), store.clone());
    // Only the fields matching reads re-queue Agents (see `Fingerprints`).
    let (seen_m3m, seen_bmh, seen_aci) = (
        Fingerprints::default(),
        Fingerprints::default(),
        Fingerprints::default(),
    );
    controller
        .watches_stream(triggers.metal3machines, move |m| {
            let claim = (
                m.annotations().get(BAREMETALHOST_ANNOTATION).cloned(),
                m.metadata.deletion_timestamp.is_some(),
            );
            if !seen_m3m.changed(key(&m), claim) {
                return Vec::new();
            }
            agents_in(&s1, m.namespace())
        })
        .watches_stream(triggers.hosts, move |h| {
            let identity = (h.spec.boot_mac_address.clone(), h.uid());
            if !seen_bmh.changed(key(&h), identity) {
                return Vec::new();
            }
            agents_in(&s2, h.namespace())
        })
        // Held workers are approved when their cluster reaches adding-hosts.
        .watches_stream(triggers.acis, move |aci| {
            // The state and the install start decide the hold.
            let hold_inputs = (
                aci.status.as_ref().and_then(|s| s.debug_info.state.clone()),
                crate::controller::hold::install_started_at(&aci),
            );
            if !seen_aci.changed(key(&aci), hold_inputs) {
                return Vec::new();
            }
            agents_in(&s3, aci.namespace())
        })
        .graceful_shutdown_on(async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        })
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "agent controller event");
            }
        })
        .await;
}

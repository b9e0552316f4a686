//! Writes an Agent [`Plan`] under the controller's field manager: the desired Agent (server-side
//! apply, skipped when unchanged), else the match annotation, then the events.

use assisted_api::Agent;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::plan::{self, Plan};
use crate::controller::{Context, Error, apply_params, object_key, publish};

pub async fn apply(ctx: &Context, agent: &Agent, plan: &Plan) -> Result<Action, Error> {
    let agents =
        Api::<Agent>::namespaced(ctx.client.clone(), &agent.namespace().unwrap_or_default());
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
        let key = object_key(agent);
        let (skip, hash) = manager::controller::unchanged(&ctx.applied, &key, Some(agent), &patch);
        if !skip {
            agents
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
        ctx.applied.record(&object_key(agent), 0);
        agents
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
            ctx,
            &agent.object_ref(&()),
            event.warning,
            event.reason,
            event.note.clone(),
        )
        .await;
    }
    Ok(Action::await_change())
}

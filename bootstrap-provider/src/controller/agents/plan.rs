//! `plan`: what one reconcile of an Agent writes. Pure: from [`Dereferenced`] alone.

use std::collections::BTreeMap;

use assisted_api::infraenv::ClusterReference;
use kube::ResourceExt;

use super::dereference::Dereferenced;
use crate::controller::PlannedEvent;
use crate::controller::agent::{self, AgentInputs, DesiredAgent};
use crate::controller::matching::{self, AgentInput, AgentMatch, MachineInput};

/// The outcome of the last match, kept on the Agent so its events are published once per
/// change rather than on every reconcile.
pub const MATCH_ANNOTATION: &str = "bootstrap.cluster.x-k8s.io/match";

#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The Agent's labels, annotations and spec fields this controller owns.
    pub desired: Option<DesiredAgent>,
    /// The match outcome to record in [`MATCH_ANNOTATION`] when it changed.
    pub match_status: Option<String>,
    pub events: Vec<PlannedEvent>,
}

pub fn plan(d: &Dereferenced) -> Plan {
    let mut plan = decide(d);
    let recorded = d.agent.annotations().get(MATCH_ANNOTATION);
    let status = plan
        .events
        .last()
        .map(|e| format!("{}: {}", e.reason, e.note));
    match status {
        // Nothing new to say: no event, and no write unless the Agent itself needs one.
        Some(status) if recorded == Some(&status) => plan.events.clear(),
        Some(status) => plan.match_status = Some(status),
        None => {}
    }
    // The applied annotations always carry the outcome, or the apply would drop it.
    if let Some(desired) = plan.desired.as_mut()
        && let Some(status) = plan.match_status.clone().or_else(|| recorded.cloned())
    {
        desired.annotations.insert(MATCH_ANNOTATION.into(), status);
    }
    plan
}

fn decide(d: &Dereferenced) -> Plan {
    let mut plan = Plan::default();
    let Some(infraenv) = &d.infraenv else {
        // Not an Agent of ours (no InfraEnv of a Metal3MachineTemplate): left alone.
        return plan;
    };
    let agent = d.agent.as_ref();
    let agent_inputs: Vec<AgentInput> = d.agents.iter().map(AgentInput::from_agent).collect();
    let machine_inputs: Vec<MachineInput> = d
        .machines
        .iter()
        .map(|m| MachineInput::from_objects(&m.machine, m.metal3machine.as_ref(), m.host.as_ref()))
        .collect();
    let matching = matching::match_agents(&agent_inputs, &machine_inputs);
    let Some((_, result)) = matching.agents.get(&agent.name_any()) else {
        return plan;
    };
    match result {
        AgentMatch::Matched {
            machine,
            control_plane,
        } => {
            let Some(objects) = d.machines.iter().find(|m| &m.machine.name_any() == machine) else {
                return plan;
            };
            let (Some(host), Some(config)) = (&objects.host, &objects.config) else {
                return plan;
            };
            let cluster_deployment =
                infraenv
                    .spec
                    .cluster_ref
                    .clone()
                    .unwrap_or(ClusterReference {
                        name: String::new(),
                        namespace: String::new(),
                    });
            let hold = agent::hold(*control_plane, &d.aci_state, false);
            let extra = BTreeMap::new();
            let inputs = AgentInputs {
                agent,
                machine_name: machine,
                machine_namespace: &objects.machine.namespace().unwrap_or_default(),
                control_plane: *control_plane,
                cluster_name: &d.cluster_name,
                cluster_deployment: &cluster_deployment,
                config: &config.spec,
                host,
                extra_metadata: &extra,
                ignition_config_overrides: None,
                hold: &hold,
            };
            match agent::desired_agent(&inputs) {
                Ok(desired) => {
                    if desired.spec.approved && !agent.spec.approved {
                        plan.events.push(PlannedEvent {
                            warning: false,
                            reason: "AgentApproved",
                            note: format!(
                                "Agent {} is Machine {machine}'s host {} (boot MAC); approved as {}",
                                agent.name_any(),
                                host.name_any(),
                                if *control_plane { "master" } else { "worker" }
                            ),
                        });
                    }
                    if let agent::Hold::Held(reason) = &hold
                        && !agent.spec.approved
                    {
                        plan.events.push(PlannedEvent {
                            warning: false,
                            reason: "AgentHeld",
                            note: reason.to_string(),
                        });
                    }
                    plan.desired = Some(desired);
                }
                Err(e) => plan.events.push(PlannedEvent {
                    warning: true,
                    reason: e.reason(),
                    note: e.to_string(),
                }),
            }
        }
        AgentMatch::NoMachine(reason) => plan.events.push(PlannedEvent {
            warning: false,
            reason: "AgentNotMatched",
            note: format!("left unapproved: {reason}"),
        }),
        AgentMatch::Conflict(reason) => plan.events.push(PlannedEvent {
            warning: true,
            reason: "AgentConflict",
            note: reason.to_string(),
        }),
    }
    plan
}

//! `plan`: what one reconcile of an Agent writes. Pure: from [`Dereferenced`] alone.

use assisted_api::InfraEnv;
use assisted_api::infraenv::ClusterReference;
use kube::ResourceExt;

use super::dereference::{Dereferenced, MachineObjects};
use crate::controller::PlannedEvent;
use crate::controller::agents::desired::{self, AgentInputs, DesiredAgent};
use crate::controller::hold;
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
    if d.paused {
        // `clusterctl move` and operators pause a cluster to freeze it: no approvals then.
        return plan;
    }
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
    let event = match result {
        AgentMatch::Matched {
            machine,
            control_plane,
        } => return plan_matched(d, infraenv, machine, *control_plane),
        // Its own reason while the inventory is awaited: the events recorder folds events of
        // one object and reason into one, so the reason found once the inventory arrives
        // (`AgentNotMatched`) would otherwise keep showing this first note.
        AgentMatch::NoMachine(reason @ matching::NoMachineReason::NoInventory { .. }) => {
            PlannedEvent {
                warning: false,
                reason: "AgentInventoryPending",
                note: format!("left unapproved until its inventory arrives: {reason}"),
            }
        }
        AgentMatch::NoMachine(reason) => PlannedEvent {
            warning: false,
            reason: "AgentNotMatched",
            note: format!("left unapproved: {reason}"),
        },
        AgentMatch::Conflict(reason) => PlannedEvent {
            warning: true,
            reason: "AgentConflict",
            note: reason.to_string(),
        },
    };
    plan.events.push(event);
    plan
}

/// The Agent matched to `machine`: its desired fields once the Machine's host and config are
/// read, and the approval or hold said once.
fn plan_matched(d: &Dereferenced, infraenv: &InfraEnv, machine: &str, control_plane: bool) -> Plan {
    let mut plan = Plan::default();
    let agent = d.agent.as_ref();
    let Some(objects) = d.machines.iter().find(|m| m.machine.name_any() == machine) else {
        return plan;
    };
    let (Some(host), Some(config)) = (&objects.host, &objects.config) else {
        return plan;
    };
    let cluster_deployment = infraenv
        .spec
        .cluster_ref
        .clone()
        .unwrap_or(ClusterReference {
            name: String::new(),
            namespace: String::new(),
        });
    let hold = machine_hold(d, objects, control_plane);
    let inputs = AgentInputs {
        agent,
        machine_name: machine,
        machine_namespace: &objects.machine.namespace().unwrap_or_default(),
        control_plane,
        cluster_name: &d.cluster_name,
        cluster_deployment: &cluster_deployment,
        config: &config.spec,
        config_annotations: config.annotations(),
        host,
        extra_metadata: &objects.host_metadata,
        hold: &hold,
    };
    match desired::desired_agent(&inputs) {
        Ok(desired) => {
            if desired.spec.approved && !agent.spec.approved {
                plan.events.push(PlannedEvent {
                    warning: false,
                    reason: "AgentApproved",
                    note: format!(
                        "Agent {} is Machine {machine}'s host {} (boot MAC); approved as {}",
                        agent.name_any(),
                        host.name_any(),
                        if control_plane { "master" } else { "worker" }
                    ),
                });
            }
            if let hold::Hold::Held(reason) = &hold
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
    plan
}

/// The day-1/day-2 hold of the Machine's Agent (see [`hold::hold`]).
fn machine_hold(d: &Dereferenced, objects: &MachineObjects, control_plane: bool) -> hold::Hold {
    let late = hold::created_after_install_started(
        objects
            .machine
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0),
        d.aci.as_ref().and_then(hold::install_started_at),
    );
    hold::hold(control_plane, &hold::install_state(d.aci.as_ref()), late)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use assisted_api::agent::HostRole;
    use assisted_api::{Agent, AgentClusterInstall, InfraEnv};
    use external_types::capi::Machine;
    use external_types::capm3::v1beta2::Metal3Machine;
    use external_types::metal3_io::BareMetalHost;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::controller::labels::{
        BAREMETALHOST_ANNOTATION, MACHINE_ANNOTATION, MACHINE_NAME_LABEL,
    };
    use provider_api::bootstrap::api::OpenshiftAssistedConfig;

    const CP_MAC: &str = "52:54:00:00:00:00";
    const WORKER_MAC: &str = "52:54:00:00:01:00";

    /// An Agent of InfraEnv `workers` reporting `macs` (no inventory at all when empty).
    fn agent(name: &str, macs: &[&str], approved: bool) -> Agent {
        let status = if macs.is_empty() {
            String::new()
        } else {
            let interfaces: Vec<String> = macs
                .iter()
                .enumerate()
                .map(|(i, m)| format!("{{name: eth{i}, macAddress: '{m}'}}"))
                .collect();
            format!(
                "status: {{inventory: {{interfaces: [{}]}}}}",
                interfaces.join(", ")
            )
        };
        serde_yaml::from_str(&format!(
            r#"
apiVersion: agent-install.openshift.io/v1beta1
kind: Agent
metadata:
  name: {name}
  namespace: ns
  labels: {{infraenvs.agent-install.openshift.io: workers}}
spec: {{approved: {approved}}}
{status}
"#
        ))
        .unwrap()
    }

    fn infraenv() -> InfraEnv {
        serde_yaml::from_str(
            r#"
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata:
  name: workers
  namespace: ns
  labels: {cluster.x-k8s.io/cluster-name: c1, bootstrap.cluster.x-k8s.io/metal3-machine-template: workers}
spec:
  pullSecretRef: {name: pull-secret}
  clusterRef: {name: cp, namespace: ns}
"#,
        )
        .unwrap()
    }

    /// Machine `name` with its Metal3Machine, which consumes BareMetalHost `host-<name>` (boot
    /// MAC `mac`, uid `uid-<name>`), and its config.
    fn machine(name: &str, control_plane: bool, mac: &str) -> MachineObjects {
        let cp = if control_plane {
            ", cluster.x-k8s.io/control-plane: ''"
        } else {
            ""
        };
        let machine: Machine = serde_yaml::from_str(&format!(
            r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata: {{name: {name}, namespace: ns, labels: {{cluster.x-k8s.io/cluster-name: c1{cp}}}}}
spec:
  clusterName: c1
  bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfig, name: {name}}}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Machine, name: {name}}}
"#
        ))
        .unwrap();
        let metal3machine: Metal3Machine = serde_yaml::from_str(&format!(
            r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {{name: {name}, namespace: ns, annotations: {{metal3.io/BareMetalHost: ns/host-{name}}}}}
spec: {{}}
"#
        ))
        .unwrap();
        let host: BareMetalHost = serde_yaml::from_str(&format!(
            r#"
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: host-{name}, namespace: ns, uid: uid-{name}}}
spec: {{online: true, bootMACAddress: "{mac}"}}
"#
        ))
        .unwrap();
        let config: OpenshiftAssistedConfig = serde_yaml::from_str(&format!(
            r#"
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata: {{name: {name}, namespace: ns}}
spec:
  nodeRegistration: {{name: $METADATA_NAME}}
  kernelArguments: [{{operation: append, value: console=ttyS0}}]
"#
        ))
        .unwrap();
        MachineObjects {
            machine,
            metal3machine: Some(metal3machine),
            host: Some(host),
            host_metadata: BTreeMap::new(),
            config: Some(config),
        }
    }

    /// `subject` among `others` (all Agents of the InfraEnv), one control-plane Machine and one
    /// worker, the cluster in `state`.
    fn dereferenced(subject: Agent, others: &[Agent], state: &str) -> Dereferenced {
        let mut agents = vec![subject.clone()];
        agents.extend(others.iter().cloned());
        Dereferenced {
            agent: Arc::new(subject),
            infraenv: Some(infraenv()),
            cluster_name: "c1".into(),
            agents,
            machines: vec![
                machine("cp-0", true, CP_MAC),
                machine("w-0", false, WORKER_MAC),
            ],
            aci: Some(aci(state, "[]")),
            paused: false,
        }
    }

    /// The cluster's AgentClusterInstall in `state`, with `conditions` (YAML).
    fn aci(state: &str, conditions: &str) -> AgentClusterInstall {
        crate::controller::test_fixtures::aci(1, state, conditions)
    }

    #[test]
    fn a_paused_cluster_gets_no_approvals() {
        let mut d = dereferenced(agent("a1", &[CP_MAC], false), &[], "");
        d.paused = true;
        let plan = plan(&d);
        assert!(plan.desired.is_none() && plan.events.is_empty() && plan.match_status.is_none());
    }

    /// `agent` with `status` recorded in the match annotation.
    fn recorded(mut agent: Agent, status: &str) -> Agent {
        agent
            .annotations_mut()
            .insert(MATCH_ANNOTATION.into(), status.into());
        agent
    }

    fn reasons(plan: &Plan) -> Vec<(bool, &'static str)> {
        plan.events.iter().map(|e| (e.warning, e.reason)).collect()
    }

    #[test]
    fn an_agent_of_a_foreign_infraenv_is_left_alone() {
        let mut d = dereferenced(agent("a1", &[CP_MAC], false), &[], "");
        d.infraenv = None;
        let plan = plan(&d);
        assert!(plan.desired.is_none());
        assert!(plan.match_status.is_none());
        assert!(plan.events.is_empty());
    }

    #[test]
    fn the_agent_with_a_control_plane_hosts_boot_mac_becomes_an_approved_master() {
        // Upper case and an unrelated NIC beside: still that host.
        let d = dereferenced(
            agent("a1", &["de:ad:be:ef:00:01", &CP_MAC.to_uppercase()], false),
            &[],
            "insufficient",
        );
        let plan = plan(&d);
        let desired = plan.desired.as_ref().expect("desired Agent");
        assert_eq!(desired.spec.role, HostRole::Master);
        assert!(desired.spec.approved);
        assert_eq!(desired.spec.hostname.as_deref(), Some("host-cp-0"));
        assert_eq!(
            desired
                .spec
                .node_labels
                .get("metal3.io/uuid")
                .map(String::as_str),
            Some("uid-cp-0")
        );
        assert_eq!(
            desired.spec.installer_args.as_deref(),
            Some(r#"["--append-karg","console=ttyS0"]"#)
        );
        let cd = desired.spec.cluster_deployment_name.as_ref().unwrap();
        assert_eq!((cd.name.as_str(), cd.namespace.as_str()), ("cp", "ns"));
        assert_eq!(desired.labels[MACHINE_NAME_LABEL], "cp-0");
        assert_eq!(desired.annotations[MACHINE_ANNOTATION], "ns/cp-0");
        assert_eq!(
            desired.annotations[BAREMETALHOST_ANNOTATION],
            "ns/host-cp-0"
        );

        assert_eq!(reasons(&plan), [(false, "AgentApproved")]);
        let status = plan.match_status.as_deref().expect("match recorded");
        assert!(status.starts_with("AgentApproved: "), "{status}");
        assert!(
            status.contains("cp-0") && status.contains("master"),
            "{status}"
        );
        assert_eq!(
            desired
                .annotations
                .get(MATCH_ANNOTATION)
                .map(String::as_str),
            Some(status)
        );
    }

    #[test]
    fn the_hosts_metal3data_keys_resolve_like_the_config_drive() {
        let mut d = dereferenced(agent("a1", &[CP_MAC], false), &[], "insufficient");
        // `name` from the Metal3Data wins over baremetal-operator's, as in meta_data.json.
        d.machines[0].host_metadata = BTreeMap::from([("name".into(), "rack7-cp".into())]);
        let plan = plan(&d);
        let desired = plan.desired.as_ref().expect("desired Agent");
        assert_eq!(desired.spec.hostname.as_deref(), Some("rack7-cp"));
    }

    #[test]
    fn an_approved_agent_with_the_same_match_recorded_is_quiet() {
        let first = plan(&dereferenced(agent("a1", &[CP_MAC], false), &[], ""));
        let status = first.match_status.unwrap();
        let annotated = recorded(agent("a1", &[CP_MAC], true), &status);
        let plan = plan(&dereferenced(annotated, &[], ""));
        assert!(plan.events.is_empty(), "{:?}", plan.events);
        assert!(plan.match_status.is_none());
        let desired = plan.desired.as_ref().expect("the Agent is still applied");
        assert!(desired.spec.approved);
        assert_eq!(
            desired.annotations.get(MATCH_ANNOTATION),
            Some(&status),
            "the apply keeps the recorded outcome"
        );
    }

    #[test]
    fn an_agent_without_inventory_is_not_matched() {
        let d = dereferenced(agent("a1", &[], false), &[], "");
        let plan = plan(&d);
        assert!(plan.desired.is_none());
        assert_eq!(reasons(&plan), [(false, "AgentInventoryPending")]);
        let status = plan.match_status.as_deref().unwrap();
        assert!(
            status.starts_with(
                "AgentInventoryPending: left unapproved until its inventory arrives: "
            ),
            "{status}"
        );
        assert!(status.contains("no network interfaces"), "{status}");

        // Recorded already: said once only.
        let said = recorded(agent("a1", &[], false), status);
        let again = super::plan(&dereferenced(said, &[], ""));
        assert!(again.events.is_empty() && again.match_status.is_none());
        assert!(again.desired.is_none());
    }

    #[test]
    fn an_agent_of_no_machines_host_is_not_matched() {
        let d = dereferenced(agent("a1", &["aa:bb:cc:dd:ee:ff"], false), &[], "");
        let plan = plan(&d);
        assert!(plan.desired.is_none());
        assert_eq!(reasons(&plan), [(false, "AgentNotMatched")]);
        assert!(plan.match_status.unwrap().contains("aa:bb:cc:dd:ee:ff"));
    }

    #[test]
    fn two_agents_with_one_boot_mac_are_both_in_conflict() {
        let a = agent("a1", &[WORKER_MAC], false);
        let b = agent("a2", &[WORKER_MAC], false);
        for (subject, other) in [(a.clone(), b.clone()), (b, a)] {
            let name = subject.name_any();
            let plan = plan(&dereferenced(subject, &[other], ""));
            assert!(plan.desired.is_none(), "{name}: nobody is approved");
            assert_eq!(reasons(&plan), [(true, "AgentConflict")], "{name}");
            let status = plan.match_status.unwrap();
            assert!(
                status.contains("a1, a2") && status.contains("w-0"),
                "{status}"
            );
        }
    }

    #[test]
    fn a_worker_during_day1_is_configured_but_held() {
        let d = dereferenced(agent("a1", &[WORKER_MAC], false), &[], "installing");
        let plan = plan(&d);
        let desired = plan.desired.as_ref().expect("configured while held");
        assert_eq!(desired.spec.role, HostRole::Worker);
        assert!(!desired.spec.approved);
        assert_eq!(desired.labels[MACHINE_NAME_LABEL], "w-0");
        assert_eq!(reasons(&plan), [(false, "AgentHeld")]);
        let status = plan.match_status.as_deref().unwrap();
        assert!(status.contains("adding-hosts"), "{status}");
        assert_eq!(desired.annotations[MATCH_ANNOTATION], status);

        // Day-2: approved, and said so.
        let held = recorded(agent("a1", &[WORKER_MAC], false), status);
        let day2 = super::plan(&dereferenced(held.clone(), &[], "adding-hosts"));
        assert!(day2.desired.as_ref().unwrap().spec.approved);
        assert_eq!(reasons(&day2), [(false, "AgentApproved")]);

        // Still installing, already recorded: no repeated event.
        let again = super::plan(&dereferenced(held, &[], "installing"));
        assert!(again.events.is_empty());
        assert!(!again.desired.unwrap().spec.approved);
    }

    #[test]
    fn a_worker_created_after_the_install_started_is_held_even_in_a_pre_install_state() {
        // The install started at 08:30 (RequirementsMet True since) and the cluster is back in
        // `ready` (a failed preparation is retried): a worker Machine created at 08:31 waits.
        let started = "[{type: RequirementsMet, status: 'True', reason: ClusterIsReady, \
                       lastTransitionTime: '2027-01-15T08:30:00Z'}]";
        let created = |d: &mut Dereferenced, at: &str| {
            d.machines[1].machine.metadata.creation_timestamp =
                Some(Time(at.parse().expect("timestamp")));
        };
        let mut d = dereferenced(agent("a1", &[WORKER_MAC], false), &[], "ready");
        d.aci = Some(aci("ready", started));
        created(&mut d, "2027-01-15T08:31:00Z");
        let late = plan(&d);
        assert!(!late.desired.as_ref().expect("configured").spec.approved);
        assert_eq!(reasons(&late), [(false, "AgentHeld")]);
        let status = late.match_status.as_deref().unwrap();
        assert!(
            status.contains("created after the day-1 install started"),
            "{status}"
        );

        // Created before the start: joins day-1.
        created(&mut d, "2027-01-15T08:29:00Z");
        assert!(plan(&d).desired.unwrap().spec.approved);
        // The start unknown (RequirementsMet not True): the state alone decides.
        created(&mut d, "2027-01-15T08:31:00Z");
        d.aci = Some(aci("ready", "[]"));
        assert!(plan(&d).desired.unwrap().spec.approved);
    }

    #[test]
    fn a_control_plane_agent_is_approved_whatever_the_install_state() {
        for state in ["installing", "installed", "error"] {
            let d = dereferenced(agent("a1", &[CP_MAC], false), &[], state);
            let plan = plan(&d);
            assert!(plan.desired.unwrap().spec.approved, "{state}");
        }
    }

    #[test]
    fn a_matched_agent_with_an_unresolvable_config_gets_a_warning_and_no_spec() {
        let mut d = dereferenced(agent("a1", &[WORKER_MAC], false), &[], "");
        d.machines[1]
            .config
            .as_mut()
            .unwrap()
            .spec
            .node_registration = serde_yaml::from_str("{name: $METADATA_NOPE}").unwrap();
        let plan = plan(&d);
        assert!(plan.desired.is_none());
        assert_eq!(reasons(&plan), [(true, "UnresolvedNodeRegistration")]);
    }

    #[test]
    fn a_matched_machine_without_its_config_yet_waits_silently() {
        let mut d = dereferenced(agent("a1", &[WORKER_MAC], false), &[], "");
        d.machines[1].config = None;
        let plan = plan(&d);
        assert!(plan.desired.is_none());
        assert!(plan.events.is_empty() && plan.match_status.is_none());
    }

    #[test]
    fn an_approved_agent_whose_machine_is_gone_gets_only_a_match_status() {
        // The Machine is being deleted (dereference leaves it out): its approved Agent is no
        // longer matched, and the plan carries the annotation alone (see the reply: the
        // annotation-only apply under the same field manager releases the labels and spec).
        let first = plan(&dereferenced(agent("a1", &[WORKER_MAC], false), &[], ""));
        let approved = recorded(
            agent("a1", &[WORKER_MAC], true),
            first.match_status.as_deref().unwrap(),
        );
        let mut d = dereferenced(approved, &[], "");
        d.machines.retain(|m| m.machine.name_any() != "w-0");
        let plan = plan(&d);
        assert!(plan.desired.is_none());
        assert_eq!(reasons(&plan), [(false, "AgentNotMatched")]);
        assert!(plan.match_status.is_some());
    }
}

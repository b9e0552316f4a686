//! Remediation of control-plane Machines a MachineHealthCheck marked unhealthy and left to us
//! (`HealthCheckSucceeded` and `OwnerRemediated` False): whether one may be replaced now, and
//! what removing it takes. Pure; the controller reads the etcd member list through the
//! workload cluster ([`super::etcd`]) and carries the decision out in `apply`.
//!
//! The rules are KubeadmControlPlane's, with OpenShift's etcd: one Machine at a time, only once
//! the cluster is installed, never a single-node control plane, never when removing the
//! Machine's etcd member would leave the remaining members without a healthy quorum, and the
//! retry limits of `spec.remediation`. The Machine goes after its etcd member, the member's
//! certificate Secrets and its Node ("Replacing an unhealthy etcd member whose machine is not
//! running or whose node is not ready", OpenShift's backup-and-restore documentation); the
//! replacement Machine is installed as a day-2 control-plane host.

use external_types::capi::Machine;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use provider_api::controlplane::api::{ControlPlaneRemediationSpec, LastRemediationStatus};
use serde::{Deserialize, Serialize};

/// On a replacement Machine: which remediation made it (KubeadmControlPlane's annotation).
pub const REMEDIATION_FOR: &str = "controlplane.cluster.x-k8s.io/remediation-for";
/// Upstream's default: a replacement healthy this long ends a retry series.
const DEFAULT_MIN_HEALTHY_SECONDS: i64 = 3600;

/// `spec.remediation` with its defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub max_retry: Option<i32>,
    pub retry_period: SignedDuration,
    pub min_healthy_period: SignedDuration,
}

impl Policy {
    pub fn of(spec: Option<&ControlPlaneRemediationSpec>) -> Policy {
        let secs = |v: Option<i32>, default: i64| {
            SignedDuration::from_secs(v.map_or(default, |s| i64::from(s.max(0))))
        };
        Policy {
            max_retry: spec.and_then(|s| s.max_retry),
            retry_period: secs(spec.and_then(|s| s.retry_period_seconds), 0),
            min_healthy_period: secs(
                spec.and_then(|s| s.min_healthy_period_seconds),
                DEFAULT_MIN_HEALTHY_SECONDS,
            ),
        }
    }
}

/// The value of [`REMEDIATION_FOR`]: the remediated Machine, when, and its retry count.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RemediationFor {
    pub machine: String,
    pub timestamp: String,
    pub retry_count: i32,
}

impl RemediationFor {
    pub fn of(last: &LastRemediationStatus) -> RemediationFor {
        RemediationFor {
            machine: last.machine.clone(),
            timestamp: last.time.clone(),
            retry_count: last.retry_count,
        }
    }
}

/// One etcd member, as `etcdctl member list -w json` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    pub name: String,
}

/// The workload cluster's etcd members, when asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Members {
    /// Not asked: nothing to remediate, or it may not be remediated anyway.
    NotRead,
    /// The member list could not be read; says why.
    Unreadable(String),
    Read(Vec<Member>),
}

/// What to do about unhealthy control-plane Machines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No Machine is left to us.
    Nothing,
    /// `machine` is left to us but may not be replaced now; `reason` and `message` say why.
    Wait {
        machine: String,
        reason: &'static str,
        message: String,
    },
    /// Replace `machine`: remove it as [`Removal`] says.
    Remediate(Removal),
}

/// How a control-plane Machine of an installed cluster is removed: its etcd member (`member`,
/// through the etcd pod on `exec_node`) first, then the member's certificate Secrets, its Node
/// when `delete_node`, then the Machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub machine: String,
    /// Its Node, when it ever had one: the member's Secrets are named after it.
    pub node: Option<String>,
    /// Delete the Node too: a dead host's (a live one is drained and its Node deleted by
    /// Cluster API when its Machine goes).
    pub delete_node: bool,
    pub member: Option<Member>,
    /// A healthy control-plane Node whose etcd pod runs `etcdctl` (never the removed one's).
    pub exec_node: Option<String>,
    /// Remediations of this Machine's predecessors in a row (0 for a scale-down).
    pub retry_count: i32,
}

pub struct Inputs<'a> {
    pub installed: bool,
    pub replicas: i32,
    /// This control plane's Machines, those being deleted included.
    pub machines: &'a [Machine],
    pub policy: Policy,
    pub last: Option<&'a LastRemediationStatus>,
    pub members: &'a Members,
    pub now: Timestamp,
}

/// Whether a MachineHealthCheck left this Machine's remediation to its owner.
pub fn left_to_us(m: &Machine) -> bool {
    m.metadata.deletion_timestamp.is_none()
        && condition_status(m, "HealthCheckSucceeded") == Some("False")
        && condition_status(m, "OwnerRemediated") == Some("False")
}

/// The Machine a remediation would take first (by name, so retries pick the same one).
pub fn candidate(machines: &[Machine]) -> Option<&Machine> {
    machines
        .iter()
        .filter(|m| left_to_us(m))
        .min_by_key(|m| m.metadata.name.clone())
}

/// Healthy control-plane Nodes (of live Machines not marked unhealthy), by name: the etcd pods
/// `etcdctl` may run in.
pub fn healthy_nodes(machines: &[Machine]) -> Vec<String> {
    let mut nodes: Vec<String> = machines
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none() && !left_to_us(m))
        .filter(|m| condition_status(m, "HealthCheckSucceeded") != Some("False"))
        .filter(|m| condition_status(m, "NodeHealthy") != Some("False"))
        .filter_map(node_of)
        .collect();
    nodes.sort();
    nodes
}

pub fn node_of(m: &Machine) -> Option<String> {
    m.status.as_ref()?.node_ref.as_ref().map(|r| r.name.clone())
}

/// Whether the etcd member list is worth reading: a Machine is left to us and nothing but the
/// members stands in the way.
pub fn needs_members(inputs: &Inputs) -> bool {
    // With no members every check but quorum passes or fails as it will with them.
    let without = Members::Read(Vec::new());
    matches!(
        decide(&Inputs {
            members: &without,
            ..*inputs
        }),
        Decision::Remediate(_)
    )
}

pub const WAITING_FOR_INSTALL: &str = "WaitingForInstall";
pub const SINGLE_NODE: &str = "CannotRemediateSingleNode";
pub const ONE_AT_A_TIME: &str = "WaitingForPreviousRemediation";
pub const MAX_RETRY: &str = "MaxRetryReached";
pub const RETRY_PERIOD: &str = "WaitingForRetryPeriod";
pub const ETCD_UNKNOWN: &str = "EtcdMembersUnknown";
pub const ETCD_QUORUM: &str = "EtcdQuorumAtRisk";

/// Whether to replace the first unhealthy Machine left to us: the waits below in order (the
/// first that holds says why), then etcd's quorum ([`removal`]).
pub fn decide(inputs: &Inputs) -> Decision {
    let Some(target) = candidate(inputs.machines) else {
        return Decision::Nothing;
    };
    let machine = target.metadata.name.clone().unwrap_or_default();
    let wait = |(reason, message): (&'static str, String)| Decision::Wait {
        machine: machine.clone(),
        reason,
        message,
    };
    let case = Case {
        inputs,
        target,
        machine: &machine,
        live: inputs
            .machines
            .iter()
            .filter(|m| m.metadata.deletion_timestamp.is_none())
            .collect(),
        retry_count: retry_count(target, inputs),
    };
    if let Some(why) = WAITS.iter().find_map(|check| check(&case)) {
        return wait(why);
    }
    match removal(target, inputs.machines, inputs.members) {
        Ok(removal) => Decision::Remediate(Removal {
            delete_node: true,
            retry_count: case.retry_count,
            ..removal
        }),
        Err(why) => wait(why),
    }
}

/// What the waits look at: the Machine to replace and the control plane around it.
struct Case<'a> {
    inputs: &'a Inputs<'a>,
    target: &'a Machine,
    machine: &'a str,
    /// The Machines not being deleted.
    live: Vec<&'a Machine>,
    /// How many times in a row this replacement failed soon after the one before.
    retry_count: i32,
}

/// A reason to wait, with its message.
type Wait = Option<(&'static str, String)>;

/// The waits, in the order they are checked.
const WAITS: [fn(&Case) -> Wait; 7] = [
    before_install,
    single_node,
    another_being_deleted,
    another_without_node,
    machines_missing,
    max_retry_reached,
    within_retry_period,
];

/// The install needs every master it started with.
fn before_install(c: &Case) -> Wait {
    (!c.inputs.installed).then(|| {
        (
            WAITING_FOR_INSTALL,
            format!(
                "{} is not replaced before the cluster is installed: the install needs \
                 every master it started with",
                c.machine
            ),
        )
    })
}

/// A single-node cluster cannot replace its one master.
fn single_node(c: &Case) -> Wait {
    (c.inputs.replicas <= 1 || c.live.len() <= 1).then(|| {
        (
            SINGLE_NODE,
            format!(
                "{} is the only control-plane Machine: a single-node cluster cannot \
                 replace it (repair the host, or reinstall the cluster)",
                c.machine
            ),
        )
    })
}

/// One at a time: another control-plane Machine is being deleted.
fn another_being_deleted(c: &Case) -> Wait {
    let deleting = c
        .inputs
        .machines
        .iter()
        .find(|m| m.metadata.deletion_timestamp.is_some())?;
    Some((
        ONE_AT_A_TIME,
        format!(
            "{} waits: {} is being deleted, and control-plane Machines are \
             replaced one at a time",
            c.machine,
            deleting.metadata.name.clone().unwrap_or_default()
        ),
    ))
}

/// One at a time: another control-plane Machine is still provisioning (no Node yet).
fn another_without_node(c: &Case) -> Wait {
    let provisioning = c
        .live
        .iter()
        .find(|m| !left_to_us(m) && node_of(m).is_none())?;
    Some((
        ONE_AT_A_TIME,
        format!(
            "{} waits: {} has no Node yet, and control-plane Machines are \
             replaced one at a time",
            c.machine,
            provisioning.metadata.name.clone().unwrap_or_default()
        ),
    ))
}

/// One at a time: a replacement or a scale-up is still to be made.
fn machines_missing(c: &Case) -> Wait {
    ((c.live.len() as i32) < c.inputs.replicas).then(|| {
        (
            ONE_AT_A_TIME,
            format!(
                "{} waits: {} of {} control-plane Machines exist, the missing ones \
                 (a replacement, or a scale-up) are made first",
                c.machine,
                c.live.len(),
                c.inputs.replicas
            ),
        )
    })
}

/// A replacement that fails soon after its predecessor's remediation is a retry of it.
fn retry_count(target: &Machine, inputs: &Inputs) -> i32 {
    match remediation_for(target) {
        Some(previous)
            if elapsed_since(&previous.timestamp, inputs.now)
                .is_some_and(|e| e < inputs.policy.min_healthy_period) =>
        {
            previous.retry_count + 1
        }
        _ => 0,
    }
}

/// A retry beyond `spec.remediation.maxRetry` is left to a human.
fn max_retry_reached(c: &Case) -> Wait {
    let max = c.inputs.policy.max_retry?;
    (c.retry_count > 0 && c.retry_count > max).then(|| {
        (
            MAX_RETRY,
            format!(
                "{} replaced {} already failed again within minHealthyPeriodSeconds \
                 ({}s); spec.remediation.maxRetry ({max}) reached: repair the hosts, then \
                 delete the Machine by hand",
                c.machine,
                remediation_for(c.target)
                    .map(|p| p.machine)
                    .unwrap_or_default(),
                c.inputs.policy.min_healthy_period.as_secs()
            ),
        )
    })
}

/// A retry waits `spec.remediation.retryPeriodSeconds` after the last remediation.
fn within_retry_period(c: &Case) -> Wait {
    if c.retry_count == 0 {
        return None;
    }
    let last = c.inputs.last?;
    let since = elapsed_since(&last.time, c.inputs.now)?;
    (since < c.inputs.policy.retry_period).then(|| {
        (
            RETRY_PERIOD,
            format!(
                "{} waits {}s more: spec.remediation.retryPeriodSeconds is {}s \
                 since the remediation of {}",
                c.machine,
                (c.inputs.policy.retry_period - since).as_secs(),
                c.inputs.policy.retry_period.as_secs(),
                last.machine
            ),
        )
    })
}

/// How `target` can be removed without losing etcd's quorum, given the member list; or why it
/// waits (reason, message). Shared by remediation and scaling down.
pub fn removal(
    target: &Machine,
    machines: &[Machine],
    members: &Members,
) -> Result<Removal, (&'static str, String)> {
    let machine = target.metadata.name.clone().unwrap_or_default();
    let members = match members {
        Members::Read(members) => members,
        Members::NotRead => {
            return Err((
                ETCD_UNKNOWN,
                format!("{machine} waits for the etcd member list to be read"),
            ));
        }
        Members::Unreadable(why) => {
            return Err((
                ETCD_UNKNOWN,
                format!(
                    "{machine} is not removed while the etcd member list cannot be read \
                     (removing a master without removing its member would cost quorum): {why}"
                ),
            ));
        }
    };
    let node = node_of(target);
    let member = node
        .as_deref()
        .and_then(|n| members.iter().find(|m| m.name == n))
        .cloned();
    let healthy: Vec<String> = healthy_nodes(machines)
        .into_iter()
        .filter(|n| Some(n) != node.as_ref())
        .collect();
    let remaining: Vec<&Member> = members
        .iter()
        .filter(|m| Some(m.id) != member.as_ref().map(|x| x.id))
        .collect();
    let healthy_remaining = remaining
        .iter()
        .filter(|m| healthy.contains(&m.name))
        .count();
    let quorum = remaining.len() / 2 + 1;
    if !remaining.is_empty() && healthy_remaining < quorum {
        let unhealthy: Vec<&str> = remaining
            .iter()
            .filter(|m| !healthy.contains(&m.name))
            .map(|m| m.name.as_str())
            .collect();
        return Err((
            ETCD_QUORUM,
            format!(
                "{machine} waits: without its etcd member {} of the {} remaining members would \
                 be healthy, below the quorum of {quorum} (unhealthy: {}); repair a host first",
                healthy_remaining,
                remaining.len(),
                unhealthy.join(", ")
            ),
        ));
    }
    let exec_node = healthy
        .iter()
        .find(|n| members.iter().any(|m| &m.name == *n))
        .cloned();
    if member.is_some() && exec_node.is_none() {
        return Err((
            ETCD_QUORUM,
            format!("{machine} waits: no other healthy control-plane Node runs an etcd member"),
        ));
    }
    Ok(Removal {
        machine,
        node,
        delete_node: false,
        member,
        exec_node,
        retry_count: 0,
    })
}

/// The [`REMEDIATION_FOR`] annotation of a replacement Machine.
pub fn remediation_for(m: &Machine) -> Option<RemediationFor> {
    let value = m.metadata.annotations.as_ref()?.get(REMEDIATION_FOR)?;
    serde_json::from_str(value).ok()
}

fn elapsed_since(rfc3339: &str, now: Timestamp) -> Option<SignedDuration> {
    let then: Timestamp = rfc3339.parse().ok()?;
    Some(now.duration_since(then))
}

fn condition_status<'a>(m: &'a Machine, type_: &str) -> Option<&'a str> {
    m.status
        .as_ref()?
        .conditions
        .as_deref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.as_str())
}

/// The Secrets OpenShift's etcd operator keeps for a member's Node, which the documented
/// procedure deletes with the member (the operator makes new ones for the replacement).
pub fn member_secrets(node: &str) -> [String; 3] {
    [
        format!("etcd-peer-{node}"),
        format!("etcd-serving-{node}"),
        format!("etcd-serving-metrics-{node}"),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use external_types::capi::MachineStatus;
    use external_types::capi::machine::MachineStatusNodeRef;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use kube::api::ObjectMeta;

    use super::*;

    fn now() -> Timestamp {
        "2026-11-28T10:00:00Z".parse().unwrap()
    }

    fn cond(type_: &str, status: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: "R".into(),
            message: String::new(),
            last_transition_time: Time(now()),
            observed_generation: None,
        }
    }

    /// `cp-<i>` on Node `m<i>`; `unhealthy` marks it for us.
    fn machine(i: usize, unhealthy: bool) -> Machine {
        let mut conditions = vec![cond(
            "NodeHealthy",
            if unhealthy { "False" } else { "True" },
        )];
        if unhealthy {
            conditions.push(cond("HealthCheckSucceeded", "False"));
            conditions.push(cond("OwnerRemediated", "False"));
        }
        Machine {
            metadata: ObjectMeta {
                name: Some(format!("cp-{i}")),
                ..Default::default()
            },
            spec: Default::default(),
            status: Some(MachineStatus {
                node_ref: Some(MachineStatusNodeRef {
                    name: format!("m{i}"),
                }),
                conditions: Some(conditions),
                ..Default::default()
            }),
        }
    }

    fn members(n: usize) -> Members {
        Members::Read(
            (0..n)
                .map(|i| Member {
                    id: 100 + i as u64,
                    name: format!("m{i}"),
                })
                .collect(),
        )
    }

    fn inputs<'a>(machines: &'a [Machine], members: &'a Members) -> Inputs<'a> {
        Inputs {
            installed: true,
            replicas: 3,
            machines,
            policy: Policy::of(None),
            last: None,
            members,
            now: now(),
        }
    }

    fn reason(d: &Decision) -> &'static str {
        match d {
            Decision::Nothing => "Nothing",
            Decision::Wait { reason, .. } => reason,
            Decision::Remediate(_) => "Remediate",
        }
    }

    #[test]
    fn rows() {
        let three = members(3);
        let healthy = [machine(0, false), machine(1, false), machine(2, false)];
        let one_bad = [machine(0, false), machine(1, false), machine(2, true)];
        let two_bad = [machine(0, false), machine(1, true), machine(2, true)];
        let mut deleting = one_bad.clone();
        deleting[0].metadata.deletion_timestamp = Some(Time(now()));
        let mut provisioning = one_bad.clone();
        provisioning[0].status.as_mut().unwrap().node_ref = None;
        let sno = [machine(0, true)];
        let unreadable = Members::Unreadable("exec: 403".into());

        type Edit = fn(&mut Inputs);
        let rows: &[(&str, &[Machine], &Members, Edit, &str)] = &[
            ("all healthy", &healthy, &three, |_| {}, "Nothing"),
            (
                "one unhealthy of three",
                &one_bad,
                &three,
                |_| {},
                "Remediate",
            ),
            (
                "two unhealthy: quorum",
                &two_bad,
                &three,
                |_| {},
                ETCD_QUORUM,
            ),
            (
                "before install",
                &one_bad,
                &three,
                |i| i.installed = false,
                WAITING_FOR_INSTALL,
            ),
            (
                "single node",
                &sno,
                &members(1),
                |i| i.replicas = 1,
                SINGLE_NODE,
            ),
            (
                "another being deleted",
                &deleting,
                &three,
                |_| {},
                ONE_AT_A_TIME,
            ),
            (
                "another without a Node",
                &provisioning,
                &three,
                |_| {},
                ONE_AT_A_TIME,
            ),
            (
                "replacement not made yet",
                &one_bad[1..],
                &three,
                |_| {},
                ONE_AT_A_TIME,
            ),
            (
                "members unreadable",
                &one_bad,
                &unreadable,
                |_| {},
                ETCD_UNKNOWN,
            ),
            (
                "members not read",
                &one_bad,
                &Members::NotRead,
                |_| {},
                ETCD_UNKNOWN,
            ),
        ];
        for (name, machines, members, edit, want) in rows {
            let mut i = inputs(machines, members);
            edit(&mut i);
            assert_eq!(reason(&decide(&i)), *want, "{name}");
        }
    }

    #[test]
    fn a_remediation_names_the_member_and_a_healthy_node_to_run_etcdctl_on() {
        let machines = [machine(0, false), machine(1, true), machine(2, false)];
        let three = members(3);
        let Decision::Remediate(r) = decide(&inputs(&machines, &three)) else {
            panic!()
        };
        assert_eq!(r.machine, "cp-1");
        assert_eq!(r.node.as_deref(), Some("m1"));
        assert_eq!(r.member.as_ref().map(|m| m.id), Some(101));
        assert_eq!(r.exec_node.as_deref(), Some("m0"));
        assert_eq!(r.retry_count, 0);
        // Its member already gone (an earlier pass removed it): the rest still happens.
        let two = Members::Read(vec![
            Member {
                id: 100,
                name: "m0".into(),
            },
            Member {
                id: 102,
                name: "m2".into(),
            },
        ]);
        let Decision::Remediate(r) = decide(&inputs(&machines, &two)) else {
            panic!()
        };
        assert_eq!(r.member, None);
    }

    #[test]
    fn two_unhealthy_masters_say_which_and_why() {
        let machines = [machine(0, false), machine(1, true), machine(2, true)];
        let three = members(3);
        let Decision::Wait {
            machine, message, ..
        } = decide(&inputs(&machines, &three))
        else {
            panic!()
        };
        assert_eq!(machine, "cp-1");
        assert!(
            message.contains("1 of the 2 remaining members"),
            "{message}"
        );
        assert!(message.contains("quorum of 2"), "{message}");
        assert!(message.contains("unhealthy: m2"), "{message}");
    }

    #[test]
    fn retries_follow_max_retry_and_the_periods() {
        let mut machines = [machine(0, false), machine(1, false), machine(3, true)];
        let previous = RemediationFor {
            machine: "cp-2".into(),
            timestamp: "2026-11-28T09:50:00Z".into(),
            retry_count: 1,
        };
        machines[2].metadata.annotations = Some(BTreeMap::from([(
            REMEDIATION_FOR.to_string(),
            serde_json::to_string(&previous).unwrap(),
        )]));
        let members = Members::Read(vec![
            Member {
                id: 1,
                name: "m0".into(),
            },
            Member {
                id: 2,
                name: "m1".into(),
            },
            Member {
                id: 4,
                name: "m3".into(),
            },
        ]);
        let last = LastRemediationStatus {
            machine: "cp-2".into(),
            time: "2026-11-28T09:50:00Z".into(),
            retry_count: 1,
        };
        let spec = |max: Option<i32>, retry: i32, healthy: i32| {
            Policy::of(Some(&ControlPlaneRemediationSpec {
                max_retry: max,
                retry_period_seconds: Some(retry),
                min_healthy_period_seconds: Some(healthy),
            }))
        };
        let rows: &[(&str, Policy, &str)] = &[
            // Failed 10 minutes after the last remediation, within the default hour: retry 2.
            ("no limit", Policy::of(None), "Remediate"),
            ("max 1 reached", spec(Some(1), 0, 3600), MAX_RETRY),
            ("max 2 allows it", spec(Some(2), 0, 3600), "Remediate"),
            ("retry period 15 min", spec(None, 900, 3600), RETRY_PERIOD),
            // Healthy longer than minHealthyPeriod: a new remediation, no limit applies.
            ("healthy long enough", spec(Some(0), 900, 300), "Remediate"),
        ];
        for (name, policy, want) in rows {
            let mut i = inputs(&machines, &members);
            i.policy = *policy;
            i.last = Some(&last);
            let d = decide(&i);
            assert_eq!(reason(&d), *want, "{name}");
            if let Decision::Remediate(r) = d {
                let expected = if *name == "healthy long enough" { 0 } else { 2 };
                assert_eq!(r.retry_count, expected, "{name}");
            }
        }
    }

    #[test]
    fn the_member_list_is_read_only_when_it_decides() {
        let none = Members::NotRead;
        let one_bad = [machine(0, false), machine(1, false), machine(2, true)];
        assert!(needs_members(&inputs(&one_bad, &none)));
        let healthy = [machine(0, false), machine(1, false), machine(2, false)];
        assert!(!needs_members(&inputs(&healthy, &none)));
        let mut before = inputs(&one_bad, &none);
        before.installed = false;
        assert!(!needs_members(&before));
    }

    #[test]
    fn member_secrets_are_the_etcd_operators_names() {
        assert_eq!(
            member_secrets("m1"),
            [
                "etcd-peer-m1".to_string(),
                "etcd-serving-m1".into(),
                "etcd-serving-metrics-m1".into()
            ]
        );
    }
}

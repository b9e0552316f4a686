//! Cluster API's pre-terminate hook on our control-plane Machines, as KubeadmControlPlane keeps
//! one: however a Machine of an installed cluster is deleted (by hand, by a scale-down, by a
//! remediation), Cluster API drains its Node and then waits, before it deletes the host, until
//! its etcd member and the member's certificate Secrets are gone and we release the hook.
//! Pure: which hook to release or which Machine to clean up now.

use external_types::capi::Machine;

use super::remediation::{self, Members, Removal};

/// Cluster API waits for every annotation with this prefix to go before deleting the
/// infrastructure (`pre-terminate.delete.hook.machine.cluster.x-k8s.io/<owner>`).
pub const PRE_TERMINATE_HOOK: &str =
    "pre-terminate.delete.hook.machine.cluster.x-k8s.io/openshift-assisted-control-plane";

/// What to do about the hooks of control-plane Machines being deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    /// Release these Machines' hooks as they are (nothing of etcd to clean up).
    pub release: Vec<String>,
    /// Clean this Machine's etcd member up, then release its hook.
    pub clean_up: Option<Removal>,
    /// A hooked Machine waits; says which and why.
    pub waiting: Option<(String, String)>,
    /// Live Machines without the hook (made before it existed): it is added.
    pub add: Vec<String>,
}

pub fn has_hook(m: &Machine) -> bool {
    m.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(PRE_TERMINATE_HOOK))
}

/// Cluster API has drained the Machine and waits for the pre-terminate hooks.
fn at_hook(m: &Machine) -> bool {
    m.status
        .as_ref()
        .and_then(|s| s.deletion.as_ref())
        .is_some_and(|d| d.wait_for_pre_terminate_hook_start_time.is_some())
}

/// Whether a hooked Machine waits on the etcd member list (so it is worth reading).
pub fn needs_members(installed: bool, machines: &[Machine]) -> bool {
    installed && machines.iter().any(|m| deleting_with_hook(m) && at_hook(m))
}

fn deleting_with_hook(m: &Machine) -> bool {
    m.metadata.deletion_timestamp.is_some() && has_hook(m)
}

/// `installed`: the cluster is installed (before that no etcd member is ours to remove);
/// `tearing_down`: the control plane itself is being deleted (the cluster goes with it).
pub fn decide(
    installed: bool,
    tearing_down: bool,
    machines: &[Machine],
    members: &Members,
) -> Hooks {
    let name = |m: &Machine| m.metadata.name.clone().unwrap_or_default();
    let mut hooked: Vec<&Machine> = machines.iter().filter(|m| deleting_with_hook(m)).collect();
    hooked.sort_by_key(|m| name(m));
    let add = if tearing_down {
        Vec::new()
    } else {
        machines
            .iter()
            .filter(|m| m.metadata.deletion_timestamp.is_none() && !has_hook(m))
            .map(name)
            .collect()
    };
    if !installed || tearing_down {
        return Hooks {
            release: hooked.iter().map(|m| name(m)).collect(),
            add,
            ..Default::default()
        };
    }
    // One at a time, the first by name that Cluster API has drained.
    let Some(target) = hooked.iter().find(|m| at_hook(m)) else {
        return Hooks {
            add,
            ..Default::default()
        };
    };
    match remediation::removal(target, machines, members) {
        Ok(removal) => Hooks {
            clean_up: Some(removal),
            add,
            ..Default::default()
        },
        Err((_, why)) => Hooks {
            waiting: Some((name(target), why)),
            add,
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::remediation::Member;

    /// `name` on Node `name`; `deleting`: its deletion started and Cluster API waits at the
    /// hook; `hook`: it carries ours.
    fn machine(name: &str, deleting: bool, hook: bool) -> Machine {
        let mut m: Machine = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"clusterName": "c", "bootstrap": {},
                     "infrastructureRef": {"apiGroup": "g", "kind": "K", "name": name}},
            "status": {"nodeRef": {"name": name}},
        }))
        .unwrap();
        if hook {
            m.metadata.annotations = Some([(PRE_TERMINATE_HOOK.to_string(), String::new())].into());
        }
        if deleting {
            m.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    "2026-11-28T10:00:00Z".parse().unwrap(),
                ));
            m.status.as_mut().unwrap().deletion = Some(
                serde_json::from_value(serde_json::json!(
                    {"waitForPreTerminateHookStartTime": "2026-11-28T10:00:05Z"}
                ))
                .unwrap(),
            );
        }
        m
    }

    fn members(names: &[&str]) -> Members {
        Members::Read(
            names
                .iter()
                .zip(1u64..)
                .map(|(n, id)| Member {
                    id,
                    name: n.to_string(),
                })
                .collect(),
        )
    }

    #[test]
    fn a_machine_deleted_by_hand_leaves_etcd_before_its_host_goes() {
        let machines = [
            machine("cp-0", false, true),
            machine("cp-1", false, true),
            machine("cp-2", false, true),
            machine("cp-3", true, true),
        ];
        let all = members(&["cp-0", "cp-1", "cp-2", "cp-3"]);
        assert!(needs_members(true, &machines));
        let h = decide(true, false, &machines, &all);
        let r = h.clean_up.expect("a clean-up");
        assert_eq!(r.machine, "cp-3");
        assert_eq!(r.member.map(|m| m.id), Some(4));
        assert!(!r.delete_node);
        assert!(h.release.is_empty() && h.waiting.is_none() && h.add.is_empty());

        // Its member already gone (a remediation or scale-down removed it): the Secrets are
        // deleted again (idempotent) and the hook released by apply.
        let h = decide(true, false, &machines, &members(&["cp-0", "cp-1", "cp-2"]));
        assert_eq!(h.clean_up.map(|r| r.member), Some(None));

        // The member list unknown: it waits, and says so.
        let h = decide(
            true,
            false,
            &machines,
            &Members::Unreadable("no route".into()),
        );
        let (name, why) = h.waiting.expect("a wait");
        assert_eq!(name, "cp-3");
        assert!(why.contains("no route"), "{why}");
    }

    #[test]
    fn quorum_holds_the_hook_and_so_the_host() {
        // Three members, cp-1 unhealthy (no Node), cp-2 deleted: without it one of two is left.
        let mut unhealthy = machine("cp-1", false, true);
        unhealthy.status = None;
        let machines = [
            machine("cp-0", false, true),
            unhealthy,
            machine("cp-2", true, true),
        ];
        let h = decide(true, false, &machines, &members(&["cp-0", "cp-1", "cp-2"]));
        assert!(h.clean_up.is_none());
        assert!(h.waiting.unwrap().1.contains("quorum"));
    }

    #[test]
    fn before_the_install_or_while_tearing_down_hooks_are_released_as_they_are() {
        let machines = [machine("cp-0", true, true), machine("cp-1", false, false)];
        let h = decide(false, false, &machines, &Members::NotRead);
        assert_eq!(h.release, ["cp-0"]);
        assert_eq!(h.add, ["cp-1"]);
        assert!(!needs_members(false, &machines));
        let h = decide(true, true, &machines, &Members::NotRead);
        assert_eq!(h.release, ["cp-0"]);
        assert!(h.add.is_empty() && h.clean_up.is_none());
    }

    #[test]
    fn only_machines_cluster_api_drained_are_cleaned_up() {
        let mut draining = machine("cp-3", true, true);
        draining.status.as_mut().unwrap().deletion = None;
        let machines = [machine("cp-0", false, true), draining];
        assert!(!needs_members(true, &machines));
        assert_eq!(
            decide(true, false, &machines, &members(&["cp-0", "cp-3"])),
            Hooks::default()
        );
    }
}

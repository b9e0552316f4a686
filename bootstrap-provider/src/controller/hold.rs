//! The day-1/day-2 hold: whether a Machine's Agent may be approved (and its data Secret
//! created) now, from the AgentClusterInstall's state and when day-1 started. Pure: no client,
//! no clock. Both controllers ask it: `config/` before writing the data Secret, `agents/`
//! before approving the Agent.

use assisted_api::AgentClusterInstall;
use k8s_openapi::jiff::Timestamp;

/// A worker approved in one of these states is part of day-1. Unlike CAPOA's gate, `ready` is
/// included: with the masters ready the cluster can be `ready` while it waits for the workers
/// it counts, and holding them there would stall the install.
pub use assisted_api::agentclusterinstall::{ADDING_HOSTS_STATE, PRE_INSTALL_STATES};

/// Whether a Machine's Agent may be approved (and its data Secret created) now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hold {
    Proceed,
    Held(HoldReason),
}

impl Hold {
    pub fn is_proceed(&self) -> bool {
        matches!(self, Hold::Proceed)
    }
}

/// Why a worker waits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HoldReason {
    /// The day-1 install is running (or finished, or failed) and the cluster does not accept
    /// day-2 hosts yet.
    #[error(
        "the cluster's day-1 install is in progress (state {state:?}); this worker joins as a day-2 host once the cluster reaches adding-hosts"
    )]
    InstallInProgress { state: String },
    /// The Machine appeared after day-1 started, yet the cluster reports a pre-install state
    /// (a reset install, or a stale read). Joining a restarted day-1 would change the install the
    /// user started, so it stays a day-2 host.
    #[error(
        "this worker's Machine was created after the day-1 install started (cluster state {state:?}); it joins as a day-2 host once the cluster reaches adding-hosts"
    )]
    LateForDay1 { state: String },
}

/// One row of the hold decision: a name and why it is so.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub name: &'static str,
    pub why: &'static str,
}

/// The hold decision table, in evaluation order.
pub static HOLD_RULES: &[Rule] = &[
    Rule {
        name: "control-plane-never-held",
        why: "day-1 cannot start without every master",
    },
    Rule {
        name: "worker-day2",
        why: "an installed cluster in adding-hosts installs new hosts as day-2",
    },
    Rule {
        name: "late-worker-waits-for-day2",
        why: "a Machine created after day-1 started never joins day-1",
    },
    Rule {
        name: "worker-day1",
        why: "before the install starts, workers join day-1",
    },
    Rule {
        name: "worker-waits-for-install",
        why: "during (or after) day-1, workers wait for adding-hosts",
    },
];

/// Whether the Machine's Agent may go ahead, from the AgentClusterInstall's
/// `status.debugInfo.state` and whether the Machine was created after day-1 started.
///
/// Evaluated until the Agent is approved; approval is never withdrawn (see [`super::agents::desired::desired_agent`]).
pub fn hold(
    is_control_plane: bool,
    aci_state: &str,
    machine_created_after_install_started: bool,
) -> Hold {
    decide_hold(
        is_control_plane,
        aci_state,
        machine_created_after_install_started,
    )
    .1
}

fn decide_hold(control_plane: bool, state: &str, late: bool) -> (&'static str, Hold) {
    let pre_install = PRE_INSTALL_STATES.contains(&state);
    if control_plane {
        ("control-plane-never-held", Hold::Proceed)
    } else if state == ADDING_HOSTS_STATE {
        ("worker-day2", Hold::Proceed)
    } else if late && pre_install {
        (
            "late-worker-waits-for-day2",
            Hold::Held(HoldReason::LateForDay1 {
                state: state.to_string(),
            }),
        )
    } else if pre_install {
        ("worker-day1", Hold::Proceed)
    } else {
        (
            "worker-waits-for-install",
            Hold::Held(HoldReason::InstallInProgress {
                state: state.to_string(),
            }),
        )
    }
}

/// The AgentClusterInstall condition whose `lastTransitionTime` tells when day-1 started.
pub const INSTALL_STARTED_CONDITION: &str = "RequirementsMet";

/// The AgentClusterInstall's `status.debugInfo.state`; empty when it has none (or there is no
/// AgentClusterInstall), which counts as before the install.
pub fn install_state(aci: Option<&AgentClusterInstall>) -> String {
    aci.and_then(|a| a.status.as_ref())
        .and_then(|s| s.debug_info.state.clone())
        .unwrap_or_default()
}

/// When the day-1 install started, as the AgentClusterInstall tells it; None when it cannot.
///
/// The signal is the `RequirementsMet` condition while it is True. The assisted core (as
/// assisted-service) turns it True in the pass that starts the install (reason `ClusterIsReady`:
/// the cluster is ready, every agent approved and synced, nothing holds it) and keeps it True
/// (`ClusterAlreadyInstalling`) through preparing, installing, finalizing, installed and
/// adding-hosts. A condition keeps its `lastTransitionTime` while its status holds, so that time
/// is when the install first started. It also stays True when a failed or timed-out preparation
/// sends the cluster back to `ready` and the install is retried: the pre-install state the
/// late-worker rule is for. It turns False on an error, a cancel, or a host leaving preparation
/// (back to `insufficient`); the start is then unknown.
///
/// Not `status.debugInfo.state`: it carries no time. Not `Completed`: it is False from creation
/// until the install completes, so its `lastTransitionTime` is the creation's.
pub fn install_started_at(aci: &AgentClusterInstall) -> Option<Timestamp> {
    aci.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == INSTALL_STARTED_CONDITION && c.status == "True")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

/// Whether a Machine created at `machine_created` came after the day-1 install started at
/// `install_started`: true only when both are known and the Machine is strictly later. Both
/// times have second precision, so a Machine created in the second the install started counts
/// as before it. Unknown either way: false, and the cluster state alone decides the hold.
pub fn created_after_install_started(
    machine_created: Option<Timestamp>,
    install_started: Option<Timestamp>,
) -> bool {
    match (machine_created, install_started) {
        (Some(created), Some(started)) => created > started,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::test_fixtures::held_install;

    // -- hold: one test per rule, and a check that every rule has one ------------------------

    struct Case {
        control_plane: bool,
        state: &'static str,
        late: bool,
        expect: Hold,
    }

    fn check(rule: &str, c: Case) {
        let (got_rule, got) = decide_hold(c.control_plane, c.state, c.late);
        assert_eq!(got_rule, rule);
        assert_eq!(got, c.expect);
        assert_eq!(hold(c.control_plane, c.state, c.late), c.expect);
    }

    macro_rules! hold_rows {
        ($($test:ident: $rule:literal => $case:expr;)+) => {
            $(#[test] fn $test() { check($rule, $case) })+
            const TESTED: &[&str] = &[$($rule),+];
        };
    }

    hold_rows! {
        control_plane_installing: "control-plane-never-held" =>
            Case { control_plane: true, state: "installing", late: true, expect: Hold::Proceed };
        worker_adding_hosts: "worker-day2" =>
            Case { control_plane: false, state: "adding-hosts", late: true, expect: Hold::Proceed };
        worker_adding_hosts_early: "worker-day2" =>
            Case { control_plane: false, state: "adding-hosts", late: false, expect: Hold::Proceed };
        late_worker_ready: "late-worker-waits-for-day2" =>
            Case { control_plane: false, state: "ready", late: true,
                   expect: Hold::Held(HoldReason::LateForDay1 { state: "ready".into() }) };
        worker_empty_state: "worker-day1" =>
            Case { control_plane: false, state: "", late: false, expect: Hold::Proceed };
        worker_insufficient: "worker-day1" =>
            Case { control_plane: false, state: "insufficient", late: false, expect: Hold::Proceed };
        worker_pending_for_input: "worker-day1" =>
            Case { control_plane: false, state: "pending-for-input", late: false, expect: Hold::Proceed };
        worker_ready: "worker-day1" =>
            Case { control_plane: false, state: "ready", late: false, expect: Hold::Proceed };
        worker_installing: "worker-waits-for-install" =>
            Case { control_plane: false, state: "installing", late: false, expect: held_install("installing") };
        worker_preparing: "worker-waits-for-install" =>
            Case { control_plane: false, state: "preparing-for-installation", late: true,
                   expect: held_install("preparing-for-installation") };
        worker_installed: "worker-waits-for-install" =>
            Case { control_plane: false, state: "installed", late: true, expect: held_install("installed") };
        worker_error: "worker-waits-for-install" =>
            Case { control_plane: false, state: "error", late: false, expect: held_install("error") };
    }

    #[test]
    fn every_hold_rule_is_tested() {
        for r in HOLD_RULES {
            assert!(TESTED.contains(&r.name), "rule {} has no test", r.name);
        }
        for t in TESTED {
            assert!(HOLD_RULES.iter().any(|r| r.name == *t), "unknown rule {t}");
        }
    }

    #[test]
    fn hold_messages_say_what_to_wait_for() {
        let m = held_install("installing").clone();
        let Hold::Held(reason) = m else { panic!() };
        assert!(reason.to_string().contains("adding-hosts"));
        assert!(reason.to_string().contains("installing"));
    }

    // -- when day-1 started, and late Machines ---------------------------------------------

    fn at(second: i64) -> Option<Timestamp> {
        Timestamp::from_second(1_800_000_000 + second).ok()
    }

    #[test]
    fn a_machine_is_late_only_when_created_after_a_known_install_start() {
        // Created before the start: part of day-1.
        assert!(!created_after_install_started(at(0), at(10)));
        // Created after: late.
        assert!(created_after_install_started(at(11), at(10)));
        // The same second: before (the times have second precision).
        assert!(!created_after_install_started(at(10), at(10)));
        // The start unknown, or the Machine's creation: not late.
        assert!(!created_after_install_started(at(11), None));
        assert!(!created_after_install_started(None, at(10)));
        assert!(!created_after_install_started(None, None));
    }

    fn aci_with(conditions: &str) -> AgentClusterInstall {
        crate::controller::test_fixtures::aci(3, "ready", conditions)
    }

    #[test]
    fn the_install_start_is_when_requirements_met_turned_true() {
        let started = aci_with(
            "[{type: Completed, status: 'False', reason: InstallationNotStarted,               lastTransitionTime: '2027-01-15T08:00:00Z'},              {type: RequirementsMet, status: 'True', reason: ClusterAlreadyInstalling,               lastTransitionTime: '2027-01-15T08:30:00Z'}]",
        );
        assert_eq!(
            install_started_at(&started),
            Some("2027-01-15T08:30:00Z".parse().unwrap())
        );
        assert_eq!(install_state(Some(&started)), "ready");
        // Not met (not started, or stopped by an error or a reset): unknown.
        let not_met = aci_with(
            "[{type: RequirementsMet, status: 'False', reason: InsufficientAgents,               lastTransitionTime: '2027-01-15T08:30:00Z'}]",
        );
        assert_eq!(install_started_at(&not_met), None);
        // No condition, or no time on it: unknown.
        assert_eq!(install_started_at(&aci_with("[]")), None);
        let no_time = aci_with("[{type: RequirementsMet, status: 'True'}]");
        assert_eq!(install_started_at(&no_time), None);
        assert_eq!(install_state(None), "");
    }

    #[test]
    fn a_worker_created_after_a_retried_install_started_waits_for_day2() {
        // Back in `ready` after a failed preparation: RequirementsMet is still True from the
        // first start, so a worker created since is late and held; one created before joins.
        let aci = aci_with(
            "[{type: RequirementsMet, status: 'True', reason: ClusterIsReady,               lastTransitionTime: '2027-01-15T08:30:00Z'}]",
        );
        let started = install_started_at(&aci);
        let state = install_state(Some(&aci));
        let late = created_after_install_started("2027-01-15T08:31:00Z".parse().ok(), started);
        assert_eq!(
            hold(false, &state, late),
            Hold::Held(HoldReason::LateForDay1 {
                state: "ready".into()
            })
        );
        let early = created_after_install_started("2027-01-15T08:29:00Z".parse().ok(), started);
        assert_eq!(hold(false, &state, early), Hold::Proceed);
    }
}

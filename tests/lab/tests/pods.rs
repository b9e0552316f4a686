//! The lab as `make lab` runs it: a 3+2 cluster installed, scaled up by a day-2 worker and back
//! down, with every provider running as the pod `clusterctl init` installed on the management
//! cluster's real node — ours from the images `make images` built (`make test` builds them) —
//! and nothing `forbidden` in our managers' logs (the lab fails on it). Each manager's leader pod
//! is deleted once the install has started: with one replica the Deployment's replacement pod
//! takes over (the control plane's finds the core's state on its PersistentVolumeClaim), with
//! two the standby does, within its Lease.

#[path = "common.rs"]
mod common;

use lab::{Options, Topology};

use crate::common::{DAY1_MILESTONES, DAY2_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_plus_two_with_our_managers_as_pods() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "pods",
        Options {
            topology: Topology::ThreePlusTwo,
            managers_as_pods: true,
            kill_leaders: true,
            timeout: std::time::Duration::from_secs(420),
            ..options()
        },
    )
    .await;
    assert_eq!(
        milestones(&report),
        [&DAY1_MILESTONES[..], &DAY2_MILESTONES[..]].concat()
    );
    check_takeovers(&report);
    // The managers' processes in their pods were found and sampled.
    assert!(report.memory.samples > 1);
    assert!(report.memory.managers.iter().all(|m| m.peak_kib > 0));
    // Their requests were counted under their pods' ServiceAccounts' FlowSchemas.
    let api = report.api.as_ref().expect("API requests counted");
    let ours: f64 = api
        .clients
        .iter()
        .filter(|c| {
            c.name.starts_with("controlplane-provider") || c.name.starts_with("bootstrap-provider")
        })
        .map(|c| c.requests)
        .sum();
    assert!(ours > 0.0, "no request counted for our managers' pods");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sno_with_two_replicas_each_survives_its_leaders_deleted() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "pods-replicas",
        Options {
            managers_as_pods: true,
            replicas: 2,
            kill_leaders: true,
            timeout: std::time::Duration::from_secs(420),
            ..options()
        },
    )
    .await;
    assert_eq!(milestones(&report), DAY1_MILESTONES);
    check_takeovers(&report);
}

/// Both managers' leaders were deleted before the cluster was installed, and a new leader of
/// each took over and became ready.
fn check_takeovers(report: &lab::Report) {
    let installed = report
        .milestones
        .iter()
        .find(|(_, m)| m == "installed")
        .map(|(at, _)| *at)
        .expect("installed milestone");
    assert_eq!(
        report.leader_kills.len(),
        2,
        "both managers' leaders deleted"
    );
    for kill in &report.leader_kills {
        let ready = kill.ready_at.expect("a new leader took over");
        assert!(kill.killed_at <= installed && ready > kill.killed_at);
        eprintln!(
            "{}: leader {} deleted at {:.1?}, a new leader ready {:.1?} later; installed at {installed:.1?}",
            kill.manager,
            kill.pod,
            kill.killed_at,
            ready - kill.killed_at
        );
    }
}

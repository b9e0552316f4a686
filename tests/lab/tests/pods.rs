//! The lab as `make lab` runs it: a 3+2 cluster installed, scaled up by a day-2 worker and back
//! down, with every provider running as the pod `clusterctl init` installed on the management
//! cluster's real node — ours from the images `make images` built (`make test` builds them) —
//! and nothing `forbidden` in our managers' logs (the lab fails on it). The control-plane pod is
//! deleted once the install has started: its replacement finds the core's state on its
//! PersistentVolumeClaim and finishes the install.

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
            kill_core_pod: true,
            timeout: std::time::Duration::from_secs(420),
            ..options()
        },
    )
    .await;
    assert_eq!(
        milestones(&report),
        [&DAY1_MILESTONES[..], &DAY2_MILESTONES[..]].concat()
    );
    // The control-plane pod was replaced before the cluster was installed, and came back.
    let kill = report
        .core_pod_kill
        .as_ref()
        .expect("the control-plane pod was deleted");
    let ready = kill.ready_at.expect("its replacement became ready");
    let installed = report
        .milestones
        .iter()
        .find(|(_, m)| m == "installed")
        .map(|(at, _)| *at)
        .expect("installed milestone");
    assert!(kill.killed_at <= installed && ready > kill.killed_at);
    eprintln!(
        "control-plane pod deleted at {:.1?}, replacement ready {:.1?} later, installed at {installed:.1?}",
        kill.killed_at,
        ready - kill.killed_at
    );
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

//! `--disconnected`: a cluster installed from the site's mirror registry (the test bed's real
//! OCI registry behind https with its own CA and a password), and one whose mirror ConfigMap
//! has a typo.

use lab::{Disconnected, Options, Topology};

use crate::common::{DAY1_MILESTONES, DAY2_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_plus_one_installs_from_the_mirror_and_adds_a_worker() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "disconnected",
        Options {
            topology: Topology::ThreePlusTwo,
            workers: 1,
            disconnected: Some(Disconnected::Mirror),
            ..options()
        },
    )
    .await;
    let expected: Vec<&str> = DAY1_MILESTONES
        .iter()
        .chain(&DAY2_MILESTONES)
        .copied()
        .collect();
    assert_eq!(milestones(&report), expected);
    let m = report.mirror.as_ref().expect("the mirror's report");
    assert_eq!(m.problem(), None);
    // Every host pulled by digest from the mirror: its agent at boot and the installer at the
    // install step; the day-1 hosts (three masters, one worker) also the release and the
    // installer for the image availability check before the install (a day-2 host has none).
    let hosts: std::collections::BTreeSet<&str> = m.pulls.iter().map(|p| p.host.as_str()).collect();
    assert_eq!(hosts.len(), 5, "{:?}", m.pulls);
    // (A host asked for the availability check twice pulls twice: hosts are counted, not pulls.)
    let hosts_pulling = |image: &str| {
        m.pulls
            .iter()
            .filter(|p| p.image == image)
            .map(|p| p.host.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    assert_eq!(hosts_pulling(&m.release_by_digest), 4, "{:?}", m.pulls);
    let by_digest_from = |prefix: &str| {
        m.pulls
            .iter()
            .filter(|p| p.image.starts_with(prefix))
            .map(|p| p.host.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    assert_eq!(
        by_digest_from("quay.io/edge-infrastructure/assisted-installer-agent@"),
        5
    );
    assert_eq!(
        by_digest_from("quay.io/edge-infrastructure/assisted-installer@"),
        5
    );
    // The one tag the mirror was asked for: the control plane pinning the release.
    assert_eq!(m.served.tags, ["ocp4/openshift4:4.17.3-x86_64"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_config_map_with_a_typo_is_named_and_nothing_installs() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "broken-mirror",
        Options {
            disconnected: Some(Disconnected::BrokenConfigMap),
            timeout: std::time::Duration::from_secs(200),
            ..options()
        },
    )
    .await;
    assert_eq!(
        milestones(&report),
        ["hosts available", "mirror ConfigMap refused"]
    );
}

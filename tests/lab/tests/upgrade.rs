//! The lab's upgrade scenarios: an installed single-node cluster gets a new
//! `distributionVersion`; the control plane asks the cluster's (simulated) cluster-version
//! operator for it and follows it to the end — or to its failure, which it reports. An older
//! one is refused at admission.

use lab::{Options, Upgrade};

use crate::common::{DAY1_MILESTONES, milestones, options, run_ok};

fn upgrading(to: &str, fails: bool) -> Options {
    Options {
        timeout: std::time::Duration::from_secs(300),
        upgrade: Some(Upgrade {
            to: to.into(),
            fails,
        }),
        ..options()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_cluster_upgrades() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok("upgrade", upgrading("4.17.5", false)).await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend(["upgrade requested", "upgraded"]);
    assert_eq!(milestones(&report), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_upgrade_is_reported_on_the_control_plane() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok("upgrade-fails", upgrading("4.18.2", true)).await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend(["upgrade requested", "upgrade failure reported"]);
    assert_eq!(milestones(&report), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgrade_is_refused_and_nothing_moves() {
    if testbed::skip() {
        return;
    }
    // The cluster runs 4.17.3: the edit is refused at admission ("not downgraded") and the
    // control plane stays as it was, UpgradeCompleted True.
    let (report, _dir) = run_ok("downgrade", upgrading("4.16.0", false)).await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend(["upgrade requested", "downgrade refused"]);
    assert_eq!(milestones(&report), expected);
}

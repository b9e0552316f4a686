//! Broken hosts (`--fail-host`): a MachineHealthCheck (the real Cluster API's) over the
//! failed host's Machines, the host's kubelet stopped. A worker is remediated by its
//! MachineSet and replaced by a day-2 install; a master of three by the control plane (its
//! etcd member removed through the workload apiserver's pod exec, then a day-2 control-plane
//! host, etcd back to three); two failed masters are held back (etcd quorum); the only master
//! of a single-node cluster is reported in `Remediating` (after its control plane refused to
//! grow to three).

use lab::{Options, Topology};

use crate::common::{DAY1_MILESTONES, DAY2_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_worker_is_remediated_and_replaced() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "remediate-worker",
        Options {
            topology: Topology::ThreePlusTwo,
            workers: 1,
            fail_host: Some("worker".into()),
            timeout: std::time::Duration::from_secs(420),
            ..options()
        },
    )
    .await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend(DAY2_MILESTONES);
    expected.extend([
        "host failed",
        "unhealthy Machine remediated",
        "replacement installed",
    ]);
    assert_eq!(milestones(&report), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_master_of_three_is_replaced_and_etcd_is_three_again() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "remediate-master-of-three",
        Options {
            topology: Topology::Compact,
            fail_host: Some("master".into()),
            timeout: std::time::Duration::from_secs(420),
            ..options()
        },
    )
    .await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend([
        "host failed",
        "unhealthy Machine remediated",
        "replacement installed",
    ]);
    assert_eq!(milestones(&report), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_failed_masters_are_held_back_for_etcd_quorum() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "remediate-two-masters",
        Options {
            topology: Topology::Compact,
            fail_host: Some("master,master".into()),
            timeout: std::time::Duration::from_secs(300),
            ..options()
        },
    )
    .await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend(["host failed", "remediation held"]);
    assert_eq!(milestones(&report), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_master_is_reported_in_remediating() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "remediate-master",
        Options {
            fail_host: Some("master".into()),
            // First a control plane of three is asked for: refused on a single-node cluster.
            scale_control_plane: Some(3),
            timeout: std::time::Duration::from_secs(300),
            ..options()
        },
    )
    .await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend([
        "control-plane scaling requested",
        "control-plane scaling refused",
        "control plane scaled back",
        "host failed",
        "remediation reported",
    ]);
    assert_eq!(milestones(&report), expected);
}

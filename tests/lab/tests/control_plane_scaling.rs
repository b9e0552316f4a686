//! `--scale-control-plane`: an installed control plane scaled past its day-1 masters and back.
//! OKD 4.19 runs five masters: two day-2 control-plane hosts join etcd, then leave it one at a
//! time (each etcd member and its certificate Secrets removed before its Machine goes). The
//! refusal where OpenShift has no such control plane (a single-node cluster) runs with the
//! SNO remediation scenario in remediation.rs.

use lab::{Options, Topology};

use crate::common::{DAY1_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_masters_scale_to_five_and_back() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "control-plane-3-5-3",
        Options {
            topology: Topology::Compact,
            okd: true,
            scale_control_plane: Some(5),
            timeout: std::time::Duration::from_secs(480),
            ..options()
        },
    )
    .await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend([
        "control-plane scaling requested",
        "control plane scaled up",
        "control plane scaled back",
    ]);
    assert_eq!(milestones(&report), expected);
}

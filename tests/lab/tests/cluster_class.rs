//! A cluster declared as Cluster API topology over a ClusterClass of ours
//! (templates/cluster-template-topology.yaml): the real Cluster API makes the control plane from
//! our OpenshiftAssistedControlPlaneTemplate, the workers' MachineDeployment once the control
//! plane reports its version, scales it when the topology says so, and upgrades when the
//! topology's version and openshiftVersion variable change together — ending with its
//! `TopologyReconciled` True (Cluster API agrees the upgrade is done).

use lab::{Options, Upgrade};

use crate::common::{DAY1_MILESTONES, DAY2_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_class_cluster_installs_scales_and_upgrades() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "cluster-class",
        Options {
            cluster_class: true,
            timeout: std::time::Duration::from_secs(400),
            upgrade: Some(Upgrade {
                to: "4.18.0".into(),
                fails: false,
            }),
            ..options()
        },
    )
    .await;
    let mut expected = DAY1_MILESTONES.to_vec();
    expected.extend(DAY2_MILESTONES);
    expected.extend(["upgrade requested", "upgraded"]);
    assert_eq!(milestones(&report), expected);
    // What the real clusterctl reads: the topology's version on the Cluster and on the control
    // plane (its spec.version), the infrastructure template the topology cloned for the control
    // plane (from spec.machineTemplate.spec.infrastructureRef), the conditions.
    let describe = report.describe.as_deref().expect("clusterctl describe ran");
    for wanted in [
        "Cluster lab/compact, v1.31.0",
        "OpenshiftAssistedControlPlane lab/compact-cp, v1.31.0",
        "Metal3MachineTemplate lab/compact-",
        "Available",
    ] {
        assert!(describe.contains(wanted), "{wanted:?} not in:\n{describe}");
    }
}

//! The lab's scenario for single-node OpenShift, end to end on the testbed with our managers
//! as processes: the site's host is provisioned by CAPM3, boots the live ISO, installs, its
//! Node registers and the Machine reaches Running.

use lab::Options;

use crate::common::{DAY1_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sno_installs_and_its_machine_runs() {
    if testbed::skip() {
        return;
    }
    let (report, _dir) = run_ok(
        "sno",
        Options {
            timeout: std::time::Duration::from_secs(300),
            ..options()
        },
    )
    .await;
    assert_eq!(milestones(&report), DAY1_MILESTONES);
    // The managers were sampled while the scenario ran.
    assert!(report.memory.samples > 1);
    assert!(report.memory.managers.iter().all(|m| m.peak_kib > 0));
    assert!(report.all_installed().is_some());
    // Cluster API finds the control plane's infrastructure template where the v1beta2
    // contract puts it (spec.machineTemplate.spec.infrastructureRef, which the defaulting
    // webhook fills from the template's flat CAPOA shape).
    let describe = report.describe.as_deref().expect("clusterctl describe ran");
    assert!(
        describe.contains("OpenshiftAssistedControlPlane lab/sno-cp")
            && describe.contains("Metal3MachineTemplate lab/sno-controlplane"),
        "{describe}"
    );
}

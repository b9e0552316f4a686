//! The lab's scenario for single-node OpenShift, end to end on the testbed with our managers
//! as processes: the site's host is provisioned by CAPM3, boots the live ISO, installs, its
//! Node registers and the Machine reaches Running.

use std::path::PathBuf;
use std::time::Duration;

use lab::{Options, Topology};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sno_installs_and_its_machine_runs() {
    if testbed::skip() {
        return;
    }
    // The provider binaries are built next to the lab binary (`make lab`, or
    // `cargo build --bins -p bootstrap-provider -p controlplane-provider`).
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_lab"))
        .parent()
        .expect("target directory")
        .to_path_buf();
    let dir = tempfile::Builder::new()
        .prefix("capoa-lab-test-sno-")
        .tempdir()
        .expect("lab directory");
    let report = lab::run(&Options {
        topology: Topology::Sno,
        clusters: 1,
        workers: lab::manifests::DEFAULT_WORKERS,
        speed: lab::Speed::Instant,
        cluster_file: None,
        report: None,
        dir: dir.path().to_path_buf(),
        bin_dir,
        timeout: Duration::from_secs(300),
        keep: false,
        keep_dirs: false,
        chaos: None,
        okd: false,
    })
    .await
    .expect("the lab starts");
    if !report.ok {
        let kept = dir.keep();
        panic!(
            "the SNO scenario failed: {:?}; lab directory kept: {}",
            report.stuck,
            kept.display()
        );
    }
    let names: Vec<&str> = report.milestones.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        names,
        [
            "hosts available",
            "InfraEnvs ready",
            "hosts provisioned",
            "Agents approved",
            "install started",
            "installed",
            "Nodes registered",
            "Machines Running",
        ]
    );
    // The managers were sampled while the scenario ran.
    assert!(report.memory.samples > 1);
    assert!(report.memory.managers.iter().all(|m| m.peak_kib > 0));
    assert!(report.all_installed().is_some());
}

//! What the lab's scenario tests share: the options every run starts from, a run that keeps
//! its lab directory when it fails, and the milestones a scenario must pass.

use std::path::PathBuf;
use std::time::Duration;

use lab::{Options, Report, Topology};

/// The day-1 milestones, in order: all an SNO or a compact cluster passes.
pub const DAY1_MILESTONES: [&str; 8] = [
    "hosts available",
    "InfraEnvs ready",
    "hosts provisioned",
    "Agents approved",
    "install started",
    "installed",
    "Nodes registered",
    "Machines Running",
];

/// What follows day-1 for a cluster with a MachineDeployment.
pub const DAY2_MILESTONES: [&str; 2] = ["day-2 worker installed", "scale-down done"];

/// One SNO cluster at instant speed, no report, no chaos; the lab directory comes from
/// [`run_ok`]. The provider binaries are built next to the lab binary (`make test` builds them,
/// or `cargo build --bins -p bootstrap-provider -p controlplane-provider`).
pub fn options() -> Options {
    Options {
        topology: Topology::Sno,
        clusters: 1,
        workers: lab::manifests::DEFAULT_WORKERS,
        speed: lab::Speed::Instant,
        cluster_file: None,
        report: None,
        dir: PathBuf::new(),
        bin_dir: PathBuf::from(env!("CARGO_BIN_EXE_lab"))
            .parent()
            .expect("target directory")
            .to_path_buf(),
        timeout: Duration::from_secs(400),
        keep: false,
        keep_dirs: false,
        chaos: None,
        okd: false,
        managers_as_pods: false,
        replicas: 1,
        kill_leaders: false,
        upgrade: None,
        cluster_class: false,
        fail_host: None,
        scale_control_plane: None,
        disconnected: None,
        image_mode: None,
        shards: 1,
    }
}

/// Runs the lab in a new directory named after `what` (the report, if asked for, is written
/// there) and returns its report with the directory; on failure panics naming `what`, why and
/// the directory, which is kept.
pub async fn run_ok(what: &str, options: Options) -> (Report, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("capoa-lab-test-{what}-"))
        .tempdir()
        .expect("lab directory");
    let report = lab::run(&Options {
        dir: dir.path().to_path_buf(),
        report: options.report.as_ref().map(|f| dir.path().join(f)),
        ..options
    })
    .await
    .expect("the lab starts");
    if !report.ok {
        let kept = dir.keep();
        panic!(
            "the {what} scenario failed: {:?} / {:?}; lab directory kept: {}",
            report.failure,
            report.stuck,
            kept.display()
        );
    }
    (report, dir)
}

/// The milestones the run passed, in order.
pub fn milestones(report: &Report) -> Vec<&str> {
    report.milestones.iter().map(|(_, m)| m.as_str()).collect()
}

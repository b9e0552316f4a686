//! `--cluster-file` end to end: the CAPOA example `docs/examples/capoa-multinode.yaml` (3
//! control-plane nodes, 2 workers, disk image with Metal3DataTemplates, no host selectors) is
//! applied as given; the lab adds the namespace's six BareMetalHosts on the network of its VIPs,
//! installs it, scales its MachineDeployment up by a day-2 worker and back down, and writes the
//! JSON report. CAPOA's two single-node examples (`capoa-sno.yaml`, OCP; `capoa-okd-sno.yaml`,
//! OKD without a pull secret) install the same way, one after the other.

use std::path::PathBuf;
use std::time::Duration;

use lab::{Options, Topology};
use serde_json::Value;

/// Runs the lab on one of `docs/examples/`; panics, keeping the lab directory, if it fails.
async fn run_example(file: &str, report_file: Option<PathBuf>) -> lab::Report {
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_lab"))
        .parent()
        .expect("target directory")
        .to_path_buf();
    let dir = tempfile::Builder::new()
        .prefix("capoa-lab-test-cluster-file-")
        .tempdir()
        .expect("lab directory");
    let report = lab::run(&Options {
        // Ignored with a cluster file.
        topology: Topology::Sno,
        clusters: 1,
        workers: lab::manifests::DEFAULT_WORKERS,
        speed: lab::Speed::Instant,
        cluster_file: Some(testbed::cache::repo_root().join("docs/examples").join(file)),
        report: report_file,
        dir: dir.path().to_path_buf(),
        bin_dir,
        timeout: Duration::from_secs(400),
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
            "the example {file} failed: {:?}; lab directory kept: {}",
            report.stuck,
            kept.display()
        );
    }
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capoa_sno_examples_install() {
    if testbed::skip() {
        return;
    }
    for (file, name) in [
        ("capoa-sno.yaml", "test-sno"),
        ("capoa-okd-sno.yaml", "test-sno-okd"),
    ] {
        let report = run_example(file, None).await;
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
            ],
            "{file}"
        );
        let c = &report.clusters[0];
        assert_eq!(c.name, name, "{file}");
        assert_eq!((c.masters, c.workers), (1, 0), "{file}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capoa_multinode_example_installs_scales_up_and_down() {
    if testbed::skip() {
        return;
    }
    let report_dir = tempfile::tempdir().expect("report directory");
    let report_file = report_dir.path().join("report.json");
    let report = run_example("capoa-multinode.yaml", Some(report_file.clone())).await;
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
            "day-2 worker installed",
            "scale-down done",
        ]
    );
    let c = &report.clusters[0];
    assert_eq!(
        (c.name.as_str(), c.namespace.as_str()),
        ("test-multinode", "test-capi")
    );
    assert_eq!((c.masters, c.workers), (3, 2));

    // The JSON report says the same.
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(&report_file).expect("the report is written"),
    )
    .expect("the report is JSON");
    assert_eq!(json["ok"], true);
    assert!(
        json["source"]
            .as_str()
            .unwrap_or_default()
            .ends_with("capoa-multinode.yaml")
    );
    let cluster = &json["clusters"][0];
    assert_eq!(cluster["name"], "test-multinode");
    assert_eq!(cluster["done"], true);
    assert!(cluster["installed_seconds"].as_f64().is_some());
    assert_eq!(cluster["milestones"].as_array().map(Vec::len), Some(10));
    assert_eq!(cluster["stuck"], Value::Null);
    // After the scale-down: 5 Machines Running, 5 Nodes, the spare host available again.
    let seen = &cluster["last_seen"];
    assert_eq!(seen["machines_running"], 5);
    assert_eq!(seen["nodes_ready"], 5);
    assert_eq!(seen["bare_metal_hosts"]["available"], 1);
    assert_eq!(json["memory"]["managers"].as_array().map(Vec::len), Some(2));
    assert!(
        json["memory"]["peak_sum_mib"]
            .as_f64()
            .is_some_and(|m| m > 0.0)
    );
}

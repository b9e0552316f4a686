//! `--cluster-file` end to end: the CAPOA example `docs/examples/capoa-multinode.yaml` (3
//! control-plane nodes, 2 workers, disk image with Metal3DataTemplates, no host selectors) is
//! applied as given; the lab adds the namespace's six BareMetalHosts on the network of its VIPs,
//! installs it, scales its MachineDeployment up by a day-2 worker and back down, and writes the
//! JSON report. CAPOA's two single-node examples (`capoa-sno.yaml`, OCP; `capoa-okd-sno.yaml`,
//! OKD without a pull secret) install the same way, one after the other.

use lab::Options;
use serde_json::Value;

use crate::common::{DAY1_MILESTONES, DAY2_MILESTONES, milestones, options, run_ok};

/// Runs the lab on one of `docs/examples/`, with a JSON report `report.json` in its directory.
async fn run_example(file: &str) -> (lab::Report, tempfile::TempDir) {
    run_ok(
        &format!("cluster-file-{}", file.trim_end_matches(".yaml")),
        Options {
            cluster_file: Some(testbed::cache::repo_root().join("docs/examples").join(file)),
            report: Some("report.json".into()),
            ..options()
        },
    )
    .await
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
        let (report, _dir) = run_example(file).await;
        assert_eq!(milestones(&report), DAY1_MILESTONES, "{file}");
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
    let (report, dir) = run_example("capoa-multinode.yaml").await;
    let report_file = dir.path().join("report.json");
    assert_eq!(
        milestones(&report),
        [&DAY1_MILESTONES[..], &DAY2_MILESTONES[..]].concat()
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

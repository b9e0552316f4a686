//! Completeness: every leaf `spec` field of OpenshiftAssistedControlPlane (walked from the
//! generated OpenAPI schema of the hub version, so a new field in the Rust types shows up here)
//! is acted on, forwarded to the AgentClusterInstall (whose core conditions are mirrored), or has
//! a row. `spec.openshiftAssistedConfigSpec` is the config's spec: provider-api's
//! `CONFIG_COVERAGE` and `CONFIG_ROWS` (`provider_api::bootstrap::unsupported`) cover it. A field
//! with none of these fails with its path.

use std::collections::BTreeSet;

use kube::CustomResourceExt;
use manager::fields::{Coverage, covers};
use provider_api::bootstrap::unsupported::{CONFIG_COVERAGE, CONFIG_ROWS};
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use super::{CONFIG_SPEC_PARENT, CONTROL_PLANE_ROWS};
use Coverage::*;

/// (field path prefix, coverage); the longest prefix covering a leaf decides.
const TABLE: &[(&str, Coverage)] = &[
    (
        "spec.distributionVersion",
        Acted(
            "release.rs: ClusterImageSet release image; upgrade.rs: ClusterVersion desiredUpdate",
        ),
    ),
    (
        "spec.replicas",
        Acted("machines.rs desired_replicas; ACI controlPlaneAgents"),
    ),
    (
        "spec.version",
        Acted(
            "the v1beta2 contract's version: Cluster API's topology writes and reads it; \
             admission checks it; the release is distributionVersion",
        ),
    ),
    (
        "spec.remediation",
        Acted("remediation.rs Policy: maxRetry, retryPeriodSeconds, minHealthyPeriodSeconds"),
    ),
    (
        "spec.machineTemplate.metadata",
        Acted("hive.rs labels; machines.rs Machine annotations"),
    ),
    (
        "spec.machineTemplate.infrastructureRef",
        Acted("plan.rs template cloned per Machine"),
    ),
    (
        "spec.machineTemplate.deletion",
        Acted("machines.rs Machine spec.deletion"),
    ),
    (
        "spec.machineTemplate.spec.infrastructureRef",
        Acted("plan.rs template cloned per Machine (wins over the flat one)"),
    ),
    (
        "spec.machineTemplate.spec.deletion",
        Acted("machines.rs Machine spec.deletion (wins over the flat one)"),
    ),
    (
        "spec.machineTemplate.spec.readinessGates",
        Acted("machines.rs Machine spec.readinessGates"),
    ),
    (
        "spec.machineTemplate.spec.taints",
        Acted("machines.rs Machine spec.taints"),
    ),
    (
        "spec.config.apiVIPs",
        Acted("hive.rs ACI apiVIPs, platform BareMetal; alone: InvalidConfig"),
    ),
    (
        "spec.config.ingressVIPs",
        Acted("hive.rs ACI ingressVIPs, platform BareMetal; alone: InvalidConfig"),
    ),
    (
        "spec.config.manifestsConfigMapRefs",
        Forwarded("ACI manifestsConfigMapRefs"),
    ),
    (
        "spec.config.diskEncryption",
        Forwarded("ACI diskEncryption"),
    ),
    ("spec.config.proxy", Forwarded("ACI proxy")),
    (
        "spec.config.mastersSchedulable",
        Forwarded("ACI mastersSchedulable"),
    ),
    (
        "spec.config.sshAuthorizedKey",
        Forwarded("ACI sshPublicKey"),
    ),
    (
        "spec.config.clusterName",
        Acted("hive.rs ClusterDeployment clusterName"),
    ),
    (
        "spec.config.baseDomain",
        Acted("hive.rs ClusterDeployment baseDomain"),
    ),
    (
        "spec.config.pullSecretRef",
        Acted("dereference.rs, plan.rs: ClusterDeployment pullSecretRef"),
    ),
    (
        "spec.config.imageRegistryRef",
        Acted("registry.rs: the cluster's mirror manifests, ACI mirrorRegistryRef"),
    ),
    (
        "spec.config.capabilities",
        Acted("install_config.rs: install-config override"),
    ),
    (
        "spec.config.imageMode.osImageStream",
        Acted("install_config.rs: install-config override osImageStream"),
    ),
    (
        "spec.config.imageMode.pools",
        Acted(
            "image_mode.rs: a MachineOSConfig per pool among the ACI's manifests, push Secrets into the installed cluster",
        ),
    ),
];

/// The control plane's `spec` leaves.
fn spec_leaves() -> Vec<String> {
    manager::fields::spec_leaves(&OpenshiftAssistedControlPlane::crd())
}

fn longest(table: &[(&'static str, Coverage)], leaf: &str) -> Option<(&'static str, Coverage)> {
    table
        .iter()
        .filter(|(prefix, _)| covers(prefix, leaf))
        .max_by_key(|(prefix, _)| prefix.len())
        .copied()
}

/// A leaf's coverage: under `spec.openshiftAssistedConfigSpec` the config's, else ours.
fn coverage_of(leaf: &str) -> Option<(&'static str, Coverage)> {
    match leaf.strip_prefix(CONFIG_SPEC_PARENT) {
        Some(rest) => longest(CONFIG_COVERAGE, &format!("spec.{rest}")),
        None => longest(TABLE, leaf),
    }
}

#[test]
fn every_control_plane_spec_field_is_acted_on_or_reported() {
    let leaves = spec_leaves();
    let mut problems = Vec::new();
    for leaf in &leaves {
        if coverage_of(leaf).is_none() {
            problems.push(format!(
                "{leaf}: neither acted on, forwarded nor reported; add it to TABLE in \
                 status/unsupported/coverage.rs (and a row in CONTROL_PLANE_ROWS if nothing \
                 acts on it)"
            ));
        }
    }
    for (prefix, _) in TABLE {
        if !leaves.iter().any(|leaf| covers(prefix, leaf)) {
            problems.push(format!("{prefix}: in TABLE but not in the schema"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn reported_fields_and_rows_match() {
    let config_spec = |path: &str| {
        format!(
            "{CONFIG_SPEC_PARENT}{}",
            path.strip_prefix("spec.").unwrap_or(path)
        )
    };
    let wanted: BTreeSet<String> = TABLE
        .iter()
        .filter(|(_, c)| c.needs_row())
        .map(|(prefix, _)| prefix.to_string())
        .chain(
            CONFIG_COVERAGE
                .iter()
                .filter(|(_, c)| c.needs_row())
                .map(|(prefix, _)| config_spec(prefix)),
        )
        .collect();
    let rows: BTreeSet<String> = CONTROL_PLANE_ROWS
        .iter()
        .map(|r| r.field.to_string())
        .chain(CONFIG_ROWS.iter().map(|r| config_spec(r.field)))
        .collect();
    assert_eq!(
        wanted, rows,
        "the table's reported fields and the rows differ"
    );
}

#[test]
fn the_walk_finds_nested_and_config_fields() {
    let leaves = spec_leaves();
    for path in [
        "spec.config.diskEncryption.tangServers",
        "spec.config.imageRegistryRef.name",
        "spec.machineTemplate.infrastructureRef.kind",
        "spec.openshiftAssistedConfigSpec.kernelArguments[].value",
    ] {
        assert!(leaves.iter().any(|l| l == path), "{path} not in {leaves:?}");
    }
    assert_eq!(
        coverage_of("spec.openshiftAssistedConfigSpec.osImageVersion"),
        Some((
            "spec.osImageVersion",
            Partly("compared between configs only")
        ))
    );
}

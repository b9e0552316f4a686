//! Completeness: every leaf `spec` field of OpenshiftAssistedControlPlane (walked from the
//! generated OpenAPI schema of the hub version, so a new field in the Rust types shows up here)
//! is acted on, forwarded to the AgentClusterInstall (whose core conditions are mirrored), or has
//! a row. `spec.openshiftAssistedConfigSpec` is the config's spec: the bootstrap provider's
//! `CONFIG_COVERAGE` and `CONFIG_ROWS` cover it. A field with none of these fails with its path.

use std::collections::BTreeSet;

use bootstrap_provider::controller::unsupported::{CONFIG_COVERAGE, CONFIG_ROWS, Coverage};
use kube::CustomResourceExt;
use serde_json::Value;

use super::{CONFIG_SPEC_PARENT, CONTROL_PLANE_ROWS};
use crate::api::OpenshiftAssistedControlPlane;
use Coverage::*;

/// (field path prefix, coverage); the longest prefix covering a leaf decides.
const TABLE: &[(&str, Coverage)] = &[
    (
        "spec.distributionVersion",
        Partly("release.rs: ClusterImageSet release image; no upgrade"),
    ),
    (
        "spec.replicas",
        Acted("machines.rs desired_replicas; ACI controlPlaneAgents"),
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
    ("spec.config.imageRegistryRef", Unsupported),
    (
        "spec.config.capabilities",
        Acted("install_config.rs: install-config override"),
    ),
];

/// Every leaf path under `node`: objects recurse into their properties, lists into their
/// items (`name[]`); a free-form object (preserve-unknown-fields) is a leaf of its own too.
fn leaves(node: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(props) = node.get("properties").and_then(Value::as_object)
        && !props.is_empty()
    {
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            out.push(path.to_string());
        }
        for (name, child) in props {
            leaves(child, &format!("{path}.{name}"), out);
        }
        return;
    }
    if let Some(items) = node.get("items")
        && items.get("properties").is_some()
    {
        leaves(items, &format!("{path}[]"), out);
        return;
    }
    out.push(path.to_string());
}

fn spec_leaves() -> Vec<String> {
    let crd = OpenshiftAssistedControlPlane::crd();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .map(|s| serde_json::to_value(s).unwrap_or_default())
        .unwrap_or_default();
    let mut out = Vec::new();
    leaves(&schema["properties"]["spec"], "spec", &mut out);
    out
}

fn covers(prefix: &str, leaf: &str) -> bool {
    leaf == prefix
        || leaf
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
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

//! Completeness: every leaf `spec` field of OpenshiftAssistedConfig and of the template's
//! `spec.template.spec` (walked from the generated OpenAPI schema of the hub version, so a new
//! field in the Rust types shows up here) is either acted on or has a row. A field with neither
//! fails with its path.

use std::collections::BTreeSet;

use kube::CustomResourceExt;
use manager::fields::{Coverage, covers, spec_leaves};

use super::{CONFIG_COVERAGE, CONFIG_ROWS};
use crate::bootstrap::api::{OpenshiftAssistedConfig, OpenshiftAssistedConfigTemplate};

fn coverage_of(leaf: &str) -> Option<(&'static str, Coverage)> {
    CONFIG_COVERAGE
        .iter()
        .filter(|(prefix, _)| covers(prefix, leaf))
        .max_by_key(|(prefix, _)| prefix.len())
        .copied()
}

/// The config leaves, and the template's `spec.template.spec` leaves as config paths.
fn config_leaves() -> (Vec<String>, Vec<String>) {
    let config = spec_leaves(&OpenshiftAssistedConfig::crd());
    let template = spec_leaves(&OpenshiftAssistedConfigTemplate::crd());
    (config, template)
}

#[test]
fn every_config_spec_field_is_acted_on_or_reported() {
    let (config, template) = config_leaves();
    let mut problems = Vec::new();
    for leaf in &config {
        if coverage_of(leaf).is_none() {
            problems.push(format!(
                "OpenshiftAssistedConfig {leaf}: neither acted on nor reported; add it to \
                 CONFIG_COVERAGE in provider-api/src/bootstrap/unsupported/mod.rs (and a row in \
                 CONFIG_ROWS if nothing acts on it)"
            ));
        }
    }
    for leaf in &template {
        // CAPI copies the template's metadata and spec into each config it clones.
        if covers("spec.template.metadata", leaf) {
            continue;
        }
        let as_config = leaf
            .strip_prefix("spec.template.spec")
            .map(|rest| format!("spec{rest}"));
        if as_config.as_deref().and_then(coverage_of).is_none() {
            problems.push(format!(
                "OpenshiftAssistedConfigTemplate {leaf}: neither acted on nor reported"
            ));
        }
    }
    for (prefix, _) in CONFIG_COVERAGE {
        if !config.iter().any(|leaf| covers(prefix, leaf)) {
            problems.push(format!(
                "{prefix}: in CONFIG_COVERAGE but not in the schema"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn reported_fields_and_rows_match() {
    let wanted: BTreeSet<&str> = CONFIG_COVERAGE
        .iter()
        .filter(|(_, c)| c.needs_row())
        .map(|(prefix, _)| *prefix)
        .collect();
    let rows: BTreeSet<&str> = CONFIG_ROWS.iter().map(|r| r.field).collect();
    assert_eq!(
        wanted, rows,
        "CONFIG_COVERAGE's Partly/Unsupported fields and CONFIG_ROWS differ"
    );
}

#[test]
fn the_walk_finds_nested_and_list_fields() {
    let (config, template) = config_leaves();
    for path in [
        "spec.kernelArguments[].value",
        "spec.nmStateConfigLabelSelector.matchExpressions[].key",
        "spec.nodeRegistration.providerID",
        "spec.proxy.httpProxy",
    ] {
        assert!(config.iter().any(|l| l == path), "{path} not in {config:?}");
    }
    assert!(
        template
            .iter()
            .any(|l| l == "spec.template.spec.osImageVersion")
    );
    assert_eq!(
        coverage_of("spec.nmStateConfigLabelSelector.matchExpressions[].values").map(|(p, _)| p),
        Some("spec.nmStateConfigLabelSelector.matchExpressions")
    );
}

//! Metal3 CRDs for tests against a real kube-apiserver, derived from the generated Rust types.
//!
//! CAPM3 and BMO cannot be built here, so their CRDs have to be installed by the tests themselves.
//! The upstream YAML is not committed; instead `config/testing/metal3/<group>_<plural>.yaml` is
//! generated from the kopium-generated types in [`crate::capm3`] and [`crate::metal3_io`] (their
//! schemars-derived schemas), by `cargo run -p external-types --example gen-metal3-test-crds`.
//! A unit test checks that the committed files are up to date.
//!
//! The derived schemas keep field names, types, string enums and required fields, but not the
//! upstream defaults, CEL rules, patterns, length limits, printer columns or conversion webhooks.
//! Both CAPM3 versions are served without conversion (v1beta2 is stored), which is fine for tests
//! that use one version per object.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::core::crd::merge_crds;

use crate::{capm3, metal3_io};

/// Directory of the generated files, relative to the workspace root.
pub const DIR: &str = "config/testing/metal3";

/// The CRD labels CAPI reads to find the contract and API version (Cluster API's
/// `internal/contract` package), as CAPM3 declares them in its `config/crd/kustomization.yaml`.
pub const CAPM3_CONTRACT_LABELS: [(&str, &str); 2] = [
    ("cluster.x-k8s.io/v1beta1", "v1beta1"),
    ("cluster.x-k8s.io/v1beta2", "v1beta2"),
];

/// The test CRDs, each with the file name it is written to.
pub fn metal3_test_crds() -> Vec<(String, CustomResourceDefinition)> {
    let capm3 = [
        merge_crds(
            vec![
                capm3::v1beta1::Metal3Cluster::crd(),
                capm3::v1beta2::Metal3Cluster::crd(),
            ],
            "v1beta2",
        ),
        merge_crds(
            vec![
                capm3::v1beta1::Metal3Machine::crd(),
                capm3::v1beta2::Metal3Machine::crd(),
            ],
            "v1beta2",
        ),
        merge_crds(
            vec![
                capm3::v1beta1::Metal3MachineTemplate::crd(),
                capm3::v1beta2::Metal3MachineTemplate::crd(),
            ],
            "v1beta2",
        ),
    ]
    .into_iter()
    .map(|crd| {
        let mut crd = crd.expect("the CAPM3 CRD versions merge");
        let labels = crd.metadata.labels.get_or_insert_default();
        for (k, v) in CAPM3_CONTRACT_LABELS {
            labels.insert(k.to_owned(), v.to_owned());
        }
        crd
    });
    let bmo = [
        metal3_io::BareMetalHost::crd(),
        metal3_io::PreprovisioningImage::crd(),
    ];
    capm3.chain(bmo).map(|crd| (file_name(&crd), crd)).collect()
}

/// `<group>_<plural>.yaml`, the controller-gen naming.
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// The file content: a header saying what this is, then the CRD as YAML.
pub fn render(crd: &CustomResourceDefinition) -> String {
    let source = if crd.spec.group == "metal3.io" {
        metal3_io::SOURCE
    } else {
        capm3::SOURCE
    };
    let yaml = serde_yaml::to_string(crd).expect("a CRD serializes to YAML");
    format!(
        "# TEST FIXTURE, NOT THE UPSTREAM CRD. Do not edit; regenerate with\n\
         #   cargo run -p external-types --example gen-metal3-test-crds\n\
         # Derived (schemars) from the Rust types that hack/generate-external-types.sh generated with kopium from\n\
         #   {source}\n\
         # It keeps field names, types, enums and required fields, not upstream defaults, validations,\n\
         # printer columns or conversion. For installing into a test kube-apiserver only.\n\
         {yaml}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn committed_test_crds_are_up_to_date() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(DIR);
        for (name, crd) in metal3_test_crds() {
            let path = dir.join(&name);
            let committed = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                committed == render(&crd),
                "{} is stale; run `cargo run -p external-types --example gen-metal3-test-crds`",
                path.display()
            );
        }
    }

    #[test]
    fn capm3_crds_carry_contract_labels_and_store_v1beta2() {
        for (name, crd) in metal3_test_crds() {
            if crd.spec.group != "infrastructure.cluster.x-k8s.io" {
                continue;
            }
            let labels = crd.metadata.labels.as_ref().expect("labels");
            assert_eq!(
                labels.get("cluster.x-k8s.io/v1beta2").map(String::as_str),
                Some("v1beta2"),
                "{name}"
            );
            let stored: Vec<_> = crd
                .spec
                .versions
                .iter()
                .filter(|v| v.storage)
                .map(|v| v.name.as_str())
                .collect();
            assert_eq!(stored, ["v1beta2"], "{name}");
            assert_eq!(crd.spec.versions.len(), 2, "{name}");
        }
    }
}

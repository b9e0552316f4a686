//! Example manifests in CAPOA's and assisted-service's style deserialize into our types without
//! losing a field, and validate against the generated CRD schemas; broken ones are rejected with
//! a message that names the field.

use api_conformance::{all_crds, example, is_ours, lost_fields, parse_documents, round_trip};
use assisted_core::api::{
    Agent, AgentClusterInstall, ClusterDeployment, ClusterImageSet, InfraEnv, NMStateConfig,
};
use manager::manifests::{validate_manifests, validate_object};
use provider_api::bootstrap::api::{OpenshiftAssistedConfig, OpenshiftAssistedConfigTemplate};
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;
use serde_json::Value;

fn typed_round_trip(object: &Value) -> Value {
    // CAPOA's older versions, served and converted by our webhooks (docs/api-versions.md).
    match (
        object["kind"].as_str().unwrap_or_default(),
        object["apiVersion"].as_str().unwrap_or_default(),
    ) {
        ("OpenshiftAssistedControlPlane", "controlplane.cluster.x-k8s.io/v1alpha2") => {
            return round_trip::<provider_api::controlplane::v1alpha2::OpenshiftAssistedControlPlane>(
                object,
            );
        }
        ("OpenshiftAssistedConfig", "bootstrap.cluster.x-k8s.io/v1alpha1") => {
            return round_trip::<provider_api::bootstrap::v1alpha1::OpenshiftAssistedConfig>(
                object,
            );
        }
        ("OpenshiftAssistedConfigTemplate", "bootstrap.cluster.x-k8s.io/v1alpha1") => {
            return round_trip::<provider_api::bootstrap::v1alpha1::OpenshiftAssistedConfigTemplate>(
                object,
            );
        }
        _ => {}
    }
    match object["kind"].as_str().unwrap_or_default() {
        "OpenshiftAssistedConfig" => round_trip::<OpenshiftAssistedConfig>(object),
        "OpenshiftAssistedConfigTemplate" => round_trip::<OpenshiftAssistedConfigTemplate>(object),
        "OpenshiftAssistedControlPlane" => round_trip::<OpenshiftAssistedControlPlane>(object),
        "InfraEnv" => round_trip::<InfraEnv>(object),
        "Agent" => round_trip::<Agent>(object),
        "NMStateConfig" => round_trip::<NMStateConfig>(object),
        "AgentClusterInstall" => round_trip::<AgentClusterInstall>(object),
        "ClusterDeployment" => round_trip::<ClusterDeployment>(object),
        "ClusterImageSet" => round_trip::<ClusterImageSet>(object),
        other => panic!("no typed API for {other}"),
    }
}

/// Checks every document of ours in an example; returns how many were checked.
fn check_example(name: &str) -> usize {
    let crds = all_crds();
    let ours: Vec<Value> = example(name).into_iter().filter(is_ours).collect();
    for object in &ours {
        let label = format!("{name}: {} {}", object["kind"], object["metadata"]["name"]);
        let lost = lost_fields(object, &typed_round_trip(object), "");
        assert!(
            lost.is_empty(),
            "{label}: fields lost in the typed round trip: {lost:?}"
        );
        if let Err(errors) = validate_object(&crds, object) {
            panic!("{label}: rejected by the CRD schema: {errors:?}");
        }
    }
    ours.len()
}

#[test]
fn capoa_multinode_example_is_accepted() {
    assert_eq!(
        check_example("capoa-multinode.yaml"),
        2,
        "OpenshiftAssistedControlPlane and the worker template"
    );
}

#[test]
fn capoa_sno_example_is_accepted() {
    assert_eq!(check_example("capoa-sno.yaml"), 1);
}

#[test]
fn capoa_okd_without_pull_secret_is_accepted() {
    assert_eq!(check_example("capoa-okd-sno.yaml"), 2);
}

#[test]
fn assisted_service_style_example_is_accepted() {
    assert_eq!(check_example("assisted-service-style.yaml"), 7);
}

/// Validates one broken document and returns the error text.
fn rejection(yaml: &str) -> String {
    let documents = parse_documents(yaml);
    assert_eq!(documents.len(), 1);
    validate_object(&all_crds(), &documents[0])
        .expect_err("must be rejected")
        .join("\n")
}

#[test]
fn wrong_enum_is_rejected_naming_the_field() {
    let error = rejection(
        r#"
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {name: bad}
spec:
  pullSecretRef: {name: pull-secret}
  cpuArchitecture: sparc64
"#,
    );
    assert!(error.contains("spec.cpuArchitecture"), "{error}");
}

#[test]
fn wrong_disk_encryption_enum_on_the_control_plane_is_rejected() {
    let error = rejection(
        r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: bad}
spec:
  distributionVersion: 4.20.0
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: cp}
  config:
    baseDomain: lab.home
    diskEncryption: {enableOn: everything}
"#,
    );
    assert!(
        error.contains("spec.config.diskEncryption.enableOn"),
        "{error}"
    );
}

#[test]
fn bad_pattern_is_rejected_naming_the_field() {
    let error = rejection(
        r#"
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata: {name: bad}
spec:
  kernelArguments:
    - operation: append
      value: "two words"
  bootstrapCommandSentinelDir: relative/dir
"#,
    );
    assert!(error.contains("spec.kernelArguments.0.value"), "{error}");
    assert!(
        error.contains("spec.bootstrapCommandSentinelDir"),
        "{error}"
    );
}

#[test]
fn bad_infrastructure_ref_kind_is_rejected() {
    let error = rejection(
        r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: bad}
spec:
  distributionVersion: 4.20.0
  machineTemplate:
    infrastructureRef: {apiGroup: Infrastructure_Cluster, kind: "3rd", name: cp}
"#,
    );
    assert!(
        error.contains("spec.machineTemplate.infrastructureRef.apiGroup"),
        "{error}"
    );
    assert!(
        error.contains("spec.machineTemplate.infrastructureRef.kind"),
        "{error}"
    );
}

#[test]
fn missing_required_field_is_rejected_naming_it() {
    let error = rejection(
        r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: bad}
spec:
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: cp}
  config: {apiVIPs: [192.168.1.1, 192.168.1.2, 192.168.1.3]}
"#,
    );
    assert!(error.contains("distributionVersion"), "{error}");
    assert!(error.contains("baseDomain"), "{error}");
    assert!(
        error.contains("spec.config.apiVIPs"),
        "more than 2 API VIPs: {error}"
    );
}

#[test]
fn infraenv_without_pull_secret_ref_is_rejected() {
    let error = rejection(
        r#"
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {name: bad}
spec: {}
"#,
    );
    assert!(error.contains("pullSecretRef"), "{error}");
}

#[test]
fn validate_reports_invalid_yaml_and_unknown_kinds_clearly() {
    let crds = all_crds();
    let error = validate_manifests(&crds, "kind: [unclosed\n")
        .expect_err("invalid YAML")
        .to_string();
    assert!(error.contains("document 1: invalid YAML"), "{error}");
    let error = validate_manifests(
        &crds,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    )
    .expect_err("unknown kind")
    .to_string();
    assert!(error.contains("unknown kind \"Widget\""), "{error}");
}

//! `bootstrap.cluster.x-k8s.io/v1alpha2` OpenshiftAssistedConfig and OpenshiftAssistedConfigTemplate,
//! wire-compatible with CAPOA's hub version (same JSON names, types, enums and defaults).
// Each `printcolumn(...)` repeats keys such as `type_`; clippy reads that as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use assisted_api::common::{LabelSelector, LocalObjectReference, Proxy, label_selector_schema};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use kube::core::{Reason, Rule};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Annotation with a JSON Ignition copied into the InfraEnv's `ignitionConfigOverride`.
pub const DISCOVERY_IGNITION_OVERRIDE_ANNOTATION: &str =
    "openshiftassistedconfig.cluster.x-k8s.io/discovery-ignition-override";
/// Annotation with a JSON Ignition merged into the host's install-time ignition.
pub const IGNITION_OVERRIDE_ANNOTATION: &str =
    "openshiftassistedconfig.cluster.x-k8s.io/ignition-override";
/// Label put on the InfraEnv with the OpenshiftAssistedConfig's name as value.
pub const CONFIG_LABEL: &str = "bootstrap.cluster.x-k8s.io/openshiftAssistedConfig";
/// `DataSecretAvailable`'s reason while the InfraEnv cannot build its image; the control plane
/// looks for it on its Machines' configs.
pub const DISCOVERY_IMAGE_FAILED_REASON: &str = "DiscoveryImageFailed";

/// How to bootstrap one Machine as an OpenShift node through the assisted installer.
/// The spec is immutable once created: a change needs a new Machine.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "bootstrap.cluster.x-k8s.io",
    version = "v1alpha2",
    kind = "OpenshiftAssistedConfig",
    validation = immutable_spec(
        "spec is immutable: create a new OpenshiftAssistedConfig (a new Machine) to change it"
    ),
    plural = "openshiftassistedconfigs",
    shortname = "oac",
    shortname = "oacs",
    category = "cluster-api",
    namespaced,
    status = "OpenshiftAssistedConfigStatus",
    label("cluster.x-k8s.io/v1beta2", "v1alpha2"),
    printcolumn(name = "Cluster", type_ = "string", json_path = ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']", description = "Cluster"),
    printcolumn(name = "Data secret", type_ = "boolean", json_path = ".status.initialization.dataSecretCreated", description = "Whether the bootstrap data Secret exists"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigSpec {
    /// Proxy settings of the discovery environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    /// Secret (key `.dockerconfigjson`) for pulling images. Unset: a placeholder is used (OKD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
    /// NTP sources (hostname or IP) added to the host.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "additionalNTPSources"
    )]
    #[schemars(length(max = 64), inner(length(max = 255)))]
    pub additional_ntp_sources: Vec<String>,
    /// SSH public key of the discovery environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16384))]
    pub ssh_authorized_key: Option<String>,
    /// Selects the NMStateConfigs with this host's static network configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub nm_state_config_label_selector: Option<LabelSelector>,
    /// CPU architecture of the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "x86_64"), length(max = 32))]
    pub cpu_architecture: Option<String>,
    /// Kernel arguments of the installed OS (they become the host's installer arguments).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub kernel_arguments: Vec<KernelArgument>,
    /// PEM CA bundle trusted by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1048576))]
    pub additional_trust_bundle: Option<String>,
    /// OS image version of the discovery image.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "osImageVersion"
    )]
    #[schemars(length(max = 256))]
    pub os_image_version: Option<String>,
    /// Shell commands run once before kubelet starts on the installed OS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128), inner(length(max = 10240)), extend("x-kubernetes-list-type" = "atomic"))]
    pub pre_bootstrap_commands: Vec<String>,
    /// Shell commands run once after the node has registered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128), inner(length(max = 10240)), extend("x-kubernetes-list-type" = "atomic"))]
    pub post_bootstrap_commands: Vec<String>,
    /// Directory of the run-once sentinel files (default `/var/lib/capoa`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^/[a-zA-Z0-9_./-]+$"), length(max = 4096))]
    pub bootstrap_command_sentinel_dir: Option<String>,
    /// Kubeconfig used by the post-bootstrap commands (default `/var/lib/kubelet/kubeconfig`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^/[a-zA-Z0-9_./-]+$"), length(max = 4096))]
    pub post_bootstrap_kubeconfig_path: Option<String>,
    /// Node name, kubelet labels and provider ID of the installed node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_registration: Option<NodeRegistrationOptions>,
}

/// The CEL rule that keeps an OpenshiftAssistedConfig's spec as created (every served version
/// has it; `message` is the version's refusal).
pub fn immutable_spec(message: &'static str) -> Rule {
    Rule::new(
        "has(self.spec) == has(oldSelf.spec) && (!has(self.spec) || self.spec == oldSelf.spec)",
    )
    .message(message)
    .reason(Reason::FieldValueForbidden)
    .field_path(".spec")
}

/// A kernel argument operation on the installed OS.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct KernelArgument {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<KernelArgumentOperation>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(
        regex(pattern = r#"^(?:(?:[^ \t\n\r"]+)|(?:"[^"]*"))+$"#),
        length(max = 4096)
    )]
    pub value: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KernelArgumentOperation {
    Append,
    Replace,
    Delete,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeRegistrationOptions {
    /// Node name: a static name or a reference to a host metadata environment variable
    /// (dollar sign followed by e.g. METADATA_NAME), resolved by the controller from the
    /// BareMetalHost (as the config drive would give it to the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub name: Option<String>,
    /// Extra kubelet labels `key=value`; the value may name an environment variable of the host
    /// metadata (dollar sign, optionally with braces), resolved by the controller the same way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(max = 1024)))]
    pub kubelet_extra_labels: Vec<String>,
    /// Provider ID written to kubelet: a static string or a host metadata environment variable
    /// reference, resolved by the controller the same way.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "providerID"
    )]
    #[schemars(length(max = 1024))]
    pub provider_id: Option<String>,
}

/// Observed state, per the Cluster API v1beta2 bootstrap contract.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization: Option<BootstrapInitialization>,
    /// Name of the Secret with the bootstrap data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub data_secret_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
    /// Conditions in the Cluster API v1beta1 shape (with severity), while CAPI still reads them.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "v1beta1Conditions"
    )]
    pub v1beta1_conditions: Vec<V1Beta1Condition>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct BootstrapInitialization {
    /// True once the bootstrap data Secret exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_secret_created: Option<bool>,
}

/// A Cluster API v1beta1 condition.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct V1Beta1Condition {
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 256))]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    /// Error, Warning or Info.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub severity: Option<String>,
    pub last_transition_time: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10240))]
    pub message: Option<String>,
}

/// A template CAPI clones into one OpenshiftAssistedConfig per Machine of a MachineSet.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "bootstrap.cluster.x-k8s.io",
    version = "v1alpha2",
    kind = "OpenshiftAssistedConfigTemplate",
    plural = "openshiftassistedconfigtemplates",
    category = "cluster-api",
    namespaced,
    label("cluster.x-k8s.io/v1beta2", "v1alpha2")
)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigTemplateSpec {
    pub template: OpenshiftAssistedConfigTemplateResource,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigTemplateResource {
    /// Labels and annotations copied to every OpenshiftAssistedConfig made from this template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMetaTemplate>,
    #[serde(default)]
    pub spec: OpenshiftAssistedConfigSpec,
}

/// The part of ObjectMeta a Cluster API template may set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMetaTemplate {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

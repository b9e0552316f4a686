//! `bootstrap.cluster.x-k8s.io/v1alpha1` OpenshiftAssistedConfig and
//! OpenshiftAssistedConfigTemplate: CAPOA's first API version, served (deprecated) so that
//! manifests written for it still apply. Nothing reads these types but the conversion webhook
//! ([`crate::bootstrap::conversion`]); the controllers work on the hub, [`crate::bootstrap::api`].
//!
//! The schemas accept what CAPOA's v1alpha1 CRDs accepted: the same fields, enums and patterns,
//! without the length limits the hub added later.

use k8s_openapi::api::core::v1::ObjectReference;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use assisted_api::common::LabelSelector;

use crate::bootstrap::api::{
    KernelArgumentOperation, ObjectMetaTemplate, V1Beta1Condition, immutable_spec,
};

/// The warning kubectl prints for every request at this version.
pub const DEPRECATION_WARNING: &str = "v1alpha1 is deprecated, use v1alpha2";

/// How to bootstrap one Machine as an OpenShift node (v1alpha1: no bootstrap commands or provider
/// ID). Immutable in an OpenshiftAssistedConfig, as CAPOA's validating webhook made it.
#[derive(
    kube::CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
#[kube(
    group = "bootstrap.cluster.x-k8s.io",
    version = "v1alpha1",
    kind = "OpenshiftAssistedConfig",
    validation = immutable_spec("spec is immutable"),
    plural = "openshiftassistedconfigs",
    shortname = "oac",
    shortname = "oacs",
    category = "cluster-api",
    namespaced,
    status = "OpenshiftAssistedConfigStatus",
    derive = "PartialEq",
    deprecated = "v1alpha1 is deprecated, use v1alpha2"
)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "additionalNTPSources"
    )]
    pub additional_ntp_sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_authorized_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub nm_state_config_label_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "x86_64"))]
    pub cpu_architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_arguments: Vec<KernelArgument>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "osImageVersion"
    )]
    pub os_image_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_registration: Option<NodeRegistrationOptions>,
}

/// Proxy settings (the same three strings as the hub's, without its length limits).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

/// `corev1.LocalObjectReference`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct LocalObjectReference {
    #[serde(default)]
    #[schemars(extend("default" = ""))]
    pub name: String,
}

/// A kernel argument operation (the hub's, without the length limit on `value`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct KernelArgument {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<KernelArgumentOperation>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(regex(pattern = r#"^(?:(?:[^ \t\n\r"]+)|(?:"[^"]*"))+$"#))]
    pub value: String,
}

/// v1alpha1's node registration: no `providerID` yet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeRegistrationOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kubelet_extra_labels: Vec<String>,
}

/// v1alpha1's status: the Cluster API v1beta1 bootstrap contract (`ready`, `dataSecretName`,
/// failure fields, v1beta1 conditions).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigStatus {
    /// The InfraEnv that generates the discovery ISO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub infra_env_ref: Option<ObjectReference>,
    /// The Agent this config booted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_ref: Option<LocalObjectReference>,
    /// True once the bootstrap data can be consumed. Always written, as CAPOA did.
    #[serde(default)]
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_secret_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
}

/// A template CAPI clones into one OpenshiftAssistedConfig per Machine of a MachineSet.
#[derive(
    kube::CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
#[kube(
    group = "bootstrap.cluster.x-k8s.io",
    version = "v1alpha1",
    kind = "OpenshiftAssistedConfigTemplate",
    plural = "openshiftassistedconfigtemplates",
    category = "cluster-api",
    namespaced,
    derive = "PartialEq",
    deprecated = "v1alpha1 is deprecated, use v1alpha2"
)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigTemplateSpec {
    pub template: OpenshiftAssistedConfigTemplateResource,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedConfigTemplateResource {
    /// Labels and annotations (Cluster API v1beta1 `ObjectMeta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMetaTemplate>,
    #[serde(default)]
    pub spec: OpenshiftAssistedConfigSpec,
}

/// `metav1.LabelSelector` as CAPOA's v1alpha1 CRD spelled it: structural and atomic, no limits.
pub fn label_selector_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "A label query over a set of resources.",
        "x-kubernetes-map-type": "atomic",
        "properties": {
            "matchLabels": {
                "type": "object",
                "additionalProperties": {"type": "string"}
            },
            "matchExpressions": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {"type": "string"},
                        "values": {
                            "type": "array",
                            "x-kubernetes-list-type": "atomic",
                            "items": {"type": "string"}
                        }
                    }
                }
            }
        }
    })
}

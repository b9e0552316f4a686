//! Field types shared by several CRDs, plus the schema helpers that keep the generated
//! OpenAPI structural (what kube-apiserver requires) while matching upstream's shapes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// `corev1.LocalObjectReference`: a reference to an object in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct LocalObjectReference {
    /// Name of the referent.
    #[serde(default)]
    #[schemars(length(max = 253))]
    pub name: String,
}

/// Proxy settings (InfraEnv, AgentClusterInstall and CAPOA's config all use this shape).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// URL of the proxy for HTTP requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub http_proxy: Option<String>,
    /// URL of the proxy for HTTPS requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub https_proxy: Option<String>,
    /// Comma-separated list of domains and CIDRs for which the proxy should not be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub no_proxy: Option<String>,
}

/// The condition shape of `openshift/custom-resource-status` used by InfraEnv and Agent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenShiftCondition {
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// One validation result inside `validationsInfo` (REST and CR share this shape).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ValidationResult {
    pub id: String,
    /// success, failure, pending, error or disabled.
    pub status: String,
    pub message: String,
}

/// `validationsInfo`: validation results grouped by category (hardware, network, operators, ...).
pub type ValidationsStatus = BTreeMap<String, Vec<ValidationResult>>;

/// Debug information shared by Agent and AgentClusterInstall status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugInfo {
    /// URL with the events of the installation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "eventsURL")]
    pub events_url: Option<String>,
    /// URL to download the installation logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "logsURL")]
    pub logs_url: Option<String>,
    /// The assisted state of the object (host or cluster status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Human-readable details of the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_info: Option<String>,
}

/// Schema of a free-form JSON object whose fields the apiserver must keep (raw nmstate YAML,
/// another provider's platform section, ...).
pub fn preserve_unknown_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// Schema of a `metav1.LabelSelector`, spelled out so it stays structural and `atomic` as upstream.
pub fn label_selector_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "A label query over a set of resources.",
        "x-kubernetes-map-type": "atomic",
        "properties": {
            "matchLabels": {
                "type": "object",
                "maxProperties": 64,
                "additionalProperties": {"type": "string", "maxLength": 63}
            },
            "matchExpressions": {
                "type": "array",
                "maxItems": 32,
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string", "maxLength": 317},
                        "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                        "values": {
                            "type": "array",
                            "maxItems": 64,
                            "x-kubernetes-list-type": "atomic",
                            "items": {"type": "string", "maxLength": 63}
                        }
                    }
                }
            }
        }
    })
}

/// A `metav1.LabelSelector` as a plain value (k8s-openapi's type, which serializes the same way).
pub type LabelSelector = k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

//! The Hive kinds assisted-core needs, `hive.openshift.io/v1`: ClusterDeployment (what cluster,
//! installed by which ClusterInstall) and the cluster-scoped ClusterImageSet (which release).
//! Hive itself is not needed: assisted-core does the parts of Hive's job the agent flow uses.
// Each `printcolumn(...)` repeats keys such as `type_`; clippy reads that as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::common::{LabelSelector, LocalObjectReference, label_selector_schema};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "hive.openshift.io",
    version = "v1",
    kind = "ClusterDeployment",
    plural = "clusterdeployments",
    shortname = "cd",
    shortname = "cds",
    namespaced,
    status = "ClusterDeploymentStatus",
    printcolumn(
        name = "InfraID",
        type_ = "string",
        json_path = ".spec.clusterMetadata.infraID"
    ),
    printcolumn(
        name = "Platform",
        type_ = "string",
        json_path = ".metadata.labels.hive\\.openshift\\.io/cluster-platform"
    ),
    printcolumn(
        name = "Region",
        type_ = "string",
        json_path = ".metadata.labels.hive\\.openshift\\.io/cluster-region"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".metadata.labels.hive\\.openshift\\.io/version"
    ),
    printcolumn(
        name = "ClusterType",
        type_ = "string",
        json_path = ".metadata.labels.hive\\.openshift\\.io/cluster-type"
    ),
    printcolumn(
        name = "ProvisionStatus",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Provisioned')].reason"
    ),
    printcolumn(
        name = "PowerState",
        type_ = "string",
        json_path = ".status.powerState"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeploymentSpec {
    /// The OpenShift cluster name (the first label of its domain).
    pub cluster_name: String,
    /// The base domain; the cluster's domain is `<clusterName>.<baseDomain>`.
    pub base_domain: String,
    pub platform: Platform,
    /// Secret (key `.dockerconfigjson`) with the pull secret of the installed cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
    /// Keep the cluster's infrastructure when the ClusterDeployment is deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_on_delete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::preserve_unknown_object")]
    pub control_plane_config: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "preserve_unknown_array")]
    pub ingress: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "preserve_unknown_array")]
    pub certificate_bundles: Vec<serde_json::Value>,
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        rename = "manageDNS"
    )]
    pub manage_dns: bool,
    /// Metadata of the installed cluster: ids and the admin credential Secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_metadata: Option<ClusterMetadata>,
    /// True once the cluster is installed; it is then treated as a day-2 cluster.
    #[serde(default)]
    pub installed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::preserve_unknown_object")]
    pub provisioning: Option<serde_json::Value>,
    /// The object that installs this cluster (an AgentClusterInstall for the agent flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_install_ref: Option<ClusterInstallLocalReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::preserve_unknown_object")]
    pub cluster_pool_ref: Option<serde_json::Value>,
    /// Running or Hibernating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hibernate_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_attempts_limit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_service_account_signing_key_secret_ref: Option<LocalObjectReference>,
}

/// The platform section. Only `agentBareMetal` is typed (the agent flow); the other Hive
/// platforms are kept as they are written.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct Platform {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_bare_metal: Option<AgentBareMetalPlatform>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentBareMetalPlatform {
    /// Selects the Agents of this cluster (used by other agent-based tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub agent_selector: Option<LabelSelector>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMetadata {
    /// The OpenShift cluster id.
    #[serde(rename = "clusterID")]
    pub cluster_id: String,
    /// The infrastructure id (the assisted cluster UUID in the agent flow).
    #[serde(rename = "infraID")]
    pub infra_id: String,
    /// Secret with the admin kubeconfig (key `kubeconfig`).
    pub admin_kubeconfig_secret_ref: LocalObjectReference,
    /// Secret with the kubeadmin credentials (keys `username`, `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_password_secret_ref: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::preserve_unknown_object")]
    pub platform: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterInstallLocalReference {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeploymentStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_restarts: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer_image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "cliImage")]
    pub cli_image: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterInstallCondition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "preserve_unknown_array")]
    pub certificate_bundles: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "apiURL")]
    pub api_url: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "webConsoleURL"
    )]
    pub web_console_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provision_ref: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::preserve_unknown_object")]
    pub platform_status: Option<serde_json::Value>,
}

/// Hive's condition shape (ClusterInstallCondition / ClusterDeploymentCondition).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInstallCondition {
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `hive.openshift.io/v1` ClusterImageSet: a named OpenShift release image (cluster-scoped).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "hive.openshift.io",
    version = "v1",
    kind = "ClusterImageSet",
    plural = "clusterimagesets",
    shortname = "imgset",
    status = "ClusterImageSetStatus",
    printcolumn(name = "Release", type_ = "string", json_path = ".spec.releaseImage"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterImageSetSpec {
    /// The release image pull spec, by tag or digest.
    pub release_image: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterImageSetStatus {}

fn preserve_unknown_array(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    })
}

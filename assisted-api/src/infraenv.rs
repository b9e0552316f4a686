//! `agent-install.openshift.io/v1beta1` InfraEnv: the environment hosts boot from to be discovered.
// Each `printcolumn(...)` repeats keys such as `type_`; clippy reads that as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    LabelSelector, LocalObjectReference, OpenShiftCondition, Proxy, label_selector_schema,
};

/// Label put on every Agent that booted from an InfraEnv; its value is the InfraEnv name.
pub const INFRAENV_NAME_LABEL: &str = "infraenvs.agent-install.openshift.io";

/// Desired configuration of the discovery environment, baked into its discovery image.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "agent-install.openshift.io",
    version = "v1beta1",
    kind = "InfraEnv",
    plural = "infraenvs",
    namespaced,
    status = "InfraEnvStatus",
    printcolumn(
        name = "ISO Created At",
        type_ = "string",
        json_path = ".status.createdTime",
        description = "The Discovery ISO creation time"
    ),
    printcolumn(
        name = "ISO URL",
        type_ = "string",
        json_path = ".status.isoDownloadURL",
        description = "The Discovery ISO download URL",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct InfraEnvSpec {
    /// Proxy settings for the agents and clusters that use this InfraEnv.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    /// NTP sources (hostname or IP) added to all hosts.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "additionalNTPSources"
    )]
    pub additional_ntp_sources: Vec<String>,
    /// NTP sources used exclusively by the hosts; mutually exclusive with additionalNTPSources.
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "ntpSources")]
    pub ntp_sources: Vec<String>,
    /// SSH public key added to the discovery image for debugging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_authorized_key: Option<String>,
    /// Secret (key `.dockerconfigjson`) used to pull images.
    pub pull_secret_ref: LocalObjectReference,
    /// Labels applied to Agents created from this InfraEnv.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_labels: BTreeMap<String, String>,
    /// Selects the NMStateConfigs whose static network configuration is embedded in the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub nm_state_config_label_selector: Option<LabelSelector>,
    /// Selects ConfigMaps of MAC addresses whose Agents are approved automatically.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "approvedMACAddressConfigMapLabelSelector"
    )]
    #[schemars(schema_with = "label_selector_schema")]
    pub approved_mac_address_config_map_label_selector: Option<LabelSelector>,
    /// The ClusterDeployment hosts of this InfraEnv are bound to; unset means late binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<ClusterReference>,
    /// JSON Ignition merged last into the discovery ignition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_config_override: Option<String>,
    /// CPU architecture of the hosts that boot this image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "x86_64"))]
    pub cpu_architecture: Option<CpuArchitecture>,
    /// iPXE script flavour: boot the image always, or only while the host is not installed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "ipxeScriptType"
    )]
    #[schemars(extend("default" = "DiscoveryImageAlways"))]
    pub ipxe_script_type: Option<IpxeScriptType>,
    /// Extra kernel arguments of the discovery image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_arguments: Vec<KernelArgument>,
    /// PEM CA bundle trusted by the discovered hosts and the clusters formed from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle: Option<String>,
    /// OS image version (an `openshiftVersion` of the configured osImages).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "osImageVersion"
    )]
    pub os_image_version: Option<String>,
    /// ConfigMap with `registries.conf` (and optionally `ca-bundle.crt`) for mirror registries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_registry_ref: Option<NamespacedReference>,
    /// full-iso or minimal-iso.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_type: Option<ImageType>,
    /// Automatic approval of discovered Agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_approval: Option<AgentApproval>,
    /// Seconds to wait before mapping MACs to interfaces when applying static network config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub network_discovery_delay_seconds: Option<i64>,
}

/// A reference to a cluster in any namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// A `{name, namespace}` reference (mirror registry ConfigMaps, ignition token Secrets).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct NamespacedReference {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum CpuArchitecture {
    #[serde(rename = "x86_64")]
    X86_64,
    #[serde(rename = "aarch64")]
    Aarch64,
    #[serde(rename = "arm64")]
    Arm64,
    #[serde(rename = "ppc64le")]
    Ppc64le,
    #[serde(rename = "s390x")]
    S390x,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum IpxeScriptType {
    DiscoveryImageAlways,
    BootOrderControl,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ImageType {
    #[serde(rename = "full-iso")]
    FullIso,
    #[serde(rename = "minimal-iso")]
    MinimalIso,
}

/// A kernel argument of the discovery image. Upstream's CRD allows only `append`: the live ISO
/// can add arguments, replacing or deleting them is for the installed OS (the Agent's
/// `installerArgs`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct KernelArgument {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<KernelArgumentOperation>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(regex(pattern = r#"^(?:(?:[^ \t\n\r"]+)|(?:"[^"]*"))+$"#))]
    pub value: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KernelArgumentOperation {
    Append,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentApproval {
    /// Approve every Agent discovered through this InfraEnv without user action.
    #[serde(default)]
    pub auto_approve: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfraEnvStatus {
    /// URL of the discovery ISO built from this InfraEnv.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "isoDownloadURL"
    )]
    pub iso_download_url: Option<String>,
    /// When the current image was created; changes whenever the image content changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<OpenShiftCondition>,
    /// The label selector of the Agents booted from this InfraEnv.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub agent_label_selector: Option<LabelSelector>,
    #[serde(default, rename = "debugInfo")]
    pub debug_info: InfraEnvDebugInfo,
    #[serde(default)]
    pub boot_artifacts: BootArtifacts,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct InfraEnvDebugInfo {
    /// URL of the InfraEnv's events (also carries its signed `api_key`).
    #[serde(default, rename = "eventsURL")]
    pub events_url: String,
    /// URL of the static network configuration.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        rename = "staticNetworkDownloadURL"
    )]
    pub static_network_download_url: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct BootArtifacts {
    #[serde(default)]
    pub initrd: String,
    #[serde(default)]
    pub rootfs: String,
    #[serde(default)]
    pub kernel: String,
    #[serde(default, rename = "ipxeScript")]
    pub ipxe_script: String,
    #[serde(default, rename = "discoveryIgnitionURL")]
    pub discovery_ignition_url: String,
}

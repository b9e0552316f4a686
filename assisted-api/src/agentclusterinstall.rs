//! `extensions.hive.openshift.io/v1beta1` AgentClusterInstall: how a ClusterDeployment is
//! installed by agents (networking, VIPs, agent counts); its status is the cluster's install state.
// Each `printcolumn(...)` repeats keys such as `type_`; clippy reads that as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{DebugInfo, LocalObjectReference, Proxy, ValidationsStatus};
use super::hive::{ClusterInstallCondition, ClusterMetadata};
use super::infraenv::NamespacedReference;

/// Annotation with a JSON document merged into the generated install-config.
/// `status.debugInfo.state` values before the day-1 install starts (`""`: not seen by the
/// installer yet). From any other state on, the masters are fixed and workers wait for day-2.
pub const PRE_INSTALL_STATES: &[&str] = &["", "insufficient", "pending-for-input", "ready"];
/// The state of an installed cluster that accepts day-2 hosts.
pub const ADDING_HOSTS_STATE: &str = "adding-hosts";

pub const INSTALL_CONFIG_OVERRIDES_ANNOTATION: &str =
    "agent-install.openshift.io/install-config-overrides";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "extensions.hive.openshift.io",
    version = "v1beta1",
    kind = "AgentClusterInstall",
    plural = "agentclusterinstalls",
    shortname = "aci",
    namespaced,
    status = "AgentClusterInstallStatus",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".spec.clusterDeploymentRef.name",
        description = "The name of the cluster the ACI refers to."
    ),
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.debugInfo.state",
        description = "State of the ACI."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct AgentClusterInstallSpec {
    /// The ClusterImageSet whose release image is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_set_ref: Option<ClusterImageSetReference>,
    /// The ClusterDeployment this install belongs to.
    pub cluster_deployment_ref: LocalObjectReference,
    /// Metadata of the installed cluster (written by the installer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_metadata: Option<ClusterMetadata>,
    /// Deprecated: ignored when manifestsConfigMapRefs is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifests_config_map_ref: Option<LocalObjectReference>,
    /// ConfigMaps of extra manifests for the installer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests_config_map_refs: Vec<LocalObjectReference>,
    #[serde(default)]
    pub networking: Networking,
    /// SSH public key added to all cluster hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_public_key: Option<String>,
    /// NTP sources of the cluster hosts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ntp_sources: Vec<String>,
    /// How many approved agents of each role start the install automatically.
    pub provision_requirements: ProvisionRequirements,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<AgentMachinePool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute: Vec<AgentMachinePool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arbiter: Option<AgentMachinePool>,
    /// Deprecated single API VIP; use apiVIPs.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "apiVIP")]
    pub api_vip: Option<String>,
    /// Virtual IPs of the cluster API (one per IP family).
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "apiVIPs")]
    #[schemars(length(max = 2))]
    pub api_vips: Vec<String>,
    /// Deprecated single ingress VIP; use ingressVIPs.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "ingressVIP"
    )]
    pub ingress_vip: Option<String>,
    /// Virtual IPs of the cluster ingress (one per IP family).
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "ingressVIPs")]
    #[schemars(length(max = 2))]
    pub ingress_vips: Vec<String>,
    /// Validation proceeds, but the install does not start while this is true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold_installation: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint: Option<IgnitionEndpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_encryption: Option<DiskEncryption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_type: Option<PlatformType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalPlatformSpec>,
    /// Whether control-plane nodes also run workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masters_schedulable: Option<bool>,
    /// ConfigMap with mirror registry configuration for the installed cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_registry_ref: Option<NamespacedReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterImageSetReference {
    /// Name of the (cluster-scoped) ClusterImageSet.
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_network: Vec<MachineNetworkEntry>,
    /// Pod networks; default 10.128.0.0/14 with host prefix 23.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_network: Vec<ClusterNetworkEntry>,
    /// Service networks; default 172.30.0.0/16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_network: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_type: Option<NetworkType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_managed_networking: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum NetworkType {
    OpenShiftSDN,
    OVNKubernetes,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct MachineNetworkEntry {
    pub cidr: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetworkEntry {
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_prefix: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionRequirements {
    /// Control-plane agents needed: 1 (single node) or 3 to 5 (2 with arbiters or fencing).
    #[schemars(range(min = 1, max = 5))]
    pub control_plane_agents: i32,
    /// Worker agents needed before the install starts.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0))]
    pub worker_agents: i32,
    /// Arbiter agents needed before the install starts.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0))]
    pub arbiter_agents: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AgentMachinePool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Enabled"))]
    pub hyperthreading: Option<Hyperthreading>,
    /// "master" for the control plane, "worker" for compute, "arbiter" for arbiters.
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Hyperthreading {
    Enabled,
    Disabled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnitionEndpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Secret with the CA certificate of the ignition endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate_reference: Option<NamespacedReference>,
}

/// Disk encryption of the cluster nodes (the hive extension type CAPOA also uses).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiskEncryption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "none"))]
    pub enable_on: Option<DiskEncryptionEnableOn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<DiskEncryptionMode>,
    /// JSON list of Tang servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tang_servers: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum DiskEncryptionEnableOn {
    #[serde(rename = "none")]
    None,
    #[serde(rename = "all")]
    All,
    #[serde(rename = "masters")]
    Masters,
    #[serde(rename = "arbiters")]
    Arbiters,
    #[serde(rename = "workers")]
    Workers,
    #[serde(rename = "masters,arbiters")]
    MastersArbiters,
    #[serde(rename = "masters,workers")]
    MastersWorkers,
    #[serde(rename = "arbiters,workers")]
    ArbitersWorkers,
    #[serde(rename = "masters,arbiters,workers")]
    MastersArbitersWorkers,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DiskEncryptionMode {
    Tpmv2,
    Tang,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PlatformType {
    BareMetal,
    None,
    VSphere,
    Nutanix,
    External,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalPlatformSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_name: Option<String>,
    /// None or External.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_controller_manager: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct LoadBalancer {
    #[serde(rename = "type")]
    #[schemars(extend("default" = "ClusterManaged"))]
    pub type_: LoadBalancerType,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum LoadBalancerType {
    #[default]
    ClusterManaged,
    UserManaged,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentClusterInstallStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterInstallCondition>,
    #[serde(default)]
    pub progress: ClusterProgressInfo,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub control_plane_agents_discovered: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub control_plane_agents_ready: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub worker_agents_discovered: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub worker_agents_ready: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub arbiter_agents_discovered: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub arbiter_agents_ready: i32,
    /// JSON of the connectivity majority groups per network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connectivity_majority_groups: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_network: Vec<MachineNetworkEntry>,
    #[serde(default)]
    pub debug_info: DebugInfo,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "apiVIP")]
    pub api_vip: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "apiVIPs")]
    pub api_vips: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "ingressVIP"
    )]
    pub ingress_vip: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "ingressVIPs")]
    pub ingress_vips: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_managed_networking: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_type: Option<PlatformType>,
    #[serde(default, skip_serializing_if = "ValidationsStatus::is_empty")]
    pub validations_info: ValidationsStatus,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProgressInfo {
    /// Estimated installation progress in percent.
    #[serde(default)]
    pub total_percentage: i64,
}

fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

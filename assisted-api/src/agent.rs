//! `agent-install.openshift.io/v1beta1` Agent: one discovered host. assisted-core creates it when
//! the discovery agent registers; its name is the host UUID.
// Each `printcolumn(...)` repeats keys such as `type_`; clippy reads that as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{DebugInfo, LocalObjectReference, OpenShiftCondition, ValidationsStatus};
use super::infraenv::{ClusterReference, NamespacedReference};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "agent-install.openshift.io",
    version = "v1beta1",
    kind = "Agent",
    plural = "agents",
    namespaced,
    status = "AgentStatus",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".spec.clusterDeploymentName.name",
        description = "The name of the cluster the Agent registered to."
    ),
    printcolumn(
        name = "Approved",
        type_ = "boolean",
        json_path = ".spec.approved",
        description = "The `Approve` state of the Agent."
    ),
    printcolumn(
        name = "Role",
        type_ = "string",
        json_path = ".status.role",
        description = "The role (master/worker) of the Agent."
    ),
    printcolumn(
        name = "Stage",
        type_ = "string",
        json_path = ".status.progress.currentStage",
        description = "The HostStage of the Agent."
    ),
    printcolumn(
        name = "Hostname",
        type_ = "string",
        json_path = ".status.inventory.hostname",
        description = "The hostname of the Agent.",
        priority = 1
    ),
    printcolumn(
        name = "Requested Hostname",
        type_ = "string",
        json_path = ".spec.hostname",
        description = "The requested hostname for the Agent.",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    /// The ClusterDeployment this host is bound to; unset means unbound (late binding pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_deployment_name: Option<ClusterReference>,
    /// master, worker, arbiter or auto-assign ("" means auto-assign).
    #[serde(default)]
    pub role: HostRole,
    /// Requested hostname of the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// MachineConfigPool the node joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_pool: Option<String>,
    /// Whether the host may be installed.
    #[serde(default)]
    pub approved: bool,
    /// Installation disk, by inventory disk id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "installation_disk_id"
    )]
    pub installation_disk_id: Option<String>,
    /// Installation disk, by its by-id or by-path value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "installation_disk_path"
    )]
    pub installation_disk_path: Option<String>,
    /// JSON array of extra coreos-installer arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer_args: Option<String>,
    /// JSON Ignition merged into the host's install-time ignition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_config_overrides: Option<String>,
    /// Secret with a bearer token used to fetch the ignition from the ignition endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint_token_reference: Option<NamespacedReference>,
    /// Extra HTTP headers used to fetch the ignition.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        rename = "ignitionEndpointHTTPHeaders"
    )]
    pub ignition_endpoint_http_headers: BTreeMap<String, String>,
    /// Labels applied to the Node of this host.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    /// Secret with the host's fencing (BMC) credentials, for two-node clusters with fencing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fencing_credentials_secret_ref: Option<LocalObjectReference>,
}

/// A host's role. The empty string is accepted and means auto-assign, as upstream.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum HostRole {
    #[default]
    #[serde(rename = "")]
    Unset,
    #[serde(rename = "auto-assign")]
    AutoAssign,
    #[serde(rename = "master")]
    Master,
    #[serde(rename = "worker")]
    Worker,
    #[serde(rename = "arbiter")]
    Arbiter,
    #[serde(rename = "bootstrap")]
    Bootstrap,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bootstrap: bool,
    /// The effective role (the suggested role while auto-assign).
    #[serde(default)]
    pub role: HostRole,
    #[serde(default)]
    pub inventory: HostInventory,
    #[serde(default)]
    pub progress: HostProgressInfo,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ntp_sources: Vec<HostNtpSource>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<OpenShiftCondition>,
    #[serde(default)]
    pub debug_info: DebugInfo,
    /// Validation results by category.
    #[serde(default, skip_serializing_if = "ValidationsStatus::is_empty")]
    pub validations_info: ValidationsStatus,
    /// The disk the host installs to.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "installation_disk_id"
    )]
    pub installation_disk_id: Option<String>,
    /// What is needed to clean up the previous cluster binding when the host re-registers.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "deprovision_info"
    )]
    pub deprovision_info: Option<AgentDeprovisionInfo>,
    #[serde(default, rename = "csrStatus")]
    pub csr_status: CsrStatus,
    /// Host or AddToExistingClusterHost (day-2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// The REST inventory, in the camelCase names the Agent CR uses.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostInventory {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bmc_address: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "bmcV6Address"
    )]
    pub bmc_v6_address: Option<String>,
    #[serde(default)]
    pub memory: HostMemory,
    #[serde(default)]
    pub cpu: HostCpu,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<HostInterface>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<HostDisk>,
    #[serde(default)]
    pub boot: HostBoot,
    #[serde(default)]
    pub system_vendor: HostSystemVendor,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<HostGpu>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostMemory {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub physical_bytes: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usable_bytes: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostCpu {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub count: i64,
    /// `frequency` in the REST API.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clock_megahertz: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub architecture: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostInterface {
    #[serde(default, rename = "ipV6Addresses")]
    pub ipv6_addresses: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_carrier: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub product: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtu: i64,
    #[serde(default, rename = "ipV4Addresses")]
    pub ipv4_addresses: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        rename = "biosDevName"
    )]
    pub bios_dev_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty", rename = "clientID")]
    pub client_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac_address: String,
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub speed_mbps: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostDisk {
    #[serde(default)]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub drive_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hctl: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by_path: String,
    #[serde(default, skip_serializing_if = "String::is_empty", rename = "byID")]
    pub by_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub wwn: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub serial: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub size_bytes: i64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bootable: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub smart: String,
    #[serde(default)]
    pub installation_eligibility: HostInstallationEligibility,
    #[serde(default)]
    pub io_perf: HostIoPerf,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostInstallationEligibility {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eligible: bool,
    #[serde(default)]
    pub not_eligible_reasons: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostIoPerf {
    /// 99th percentile of fsync duration in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sync_duration_milliseconds: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostBoot {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_boot_mode: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pxe_interface: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device_type: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostSystemVendor {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub serial_number: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub product_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manufacturer: String,
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        rename = "virtual"
    )]
    pub virtual_: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostGpu {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub address: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostProgressInfo {
    /// The current install stage, e.g. "Writing image to disk".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_stage: String,
    /// Every stage of this host's role, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress_stages: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub progress_info: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub installation_percentage: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_start_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_update_time: Option<Time>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostNtpSource {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_name: String,
    /// synced, combined, not_combined, error, variable or unreachable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_state: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AgentDeprovisionInfo {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        rename = "cluster_name"
    )]
    pub cluster_name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        rename = "cluster_namespace"
    )]
    pub cluster_namespace: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        rename = "node_name"
    )]
    pub node_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsrStatus {
    /// CSRs approved for this host (day-2 node join).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "approvedCSRs"
    )]
    pub approved_csrs: Vec<CsrInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_approval_attempt: Option<Time>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsrInfo {
    pub name: String,
    /// client or serving.
    #[serde(rename = "type")]
    pub type_: String,
    pub approved_at: Time,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

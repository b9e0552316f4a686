//! The simulator's own view of the agent REST API documents.
//!
//! Written from the upstream swagger field names, independently of the server crate, so that a
//! server-side naming mistake shows up as a failing end-to-end test instead of being mirrored.
//! Reading is lenient (every field defaults) because the simulator must survive a server that
//! sends more or less than expected; the caller decides what is mandatory.

use serde::{Deserialize, Serialize};

/// Reads `null` like an absent field: servers differ in whether they omit or null out empties.
fn nd<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Every step type of the `step-type` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    ConnectivityCheck,
    Execute,
    Inventory,
    Install,
    FreeNetworkAddresses,
    DhcpLeaseAllocate,
    ApiVipConnectivityCheck,
    TangConnectivityCheck,
    NtpSynchronizer,
    InstallationDiskSpeedCheck,
    ContainerImageAvailability,
    DomainResolution,
    StopInstallation,
    LogsGather,
    NextStepRunner,
    UpgradeAgent,
    DownloadBootArtifacts,
    RebootForReclaim,
    VerifyVips,
}

impl StepKind {
    pub const ALL: [StepKind; 19] = [
        StepKind::ConnectivityCheck,
        StepKind::Execute,
        StepKind::Inventory,
        StepKind::Install,
        StepKind::FreeNetworkAddresses,
        StepKind::DhcpLeaseAllocate,
        StepKind::ApiVipConnectivityCheck,
        StepKind::TangConnectivityCheck,
        StepKind::NtpSynchronizer,
        StepKind::InstallationDiskSpeedCheck,
        StepKind::ContainerImageAvailability,
        StepKind::DomainResolution,
        StepKind::StopInstallation,
        StepKind::LogsGather,
        StepKind::NextStepRunner,
        StepKind::UpgradeAgent,
        StepKind::DownloadBootArtifacts,
        StepKind::RebootForReclaim,
        StepKind::VerifyVips,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::ConnectivityCheck => "connectivity-check",
            StepKind::Execute => "execute",
            StepKind::Inventory => "inventory",
            StepKind::Install => "install",
            StepKind::FreeNetworkAddresses => "free-network-addresses",
            StepKind::DhcpLeaseAllocate => "dhcp-lease-allocate",
            StepKind::ApiVipConnectivityCheck => "api-vip-connectivity-check",
            StepKind::TangConnectivityCheck => "tang-connectivity-check",
            StepKind::NtpSynchronizer => "ntp-synchronizer",
            StepKind::InstallationDiskSpeedCheck => "installation-disk-speed-check",
            StepKind::ContainerImageAvailability => "container-image-availability",
            StepKind::DomainResolution => "domain-resolution",
            StepKind::StopInstallation => "stop-installation",
            StepKind::LogsGather => "logs-gather",
            StepKind::NextStepRunner => "next-step-runner",
            StepKind::UpgradeAgent => "upgrade-agent",
            StepKind::DownloadBootArtifacts => "download-boot-artifacts",
            StepKind::RebootForReclaim => "reboot-for-reclaim",
            StepKind::VerifyVips => "verify-vips",
        }
    }

    pub fn parse(s: &str) -> Option<StepKind> {
        StepKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// `step`: one instruction. `step_type` stays a string so an unknown type is still answerable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    #[serde(deserialize_with = "nd")]
    pub step_type: String,
    #[serde(deserialize_with = "nd")]
    pub step_id: String,
    #[serde(deserialize_with = "nd")]
    pub args: Vec<String>,
}

impl Step {
    pub fn new(kind: StepKind, id: &str, args: Vec<String>) -> Step {
        Step {
            step_type: kind.as_str().into(),
            step_id: id.into(),
            args,
        }
    }

    pub fn kind(&self) -> Option<StepKind> {
        StepKind::parse(&self.step_type)
    }

    /// `args[0]` parsed as a JSON request document.
    pub fn request<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        let raw = self
            .args
            .first()
            .ok_or_else(|| format!("step {} has no arguments", self.step_id))?;
        serde_json::from_str(raw)
            .map_err(|e| format!("step {} has a malformed request: {e}", self.step_id))
    }
}

/// `steps`: the GET instructions response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Steps {
    #[serde(deserialize_with = "nd")]
    pub next_instruction_seconds: u64,
    /// `continue` or `exit`.
    #[serde(deserialize_with = "nd")]
    pub post_step_action: String,
    #[serde(deserialize_with = "nd")]
    pub instructions: Vec<Step>,
}

impl Default for Steps {
    fn default() -> Self {
        Steps {
            next_instruction_seconds: 60,
            post_step_action: "continue".into(),
            instructions: Vec::new(),
        }
    }
}

impl Steps {
    pub fn exit_requested(&self) -> bool {
        self.post_step_action == "exit"
    }
}

/// `step-reply`: the POST instructions body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepReply {
    pub step_type: String,
    pub step_id: String,
    pub exit_code: i64,
    /// The matching `*_response` document (or the inventory) as a JSON string.
    pub output: String,
    pub error: String,
}

/// `install_cmd_request` (only the fields the simulated installer uses).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InstallCmdRequest {
    pub cluster_id: String,
    pub infra_env_id: String,
    pub host_id: String,
    pub role: String,
    pub boot_device: String,
    pub control_plane_count: u32,
    pub openshift_version: String,
    pub controller_image: String,
    pub installer_image: String,
    pub disks_to_format: Vec<String>,
    /// A string (a JSON array inside), as upstream's model: decoding fails on anything else.
    pub installer_args: String,
    /// `Full` or `None`.
    pub high_availability_mode: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectivityCheckNic {
    pub name: String,
    pub mac: String,
    pub ip_addresses: Vec<String>,
}

/// One element of the connectivity-check request (a JSON list of these).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectivityCheckHost {
    pub host_id: String,
    pub nics: Vec<ConnectivityCheckNic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DomainResolutionRequest {
    pub domains: Vec<DomainName>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DomainName {
    pub domain_name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NtpSynchronizationRequest {
    pub ntp_source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContainerImageAvailabilityRequest {
    pub images: Vec<String>,
    pub timeout: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskSpeedCheckRequest {
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DhcpAllocationRequest {
    pub interface: String,
    pub api_vip_mac: String,
    pub ingress_vip_mac: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApiVipConnectivityRequest {
    pub url: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VerifyVip {
    pub vip: String,
    pub vip_type: String,
}

/// `verify_vips_request`: a bare array of `verify_vip`, as upstream's model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VerifyVipsRequest {
    pub vips: Vec<VerifyVip>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UpgradeAgentRequest {
    pub agent_image: String,
}

/// `host-progress`: the PUT progress body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostProgress {
    pub current_stage: String,
    pub progress_info: String,
}

/// The parts of a `host` object the simulator reads (registration response, hosts list).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostView {
    #[serde(deserialize_with = "nd")]
    pub id: String,
    #[serde(deserialize_with = "nd")]
    pub infra_env_id: String,
    pub cluster_id: Option<String>,
    #[serde(deserialize_with = "nd")]
    pub status: String,
    #[serde(deserialize_with = "nd")]
    pub status_info: String,
    #[serde(deserialize_with = "nd")]
    pub role: String,
    #[serde(deserialize_with = "nd")]
    pub bootstrap: bool,
    #[serde(deserialize_with = "nd")]
    pub progress: ProgressView,
    #[serde(deserialize_with = "nd")]
    pub requested_hostname: String,
    /// The inventory document as a JSON string (its `hostname` names the Node when no
    /// hostname was requested).
    #[serde(deserialize_with = "nd")]
    pub inventory: String,
    /// The labels the Node gets, a JSON object as a string.
    #[serde(deserialize_with = "nd")]
    pub node_labels: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProgressView {
    #[serde(deserialize_with = "nd")]
    pub current_stage: String,
    #[serde(deserialize_with = "nd")]
    pub progress_info: String,
}

/// The parts of a `cluster` object the controller reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterView {
    #[serde(deserialize_with = "nd")]
    pub id: String,
    #[serde(deserialize_with = "nd")]
    pub status: String,
    #[serde(deserialize_with = "nd")]
    pub status_info: String,
    pub control_plane_count: Option<u32>,
    pub high_availability_mode: Option<String>,
    #[serde(deserialize_with = "nd")]
    pub openshift_version: String,
}

/// `monitored-operator` (as listed) / `operator-monitor-report` (as reported).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OperatorView {
    #[serde(deserialize_with = "nd")]
    pub name: String,
    #[serde(deserialize_with = "nd")]
    pub version: String,
    #[serde(deserialize_with = "nd")]
    pub status: String,
    #[serde(deserialize_with = "nd")]
    pub operator_type: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_kinds_round_trip() {
        for k in StepKind::ALL {
            assert_eq!(StepKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(StepKind::parse("reboot"), None);
    }

    #[test]
    fn steps_are_lenient() {
        let s: Steps = serde_json::from_str(
            r#"{"instructions":[{"step_type":"inventory","step_id":"inventory-1","args":["x"]}],
                "extra":1}"#,
        )
        .unwrap();
        assert_eq!(s.next_instruction_seconds, 60);
        assert!(!s.exit_requested());
        assert_eq!(s.instructions[0].kind(), Some(StepKind::Inventory));
        let e: Steps = serde_json::from_str(r#"{"post_step_action":"exit"}"#).unwrap();
        assert!(e.exit_requested());
    }

    #[test]
    fn request_errors_are_descriptive() {
        let s = Step::new(StepKind::DomainResolution, "d-1", vec![]);
        assert!(
            s.request::<DomainResolutionRequest>()
                .unwrap_err()
                .contains("no arguments")
        );
        let s = Step::new(StepKind::DomainResolution, "d-1", vec!["{".into()]);
        assert!(
            s.request::<DomainResolutionRequest>()
                .unwrap_err()
                .contains("malformed")
        );
    }

    #[test]
    fn host_view_tolerates_nulls_and_extra_fields() {
        let h: HostView = serde_json::from_str(
            r#"{"id":"a","cluster_id":null,"status_info":null,"bootstrap":null,
                "progress":{"current_stage":"Rebooting","progress_info":null},"x":[1]}"#,
        )
        .unwrap();
        assert_eq!(h.progress.current_stage, "Rebooting");
        assert_eq!(h.cluster_id, None);
        assert_eq!(h.status_info, "");
        assert!(!h.bootstrap);
        let h: HostView = serde_json::from_str(r#"{"id":"a","progress":null}"#).unwrap();
        assert_eq!(h.progress, ProgressView::default());
    }
}

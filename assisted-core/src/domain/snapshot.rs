//! Plain snapshot types the model reads, and the tunables it obeys. The service layer fills them
//! from Agent / AgentClusterInstall status plus volatile check-in data.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;

use super::hardware::HwRequirementsTable;
use super::inventory::{
    ConnectivityRemoteHost, ContainerImageAvailability, DomainResolution, Inventory, NtpSource,
};
use super::types::*;

/// Progress as stored on the host (`host-progress-info`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostProgress {
    pub current_stage: Option<HostStage>,
    pub progress_info: String,
    pub installation_percentage: u8,
    pub stage_started_at: Option<Timestamp>,
    pub stage_updated_at: Option<Timestamp>,
    pub stage_timed_out: bool,
}

/// Result of the installation-disk-speed-check during preparation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DiskSpeed {
    #[default]
    NotMeasured,
    Sufficient,
    /// Measured fsync duration (ms) was above the threshold, or the check failed.
    Insufficient,
}

/// Log collection state of a host (for the logs-gather step).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LogsState {
    #[default]
    NotRequested,
    Requested,
    Collecting,
    Completed,
    Timeout,
}

/// One host as the model sees it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostSnapshot {
    pub id: String,
    pub infra_env_id: String,
    /// `None` = unbound (late binding pool).
    pub cluster_id: Option<String>,
    pub kind: HostKind,
    pub status: HostStatus,
    pub status_info: String,
    /// When the host entered `status`.
    pub status_updated_at: Timestamp,
    pub registered_at: Timestamp,
    /// Requested role (`auto-assign` unless the user chose one).
    pub role: HostRole,
    /// Role chosen by auto-assignment while `role` is auto-assign.
    pub suggested_role: Option<HostRole>,
    pub bootstrap: bool,
    pub approved: bool,
    pub inventory: Option<Inventory>,
    pub requested_hostname: Option<String>,
    pub installation_disk_id: Option<String>,
    pub machine_config_pool: Option<String>,
    /// Extra coreos-installer arguments, a JSON array as a string (the Agent's `installerArgs`);
    /// `default` so snapshots saved before the field existed still load.
    #[serde(default)]
    pub installer_args: Option<String>,
    /// Ignition merged over the host's install ignition (the Agent's `ignitionConfigOverrides`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_config_overrides: Option<String>,
    /// Labels the installed host's Node gets (the Agent's `nodeLabels`): applied by the
    /// installer-controller on day-1 and by the core's day-2 follow-up.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    pub discovery_agent_version: String,
    /// Last GET next-steps; `None` before the first one.
    pub checked_in_at: Option<Timestamp>,
    /// The host's own clock as reported with the last next-steps call.
    pub host_timestamp: Option<Timestamp>,
    /// False after a step reply with exit code 256.
    pub media_connected: bool,
    pub progress: HostProgress,
    pub connectivity: Vec<ConnectivityRemoteHost>,
    pub ntp_sources: Vec<NtpSource>,
    pub domain_resolutions: Option<Vec<DomainResolution>>,
    pub images_status: Vec<ContainerImageAvailability>,
    pub disk_speed: DiskSpeed,
    /// Day-2: the api-vip-connectivity-check result.
    pub api_vip_connectivity: Option<bool>,
    /// Disk encryption with Tang: the tang-connectivity-check result.
    pub tang_connectivity: Option<bool>,
    /// When the host entered preparing-for-installation (for its timeout).
    pub preparation_started_at: Option<Timestamp>,
    /// Disks the user asked not to format (by id).
    pub skip_formatting_disks: Vec<String>,
    pub logs_state: LogsState,
    pub connection_timed_out: bool,
}

impl HostSnapshot {
    /// A freshly registered host: `discovering` when bound, `discovering-unbound` otherwise.
    /// Hosts registering into a day-2 cluster become day-2 workers.
    pub fn new_registered(
        id: impl Into<String>,
        infra_env_id: impl Into<String>,
        cluster: Option<&ClusterSnapshot>,
        now: Timestamp,
    ) -> HostSnapshot {
        let day2 = cluster.is_some_and(|c| c.kind == ClusterKind::AddHostsCluster);
        HostSnapshot {
            id: id.into(),
            infra_env_id: infra_env_id.into(),
            cluster_id: cluster.map(|c| c.id.clone()),
            kind: if day2 {
                HostKind::AddToExistingClusterHost
            } else {
                HostKind::Host
            },
            status: if cluster.is_some() {
                HostStatus::Discovering
            } else {
                HostStatus::DiscoveringUnbound
            },
            status_info: String::new(),
            status_updated_at: now,
            registered_at: now,
            role: if day2 {
                HostRole::Worker
            } else {
                HostRole::AutoAssign
            },
            suggested_role: None,
            bootstrap: false,
            approved: false,
            inventory: None,
            requested_hostname: None,
            installation_disk_id: None,
            machine_config_pool: if day2 { Some("worker".into()) } else { None },
            installer_args: None,
            ignition_config_overrides: None,
            node_labels: BTreeMap::new(),
            discovery_agent_version: String::new(),
            checked_in_at: Some(now),
            host_timestamp: Some(now),
            media_connected: true,
            progress: HostProgress::default(),
            connectivity: Vec::new(),
            ntp_sources: Vec::new(),
            domain_resolutions: None,
            images_status: Vec::new(),
            disk_speed: DiskSpeed::NotMeasured,
            api_vip_connectivity: None,
            tang_connectivity: None,
            preparation_started_at: None,
            skip_formatting_disks: Vec::new(),
            logs_state: LogsState::NotRequested,
            connection_timed_out: false,
        }
    }

    pub fn is_bound(&self) -> bool {
        self.cluster_id.is_some()
    }

    pub fn is_day2(&self) -> bool {
        self.kind == HostKind::AddToExistingClusterHost
    }

    /// The role a host added to an installed cluster installs as: `master` when asked for
    /// (a day-2 control-plane host, as assisted-service allows since OpenShift 4.11), else
    /// `worker` (upstream's `selectRole` suggests nothing else for day-2 hosts).
    pub fn day2_role(&self) -> HostRole {
        match self.role {
            HostRole::Master | HostRole::Bootstrap => HostRole::Master,
            _ => HostRole::Worker,
        }
    }

    /// Requested role, else the suggested one; `auto-assign` if neither is decided.
    pub fn effective_role(&self) -> HostRole {
        match self.role {
            HostRole::AutoAssign => self.suggested_role.unwrap_or(HostRole::AutoAssign),
            r => r,
        }
    }

    /// Role used for stages and install requests (`bootstrap` for the bootstrap master).
    pub fn install_role(&self) -> HostRole {
        if self.bootstrap {
            HostRole::Bootstrap
        } else {
            self.effective_role()
        }
    }

    /// Requested hostname, else the inventory hostname.
    pub fn hostname(&self) -> &str {
        match &self.requested_hostname {
            Some(h) if !h.is_empty() => h,
            _ => self
                .inventory
                .as_ref()
                .map(|i| i.hostname.as_str())
                .unwrap_or(""),
        }
    }

    /// True once the host passed the Rebooting stage (no more agent check-ins expected).
    pub fn rebooted(&self) -> bool {
        matches!(
            self.progress.current_stage,
            Some(
                HostStage::Rebooting
                    | HostStage::WaitingForIgnition
                    | HostStage::Configuring
                    | HostStage::Joined
                    | HostStage::Done
            )
        )
    }
}

/// A machine / cluster / service network.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterNetwork {
    pub cidr: String,
    pub host_prefix: u8,
}

/// A monitored operator and its last reported status.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MonitoredOperator {
    pub name: String,
    pub kind: OperatorType,
    pub status: Option<OperatorStatus>,
}

/// Whether the asynchronous install preparation (install-config, ignitions) finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PreparationStatus {
    #[default]
    NotStarted,
    InProgress,
    Success,
    Failed,
}

/// Disk encryption settings (ACI `diskEncryption`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DiskEncryption {
    /// `none`, `all`, `masters`, `workers`, `arbiters` (comma-separated upstream).
    pub enable_on: String,
    /// `tpmv2` or `tang`.
    pub mode: String,
    pub tang_servers: String,
}

/// Images of the release the cluster installs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReleaseInfo {
    pub release_image: String,
    pub mco_image: String,
    pub must_gather_image: String,
    pub coreos_image: String,
}

/// Where day-2 hosts fetch their ignition (ACI `ignitionEndpoint`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IgnitionEndpoint {
    pub url: Option<String>,
    pub ca_certificate: Option<String>,
    pub token: Option<String>,
}

/// One cluster with its hosts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClusterSnapshot {
    pub id: String,
    pub name: String,
    pub base_domain: String,
    pub kind: ClusterKind,
    pub status: ClusterStatus,
    pub status_info: String,
    pub status_updated_at: Timestamp,
    pub openshift_version: String,
    pub cpu_architecture: String,
    pub control_plane_count: u32,
    /// Expected workers (ACI provisionRequirements.workerAgents).
    pub worker_count: u32,
    pub arbiter_count: u32,
    pub platform: PlatformType,
    pub user_managed_networking: bool,
    pub machine_networks: Vec<String>,
    pub cluster_networks: Vec<ClusterNetwork>,
    pub service_networks: Vec<String>,
    pub api_vips: Vec<String>,
    pub ingress_vips: Vec<String>,
    /// `None`/empty means the default for the version.
    pub network_type: Option<String>,
    pub pull_secret_set: bool,
    pub schedulable_masters: bool,
    pub vip_dhcp_allocation: bool,
    pub additional_ntp_source: String,
    pub disk_encryption: Option<DiskEncryption>,
    /// Image mode at install, read from the custom manifests (`image_mode.rs`).
    #[serde(
        default,
        skip_serializing_if = "crate::domain::image_mode::ImageMode::is_off"
    )]
    pub image_mode: crate::domain::image_mode::ImageMode,
    pub release: ReleaseInfo,
    pub ignition_endpoint: IgnitionEndpoint,
    pub hosts: Vec<HostSnapshot>,
    pub install_started_at: Option<Timestamp>,
    pub preparation: PreparationStatus,
    /// `<id>/kubeconfig` exists (the ingress CA was uploaded and merged).
    pub kubeconfig_uploaded: bool,
    pub monitored_operators: Vec<MonitoredOperator>,
    pub finalizing_stage: Option<FinalizingStage>,
    pub finalizing_stage_started_at: Option<Timestamp>,
    pub finalizing_started_at: Option<Timestamp>,
    pub ignored_host_validations: Vec<String>,
    pub ignored_cluster_validations: Vec<String>,
}

impl ClusterSnapshot {
    /// A new day-1 cluster with upstream defaults for networks.
    pub fn new(id: impl Into<String>, name: impl Into<String>, now: Timestamp) -> ClusterSnapshot {
        ClusterSnapshot {
            id: id.into(),
            name: name.into(),
            base_domain: String::new(),
            kind: ClusterKind::Cluster,
            status: ClusterStatus::Insufficient,
            status_info: String::new(),
            status_updated_at: now,
            openshift_version: String::new(),
            cpu_architecture: "x86_64".into(),
            control_plane_count: 3,
            worker_count: 0,
            arbiter_count: 0,
            platform: PlatformType::BareMetal,
            user_managed_networking: false,
            machine_networks: Vec::new(),
            cluster_networks: vec![ClusterNetwork {
                cidr: "10.128.0.0/14".into(),
                host_prefix: 23,
            }],
            service_networks: vec!["172.30.0.0/16".into()],
            api_vips: Vec::new(),
            ingress_vips: Vec::new(),
            network_type: None,
            pull_secret_set: false,
            schedulable_masters: false,
            vip_dhcp_allocation: false,
            additional_ntp_source: String::new(),
            disk_encryption: None,
            image_mode: Default::default(),
            release: ReleaseInfo::default(),
            ignition_endpoint: IgnitionEndpoint::default(),
            hosts: Vec::new(),
            install_started_at: None,
            preparation: PreparationStatus::NotStarted,
            kubeconfig_uploaded: false,
            monitored_operators: vec![MonitoredOperator {
                name: "console".into(),
                kind: OperatorType::Builtin,
                status: None,
            }],
            finalizing_stage: None,
            finalizing_stage_started_at: None,
            finalizing_started_at: None,
            ignored_host_validations: Vec::new(),
            ignored_cluster_validations: Vec::new(),
        }
    }

    /// Single-node OpenShift.
    pub fn is_sno(&self) -> bool {
        self.control_plane_count == 1
    }

    pub fn is_day2(&self) -> bool {
        self.kind == ClusterKind::AddHostsCluster
    }

    /// User-managed networking: SNO always is, platform none/external too.
    pub fn umn(&self) -> bool {
        self.user_managed_networking
            || self.is_sno()
            || matches!(self.platform, PlatformType::None | PlatformType::External)
    }

    pub fn host(&self, id: &str) -> Option<&HostSnapshot> {
        self.hosts.iter().find(|h| h.id == id)
    }

    pub fn host_mut(&mut self, id: &str) -> Option<&mut HostSnapshot> {
        self.hosts.iter_mut().find(|h| h.id == id)
    }

    /// `<name>.<base_domain>`
    pub fn domain(&self) -> String {
        format!("{}.{}", self.name, self.base_domain)
    }
}

/// Per-stage timeouts (`internal/host/config.go`).
pub fn default_stage_timeout(stage: HostStage, sno: bool) -> Duration {
    const MIN: u64 = 60;
    let minutes = match stage {
        HostStage::StartingInstallation => 30,
        HostStage::WritingImageToDisk => 30,
        HostStage::CopyingRegistryDataToDisk => 90,
        HostStage::Rebooting if sno => 80,
        HostStage::Rebooting => 40,
        HostStage::WaitingForIgnition => 24 * 60,
        _ => 60,
    };
    Duration::from_secs(minutes * MIN)
}

/// Service tunables; [`Config::default`] matches upstream defaults.
#[derive(Debug, Clone)]
pub struct Config {
    pub host_disconnection_timeout: Duration,
    pub bootstrap_extra_disconnection: Duration,
    pub prepare_host_timeout: Duration,
    pub installing_timeout: Duration,
    pub pending_user_action_timeout: Duration,
    /// Overrides of [`default_stage_timeout`].
    pub stage_timeouts: Vec<(HostStage, Duration)>,
    pub reclaim_timeout: Duration,
    pub cluster_prepare_timeout: Duration,
    pub cluster_install_timeout: Duration,
    pub finalizing_timeout: Duration,
    /// Soft timeouts: host timeouts only flag, the 24 h cluster timeout decides.
    pub soft_timeouts: bool,
    pub service_ahead_max_skew: Duration,
    pub host_ahead_max_skew: Duration,
    pub cluster_max_host_time_diff: Duration,
    pub hw: HwRequirementsTable,
    pub disabled_host_validations: Vec<String>,
    pub disabled_steps: Vec<StepType>,
    pub agent_image: String,
    pub enable_upgrade_agent: bool,
    pub installer_image: String,
    pub controller_image: String,
    /// `BOOTSTRAP_HOST_MAC`: pins the bootstrap host.
    pub bootstrap_host_mac: Option<String>,
    /// `CHECK_CLUSTER_VERSION`: cvo must be available before the cluster is installed.
    pub check_cluster_version: bool,
    /// Inventory step `--disk-min-size` in GB passed to the agent.
    pub inventory_output_max_size: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        let m = |x: u64| Duration::from_secs(x * 60);
        Config {
            host_disconnection_timeout: m(3),
            bootstrap_extra_disconnection: m(2),
            prepare_host_timeout: m(8),
            installing_timeout: m(20),
            pending_user_action_timeout: m(60),
            stage_timeouts: Vec::new(),
            reclaim_timeout: m(60),
            cluster_prepare_timeout: m(10),
            cluster_install_timeout: m(24 * 60),
            finalizing_timeout: m(5 * 60),
            soft_timeouts: false,
            service_ahead_max_skew: m(20),
            host_ahead_max_skew: m(60),
            cluster_max_host_time_diff: m(4),
            hw: HwRequirementsTable::default(),
            disabled_host_validations: vec!["release-domain-name-resolved-correctly".into()],
            disabled_steps: Vec::new(),
            agent_image: String::new(),
            enable_upgrade_agent: false,
            installer_image: "quay.io/edge-infrastructure/assisted-installer:latest".into(),
            controller_image: "quay.io/edge-infrastructure/assisted-installer-controller:latest"
                .into(),
            bootstrap_host_mac: None,
            check_cluster_version: false,
            inventory_output_max_size: None,
        }
    }
}

impl Config {
    pub fn stage_timeout(&self, stage: HostStage, sno: bool) -> Duration {
        self.stage_timeouts
            .iter()
            .find(|(s, _)| *s == stage)
            .map(|(_, d)| *d)
            .unwrap_or_else(|| default_stage_timeout(stage, sno))
    }
}

/// Time from `since` to `now`, zero if `since` is in the future.
pub fn elapsed(now: Timestamp, since: Timestamp) -> Duration {
    Duration::try_from(now.duration_since(since)).unwrap_or_default()
}

//! Wire models of the agent API (upstream `swagger.yaml` names, snake_case) and the pure
//! functions that build them from the domain snapshots.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::BASE;
use crate::domain::*;
use crate::service::store::{ClusterRecord, HostExtra};

fn ts(t: Timestamp) -> String {
    // RFC 3339 in UTC, like go-openapi's strfmt.DateTime.
    t.to_string()
}

/// Schema-only enums: the wire carries these as strings (the domain has its own enums); the
/// OpenAPI document declares upstream's values so that generated clients validate them.
pub mod wire_enums {
    use utoipa::ToSchema;

    /// `step-type`, every value upstream declares.
    #[allow(dead_code)]
    #[derive(ToSchema)]
    #[serde(rename_all = "kebab-case")]
    pub enum StepType {
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

    /// `host-stage`, every value upstream declares.
    #[allow(dead_code)]
    #[derive(ToSchema)]
    pub enum HostStage {
        #[serde(rename = "Starting installation")]
        StartingInstallation,
        #[serde(rename = "Waiting for control plane")]
        WaitingForControlPlane,
        #[serde(rename = "Waiting for bootkube")]
        WaitingForBootkube,
        #[serde(rename = "Waiting for controller")]
        WaitingForController,
        Installing,
        #[serde(rename = "Writing image to disk")]
        WritingImageToDisk,
        #[serde(rename = "Copying registry data to disk")]
        CopyingRegistryDataToDisk,
        Rebooting,
        #[serde(rename = "Waiting for ignition")]
        WaitingForIgnition,
        Configuring,
        Joined,
        Done,
        Failed,
    }
}

/// `host-create-params`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct HostCreateParams {
    pub host_id: String,
    #[serde(default)]
    pub discovery_agent_version: Option<String>,
}

/// `host-progress` (PUT .../progress).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct HostProgressParams {
    /// A `host-stage` wire string, e.g. "Writing image to disk".
    #[schema(value_type = wire_enums::HostStage)]
    pub current_stage: String,
    #[serde(default)]
    pub progress_info: Option<String>,
}

/// `logs-progress-params`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct LogsProgressParams {
    /// requested, collecting, completed or timeout.
    pub logs_state: String,
}

/// `cluster-progress` (PUT clusters/{id}/progress).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ClusterFinalizingProgress {
    pub finalizing_stage: String,
}

/// `operator-monitor-report`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct OperatorMonitorReport {
    pub name: String,
    /// failed, progressing or available.
    pub status: String,
    #[serde(default)]
    pub status_info: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
}

/// `completion-params` (deprecated upstream; accepted and ignored).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct CompletionParams {
    pub is_success: bool,
    #[serde(default)]
    pub error_info: Option<String>,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub data: Option<serde_json::Value>,
}

/// `step-reply`, as the agent posts it. Parsed leniently: unknown fields are ignored.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct StepReplyBody {
    #[schema(value_type = wire_enums::StepType)]
    pub step_type: String,
    pub step_id: String,
    pub exit_code: i64,
    /// The step's JSON response document, as a string.
    pub output: String,
    pub error: String,
}

/// `step`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepModel {
    #[schema(value_type = wire_enums::StepType)]
    pub step_type: String,
    pub step_id: String,
    pub args: Vec<String>,
}

/// `steps` (GET instructions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepsModel {
    pub next_instruction_seconds: u32,
    /// continue or exit.
    pub post_step_action: String,
    pub instructions: Vec<StepModel>,
}

/// Takes the steps by value: the args can be large (a connectivity check lists every peer).
pub fn steps_model(s: Steps) -> StepsModel {
    StepsModel {
        next_instruction_seconds: s.next_instruction_seconds,
        post_step_action: s.post_step_action.as_str().to_string(),
        instructions: s
            .instructions
            .into_iter()
            .map(|i| StepModel {
                step_type: i.step_type.as_str().to_string(),
                step_id: i.step_id,
                args: i.args,
            })
            .collect(),
    }
}

/// `host-progress-info`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HostProgressInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<wire_enums::HostStage>)]
    pub current_stage: Option<String>,
    pub installation_percentage: u8,
    pub progress_info: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub stage_started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub stage_updated_at: Option<String>,
}

/// `host`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Host {
    pub id: String,
    pub href: String,
    /// Host or AddToExistingClusterHost.
    pub kind: String,
    pub infra_env_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    pub status: String,
    pub status_info: String,
    #[schema(format = DateTime)]
    pub status_updated_at: String,
    /// auto-assign, master, worker, arbiter.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_role: Option<String>,
    pub bootstrap: bool,
    /// The `inventory` document as a JSON string; absent before the first inventory reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<String>,
    pub requested_hostname: String,
    pub installation_disk_id: String,
    pub installation_disk_path: String,
    pub progress: HostProgressInfo,
    pub progress_stages: Vec<String>,
    pub discovery_agent_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub checked_in_at: Option<String>,
    #[schema(format = DateTime)]
    pub registered_at: String,
    /// JSON string `{"hardware":[{id,status,message}],...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validations_info: Option<String>,
    /// "", requested, collecting, completed or timeout.
    pub logs_info: String,
    pub machine_config_pool_name: String,
    /// The labels the host's Node gets, a JSON object as a string (the Agent's `nodeLabels`);
    /// the installer-controller applies them. Absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_labels: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// `next_step_runner_command`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NextStepRunnerCommandModel {
    pub command: String,
    pub args: Vec<String>,
    pub retry_seconds: u32,
}

/// `host_registration_response`: the host plus the runner command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HostRegistrationResponse {
    #[serde(flatten)]
    pub host: Host,
    pub next_step_runner_command: NextStepRunnerCommandModel,
}

fn logs_info(s: LogsState) -> &'static str {
    match s {
        LogsState::NotRequested => "",
        LogsState::Requested => "requested",
        LogsState::Collecting => "collecting",
        LogsState::Completed => "completed",
        LogsState::Timeout => "timeout",
    }
}

/// From `preparing-for-installation` on, the host's role is fixed.
fn install_started(status: HostStatus) -> bool {
    status.is_installing_or_later()
        || matches!(
            status,
            HostStatus::PreparingForInstallation | HostStatus::PreparingSuccessful
        )
}

/// Builds the `host` model. `sno` picks the stage list; `min_disk_gb` the default disk.
pub fn host_model(
    h: &HostSnapshot,
    extra: Option<&HostExtra>,
    sno: bool,
    min_disk_gb: u64,
) -> Host {
    let disk = installation_disk(h, min_disk_gb);
    // Stages are only meaningful once the install role is fixed.
    let progress_stages = if h.status.is_installing_or_later() {
        stages_for(h.install_role(), sno)
            .iter()
            .map(|s| s.as_str().to_string())
            .collect()
    } else {
        Vec::new()
    };
    let updated = [
        Some(h.status_updated_at),
        h.checked_in_at,
        h.progress.stage_updated_at,
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(h.registered_at);
    Host {
        id: h.id.clone(),
        href: format!("{BASE}/infra-envs/{}/hosts/{}", h.infra_env_id, h.id),
        kind: h.kind.as_str().to_string(),
        infra_env_id: h.infra_env_id.clone(),
        cluster_id: h.cluster_id.clone(),
        status: h.status.as_str().to_string(),
        status_info: h.status_info.clone(),
        status_updated_at: ts(h.status_updated_at),
        // Upstream writes the suggested role into `role` when the install starts, so agents and
        // installers see `master`/`worker` from then on (the Agent's spec keeps what was asked).
        role: if install_started(h.status) {
            h.effective_role()
        } else {
            h.role
        }
        .as_str()
        .to_string(),
        suggested_role: h.suggested_role.map(|r| r.as_str().to_string()),
        bootstrap: h.bootstrap,
        inventory: h
            .inventory
            .as_ref()
            .and_then(|i| serde_json::to_string(i).ok()),
        requested_hostname: h.requested_hostname.clone().unwrap_or_default(),
        installation_disk_id: disk.map(|d| d.key().to_string()).unwrap_or_default(),
        installation_disk_path: disk
            .map(|d| d.install_path().to_string())
            .unwrap_or_default(),
        progress: HostProgressInfo {
            current_stage: h.progress.current_stage.map(|s| s.as_str().to_string()),
            installation_percentage: h.progress.installation_percentage,
            progress_info: h.progress.progress_info.clone(),
            stage_started_at: h.progress.stage_started_at.map(ts),
            stage_updated_at: h.progress.stage_updated_at.map(ts),
        },
        progress_stages,
        discovery_agent_version: h.discovery_agent_version.clone(),
        checked_in_at: h.checked_in_at.map(ts),
        registered_at: ts(h.registered_at),
        validations_info: extra
            .and_then(|e| e.validations.as_ref())
            .map(|v| v.to_validations_info().to_string()),
        logs_info: logs_info(h.logs_state).to_string(),
        machine_config_pool_name: h.machine_config_pool.clone().unwrap_or_default(),
        node_labels: (!h.node_labels.is_empty())
            .then(|| serde_json::to_string(&h.node_labels).ok())
            .flatten(),
        created_at: ts(h.registered_at),
        updated_at: ts(updated),
    }
}

/// `api_vip` / `ingress_vip`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Vip {
    pub ip: String,
    pub cluster_id: String,
}

/// `machine_network` / `service_network`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Network {
    pub cidr: String,
}

/// `cluster_network`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClusterNetworkModel {
    pub cidr: String,
    pub host_prefix: u8,
}

/// `cluster-progress-info` (the part agents read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClusterProgressInfo {
    pub total_percentage: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizing_stage: Option<String>,
}

/// `monitored-operator`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MonitoredOperatorModel {
    pub cluster_id: String,
    pub name: String,
    /// builtin or olm.
    pub operator_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `image_info`: required in upstream's `cluster` model; its fields describe a cluster-level
/// discovery ISO, which the v2 API (one image per infra-env) leaves empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ImageInfo {}

/// `cluster`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Cluster {
    pub id: String,
    pub href: String,
    /// Cluster or AddHostsCluster.
    pub kind: String,
    pub name: String,
    pub base_dns_domain: String,
    pub openshift_version: String,
    pub cpu_architecture: String,
    pub status: String,
    pub status_info: String,
    #[schema(format = DateTime)]
    pub status_updated_at: String,
    pub control_plane_count: u32,
    /// Full, or None for single-node.
    pub high_availability_mode: String,
    pub api_vips: Vec<Vip>,
    pub ingress_vips: Vec<Vip>,
    pub machine_networks: Vec<Network>,
    pub cluster_networks: Vec<ClusterNetworkModel>,
    pub service_networks: Vec<Network>,
    pub network_type: String,
    pub user_managed_networking: bool,
    pub schedulable_masters: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub install_started_at: Option<String>,
    pub progress: ClusterProgressInfo,
    pub hosts: Vec<Host>,
    pub total_host_count: usize,
    pub ready_host_count: usize,
    pub enabled_host_count: usize,
    pub monitored_operators: Vec<MonitoredOperatorModel>,
    /// Required by upstream's model (its client rejects a cluster without it).
    pub image_info: ImageInfo,
}

pub fn operator_models(c: &ClusterSnapshot) -> Vec<MonitoredOperatorModel> {
    c.monitored_operators
        .iter()
        .map(|o| MonitoredOperatorModel {
            cluster_id: c.id.clone(),
            name: o.name.clone(),
            operator_type: o.kind.as_str().to_string(),
            status: o.status.map(|s| s.as_str().to_string()),
        })
        .collect()
}

/// A coarse overall percentage: preparation 10, host installs 60, finalizing 30.
pub fn total_percentage(c: &ClusterSnapshot) -> u8 {
    let hosts_avg = if c.hosts.is_empty() {
        0
    } else {
        c.hosts
            .iter()
            .map(|h| h.progress.installation_percentage.min(100) as usize)
            .sum::<usize>()
            / c.hosts.len()
    };
    match c.status {
        ClusterStatus::Installed | ClusterStatus::AddingHosts => 100,
        ClusterStatus::Finalizing => 70,
        ClusterStatus::Installing | ClusterStatus::InstallingPendingUserAction => {
            (10 + hosts_avg * 60 / 100) as u8
        }
        _ => 0,
    }
}

/// Builds the `cluster` model; `extra` gives each host's validations.
pub fn cluster_model<'a>(
    rec: &ClusterRecord,
    extra: impl Fn(&str) -> Option<&'a HostExtra>,
    min_disk_gb: u64,
) -> Cluster {
    let c = &rec.snapshot;
    let sno = c.is_sno();
    let vips = |v: &[String]| {
        v.iter()
            .map(|ip| Vip {
                ip: ip.clone(),
                cluster_id: c.id.clone(),
            })
            .collect()
    };
    let nets = |v: &[String]| v.iter().map(|n| Network { cidr: n.clone() }).collect();
    let hosts: Vec<Host> = c
        .hosts
        .iter()
        .map(|h| host_model(h, extra(&h.id), sno, min_disk_gb))
        .collect();
    Cluster {
        id: c.id.clone(),
        href: format!("{BASE}/clusters/{}", c.id),
        kind: c.kind.as_str().to_string(),
        name: c.name.clone(),
        base_dns_domain: c.base_domain.clone(),
        openshift_version: c.openshift_version.clone(),
        cpu_architecture: c.cpu_architecture.clone(),
        status: c.status.as_str().to_string(),
        status_info: c.status_info.clone(),
        status_updated_at: ts(c.status_updated_at),
        control_plane_count: c.control_plane_count,
        high_availability_mode: if sno { "None" } else { "Full" }.to_string(),
        api_vips: vips(&c.api_vips),
        ingress_vips: vips(&c.ingress_vips),
        machine_networks: nets(&c.machine_networks),
        cluster_networks: c
            .cluster_networks
            .iter()
            .map(|n| ClusterNetworkModel {
                cidr: n.cidr.clone(),
                host_prefix: n.host_prefix,
            })
            .collect(),
        service_networks: nets(&c.service_networks),
        network_type: c
            .network_type
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "OVNKubernetes".to_string()),
        user_managed_networking: c.umn(),
        schedulable_masters: c.schedulable_masters,
        install_started_at: c.install_started_at.map(ts),
        progress: ClusterProgressInfo {
            total_percentage: total_percentage(c),
            finalizing_stage: c.finalizing_stage.map(|s| s.as_str().to_string()),
        },
        total_host_count: hosts.len(),
        ready_host_count: c
            .hosts
            .iter()
            .filter(|h| h.status == HostStatus::Known)
            .count(),
        // `disabled` is obsolete upstream: every host counts as enabled.
        enabled_host_count: hosts.len(),
        hosts,
        monitored_operators: operator_models(c),
        image_info: ImageInfo::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::store::ClusterSettings;

    const CL: &str = "22222222-2222-2222-2222-222222222222";
    const IE: &str = "11111111-1111-1111-1111-111111111111";
    const H1: &str = "33333333-3333-3333-3333-333333333333";

    fn rec() -> ClusterRecord {
        let t = Timestamp::from_second(1_700_000_000).unwrap();
        let mut c = ClusterSnapshot::new(CL, "c1", t);
        c.base_domain = "example.com".into();
        c.api_vips = vec!["10.0.0.5".into()];
        c.machine_networks = vec!["10.0.0.0/24".into()];
        let h = HostSnapshot::new_registered(H1, IE, Some(&c), t);
        c.hosts.push(h);
        ClusterRecord::new(c, ClusterSettings::default())
    }

    #[test]
    fn host_model_uses_wire_strings_and_rfc3339() {
        let r = rec();
        let h = host_model(&r.snapshot.hosts[0], None, false, 20);
        assert_eq!(h.kind, "Host");
        assert_eq!(h.status, "discovering");
        assert_eq!(h.role, "auto-assign");
        assert_eq!(h.registered_at, "2023-11-14T22:13:20Z");
        assert_eq!(
            h.href,
            format!("/api/assisted-install/v2/infra-envs/{IE}/hosts/{H1}")
        );
        assert!(h.inventory.is_none());
        assert!(h.progress_stages.is_empty());
        let v = serde_json::to_value(&h).unwrap();
        assert!(v.get("inventory").is_none());
        assert_eq!(v["cluster_id"], CL);
    }

    #[test]
    fn host_model_serializes_inventory_and_validations_as_strings() {
        let mut r = rec();
        let h = &mut r.snapshot.hosts[0];
        h.inventory = Some(Inventory::parse(br#"{"hostname":"node-1"}"#));
        h.status = HostStatus::InstallingInProgress;
        h.suggested_role = Some(HostRole::Master);
        h.progress.current_stage = Some(HostStage::Rebooting);
        let extra = HostExtra {
            validations: Some(crate::domain::HostValidations {
                results: vec![crate::domain::ValidationResult {
                    id: crate::domain::HostValidationId::HasMinCpuCores,
                    status: crate::domain::ValidationStatus::Success,
                    message: "enough".into(),
                    ignored: false,
                }],
            }),
            ..HostExtra::default()
        };
        let m = host_model(h, Some(&extra), false, 20);
        let inv: serde_json::Value = serde_json::from_str(m.inventory.as_deref().unwrap()).unwrap();
        assert_eq!(inv["hostname"], "node-1");
        assert_eq!(
            m.validations_info.as_deref(),
            Some(
                r#"{"hardware":[{"id":"has-min-cpu-cores","message":"enough","status":"success"}]}"#
            )
        );
        assert_eq!(m.progress.current_stage.as_deref(), Some("Rebooting"));
        assert_eq!(m.progress_stages.len(), 8);
        assert_eq!(m.suggested_role.as_deref(), Some("master"));
        assert_eq!(
            m.role, "master",
            "the suggested role is the role once installing"
        );
    }

    #[test]
    fn an_auto_assign_host_reports_its_suggested_role_from_install_start() {
        let mut r = rec();
        let h = &mut r.snapshot.hosts[0];
        h.suggested_role = Some(HostRole::Worker);
        for (status, role) in [
            (HostStatus::Known, "auto-assign"),
            (HostStatus::PreparingForInstallation, "worker"),
            (HostStatus::Installing, "worker"),
            (HostStatus::Installed, "worker"),
        ] {
            h.status = status;
            assert_eq!(host_model(h, None, false, 20).role, role, "{status:?}");
        }
    }

    #[test]
    fn cluster_model_carries_the_required_image_info() {
        let r = rec();
        let v = serde_json::to_value(cluster_model(&r, |_| None, 20)).unwrap();
        assert_eq!(v["image_info"], serde_json::json!({}));
    }

    #[test]
    fn cluster_model_counts_and_networks() {
        let mut r = rec();
        r.snapshot.hosts[0].status = HostStatus::Known;
        let c = cluster_model(&r, |_| None, 20);
        assert_eq!(c.kind, "Cluster");
        assert_eq!(c.high_availability_mode, "Full");
        assert_eq!(c.network_type, "OVNKubernetes");
        assert_eq!(
            c.api_vips,
            vec![Vip {
                ip: "10.0.0.5".into(),
                cluster_id: CL.into()
            }]
        );
        assert_eq!(c.cluster_networks[0].host_prefix, 23);
        assert_eq!(c.service_networks[0].cidr, "172.30.0.0/16");
        assert_eq!((c.total_host_count, c.ready_host_count), (1, 1));
        assert_eq!(c.monitored_operators[0].operator_type, "builtin");
        assert_eq!(c.progress.total_percentage, 0);
        r.snapshot.control_plane_count = 1;
        let c = cluster_model(&r, |_| None, 20);
        assert_eq!(c.high_availability_mode, "None");
        assert!(c.user_managed_networking);
    }

    #[test]
    fn total_percentage_follows_the_phases() {
        let mut r = rec();
        r.snapshot.status = ClusterStatus::Installing;
        r.snapshot.hosts[0].progress.installation_percentage = 50;
        assert_eq!(total_percentage(&r.snapshot), 40);
        r.snapshot.status = ClusterStatus::Installed;
        assert_eq!(total_percentage(&r.snapshot), 100);
    }

    #[test]
    fn steps_model_keeps_wire_strings() {
        let s = Steps {
            next_instruction_seconds: 60,
            post_step_action: PostStepAction::Continue,
            instructions: vec![Step {
                step_type: StepType::Inventory,
                step_id: "inventory-0000abcd".into(),
                args: vec![H1.into()],
            }],
        };
        let m = steps_model(s.clone());
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::to_value(&s).unwrap()
        );
    }
}

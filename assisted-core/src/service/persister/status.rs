//! Pure builders of Agent and AgentClusterInstall status from the store's records: the
//! condition types, reasons and messages of assisted-service (declared in its
//! `api/v1beta1/agent_types.go` and `api/hiveextension/v1beta1/agentclusterinstall_types.go`,
//! set by `internal/controller/controllers/{agent,clusterdeployments}_controller.go`).

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::agent::{AgentStatus, HostNtpSource, HostProgressInfo};
use crate::api::agentclusterinstall;
use crate::api::agentclusterinstall::{
    AgentClusterInstallStatus, ClusterProgressInfo, MachineNetworkEntry,
};
use crate::api::common::{DebugInfo, OpenShiftCondition, ValidationsStatus};
use crate::api::hive::ClusterInstallCondition;
use crate::domain::*;
use crate::service::store::{ClusterRecord, HostExtra};

use super::inventory::{agent_inventory, agent_role};
use crate::service::controllers::conditions::{Cond, cond, hive_conditions, openshift_conditions};

fn validations_of(info: Option<&serde_json::Value>) -> Option<ValidationsStatus> {
    info.and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// failing messages, pending flag
fn validation_summary(v: &ValidationsStatus) -> (Vec<String>, bool) {
    let mut failing = Vec::new();
    let mut pending = false;
    for r in v.values().flatten() {
        match r.status.as_str() {
            "failure" | "error" => failing.push(r.message.clone()),
            "pending" => pending = true,
            _ => {}
        }
    }
    (failing, pending)
}

/// SpecSynced, the same for Agents and AgentClusterInstalls.
fn spec_synced(spec_error: Option<&str>) -> Cond {
    match spec_error {
        None => cond(
            "SpecSynced",
            true,
            "SyncOK",
            "The Spec has been successfully applied",
        ),
        Some(e) => cond(
            "SpecSynced",
            false,
            "InputError",
            format!("The Spec could not be synced due to an input error: {e}"),
        ),
    }
}

/// Validated from the stored validations of an agent or a cluster (`whose`).
fn validated(whose: &str, validations: Option<ValidationsStatus>) -> Cond {
    let Some(v) = validations else {
        return Cond {
            type_: "Validated",
            status: "Unknown",
            reason: "ValidationsUnknown",
            message: format!("The {whose}'s validations have not yet been calculated"),
        };
    };
    match validation_summary(&v) {
        (failing, _) if !failing.is_empty() => cond(
            "Validated",
            false,
            "ValidationsFailing",
            format!(
                "The {whose}'s validations are failing: {}",
                failing.join(",")
            ),
        ),
        (_, true) => cond(
            "Validated",
            false,
            "ValidationsUserPending",
            format!("The {whose}'s validations are pending for user input"),
        ),
        _ => cond(
            "Validated",
            true,
            "ValidationsPassing",
            format!("The {whose}'s validations are passing"),
        ),
    }
}

const INSTALLING_HOST: &[HostStatus] = &[
    HostStatus::PreparingForInstallation,
    HostStatus::PreparingSuccessful,
    HostStatus::Installing,
    HostStatus::InstallingInProgress,
    HostStatus::InstallingPendingUserAction,
];

/// Agent conditions (SpecSynced, Connected, RequirementsMet, Validated, Installed, Bound).
pub fn agent_conditions(
    host: &HostSnapshot,
    validations: Option<&serde_json::Value>,
    spec_error: Option<&str>,
) -> Vec<Cond> {
    vec![
        spec_synced(spec_error),
        agent_connected(host.status),
        agent_requirements_met(host),
        agent_validated(host.status, validations),
        agent_installed(host.status, &host.status_info),
        agent_bound(host),
    ]
}

/// Connected: whether the agent still contacts the service.
fn agent_connected(s: HostStatus) -> Cond {
    use HostStatus as S;
    if matches!(s, S::Disconnected | S::DisconnectedUnbound) {
        cond(
            "Connected",
            false,
            "AgentIsDisconnected",
            "The agent has not contacted the installation service in some time, user action should be taken",
        )
    } else {
        cond(
            "Connected",
            true,
            "AgentIsConnected",
            "The agent's connection to the installation service is unimpaired",
        )
    }
}

/// RequirementsMet: whether the host may begin the installation.
fn agent_requirements_met(host: &HostSnapshot) -> Cond {
    use HostStatus as S;
    let s = host.status;
    match s {
        S::Binding => cond(
            "RequirementsMet",
            false,
            "Binding",
            "The agent is currently binding to a cluster deployment",
        ),
        S::Unbinding | S::UnbindingPendingUserAction => cond(
            "RequirementsMet",
            false,
            "Unbinding",
            "The agent is currently unbinding from a cluster deployment",
        ),
        S::Error | S::Cancelled => cond(
            "RequirementsMet",
            false,
            "AgentInstallationStopped",
            "The agent installation stopped",
        ),
        s if INSTALLING_HOST.contains(&s)
            || matches!(s, S::Installed | S::AddedToExistingCluster) =>
        {
            cond(
                "RequirementsMet",
                true,
                "AgentAlreadyInstalling",
                "Installation already started and is in progress",
            )
        }
        S::Known | S::KnownUnbound if host.approved => cond(
            "RequirementsMet",
            true,
            "AgentIsReady",
            "The agent is ready to begin the installation",
        ),
        S::Known | S::KnownUnbound => cond(
            "RequirementsMet",
            false,
            "AgentIsNotApproved",
            "The agent is not approved",
        ),
        _ => cond(
            "RequirementsMet",
            false,
            "AgentNotReady",
            "The agent is not ready to begin the installation",
        ),
    }
}

/// Validated: the host validations, except while it binds or unbinds.
fn agent_validated(s: HostStatus, validations: Option<&serde_json::Value>) -> Cond {
    use HostStatus as S;
    match s {
        S::Binding => cond(
            "Validated",
            false,
            "Binding",
            "The agent is currently binding to a cluster deployment",
        ),
        S::Unbinding | S::UnbindingPendingUserAction => cond(
            "Validated",
            false,
            "Unbinding",
            "The agent is currently unbinding from a cluster deployment",
        ),
        _ => validated("agent", validations_of(validations)),
    }
}

/// Installed: how far the installation went.
fn agent_installed(s: HostStatus, info: &str) -> Cond {
    use HostStatus as S;
    match s {
        S::Installed | S::AddedToExistingCluster => cond(
            "Installed",
            true,
            "InstallationCompleted",
            format!("The installation has completed: {info}"),
        ),
        S::Error => cond(
            "Installed",
            false,
            "InstallationFailed",
            format!("The installation has failed: {info}"),
        ),
        s if INSTALLING_HOST.contains(&s) => cond(
            "Installed",
            false,
            "InstallationInProgress",
            format!("The installation is in progress: {info}"),
        ),
        _ => cond(
            "Installed",
            false,
            "InstallationNotStarted",
            "The installation has not yet started",
        ),
    }
}

/// Bound: whether the agent is bound to a cluster deployment.
fn agent_bound(host: &HostSnapshot) -> Cond {
    use HostStatus as S;
    let s = host.status;
    match s {
        S::Binding => cond(
            "Bound",
            false,
            "Binding",
            "The agent is currently binding to a cluster deployment",
        ),
        S::Unbinding => cond(
            "Bound",
            false,
            "Unbinding",
            "The agent is currently unbinding from a cluster deployment",
        ),
        S::UnbindingPendingUserAction => cond(
            "Bound",
            false,
            "UnbindingPendingUserAction",
            "The agent is currently unbinding; Pending host reboot from infraenv image",
        ),
        _ if host.is_bound() => cond(
            "Bound",
            true,
            "Bound",
            "The agent is bound to a cluster deployment",
        ),
        _ => cond(
            "Bound",
            false,
            "Unbound",
            "The agent is not bound to any cluster deployment",
        ),
    }
}

/// The Agent status for a host. `previous` keeps condition transition times.
pub fn agent_status(
    host: &HostSnapshot,
    cluster: Option<&ClusterSnapshot>,
    extra: Option<&HostExtra>,
    spec_error: Option<&str>,
    previous: &[OpenShiftCondition],
    events_url: Option<String>,
    now: Timestamp,
) -> AgentStatus {
    let validations = extra
        .and_then(|e| e.validations.as_ref())
        .map(|v| v.to_validations_info());
    let sno = cluster.is_some_and(|c| c.is_sno());
    let role = host.install_role();
    let progress = &host.progress;
    AgentStatus {
        bootstrap: host.bootstrap,
        role: agent_role(host.effective_role()),
        inventory: host
            .inventory
            .as_ref()
            .map(|i| agent_inventory(i, host.checked_in_at))
            .unwrap_or_default(),
        progress: HostProgressInfo {
            current_stage: progress
                .current_stage
                .map(|s| s.as_str().to_string())
                .unwrap_or_default(),
            progress_stages: if progress.current_stage.is_some() {
                stages_for(role, sno)
                    .iter()
                    .map(|s| s.as_str().into())
                    .collect()
            } else {
                Vec::new()
            },
            progress_info: progress.progress_info.clone(),
            installation_percentage: progress.installation_percentage.into(),
            stage_start_time: progress.stage_started_at.map(Time),
            stage_update_time: progress.stage_updated_at.map(Time),
        },
        ntp_sources: host
            .ntp_sources
            .iter()
            .map(|n| HostNtpSource {
                source_name: n.source_name.clone(),
                source_state: n.source_state.clone(),
            })
            .collect(),
        conditions: openshift_conditions(
            &agent_conditions(host, validations.as_ref(), spec_error),
            previous,
            now,
        ),
        debug_info: DebugInfo {
            events_url,
            logs_url: None,
            state: Some(host.status.as_str().into()),
            state_info: Some(host.status_info.clone()),
        },
        validations_info: validations_of(validations.as_ref()).unwrap_or_default(),
        installation_disk_id: host
            .installation_disk_id
            .clone()
            .or_else(|| installation_disk(host, 0).map(|d| d.id.clone())),
        deprovision_info: None,
        csr_status: Default::default(),
        kind: Some(host.kind.as_str().into()),
    }
}

const INSTALLING_CLUSTER: &[ClusterStatus] = &[
    ClusterStatus::PreparingForInstallation,
    ClusterStatus::Installing,
    ClusterStatus::Finalizing,
    ClusterStatus::InstallingPendingUserAction,
];

/// AgentClusterInstall conditions.
pub fn aci_conditions(rec: &ClusterRecord, spec_error: Option<&str>) -> Vec<Cond> {
    let info_json = rec.validations.as_ref().map(|v| v.to_validations_info());
    let mut out = vec![
        spec_synced(spec_error),
        validated("cluster", validations_of(info_json.as_ref())),
        aci_requirements_met(rec),
        aci_completed(rec),
        aci_failed(rec.snapshot.status, &rec.snapshot.status_info),
        aci_stopped(rec.snapshot.status),
    ];
    out.extend(crate::service::controllers::unsupported::fields_supported(
        &rec.settings.unsupported_fields,
    ));
    if let Some(e) = &rec.preparation_error {
        out.push(cond(
            "LastInstallationPreparationFailed",
            true,
            "InstallationPreparationFailed",
            format!("The installation preparation failed: {e}"),
        ));
    }
    out
}

/// RequirementsMet: the cluster's requirements decision, as upstream names it.
fn aci_requirements_met(rec: &ClusterRecord) -> Cond {
    match &rec.requirements {
        Some(d) => cond(
            "RequirementsMet",
            matches!(
                d.reason,
                RequirementsReason::ClusterIsReady | RequirementsReason::ClusterAlreadyInstalling
            ),
            // The hold reason belongs to Completed upstream; RequirementsMet stays ClusterIsReady.
            match d.reason {
                RequirementsReason::InstallationOnHold => "ClusterIsReady",
                r => r.as_str(),
            },
            match d.reason {
                RequirementsReason::InstallationOnHold => {
                    "The cluster is ready to begin the installation".to_string()
                }
                _ => d.message.clone(),
            },
        ),
        None => cond(
            "RequirementsMet",
            false,
            "ClusterNotReady",
            "The cluster is not ready to begin the installation",
        ),
    }
}

/// Completed: how far the installation went, or that it is on hold.
fn aci_completed(rec: &ClusterRecord) -> Cond {
    use ClusterStatus as C;
    let info = &rec.snapshot.status_info;
    match rec.snapshot.status {
        C::Installed | C::AddingHosts => cond(
            "Completed",
            true,
            "InstallationCompleted",
            format!("The installation has completed: {info}"),
        ),
        C::Error => cond(
            "Completed",
            false,
            "InstallationFailed",
            format!("The installation has failed: {info}"),
        ),
        s if INSTALLING_CLUSTER.contains(&s) => cond(
            "Completed",
            false,
            "InstallationInProgress",
            format!("The installation is in progress: {info}"),
        ),
        _ if rec.settings.hold => cond(
            "Completed",
            false,
            "InstallationOnHold",
            "The installation is on hold. To unhold set holdInstallation to false",
        ),
        _ => cond(
            "Completed",
            false,
            "InstallationNotStarted",
            "The installation has not yet started",
        ),
    }
}

/// Failed: whether the installation failed.
fn aci_failed(status: ClusterStatus, info: &str) -> Cond {
    use ClusterStatus as C;
    match status {
        C::Error => cond(
            "Failed",
            true,
            "InstallationFailed",
            format!("The installation failed: {info}"),
        ),
        _ => cond(
            "Failed",
            false,
            "InstallationNotFailed",
            "The installation has not failed",
        ),
    }
}

/// Stopped: whether the installation stopped, and why.
fn aci_stopped(status: ClusterStatus) -> Cond {
    use ClusterStatus as C;
    match status {
        C::Error => cond(
            "Stopped",
            true,
            "InstallationFailed",
            "The installation has stopped due to error",
        ),
        C::Cancelled => cond(
            "Stopped",
            true,
            "InstallationCancelled",
            "The installation has stopped because it was cancelled",
        ),
        C::Installed | C::AddingHosts => cond(
            "Stopped",
            true,
            "InstallationCompleted",
            "The installation has stopped because it completed successfully",
        ),
        _ => cond(
            "Stopped",
            false,
            "InstallationNotStopped",
            "The installation is waiting to start or in progress",
        ),
    }
}

/// The AgentClusterInstall status for a cluster record.
pub fn aci_status(
    rec: &ClusterRecord,
    cfg: &Config,
    spec_error: Option<&str>,
    previous: &[ClusterInstallCondition],
    now: Timestamp,
) -> AgentClusterInstallStatus {
    let c = &rec.snapshot;
    let views = HostView::from_cluster(c, cfg);
    let day1 = || {
        c.hosts
            .iter()
            .zip(views.iter())
            .filter(|(h, _)| !h.is_day2())
    };
    let ready = |h: &HostSnapshot| {
        (h.status == HostStatus::Known && h.approved)
            || INSTALLING_HOST.contains(&h.status)
            || matches!(
                h.status,
                HostStatus::Installed | HostStatus::AddedToExistingCluster
            )
    };
    let count = |roles: &[HostRole], only_ready: bool| -> i32 {
        day1()
            .filter(|(h, v)| roles.contains(&v.role) && (!only_ready || ready(h)))
            .count() as i32
    };
    let masters = [HostRole::Master, HostRole::Bootstrap];
    AgentClusterInstallStatus {
        conditions: hive_conditions(&aci_conditions(rec, spec_error), previous, now),
        progress: ClusterProgressInfo {
            total_percentage: cluster_progress(c).into(),
        },
        control_plane_agents_discovered: count(&masters, false),
        control_plane_agents_ready: count(&masters, true),
        worker_agents_discovered: count(&[HostRole::Worker], false),
        worker_agents_ready: count(&[HostRole::Worker], true),
        arbiter_agents_discovered: count(&[HostRole::Arbiter], false),
        arbiter_agents_ready: count(&[HostRole::Arbiter], true),
        connectivity_majority_groups: None,
        machine_network: c
            .machine_networks
            .iter()
            .map(|cidr| MachineNetworkEntry { cidr: cidr.clone() })
            .collect(),
        debug_info: DebugInfo {
            events_url: None,
            logs_url: None,
            state: Some(c.status.as_str().into()),
            state_info: Some(c.status_info.clone()),
        },
        api_vip: c.api_vips.first().cloned(),
        api_vips: c.api_vips.clone(),
        ingress_vip: c.ingress_vips.first().cloned(),
        ingress_vips: c.ingress_vips.clone(),
        user_managed_networking: Some(c.umn()),
        platform_type: Some(match c.platform {
            PlatformType::BareMetal => agentclusterinstall::PlatformType::BareMetal,
            PlatformType::None => agentclusterinstall::PlatformType::None,
            PlatformType::External | PlatformType::Oci => {
                agentclusterinstall::PlatformType::External
            }
            PlatformType::VSphere => agentclusterinstall::PlatformType::VSphere,
            PlatformType::Nutanix => agentclusterinstall::PlatformType::Nutanix,
        }),
        validations_info: validations_of(
            rec.validations
                .as_ref()
                .map(|v| v.to_validations_info())
                .as_ref(),
        )
        .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::persister::inventory::inventory_labels;

    /// What a real agent reports (snake_case, as upstream's models): every part must reach
    /// the Agent CR; a single mistyped field once dropped the whole inventory.
    #[test]
    fn a_full_agent_inventory_reaches_the_agent_cr() {
        let inv: Inventory = serde_json::from_value(serde_json::json!({
            "hostname": "master-0",
            "bmc_address": "0.0.0.0",
            "cpu": {"count": 4, "frequency": 2400.5, "flags": ["vmx"], "model_name": "Xeon", "architecture": "x86_64"},
            "memory": {"physical_bytes": 17179869184u64, "usable_bytes": 16179869184u64},
            "interfaces": [{"name": "eth0", "mac_address": "52:54:00:aa:bb:01",
                "ipv4_addresses": ["192.168.111.10/24"], "ipv6_addresses": [], "mtu": 1500,
                "speed_mbps": 1000, "has_carrier": true, "flags": ["up"], "type": "physical"}],
            "disks": [{"id": "/dev/disk/by-id/wwn-0x1", "name": "sda", "path": "/dev/sda",
                "by_id": "/dev/disk/by-id/wwn-0x1", "drive_type": "SSD", "size_bytes": 120000000000u64,
                "bootable": true, "installation_eligibility": {"eligible": true, "not_eligible_reasons": []}}],
            "system_vendor": {"manufacturer": "Red Hat", "product_name": "KVM", "serial_number": "s1", "virtual": true},
            "boot": {"current_boot_mode": "uefi"},
            "routes": [{"family": 2, "interface": "eth0", "gateway": "192.168.111.1", "destination": "0.0.0.0", "metric": 100}],
            "timestamp": 1800000000
        }))
        .unwrap();
        let cr = agent_inventory(&inv, None);
        assert_eq!(cr.interfaces.len(), 1, "{cr:?}");
        assert_eq!(cr.interfaces[0].mac_address, "52:54:00:aa:bb:01");
        assert_eq!(cr.cpu.clock_megahertz, 2400);
        assert_eq!(cr.disks.len(), 1);
        assert_eq!(cr.hostname.as_deref(), Some("master-0"));
    }

    #[test]
    fn inventory_labels_follow_upstream_keys() {
        let inv = Inventory::parse(
            br#"{"cpu":{"architecture":"x86_64","flags":["vmx"]},
                "disks":[{"drive_type":"SSD"}],
                "system_vendor":{"manufacturer":"Red Hat","product_name":"KVM","virtual":true}}"#,
        );
        let l = inventory_labels(&inv);
        let get = |k: &str| l[&format!("inventory.agent-install.openshift.io/{k}")].clone();
        assert_eq!(get("storage-hasnonrotationaldisk"), "true");
        assert_eq!(get("cpu-virtenabled"), "true");
        assert_eq!(get("host-manufacturer"), "Red_Hat");
        assert_eq!(get("host-isvirtual"), "true");
    }

    fn host(status: HostStatus, approved: bool) -> HostSnapshot {
        let mut h = HostSnapshot::new_registered("h", "ie", None, Timestamp::UNIX_EPOCH);
        h.status = status;
        h.approved = approved;
        h.cluster_id = Some("c".into());
        h
    }

    fn find<'a>(c: &'a [Cond], t: &str) -> &'a Cond {
        c.iter().find(|c| c.type_ == t).unwrap()
    }

    #[test]
    fn agent_requirements_follow_state_and_approval() {
        let c = agent_conditions(&host(HostStatus::Known, false), None, None);
        assert_eq!(find(&c, "RequirementsMet").reason, "AgentIsNotApproved");
        let c = agent_conditions(&host(HostStatus::Known, true), None, None);
        let r = find(&c, "RequirementsMet");
        assert_eq!((r.status, r.reason), ("True", "AgentIsReady"));
        let c = agent_conditions(&host(HostStatus::Installing, true), None, None);
        assert_eq!(find(&c, "RequirementsMet").reason, "AgentAlreadyInstalling");
        assert_eq!(find(&c, "Installed").reason, "InstallationInProgress");
        assert_eq!(find(&c, "Bound").reason, "Bound");
        assert_eq!(find(&c, "Validated").status, "Unknown");
    }

    #[test]
    fn agent_validation_and_spec_conditions() {
        let v = serde_json::json!({"hardware": [{"id": "has-min-cpu-cores", "status": "failure", "message": "too few"}]});
        let c = agent_conditions(
            &host(HostStatus::Insufficient, true),
            Some(&v),
            Some("bad args"),
        );
        let val = find(&c, "Validated");
        assert_eq!(
            (val.reason, val.message.as_str()),
            (
                "ValidationsFailing",
                "The agent's validations are failing: too few"
            )
        );
        let spec = find(&c, "SpecSynced");
        assert_eq!((spec.status, spec.reason), ("False", "InputError"));
        let c = agent_conditions(&host(HostStatus::Disconnected, true), None, None);
        assert_eq!(find(&c, "Connected").reason, "AgentIsDisconnected");
    }

    #[test]
    fn transition_time_is_kept_while_status_holds() {
        let t0 = Timestamp::from_second(100).unwrap();
        let t1 = Timestamp::from_second(200).unwrap();
        let c = vec![cond("Connected", true, "AgentIsConnected", "x")];
        let first = openshift_conditions(&c, &[], t0);
        let again = openshift_conditions(&c, &first, t1);
        assert_eq!(again[0].last_transition_time, Some(Time(t0)));
        let flipped = openshift_conditions(
            &[cond("Connected", false, "AgentIsDisconnected", "y")],
            &first,
            t1,
        );
        assert_eq!(flipped[0].last_transition_time, Some(Time(t1)));
    }

    #[test]
    fn aci_completed_and_stopped_follow_cluster_state() {
        let mut rec = ClusterRecord::new(
            ClusterSnapshot::new("c", "c", Timestamp::UNIX_EPOCH),
            Default::default(),
        );
        rec.snapshot.status = ClusterStatus::Installed;
        rec.snapshot.status_info = "Cluster is installed".into();
        let c = aci_conditions(&rec, None);
        let done = find(&c, "Completed");
        assert_eq!(
            (done.status, done.reason),
            ("True", "InstallationCompleted")
        );
        assert_eq!(
            done.message,
            "The installation has completed: Cluster is installed"
        );
        assert_eq!(find(&c, "Stopped").reason, "InstallationCompleted");
        assert_eq!(find(&c, "Failed").reason, "InstallationNotFailed");
        rec.snapshot.status = ClusterStatus::Ready;
        rec.settings.hold = true;
        let c = aci_conditions(&rec, None);
        assert_eq!(find(&c, "Completed").reason, "InstallationOnHold");
        assert_eq!(find(&c, "Stopped").reason, "InstallationNotStopped");
    }

    #[test]
    fn aci_fields_supported_only_while_something_is_ignored() {
        let mut rec = ClusterRecord::new(
            ClusterSnapshot::new("c", "c", Timestamp::UNIX_EPOCH),
            Default::default(),
        );
        let types = |c: &[Cond]| c.iter().map(|c| c.type_).collect::<Vec<_>>();
        assert!(!types(&aci_conditions(&rec, None)).contains(&"FieldsSupported"));
        rec.settings.unsupported_fields =
            vec!["ClusterDeployment spec.manageDNS is not supported yet".into()];
        let c = aci_conditions(&rec, None);
        let f = find(&c, "FieldsSupported");
        assert_eq!((f.status, f.reason), ("False", "UnsupportedFields"));
        assert!(
            f.message.contains("ClusterDeployment spec.manageDNS"),
            "{}",
            f.message
        );
        // Hive's fields block nothing: SpecSynced stays True.
        assert_eq!(find(&c, "SpecSynced").status, "True");
    }
}

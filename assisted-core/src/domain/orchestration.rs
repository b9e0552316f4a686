//! Install orchestration: bootstrap selection, the kube-API day-1 auto-start rule, install start
//! and day-2 install selection (roles and schedulable masters: `roles`).

use jiff::Timestamp;

use super::cluster_sm::{
    ClusterEvent, ClusterEventError, ClusterOutcome, apply_cluster_event, apply_cluster_outcome,
};
use super::roles::{HostView, suggest_roles};
use super::snapshot::*;
use super::types::*;

/// Picks the bootstrap host: an existing one, the host owning `BOOTSTRAP_HOST_MAC`, else the
/// last master by id (the SNO master is always bootstrap).
pub fn select_bootstrap<'a>(
    cluster: &'a ClusterSnapshot,
    roles: &[(String, HostRole)],
    cfg: &Config,
) -> Option<&'a str> {
    let day1 = || cluster.hosts.iter().filter(|h| !h.is_day2());
    if let Some(h) = day1().find(|h| h.bootstrap) {
        return Some(&h.id);
    }
    let role_of = |h: &HostSnapshot| {
        roles
            .iter()
            .find(|(id, _)| *id == h.id)
            .map(|(_, r)| *r)
            .unwrap_or_else(|| h.effective_role())
    };
    let mut masters: Vec<&HostSnapshot> =
        day1().filter(|h| role_of(h) == HostRole::Master).collect();
    masters.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(mac) = cfg.bootstrap_host_mac.as_deref()
        && let Some(h) = masters
            .iter()
            .find(|h| h.inventory.as_ref().is_some_and(|i| i.has_mac(mac)))
    {
        return Some(&h.id);
    }
    masters.last().map(|h| h.id.as_str())
}

/// Reason codes of the AgentClusterInstall `RequirementsMet` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequirementsReason {
    ClusterIsReady,
    ClusterNotReady,
    InsufficientAgents,
    UnsyncedAgents,
    UnapprovedAgents,
    ClusterAlreadyInstalling,
    ClusterInstallationStopped,
    InstallationOnHold,
}

impl RequirementsReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClusterIsReady => "ClusterIsReady",
            Self::ClusterNotReady => "ClusterNotReady",
            Self::InsufficientAgents => "InsufficientAgents",
            Self::UnsyncedAgents => "UnsyncedAgents",
            Self::UnapprovedAgents => "UnapprovedAgents",
            Self::ClusterAlreadyInstalling => "ClusterAlreadyInstalling",
            Self::ClusterInstallationStopped => "ClusterInstallationStopped",
            Self::InstallationOnHold => "InstallationOnHold",
        }
    }
}

/// Kube-side inputs to the auto-start rule that are not in the snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutoStartParams {
    /// ACI `holdInstallation` or the CD reconcile-pause annotation.
    pub hold: bool,
    /// Agents whose SpecSynced condition is False.
    pub unsynced_agents: usize,
    /// The AgentClusterInstall's own SpecSynced is False: an input error, or a field set that
    /// is not supported yet. Upstream does not reach its auto-start check after an input
    /// error, so an install never starts from a spec that was not applied.
    pub spec_unsynced: bool,
}

/// The decision and the RequirementsMet reason/message to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoStartDecision {
    pub start: bool,
    pub reason: RequirementsReason,
    pub message: String,
}

impl AutoStartDecision {
    /// Not starting (yet), for `reason`.
    fn wait(reason: RequirementsReason, message: impl Into<String>) -> AutoStartDecision {
        AutoStartDecision {
            start: false,
            reason,
            message: message.into(),
        }
    }
}

/// Kube-API day-1 auto-start: the cluster is `ready`, registered == approved == expected agent
/// count, the (suggested) role counts match exactly, no agent is unsynced, and nothing holds it.
pub fn auto_start_day1(
    cluster: &ClusterSnapshot,
    params: &AutoStartParams,
    cfg: &Config,
) -> AutoStartDecision {
    if let Some(past) = past_start(cluster.status) {
        return past;
    }
    if params.spec_unsynced {
        return AutoStartDecision::wait(
            RequirementsReason::ClusterNotReady,
            "The cluster is not ready to begin the installation: its Spec could not be synced \
             (see the SpecSynced condition)",
        );
    }
    if let Some(waiting) = agents_not_ready(cluster, params, cfg) {
        return waiting;
    }
    if cluster.status != ClusterStatus::Ready {
        return AutoStartDecision::wait(
            RequirementsReason::ClusterNotReady,
            "The cluster is not ready to begin the installation",
        );
    }
    if params.hold {
        return AutoStartDecision::wait(
            RequirementsReason::InstallationOnHold,
            "The installation is on hold. To unhold set holdInstallation to false",
        );
    }
    AutoStartDecision {
        start: true,
        reason: RequirementsReason::ClusterIsReady,
        message: "The cluster is ready to begin the installation".into(),
    }
}

/// The cluster already installs (or installed), or its install stopped: nothing to start.
fn past_start(status: ClusterStatus) -> Option<AutoStartDecision> {
    match status {
        ClusterStatus::PreparingForInstallation
        | ClusterStatus::Installing
        | ClusterStatus::Finalizing
        | ClusterStatus::InstallingPendingUserAction
        | ClusterStatus::Installed
        | ClusterStatus::AddingHosts => Some(AutoStartDecision::wait(
            RequirementsReason::ClusterAlreadyInstalling,
            "The cluster requirements are met",
        )),
        ClusterStatus::Error | ClusterStatus::Cancelled => Some(AutoStartDecision::wait(
            RequirementsReason::ClusterInstallationStopped,
            "The cluster installation stopped",
        )),
        _ => None,
    }
}

/// The day-1 agents are not all there yet: some unsynced, the role counts off, or some
/// unapproved.
fn agents_not_ready(
    cluster: &ClusterSnapshot,
    params: &AutoStartParams,
    cfg: &Config,
) -> Option<AutoStartDecision> {
    if params.unsynced_agents > 0 {
        return Some(AutoStartDecision::wait(
            RequirementsReason::UnsyncedAgents,
            format!(
                "The installation is pending on the spec sync of {} agents",
                params.unsynced_agents
            ),
        ));
    }
    let views = HostView::from_cluster(cluster, cfg);
    let day1: Vec<(&HostSnapshot, &HostView)> = cluster
        .hosts
        .iter()
        .zip(views.iter())
        .filter(|(_, v)| !v.day2)
        .collect();
    let count = |r: HostRole| day1.iter().filter(|(_, v)| v.role == r).count() as u32;
    let (m, a, w) = (
        count(HostRole::Master) + count(HostRole::Bootstrap),
        count(HostRole::Arbiter),
        count(HostRole::Worker),
    );
    let expected = cluster.control_plane_count + cluster.worker_count + cluster.arbiter_count;
    let required = (
        cluster.control_plane_count,
        cluster.arbiter_count,
        cluster.worker_count,
    );
    if day1.len() as u32 != expected || (m, a, w) != required {
        return Some(AutoStartDecision::wait(
            RequirementsReason::InsufficientAgents,
            format!(
                "The cluster currently requires exactly {} master agents, {} arbiter agents and {} worker agents, but currently registered {} master agents, {} arbiter agents and {} worker agents",
                cluster.control_plane_count, cluster.arbiter_count, cluster.worker_count, m, a, w
            ),
        ));
    }
    let unapproved = day1.iter().filter(|(h, _)| !h.approved).count();
    (unapproved > 0).then(|| {
        AutoStartDecision::wait(
            RequirementsReason::UnapprovedAgents,
            format!("The installation is pending on the approval of {unapproved} agents"),
        )
    })
}

/// What `InstallClusterInternal` decides before the async preparation.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallPlan {
    /// ready → preparing-for-installation.
    pub cluster: ClusterOutcome,
    /// Roles fixed for auto-assign hosts (host id, role).
    pub roles: Vec<(String, HostRole)>,
    pub bootstrap_host_id: Option<String>,
    pub schedulable_masters_forced_true: bool,
}

/// Starts a day-1 install: assigns roles, picks the bootstrap host, moves the cluster to
/// preparing-for-installation. Fails unless the cluster is `ready`.
pub fn start_install(
    cluster: &ClusterSnapshot,
    now: Timestamp,
    cfg: &Config,
) -> Result<InstallPlan, ClusterEventError> {
    let out = apply_cluster_event(cluster, ClusterEvent::PrepareForInstallation, now, cfg)?;
    let roles: Vec<(String, HostRole)> = suggest_roles(cluster, cfg)
        .into_iter()
        .map(|(id, r)| (id.to_string(), r))
        .collect();
    let bootstrap = select_bootstrap(cluster, &roles, cfg).map(str::to_string);
    let workers = cluster
        .hosts
        .iter()
        .filter(|h| !h.is_day2())
        .filter(|h| {
            let r = roles
                .iter()
                .find(|(id, _)| *id == h.id)
                .map(|(_, r)| *r)
                .unwrap_or(h.effective_role());
            r == HostRole::Worker
        })
        .count();
    Ok(InstallPlan {
        cluster: out,
        roles,
        bootstrap_host_id: bootstrap,
        schedulable_masters_forced_true: workers < 2,
    })
}

/// Applies an [`InstallPlan`] to the snapshot: auto-assigned roles are fixed as the suggested
/// (effective) role, so the requested role (Agent spec) is never rewritten; bootstrap flagged.
pub fn apply_install_plan(cluster: &mut ClusterSnapshot, plan: &InstallPlan, now: Timestamp) {
    for h in cluster.hosts.iter_mut() {
        if let Some((_, r)) = plan.roles.iter().find(|(id, _)| *id == h.id) {
            h.suggested_role = Some(*r);
        }
        h.bootstrap = plan.bootstrap_host_id.as_deref() == Some(h.id.as_str());
    }
    apply_cluster_outcome(cluster, &plan.cluster, now);
}

/// Day-2 hosts the service should install now (known and approved, in an adding-hosts cluster).
pub fn day2_hosts_to_install(cluster: &ClusterSnapshot) -> Vec<&str> {
    if cluster.status != ClusterStatus::AddingHosts {
        return Vec::new();
    }
    cluster
        .hosts
        .iter()
        .filter(|h| h.is_day2() && h.approved && h.status == HostStatus::Known)
        .map(|h| h.id.as_str())
        .collect()
}

/// Overall install progress in percent (average of the day-1 hosts' percentages).
pub fn cluster_progress(cluster: &ClusterSnapshot) -> u8 {
    let hosts: Vec<&HostSnapshot> = cluster.hosts.iter().filter(|h| !h.is_day2()).collect();
    if cluster.status == ClusterStatus::Installed {
        return 100;
    }
    if hosts.is_empty() {
        return 0;
    }
    let sum: u32 = hosts
        .iter()
        .map(|h| h.progress.installation_percentage as u32)
        .sum();
    (sum / hosts.len() as u32) as u8
}

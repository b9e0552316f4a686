//! Cluster state machine as a declarative transition table (first matching row wins).

use jiff::Timestamp;

use super::host_sm::{HostOutcome, apply_host_outcome, refresh_host_in};
use super::roles::{HostView, has_enough_masters_and_workers};
use super::snapshot::*;
use super::state_machine::{self, Machine, Transition, step, transition};
use super::types::*;
use super::validations::*;

/// Cluster events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterEvent {
    CancelInstallation,
    ResetCluster,
    PrepareForInstallation,
    RefreshCluster,
}

/// Side effects for the caller (see [`apply_cluster_outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterEffect {
    /// The install preparation (install-config, ignitions) should start now.
    PreparationStarted,
    /// Hosts were all prepared: the install starts (record install_started_at).
    InstallationStarted,
    FinalizingStarted,
    /// Clear install bookkeeping (reset).
    ResetInstall,
    /// installed → adding-hosts: the cluster becomes an AddHostsCluster.
    BecameDay2,
}

/// The cluster machine's types for the shared [`state_machine`](super::state_machine) engine.
pub struct ClusterMachine;

impl Machine for ClusterMachine {
    type Event = ClusterEvent;
    type Status = ClusterStatus;
    type Effect = ClusterEffect;
    type Ctx<'a> = ClusterCtx<'a>;
    fn status(c: &ClusterCtx<'_>) -> ClusterStatus {
        c.cluster.status
    }
    fn status_info<'c>(c: &'c ClusterCtx<'_>) -> &'c str {
        &c.cluster.status_info
    }
}

/// Destination of a cluster row.
pub type ClusterDest = state_machine::Dest<ClusterStatus>;
/// How a cluster row sets status_info.
pub type ClusterInfo = state_machine::Info<ClusterMachine>;

/// What guards see: the cluster, the latest host views and fresh validations.
pub struct ClusterCtx<'a> {
    pub cluster: &'a ClusterSnapshot,
    pub hosts: &'a [HostView],
    pub v: &'a ClusterValidations,
    pub now: Timestamp,
    pub cfg: &'a Config,
}

/// One row of the cluster transition table.
pub type ClusterTransition = Transition<ClusterMachine>;

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterOutcome {
    pub status: ClusterStatus,
    pub status_info: String,
    pub changed: bool,
    pub transition: Option<&'static str>,
    pub effects: Vec<ClusterEffect>,
    pub validations: Option<ClusterValidations>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterEventError {
    #[error("event {event:?} is not allowed for a cluster in status {status}")]
    NotAllowed {
        status: ClusterStatus,
        event: ClusterEvent,
    },
}

pub const CLUSTER_INFO_PENDING_INPUT: &str = "User input required";
pub const CLUSTER_INFO_INSUFFICIENT: &str = "Cluster is not ready for install";
pub const CLUSTER_INFO_READY: &str = "Cluster ready to be installed";
pub const CLUSTER_INFO_PREPARING: &str = "Preparing cluster for installation";
pub const CLUSTER_INFO_PREPARE_TIMEOUT: &str = "Preparing cluster for installation has timed out";
pub const CLUSTER_INFO_INSTALLING: &str = "Installation in progress";
pub const CLUSTER_INFO_HOST_LEFT_PREPARING: &str =
    "At least one host has stopped preparing for installation";
pub const CLUSTER_INFO_PREPARE_FAILED: &str = "Cluster failed to prepare for installation";
pub const CLUSTER_INFO_FINALIZING: &str = "Finalizing cluster installation";
pub const CLUSTER_INFO_HOSTS_IN_ERROR: &str = "cluster has hosts in error";
pub const CLUSTER_INFO_PENDING_USER_ACTION: &str = "Cluster has hosts pending user action";
pub const CLUSTER_INFO_FINALIZING_TIMEOUT: &str = "Cluster installation timeout while finalizing";
pub const CLUSTER_INFO_INSTALLED: &str = "Cluster is installed";
pub const CLUSTER_INFO_INSTALLED_DEGRADED: &str = "Cluster is installed but degraded";
pub const CLUSTER_INFO_INSTALLED_WORKERS_MISSING: &str =
    "Cluster is installed but some workers did not join";
pub const CLUSTER_INFO_CANCELLED: &str = "Canceled cluster installation";
pub const CLUSTER_INFO_RESET: &str = "Reset cluster installation";
pub const CLUSTER_INFO_ADDING_HOSTS: &str = "Cluster is ready to add hosts";

use ClusterStatus as C;
use HostStatus as H;

fn day1<'a>(c: &ClusterCtx<'a>) -> impl Iterator<Item = &'a HostView> {
    c.hosts.iter().filter(|h| !h.day2)
}
fn any_host(c: &ClusterCtx, s: HostStatus) -> bool {
    day1(c).any(|h| h.status == s)
}
fn enough(c: &ClusterCtx, statuses: &[HostStatus]) -> bool {
    has_enough_masters_and_workers(c.cluster, c.hosts, statuses)
}
const ACTIVE: &[HostStatus] = &[
    H::Installing,
    H::InstallingInProgress,
    H::Installed,
    H::InstallingPendingUserAction,
    H::PreparingSuccessful,
];

fn g_pending_input(c: &ClusterCtx) -> bool {
    !c.v.all_ok(CLUSTER_PENDING_GATE)
}
fn g_not_ready(c: &ClusterCtx) -> bool {
    !c.v.results.iter().all(|r| r.ok())
}
fn always(_: &ClusterCtx) -> bool {
    true
}
fn g_prepare_timeout(c: &ClusterCtx) -> bool {
    elapsed(c.now, c.cluster.status_updated_at) > c.cfg.cluster_prepare_timeout
        && !any_host(c, H::PreparingFailed)
}
fn g_all_prepared(c: &ClusterCtx) -> bool {
    day1(c).next().is_some()
        && day1(c).all(|h| h.status == H::PreparingSuccessful)
        && c.cluster.preparation == PreparationStatus::Success
}
/// A host dropped out of preparation. `known` does not count: right after the install starts
/// the host monitor may not have moved it to preparing yet.
fn g_host_left_preparing(c: &ClusterCtx) -> bool {
    day1(c).any(|h| {
        !matches!(
            h.status,
            H::Known | H::PreparingForInstallation | H::PreparingSuccessful | H::PreparingFailed
        )
    })
}
fn g_preparation_failed(c: &ClusterCtx) -> bool {
    any_host(c, H::PreparingFailed) || c.cluster.preparation == PreparationStatus::Failed
}
fn g_installed_enough(c: &ClusterCtx) -> bool {
    enough(c, &[H::Installed]) && !any_host(c, H::InstallingPendingUserAction)
}
fn g_not_enough_active(c: &ClusterCtx) -> bool {
    !enough(c, ACTIVE)
}
fn g_host_pending(c: &ClusterCtx) -> bool {
    any_host(c, H::InstallingPendingUserAction)
}
fn g_pua_resolved_finalize(c: &ClusterCtx) -> bool {
    !g_host_pending(c) && enough(c, &[H::Installed])
}
fn g_pua_resolved(c: &ClusterCtx) -> bool {
    !g_host_pending(c)
}
fn install_elapsed(c: &ClusterCtx) -> std::time::Duration {
    let since = c
        .cluster
        .install_started_at
        .unwrap_or(c.cluster.status_updated_at);
    elapsed(c.now, since)
}
fn g_pua_timeout(c: &ClusterCtx) -> bool {
    install_elapsed(c) > c.cfg.cluster_install_timeout
}
fn g_soft_install_timeout(c: &ClusterCtx) -> bool {
    c.cfg.soft_timeouts && install_elapsed(c) > c.cfg.cluster_install_timeout
}
fn g_finalizing_timeout(c: &ClusterCtx) -> bool {
    let since = c
        .cluster
        .finalizing_started_at
        .unwrap_or(c.cluster.status_updated_at);
    !c.cfg.soft_timeouts && elapsed(c.now, since) > c.cfg.finalizing_timeout
}
/// Hard stage timeouts of the failing finalizing stages (OLM stages never fail the cluster).
fn g_finalizing_stage_timeout(c: &ClusterCtx) -> bool {
    let limit = match c.cluster.finalizing_stage {
        Some(FinalizingStage::WaitingForClusterOperators) => 10 * 60,
        Some(FinalizingStage::AddingRouterCa) => 70,
        _ => return false,
    };
    let since = c
        .cluster
        .finalizing_stage_started_at
        .unwrap_or(c.cluster.status_updated_at);
    !c.cfg.soft_timeouts && elapsed(c.now, since).as_secs() > limit * 60
}
fn operators_done(c: &ClusterCtx) -> bool {
    c.cluster.monitored_operators.iter().all(|o| match o.kind {
        OperatorType::Builtin => {
            (o.name == "cvo" && !c.cfg.check_cluster_version)
                || o.status == Some(OperatorStatus::Available)
        }
        OperatorType::Olm => matches!(
            o.status,
            Some(OperatorStatus::Available | OperatorStatus::Failed)
        ),
    })
}
fn g_finalized(c: &ClusterCtx) -> bool {
    day1(c).all(|h| matches!(h.status, H::Installed | H::Error))
        && enough(c, &[H::Installed])
        && c.cluster.kubeconfig_uploaded
        && operators_done(c)
}

fn i_installed(c: &ClusterCtx) -> String {
    let degraded = c
        .cluster
        .monitored_operators
        .iter()
        .any(|o| o.status == Some(OperatorStatus::Failed));
    if degraded {
        CLUSTER_INFO_INSTALLED_DEGRADED.into()
    } else if any_host(c, H::Error) {
        CLUSTER_INFO_INSTALLED_WORKERS_MISSING.into()
    } else {
        CLUSTER_INFO_INSTALLED.into()
    }
}
fn i_install_timeout(c: &ClusterCtx) -> String {
    format!(
        "cluster installation timeout ({} minutes) has expired",
        c.cfg.cluster_install_timeout.as_secs() / 60
    )
}
fn i_stage_timeout(c: &ClusterCtx) -> String {
    let st = c.cluster.finalizing_stage.map(|s| s.as_str()).unwrap_or("");
    format!("{CLUSTER_INFO_FINALIZING_TIMEOUT}: stage {st} timed out")
}

use ClusterEffect as E;
use ClusterEvent as Ev;
use state_machine::Dest::{Same, To};

/// `crow!(name, why, event, sources, guard, dest, info[, effects])`: a [`transition!`] row.
macro_rules! crow {
    ($($row:tt)*) => { transition!(Ev, $($row)*) };
}

const PRE: &[ClusterStatus] = &[C::PendingForInput, C::Ready, C::Insufficient];

/// The cluster transition table, in upstream registration order.
pub static CLUSTER_TRANSITIONS: &[ClusterTransition] = &[
    crow!(
        "cancel-installation",
        "The user stopped an install under way; only a reset lets the cluster install again",
        CancelInstallation,
        &[
            C::Installing,
            C::InstallingPendingUserAction,
            C::Error,
            C::Finalizing
        ],
        always,
        To(C::Cancelled),
        ClusterInfo::Text(CLUSTER_INFO_CANCELLED)
    ),
    crow!(
        "cancel-preparation",
        "Nothing is installed while preparing, so a cancel just goes back to ready",
        CancelInstallation,
        &[C::PreparingForInstallation],
        always,
        To(C::Ready),
        ClusterInfo::Text(CLUSTER_INFO_CANCELLED),
        &[E::ResetInstall]
    ),
    crow!(
        "reset",
        "The user retries after a failed or cancelled install; hosts must be rediscovered first",
        ResetCluster,
        &[
            C::PreparingForInstallation,
            C::Installing,
            C::InstallingPendingUserAction,
            C::Error,
            C::Cancelled,
            C::Finalizing
        ],
        always,
        To(C::Insufficient),
        ClusterInfo::Text(CLUSTER_INFO_RESET),
        &[E::ResetInstall]
    ),
    crow!(
        "prepare-for-installation",
        "Install was requested for a ready cluster: artifacts and host checks come first",
        PrepareForInstallation,
        &[C::Ready],
        always,
        To(C::PreparingForInstallation),
        ClusterInfo::Text(CLUSTER_INFO_PREPARING),
        &[E::PreparationStarted]
    ),
    crow!(
        "refresh-pending-input",
        "A required setting (networks, VIPs, domain, pull secret) is missing: the user must act",
        RefreshCluster,
        PRE,
        g_pending_input,
        To(C::PendingForInput),
        ClusterInfo::Text(CLUSTER_INFO_PENDING_INPUT)
    ),
    crow!(
        "refresh-insufficient",
        "Some cluster check fails, e.g. too few ready hosts or conflicting networks",
        RefreshCluster,
        PRE,
        g_not_ready,
        To(C::Insufficient),
        ClusterInfo::Text(CLUSTER_INFO_INSUFFICIENT)
    ),
    crow!(
        "refresh-ready",
        "Every cluster validation passes, so the install may start",
        RefreshCluster,
        PRE,
        always,
        To(C::Ready),
        ClusterInfo::Text(CLUSTER_INFO_READY)
    ),
    crow!(
        "refresh-prepare-timeout",
        "Preparation hung without a host failing; go back to ready so install can be retried",
        RefreshCluster,
        &[C::PreparingForInstallation],
        g_prepare_timeout,
        To(C::Ready),
        ClusterInfo::Text(CLUSTER_INFO_PREPARE_TIMEOUT),
        &[E::ResetInstall]
    ),
    crow!(
        "refresh-prepared-to-installing",
        "Artifacts are ready and every host passed preparation: hosts may write their disks",
        RefreshCluster,
        &[C::PreparingForInstallation],
        g_all_prepared,
        To(C::Installing),
        ClusterInfo::Text(CLUSTER_INFO_INSTALLING),
        &[E::InstallationStarted]
    ),
    crow!(
        "refresh-host-left-preparing",
        "A host dropped out of preparation, so the cluster can't install with this host set",
        RefreshCluster,
        &[C::PreparingForInstallation],
        g_host_left_preparing,
        To(C::Insufficient),
        ClusterInfo::Text(CLUSTER_INFO_HOST_LEFT_PREPARING),
        &[E::ResetInstall]
    ),
    crow!(
        "refresh-preparation-failed",
        "A host failed its checks or the artifacts failed; fix it and start again from ready",
        RefreshCluster,
        &[C::PreparingForInstallation],
        g_preparation_failed,
        To(C::Ready),
        ClusterInfo::Text(CLUSTER_INFO_PREPARE_FAILED),
        &[E::ResetInstall]
    ),
    crow!(
        "refresh-installing-to-finalizing",
        "Enough hosts are installed; what remains is waiting for the cluster operators",
        RefreshCluster,
        &[C::Installing],
        g_installed_enough,
        To(C::Finalizing),
        ClusterInfo::Text(CLUSTER_INFO_FINALIZING),
        &[E::FinalizingStarted]
    ),
    crow!(
        "refresh-installing-error",
        "So many hosts failed that the required masters and workers can't be reached",
        RefreshCluster,
        &[C::Installing],
        g_not_enough_active,
        To(C::Error),
        ClusterInfo::Text(CLUSTER_INFO_HOSTS_IN_ERROR)
    ),
    crow!(
        "refresh-pending-user-action",
        "A host needs the user (usually its boot order), which blocks the cluster",
        RefreshCluster,
        &[C::Installing, C::Finalizing],
        g_host_pending,
        To(C::InstallingPendingUserAction),
        ClusterInfo::Text(CLUSTER_INFO_PENDING_USER_ACTION)
    ),
    crow!(
        "refresh-pua-to-finalizing",
        "The user unblocked the host and enough hosts are now installed",
        RefreshCluster,
        &[C::InstallingPendingUserAction],
        g_pua_resolved_finalize,
        To(C::Finalizing),
        ClusterInfo::Text(CLUSTER_INFO_FINALIZING),
        &[E::FinalizingStarted]
    ),
    crow!(
        "refresh-pua-to-installing",
        "The user unblocked the host, so the install carries on",
        RefreshCluster,
        &[C::InstallingPendingUserAction],
        g_pua_resolved,
        To(C::Installing),
        ClusterInfo::Text(CLUSTER_INFO_INSTALLING)
    ),
    crow!(
        "refresh-pua-error",
        "While waiting for the user, so many hosts failed that the cluster can't succeed",
        RefreshCluster,
        &[C::InstallingPendingUserAction],
        g_not_enough_active,
        To(C::Error),
        ClusterInfo::Text(CLUSTER_INFO_HOSTS_IN_ERROR)
    ),
    crow!(
        "refresh-pua-timeout",
        "The user did not act before the overall install timeout",
        RefreshCluster,
        &[C::InstallingPendingUserAction],
        g_pua_timeout,
        To(C::Error),
        ClusterInfo::Compute(i_install_timeout)
    ),
    crow!(
        "refresh-install-timeout-soft",
        "Soft timeouts never fail slow hosts, so the overall timeout ends a stuck install",
        RefreshCluster,
        &[C::Installing, C::Finalizing],
        g_soft_install_timeout,
        To(C::Error),
        ClusterInfo::Compute(i_install_timeout)
    ),
    crow!(
        "refresh-finalizing-timeout",
        "With hard timeouts, operators that never settle end the install at the finalizing limit",
        RefreshCluster,
        &[C::Finalizing],
        g_finalizing_timeout,
        To(C::Error),
        ClusterInfo::Text(CLUSTER_INFO_FINALIZING_TIMEOUT)
    ),
    crow!(
        "refresh-finalizing-stage-timeout",
        "A finalizing stage that can fail the cluster hung far past its limit",
        RefreshCluster,
        &[C::Finalizing],
        g_finalizing_stage_timeout,
        To(C::Error),
        ClusterInfo::Compute(i_stage_timeout)
    ),
    crow!(
        "refresh-installed",
        "The install is complete once the admin kubeconfig is out and the operators have settled",
        RefreshCluster,
        &[C::Finalizing],
        g_finalized,
        To(C::Installed),
        ClusterInfo::Compute(i_installed)
    ),
    // Explicit no-op rows document that these states are stable under refresh.
    crow!(
        "refresh-stable",
        "These states change only on user events or other rows; a plain refresh keeps them",
        RefreshCluster,
        &[
            C::Installed,
            C::AddingHosts,
            C::Cancelled,
            C::Error,
            C::Unmonitored,
            C::Finalizing,
            C::Installing
        ],
        always,
        Same,
        ClusterInfo::Keep
    ),
];

fn find_row(c: &ClusterCtx, ev: ClusterEvent) -> Option<&'static ClusterTransition> {
    state_machine::find_row(CLUSTER_TRANSITIONS, ev, c)
}

fn outcome_from(c: &ClusterCtx, row: Option<&'static ClusterTransition>) -> ClusterOutcome {
    let step = step(c, row);
    ClusterOutcome {
        changed: step.changed,
        status: step.status,
        status_info: step.status_info,
        transition: step.transition,
        effects: step.effects,
        validations: None,
    }
}

/// Applies a user/API cluster event (cancel, reset, prepare). Refresh goes to [`refresh_cluster`].
pub fn apply_cluster_event(
    cluster: &ClusterSnapshot,
    event: ClusterEvent,
    now: Timestamp,
    cfg: &Config,
) -> Result<ClusterOutcome, ClusterEventError> {
    if event == ClusterEvent::RefreshCluster {
        return Ok(refresh_cluster(cluster, now, cfg));
    }
    let hosts = HostView::from_cluster(cluster, cfg);
    let v = Validations {
        results: Vec::new(),
    };
    let c = ClusterCtx {
        cluster,
        hosts: &hosts,
        v: &v,
        now,
        cfg,
    };
    match find_row(&c, event) {
        Some(row) => Ok(outcome_from(&c, Some(row))),
        None => Err(ClusterEventError::NotAllowed {
            status: cluster.status,
            event,
        }),
    }
}

/// Validates the cluster and runs the refresh rows using the hosts' current statuses.
pub fn refresh_cluster(cluster: &ClusterSnapshot, now: Timestamp, cfg: &Config) -> ClusterOutcome {
    let hosts = HostView::from_cluster(cluster, cfg);
    refresh_cluster_with(cluster, &hosts, now, cfg)
}

/// [`refresh_cluster`] with explicit host views (e.g. statuses just computed by a host refresh).
pub fn refresh_cluster_with(
    cluster: &ClusterSnapshot,
    hosts: &[HostView],
    now: Timestamp,
    cfg: &Config,
) -> ClusterOutcome {
    let v = validate_cluster_with(cluster, cfg, hosts);
    let c = ClusterCtx {
        cluster,
        hosts,
        v: &v,
        now,
        cfg,
    };
    let mut out = outcome_from(&c, find_row(&c, ClusterEvent::RefreshCluster));
    out.validations = Some(v);
    out
}

/// installed → adding-hosts (`TransformClusterToDay2`), outside the table as upstream.
pub fn transform_to_day2(cluster: &ClusterSnapshot) -> Result<ClusterOutcome, ClusterEventError> {
    if cluster.status != C::Installed {
        return Err(ClusterEventError::NotAllowed {
            status: cluster.status,
            event: ClusterEvent::RefreshCluster,
        });
    }
    Ok(ClusterOutcome {
        status: C::AddingHosts,
        status_info: CLUSTER_INFO_ADDING_HOSTS.into(),
        changed: true,
        transition: Some("transform-to-day2"),
        effects: vec![ClusterEffect::BecameDay2],
        validations: None,
    })
}

/// Writes a cluster outcome back into the snapshot.
pub fn apply_cluster_outcome(cluster: &mut ClusterSnapshot, out: &ClusterOutcome, now: Timestamp) {
    if out.status != cluster.status {
        cluster.status_updated_at = now;
    }
    cluster.status = out.status;
    cluster.status_info.clone_from(&out.status_info);
    for e in &out.effects {
        match e {
            E::PreparationStarted => cluster.preparation = PreparationStatus::InProgress,
            E::InstallationStarted => cluster.install_started_at = Some(now),
            E::FinalizingStarted => cluster.finalizing_started_at = Some(now),
            E::ResetInstall => {
                cluster.preparation = PreparationStatus::NotStarted;
                cluster.install_started_at = None;
                cluster.finalizing_started_at = None;
                cluster.finalizing_stage = None;
                cluster.kubeconfig_uploaded = false;
            }
            E::BecameDay2 => cluster.kind = ClusterKind::AddHostsCluster,
        }
    }
}

/// Host and cluster outcomes of one monitor pass over a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRefresh {
    /// In `cluster.hosts` order.
    pub hosts: Vec<HostOutcome>,
    pub cluster: ClusterOutcome,
}

/// One monitor pass: refresh every host, then the cluster with the new host statuses.
pub fn refresh_all(cluster: &ClusterSnapshot, now: Timestamp, cfg: &Config) -> ClusterRefresh {
    let ctx = ClusterContext::new(cluster, cfg);
    let hosts: Vec<HostOutcome> = cluster
        .hosts
        .iter()
        .map(|h| refresh_host_in(h, Some(&ctx), now, cfg))
        .collect();
    let views: Vec<HostView> = cluster
        .hosts
        .iter()
        .zip(&hosts)
        .map(|(h, o)| HostView {
            status: o.status,
            role: ctx.role_of(h),
            day2: h.is_day2(),
        })
        .collect();
    let cluster_out = refresh_cluster_with(cluster, &views, now, cfg);
    ClusterRefresh {
        hosts,
        cluster: cluster_out,
    }
}

/// Applies a [`ClusterRefresh`] to the snapshot.
pub fn apply_refresh(cluster: &mut ClusterSnapshot, r: &ClusterRefresh, now: Timestamp) {
    for (h, o) in cluster.hosts.iter_mut().zip(&r.hosts) {
        apply_host_outcome(h, o, now);
    }
    apply_cluster_outcome(cluster, &r.cluster, now);
}

//! Host state machine (bound and pool) as one declarative transition table.
//!
//! Rows are tried in order and the first row whose event, source state and guard match wins,
//! exactly like upstream's registration order. Pool (unbound) rows are guarded on the host
//! having no cluster, so one table serves both machines.

use jiff::Timestamp;

use super::roles::{HostView, has_enough_masters_and_workers};
use super::snapshot::*;
use super::stages::{is_backwards, stage_percentage};
use super::state_machine::{self, Machine, Transition, step, transition};
use super::types::*;
use super::validation_ids::HostValidationId as V;
use super::validations::*;

/// Event kinds, as named upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostEventKind {
    RegisterHost,
    HostInstallationFailed,
    CancelInstallation,
    InstallHost,
    ResettingPendingUserAction,
    RefreshHost,
    HostProgressChanged,
    MediaDisconnect,
    BindHost,
    UnbindHost,
    ReclaimHost,
    RebootingForReclaim,
    ReclaimHostFailed,
}

/// A host event with its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// The agent called register for an existing host.
    Register,
    InstallationFailed {
        reason: String,
    },
    CancelInstallation,
    /// Day-2 install of a known host.
    Install,
    ResetPendingUserAction,
    Refresh,
    /// Use [`update_host_progress`], which validates the stage before firing this.
    ProgressChanged {
        stage: HostStage,
    },
    /// A step reply came back with exit code 256.
    MediaDisconnect,
    Bind {
        cluster_id: String,
    },
    Unbind,
    Reclaim,
    RebootingForReclaim,
    ReclaimFailed {
        reason: String,
    },
}

impl HostEvent {
    pub fn kind(&self) -> HostEventKind {
        use HostEventKind as K;
        match self {
            HostEvent::Register => K::RegisterHost,
            HostEvent::InstallationFailed { .. } => K::HostInstallationFailed,
            HostEvent::CancelInstallation => K::CancelInstallation,
            HostEvent::Install => K::InstallHost,
            HostEvent::ResetPendingUserAction => K::ResettingPendingUserAction,
            HostEvent::Refresh => K::RefreshHost,
            HostEvent::ProgressChanged { .. } => K::HostProgressChanged,
            HostEvent::MediaDisconnect => K::MediaDisconnect,
            HostEvent::Bind { .. } => K::BindHost,
            HostEvent::Unbind => K::UnbindHost,
            HostEvent::Reclaim => K::ReclaimHost,
            HostEvent::RebootingForReclaim => K::RebootingForReclaim,
            HostEvent::ReclaimFailed { .. } => K::ReclaimHostFailed,
        }
    }
}

/// Side effects the caller applies with the new state (see [`apply_host_outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostEffect {
    /// Treated as new hardware: drop inventory and every agent-reported result.
    ResetInventory,
    /// Drop preparation results (disk speed, image availability).
    ResetPreparation,
    ResetProgress,
    PreparationStarted,
    /// Attach to the cluster of the Bind event.
    BindToCluster,
    /// Detach from the cluster (back to the pool).
    Unbind,
    FlagConnectionTimedOut,
    FlagStageTimedOut,
    SetMediaDisconnected,
    SetMediaConnected,
}

/// The host machine's types for the shared [`state_machine`](super::state_machine) engine.
pub struct HostMachine;

impl Machine for HostMachine {
    type Event = HostEventKind;
    type Status = HostStatus;
    type Effect = HostEffect;
    type Ctx<'a> = HostCtx<'a>;
    fn status(c: &HostCtx<'_>) -> HostStatus {
        c.host.status
    }
    fn status_info<'c>(c: &'c HostCtx<'_>) -> &'c str {
        &c.host.status_info
    }
}

/// Destination of a host row.
pub type Dest = state_machine::Dest<HostStatus>;
/// How a host row sets status_info.
pub type Info = state_machine::Info<HostMachine>;

/// Everything a guard may look at.
pub struct HostCtx<'a> {
    pub host: &'a HostSnapshot,
    pub cluster: Option<&'a ClusterSnapshot>,
    pub event: &'a HostEvent,
    pub now: Timestamp,
    pub cfg: &'a Config,
    /// Fresh validations (refresh only; empty otherwise).
    pub v: &'a HostValidations,
}

/// One row of the host transition table.
pub type HostTransition = Transition<HostMachine>;

/// Result of an event or refresh.
#[derive(Debug, Clone, PartialEq)]
pub struct HostOutcome {
    pub status: HostStatus,
    pub status_info: String,
    /// Status or status_info differs from the snapshot.
    pub changed: bool,
    /// Name of the matched row; `None` when no row matched (refresh no-op).
    pub transition: Option<&'static str>,
    pub effects: Vec<HostEffect>,
    /// Set by refresh.
    pub validations: Option<HostValidations>,
    /// Auto-assignment result for auto-assign hosts (refresh).
    pub suggested_role: Option<HostRole>,
    /// New progress (progress updates).
    pub progress: Option<HostProgress>,
    /// Cluster to attach to (Bind).
    pub bind_cluster_id: Option<String>,
}

/// Rejected events; the REST layer maps these to 409.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostEventError {
    #[error("event {event:?} is not allowed for a host in status {status}")]
    NotAllowed {
        status: HostStatus,
        event: HostEventKind,
    },
    #[error("cannot update progress of a host in status {status}")]
    ProgressNotAllowed { status: HostStatus },
    #[error("cannot move host progress back from {current} to {next}")]
    StageBackwards { current: HostStage, next: HostStage },
    /// The cluster does not accept new hosts (409 with this message).
    #[error("{0}")]
    RegistrationRefused(String),
}

/// Result of a register call.
#[derive(Debug, Clone, PartialEq)]
pub enum Registration {
    /// A new host record to create (Agent CR).
    New(Box<HostSnapshot>),
    /// An existing host re-registered; apply the outcome.
    Existing(HostOutcome),
}

/// Statuses in which a cluster accepts new hosts.
pub const CLUSTER_REGISTRATION_STATES: &[ClusterStatus] = &[
    ClusterStatus::Insufficient,
    ClusterStatus::Ready,
    ClusterStatus::PendingForInput,
    ClusterStatus::AddingHosts,
];

/// `v2RegisterHost`: a new host gets a fresh record if its cluster accepts registrations, an
/// existing one goes through the RegisterHost event.
pub fn register_host(
    host_id: &str,
    infra_env_id: &str,
    existing: Option<&HostSnapshot>,
    cluster: Option<&ClusterSnapshot>,
    now: Timestamp,
    cfg: &Config,
) -> Result<Registration, HostEventError> {
    if let Some(h) = existing {
        return apply_host_event(h, cluster, &HostEvent::Register, now, cfg)
            .map(Registration::Existing);
    }
    if let Some(c) = cluster
        && !CLUSTER_REGISTRATION_STATES.contains(&c.status)
    {
        return Err(HostEventError::RegistrationRefused(
            if c.status == ClusterStatus::Installed {
                "Cannot add hosts to an existing cluster using the original Discovery ISO.".into()
            } else {
                format!(
                    "Cluster {} is in {} state, host can register only in one of [insufficient ready pending-for-input adding-hosts]",
                    c.id, c.status
                )
            },
        ));
    }
    Ok(Registration::New(Box::new(HostSnapshot::new_registered(
        host_id,
        infra_env_id,
        cluster,
        now,
    ))))
}

// ---- status_info texts ---------------------------------------------------------------------

pub const INFO_DISCOVERING: &str = "Waiting for host to send hardware details";
pub const INFO_KNOWN: &str = "Host is ready to be installed";
pub const INFO_KNOWN_UNBOUND: &str = "Host is ready to be bound to a cluster";
pub const INFO_DISCONNECTED: &str = "Host has stopped communicating with the installation service";
pub const INFO_MEDIA_DISCONNECTED: &str =
    "Failed to read from the discovery media (ISO); it was most likely disconnected from the host";
pub const INFO_INSTALLING: &str = "Installation is in progress";
pub const INFO_PREPARING: &str = "Host is preparing for installation";
pub const INFO_PREPARED: &str = "Host finished successfully to prepare for installation";
pub const INFO_CLUSTER_FAILED: &str = "Host is part of a cluster that failed to install";
pub const INFO_CANCELLED: &str = "Installation cancelled by user";
pub const INFO_RESETTING_PUA: &str =
    "Host requires booting into the discovery image to complete resetting the installation";
pub const INFO_RESTARTED: &str = "The host unexpectedly restarted during the installation";
pub const INFO_INSTALLING_TIMEOUT: &str =
    "Host failed to install due to timeout while starting installation";
pub const INFO_CONNECTION_TIMEOUT: &str =
    "Host failed to install due to timeout while connecting to the installation service";
pub const INFO_PUA_TIMEOUT: &str =
    "Host failed to install because it waited for user action for too long";
pub const INFO_PREPARATION_TIMEOUT: &str = "The host has encountered a preparation timeout, the disk speed check or the container image availability check did not finish in time";
pub const INFO_BINDING: &str = "Host is waiting to be bound to the cluster";
pub const INFO_UNBINDING: &str = "Host is waiting to be unbound from the cluster";
pub const INFO_UNBINDING_PUA: &str =
    "Host is waiting to be rebooted into the discovery image to complete unbinding";
pub const INFO_RECLAIMING: &str = "Host is being reclaimed";
pub const INFO_RECLAIM_REBOOTING: &str = "Host is rebooting into the discovery image";
pub const INFO_RECLAIM_TIMEOUT: &str =
    "Host did not finish reclaiming in time; reboot it into the discovery image";
pub const PREFIX_MIN_HW: &str = "Host does not meet the minimum hardware requirements: ";
pub const PREFIX_USER_INPUT: &str = "Waiting for user input: ";
pub const PREFIX_INSUFFICIENT: &str =
    "Host cannot be installed due to following failing validation(s): ";

fn info_reboot_timeout(c: &HostCtx) -> String {
    format!(
        "Host timed out when pulling the configuration files. Verify in the host console that the host boots from the OpenShift installation disk {} and has network access to the cluster API. The installation will resume once the host successfully boots and can access the cluster API",
        install_disk_path(c)
    )
}

fn info_wrong_boot_order(c: &HostCtx) -> String {
    format!(
        "Expected the host to boot from disk, but it booted the installation image - please reboot and fix boot order to boot from disk {}",
        install_disk_path(c)
    )
}

fn install_disk_path(c: &HostCtx) -> String {
    let gb = c
        .cluster
        .map(|cl| {
            c.cfg
                .hw
                .for_version(&cl.openshift_version)
                .worker
                .disk_size_gb
        })
        .unwrap_or(100);
    installation_disk(c.host, gb)
        .map(|d| d.install_path().to_string())
        .unwrap_or_default()
}

// ---- guards --------------------------------------------------------------------------------

use HostStatus as S;

fn always(_: &HostCtx) -> bool {
    true
}
fn bound(c: &HostCtx) -> bool {
    c.host.is_bound()
}
fn unbound(c: &HostCtx) -> bool {
    !c.host.is_bound()
}
fn connected(c: &HostCtx) -> bool {
    c.v.ok(V::Connected)
}
fn media(c: &HostCtx) -> bool {
    c.v.ok(V::MediaConnected)
}
fn cluster_is(c: &HostCtx, s: ClusterStatus) -> bool {
    c.cluster.is_some_and(|cl| cl.status == s)
}
fn stage(c: &HostCtx) -> Option<HostStage> {
    c.host.progress.current_stage
}
fn event_stage(c: &HostCtx) -> Option<HostStage> {
    match c.event {
        HostEvent::ProgressChanged { stage } => Some(*stage),
        _ => None,
    }
}
fn stage_timed_out(c: &HostCtx) -> bool {
    let Some(st) = stage(c) else { return false };
    let sno = c.cluster.is_some_and(|cl| cl.is_sno());
    // "Writing image to disk" times out on lack of progress, the others on total stage time.
    let since = if st == HostStage::WritingImageToDisk {
        c.host.progress.stage_updated_at
    } else {
        c.host.progress.stage_started_at
    };
    let since = since.unwrap_or(c.host.status_updated_at);
    elapsed(c.now, since) > c.cfg.stage_timeout(st, sno)
}

fn g_prepare(c: &HostCtx) -> bool {
    c.host.effective_role() != HostRole::AutoAssign
        && connected(c)
        && media(c)
        && cluster_is(c, ClusterStatus::PreparingForInstallation)
}
fn g_prepared(c: &HostCtx) -> bool {
    connected(c)
        && media(c)
        && c.host.disk_speed == DiskSpeed::Sufficient
        && !c.host.images_status.is_empty()
        && c.v.ok(V::ContainerImagesAvailable)
        && cluster_is(c, ClusterStatus::PreparingForInstallation)
}
fn g_cluster_preparing(c: &HostCtx) -> bool {
    cluster_is(c, ClusterStatus::PreparingForInstallation)
}
fn g_cluster_installing(c: &HostCtx) -> bool {
    cluster_is(c, ClusterStatus::Installing)
}
fn g_cluster_not_preparing(c: &HostCtx) -> bool {
    !g_cluster_preparing(c)
}
fn g_cluster_idle(c: &HostCtx) -> bool {
    !g_cluster_preparing(c) && !g_cluster_installing(c)
}
fn g_disk_slow(c: &HostCtx) -> bool {
    c.host.disk_speed == DiskSpeed::Insufficient
}
fn g_preparation_failed(c: &HostCtx) -> bool {
    if !c.v.ok(V::ContainerImagesAvailable) {
        return true;
    }
    let unknown = c.host.disk_speed == DiskSpeed::NotMeasured || c.host.images_status.is_empty();
    let since = c
        .host
        .preparation_started_at
        .unwrap_or(c.host.status_updated_at);
    unknown && elapsed(c.now, since) > c.cfg.prepare_host_timeout
}
fn g_disconnected(c: &HostCtx) -> bool {
    !connected(c) || !media(c)
}
fn g_not_connected(c: &HostCtx) -> bool {
    !connected(c)
}
fn g_lost_hard(c: &HostCtx) -> bool {
    !connected(c) && !c.cfg.soft_timeouts
}
fn g_lost_soft(c: &HostCtx) -> bool {
    !connected(c) && c.cfg.soft_timeouts && !c.host.connection_timed_out
}
fn g_cluster_error_day1(c: &HostCtx) -> bool {
    cluster_is(c, ClusterStatus::Error) && !c.host.is_day2()
}
fn g_installing_timeout(c: &HostCtx) -> bool {
    elapsed(c.now, c.host.status_updated_at) > c.cfg.installing_timeout
}
fn g_reboot_timeout(c: &HostCtx) -> bool {
    stage(c) == Some(HostStage::Rebooting)
        && stage_timed_out(c)
        && !cluster_is(c, ClusterStatus::InstallingPendingUserAction)
}
fn g_stage_timeout_hard(c: &HostCtx) -> bool {
    stage(c) != Some(HostStage::Rebooting) && stage_timed_out(c) && !c.cfg.soft_timeouts
}
fn g_stage_timeout_soft(c: &HostCtx) -> bool {
    stage(c) != Some(HostStage::Rebooting)
        && stage_timed_out(c)
        && c.cfg.soft_timeouts
        && !c.host.progress.stage_timed_out
}
fn g_pua_timeout(c: &HostCtx) -> bool {
    let Some(cl) = c.cluster else { return false };
    if elapsed(c.now, c.host.status_updated_at) <= c.cfg.pending_user_action_timeout {
        return false;
    }
    if !matches!(
        cl.status,
        ClusterStatus::Installing | ClusterStatus::InstallingPendingUserAction
    ) {
        return false;
    }
    // Fail the host only if the cluster still succeeds without it.
    let views: Vec<HostView> = HostView::from_cluster(cl, c.cfg)
        .into_iter()
        .zip(cl.hosts.iter())
        .filter(|(_, h)| h.id != c.host.id)
        .map(|(v, _)| v)
        .collect();
    has_enough_masters_and_workers(
        cl,
        &views,
        &[
            S::Installing,
            S::InstallingInProgress,
            S::Installed,
            S::PreparingSuccessful,
        ],
    )
}
fn g_no_inventory(c: &HostCtx) -> bool {
    c.host.inventory.is_none()
}
fn g_min_hw_fails(c: &HostCtx) -> bool {
    !c.v.all_ok(MIN_HW_GATE)
}
fn g_input_missing(c: &HostCtx) -> bool {
    !c.v.all_ok(INPUT_GATE)
}
fn g_insufficient(c: &HostCtx) -> bool {
    !c.v.all_ok(SUFFICIENT_GATE)
}
fn g_pool_insufficient(c: &HostCtx) -> bool {
    !c.v.all_ok(POOL_GATE)
}
fn g_bound_no_inventory(c: &HostCtx) -> bool {
    bound(c) && g_no_inventory(c)
}
fn g_bound_min_hw(c: &HostCtx) -> bool {
    bound(c) && g_min_hw_fails(c)
}
fn g_bound_input(c: &HostCtx) -> bool {
    bound(c) && g_input_missing(c)
}
fn g_bound_insufficient(c: &HostCtx) -> bool {
    bound(c) && g_insufficient(c)
}
fn g_reclaim_timeout(c: &HostCtx) -> bool {
    elapsed(c.now, c.host.status_updated_at) > c.cfg.reclaim_timeout
}
fn g_register_rebooting(c: &HostCtx) -> bool {
    stage(c) == Some(HostStage::Rebooting)
}
fn g_wrong_boot_order(c: &HostCtx) -> bool {
    stage(c) == Some(HostStage::Rebooting)
        || (c.host.is_day2() && stage(c) == Some(HostStage::Done))
}
fn g_day2(c: &HostCtx) -> bool {
    c.host.is_day2()
}
fn g_day2_rebooting(c: &HostCtx) -> bool {
    c.host.is_day2() && event_stage(c) == Some(HostStage::Rebooting)
}
fn g_day2_done(c: &HostCtx) -> bool {
    c.host.is_day2() && event_stage(c) == Some(HostStage::Done)
}
fn g_done(c: &HostCtx) -> bool {
    event_stage(c) == Some(HostStage::Done)
}

// ---- computed infos ------------------------------------------------------------------------

fn i_min_hw(c: &HostCtx) -> String {
    format!("{PREFIX_MIN_HW}{}", c.v.failing_messages(MIN_HW_GATE))
}
fn i_user_input(c: &HostCtx) -> String {
    format!("{PREFIX_USER_INPUT}{}", c.v.failing_messages(INPUT_GATE))
}
fn i_insufficient(c: &HostCtx) -> String {
    format!(
        "{PREFIX_INSUFFICIENT}{}",
        c.v.failing_messages(SUFFICIENT_GATE)
    )
}
fn i_pool_insufficient(c: &HostCtx) -> String {
    format!("{PREFIX_MIN_HW}{}", c.v.failing_messages(POOL_GATE))
}
fn i_disk_slow(c: &HostCtx) -> String {
    format!(
        "{PREFIX_INSUFFICIENT}{}",
        c.v.failing_messages(&[V::SufficientInstallationDiskSpeed])
    )
}
fn i_preparation_failed(c: &HostCtx) -> String {
    if !c.v.ok(V::ContainerImagesAvailable) {
        c.v.failing_messages(&[V::ContainerImagesAvailable])
    } else {
        INFO_PREPARATION_TIMEOUT.to_string()
    }
}
fn i_disconnected(c: &HostCtx) -> String {
    if connected(c) && !media(c) {
        INFO_MEDIA_DISCONNECTED.to_string()
    } else {
        INFO_DISCONNECTED.to_string()
    }
}
fn i_stage_timeout(c: &HostCtx) -> String {
    let st = stage(c).map(|s| s.as_str()).unwrap_or("");
    let sno = c.cluster.is_some_and(|cl| cl.is_sno());
    let mins = stage(c)
        .map(|s| c.cfg.stage_timeout(s, sno).as_secs() / 60)
        .unwrap_or(0);
    format!(
        "Host failed to install because its installation stage {st} took longer than expected {mins} minutes"
    )
}
fn i_event_reason(c: &HostCtx) -> String {
    match c.event {
        HostEvent::InstallationFailed { reason } | HostEvent::ReclaimFailed { reason } => {
            reason.clone()
        }
        _ => String::new(),
    }
}
fn i_stage(c: &HostCtx) -> String {
    event_stage(c)
        .map(|s| s.as_str().to_string())
        .unwrap_or_default()
}

// ---- the table -----------------------------------------------------------------------------

use HostEffect as E;
use HostEventKind as K;
use state_machine::Dest::{Same, To};

const PRE_INSTALL: &[HostStatus] = &[
    S::Disconnected,
    S::Discovering,
    S::Insufficient,
    S::Known,
    S::PendingForInput,
];
const POOL: &[HostStatus] = &[
    S::DiscoveringUnbound,
    S::KnownUnbound,
    S::InsufficientUnbound,
    S::DisconnectedUnbound,
    S::DisabledUnbound,
];
const RESETTABLE: &[HostStatus] = &[
    S::Known,
    S::Discovering,
    S::Insufficient,
    S::Disconnected,
    S::PendingForInput,
    S::PreparingForInstallation,
    S::PreparingSuccessful,
    S::PreparingFailed,
    S::Installing,
    S::InstallingInProgress,
    S::InstallingPendingUserAction,
    S::Installed,
    S::Error,
    S::Resetting,
    S::ResettingPendingUserAction,
    S::Cancelled,
    S::AddedToExistingCluster,
];

/// `row!(name, why, event, sources, guard, dest, info[, effects])`: a [`transition!`] row.
macro_rules! row {
    ($($row:tt)*) => { transition!(K, $($row)*) };
}

/// The host transition table, in upstream registration order.
pub static HOST_TRANSITIONS: &[HostTransition] = &[
    // RegisterHost
    row!(
        "register-preparing-to-known",
        "An agent restarted mid-preparation: its inventory still holds, but its checks must rerun",
        RegisterHost,
        &[S::PreparingForInstallation, S::PreparingSuccessful],
        bound,
        To(S::Known),
        Info::Text(INFO_KNOWN),
        &[E::ResetPreparation, E::SetMediaConnected]
    ),
    row!(
        "register-rediscover",
        "A host registering again before install may return with new hardware: rediscover it",
        RegisterHost,
        &[
            S::Discovering,
            S::Known,
            S::Disconnected,
            S::Insufficient,
            S::ResettingPendingUserAction,
            S::Binding,
            S::PendingForInput
        ],
        bound,
        To(S::Discovering),
        Info::Text(INFO_DISCOVERING),
        &[E::ResetInventory, E::SetMediaConnected]
    ),
    row!(
        "register-resetting-rebooting",
        "A reset raced the installer's reboot; the monitor, not this registration, moves it on",
        RegisterHost,
        &[S::Resetting],
        g_register_rebooting,
        Same,
        Info::Keep
    ),
    row!(
        "register-resetting",
        "After a reset the host booted the discovery image again, so discovery starts afresh",
        RegisterHost,
        &[S::Resetting],
        always,
        To(S::Discovering),
        Info::Text(INFO_DISCOVERING),
        &[E::ResetInventory, E::ResetProgress, E::SetMediaConnected]
    ),
    row!(
        "register-wrong-boot-order",
        "After the installer's reboot the host booted the discovery image instead of its disk",
        RegisterHost,
        &[
            S::InstallingInProgress,
            S::InstallingPendingUserAction,
            S::AddedToExistingCluster
        ],
        g_wrong_boot_order,
        To(S::InstallingPendingUserAction),
        Info::Compute(info_wrong_boot_order)
    ),
    row!(
        "register-during-install",
        "The agent restarted while writing the OS, so this host's install can't be trusted",
        RegisterHost,
        &[S::Installing, S::InstallingInProgress],
        always,
        To(S::Error),
        Info::Text(INFO_RESTARTED)
    ),
    row!(
        "register-error",
        "A failed host rebooted by hand is accepted quietly, or it would retry registering forever",
        RegisterHost,
        &[S::Error],
        always,
        Same,
        Info::Keep
    ),
    row!(
        "register-installed",
        "An installed host that boots the discovery image again must keep its installed state",
        RegisterHost,
        &[S::Installed],
        always,
        Same,
        Info::Keep
    ),
    row!(
        "register-pool",
        "Booting discovery ends a host's release, and a pool host may come back with new hardware",
        RegisterHost,
        &[
            S::DiscoveringUnbound,
            S::KnownUnbound,
            S::InsufficientUnbound,
            S::DisconnectedUnbound,
            S::DisabledUnbound,
            S::Unbinding,
            S::UnbindingPendingUserAction,
            S::ReclaimingRebooting
        ],
        always,
        To(S::DiscoveringUnbound),
        Info::Text(INFO_DISCOVERING),
        &[
            E::ResetInventory,
            E::Unbind,
            E::ResetProgress,
            E::SetMediaConnected
        ]
    ),
    // HostInstallationFailed
    row!(
        "installation-failed",
        "The installer on the host hit a fatal error; the host stops and shows the reason",
        HostInstallationFailed,
        &[S::Installing, S::InstallingInProgress],
        always,
        To(S::Error),
        Info::Compute(i_event_reason)
    ),
    // CancelInstallation
    row!(
        "cancel-installation",
        "The user stopped an install under way; the disks are touched, so only a reset undoes it",
        CancelInstallation,
        &[
            S::InstallingPendingUserAction,
            S::Installing,
            S::InstallingInProgress,
            S::Installed,
            S::Error
        ],
        always,
        To(S::Cancelled),
        Info::Text(INFO_CANCELLED)
    ),
    row!(
        "cancel-preparation",
        "Nothing is written to disk while preparing, so a cancel just returns the host to known",
        CancelInstallation,
        &[S::PreparingForInstallation, S::PreparingSuccessful],
        always,
        To(S::Known),
        Info::Text(INFO_KNOWN),
        &[E::ResetPreparation]
    ),
    row!(
        "cancel-known",
        "A cancel reaches hosts that never started preparing; there is nothing to undo on them",
        CancelInstallation,
        &[S::Known],
        always,
        Same,
        Info::Keep
    ),
    // InstallHost (day-2 only; day-1 hosts start through refresh)
    row!(
        "install-day2",
        "Day-2 hosts are installed one by one once approved, not through cluster preparation",
        InstallHost,
        &[S::Known],
        g_day2,
        To(S::Installing),
        Info::Text(INFO_INSTALLING),
        &[E::ResetProgress]
    ),
    // ResettingPendingUserAction
    row!(
        "reset-pending-user-action",
        "A reset needs the host to boot the discovery image again, which the user must do",
        ResettingPendingUserAction,
        RESETTABLE,
        bound,
        To(S::ResettingPendingUserAction),
        Info::Text(INFO_RESETTING_PUA),
        &[E::ResetProgress]
    ),
    // HostProgressChanged
    row!(
        "progress-day2-rebooting",
        "A day-2 host is not done at its reboot: it installs on until its node joins the cluster",
        HostProgressChanged,
        &[S::Installing, S::InstallingInProgress],
        g_day2_rebooting,
        To(S::InstallingInProgress),
        Info::Compute(i_stage)
    ),
    row!(
        "progress-day2-done",
        "A day-2 host reporting done has joined the existing cluster: its final state",
        HostProgressChanged,
        &[
            S::Installing,
            S::InstallingInProgress,
            S::InstallingPendingUserAction
        ],
        g_day2_done,
        To(S::AddedToExistingCluster),
        Info::Text("Done")
    ),
    row!(
        "progress-done",
        "The installer reports the host finished installing",
        HostProgressChanged,
        &[S::Installing, S::InstallingInProgress],
        g_done,
        To(S::Installed),
        Info::Text("Done")
    ),
    row!(
        "progress-in-progress",
        "Any other stage means the installer is working, also on a host that waited for the user",
        HostProgressChanged,
        &[
            S::Installing,
            S::InstallingInProgress,
            S::InstallingPendingUserAction
        ],
        always,
        To(S::InstallingInProgress),
        Info::Compute(i_stage)
    ),
    row!(
        "progress-ignored",
        "Late reports from a finished or resetting host must not put it back to installing",
        HostProgressChanged,
        &[
            S::Installed,
            S::InstallingPendingUserAction,
            S::ResettingPendingUserAction
        ],
        always,
        Same,
        Info::Keep
    ),
    // MediaDisconnect
    row!(
        "media-disconnect-pre-install",
        "The discovery ISO went away before install; the host is unusable until it is back",
        MediaDisconnect,
        &[
            S::Discovering,
            S::Known,
            S::Disconnected,
            S::Insufficient,
            S::PendingForInput,
            S::Binding
        ],
        always,
        To(S::Disconnected),
        Info::Text(INFO_MEDIA_DISCONNECTED),
        &[E::SetMediaDisconnected]
    ),
    row!(
        "media-disconnect-installing",
        "Losing the discovery ISO once preparation or install began breaks the running steps",
        MediaDisconnect,
        &[
            S::PreparingForInstallation,
            S::PreparingSuccessful,
            S::PreparingFailed,
            S::Installing,
            S::InstallingInProgress,
            S::Error
        ],
        always,
        To(S::Error),
        Info::Text(INFO_MEDIA_DISCONNECTED),
        &[E::SetMediaDisconnected]
    ),
    // Pool hosts lose their media the same way; they stay in the pool.
    row!(
        "media-disconnect-pool",
        "Pool hosts lose their virtual media too; they show as disconnected but stay in the pool",
        MediaDisconnect,
        POOL,
        always,
        To(S::DisconnectedUnbound),
        Info::Text(INFO_MEDIA_DISCONNECTED),
        &[E::SetMediaDisconnected]
    ),
    // BindHost / UnbindHost / reclaim
    row!(
        "bind",
        "A ready pool host was assigned to a cluster and waits to register with it",
        BindHost,
        &[S::KnownUnbound],
        always,
        To(S::Binding),
        Info::Text(INFO_BINDING),
        &[E::BindToCluster]
    ),
    row!(
        "unbind-pre-install",
        "A host released before anything touched its disk can go back to the pool at once",
        UnbindHost,
        PRE_INSTALL,
        always,
        To(S::Unbinding),
        Info::Text(INFO_UNBINDING),
        &[E::Unbind]
    ),
    row!(
        "unbind-post-install",
        "A host released after preparing or installing must be rebooted into discovery by the user",
        UnbindHost,
        &[
            S::PreparingForInstallation,
            S::PreparingSuccessful,
            S::PreparingFailed,
            S::Installing,
            S::InstallingInProgress,
            S::InstallingPendingUserAction,
            S::Installed,
            S::AddedToExistingCluster,
            S::Error,
            S::Cancelled
        ],
        always,
        To(S::UnbindingPendingUserAction),
        Info::Text(INFO_UNBINDING_PUA),
        &[E::Unbind]
    ),
    row!(
        "reclaim-installed",
        "An installed host removed from its cluster can reboot itself into discovery for reuse",
        ReclaimHost,
        &[S::Installed, S::AddedToExistingCluster],
        always,
        To(S::Reclaiming),
        Info::Text(INFO_RECLAIMING)
    ),
    row!(
        "reclaim-pre-install",
        "Reclaiming a host that never installed is just releasing it to the pool",
        ReclaimHost,
        PRE_INSTALL,
        always,
        To(S::Unbinding),
        Info::Text(INFO_UNBINDING),
        &[E::Unbind]
    ),
    row!(
        "reclaim-failed-host",
        "A failed or cancelled host has no working OS to reclaim through; the user must reboot it",
        ReclaimHost,
        &[S::Error, S::Cancelled],
        always,
        To(S::UnbindingPendingUserAction),
        Info::Text(INFO_UNBINDING_PUA),
        &[E::Unbind]
    ),
    row!(
        "rebooting-for-reclaim",
        "The reclaim agent on the installed host is rebooting it into the discovery image",
        RebootingForReclaim,
        &[S::Reclaiming],
        always,
        To(S::ReclaimingRebooting),
        Info::Text(INFO_RECLAIM_REBOOTING)
    ),
    row!(
        "reclaim-host-failed",
        "Reclaiming through the installed OS failed, so the user must reboot the host by hand",
        ReclaimHostFailed,
        &[S::Reclaiming, S::ReclaimingRebooting],
        always,
        To(S::UnbindingPendingUserAction),
        Info::Compute(i_event_reason),
        &[E::Unbind]
    ),
    // RefreshHost, in registration order
    row!(
        "refresh-known-to-preparing",
        "The cluster began preparing: disk and image checks run only once install is asked for",
        RefreshHost,
        &[S::Known],
        g_prepare,
        To(S::PreparingForInstallation),
        Info::Text(INFO_PREPARING),
        &[E::PreparationStarted]
    ),
    row!(
        "refresh-preparing-successful",
        "The host passed its disk-speed and image checks while the cluster is still preparing",
        RefreshHost,
        &[S::PreparingForInstallation],
        g_prepared,
        To(S::PreparingSuccessful),
        Info::Text(INFO_PREPARED)
    ),
    row!(
        "refresh-prepared-wait",
        "A prepared host waits for the rest of the cluster to finish preparing",
        RefreshHost,
        &[S::PreparingSuccessful],
        g_cluster_preparing,
        Same,
        Info::Keep
    ),
    row!(
        "refresh-prepared-to-installing",
        "Every host is prepared and the cluster started installing; this host follows it",
        RefreshHost,
        &[S::PreparingSuccessful],
        g_cluster_installing,
        To(S::Installing),
        Info::Text(INFO_INSTALLING),
        &[E::ResetProgress]
    ),
    row!(
        "refresh-preparing-to-known",
        "The cluster stopped preparing (cancel, timeout, failure), so this host stops as well",
        RefreshHost,
        &[S::PreparingForInstallation],
        g_cluster_not_preparing,
        To(S::Known),
        Info::Text(INFO_KNOWN),
        &[E::ResetPreparation]
    ),
    row!(
        "refresh-prepared-to-known",
        "The cluster left preparation without installing; the host prepares again next time",
        RefreshHost,
        &[S::PreparingSuccessful, S::PreparingFailed],
        g_cluster_idle,
        To(S::Known),
        Info::Text(INFO_KNOWN),
        &[E::ResetPreparation]
    ),
    row!(
        "refresh-disk-speed-insufficient",
        "The installation disk measured too slow for etcd; only another disk fixes that",
        RefreshHost,
        &[S::PreparingForInstallation, S::PreparingFailed, S::Known],
        g_disk_slow,
        To(S::Insufficient),
        Info::Compute(i_disk_slow)
    ),
    row!(
        "refresh-preparing-failed",
        "An image can't be pulled or the checks hung; failing lets the cluster stop waiting for it",
        RefreshHost,
        &[S::PreparingForInstallation],
        g_preparation_failed,
        To(S::PreparingFailed),
        Info::Compute(i_preparation_failed)
    ),
    row!(
        "refresh-disconnected",
        "Before install, a host whose agent went silent or whose ISO vanished can't be used",
        RefreshHost,
        &[
            S::Discovering,
            S::Insufficient,
            S::Known,
            S::PendingForInput,
            S::Disconnected,
            S::PreparingFailed
        ],
        g_disconnected,
        To(S::Disconnected),
        Info::Compute(i_disconnected)
    ),
    row!(
        "refresh-preparing-disconnected",
        "A host that goes silent while preparing can neither finish its checks nor install",
        RefreshHost,
        &[S::PreparingForInstallation, S::PreparingSuccessful],
        g_not_connected,
        To(S::Disconnected),
        Info::Text(INFO_DISCONNECTED)
    ),
    row!(
        "refresh-installing-disconnected",
        "Without soft timeouts, an installing host that stops reporting has failed",
        RefreshHost,
        &[S::Installing, S::InstallingInProgress],
        g_lost_hard,
        To(S::Error),
        Info::Text(INFO_CONNECTION_TIMEOUT)
    ),
    row!(
        "refresh-installing-disconnected-soft",
        "With soft timeouts a silent host may just be busy: flag it, keep installing",
        RefreshHost,
        &[S::Installing, S::InstallingInProgress],
        g_lost_soft,
        Same,
        Info::Keep,
        &[E::FlagConnectionTimedOut]
    ),
    row!(
        "refresh-cluster-error",
        "A failed day-1 install fails its hosts too; day-2 hosts join an installed cluster",
        RefreshHost,
        &[
            S::Installing,
            S::Installed,
            S::InstallingInProgress,
            S::InstallingPendingUserAction,
            S::ResettingPendingUserAction
        ],
        g_cluster_error_day1,
        To(S::Error),
        Info::Text(INFO_CLUSTER_FAILED)
    ),
    row!(
        "refresh-installing-timeout",
        "The host was told to install but its installer never reported a first stage",
        RefreshHost,
        &[S::Installing],
        g_installing_timeout,
        To(S::Error),
        Info::Text(INFO_INSTALLING_TIMEOUT)
    ),
    row!(
        "refresh-reboot-timeout",
        "A host not back from the installer's reboot most likely booted the wrong device",
        RefreshHost,
        &[S::InstallingInProgress],
        g_reboot_timeout,
        To(S::InstallingPendingUserAction),
        Info::Compute(info_reboot_timeout)
    ),
    row!(
        "refresh-stage-timeout",
        "Without soft timeouts, a stage far slower than expected fails the host",
        RefreshHost,
        &[S::InstallingInProgress],
        g_stage_timeout_hard,
        To(S::Error),
        Info::Compute(i_stage_timeout)
    ),
    row!(
        "refresh-stage-timeout-soft",
        "With soft timeouts a slow stage is only flagged and the install carries on",
        RefreshHost,
        &[S::InstallingInProgress],
        g_stage_timeout_soft,
        Same,
        Info::Keep,
        &[E::FlagStageTimedOut]
    ),
    row!(
        "refresh-pending-user-action-timeout",
        "A host left waiting for the user too long fails, if the cluster can do without it",
        RefreshHost,
        &[S::InstallingPendingUserAction],
        g_pua_timeout,
        To(S::Error),
        Info::Text(INFO_PUA_TIMEOUT)
    ),
    row!(
        "refresh-no-inventory",
        "A bound host without a hardware inventory yet (or that lost it) is still discovering",
        RefreshHost,
        PRE_INSTALL,
        g_bound_no_inventory,
        To(S::Discovering),
        Info::Text(INFO_DISCOVERING)
    ),
    row!(
        "refresh-min-hardware",
        "The host lacks the minimum hardware for any role, which only new hardware can fix",
        RefreshHost,
        PRE_INSTALL,
        g_bound_min_hw,
        To(S::Insufficient),
        Info::Compute(i_min_hw)
    ),
    row!(
        "refresh-user-input",
        "The host can't be validated until the user gives cluster input, e.g. machine network",
        RefreshHost,
        PRE_INSTALL,
        g_bound_input,
        To(S::PendingForInput),
        Info::Compute(i_user_input)
    ),
    row!(
        "refresh-insufficient",
        "A check required before install fails for this host (role hardware, network, DNS...)",
        RefreshHost,
        PRE_INSTALL,
        g_bound_insufficient,
        To(S::Insufficient),
        Info::Compute(i_insufficient)
    ),
    row!(
        "refresh-known",
        "Every gating validation passes, so the host can be installed",
        RefreshHost,
        PRE_INSTALL,
        bound,
        To(S::Known),
        Info::Text(INFO_KNOWN)
    ),
    row!(
        "refresh-reclaim-timeout",
        "The host did not reboot into discovery in time, so the user has to do it",
        RefreshHost,
        &[S::Reclaiming, S::ReclaimingRebooting],
        g_reclaim_timeout,
        To(S::UnbindingPendingUserAction),
        Info::Text(INFO_RECLAIM_TIMEOUT),
        &[E::Unbind]
    ),
    // Pool machine refresh
    row!(
        "pool-disconnected",
        "A pool host whose agent stopped checking in cannot be bound until it returns",
        RefreshHost,
        POOL,
        g_not_connected,
        To(S::DisconnectedUnbound),
        Info::Text(INFO_DISCONNECTED)
    ),
    row!(
        "pool-no-inventory",
        "A pool host that has not sent its hardware inventory is still being discovered",
        RefreshHost,
        POOL,
        g_no_inventory,
        To(S::DiscoveringUnbound),
        Info::Text(INFO_DISCOVERING)
    ),
    row!(
        "pool-insufficient",
        "A pool host lacking minimum hardware or a valid hostname cannot go to any cluster",
        RefreshHost,
        POOL,
        g_pool_insufficient,
        To(S::InsufficientUnbound),
        Info::Compute(i_pool_insufficient)
    ),
    row!(
        "pool-known",
        "A pool host passing its checks can be bound to a cluster",
        RefreshHost,
        POOL,
        unbound,
        To(S::KnownUnbound),
        Info::Text(INFO_KNOWN_UNBOUND)
    ),
];

fn find_row(c: &HostCtx) -> Option<&'static HostTransition> {
    state_machine::find_row(HOST_TRANSITIONS, c.event.kind(), c)
}

fn outcome_from(c: &HostCtx, row: Option<&'static HostTransition>) -> HostOutcome {
    let step = step(c, row);
    let bind_cluster_id = match c.event {
        HostEvent::Bind { cluster_id } if step.effects.contains(&E::BindToCluster) => {
            Some(cluster_id.clone())
        }
        _ => None,
    };
    HostOutcome {
        changed: step.changed,
        status: step.status,
        status_info: step.status_info,
        transition: step.transition,
        effects: step.effects,
        validations: None,
        suggested_role: None,
        progress: None,
        bind_cluster_id,
    }
}

/// Applies a non-refresh event. Refresh is routed to [`refresh_host`].
pub fn apply_host_event(
    host: &HostSnapshot,
    cluster: Option<&ClusterSnapshot>,
    event: &HostEvent,
    now: Timestamp,
    cfg: &Config,
) -> Result<HostOutcome, HostEventError> {
    if *event == HostEvent::Refresh {
        return Ok(refresh_host(host, cluster, now, cfg));
    }
    let empty = Validations {
        results: Vec::new(),
    };
    let c = HostCtx {
        host,
        cluster,
        event,
        now,
        cfg,
        v: &empty,
    };
    match find_row(&c) {
        Some(row) => Ok(outcome_from(&c, Some(row))),
        None => Err(HostEventError::NotAllowed {
            status: host.status,
            event: event.kind(),
        }),
    }
}

/// Runs validations and the refresh rows for one host.
pub fn refresh_host(
    host: &HostSnapshot,
    cluster: Option<&ClusterSnapshot>,
    now: Timestamp,
    cfg: &Config,
) -> HostOutcome {
    match cluster {
        Some(cl) => refresh_host_in(host, Some(&ClusterContext::new(cl, cfg)), now, cfg),
        None => refresh_host_in(host, None, now, cfg),
    }
}

/// [`refresh_host`] with a precomputed cluster context (whole-cluster refresh).
pub fn refresh_host_in(
    host: &HostSnapshot,
    ctx: Option<&ClusterContext<'_>>,
    now: Timestamp,
    cfg: &Config,
) -> HostOutcome {
    let v = validate_host_in(host, ctx, now, cfg);
    let c = HostCtx {
        host,
        cluster: ctx.map(|x| x.cluster),
        event: &HostEvent::Refresh,
        now,
        cfg,
        v: &v,
    };
    let mut out = outcome_from(&c, find_row(&c));
    // Roles are only re-suggested before installation; afterwards they are fixed.
    out.suggested_role = match (host.role, ctx) {
        (HostRole::AutoAssign, Some(x)) if host.status.is_pre_install() => {
            x.suggested_role(&host.id)
        }
        _ => None,
    };
    out.validations = Some(v);
    out
}

/// Handles an installer/controller progress report (`PUT .../progress`).
///
/// Rejects reports outside installing states and stages that go backwards (409 upstream).
/// Stage `Failed` moves the host to `error` directly with `"Failed - <info>"`.
pub fn update_host_progress(
    host: &HostSnapshot,
    cluster: Option<&ClusterSnapshot>,
    stage: HostStage,
    progress_info: &str,
    now: Timestamp,
    cfg: &Config,
) -> Result<HostOutcome, HostEventError> {
    if !matches!(
        host.status,
        S::Installing | S::InstallingInProgress | S::InstallingPendingUserAction
    ) {
        return Err(HostEventError::ProgressNotAllowed {
            status: host.status,
        });
    }
    let role = host.install_role();
    let sno = cluster.is_some_and(|c| c.is_sno());
    let cur = host.progress.current_stage;
    if stage != HostStage::Failed && is_backwards(role, sno, cur, stage) {
        return Err(HostEventError::StageBackwards {
            current: cur.unwrap_or(stage),
            next: stage,
        });
    }
    let mut progress = host.progress.clone();
    if cur != Some(stage) {
        progress.stage_started_at = Some(now);
        progress.stage_timed_out = false;
    }
    progress.current_stage = Some(stage);
    progress.stage_updated_at = Some(now);
    progress.progress_info = progress_info.to_string();
    if let Some(p) = stage_percentage(role, sno, stage) {
        progress.installation_percentage = p;
    }
    if stage == HostStage::Failed {
        let info = format!("Failed - {progress_info}");
        return Ok(HostOutcome {
            changed: host.status != S::Error || host.status_info != info,
            status: S::Error,
            status_info: info,
            transition: Some("progress-failed"),
            effects: Vec::new(),
            validations: None,
            suggested_role: None,
            progress: Some(progress),
            bind_cluster_id: None,
        });
    }
    let mut out = apply_host_event(
        host,
        cluster,
        &HostEvent::ProgressChanged { stage },
        now,
        cfg,
    )?;
    out.progress = Some(progress);
    Ok(out)
}

/// Writes an outcome back into a snapshot (what the service persists to Agent status).
pub fn apply_host_outcome(host: &mut HostSnapshot, out: &HostOutcome, now: Timestamp) {
    if out.status != host.status {
        host.status_updated_at = now;
    }
    host.status = out.status;
    host.status_info.clone_from(&out.status_info);
    if host.role == HostRole::AutoAssign && out.suggested_role.is_some() {
        host.suggested_role = out.suggested_role;
    }
    if let Some(p) = &out.progress {
        host.progress = p.clone();
    }
    for e in &out.effects {
        match e {
            E::ResetInventory => {
                host.inventory = None;
                host.connectivity.clear();
                host.ntp_sources.clear();
                host.domain_resolutions = None;
                host.images_status.clear();
                host.disk_speed = DiskSpeed::NotMeasured;
                host.api_vip_connectivity = None;
                host.tang_connectivity = None;
            }
            E::ResetPreparation => {
                host.disk_speed = DiskSpeed::NotMeasured;
                host.images_status.clear();
                host.preparation_started_at = None;
            }
            E::ResetProgress => {
                host.progress = HostProgress::default();
                host.connection_timed_out = false;
            }
            E::PreparationStarted => host.preparation_started_at = Some(now),
            E::BindToCluster => {
                if let Some(id) = &out.bind_cluster_id {
                    host.cluster_id = Some(id.clone());
                }
            }
            E::Unbind => {
                host.cluster_id = None;
                host.kind = HostKind::Host;
                host.role = HostRole::AutoAssign;
                host.suggested_role = None;
                host.bootstrap = false;
            }
            E::FlagConnectionTimedOut => host.connection_timed_out = true,
            E::FlagStageTimedOut => host.progress.stage_timed_out = true,
            E::SetMediaDisconnected => host.media_connected = false,
            E::SetMediaConnected => host.media_connected = true,
        }
    }
}

//! One test per host transition row; `every_host_row_is_tested` keeps the list complete.

use jiff::Timestamp;

use super::fixtures::*;
use super::table_checks::*;
use crate::domain::*;

struct Case {
    host: HostSnapshot,
    cluster: Option<ClusterSnapshot>,
    event: HostEvent,
    now: Timestamp,
    cfg: Config,
}

impl Case {
    fn new(host: HostSnapshot, cluster: Option<ClusterSnapshot>, event: HostEvent) -> Case {
        Case {
            host,
            cluster,
            event,
            now: t0(),
            cfg: Config::default(),
        }
    }
}

/// Cluster 3+2 in `cs`, host h1 in `hs` after `f` tweaks it; h1 receives `event`.
fn case(
    cs: ClusterStatus,
    hs: HostStatus,
    event: HostEvent,
    f: impl FnOnce(&mut HostSnapshot, &mut ClusterSnapshot),
) -> Case {
    let now = t0();
    let mut c = cluster_3_2_with_hosts(now);
    c.status = cs;
    masters_then_workers(&mut c);
    let mut h = c.hosts[0].clone();
    h.status = hs;
    f(&mut h, &mut c);
    c.hosts[0] = h.clone();
    Case::new(h, Some(c), event)
}

fn pool_case(hs: HostStatus, event: HostEvent, f: impl FnOnce(&mut HostSnapshot)) -> Case {
    let now = t0();
    let mut h = HostSnapshot::new_registered("p1", "infra-1", None, now);
    h.inventory = Some(inventory("p1", 50, 8, 32));
    h.status = hs;
    f(&mut h);
    Case::new(h, None, event)
}

fn day2_case(hs: HostStatus, event: HostEvent, f: impl FnOnce(&mut HostSnapshot)) -> Case {
    let now = t0();
    let mut c = cluster_3_2(now);
    c.status = ClusterStatus::AddingHosts;
    c.kind = ClusterKind::AddHostsCluster;
    let mut h = host("d1", 60, &c, now);
    h.api_vip_connectivity = Some(true);
    h.status = hs;
    f(&mut h);
    c.hosts.push(h.clone());
    Case::new(h, Some(c), event)
}

fn check(row: &str, c: Case) {
    let out = apply_host_event(&c.host, c.cluster.as_ref(), &c.event, c.now, &c.cfg)
        .unwrap_or_else(|e| panic!("row {row}: {e}"));
    assert_eq!(
        out.transition,
        Some(row),
        "outcome: {} / {}",
        out.status,
        out.status_info
    );
    let expected = row_destination(HOST_TRANSITIONS, row, c.host.status);
    assert_eq!(out.status, expected, "info: {}", out.status_info);
    // Applying the outcome must land in the same state.
    let mut h = c.host.clone();
    apply_host_outcome(&mut h, &out, c.now);
    assert_eq!(h.status, expected);
}

fn stale(h: &mut HostSnapshot) {
    h.checked_in_at = Some(mins(t0(), -10));
}

macro_rules! host_rows {
    ($($test:ident: $row:literal => $case:expr;)+) => {
        $(#[test] fn $test() { check($row, $case) })+
        const TESTED: &[&str] = &[$($row),+];
    };
}

use ClusterStatus as C;
use HostEvent as Ev;
use HostStatus as S;

host_rows! {
    register_preparing_to_known: "register-preparing-to-known" =>
        case(C::PreparingForInstallation, S::PreparingSuccessful, Ev::Register, |_, _| {});
    register_rediscover: "register-rediscover" => case(C::Ready, S::Known, Ev::Register, |_, _| {});
    register_resetting_rebooting: "register-resetting-rebooting" =>
        case(C::Insufficient, S::Resetting, Ev::Register, |h, _| h.progress.current_stage = Some(HostStage::Rebooting));
    register_resetting: "register-resetting" => case(C::Insufficient, S::Resetting, Ev::Register, |_, _| {});
    register_wrong_boot_order: "register-wrong-boot-order" =>
        case(C::Installing, S::InstallingInProgress, Ev::Register, |h, _| h.progress.current_stage = Some(HostStage::Rebooting));
    register_during_install: "register-during-install" => case(C::Installing, S::Installing, Ev::Register, |_, _| {});
    register_error: "register-error" => case(C::Error, S::Error, Ev::Register, |_, _| {});
    register_installed: "register-installed" => case(C::Installed, S::Installed, Ev::Register, |_, _| {});
    register_pool: "register-pool" => pool_case(S::KnownUnbound, Ev::Register, |_| {});
    installation_failed: "installation-failed" =>
        case(C::Installing, S::Installing, Ev::InstallationFailed { reason: "boom".into() }, |_, _| {});
    cancel_installation: "cancel-installation" => case(C::Installing, S::Installing, Ev::CancelInstallation, |_, _| {});
    cancel_preparation: "cancel-preparation" =>
        case(C::PreparingForInstallation, S::PreparingSuccessful, Ev::CancelInstallation, |_, _| {});
    cancel_known: "cancel-known" => case(C::Ready, S::Known, Ev::CancelInstallation, |_, _| {});
    install_day2: "install-day2" => day2_case(S::Known, Ev::Install, |_| {});
    reset_pending_user_action: "reset-pending-user-action" =>
        case(C::Error, S::Error, Ev::ResetPendingUserAction, |_, _| {});
    progress_day2_rebooting: "progress-day2-rebooting" =>
        day2_case(S::Installing, Ev::ProgressChanged { stage: HostStage::Rebooting }, |_| {});
    progress_day2_done: "progress-day2-done" =>
        day2_case(S::InstallingInProgress, Ev::ProgressChanged { stage: HostStage::Done }, |_| {});
    progress_done: "progress-done" =>
        case(C::Installing, S::InstallingInProgress, Ev::ProgressChanged { stage: HostStage::Done }, |_, _| {});
    progress_in_progress: "progress-in-progress" =>
        case(C::Installing, S::Installing, Ev::ProgressChanged { stage: HostStage::WritingImageToDisk }, |_, _| {});
    progress_ignored: "progress-ignored" =>
        case(C::Finalizing, S::Installed, Ev::ProgressChanged { stage: HostStage::Configuring }, |_, _| {});
    media_disconnect_pre_install: "media-disconnect-pre-install" => case(C::Ready, S::Known, Ev::MediaDisconnect, |_, _| {});
    media_disconnect_installing: "media-disconnect-installing" =>
        case(C::Installing, S::Installing, Ev::MediaDisconnect, |_, _| {});
    media_disconnect_pool: "media-disconnect-pool" => pool_case(S::KnownUnbound, Ev::MediaDisconnect, |_| {});
    bind: "bind" => pool_case(S::KnownUnbound, Ev::Bind { cluster_id: "c1".into() }, |_| {});
    unbind_pre_install: "unbind-pre-install" => case(C::Ready, S::Known, Ev::Unbind, |_, _| {});
    unbind_post_install: "unbind-post-install" => case(C::Installed, S::Installed, Ev::Unbind, |_, _| {});
    reclaim_installed: "reclaim-installed" => case(C::Installed, S::Installed, Ev::Reclaim, |_, _| {});
    reclaim_pre_install: "reclaim-pre-install" => case(C::Ready, S::Known, Ev::Reclaim, |_, _| {});
    reclaim_failed_host: "reclaim-failed-host" => case(C::Error, S::Error, Ev::Reclaim, |_, _| {});
    rebooting_for_reclaim: "rebooting-for-reclaim" => case(C::Installed, S::Reclaiming, Ev::RebootingForReclaim, |_, _| {});
    reclaim_host_failed: "reclaim-host-failed" =>
        case(C::Installed, S::ReclaimingRebooting, Ev::ReclaimFailed { reason: "no disk".into() }, |_, _| {});
    refresh_known_to_preparing: "refresh-known-to-preparing" =>
        case(C::PreparingForInstallation, S::Known, Ev::Refresh, |_, _| {});
    refresh_preparing_successful: "refresh-preparing-successful" =>
        case(C::PreparingForInstallation, S::PreparingForInstallation, Ev::Refresh, |h, _| {
            h.disk_speed = DiskSpeed::Sufficient;
            h.images_status = vec![inventory::ContainerImageAvailability { name: "x".into(), result: "success".into(), ..Default::default() }];
        });
    refresh_prepared_wait: "refresh-prepared-wait" =>
        case(C::PreparingForInstallation, S::PreparingSuccessful, Ev::Refresh, |_, _| {});
    refresh_prepared_to_installing: "refresh-prepared-to-installing" =>
        case(C::Installing, S::PreparingSuccessful, Ev::Refresh, |_, _| {});
    refresh_preparing_to_known: "refresh-preparing-to-known" =>
        case(C::Ready, S::PreparingForInstallation, Ev::Refresh, |_, _| {});
    refresh_prepared_to_known: "refresh-prepared-to-known" =>
        case(C::Ready, S::PreparingFailed, Ev::Refresh, |_, _| {});
    refresh_disk_speed_insufficient: "refresh-disk-speed-insufficient" =>
        case(C::Ready, S::Known, Ev::Refresh, |h, _| h.disk_speed = DiskSpeed::Insufficient);
    refresh_preparing_failed: "refresh-preparing-failed" =>
        case(C::PreparingForInstallation, S::PreparingForInstallation, Ev::Refresh, |h, _| {
            h.images_status = vec![inventory::ContainerImageAvailability { name: "x".into(), result: "failure".into(), ..Default::default() }];
        });
    refresh_preparing_failed_timeout: "refresh-preparing-failed" =>
        case(C::PreparingForInstallation, S::PreparingForInstallation, Ev::Refresh, |h, _| {
            h.preparation_started_at = Some(mins(t0(), -9));
        });
    refresh_disconnected: "refresh-disconnected" => case(C::Ready, S::Known, Ev::Refresh, |h, _| stale(h));
    refresh_disconnected_media: "refresh-disconnected" =>
        case(C::Ready, S::Known, Ev::Refresh, |h, _| h.media_connected = false);
    refresh_preparing_disconnected: "refresh-preparing-disconnected" =>
        case(C::PreparingForInstallation, S::PreparingForInstallation, Ev::Refresh, |h, _| {
            stale(h);
            h.preparation_started_at = Some(t0());
        });
    refresh_installing_disconnected: "refresh-installing-disconnected" =>
        case(C::Installing, S::Installing, Ev::Refresh, |h, _| stale(h));
    refresh_installing_disconnected_soft: "refresh-installing-disconnected-soft" => {
        let mut c = case(C::Installing, S::Installing, Ev::Refresh, |h, _| stale(h));
        c.cfg.soft_timeouts = true;
        c
    };
    refresh_cluster_error: "refresh-cluster-error" =>
        case(C::Error, S::InstallingInProgress, Ev::Refresh, |h, _| h.progress.current_stage = Some(HostStage::Rebooting));
    refresh_installing_timeout: "refresh-installing-timeout" =>
        case(C::Installing, S::Installing, Ev::Refresh, |h, _| h.status_updated_at = mins(t0(), -21));
    refresh_reboot_timeout: "refresh-reboot-timeout" =>
        case(C::Installing, S::InstallingInProgress, Ev::Refresh, |h, _| {
            h.progress.current_stage = Some(HostStage::Rebooting);
            h.progress.stage_started_at = Some(mins(t0(), -41));
        });
    refresh_stage_timeout: "refresh-stage-timeout" =>
        case(C::Installing, S::InstallingInProgress, Ev::Refresh, |h, _| {
            h.progress.current_stage = Some(HostStage::Installing);
            h.progress.stage_started_at = Some(mins(t0(), -61));
        });
    refresh_stage_timeout_soft: "refresh-stage-timeout-soft" => {
        let mut c = case(C::Installing, S::InstallingInProgress, Ev::Refresh, |h, _| {
            h.progress.current_stage = Some(HostStage::Installing);
            h.progress.stage_started_at = Some(mins(t0(), -61));
        });
        c.cfg.soft_timeouts = true;
        c
    };
    refresh_pending_user_action_timeout: "refresh-pending-user-action-timeout" =>
        case(C::Installing, S::InstallingPendingUserAction, Ev::Refresh, |h, c| {
            h.role = HostRole::Worker;
            h.status_updated_at = mins(t0(), -61);
            c.hosts[0].role = HostRole::Worker;
            c.hosts[4].role = HostRole::Master;
            for o in c.hosts.iter_mut().skip(1) {
                o.status = HostStatus::Installed;
            }
        });
    refresh_no_inventory: "refresh-no-inventory" => case(C::Ready, S::Known, Ev::Refresh, |h, _| h.inventory = None);
    refresh_min_hardware: "refresh-min-hardware" =>
        case(C::Ready, S::Known, Ev::Refresh, |h, _| h.inventory.as_mut().unwrap().cpu.count = 1);
    refresh_user_input: "refresh-user-input" =>
        case(C::PendingForInput, S::Known, Ev::Refresh, |_, c| c.machine_networks.clear());
    refresh_insufficient: "refresh-insufficient" =>
        case(C::Ready, S::Known, Ev::Refresh, |h, _| h.requested_hostname = Some("localhost".into()));
    refresh_known: "refresh-known" => case(C::Ready, S::Insufficient, Ev::Refresh, |_, _| {});
    refresh_reclaim_timeout: "refresh-reclaim-timeout" =>
        case(C::Installed, S::Reclaiming, Ev::Refresh, |h, _| h.status_updated_at = mins(t0(), -61));
    pool_disconnected: "pool-disconnected" => pool_case(S::KnownUnbound, Ev::Refresh, stale);
    pool_no_inventory: "pool-no-inventory" => pool_case(S::KnownUnbound, Ev::Refresh, |h| h.inventory = None);
    pool_insufficient: "pool-insufficient" =>
        pool_case(S::KnownUnbound, Ev::Refresh, |h| h.inventory.as_mut().unwrap().memory.physical_bytes = GIB);
    pool_known: "pool-known" => pool_case(S::DiscoveringUnbound, Ev::Refresh, |_| {});
}

#[test]
fn every_host_row_is_tested() {
    assert_every_row_tested(HOST_TRANSITIONS, TESTED);
}

#[test]
fn row_names_are_unique() {
    assert_row_names_unique(HOST_TRANSITIONS);
}

#[test]
fn every_host_row_says_why() {
    assert_every_row_says_why(HOST_TRANSITIONS);
}

#[test]
fn unmatched_events_are_rejected() {
    let c = case(C::Installed, S::Installed, Ev::Install, |_, _| {});
    let err = apply_host_event(&c.host, c.cluster.as_ref(), &c.event, c.now, &c.cfg).unwrap_err();
    assert!(matches!(err, HostEventError::NotAllowed { .. }));
    // Only known-unbound hosts can be bound.
    let p = pool_case(
        S::DiscoveringUnbound,
        Ev::Bind {
            cluster_id: "c1".into(),
        },
        |_| {},
    );
    assert!(apply_host_event(&p.host, None, &p.event, p.now, &p.cfg).is_err());
}

#[test]
fn refresh_without_row_is_a_noop() {
    let c = case(C::Installed, S::Installed, Ev::Refresh, |_, _| {});
    let out = refresh_host(&c.host, c.cluster.as_ref(), c.now, &c.cfg);
    assert_eq!(out.transition, None);
    assert!(!out.changed);
    assert!(out.validations.is_some());
}

#[test]
fn status_infos_match_the_contract() {
    let c = case(C::Ready, S::Known, Ev::Refresh, |h, _| {
        h.inventory.as_mut().unwrap().cpu.count = 1
    });
    let out = refresh_host(&c.host, c.cluster.as_ref(), c.now, &c.cfg);
    assert!(
        out.status_info
            .starts_with("Host does not meet the minimum hardware requirements: ")
    );
    let c = case(C::Ready, S::Known, Ev::Refresh, |h, _| stale(h));
    let out = refresh_host(&c.host, c.cluster.as_ref(), c.now, &c.cfg);
    assert_eq!(
        out.status_info,
        "Host has stopped communicating with the installation service"
    );
    let c = case(C::Ready, S::Insufficient, Ev::Refresh, |_, _| {});
    assert_eq!(
        refresh_host(&c.host, c.cluster.as_ref(), c.now, &c.cfg).status_info,
        "Host is ready to be installed"
    );
    let c = case(C::Error, S::Installing, Ev::Refresh, |_, _| {});
    assert_eq!(
        refresh_host(&c.host, c.cluster.as_ref(), c.now, &c.cfg).status_info,
        "Host is part of a cluster that failed to install"
    );
}

#[test]
fn progress_updates() {
    let c = case(C::Installing, S::Installing, Ev::Refresh, |_, _| {});
    let cl = c.cluster.as_ref();
    let out = update_host_progress(&c.host, cl, HostStage::Installing, "", c.now, &c.cfg).unwrap();
    assert_eq!(out.status, S::InstallingInProgress);
    assert_eq!(out.status_info, "Installing");
    let p = out.progress.clone().unwrap();
    assert_eq!(p.installation_percentage, 25);
    let mut h = c.host.clone();
    apply_host_outcome(&mut h, &out, c.now);
    // Backwards is rejected, Failed goes to error.
    let err = update_host_progress(&h, cl, HostStage::StartingInstallation, "", c.now, &c.cfg)
        .unwrap_err();
    assert!(matches!(err, HostEventError::StageBackwards { .. }));
    let out = update_host_progress(&h, cl, HostStage::Failed, "disk gone", c.now, &c.cfg).unwrap();
    assert_eq!(
        (out.status, out.status_info.as_str()),
        (S::Error, "Failed - disk gone")
    );
    // Not installing: 409.
    let k = case(C::Ready, S::Known, Ev::Refresh, |_, _| {});
    assert!(matches!(
        update_host_progress(
            &k.host,
            k.cluster.as_ref(),
            HostStage::Installing,
            "",
            k.now,
            &k.cfg
        ),
        Err(HostEventError::ProgressNotAllowed { .. })
    ));
}

#[test]
fn bind_and_unbind_effects() {
    let p = pool_case(
        S::KnownUnbound,
        Ev::Bind {
            cluster_id: "c1".into(),
        },
        |_| {},
    );
    let out = apply_host_event(&p.host, None, &p.event, p.now, &p.cfg).unwrap();
    let mut h = p.host.clone();
    apply_host_outcome(&mut h, &out, p.now);
    assert_eq!(h.cluster_id.as_deref(), Some("c1"));
    assert_eq!(h.status, S::Binding);
    let out = apply_host_event(&h, None, &Ev::Register, p.now, &p.cfg).unwrap();
    assert_eq!(out.status, S::Discovering);
    let c = case(C::Ready, S::Known, Ev::Unbind, |_, _| {});
    let out = apply_host_event(&c.host, c.cluster.as_ref(), &c.event, c.now, &c.cfg).unwrap();
    let mut h = c.host.clone();
    apply_host_outcome(&mut h, &out, c.now);
    assert!(h.cluster_id.is_none());
    let out = apply_host_event(&h, None, &Ev::Register, c.now, &c.cfg).unwrap();
    assert_eq!(out.status, S::DiscoveringUnbound);
}

#[test]
fn registration_rules() {
    let cfg = Config::default();
    let mut c = cluster_3_2(t0());
    match register_host("n1", "infra-1", None, Some(&c), t0(), &cfg).unwrap() {
        Registration::New(h) => assert_eq!((h.status, h.kind), (S::Discovering, HostKind::Host)),
        other => panic!("{other:?}"),
    }
    c.status = C::Installed;
    let err = register_host("n1", "infra-1", None, Some(&c), t0(), &cfg).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot add hosts to an existing cluster using the original Discovery ISO."
    );
    c.status = C::Installing;
    assert!(register_host("n1", "infra-1", None, Some(&c), t0(), &cfg).is_err());
    c.status = C::AddingHosts;
    c.kind = ClusterKind::AddHostsCluster;
    match register_host("n1", "infra-1", None, Some(&c), t0(), &cfg).unwrap() {
        Registration::New(h) => assert_eq!(
            (h.kind, h.role),
            (HostKind::AddToExistingClusterHost, HostRole::Worker)
        ),
        other => panic!("{other:?}"),
    }
    let h = HostSnapshot::new_registered("n1", "infra-1", None, t0());
    assert!(
        matches!(register_host("n1", "infra-1", None, None, t0(), &cfg).unwrap(), Registration::New(x) if x.status == S::DiscoveringUnbound)
    );
    let cmd = next_step_runner_command(&h, "quay.io/agent:1");
    let req: NextStepCmdRequest = serde_json::from_str(&cmd.args[0]).unwrap();
    assert_eq!(
        (req.host_id.as_str(), req.infra_env_id.as_str()),
        ("n1", "infra-1")
    );
}

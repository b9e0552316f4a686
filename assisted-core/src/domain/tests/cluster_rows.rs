//! One test per cluster transition row; `every_cluster_row_is_tested` keeps the list complete.

use super::fixtures::*;
use super::table_checks::*;
use crate::domain::*;

use ClusterStatus as C;
use HostStatus as S;

/// 3+2 cluster in `cs` with roles fixed (h3 bootstrap) and every host in `hs`.
fn cl(cs: ClusterStatus, hs: HostStatus, f: impl FnOnce(&mut ClusterSnapshot)) -> ClusterSnapshot {
    let mut c = cluster_3_2_with_hosts(t0());
    c.status = cs;
    masters_then_workers(&mut c);
    for (i, h) in c.hosts.iter_mut().enumerate() {
        h.bootstrap = i == 2;
        h.status = hs;
    }
    f(&mut c);
    c
}

fn check(row: &str, c: ClusterSnapshot, ev: ClusterEvent, cfg: Config) {
    let out = apply_cluster_event(&c, ev, t0(), &cfg).unwrap_or_else(|e| panic!("row {row}: {e}"));
    assert_eq!(
        out.transition,
        Some(row),
        "outcome {} / {}",
        out.status,
        out.status_info
    );
    let expected = row_destination(CLUSTER_TRANSITIONS, row, c.status);
    assert_eq!(out.status, expected);
    let mut c2 = c.clone();
    apply_cluster_outcome(&mut c2, &out, t0());
    assert_eq!(c2.status, expected);
}

macro_rules! cluster_rows {
    ($($test:ident: $row:literal => $ev:ident, $c:expr $(, $cfg:expr)?;)+) => {
        $(#[test] fn $test() {
            #[allow(unused_mut)]
            let mut cfg = Config::default();
            $( $cfg(&mut cfg); )?
            check($row, $c, ClusterEvent::$ev, cfg)
        })+
        const TESTED: &[&str] = &[$($row),+];
    };
}

fn soft(cfg: &mut Config) {
    cfg.soft_timeouts = true;
}

cluster_rows! {
    cancel_installation: "cancel-installation" => CancelInstallation, cl(C::Installing, S::Installing, |_| {});
    cancel_preparation: "cancel-preparation" => CancelInstallation, cl(C::PreparingForInstallation, S::PreparingSuccessful, |_| {});
    reset: "reset" => ResetCluster, cl(C::Error, S::Error, |_| {});
    prepare_for_installation: "prepare-for-installation" => PrepareForInstallation, cl(C::Ready, S::Known, |_| {});
    refresh_pending_input: "refresh-pending-input" => RefreshCluster, cl(C::Ready, S::Known, |c| c.base_domain.clear());
    refresh_pending_input_vips: "refresh-pending-input" => RefreshCluster, cl(C::Ready, S::Known, |c| c.api_vips.clear());
    refresh_insufficient: "refresh-insufficient" => RefreshCluster, cl(C::Ready, S::Known, |c| c.hosts[0].status = S::Insufficient);
    refresh_ready: "refresh-ready" => RefreshCluster, cl(C::Insufficient, S::Known, |_| {});
    refresh_prepare_timeout: "refresh-prepare-timeout" => RefreshCluster,
        cl(C::PreparingForInstallation, S::PreparingForInstallation, |c| c.status_updated_at = mins(t0(), -11));
    refresh_prepared_to_installing: "refresh-prepared-to-installing" => RefreshCluster,
        cl(C::PreparingForInstallation, S::PreparingSuccessful, |c| c.preparation = PreparationStatus::Success);
    refresh_host_left_preparing: "refresh-host-left-preparing" => RefreshCluster,
        cl(C::PreparingForInstallation, S::PreparingForInstallation, |c| c.hosts[1].status = S::Disconnected);
    refresh_preparation_failed: "refresh-preparation-failed" => RefreshCluster,
        cl(C::PreparingForInstallation, S::PreparingForInstallation, |c| c.hosts[1].status = S::PreparingFailed);
    refresh_installing_to_finalizing: "refresh-installing-to-finalizing" => RefreshCluster, cl(C::Installing, S::Installed, |_| {});
    refresh_installing_error: "refresh-installing-error" => RefreshCluster,
        cl(C::Installing, S::InstallingInProgress, |c| c.hosts[0].status = S::Error);
    refresh_pending_user_action: "refresh-pending-user-action" => RefreshCluster,
        cl(C::Installing, S::InstallingInProgress, |c| c.hosts[4].status = S::InstallingPendingUserAction);
    refresh_pua_to_finalizing: "refresh-pua-to-finalizing" => RefreshCluster, cl(C::InstallingPendingUserAction, S::Installed, |_| {});
    refresh_pua_to_installing: "refresh-pua-to-installing" => RefreshCluster,
        cl(C::InstallingPendingUserAction, S::InstallingInProgress, |_| {});
    refresh_pua_error: "refresh-pua-error" => RefreshCluster, cl(C::InstallingPendingUserAction, S::Error, |c| {
        c.hosts[4].status = S::InstallingPendingUserAction;
    });
    refresh_pua_timeout: "refresh-pua-timeout" => RefreshCluster, cl(C::InstallingPendingUserAction, S::InstallingInProgress, |c| {
        c.hosts[4].status = S::InstallingPendingUserAction;
        c.install_started_at = Some(mins(t0(), -25 * 60));
    });
    refresh_install_timeout_soft: "refresh-install-timeout-soft" => RefreshCluster, cl(C::Installing, S::InstallingInProgress, |c| {
        c.install_started_at = Some(mins(t0(), -25 * 60));
    }), soft;
    refresh_finalizing_timeout: "refresh-finalizing-timeout" => RefreshCluster, cl(C::Finalizing, S::Installed, |c| {
        c.finalizing_started_at = Some(mins(t0(), -6 * 60));
    });
    refresh_finalizing_stage_timeout: "refresh-finalizing-stage-timeout" => RefreshCluster, cl(C::Finalizing, S::Installed, |c| {
        c.finalizing_started_at = Some(mins(t0(), -80));
        c.finalizing_stage = Some(FinalizingStage::AddingRouterCa);
        c.finalizing_stage_started_at = Some(mins(t0(), -71));
    });
    refresh_installed: "refresh-installed" => RefreshCluster, cl(C::Finalizing, S::Installed, |c| {
        c.kubeconfig_uploaded = true;
        c.monitored_operators[0].status = Some(OperatorStatus::Available);
    });
    refresh_stable: "refresh-stable" => RefreshCluster, cl(C::Installed, S::Installed, |_| {});
}

#[test]
fn every_cluster_row_is_tested() {
    assert_every_row_tested(CLUSTER_TRANSITIONS, TESTED);
}

#[test]
fn cluster_row_names_are_unique() {
    assert_row_names_unique(CLUSTER_TRANSITIONS);
}

#[test]
fn every_cluster_row_says_why() {
    assert_every_row_says_why(CLUSTER_TRANSITIONS);
}

#[test]
fn cluster_status_infos() {
    let cfg = Config::default();
    let c = cl(C::Finalizing, S::Installed, |c| {
        c.kubeconfig_uploaded = true;
        c.monitored_operators[0].status = Some(OperatorStatus::Available);
        c.monitored_operators.push(MonitoredOperator {
            name: "lso".into(),
            kind: OperatorType::Olm,
            status: Some(OperatorStatus::Failed),
        });
    });
    assert_eq!(
        refresh_cluster(&c, t0(), &cfg).status_info,
        "Cluster is installed but degraded"
    );
    let c = cl(C::Insufficient, S::Known, |_| {});
    assert_eq!(
        refresh_cluster(&c, t0(), &cfg).status_info,
        "Cluster ready to be installed"
    );
    let c = cl(C::Ready, S::Known, |c| c.pull_secret_set = false);
    assert_eq!(
        refresh_cluster(&c, t0(), &cfg).status_info,
        "User input required"
    );
    let cfg2 = Config {
        soft_timeouts: true,
        ..Default::default()
    };
    let c = cl(C::Installing, S::InstallingInProgress, |c| {
        c.install_started_at = Some(mins(t0(), -25 * 60))
    });
    assert_eq!(
        refresh_cluster(&c, t0(), &cfg2).status_info,
        "cluster installation timeout (1440 minutes) has expired"
    );
}

#[test]
fn finalizing_waits_for_kubeconfig_and_console() {
    let cfg = Config::default();
    let c = cl(C::Finalizing, S::Installed, |c| {
        c.kubeconfig_uploaded = true
    });
    assert_eq!(refresh_cluster(&c, t0(), &cfg).status, C::Finalizing);
    let c = cl(C::Finalizing, S::Installed, |c| {
        c.monitored_operators[0].status = Some(OperatorStatus::Available)
    });
    assert_eq!(refresh_cluster(&c, t0(), &cfg).status, C::Finalizing);
}

#[test]
fn transform_to_day2_only_from_installed() {
    let c = cl(C::Installed, S::Installed, |_| {});
    let out = transform_to_day2(&c).unwrap();
    let mut c2 = c.clone();
    apply_cluster_outcome(&mut c2, &out, t0());
    assert_eq!(
        (c2.status, c2.kind),
        (C::AddingHosts, ClusterKind::AddHostsCluster)
    );
    assert!(transform_to_day2(&cl(C::Installing, S::Installed, |_| {})).is_err());
}

#[test]
fn rejected_cluster_events() {
    let cfg = Config::default();
    let c = cl(C::Insufficient, S::Known, |_| {});
    assert!(apply_cluster_event(&c, ClusterEvent::PrepareForInstallation, t0(), &cfg).is_err());
    assert!(apply_cluster_event(&c, ClusterEvent::CancelInstallation, t0(), &cfg).is_err());
}

#[test]
fn known_hosts_right_after_install_start_do_not_abort_preparation() {
    // The cluster monitor may run before the host monitor moved hosts to preparing.
    let c = cl(C::PreparingForInstallation, S::Known, |_| {});
    let out = refresh_cluster(&c, t0(), &Config::default());
    assert_eq!(out.status, C::PreparingForInstallation);
}

//! Property tests: random event sequences and arbitrary agent input.

use proptest::prelude::*;

use super::fixtures::*;
use crate::domain::*;

fn host_status() -> impl Strategy<Value = HostStatus> {
    proptest::sample::select(HostStatus::ALL)
}
fn cluster_status() -> impl Strategy<Value = ClusterStatus> {
    proptest::sample::select(ClusterStatus::ALL)
}
fn stage() -> impl Strategy<Value = Option<HostStage>> {
    proptest::option::of(proptest::sample::select(HostStage::ALL))
}
fn role() -> impl Strategy<Value = HostRole> {
    proptest::sample::select(&[HostRole::AutoAssign, HostRole::Master, HostRole::Worker][..])
}

fn host_event() -> impl Strategy<Value = HostEvent> {
    prop_oneof![
        Just(HostEvent::Register),
        Just(HostEvent::InstallationFailed { reason: "x".into() }),
        Just(HostEvent::CancelInstallation),
        Just(HostEvent::Install),
        Just(HostEvent::ResetPendingUserAction),
        Just(HostEvent::Refresh),
        Just(HostEvent::Refresh),
        Just(HostEvent::Refresh),
        proptest::sample::select(HostStage::ALL)
            .prop_map(|stage| HostEvent::ProgressChanged { stage }),
        Just(HostEvent::MediaDisconnect),
        Just(HostEvent::Bind {
            cluster_id: "c1".into()
        }),
        Just(HostEvent::Unbind),
        Just(HostEvent::Reclaim),
        Just(HostEvent::RebootingForReclaim),
        Just(HostEvent::ReclaimFailed { reason: "y".into() }),
    ]
}

/// Where a terminal host state may go, and through which events only.
fn allowed_exit(from: HostStatus, to: HostStatus) -> bool {
    use HostStatus as S;
    match from {
        S::Installed => matches!(
            to,
            S::Installed
                | S::Cancelled
                | S::Error
                | S::ResettingPendingUserAction
                | S::UnbindingPendingUserAction
                | S::Reclaiming
        ),
        S::AddedToExistingCluster => matches!(
            to,
            S::AddedToExistingCluster
                | S::InstallingPendingUserAction
                | S::ResettingPendingUserAction
                | S::UnbindingPendingUserAction
                | S::Reclaiming
        ),
        _ => true,
    }
}

proptest! {
    // No regression files: they would land outside this module's directory.
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn host_event_sequences_respect_terminal_states(
        start in host_status(),
        cs in cluster_status(),
        st in stage(),
        day2 in any::<bool>(),
        bound in any::<bool>(),
        steps in proptest::collection::vec((host_event(), 0i64..120), 1..25),
    ) {
        let mut c = cluster_3_2_with_hosts(t0());
        c.status = cs;
        let cfg = Config::default();
        let mut h = c.hosts[0].clone();
        h.status = start;
        h.progress.current_stage = st;
        if day2 { h.kind = HostKind::AddToExistingClusterHost; }
        if !bound || start.is_unbound_state() { h.cluster_id = None; }
        let mut now = t0();
        for (ev, dt) in steps {
            now = mins(now, dt);
            let cluster = h.cluster_id.as_ref().map(|_| &c);
            let before = h.status;
            let res = match &ev {
                HostEvent::ProgressChanged { stage } => update_host_progress(&h, cluster, *stage, "", now, &cfg),
                _ => apply_host_event(&h, cluster, &ev, now, &cfg),
            };
            if let Ok(out) = res {
                prop_assert!(allowed_exit(before, out.status), "{before} -> {} via {ev:?}", out.status);
                apply_host_outcome(&mut h, &out, now);
                // Pool states never carry a cluster.
                if h.status.is_unbound_state() { prop_assert!(h.cluster_id.is_none(), "{} with cluster", h.status); }
            }
        }
    }

    #[test]
    fn installed_cluster_always_has_enough_installed_hosts(
        cs in cluster_status(),
        statuses in proptest::collection::vec((host_status(), role()), 1..7),
        sno in any::<bool>(),
        kubeconfig in any::<bool>(),
        console in any::<bool>(),
        steps in proptest::collection::vec((
            0i64..600,
            proptest::option::of((0usize..7, host_status())),
            proptest::option::of(proptest::sample::select(&[
                ClusterEvent::CancelInstallation,
                ClusterEvent::ResetCluster,
                ClusterEvent::PrepareForInstallation,
            ][..])),
        ), 1..20),
    ) {
        let mut c = cluster_3_2_with_hosts(t0());
        c.hosts.truncate(statuses.len().min(5));
        if sno { c.control_plane_count = 1; c.worker_count = 0; }
        c.status = cs;
        c.kubeconfig_uploaded = kubeconfig;
        c.preparation = PreparationStatus::Success;
        if console { c.monitored_operators[0].status = Some(OperatorStatus::Available); }
        for (h, (s, r)) in c.hosts.iter_mut().zip(statuses.iter()) {
            h.status = *s;
            h.role = *r;
        }
        let cfg = Config::default();
        let mut now = t0();
        for (dt, change, event) in steps {
            now = mins(now, dt);
            if let Some(ev) = event {
                let before = c.status;
                if let Ok(out) = apply_cluster_event(&c, ev, now, &cfg) {
                    prop_assert!(before != ClusterStatus::Installed, "{ev:?} left installed");
                    apply_cluster_outcome(&mut c, &out, now);
                }
            }
            if let Some((i, s)) = change {
                let n = c.hosts.len();
                c.hosts[i % n].status = s;
            }
            let before = c.status;
            let out = refresh_cluster(&c, now, &cfg);
            if out.status == ClusterStatus::Installed && before != ClusterStatus::Installed {
                let views = HostView::from_cluster(&c, &cfg);
                prop_assert!(has_enough_masters_and_workers(&c, &views, &[HostStatus::Installed]));
            }
            if before == ClusterStatus::Installed {
                prop_assert_eq!(out.status, ClusterStatus::Installed, "installed is terminal under refresh");
            }
            if out.status == ClusterStatus::Finalizing && before == ClusterStatus::Installing {
                let views = HostView::from_cluster(&c, &cfg);
                prop_assert!(has_enough_masters_and_workers(&c, &views, &[HostStatus::Installed]));
            }
            apply_cluster_outcome(&mut c, &out, now);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let inv = inventory::Inventory::parse(&bytes);
        exercise_inventory(inv);
        if let Some(r) = StepReply::parse(&bytes) {
            let mut h = cluster_3_2_with_hosts(t0()).hosts[0].clone();
            let _ = apply_step_reply(&mut h, &r, &Config::default());
        }
    }

    #[test]
    fn arbitrary_inventory_json_never_panics(v in json_value()) {
        let doc = serde_json::json!({
            "hostname": v.clone(), "cpu": {"count": v.clone()}, "memory": {"physical_bytes": v.clone()},
            "disks": [v.clone(), {"size_bytes": v.clone(), "drive_type": v.clone()}],
            "interfaces": [{"ipv4_addresses": [v.clone()], "name": v.clone()}], "routes": v.clone(),
            "truncation": v.clone(),
        });
        let inv = inventory::Inventory::parse(doc.to_string().as_bytes());
        exercise_inventory(inv);
        let inv = inventory::Inventory::parse(v.to_string().as_bytes());
        exercise_inventory(inv);
        for t in StepType::ALL {
            let reply = StepReply { step_type: t.as_str().into(), step_id: "x".into(), exit_code: 0, output: doc.to_string(), error: String::new() };
            let mut h = cluster_3_2_with_hosts(t0()).hosts[0].clone();
            let _ = apply_step_reply(&mut h, &reply, &Config::default());
        }
    }
}

/// Runs everything that reads an inventory: validations, refresh, next steps.
fn exercise_inventory(inv: inventory::Inventory) {
    let cfg = Config::default();
    let mut c = cluster_3_2_with_hosts(t0());
    c.hosts[0].inventory = Some(inv);
    for st in [
        HostStatus::Known,
        HostStatus::Installing,
        HostStatus::PreparingForInstallation,
    ] {
        c.hosts[0].status = st;
        let out = refresh_host(&c.hosts[0], Some(&c), t0(), &cfg);
        if st == HostStatus::Known && out.status == HostStatus::Known {
            // A garbage inventory can never look installable.
            let v = out.validations.as_ref().unwrap();
            assert!(v.all_ok(MIN_HW_GATE));
        }
        let _ = next_steps(&NextStepsInput {
            host: &c.hosts[0],
            cluster: Some(&c),
            cfg: &cfg,
            seed: 1,
            boot_artifacts: None,
            connectivity_check: true,
        });
    }
    let _ = refresh_all(&c, t0(), &cfg);
    let _ = validate_cluster(&c, &cfg);
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        "[a-z0-9./:-]{0,12}".prop_map(serde_json::Value::String),
        Just(serde_json::json!(u64::MAX)),
        Just(serde_json::json!(-1)),
        Just(serde_json::json!("192.168.1.300/99")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

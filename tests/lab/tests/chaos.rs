//! `--chaos managers` end to end on the compact topology (three schedulable masters, no
//! workers: the three control-plane Machines are created by our control-plane provider, so a
//! restart that duplicated one would show): both managers are SIGKILLed mid-install and started
//! again; the install still completes, with no duplicate InfraEnv, Machine or Agent, and the
//! kills are in the report. The seed is random (printed; set `LAB_CHAOS_SEED` to repeat a run's
//! plan). The apiserver restart of `--chaos all` is left out: after it our managers stall for
//! minutes (docs/lab.md "Chaos").

use lab::{Options, Topology};
use serde_json::Value;

use crate::common::{DAY1_MILESTONES, milestones, options, run_ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_installs_while_managers_are_killed() {
    if testbed::skip() {
        return;
    }
    let seed = std::env::var("LAB_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("chaos seed {seed} (LAB_CHAOS_SEED={seed} repeats it)");
    let (report, dir) = run_ok(
        &format!("chaos-seed-{seed}"),
        Options {
            topology: Topology::Compact,
            workers: 0,
            report: Some("report.json".into()),
            chaos: Some(lab::chaos::Settings {
                seed,
                apiserver: false,
            }),
            ..options()
        },
    )
    .await;
    let report_file = dir.path().join("report.json");
    assert_eq!(milestones(&report), DAY1_MILESTONES);
    let chaos = report.chaos.as_ref().expect("a chaos report");
    assert_eq!(chaos.seed, seed);
    // Each manager was killed mid-install and came back; the apiserver was left alone.
    for target in ["controlplane-provider", "bootstrap-provider"] {
        assert!(
            chaos
                .kills
                .iter()
                .any(|k| k.target == target && k.mid_install && k.ready_at.is_some()),
            "seed {seed}: {target} was not killed mid-install and back: {:?}",
            chaos.kills
        );
    }
    assert!(chaos.kills.iter().all(|k| k.target != "kube-apiserver"));
    assert!(chaos.kills.iter().all(|k| k.ready_at >= k.started_at));
    assert!(
        chaos.not_carried_out.is_empty(),
        "{:?}",
        chaos.not_carried_out
    );

    // Exactly what a compact cluster has, never more at once: one InfraEnv, three
    // control-plane Machines, three Agents.
    let c = &report.clusters[0];
    assert_eq!(
        c.max_seen,
        lab::MaxSeen {
            infraenvs: 1,
            control_plane_machines: 3,
            worker_machines: 0,
            agents: 3,
        }
    );
    let check = c.install_check.as_ref().expect("read back once installed");
    assert!(check.schedulable_masters, "compact: masters schedulable");
    assert!(check.release_image.starts_with(lab::OCP_RELEASE_REPOSITORY));

    // The kills are in the JSON report.
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(&report_file).expect("the report is written"),
    )
    .expect("the report is JSON");
    assert_eq!(json["ok"], true);
    assert_eq!(json["chaos"]["seed"], seed);
    let kills = json["chaos"]["kills"].as_array().expect("kills");
    assert_eq!(kills.len(), chaos.kills.len());
    assert!(kills.iter().all(|k| k["killed_at"].as_f64().is_some()));
    assert_eq!(json["clusters"][0]["max_seen"]["control_plane_machines"], 3);
    assert_eq!(
        json["clusters"][0]["install_check"]["schedulable_masters"],
        true
    );
}

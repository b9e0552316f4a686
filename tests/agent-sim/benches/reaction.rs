//! Reaction time of the embedded core from the last Agent approval to the day-1 install start,
//! on the real testbed (kube-apiserver + kube-controller-manager, the core with the lab backend,
//! simulated hosts booted from the ISO the core serves).
//!
//! Run: `cargo bench -p agent-sim --bench reaction` (`REACTION_RUNS` sets the repetitions,
//! default 5). With `CAPOA_TESTBED_SKIP=1` it prints a line and exits 0.
//!
//! Each run is a fresh namespace with a 3+2 cluster. The five Agents are left unapproved until
//! every one is `known` and the ACI says `UnapprovedAgents`, so nothing but the approvals is
//! pending; then all five are approved and the ACI `status.debugInfo.state` is polled every
//! 10 ms until it leaves the pre-install states. The clock starts when the apiserver
//! acknowledges the last approval PATCH.

use std::time::{Duration, Instant};

use agent_sim::HostProfile;
use assisted_core::api::agent::Agent;
use assisted_core::api::agentclusterinstall::AgentClusterInstall;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use testbed::Testbed;

#[path = "../tests/common/mod.rs"]
mod common;
use common::{LabFlags, MACHINE_CIDR, boot_hosts, cluster_yaml, start_core, test_iso, wait_for};

const POLL: Duration = Duration::from_millis(10);
/// ACI states before the install starts; anything else means the core reacted.
const PRE_INSTALL: &[&str] = &["", "insufficient", "ready", "pending-for-input"];

fn aci_state(a: &AgentClusterInstall) -> String {
    a.status
        .as_ref()
        .and_then(|s| s.debug_info.state.clone())
        .unwrap_or_default()
}

fn requirements_reason(a: &AgentClusterInstall) -> String {
    a.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "RequirementsMet"))
        .and_then(|c| c.reason.clone())
        .unwrap_or_default()
}

/// One measurement: a fresh 3+2 cluster in namespace `ns`; returns (reaction, PATCH round trip).
async fn run_once(tb: &Testbed, k: u32) -> (Duration, Duration, String) {
    let client = tb.client.clone();
    let (ns, name) = (format!("reaction-{k}"), format!("rc{k}"));
    tb.apply_yaml(&cluster_yaml(&ns, &name, 3, 2))
        .await
        .expect("apply");
    // Distinct indexes per run: host UUIDs and IPs must not collide with earlier runs.
    let profiles = (0..3)
        .map(|i| HostProfile::master_like(3 * k + i, MACHINE_CIDR).unwrap())
        .chain((0..2).map(|i| HostProfile::worker_like(2 * k + i, MACHINE_CIDR).unwrap()))
        .collect();
    let mut hosts = boot_hosts(
        &client,
        &ns,
        &name,
        profiles,
        (&["192.168.111.5"], &["192.168.111.4"]),
    )
    .await
    .hosts;

    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    let acis: Api<AgentClusterInstall> = Api::namespaced(client.clone(), &ns);
    let list = wait_for(
        "5 known Agents and RequirementsMet=UnapprovedAgents",
        Duration::from_secs(120),
        || async {
            let l = agents.list(&Default::default()).await.ok()?.items;
            let known = l.len() == 5
                && l.iter().all(|a| {
                    a.status
                        .as_ref()
                        .and_then(|s| s.debug_info.state.as_deref())
                        == Some("known")
                });
            let a = acis.get(&name).await.ok()?;
            (known && requirements_reason(&a) == "UnapprovedAgents").then_some(l)
        },
    )
    .await;
    let before = aci_state(&acis.get(&name).await.expect("ACI"));

    let mut acked = Instant::now();
    let mut patch_rtt = Duration::ZERO;
    for a in &list {
        let sent = Instant::now();
        agents
            .patch(
                &a.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"approved": true}})),
            )
            .await
            .expect("approve");
        acked = Instant::now();
        patch_rtt = acked - sent;
    }
    let after = loop {
        let s = aci_state(&acis.get(&name).await.expect("ACI"));
        if !PRE_INSTALL.contains(&s.as_str()) {
            break s;
        }
        if acked.elapsed() > Duration::from_secs(60) {
            panic!("ACI {ns}/{name} still {s:?} 60 s after the approvals");
        }
        tokio::time::sleep(POLL).await;
    };
    let reaction = acked.elapsed();
    // The agents would go on installing; this run's figure is taken.
    for h in &mut hosts {
        h.kill();
    }
    (reaction, patch_rtt, format!("{before} -> {after}"))
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() {
    if testbed::skip() {
        println!("reaction: skipped (no testbed)");
        return;
    }
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let runs: u32 = std::env::var("REACTION_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let tb = Testbed::builder()
        .name("bench-reaction")
        .controller_manager()
        .our_crds()
        .start()
        .await
        .expect("testbed");
    let dir = tempfile::tempdir().unwrap();
    let iso = test_iso(dir.path());
    let core = start_core(
        tb.client.clone(),
        &dir.path().join("data"),
        &iso,
        0,
        0,
        &LabFlags::default(),
    )
    .await;

    println!(
        "last Agent approval acknowledged -> ACI leaves ready (3+2 cluster, ACI polled every 10 ms)"
    );
    let mut times = Vec::new();
    for k in 0..runs {
        let (t, rtt, change) = run_once(&tb, k).await;
        println!(
            "run {}: {} ms ({change}; last approval PATCH round trip {} ms)",
            k + 1,
            ms(t),
            ms(rtt)
        );
        times.push(t);
    }
    times.sort_unstable();
    println!(
        "reaction over {runs} runs: min {} ms, median {} ms, max {} ms (budget 1000 ms)",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
    core.kill().await;
}

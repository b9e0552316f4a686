//! End-to-end benchmark of the release `assisted-core` binary on a real kube-apiserver and etcd
//! (the testbed): per scenario it registers hosts through the agent REST API, times the Agent
//! write-back, measures the idle cost and memory per host, then drives next-steps under load,
//! reading every process's CPU and RSS from `/proc`. See docs/benchmarks.md.
//!
//! ```sh
//! cargo build --release -p assisted-core && cargo build --release -p core-bench
//! target/release/core-bench --scenarios 1x1000 --loads 1,100/s --duration 5
//! ```

mod apimetrics;
mod cli;
mod load;
mod procstat;
mod report;
mod setup;
mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde::Serialize;
use testbed::Testbed;

use cli::{Load, Scenario};
use procstat::{Sample, Usage};
use report::{bytes, num, table};
use stats::{ms, percentile};

#[derive(Parser, Debug)]
#[command(about = "End-to-end benchmark of assisted-core on a real kube-apiserver and etcd")]
struct Args {
    /// Scenarios, CLUSTERSxHOSTS (hosts per cluster), each on a fresh testbed and core.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1x10,10x100,1x1000,100x10"
    )]
    scenarios: Vec<Scenario>,
    /// Loads of next-steps requests: N closed-loop clients, or N/s requests at a fixed rate.
    #[arg(long, value_delimiter = ',', default_value = "1,8,100/s,500/s")]
    loads: Vec<Load>,
    /// Measured seconds per load.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Warm-up seconds before each load's measurement.
    #[arg(long, default_value_t = 1)]
    warmup: u64,
    /// Seconds of the idle window with no requests at all.
    #[arg(long, default_value_t = 30)]
    idle_secs: u64,
    /// Seconds of the idle window where every host checks in once a minute, as it does from
    /// its registration on outside the other windows (0 skips it).
    #[arg(long, default_value_t = 30)]
    natural_secs: u64,
    /// Hosts registering at once.
    #[arg(long, default_value_t = 16)]
    register_parallel: usize,
    /// Longest wait for the Agents' write-back, seconds.
    #[arg(long, default_value_t = 600)]
    write_back_timeout: u64,
    /// The assisted-core binary (default: target/release/assisted-core of this workspace).
    #[arg(long)]
    core_bin: Option<PathBuf>,
    /// Also write every figure as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The processes whose CPU and memory are reported, in table order.
const PROCS: [&str; 4] = ["assisted-core", "kube-apiserver", "etcd", "core-bench"];

struct Watched {
    pids: Vec<u32>,
    hz: u64,
}

impl Watched {
    fn sample(&self) -> Result<Vec<Sample>> {
        self.pids.iter().map(|&p| procstat::sample(p)).collect()
    }

    fn usage(&self, before: &[Sample], after: &[Sample]) -> BTreeMap<String, Usage> {
        PROCS
            .iter()
            .zip(before.iter().zip(after))
            .map(|(n, (b, a))| (n.to_string(), procstat::usage(b, a, self.hz)))
            .collect()
    }
}

/// A window's CPU and memory per process and the write requests the apiserver served in it.
#[derive(Debug, Serialize)]
struct Window {
    secs: f64,
    usage: BTreeMap<String, Usage>,
    writes: BTreeMap<String, u64>,
    /// Writes other than the apiserver's own Lease renewals: the core's.
    core_writes: u64,
}

impl Window {
    fn cpu(&self, p: &str) -> String {
        self.usage
            .get(p)
            .map_or("-".into(), |u| format!("{} %", num(u.cpu_percent, 1)))
    }

    fn rss(&self, p: &str) -> String {
        self.usage
            .get(p)
            .map_or("-".into(), |u| format!("{} MiB", num(u.rss_mib, 1)))
    }
}

/// Opens a measurement window: a `/proc` reading of each process and the apiserver's counters.
struct Mark {
    at: Instant,
    samples: Vec<Sample>,
    writes: BTreeMap<String, u64>,
}

struct Bed {
    tb: Testbed,
    watched: Watched,
}

impl Bed {
    async fn writes(&self) -> Result<BTreeMap<String, u64>> {
        let req = http::Request::get("/metrics").body(Vec::new())?;
        let text = self
            .tb
            .client
            .request_text(req)
            .await
            .context("scraping the apiserver's /metrics")?;
        Ok(apimetrics::write_requests(&text))
    }

    async fn mark(&self) -> Result<Mark> {
        let writes = self.writes().await?;
        Ok(Mark {
            at: Instant::now(),
            samples: self.watched.sample()?,
            writes,
        })
    }

    async fn close(&mut self, m: &Mark) -> Result<Window> {
        let samples = self.watched.sample()?;
        let secs = m.at.elapsed().as_secs_f64();
        let writes = apimetrics::growth(&m.writes, &self.writes().await?);
        self.tb.check_running()?;
        Ok(Window {
            secs,
            usage: self.watched.usage(&m.samples, &samples),
            core_writes: apimetrics::core_writes(&writes),
            writes,
        })
    }
}

#[derive(Debug, Serialize)]
struct LoadResult {
    load: String,
    requests: usize,
    req_per_sec: f64,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    mean_body_bytes: f64,
    /// Answers whose body carries the connectivity-check step.
    with_connectivity_check: u64,
    errors: u64,
    window: Window,
}

#[derive(Debug, Serialize)]
struct IdleResult {
    name: String,
    req_per_sec: f64,
    window: Window,
}

#[derive(Debug, Serialize)]
struct ScenarioResult {
    scenario: String,
    hosts: usize,
    /// Registering every host (POST /hosts, first next-steps, inventory reply).
    register_secs: f64,
    /// From the last registration until every Agent existed (0: already).
    agents_exist_secs: f64,
    /// From the last registration until every Agent's status showed its inventory.
    write_back: Window,
    /// From the first registration until every Agent's status showed its inventory: the whole
    /// write-back, whether the statuses were written during the registration or after it.
    registration_and_write_back: Window,
    /// Write requests from the first registration until the write-back was complete.
    registration_writes: BTreeMap<String, u64>,
    /// From then until the Agents had no watch event for [`QUIET`] (capped at [`SETTLE_CAP`]).
    settle_secs: f64,
    settle_writes: BTreeMap<String, u64>,
    agent_watch_events: u64,
    core_rss_before_mib: f64,
    core_rss_after_mib: f64,
    core_kib_per_host: f64,
    idle: Vec<IdleResult>,
    loads: Vec<LoadResult>,
    agent_states_at_end: BTreeMap<String, usize>,
}

/// No Agent event for this long: the write-back has settled.
const QUIET: Duration = Duration::from_secs(5);
const SETTLE_CAP: Duration = Duration::from_secs(60);

async fn run_scenario(args: &Args, sc: Scenario, core_bin: &Path) -> Result<ScenarioResult> {
    let n = sc.hosts();
    let mut tb = Testbed::builder()
        .name(&format!(
            "core-bench-{}x{}",
            sc.clusters, sc.hosts_per_cluster
        ))
        .our_crds()
        .start()
        .await
        .context("starting the testbed (bash tests/testbed/build.sh builds it)")?;
    let (core_pid, base) = setup::start_core(&mut tb, core_bin).await?;
    let pid = |name: &str| tb.pid(name).with_context(|| format!("no {name} process"));
    let watched = Watched {
        pids: vec![
            core_pid,
            pid("kube-apiserver")?,
            pid("etcd")?,
            std::process::id(),
        ],
        hz: procstat::ticks_per_sec(),
    };
    let mut bed = Bed { tb, watched };
    let client = bed.tb.client.clone();
    bed.tb
        .apply_yaml(&setup::scenario_yaml(sc.clusters, sc.hosts_per_cluster))
        .await?;
    let envs = setup::wait_for_envs(&client, &base, sc.clusters, sc.hosts_per_cluster).await?;
    let seen = setup::watch_agents(&client);
    // Let the core finish with the new objects before the memory baseline.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_before = procstat::sample(core_pid)?.rss_kib;
    let inv_len = agent_sim::inventory_json(&envs[0].hosts[0])
        .to_string()
        .len();
    eprintln!("{sc}: registering {n} hosts (inventory {inv_len} B)");

    let reg = bed.mark().await?;
    load::register_all(&envs, args.register_parallel).await?;
    let register_secs = reg.at.elapsed().as_secs_f64();
    // From now on the hosts check in once a minute, as real agents do, except in the
    // no-request window and during the loads (which poll every host anyway).
    let targets = load::targets(&envs);
    let paused = Arc::new(AtomicBool::new(false));
    load::check_in_every_minute(targets.clone(), paused.clone());

    // Write-back: from the last registration until every Agent shows its inventory.
    let m = bed.mark().await?;
    let deadline = m.at + Duration::from_secs(args.write_back_timeout);
    let mut agents_exist_secs = None;
    loop {
        let (exist, ready) = {
            let s = seen.lock().unwrap_or_else(|e| e.into_inner());
            (s.agents.len(), s.with_inventory())
        };
        if exist >= n && agents_exist_secs.is_none() {
            agents_exist_secs = Some(m.at.elapsed().as_secs_f64());
        }
        if ready >= n {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "after {} s only {ready} of {n} Agents show their inventory ({exist} exist)",
                args.write_back_timeout
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let write_back = bed.close(&m).await?;
    let registration_and_write_back = bed.close(&reg).await?;
    // Every write that registering the hosts caused, from the first POST /hosts on.
    let registration_writes = registration_and_write_back.writes.clone();
    eprintln!(
        "{sc}: registered in {register_secs:.1} s; write-back {:.2} s; writes {}",
        write_back.secs,
        apimetrics::summary(&registration_writes)
    );

    // Settled: no Agent change for QUIET.
    let settle = bed.mark().await?;
    loop {
        let last = seen.lock().unwrap_or_else(|e| e.into_inner()).last_event;
        let quiet = last.is_none_or(|l| l.elapsed() >= QUIET);
        if quiet || settle.at.elapsed() >= SETTLE_CAP {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let settled = bed.close(&settle).await?;
    let rss_after = procstat::sample(core_pid)?.rss_kib;
    eprintln!(
        "{sc}: settled after {:.1} s; states {:?}",
        settled.secs,
        seen.lock().unwrap_or_else(|e| e.into_inner()).states()
    );

    let mut idle = Vec::new();
    if args.natural_secs > 0 {
        let m = bed.mark().await?;
        tokio::time::sleep(Duration::from_secs(args.natural_secs)).await;
        let window = bed.close(&m).await?;
        idle.push(IdleResult {
            name: "each host every 60 s".into(),
            req_per_sec: n as f64 / 60.0,
            window,
        });
    }
    paused.store(true, Ordering::Relaxed);
    let m = bed.mark().await?;
    tokio::time::sleep(Duration::from_secs(args.idle_secs)).await;
    idle.push(IdleResult {
        name: "no requests".into(),
        req_per_sec: 0.0,
        window: bed.close(&m).await?,
    });
    for i in &idle {
        eprintln!(
            "{sc}: idle ({}): core {}, apiserver {}, etcd {}; writes {}",
            i.name,
            i.window.cpu("assisted-core"),
            i.window.cpu("kube-apiserver"),
            i.window.cpu("etcd"),
            apimetrics::summary(&i.window.writes)
        );
    }

    let mut loads = Vec::new();
    for &l in &args.loads {
        let (warmup, run) = (
            Duration::from_secs(args.warmup),
            Duration::from_secs(args.duration),
        );
        let m = bed.mark().await?;
        let r = match l {
            Load::Closed(c) => load::closed_loop(targets.clone(), c, warmup, run).await,
            Load::Open(rate) => load::open_loop(targets.clone(), rate, warmup, run).await,
        };
        let window = bed.close(&m).await?;
        let lat = &r.latencies;
        let res = LoadResult {
            load: l.to_string(),
            requests: lat.len(),
            req_per_sec: lat.len() as f64 / r.secs,
            p50_ms: ms(percentile(lat, 50.0)),
            p90_ms: ms(percentile(lat, 90.0)),
            p99_ms: ms(percentile(lat, 99.0)),
            max_ms: ms(lat.last().copied().unwrap_or_default()),
            mean_body_bytes: r.body_bytes as f64 / lat.len().max(1) as f64,
            with_connectivity_check: r.with_connectivity_check,
            errors: r.errors,
            window,
        };
        eprintln!(
            "{sc}: {}: {:.0} req/s, p50 {} ms, p99 {} ms, max {} ms, errors {}, {} with the connectivity check; writes {}",
            res.load,
            res.req_per_sec,
            res.p50_ms,
            res.p99_ms,
            res.max_ms,
            res.errors,
            res.with_connectivity_check,
            apimetrics::summary(&res.window.writes)
        );
        loads.push(res);
    }
    let (agent_watch_events, agent_states_at_end) = {
        let s = seen.lock().unwrap_or_else(|e| e.into_inner());
        (s.events, s.states())
    };
    Ok(ScenarioResult {
        scenario: sc.to_string(),
        hosts: n,
        register_secs,
        agents_exist_secs: agents_exist_secs.unwrap_or(0.0),
        write_back,
        registration_and_write_back,
        registration_writes,
        settle_secs: settled.secs,
        settle_writes: settled.writes,
        agent_watch_events,
        core_rss_before_mib: rss_before as f64 / 1024.0,
        core_rss_after_mib: rss_after as f64 / 1024.0,
        core_kib_per_host: rss_after.saturating_sub(rss_before) as f64 / n as f64,
        idle,
        loads,
        agent_states_at_end,
    })
}

/// The whole write-back: its seconds, the apiserver's CPU seconds in it and those per Agent
/// status write (the cost of one write, whatever the pace of the registrations).
fn first_registration_to_last_status(r: &ScenarioResult) -> String {
    let w = &r.registration_and_write_back;
    let cpu_secs = w
        .usage
        .get("kube-apiserver")
        .map_or(0.0, |u| u.cpu_percent * w.secs / 100.0);
    let status_writes = apimetrics::status_writes(&w.writes, "agents/status");
    format!(
        "{} s, {} s ({} ms)",
        num(w.secs, 2),
        num(cpu_secs, 2),
        num(cpu_secs * 1000.0 / status_writes.max(1) as f64, 2)
    )
}

fn print_tables(results: &[ScenarioResult]) {
    println!("### Registration, Agent write-back and memory\n");
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let w = &r.write_back;
            vec![
                r.scenario.clone(),
                r.hosts.to_string(),
                format!("{} s", num(r.register_secs, 2)),
                format!("{} s", num(r.agents_exist_secs, 2)),
                format!("{} s", num(w.secs, 2)),
                w.cpu("assisted-core"),
                w.cpu("kube-apiserver"),
                w.cpu("etcd"),
                format!(
                    "{} ({}/host)",
                    apimetrics::core_writes(&r.registration_writes),
                    num(
                        apimetrics::core_writes(&r.registration_writes) as f64 / r.hosts as f64,
                        1
                    )
                ),
                first_registration_to_last_status(r),
                format!("{} s", num(r.settle_secs, 1)),
                format!(
                    "{} → {} MiB",
                    num(r.core_rss_before_mib, 1),
                    num(r.core_rss_after_mib, 1)
                ),
                format!("{} KiB", num(r.core_kib_per_host, 1)),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "scenario",
                "hosts",
                "register all",
                "Agents exist",
                "write-back",
                "core CPU",
                "apiserver CPU",
                "etcd CPU",
                "API writes from first registration",
                "first registration to last status: s, apiserver CPU s (ms per status write)",
                "settled",
                "core RSS",
                "per host",
            ],
            &rows
        )
    );
    println!("\n### Idle\n");
    let rows: Vec<Vec<String>> = results
        .iter()
        .flat_map(|r| {
            r.idle.iter().map(|i| {
                let w = &i.window;
                vec![
                    r.scenario.clone(),
                    i.name.clone(),
                    num(i.req_per_sec, 1),
                    w.cpu("assisted-core"),
                    w.rss("assisted-core"),
                    w.cpu("kube-apiserver"),
                    w.rss("kube-apiserver"),
                    w.cpu("etcd"),
                    w.rss("etcd"),
                    format!(
                        "{} ({}/min)",
                        w.core_writes,
                        num(w.core_writes as f64 * 60.0 / w.secs, 1)
                    ),
                ]
            })
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "scenario",
                "window",
                "req/s",
                "core CPU",
                "core RSS",
                "apiserver CPU",
                "apiserver RSS",
                "etcd CPU",
                "etcd RSS",
                "core API writes",
            ],
            &rows
        )
    );
    println!("\n### next-steps under load\n");
    let rows: Vec<Vec<String>> = results
        .iter()
        .flat_map(|r| {
            r.loads.iter().map(|l| {
                let w = &l.window;
                vec![
                    r.scenario.clone(),
                    l.load.clone(),
                    num(l.req_per_sec, 0),
                    num(l.p50_ms, 2),
                    num(l.p99_ms, 2),
                    num(l.max_ms, 2),
                    bytes(l.mean_body_bytes),
                    format!(
                        "{} ({} %)",
                        l.with_connectivity_check,
                        num(
                            l.with_connectivity_check as f64 * 100.0 / l.requests.max(1) as f64,
                            1
                        )
                    ),
                    l.errors.to_string(),
                    w.cpu("assisted-core"),
                    w.rss("assisted-core"),
                    w.cpu("kube-apiserver"),
                    w.cpu("etcd"),
                    w.cpu("core-bench"),
                    w.core_writes.to_string(),
                ]
            })
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "scenario",
                "load",
                "req/s",
                "p50 ms",
                "p99 ms",
                "max ms",
                "body",
                "with connectivity check",
                "errors",
                "core CPU",
                "core RSS",
                "apiserver CPU",
                "etcd CPU",
                "client CPU",
                "core API writes",
            ],
            &rows
        )
    );
    println!("\n### API writes by resource and verb\n");
    for r in results {
        println!(
            "- {} write-back: {}",
            r.scenario,
            apimetrics::summary(&r.write_back.writes)
        );
        println!(
            "- {} settling: {}",
            r.scenario,
            apimetrics::summary(&r.settle_writes)
        );
        for i in &r.idle {
            println!(
                "- {} idle, {}: {}",
                r.scenario,
                i.name,
                apimetrics::summary(&i.window.writes)
            );
        }
        for l in &r.loads {
            println!(
                "- {} {}: {}",
                r.scenario,
                l.load,
                apimetrics::summary(&l.window.writes)
            );
        }
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let core_bin = setup::core_binary(args.core_bin.clone())?;
    // One thread for the client, so the 2 cores are left to the core, the apiserver and etcd
    // as far as possible; its own CPU is reported as "client CPU".
    let mut results = Vec::new();
    for &sc in &args.scenarios {
        // A runtime per scenario: dropping it ends the scenario's background tasks (the
        // Agent watch, the minute check-ins).
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let r = rt.block_on(run_scenario(&args, sc, &core_bin))?;
        results.push(r);
    }
    println!(
        "core-bench: {} on {} CPUs; {} s per load after {} s warm-up; idle {} s\n",
        core_bin.display(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        args.duration,
        args.warmup,
        args.idle_secs
    );
    print_tables(&results);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&results)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

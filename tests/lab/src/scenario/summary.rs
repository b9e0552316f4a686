//! The end of a run: the console summary (timeline, chaos, the clusters, memory, wall time,
//! day-2, API requests, secrets, what Cluster API sees, then FAILED or OK) and the [`Report`].

use std::time::Duration;

use super::Scenario;
use super::checks::Findings;
use super::step_plan::StepPlan;
use super::waiting::Waiting;
use crate::cluster_run::{ClusterRun, shape};
use crate::steps::Step;
use crate::stuck::stuck_objects;
use crate::{Day2Times, Disconnected, Report, fleet, mirror};

pub(super) fn print_and_report(
    s: &mut Scenario<'_>,
    runs: &[ClusterRun],
    plan: &StepPlan,
    w: Waiting,
    f: Findings,
) -> Report {
    print_timeline(s, runs, &w, &f);
    let percentiles = print_clusters(s, runs, plan, &w);
    println!();
    print!("{}", s.memory.report());
    if let Some(split) = &f.shards {
        print!("{}", split.table());
    }
    print_wall_time(s, runs, &w);
    print_day2(runs);
    print_api_and_secrets(&f);
    print_describe(runs, &f);
    let stuck = print_verdict(s, runs, plan, &f);
    let mut failure = f.failure;
    let mirror = mirror_report(s, runs, &mut failure);
    Report {
        ok: failure.is_none(),
        source: s.source.clone(),
        speed: s.opts.speed,
        milestones: w.milestones,
        stuck,
        failure,
        clusters: runs.iter().map(|r| r.report(&plan.steps)).collect(),
        percentiles,
        memory: std::mem::take(&mut s.memory),
        api: f.api,
        duration: s.start.elapsed(),
        chaos: f.chaos,
        leader_kills: w.leader_kills,
        secrets: f.secrets,
        describe: f.describe,
        mirror,
        shards: f.shards,
    }
}

/// The milestones and chaos's kills in time order, then what chaos left undone and saw.
fn print_timeline(s: &Scenario<'_>, runs: &[ClusterRun], w: &Waiting, f: &Findings) {
    let n = s.n;
    let source = &s.source;
    println!();
    let shape = shape(&runs[0].spec);
    if n == 1 {
        println!(
            "Timeline (cluster {}, {shape}, from {source}):",
            runs[0].spec.name
        );
    } else {
        println!(
            "Timeline ({n} clusters {}..{}, {shape}, from {source}; a milestone is reached when every cluster has reached it):",
            runs[0].spec.name,
            runs[runs.len() - 1].spec.name,
        );
    }
    let mut timeline: Vec<(Duration, String)> = w
        .milestones
        .iter()
        .map(|(at, what)| (*at, format!("[{:>6.1}s] {what}", at.as_secs_f64())))
        .collect();
    if let Some(c) = &w.chaos {
        timeline.extend(c.kills.iter().map(|k| k.killed_at).zip(c.lines()));
    }
    timeline.sort_by_key(|(at, _)| *at);
    for (_, line) in &timeline {
        println!("  {line}");
    }
    if let Some(c) = &f.chaos {
        print_chaos(s, runs, c, &f.duplicates);
    }
}

fn print_chaos(
    s: &Scenario<'_>,
    runs: &[ClusterRun],
    c: &crate::ChaosReport,
    duplicates: &[String],
) {
    for p in &c.not_carried_out {
        println!("  chaos: not carried out (the scenario ended first): {p}");
    }
    let seen = runs
        .iter()
        .map(|r| {
            let m = r.max_seen;
            format!(
                "{}{} InfraEnvs, {}+{} Machines, {} Agents",
                s.prefix(&r.spec),
                m.infraenvs,
                m.control_plane_machines,
                m.worker_machines,
                m.agents
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    println!(
        "  chaos: {} kills (seed {}); the most seen at once: {seen}{}",
        c.kills.len(),
        c.seed,
        if duplicates.is_empty() {
            " (no duplicates)"
        } else {
            ""
        }
    );
    if let Some((k, wait)) = c
        .kills
        .iter()
        .filter_map(|k| Some((k, k.next_milestone_after?)))
        .max_by_key(|(_, wait)| *wait)
    {
        println!(
            "  chaos: the longest wait for the next milestone after a kill: {:.1}s (after {} was back)",
            wait.as_secs_f64(),
            k.target
        );
    }
}

/// The fleet's percentiles per milestone (printed as a table in the fleet view), or each
/// cluster's installed time and last milestone when a few clusters ran.
fn print_clusters(
    s: &Scenario<'_>,
    runs: &[ClusterRun],
    plan: &StepPlan,
    w: &Waiting,
) -> Vec<fleet::Percentiles> {
    let steps = &plan.steps;
    let titles: Vec<&str> = steps.iter().map(|s| s.title()).collect();
    let reached: Vec<&[Duration]> = runs.iter().map(|r| r.reached.as_slice()).collect();
    let percentiles = fleet::percentiles(&titles, &reached);
    if w.fleet_view {
        print!("{}", fleet::table(&percentiles, runs.len()));
    } else if s.n > 1 {
        println!("Per cluster (installed / last milestone):");
        for r in runs {
            let installed = steps
                .iter()
                .position(|s| *s == Step::Installed)
                .and_then(|i| r.reached.get(i))
                .map_or("-".to_string(), |d| format!("{:.1}s", d.as_secs_f64()));
            let last = match (r.reached.last(), steps.get(r.next)) {
                (_, Some(s)) => format!("stuck at `{}`", s.title()),
                (Some(d), None) => {
                    format!("{} {:.1}s", steps[steps.len() - 1].title(), d.as_secs_f64())
                }
                (None, None) => String::new(),
            };
            println!("  {:<10} installed {installed:>7} / {last}", r.spec.name);
        }
    }
    percentiles
}

fn print_wall_time(s: &Scenario<'_>, runs: &[ClusterRun], w: &Waiting) {
    let n = s.n;
    let first_applied = runs.iter().filter_map(|r| r.reached.first()).min().copied();
    let all_installed = w
        .milestones
        .iter()
        .find(|(_, m)| m == Step::Installed.title())
        .map(|(d, _)| *d);
    match (all_installed, first_applied) {
        (Some(at), Some(applied)) => println!(
            "Wall time: {} installed at {:.1}s since the lab started ({:.1}s after the first cluster was applied)",
            if n == 1 {
                format!("cluster {}", runs[0].spec.name)
            } else {
                format!("all {n} clusters")
            },
            at.as_secs_f64(),
            (at - applied).as_secs_f64()
        ),
        _ => println!("Wall time: not every cluster was installed"),
    }
}

fn print_day2(runs: &[ClusterRun]) {
    let day2: Vec<Day2Times> = runs.iter().filter_map(|r| r.day2).collect();
    if day2.is_empty() {
        return;
    }
    let spread = |v: Vec<Duration>| -> String {
        let mut v = v;
        v.sort();
        match (v.first(), v.last()) {
            (Some(a), Some(b)) if v.len() == 1 || a == b => {
                format!("{:.1}s", a.as_secs_f64())
            }
            (Some(a), Some(b)) => format!(
                "min {:.1}s, median {:.1}s, max {:.1}s ({} clusters)",
                a.as_secs_f64(),
                v[v.len() / 2].as_secs_f64(),
                b.as_secs_f64(),
                v.len()
            ),
            _ => "-".into(),
        }
    };
    println!(
        "Day-2: MachineDeployment scaled up → the new worker's Node Ready: {}; → its Machine Running and Agent added-to-existing-cluster: {}",
        spread(day2.iter().filter_map(Day2Times::to_node_ready).collect()),
        spread(day2.iter().filter_map(Day2Times::to_installed).collect()),
    );
}

fn print_api_and_secrets(f: &Findings) {
    match &f.api {
        Some(a) => print!("{}", a.report()),
        None if f.apiserver_restarted => println!(
            "API requests: not counted (--chaos restarted the management apiserver, whose counters started again)"
        ),
        None => {
            println!("API requests: the apiservers' /metrics could not be read (see logs/lab.log)")
        }
    }
    match &f.secrets {
        Some(c) => {
            println!("{}", c.line());
            for l in &c.leaks {
                println!("  {}", l.describe());
            }
        }
        None => println!("Secrets: not checked (see FAILED)"),
    }
}

fn print_describe(runs: &[ClusterRun], f: &Findings) {
    if let (Some(d), [r]) = (&f.describe, runs) {
        println!(
            "What Cluster API sees (clusterctl describe cluster {} -n {} --show-templates):",
            r.spec.name, r.spec.ns
        );
        for line in d.lines() {
            println!("  {}", line.trim_end());
        }
    }
}

/// FAILED with where the clusters are stuck and the logs to read, or OK; returns the report's
/// `stuck`: the first unfinished cluster's step and the failure.
fn print_verdict(
    s: &Scenario<'_>,
    runs: &[ClusterRun],
    plan: &StepPlan,
    f: &Findings,
) -> Option<String> {
    let steps = &plan.steps;
    let unfinished: Vec<&ClusterRun> = runs.iter().filter(|r| r.next < steps.len()).collect();
    let stuck = f.failure.as_ref().map(|why| match unfinished.first() {
        Some(r) => format!("{}{}: {why}", s.prefix(&r.spec), steps[r.next].title()),
        None => why.clone(),
    });
    match &f.failure {
        Some(why) => print_failed(s, plan, why, &unfinished),
        None => println!(
            "OK: {} installed{} in {:.1}s",
            if s.n == 1 {
                format!("cluster {}", runs[0].spec.name)
            } else {
                format!("{} clusters", s.n)
            },
            if steps.contains(&Step::ScaleDownDone) {
                ", scaled up by a day-2 worker and back down"
            } else {
                ""
            },
            s.start.elapsed().as_secs_f64()
        ),
    }
    stuck
}

fn print_failed(s: &Scenario<'_>, plan: &StepPlan, why: &str, unfinished: &[&ClusterRun]) {
    println!();
    println!("FAILED: {why}");
    // Many stuck clusters: the first few here, every one in the report.
    let shown = if crate::fleet::fleet_view(s.n) {
        20
    } else {
        unfinished.len()
    };
    if unfinished.len() > shown {
        println!(
            "{} clusters did not finish; the first {shown} (all of them in --report):",
            unfinished.len()
        );
    }
    for (i, r) in unfinished.iter().take(shown).enumerate() {
        let step = plan.steps[r.next];
        println!(
            "{}stuck at step `{}`: waiting for {}",
            s.prefix(&r.spec),
            step.title(),
            step.waiting_for(&r.spec)
        );
        // The objects of the first stuck cluster; the others' progress lines.
        if i == 0 {
            for o in stuck_objects(step, &r.snap, &r.site) {
                println!("  {} {}: {}", o.kind, o.name, o.state);
                for c in &o.conditions {
                    println!("      {c}");
                }
            }
        }
        println!("last progress: {}", r.snap.summary(&r.spec.name));
    }
    println!("log files to read:");
    for l in s.lab.logs(&s.opts.dir) {
        println!("  {}", l.display());
    }
}

/// `--disconnected`: what the mirror served and every host pull; with `mirror`, a host that
/// pulled around the mirror fails the run.
fn mirror_report(
    s: &Scenario<'_>,
    runs: &[ClusterRun],
    failure: &mut Option<String>,
) -> Option<mirror::MirrorReport> {
    let report = s.mirror.as_ref().map(|m| {
        let pulls = runs.iter().flat_map(|r| r.site.pulls()).collect();
        mirror::MirrorReport::new(m, pulls)
    });
    if let Some(r) = &report
        && s.opts.disconnected == Some(Disconnected::Mirror)
    {
        match r.problem() {
            Some(p) if failure.is_none() => *failure = Some(p),
            Some(_) => {}
            None => println!("  {}", r.describe()),
        }
    }
    report
}

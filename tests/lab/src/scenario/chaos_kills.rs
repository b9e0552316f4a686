//! `--chaos` during a run: the planned kills carried out when their milestone is reached, the
//! killed managers (and apiserver) started again when their time comes, all back at the end.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::cluster_run::ClusterRun;
use crate::managers::Managers;
use crate::steps::Step;
use crate::testbeds::Lab;
use crate::{chaos, stamp};
/// A planned kill, for the output: `bootstrap-provider 0.7s after `InfraEnvs ready``.
pub(crate) fn describe_planned(p: &chaos::Planned, managers: &Managers, steps: &[Step]) -> String {
    let target = match p.target {
        chaos::Target::Manager(i) => managers.names().get(i).copied().unwrap_or("a manager"),
        chaos::Target::ApiServer => "kube-apiserver",
    };
    let after = p
        .after_milestones
        .checked_sub(1)
        .and_then(|i| steps.get(i))
        .map_or("the start", |s| s.title());
    let latest = p
        .latest
        .and_then(|l| l.checked_sub(1))
        .and_then(|i| steps.get(i))
        .map_or(String::new(), |s| {
            format!(" (at the latest at `{}`)", s.title())
        });
    format!(
        "{target} {:.1}s after `{after}`{latest}, down {:.1}s",
        p.delay.as_secs_f64(),
        p.downtime.as_secs_f64()
    )
}

/// One pass of `--chaos`: the kills due (the first cluster's progress decides), the restarts
/// due, and the restarted managers that answer `/readyz` again. The apiserver is killed and
/// started again within the pass (the lab's own reads need it).
pub(crate) async fn chaos_pass(
    c: &mut chaos::Chaos,
    lab: &mut Lab,
    first: &ClusterRun,
    steps: &[Step],
    start: Instant,
) -> Result<()> {
    let installed = steps
        .iter()
        .position(|s| *s == Step::Installed)
        .unwrap_or(steps.len());
    for p in c.due(first.next, start.elapsed()) {
        let during = steps.get(first.next).map_or("the end", |s| s.title());
        let mid = first.next >= 1 && first.next <= installed;
        let now = start.elapsed();
        match p.target {
            chaos::Target::Manager(i) => {
                let name = lab
                    .managers
                    .names()
                    .get(i)
                    .map_or("manager".to_string(), |n| n.to_string());
                lab.managers.kill(i);
                println!(
                    "{} chaos: {name} killed (SIGKILL){} while waiting for `{during}`; starting it again in {:.1}s",
                    stamp(start),
                    if mid { " mid-install" } else { "" },
                    p.downtime.as_secs_f64()
                );
                c.killed(&p, &name, now, during, mid);
            }
            chaos::Target::ApiServer => {
                lab.tb.kill_apiserver()?;
                println!(
                    "{} chaos: the management kube-apiserver killed (SIGKILL){} while waiting for `{during}`; starting it again in {:.1}s",
                    stamp(start),
                    if mid { " mid-install" } else { "" },
                    p.downtime.as_secs_f64()
                );
                c.killed(&p, "kube-apiserver", now, during, mid);
                let k = c.kills.len() - 1;
                tokio::time::sleep(p.downtime).await;
                c.kills[k].started_at = Some(start.elapsed());
                c.back(k);
                lab.tb
                    .start_apiserver_again()
                    .await
                    .context("starting the kube-apiserver again")?;
                c.kills[k].ready_at = Some(start.elapsed());
                println!(
                    "{} chaos: the management kube-apiserver is back (ready)",
                    stamp(start)
                );
            }
        }
    }
    chaos_restart_due(c, lab, start)
}

/// Starts the killed managers whose downtime is over and notes those ready again.
pub(crate) fn chaos_restart_due(c: &mut chaos::Chaos, lab: &mut Lab, start: Instant) -> Result<()> {
    for (k, t) in c.to_start(start.elapsed()) {
        if let chaos::Target::Manager(i) = t {
            lab.managers
                .start_again(i)
                .with_context(|| format!("starting {} again", c.kills[k].target))?;
            c.kills[k].started_at = Some(start.elapsed());
            println!(
                "{} chaos: {} started again",
                stamp(start),
                c.kills[k].target
            );
        }
    }
    for k in c.kills.iter_mut() {
        if let (chaos::Target::Manager(i), Some(_), None) = (k.what, k.started_at, k.ready_at)
            && lab.managers.ready(i)
        {
            k.ready_at = Some(start.elapsed());
            println!(
                "{} chaos: {} is ready again ({:.1}s after the kill)",
                stamp(start),
                k.target,
                (start.elapsed().saturating_sub(k.killed_at)).as_secs_f64()
            );
        }
    }
    Ok(())
}

/// At the end of a `--chaos` run: starts what is still down and waits (up to 60 s) until every
/// restarted manager is ready.
pub(crate) async fn chaos_finish(
    c: &mut chaos::Chaos,
    lab: &mut Lab,
    start: Instant,
) -> Result<()> {
    for (k, t) in c.to_start(Duration::MAX) {
        if let chaos::Target::Manager(i) = t {
            lab.managers.start_again(i)?;
            c.kills[k].started_at = Some(start.elapsed());
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for k in c.kills.iter_mut() {
            if let (chaos::Target::Manager(i), None) = (k.what, k.ready_at)
                && lab.managers.ready(i)
            {
                k.ready_at = Some(start.elapsed());
            }
        }
        let waiting: Vec<&str> = c
            .kills
            .iter()
            .filter(|k| k.ready_at.is_none())
            .map(|k| k.target.as_str())
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "not ready 60 s after being started again: {}",
                waiting.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

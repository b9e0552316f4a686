//! Waiting for the milestones: a pass every half second ticks every cluster's site, reads the
//! clusters once, follows each cluster ([`super::cluster_pass`]), applies the clusters whose
//! hosts became available, and notes a milestone once every cluster reached it. It ends when
//! every milestone is reached, on the first failure, at the deadline or on Ctrl-C.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Error, Result};

use super::Scenario;
use super::chaos_kills::{chaos_pass, describe_planned};
use super::step_plan::StepPlan;
use crate::cluster_ops::scale_workers;
use crate::cluster_run::ClusterRun;
use crate::observe::{self, World};
use crate::{
    Disconnected, LeaderKill, SITES_AT_ONCE, actions, chaos, cvo, fleet, live, mco, stamp,
};

/// What the passes share and leave behind for the checks and the summary.
pub(crate) struct Waiting {
    /// One workload apiserver, so one cluster-version operator: for a run of one cluster.
    pub(super) cvo: Option<cvo::Cvo>,
    /// One workload apiserver, so one machine-config operator: image mode is one cluster's.
    pub(super) machine_config: Option<mco::Mco>,
    pub(super) leader_kills: Vec<LeaderKill>,
    pub(super) chaos: Option<chaos::Chaos>,
    /// Reached by every cluster, with when the last one reached it.
    pub(super) milestones: Vec<(Duration, String)>,
    pub(super) deadline: Instant,
    /// The release the clusters must get: checked for the lab's own clusters only.
    pub(super) expect_okd: Option<bool>,
    /// With many clusters the console shows the fleet (how many wait at each step,
    /// percentiles at the end); each cluster's own lines go to logs/lab.log.
    pub(super) fleet_view: bool,
    fleet_printed: Option<Instant>,
    /// One progress line per cluster, at most this often.
    pub(super) every: Duration,
    /// When stdout is a terminal: one line per cluster at the bottom, redrawn every pass.
    pub(super) live: live::Live,
    watches: observe::Watches,
    interrupt: tokio::signal::unix::Signal,
}

impl Waiting {
    /// Plans the chaos (and says so), starts the lab's watches and listens for Ctrl-C.
    pub(super) async fn new(s: &Scenario<'_>, plan: &StepPlan) -> Result<Waiting> {
        let (opts, start, n) = (s.opts, s.start, s.n);
        let cvo = (n == 1).then(|| {
            cvo::Cvo::new(
                &s.lab.workload.client,
                opts.upgrade
                    .as_ref()
                    .filter(|u| u.fails)
                    .map(|u| u.to.clone()),
            )
        });
        // Registered now, so that a Ctrl-C during a pass is not lost.
        let interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .context("listening for Ctrl-C")?;
        let chaos = opts.chaos.map(|settings| {
            let seed = settings.seed;
            let planned = chaos::plan(seed, plan.steps.len(), settings.apiserver);
            println!(
                "{} chaos: seed {seed} (run it again with --chaos-seed {seed}); {} kills planned: {}",
                stamp(start),
                planned.len(),
                planned
                    .iter()
                    .map(|p| describe_planned(p, &s.lab.managers, &plan.steps))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            chaos::Chaos::new(seed, planned)
        });
        let watches = match observe::Watches::start(&s.client, &s.lab.workload.client).await {
            Ok(w) => w,
            Err(e) => return Err(e.context("starting the lab's watches")),
        };
        Ok(Waiting {
            cvo,
            machine_config: None,
            leader_kills: Vec::new(),
            chaos,
            milestones: Vec::new(),
            deadline: start + opts.timeout,
            expect_okd: opts.cluster_file.is_none().then_some(opts.okd),
            fleet_view: fleet::fleet_view(n),
            fleet_printed: None,
            every: if n > 1 {
                Duration::from_secs(5)
            } else {
                Duration::from_secs(2)
            },
            live: live::Live::detect(),
            watches,
            interrupt,
        })
    }

    /// Passes until every milestone is reached (`None`) or the run fails (why).
    pub(super) async fn wait_for_milestones(
        &mut self,
        s: &mut Scenario<'_>,
        runs: &mut [ClusterRun],
        plan: &StepPlan,
    ) -> Option<String> {
        loop {
            match self.pass(s, runs, plan).await {
                Ok(true) => return None,
                Ok(false) => {}
                Err(e) => return Some(format!("{e:#}")),
            }
            if Instant::now() > self.deadline {
                return Some(format!("timed out after {:?}", s.opts.timeout));
            }
            self.draw_live(runs, plan);
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = self.interrupt.recv() => return Some("interrupted (Ctrl-C)".into()),
            }
        }
    }

    /// One pass; `true` once every milestone is reached.
    async fn pass(
        &mut self,
        s: &mut Scenario<'_>,
        runs: &mut [ClusterRun],
        plan: &StepPlan,
    ) -> Result<bool> {
        self.live.clear();
        self.follow_leader_kills(s).await?;
        if let Some(c) = self.chaos.as_mut() {
            chaos_pass(c, &mut s.lab, &runs[0], &plan.steps, s.start)
                .await
                .map_err(|e| Error::msg(format!("chaos: {e:#}")))?;
        }
        s.lab
            .managers
            .check_running()
            .map_err(|e| Error::msg(format!("a manager exited: {e:#}")))?;
        s.memory.sample(&s.lab.managers.pids());
        let world = self.read_world(s).await;
        let ticks = tick_sites(s, runs, world.as_ref()).await;
        // Clusters whose hosts became available in this pass: applied together after it.
        let mut to_apply: Vec<usize> = Vec::new();
        for (i, (r, events)) in runs.iter_mut().zip(ticks).enumerate() {
            if self
                .follow_cluster(s, plan, r, events, world.as_ref())
                .await?
            {
                to_apply.push(i);
            }
        }
        apply_clusters(s, runs, &to_apply).await?;
        self.print_fleet_progress(s, runs, plan);
        self.note_milestones(s, runs, plan);
        scale_down_after_day2(s, runs, plan).await?;
        Ok(self.milestones.len() == plan.steps.len())
    }

    /// `--kill-leaders`: when another pod of each killed leader's manager leads and is ready.
    async fn follow_leader_kills(&mut self, s: &mut Scenario<'_>) -> Result<()> {
        let start = s.start;
        for (i, k) in self.leader_kills.iter_mut().enumerate() {
            if k.ready_at.is_some() {
                continue;
            }
            let took_over = s
                .lab
                .managers
                .took_over(&s.client, i, &k.pod)
                .await
                .map_err(|e| Error::msg(format!("{}'s new leader: {e:#}", k.manager)))?;
            if took_over {
                k.ready_at = Some(start.elapsed());
                let leader = s.lab.managers.leader_pod(i).unwrap_or_default();
                println!(
                    "{} {}: {leader} leads and is ready, {:.1}s after {} was deleted",
                    stamp(start),
                    k.manager,
                    (start.elapsed() - k.killed_at).as_secs_f64(),
                    k.pod
                );
            }
        }
        Ok(())
    }

    /// Every cluster's objects, read once; `None` when an apiserver did not answer (a slow
    /// apiserver is not a failure; the deadline catches a dead one).
    async fn read_world(&self, s: &Scenario<'_>) -> Option<World> {
        let opts = s.opts;
        let control_planes = opts.upgrade.is_some()
            || opts.cluster_class
            || opts.fail_host.is_some()
            || opts.scale_control_plane.is_some()
            || opts.disconnected == Some(Disconnected::BrokenConfigMap)
            || opts.image_mode.is_some();
        match self
            .watches
            .world(&s.client, &s.lab.workload.client, control_planes)
            .await
        {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("reading the clusters: {e:#}");
                None
            }
        }
    }

    fn print_fleet_progress(&mut self, s: &Scenario<'_>, runs: &[ClusterRun], plan: &StepPlan) {
        if self.fleet_view
            && self
                .fleet_printed
                .is_none_or(|p| p.elapsed() >= fleet::PROGRESS_EVERY)
        {
            let titles: Vec<&str> = plan.steps.iter().map(|s| s.title()).collect();
            let next: Vec<usize> = runs.iter().map(|r| r.next).collect();
            println!("{} {}", stamp(s.start), fleet::progress(&titles, &next));
            self.fleet_printed = Some(Instant::now());
        }
    }

    /// A milestone is reached when every cluster has reached it.
    fn note_milestones(&mut self, s: &Scenario<'_>, runs: &[ClusterRun], plan: &StepPlan) {
        let steps = &plan.steps;
        let milestones = &mut self.milestones;
        while milestones.len() < steps.len() && runs.iter().all(|r| r.next > milestones.len()) {
            let i = milestones.len();
            let at = runs.iter().map(|r| r.reached[i]).max().unwrap_or_default();
            let title = steps[i].title();
            if s.n > 1 {
                println!("{} == {title} (all {} clusters)", stamp(s.start), s.n);
            }
            milestones.push((at, title.to_string()));
        }
    }

    fn draw_live(&mut self, runs: &[ClusterRun], plan: &StepPlan) {
        if !self.live.on() {
            return;
        }
        let lines: Vec<(String, bool)> = runs
            .iter()
            .map(|r| {
                let phase = plan
                    .steps
                    .get(r.next)
                    .map_or("done".to_string(), |s| format!("→ {}", s.title()));
                (
                    live::line(&r.spec.name, &phase, &r.snap),
                    r.next >= plan.steps.len(),
                )
            })
            .collect();
        self.live.draw(&live::lines(&lines));
    }
}

/// Every cluster's site at once (a host booting waits for its discovery image: one after
/// another, 250 clusters made a pass last minutes). The apiserver not answering (slow, or
/// restarted by --chaos): the sites wait for the next pass.
async fn tick_sites(
    s: &Scenario<'_>,
    runs: &mut [ClusterRun],
    world: Option<&World>,
) -> Vec<Result<Vec<String>>> {
    match world {
        Some(w) => {
            use futures::StreamExt;
            futures::stream::iter(
                runs.iter_mut()
                    .map(|r| r.site.tick_with(&s.lab.workload, &w.bmhs)),
            )
            .buffered(SITES_AT_ONCE)
            .collect()
            .await
        }
        None => runs.iter().map(|_| Ok(Vec::new())).collect(),
    }
}

/// The clusters whose hosts became available in the pass, applied together (one after
/// another, each through the admission webhooks, 150 clusters took a pass of over a minute).
async fn apply_clusters(s: &Scenario<'_>, runs: &[ClusterRun], to_apply: &[usize]) -> Result<()> {
    if to_apply.is_empty() {
        return Ok(());
    }
    use futures::StreamExt;
    let applied: Vec<Result<()>> = futures::stream::iter(
        to_apply
            .iter()
            .map(|&i| actions::apply_cluster(&s.client, &runs[i], s.start, s.n)),
    )
    .buffered(SITES_AT_ONCE)
    .collect()
    .await;
    match applied.into_iter().find_map(Result::err) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Once every cluster has its day-2 worker (and counted it on its image), the workers of all
/// scale back down.
async fn scale_down_after_day2(
    s: &Scenario<'_>,
    runs: &mut [ClusterRun],
    plan: &StepPlan,
) -> Result<()> {
    if let Some(i) = plan.day2_step
        && runs.iter().all(|r| r.next > i)
        && runs.iter().any(|r| r.scale_down_pending)
    {
        println!(
            "{} every cluster has its day-2 worker: scaling the workers of all {} back down",
            stamp(s.start),
            s.n
        );
        for r in runs.iter_mut().filter(|r| r.scale_down_pending) {
            r.scale_down_pending = false;
            if let Some((_, workers)) = &r.spec.day2 {
                scale_workers(&s.client, &r.spec, *workers).await?;
            }
        }
    }
    Ok(())
}

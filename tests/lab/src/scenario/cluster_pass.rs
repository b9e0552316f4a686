//! One cluster in one pass: its site's events, what changed in its objects, the simulated
//! operators of its workload cluster, and the steps it reached (with what the lab does then).
//! An error ends the run; its message is the run's failure.

use std::time::{Duration, Instant};

use anyhow::{Error, Result};
use kube::ResourceExt;

use super::Scenario;
use super::chaos_kills::chaos_restart_due;
use super::step_plan::StepPlan;
use super::waiting::Waiting;
use crate::cluster_ops::{install_cluster_version, installer_controller};
use crate::cluster_run::ClusterRun;
use crate::install_check::install_check;
use crate::observe::node_ready;
use crate::observe::{self, World};
use crate::steps::Step;
use crate::{ImageModeRun, LeaderKill, actions, managers, mco, stamp};

/// A failure of the run, as the console and the report say it.
fn failed(message: String) -> Error {
    Error::msg(message)
}

/// A simulated operator's error the workload apiserver refused (below 500): the simulation
/// is wrong, stop. Anything else is the apiserver a moment slow: the next pass goes on.
fn refused(e: &Error) -> bool {
    e.downcast_ref::<kube::Error>()
        .is_some_and(|k| matches!(k, kube::Error::Api(s) if s.code < 500))
}

impl Waiting {
    /// One cluster's part of the pass; `events` are what its site did. `true` when its hosts
    /// became available: it is applied after the pass, with the others.
    pub(super) async fn follow_cluster(
        &mut self,
        s: &mut Scenario<'_>,
        plan: &StepPlan,
        r: &mut ClusterRun,
        events: Result<Vec<String>>,
        world: Option<&World>,
    ) -> Result<bool> {
        let (start, n) = (s.start, s.n);
        let pre = s.prefix(&r.spec);
        let say = |line: String| crate::fleet::say(n, line);
        match events {
            Ok(events) => events
                .iter()
                .for_each(|e| say(format!("{} {pre}{e}", stamp(start)))),
            Err(e) => return Err(failed(format!("{pre}the simulated site failed: {e:#}"))),
        }
        if let Some(w) = world {
            observe_cluster(s, r, w, &pre);
        }
        self.start_installer_controller(s, r, &pre).await?;
        self.tick_simulated_operators(s, r, &pre).await?;
        if let Some(h) = r.controller.take_if(|h| h.is_finished()) {
            match h.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(failed(format!("{pre}{e:#}"))),
                Err(e) => return Err(failed(format!("{pre}installer-controller panicked: {e}"))),
            }
        }
        let mut apply_after_the_pass = false;
        while let Some(&step) = plan.steps.get(r.next) {
            if !step.done(&r.spec, &r.snap, &r.site, r.servers.len()) {
                break;
            }
            r.reached.push(start.elapsed());
            r.next += 1;
            self.on_step_reached(s, plan, step, r, &pre).await?;
            let action_env = actions::Env {
                client: &s.client,
                workload: &s.lab.workload.client,
                opts: s.opts,
                failing: plan.failing,
                downgrade: plan.downgrade,
                start,
                n,
            };
            if step == Step::HostsAvailable && n > 1 {
                apply_after_the_pass = true;
                continue;
            }
            actions::after_step(step, r, &pre, &action_env).await?;
        }
        self.print_progress(s, plan, r);
        Ok(apply_after_the_pass)
    }

    /// The installer-controller runs in the new cluster once its masters are up; with it the
    /// cluster-version operator writes the ClusterVersion.
    async fn start_installer_controller(
        &mut self,
        s: &Scenario<'_>,
        r: &mut ClusterRun,
        pre: &str,
    ) -> Result<()> {
        if r.controller_started
            || !["installing", "finalizing"].contains(&r.snap.aci_state())
            || r.site.powered_on() < r.spec.hosts_day1()
            || !r.site.all_rebooted()
        {
            return Ok(());
        }
        let start = s.start;
        let left = self.deadline.saturating_duration_since(Instant::now());
        let h = installer_controller(
            &s.client,
            &s.lab.workload.client,
            &s.lab.managers,
            &r.spec,
            left,
            s.opts.speed,
        )
        .await
        .map_err(|e| failed(format!("{pre}starting the installer-controller: {e:#}")))?;
        crate::fleet::say(
            s.n,
            format!(
                "{} {pre}site: the cluster's installer-controller started",
                stamp(start)
            ),
        );
        r.controller = Some(h);
        r.controller_started = true;
        if let Some(cvo) = &self.cvo {
            match install_cluster_version(&s.client, cvo, &r.spec).await {
                Ok(line) => println!("{} {pre}{line}", stamp(start)),
                Err(e) => {
                    return Err(failed(format!(
                        "{pre}writing the cluster's ClusterVersion: {e:#}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The machine-config operator (`--image-mode`) and the cluster-version operator of the
    /// workload cluster, once its installer-controller runs.
    async fn tick_simulated_operators(
        &mut self,
        s: &Scenario<'_>,
        r: &ClusterRun,
        pre: &str,
    ) -> Result<()> {
        let start = s.start;
        if s.opts.image_mode.is_some() && r.controller_started {
            let sim = self.machine_config.get_or_insert_with(|| {
                mco::Mco::new(
                    &s.client,
                    &s.lab.workload.client,
                    &r.spec,
                    s.opts.image_mode == Some(ImageModeRun::FailedBuild),
                )
            });
            match sim.tick().await {
                Ok(said) => said
                    .iter()
                    .for_each(|l| println!("{} {pre}{l}", stamp(start))),
                Err(e) if refused(&e) => {
                    return Err(failed(format!(
                        "{pre}the simulated machine-config operator: {e:#}"
                    )));
                }
                Err(e) => tracing::warn!("the simulated machine-config operator: {e:#}"),
            }
        }
        if let Some(cvo) = &self.cvo
            && r.controller_started
        {
            match cvo.tick().await {
                Ok(said) => said
                    .iter()
                    .for_each(|l| println!("{} {pre}{l}", stamp(start))),
                Err(e) if refused(&e) => {
                    return Err(failed(format!(
                        "{pre}the simulated cluster-version operator: {e:#}"
                    )));
                }
                Err(e) => tracing::warn!("the simulated cluster-version operator: {e:#}"),
            }
        }
        Ok(())
    }

    /// What the lab notes when `r` reaches `step` (before the step's action): the leaders
    /// killed mid-install (`--kill-leaders`), the day-2 time, the step's line, and the
    /// installed cluster read back.
    async fn on_step_reached(
        &mut self,
        s: &mut Scenario<'_>,
        plan: &StepPlan,
        step: Step,
        r: &mut ClusterRun,
        pre: &str,
    ) -> Result<()> {
        let (start, n) = (s.start, s.n);
        if step == Step::InstallStarted && s.opts.kill_leaders && self.leader_kills.is_empty() {
            self.kill_leaders(s, step, pre).await?;
        }
        if step == Step::Day2Installed
            && let Some(d) = r.day2.as_mut()
        {
            d.installed = Some(start.elapsed());
        }
        if n == 1 {
            println!("{} == {}", stamp(start), step.title());
        } else if r.next == plan.steps.len() || step == Step::Installed {
            crate::fleet::say(n, format!("{} {pre}== {}", stamp(start), step.title()));
        }
        if step == Step::Installed {
            self.check_installed(s, r, pre).await?;
        }
        Ok(())
    }

    /// `--kill-leaders`: each manager's leader pod deleted (grace 0) mid-install.
    async fn kill_leaders(&mut self, s: &mut Scenario<'_>, step: Step, pre: &str) -> Result<()> {
        let start = s.start;
        for (i, manager) in [managers::CONTROLPLANE, managers::BOOTSTRAP]
            .into_iter()
            .enumerate()
        {
            let pod = s
                .lab
                .managers
                .kill_leader(&s.client, i)
                .await
                .map_err(|e| failed(format!("deleting {manager}'s leader pod: {e:#}")))?;
            println!(
                "{} {pre}{manager}: its leader pod {pod} deleted (grace 0) mid-install",
                stamp(start)
            );
            self.leader_kills.push(LeaderKill {
                manager,
                pod,
                killed_at: start.elapsed(),
                ready_at: None,
                after: step.title().to_owned(),
            });
        }
        Ok(())
    }

    /// The installed cluster read back against what was asked (and, disconnected, the
    /// release pinned through the mirror).
    async fn check_installed(
        &mut self,
        s: &mut Scenario<'_>,
        r: &mut ClusterRun,
        pre: &str,
    ) -> Result<()> {
        let start = s.start;
        // The core may be down a moment (`--chaos`): tried for up to 30 s, while the managers
        // chaos killed are started again when their time comes (a kill in the pass that saw
        // the install end used to stay down all along).
        let mut tries = 0;
        let checked = loop {
            if let Some(c) = self.chaos.as_mut()
                && let Err(e) = chaos_restart_due(c, &mut s.lab, start)
            {
                break Err(e);
            }
            let c = install_check(&s.client, &s.lab.managers, &r.spec, r.snap.aci.as_ref()).await;
            tries += 1;
            if c.is_ok() || tries >= 30 {
                break c;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        let c = checked
            .map_err(|e| failed(format!("{pre}reading back the installed cluster: {e:#}")))?;
        crate::fleet::say(
            s.n,
            format!("{} {pre}installed: {}", stamp(start), c.describe()),
        );
        let problem = c.problem(&r.spec, self.expect_okd).or_else(|| {
            let m = s.mirror.as_ref()?;
            (c.release_image != m.images.release_by_digest).then(|| {
                format!(
                    "disconnected: ClusterImageSet {} has release image {}, expected {} (the release tag pinned through the mirror)",
                    c.cluster_image_set, c.release_image, m.images.release_by_digest
                )
            })
        });
        r.install_check = Some(c);
        match problem {
            Some(p) => Err(failed(format!("{pre}{p}"))),
            None => Ok(()),
        }
    }

    /// One progress line per cluster, at most every few seconds, when it changed (in the live
    /// and fleet views the cluster's line at the bottom replaces these).
    fn print_progress(&self, s: &Scenario<'_>, plan: &StepPlan, r: &mut ClusterRun) {
        if r.next < plan.steps.len() && !self.live.on() && !self.fleet_view {
            let line = r.snap.summary(&r.spec.name);
            if line != r.last_line && r.last_print.is_none_or(|p| p.elapsed() >= self.every) {
                println!("{} {line}", stamp(s.start));
                r.last_line = line;
                r.last_print = Some(Instant::now());
            }
        }
    }
}

/// What changed in the cluster's objects since the last pass, the most of each kind seen, and
/// the day-2 worker's Node Ready in the workload apiserver.
fn observe_cluster(s: &Scenario<'_>, r: &mut ClusterRun, w: &World, pre: &str) {
    let start = s.start;
    let snap = w.cluster(&r.spec.ns, &r.spec.control_plane_name());
    observe::changes(&r.snap, &snap)
        .iter()
        .for_each(|c| crate::fleet::say(s.n, format!("{} {pre}{c}", stamp(start))));
    r.snap = snap;
    r.max_seen.update(&r.snap);
    if let Some(d) = r.day2.as_mut()
        && d.node_ready.is_none()
    {
        let day2 = r.site.day2_nodes();
        if w.nodes
            .iter()
            .any(|n| day2.contains(&n.name_any()) && node_ready(n))
        {
            d.node_ready = Some(start.elapsed());
        }
    }
}

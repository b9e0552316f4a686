//! The steps every cluster of the run goes through, decided from the flags and the cluster's
//! shape (every cluster of a run has the same one: one topology, or the one file's cluster).

use anyhow::Result;

use crate::cluster_ops::{failing, is_older};
use crate::cluster_run::ClusterRun;
use crate::steps::{Failing, Step};
use crate::{Disconnected, ImageModeRun, Options, control_plane_scaling};

pub(crate) struct StepPlan {
    pub steps: Vec<Step>,
    /// `--fail-host`: the hosts that fail and how.
    pub failing: Option<Failing>,
    /// `--upgrade-to` names an older release than the cluster's.
    pub downgrade: bool,
    /// The step after which the workers scale back down: once the day-2 worker is in (and
    /// counted on its image).
    pub day2_step: Option<usize>,
}

impl StepPlan {
    pub fn new(opts: &Options, runs: &[ClusterRun]) -> Result<StepPlan> {
        let failing = match &opts.fail_host {
            Some(hosts) => Some(failing(hosts, &runs[0].servers, runs[0].spec.masters)?),
            None => None,
        };
        let downgrade = opts
            .upgrade
            .as_ref()
            .is_some_and(|u| is_older(&u.to, &runs[0].spec.installed_version));
        let steps = steps_for(opts, &runs[0], failing, downgrade);
        let day2_step = steps
            .iter()
            .position(|s| *s == Step::ImageModeDay2Counted)
            .or_else(|| steps.iter().position(|s| *s == Step::Day2Installed));
        Ok(StepPlan {
            steps,
            failing,
            downgrade,
            day2_step,
        })
    }
}

/// The steps: a refused configuration stops once the hosts are available; image mode adds
/// its rollout after the Machines run (or ends there when its build fails) and counts the
/// day-2 worker on its image.
fn steps_for(
    opts: &Options,
    first: &ClusterRun,
    failing: Option<Failing>,
    downgrade: bool,
) -> Vec<Step> {
    if opts.disconnected == Some(Disconnected::BrokenConfigMap) {
        return vec![Step::HostsAvailable, Step::MirrorConfigRefused];
    }
    if opts.image_mode == Some(ImageModeRun::TagImage) {
        return vec![Step::HostsAvailable, Step::ImageModeRefused];
    }
    let control_plane = opts.scale_control_plane.map(|to| {
        let spec = &first.spec;
        control_plane_scaling::supported(spec.masters, &spec.installed_version, to)
    });
    let mut steps = Step::all(
        first.spec.day2.is_some(),
        opts.upgrade.as_ref(),
        failing,
        downgrade,
        control_plane,
    );
    if opts.image_mode == Some(ImageModeRun::FailedBuild) {
        let end = steps
            .iter()
            .position(|s| *s == Step::MachinesRunning)
            .map_or(steps.len(), |at| at + 1);
        steps.truncate(end);
        steps.push(Step::ImageModeInstallFailed);
    } else if opts.image_mode.is_some()
        && let Some(at) = steps.iter().position(|s| *s == Step::MachinesRunning)
    {
        steps.insert(at + 1, Step::ImageModeRolledOut);
    }
    if opts.image_mode.is_some()
        && let Some(at) = steps.iter().position(|s| *s == Step::Day2Installed)
    {
        steps.insert(at + 1, Step::ImageModeDay2Counted);
    }
    steps
}

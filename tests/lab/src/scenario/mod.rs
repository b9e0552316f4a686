//! One run of the lab, phase by phase. [`run_scenario`] reads as the list of phases:
//!
//! 1. [`setup`]: the flags checked, the clusters planned (generated or from `--cluster-file`),
//!    the testbeds and managers started (with the mirror for `--disconnected`), each cluster's
//!    BareMetalHosts registered and its simulated site made;
//! 2. [`step_plan`]: the steps every cluster goes through (day-1, day-2 scale up and down,
//!    upgrades, failing hosts, image mode, control-plane scaling);
//! 3. [`waiting`]: the passes that tick the sites, watch the clusters and act when a step is
//!    reached ([`cluster_pass`] for one cluster), with chaos and leader kills on the way;
//! 4. [`checks`]: what is checked once the run ended (chaos recovered, no duplicates, the logs
//!    bundle, RBAC, API requests, the shards' split ([`shard_checks`]), secrets);
//! 5. [`summary`]: the console summary and the [`Report`].

mod chaos_kills;
mod checks;
mod cluster_pass;
mod keep;
mod setup;
mod shard_checks;
mod step_plan;
mod summary;
mod waiting;

use std::time::Instant;

use anyhow::Result;
use kube::Client;

use crate::manifests::ClusterSpec;
use crate::memory::Memory;
use crate::testbeds::Lab;
use crate::{Options, Report, mirror};
use checks::read_api;
use keep::keep_running;

/// What every phase of a run shares: the flags, the clock, the lab and what it started.
pub(crate) struct Scenario<'a> {
    pub opts: &'a Options,
    pub start: Instant,
    /// How many clusters run.
    pub n: u32,
    /// Where the clusters' manifests come from, for the output.
    pub source: String,
    /// The lab's own client of the management apiserver (the lab's `client`).
    pub client: Client,
    /// `--disconnected`: the mirror registry (dropped before the lab, as it was started after).
    pub mirror: Option<mirror::Mirror>,
    pub lab: Lab,
    /// The managers' memory, sampled every pass.
    pub memory: Memory,
}

impl Scenario<'_> {
    /// A cluster's lines start with its name when several clusters run.
    pub fn prefix(&self, spec: &ClusterSpec) -> String {
        if self.n > 1 {
            format!("{}: ", spec.name)
        } else {
            String::new()
        }
    }
}

/// One run: the phases of this module's list, in order; `Ok` with the report even when a
/// cluster did not finish (the report says why), `Err` when the lab could not run at all.
pub(crate) async fn run_scenario(opts: &Options, start: Instant) -> Result<Report> {
    let n = setup::clusters_to_run(opts)?;
    // The clusters' manifests first: a file the lab cannot use fails before anything starts.
    let (plans, source) = setup::plan_clusters(opts, n, start).await?;
    let mut s = setup::start_testbeds(opts, start, n, source).await?;
    // The apiservers' request counters before anything of the clusters exists.
    let api_before = read_api(&s.client, &s.lab.workload.client).await;
    let mut runs = setup::register_sites(&s, plans).await?;
    setup::print_sites(&s, &runs);
    let plan = step_plan::StepPlan::new(opts, &runs)?;
    let mut waiting = waiting::Waiting::new(&s, &plan).await?;
    let failure = waiting.wait_for_milestones(&mut s, &mut runs, &plan).await;
    let findings =
        checks::after_the_run(&mut s, &mut waiting, &runs, &plan, failure, api_before).await;
    let report = summary::print_and_report(&mut s, &runs, &plan, waiting, findings);
    if !report.ok || opts.keep || opts.keep_dirs {
        s.lab.tb.keep_dir();
        s.lab.workload.keep_dir();
    }
    if opts.keep {
        keep_running(&mut s.lab, &mut runs).await;
    }
    Ok(report)
}

//! The lab: a simulated Metal3 site over the real Cluster API, CAPM3 and baremetal-operator,
//! where our two providers install an OpenShift cluster end to end. Everything is real except
//! the servers and the kubelets (see docs/lab.md).
//!
//! [`run`] generates the clusters' manifests from `templates/` with the real `clusterctl`
//! ([`generate`]), or reads the user's (`--cluster-file`, [`clusterfile`]); starts the
//! management testbed (etcd, kube-apiserver, kube-controller-manager, CAPI, CAPM3, BMO with its
//! fixture provisioner), a workload apiserver, our two managers as processes and one
//! [`site::Site`] per cluster; then installs the clusters day-1 (one, or `--clusters N`
//! concurrently, each in its own namespace), adds a day-2 worker to each and removes it again,
//! printing progress and, at the end, a timeline, the managers' peak memory ([`memory`]), the
//! API requests the apiservers counted ([`apimetrics`]), the day-2 scale-up time and the wall
//! time; `--report` writes it all as JSON ([`Report::to_json`]).
//!
//! The map:
//!
//! - the run: `scenario` (its phases, one module each: setup, step plan, the passes, one
//!   cluster's pass, the checks after the run, the summary), `steps` (the milestones and when
//!   each is done), `actions` (what the lab does once a step is reached), `cluster_ops` (the
//!   edits and reads those actions make), `chaos` and `fleet` (many clusters at once);
//! - before it: `options` (the flags), `plans` (each cluster's hosts and manifests, from
//!   [`generate`] or [`clusterfile`]), `testbeds` (the testbeds and our managers, [`managers`]
//!   as processes or [`pods`]), `cluster_run` (one cluster's state during the run);
//! - the simulated world: [`site`] (servers, kubelets), [`kubelet_api`], [`etcd_operator`],
//!   [`cvo`], [`mco`], [`mirror`];
//! - what is observed and reported: [`observe`], [`live`], [`memory`], [`apimetrics`],
//!   [`secrets`], `install_check`, `stuck`, `report`;
//! - `--shards`: [`shards`] (which shard a cluster is in, its labels, the split and its checks).

mod actions;
pub mod apimetrics;
pub mod chaos;
mod cluster_ops;
mod cluster_run;
pub mod clusterfile;
pub mod control_plane_scaling;
pub mod cvo;
pub mod etcd_operator;
pub mod fleet;
pub mod generate;
mod install_check;
pub mod kubelet_api;
pub mod live;
pub mod managers;
pub mod manifests;
pub mod mco;
pub mod memory;
pub mod mirror;
pub mod observe;
mod options;
mod plans;
pub mod pods;
mod report;
mod scenario;
pub mod secrets;
pub mod shards;
pub mod site;
mod steps;
mod stuck;
mod testbeds;

use std::time::Instant;

use anyhow::Result;

pub use install_check::{InstallCheck, OCP_RELEASE_REPOSITORY, OKD_RELEASE_REPOSITORY};
pub use options::{Disconnected, ImageModeRun, Options, Speed, Topology, Upgrade};
pub use plans::MAX_FILE_HOSTS;
pub use report::{
    ChaosReport, ClusterReport, Day2Times, LeaderKill, MaxSeen, Report, error_report, write_report,
};
pub use stuck::{ObjectState, Stuck};

/// The time since the lab started, as every console line begins: `[  12.3s]`.
fn stamp(start: Instant) -> String {
    format!("[{:>6.1}s]", start.elapsed().as_secs_f64())
}

/// Runs the scenario; `Ok` with `ok: false` when it did not finish (after printing why).
/// With `opts.report`, writes the JSON report at the end; when the lab could not run at all
/// (a bad cluster file, a component that did not start), the report says so in `error`.
pub async fn run(opts: &Options) -> Result<Report> {
    let start = Instant::now();
    let result = scenario::run_scenario(opts, start).await;
    if let Some(path) = &opts.report {
        let text = match &result {
            Ok(r) => r.to_json(),
            Err(e) => error_report(e, start.elapsed()),
        };
        write_report(path, &text)?;
    }
    result
}

/// How many clusters' sites a pass ticks (and clusters it applies) at once.
const SITES_AT_ONCE: usize = 32;

/// Most shards of each manager (`--shards`): each shard is two more processes on this machine.
pub const MAX_SHARDS: u32 = 8;

/// Most clusters in one run (`--clusters`): each gets its own /24 and 10 profile indexes.
pub const MAX_CLUSTERS: u32 = 1000;

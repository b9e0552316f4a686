//! One cluster of the run: its site, what was last seen and how far its scenario got.

use std::time::{Duration, Instant};

use agent_sim::ReplyCtx;
use anyhow::Result;
use kube::Client;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::install_check::InstallCheck;
use crate::manifests::ClusterSpec;
use crate::observe::Snapshot;
use crate::options::{Speed, Topology};
use crate::plans::Plan;
use crate::report::{ClusterReport, Day2Times, MaxSeen};
use crate::site::{Server, Site};
use crate::steps::Step;
use crate::stuck::{Stuck, stuck_objects};
/// One cluster of the run: its site, what was last seen and how far its scenario got.
pub(crate) struct ClusterRun {
    pub(crate) spec: ClusterSpec,
    pub(crate) servers: Vec<Server>,
    /// The cluster's manifests, applied once its hosts are available.
    pub(crate) objects: Vec<Value>,
    /// What they are, for the output.
    pub(crate) applied: String,
    pub(crate) site: Site,
    pub(crate) snap: Snapshot,
    /// The next step of `Step::all`.
    pub(crate) next: usize,
    /// When each step was reached, since the lab started.
    pub(crate) reached: Vec<Duration>,
    pub(crate) controller: Option<JoinHandle<Result<()>>>,
    pub(crate) controller_started: bool,
    pub(crate) last_line: String,
    pub(crate) last_print: Option<Instant>,
    /// Its day-2 step, once scaled up.
    pub(crate) day2: Option<Day2Times>,
    /// What the lab read back once it was installed.
    pub(crate) install_check: Option<InstallCheck>,
    pub(crate) max_seen: MaxSeen,
    /// Its day-2 worker is installed; its workers wait to be scaled back down until every
    /// cluster's is (several clusters).
    pub(crate) scale_down_pending: bool,
    /// The etcd members once the control plane was scaled up (`--scale-control-plane`).
    pub(crate) members_scaled_up: Vec<String>,
}

impl ClusterRun {
    pub(crate) fn new(
        plan: Plan,
        client: &Client,
        workload: &Client,
        speed: Speed,
        bmc_trust: &agent_sim::Trust,
    ) -> ClusterRun {
        let Plan {
            spec,
            servers,
            objects,
            applied,
            ..
        } = plan;
        let reply_ctx = if spec.api_vip.is_empty() {
            ReplyCtx::default()
        } else {
            ReplyCtx {
                api_vips: vec![spec.api_vip.clone()],
                ingress_vips: vec![spec.ingress_vip.clone()],
                ..ReplyCtx::default()
            }
        };
        let site = Site::new(
            client.clone(),
            workload.clone(),
            &spec.ns,
            &servers,
            reply_ctx,
            speed.factor(),
            bmc_trust.clone(),
        );
        ClusterRun {
            spec,
            servers,
            objects,
            applied,
            site,
            snap: Snapshot::default(),
            next: 0,
            reached: Vec::new(),
            controller: None,
            controller_started: false,
            last_line: String::new(),
            last_print: None,
            day2: None,
            install_check: None,
            max_seen: MaxSeen::default(),
            scale_down_pending: false,
            members_scaled_up: Vec::new(),
        }
    }

    pub(crate) fn report(&self, steps: &[Step]) -> ClusterReport {
        let milestones: Vec<(Duration, String)> = self
            .reached
            .iter()
            .zip(steps)
            .map(|(d, s)| (*d, s.title().to_string()))
            .collect();
        let installed = milestones
            .iter()
            .find(|(_, m)| m == Step::Installed.title())
            .map(|(d, _)| *d);
        let stuck = steps.get(self.next).map(|step| Stuck {
            step: step.title().to_string(),
            waiting_for: step.waiting_for(&self.spec),
            objects: stuck_objects(*step, &self.snap, &self.site),
        });
        ClusterReport {
            name: self.spec.name.clone(),
            namespace: self.spec.ns.clone(),
            masters: self.spec.masters,
            workers: self.spec.workers,
            milestones,
            installed,
            done: self.next >= steps.len(),
            last_seen: self.snap.to_json(&self.spec.name),
            day2: self.day2,
            install_check: self.install_check.clone(),
            max_seen: self.max_seen,
            stuck,
        }
    }
}

/// `3+2`, `sno`, `compact`, `1+2`, ...
pub(crate) fn shape(spec: &ClusterSpec) -> String {
    if spec.masters == 1 && spec.workers == 0 {
        "sno".into()
    } else if spec.topology == Topology::Compact {
        "compact (3+0)".into()
    } else {
        format!("{}+{}", spec.masters, spec.workers)
    }
}

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

mod actions;
pub mod apimetrics;
pub mod chaos;
pub mod clusterfile;
pub mod control_plane_scaling;
pub mod cvo;
pub mod etcd_operator;
pub mod fleet;
pub mod generate;
pub mod kubelet_api;
pub mod live;
pub mod managers;
pub mod manifests;
pub mod mco;
pub mod memory;
pub mod mirror;
pub mod observe;
pub mod pods;
mod scenario;
pub mod secrets;
pub mod site;
mod steps;

use scenario::run_scenario;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use steps::{Failing, Step};

use agent_sim::{InstallerController, ReplyCtx};
use anyhow::{Context, Result, anyhow};
use assisted_core::api::hive::ClusterDeployment;
use assisted_core::service::auth::{Claims, Keys, PRIVATE_KEY_FIELD};
use assisted_core::service::controllers::day2::NODE_BOOTSTRAPPER;
use assisted_core::service::images::{TestIsoContents, write_test_iso};
use external_types::capi::MachineDeployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use testbed::Testbed;
use tokio::task::JoinHandle;

use clusterfile::ClusterFile;
use generate::Generate;
use managers::{Managers, WorkloadAccess};
use manifests::ClusterSpec;
use memory::Memory;
use observe::{Snapshot, conditions};
use site::{Server, Site};

/// `--disconnected`: how the clusters reach their images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Disconnected {
    /// Through the site's mirror registry ([`mirror`]): the release and the assisted images
    /// only there, every host pulling through its discovery ignition's mirrors.
    Mirror,
    /// The mirror ConfigMap has a typo in its `registries.conf`: the run ends when the
    /// control plane names it (`Available` False `InvalidImageRegistryConfig`), nothing
    /// installed.
    BrokenConfigMap,
}

/// `--image-mode`: the cluster's pools on pre-built OS images from day 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImageModeRun {
    /// Every pool (master, and worker with workers) on its pre-built image, pinned by digest:
    /// the run waits for the rollout (`ImageMode` True).
    Pools,
    /// The pre-built images given by tag: the run ends when the control plane names the
    /// core's refusal, nothing installed.
    TagImage,
    /// The last pool's pre-built image cannot be pulled (the simulated MCO fails its
    /// MachineOSBuild and degrades the pool): the run ends when the control plane says the
    /// install failed (`Available` False `ImageModeInstallFailed`).
    FailedBuild,
}

/// What to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Topology {
    /// Three masters and two workers (`--workers` changes the two), then a day-2 worker added
    /// and removed.
    #[value(name = "3+2")]
    ThreePlusTwo,
    /// A compact cluster: three schedulable masters, no workers, no day-2 step (the 3+N
    /// template with no workers; the same cluster as `3+2` with `--workers 0`).
    Compact,
    /// Single-node OpenShift: one master, no workers, no day-2 step.
    Sno,
}

impl Topology {
    /// Three control-plane nodes, API and ingress VIPs, generated from the 3+N template.
    pub fn highly_available(self) -> bool {
        matches!(self, Topology::ThreePlusTwo | Topology::Compact)
    }
}

/// How fast the simulated servers and the cluster's installer-controller go: a multiplier on
/// agent-sim's delays (its installer's stage times, the agents' polling, the controller's
/// polling). docs/lab.md "Speed" has the seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Speed {
    /// The delays of a real install's simulated parts (×1): the agents poll every 60 s as the
    /// core tells them, writing the image takes 20 s, the controller polls every 5 s.
    Realistic,
    /// A tenth of them (×0.1).
    Fast,
    /// No simulated delays (×0): polls every 50 ms, stages back to back.
    #[default]
    Instant,
}

impl Speed {
    /// agent-sim's `with_speed` multiplier.
    pub fn factor(self) -> f64 {
        match self {
            Speed::Realistic => 1.0,
            Speed::Fast => 0.1,
            Speed::Instant => 0.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Speed::Realistic => "realistic",
            Speed::Fast => "fast",
            Speed::Instant => "instant",
        }
    }
}

pub struct Options {
    pub topology: Topology,
    /// Day-1 workers of a 3+N cluster (0..=[`manifests::MAX_WORKERS`]; 0: no day-2 step);
    /// ignored for SNO and with a cluster file.
    pub workers: u32,
    /// How fast the simulated hosts and installer-controller go.
    pub speed: Speed,
    /// How many clusters of `topology` to install concurrently, each in its own namespace
    /// with its own BareMetalHosts (at least 1).
    pub clusters: u32,
    /// Install the cluster of this file (manifests written for CAPOA) instead of generating
    /// `topology` from the templates; `topology` and `clusters` are then ignored.
    pub cluster_file: Option<PathBuf>,
    /// Write the JSON report ([`Report::to_json`]) here at the end.
    pub report: Option<PathBuf>,
    /// The lab directory (must exist): logs, the core's data, certificates.
    pub dir: PathBuf,
    /// Where the `controlplane-provider` and `bootstrap-provider` binaries are.
    pub bin_dir: PathBuf,
    /// The whole scenario must finish within this.
    pub timeout: Duration,
    /// After the scenario, keep everything running until Ctrl-C.
    pub keep: bool,
    /// Keep the testbeds' directories even when the scenario succeeds.
    pub keep_dirs: bool,
    /// `--chaos`: kill and restart our managers (and the management apiserver) at random
    /// points drawn from the seed ([`chaos::plan`]).
    pub chaos: Option<chaos::Settings>,
    /// `--okd`: install OKD (the templates' OKD flavours) instead of OpenShift; ignored with a
    /// cluster file.
    pub okd: bool,
    /// `--managers pods`: our managers run as the pods `clusterctl init` installed on a real
    /// node of the management cluster, from the images `make images` built (root only);
    /// otherwise as processes.
    pub managers_as_pods: bool,
    /// `--replicas N` (with the managers as pods): each of our Deployments runs N pods, one
    /// leading.
    pub replicas: u32,
    /// `--kill-leaders` (with the managers as pods): delete each manager's leader pod once the
    /// first cluster's install has started; a standby (or the replacement pod) must take over
    /// and the run finish.
    pub kill_leaders: bool,
    /// `--upgrade-to`: once the cluster is installed (and its day-2 step done), upgrade it.
    pub upgrade: Option<Upgrade>,
    /// `--fail-host HOST[,HOST]`: once the cluster is installed (and its day-2 step done), a
    /// MachineHealthCheck is applied over HOST's Machines and HOST's kubelet stops; the run
    /// follows the remediation ([`Step::HostFailed`] and after).
    pub fail_host: Option<String>,
    /// `--cluster-class`: the cluster as a topology over a ClusterClass
    /// (templates/cluster-template-topology.yaml): three masters installed day-1, the workers'
    /// MachineDeployment made by Cluster API after the install at 0 replicas, and the day-2
    /// step scaling it through the Cluster's topology.
    pub cluster_class: bool,
    /// `--scale-control-plane N`: once the cluster is installed (and its day-2 step done), its
    /// control plane is scaled to N masters and back ([`control_plane_scaling`]); N−masters
    /// spare control-plane hosts are added to the site.
    pub scale_control_plane: Option<u32>,
    /// `--disconnected`: the clusters install from the site's mirror registry.
    pub disconnected: Option<Disconnected>,
    /// `--image-mode`: the cluster installs OpenShift 4.21 with its pools on pre-built images.
    pub image_mode: Option<ImageModeRun>,
}

/// An upgrade the lab asks for once a cluster is installed: `distributionVersion` set to `to`,
/// walked by the simulated cluster-version operator ([`cvo`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgrade {
    pub to: String,
    /// The upgrade fails (`--upgrade-fails`): the run waits for the control plane to say so.
    pub fails: bool,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Report {
    pub ok: bool,
    /// Where the clusters came from: the template, or the cluster file.
    pub source: String,
    /// How fast the simulated hosts went.
    pub speed: Speed,
    /// Milestones reached by every cluster, with the time since the lab started (the time
    /// the last cluster reached it).
    pub milestones: Vec<(Duration, String)>,
    /// Why the run failed (timeout, a manager exited, ...).
    pub failure: Option<String>,
    /// The step that did not finish, on failure.
    pub stuck: Option<String>,
    /// Each cluster's own milestones.
    pub clusters: Vec<ClusterReport>,
    /// Each milestone's percentiles over the clusters that reached it.
    pub percentiles: Vec<fleet::Percentiles>,
    /// The managers' memory over the run.
    pub memory: Memory,
    /// The API requests the apiservers counted (`None` when they could not be read).
    pub api: Option<apimetrics::ApiRequests>,
    /// The whole run, since the lab started.
    pub duration: Duration,
    /// `--chaos`: the seed, the kills carried out and the ones the run ended before.
    pub chaos: Option<ChaosReport>,
    /// `--kill-leaders`: when each manager's leader pod was deleted and a new leader ready.
    pub leader_kills: Vec<LeaderKill>,
    /// The search for the run's secrets where they must not be (`None`: it could not read
    /// them; `failure` says why).
    pub secrets: Option<secrets::Checked>,
    /// What Cluster API says of the cluster at the end: the real `clusterctl describe cluster
    /// --show-templates` (one cluster, when it could run).
    pub describe: Option<String>,
    /// `--disconnected`: what the mirror served and every host pull.
    pub mirror: Option<mirror::MirrorReport>,
}

/// What `--kill-leaders` did to one manager.
#[derive(Debug, Clone)]
pub struct LeaderKill {
    /// The manager (`controlplane-provider`, `bootstrap-provider`).
    pub manager: &'static str,
    /// The deleted leader pod.
    pub pod: String,
    /// Since the lab started.
    pub killed_at: Duration,
    /// When another pod held the Lease and answered `/readyz`.
    pub ready_at: Option<Duration>,
    /// The milestone the first cluster had reached when it was deleted.
    pub after: String,
}

/// What `--chaos` did.
#[derive(Debug, Clone)]
pub struct ChaosReport {
    pub seed: u64,
    pub kills: Vec<chaos::Kill>,
    /// Planned kills the scenario ended before (`<target> after <milestone>`).
    pub not_carried_out: Vec<String>,
}

/// A cluster's day-2 step, since the lab started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Day2Times {
    /// When the lab scaled the MachineDeployment up.
    pub scaled_up: Duration,
    /// When the day-2 worker's Node was first seen Ready in the workload apiserver.
    pub node_ready: Option<Duration>,
    /// When the day-2 milestone was reached (its Machine Running, its Agent
    /// `added-to-existing-cluster`).
    pub installed: Option<Duration>,
}

impl Day2Times {
    /// Scale-up to the Node Ready.
    pub fn to_node_ready(&self) -> Option<Duration> {
        self.node_ready.map(|d| d.saturating_sub(self.scaled_up))
    }

    /// Scale-up to the day-2 milestone.
    pub fn to_installed(&self) -> Option<Duration> {
        self.installed.map(|d| d.saturating_sub(self.scaled_up))
    }
}

/// One cluster's run.
#[derive(Debug, Clone)]
pub struct ClusterReport {
    pub name: String,
    pub namespace: String,
    pub masters: u32,
    pub workers: u32,
    pub milestones: Vec<(Duration, String)>,
    /// When its AgentClusterInstall was `installed`.
    pub installed: Option<Duration>,
    /// Whether it reached its last milestone.
    pub done: bool,
    /// What the lab saw last (JSON object, see docs/lab.md "The report").
    pub last_seen: Value,
    /// Its day-2 step, once the MachineDeployment was scaled up.
    pub day2: Option<Day2Times>,
    /// What the lab checked once it was installed (`None` before).
    pub install_check: Option<InstallCheck>,
    /// The most InfraEnvs, Machines and Agents seen at once.
    pub max_seen: MaxSeen,
    /// The step it did not finish and the objects that step waits on.
    pub stuck: Option<Stuck>,
}

/// The most objects of each kind the lab saw at once in a cluster's namespace, over every pass
/// (every 0.5 s): more than the cluster can have is a duplicate (a manager restart must never
/// create a second InfraEnv, Machine or Agent for the same thing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MaxSeen {
    pub infraenvs: usize,
    pub control_plane_machines: usize,
    pub worker_machines: usize,
    pub agents: usize,
}

/// The label CAPI puts on control-plane Machines.
const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";

impl MaxSeen {
    fn update(&mut self, s: &Snapshot) {
        let cp = s
            .machines
            .iter()
            .filter(|m| m.labels().contains_key(CONTROL_PLANE_LABEL))
            .count();
        self.infraenvs = self.infraenvs.max(s.infraenvs.len());
        self.control_plane_machines = self.control_plane_machines.max(cp);
        self.worker_machines = self.worker_machines.max(s.machines.len() - cp);
        self.agents = self.agents.max(s.agents.len());
    }

    /// What exceeded what the cluster can have: one InfraEnv per template in use, a Machine
    /// per replica (the day-2 worker included), an Agent per host of the site.
    pub fn duplicates(&self, spec: &ClusterSpec, hosts: usize) -> Vec<String> {
        let workers = spec.workers as usize + usize::from(spec.day2.is_some());
        // A day-2 step on a MachineDeployment with no day-1 workers brings its template's
        // InfraEnv along (the ClusterClass run).
        let infraenvs = spec.infraenvs + usize::from(spec.day2.is_some() && spec.workers == 0);
        [
            ("InfraEnvs", self.infraenvs, infraenvs, "templates in use"),
            (
                "control-plane Machines",
                self.control_plane_machines,
                // `--scale-control-plane` raises it for a while.
                spec.masters.max(spec.control_plane_to.unwrap_or_default()) as usize,
                "control-plane replicas",
            ),
            (
                "worker Machines",
                self.worker_machines,
                workers,
                "worker replicas, the day-2 one included",
            ),
            ("Agents", self.agents, hosts, "hosts"),
        ]
        .into_iter()
        .filter(|(_, seen, most, _)| seen > most)
        .map(|(what, seen, most, of)| format!("{seen} {what} at once, for {most} {of}"))
        .collect()
    }
}

/// What the lab reads back once a cluster is installed: the core's view of it and the release
/// its control plane asked for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InstallCheck {
    /// The core's `schedulable_masters` (`GET /clusters/{id}` of the agent REST API): true
    /// when the cluster has fewer than two day-1 workers (compact, SNO).
    pub schedulable_masters: bool,
    /// The core's `openshift_version` of the cluster.
    pub openshift_version: String,
    /// The ClusterImageSet the AgentClusterInstall refers to, and its release image.
    pub cluster_image_set: String,
    pub release_image: String,
    /// The pull secret the ClusterDeployment refers to (`spec.pullSecretRef`).
    pub pull_secret: String,
}

/// Repositories of the release images the control plane picks (controlplane-provider's
/// `release.rs`): OKD (SCOS) and OCP.
pub const OKD_RELEASE_REPOSITORY: &str = "quay.io/okd/scos-release";
pub const OCP_RELEASE_REPOSITORY: &str = "quay.io/openshift-release-dev/ocp-release";

/// A step that did not finish.
#[derive(Debug, Clone)]
pub struct Stuck {
    pub step: String,
    pub waiting_for: String,
    pub objects: Vec<ObjectState>,
}

/// An object a stuck step depends on, as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectState {
    pub kind: String,
    pub name: String,
    pub state: String,
    /// `Type=Status Reason: message`, the ones not True first.
    pub conditions: Vec<String>,
}

impl ObjectState {
    /// What it waits on: its first condition that is not True and says why (has a message),
    /// else its first one not True.
    pub fn blocking(&self) -> Option<&str> {
        let not_true = || self.conditions.iter().filter(|c| !c.contains("=True "));
        not_true()
            .find(|c| {
                c.split_once(": ")
                    .is_some_and(|(_, m)| !m.trim().is_empty())
            })
            .or_else(|| not_true().next())
            .map(String::as_str)
    }
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// The report's JSON, fields in the order docs/lab.md shows them.
mod report_json {
    use serde::Serialize;
    use serde_json::Value;

    /// The report of a run that could not start (a bad cluster file, a component that failed).
    #[derive(Serialize)]
    pub struct Error {
        pub ok: bool,
        pub error: String,
        pub seconds: f64,
    }

    #[derive(Serialize)]
    pub struct Milestone<'a> {
        pub name: &'a str,
        pub seconds: f64,
    }

    #[derive(Serialize)]
    pub struct Report<'a> {
        pub ok: bool,
        pub source: &'a str,
        pub speed: &'a str,
        pub seconds: f64,
        pub failure: Option<&'a str>,
        pub stuck: Option<&'a str>,
        pub milestones: Vec<Milestone<'a>>,
        pub all_installed_seconds: Option<f64>,
        pub first_applied_seconds: Option<f64>,
        pub day2: Option<Day2Summary>,
        pub milestone_percentiles: &'a [crate::fleet::Percentiles],
        pub clusters: Vec<Cluster<'a>>,
        pub memory: Memory<'a>,
        pub api_requests: Option<ApiRequests<'a>>,
        pub chaos: Option<Chaos<'a>>,
        /// `--kill-leaders`; empty otherwise.
        pub leader_kills: Vec<LeaderKill<'a>>,
        pub secrets: Option<Secrets<'a>>,
        /// `clusterctl describe cluster --show-templates` at the end (one cluster).
        pub describe: Option<&'a str>,
    }

    #[derive(Serialize)]
    pub struct Secrets<'a> {
        pub values: usize,
        pub secrets: &'a [String],
        pub places: usize,
        pub logs: usize,
        pub events: usize,
        pub statuses: usize,
        pub metrics: usize,
        /// Each leak, named (never the value).
        pub found: Vec<String>,
        pub missing: &'a [String],
    }

    #[derive(Serialize)]
    pub struct LeaderKill<'a> {
        pub manager: &'a str,
        pub pod: &'a str,
        pub after: &'a str,
        pub killed_seconds: f64,
        pub new_leader_ready_seconds: Option<f64>,
    }

    #[derive(Serialize)]
    pub struct Chaos<'a> {
        pub seed: u64,
        pub kills: &'a [crate::chaos::Kill],
        pub not_carried_out: &'a [String],
    }

    /// Over the clusters that reached it.
    #[derive(Serialize)]
    pub struct Stats {
        pub min: f64,
        pub median: f64,
        pub max: f64,
    }

    #[derive(Serialize)]
    pub struct Day2Summary {
        pub clusters: usize,
        pub scale_up_to_node_ready_seconds: Option<Stats>,
        pub scale_up_to_installed_seconds: Option<Stats>,
    }

    #[derive(Serialize)]
    pub struct Day2 {
        pub scaled_up_seconds: f64,
        pub node_ready_seconds: Option<f64>,
        pub installed_seconds: Option<f64>,
        pub scale_up_to_node_ready_seconds: Option<f64>,
        pub scale_up_to_installed_seconds: Option<f64>,
    }

    #[derive(Serialize)]
    pub struct ApiRequests<'a> {
        pub hosts: u64,
        pub management: Counts<'a>,
        pub by_client: Vec<Client<'a>>,
        pub reconciles: &'a std::collections::BTreeMap<String, f64>,
        pub workload: Counts<'a>,
    }

    #[derive(Serialize)]
    pub struct Counts<'a> {
        pub total: f64,
        pub per_host: f64,
        pub by_verb: &'a std::collections::BTreeMap<String, f64>,
        pub by_resource: &'a std::collections::BTreeMap<String, f64>,
        pub by_code: &'a std::collections::BTreeMap<String, f64>,
        pub by_flow_schema: &'a std::collections::BTreeMap<String, f64>,
    }

    #[derive(Serialize)]
    pub struct Client<'a> {
        pub name: &'a str,
        pub requests: f64,
        pub per_host: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reads: Option<f64>,
    }

    #[derive(Serialize)]
    pub struct Cluster<'a> {
        pub name: &'a str,
        pub namespace: &'a str,
        pub control_plane_nodes: u32,
        pub workers: u32,
        pub done: bool,
        pub installed_seconds: Option<f64>,
        pub milestones: Vec<Milestone<'a>>,
        pub last_seen: &'a Value,
        pub day2: Option<Day2>,
        pub install_check: Option<&'a super::InstallCheck>,
        pub max_seen: &'a super::MaxSeen,
        pub stuck: Option<Stuck<'a>>,
    }

    #[derive(Serialize)]
    pub struct Stuck<'a> {
        pub step: &'a str,
        pub waiting_for: &'a str,
        /// The first of `objects` with a condition that is not True.
        pub object: Option<Object<'a>>,
        pub objects: Vec<Object<'a>>,
    }

    #[derive(Serialize)]
    pub struct Object<'a> {
        pub kind: &'a str,
        pub name: &'a str,
        pub state: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub condition: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub conditions: Option<&'a [String]>,
    }

    #[derive(Serialize)]
    pub struct Memory<'a> {
        pub samples: u64,
        pub managers: Vec<Manager<'a>>,
        pub peak_sum_mib: f64,
        pub peak_sum_sampled_mib: f64,
    }

    #[derive(Serialize)]
    pub struct Manager<'a> {
        pub name: &'a str,
        pub idle_mib: f64,
        pub peak_mib: f64,
        pub last_mib: f64,
    }
}

/// Min, median and max of `v` in seconds (one decimal); `None` when empty.
fn stats(mut v: Vec<Duration>) -> Option<report_json::Stats> {
    v.sort();
    Some(report_json::Stats {
        min: secs(*v.first()?),
        median: secs(v[v.len() / 2]),
        max: secs(*v.last()?),
    })
}

fn day2_json(d: &Day2Times) -> report_json::Day2 {
    report_json::Day2 {
        scaled_up_seconds: secs(d.scaled_up),
        node_ready_seconds: d.node_ready.map(secs),
        installed_seconds: d.installed.map(secs),
        scale_up_to_node_ready_seconds: d.to_node_ready().map(secs),
        scale_up_to_installed_seconds: d.to_installed().map(secs),
    }
}

fn counts_json(c: &apimetrics::Counts, hosts: u64) -> report_json::Counts<'_> {
    report_json::Counts {
        total: c.total,
        per_host: per_host(c.total, hosts),
        by_verb: &c.by_verb,
        by_resource: &c.by_resource,
        by_code: &c.by_code,
        by_flow_schema: &c.by_flow_schema,
    }
}

fn per_host(n: f64, hosts: u64) -> f64 {
    if hosts == 0 {
        0.0
    } else {
        (n / hosts as f64 * 10.0).round() / 10.0
    }
}

fn milestones_json(m: &[(Duration, String)]) -> Vec<report_json::Milestone<'_>> {
    m.iter()
        .map(|(d, name)| report_json::Milestone {
            name,
            seconds: secs(*d),
        })
        .collect()
}

impl ObjectState {
    fn to_json(&self, full: bool) -> report_json::Object<'_> {
        report_json::Object {
            kind: &self.kind,
            name: &self.name,
            state: &self.state,
            condition: (!full).then(|| self.blocking()).flatten(),
            conditions: full.then_some(self.conditions.as_slice()),
        }
    }
}

impl Stuck {
    fn to_json(&self) -> report_json::Stuck<'_> {
        report_json::Stuck {
            step: &self.step,
            waiting_for: &self.waiting_for,
            object: self
                .objects
                .iter()
                .find(|o| o.blocking().is_some())
                .map(|o| o.to_json(false)),
            objects: self.objects.iter().map(|o| o.to_json(true)).collect(),
        }
    }
}

impl Report {
    /// When every cluster was installed (the `installed` milestone), since the lab started.
    pub fn all_installed(&self) -> Option<Duration> {
        self.milestones
            .iter()
            .find(|(_, m)| m == Step::Installed.title())
            .map(|(d, _)| *d)
    }

    /// The day-2 steps that started (clusters with a MachineDeployment).
    pub fn day2(&self) -> Vec<Day2Times> {
        self.clusters.iter().filter_map(|c| c.day2).collect()
    }

    /// The report `--report` writes, pretty-printed (its shape is in docs/lab.md "The report").
    pub fn to_json(&self) -> String {
        let first_applied = self
            .clusters
            .iter()
            .filter_map(|c| c.milestones.first().map(|(d, _)| *d))
            .min();
        let mib = |kib: u64| (memory::mib(kib) * 10.0).round() / 10.0;
        let report = report_json::Report {
            ok: self.ok,
            source: &self.source,
            speed: self.speed.name(),
            seconds: secs(self.duration),
            failure: self.failure.as_deref(),
            stuck: self.stuck.as_deref(),
            milestones: milestones_json(&self.milestones),
            all_installed_seconds: self.all_installed().map(secs),
            first_applied_seconds: first_applied.map(secs),
            day2: {
                let d = self.day2();
                (!d.is_empty()).then(|| report_json::Day2Summary {
                    clusters: d.len(),
                    scale_up_to_node_ready_seconds: stats(
                        d.iter().filter_map(Day2Times::to_node_ready).collect(),
                    ),
                    scale_up_to_installed_seconds: stats(
                        d.iter().filter_map(Day2Times::to_installed).collect(),
                    ),
                })
            },
            milestone_percentiles: &self.percentiles,
            clusters: self
                .clusters
                .iter()
                .map(|c| report_json::Cluster {
                    name: &c.name,
                    namespace: &c.namespace,
                    control_plane_nodes: c.masters,
                    workers: c.workers,
                    done: c.done,
                    installed_seconds: c.installed.map(secs),
                    milestones: milestones_json(&c.milestones),
                    last_seen: &c.last_seen,
                    day2: c.day2.as_ref().map(day2_json),
                    install_check: c.install_check.as_ref(),
                    max_seen: &c.max_seen,
                    stuck: c.stuck.as_ref().map(Stuck::to_json),
                })
                .collect(),
            memory: report_json::Memory {
                samples: self.memory.samples,
                managers: self
                    .memory
                    .managers
                    .iter()
                    .map(|u| report_json::Manager {
                        name: &u.name,
                        idle_mib: mib(u.idle_kib),
                        peak_mib: mib(u.peak_kib),
                        last_mib: mib(u.last_kib),
                    })
                    .collect(),
                peak_sum_mib: mib(self.memory.peak_sum_kib()),
                peak_sum_sampled_mib: mib(self.memory.peak_sum_sampled_kib),
            },
            api_requests: self.api.as_ref().map(|a| report_json::ApiRequests {
                hosts: a.hosts,
                management: counts_json(&a.management, a.hosts),
                by_client: a
                    .clients
                    .iter()
                    .map(|c| report_json::Client {
                        name: &c.name,
                        requests: c.requests,
                        per_host: per_host(c.requests, a.hosts),
                        reads: c.reads,
                    })
                    .collect(),
                reconciles: &a.reconciles,
                workload: counts_json(&a.workload, a.hosts),
            }),
            chaos: self.chaos.as_ref().map(|c| report_json::Chaos {
                seed: c.seed,
                kills: &c.kills,
                not_carried_out: &c.not_carried_out,
            }),
            leader_kills: self
                .leader_kills
                .iter()
                .map(|k| report_json::LeaderKill {
                    manager: k.manager,
                    pod: &k.pod,
                    after: &k.after,
                    killed_seconds: secs(k.killed_at),
                    new_leader_ready_seconds: k.ready_at.map(secs),
                })
                .collect(),
            secrets: self.secrets.as_ref().map(|c| report_json::Secrets {
                values: c.values,
                secrets: &c.secrets,
                places: c.places(),
                logs: c.logs,
                events: c.events,
                statuses: c.statuses,
                metrics: c.metrics,
                found: c.leaks.iter().map(secrets::Leak::describe).collect(),
                missing: &c.missing,
            }),
            describe: self.describe.as_deref(),
        };
        // Nothing in it can fail to serialize (no maps with non-string keys).
        serde_json::to_string_pretty(&report).unwrap_or_default()
    }
}

/// Writes the installed cluster's ClusterVersion as its CVO does: the control plane's
/// `distributionVersion` and the ClusterImageSet's release image, Completed.
async fn install_cluster_version(
    client: &Client,
    cvo: &cvo::Cvo,
    spec: &ClusterSpec,
) -> Result<String> {
    let name = spec.control_plane_name();
    let cp = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &spec.ns,
        &observe::control_plane_resource(),
    )
    .get(&name)
    .await
    .with_context(|| format!("reading OpenshiftAssistedControlPlane {name}"))?;
    let version = cp.data["spec"]["distributionVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let image_set = format!("{}.{name}", spec.ns);
    let image = Api::<assisted_core::api::hive::ClusterImageSet>::all(client.clone())
        .get(&image_set)
        .await
        .with_context(|| format!("reading ClusterImageSet {image_set}"))?
        .spec
        .release_image;
    cvo.install(&version, &image).await?;
    Ok(format!(
        "site: the cluster-version operator reports {version} ({image}) installed"
    ))
}

/// Edits the Cluster's `spec.topology` as a user would: read, change, write back (a merge
/// patch of the whole topology, guarded by the resourceVersion read).
async fn edit_topology(
    client: &Client,
    spec: &ClusterSpec,
    change: impl Fn(&mut Value),
) -> Result<()> {
    let api = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &spec.ns,
        &observe::cluster_resource(),
    );
    // Read, change, write at that resourceVersion, as `kubectl edit` does; Cluster API writes
    // the Cluster too, so a conflict reads it again (a few times) rather than failing the run.
    let mut attempt = 0;
    loop {
        let cluster = api
            .get(&spec.name)
            .await
            .with_context(|| format!("reading Cluster {}", spec.name))?;
        let mut topology = cluster.data["spec"]["topology"].clone();
        change(&mut topology);
        let written = api
            .patch(
                &spec.name,
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "metadata": {"resourceVersion": cluster.metadata.resource_version},
                    "spec": {"topology": topology},
                })),
            )
            .await;
        match written {
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 5 => attempt += 1,
            other => {
                other?;
                return Ok(());
            }
        }
    }
}

/// `--upgrade-to`: the user's edit of `spec.distributionVersion`; of a ClusterClass cluster,
/// its topology's version and openshiftVersion variable together.
async fn request_upgrade(client: &Client, spec: &ClusterSpec, to: &str) -> Result<()> {
    if spec.cluster_class {
        let kubernetes = cvo::kubernetes_of(to);
        return edit_topology(client, spec, |topology| {
            topology["version"] = json!(kubernetes);
            if let Some(variables) = topology["variables"].as_array_mut() {
                for v in variables.iter_mut().filter(|v| v["name"] == "openshiftVersion") {
                    v["value"] = json!(to);
                }
            }
        })
        .await
        .with_context(|| {
            format!(
                "setting Cluster {}'s topology version to {kubernetes} and openshiftVersion to {to}",
                spec.name
            )
        });
    }
    let name = spec.control_plane_name();
    Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &spec.ns,
        &observe::control_plane_resource(),
    )
    .patch(
        &name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"distributionVersion": to}})),
    )
    .await
    .with_context(|| format!("setting {name}'s distributionVersion to {to}"))?;
    Ok(())
}

/// `a` is an older OpenShift release than `b` (MAJOR.MINOR.PATCH, suffixes ignored); false
/// when either is not known.
fn is_older(a: &str, b: &str) -> bool {
    let numbers = |v: &str| -> Option<Vec<u64>> {
        let core = v.split(['-', '+']).next()?;
        let n: Vec<u64> = core
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        (n.len() == 3).then_some(n)
    };
    matches!((numbers(a), numbers(b)), (Some(a), Some(b)) if a < b)
}

/// The control plane's `ScalingUp` and `ScalingDown` conditions when they say something, as
/// the timeline shows them.
fn print_scaling(r: &ClusterRun, pre: &str, start: Instant) {
    for type_ in ["ScalingUp", "ScalingDown"] {
        if let Some((status, reason, message)) = r
            .snap
            .control_plane
            .as_ref()
            .and_then(|c| control_plane_condition(c, type_))
            .filter(|(_, _, m)| !m.is_empty())
        {
            println!(
                "{} {pre}{}: {type_} {status} {reason}: {message}",
                stamp(start),
                r.spec.control_plane_name()
            );
        }
    }
}

/// The control plane's `Remediating` condition, as the timeline shows it.
fn print_remediating(r: &ClusterRun, pre: &str, start: Instant) {
    if let Some((status, reason, message)) = r
        .snap
        .control_plane
        .as_ref()
        .and_then(|c| control_plane_condition(c, "Remediating"))
    {
        println!(
            "{} {pre}{}: Remediating {status} {reason}: {message}",
            stamp(start),
            r.spec.control_plane_name()
        );
    }
}

/// `--fail-host`'s hosts: one, or several separated by commas.
fn fail_hosts(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect()
}

/// What `--fail-host` breaks in a cluster of `masters`; an error for a host the site does not
/// have or a combination the lab does not follow.
fn failing(value: &str, servers: &[Server], masters: u32) -> Result<Failing> {
    let roles = fail_hosts(value)
        .iter()
        .map(|h| fail_host_role(h, servers))
        .collect::<Result<Vec<bool>>>()?;
    match roles.as_slice() {
        [false] => Ok(Failing::Worker),
        [true] if masters > 1 => Ok(Failing::Master),
        [true] => Ok(Failing::OnlyMaster),
        [true, true] if masters >= 3 => Ok(Failing::TwoMasters),
        _ => anyhow::bail!(
            "--fail-host {value}: the lab follows one host, or two masters of three or more"
        ),
    }
}

/// Whether `--fail-host`'s host is a control-plane host; an error naming the hosts when the
/// site has no such host.
fn fail_host_role(host: &str, servers: &[Server]) -> Result<bool> {
    if let Some(master) = role_keyword(host) {
        return Ok(master);
    }
    match servers.iter().find(|s| s.name == host) {
        Some(s) => Ok(s.role == "master"),
        None => anyhow::bail!(
            "--fail-host {host}: the site has no such host (it has {})",
            servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `--fail-host master` or `worker`: whichever host of that role is in the cluster then
/// (Metal3 picks the hosts, so their names are known only once they run).
fn role_keyword(host: &str) -> Option<bool> {
    match host {
        "master" => Some(true),
        "worker" => Some(false),
        _ => None,
    }
}

/// The MachineHealthCheck a user would write for the failed host's Machines: the workers'
/// MachineDeployment, or the control plane; unhealthy after 10 s of a Node not Ready.
fn machine_health_check(spec: &ClusterSpec, master: bool) -> Value {
    let (name, selector) = if master {
        (
            format!("{}-control-plane", spec.name),
            json!({"cluster.x-k8s.io/control-plane": ""}),
        )
    } else {
        let md = spec.workers_name();
        (md.clone(), json!({"cluster.x-k8s.io/deployment-name": md}))
    };
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": {"name": name, "namespace": spec.ns},
        "spec": {
            "clusterName": spec.name,
            "selector": {"matchLabels": selector},
            "checks": {"unhealthyNodeConditions": [
                {"type": "Ready", "status": "Unknown", "timeoutSeconds": 10},
                {"type": "Ready", "status": "False", "timeoutSeconds": 10},
            ]},
        },
    })
}

/// Cluster API's topology caught up with an upgrade: the topology and the control plane's
/// `spec.version` at `kubernetes`, and the Cluster's `TopologyReconciled` True (which Cluster API
/// sets only once the MachineDeployments are at that version too).
fn topology_settled(s: &Snapshot, kubernetes: &str) -> bool {
    let (Some(cp), Some(cluster)) = (s.control_plane.as_ref(), s.cluster.as_ref()) else {
        return false;
    };
    cp["spec"]["version"] == kubernetes
        && cluster["spec"]["topology"]["version"] == kubernetes
        && control_plane_condition(cluster, "TopologyReconciled")
            .is_some_and(|(status, _, _)| status == "True")
}

/// The version `--upgrade-to` names (empty without).
fn upgrade_to(spec: &ClusterSpec) -> &str {
    spec.upgrade.as_ref().map_or("", |u| u.to.as_str())
}

/// `(status, reason, message)` of a control plane's condition.
fn control_plane_condition(cp: &Value, type_: &str) -> Option<(String, String, String)> {
    let c = cp["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let text = |f: &str| c[f].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

fn stamp(start: Instant) -> String {
    format!("[{:>6.1}s]", start.elapsed().as_secs_f64())
}

/// Everything the lab started; dropping it stops it all.
struct Lab {
    tb: Testbed,
    workload: Testbed,
    managers: Managers,
    /// The lab's own client of the management apiserver: ServiceAccount
    /// [`apimetrics::LAB`], so that the apiserver counts its requests apart.
    client: Client,
    /// The site's network between the workload apiserver and the kubelets.
    network: Arc<kubelet_api::Network>,
    /// Holds the network's socket (a short path: Unix sockets allow 107 bytes).
    _network_dir: tempfile::TempDir,
}

impl Lab {
    fn logs(&self, dir: &Path) -> Vec<PathBuf> {
        let mut logs = self.managers.logs();
        logs.push(dir.join("logs/lab.log"));
        logs.extend(self.tb.logs());
        logs.extend(self.workload.logs());
        logs
    }
}

/// `core_extra`: more flags for the control-plane manager (its embedded core).
async fn start_lab(opts: &Options, start: Instant, core_extra: &[String]) -> Result<Lab> {
    let mut builder = Testbed::builder().name("lab").clusterctl_init();
    let network_dir = tempfile::Builder::new()
        .prefix("labnet")
        .tempdir_in("/tmp")
        .context("creating the site network's directory")?;
    let network = Arc::new(kubelet_api::Network::start(
        &network_dir.path().join("net.sock"),
    )?);
    let mut workload_builder = Testbed::builder()
        .name("lab-workload")
        .kubelet_network(network.socket.clone());
    if opts.managers_as_pods {
        // /proc/self belongs to the process's effective user.
        let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self")?);
        if uid != 0 {
            anyhow::bail!(
                "our managers as pods need a node, and a node needs root (a bridge, iptables \
                 rules, cgroups); run as root, or with --managers processes"
            );
        }
        println!(
            "{} starting the management cluster with a node: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, containerd; `clusterctl init` of cert-manager, Cluster API, CAPM3 (metal3) and our two providers, all as pods (ours from `make images`), and baremetal-operator (fixture provisioner) as the pod of its own manifests",
            stamp(start)
        );
        // Where the site's hosts reach the core: required by `clusterctl init`.
        let (agent_api_url, images_url) = pods::site_urls();
        builder = builder
            .node()
            .node_images(testbed::cache::our_images()?)
            .clusterctl_variable("OPENSHIFT_ASSISTED_CORE_AGENT_API_URL", &agent_api_url)
            .clusterctl_variable("OPENSHIFT_ASSISTED_CORE_IMAGES_URL", &images_url);
        // The control-plane pod's lab backend reaches the workload apiserver at the node's
        // address.
        workload_builder = workload_builder.listen_on(testbed::node::NODE_IP);
    } else {
        println!(
            "{} starting the management cluster: etcd, kube-apiserver, kube-controller-manager; `clusterctl init` of Cluster API, CAPM3 (metal3) and our two providers; Cluster API, CAPM3 and baremetal-operator as processes",
            stamp(start)
        );
        builder = builder.controller_manager();
    }
    let mut tb = builder
        .start()
        .await
        .context("starting the management testbed")?;
    println!("{} starting the workload apiserver", stamp(start));
    let mut workload = match workload_builder.start().await {
        Ok(w) => w,
        Err(e) => {
            tb.keep_dir();
            return Err(e.context("starting the workload testbed"));
        }
    };
    link(&tb.dir, &opts.dir.join("management"));
    link(&workload.dir, &opts.dir.join("workload"));
    let managers = async {
        workload
            .apply_yaml(&manifests::workload_rbac_yaml(NODE_BOOTSTRAPPER))
            .await
            .context("workload RBAC")?;
        // The OpenShift APIs the installed cluster serves (ClusterVersion), from openshift/api.
        for crd in testbed::cache::openshift_crds()? {
            let yaml = std::fs::read_to_string(&crd)
                .with_context(|| format!("reading {}", crd.display()))?;
            workload
                .apply_yaml(&yaml)
                .await
                .with_context(|| format!("installing {} in the workload apiserver", crd.display()))?;
        }
        // Our managers and the lab itself talk to the management apiserver as ServiceAccounts
        // with FlowSchemas of their own, so that its metrics count their requests apart.
        if opts.managers_as_pods {
            // The pods run as their own ServiceAccounts; only the FlowSchemas are added.
            let mut yaml = apimetrics::identities_yaml(&[apimetrics::LAB]);
            for (i, (name, (ns, sa))) in [managers::CONTROLPLANE, managers::BOOTSTRAP]
                .iter()
                .zip(pods::service_accounts())
                .enumerate()
            {
                yaml.push_str(&apimetrics::flow_schemas_yaml(name, ns, sa, 90 + 2 * i));
            }
            tb.apply_yaml(&yaml)
                .await
                .context("the lab's ServiceAccount and the FlowSchemas")?;
        } else {
            tb.apply_yaml(&apimetrics::identities_yaml(&[
                managers::CONTROLPLANE,
                managers::BOOTSTRAP,
                apimetrics::LAB,
            ]))
            .await
            .context("the lab's clients' ServiceAccounts and FlowSchemas")?;
        }
        let mgmt_ca = opts.dir.join("management-ca.crt");
        std::fs::write(&mgmt_ca, tb.ca_pem()).context("writing the management CA")?;
        let kubeconfigs = opts.dir.join("kubeconfigs");
        // The lab's, then (as processes) the managers'.
        let mut identities = vec![apimetrics::LAB];
        if !opts.managers_as_pods {
            identities.extend([managers::CONTROLPLANE, managers::BOOTSTRAP]);
        }
        let mut kc = Vec::new();
        for name in identities {
            kc.push(
                apimetrics::write_kubeconfig(&tb.client, &tb.server, &mgmt_ca, name, &kubeconfigs)
                    .await?,
            );
        }
        let client = apimetrics::client_from(&kc[0]).await?;
        // The admin kubeconfig the lab backend publishes is valid against the workload
        // apiserver: its server CA is trusted and its client CA signs the admin certificate.
        let ca_file = opts.dir.join("workload-ca.crt");
        let ca_key_file = opts.dir.join("workload-ca.key");
        std::fs::write(&ca_file, workload.ca_pem()).context("writing the workload CA")?;
        std::fs::write(&ca_key_file, workload.ca_key_pem()).context("writing the workload CA")?;
        let iso = opts.dir.join("base.iso");
        let contents = TestIsoContents {
            kernel: b"k",
            initrd: b"i",
            rootfs: b"r",
        };
        write_test_iso(&iso, &contents, 256 * 1024)
            .map_err(|e| anyhow!("writing the test ISO: {e}"))?;
        let workload_access = WorkloadAccess {
            api_url: workload.server.clone(),
            ca_file,
            ca_key_file,
        };
        if opts.managers_as_pods {
            println!(
                "{} our managers' pods: the lab install backend's flags and files for {}, a NodePort Service for the core's agent API and images",
                stamp(start),
                managers::CONTROLPLANE,
            );
            let node_dir = tb.dir.join("node");
            let (files, iso_in_pod, access_in_pod) =
                pods::stage_files(&node_dir.join("lab-files"), &iso, &workload_access)?;
            let managers = pods::start(
                &tb.client,
                &node_dir,
                &files,
                &iso_in_pod,
                &access_in_pod,
                opts.replicas.try_into().unwrap_or(1),
                core_extra,
            )
            .await?;
            return Ok((managers, client));
        }
        println!(
            "{} starting our managers: {} (embedded assisted-core, lab install backend) and {}",
            stamp(start),
            managers::CONTROLPLANE,
            managers::BOOTSTRAP
        );
        let managers = managers::start(
            &opts.bin_dir,
            &opts.dir,
            [&kc[1], &kc[2]],
            &iso,
            &workload_access,
            core_extra,
        )
        .await?;
        // clusterctl created the managers' Deployments too; with no kubelet they stay Pending,
        // and the processes above stand in for them (webhooks included).
        managers::point_webhooks(&tb, &managers).await?;
        Ok((managers, client))
    }
    .await;
    match managers {
        Ok((managers, client)) => Ok(Lab {
            tb,
            workload,
            managers,
            client,
            network,
            _network_dir: network_dir,
        }),
        Err(e) => {
            tb.keep_dir();
            workload.keep_dir();
            Err(e)
        }
    }
}

/// A symlink in the lab directory to a testbed's directory (best effort: only a convenience).
fn link(target: &Path, at: &Path) {
    let _ = std::fs::remove_file(at);
    let _ = std::os::unix::fs::symlink(target, at);
}

async fn scale_workers(client: &Client, spec: &ClusterSpec, replicas: u32) -> Result<()> {
    if spec.cluster_class {
        return edit_topology(client, spec, |topology| {
            // The lab's topology has one MachineDeployment, the workers'.
            topology["workers"]["machineDeployments"][0]["replicas"] = json!(replicas);
        })
        .await
        .with_context(|| format!("scaling Cluster {}'s workers to {replicas}", spec.name));
    }
    let md = spec.workers_name();
    Api::<MachineDeployment>::namespaced(client.clone(), &spec.ns)
        .patch(
            &md,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .with_context(|| format!("scaling {md} to {replicas}"))?;
    Ok(())
}

/// The in-cluster installer-controller of the new cluster (post-reboot stages, operators).
/// It speaks for the whole cluster, so it holds a cluster-scoped token, as upstream's does;
/// the lab mints it with the core's signing key.
async fn installer_controller(
    client: &Client,
    workload: &Client,
    managers: &Managers,
    spec: &ClusterSpec,
    timeout: Duration,
    speed: Speed,
) -> Result<JoinHandle<Result<()>>> {
    let (cluster_id, token) = cluster_token(client, &managers.keys_namespace, spec).await?;
    let controller = InstallerController::new(&managers.agent_api_url, cluster_id, &token)
        .with_trust(managers.trust.clone())
        .with_speed(speed.factor())
        .with_timeout(timeout)
        .with_workload(workload.clone());
    Ok(tokio::spawn(async move {
        controller
            .run()
            .await
            .map(|_| ())
            .map_err(|e| anyhow!("installer-controller: {e}"))
    }))
}

/// The cluster's id in the core (its ClusterDeployment's UID) and a cluster-scoped agent token
/// for it, minted with the core's signing key (what the installer-controller holds).
async fn cluster_token(
    client: &Client,
    keys_namespace: &str,
    spec: &ClusterSpec,
) -> Result<(String, String)> {
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), &spec.ns)
        .get(&spec.control_plane_name())
        .await
        .context("reading the ClusterDeployment")?;
    let cluster_id = cd.uid().context("the ClusterDeployment has no UID")?;
    let keys = Api::<Secret>::namespaced(client.clone(), keys_namespace)
        .get("assisted-core-agent-token-keys")
        .await
        .context("reading the agent token keys")?;
    let pem = keys
        .data
        .as_ref()
        .and_then(|d| d.get(PRIVATE_KEY_FIELD))
        .context("the agent token keys Secret has no private key")?;
    let pem = std::str::from_utf8(&pem.0).context("the private key is not UTF-8")?;
    let keys = Keys::from_pkcs8_pem(pem).map_err(|e| anyhow!("reading the token key: {e}"))?;
    let token = keys.sign(&Claims::cluster(cluster_id.clone()));
    Ok((cluster_id, token))
}

/// Reads back an installed cluster: the core's view of it (`GET /clusters/{id}` with a cluster
/// token) and the release image of the ClusterImageSet its AgentClusterInstall refers to.
async fn install_check(
    client: &Client,
    managers: &Managers,
    spec: &ClusterSpec,
    aci: Option<&assisted_core::api::agentclusterinstall::AgentClusterInstall>,
) -> Result<InstallCheck> {
    let (cluster_id, token) = cluster_token(client, &managers.keys_namespace, spec).await?;
    let url =
        agent_sim::client::api_url(&managers.agent_api_url, &format!("/clusters/{cluster_id}"));
    let (status, body) = agent_sim::call(&managers.trust, http::Method::GET, &url, &token, None)
        .await
        .map_err(|e| anyhow!("GET {url}: {e}"))?;
    if !status.is_success() {
        anyhow::bail!(
            "GET {url}: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let view: Value = serde_json::from_slice(&body).context("the core's cluster view")?;
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), &spec.ns)
        .get(&spec.control_plane_name())
        .await
        .context("reading the ClusterDeployment")?;
    let pull_secret = serde_json::to_value(&cd.spec)?
        .pointer("/pullSecretRef/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !pull_secret.is_empty() {
        Api::<Secret>::namespaced(client.clone(), &spec.ns)
            .get(&pull_secret)
            .await
            .with_context(|| format!("reading pull secret {pull_secret}"))?;
    }
    let aci = serde_json::to_value(aci.context("no AgentClusterInstall")?)?;
    let image_set = aci
        .pointer("/spec/imageSetRef/name")
        .and_then(Value::as_str)
        .context("the AgentClusterInstall has no spec.imageSetRef")?
        .to_string();
    let req = http::Request::get(format!(
        "/apis/hive.openshift.io/v1/clusterimagesets/{image_set}"
    ))
    .body(Vec::new())?;
    let set: Value = client
        .request(req)
        .await
        .with_context(|| format!("reading ClusterImageSet {image_set}"))?;
    Ok(InstallCheck {
        schedulable_masters: view["schedulable_masters"].as_bool().unwrap_or_default(),
        openshift_version: view["openshift_version"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        release_image: set
            .pointer("/spec/releaseImage")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        cluster_image_set: image_set,
        pull_secret,
    })
}

impl InstallCheck {
    /// What is wrong with it for a cluster of `spec` (`okd`: an OKD release was asked for;
    /// `None`: the release is the user's, not checked), or `None`.
    pub fn problem(&self, spec: &ClusterSpec, okd: Option<bool>) -> Option<String> {
        let schedulable = spec.workers < 2;
        if self.schedulable_masters != schedulable {
            return Some(format!(
                "the core says schedulable_masters={} for a cluster with {} control-plane nodes and {} workers (expected {schedulable}: masters run workloads when there are fewer than two workers)",
                self.schedulable_masters, spec.masters, spec.workers
            ));
        }
        let (repo, secret) = match okd {
            // No pull secret in the OKD flavours: the control plane's placeholder.
            Some(true) => (
                OKD_RELEASE_REPOSITORY,
                format!("{}-placeholder-pull-secret", spec.control_plane),
            ),
            Some(false) => (
                OCP_RELEASE_REPOSITORY,
                generate::PULL_SECRET_NAME.to_string(),
            ),
            None => return None,
        };
        // By tag, or by digest where the control plane could read the release (a mirror).
        if !self.release_image.starts_with(&format!("{repo}:"))
            && !self.release_image.starts_with(&format!("{repo}@sha256:"))
        {
            return Some(format!(
                "ClusterImageSet {} has release image {:?}, expected one of {repo}",
                self.cluster_image_set, self.release_image
            ));
        }
        if self.pull_secret != secret {
            return Some(format!(
                "the ClusterDeployment's pull secret is {:?}, expected {secret:?}",
                self.pull_secret
            ));
        }
        None
    }

    /// One line for the output.
    pub fn describe(&self) -> String {
        format!(
            "masters {}schedulable; OpenShift {} from ClusterImageSet {} ({}); pull secret {}",
            if self.schedulable_masters { "" } else { "not " },
            self.openshift_version,
            self.cluster_image_set,
            self.release_image,
            self.pull_secret
        )
    }
}

/// One cluster of the run: its site, what was last seen and how far its scenario got.
struct ClusterRun {
    spec: ClusterSpec,
    servers: Vec<Server>,
    /// The cluster's manifests, applied once its hosts are available.
    objects: Vec<Value>,
    /// What they are, for the output.
    applied: String,
    site: Site,
    snap: Snapshot,
    /// The next step of `Step::all`.
    next: usize,
    /// When each step was reached, since the lab started.
    reached: Vec<Duration>,
    controller: Option<JoinHandle<Result<()>>>,
    controller_started: bool,
    last_line: String,
    last_print: Option<Instant>,
    /// Its day-2 step, once scaled up.
    day2: Option<Day2Times>,
    /// What the lab read back once it was installed.
    install_check: Option<InstallCheck>,
    max_seen: MaxSeen,
    /// Its day-2 worker is installed; its workers wait to be scaled back down until every
    /// cluster's is (several clusters).
    scale_down_pending: bool,
    /// The etcd members once the control plane was scaled up (`--scale-control-plane`).
    members_scaled_up: Vec<String>,
}

/// A cluster before the lab starts: its size and names, its hosts and its manifests.
struct Plan {
    spec: ClusterSpec,
    servers: Vec<Server>,
    /// The namespace, BMC Secrets and BareMetalHosts.
    hosts_yaml: String,
    /// The cluster's manifests: placeholder pull secrets, then the file's objects.
    objects: Vec<Value>,
    applied: String,
}

impl Plan {
    /// Adds the pull secrets `f` refers to but does not contain; fills in the summary.
    fn with_objects(mut self, f: &ClusterFile) -> Result<Plan> {
        let mut objects = Vec::new();
        for name in &f.missing_secrets {
            objects.extend(testbed::resources::parse_yaml(
                &manifests::pull_secret_yaml(&f.namespace, name),
            )?);
        }
        objects.extend(f.objects.iter().cloned());
        self.objects = objects;
        self.applied = f.summary();
        if !f.missing_secrets.is_empty() {
            self.applied = format!(
                "Secret {} (the lab's placeholder pull secret), {}",
                f.missing_secrets.join(", "),
                self.applied
            );
        }
        Ok(self)
    }
}

/// Cluster `c` of `n` of `topology`, generated from its template by clusterctl; the YAML is
/// kept in `<dir>/clusters/<name>.yaml`.
async fn plan_generated(
    opts: &Options,
    c: u32,
    n: u32,
    clusterctl: &Path,
    start: Instant,
) -> Result<Plan> {
    let t = opts.topology;
    let mut spec = ClusterSpec::new(t, opts.workers, c, n);
    let template = if opts.cluster_class {
        // Workers only come after the install (Cluster API's topology waits for the control
        // plane's version): none day-1, the day-2 step scales the topology's MachineDeployment.
        spec = ClusterSpec::new(Topology::Compact, 0, c, n);
        spec.cluster_class = true;
        spec.day2 = Some((spec.workers_name(), 0));
        generate::TEMPLATE_TOPOLOGY
    } else {
        generate::template(t, opts.okd)
    };
    spec.installed_version = if opts.okd {
        generate::OKD_VERSION
    } else if opts.image_mode.is_some() {
        mco::IMAGE_MODE_VERSION
    } else {
        generate::OPENSHIFT_VERSION
    }
    .to_string();
    let root = testbed::cache::repo_root();
    let mut g = Generate::new(&spec, &root.join(template), opts.okd);
    if opts.image_mode.is_some() {
        g.vars.retain(|(k, _)| *k != "OPENSHIFT_VERSION");
        g.vars
            .push(("OPENSHIFT_VERSION", mco::IMAGE_MODE_VERSION.to_string()));
    }
    let yaml = g
        .run(clusterctl, &opts.dir.join("clusterctl-home"))
        .await
        .with_context(|| format!("generating cluster {}", spec.name))?;
    let dir = opts.dir.join("clusters");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = dir.join(format!("{}.yaml", spec.name));
    std::fs::write(&file, &yaml).with_context(|| format!("writing {}", file.display()))?;
    if c == 0 {
        println!("{} {}", stamp(start), g.shown(&root));
        println!(
            "{} generated cluster {}{}: {}",
            stamp(start),
            spec.name,
            if n > 1 {
                format!(" (and {} more, one per cluster)", n - 1)
            } else {
                String::new()
            },
            file.display()
        );
    }
    let f = ClusterFile::parse(&yaml, &file.display().to_string())?;
    // The template must make the cluster the lab waits for.
    // A 3+N cluster always has its workers' MachineDeployment, with 0 replicas for
    // `--workers 0` (then the lab runs no day-2 step).
    let expected = ClusterSpec::from_file(&f);
    let seen = |s: &ClusterSpec, has_md: bool| {
        (
            s.name.clone(),
            s.ns.clone(),
            s.control_plane.clone(),
            s.masters,
            s.workers,
            has_md.then(|| s.workers_name()),
        )
    };
    let (got, wanted) = (
        seen(&expected, expected.day2.is_some()),
        seen(&spec, spec.topology.highly_available()),
    );
    if got != wanted {
        anyhow::bail!(
            "{} is not the cluster the lab expects: it has {got:?}, the lab expects {wanted:?} (name, namespace, control plane, masters, workers, workers' MachineDeployment)",
            file.display(),
        );
    }
    let spare = u32::from(spec.day2.is_some());
    spec.control_plane_to = opts.scale_control_plane;
    // Spare control-plane hosts for the masters a scale-up adds.
    let spare_masters = opts
        .scale_control_plane
        .map_or(0, |to| to.saturating_sub(spec.masters));
    let servers = site::servers(&spec, spec.masters + spare_masters, spec.workers + spare)?;
    let hosts_yaml = site::site_yaml(&spec.ns, &servers)?;
    Plan {
        spec,
        servers,
        hosts_yaml,
        objects: Vec::new(),
        applied: String::new(),
    }
    .with_objects(&f)
}

/// Most BareMetalHosts the lab adds for a cluster file.
pub const MAX_FILE_HOSTS: u32 = 50;

/// The hosts for a cluster file: `master-i` labelled for the control plane's template,
/// `worker-j` for the MachineDeployments' (the day-2 spare for the first one). When a host
/// meant for one template can be taken by another's Machines, every host gets control-plane
/// hardware.
fn file_servers(
    f: &ClusterFile,
    spec: &ClusterSpec,
) -> Result<Vec<(Server, BTreeMap<String, String>)>> {
    use agent_sim::HostProfile;
    let needed = f.hosts_needed();
    if needed > MAX_FILE_HOSTS || f.masters > 10 {
        anyhow::bail!(
            "{}: {needed} BareMetalHosts needed ({} control plane); the lab adds at most {MAX_FILE_HOSTS}, 10 for the control plane",
            f.source,
            f.masters
        );
    }
    let cidr = spec.machine_cidr.as_str();
    let master = |i: u32| {
        if spec.masters == 1 {
            HostProfile::sno_like(i, cidr)
        } else {
            HostProfile::master_like(i, cidr)
        }
    };
    let any_role = f.hosts_interchangeable();
    let mut out = Vec::new();
    for i in 0..f.masters {
        out.push((
            Server {
                name: format!("master-{i}"),
                role: "master",
                profile: master(i).map_err(|e| anyhow!("host profile: {e}"))?,
            },
            f.control_plane_hosts.host_labels(),
        ));
    }
    let mut j = 0;
    for (k, pool) in f.pools.iter().enumerate() {
        let count = pool.replicas + u32::from(k == 0);
        for _ in 0..count {
            let profile = if any_role {
                master(f.masters + j)
            } else {
                HostProfile::worker_like(j, cidr)
            }
            .map_err(|e| anyhow!("host profile: {e}"))?;
            out.push((
                Server {
                    name: format!("worker-{j}"),
                    role: "worker",
                    profile,
                },
                pool.hosts.host_labels(),
            ));
            j += 1;
        }
    }
    for vip in f.api_vips.iter().chain(&f.ingress_vips) {
        if let Some((s, _)) = out
            .iter()
            .find(|(s, _)| s.profile.primary_ipv4() == Some(vip.as_str()))
        {
            anyhow::bail!(
                "{}: VIP {vip} is the address the lab gives host {} ({cidr}: control-plane hosts from .10, workers from .100, a single node .200); choose VIPs outside these",
                f.source,
                s.name
            );
        }
    }
    Ok(out)
}

/// The cluster of a user's file: its manifests as given, the hosts they ask for.
fn plan_file(f: &ClusterFile) -> Result<Plan> {
    let spec = ClusterSpec::from_file(f);
    let hosts = file_servers(f, &spec)?;
    let mut hosts_yaml = manifests::namespace_yaml(&spec.ns);
    for (s, labels) in &hosts {
        let mac = &s
            .profile
            .nics
            .first()
            .with_context(|| format!("host profile of {} has no NIC", s.name))?
            .mac;
        hosts_yaml.push_str(&manifests::host_yaml_labels(&spec.ns, &s.name, labels, mac));
    }
    Plan {
        spec,
        servers: hosts.into_iter().map(|(s, _)| s).collect(),
        hosts_yaml,
        objects: Vec::new(),
        applied: String::new(),
    }
    .with_objects(f)
}

/// What the lab read from a cluster file, printed before it starts.
fn describe_file(f: &ClusterFile, plan: &Plan, start: Instant) {
    let spec = &plan.spec;
    let workers = match &f.pools[..] {
        [] => "no MachineDeployment (no day-2 step)".to_string(),
        pools => format!(
            "{} worker(s) in MachineDeployment {}",
            f.workers(),
            pools
                .iter()
                .map(|p| format!("{} (replicas: {})", p.name, p.replicas))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let network = match &f.machine_cidr {
        Some(c) => format!(
            "{c} (around API VIP {}, ingress VIP {})",
            f.api_vips.join(","),
            f.ingress_vips.join(",")
        ),
        None => format!("{} (no VIPs in the file)", spec.machine_cidr),
    };
    println!(
        "{} cluster file {}: Cluster {} in namespace {}, OpenshiftAssistedControlPlane {} (replicas: {}), {workers}; machine network {network}",
        stamp(start),
        f.source,
        f.name,
        f.namespace,
        f.control_plane,
        f.masters
    );
    let labels = |l: &BTreeMap<String, String>| {
        if l.is_empty() {
            "no labels".to_string()
        } else {
            l.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        }
    };
    let mut groups = vec![format!(
        "{} for the control plane ({})",
        f.masters,
        labels(&f.control_plane_hosts.host_labels())
    )];
    for (k, p) in f.pools.iter().enumerate() {
        groups.push(format!(
            "{} for {}{} ({})",
            p.replicas + u32::from(k == 0),
            p.name,
            if k == 0 {
                ", one of them the day-2 spare"
            } else {
                ""
            },
            labels(&p.hosts.host_labels())
        ));
    }
    println!(
        "{} the lab adds {} BareMetalHosts: {}{}",
        stamp(start),
        plan.servers.len(),
        groups.join("; "),
        if f.hosts_interchangeable() {
            "; the templates' host selectors do not keep the roles apart, so every host has control-plane hardware"
        } else {
            ""
        }
    );
    for note in &f.notes {
        println!("{} {note}", stamp(start));
    }
    for s in &f.missing_secrets {
        println!(
            "{} the file refers to pull secret {s}, which it does not contain: the lab adds a placeholder",
            stamp(start)
        );
    }
}

impl ClusterRun {
    fn new(
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

    fn report(&self, steps: &[Step]) -> ClusterReport {
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
fn shape(spec: &ClusterSpec) -> String {
    if spec.masters == 1 && spec.workers == 0 {
        "sno".into()
    } else if spec.topology == Topology::Compact {
        "compact (3+0)".into()
    } else {
        format!("{}+{}", spec.masters, spec.workers)
    }
}

/// Runs the scenario; `Ok` with `ok: false` when it did not finish (after printing why).
/// With `opts.report`, writes the JSON report at the end; when the lab could not run at all
/// (a bad cluster file, a component that did not start), the report says so in `error`.
pub async fn run(opts: &Options) -> Result<Report> {
    let start = Instant::now();
    let result = run_scenario(opts, start).await;
    if let Some(path) = &opts.report {
        let text = match &result {
            Ok(r) => r.to_json(),
            Err(e) => error_report(e, start.elapsed()),
        };
        write_report(path, &text)?;
    }
    result
}

/// The report of a run that could not start: `{"ok": false, "error": ..., "seconds": ...}`.
pub fn error_report(e: &anyhow::Error, elapsed: Duration) -> String {
    serde_json::to_string_pretty(&report_json::Error {
        ok: false,
        error: format!("{e:#}"),
        seconds: secs(elapsed),
    })
    .unwrap_or_default()
}

/// Writes a report (`--report`) and says where.
pub fn write_report(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, format!("{text}\n"))
        .with_context(|| format!("writing the report {}", path.display()))?;
    println!("report written to {}", path.display());
    Ok(())
}

/// How many clusters' sites a pass ticks (and clusters it applies) at once.
const SITES_AT_ONCE: usize = 32;

/// Most clusters in one run (`--clusters`): each gets its own /24 and 10 profile indexes.
pub const MAX_CLUSTERS: u32 = 1000;

/// A planned kill, for the output: `bootstrap-provider 0.7s after `InfraEnvs ready``.
fn describe_planned(p: &chaos::Planned, managers: &Managers, steps: &[Step]) -> String {
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
async fn chaos_pass(
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
                let name = lab.managers.names().get(i).copied().unwrap_or("manager");
                lab.managers.kill(i);
                println!(
                    "{} chaos: {name} killed (SIGKILL){} while waiting for `{during}`; starting it again in {:.1}s",
                    stamp(start),
                    if mid { " mid-install" } else { "" },
                    p.downtime.as_secs_f64()
                );
                c.killed(&p, name, now, during, mid);
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
fn chaos_restart_due(c: &mut chaos::Chaos, lab: &mut Lab, start: Instant) -> Result<()> {
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
async fn chaos_finish(c: &mut chaos::Chaos, lab: &mut Lab, start: Instant) -> Result<()> {
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

/// Both apiservers' request counters (management, workload); `None`, logged, when either
/// cannot be read.
async fn read_api(
    management: &Client,
    workload: &Client,
) -> Option<(apimetrics::Counts, apimetrics::Counts)> {
    match tokio::try_join!(
        apimetrics::Counts::read(management),
        apimetrics::Counts::read(workload)
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!("reading the apiservers' metrics: {e:#}");
            None
        }
    }
}

/// A Node whose Ready condition is True.
fn node_ready(n: &k8s_openapi::api::core::v1::Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The objects a step depends on, with their last conditions (not-True ones first).
fn stuck_objects(step: Step, s: &Snapshot, site: &Site) -> Vec<ObjectState> {
    let mut out = Vec::new();
    let mut push = |kind: &str, name: String, state: String, conditions: Vec<String>| {
        out.push(ObjectState {
            kind: kind.into(),
            name,
            state,
            conditions,
        })
    };
    let (bmhs, infraenvs, machines, agents, aci, hosts) = match step {
        Step::HostsAvailable => (true, false, false, false, false, false),
        Step::InfraEnvsReady => (false, true, false, false, false, false),
        Step::HostsProvisioned => (true, false, true, false, false, false),
        Step::AgentsApproved => (false, false, false, true, false, true),
        Step::InstallStarted | Step::Installed => (false, false, false, true, true, true),
        Step::NodesRegistered => (false, false, false, false, false, true),
        Step::MachinesRunning
        | Step::Day2Installed
        | Step::ScaleDownDone
        | Step::HostFailed
        | Step::Remediated
        | Step::Replaced
        | Step::ControlPlaneScaleRequested
        | Step::ControlPlaneScaledUp
        | Step::ControlPlaneScaleRefused
        | Step::ControlPlaneScaledBack => (true, false, true, true, false, true),
        Step::UpgradeRequested
        | Step::Upgraded
        | Step::UpgradeFailed
        | Step::DowngradeRefused
        | Step::RemediationReported
        | Step::RemediationHeld => (false, false, true, false, false, false),
        Step::MirrorConfigRefused | Step::ImageModeRefused => {
            (false, false, false, true, true, false)
        }
        Step::ImageModeRolledOut | Step::ImageModeDay2Counted | Step::ImageModeInstallFailed => {
            (false, false, false, false, false, true)
        }
    };
    if let Some(cp) = &s.control_plane {
        let conditions = cp["status"]["conditions"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        format!(
                            "{}={} {}: {}",
                            c["type"].as_str().unwrap_or_default(),
                            c["status"].as_str().unwrap_or_default(),
                            c["reason"].as_str().unwrap_or_default(),
                            c["message"].as_str().unwrap_or_default()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        push(
            "OpenshiftAssistedControlPlane",
            cp["metadata"]["name"].as_str().unwrap_or_default().into(),
            format!(
                "distributionVersion {} (spec {}), version {}",
                cp["status"]["distributionVersion"].as_str().unwrap_or("-"),
                cp["spec"]["distributionVersion"].as_str().unwrap_or("-"),
                cp["status"]["version"].as_str().unwrap_or("-")
            ),
            conditions,
        );
    }
    if infraenvs {
        for i in &s.infraenvs {
            let state = if i
                .status
                .as_ref()
                .is_some_and(|s| s.iso_download_url.is_some())
            {
                "ISO ready"
            } else {
                "no ISO URL yet"
            };
            push("InfraEnv", i.name_any(), state.into(), conditions(i));
        }
    }
    if machines {
        for m in &s.machines {
            let phase = serde_json::to_value(m.status.as_ref().map(|s| &s.phase))
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            push("Machine", m.name_any(), phase, conditions(m));
        }
    }
    if aci && let Some(a) = &s.aci {
        push(
            "AgentClusterInstall",
            a.name_any(),
            s.aci_state().into(),
            conditions(a),
        );
    }
    if agents {
        for a in &s.agents {
            push(
                "Agent",
                a.name_any(),
                format!(
                    "{} (approved {}, hostname {})",
                    Snapshot::agent_state(a),
                    a.spec.approved,
                    a.spec.hostname.as_deref().unwrap_or("-")
                ),
                conditions(a),
            );
        }
    }
    if bmhs {
        for b in &s.bmhs {
            let err = b
                .status
                .as_ref()
                .map(|s| s.error_message.clone())
                .unwrap_or_default();
            let state = if err.is_empty() {
                Snapshot::bmh_state(b).to_string()
            } else {
                format!("{} (error: {err})", Snapshot::bmh_state(b))
            };
            push("BareMetalHost", b.name_any(), state, Vec::new());
        }
    }
    if hosts {
        for h in site.host_states() {
            let (name, state) = h.split_once(": ").unwrap_or((h.as_str(), ""));
            push("simulated host", name.into(), state.into(), Vec::new());
        }
    }
    out
}

/// `clusterctl describe cluster --show-templates` of the cluster, as Cluster API sees it (its
/// control plane's version, infrastructure template and conditions); `None` when it failed.
async fn clusterctl_describe(lab: &Lab, spec: &ClusterSpec) -> Option<String> {
    let out = tokio::process::Command::new(lab.tb.cache.bin("clusterctl"))
        .args([
            "describe",
            "cluster",
            &spec.name,
            "-n",
            &spec.ns,
            "--show-templates",
        ])
        .env("KUBECONFIG", &lab.tb.kubeconfig)
        .env("CLUSTERCTL_DISABLE_VERSIONCHECK", "true")
        .output()
        .await;
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => {
            tracing::warn!(
                "clusterctl describe: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            tracing::warn!("clusterctl describe: {e}");
            None
        }
    }
}

/// `--keep`: everything keeps running (the site too) until Ctrl-C.
async fn keep_running(lab: &mut Lab, runs: &mut [ClusterRun]) {
    let clusterctl = lab.tb.cache.bin("clusterctl");
    println!();
    println!("The lab keeps running (Ctrl-C stops it). Try:");
    println!("  export KUBECONFIG={}", lab.tb.kubeconfig.display());
    if let [r] = runs {
        println!(
            "  kubectl get baremetalhosts,machines,agents -n {}",
            r.spec.ns
        );
        println!(
            "  {} describe cluster {} -n {}",
            clusterctl.display(),
            r.spec.name,
            r.spec.ns
        );
    } else if let Some(r) = runs.first() {
        println!("  kubectl get clusters,baremetalhosts,machines,agents -A");
        println!(
            "  {} describe cluster {} -n {}   # and the others",
            clusterctl.display(),
            r.spec.name,
            r.spec.ns
        );
    }
    println!(
        "  kubectl --kubeconfig {} get nodes   # the workload cluster",
        lab.workload.kubeconfig.display()
    );
    // Registered now, so that a Ctrl-C during a pass is not lost.
    let mut interrupt =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("listening for Ctrl-C: {e}");
                return;
            }
        };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = interrupt.recv() => break,
        }
        for r in runs.iter_mut() {
            if let Err(e) = r.site.tick(&lab.workload).await {
                tracing::warn!("site of {}: {e:#}", r.spec.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(conditions: &[&str]) -> ObjectState {
        ObjectState {
            kind: "Machine".into(),
            name: "m".into(),
            state: "Provisioning".into(),
            conditions: conditions.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn the_blocking_condition_is_the_first_not_true_one_that_says_why() {
        let o = object(&[
            "Available=False NotReady: ",
            "Ready=Unknown ReadyUnknown: Metal3DataReady: not yet reported",
            "BootstrapConfigReady=True Ready: available",
        ]);
        assert_eq!(
            o.blocking(),
            Some("Ready=Unknown ReadyUnknown: Metal3DataReady: not yet reported")
        );
        assert_eq!(
            object(&["Available=False NotReady: "]).blocking(),
            Some("Available=False NotReady: ")
        );
        assert_eq!(object(&["Ready=True Ready: fine"]).blocking(), None);
        assert_eq!(object(&[]).blocking(), None);
    }

    #[test]
    fn report_json_shape() {
        let s = |x: f64| Duration::from_secs_f64(x);
        let report = Report {
            ok: false,
            source: "cluster file c.yaml".into(),
            speed: Speed::Fast,
            milestones: vec![(s(9.04), "hosts available".into())],
            failure: Some("timed out after 60s".into()),
            stuck: Some("InfraEnvs ready: timed out after 60s".into()),
            clusters: vec![ClusterReport {
                name: "c".into(),
                namespace: "ns".into(),
                masters: 3,
                workers: 2,
                milestones: vec![(s(9.04), "hosts available".into())],
                installed: None,
                done: false,
                last_seen: Snapshot::default().to_json("c"),
                day2: Some(Day2Times {
                    scaled_up: s(40.0),
                    node_ready: Some(s(52.25)),
                    installed: None,
                }),
                install_check: None,
                max_seen: MaxSeen::default(),
                stuck: Some(Stuck {
                    step: "InfraEnvs ready".into(),
                    waiting_for: "2 InfraEnv(s) with an ISO URL".into(),
                    objects: vec![object(&["Ready=False NoISO: waiting for the image"])],
                }),
            }],
            percentiles: crate::fleet::percentiles(&["hosts available"], &[&[s(9.04)]]),
            memory: Memory::new(&["a", "b"]),
            api: Some(apimetrics::ApiRequests {
                hosts: 4,
                management: apimetrics::Counts {
                    total: 10.0,
                    ..Default::default()
                },
                clients: vec![apimetrics::ClientCount {
                    name: "the lab".into(),
                    requests: 6.0,
                    reads: Some(5.0),
                }],
                ..Default::default()
            }),
            duration: s(60.0),
            chaos: Some(ChaosReport {
                seed: 42,
                kills: vec![chaos::Kill {
                    target: "bootstrap-provider".into(),
                    what: chaos::Target::Manager(1),
                    killed_at: s(20.04),
                    started_at: Some(s(22.0)),
                    ready_at: Some(s(23.5)),
                    during: "Agents approved".into(),
                    mid_install: true,
                    next_milestone_after: Some(s(1.0)),
                }],
                not_carried_out: vec![],
            }),
            leader_kills: Vec::new(),
            secrets: Some(secrets::Checked {
                values: 5,
                secrets: vec!["ns/pull-secret".into()],
                logs: 2,
                events: 30,
                statuses: 8,
                metrics: 2,
                leaks: vec![secrets::Leak {
                    secret: "Secret ns/c-admin-password password".into(),
                    form: "base64",
                    place: "log a.log".into(),
                    line: 7,
                }],
                missing: Vec::new(),
            }),
            describe: None,
            mirror: None,
        };
        let text = report.to_json();
        // Fields in the documented order: `ok` first.
        assert!(
            text.starts_with("{\n  \"ok\": false,\n  \"source\""),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(v["milestones"][0]["seconds"], 9.0);
        assert_eq!(v["all_installed_seconds"], Value::Null);
        assert_eq!(v["first_applied_seconds"], 9.0);
        assert_eq!(v["milestone_percentiles"][0]["p90"], 9.0);
        assert_eq!(v["milestone_percentiles"][0]["reached"], 1);
        let c = &v["clusters"][0];
        assert_eq!(c["control_plane_nodes"], 3);
        assert_eq!(c["installed_seconds"], Value::Null);
        assert_eq!(c["last_seen"]["machines"], 0);
        assert_eq!(c["stuck"]["step"], "InfraEnvs ready");
        assert_eq!(
            c["stuck"]["object"]["condition"],
            "Ready=False NoISO: waiting for the image"
        );
        assert_eq!(
            c["stuck"]["objects"][0]["conditions"][0],
            "Ready=False NoISO: waiting for the image"
        );
        assert_eq!(v["memory"]["managers"][1]["name"], "b");
        assert_eq!(v["speed"], "fast");
        assert_eq!(c["day2"]["scale_up_to_node_ready_seconds"], 12.3);
        assert_eq!(c["day2"]["installed_seconds"], Value::Null);
        assert_eq!(v["day2"]["scale_up_to_node_ready_seconds"]["median"], 12.3);
        assert_eq!(v["day2"]["scale_up_to_installed_seconds"], Value::Null);
        assert_eq!(v["api_requests"]["management"]["per_host"], 2.5);
        assert_eq!(v["api_requests"]["by_client"][0]["per_host"], 1.5);
        assert_eq!(v["api_requests"]["by_client"][0]["reads"], 5.0);
        assert_eq!(v["chaos"]["seed"], 42);
        assert_eq!(v["chaos"]["kills"][0]["target"], "bootstrap-provider");
        assert_eq!(v["chaos"]["kills"][0]["killed_at"], 20.0);
        assert_eq!(v["chaos"]["kills"][0]["mid_install"], true);
        assert_eq!(c["max_seen"]["agents"], 0);
        // Fields in the documented order: the API requests after the memory, last.
        assert!(text.find("\n  \"api_requests\"") > text.find("\n  \"memory\""));
        assert_eq!(v["secrets"]["places"], 42);
        assert_eq!(
            v["secrets"]["found"][0],
            "Secret ns/c-admin-password password (base64) in log a.log, line 7"
        );
        assert_eq!(v["secrets"]["missing"], json!([]));
        let e = error_report(&anyhow!("no Cluster in f.yaml"), s(0.25));
        let e: Value = serde_json::from_str(&e).expect("JSON");
        assert_eq!(e["ok"], false);
        assert_eq!(e["error"], "no Cluster in f.yaml");
        assert_eq!(e["seconds"], 0.3);
    }

    #[test]
    fn more_objects_at_once_than_the_cluster_can_have_are_duplicates() {
        let spec = ClusterSpec::new(Topology::ThreePlusTwo, 2, 0, 1);
        let fine = MaxSeen {
            infraenvs: 2,
            control_plane_machines: 3,
            // The day-2 worker.
            worker_machines: 3,
            agents: 6,
        };
        assert!(fine.duplicates(&spec, 6).is_empty());
        let dup = MaxSeen {
            control_plane_machines: 4,
            agents: 7,
            ..fine
        };
        assert_eq!(
            dup.duplicates(&spec, 6),
            [
                "4 control-plane Machines at once, for 3 control-plane replicas",
                "7 Agents at once, for 6 hosts"
            ]
        );
        let compact = ClusterSpec::new(Topology::Compact, 2, 0, 1);
        let extra = MaxSeen {
            infraenvs: 2,
            control_plane_machines: 3,
            worker_machines: 1,
            agents: 3,
        };
        assert_eq!(
            extra.duplicates(&compact, 3),
            [
                "2 InfraEnvs at once, for 1 templates in use",
                "1 worker Machines at once, for 0 worker replicas, the day-2 one included"
            ]
        );
    }

    #[test]
    fn an_installed_cluster_is_read_back_against_what_was_asked() {
        let ocp = InstallCheck {
            schedulable_masters: false,
            openshift_version: "4.17.3".into(),
            cluster_image_set: "lab.bm-cp".into(),
            release_image: format!("{OCP_RELEASE_REPOSITORY}:4.17.3-x86_64"),
            pull_secret: "pull-secret".into(),
        };
        let three_two = ClusterSpec::new(Topology::ThreePlusTwo, 2, 0, 1);
        assert_eq!(ocp.problem(&three_two, Some(false)), None);
        // Pinned by digest (read through a mirror) is the same repository.
        let pinned = InstallCheck {
            release_image: format!("{OCP_RELEASE_REPOSITORY}@sha256:{}", "a".repeat(64)),
            ..ocp.clone()
        };
        assert_eq!(pinned.problem(&three_two, Some(false)), None);
        // Two workers: the masters must not be schedulable; fewer: they must.
        let compact = ClusterSpec::new(Topology::Compact, 0, 0, 1);
        let e = ocp.problem(&compact, Some(false)).expect("a problem");
        assert!(e.contains("schedulable_masters=false"), "{e}");
        // OKD asked for: OKD's repository and the control plane's placeholder pull secret.
        let e = ocp.problem(&three_two, Some(true)).expect("a problem");
        assert!(e.contains(OKD_RELEASE_REPOSITORY), "{e}");
        let okd = InstallCheck {
            release_image: format!("{OKD_RELEASE_REPOSITORY}:4.19.0-okd-scos.ec.6"),
            pull_secret: "bm-cp-placeholder-pull-secret".into(),
            ..ocp.clone()
        };
        assert_eq!(okd.problem(&three_two, Some(true)), None);
        let e = InstallCheck {
            pull_secret: "pull-secret".into(),
            ..okd.clone()
        }
        .problem(&three_two, Some(true))
        .expect("a problem");
        assert!(e.contains("bm-cp-placeholder-pull-secret"), "{e}");
        // A cluster file's release is not checked.
        assert_eq!(okd.problem(&three_two, None), None);
    }

    #[test]
    fn hosts_for_a_cluster_file() {
        let path = testbed::cache::repo_root().join("docs/examples/capoa-multinode.yaml");
        let f = ClusterFile::read(&path).expect("example");
        let plan = plan_file(&f).expect("plan");
        let names: Vec<&str> = plan.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "master-0", "master-1", "master-2", "worker-0", "worker-1", "worker-2"
            ]
        );
        // No host selectors: every host has control-plane hardware, on the VIPs' network.
        assert!(plan.servers.iter().all(|s| s.profile.cpu_count == 4));
        assert!(plan.servers.iter().all(|s| {
            s.profile
                .primary_ipv4()
                .is_some_and(|a| a.starts_with("192.168.222."))
        }));
        assert!(
            plan.hosts_yaml
                .contains("kind: Namespace\nmetadata: {name: test-capi}")
        );
        assert_eq!(plan.spec.day2, Some(("test-multinode-worker".into(), 2)));
        assert_eq!(plan.spec.infraenvs, 2);

        // Host selectors that keep the roles apart: workers get worker hardware and labels.
        let generated = |api_vip: &str| {
            let spec = ClusterSpec::new(Topology::ThreePlusTwo, 2, 0, 1);
            format!(
                r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: bm, namespace: lab}}
spec:
  controlPlaneRef: {{kind: OpenshiftAssistedControlPlane, name: bm-cp}}
  infrastructureRef: {{kind: Metal3Cluster, name: bm}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: bm, namespace: lab}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: bm-cp, namespace: lab}}
spec:
  replicas: 3
  config: {{apiVIPs: ["{api_vip}"], ingressVIPs: ["{}"]}}
  machineTemplate: {{infrastructureRef: {{kind: Metal3MachineTemplate, name: cp}}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: cp, namespace: lab}}
spec: {{template: {{spec: {{hostSelector: {{matchLabels: {{role: master}}}}}}}}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: w, namespace: lab}}
spec: {{template: {{spec: {{hostSelector: {{matchLabels: {{role: worker}}}}}}}}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: w, namespace: lab}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: bm-workers, namespace: lab}}
spec:
  clusterName: bm
  replicas: 1
  template:
    spec:
      bootstrap: {{configRef: {{kind: OpenshiftAssistedConfigTemplate, name: w}}}}
      infrastructureRef: {{kind: Metal3MachineTemplate, name: w}}
"#,
                spec.ingress_vip
            )
        };
        let f = ClusterFile::parse(&generated(manifests::API_VIP), "g.yaml").expect("valid");
        let plan = plan_file(&f).expect("plan");
        assert_eq!(plan.servers.len(), 5);
        let workers: Vec<&Server> = plan.servers.iter().filter(|s| s.role == "worker").collect();
        assert_eq!(workers.len(), 2);
        assert!(workers.iter().all(|s| s.profile.cpu_count == 2));
        assert!(plan.hosts_yaml.contains(r#"labels: {"role": "worker"}"#));
        assert!(plan.hosts_yaml.contains(r#"labels: {"role": "master"}"#));

        // A VIP on a host's address is refused, naming the host.
        let f = ClusterFile::parse(&generated("192.168.111.10"), "g.yaml").expect("valid");
        let e = format!("{:#}", plan_file(&f).err().expect("refused"));
        assert!(
            e.contains("VIP 192.168.111.10 is the address the lab gives host master-0"),
            "{e}"
        );
    }
}

//! How a run ended: the [`Report`] with each cluster's milestones, the fleet's percentiles,
//! memory, API requests, chaos and the checks, and its JSON form (`--report`).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};
use kube::ResourceExt as _;
use serde_json::Value;

use crate::install_check::InstallCheck;
use crate::manifests::ClusterSpec;
use crate::memory::Memory;
use crate::observe::Snapshot;
use crate::options::Speed;
use crate::steps::Step;
use crate::stuck::{ObjectState, Stuck};
use crate::{apimetrics, chaos, fleet, memory, mirror, secrets};
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
    /// `--shards`: the split (each shard's clusters, managers and core) and its checks.
    pub shards: Option<crate::shards::Split>,
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
pub(crate) const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";

impl MaxSeen {
    pub(crate) fn update(&mut self, s: &Snapshot) {
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

pub(crate) fn secs(d: Duration) -> f64 {
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
        /// `--shards`; left out without.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub shards: Option<&'a crate::shards::Split>,
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
    pub(crate) fn to_json(&self, full: bool) -> report_json::Object<'_> {
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
    pub(crate) fn to_json(&self) -> report_json::Stuck<'_> {
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
            shards: self.shards.as_ref(),
        };
        // Nothing in it can fail to serialize (no maps with non-string keys).
        serde_json::to_string_pretty(&report).unwrap_or_default()
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Topology;
    use crate::stuck::tests::object;
    use anyhow::anyhow;
    use serde_json::json;

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
            shards: None,
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
}

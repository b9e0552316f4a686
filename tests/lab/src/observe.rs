//! What the lab watches: every object the progress line, the milestones and the diagnostics
//! look at, from one watch per kind (a pass reads the watch caches, not the apiservers: the
//! lab's own load must not grow with its passes or its clusters).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use assisted_core::api::agent::Agent;
use assisted_core::api::agentclusterinstall::AgentClusterInstall;
use assisted_core::api::infraenv::InfraEnv;
use external_types::capi::Machine;
use external_types::capi::machine::MachineStatusPhase;
use external_types::metal3_io::BareMetalHost;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::Value;
use tokio::sync::watch as signal;

use agent_sim::kubelet::UUID_LABEL;

/// The Agent kind of a host added to an installed cluster.
pub const DAY2_KIND: &str = "AddToExistingClusterHost";

#[derive(Default)]
pub struct Snapshot {
    pub bmhs: Vec<BareMetalHost>,
    pub infraenvs: Vec<InfraEnv>,
    pub machines: Vec<Machine>,
    pub agents: Vec<Agent>,
    pub aci: Option<AgentClusterInstall>,
    pub nodes: Vec<Node>,
    /// The OpenshiftAssistedControlPlane, read only when a step needs it (an upgrade).
    pub control_plane: Option<Value>,
    /// The Cluster, read with the control plane (its topology, for `--cluster-class`).
    pub cluster: Option<Value>,
}

/// One read of the objects of every cluster: each kind listed once across namespaces (so the
/// lab's own load on the apiservers does not grow with the number of clusters).
#[derive(Default)]
pub struct World {
    pub bmhs: Vec<BareMetalHost>,
    pub infraenvs: Vec<InfraEnv>,
    pub machines: Vec<Machine>,
    pub agents: Vec<Agent>,
    pub acis: Vec<AgentClusterInstall>,
    pub nodes: Vec<Node>,
    /// Empty unless asked for.
    pub control_planes: Vec<DynamicObject>,
    /// Empty unless asked for (with the control planes).
    pub clusters: Vec<DynamicObject>,
}

/// One watch per kind the lab reads every pass, on the management and the workload apiservers;
/// stopped when dropped.
pub struct Watches {
    bmhs: Store<BareMetalHost>,
    infraenvs: Store<InfraEnv>,
    machines: Store<Machine>,
    agents: Store<Agent>,
    acis: Store<AgentClusterInstall>,
    nodes: Store<Node>,
    stop: signal::Sender<bool>,
}

/// How long the first list of every watch may take.
const WATCHES_READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

impl Watches {
    /// Starts the watches and waits for their first lists.
    pub async fn start(client: &Client, workload: &Client) -> Result<Watches> {
        let (stop, stopped) = signal::channel(false);
        // No trigger streams: the lab reads the stores only.
        fn store<K>(api: Api<K>, stopped: &signal::Receiver<bool>) -> Store<K>
        where
            K: kube::Resource
                + Clone
                + serde::de::DeserializeOwned
                + std::fmt::Debug
                + Send
                + Sync
                + 'static,
            K::DynamicType: Eq + std::hash::Hash + Clone + Default + Send + Sync,
        {
            manager::cache::watch(api, watcher::Config::default(), 0, |_| {}, stopped.clone()).store
        }
        let watches = Watches {
            bmhs: store(Api::all(client.clone()), &stopped),
            infraenvs: store(Api::all(client.clone()), &stopped),
            machines: store(Api::all(client.clone()), &stopped),
            agents: store(Api::all(client.clone()), &stopped),
            acis: store(Api::all(client.clone()), &stopped),
            nodes: store(Api::all(workload.clone()), &stopped),
            stop,
        };
        let ready = async {
            watches.bmhs.wait_until_ready().await?;
            watches.infraenvs.wait_until_ready().await?;
            watches.machines.wait_until_ready().await?;
            watches.agents.wait_until_ready().await?;
            watches.acis.wait_until_ready().await?;
            watches.nodes.wait_until_ready().await
        };
        tokio::time::timeout(WATCHES_READY_WITHIN, ready)
            .await
            .context("the lab's watches did not list within 60 s")?
            .context("a lab watch stopped")?;
        Ok(watches)
    }

    /// What the watches hold now; the control planes and Clusters too when `control_planes`
    /// (upgrades and topologies follow them; listed, as few runs need them). `None` while an
    /// apiserver does not answer (restarted by `--chaos`): the caches would show the world as it
    /// was, and the site must not act on it.
    pub async fn world(
        &self,
        client: &Client,
        workload: &Client,
        control_planes: bool,
    ) -> Result<World> {
        // One cheap request each: the caches cannot say whether their apiserver is up.
        client
            .apiserver_version()
            .await
            .context("the management apiserver does not answer")?;
        workload
            .apiserver_version()
            .await
            .context("the workload apiserver does not answer")?;
        let (control_planes, clusters) = if control_planes {
            let lp = ListParams::default();
            (
                Api::<DynamicObject>::all_with(client.clone(), &control_plane_resource())
                    .list(&lp)
                    .await
                    .context("listing OpenshiftAssistedControlPlanes")?
                    .items,
                Api::<DynamicObject>::all_with(client.clone(), &cluster_resource())
                    .list(&lp)
                    .await
                    .context("listing Clusters")?
                    .items,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        fn all<K>(store: &Store<K>) -> Vec<K>
        where
            K: kube::Resource + Clone,
            K::DynamicType: Eq + std::hash::Hash + Clone,
        {
            store.state().iter().map(|o| o.as_ref().clone()).collect()
        }
        Ok(World {
            control_planes,
            clusters,
            bmhs: all(&self.bmhs),
            infraenvs: all(&self.infraenvs),
            machines: all(&self.machines),
            agents: all(&self.agents),
            acis: all(&self.acis),
            nodes: all(&self.nodes),
        })
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl World {
    /// The BareMetalHosts of namespace `ns`.
    pub fn bmhs_of(&self, ns: &str) -> Vec<BareMetalHost> {
        in_ns(&self.bmhs, ns)
    }

    /// One cluster's objects: those of namespace `ns`, its AgentClusterInstall `aci`, and the
    /// workload Nodes whose `metal3.io/uuid` is one of its BareMetalHosts' UIDs (the clusters
    /// share the workload apiserver).
    pub fn cluster(&self, ns: &str, aci: &str) -> Snapshot {
        let bmhs = in_ns(&self.bmhs, ns);
        let uids: Vec<String> = bmhs.iter().filter_map(|b| b.uid()).collect();
        let nodes = self
            .nodes
            .iter()
            .filter(|n| n.labels().get(UUID_LABEL).is_some_and(|u| uids.contains(u)))
            .cloned()
            .collect();
        Snapshot {
            bmhs,
            infraenvs: in_ns(&self.infraenvs, ns),
            machines: in_ns(&self.machines, ns),
            agents: in_ns(&self.agents, ns),
            aci: in_ns(&self.acis, ns)
                .into_iter()
                .find(|a| a.name_any() == aci),
            nodes,
            control_plane: in_ns(&self.control_planes, ns)
                .into_iter()
                .find(|c| c.name_any() == aci)
                .and_then(|c| serde_json::to_value(c).ok()),
            // The lab installs one Cluster per namespace.
            cluster: in_ns(&self.clusters, ns)
                .into_iter()
                .next()
                .and_then(|c| serde_json::to_value(c).ok()),
        }
    }
}

/// `cluster.x-k8s.io/v1beta2` Cluster.
pub fn cluster_resource() -> ApiResource {
    ApiResource {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "cluster.x-k8s.io/v1beta2".into(),
        kind: "Cluster".into(),
        plural: "clusters".into(),
    }
}

/// `controlplane.cluster.x-k8s.io/v1alpha3` OpenshiftAssistedControlPlane.
pub fn control_plane_resource() -> ApiResource {
    ApiResource {
        group: "controlplane.cluster.x-k8s.io".into(),
        version: "v1alpha3".into(),
        api_version: "controlplane.cluster.x-k8s.io/v1alpha3".into(),
        kind: "OpenshiftAssistedControlPlane".into(),
        plural: "openshiftassistedcontrolplanes".into(),
    }
}

fn in_ns<K: ResourceExt + Clone>(objs: &[K], ns: &str) -> Vec<K> {
    objs.iter()
        .filter(|o| o.namespace().as_deref() == Some(ns))
        .cloned()
        .collect()
}

impl Snapshot {
    pub fn bmh_state(bmh: &BareMetalHost) -> &str {
        bmh.status
            .as_ref()
            .map(|s| s.provisioning.state.as_str())
            .unwrap_or_default()
    }

    pub fn bmhs_in(&self, state: &str) -> usize {
        self.bmhs
            .iter()
            .filter(|b| Self::bmh_state(b) == state)
            .count()
    }

    pub fn infraenvs_ready(&self) -> usize {
        self.infraenvs
            .iter()
            .filter(|i| {
                i.status
                    .as_ref()
                    .is_some_and(|s| s.iso_download_url.is_some())
            })
            .count()
    }

    pub fn machine_running(m: &Machine) -> bool {
        m.status.as_ref().and_then(|s| s.phase.as_ref()) == Some(&MachineStatusPhase::Running)
    }

    /// The name of the Node a Machine's `status.nodeRef` names.
    pub fn node_of(m: &Machine) -> Option<&str> {
        m.status
            .as_ref()
            .and_then(|s| s.node_ref.as_ref())
            .map(|n| n.name.as_str())
    }

    /// A control-plane Machine (Cluster API's label).
    pub fn is_control_plane(m: &Machine) -> bool {
        m.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("cluster.x-k8s.io/control-plane"))
    }

    pub fn machines_running(&self) -> usize {
        self.machines
            .iter()
            .filter(|m| Self::machine_running(m))
            .count()
    }

    pub fn agents_approved(&self) -> usize {
        self.agents.iter().filter(|a| a.spec.approved).count()
    }

    pub fn agent_state(a: &Agent) -> &str {
        a.status
            .as_ref()
            .and_then(|s| s.debug_info.state.as_deref())
            .unwrap_or_default()
    }

    pub fn is_day2(a: &Agent) -> bool {
        a.status.as_ref().and_then(|s| s.kind.as_deref()) == Some(DAY2_KIND)
    }

    pub fn aci_state(&self) -> &str {
        self.aci
            .as_ref()
            .and_then(|a| a.status.as_ref()?.debug_info.state.as_deref())
            .unwrap_or_default()
    }

    pub fn aci_percent(&self) -> i64 {
        self.aci
            .as_ref()
            .and_then(|a| a.status.as_ref())
            .map(|s| s.progress.total_percentage)
            .unwrap_or_default()
    }

    pub fn nodes_ready(&self) -> usize {
        self.nodes.iter().filter(|n| node_ready(n)).count()
    }

    /// What was seen, for the report: the progress line and its figures.
    pub fn to_json(&self, cluster: &str) -> Value {
        let by_state = |states: Vec<&str>| -> BTreeMap<String, usize> {
            let mut m = BTreeMap::new();
            for s in states {
                *m.entry(if s.is_empty() { "new" } else { s }.to_string())
                    .or_default() += 1;
            }
            m
        };
        serde_json::json!({
            "summary": self.summary(cluster),
            "install_state": self.aci_state(),
            "install_percent": self.aci_percent(),
            "bare_metal_hosts": by_state(self.bmhs.iter().map(Self::bmh_state).collect()),
            "infraenvs_ready": self.infraenvs_ready(),
            "machines": self.machines.len(),
            "machines_running": self.machines_running(),
            "agents": by_state(self.agents.iter().map(Self::agent_state).collect()),
            "agents_approved": self.agents_approved(),
            "nodes": self.nodes.len(),
            "nodes_ready": self.nodes_ready(),
        })
    }

    /// The progress line: hosts by state, InfraEnvs, Machines, Agents, install, Nodes.
    pub fn summary(&self, cluster: &str) -> String {
        let mut hosts: BTreeMap<&str, usize> = BTreeMap::new();
        for b in &self.bmhs {
            let s = Self::bmh_state(b);
            *hosts
                .entry(if s.is_empty() { "new" } else { s })
                .or_default() += 1;
        }
        let hosts = hosts
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut agents: BTreeMap<&str, usize> = BTreeMap::new();
        for a in &self.agents {
            let s = Self::agent_state(a);
            *agents
                .entry(if s.is_empty() { "new" } else { s })
                .or_default() += 1;
        }
        let agents = agents
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ");
        let install = match self.aci_state() {
            "" => "not started".to_string(),
            s => format!("{}% {s}", self.aci_percent()),
        };
        format!(
            "cluster {cluster}: hosts [{hosts}], InfraEnvs {}, Machines {}/{} Running, Agents {} ({} approved{}{agents}), install {install}, Nodes {}/{} Ready",
            self.infraenvs_ready(),
            self.machines_running(),
            self.machines.len(),
            self.agents.len(),
            self.agents_approved(),
            if agents.is_empty() { "" } else { "; " },
            self.nodes_ready(),
            self.nodes.len(),
        )
    }
}

/// `status.conditions` of any object, one line each, not-True ones first.
pub fn conditions<K: serde::Serialize>(obj: &K) -> Vec<String> {
    let v = serde_json::to_value(obj).unwrap_or_default();
    let mut out: Vec<(bool, String)> = v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
            let mut msg = s("message")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if msg.len() > 240 {
                let cut = (0..=240)
                    .rev()
                    .find(|i| msg.is_char_boundary(*i))
                    .unwrap_or(0);
                msg.truncate(cut);
                msg.push('…');
            }
            (
                s("status") == "True",
                format!("{}={} {}: {msg}", s("type"), s("status"), s("reason")),
            )
        })
        .collect();
    out.sort_by_key(|(ok, _)| *ok);
    out.into_iter().map(|(_, l)| l).collect()
}

/// What changed between two reads, one line per object: Machines created, Running and deleted;
/// Agents registered, approved and removed; Nodes removed (the site reports registrations).
pub fn changes(prev: &Snapshot, cur: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    let machines = |s: &Snapshot| -> BTreeMap<String, (bool, String)> {
        s.machines
            .iter()
            .map(|m| {
                let node = m
                    .status
                    .as_ref()
                    .and_then(|s| s.node_ref.as_ref())
                    .map(|n| n.name.clone())
                    .unwrap_or_default();
                (m.name_any(), (Snapshot::machine_running(m), node))
            })
            .collect()
    };
    let (before, after) = (machines(prev), machines(cur));
    for (name, (running, node)) in &after {
        match before.get(name) {
            None => out.push(format!("Machine {name} created")),
            Some((was, _)) if *running && !was => {
                out.push(format!("Machine {name} Running (nodeRef {node})"))
            }
            _ => {}
        }
        if *running && !before.contains_key(name) {
            out.push(format!("Machine {name} Running (nodeRef {node})"));
        }
    }
    for name in before.keys().filter(|n| !after.contains_key(*n)) {
        out.push(format!("Machine {name} deleted"));
    }
    let agents = |s: &Snapshot| -> BTreeMap<String, (bool, String)> {
        s.agents
            .iter()
            .map(|a| {
                let host = a.spec.hostname.clone().unwrap_or_else(|| a.name_any());
                (a.name_any(), (a.spec.approved, host))
            })
            .collect()
    };
    let (before, after) = (agents(prev), agents(cur));
    for (name, (approved, host)) in &after {
        match before.get(name) {
            None if *approved => out.push(format!("Agent {name} registered and approved ({host})")),
            None => out.push(format!("Agent {name} registered")),
            Some((was, _)) if *approved && !was => {
                out.push(format!("Agent {name} approved ({host})"))
            }
            _ => {}
        }
    }
    for (name, (_, host)) in before.iter().filter(|(n, _)| !after.contains_key(*n)) {
        out.push(format!("Agent {name} removed ({host})"));
    }
    let nodes = |s: &Snapshot| -> Vec<String> { s.nodes.iter().map(|n| n.name_any()).collect() };
    let after = nodes(cur);
    for name in nodes(prev).iter().filter(|n| !after.contains(n)) {
        out.push(format!("Node {name} removed from the workload cluster"));
    }
    out
}

/// A Node whose Ready condition is True.
pub(crate) fn node_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

//! The system under test: a testbed (etcd, kube-apiserver, our CRDs), the release assisted-core
//! binary as a process against it, the CRs of a scenario, and a watch on the Agents it writes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_sim::HostProfile;
use agent_sim::fixtures;
use anyhow::{Context, Result, bail};
use assisted_api::agent::Agent;
use assisted_api::infraenv::InfraEnv;
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use testbed::Testbed;
use testbed::process::{free_port, http_get, wait_until};

use crate::load::Env;

pub const NS: &str = "bench";
/// The simulated hosts' machine network; 10.0.0.100 + index, so 1,000 hosts fit.
pub const MACHINE_CIDR: &str = "10.0.0.0/16";

/// `target/release/assisted-core` of this workspace, or a clear error saying how to build it.
pub fn core_binary(explicit: Option<PathBuf>) -> Result<PathBuf> {
    let bin = explicit
        .unwrap_or_else(|| testbed::cache::repo_root().join("target/release/assisted-core"));
    if !bin.is_file() {
        bail!(
            "{} is missing: build it first with `cargo build --release -p assisted-core` \
             (or run `make bench-core`)",
            bin.display()
        );
    }
    Ok(bin)
}

/// Starts the core as a process of the testbed (killed with it) against the testbed's
/// apiserver with the admin kubeconfig, the lab install backend and the binary's defaults
/// otherwise (monitor every 2 s); waits for `/readyz`. Returns its pid and agent API base URL.
pub async fn start_core(tb: &mut Testbed, bin: &Path) -> Result<(u32, String)> {
    let data = tb.dir.join("core-data");
    let addr = || -> Result<String> { Ok(format!("127.0.0.1:{}", free_port()?)) };
    let (api, images, metrics) = (addr()?, addr()?, addr()?);
    let health_port = free_port()?;
    let args = vec![
        format!("--kubeconfig={}", tb.kubeconfig.display()),
        format!("--metrics-bind-address={metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{health_port}"),
        "--log-level=info,kube=warn,tower=warn,hyper=warn".into(),
        "--install-backend=lab".into(),
        format!("--data-dir={}", data.display()),
        // No ISO is downloaded here, but an InfraEnv gets its URL only with a base image
        // listed: one that is never fetched.
        r#"--os-images=[{"openshift_version":"4.17","cpu_architecture":"x86_64","url":"file:///nonexistent/never-fetched.iso","version":"417.94.202410090854-0"}]"#.into(),
        format!("--agent-api-bind-address={api}"),
        format!("--images-bind-address={images}"),
        format!("--agent-api-url=http://{api}"),
        format!("--images-url=http://{images}"),
        "--keys-namespace=default".into(),
    ];
    let proc = tb.spawn("assisted-core", bin, &args, &[("NO_COLOR", "1")])?;
    let pid = proc.id();
    wait_until("assisted-core", proc, Duration::from_secs(60), async || {
        Ok(http_get(health_port, "/readyz")?.0 == 200)
    })
    .await?;
    Ok((pid, format!("http://{api}/api/assisted-install/v2")))
}

/// Namespace, pull secret and ClusterImageSet, then per cluster a ClusterDeployment, an
/// AgentClusterInstall (3 control-plane agents, the rest workers) and an InfraEnv bound to it:
/// the shapes of agent-sim's end-to-end tests, on a network that holds 1,000 hosts.
pub fn scenario_yaml(clusters: usize, hosts_per_cluster: usize) -> String {
    let mut y = format!(
        "{}---\n{}",
        fixtures::namespace_with_pull_secret(NS),
        fixtures::image_set("bench-img")
    );
    let masters = hosts_per_cluster.min(3) as u32;
    let workers = hosts_per_cluster as u32 - masters;
    for c in 0..clusters {
        let name = format!("c{c}");
        let cluster = fixtures::ClusterManifests {
            namespace: NS,
            name: &name,
            masters,
            workers,
            api_vips: &["10.0.255.100"],
            ingress_vips: &["10.0.255.101"],
            machine_cidr: MACHINE_CIDR,
            ssh_comment: "bench",
        };
        y.push_str("---\n");
        y.push_str(&cluster.install_objects("bench-img"));
    }
    y
}

/// The infra-env token of an ISO URL (`.../byapikey/<token>/<version>/...`).
pub fn token_of_iso_url(url: &str) -> Option<&str> {
    url.split("/byapikey/").nth(1)?.split('/').next()
}

/// Waits until every InfraEnv has its image URL; one [`Env`] per cluster with its hosts
/// (worker-sized profiles, numbered across the whole scenario so IPs and MACs are unique).
pub async fn wait_for_envs(
    client: &kube::Client,
    base: &str,
    clusters: usize,
    hosts_per_cluster: usize,
) -> Result<Vec<Env>> {
    let api: Api<InfraEnv> = Api::namespaced(client.clone(), NS);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = api.list(&Default::default()).await?.items;
        let ready: BTreeMap<String, (String, String)> = list
            .iter()
            .filter_map(|ie| {
                let url = ie.status.as_ref()?.iso_download_url.as_deref()?;
                let token = token_of_iso_url(url)?.to_owned();
                Some((ie.metadata.name.clone()?, (ie.metadata.uid.clone()?, token)))
            })
            .collect();
        if ready.len() == clusters {
            let mut envs = Vec::new();
            for c in 0..clusters {
                let (uid, token) = ready
                    .get(&format!("c{c}"))
                    .cloned()
                    .context("an InfraEnv of another name")?;
                let hosts = (0..hosts_per_cluster)
                    .map(|h| {
                        HostProfile::worker_like((c * hosts_per_cluster + h) as u32, MACHINE_CIDR)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                envs.push(Env {
                    base: base.to_owned(),
                    infra_env: uid,
                    token,
                    hosts,
                });
            }
            return Ok(envs);
        }
        if Instant::now() > deadline {
            bail!(
                "only {} of {clusters} InfraEnvs got an image URL in 120 s",
                ready.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What the Agent watch has seen.
#[derive(Debug, Default)]
pub struct AgentsSeen {
    /// Agent name → (status shows the inventory, `debugInfo.state`).
    pub agents: HashMap<String, (bool, String)>,
    /// Agent watch events so far, and the instant of the last one.
    pub events: u64,
    pub last_event: Option<Instant>,
}

impl AgentsSeen {
    pub fn with_inventory(&self) -> usize {
        self.agents.values().filter(|a| a.0).count()
    }

    /// How many Agents are in each `debugInfo.state`.
    pub fn states(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for (_, state) in self.agents.values() {
            *m.entry(if state.is_empty() { "-" } else { state }.to_owned())
                .or_insert(0) += 1;
        }
        m
    }
}

/// Whether an Agent's status reflects its host's inventory (the core copies it from the
/// inventory step reply).
pub fn shows_inventory(a: &Agent) -> bool {
    a.status.as_ref().is_some_and(|s| {
        s.inventory
            .hostname
            .as_deref()
            .is_some_and(|h| !h.is_empty())
            && !s.inventory.interfaces.is_empty()
    })
}

/// Watches the scenario's Agents in the background (one watch, as any controller would hold).
pub fn watch_agents(client: &kube::Client) -> Arc<Mutex<AgentsSeen>> {
    let seen = Arc::new(Mutex::new(AgentsSeen::default()));
    let api: Api<Agent> = Api::namespaced(client.clone(), NS);
    let s = seen.clone();
    tokio::spawn(async move {
        // Backoff: without it a failing watch retries in a tight loop.
        let mut stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(ev) = stream.next().await {
            let Ok(ev) = ev else { continue };
            let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
            match ev {
                watcher::Event::Apply(a) | watcher::Event::InitApply(a) => {
                    let state = a
                        .status
                        .as_ref()
                        .and_then(|st| st.debug_info.state.clone())
                        .unwrap_or_default();
                    let name = a.metadata.name.clone().unwrap_or_default();
                    s.agents.insert(name, (shows_inventory(&a), state));
                    s.events += 1;
                    s.last_event = Some(Instant::now());
                }
                watcher::Event::Delete(a) => {
                    s.agents
                        .remove(&a.metadata.name.clone().unwrap_or_default());
                }
                watcher::Event::Init | watcher::Event::InitDone => {}
            }
        }
    });
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_iso_urls() {
        assert_eq!(
            token_of_iso_url("http://127.0.0.1:1/byapikey/eyJ.x.y/4.17/x86_64/minimal.iso?rev=a"),
            Some("eyJ.x.y")
        );
        assert_eq!(token_of_iso_url("http://127.0.0.1:1/images/x"), None);
    }

    #[test]
    fn scenario_objects() {
        let yaml = scenario_yaml(2, 10);
        let docs: Vec<&str> = yaml.split("\n---\n").collect();
        // Namespace, Secret, ClusterImageSet, then CD, ACI, InfraEnv per cluster.
        assert_eq!(docs.len(), 3 + 2 * 3);
        assert!(docs[4].contains("controlPlaneAgents: 3") && docs[4].contains("workerAgents: 7"));
        assert!(docs[8].contains("name: c1"));
        let single = scenario_yaml(1, 1);
        assert!(single.contains("controlPlaneAgents: 1") && single.contains("workerAgents: 0"));
    }
}

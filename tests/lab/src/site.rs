//! The simulated site: the servers behind the BareMetalHosts and, after install, their kubelets.
//!
//! When baremetal-operator reports a host `provisioned`, the site boots it from what Metal3
//! handed it (a live ISO: download it and read the embedded ignition; a disk image: the
//! discovery ignition in the user-data Secret) as the agent-sim host with that boot MAC. Once
//! the host has rebooted into the installed OS its Node appears in the workload apiserver with
//! the kubelet's own labels; `metal3.io/uuid=<BareMetalHost UID>` (from the Agent's nodeLabels)
//! is added by the installer-controller (day-1) or assisted-core (day-2), as on a real site.
//! When the host is deprovisioned the site powers it off and its Node goes.
//!
//! A master's kubelet also serves the exec API ([`crate::kubelet_api`]) on the site's network,
//! and once its Node is Ready the etcd operator's objects for it exist and etcd lists its
//! member ([`crate::etcd_operator`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::mirror::PullRecord;
use std::time::Duration;

use agent_sim::kubelet::{Kubelet, node_name, node_object_with_role, node_user, ready_status};
use agent_sim::profile::ProfileKind;
use agent_sim::{AgentConfig, AgentStatus, Host, HostProfile, ReplyCtx, Trust};
use anyhow::{Context, Result, anyhow, bail};
use assisted_core::api::agent::Agent;
use assisted_core::service::controllers::day2::NODE_BOOTSTRAPPER;
use assisted_core::service::images::test_iso::embedded_kernel_arguments;
use assisted_core::service::images::{extract_embedded_ignition, parse_discovery_ignition};
use external_types::metal3_io::BareMetalHost;
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::Value;
use testbed::Testbed;
use tokio::task::JoinHandle;

use crate::etcd_operator::{self, EtcdMembers};
use crate::kubelet_api::{KubeletServer, Network, kubelet_address, kubelet_status_fields};
use crate::manifests::{self, ClusterSpec};

/// A server of the site: its BareMetalHost name, role label and simulated hardware.
#[derive(Clone)]
pub struct Server {
    pub name: String,
    pub role: &'static str,
    pub profile: HostProfile,
}

impl Server {
    /// The MAC its BareMetalHost boots from: the profile's first NIC.
    pub fn boot_mac(&self) -> Result<&str> {
        self.profile
            .nics
            .first()
            .map(|nic| nic.mac.as_str())
            .with_context(|| format!("host profile of {} has no NIC", self.name))
    }
}

/// A powered-on server running the discovery ISO or, after its reboot, the installed OS.
struct Booted {
    host: Host,
    role: &'static str,
    /// The Node's name once it is registered (or a day-2 kubelet is joining).
    node: Option<String>,
    /// A day-2 kubelet's TLS bootstrap, running.
    kubelet: Option<JoinHandle<Result<()>>>,
    /// It joined an installed cluster (day-2).
    day2: bool,
    /// A master's kubelet API on the site's network (dropped when the host fails or goes).
    kubelet_api: Option<KubeletServer>,
}

pub struct Site {
    client: Client,
    /// The namespace of this cluster's BareMetalHosts.
    ns: String,
    workload: Client,
    servers: BTreeMap<String, Server>,
    peers: Arc<RwLock<Vec<HostProfile>>>,
    reply_ctx: Arc<RwLock<ReplyCtx>>,
    booted: BTreeMap<String, Booted>,
    /// Hosts whose image could not be read yet (the image server down: `--chaos` kills the
    /// control-plane manager that serves it), since when: the site tries again every pass,
    /// as a server's firmware would, and gives up after [`BOOT_RETRY`].
    boot_failing: BTreeMap<String, std::time::Instant>,
    /// agent-sim's speed multiplier for the hosts (0: no simulated delays).
    speed: f64,
    /// The CA the site's BMCs verify an https image server with (the site's operator gave it).
    bmc_trust: Trust,
    /// The hosts `--fail-host` broke.
    pub failed: Vec<FailedHost>,
    /// The network the workload apiserver reaches kubelets through.
    network: Option<Arc<Network>>,
    /// This cluster's etcd members.
    pub etcd: EtcdMembers,
    /// The member IDs `etcd-endpoints` was last written with.
    endpoints_synced: Vec<u64>,
    /// `--disconnected`: the hosts pull through their container runtime
    /// ([`crate::mirror::HostRuntime`]), each pull kept here; how many were shown.
    pulls: Option<Arc<Mutex<Vec<PullRecord>>>>,
    pulls_shown: usize,
}

/// A host whose kubelet stopped (`--fail-host`): what the lab follows through remediation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedHost {
    pub host: String,
    pub node: String,
    /// Its Agent's name (the host's UUID).
    pub agent: String,
    pub master: bool,
    /// Its etcd member's ID (a master's): the replacement may reuse the Node's name, never
    /// the member.
    pub etcd_member: Option<u64>,
}

/// The site's servers of one cluster for `masters` + `workers` (workers include the day-2
/// spare), with agent-sim profile indexes from `spec.index_base` on its machine network.
pub fn servers(spec: &ClusterSpec, masters: u32, workers: u32) -> Result<Vec<Server>> {
    let sno = spec.topology == crate::Topology::Sno;
    let cidr = spec.machine_cidr.as_str();
    let base = spec.index_base;
    if masters.max(workers) > manifests::INDEX_STRIDE {
        bail!(
            "at most {} masters and workers per cluster",
            manifests::INDEX_STRIDE
        );
    }
    let mut out = Vec::new();
    let master_kind = if sno {
        ProfileKind::Sno
    } else {
        ProfileKind::Master
    };
    let hosts = (0..masters)
        .map(|i| (master_kind, "master", i))
        .chain((0..workers).map(|i| (ProfileKind::Worker, "worker", i)));
    for (kind, role, i) in hosts {
        // Addressed within the cluster's network (the nth of its kind), so that a thousand
        // clusters' hosts each fit a small one.
        let profile = HostProfile::nth_in_network(kind, base + i, i, cidr)
            .map_err(|e| anyhow!("host profile: {e}"))?;
        out.push(Server {
            name: format!("{}{role}-{i}", spec.host_prefix),
            role,
            profile,
        });
    }
    Ok(out)
}

/// The namespace, BareMetalHosts and BMC Secrets for `servers`.
pub fn site_yaml(ns: &str, servers: &[Server]) -> Result<String> {
    let mut yaml = manifests::namespace_yaml(ns);
    for s in servers {
        yaml.push_str(&manifests::host_yaml(ns, &s.name, s.role, s.boot_mac()?));
    }
    Ok(yaml)
}

/// What a host's discovery ignition says: where the agent API is, who the host is, and the CA
/// it verifies the service with.
struct BootConfig {
    url: String,
    infra_env: String,
    token: String,
    trust: Trust,
    /// What the host's container runtime pulls with: the agent image, the mirrors'
    /// `registries.conf` and CA, the pull secret.
    agent_image: String,
    registries_conf: Option<String>,
    mirror_ca: Option<String>,
    pull_secret: Option<String>,
}

/// Boots `bmh` as its BMC would: downloads its ISO (verified with `bmc_trust` when https) and
/// reads the discovery ignition in it, or reads the user data of a disk image.
async fn boot_config(
    client: &Client,
    bmh: &BareMetalHost,
    bmc_trust: &Trust,
) -> Result<BootConfig> {
    let name = bmh.name_any();
    let image = bmh
        .spec
        .image
        .as_ref()
        .with_context(|| format!("BareMetalHost {name} is provisioned without an image"))?;
    let format = serde_json::to_value(&image.format)?;
    let ignition = if format.as_str() == Some("live-iso") {
        if image.url.contains("placeholder.invalid") {
            bail!(
                "BareMetalHost {name} got the template's placeholder image, not the InfraEnv's ISO"
            );
        }
        let (status, iso) = agent_sim::call(bmc_trust, http::Method::GET, &image.url, "", None)
            .await
            .map_err(|e| {
                anyhow::Error::new(Transient(IMAGE_SERVER_DOWN)).context(format!(
                    "downloading the ISO of {name} from {}: {e}",
                    image.url
                ))
            })?;
        if status.is_server_error() {
            return Err(
                anyhow::Error::new(Transient(IMAGE_SERVER_DOWN)).context(format!(
                    "downloading the ISO of {name} from {}: HTTP {status}",
                    image.url
                )),
            );
        }
        if !status.is_success() {
            bail!(
                "downloading the ISO of {name} from {}: HTTP {status}",
                image.url
            );
        }
        // A minimal ISO's initramfs fetches the root filesystem before anything else runs.
        let kargs = embedded_kernel_arguments(std::io::Cursor::new(&iso))
            .map_err(|e| anyhow!("reading the kernel arguments of {name}'s ISO: {e}"))?
            .unwrap_or_default();
        if let Some(rootfs) = kargs
            .split_ascii_whitespace()
            .find_map(|a| a.strip_prefix("coreos.live.rootfs_url="))
        {
            fetch_rootfs(&name, rootfs, bmc_trust).await?;
        }
        extract_embedded_ignition(std::io::Cursor::new(iso))
            .map_err(|e| anyhow!("reading the ISO of {name}: {e}"))?
            .with_context(|| format!("the ISO of {name} carries no ignition"))?
    } else {
        // A disk image boots with the user data BMO puts on its config drive.
        let secret = bmh
            .spec
            .user_data
            .as_ref()
            .and_then(|u| u.name.clone())
            .with_context(|| {
                format!("BareMetalHost {name} boots a disk image without user data")
            })?;
        let s = Api::<Secret>::namespaced(client.clone(), &bmh.namespace().unwrap_or_default())
            .get(&secret)
            .await
            .with_context(|| format!("reading user-data Secret {secret}"))?;
        let data = s.data.unwrap_or_default();
        let bytes = data
            .get("value")
            .or_else(|| data.get("userData"))
            .with_context(|| format!("user-data Secret {secret} has no `value`"))?;
        String::from_utf8(bytes.0.clone()).context("user data is not UTF-8")?
    };
    let cfg = parse_discovery_ignition(&ignition)
        .map_err(|e| anyhow!("the ignition {name} booted is not a discovery ignition: {e}"))?;
    if cfg.service_url.starts_with("https://") && cfg.ca_bundle.is_none() {
        bail!(
            "the discovery ignition of {name} points its agent at {} but gives it no CA \
             (--cacert): the agent could not verify the service",
            cfg.service_url
        );
    }
    Ok(BootConfig {
        url: cfg.service_url,
        infra_env: cfg.infra_env_id,
        token: cfg.token,
        trust: cfg.ca_bundle.map(Trust::ca).unwrap_or_default(),
        agent_image: cfg.agent_image,
        registries_conf: cfg.registries_conf,
        mirror_ca: cfg.mirror_ca,
        pull_secret: cfg.pull_secret,
    })
}

/// Downloads a minimal ISO's root filesystem as its initramfs does (`coreos.live.rootfs_url`).
/// Real CoreOS checks the image against a hash in its initramfs; the lab checks that the core
/// serves a non-empty rootfs, over https with the site's CA.
async fn fetch_rootfs(name: &str, url: &str, trust: &Trust) -> Result<()> {
    let (status, rootfs) = agent_sim::call(trust, http::Method::GET, url, "", None)
        .await
        .map_err(|e| {
            anyhow::Error::new(Transient(IMAGE_SERVER_DOWN))
                .context(format!("{name} fetching its rootfs: {e}"))
        })?;
    if status.is_server_error() {
        return Err(
            anyhow::Error::new(Transient(IMAGE_SERVER_DOWN)).context(format!(
                "{name} fetching its rootfs from {url}: HTTP {status}"
            )),
        );
    }
    if !status.is_success() || rootfs.is_empty() {
        bail!(
            "{name} cannot fetch its rootfs from {url}: HTTP {status}, {} bytes",
            rootfs.len()
        );
    }
    Ok(())
}

/// A healthy kubelet's Node status: Ready and no pressure. CAPI's Machine `NodeHealthy` waits
/// for all four conditions, which agent-sim's kubelet (Ready only) does not report.
fn healthy_status(addresses: &[String]) -> Value {
    let now = jiff::Timestamp::now().to_string();
    let mut status = ready_status(addresses, &now);
    if let (Some(s), Value::Object(fields)) = (
        status.get_mut("status").and_then(Value::as_object_mut),
        kubelet_status_fields(),
    ) {
        s.extend(fields);
    }
    if let Some(conds) = status
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for (t, reason) in [
            ("MemoryPressure", "KubeletHasSufficientMemory"),
            ("DiskPressure", "KubeletHasNoDiskPressure"),
            ("PIDPressure", "KubeletHasSufficientPID"),
        ] {
            conds.push(serde_json::json!({
                "type": t, "status": "False", "reason": reason,
                "message": "simulated", "lastHeartbeatTime": now, "lastTransitionTime": now,
            }));
        }
    }
    status
}

/// An Agent a control-plane Machine's config made (role `master`): a day-2 control-plane host
/// on a server the site racked as a worker is still a master.
fn agent_is_master(agent: Option<&Agent>) -> bool {
    agent.is_some_and(|a| a.spec.role == assisted_core::api::agent::HostRole::Master)
}

/// How long the site keeps trying to boot a host whose image server does not answer.
pub const BOOT_RETRY: Duration = Duration::from_secs(120);

/// Whether a boot failure may pass: the image server unreachable or answering 5xx.
fn is_transient(e: &anyhow::Error) -> bool {
    transient_reason(e).is_some()
}

/// Marks a boot failure that may pass (see [`is_transient`]), with what the site says of it.
#[derive(Debug)]
struct Transient(&'static str);

const IMAGE_SERVER_DOWN: &str = "its image server does not answer";
const AGENT_IMAGE_UNAVAILABLE: &str = "it cannot pull its agent image";

impl std::fmt::Display for Transient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Why a boot failed in a way that may pass, or `None`.
fn transient_reason(e: &anyhow::Error) -> Option<&'static str> {
    e.chain()
        .find_map(|c| c.downcast_ref::<Transient>())
        .map(|t| t.0)
}

impl std::error::Error for Transient {}

/// Something the site did, for the progress output.
pub type Event = String;

impl Site {
    pub fn new(
        client: Client,
        workload: Client,
        ns: &str,
        servers: &[Server],
        reply_ctx: ReplyCtx,
        speed: f64,
        bmc_trust: Trust,
    ) -> Site {
        Site {
            client,
            ns: ns.into(),
            workload,
            servers: servers
                .iter()
                .map(|s| (s.name.clone(), s.clone()))
                .collect(),
            peers: Arc::new(RwLock::new(Vec::new())),
            reply_ctx: Arc::new(RwLock::new(reply_ctx)),
            booted: BTreeMap::new(),
            boot_failing: BTreeMap::new(),
            speed,
            bmc_trust,
            failed: Vec::new(),
            network: None,
            etcd: EtcdMembers::default(),
            endpoints_synced: Vec::new(),
            pulls: None,
            pulls_shown: 0,
        }
    }

    /// The hosts pull their images as podman would, through the mirrors and CA of their
    /// discovery ignition (`--disconnected`): the agent image before the agent starts, the
    /// images the availability check names, the installer image at the install step.
    pub fn with_pulls(mut self) -> Site {
        self.pulls = Some(Arc::default());
        self
    }

    /// Every pull so far.
    pub fn pulls(&self) -> Vec<PullRecord> {
        self.pulls
            .as_ref()
            .and_then(|p| p.lock().ok().map(|p| p.clone()))
            .unwrap_or_default()
    }

    /// With pulls on, the container runtime of a host booted with `boot`, once it has pulled
    /// its agent image (a failed pull is transient: podman tries again, the site next pass).
    async fn runtime_of(
        &self,
        name: &str,
        boot: &BootConfig,
    ) -> Result<Option<Arc<dyn agent_sim::ContainerRuntime>>> {
        let Some(log) = &self.pulls else {
            return Ok(None);
        };
        let runtime = crate::mirror::HostRuntime::new(
            name,
            boot.registries_conf.as_deref(),
            boot.mirror_ca.as_deref(),
            boot.pull_secret.as_deref(),
            log.clone(),
        )?;
        // Failures are said once by the boot's retry, not once per pass.
        let pulled = runtime.pull_unrecorded(&boot.agent_image).await;
        if let Err(e) = pulled {
            return Err(anyhow::Error::new(Transient(AGENT_IMAGE_UNAVAILABLE))
                .context(format!("{name} pulling {}: {e}", boot.agent_image)));
        }
        runtime.record(&boot.agent_image, &pulled);
        Ok(Some(Arc::new(runtime)))
    }

    /// The pulls since the last call, one line each.
    fn new_pull_events(&mut self) -> Vec<Event> {
        let all = self.pulls();
        let new = all.get(self.pulls_shown..).unwrap_or_default().to_vec();
        self.pulls_shown = all.len();
        new.iter()
            .map(|p| match &p.result {
                Ok(from) => format!("site: {} pulled {} from {from}", p.host, p.image),
                Err(e) => format!("site: {} could not pull {}: {e}", p.host, p.image),
            })
            .collect()
    }

    /// Masters' kubelets serve their exec API on `network` (see the module docs).
    pub fn with_kubelet_network(mut self, network: Arc<Network>) -> Site {
        self.network = Some(network);
        self
    }

    /// The first host (by name) of `role` in the cluster now that has not failed.
    pub fn running_host_not_failed(&self, role: &str) -> Option<String> {
        self.booted
            .iter()
            .filter(|(name, _)| !self.failed.iter().any(|f| &f.host == *name))
            .find(|(_, b)| b.role == role && b.node.is_some())
            .map(|(name, _)| name.clone())
    }

    /// The first host (by name) of `role` that is in the cluster now (its Node registered).
    pub fn running_host(&self, role: &str) -> Option<String> {
        self.booted
            .iter()
            .find(|(_, b)| b.role == role && b.node.is_some())
            .map(|(name, _)| name.clone())
    }

    /// `--fail-host`: the host's kubelet stops (the server hangs). Its Node's conditions become
    /// Unknown with the unreachable taints, as the node lifecycle controller writes them once a
    /// kubelet stops posting status (the workload apiserver here has no controller-manager).
    /// The server stays powered on until baremetal-operator deprovisions it.
    pub async fn fail_host(&mut self, name: &str) -> Result<FailedHost> {
        let running: Vec<String> = self.booted.keys().cloned().collect();
        let b = self.booted.get_mut(name).with_context(|| {
            format!(
                "{name} is not running now: only a host in the cluster can fail ({})",
                running.join(", ")
            )
        })?;
        let node = b.node.clone().with_context(|| {
            format!("{name} has no Node yet: only a host in the cluster can fail")
        })?;
        if let Some(k) = b.kubelet.take() {
            k.abort();
        }
        // The server hangs: nothing answers at its kubelet's address any more.
        b.kubelet_api = None;
        if let (Some(net), Some(addr)) = (
            &self.network,
            b.host.profile().primary_ipv4().and_then(kubelet_address),
        ) {
            net.unroute(addr);
        }
        let now = jiff::Timestamp::now().to_string();
        let unknown = |type_: &str| {
            serde_json::json!({"type": type_, "status": "Unknown", "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
                "lastHeartbeatTime": now, "lastTransitionTime": now})
        };
        let nodes = Api::<Node>::all(self.workload.clone());
        nodes
            .patch_status(
                &node,
                &PatchParams::default(),
                &Patch::Strategic(serde_json::json!({"status": {"conditions": [
                    unknown("Ready"), unknown("MemoryPressure"), unknown("DiskPressure"),
                    unknown("PIDPressure")]}})),
            )
            .await
            .with_context(|| format!("marking Node {node} unreachable"))?;
        nodes
            .patch(
                &node,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {"taints": [
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": now},
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": now}]}})),
            )
            .await
            .with_context(|| format!("tainting Node {node} unreachable"))?;
        let etcd_member = self
            .etcd
            .members()
            .into_iter()
            .find(|m| m.name == node)
            .map(|m| m.id);
        let failed = FailedHost {
            host: name.to_string(),
            node,
            agent: b.host.profile().uuid.clone(),
            master: b.role == "master",
            etcd_member,
        };
        self.failed.push(failed.clone());
        Ok(failed)
    }

    /// The Nodes of the powered-on day-2 hosts (registered or joining).
    pub fn day2_nodes(&self) -> Vec<String> {
        self.booted
            .values()
            .filter(|b| b.day2)
            .filter_map(|b| b.node.clone())
            .collect()
    }

    /// The agents of the powered-on hosts, by host name: where each talks to (its discovery
    /// image's agent API URL), its infra-env, token and host id.
    pub fn agents(&self) -> Vec<(&str, &AgentConfig)> {
        self.booted
            .iter()
            .map(|(name, b)| (name.as_str(), b.host.config()))
            .collect()
    }

    /// Hosts powered on now.
    pub fn powered_on(&self) -> usize {
        self.booted.len()
    }

    /// True when every powered-on host has rebooted into the installed OS.
    pub fn all_rebooted(&self) -> bool {
        self.booted
            .values()
            .all(|b| matches!(b.host.status(), AgentStatus::Rebooted))
    }

    /// Powered-on hosts by agent-sim status (for diagnostics).
    pub fn host_states(&self) -> Vec<String> {
        self.booted
            .iter()
            .map(|(n, b)| format!("{n}: {:?}", b.host.status()))
            .collect()
    }

    /// One pass: boot what was provisioned, power off what was deprovisioned, register the
    /// Nodes of rebooted hosts. Lists the cluster's BareMetalHosts.
    pub async fn tick(&mut self, workload_tb: &Testbed) -> Result<Vec<Event>> {
        let bmhs = Api::<BareMetalHost>::namespaced(self.client.clone(), &self.ns)
            .list(&ListParams::default())
            .await
            .context("listing BareMetalHosts")?
            .items;
        self.tick_with(workload_tb, &bmhs).await
    }

    /// [`Site::tick`] with the cluster's BareMetalHosts as read already (hosts of other
    /// namespaces are ignored).
    pub async fn tick_with(
        &mut self,
        workload_tb: &Testbed,
        bmhs: &[BareMetalHost],
    ) -> Result<Vec<Event>> {
        let mut events = self.new_pull_events();
        for bmh in bmhs
            .iter()
            .filter(|b| b.namespace().as_deref() == Some(self.ns.as_str()))
        {
            let name = bmh.name_any();
            let state = bmh
                .status
                .as_ref()
                .map(|s| s.provisioning.state.as_str())
                .unwrap_or_default();
            let Some(server) = self.servers.get(&name).cloned() else {
                continue;
            };
            if state == "provisioned" && !self.booted.contains_key(&name) {
                let booting = match boot_config(&self.client, bmh, &self.bmc_trust).await {
                    Ok(boot) => self.runtime_of(&name, &boot).await.map(|rt| (boot, rt)),
                    Err(e) => Err(e),
                };
                let (boot, runtime) = match booting {
                    Ok(b) => {
                        self.boot_failing.remove(&name);
                        b
                    }
                    Err(e) if is_transient(&e) => {
                        let first = !self.boot_failing.contains_key(&name);
                        let since = *self
                            .boot_failing
                            .entry(name.clone())
                            .or_insert_with(std::time::Instant::now);
                        if since.elapsed() > BOOT_RETRY {
                            return Err(e.context(format!(
                                "{name} could not boot for {}s",
                                BOOT_RETRY.as_secs()
                            )));
                        }
                        if first {
                            tracing::info!("{name} cannot boot yet: {e:#}");
                            events.push(format!(
                                "site: {name} cannot boot yet: {} (logs/lab.log has the error); trying again every pass",
                                transient_reason(&e).unwrap_or(IMAGE_SERVER_DOWN)
                            ));
                        }
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if let Ok(mut p) = self.peers.write() {
                    p.push(server.profile.clone());
                }
                let mut cfg = AgentConfig::new(
                    &boot.url,
                    &boot.infra_env,
                    &boot.token,
                    server.profile.clone(),
                )
                .with_peers(self.peers.clone())
                .with_speed(self.speed);
                cfg.reply_ctx = self.reply_ctx.clone();
                cfg.trust = boot.trust;
                cfg.runtime = runtime;
                // The agent runs the image its discovery ignition names, and says so.
                if !boot.agent_image.is_empty() {
                    cfg.agent_version = boot.agent_image.clone();
                }
                self.booted.insert(
                    name.clone(),
                    Booted {
                        host: Host::spawn(cfg),
                        role: server.role,
                        node: None,
                        kubelet: None,
                        day2: false,
                        kubelet_api: None,
                    },
                );
                events.push(format!(
                    "site: {name} powered on, booting the discovery image"
                ));
            } else if state != "provisioned"
                && let Some(b) = self.booted.remove(&name)
            {
                // Deprovisioned: the server is powered off; its kubelet is gone with it.
                if let Ok(mut p) = self.peers.write() {
                    p.retain(|h| h.uuid != server.profile.uuid);
                }
                if let Some(k) = &b.kubelet {
                    k.abort();
                }
                if let (Some(net), Some(addr)) = (
                    &self.network,
                    server.profile.primary_ipv4().and_then(kubelet_address),
                ) {
                    net.unroute(addr);
                }
                if let Some(node) = &b.node {
                    self.delete_node(node).await?;
                }
                events.push(format!("site: {name} deprovisioned ({state}), powered off"));
            }
        }
        let rebooted: Vec<String> = self
            .booted
            .iter()
            .filter(|(_, b)| b.node.is_none() && matches!(b.host.status(), AgentStatus::Rebooted))
            .map(|(n, _)| n.clone())
            .collect();
        for name in rebooted {
            if let Some(e) = self.register_node(&name, workload_tb).await? {
                events.push(e);
            }
        }
        for (name, b) in &mut self.booted {
            if let Some(k) = b.kubelet.take_if(|k| k.is_finished()) {
                match k.await {
                    Ok(Ok(())) => events.push(format!(
                        "site: {name}'s kubelet joined (CSRs approved by assisted-core)"
                    )),
                    Ok(Err(e)) => bail!("the day-2 kubelet of {name} failed: {e:#}"),
                    Err(e) => bail!("the day-2 kubelet of {name} panicked: {e}"),
                }
            }
        }
        // The operator's endpoints controller follows the member list: a member removed by
        // `etcdctl member remove` leaves `etcd-endpoints`.
        let ids: Vec<u64> = self.etcd.members().iter().map(|m| m.id).collect();
        if self.network.is_some() && ids != self.endpoints_synced && !ids.is_empty() {
            etcd_operator::sync_endpoints(&self.workload, &self.etcd).await?;
            self.endpoints_synced = ids;
        }
        Ok(events)
    }

    async fn delete_node(&self, node: &str) -> Result<()> {
        match Api::<Node>::all(self.workload.clone())
            .delete(node, &DeleteParams::default())
            .await
        {
            // CAPI deletes a removed Machine's Node itself; either of us may be first.
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("deleting Node {node}")),
        }
    }

    /// The host's kubelet registers its Node. A day-1 host's Node is created directly with the
    /// workload admin client (a simplified kubelet: nobody approves day-1 CSRs here); a day-2
    /// host runs agent-sim's kubelet TLS bootstrap, whose CSRs assisted-core approves.
    async fn register_node(&mut self, name: &str, workload_tb: &Testbed) -> Result<Option<Event>> {
        let Some(b) = self.booted.get_mut(name) else {
            return Ok(None);
        };
        let profile = b.host.profile().clone();
        let agent = Api::<Agent>::namespaced(self.client.clone(), &self.ns)
            .get_opt(&profile.uuid)
            .await
            .with_context(|| format!("reading the Agent of {name}"))?;
        let hostname = agent
            .as_ref()
            .and_then(|a| a.spec.hostname.clone())
            .unwrap_or_else(|| profile.hostname.clone());
        let day2 = agent
            .as_ref()
            .and_then(|a| a.status.as_ref()?.kind.clone())
            .is_some_and(|k| k == "AddToExistingClusterHost");
        let addresses: Vec<String> = profile
            .primary_ipv4()
            .map(|a| a.split('/').next().unwrap_or(a).to_string())
            .into_iter()
            .collect();
        let node = node_name(&hostname);
        let master = b.role == "master" || agent_is_master(agent.as_ref());
        if master
            && let (Some(net), Some(ip)) = (&self.network, addresses.first())
            && let Some(addr) = kubelet_address(ip)
            && b.kubelet_api.is_none()
        {
            let cert = workload_tb.serving_cert_for("kubelet", &[ip.as_str()])?;
            let server = KubeletServer::start(
                &node,
                &cert.cert_pem,
                &cert.key_pem,
                workload_tb.ca_pem(),
                self.etcd.clone(),
            )
            .await?;
            net.route(addr, server.addr);
            b.kubelet_api = Some(server);
        }
        if day2 {
            let bootstrap = workload_tb.client_as(NODE_BOOTSTRAPPER, None).await?;
            let node_client = workload_tb
                .client_as(&node_user(&hostname), Some("system:nodes"))
                .await?;
            // Its metal3.io/uuid label comes from the Agent's nodeLabels: the core applies them
            // once the Node is Ready.
            let kubelet = Kubelet::new(&hostname, bootstrap, node_client)
                .with_addresses(addresses)
                .as_master(master);
            let workload = self.workload.clone();
            let nodes = Api::<Node>::all(self.workload.clone());
            let node_name = node.clone();
            let etcd = self.etcd.clone();
            b.kubelet = Some(tokio::spawn(async move {
                kubelet.join().await?;
                nodes
                    .patch_status(
                        &node_name,
                        &PatchParams::default(),
                        &Patch::Merge(healthy_status(&kubelet.addresses)),
                    )
                    .await
                    .with_context(|| format!("reporting Node {node_name} healthy"))?;
                // A new control-plane Node: the etcd operator scales etcd onto it.
                if let (true, Some(ip)) = (kubelet.master, kubelet.addresses.first()) {
                    etcd_operator::ensure_member(&workload, &etcd, &node_name, ip).await?;
                }
                Ok(())
            }));
            b.node = Some(node.clone());
            b.day2 = true;
            return Ok(Some(format!(
                "site: {name} rebooted into the cluster (day-2); its kubelet asks to join as Node {node}"
            )));
        }
        // Registered with the kubelet's own labels only: the installer-controller puts the
        // Agent's nodeLabels (metal3.io/uuid among them) on it, as on a real cluster.
        let obj = node_object_with_role(&hostname, master);
        let nodes = Api::<Node>::all(self.workload.clone());
        match nodes.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            // Registered by an earlier pass whose status report failed.
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e).with_context(|| format!("registering Node {node}")),
        }
        nodes
            .patch_status(
                &node,
                &PatchParams::default(),
                &Patch::Merge(healthy_status(&addresses)),
            )
            .await
            .with_context(|| format!("reporting Node {node} Ready"))?;
        if let (true, Some(ip)) = (master, addresses.first()) {
            etcd_operator::ensure_member(&self.workload, &self.etcd, &node, ip).await?;
        }
        b.node = Some(node.clone());
        Ok(Some(format!(
            "site: {name} rebooted into the cluster; Node {node} registered Ready"
        )))
    }
}

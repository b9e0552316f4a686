//! Helpers shared by the end-to-end tests (and the reaction benchmark): waiting, a test ISO,
//! and the embedded core started in-process on loopback with the lab backend.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use agent_sim::{AgentConfig, Host, HostProfile, ReplyCtx};
use assisted_core::api::agent::Agent;
use assisted_core::api::agentclusterinstall::AgentClusterInstall;
use assisted_core::api::infraenv::InfraEnv;
use assisted_core::service::images::test_iso::{TEST_ISO_DEFAULT_KARGS, embedded_kernel_arguments};
use assisted_core::service::images::{extract_embedded_ignition, parse_discovery_ignition};
use kube::api::Api;

use assisted_core::service::images::{TestIsoContents, write_test_iso};
use assisted_core::service::server::{self, Backend, CoreArgs, Listeners};
use kube::Client;
use serde_json::json;
use testbed::Testbed;
use testbed::cache::repo_root;
use tokio::sync::watch;

/// The kernel, initrd and rootfs the test ISO carries.
/// The machine network of the simulated hosts.
pub const MACHINE_CIDR: &str = "192.168.111.0/24";

pub const ISO_CONTENTS: TestIsoContents<'static> = TestIsoContents {
    kernel: b"k",
    initrd: b"i",
    rootfs: b"r",
};

/// Writes a small live-ISO-shaped image (256 KiB embed area) at `dir/base.iso`.
pub fn test_iso(dir: &Path) -> PathBuf {
    let iso = dir.join("base.iso");
    write_test_iso(&iso, &ISO_CONTENTS, 256 * 1024).expect("write test ISO");
    iso
}

const STEP: Duration = Duration::from_millis(200);

pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(STEP).await;
    }
}

/// Lab backend flags: where the admin kubeconfig points and which CAs make it valid there.
#[derive(Default)]
pub struct LabFlags {
    pub api_url: Option<String>,
    pub server_ca_file: Option<PathBuf>,
    pub client_ca_files: Option<(PathBuf, PathBuf)>,
}

impl LabFlags {
    /// The admin kubeconfig the core publishes authenticates against `workload`: its server CA
    /// is trusted and the admin certificate is signed by its (client) CA.
    pub fn for_testbed(workload: &Testbed, dir: &Path) -> LabFlags {
        let ca = dir.join("workload-ca.crt");
        let key = dir.join("workload-ca.key");
        std::fs::write(&ca, workload.ca_pem()).unwrap();
        std::fs::write(&key, workload.ca_key_pem()).unwrap();
        LabFlags {
            api_url: Some(workload.server.clone()),
            server_ca_file: Some(ca.clone()),
            client_ca_files: Some((ca, key)),
        }
    }
}

/// A running core bound to loopback with the lab backend.
pub struct Core {
    pub api_url: String,
    pub images_url: String,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

pub async fn start_core(
    client: Client,
    data_dir: &Path,
    iso: &Path,
    api_port: u16,
    images_port: u16,
    lab: &LabFlags,
) -> Core {
    start_core_in(
        client,
        manager::runtime::WatchScope::default(),
        data_dir,
        iso,
        (api_port, images_port),
        lab,
    )
    .await
}

/// As [`start_core`], serving one namespace or shard (`--namespace`, `--watch-filter`).
pub async fn start_core_in(
    client: Client,
    scope: manager::runtime::WatchScope,
    data_dir: &Path,
    iso: &Path,
    (api_port, images_port): (u16, u16),
    lab: &LabFlags,
) -> Core {
    let args = CoreArgs {
        agent_api_bind_address: format!("127.0.0.1:{api_port}").parse().unwrap(),
        images_bind_address: format!("127.0.0.1:{images_port}").parse().unwrap(),
        agent_api_url: String::new(),
        images_url: String::new(),
        data_dir: data_dir.to_path_buf(),
        os_images: json!([{
            "openshift_version": "4.17",
            "cpu_architecture": "x86_64",
            "url": format!("file://{}", iso.display()),
            "version": "417.94.202410090854-0",
        }])
        .to_string(),
        install_backend: Backend::Lab,
        openshift_install_binary: None,
        lab_api_url: lab.api_url.clone(),
        lab_server_ca_file: lab.server_ca_file.clone(),
        lab_client_ca_cert_file: lab.client_ca_files.as_ref().map(|f| f.0.clone()),
        lab_client_ca_key_file: lab.client_ca_files.as_ref().map(|f| f.1.clone()),
        agent_image: "quay.io/edge-infrastructure/assisted-installer-agent:latest".into(),
        installer_image: "quay.io/edge-infrastructure/assisted-installer:latest".into(),
        controller_image: "quay.io/edge-infrastructure/assisted-installer-controller:latest".into(),
        keys_namespace: "default".into(),
        keys_secret: "assisted-core-agent-token-keys".into(),
        monitor_interval_seconds: 1,
        host_disconnection_timeout_seconds: 180,
        tls_issuer: None,
        tls_issuer_kind: "Issuer".into(),
        tls_secret: "assisted-core-tls".into(),
    };
    let listeners = Listeners::bind(&args).await.expect("bind core listeners");
    let api_url = format!("http://{}", listeners.agent_api.local_addr().unwrap());
    let images_url = format!("http://{}", listeners.images.local_addr().unwrap());
    // The ISO URLs in InfraEnv status point at this image server.
    let mut args = args;
    args.agent_api_url = api_url.clone();
    args.images_url = images_url.clone();
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(server::run(
        client,
        scope,
        args,
        listeners,
        Default::default(),
        rx,
    ));
    Core {
        api_url,
        images_url,
        stop,
        task,
    }
}

impl Core {
    pub async fn kill(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// Logs of the core and the simulator, shown for failing tests (`RUST_LOG` filters them).
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn,tower=warn,hyper=warn".into()),
        )
        .with_test_writer()
        .try_init();
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

pub fn cluster_yaml(ns: &str, name: &str, masters: u32, workers: u32) -> String {
    let (api_vips, ingress_vips): (&[&str], &[&str]) = if masters > 1 {
        (&["192.168.111.5"], &["192.168.111.4"])
    } else {
        (&[], &[])
    };
    agent_sim::fixtures::ClusterManifests {
        namespace: ns,
        name,
        masters,
        workers,
        api_vips,
        ingress_vips,
        machine_cidr: MACHINE_CIDR,
        ssh_comment: "lab",
    }
    .yaml()
}

/// GETs a URL, returning the status and body.
pub async fn get(url: &str) -> (u16, Vec<u8>) {
    let (status, body) =
        agent_sim::call(&agent_sim::Trust::none(), http::Method::GET, url, "", None)
            .await
            .expect("GET");
    (status.as_u16(), body.to_vec())
}

/// Boots "the ISO": downloads it from the InfraEnv's URL, reads the kernel arguments (the
/// test ISO's defaults first, as coreos-installer would keep them) and the embedded ignition.
pub async fn boot_iso(iso_url: &str) -> (String, String, String) {
    let (status, iso) = get(iso_url).await;
    assert_eq!(
        status,
        200,
        "ISO download: {}",
        String::from_utf8_lossy(&iso)
    );
    let kargs = embedded_kernel_arguments(std::io::Cursor::new(&iso))
        .expect("read the ISO's kernel arguments")
        .expect("the ISO has karg areas");
    // A minimal ISO (the InfraEnv default) boots without the live ISO's label, as
    // coreos-installer's minimal ISOs do, and fetches its root filesystem by URL first.
    let minimal_defaults: Vec<&str> = TEST_ISO_DEFAULT_KARGS
        .split(' ')
        .filter(|k| !k.starts_with("coreos.liveiso="))
        .collect();
    let rootfs_url = kargs
        .split_ascii_whitespace()
        .find_map(|k| k.strip_prefix("coreos.live.rootfs_url="));
    match rootfs_url {
        None => assert!(
            kargs.starts_with(TEST_ISO_DEFAULT_KARGS),
            "the ISO boots with {kargs:?}, not its defaults first"
        ),
        Some(url) => {
            assert!(
                kargs.starts_with(&minimal_defaults.join(" ")),
                "the minimal ISO boots with {kargs:?}, not its defaults first"
            );
            let (status, rootfs) = get(url).await;
            assert!(
                status == 200 && !rootfs.is_empty(),
                "the minimal ISO's rootfs from {url}: HTTP {status}"
            );
        }
    }
    let ign = extract_embedded_ignition(std::io::Cursor::new(iso))
        .expect("read ISO")
        .expect("ISO carries an embedded ignition");
    let cfg = parse_discovery_ignition(&ign).expect("discovery ignition");
    (cfg.service_url, cfg.infra_env_id, cfg.token)
}

pub fn state(a: &AgentClusterInstall) -> String {
    a.status
        .as_ref()
        .and_then(|s| s.debug_info.state.clone())
        .unwrap_or_default()
}

pub struct Cluster {
    pub reply_ctx: Arc<RwLock<ReplyCtx>>,
    pub hosts: Vec<Host>,
    pub peers: Arc<RwLock<Vec<HostProfile>>>,
    pub service_url: String,
    pub infra_env_id: String,
    pub token: String,
}

pub async fn boot_hosts(
    client: &Client,
    ns: &str,
    name: &str,
    profiles: Vec<HostProfile>,
    vips: (&[&str], &[&str]),
) -> Cluster {
    let ies: Api<InfraEnv> = Api::namespaced(client.clone(), ns);
    let iso_url = wait_for(
        "InfraEnv isoDownloadURL",
        Duration::from_secs(60),
        || async { ies.get(name).await.ok()?.status?.iso_download_url },
    )
    .await;
    let (service_url, infra_env_id, token) = boot_iso(&iso_url).await;
    let peers = Arc::new(RwLock::new(profiles.clone()));
    // The lab's DNS: api and *.apps resolve to the VIPs of a multi-node cluster.
    let reply_ctx = Arc::new(RwLock::new(ReplyCtx {
        api_vips: vips.0.iter().map(|v| v.to_string()).collect(),
        ingress_vips: vips.1.iter().map(|v| v.to_string()).collect(),
        ..ReplyCtx::default()
    }));
    let hosts = profiles
        .into_iter()
        .map(|p| {
            let mut cfg = AgentConfig::new(&service_url, &infra_env_id, &token, p)
                .with_peers(peers.clone())
                .with_speed(0.0);
            cfg.reply_ctx = reply_ctx.clone();
            Host::spawn(cfg)
        })
        .collect();
    Cluster {
        reply_ctx,
        hosts,
        peers,
        service_url,
        infra_env_id,
        token,
    }
}

/// Which provider controllers a test runs in-process.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Run {
    ControlPlane,
    Bootstrap,
    Both,
}

/// Our provider controllers running in-process against a testbed, with their metrics.
pub struct Providers {
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    registry: manager::runtime::SharedRegistry,
}

pub fn start_providers(client: &Client, run: Run) -> Providers {
    start_providers_as(client, client, run)
}

/// As [`start_providers`], each provider with its own client (its own RBAC).
pub fn start_providers_as(controlplane: &Client, bootstrap: &Client, run: Run) -> Providers {
    let (stop, stopped) = watch::channel(false);
    let registry: manager::runtime::SharedRegistry = Arc::new(std::sync::Mutex::new(
        prometheus_client::registry::Registry::default(),
    ));
    let scope = manager::runtime::WatchScope::default;
    let mut tasks = Vec::new();
    if run != Run::Bootstrap {
        tasks.push(tokio::spawn(controlplane_provider::controller::run(
            controlplane.clone(),
            scope(),
            registry.clone(),
            stopped.clone(),
        )));
    }
    if run != Run::ControlPlane {
        tasks.push(tokio::spawn(bootstrap_provider::controller::run(
            bootstrap.clone(),
            scope(),
            registry.clone(),
            stopped,
        )));
    }
    Providers {
        stop,
        tasks,
        registry,
    }
}

impl Providers {
    /// `reconciles_total` per controller, from the controllers' own metrics.
    pub fn reconciles(&self) -> Vec<(String, u64)> {
        let mut text = String::new();
        if let Ok(registry) = self.registry.lock() {
            let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        }
        text.lines()
            .filter(|l| l.starts_with("reconciles_total"))
            .filter_map(|l| {
                let (labels, value) = l.rsplit_once(' ')?;
                Some((labels.to_string(), value.parse().ok()?))
            })
            .collect()
    }

    /// The controllers' metrics in the text format `/metrics` serves.
    pub fn metrics_text(&self) -> String {
        let mut text = String::new();
        if let Ok(registry) = self.registry.lock() {
            let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        }
        text
    }

    /// All controllers' reconciles together.
    pub fn total_reconciles(&self) -> u64 {
        self.reconciles().iter().map(|(_, n)| n).sum()
    }

    /// Prints the counters (the figures docs/benchmarks.md reports).
    pub fn print_reconciles(&self) {
        for (labels, n) in self.reconciles() {
            eprintln!("metric {labels} {n}");
        }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
    }
}

/// Sets a MachineDeployment's replicas, as `kubectl scale` would.
pub async fn scale_machine_deployment(client: &Client, ns: &str, name: &str, replicas: i32) {
    Api::<external_types::capi::MachineDeployment>::namespaced(client.clone(), ns)
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .expect("scale MachineDeployment");
}

/// The embedded core on free loopback ports with the lab backend and a test ISO in a temporary
/// directory (kept alive by the returned guard).
pub async fn start_test_core(client: &Client) -> (Core, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let iso = test_iso(dir.path());
    let core = start_core(
        client.clone(),
        &dir.path().join("data"),
        &iso,
        free_port(),
        free_port(),
        &LabFlags::default(),
    )
    .await;
    (core, dir)
}

/// As [`start_test_core`], with the published admin kubeconfig valid against `workload` (its
/// server and CA), so that what reads the installed cluster's API gets answers.
pub async fn start_test_core_against(
    client: &Client,
    workload: &Testbed,
) -> (Core, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let iso = test_iso(dir.path());
    let lab = LabFlags::for_testbed(workload, dir.path());
    let core = start_core(
        client.clone(),
        &dir.path().join("data"),
        &iso,
        free_port(),
        free_port(),
        &lab,
    )
    .await;
    (core, dir)
}

/// The Events (`events.k8s.io/v1`) of namespace `ns` about the object named `name`, as
/// `(type, reason, note)`: what `kubectl describe` shows.
pub async fn events_about(client: &Client, ns: &str, name: &str) -> Vec<(String, String, String)> {
    Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), ns)
        .list(&Default::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|o| o.name.as_deref()) == Some(name))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits for `n` Agents in the namespace and approves those not approved yet, as the bootstrap
/// provider would (tests that run without it).
#[allow(dead_code)]
pub async fn approve_all(client: &Client, ns: &str, n: usize) {
    let agents: Api<Agent> = Api::namespaced(client.clone(), ns);
    let list = wait_for(&format!("{n} Agents"), Duration::from_secs(60), || {
        let agents = agents.clone();
        async move {
            let l = agents.list(&Default::default()).await.ok()?;
            (l.items.len() >= n).then_some(l.items)
        }
    })
    .await;
    for a in list.iter().filter(|a| !a.spec.approved) {
        agents
            .patch(
                &kube::ResourceExt::name_any(a),
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"approved": true}})),
            )
            .await
            .expect("approve");
    }
}

/// A Cluster of `replicas` masters (with, when given, the API and Ingress VIPs) and a
/// MachineDeployment of `workers`, its OpenshiftAssistedControlPlane on `version` with the pull
/// secret `pull_secret`, over Metal3 templates.
pub fn cluster_with_vips(
    ns: &str,
    name: &str,
    version: &str,
    pull_secret: &str,
    workers: i32,
    replicas: i32,
    vips: Option<(&str, &str)>,
) -> String {
    let vips = vips.map_or(String::new(), |(api, ingress)| {
        format!("\n    apiVIPs: [{api}]\n    ingressVIPs: [{ingress}]")
    });
    format!(
        r#"---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {name}, namespace: {ns}}}
spec:
  clusterNetwork:
    pods: {{cidrBlocks: ["10.128.0.0/14"]}}
    services: {{cidrBlocks: ["172.30.0.0/16"]}}
  controlPlaneRef: {{apiGroup: controlplane.cluster.x-k8s.io, kind: OpenshiftAssistedControlPlane, name: {name}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: {name}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: {name}, namespace: {ns}}}
spec: {{}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: {name}, namespace: {ns}}}
spec:
  template:
    spec:
      image: {{url: "http://images.example.com/live.iso", checksum: "", diskFormat: live-iso}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: {name}, namespace: {ns}}}
spec:
  distributionVersion: "{version}"
  replicas: {replicas}
  config:
    baseDomain: lab.example.com
    pullSecretRef: {{name: {pull_secret}}}{vips}
  machineTemplate:
    infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: {name}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: {name}, namespace: {ns}}}
spec: {{template: {{spec: {{}}}}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: {name}-workers, namespace: {ns}, labels: {{cluster.x-k8s.io/cluster-name: {name}}}}}
spec:
  clusterName: {name}
  replicas: {workers}
  selector: {{matchLabels: {{cluster.x-k8s.io/deployment-name: {name}-workers}}}}
  template:
    metadata: {{labels: {{cluster.x-k8s.io/deployment-name: {name}-workers}}}}
    spec:
      clusterName: {name}
      bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfigTemplate, name: {name}}}}}
      infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: {name}}}
"#
    )
}

/// A testbed with kube-controller-manager, our CRDs, the Metal3 test CRDs and Cluster API.
pub async fn testbed_with_capi() -> Testbed {
    Testbed::builder()
        .controller_manager()
        .our_crds()
        .crds_from(repo_root().join("config/testing/metal3"))
        .capi()
        .start()
        .await
        .expect("testbed")
}

/// The day-2 worker's kubelet: bootstrap identity and node identity from the workload CA,
/// bound to the roles a cluster gives them.
pub async fn join_workload(workload: &Testbed, host: &HostProfile) -> agent_sim::KubeletReport {
    let bootstrapper = assisted_core::service::controllers::day2::NODE_BOOTSTRAPPER;
    workload
        .apply_yaml(&format!(
            r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: node-bootstrapper}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node-bootstrapper"}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: "{bootstrapper}"}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: nodes}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node"}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}}]
"#
        ))
        .await
        .expect("workload RBAC");
    let bootstrap = workload
        .client_as(bootstrapper, None)
        .await
        .expect("bootstrap client");
    let node = workload
        .client_as(
            &agent_sim::kubelet::node_user(&host.hostname),
            Some("system:nodes"),
        )
        .await
        .expect("node client");
    let ip = host
        .primary_ipv4()
        .map(|a| a.split('/').next().unwrap_or(a).to_string());
    let kubelet = agent_sim::Kubelet::new(&host.hostname, bootstrap, node)
        .with_addresses(ip.into_iter().collect());
    kubelet.join().await.expect("kubelet joined")
}

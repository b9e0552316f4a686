//! The lab: a simulated Metal3 site over the real Cluster API, CAPM3 and baremetal-operator,
//! where our two providers install an OpenShift cluster end to end. Everything is real except
//! the servers and the kubelets (see docs/lab.md).
//!
//! [`run`] starts the management testbed (etcd, kube-apiserver, kube-controller-manager, CAPI,
//! CAPM3, BMO with its fixture provisioner), a workload apiserver, our two managers as
//! processes and one [`site::Site`] per cluster; then installs the clusters day-1 (one, or
//! `--clusters N` concurrently, each in its own namespace), adds a day-2 worker to each and
//! removes it again, printing progress and, at the end, a timeline, the managers' peak memory
//! ([`memory`]) and the wall time.

pub mod managers;
pub mod manifests;
pub mod memory;
pub mod observe;
pub mod site;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_sim::{InstallerController, ReplyCtx};
use anyhow::{Context, Result, anyhow};
use assisted_core::api::hive::ClusterDeployment;
use assisted_core::service::auth::{Claims, Keys, PRIVATE_KEY_FIELD};
use assisted_core::service::images::{TestIsoContents, write_test_iso};
use assisted_core::service::kube::day2::NODE_BOOTSTRAPPER;
use external_types::capi::MachineDeployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use testbed::Testbed;
use tokio::task::JoinHandle;

use managers::{Managers, WorkloadAccess};
use manifests::ClusterSpec;
use memory::Memory;
use observe::{Snapshot, World, conditions};
use site::{Server, Site};

/// What to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Topology {
    /// Three masters and two workers, then a day-2 worker added and removed.
    #[value(name = "3+2")]
    ThreePlusTwo,
    /// Single-node OpenShift: one master, no workers, no day-2 step.
    Sno,
}

impl Topology {
    /// (masters, workers) installed day-1.
    pub fn day1(self) -> (u32, u32) {
        match self {
            Topology::ThreePlusTwo => (3, 2),
            Topology::Sno => (1, 0),
        }
    }

    /// Whether the scenario scales the workers up for a day-2 worker and back down.
    pub fn day2(self) -> bool {
        self.day1().1 > 0
    }

    fn hosts_day1(self) -> usize {
        let (m, w) = self.day1();
        (m + w) as usize
    }
}

pub struct Options {
    pub topology: Topology,
    /// How many clusters of `topology` to install concurrently, each in its own namespace
    /// with its own BareMetalHosts (at least 1).
    pub clusters: u32,
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
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Report {
    pub ok: bool,
    /// Milestones reached by every cluster, with the time since the lab started (the time
    /// the last cluster reached it).
    pub milestones: Vec<(Duration, String)>,
    /// The step that did not finish, on failure.
    pub stuck: Option<String>,
    /// Each cluster's own milestones.
    pub clusters: Vec<ClusterReport>,
    /// The managers' memory over the run.
    pub memory: Memory,
}

/// One cluster's milestones.
#[derive(Debug, Clone)]
pub struct ClusterReport {
    pub name: String,
    pub milestones: Vec<(Duration, String)>,
}

impl Report {
    /// When every cluster was installed (the `installed` milestone), since the lab started.
    pub fn all_installed(&self) -> Option<Duration> {
        self.milestones
            .iter()
            .find(|(_, m)| m == Step::Installed.title())
            .map(|(d, _)| *d)
    }
}

/// The scenario's steps, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    HostsAvailable,
    InfraEnvsReady,
    HostsProvisioned,
    AgentsApproved,
    InstallStarted,
    Installed,
    NodesRegistered,
    MachinesRunning,
    Day2Installed,
    ScaleDownDone,
}

impl Step {
    fn all(t: Topology) -> Vec<Step> {
        use Step::*;
        let mut s = vec![
            HostsAvailable,
            InfraEnvsReady,
            HostsProvisioned,
            AgentsApproved,
            InstallStarted,
            Installed,
            NodesRegistered,
            MachinesRunning,
        ];
        if t.day2() {
            s.extend([Day2Installed, ScaleDownDone]);
        }
        s
    }

    /// The milestone's name in the timeline.
    fn title(self) -> &'static str {
        match self {
            Step::HostsAvailable => "hosts available",
            Step::InfraEnvsReady => "InfraEnvs ready",
            Step::HostsProvisioned => "hosts provisioned",
            Step::AgentsApproved => "Agents approved",
            Step::InstallStarted => "install started",
            Step::Installed => "installed",
            Step::NodesRegistered => "Nodes registered",
            Step::MachinesRunning => "Machines Running",
            Step::Day2Installed => "day-2 worker installed",
            Step::ScaleDownDone => "scale-down done",
        }
    }

    /// What the step waits for, said so that a stuck run names it.
    fn waiting_for(self, t: Topology) -> String {
        let n = t.hosts_day1();
        let (_, w) = t.day1();
        match self {
            Step::HostsAvailable => {
                "every BareMetalHost `available` (baremetal-operator, fixture provisioner)".into()
            }
            Step::InfraEnvsReady => format!(
                "{} InfraEnv(s) with an ISO URL (bootstrap provider + assisted-core)",
                if w > 0 { 2 } else { 1 }
            ),
            Step::HostsProvisioned => {
                format!("{n} BareMetalHosts `provisioned` by CAPM3 and booted by the site")
            }
            Step::AgentsApproved => format!("{n} Agents approved by the bootstrap provider"),
            Step::InstallStarted => "the AgentClusterInstall `installing`".into(),
            Step::Installed => {
                "the AgentClusterInstall `installed`/`adding-hosts` (installer-controller done)"
                    .into()
            }
            Step::NodesRegistered => format!("{n} Nodes in the workload apiserver"),
            Step::MachinesRunning => {
                format!("{n} Machines in phase Running (CAPM3 sets providerID, CAPI the nodeRef)")
            }
            Step::Day2Installed => format!(
                "{} Machines Running and the day-2 Agent `added-to-existing-cluster`",
                n + 1
            ),
            Step::ScaleDownDone => format!(
                "back to {n} Machines, Agents and Nodes, the removed BareMetalHost `available`"
            ),
        }
    }

    fn done(self, t: Topology, s: &Snapshot, site: &Site, servers: usize) -> bool {
        let n = t.hosts_day1();
        let (_, w) = t.day1();
        let installed = ["installed", "adding-hosts"].contains(&s.aci_state());
        match self {
            Step::HostsAvailable => s.bmhs.len() == servers && s.bmhs_in("available") == servers,
            Step::InfraEnvsReady => s.infraenvs_ready() >= if w > 0 { 2 } else { 1 },
            Step::HostsProvisioned => s.bmhs_in("provisioned") >= n && site.powered_on() >= n,
            Step::AgentsApproved => s.agents_approved() >= n,
            Step::InstallStarted => {
                installed || ["installing", "finalizing"].contains(&s.aci_state())
            }
            Step::Installed => installed,
            Step::NodesRegistered => s.nodes_ready() >= n,
            Step::MachinesRunning => s.machines.len() == n && s.machines_running() == n,
            Step::Day2Installed => {
                s.machines.len() == n + 1
                    && s.machines_running() == n + 1
                    && s.agents.iter().any(|a| {
                        Snapshot::is_day2(a)
                            && Snapshot::agent_state(a) == "added-to-existing-cluster"
                    })
            }
            Step::ScaleDownDone => {
                s.machines.len() == n
                    && s.machines_running() == n
                    && s.agents.len() == n
                    && s.nodes.len() == n
                    && s.bmhs_in("provisioned") == n
                    && s.bmhs_in("available") == servers - n
            }
        }
    }
}

fn stamp(start: Instant) -> String {
    format!("[{:>6.1}s]", start.elapsed().as_secs_f64())
}

/// Everything the lab started; dropping it stops it all.
struct Lab {
    tb: Testbed,
    workload: Testbed,
    managers: Managers,
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

async fn start_lab(opts: &Options, start: Instant) -> Result<Lab> {
    println!(
        "{} starting the management cluster: etcd, kube-apiserver, kube-controller-manager, Cluster API, CAPM3, baremetal-operator",
        stamp(start)
    );
    let mut tb = Testbed::builder()
        .name("lab")
        .controller_manager()
        .our_crds()
        .metal3()
        .start()
        .await
        .context("starting the management testbed")?;
    println!("{} starting the workload apiserver", stamp(start));
    let mut workload = match Testbed::builder().name("lab-workload").start().await {
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
        println!(
            "{} starting our managers: {} (embedded assisted-core, lab install backend) and {}",
            stamp(start),
            managers::CONTROLPLANE,
            managers::BOOTSTRAP
        );
        managers::start(
            &opts.bin_dir,
            &opts.dir,
            &tb.kubeconfig,
            &iso,
            &WorkloadAccess {
                api_url: workload.server.clone(),
                ca_file,
                ca_key_file,
            },
        )
        .await
    }
    .await;
    match managers {
        Ok(managers) => Ok(Lab {
            tb,
            workload,
            managers,
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
    Api::<MachineDeployment>::namespaced(client.clone(), &spec.ns)
        .patch(
            &spec.workers_name(),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .with_context(|| format!("scaling {} to {replicas}", spec.workers_name()))?;
    Ok(())
}

/// The in-cluster installer-controller of the new cluster (post-reboot stages, operators).
/// It speaks for the whole cluster, so it holds a cluster-scoped token, as upstream's does;
/// the lab mints it with the core's signing key.
async fn installer_controller(
    client: &Client,
    workload: &Client,
    agent_api_url: &str,
    spec: &ClusterSpec,
    timeout: Duration,
) -> Result<JoinHandle<Result<()>>> {
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), &spec.ns)
        .get(&spec.control_plane_name())
        .await
        .context("reading the ClusterDeployment")?;
    let cluster_id = cd.uid().context("the ClusterDeployment has no UID")?;
    let keys = Api::<Secret>::namespaced(client.clone(), "default")
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
    let controller = InstallerController::new(agent_api_url, cluster_id, &token)
        .with_speed(0.0)
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

/// One cluster of the run: its site, what was last seen and how far its scenario got.
struct ClusterRun {
    spec: ClusterSpec,
    servers: Vec<Server>,
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
}

impl ClusterRun {
    fn new(spec: ClusterSpec, client: &Client, workload: &Client) -> Result<ClusterRun> {
        let t = spec.topology;
        let (masters, workers) = t.day1();
        // One spare worker for the day-2 step.
        let spare = u32::from(t.day2());
        let servers = site::servers(&spec, masters, workers + spare)?;
        let reply_ctx = if masters > 1 {
            ReplyCtx {
                api_vips: vec![spec.api_vip.clone()],
                ingress_vips: vec![spec.ingress_vip.clone()],
                ..ReplyCtx::default()
            }
        } else {
            ReplyCtx::default()
        };
        let site = Site::new(
            client.clone(),
            workload.clone(),
            &spec.ns,
            &servers,
            reply_ctx,
        );
        Ok(ClusterRun {
            spec,
            servers,
            site,
            snap: Snapshot::default(),
            next: 0,
            reached: Vec::new(),
            controller: None,
            controller_started: false,
            last_line: String::new(),
            last_print: None,
        })
    }

    fn report(&self, steps: &[Step]) -> ClusterReport {
        ClusterReport {
            name: self.spec.name.clone(),
            milestones: self
                .reached
                .iter()
                .zip(steps)
                .map(|(d, s)| (*d, s.title().to_string()))
                .collect(),
        }
    }
}

fn topology_name(t: Topology) -> &'static str {
    match t {
        Topology::ThreePlusTwo => "3+2",
        Topology::Sno => "sno",
    }
}

/// Runs the scenario; `Ok` with `ok: false` when it did not finish (after printing why).
pub async fn run(opts: &Options) -> Result<Report> {
    let start = Instant::now();
    let t = opts.topology;
    let n = opts.clusters.max(1);
    if n > 100 {
        anyhow::bail!("--clusters: at most 100");
    }
    let mut lab = start_lab(opts, start).await?;
    println!(
        "{} lab directory {} (management: {}, workload: {})",
        stamp(start),
        opts.dir.display(),
        lab.tb.dir.display(),
        lab.workload.dir.display()
    );
    let mut memory = Memory::new(&[
        "controlplane-provider (with the embedded assisted-core)",
        managers::BOOTSTRAP,
    ]);
    memory.sample(&lab.managers.pids());
    let (masters, workers) = t.day1();
    let client = lab.tb.client.clone();
    let mut runs = Vec::new();
    for c in 0..n {
        let r = ClusterRun::new(ClusterSpec::new(t, c, n), &client, &lab.workload.client)?;
        lab.tb
            .apply_yaml(&site::site_yaml(&r.spec.ns, &r.servers)?)
            .await
            .with_context(|| format!("applying the BareMetalHosts of {}", r.spec.name))?;
        runs.push(r);
    }
    if n == 1 {
        let servers = &runs[0].servers;
        println!(
            "{} site: {} BareMetalHosts registered ({})",
            stamp(start),
            servers.len(),
            servers
                .iter()
                .map(|s| format!("{} {}", s.name, s.role))
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else {
        println!(
            "{} site: {n} clusters × {} BareMetalHosts registered (clusters {}..{} in namespaces {}..{})",
            stamp(start),
            runs[0].servers.len(),
            runs[0].spec.name,
            runs[runs.len() - 1].spec.name,
            runs[0].spec.ns,
            runs[runs.len() - 1].spec.ns,
        );
    }
    let prefix = |spec: &ClusterSpec| {
        if n > 1 {
            format!("{}: ", spec.name)
        } else {
            String::new()
        }
    };
    // One progress line per cluster, at most this often.
    let every = if n > 1 {
        Duration::from_secs(5)
    } else {
        Duration::from_secs(2)
    };

    let steps = Step::all(t);
    let mut milestones: Vec<(Duration, String)> = Vec::new();
    let deadline = start + opts.timeout;
    let failure: Option<String> = 'run: loop {
        if let Err(e) = lab.managers.check_running() {
            break Some(format!("a manager exited: {e:#}"));
        }
        memory.sample(&lab.managers.pids());
        let world = match World::take(&client, &lab.workload.client).await {
            Ok(w) => Some(w),
            // A slow apiserver is not a failure; the deadline catches a dead one.
            Err(e) => {
                tracing::warn!("reading the clusters: {e:#}");
                None
            }
        };
        for r in runs.iter_mut() {
            let pre = prefix(&r.spec);
            let events = match &world {
                Some(w) => r.site.tick_with(&lab.workload, &w.bmhs).await,
                None => r.site.tick(&lab.workload).await,
            };
            match events {
                Ok(events) => events
                    .iter()
                    .for_each(|e| println!("{} {pre}{e}", stamp(start))),
                Err(e) => break 'run Some(format!("{pre}the simulated site failed: {e:#}")),
            }
            if let Some(w) = &world {
                let s = w.cluster(&r.spec.ns, &r.spec.control_plane_name());
                observe::changes(&r.snap, &s)
                    .iter()
                    .for_each(|c| println!("{} {pre}{c}", stamp(start)));
                r.snap = s;
            }
            // The installer-controller runs in the new cluster once its masters are up.
            if !r.controller_started
                && ["installing", "finalizing"].contains(&r.snap.aci_state())
                && r.site.powered_on() >= t.hosts_day1()
                && r.site.all_rebooted()
            {
                let left = deadline.saturating_duration_since(Instant::now());
                match installer_controller(
                    &client,
                    &lab.workload.client,
                    &lab.managers.agent_api_url,
                    &r.spec,
                    left,
                )
                .await
                {
                    Ok(h) => {
                        println!(
                            "{} {pre}site: the cluster's installer-controller started",
                            stamp(start)
                        );
                        r.controller = Some(h);
                        r.controller_started = true;
                    }
                    Err(e) => {
                        break 'run Some(format!("{pre}starting the installer-controller: {e:#}"));
                    }
                }
            }
            if let Some(h) = r.controller.take_if(|h| h.is_finished()) {
                match h.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => break 'run Some(format!("{pre}{e:#}")),
                    Err(e) => break 'run Some(format!("{pre}installer-controller panicked: {e}")),
                }
            }
            while let Some(&step) = steps.get(r.next) {
                if !step.done(t, &r.snap, &r.site, r.servers.len()) {
                    break;
                }
                r.reached.push(start.elapsed());
                r.next += 1;
                if n == 1 {
                    println!("{} == {}", stamp(start), step.title());
                } else if r.next == steps.len() || step == Step::Installed {
                    println!("{} {pre}== {}", stamp(start), step.title());
                }
                let cluster = &r.spec.name;
                let action = match step {
                    Step::HostsAvailable => lab
                        .tb
                        .apply_yaml(&manifests::cluster_yaml(&r.spec))
                        .await
                        .map(|_| {
                            println!(
                                "{} applied cluster {cluster}: Cluster, Metal3Cluster, OpenshiftAssistedControlPlane (replicas: {masters}), Metal3MachineTemplates{}",
                                stamp(start),
                                if workers > 0 {
                                    format!(", MachineDeployment (replicas: {workers}), OpenshiftAssistedConfigTemplate")
                                } else {
                                    String::new()
                                }
                            )
                        })
                        .with_context(|| format!("applying cluster {cluster}")),
                    Step::MachinesRunning if t.day2() => {
                        println!(
                            "{} scaling {} to {} for a day-2 worker",
                            stamp(start),
                            r.spec.workers_name(),
                            workers + 1
                        );
                        scale_workers(&client, &r.spec, workers + 1).await
                    }
                    Step::Day2Installed => {
                        println!(
                            "{} scaling {} back to {workers}",
                            stamp(start),
                            r.spec.workers_name()
                        );
                        scale_workers(&client, &r.spec, workers).await
                    }
                    _ => Ok(()),
                };
                if let Err(e) = action {
                    break 'run Some(format!("{e:#}"));
                }
            }
            if r.next < steps.len() {
                let line = r.snap.summary(&r.spec.name);
                if line != r.last_line && r.last_print.is_none_or(|p| p.elapsed() >= every) {
                    println!("{} {line}", stamp(start));
                    r.last_line = line;
                    r.last_print = Some(Instant::now());
                }
            }
        }
        // A milestone is reached when every cluster has reached it.
        while milestones.len() < steps.len() && runs.iter().all(|r| r.next > milestones.len()) {
            let i = milestones.len();
            let at = runs.iter().map(|r| r.reached[i]).max().unwrap_or_default();
            let title = steps[i].title();
            if n > 1 {
                println!("{} == {title} (all {n} clusters)", stamp(start));
            }
            milestones.push((at, title.to_string()));
        }
        if milestones.len() == steps.len() {
            break None;
        }
        if Instant::now() > deadline {
            break Some(format!("timed out after {:?}", opts.timeout));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = tokio::signal::ctrl_c() => break Some("interrupted (Ctrl-C)".into()),
        }
    };
    memory.sample(&lab.managers.pids());

    println!();
    if n == 1 {
        println!(
            "Timeline (cluster {}, topology {}):",
            runs[0].spec.name,
            topology_name(t)
        );
    } else {
        println!(
            "Timeline ({n} clusters {}..{}, topology {}; a milestone is reached when every cluster has reached it):",
            runs[0].spec.name,
            runs[runs.len() - 1].spec.name,
            topology_name(t)
        );
    }
    for (at, what) in &milestones {
        println!("  [{:>6.1}s] {what}", at.as_secs_f64());
    }
    if n > 1 {
        println!("Per cluster (installed / last milestone):");
        for r in &runs {
            let installed = steps
                .iter()
                .position(|s| *s == Step::Installed)
                .and_then(|i| r.reached.get(i))
                .map_or("-".to_string(), |d| format!("{:.1}s", d.as_secs_f64()));
            let last = match (r.reached.last(), steps.get(r.next)) {
                (_, Some(s)) => format!("stuck at `{}`", s.title()),
                (Some(d), None) => {
                    format!("{} {:.1}s", steps[steps.len() - 1].title(), d.as_secs_f64())
                }
                (None, None) => String::new(),
            };
            println!("  {:<10} installed {installed:>7} / {last}", r.spec.name);
        }
    }
    println!();
    print!("{}", memory.report());
    let first_applied = runs.iter().filter_map(|r| r.reached.first()).min().copied();
    let report = Report {
        ok: failure.is_none(),
        milestones,
        stuck: None,
        clusters: runs.iter().map(|r| r.report(&steps)).collect(),
        memory,
    };
    match (report.all_installed(), first_applied) {
        (Some(at), Some(applied)) => println!(
            "Wall time: {} installed at {:.1}s since the lab started ({:.1}s after the first cluster was applied)",
            if n == 1 {
                format!("cluster {}", runs[0].spec.name)
            } else {
                format!("all {n} clusters")
            },
            at.as_secs_f64(),
            (at - applied).as_secs_f64()
        ),
        _ => println!("Wall time: not every cluster was installed"),
    }
    let unfinished: Vec<&ClusterRun> = runs.iter().filter(|r| r.next < steps.len()).collect();
    let stuck = failure.as_ref().map(|f| match unfinished.first() {
        Some(r) => format!("{}{}: {f}", prefix(&r.spec), steps[r.next].title()),
        None => f.clone(),
    });
    let report = Report { stuck, ..report };
    if let Some(why) = &failure {
        println!();
        println!("FAILED: {why}");
        for (i, r) in unfinished.iter().enumerate() {
            let step = steps[r.next];
            println!(
                "{}stuck at step `{}`: waiting for {}",
                prefix(&r.spec),
                step.title(),
                step.waiting_for(t)
            );
            // The objects of the first stuck cluster; the others' progress lines.
            if i == 0 {
                diagnose(step, &r.snap, &r.site);
            }
            println!("last progress: {}", r.snap.summary(&r.spec.name));
        }
        println!("log files to read:");
        for l in lab.logs(&opts.dir) {
            println!("  {}", l.display());
        }
    } else {
        println!(
            "OK: {} installed{} in {:.1}s",
            if n == 1 {
                format!("cluster {}", runs[0].spec.name)
            } else {
                format!("{n} clusters")
            },
            if t.day2() {
                ", scaled up by a day-2 worker and back down"
            } else {
                ""
            },
            start.elapsed().as_secs_f64()
        );
    }
    if !report.ok || opts.keep || opts.keep_dirs {
        lab.tb.keep_dir();
        lab.workload.keep_dir();
    }
    if opts.keep {
        keep_running(&mut lab, &mut runs).await;
    }
    Ok(report)
}

/// The objects the stuck step depends on, with their last conditions.
fn diagnose(step: Step, s: &Snapshot, site: &Site) {
    let show = |kind: &str, name: String, extra: String, conds: Vec<String>| {
        println!("  {kind} {name}{extra}");
        for c in conds {
            println!("      {c}");
        }
    };
    let bmhs = || {
        for b in &s.bmhs {
            let st = b.status.as_ref();
            let err = st.map(|s| s.error_message.clone()).unwrap_or_default();
            show(
                "BareMetalHost",
                b.name_any(),
                format!(
                    ": {}{}",
                    Snapshot::bmh_state(b),
                    if err.is_empty() {
                        String::new()
                    } else {
                        format!(" (error: {err})")
                    }
                ),
                Vec::new(),
            );
        }
    };
    let machines = || {
        for m in &s.machines {
            let phase = serde_json::to_value(m.status.as_ref().map(|s| &s.phase))
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            show("Machine", m.name_any(), format!(": {phase}"), conditions(m));
        }
    };
    let agents = || {
        for a in &s.agents {
            show(
                "Agent",
                a.name_any(),
                format!(
                    ": {} (approved {}, hostname {})",
                    Snapshot::agent_state(a),
                    a.spec.approved,
                    a.spec.hostname.as_deref().unwrap_or("-")
                ),
                conditions(a),
            );
        }
    };
    let aci = || {
        if let Some(a) = &s.aci {
            show(
                "AgentClusterInstall",
                a.name_any(),
                format!(": {}", s.aci_state()),
                conditions(a),
            );
        }
    };
    let hosts = || {
        for h in site.host_states() {
            println!("  simulated host {h}");
        }
    };
    match step {
        Step::HostsAvailable => bmhs(),
        Step::InfraEnvsReady => {
            for i in &s.infraenvs {
                show("InfraEnv", i.name_any(), String::new(), conditions(i));
            }
        }
        Step::HostsProvisioned => {
            bmhs();
            machines();
        }
        Step::AgentsApproved => {
            agents();
            hosts();
        }
        Step::InstallStarted | Step::Installed => {
            aci();
            agents();
            hosts();
        }
        Step::NodesRegistered => hosts(),
        Step::MachinesRunning | Step::Day2Installed | Step::ScaleDownDone => {
            machines();
            agents();
            bmhs();
            hosts();
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
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = tokio::signal::ctrl_c() => break,
        }
        for r in runs.iter_mut() {
            if let Err(e) = r.site.tick(&lab.workload).await {
                tracing::warn!("site of {}: {e:#}", r.spec.name);
            }
        }
    }
}

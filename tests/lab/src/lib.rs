//! The lab: a simulated Metal3 site over the real Cluster API, CAPM3 and baremetal-operator,
//! where our two providers install an OpenShift cluster end to end. Everything is real except
//! the servers and the kubelets (see docs/lab.md).
//!
//! [`run`] starts the management testbed (etcd, kube-apiserver, kube-controller-manager, CAPI,
//! CAPM3, BMO with its fixture provisioner), a workload apiserver, our two managers as
//! processes and the [`site::Site`]; then installs the cluster day-1, adds a day-2 worker and
//! removes it again, printing progress and, at the end, a timeline.

pub mod managers;
pub mod manifests;
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
use observe::{Snapshot, conditions};
use site::Site;

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
    /// Milestones reached, with the time since the scenario started.
    pub milestones: Vec<(Duration, String)>,
    /// The step that did not finish, on failure.
    pub stuck: Option<String>,
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

async fn scale_workers(client: &Client, t: Topology, replicas: u32) -> Result<()> {
    Api::<MachineDeployment>::namespaced(client.clone(), manifests::NS)
        .patch(
            &manifests::workers_name(t),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .with_context(|| format!("scaling {} to {replicas}", manifests::workers_name(t)))?;
    Ok(())
}

/// The in-cluster installer-controller of the new cluster (post-reboot stages, operators).
/// It speaks for the whole cluster, so it holds a cluster-scoped token, as upstream's does;
/// the lab mints it with the core's signing key.
async fn installer_controller(
    client: &Client,
    agent_api_url: &str,
    t: Topology,
    timeout: Duration,
) -> Result<JoinHandle<Result<()>>> {
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), manifests::NS)
        .get(&manifests::control_plane_name(t))
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
        .with_timeout(timeout);
    Ok(tokio::spawn(async move {
        controller
            .run()
            .await
            .map(|_| ())
            .map_err(|e| anyhow!("installer-controller: {e}"))
    }))
}

/// Runs the scenario; `Ok` with `ok: false` when it did not finish (after printing why).
pub async fn run(opts: &Options) -> Result<Report> {
    let start = Instant::now();
    let t = opts.topology;
    let cluster = manifests::cluster_name(t);
    let mut lab = start_lab(opts, start).await?;
    println!(
        "{} lab directory {} (management: {}, workload: {})",
        stamp(start),
        opts.dir.display(),
        lab.tb.dir.display(),
        lab.workload.dir.display()
    );
    let (masters, workers) = t.day1();
    // One spare worker for the day-2 step.
    let spare = u32::from(t.day2());
    let servers = site::servers(masters, workers + spare, t == Topology::Sno)?;
    let reply_ctx = if masters > 1 {
        ReplyCtx {
            api_vips: vec![manifests::API_VIP.into()],
            ingress_vips: vec![manifests::INGRESS_VIP.into()],
            ..ReplyCtx::default()
        }
    } else {
        ReplyCtx::default()
    };
    let client = lab.tb.client.clone();
    let mut site = Site::new(
        client.clone(),
        lab.workload.client.clone(),
        &servers,
        reply_ctx,
    );
    lab.tb
        .apply_yaml(&site::site_yaml(&servers)?)
        .await
        .context("applying the site's BareMetalHosts")?;
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

    let steps = Step::all(t);
    let mut next = 0;
    let mut milestones = Vec::new();
    let mut controller: Option<JoinHandle<Result<()>>> = None;
    let mut controller_started = false;
    let mut last_line = String::new();
    let mut last_print: Option<Instant> = None;
    let deadline = start + opts.timeout;
    let mut snap = Snapshot::default();
    let failure: Option<String> = loop {
        if let Err(e) = lab.managers.check_running() {
            break Some(format!("a manager exited: {e:#}"));
        }
        match site.tick(&lab.workload).await {
            Ok(events) => events.iter().for_each(|e| println!("{} {e}", stamp(start))),
            Err(e) => break Some(format!("the simulated site failed: {e:#}")),
        }
        match Snapshot::take(
            &client,
            &lab.workload.client,
            &manifests::control_plane_name(t),
        )
        .await
        {
            Ok(s) => {
                observe::changes(&snap, &s)
                    .iter()
                    .for_each(|c| println!("{} {c}", stamp(start)));
                snap = s;
            }
            // A slow apiserver is not a failure; the deadline catches a dead one.
            Err(e) => tracing::warn!("reading the clusters: {e:#}"),
        }
        // The installer-controller runs in the new cluster once its masters are up.
        if !controller_started
            && ["installing", "finalizing"].contains(&snap.aci_state())
            && site.powered_on() >= t.hosts_day1()
            && site.all_rebooted()
        {
            let left = deadline.saturating_duration_since(Instant::now());
            match installer_controller(&client, &lab.managers.agent_api_url, t, left).await {
                Ok(h) => {
                    println!(
                        "{} site: the cluster's installer-controller started",
                        stamp(start)
                    );
                    controller = Some(h);
                    controller_started = true;
                }
                Err(e) => break Some(format!("starting the installer-controller: {e:#}")),
            }
        }
        if let Some(h) = controller.take_if(|h| h.is_finished()) {
            match h.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => break Some(format!("{e:#}")),
                Err(e) => break Some(format!("installer-controller panicked: {e}")),
            }
        }
        let mut action_failed = None;
        while let Some(&step) = steps.get(next) {
            if !step.done(t, &snap, &site, servers.len()) {
                break;
            }
            milestones.push((start.elapsed(), step.title().to_string()));
            println!("{} == {}", stamp(start), step.title());
            next += 1;
            let action = match step {
                Step::HostsAvailable => lab
                    .tb
                    .apply_yaml(&manifests::cluster_yaml(t))
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
                    .context("applying the cluster"),
                Step::MachinesRunning if t.day2() => {
                    println!(
                        "{} scaling {} to {} for a day-2 worker",
                        stamp(start),
                        manifests::workers_name(t),
                        workers + 1
                    );
                    scale_workers(&client, t, workers + 1).await
                }
                Step::Day2Installed => {
                    println!(
                        "{} scaling {} back to {workers}",
                        stamp(start),
                        manifests::workers_name(t)
                    );
                    scale_workers(&client, t, workers).await
                }
                _ => Ok(()),
            };
            if let Err(e) = action {
                action_failed = Some(format!("{e:#}"));
                break;
            }
        }
        if action_failed.is_some() {
            break action_failed;
        }
        if next == steps.len() {
            break None;
        }
        let line = snap.summary(cluster);
        if line != last_line && last_print.is_none_or(|p| p.elapsed() >= Duration::from_secs(2)) {
            println!("{} {line}", stamp(start));
            last_line = line;
            last_print = Some(Instant::now());
        }
        if Instant::now() > deadline {
            break Some(format!("timed out after {:?}", opts.timeout));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = tokio::signal::ctrl_c() => break Some("interrupted (Ctrl-C)".into()),
        }
    };

    println!();
    println!(
        "Timeline (cluster {cluster}, topology {}):",
        match t {
            Topology::ThreePlusTwo => "3+2",
            Topology::Sno => "sno",
        }
    );
    for (at, what) in &milestones {
        println!("  [{:>6.1}s] {what}", at.as_secs_f64());
    }
    let stuck = steps.get(next).copied();
    let report = Report {
        ok: failure.is_none(),
        milestones,
        stuck: failure.as_ref().map(|f| match stuck {
            Some(s) => format!("{}: {f}", s.title()),
            None => f.clone(),
        }),
    };
    if let Some(why) = &failure {
        println!();
        println!("FAILED: {why}");
        if let Some(step) = stuck {
            println!(
                "stuck at step `{}`: waiting for {}",
                step.title(),
                step.waiting_for(t)
            );
            diagnose(step, &snap, &site);
        }
        println!("last progress: {}", snap.summary(cluster));
        println!("log files to read:");
        for l in lab.logs(&opts.dir) {
            println!("  {}", l.display());
        }
    } else {
        println!(
            "OK: cluster {cluster} installed{} in {:.1}s",
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
        keep_running(&mut lab, &mut site, cluster).await;
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
async fn keep_running(lab: &mut Lab, site: &mut Site, cluster: &str) {
    let clusterctl = lab.tb.cache.bin("clusterctl");
    println!();
    println!("The lab keeps running (Ctrl-C stops it). Try:");
    println!("  export KUBECONFIG={}", lab.tb.kubeconfig.display());
    println!(
        "  kubectl get baremetalhosts,machines,agents -n {}",
        manifests::NS
    );
    println!(
        "  {} describe cluster {cluster} -n {}",
        clusterctl.display(),
        manifests::NS
    );
    println!(
        "  kubectl --kubeconfig {} get nodes   # the workload cluster",
        lab.workload.kubeconfig.display()
    );
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = tokio::signal::ctrl_c() => break,
        }
        if let Err(e) = site.tick(&lab.workload).await {
            tracing::warn!("site: {e:#}");
        }
    }
}

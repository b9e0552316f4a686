//! Our two managers: the control-plane manager with the embedded assisted-core (lab install
//! backend) and the bootstrap manager. Either as processes, the binaries next to the lab's own
//! ([`start`]), or as the pods `clusterctl init` installed on the management testbed's node,
//! from the images `make images` built ([`start_pods`], the `pods` module).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use testbed::process::{Process, free_port, http_get, http_get_at, wait_until};

pub use crate::pods::start as start_pods;

pub const CONTROLPLANE: &str = "controlplane-provider";
pub const BOOTSTRAP: &str = "bootstrap-provider";

/// Where the workload cluster is and which CA makes the published admin kubeconfig valid there.
pub struct WorkloadAccess {
    pub api_url: String,
    pub ca_file: PathBuf,
    pub ca_key_file: PathBuf,
}

/// How a manager was started, to start it again the same way (`--chaos`): same binary, flags,
/// ports and log file (appended to).
pub(crate) struct Launch {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    envs: Vec<(&'static str, &'static str)>,
    log: PathBuf,
    health_port: u16,
}

/// How the managers run.
pub(crate) enum Run {
    Processes {
        procs: Vec<Process>,
        launches: Vec<Launch>,
    },
    Pods(crate::pods::Pods),
}

pub struct Managers {
    pub(crate) run: Run,
    /// Killed and not started again yet (`--chaos`).
    pub(crate) down: Vec<bool>,
    /// Times each was started again.
    pub restarts: Vec<u32>,
    /// Each manager, in the order of every per-manager list here (`metrics`, `down`, ...):
    /// the control-plane manager, then the bootstrap manager, of each shard in turn.
    pub members: Vec<Member>,
    /// Each shard's agent REST API (its control-plane manager's embedded core) as hosts reach
    /// it; one without shards.
    pub agent_api_urls: Vec<String>,
    /// The CA the site's operator trusts the core's https listeners with (the BMCs, the
    /// installer-controller, the lab's own checks); hosts get theirs from their ignition.
    pub trust: agent_sim::Trust,
    /// The conversion and admission webhooks the apiserver calls: (manager, loopback port,
    /// certificate directory), shard 0's.
    pub webhooks: Vec<(&'static str, u16, PathBuf)>,
    /// Each manager's `/metrics` address, in the order of `members`.
    pub metrics: Vec<SocketAddr>,
    /// The namespace of the core's agent token keys Secret.
    pub keys_namespace: String,
}

/// One of our manager processes (or Deployments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// As the output names it: the binary, with `-shard-<i>` when sharded.
    pub name: String,
    /// [`CONTROLPLANE`] or [`BOOTSTRAP`].
    pub binary: &'static str,
    /// Its shard (0 without shards).
    pub shard: u32,
}

impl Member {
    /// The two managers without shards, as the pods run them.
    pub fn unsharded() -> Vec<Member> {
        [CONTROLPLANE, BOOTSTRAP]
            .into_iter()
            .map(|binary| Member {
                name: binary.into(),
                binary,
                shard: 0,
            })
            .collect()
    }

    /// How the memory table names it: the control plane with its core.
    pub fn memory_name(&self) -> String {
        if self.binary == CONTROLPLANE {
            format!("{} (with the embedded assisted-core)", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// The CRDs each manager converts (CAPOA's older versions).
pub fn converted_crds(manager: &str) -> &'static [&'static str] {
    match manager {
        CONTROLPLANE => &["openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io"],
        BOOTSTRAP => &[
            "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io",
            "openshiftassistedconfigtemplates.bootstrap.cluster.x-k8s.io",
        ],
        _ => &[],
    }
}

/// The ValidatingWebhookConfiguration each manager's release installs.
pub fn validating_webhook_configuration(manager: &str) -> Option<&'static str> {
    match manager {
        CONTROLPLANE => Some("capoa-controlplane-validating-webhook-configuration"),
        BOOTSTRAP => Some("capoa-bootstrap-validating-webhook-configuration"),
        _ => None,
    }
}

/// Gives each manager's webhook server a certificate of the management testbed's CA and points
/// the CRDs it converts and the admission webhooks it serves at it: what the webhook Services and
/// cert-manager do in a cluster.
pub async fn point_webhooks(tb: &testbed::Testbed, managers: &Managers) -> Result<()> {
    for (name, port, cert_dir) in &managers.webhooks {
        tb.write_serving_cert(name, cert_dir)?;
        for crd in converted_crds(name) {
            tb.point_conversion_webhook(crd, *port).await?;
        }
        if let Some(config) = validating_webhook_configuration(name) {
            tb.point_validating_webhooks(config, *port).await?;
        }
        if *name == CONTROLPLANE {
            tb.point_mutating_webhooks("capoa-controlplane-mutating-webhook-configuration", *port)
                .await?;
        }
    }
    Ok(())
}

impl Managers {
    pub fn logs(&self) -> Vec<PathBuf> {
        match &self.run {
            Run::Processes { procs, .. } => procs.iter().map(|p| p.log.clone()).collect(),
            Run::Pods(pods) => pods.logs(),
        }
    }

    /// The managers' process ids, control plane first (a pod's manager that is not running is
    /// left out).
    pub fn pids(&self) -> Vec<u32> {
        match &self.run {
            Run::Processes { procs, .. } => procs.iter().map(|p| p.id()).collect(),
            Run::Pods(pods) => pods.pids().into_iter().flatten().collect(),
        }
    }

    /// The lines of the managers' logs that say `forbidden` (an RBAC refusal), at most 5.
    pub fn forbidden(&self) -> Vec<String> {
        self.logs()
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .flat_map(|text| {
                text.lines()
                    .filter(|l| l.to_ascii_lowercase().contains("forbidden"))
                    .map(|l| l.chars().take(300).collect::<String>())
                    .collect::<Vec<_>>()
            })
            .take(5)
            .collect()
    }

    /// Deletes manager `i`'s leader pod (`--kill-leaders`); the manager counts as down until
    /// [`Managers::took_over`]. Returns the pod's name.
    pub async fn kill_leader(&mut self, client: &kube::Client, i: usize) -> Result<String> {
        let Run::Pods(pods) = &self.run else {
            bail!("the managers run as processes: there is no pod to delete");
        };
        let name = crate::pods::delete_leader(client, pods, i).await?;
        self.down[i] = true;
        Ok(name)
    }

    /// Whether manager `i` leads again from a pod other than `killed` and is ready (then it
    /// counts as up, and the lab follows the new leader).
    pub async fn took_over(
        &mut self,
        client: &kube::Client,
        i: usize,
        killed: &str,
    ) -> Result<bool> {
        let Run::Pods(pods) = &mut self.run else {
            return Ok(true);
        };
        if !pods.took_over(client, i, killed).await? {
            return Ok(false);
        }
        self.down[i] = false;
        self.restarts[i] += 1;
        if let Some((_, ip)) = pods.leader(i) {
            self.metrics[i] = SocketAddr::new(*ip, self.metrics[i].port());
        }
        Ok(true)
    }

    /// Manager `i`'s leader pod (with the managers as pods).
    pub fn leader_pod(&self, i: usize) -> Option<String> {
        match &self.run {
            Run::Pods(pods) => pods.leader(i).map(|(name, _)| name.clone()),
            Run::Processes { .. } => None,
        }
    }

    /// True when the managers run as pods.
    pub fn as_pods(&self) -> bool {
        matches!(self.run, Run::Pods(_))
    }

    /// Every manager's `reconciles_total` by controller, summed (a manager that does not
    /// answer is left out).
    pub fn reconciles(&self) -> std::collections::BTreeMap<String, f64> {
        let mut out = std::collections::BTreeMap::new();
        for addr in &self.metrics {
            if let Ok((200, text)) = http_get_at(*addr, "/metrics") {
                for (k, v) in crate::apimetrics::reconciles(&text) {
                    *out.entry(k).or_default() += v;
                }
            }
        }
        out
    }

    /// Each manager's own count of its API requests (`capoa_api_requests_total`), in the
    /// order of `members` (a manager that does not answer is left out).
    pub fn own_requests(&self) -> Vec<(String, crate::apimetrics::ByRequest)> {
        self.metrics_texts()
            .into_iter()
            .zip(self.names())
            .filter_map(|(text, name)| {
                Some((name.to_string(), crate::apimetrics::own_requests(&text?)))
            })
            .collect()
    }

    /// Each manager's `/metrics` now, in the order of `members` (`None`: it did not answer).
    pub fn metrics_texts(&self) -> Vec<Option<String>> {
        self.metrics
            .iter()
            .map(|addr| match http_get_at(*addr, "/metrics") {
                Ok((200, text)) => Some(text),
                _ => None,
            })
            .collect()
    }

    /// Where shard `shard`'s core serves the agent REST API (the first shard's for a shard
    /// that does not exist).
    pub fn agent_api_url(&self, shard: u32) -> &str {
        self.agent_api_urls
            .get(shard as usize)
            .or(self.agent_api_urls.first())
            .map_or("", String::as_str)
    }

    /// Fails if a manager has exited, quoting the end of its log (one the lab killed and has
    /// not started again is not checked).
    pub fn check_running(&mut self) -> Result<()> {
        match &mut self.run {
            Run::Processes { procs, .. } => procs
                .iter_mut()
                .zip(&self.down)
                .filter(|(_, down)| !**down)
                .try_for_each(|(p, _)| p.check_running()),
            Run::Pods(pods) => pods.check_running(&self.down),
        }
    }

    /// The managers' names, in the order of `members`.
    pub fn names(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.name.as_str()).collect()
    }

    pub fn is_down(&self, i: usize) -> bool {
        self.down.get(i).copied().unwrap_or(false)
    }

    /// SIGKILLs manager `i` (no graceful shutdown) and reaps it (`--chaos`).
    pub fn kill(&mut self, i: usize) {
        if let Run::Processes { procs, .. } = &mut self.run
            && let Some(p) = procs.get_mut(i)
        {
            p.kill();
            self.down[i] = true;
        }
    }

    /// Starts manager `i` again as it was started first, on the same ports, appending to its
    /// log; does not wait for it ([`Managers::ready`]).
    pub fn start_again(&mut self, i: usize) -> Result<()> {
        let Run::Processes { procs, launches } = &mut self.run else {
            bail!("the managers run as pods: kubelet restarts them");
        };
        let l = launches.get(i).context("no such manager")?;
        let p = Process::spawn(&l.name, &l.program, &l.args, &l.envs, l.log.clone())?;
        procs[i] = p;
        self.down[i] = false;
        self.restarts[i] += 1;
        Ok(())
    }

    /// Whether manager `i` answers `/readyz`.
    pub fn ready(&self, i: usize) -> bool {
        match &self.run {
            Run::Processes { launches, .. } => launches
                .get(i)
                .is_some_and(|l| matches!(http_get(l.health_port, "/readyz"), Ok((200, _)))),
            Run::Pods(pods) => pods.ready(i),
        }
    }
}

fn addr() -> Result<String> {
    Ok(format!("127.0.0.1:{}", free_port()?))
}

/// What every manager process of the lab is started with.
struct Common<'a> {
    bin_dir: &'a Path,
    dir: &'a Path,
    logs: PathBuf,
    /// `--log-level`: `LAB_MANAGER_LOG`, or info without the libraries' chatter.
    log_level: String,
    /// The control-plane manager's flags for its embedded core's lab backend.
    core_args: Vec<String>,
}

/// One manager process to start: how, and where it serves.
struct Planned {
    launch: Launch,
    metrics: SocketAddr,
    webhook: (&'static str, u16, PathBuf),
    /// The control-plane manager's agent REST API, as hosts reach it.
    agent_api_url: Option<String>,
}

/// Manager `binary` of `shard` (`None`: the managers are not sharded): its own ports, data
/// directory and log (`logs/<binary>.log`, or `logs/<binary>-shard-<i>.log`), and with a
/// shard `--watch-filter=shard-<i>`.
fn plan_manager(
    c: &Common,
    binary: &'static str,
    kubeconfig: &Path,
    shard: Option<u32>,
) -> Result<Planned> {
    let name = match shard {
        Some(i) => format!("{binary}-shard-{i}"),
        None => binary.to_string(),
    };
    let (webhook_port, metrics_port, health_port) = (free_port()?, free_port()?, free_port()?);
    let cert_dir = c.dir.join(format!("{name}-webhook"));
    let mut args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--metrics-bind-address=127.0.0.1:{metrics_port}"),
        format!("--health-probe-bind-address=127.0.0.1:{health_port}"),
        format!("--webhook-bind-address=127.0.0.1:{webhook_port}"),
        format!("--webhook-cert-dir={}", cert_dir.display()),
        format!("--log-level={}", c.log_level),
    ];
    let mut agent_api_url = None;
    if binary == CONTROLPLANE {
        let (agent_api, images) = (addr()?, addr()?);
        let data = match shard {
            Some(i) => c.dir.join(format!("data-shard-{i}")),
            None => c.dir.join("data"),
        };
        args.extend(c.core_args.iter().cloned());
        args.extend([
            format!("--data-dir={}", data.display()),
            format!("--agent-api-bind-address={agent_api}"),
            format!("--images-bind-address={images}"),
            format!("--agent-api-url=http://{agent_api}"),
            format!("--images-url=http://{images}"),
            "--keys-namespace=default".into(),
        ]);
        agent_api_url = Some(format!("http://{agent_api}"));
    }
    if let Some(i) = shard {
        args.push(format!("--watch-filter={}", crate::shards::watch_filter(i)));
    }
    Ok(Planned {
        launch: Launch {
            name: name.clone(),
            program: c.bin_dir.join(binary),
            args,
            // Log files are read by people, not terminals.
            envs: vec![("NO_COLOR", "1")],
            log: c.logs.join(format!("{name}.log")),
            health_port,
        },
        metrics: SocketAddr::from(([127, 0, 0, 1], metrics_port)),
        webhook: (binary, webhook_port, cert_dir),
        agent_api_url,
    })
}

/// Starts our managers against the management apiserver (`kubeconfigs`: the control plane's,
/// the bootstrap manager's) and waits until each answers `/readyz`: the control-plane manager
/// then the bootstrap manager, or with `shards` ≥ 2 those two for each shard in turn
/// ([`plan_manager`]). Only shard 0's webhook servers get the apiserver's calls (every shard
/// serves the same webhooks).
pub async fn start(
    bin_dir: &Path,
    dir: &Path,
    kubeconfigs: [&Path; 2],
    iso: &Path,
    workload: &WorkloadAccess,
    core_extra: &[String],
    shards: u32,
) -> Result<Managers> {
    for bin in [CONTROLPLANE, BOOTSTRAP] {
        if !bin_dir.join(bin).is_file() {
            bail!(
                "{} is missing: build the providers first with \
                 `cargo build --bins -p bootstrap-provider -p controlplane-provider` (or `make lab`)",
                bin_dir.join(bin).display()
            );
        }
    }
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let common = Common {
        bin_dir,
        dir,
        logs,
        // `LAB_MANAGER_LOG` replaces the managers' log filter (e.g. `info,kube_runtime=debug`).
        log_level: std::env::var("LAB_MANAGER_LOG")
            .unwrap_or_else(|_| "info,kube=warn,tower=warn,hyper=warn".into()),
        core_args: lab_core_args(
            workload,
            &os_images(&format!("file://{}", iso.display())),
            core_extra,
        ),
    };
    let (mut procs, mut launches, mut members) = (Vec::new(), Vec::new(), Vec::new());
    let (mut webhooks, mut metrics, mut agent_api_urls) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..shards.max(1) {
        let shard = (shards > 1).then_some(i);
        for (binary, kubeconfig) in [(CONTROLPLANE, kubeconfigs[0]), (BOOTSTRAP, kubeconfigs[1])] {
            let p = plan_manager(&common, binary, kubeconfig, shard)?;
            procs.push(spawn_ready(&p.launch).await?);
            members.push(Member {
                name: p.launch.name.clone(),
                binary,
                shard: i,
            });
            launches.push(p.launch);
            metrics.push(p.metrics);
            agent_api_urls.extend(p.agent_api_url);
            if i == 0 {
                webhooks.push(p.webhook);
            }
        }
    }
    Ok(Managers {
        down: vec![false; procs.len()],
        restarts: vec![0; procs.len()],
        run: Run::Processes { procs, launches },
        members,
        agent_api_urls,
        trust: agent_sim::Trust::none(),
        webhooks,
        metrics,
        keys_namespace: "default".into(),
    })
}

/// Starts `l` and waits (up to 60 s) until it answers `/readyz`.
async fn spawn_ready(l: &Launch) -> Result<Process> {
    let mut p = Process::spawn(&l.name, &l.program, &l.args, &l.envs, l.log.clone())?;
    let port = l.health_port;
    wait_until(&l.name, &mut p, Duration::from_secs(60), async || {
        Ok(http_get(port, "/readyz")?.0 == 200)
    })
    .await?;
    Ok(p)
}

/// The control-plane manager's flags for the lab: the lab install backend (the workload
/// apiserver and its CAs), the OS images, a faster monitor, then `extra` (the assisted images
/// of a disconnected run).
pub fn lab_core_args(workload: &WorkloadAccess, os_images: &str, extra: &[String]) -> Vec<String> {
    let mut args = vec![
        "--install-backend=lab".into(),
        format!("--lab-api-url={}", workload.api_url),
        format!("--lab-server-ca-file={}", workload.ca_file.display()),
        format!("--lab-client-ca-cert-file={}", workload.ca_file.display()),
        format!(
            "--lab-client-ca-key-file={}",
            workload.ca_key_file.display()
        ),
        format!("--os-images={os_images}"),
        // Reacts within a second of a host's report instead of the default two.
        "--monitor-interval-seconds=1".into(),
    ];
    args.extend(extra.iter().cloned());
    args
}

/// The core's `--os-images`: one ISO (`url`) for both an RHCOS image for OpenShift 4.17 (the
/// lab's OCP clusters) and a CentOS Stream CoreOS one for OKD 4.19 (`--okd`, CAPOA's OKD
/// example).
pub fn os_images(url: &str) -> String {
    serde_json::json!([
        {
            "openshift_version": "4.17",
            "cpu_architecture": "x86_64",
            "url": url,
            "version": "417.94.202410090854-0",
        },
        {
            "openshift_version": "4.19",
            "cpu_architecture": "x86_64",
            "url": url,
            "version": "9.0.20250510-0",
        },
        {
            "openshift_version": "4.21",
            "cpu_architecture": "x86_64",
            "url": url,
            "version": "9.6.20251023-0",
        },
    ])
    .to_string()
}

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
    name: &'static str,
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
    /// The agent REST API as hosts reach it.
    pub agent_api_url: String,
    /// The CA the site's operator trusts the core's https listeners with (the BMCs, the
    /// installer-controller, the lab's own checks); hosts get theirs from their ignition.
    pub trust: agent_sim::Trust,
    /// Each manager's conversion webhook: (manager, loopback port, certificate directory).
    pub webhooks: Vec<(&'static str, u16, PathBuf)>,
    /// Each manager's `/metrics` address, control plane first.
    pub metrics: Vec<SocketAddr>,
    /// The namespace of the core's agent token keys Secret.
    pub keys_namespace: String,
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

    /// Each manager's own count of its API requests (`capoa_api_requests_total`), control
    /// plane first (a manager that does not answer is left out).
    pub fn own_requests(&self) -> Vec<(String, crate::apimetrics::ByRequest)> {
        let names = [CONTROLPLANE, BOOTSTRAP];
        self.metrics
            .iter()
            .zip(names)
            .filter_map(|(addr, name)| match http_get_at(*addr, "/metrics") {
                Ok((200, text)) => Some((name.to_string(), crate::apimetrics::own_requests(&text))),
                _ => None,
            })
            .collect()
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

    /// The managers' names, control plane first.
    pub fn names(&self) -> Vec<&'static str> {
        vec![CONTROLPLANE, BOOTSTRAP]
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
        let p = Process::spawn(l.name, &l.program, &l.args, &l.envs, l.log.clone())?;
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

/// Starts both managers against the management apiserver (`kubeconfigs`: the control plane's,
/// the bootstrap manager's) and waits until they answer `/readyz`.
pub async fn start(
    bin_dir: &Path,
    dir: &Path,
    kubeconfigs: [&Path; 2],
    iso: &Path,
    workload: &WorkloadAccess,
    core_extra: &[String],
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
    let data = dir.join("data");
    let agent_api = addr()?;
    let images = addr()?;
    let os_images = os_images(&format!("file://{}", iso.display()));
    let mut webhooks = Vec::new();
    let mut metrics = Vec::new();
    // `LAB_MANAGER_LOG` replaces the managers' log filter (e.g. `info,kube_runtime=debug`).
    let log_level = std::env::var("LAB_MANAGER_LOG")
        .unwrap_or_else(|_| "info,kube=warn,tower=warn,hyper=warn".into());
    let mut common = |name: &'static str, kubeconfig: &Path, health: &str| -> Result<Vec<String>> {
        let port = free_port()?;
        let metrics_port = free_port()?;
        metrics.push(SocketAddr::from(([127, 0, 0, 1], metrics_port)));
        let cert_dir = dir.join(format!("{name}-webhook"));
        let args = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--metrics-bind-address=127.0.0.1:{metrics_port}"),
            format!("--health-probe-bind-address={health}"),
            format!("--webhook-bind-address=127.0.0.1:{port}"),
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--log-level={log_level}"),
        ];
        webhooks.push((name, port, cert_dir));
        Ok(args)
    };
    let cp_health = addr()?;
    let mut cp_args = common(CONTROLPLANE, kubeconfigs[0], &cp_health)?;
    cp_args.extend(lab_core_args(workload, &os_images, core_extra));
    cp_args.extend([
        format!("--data-dir={}", data.display()),
        format!("--agent-api-bind-address={agent_api}"),
        format!("--images-bind-address={images}"),
        format!("--agent-api-url=http://{agent_api}"),
        format!("--images-url=http://{images}"),
        "--keys-namespace=default".into(),
    ]);
    let bs_health = addr()?;
    let bs_args = common(BOOTSTRAP, kubeconfigs[1], &bs_health)?;
    // Log files are read by people, not terminals.
    let envs = vec![("NO_COLOR", "1")];
    let mut procs = Vec::new();
    let mut launches = Vec::new();
    for (name, args, health) in [
        (CONTROLPLANE, cp_args, cp_health),
        (BOOTSTRAP, bs_args, bs_health),
    ] {
        let port: u16 = health
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .context("health port")?;
        let launch = Launch {
            name,
            program: bin_dir.join(name),
            args,
            envs: envs.clone(),
            log: logs.join(format!("{name}.log")),
            health_port: port,
        };
        let mut p = Process::spawn(
            name,
            &launch.program,
            &launch.args,
            &launch.envs,
            launch.log.clone(),
        )?;
        wait_until(name, &mut p, Duration::from_secs(60), async || {
            Ok(http_get(port, "/readyz")?.0 == 200)
        })
        .await?;
        procs.push(p);
        launches.push(launch);
    }
    Ok(Managers {
        down: vec![false; procs.len()],
        restarts: vec![0; procs.len()],
        run: Run::Processes { procs, launches },
        agent_api_url: format!("http://{agent_api}"),
        trust: agent_sim::Trust::none(),
        webhooks,
        metrics,
        keys_namespace: "default".into(),
    })
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

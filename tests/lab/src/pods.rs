//! Our managers as the pods `clusterctl init` installed on the management testbed's node
//! (`lab --managers pods`), from the images `make images` built: their generated
//! ServiceAccounts, RBAC, Services, webhooks and cert-manager certificates, unchanged.
//!
//! What the lab adds to what clusterctl installed, because the lab's site is simulated:
//! - the control-plane Deployment gets the lab install backend's flags (the workload apiserver
//!   and its CAs) and the lab's files (the OS image, the CAs) from a read-only `hostPath`
//!   volume — a real site uses the default installer backend and OS images over HTTPS;
//! - a NodePort Service [`NODEPORT_SERVICE`] in front of the assisted-core Service's ports,
//!   through which the simulated hosts reach the agent API and the image server at the node's
//!   address (what a site's hub exposes; docs/lab.md); their URLs ([`site_urls`]) are the
//!   variables `clusterctl init` requires.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use testbed::node::NODE_IP;
use testbed::process::http_get_at;

use crate::managers::{Managers, Run, WorkloadAccess};

/// Our providers' namespaces and Deployments, control plane first (as `config/release/` names
/// them).
pub const DEPLOYMENTS: [(&str, &str); 2] = [
    (
        "capoa-controlplane-system",
        "capoa-controlplane-controller-manager",
    ),
    (
        "capoa-bootstrap-system",
        "capoa-bootstrap-controller-manager",
    ),
];
/// The NodePort Service the lab puts in front of the embedded core's agent API and images.
pub const NODEPORT_SERVICE: &str = "capoa-lab-assisted-core";
/// Its node ports: fixed, so that the URLs are known before `clusterctl init`, which needs them.
pub const AGENT_API_NODE_PORT: u16 = 30890;
pub const IMAGES_NODE_PORT: u16 = 30891;

/// The agent API's and image server's URLs as the site's hosts reach them: https on the node's
/// address and [`NODEPORT_SERVICE`]'s ports. The lab gives them to `clusterctl init` as
/// `OPENSHIFT_ASSISTED_CORE_AGENT_API_URL` and `OPENSHIFT_ASSISTED_CORE_IMAGES_URL`; the core
/// then has cert-manager issue a certificate for that address.
pub fn site_urls() -> (String, String) {
    (
        format!("https://{NODE_IP}:{AGENT_API_NODE_PORT}"),
        format!("https://{NODE_IP}:{IMAGES_NODE_PORT}"),
    )
}

/// The Secret of the core's serving certificate as released (`--tls-secret`); its `ca.crt` is
/// what a site's operator gives the BMCs.
pub const CORE_TLS_SECRET: &str = "capoa-controlplane-assisted-core-tls";

/// The CA of the core's serving certificate, once cert-manager has issued it.
async fn core_trust(client: &Client, timeout: Duration) -> Result<agent_sim::Trust> {
    let ns = DEPLOYMENTS[0].0;
    let ca = testbed::resources::wait_secret_key(client, ns, CORE_TLS_SECRET, "ca.crt", timeout)
        .await
        .context(
            "cert-manager issued no serving certificate for the core (see its Certificate's \
             Ready condition and the control-plane manager's log)",
        )?;
    Ok(agent_sim::Trust::ca(ca))
}
/// Where the lab's files appear in the control-plane pod.
const FILES_IN_POD: &str = "/lab";
const METRICS_PORT: u16 = 8080;
const HEALTH_PORT: u16 = 8081;

/// The managers' pods, control plane first.
pub struct Pods {
    /// kubelet's pod log directory on the node.
    pod_logs: PathBuf,
    /// Each manager's leader: its pod's name and address.
    leaders: Vec<(String, IpAddr)>,
}

impl Pods {
    /// The managers' container logs as kubelet writes them (every replica's).
    pub fn logs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.pod_logs) else {
            return out;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if DEPLOYMENTS
                .iter()
                .any(|(ns, d)| name.starts_with(&format!("{ns}_{d}-")))
                && let Ok(logs) = std::fs::read_dir(e.path().join("manager"))
            {
                out.extend(logs.flatten().map(|l| l.path()));
            }
        }
        out.sort();
        out
    }

    /// Each manager's leader's process id on this machine, if it runs.
    pub fn pids(&self) -> Vec<Option<u32>> {
        self.leaders
            .iter()
            .map(|(pod, _)| manager_pid(pod))
            .collect()
    }

    /// Fails if a manager's leader process is gone, but for those the lab took `down` itself.
    pub fn check_running(&self, down: &[bool]) -> Result<()> {
        for (i, ((ns, _), pid)) in DEPLOYMENTS.iter().zip(self.pids()).enumerate() {
            if pid.is_none() && !down.get(i).copied().unwrap_or(false) {
                bail!(
                    "the leader of {ns} ({}) is not running; the logs: {:?}",
                    self.leaders[i].0,
                    self.logs()
                );
            }
        }
        Ok(())
    }

    /// Manager `i`'s leader pod's name and address.
    pub fn leader(&self, i: usize) -> Option<&(String, IpAddr)> {
        self.leaders.get(i)
    }

    /// Whether manager `i`'s leader answers `/readyz` on its pod's address.
    pub fn ready(&self, i: usize) -> bool {
        self.leaders.get(i).is_some_and(|(_, ip)| serves_ready(*ip))
    }

    /// Whether manager `i` has a new leader (not `killed`) that runs and is ready; if so it
    /// becomes the one the lab follows.
    pub async fn took_over(&mut self, client: &Client, i: usize, killed: &str) -> Result<bool> {
        let (ns, _) = DEPLOYMENTS[i];
        match ready_leader(client, ns).await? {
            Some((pod, ip)) if pod != killed => {
                self.leaders[i] = (pod, ip);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

fn serves_ready(ip: IpAddr) -> bool {
    matches!(
        http_get_at(SocketAddr::new(ip, HEALTH_PORT), "/readyz"),
        Ok((200, _))
    )
}

/// The pod holding `ns`'s leader Lease, if it runs (not being deleted), has an address and
/// answers `/readyz`.
async fn ready_leader(client: &Client, ns: &str) -> Result<Option<(String, IpAddr)>> {
    let leases = Api::<Lease>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?;
    let Some(holder) = leases
        .items
        .iter()
        .find_map(|l| l.spec.as_ref()?.holder_identity.clone())
    else {
        return Ok(None);
    };
    let Some(pod) = Api::<Pod>::namespaced(client.clone(), ns)
        .get_opt(&holder)
        .await?
    else {
        return Ok(None);
    };
    let running = pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_ref())
        .and_then(|ip| ip.parse::<IpAddr>().ok());
    Ok(match ip {
        Some(ip) if running && serves_ready(ip) => Some((holder, ip)),
        _ => None,
    })
}

/// Ends manager `i`'s leader as a node failure would: its process SIGKILLed (it cannot release
/// its Lease), then its pod deleted at once (grace period 0). A standby takes the Lease over
/// once it expires, or the Deployment's new pod does, which (for the control plane) must find
/// the core's state on its volume.
pub async fn delete_leader(client: &Client, pods: &Pods, i: usize) -> Result<String> {
    let (ns, _) = DEPLOYMENTS[i];
    let (name, _) = pods.leader(i).context("no leader known")?;
    if let Some(pid) = manager_pid(name) {
        let status = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("kill -KILL {pid} ({ns}/{name}) failed");
        }
    }
    Api::<Pod>::namespaced(client.clone(), ns)
        .delete(name, &kube::api::DeleteParams::default().grace_period(0))
        .await
        .with_context(|| format!("deleting pod {ns}/{name}"))?;
    Ok(name.clone())
}

/// The pid of the process `/usr/local/bin/manager` (our images' entrypoint) of pod `pod`
/// (its `POD_NAME`).
fn manager_pid(pod: &str) -> Option<u32> {
    let want = format!("POD_NAME={pod}");
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if !cmdline.starts_with(b"/usr/local/bin/manager\0") {
            continue;
        }
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            return Some(pid);
        }
    }
    None
}

/// The lab's files, readable by the pod's non-root user: the OS image and the workload CAs.
/// Returns the directory (mode 0755, outside the testbed directory, which only root reads) and
/// the same files as the pod sees them.
pub fn stage_files(
    dir: &Path,
    iso: &Path,
    workload: &WorkloadAccess,
) -> Result<(PathBuf, PathBuf, WorkloadAccess)> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for (src, name) in [
        (iso, "base.iso"),
        (workload.ca_file.as_path(), "workload-ca.crt"),
        (workload.ca_key_file.as_path(), "workload-ca.key"),
    ] {
        let to = dir.join(name);
        std::fs::copy(src, &to).with_context(|| format!("copying {}", src.display()))?;
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644))?;
    }
    let in_pod = Path::new(FILES_IN_POD);
    Ok((
        dir.to_owned(),
        in_pod.join("base.iso"),
        WorkloadAccess {
            api_url: workload.api_url.clone(),
            ca_file: in_pod.join("workload-ca.crt"),
            ca_key_file: in_pod.join("workload-ca.key"),
        },
    ))
}

/// The NodePort Service in front of the core's agent API and images, on the ports of
/// [`site_urls`].
async fn expose_core(client: &Client) -> Result<()> {
    let (ns, _) = DEPLOYMENTS[0];
    let api = Api::<Service>::namespaced(client.clone(), ns);
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NODEPORT_SERVICE, "namespace": ns},
        "spec": {
            "type": "NodePort",
            // As the release's assisted-core Service: only the leader serves.
            "selector": {
                "cluster.x-k8s.io/provider": "control-plane-openshift-assisted",
                "control-plane": "controller-manager",
                "assisted-core.openshift-assisted.io/serving": "true",
            },
            "ports": [
                {"name": "agent-api", "port": 8090, "targetPort": "agent-api", "nodePort": AGENT_API_NODE_PORT},
                {"name": "images", "port": 8091, "targetPort": "images", "nodePort": IMAGES_NODE_PORT},
            ],
        },
    }))?;
    api.create(&PostParams::default(), &svc)
        .await
        .context("creating the NodePort Service of the core")?;
    Ok(())
}

/// `args` with every flag of `extra` replaced by its value there (flags are `--name=value`).
pub fn with_flags(args: &[String], extra: &[String]) -> Vec<String> {
    let name = |a: &str| a.split('=').next().unwrap_or(a).to_owned();
    let replaced: Vec<String> = extra.iter().map(|a| name(a)).collect();
    args.iter()
        .filter(|a| !replaced.contains(&name(a)))
        .cloned()
        .chain(extra.iter().cloned())
        .collect()
}

/// Gives the control-plane Deployment the lab's flags and files, then waits until both
/// managers' Deployments are rolled out and answer `/readyz` on their pods.
pub async fn start(
    client: &Client,
    node_dir: &Path,
    files_dir: &Path,
    iso_in_pod: &Path,
    workload: &WorkloadAccess,
    replicas: i32,
    core_extra: &[String],
) -> Result<Managers> {
    expose_core(client).await?;
    let (agent_api_url, _) = site_urls();
    let (ns, name) = DEPLOYMENTS[0];
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns);
    let d = deployments
        .get(name)
        .await
        .context("reading the control-plane Deployment")?;
    let container = d
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.iter().find(|c| c.name == "manager"))
        .context("the control-plane Deployment has no container `manager`")?;
    // The URLs came from `clusterctl init`'s variables; the lab backend's flags come here.
    let extra = crate::managers::lab_core_args(
        workload,
        &crate::managers::os_images(&format!("file://{}", iso_in_pod.display())),
        core_extra,
    );
    let args = with_flags(container.args.as_deref().unwrap_or_default(), &extra);
    let mut mounts = serde_json::to_value(container.volume_mounts.clone().unwrap_or_default())?;
    mounts
        .as_array_mut()
        .context("volumeMounts")?
        .push(json!({"name": "lab-files", "mountPath": FILES_IN_POD, "readOnly": true}));
    let patch = json!({"spec": {"replicas": replicas, "template": {"spec": {
        "containers": [{"name": "manager", "args": args, "volumeMounts": mounts}],
        "volumes": [{"name": "lab-files", "hostPath": {"path": files_dir, "type": "Directory"}}],
    }}}});
    deployments
        .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .context("giving the control-plane Deployment the lab's flags")?;
    let (bns, bname) = DEPLOYMENTS[1];
    Api::<Deployment>::namespaced(client.clone(), bns)
        .patch(
            bname,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .with_context(|| format!("scaling {bns}/{bname} to {replicas}"))?;

    let leaders = wait_rolled_out(client, replicas, Duration::from_secs(180)).await?;
    let trust = core_trust(client, Duration::from_secs(60)).await?;
    Ok(Managers {
        down: vec![false; 2],
        restarts: vec![0; 2],
        metrics: leaders
            .iter()
            .map(|(_, ip)| SocketAddr::new(*ip, METRICS_PORT))
            .collect(),
        run: Run::Pods(Pods {
            pod_logs: node_dir.join("pod-logs"),
            leaders,
        }),
        members: crate::managers::Member::unsharded(),
        agent_api_urls: vec![agent_api_url],
        trust,
        webhooks: Vec::new(),
        keys_namespace: ns.to_owned(),
    })
}

/// Waits until each of our Deployments has `replicas` updated, available pods and no other,
/// and its leader's pod answers `/readyz`; returns the leaders, control plane first.
async fn wait_rolled_out(
    client: &Client,
    replicas: i32,
    timeout: Duration,
) -> Result<Vec<(String, IpAddr)>> {
    let start = Instant::now();
    loop {
        let mut leaders = Vec::new();
        for (ns, name) in DEPLOYMENTS {
            let d = Api::<Deployment>::namespaced(client.clone(), ns)
                .get(name)
                .await?;
            let status = d.status.clone().unwrap_or_default();
            let done = status.observed_generation == d.metadata.generation
                && status.updated_replicas == Some(replicas)
                && status.available_replicas == Some(replicas)
                && status.replicas == Some(replicas);
            if !done {
                break;
            }
            match ready_leader(client, ns).await? {
                Some(leader) => leaders.push(leader),
                None => break,
            }
        }
        if leaders.len() == DEPLOYMENTS.len() {
            return Ok(leaders);
        }
        if start.elapsed() > timeout {
            let names: Vec<String> = DEPLOYMENTS
                .iter()
                .map(|(ns, d)| format!("{ns}/{d}"))
                .collect();
            bail!(
                "our managers' pods ({names:?}) not rolled out to {replicas} replicas with a ready leader after {timeout:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The pods' ServiceAccounts (namespace, name), control plane first: their requests are counted
/// under their own FlowSchemas.
pub fn service_accounts() -> [(&'static str, &'static str); 2] {
    [
        (DEPLOYMENTS[0].0, DEPLOYMENTS[0].1),
        (DEPLOYMENTS[1].0, DEPLOYMENTS[1].1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_replaced_not_repeated() {
        let args: Vec<String> = [
            "--leader-elect",
            "--install-backend=openshift-install",
            "--x=1",
        ]
        .map(String::from)
        .to_vec();
        let out = with_flags(&args, &["--install-backend=lab".into(), "--y=2".into()]);
        assert_eq!(
            out,
            ["--leader-elect", "--x=1", "--install-backend=lab", "--y=2"]
        );
    }

    #[test]
    fn control_plane_first() {
        assert!(DEPLOYMENTS[0].0.contains("controlplane"));
        assert_eq!(service_accounts()[1].0, "capoa-bootstrap-system");
    }

    #[test]
    fn logs_of_a_missing_directory_are_none() {
        let pods = Pods {
            pod_logs: PathBuf::from("/nonexistent"),
            leaders: Vec::new(),
        };
        assert!(pods.logs().is_empty());
    }
}

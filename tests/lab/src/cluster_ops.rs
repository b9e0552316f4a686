//! What the lab does to a cluster during a run besides applying it: scale its workers,
//! start its installer-controller, write its ClusterVersion, edit its topology, request an
//! upgrade, fail hosts (with a MachineHealthCheck), and print what scaling and remediation show.

use std::time::{Duration, Instant};

use agent_sim::InstallerController;
use anyhow::{Context as _, Result, anyhow};
use assisted_core::api::hive::ClusterDeployment;
use assisted_core::service::auth::{Claims, Keys, PRIVATE_KEY_FIELD};
use external_types::capi::MachineDeployment;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::ResourceExt as _;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::cluster_run::ClusterRun;
use crate::managers::Managers;
use crate::manifests::ClusterSpec;
use crate::observe::Snapshot;
use crate::options::Speed;
use crate::site::Server;
use crate::steps::Failing;
use crate::{cvo, observe, stamp};
/// Writes the installed cluster's ClusterVersion as its CVO does: the control plane's
/// `distributionVersion` and the ClusterImageSet's release image, Completed.
pub(crate) async fn install_cluster_version(
    client: &Client,
    cvo: &cvo::Cvo,
    spec: &ClusterSpec,
) -> Result<String> {
    let name = spec.control_plane_name();
    let cp = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &spec.ns,
        &observe::control_plane_resource(),
    )
    .get(&name)
    .await
    .with_context(|| format!("reading OpenshiftAssistedControlPlane {name}"))?;
    let version = cp.data["spec"]["distributionVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let image_set = format!("{}.{name}", spec.ns);
    let image = Api::<assisted_core::api::hive::ClusterImageSet>::all(client.clone())
        .get(&image_set)
        .await
        .with_context(|| format!("reading ClusterImageSet {image_set}"))?
        .spec
        .release_image;
    cvo.install(&version, &image).await?;
    Ok(format!(
        "site: the cluster-version operator reports {version} ({image}) installed"
    ))
}

/// Edits the Cluster's `spec.topology` as a user would: read, change, write back (a merge
/// patch of the whole topology, guarded by the resourceVersion read).
pub(crate) async fn edit_topology(
    client: &Client,
    spec: &ClusterSpec,
    change: impl Fn(&mut Value),
) -> Result<()> {
    let api = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &spec.ns,
        &observe::cluster_resource(),
    );
    // Read, change, write at that resourceVersion, as `kubectl edit` does; Cluster API writes
    // the Cluster too, so a conflict reads it again (a few times) rather than failing the run.
    let mut attempt = 0;
    loop {
        let cluster = api
            .get(&spec.name)
            .await
            .with_context(|| format!("reading Cluster {}", spec.name))?;
        let mut topology = cluster.data["spec"]["topology"].clone();
        change(&mut topology);
        let written = api
            .patch(
                &spec.name,
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "metadata": {"resourceVersion": cluster.metadata.resource_version},
                    "spec": {"topology": topology},
                })),
            )
            .await;
        match written {
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 5 => attempt += 1,
            other => {
                other?;
                return Ok(());
            }
        }
    }
}

/// `--upgrade-to`: the user's edit of `spec.distributionVersion`; of a ClusterClass cluster,
/// its topology's version and openshiftVersion variable together.
pub(crate) async fn request_upgrade(client: &Client, spec: &ClusterSpec, to: &str) -> Result<()> {
    if spec.cluster_class {
        let kubernetes = cvo::kubernetes_of(to);
        return edit_topology(client, spec, |topology| {
            topology["version"] = json!(kubernetes);
            if let Some(variables) = topology["variables"].as_array_mut() {
                for v in variables.iter_mut().filter(|v| v["name"] == "openshiftVersion") {
                    v["value"] = json!(to);
                }
            }
        })
        .await
        .with_context(|| {
            format!(
                "setting Cluster {}'s topology version to {kubernetes} and openshiftVersion to {to}",
                spec.name
            )
        });
    }
    let name = spec.control_plane_name();
    Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &spec.ns,
        &observe::control_plane_resource(),
    )
    .patch(
        &name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"distributionVersion": to}})),
    )
    .await
    .with_context(|| format!("setting {name}'s distributionVersion to {to}"))?;
    Ok(())
}

/// `a` is an older OpenShift release than `b` (MAJOR.MINOR.PATCH, suffixes ignored); false
/// when either is not known.
pub(crate) fn is_older(a: &str, b: &str) -> bool {
    let numbers = |v: &str| -> Option<Vec<u64>> {
        let core = v.split(['-', '+']).next()?;
        let n: Vec<u64> = core
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        (n.len() == 3).then_some(n)
    };
    matches!((numbers(a), numbers(b)), (Some(a), Some(b)) if a < b)
}

/// The control plane's `ScalingUp` and `ScalingDown` conditions when they say something, as
/// the timeline shows them.
pub(crate) fn print_scaling(r: &ClusterRun, pre: &str, start: Instant) {
    for type_ in ["ScalingUp", "ScalingDown"] {
        if let Some((status, reason, message)) = r
            .snap
            .control_plane
            .as_ref()
            .and_then(|c| control_plane_condition(c, type_))
            .filter(|(_, _, m)| !m.is_empty())
        {
            println!(
                "{} {pre}{}: {type_} {status} {reason}: {message}",
                stamp(start),
                r.spec.control_plane_name()
            );
        }
    }
}

/// The control plane's `Remediating` condition, as the timeline shows it.
pub(crate) fn print_remediating(r: &ClusterRun, pre: &str, start: Instant) {
    if let Some((status, reason, message)) = r
        .snap
        .control_plane
        .as_ref()
        .and_then(|c| control_plane_condition(c, "Remediating"))
    {
        println!(
            "{} {pre}{}: Remediating {status} {reason}: {message}",
            stamp(start),
            r.spec.control_plane_name()
        );
    }
}

/// `--fail-host`'s hosts: one, or several separated by commas.
pub(crate) fn fail_hosts(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect()
}

/// What `--fail-host` breaks in a cluster of `masters`; an error for a host the site does not
/// have or a combination the lab does not follow.
pub(crate) fn failing(value: &str, servers: &[Server], masters: u32) -> Result<Failing> {
    let roles = fail_hosts(value)
        .iter()
        .map(|h| fail_host_role(h, servers))
        .collect::<Result<Vec<bool>>>()?;
    match roles.as_slice() {
        [false] => Ok(Failing::Worker),
        [true] if masters > 1 => Ok(Failing::Master),
        [true] => Ok(Failing::OnlyMaster),
        [true, true] if masters >= 3 => Ok(Failing::TwoMasters),
        _ => anyhow::bail!(
            "--fail-host {value}: the lab follows one host, or two masters of three or more"
        ),
    }
}

/// Whether `--fail-host`'s host is a control-plane host; an error naming the hosts when the
/// site has no such host.
pub(crate) fn fail_host_role(host: &str, servers: &[Server]) -> Result<bool> {
    if let Some(master) = role_keyword(host) {
        return Ok(master);
    }
    match servers.iter().find(|s| s.name == host) {
        Some(s) => Ok(s.role == "master"),
        None => anyhow::bail!(
            "--fail-host {host}: the site has no such host (it has {})",
            servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `--fail-host master` or `worker`: whichever host of that role is in the cluster then
/// (Metal3 picks the hosts, so their names are known only once they run).
pub(crate) fn role_keyword(host: &str) -> Option<bool> {
    match host {
        "master" => Some(true),
        "worker" => Some(false),
        _ => None,
    }
}

/// The MachineHealthCheck a user would write for the failed host's Machines: the workers'
/// MachineDeployment, or the control plane; unhealthy after 10 s of a Node not Ready.
pub(crate) fn machine_health_check(spec: &ClusterSpec, master: bool) -> Value {
    let (name, selector) = if master {
        (
            format!("{}-control-plane", spec.name),
            json!({"cluster.x-k8s.io/control-plane": ""}),
        )
    } else {
        let md = spec.workers_name();
        (md.clone(), json!({"cluster.x-k8s.io/deployment-name": md}))
    };
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": {"name": name, "namespace": spec.ns},
        "spec": {
            "clusterName": spec.name,
            "selector": {"matchLabels": selector},
            "checks": {"unhealthyNodeConditions": [
                {"type": "Ready", "status": "Unknown", "timeoutSeconds": 10},
                {"type": "Ready", "status": "False", "timeoutSeconds": 10},
            ]},
        },
    })
}

/// Cluster API's topology caught up with an upgrade: the topology and the control plane's
/// `spec.version` at `kubernetes`, and the Cluster's `TopologyReconciled` True (which Cluster API
/// sets only once the MachineDeployments are at that version too).
pub(crate) fn topology_settled(s: &Snapshot, kubernetes: &str) -> bool {
    let (Some(cp), Some(cluster)) = (s.control_plane.as_ref(), s.cluster.as_ref()) else {
        return false;
    };
    cp["spec"]["version"] == kubernetes
        && cluster["spec"]["topology"]["version"] == kubernetes
        && control_plane_condition(cluster, "TopologyReconciled")
            .is_some_and(|(status, _, _)| status == "True")
}

/// The version `--upgrade-to` names (empty without).
pub(crate) fn upgrade_to(spec: &ClusterSpec) -> &str {
    spec.upgrade.as_ref().map_or("", |u| u.to.as_str())
}

/// `(status, reason, message)` of a control plane's condition.
pub(crate) fn control_plane_condition(cp: &Value, type_: &str) -> Option<(String, String, String)> {
    let c = cp["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let text = |f: &str| c[f].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

pub(crate) async fn scale_workers(
    client: &Client,
    spec: &ClusterSpec,
    replicas: u32,
) -> Result<()> {
    if spec.cluster_class {
        return edit_topology(client, spec, |topology| {
            // The lab's topology has one MachineDeployment, the workers'.
            topology["workers"]["machineDeployments"][0]["replicas"] = json!(replicas);
        })
        .await
        .with_context(|| format!("scaling Cluster {}'s workers to {replicas}", spec.name));
    }
    let md = spec.workers_name();
    Api::<MachineDeployment>::namespaced(client.clone(), &spec.ns)
        .patch(
            &md,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .with_context(|| format!("scaling {md} to {replicas}"))?;
    Ok(())
}

/// The in-cluster installer-controller of the new cluster (post-reboot stages, operators).
/// It speaks for the whole cluster, so it holds a cluster-scoped token, as upstream's does;
/// the lab mints it with the core's signing key.
pub(crate) async fn installer_controller(
    client: &Client,
    workload: &Client,
    managers: &Managers,
    spec: &ClusterSpec,
    timeout: Duration,
    speed: Speed,
) -> Result<JoinHandle<Result<()>>> {
    let (cluster_id, token) = cluster_token(client, &managers.keys_namespace, spec).await?;
    let controller =
        InstallerController::new(managers.agent_api_url(spec.shard), cluster_id, &token)
            .with_trust(managers.trust.clone())
            .with_speed(speed.factor())
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

/// The cluster's id in the core (its ClusterDeployment's UID) and a cluster-scoped agent token
/// for it, minted with the core's signing key (what the installer-controller holds).
pub(crate) async fn cluster_token(
    client: &Client,
    keys_namespace: &str,
    spec: &ClusterSpec,
) -> Result<(String, String)> {
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), &spec.ns)
        .get(&spec.control_plane_name())
        .await
        .context("reading the ClusterDeployment")?;
    let cluster_id = cd.uid().context("the ClusterDeployment has no UID")?;
    let keys = Api::<Secret>::namespaced(client.clone(), keys_namespace)
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
    Ok((cluster_id, token))
}

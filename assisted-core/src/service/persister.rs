//! Writes the store back: new Agent CRs, Agent and AgentClusterInstall status (server-side
//! apply, one field manager), and each cluster's snapshot to the file store so a restarted core
//! continues where it stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store as Reflector};
use kube::{Resource, ResourceExt};
use tokio::sync::watch;

use super::controllers::Context;
use super::controllers::status::{aci_status, agent_status, inventory_labels};
use crate::api::agent::{Agent, AgentSpec};
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::infraenv::{ClusterReference, INFRAENV_NAME_LABEL, InfraEnv};
use crate::domain::{ClusterSnapshot, ClusterStatus, HostSnapshot, PreparationStatus};
use crate::service::store::{ClusterRecord, ClusterSettings, Dirty, DirtyReceiver};

const STATUS_MANAGER: &str = "assisted-core-status";
const LABELS_MANAGER: &str = "assisted-core-labels";
const CD_NAMESPACE_LABEL: &str = "agent-install.openshift.io/clusterdeployment-namespace";

pub fn state_path(files_root: &Path, cluster_id: &str) -> PathBuf {
    files_root.join(cluster_id).join("state.json")
}

fn unbound_path(files_root: &Path, host_id: &str) -> PathBuf {
    files_root.join("unbound").join(format!("{host_id}.json"))
}

async fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let tmp = path.with_extension("tmp");
    tokio::fs::write(&tmp, bytes).await?;
    tokio::fs::rename(&tmp, path).await
}

/// Loads persisted clusters and unbound hosts into the store. Returns the clusters whose
/// install preparation was running when the core stopped (to be started again).
pub async fn restore(ctx: &Context) -> Vec<String> {
    let now = Timestamp::now();
    let mut resume = Vec::new();
    let Ok(mut dir) = tokio::fs::read_dir(&ctx.files_root).await else {
        return resume;
    };
    while let Ok(Some(entry)) = dir.next_entry().await {
        let name = entry.file_name().to_string_lossy().to_string();
        if name == "unbound" {
            continue;
        }
        let Ok(bytes) = tokio::fs::read(state_path(&ctx.files_root, &name)).await else {
            continue;
        };
        match serde_json::from_slice::<ClusterSnapshot>(&bytes) {
            Ok(snap) => {
                if snap.status == ClusterStatus::PreparingForInstallation
                    && snap.preparation == PreparationStatus::InProgress
                {
                    resume.push(snap.id.clone());
                }
                tracing::info!(cluster = %snap.name, status = %snap.status, hosts = snap.hosts.len(), "restored cluster state");
                ctx.store
                    .restore_cluster(ClusterRecord::new(snap, ClusterSettings::default()), now);
            }
            Err(e) => {
                tracing::warn!(cluster = %name, error = %e, "unreadable cluster state; skipped")
            }
        }
    }
    if let Ok(mut dir) = tokio::fs::read_dir(ctx.files_root.join("unbound")).await {
        while let Ok(Some(entry)) = dir.next_entry().await {
            if let Ok(bytes) = tokio::fs::read(entry.path()).await
                && let Ok(h) = serde_json::from_slice::<HostSnapshot>(&bytes)
            {
                ctx.store.restore_unbound(h, now);
            }
        }
    }
    ctx.store.mark_all();
    resume
}

/// Drains dirty keys in small batches until shutdown.
pub async fn run(
    ctx: Arc<Context>,
    mut rx: DirtyReceiver,
    agents: Reflector<Agent>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let first = tokio::select! {
            d = rx.recv() => d,
            _ = shutdown.changed() => return,
        };
        let Some(first) = first else { return };
        // Coalesce a burst (a monitor pass marks many keys at once).
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut batch = BTreeSet::from([first]);
        while let Ok(d) = rx.try_recv() {
            batch.insert(d);
        }
        let mut clusters_to_save = BTreeSet::new();
        let mut retry = Vec::new();
        for d in batch {
            let result = match &d {
                Dirty::NewHost(id) => create_agent(&ctx, id).await,
                Dirty::Host(id) => {
                    if let Some(c) = ctx.store.view(|st| st.host_cluster.get(id).cloned()) {
                        clusters_to_save.insert(c);
                    } else {
                        save_unbound(&ctx, id).await;
                    }
                    write_agent_status(&ctx, id, &agents).await
                }
                Dirty::Cluster(id) => {
                    clusters_to_save.insert(id.clone());
                    write_aci_status(&ctx, id).await
                }
            };
            if let Err(e) = result {
                tracing::debug!(key = ?d, error = %e, "status write failed; retrying");
                retry.push(d);
            }
        }
        for id in clusters_to_save {
            save_cluster(&ctx, &id).await;
        }
        if !retry.is_empty() {
            let store = ctx.store.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                for d in retry {
                    store.mark(d);
                }
            });
        }
    }
}

async fn save_cluster(ctx: &Context, id: &str) {
    let Ok(rec) = ctx.store.cluster(id) else {
        return;
    };
    match serde_json::to_vec(&rec.snapshot) {
        Ok(bytes) => {
            if let Err(e) = write_atomic(&state_path(&ctx.files_root, id), &bytes).await {
                tracing::warn!(cluster = %id, error = %e, "cannot save cluster state");
            }
        }
        Err(e) => tracing::warn!(cluster = %id, error = %e, "cannot encode cluster state"),
    }
}

async fn save_unbound(ctx: &Context, host_id: &str) {
    let host = ctx.store.view(|st| st.unbound.get(host_id).cloned());
    if let Some(h) = host
        && let Ok(bytes) = serde_json::to_vec(&h)
        && let Err(e) = write_atomic(&unbound_path(&ctx.files_root, host_id), &bytes).await
    {
        tracing::warn!(host = %host_id, error = %e, "cannot save host state");
    }
}

/// The Agent CR of a newly registered host: named by the host UUID, in the InfraEnv's
/// namespace, owned by and labelled with the InfraEnv, bound to its ClusterDeployment.
pub fn new_agent(host: &HostSnapshot, ie: &crate::service::store::InfraEnvRecord) -> Agent {
    let mut labels: BTreeMap<String, String> = ie.agent_labels.clone();
    labels.insert(INFRAENV_NAME_LABEL.into(), ie.name.clone());
    let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: InfraEnv::api_version(&()).into(),
        kind: InfraEnv::kind(&()).into(),
        name: ie.name.clone(),
        uid: ie.id.clone(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    Agent {
        metadata: ObjectMeta {
            name: Some(host.id.clone()),
            namespace: Some(ie.namespace.clone()),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: AgentSpec {
            cluster_deployment_name: ie.cluster_deployment_name.as_ref().map(|n| {
                ClusterReference {
                    name: n.clone(),
                    namespace: ie.namespace.clone(),
                }
            }),
            approved: host.approved,
            ..Default::default()
        },
        status: None,
    }
}

async fn create_agent(ctx: &Context, host_id: &str) -> Result<(), kube::Error> {
    let found = ctx.store.view(|st| {
        let h = st.host(host_id)?;
        Some((h.clone(), st.infra_envs.get(&h.infra_env_id)?.clone()))
    });
    let Some((host, ie)) = found else {
        return Ok(());
    };
    let api: Api<Agent> = Api::namespaced(ctx.client.clone(), &ie.namespace);
    match api
        .create(&PostParams::default(), &new_agent(&host, &ie))
        .await
    {
        Ok(_) => {
            tracing::info!(agent = %host_id, infraenv = %ie.name, "host registered: Agent created");
            let on = super::controllers::events::reference(
                "agent-install.openshift.io/v1beta1",
                "InfraEnv",
                &ie.namespace,
                &ie.name,
            );
            ctx.events
                .normal(
                    &on,
                    "HostRegistered",
                    format!("Host {host_id} registered; Agent {host_id} created"),
                )
                .await;
            Ok(())
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn write_agent_status(
    ctx: &Context,
    host_id: &str,
    agents: &Reflector<Agent>,
) -> Result<(), kube::Error> {
    let now = Timestamp::now();
    let rendered = ctx.store.view(|st| {
        let (host, cluster) = st.host_with_cluster(host_id)?;
        let ie = st.infra_envs.get(&host.infra_env_id)?;
        let extra = st.host_extra.get(host_id);
        let previous = agents
            .get(&ObjectRef::new(host_id).within(&ie.namespace))
            .and_then(|a| a.status.as_ref().map(|s| s.conditions.clone()))
            .unwrap_or_default();
        let status = agent_status(
            host,
            cluster.map(|c| &c.snapshot),
            extra,
            extra.and_then(|e| e.spec_error.as_deref()),
            &previous,
            None,
            now,
        );
        let cached = agents.get(&ObjectRef::new(host_id).within(&ie.namespace));
        // Inventory labels change rarely: only write them when they differ.
        let labels = host
            .inventory
            .as_ref()
            .map(inventory_labels)
            .filter(|want| {
                let have = cached
                    .as_ref()
                    .map(|a| a.labels().clone())
                    .unwrap_or_default();
                want.iter().any(|(k, v)| have.get(k) != Some(v))
                    || have.get(CD_NAMESPACE_LABEL) != Some(&ie.namespace)
            });
        Some((status, ie.namespace.clone(), labels))
    });
    let Some((status, ns, labels)) = rendered else {
        return Ok(());
    };
    let api: Api<Agent> = Api::namespaced(ctx.client.clone(), &ns);
    if let Some(mut labels) = labels {
        labels.insert(CD_NAMESPACE_LABEL.into(), ns.clone());
        let body = serde_json::json!({
            "apiVersion": Agent::api_version(&()),
            "kind": Agent::kind(&()),
            "metadata": {"labels": labels},
        });
        api.patch(
            host_id,
            &PatchParams::apply(LABELS_MANAGER).force(),
            &Patch::Apply(body),
        )
        .await?;
    }
    let body = serde_json::json!({
        "apiVersion": Agent::api_version(&()),
        "kind": Agent::kind(&()),
        "status": status,
    });
    match api
        .patch_status(
            host_id,
            &PatchParams::apply(STATUS_MANAGER).force(),
            &Patch::Apply(body),
        )
        .await
    {
        Ok(_) => Ok(()),
        // A 404 means the Agent is not created yet (same batch): the caller retries.
        Err(e) => Err(e),
    }
}

async fn write_aci_status(ctx: &Context, cluster_id: &str) -> Result<(), kube::Error> {
    let Ok(rec) = ctx.store.cluster(cluster_id) else {
        return Ok(());
    };
    if rec.settings.agent_cluster_install.is_empty() {
        // Restored but not yet reconciled: the CD controller fills the names.
        return Ok(());
    }
    let api: Api<AgentClusterInstall> =
        Api::namespaced(ctx.client.clone(), &rec.settings.namespace);
    let previous = api
        .get_opt(&rec.settings.agent_cluster_install)
        .await?
        .and_then(|a| a.status.map(|s| s.conditions))
        .unwrap_or_default();
    let status = aci_status(
        &rec,
        &ctx.store.cfg,
        rec.spec_error.as_deref(),
        &previous,
        Timestamp::now(),
    );
    let body = serde_json::json!({
        "apiVersion": AgentClusterInstall::api_version(&()),
        "kind": AgentClusterInstall::kind(&()),
        "status": status,
    });
    api.patch_status(
        &rec.settings.agent_cluster_install,
        &PatchParams::apply(STATUS_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await?;
    Ok(())
}

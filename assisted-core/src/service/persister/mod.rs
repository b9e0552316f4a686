//! Writes the store back to the CRs: new Agents, Agent status (replaced whole by a JSON patch,
//! [`whole_status`]) and AgentClusterInstall status (server-side apply). The file store, from
//! which a restarted core continues, is the journal's (`journal.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store as Reflector};
use kube::{Resource, ResourceExt};
use tokio::sync::watch;

use crate::service::controllers::agent::AGENT_FINALIZER;
use crate::service::controllers::context::Context;
mod inventory;
mod status;

use crate::api::agent::{Agent, AgentSpec, AgentStatus};
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::infraenv::{ClusterReference, INFRAENV_NAME_LABEL, InfraEnv};
use crate::domain::HostSnapshot;
use crate::service::store::{Dirty, DirtyReceiver};
use inventory::inventory_labels;
use status::{aci_status, agent_status};

const STATUS_MANAGER: &str = "assisted-core-status";
const LABELS_MANAGER: &str = "assisted-core-labels";
const CD_NAMESPACE_LABEL: &str = "agent-install.openshift.io/clusterdeployment-namespace";

/// How many API writes the persister keeps in flight. The API server answers a status patch in
/// a few milliseconds but one at a time left 1,000 new hosts' Agents a minute behind; a bounded
/// number at once keeps it busy without crowding out the controllers' own requests.
pub const WRITE_PARALLELISM: usize = 16;

/// At most one status write per Agent and per AgentClusterInstall in this interval; the newest
/// state goes when it ends (`manager::pace`). A simulated host passes its install stages in
/// under a second and each was one write; a user reading the status sees it at most this late.
pub const STATUS_EVERY: Duration = Duration::from_secs(2);

/// What the persister last wrote, as content fingerprints (the status rendered without its
/// timestamps): a record whose content did not change is not written again. One `u64` a host.
struct Written {
    /// When each status was last written, keyed by [`status_key`].
    pace: manager::pace::Pace,
    agents: std::sync::Mutex<HashMap<String, u64>>,
    labels: std::sync::Mutex<HashMap<String, u64>>,
    acis: std::sync::Mutex<HashMap<String, u64>>,
    /// The conditions and logsURL of the last AgentClusterInstall status written, by cluster:
    /// the next write keeps their transition times and the URL without reading the ACI back
    /// (only the core writes that status).
    aci_status: std::sync::Mutex<HashMap<String, AciStatusKept>>,
}

/// What the next AgentClusterInstall status write keeps of the last.
#[derive(Clone)]
struct AciStatusKept {
    conditions: Vec<assisted_api::hive::ClusterInstallCondition>,
    logs_url: Option<String>,
}

impl Default for Written {
    fn default() -> Written {
        Written {
            pace: manager::pace::Pace::new(STATUS_EVERY),
            agents: Default::default(),
            labels: Default::default(),
            acis: Default::default(),
            aci_status: Default::default(),
        }
    }
}

/// The key under which [`Written::pace`] keeps a dirty record's last status write.
fn status_key(d: &Dirty) -> String {
    match d {
        Dirty::NewHost(id) | Dirty::Host(id) => format!("agent/{id}"),
        Dirty::Cluster(id) => format!("aci/{id}"),
    }
}

impl Written {
    /// True when `fingerprint` differs from the last one written for `key`.
    fn changed(map: &std::sync::Mutex<HashMap<String, u64>>, key: &str, fingerprint: u64) -> bool {
        let map = map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key) != Some(&fingerprint)
    }

    fn record(map: &std::sync::Mutex<HashMap<String, u64>>, key: &str, fingerprint: Option<u64>) {
        let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
        match fingerprint {
            Some(f) => map.insert(key.to_string(), f),
            None => map.remove(key),
        };
    }
}

/// A content fingerprint of a serialisable value.
fn fingerprint(value: &impl serde::Serialize) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(value)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// The dirty keys of one batch, in the order they are written: Agents are created before any
/// status is written to them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub new_hosts: Vec<String>,
    pub hosts: Vec<String>,
    pub clusters: Vec<String>,
}

impl Batch {
    pub fn of(keys: BTreeSet<Dirty>) -> Batch {
        let mut batch = Batch::default();
        for key in keys {
            match key {
                Dirty::NewHost(id) => batch.new_hosts.push(id),
                Dirty::Host(id) => batch.hosts.push(id),
                Dirty::Cluster(id) => batch.clusters.push(id),
            }
        }
        batch
    }
}

/// Runs `write` on every key with at most [`WRITE_PARALLELISM`] in flight; returns the keys
/// that failed.
async fn write_all<'a, F, Fut>(keys: &'a [String], write: F) -> Vec<&'a str>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<(), kube::Error>>,
{
    use futures::StreamExt;
    // The futures are made first: a stream that makes them from borrowed keys trips the
    // compiler's higher-ranked Send check when the persister is boxed.
    let writes: Vec<_> = keys
        .iter()
        .map(|key| {
            let fut = write(key);
            async move { fut.await.map_err(|e| (key.as_str(), e)) }
        })
        .collect();
    let results: Vec<Result<(), (&str, kube::Error)>> = futures::stream::iter(writes)
        .buffer_unordered(WRITE_PARALLELISM)
        .collect()
        .await;
    results
        .into_iter()
        .filter_map(|r| r.err())
        .map(|(key, e)| {
            tracing::debug!(%key, error = %e, "write failed; retrying");
            key
        })
        .collect()
}

/// Drains dirty keys in small batches until shutdown.
pub async fn run(
    ctx: Arc<Context>,
    mut rx: DirtyReceiver,
    agents: Reflector<Agent>,
    mut shutdown: watch::Receiver<bool>,
) {
    let written = Written::default();
    // The records waiting for their turn (one timer each).
    let waiting: Arc<std::sync::Mutex<BTreeSet<Dirty>>> = Arc::default();
    loop {
        let first = tokio::select! {
            d = rx.recv() => d,
            _ = shutdown.changed() => return,
        };
        let Some(first) = first else { return };
        // Coalesce a burst (a monitor pass marks many keys at once).
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut keys = BTreeSet::from([first]);
        while let Ok(d) = rx.try_recv() {
            keys.insert(d);
        }
        // A status written less than STATUS_EVERY ago waits for its turn; marked again then.
        let now = std::time::Instant::now();
        let (keys, later): (BTreeSet<Dirty>, BTreeSet<Dirty>) = keys.into_iter().partition(|d| {
            matches!(d, Dirty::NewHost(_))
                || written.pace.turn(&status_key(d), now) == manager::pace::Turn::Now
        });
        for d in later {
            if let manager::pace::Turn::After(wait) = written.pace.turn(&status_key(&d), now)
                && waiting
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(d.clone())
            {
                let (store, waiting) = (ctx.store.clone(), waiting.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&d);
                    store.mark(d);
                });
            }
        }
        let batch = Batch::of(keys);
        let mut retry: Vec<Dirty> = Vec::new();
        let created = std::sync::Mutex::new(Vec::new());
        let failed = write_all(&batch.new_hosts, |id| {
            create_agent(&ctx, id, &written, &created)
        })
        .await;
        retry.extend(failed.into_iter().map(|id| Dirty::NewHost(id.to_string())));
        announce_registrations(
            &ctx,
            created.into_inner().unwrap_or_else(|e| e.into_inner()),
        )
        .await;
        let failed = write_all(&batch.hosts, |id| {
            write_agent_status(&ctx, id, &agents, &written)
        })
        .await;
        retry.extend(failed.into_iter().map(|id| Dirty::Host(id.to_string())));
        let failed = write_all(&batch.clusters, |id| write_aci_status(&ctx, id, &written)).await;
        retry.extend(failed.into_iter().map(|id| Dirty::Cluster(id.to_string())));

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

/// The Agent CR of a newly registered host: named by the host UUID, in the InfraEnv's
/// namespace, owned by and labelled with the InfraEnv, bound to its ClusterDeployment.
///
/// It is created with the Agent controller's deregistration finalizer and, when the inventory
/// is already in, with its inventory labels: two writes fewer per host than adding them after.
pub fn new_agent(host: &HostSnapshot, ie: &crate::service::store::InfraEnvRecord) -> Agent {
    let mut labels: BTreeMap<String, String> = ie.agent_labels.clone();
    labels.extend(wanted_labels(host, &ie.namespace).unwrap_or_default());
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
            finalizers: Some(vec![AGENT_FINALIZER.into()]),
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

/// The labels the persister owns on an Agent: the inventory's and the ClusterDeployment
/// namespace; `None` before the inventory is in.
fn wanted_labels(host: &HostSnapshot, namespace: &str) -> Option<BTreeMap<String, String>> {
    let mut labels = inventory_labels(host.inventory.as_ref()?);
    labels.insert(CD_NAMESPACE_LABEL.into(), namespace.to_string());
    Some(labels)
}

/// Creates the Agent of a newly registered host; `Some((infra-env namespace, name))` when this
/// call created it (for the batch's registration event).
async fn create_agent(
    ctx: &Context,
    host_id: &str,
    written: &Written,
    created: &std::sync::Mutex<Vec<(String, String, String)>>,
) -> Result<(), kube::Error> {
    let found = ctx.store.view(|st| {
        let h = st.host(host_id)?;
        Some((h.clone(), st.infra_envs.get(&h.infra_env_id)?.clone()))
    });
    let Some((host, ie)) = found else {
        return Ok(());
    };
    let api: Api<Agent> = Api::namespaced(ctx.client.clone(), &ie.namespace);
    let params = PostParams {
        field_manager: Some(LABELS_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&params, &new_agent(&host, &ie)).await {
        Ok(_) => {
            tracing::info!(agent = %host_id, infraenv = %ie.name, "host registered: Agent created");
            Written::record(
                &written.labels,
                host_id,
                wanted_labels(&host, &ie.namespace).map(|l| fingerprint(&l)),
            );
            created.lock().unwrap_or_else(|e| e.into_inner()).push((
                ie.namespace,
                ie.name,
                host_id.to_string(),
            ));
            Ok(())
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// One HostRegistered event per InfraEnv and batch (an event per host was one more API write
/// per host, folded by the recorder into one series anyway).
async fn announce_registrations(ctx: &Context, created: Vec<(String, String, String)>) {
    let mut by_infra_env: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (ns, name, host) in created {
        by_infra_env.entry((ns, name)).or_default().push(host);
    }
    for ((ns, name), hosts) in by_infra_env {
        let on = super::controllers::events::reference(
            "agent-install.openshift.io/v1beta1",
            "InfraEnv",
            &ns,
            &name,
        );
        ctx.events
            .normal(&on, "HostRegistered", registration_note(&hosts))
            .await;
    }
}

/// "Host h registered; Agent h created", or for several "3 hosts registered; Agents created: a,
/// b, c" (the first ten named).
pub fn registration_note(hosts: &[String]) -> String {
    match hosts {
        [one] => format!("Host {one} registered; Agent {one} created"),
        _ => {
            let named: Vec<&str> = hosts.iter().take(10).map(String::as_str).collect();
            let more = hosts.len().saturating_sub(named.len());
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!(
                "{} hosts registered; Agents created: {}{tail}",
                hosts.len(),
                named.join(", ")
            )
        }
    }
}

async fn write_agent_status(
    ctx: &Context,
    host_id: &str,
    agents: &Reflector<Agent>,
    written: &Written,
) -> Result<(), kube::Error> {
    let now = Timestamp::now();
    let rendered = ctx.store.view(|st| {
        let (host, cluster) = st.host_with_cluster(host_id)?;
        let ie = st.infra_envs.get(&host.infra_env_id)?;
        let extra = st.host_extra.get(host_id);
        let render = |previous: &[_], now| {
            agent_status(
                host,
                cluster.map(|c| &c.snapshot),
                extra,
                extra.and_then(|e| e.spec_error.as_deref()),
                previous,
                None,
                now,
            )
        };
        // The content without its timestamps: unchanged means nothing to write.
        let content = fingerprint(&render(&[], Timestamp::UNIX_EPOCH));
        if !Written::changed(&written.agents, host_id, content) {
            return Some(None);
        }
        let cached = agents.get(&ObjectRef::new(host_id).within(&ie.namespace));
        let previous = cached
            .as_ref()
            .and_then(|a| a.status.as_ref().map(|s| s.conditions.clone()))
            .unwrap_or_default();
        let status = render(&previous, now);
        // Inventory labels change rarely: only write them when they differ from what was
        // written (at creation, usually) and from what the Agent carries.
        let labels = wanted_labels(host, &ie.namespace).filter(|want| {
            let have = cached
                .as_ref()
                .map(|a| a.labels().clone())
                .unwrap_or_default();
            Written::changed(&written.labels, host_id, fingerprint(want))
                && want.iter().any(|(k, v)| have.get(k) != Some(v))
        });
        Some(Some((status, content, ie.namespace.clone(), labels)))
    });
    let (status, content, ns, labels) = match rendered {
        // The host is gone: forget what was written for it.
        None => {
            Written::record(&written.agents, host_id, None);
            Written::record(&written.labels, host_id, None);
            return Ok(());
        }
        Some(None) => return Ok(()),
        Some(Some(r)) => r,
    };
    let api: Api<Agent> = Api::namespaced(ctx.client.clone(), &ns);
    if let Some(labels) = labels {
        write_labels(&api, host_id, &labels, written).await?;
    }
    // A 404 means the Agent is not created yet: the caller retries.
    api.patch_status(
        host_id,
        &PatchParams {
            field_manager: Some(STATUS_MANAGER.into()),
            ..Default::default()
        },
        &whole_status(&status).map_err(kube::Error::SerdeError)?,
    )
    .await?;
    Written::record(&written.agents, host_id, Some(content));
    written.pace.wrote(
        &status_key(&Dirty::Host(host_id.to_string())),
        std::time::Instant::now(),
    );
    Ok(())
}

/// The Agent's status replaced whole: one JSON patch operation, `add` at `/status`, which
/// replaces the member when it exists (RFC 6902). The core is the only writer of an Agent's
/// status, so a field it no longer sets (a condition, an NTP source, the installation disk)
/// goes with the next write, as it did when the status was a server-side apply, without the
/// apiserver merging and tracking the status field by field against what was applied before:
/// that apply was most of its CPU in a 1,000-host write-back (docs/benchmarks.md).
pub fn whole_status(status: &AgentStatus) -> Result<Patch<()>, serde_json::Error> {
    let ops = serde_json::json!([{"op": "add", "path": "/status", "value": status}]);
    Ok(Patch::Json(serde_json::from_value(ops)?))
}

async fn write_aci_status(
    ctx: &Context,
    cluster_id: &str,
    written: &Written,
) -> Result<(), kube::Error> {
    let content = ctx.store.view(|st| {
        let rec = st.clusters.get(cluster_id)?;
        // Restored but not yet reconciled: the CD controller fills the names.
        if rec.settings.agent_cluster_install.is_empty() {
            return None;
        }
        let status = aci_status(
            rec,
            &ctx.store.cfg,
            rec.spec_error.as_deref(),
            &[],
            Timestamp::UNIX_EPOCH,
        );
        Some((
            fingerprint(&status),
            rec.settings.namespace.clone(),
            rec.settings.agent_cluster_install.clone(),
        ))
    });
    let Some((content, ns, name)) = content else {
        Written::record(&written.acis, cluster_id, None);
        return Ok(());
    };
    if !Written::changed(&written.acis, cluster_id, content) {
        return Ok(());
    }
    let api: Api<AgentClusterInstall> = Api::namespaced(ctx.client.clone(), &ns);
    let kept = aci_status_kept(&api, written, cluster_id, &name).await?;
    let logs_url = logs_url(ctx, cluster_id, kept.logs_url.as_deref());
    let previous = kept.conditions;
    let now = Timestamp::now();
    let Some(mut status) = ctx.store.view(|st| {
        let rec = st.clusters.get(cluster_id)?;
        Some(aci_status(
            rec,
            &ctx.store.cfg,
            rec.spec_error.as_deref(),
            &previous,
            now,
        ))
    }) else {
        return Ok(());
    };
    status.debug_info.logs_url = Some(logs_url.clone());
    let next = AciStatusKept {
        conditions: status.conditions.clone(),
        logs_url: Some(logs_url),
    };
    let body = serde_json::json!({
        "apiVersion": AgentClusterInstall::api_version(&()),
        "kind": AgentClusterInstall::kind(&()),
        "status": status,
    });
    api.patch_status(
        &name,
        &PatchParams::apply(STATUS_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await?;
    Written::record(&written.acis, cluster_id, Some(content));
    written.pace.wrote(
        &status_key(&Dirty::Cluster(cluster_id.to_string())),
        std::time::Instant::now(),
    );
    if let Ok(mut m) = written.aci_status.lock() {
        m.insert(cluster_id.to_string(), next);
    }
    Ok(())
}

/// The Agent's inventory labels, applied under their own field manager.
async fn write_labels(
    api: &Api<Agent>,
    host_id: &str,
    labels: &BTreeMap<String, String>,
    written: &Written,
) -> Result<(), kube::Error> {
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
    Written::record(&written.labels, host_id, Some(fingerprint(labels)));
    Ok(())
}

/// What the ACI's status keeps from before: as last written, else as read (not written since
/// the core started).
async fn aci_status_kept(
    api: &Api<AgentClusterInstall>,
    written: &Written,
    cluster_id: &str,
    name: &str,
) -> Result<AciStatusKept, kube::Error> {
    let kept = written
        .aci_status
        .lock()
        .ok()
        .and_then(|m| m.get(cluster_id).cloned());
    Ok(match kept {
        Some(k) => k,
        // Not written since the core started: read what is there.
        None => {
            let status = api.get_opt(name).await?.and_then(|a| a.status);
            AciStatusKept {
                logs_url: status.as_ref().and_then(|s| s.debug_info.logs_url.clone()),
                conditions: status.map(|s| s.conditions).unwrap_or_default(),
            }
        }
    })
}

/// `status.debugInfo.logsURL`: the cluster's logs bundle, with a token for this cluster. Kept
/// once written, as upstream does (a token is signed afresh each time: a new one would change
/// the status on every write).
fn logs_url(ctx: &Context, cluster_id: &str, previous: Option<&str>) -> String {
    let base = format!(
        "{}/api/assisted-install/v2/clusters/{cluster_id}/logs",
        ctx.images.urls.agent_api
    );
    previous
        .map(str::to_string)
        .filter(|u| u.starts_with(&format!("{base}?api_key=")))
        .unwrap_or_else(|| {
            let token = ctx
                .keys
                .sign(&crate::service::auth::Claims::cluster(cluster_id));
            format!("{base}?api_key={token}")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_creates_agents_before_writing_status() {
        let keys = BTreeSet::from([
            Dirty::Cluster("c1".into()),
            Dirty::Host("h2".into()),
            Dirty::NewHost("h1".into()),
            Dirty::Host("h1".into()),
        ]);
        assert_eq!(
            Batch::of(keys),
            Batch {
                new_hosts: vec!["h1".into()],
                hosts: vec!["h1".into(), "h2".into()],
                clusters: vec!["c1".into()],
            }
        );
    }

    #[test]
    fn unchanged_content_is_not_written_again() {
        let written = Written::default();
        let a = fingerprint(&serde_json::json!({"state": "known"}));
        let b = fingerprint(&serde_json::json!({"state": "insufficient"}));
        assert_ne!(a, b);
        assert!(Written::changed(&written.agents, "h1", a));
        Written::record(&written.agents, "h1", Some(a));
        assert!(!Written::changed(&written.agents, "h1", a));
        assert!(Written::changed(&written.agents, "h1", b));
        // A host that went away is forgotten; its next appearance is written.
        Written::record(&written.agents, "h1", None);
        assert!(Written::changed(&written.agents, "h1", a));
    }

    #[test]
    fn the_content_fingerprint_ignores_the_clock() {
        let mut host = crate::domain::HostSnapshot::new_registered(
            "33333333-3333-3333-3333-333333333333",
            "ie",
            None,
            Timestamp::UNIX_EPOCH,
        );
        host.status = crate::domain::HostStatus::Known;
        let render = |now| agent_status(&host, None, None, None, &[], None, now);
        let later = Timestamp::from_second(1_000_000).unwrap();
        // Rendered at different times, the status differs only in its condition timestamps.
        assert_ne!(
            serde_json::to_value(render(Timestamp::UNIX_EPOCH)).unwrap(),
            serde_json::to_value(render(later)).unwrap()
        );
        // The persister fingerprints the epoch rendering: the same content, the same print.
        assert_eq!(
            fingerprint(&render(Timestamp::UNIX_EPOCH)),
            fingerprint(&render(Timestamp::UNIX_EPOCH))
        );
    }

    /// An Agent as the apiserver holds it after `patch`, a JSON patch of `add` operations (the
    /// RFC 6902 semantics: `add` of an existing member replaces it).
    fn patched(mut agent: serde_json::Value, patch: &Patch<()>) -> serde_json::Value {
        let Patch::Json(ops) = patch else {
            panic!("the Agent status is written as a JSON patch, not {patch:?}");
        };
        for op in serde_json::to_value(ops).unwrap().as_array().unwrap() {
            assert_eq!(op["op"], "add", "{op}");
            let member = op["path"].as_str().unwrap().strip_prefix('/').unwrap();
            assert!(!member.contains('/'), "{op}: one top-level member");
            agent[member] = op["value"].clone();
        }
        agent
    }

    #[test]
    fn a_field_the_core_no_longer_sets_is_removed_from_the_agent_status() {
        use crate::api::agent::HostNtpSource;
        use crate::api::common::OpenShiftCondition;
        let condition = |type_: &str| OpenShiftCondition {
            type_: type_.into(),
            status: "True".into(),
            ..Default::default()
        };
        let before = AgentStatus {
            conditions: vec![condition("SpecSynced"), condition("Bound")],
            ntp_sources: vec![HostNtpSource::default(), HostNtpSource::default()],
            installation_disk_id: Some("/dev/sda".into()),
            kind: Some("AddToExistingClusterHost".into()),
            ..Default::default()
        };
        let live = serde_json::json!({
            "apiVersion": "agent-install.openshift.io/v1beta1",
            "kind": "Agent",
            "metadata": {"name": "h1", "namespace": "ns"},
            "spec": {"approved": true},
            "status": before,
        });
        // A condition gone, a list emptied, optional fields unset: all absent from the JSON.
        let after = AgentStatus {
            conditions: vec![condition("SpecSynced")],
            ..Default::default()
        };
        let agent = patched(live.clone(), &whole_status(&after).unwrap());
        assert_eq!(agent["status"], serde_json::to_value(&after).unwrap());
        for gone in ["ntpSources", "installation_disk_id", "kind"] {
            assert!(agent["status"].get(gone).is_none(), "{gone} was kept");
        }
        assert_eq!(agent["status"]["conditions"].as_array().unwrap().len(), 1);
        // Only the status is written.
        assert_eq!(agent["spec"], live["spec"]);
        assert_eq!(agent["metadata"], live["metadata"]);
        // An Agent without a status yet gets the whole of it.
        let mut fresh = live;
        fresh.as_object_mut().unwrap().remove("status");
        let agent = patched(fresh, &whole_status(&before).unwrap());
        assert_eq!(agent["status"], serde_json::to_value(&before).unwrap());
    }

    #[test]
    fn one_registration_event_names_the_hosts() {
        assert_eq!(
            registration_note(&["h1".into()]),
            "Host h1 registered; Agent h1 created"
        );
        assert_eq!(
            registration_note(&["h1".into(), "h2".into()]),
            "2 hosts registered; Agents created: h1, h2"
        );
        let many: Vec<String> = (0..12).map(|i| format!("h{i}")).collect();
        assert!(registration_note(&many).ends_with("h8, h9 and 2 more"));
    }

    #[test]
    fn a_new_agent_carries_the_finalizer_and_its_inventory_labels() {
        let mut host = crate::domain::HostSnapshot::new_registered(
            "33333333-3333-3333-3333-333333333333",
            "ie",
            None,
            Timestamp::UNIX_EPOCH,
        );
        let ie = crate::service::store::InfraEnvRecord {
            namespace: "ns".into(),
            name: "ie".into(),
            ..Default::default()
        };
        let agent = new_agent(&host, &ie);
        assert_eq!(agent.finalizers(), [AGENT_FINALIZER.to_string()]);
        assert!(!agent.labels().contains_key(CD_NAMESPACE_LABEL));
        host.inventory = Some(Default::default());
        let agent = new_agent(&host, &ie);
        assert_eq!(agent.labels()[CD_NAMESPACE_LABEL], "ns");
        assert_eq!(agent.labels()[INFRAENV_NAME_LABEL], "ie");
    }
}

//! What every controller shares: the client, the store, the caches the reconciles read, the
//! metrics and the service-wide image settings.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use manager::controller::Error;
use manager::metrics::ControllerMetrics;
use manager::runtime::{SharedRegistry, WatchScope};
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Mutex;

use super::events;
use super::prepare::Preparer;
use super::release_info::{ReleaseInfoSource, TagReleaseInfo};
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::hive::{ClusterDeployment, ClusterImageSet};
use crate::api::infraenv::InfraEnvStatus;
use crate::service::store::Store;
use crate::service::tls::ServingCertificate;
use crate::service::urls::ServiceUrls;
use k8s_openapi::api::core::v1::Secret;

/// Reconcile counters of the core's controllers, and what the core holds in memory (with
/// shards: how the fleet is split).
pub struct Metrics {
    pub agent: ControllerMetrics,
    pub cluster: ControllerMetrics,
    pub infraenv: ControllerMetrics,
    /// `capoa_core_clusters`: clusters in the store.
    pub clusters: Gauge<i64>,
    /// `capoa_core_hosts`: hosts in the store, bound or not.
    pub hosts: Gauge<i64>,
}

impl Metrics {
    pub fn register(registry: &SharedRegistry) -> Metrics {
        let metrics = Metrics {
            agent: ControllerMetrics::register(registry, "assisted-core-agent"),
            cluster: ControllerMetrics::register(registry, "assisted-core-clusterdeployment"),
            infraenv: ControllerMetrics::register(registry, "assisted-core-infraenv"),
            clusters: Gauge::default(),
            hosts: Gauge::default(),
        };
        if let Ok(mut registry) = registry.lock() {
            registry.register(
                "core_clusters",
                "Clusters the core holds",
                metrics.clusters.clone(),
            );
            registry.register("core_hosts", "Hosts the core holds", metrics.hosts.clone());
        }
        metrics
    }

    /// Records what the store holds now.
    pub fn held(&self, store: &Store) {
        let (clusters, hosts) = store.view(|st| {
            let hosts = st.host_cluster.len() + st.unbound.len();
            (st.clusters.len(), hosts)
        });
        self.clusters
            .set(i64::try_from(clusters).unwrap_or(i64::MAX));
        self.hosts.set(i64::try_from(hosts).unwrap_or(i64::MAX));
    }
}

/// Shared by every controller.
pub struct Context {
    pub client: Client,
    pub store: Arc<Store>,
    /// Cluster artifacts: `<files_root>/<cluster id>/<file>`.
    pub files_root: PathBuf,
    pub release_info: Box<dyn ReleaseInfoSource>,
    pub preparer: Arc<dyn Preparer>,
    /// Signs and checks agent tokens (ES256 JWTs with an `infra_env_id`).
    pub keys: Arc<crate::service::auth::Keys>,
    pub events: events::Events,
    pub metrics: Metrics,
    /// Where agents reach the core and the agent image: what every discovery image carries.
    pub images: ImageSettings,
    /// Clusters whose preparation is running (a monitor pass may ask twice).
    pub(crate) preparing: Mutex<HashSet<String>>,
    /// The watch caches the reconciles read instead of the API server, once the watches run
    /// (`run`): AgentClusterInstalls (without status) and ClusterDeployments (without status),
    /// and the Secrets' metadata, whose resourceVersion says whether [`Context::recent`]'s copy
    /// is current.
    pub(crate) stores: std::sync::OnceLock<Stores>,
    /// Objects read by GET lately (Secrets, ClusterImageSets).
    pub(crate) recent: manager::cache::Recent,
    /// Secrets applied lately (the install's credentials), not applied again while they hold.
    pub(crate) applied: manager::controller::Applied,
    /// The InfraEnv statuses this core wrote lately: the status it decides from while the
    /// InfraEnv cache lags its own write (see `infraenv::sync`).
    pub(crate) infra_env_statuses: manager::cache::LastWritten<InfraEnvStatus>,
    /// The namespace and shard (`--watch-filter`) this core serves: its watches of
    /// ClusterDeployments, AgentClusterInstalls, InfraEnvs and Agents follow it.
    pub scope: WatchScope,
}

/// See [`Context::stores`].
#[derive(Clone)]
pub(crate) struct Stores {
    pub acis: kube::runtime::reflector::Store<AgentClusterInstall>,
    pub cds: kube::runtime::reflector::Store<ClusterDeployment>,
    pub secrets: kube::runtime::reflector::Store<Secret>,
    pub image_sets: kube::runtime::reflector::Store<ClusterImageSet>,
}

/// How long a status this core wrote stands for the object's, while the watch cache lags.
const LAST_WRITTEN_FOR: Duration = Duration::from_secs(60);

/// How long a ClusterImageSet read is taken as current (Secrets: while their resourceVersion
/// holds).
const RECENT_FOR: Duration = Duration::from_secs(30);

/// How long a Secret applied is taken to hold what was applied (an edit or a deletion of it is
/// put back this late at most).
const REAPPLY_AFTER: Duration = Duration::from_secs(600);

impl Context {
    /// A Secret: the copy read last while the Secrets watch says it has not changed, else
    /// through the API server.
    pub(crate) async fn secret(&self, ns: &str, name: &str) -> Result<Option<Secret>, kube::Error> {
        let key = format!("Secret/{ns}/{name}");
        let version = self.stores.get().and_then(|s| {
            s.secrets
                .get(&ObjectRef::new(name).within(ns))
                .and_then(|o| o.metadata.resource_version.clone())
        });
        let api = Api::<Secret>::namespaced(self.client.clone(), ns);
        self.recent
            .get(key, version.as_deref(), api.get_opt(name))
            .await
    }

    /// Whether `secret` was applied as it is now less than [`REAPPLY_AFTER`] ago: then it is
    /// not applied again. (The install's credential Secrets carry
    /// `hive.openshift.io/secret-type`, which the Secrets watch leaves out: one deleted by
    /// hand comes back within [`REAPPLY_AFTER`].)
    pub(crate) fn secret_applied(&self, secret: &Secret) -> (bool, String, u64) {
        let key = format!(
            "Secret/{}/{}",
            secret.metadata.namespace.as_deref().unwrap_or_default(),
            secret.metadata.name.as_deref().unwrap_or_default()
        );
        let hash = manager::controller::Applied::hash(secret);
        (self.applied.is_current(&key, hash), key, hash)
    }

    /// A ClusterImageSet: from the watch cache once it runs, else as read in the last
    /// [`RECENT_FOR`].
    pub(crate) async fn image_set(
        &self,
        name: &str,
    ) -> Result<Option<ClusterImageSet>, kube::Error> {
        if let Some(s) = self.stores.get() {
            // Listed once before it answers (at once after), so a set is never missed.
            let _ = s.image_sets.wait_until_ready().await;
            return Ok(s
                .image_sets
                .get(&ObjectRef::new(name))
                .map(|o| (*o).clone()));
        }
        let api = Api::<ClusterImageSet>::all(self.client.clone());
        self.recent
            .get(format!("ClusterImageSet//{name}"), None, api.get_opt(name))
            .await
    }

    /// An AgentClusterInstall without status, from the watch cache once it runs.
    pub(crate) async fn aci(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<AgentClusterInstall>, kube::Error> {
        match self.stores.get() {
            Some(s) => Ok(manager::cache::get(&s.acis, ns, name)),
            None => {
                Api::<AgentClusterInstall>::namespaced(self.client.clone(), ns)
                    .get_opt(name)
                    .await
            }
        }
    }

    /// A ClusterDeployment without status, from the watch cache once it runs.
    pub(crate) async fn cluster_deployment(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<ClusterDeployment>, kube::Error> {
        match self.stores.get() {
            Some(s) => Ok(manager::cache::get(&s.cds, ns, name)),
            None => {
                Api::<ClusterDeployment>::namespaced(self.client.clone(), ns)
                    .get_opt(name)
                    .await
            }
        }
    }
}

impl Context {
    pub fn new(
        client: Client,
        store: Arc<Store>,
        files_root: PathBuf,
        preparer: Arc<dyn Preparer>,
        keys: Arc<crate::service::auth::Keys>,
        images: ImageSettings,
        registry: &SharedRegistry,
    ) -> Context {
        Context {
            events: events::Events::new(client.clone()),
            metrics: Metrics::register(registry),
            client,
            store,
            files_root,
            release_info: Box::new(TagReleaseInfo),
            preparer,
            keys,
            images,
            preparing: Mutex::new(HashSet::new()),
            stores: std::sync::OnceLock::new(),
            recent: manager::cache::Recent::new(RECENT_FOR),
            applied: manager::controller::Applied::new(REAPPLY_AFTER),
            infra_env_statuses: manager::cache::LastWritten::new(LAST_WRITTEN_FOR),
            scope: WatchScope::default(),
        }
    }

    /// The same context serving only `scope` (a namespace, a shard).
    pub fn serving(self, scope: WatchScope) -> Context {
        Context { scope, ..self }
    }

    /// A cluster artifact, `None` when absent or unreadable.
    pub async fn file(&self, cluster_id: &str, name: &str) -> Option<Vec<u8>> {
        if cluster_id.is_empty() || cluster_id.contains(['/', '.']) {
            return None;
        }
        tokio::fs::read(self.files_root.join(cluster_id).join(name))
            .await
            .ok()
    }

    /// Drops a deleted cluster's artifacts.
    pub async fn forget_cluster(&self, cluster_id: &str) {
        if cluster_id.is_empty() || cluster_id.contains(['/', '.']) {
            return;
        }
        // The persister's state file is in that directory too.
        let _ = tokio::fs::remove_dir_all(self.files_root.join(cluster_id)).await;
    }
}

/// The service-wide inputs of every image: where agents reach the core, what they run and
/// the base live ISOs images are built on (`--os-images`).
#[derive(Debug, Clone, Default)]
pub struct ImageSettings {
    pub urls: ServiceUrls,
    /// The discovery agent image the ignition runs.
    pub agent_image: String,
    pub os_images: Vec<crate::service::images::OsImage>,
    /// The certificate the https listeners serve (`None`: every URL is http).
    pub serving: Option<Arc<ServingCertificate>>,
}

/// API failures are retried after a pause and counted by phase; invalid input never gets here.
pub(crate) fn error_policy<K>(
    metrics: impl Fn(&Context) -> &ControllerMetrics,
) -> impl Fn(Arc<K>, &Error, Arc<Context>) -> Action {
    move |_obj, err, ctx| {
        metrics(&ctx).failed(err.phase());
        tracing::warn!(error = %err, phase = err.phase(), "reconcile failed; retrying");
        Action::requeue(Duration::from_secs(5))
    }
}

//! The core's Kubernetes controllers (InfraEnv, Agent, ClusterDeployment and
//! AgentClusterInstall, the day-2 approver) and what they share. The persister that writes the
//! store back and the monitor live beside this module (`service::persister`, `service::monitor`)
//! and are started beside it by `service::server`.

pub mod agent;
pub mod cluster;
pub mod conditions;
pub mod day2;
pub mod events;
pub mod infraenv;
pub mod mirror_config;
pub mod prepare;
pub mod status;
pub mod unsupported;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use kube::Client;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use manager::cache::Cached;
use manager::metrics::ControllerMetrics;
use manager::runtime::SharedRegistry;
use tokio::sync::{Mutex, watch};

use crate::api::agent::Agent;
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::hive::{ClusterDeployment, ClusterImageSet};
use crate::api::infraenv::InfraEnv;
use crate::api::nmstateconfig::NMStateConfig;
use crate::service::store::{ClusterRecord, Store};
use k8s_openapi::api::core::v1::Secret;

/// Reconcile errors, one variant per phase (read, apply, status), counted by phase in
/// `capoa_reconcile_errors_total`. Invalid input is never an error: it is a condition the
/// user reads, and the controller waits for a change.
pub use manager::controller::Error;

/// Where an object stands with our finalizer (pure; the reconcile acts on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalizerStep {
    /// Live without our finalizer: add it before registering anything.
    Add,
    /// Live with our finalizer.
    Proceed,
    /// Being deleted with our finalizer: deregister, then release it.
    Cleanup,
    /// Being deleted and already released: nothing left to do.
    Gone,
}

pub fn finalizer_step<K: kube::Resource>(obj: &K, finalizer: &str) -> FinalizerStep {
    let ours = obj
        .meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer);
    match (obj.meta().deletion_timestamp.is_some(), ours) {
        (false, false) => FinalizerStep::Add,
        (false, true) => FinalizerStep::Proceed,
        (true, true) => FinalizerStep::Cleanup,
        (true, false) => FinalizerStep::Gone,
    }
}

/// Reconcile counters of the core's controllers.
pub struct Metrics {
    pub agent: ControllerMetrics,
    pub cluster: ControllerMetrics,
    pub infraenv: ControllerMetrics,
}

impl Metrics {
    pub fn register(registry: &SharedRegistry) -> Metrics {
        Metrics {
            agent: ControllerMetrics::register(registry, "assisted-core-agent"),
            cluster: ControllerMetrics::register(registry, "assisted-core-clusterdeployment"),
            infraenv: ControllerMetrics::register(registry, "assisted-core-infraenv"),
        }
    }
}

/// Generates install artifacts for a cluster that entered preparation (install backend).
pub trait Preparer: Send + Sync {
    fn prepare(
        &self,
        cluster: ClusterRecord,
        infra_envs: prepare::InfraEnvInputs,
    ) -> BoxFuture<'static, Result<crate::domain::ReleaseInfo, String>>;
}

/// Shared by every controller.
pub struct Context {
    pub client: Client,
    pub store: Arc<Store>,
    /// Cluster artifacts: `<files_root>/<cluster id>/<file>`.
    pub files_root: PathBuf,
    pub release_info: Box<dyn cluster::ReleaseInfoSource>,
    pub preparer: Arc<dyn Preparer>,
    /// Signs and checks agent tokens (ES256 JWTs with an `infra_env_id`).
    pub keys: Arc<crate::service::auth::Keys>,
    pub events: events::Events,
    pub metrics: Metrics,
    /// Where agents reach the core and the agent image: what every discovery image carries.
    pub images: infraenv::ImageSettings,
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
}

/// See [`Context::stores`].
#[derive(Clone)]
pub(crate) struct Stores {
    pub acis: kube::runtime::reflector::Store<AgentClusterInstall>,
    pub cds: kube::runtime::reflector::Store<ClusterDeployment>,
    pub secrets: kube::runtime::reflector::Store<Secret>,
    pub image_sets: kube::runtime::reflector::Store<ClusterImageSet>,
}

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
        images: infraenv::ImageSettings,
        registry: &SharedRegistry,
    ) -> Context {
        Context {
            events: events::Events::new(client.clone()),
            metrics: Metrics::register(registry),
            client,
            store,
            files_root,
            release_info: Box::new(cluster::TagReleaseInfo),
            preparer,
            keys,
            images,
            preparing: Mutex::new(HashSet::new()),
            stores: std::sync::OnceLock::new(),
            recent: manager::cache::Recent::new(RECENT_FOR),
            applied: manager::controller::Applied::new(REAPPLY_AFTER),
        }
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

/// API failures are retried after a pause and counted by phase; invalid input never gets here.
fn error_policy<K>(
    metrics: impl Fn(&Context) -> &ControllerMetrics,
) -> impl Fn(Arc<K>, &Error, Arc<Context>) -> Action {
    move |_obj, err, ctx| {
        metrics(&ctx).failed(err.phase());
        tracing::warn!(error = %err, phase = err.phase(), "reconcile failed; retrying");
        Action::requeue(Duration::from_secs(5))
    }
}

/// Before the REST API serves after a (re)start: registers every cluster and infra-env once,
/// so agents and installers of a running install are recognised at once rather than refused
/// until the controllers' first reconcile. Best effort: the controllers retry what fails here.
pub async fn initial_sync(ctx: &Context) {
    let cds = Api::<ClusterDeployment>::all(ctx.client.clone());
    match cds.list(&Default::default()).await {
        Ok(list) => {
            for cd in list
                .items
                .iter()
                .filter(|cd| cd.metadata.deletion_timestamp.is_none())
            {
                if let Err(e) = cluster::sync(cd, ctx).await {
                    tracing::debug!(error = %e, "initial cluster sync");
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "initial sync: cannot list ClusterDeployments"),
    }
    let ies = Api::<InfraEnv>::all(ctx.client.clone());
    match ies.list(&Default::default()).await {
        Ok(list) => {
            for ie in list
                .items
                .iter()
                .filter(|ie| ie.metadata.deletion_timestamp.is_none())
            {
                if let Err(e) = infraenv::sync(ie, ctx).await {
                    tracing::debug!(error = %e, "initial infra-env sync");
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "initial sync: cannot list InfraEnvs"),
    }
}

/// What the Agent cache keeps of an Agent's status: the conditions, whose transition times the
/// persister carries over.
fn keep_spec_labels_and_conditions(agent: &mut Agent) {
    if let Some(status) = agent.status.take() {
        agent.status = Some(crate::api::agent::AgentStatus {
            conditions: status.conditions,
            ..Default::default()
        });
    }
}

/// The Agents watch, shared by the Agent controller and the persister, which read no more than
/// the spec, labels and conditions: the rest of the status (inventory, validations) and
/// managedFields are dropped, most of an Agent's size (see docs/benchmarks.md).
pub fn watch_agents(client: Client, shutdown: watch::Receiver<bool>) -> Cached<Agent> {
    manager::cache::watch(
        Api::<Agent>::all(client),
        watcher::Config::default(),
        1,
        keep_spec_labels_and_conditions,
        shutdown,
    )
}

/// Runs the controllers until `shutdown` (the persister, the monitor and the day-2 loop run
/// beside them: `service::server`). `agents` is [`watch_agents`]'s.
pub async fn run(ctx: Arc<Context>, mut agents: Cached<Agent>, shutdown: watch::Receiver<bool>) {
    let client = ctx.client.clone();
    let stop = || {
        let mut s = shutdown.clone();
        async move {
            let _ = s.wait_for(|v| *v).await;
        }
    };
    let agent_store = agents.store.clone();
    let agent_trigger = agents.triggers.remove(0);
    let agent_ctl = Controller::for_stream(agent_trigger, agent_store.clone())
        .graceful_shutdown_on(stop())
        .run(
            agent::reconcile,
            error_policy(|c| &c.metrics.agent),
            ctx.clone(),
        )
        .for_each(|_| async {});

    // The other kinds too: one cache and one backoff per watched kind (manager::cache), so a
    // failing watch never pauses another and each re-lists at once after an apiserver restart.
    // The reconciles read from the API server; these stores only find what to trigger.
    let mut cds = manager::cache::watch(
        Api::<ClusterDeployment>::all(client.clone()),
        watcher::Config::default(),
        2,
        |cd: &mut ClusterDeployment| cd.status = None,
        shutdown.clone(),
    );
    let mut acis = manager::cache::watch(
        Api::<AgentClusterInstall>::all(client.clone()),
        watcher::Config::default(),
        1,
        |aci: &mut AgentClusterInstall| aci.status = None,
        shutdown.clone(),
    );
    let mut infraenvs = manager::cache::watch(
        Api::<InfraEnv>::all(client.clone()),
        watcher::Config::default(),
        1,
        manager::cache::keep,
        shutdown.clone(),
    );
    let mut nmstate_configs = manager::cache::watch(
        Api::<NMStateConfig>::all(client.clone()),
        watcher::Config::default(),
        1,
        |c: &mut NMStateConfig| c.spec = Default::default(),
        shutdown.clone(),
    );
    // Secrets only trigger: their data is read from the API server when an image is built.
    let mut secrets = manager::cache::watch(
        Api::<Secret>::all(client.clone()),
        watcher::Config::default().labels("!hive.openshift.io/secret-type"),
        1,
        |secret: &mut Secret| {
            secret.data = None;
            secret.string_data = None;
        },
        shutdown.clone(),
    );

    // Read, never a trigger: the release of a cluster (one per cluster, small).
    let image_sets = manager::cache::watch(
        Api::<ClusterImageSet>::all(client.clone()),
        watcher::Config::default(),
        0,
        manager::cache::keep,
        shutdown.clone(),
    );
    let _ = ctx.stores.set(Stores {
        acis: acis.store.clone(),
        cds: cds.store.clone(),
        secrets: secrets.store.clone(),
        image_sets: image_sets.store.clone(),
    });
    let cd_ctl = Controller::for_stream(cds.triggers.remove(0), cds.store.clone())
        // An ACI change reconciles the ClusterDeployment its clusterDeploymentRef names.
        .watches_stream(acis.triggers.remove(0), |aci: AgentClusterInstall| {
            let ns = kube::ResourceExt::namespace(&aci).unwrap_or_default();
            Some(
                ObjectRef::<ClusterDeployment>::new(&aci.spec.cluster_deployment_ref.name)
                    .within(&ns),
            )
        })
        .graceful_shutdown_on(stop())
        .run(
            cluster::reconcile,
            error_policy(|c| &c.metrics.cluster),
            ctx.clone(),
        )
        .for_each(|_| async {});

    let ie_store = infraenvs.store.clone();
    let in_namespace_of = move |ns: Option<String>| {
        manager::cache::in_namespace(&ie_store, &ns.unwrap_or_default())
            .iter()
            .map(ObjectRef::from_obj)
            .collect::<Vec<_>>()
    };
    let (by_ns1, by_ns2, by_ns3) = (
        in_namespace_of.clone(),
        in_namespace_of.clone(),
        in_namespace_of,
    );
    let ie_ctl = Controller::for_stream(infraenvs.triggers.remove(0), infraenvs.store.clone())
        // NMStateConfigs, pull secrets and ClusterDeployments change what an InfraEnv's image
        // holds; re-run every InfraEnv of the namespace (they are few).
        .watches_stream(nmstate_configs.triggers.remove(0), move |o| {
            by_ns1(o.metadata.namespace)
        })
        .watches_stream(secrets.triggers.remove(0), move |o| {
            by_ns2(o.metadata.namespace)
        })
        .watches_stream(cds.triggers.remove(0), move |o| {
            by_ns3(o.metadata.namespace)
        })
        .graceful_shutdown_on(stop())
        .run(
            infraenv::reconcile,
            error_policy(|c| &c.metrics.infraenv),
            ctx.clone(),
        )
        .for_each(|_| async {});

    tokio::join!(agent_ctl, cd_ctl, ie_ctl);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn finalizer_steps() {
        let mut ie = InfraEnv::new("ie", Default::default());
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Add);
        ie.metadata.finalizers = Some(vec!["theirs".into(), "ours".into()]);
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Proceed);
        ie.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Cleanup);
        ie.metadata.finalizers = Some(vec!["theirs".into()]);
        assert_eq!(finalizer_step(&ie, "ours"), FinalizerStep::Gone);
    }
}

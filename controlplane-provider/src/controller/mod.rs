//! The OpenshiftAssistedControlPlane controller, in the pipeline shape of `docs/architecture.md`
//! ("How to add a controller"): [`dereference`] (the only reads) → [`plan`] (pure, built from
//! [`hive`], [`release`], [`install_config`], [`machines`], [`kubeconfig`], [`status`]) →
//! [`apply`] (server-side apply in a fixed order, then status).

pub mod apply;
pub mod blocked;
pub mod dereference;
pub mod etcd;
pub mod hive;
pub mod hooks;
pub mod image_mode;
pub mod install;
pub mod install_config;
pub mod kubeconfig;
pub mod labels;
pub mod machines;
pub mod plan;
pub mod registry;
pub mod release;
pub mod release_lookup;
pub mod remediation;
pub mod status;
pub mod upgrade;

use std::sync::Arc;
use std::time::Duration;

use assisted_api::{AgentClusterInstall, ClusterImageSet};
use external_types::capi::{Cluster, Machine, MachineDeployment};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, ResourceExt};
use manager::cache;
use manager::metrics::ControllerMetrics;
use manager::runtime::{SharedRegistry, WatchScope};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;

use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

/// One field manager for everything this controller writes.
pub const FIELD_MANAGER: &str = "openshift-assisted-controlplane";
/// The finalizer name CAPOA uses, so objects move between the two implementations.
pub const FINALIZER: &str =
    "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/deprovision";
/// How often a steady control plane is looked at again even if nothing changed.
const RESYNC: Duration = Duration::from_secs(600);
/// At most one status write per control plane in this interval; the newest status goes when it
/// ends (`manager::pace`). An install's states came quicker than anyone reads them.
pub const STATUS_EVERY: Duration = Duration::from_secs(2);

pub use manager::controller::{Applied, Error};

pub struct Context {
    pub client: Client,
    /// Release tags resolved to digests through their registries.
    pub releases: release_lookup::Resolver,
    pub recorder: Recorder,
    pub metrics: ControllerMetrics,
    pub install: InstallMetrics,
    /// What this manager last applied: an unchanged body is not sent again within
    /// [`RESYNC`] (see `manager::controller::Applied`).
    pub applied: Applied,
    /// When each control plane's status was last written ([`STATUS_EVERY`]).
    pub status_pace: manager::pace::Pace,
    /// The watch caches the reconcile reads instead of the API server.
    pub caches: dereference::Caches,
}

/// `capoa_install_percentage{namespace, control_plane}`: each cluster's install progress, as its
/// AgentClusterInstall reports it, for dashboards and alerts on stuck installs.
#[derive(Clone, Default)]
pub struct InstallMetrics(Family<Vec<(String, String)>, Gauge>);

impl InstallMetrics {
    pub fn register(registry: &SharedRegistry) -> InstallMetrics {
        let metrics = InstallMetrics::default();
        if let Ok(mut registry) = registry.lock() {
            registry.register(
                "install_percentage",
                "Install progress of each cluster, from its AgentClusterInstall",
                metrics.0.clone(),
            );
        }
        metrics
    }

    fn labels(oacp: &OpenshiftAssistedControlPlane) -> Vec<(String, String)> {
        vec![
            ("namespace".into(), oacp.namespace().unwrap_or_default()),
            ("control_plane".into(), oacp.name_any()),
        ]
    }

    /// Follows the AgentClusterInstall; a deleted control plane's series goes away.
    fn observe(&self, d: &dereference::Dereferenced) {
        let labels = InstallMetrics::labels(&d.oacp);
        if d.oacp.metadata.deletion_timestamp.is_some() {
            self.0.remove(&labels);
        } else if let Some(status) = d.aci.as_ref().and_then(|a| a.status.as_ref()) {
            self.0
                .get_or_create(&labels)
                .set(status.progress.total_percentage);
        }
    }
}

async fn reconcile(
    oacp: Arc<OpenshiftAssistedControlPlane>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    ctx.metrics.reconciled();
    let dereferenced =
        dereference::dereference(&ctx.client, &ctx.caches, &ctx.releases, oacp.clone()).await?;
    ctx.install.observe(&dereferenced);
    let plan = plan::plan(&dereferenced, Timestamp::now());
    apply::apply(&ctx, &oacp, plan, dereferenced.workload.as_ref()).await
}

fn error_policy(
    oacp: Arc<OpenshiftAssistedControlPlane>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    ctx.metrics.failed(error.phase());
    tracing::warn!(namespace = ?oacp.namespace(), name = %oacp.name_any(), error = %error, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(15))
}

/// Runs the controller until `shutdown` turns true.
pub async fn run(
    client: Client,
    scope: WatchScope,
    registry: SharedRegistry,
    mut shutdown: watch::Receiver<bool>,
) {
    // One cache and one backoff per watched kind (manager::cache): a failing watch never
    // pauses another, and each re-lists at once after an apiserver restart. The reconcile
    // reads these stores, not the API server (`dereference::Caches`).
    let all = kube::runtime::watcher::Config::default().any_semantic();
    let mut oacps = cache::watch(
        scope.api::<OpenshiftAssistedControlPlane>(&client),
        scope.watcher_config(),
        1,
        cache::keep,
        shutdown.clone(),
    );
    let mut machines = cache::watch(
        scope.api::<Machine>(&client),
        all.clone(),
        1,
        cache::keep,
        shutdown.clone(),
    );
    let mut acis = cache::watch(
        scope.api::<AgentClusterInstall>(&client),
        all.clone(),
        1,
        cache::keep,
        shutdown.clone(),
    );
    let mut clusters = cache::watch(
        scope.api::<Cluster>(&client),
        all.clone(),
        1,
        cache::keep,
        shutdown.clone(),
    );
    let mut deployments = cache::watch(
        scope.api::<MachineDeployment>(&client),
        all.clone(),
        1,
        |md: &mut MachineDeployment| md.status = None,
        shutdown.clone(),
    );
    // Read, never a trigger: a config's status says why its discovery image fails.
    let configs = cache::watch(
        scope.api::<provider_api::bootstrap::api::OpenshiftAssistedConfig>(&client),
        all,
        0,
        cache::keep,
        shutdown.clone(),
    );
    // Read, never a trigger: the release a running install has.
    let image_sets = cache::watch(
        Api::<ClusterImageSet>::all(client.clone()),
        kube::runtime::watcher::Config::default().any_semantic(),
        0,
        cache::keep,
        shutdown.clone(),
    );
    let caches = dereference::Caches {
        clusters: clusters.store.clone(),
        deployments: deployments.store.clone(),
        machines: machines.store.clone(),
        configs: configs.store.clone(),
        acis: acis.store.clone(),
        image_sets: image_sets.store.clone(),
        recent: cache::Recent::new(dereference::RECENT_FOR),
    };
    caches.wait_until_ready().await;
    let ctx = Arc::new(Context {
        recorder: Recorder::new(client.clone(), Reporter::from(FIELD_MANAGER)),
        metrics: ControllerMetrics::register(&registry, "openshiftassistedcontrolplane"),
        install: InstallMetrics::register(&registry),
        releases: release_lookup::Resolver::new(),
        client: client.clone(),
        applied: Applied::new(RESYNC),
        status_pace: manager::pace::Pace::new(STATUS_EVERY),
        caches,
    });
    let store = oacps.store.clone();
    let md_store = store.clone();
    Controller::for_stream(oacps.triggers.remove(0), store)
        .watches_stream(machines.triggers.remove(0), |m| {
            cache::controller_owner::<OpenshiftAssistedControlPlane>(&m)
        })
        .watches_stream(acis.triggers.remove(0), |aci| {
            cache::controller_owner::<OpenshiftAssistedControlPlane>(&aci)
        })
        .watches_stream(clusters.triggers.remove(0), |cluster| {
            control_plane_of(&cluster)
        })
        .watches_stream(deployments.triggers.remove(0), move |md| {
            // A MachineDeployment changes the worker count of its cluster's control plane.
            let namespace = md.namespace();
            let cluster = md.spec.cluster_name.clone();
            md_store
                .state()
                .into_iter()
                .filter(|cp| {
                    cp.namespace() == namespace
                        && cp
                            .owner_references()
                            .iter()
                            .any(|o| o.kind == "Cluster" && o.name == cluster)
                })
                .map(|cp| ObjectRef::from_obj(&*cp))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        })
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
}

/// The control plane a Cluster references, if it is one of ours.
fn control_plane_of(cluster: &Cluster) -> Option<ObjectRef<OpenshiftAssistedControlPlane>> {
    let reference = cluster.spec.control_plane_ref.as_ref()?;
    (reference.kind == "OpenshiftAssistedControlPlane"
        && reference.api_group == "controlplane.cluster.x-k8s.io")
        .then(|| ObjectRef::new(&reference.name).within(&cluster.namespace().unwrap_or_default()))
}

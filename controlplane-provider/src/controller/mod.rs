//! The OpenshiftAssistedControlPlane controller, in the pipeline shape of `docs/architecture.md`
//! ("How to add a controller"): [`dereference`] (the only reads) → [`plan`] (pure, built from
//! [`hive`], [`release`], [`install_config`], [`machines`], [`kubeconfig`], [`status`]) →
//! [`apply`] (server-side apply in a fixed order, then status).

pub mod apply;
pub mod blocked;
pub mod context;
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
pub mod owner;
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
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, ResourceExt};
use manager::cache;
use manager::metrics::ControllerMetrics;
use manager::runtime::{SharedRegistry, WatchScope};
use tokio::sync::watch;

use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use context::RESYNC;
pub use context::{Context, FIELD_MANAGER, FINALIZER, InstallMetrics, STATUS_EVERY};
pub use manager::controller::{Applied, Error};

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
    let (mut watched, caches) = watch_all(&client, &scope, &shutdown);
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
    let store = watched.oacps.store.clone();
    let md_store = store.clone();
    Controller::for_stream(watched.oacps.triggers.remove(0), store)
        .watches_stream(watched.machines.triggers.remove(0), |m| {
            cache::controller_owner::<OpenshiftAssistedControlPlane>(&m)
        })
        .watches_stream(watched.acis.triggers.remove(0), |aci| {
            cache::controller_owner::<OpenshiftAssistedControlPlane>(&aci)
        })
        .watches_stream(watched.clusters.triggers.remove(0), |cluster| {
            control_plane_of(&cluster)
        })
        .watches_stream(watched.deployments.triggers.remove(0), move |md| {
            control_planes_of_deployment(&md_store, &md)
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

/// The watches whose changes start a reconcile.
struct Watched {
    oacps: cache::Cached<OpenshiftAssistedControlPlane>,
    machines: cache::Cached<Machine>,
    acis: cache::Cached<AgentClusterInstall>,
    clusters: cache::Cached<Cluster>,
    deployments: cache::Cached<MachineDeployment>,
}

/// One cache and one backoff per watched kind (manager::cache): a failing watch never pauses
/// another, and each re-lists at once after an apiserver restart. The reconcile reads these
/// stores, not the API server (`dereference::Caches`).
fn watch_all(
    client: &Client,
    scope: &WatchScope,
    shutdown: &watch::Receiver<bool>,
) -> (Watched, dereference::Caches) {
    let all = kube::runtime::watcher::Config::default().any_semantic();
    let watched = Watched {
        oacps: cache::watch(
            scope.api::<OpenshiftAssistedControlPlane>(client),
            scope.watcher_config(),
            1,
            cache::keep,
            shutdown.clone(),
        ),
        machines: cache::watch(
            scope.api::<Machine>(client),
            all.clone(),
            1,
            cache::keep,
            shutdown.clone(),
        ),
        // Made here with the control plane's shard label (`labels::labels`).
        acis: cache::watch(
            scope.api::<AgentClusterInstall>(client),
            scope.watcher_config(),
            1,
            cache::keep,
            shutdown.clone(),
        ),
        clusters: cache::watch(
            scope.api::<Cluster>(client),
            all.clone(),
            1,
            cache::keep,
            shutdown.clone(),
        ),
        deployments: cache::watch(
            scope.api::<MachineDeployment>(client),
            all.clone(),
            1,
            |md: &mut MachineDeployment| md.status = None,
            shutdown.clone(),
        ),
    };
    // Read, never a trigger: a config's status says why its discovery image fails.
    let configs = cache::watch(
        scope.api::<provider_api::bootstrap::api::OpenshiftAssistedConfig>(client),
        all,
        0,
        cache::keep,
        shutdown.clone(),
    );
    // Read, never a trigger: whether a Secret read before is still current (metadata only).
    let secret_versions = cache::watch(
        scope.api::<PartialObjectMeta<Secret>>(client),
        kube::runtime::watcher::Config::default().any_semantic(),
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
        clusters: watched.clusters.store.clone(),
        deployments: watched.deployments.store.clone(),
        machines: watched.machines.store.clone(),
        configs: configs.store,
        acis: watched.acis.store.clone(),
        image_sets: image_sets.store,
        secret_versions: secret_versions.store,
        recent: cache::Recent::new(dereference::RECENT_FOR),
        created_machines: cache::Created::new(dereference::CREATED_FOR),
    };
    (watched, caches)
}

/// A MachineDeployment changes the worker count of its cluster's control plane.
fn control_planes_of_deployment(
    control_planes: &kube::runtime::reflector::Store<OpenshiftAssistedControlPlane>,
    md: &MachineDeployment,
) -> Vec<ObjectRef<OpenshiftAssistedControlPlane>> {
    let namespace = md.namespace();
    let cluster = &md.spec.cluster_name;
    control_planes
        .state()
        .into_iter()
        .filter(|cp| {
            cp.namespace() == namespace
                && cp
                    .owner_references()
                    .iter()
                    .any(|o| o.kind == "Cluster" && &o.name == cluster)
        })
        .map(|cp| ObjectRef::from_obj(&*cp))
        .collect()
}

/// The control plane a Cluster references, if it is one of ours.
fn control_plane_of(cluster: &Cluster) -> Option<ObjectRef<OpenshiftAssistedControlPlane>> {
    let reference = cluster.spec.control_plane_ref.as_ref()?;
    (reference.kind == "OpenshiftAssistedControlPlane"
        && reference.api_group == "controlplane.cluster.x-k8s.io")
        .then(|| ObjectRef::new(&reference.name).within(&cluster.namespace().unwrap_or_default()))
}

//! The bootstrap provider's controllers, in the pipeline shape of `docs/architecture.md`
//! ("How to add a controller"): [`config`] (OpenshiftAssistedConfig: InfraEnv per template,
//! live ISO into Metal3, data Secret, Agent cleanup) and [`agents`] (Agent ↔ Machine by boot
//! MAC, role, approval), built from the pure modules [`infraenv`], [`image`], [`matching`],
//! [`hold`], [`variables`], [`install_ignition`] and [`user_data`]; [`labels`] names what they
//! label with, [`template`] which Metal3MachineTemplate a Metal3Machine came from,
//! [`fingerprints`] which fields of a watched object re-queue; [`unsupported`] lists the config
//! fields that take no effect (the `FieldsSupported` condition).

pub mod agents;
pub mod caches;
pub mod config;
pub mod discovery;
pub mod fingerprints;
pub mod hold;
pub mod image;
pub mod infraenv;
pub mod install_ignition;
pub mod labels;
pub mod matching;
pub mod template;
#[cfg(test)]
mod test_fixtures;
pub mod unsupported;
pub mod user_data;
pub mod variables;

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryFuture};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::PatchParams;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::{Client, Resource};
use manager::metrics::ControllerMetrics;
use manager::runtime::{SharedRegistry, WatchScope};
use tokio::sync::watch;

/// One field manager for everything the bootstrap provider writes.
pub const FIELD_MANAGER: &str = "openshift-assisted-bootstrap";
/// CAPOA's finalizer name, so objects move between the two implementations.
pub const FINALIZER: &str = "openshiftassistedconfig.bootstrap.cluster.x-k8s.io/deprovision";
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";

pub use manager::controller::{Error, PlannedEvent};

pub struct Context {
    pub client: Client,
    pub scope: WatchScope,
    /// What the controllers read instead of the API server (see [`caches`]).
    pub caches: caches::Caches,
    pub recorder: Recorder,
    pub config_metrics: ControllerMetrics,
    pub agent_metrics: ControllerMetrics,
    /// What the controllers last applied: an unchanged InfraEnv or Agent is not sent again
    /// within [`REAPPLY_AFTER`] (`manager::controller::Applied`).
    pub applied: manager::controller::Applied,
    /// The data Secrets known to exist (a config's, once written, stays): not asked for again
    /// within [`REAPPLY_AFTER`].
    pub data_secrets: manager::controller::Applied,
}

/// How long an applied body (or a data Secret seen) is taken as current.
pub const REAPPLY_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// `<namespace>/<name>`: the key `Fingerprints` and [`Context::applied`] remember an object
/// under.
pub fn object_key<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.clone().unwrap_or_default(),
        object.meta().name.clone().unwrap_or_default()
    )
}

/// The key under which [`Context::data_secrets`] remembers a data Secret.
pub fn data_secret_key(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

async fn publish(
    ctx: &Context,
    reference: &ObjectReference,
    warning: bool,
    reason: &'static str,
    note: String,
) {
    let event = PlannedEvent {
        warning,
        reason,
        note,
    };
    manager::controller::publish(&ctx.recorder, reference, &event).await;
}

fn retry(name: &str, error: &Error) -> Action {
    tracing::warn!(%name, error = %error, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(15))
}

/// Runs `controller` until `shutdown` turns true. Its stream's errors are only logged: a failed
/// reconcile is counted and retried by the controller's error policy.
async fn drive<K, ReconcilerFut>(
    controller: Controller<K>,
    reconcile: impl FnMut(Arc<K>, Arc<Context>) -> ReconcilerFut,
    error_policy: impl Fn(Arc<K>, &Error, Arc<Context>) -> Action,
    ctx: Arc<Context>,
    mut shutdown: watch::Receiver<bool>,
    name: &'static str,
) where
    K: Clone + Resource + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Debug + Unpin,
    ReconcilerFut: TryFuture<Ok = Action, Error = Error> + Send + 'static,
{
    controller
        .graceful_shutdown_on(async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        })
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "{name} controller event");
            }
        })
        .await;
}

/// Runs both controllers until `shutdown` turns true.
pub async fn run(
    client: Client,
    scope: WatchScope,
    registry: SharedRegistry,
    shutdown: watch::Receiver<bool>,
) {
    let mut stopping = shutdown.clone();
    let started = tokio::select! {
        started = caches::start(&client, &scope, shutdown.clone()) => started,
        _ = stopping.wait_for(|stop| *stop) => return,
    };
    let (caches, config_triggers, agent_triggers) = started;
    let ctx = Arc::new(Context {
        recorder: Recorder::new(client.clone(), Reporter::from(FIELD_MANAGER)),
        config_metrics: ControllerMetrics::register(&registry, "openshiftassistedconfig"),
        agent_metrics: ControllerMetrics::register(&registry, "agent"),
        client,
        scope,
        caches,
        applied: manager::controller::Applied::new(REAPPLY_AFTER),
        data_secrets: manager::controller::Applied::new(REAPPLY_AFTER),
    });
    tokio::join!(
        config::run(ctx.clone(), config_triggers, shutdown.clone()),
        agents::run(ctx, agent_triggers, shutdown)
    );
}

//! The core's Kubernetes controllers (InfraEnv, Agent, ClusterDeployment and
//! AgentClusterInstall, the day-2 approver) and what they share. Each controller is a folder in
//! the providers' shape (`mod.rs` wiring, `dereference.rs` reads, pure `plan.rs`, `apply.rs`
//! writes); this module starts their watches. The persister that writes the store back, the
//! monitor and the day-2 loop are started beside it by `service::server`.

pub mod agent;
pub mod cluster;
pub mod conditions;
pub mod context;
pub mod day2;
pub mod events;
pub mod finalizer;
pub mod infraenv;
pub mod mirror_config;
pub mod prepare;
pub mod release_info;
pub mod unsupported;

use std::sync::Arc;

use kube::Client;
use kube::api::{Api, ListParams};
use kube::runtime::watcher;
use manager::cache::Cached;
use manager::runtime::WatchScope;
use tokio::sync::watch;

use crate::api::agent::Agent;
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::hive::{ClusterDeployment, ClusterImageSet};
use crate::api::infraenv::InfraEnv;
use crate::api::nmstateconfig::NMStateConfig;
use context::{Context, Stores};
use k8s_openapi::api::core::v1::Secret;

/// Reconcile errors, one variant per phase (read, apply, status), counted by phase in
/// `capoa_reconcile_errors_total`. Invalid input is never an error: it is a condition the
/// user reads, and the controller waits for a change.
pub use manager::controller::Error;

/// Before the REST API serves after a (re)start: registers every cluster and infra-env once,
/// so agents and installers of a running install are recognised at once rather than refused
/// until the controllers' first reconcile. Best effort: the controllers retry what fails here.
pub async fn initial_sync(ctx: &Context) {
    let cds = ctx.scope.api::<ClusterDeployment>(&ctx.client);
    match cds.list(&shard_list_params(&ctx.scope)).await {
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
    let ies = ctx.scope.api::<InfraEnv>(&ctx.client);
    match ies.list(&shard_list_params(&ctx.scope)).await {
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

/// The objects of this core's shard (every one when not sharded).
fn shard_list_params(scope: &WatchScope) -> ListParams {
    match scope.label_selector() {
        Some(selector) => ListParams::default().labels(&selector),
        None => ListParams::default(),
    }
}

/// The watch of a kind the core's shard owns: only its shard's objects when sharded. Not
/// `WatchScope::watcher_config`'s "any" list semantics: these caches were always consistent
/// reads, and stay so.
fn shard_config(scope: &WatchScope) -> watcher::Config {
    match scope.label_selector() {
        Some(selector) => watcher::Config::default().labels(&selector),
        None => watcher::Config::default(),
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
pub fn watch_agents(
    client: Client,
    scope: &WatchScope,
    shutdown: watch::Receiver<bool>,
) -> Cached<Agent> {
    manager::cache::watch(
        scope.api::<Agent>(&client),
        shard_config(scope),
        1,
        keep_spec_labels_and_conditions,
        shutdown,
    )
}

/// The watches of every kind but Agents: one cache and one backoff per watched kind
/// (manager::cache), so a failing watch never pauses another and each re-lists at once after
/// an apiserver restart.
struct Watches {
    /// Two triggers: the ClusterDeployment controller's, the InfraEnv controller's.
    cds: Cached<ClusterDeployment>,
    acis: Cached<AgentClusterInstall>,
    infraenvs: Cached<InfraEnv>,
    nmstate_configs: Cached<NMStateConfig>,
    secrets: Cached<Secret>,
    /// Read, never a trigger: the release of a cluster (one per cluster, small).
    image_sets: Cached<ClusterImageSet>,
}

impl Watches {
    fn start(client: &Client, scope: &WatchScope, shutdown: &watch::Receiver<bool>) -> Watches {
        let config = watcher::Config::default;
        Watches {
            // The kinds of the core's shard: the providers label them (`--watch-filter`).
            cds: manager::cache::watch(
                scope.api(client),
                shard_config(scope),
                2,
                |cd: &mut ClusterDeployment| cd.status = None,
                shutdown.clone(),
            ),
            acis: manager::cache::watch(
                scope.api(client),
                shard_config(scope),
                1,
                |aci: &mut AgentClusterInstall| aci.status = None,
                shutdown.clone(),
            ),
            infraenvs: manager::cache::watch(
                scope.api(client),
                shard_config(scope),
                1,
                manager::cache::keep,
                shutdown.clone(),
            ),
            nmstate_configs: manager::cache::watch(
                Api::all(client.clone()),
                config(),
                1,
                |c: &mut NMStateConfig| c.spec = Default::default(),
                shutdown.clone(),
            ),
            // Secrets only trigger: their data is read from the API server when an image is
            // built.
            secrets: manager::cache::watch(
                Api::all(client.clone()),
                config().labels("!hive.openshift.io/secret-type"),
                1,
                |secret: &mut Secret| {
                    secret.data = None;
                    secret.string_data = None;
                },
                shutdown.clone(),
            ),
            image_sets: manager::cache::watch(
                Api::all(client.clone()),
                config(),
                0,
                manager::cache::keep,
                shutdown.clone(),
            ),
        }
    }

    /// What the reconciles read instead of the API server ([`Context::stores`]).
    fn stores(&self) -> Stores {
        Stores {
            acis: self.acis.store.clone(),
            cds: self.cds.store.clone(),
            secrets: self.secrets.store.clone(),
            image_sets: self.image_sets.store.clone(),
        }
    }
}

/// Runs the controllers until `shutdown` (the persister, the monitor and the day-2 loop run
/// beside them: `service::server`). `agents` is [`watch_agents`]'s.
pub async fn run(ctx: Arc<Context>, agents: Cached<Agent>, shutdown: watch::Receiver<bool>) {
    let stop = || {
        let mut s = shutdown.clone();
        async move {
            let _ = s.wait_for(|v| *v).await;
        }
    };
    let mut w = Watches::start(&ctx.client, &ctx.scope, &shutdown);
    let _ = ctx.stores.set(w.stores());
    let cd_for_infraenvs = w.cds.triggers.remove(1);
    tokio::join!(
        agent::run(ctx.clone(), agents, stop()),
        cluster::run(
            ctx.clone(),
            (w.cds.triggers.remove(0), w.cds.store.clone()),
            w.acis.triggers.remove(0),
            stop(),
        ),
        infraenv::run(
            ctx.clone(),
            w.infraenvs,
            infraenv::Triggers {
                nmstate_configs: w.nmstate_configs.triggers.remove(0),
                secrets: w.secrets.triggers.remove(0),
                cds: cd_for_infraenvs,
            },
            stop(),
        ),
    );
}

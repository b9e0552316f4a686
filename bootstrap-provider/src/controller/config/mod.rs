//! The OpenshiftAssistedConfig controller: the template's InfraEnv, its live ISO written into
//! Metal3, the Machine's bootstrap data Secret once its Metal3Machine carries the ISO, the Agent
//! removed with the Machine, and the CAPI v1beta2 bootstrap contract in status.
//!
//! `dereference.rs` reads (the caches, and the discovery ignition), `plan.rs` decides (pure),
//! `status.rs` builds the status, `apply.rs` writes in a fixed order; `triggers.rs` maps each
//! watched kind to the configs it concerns.

pub mod apply;
pub mod dereference;
pub mod plan;
pub mod status;
pub mod triggers;

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller};
use manager::controller::Fingerprints;
use tokio::sync::watch;

use super::caches::ConfigTriggers;
use super::fingerprints::{
    claim_fields, cluster_fields, hold_fields, host_claim_fields, infraenv_fields,
};
use super::labels::CLUSTER_NAME_LABEL;
use super::{Context, Error, object_key};
use provider_api::bootstrap::api::OpenshiftAssistedConfig;

async fn reconcile(
    config: Arc<OpenshiftAssistedConfig>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    ctx.config_metrics.reconciled();
    let dereferenced =
        dereference::dereference(&ctx.caches, &ctx.data_secrets, config.clone()).await?;
    let plan = plan::plan(&dereferenced, Timestamp::now());
    apply::apply(&ctx, &config, plan).await
}

fn error_policy(config: Arc<OpenshiftAssistedConfig>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.config_metrics.failed(error.phase());
    super::retry(&config.name_any(), error)
}

pub async fn run(ctx: Arc<Context>, triggers: ConfigTriggers, shutdown: watch::Receiver<bool>) {
    let store = ctx.caches.configs.clone();
    let controller = Controller::for_stream(triggers.configs, store.clone());
    let (s1, s2, s3, s4) = (store.clone(), store.clone(), store.clone(), store.clone());
    let hosts = ctx.caches.hosts.clone();
    let (s5, seen_claim) = (store.clone(), Fingerprints::default());
    // Only the fields the configs read re-queue them (see `Fingerprints`).
    let (seen_ie, seen_aci, seen_cluster, seen_bmh) = (
        Fingerprints::default(),
        Fingerprints::default(),
        Fingerprints::default(),
        Fingerprints::default(),
    );
    let controller = controller
        .watches_stream(triggers.machines, |m| triggers::config_of_machine(&m))
        .watches_stream(triggers.metal3machines, move |m| {
            let mut configs: Vec<_> = triggers::config_of_metal3machine(&m).into_iter().collect();
            // A host claimed or released can make or end another config's duplicate boot MAC:
            // every config of the cluster looks again (once per claim, not per change).
            if seen_claim.changed(object_key(&m), claim_fields(&m)) {
                configs.extend(triggers::configs_of_cluster(
                    &s5.state(),
                    m.namespace(),
                    m.labels().get(CLUSTER_NAME_LABEL),
                ));
            }
            configs
        })
        // A host's boot MAC, claim or deletion: the boot-MAC problems shown on `Ready`.
        .watches_stream(triggers.hosts, move |h| {
            if !seen_bmh.changed(object_key(&h), host_claim_fields(&h)) {
                return Vec::new();
            }
            triggers::configs_of_host(&s4.state(), &hosts.state(), &h)
        })
        // The ISO URL, the install state and the cluster's readiness concern all its configs.
        .watches_stream(triggers.infraenvs, move |ie| {
            if !seen_ie.changed(object_key(&ie), infraenv_fields(&ie)) {
                return Vec::new();
            }
            triggers::configs_of_infraenv(&s1.state(), &ie)
        })
        .watches_stream(triggers.acis, move |aci| {
            if !seen_aci.changed(object_key(&aci), hold_fields(&aci)) {
                return Vec::new();
            }
            triggers::configs_of_aci(&s2.state(), &aci)
        })
        .watches_stream(triggers.clusters, move |c| {
            if !seen_cluster.changed(object_key(&c), cluster_fields(&c)) {
                return Vec::new();
            }
            triggers::configs_of_capi_cluster(&s3.state(), &c)
        });
    super::drive(controller, reconcile, error_policy, ctx, shutdown, "config").await;
}

//! The OpenshiftAssistedConfig controller: the template's InfraEnv, its live ISO written into
//! Metal3, the Machine's bootstrap data Secret once its Metal3Machine carries the ISO, the Agent
//! removed with the Machine, and the CAPI v1beta2 bootstrap contract in status.

pub mod apply;
pub mod dereference;
pub mod plan;

use std::sync::Arc;

use external_types::metal3_io::BareMetalHost;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use manager::controller::Fingerprints;
use tokio::sync::watch;

use super::caches::ConfigTriggers;
use super::labels::CLUSTER_NAME_LABEL;
use super::matching::{BAREMETALHOST_ANNOTATION, HOST_PROBLEM_REASONS};
use super::{Context, Error};
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

fn key<K: kube::Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.clone().unwrap_or_default(),
        object.meta().name.clone().unwrap_or_default()
    )
}

/// Every config of a cluster, found in the controller's own store.
fn configs_of_cluster(
    store: &Store<OpenshiftAssistedConfig>,
    namespace: Option<String>,
    cluster: Option<&String>,
) -> Vec<ObjectRef<OpenshiftAssistedConfig>> {
    let Some(cluster) = cluster else {
        return Vec::new();
    };
    store
        .state()
        .into_iter()
        .filter(|c| {
            c.namespace() == namespace && c.labels().get(CLUSTER_NAME_LABEL) == Some(cluster)
        })
        .map(|c| ObjectRef::from_obj(&*c))
        .collect()
}

/// The configs a BareMetalHost's boot MAC concerns: its consumer's (CAPM3 names the consumer
/// Metal3Machine, which CAPI names like the Machine and its config), the consumers' of the other
/// hosts with the same boot MAC (a claim can make or end their duplicate), and every config of
/// the namespace that shows a host problem now (one host's change can end another's duplicate).
fn configs_of_host(
    store: &Store<OpenshiftAssistedConfig>,
    hosts: &Store<BareMetalHost>,
    host: &BareMetalHost,
) -> Vec<ObjectRef<OpenshiftAssistedConfig>> {
    let namespace = host.namespace();
    let consumer_of = |h: &BareMetalHost| {
        h.spec
            .consumer_ref
            .as_ref()
            .filter(|r| r.kind.as_deref() == Some("Metal3Machine"))
            .and_then(|r| r.name.clone())
    };
    let mac = |h: &BareMetalHost| {
        h.spec
            .boot_mac_address
            .as_deref()
            .map(|m| m.trim().to_ascii_lowercase())
            .filter(|m| !m.is_empty())
    };
    let mut consumers: Vec<String> = consumer_of(host).into_iter().collect();
    if let Some(own) = mac(host) {
        consumers.extend(
            hosts
                .state()
                .iter()
                .filter(|h| h.namespace() == namespace && h.uid() != host.uid())
                .filter(|h| mac(h).as_deref() == Some(own.as_str()))
                .filter_map(|h| consumer_of(h)),
        );
    }
    store
        .state()
        .into_iter()
        .filter(|c| c.namespace() == namespace)
        .filter(|c| {
            consumers.iter().any(|n| *n == c.name_any())
                || c.status.as_ref().is_some_and(|s| {
                    s.conditions.iter().any(|cond| {
                        cond.type_ == plan::READY
                            && HOST_PROBLEM_REASONS.contains(&cond.reason.as_str())
                    })
                })
        })
        .map(|c| ObjectRef::from_obj(&*c))
        .collect()
}

pub async fn run(ctx: Arc<Context>, triggers: ConfigTriggers, mut shutdown: watch::Receiver<bool>) {
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
    controller
        // A Machine names its config; CAPI names the Metal3Machine like the Machine.
        .watches_stream(triggers.machines, |m| {
            m.spec
                .bootstrap
                .config_ref
                .as_ref()
                .filter(|r| r.kind == "OpenshiftAssistedConfig")
                .map(|r| ObjectRef::new(&r.name).within(&m.namespace().unwrap_or_default()))
        })
        .watches_stream(triggers.metal3machines, move |m| {
            let own = m
                .owner_references()
                .iter()
                .find(|o| o.kind == "Machine")
                .map(|o| ObjectRef::new(&o.name).within(&m.namespace().unwrap_or_default()));
            // A host claimed or released can make or end another config's duplicate boot MAC:
            // every config of the cluster looks again (once per claim, not per change).
            let claim = (
                m.annotations().get(BAREMETALHOST_ANNOTATION).cloned(),
                m.metadata.deletion_timestamp.is_some(),
            );
            let mut configs: Vec<_> = own.into_iter().collect();
            if seen_claim.changed(key(&m), claim) {
                configs.extend(configs_of_cluster(
                    &s5,
                    m.namespace(),
                    m.labels().get(CLUSTER_NAME_LABEL),
                ));
            }
            configs
        })
        // A host's boot MAC, claim or deletion: the boot-MAC problems shown on `Ready`.
        .watches_stream(triggers.hosts, move |h| {
            let identity = (
                h.spec.boot_mac_address.clone(),
                h.uid(),
                h.spec
                    .consumer_ref
                    .as_ref()
                    .map(|r| (r.kind.clone(), r.name.clone())),
                h.metadata.deletion_timestamp.is_some(),
            );
            if !seen_bmh.changed(key(&h), identity) {
                return Vec::new();
            }
            configs_of_host(&s4, &hosts, &h)
        })
        // The ISO URL, the install state and the cluster's readiness concern all its configs.
        .watches_stream(triggers.infraenvs, move |ie| {
            let urls = ie.status.as_ref().map(|s| {
                (
                    s.iso_download_url.clone(),
                    s.boot_artifacts.discovery_ignition_url.clone(),
                )
            });
            if !seen_ie.changed(key(&ie), urls) {
                return Vec::new();
            }
            configs_of_cluster(&s1, ie.namespace(), ie.labels().get(CLUSTER_NAME_LABEL))
        })
        .watches_stream(triggers.acis, move |aci| {
            // The state and the install start decide the hold.
            let hold_inputs = (
                aci.status.as_ref().and_then(|s| s.debug_info.state.clone()),
                crate::controller::hold::install_started_at(&aci),
            );
            if !seen_aci.changed(key(&aci), hold_inputs) {
                return Vec::new();
            }
            configs_of_cluster(&s2, aci.namespace(), aci.labels().get(CLUSTER_NAME_LABEL))
        })
        .watches_stream(triggers.clusters, move |c| {
            let readiness = (
                c.spec.paused,
                c.annotations().contains_key(super::PAUSED_ANNOTATION),
                c.status
                    .as_ref()
                    .and_then(|s| s.initialization.as_ref())
                    .and_then(|i| i.infrastructure_provisioned),
            );
            if !seen_cluster.changed(key(&c), readiness) {
                return Vec::new();
            }
            configs_of_cluster(&s3, c.namespace(), Some(&c.name_any()))
        })
        .graceful_shutdown_on(async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        })
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "config controller event");
            }
        })
        .await;
}

//! The apply phase: writes in a fixed order.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use manager::controller::{Error, set_finalizer};

use super::credentials::Credentials;
use super::ours::{ACI_FINALIZER, CD_FINALIZER, FIELD_MANAGER, is_ours};
use super::plan::Plan;
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::hive::ClusterDeployment;
use crate::service::controllers::context::Context;
use crate::service::controllers::finalizer::{FinalizerStep, finalizer_step};

/// The apply phase, in a fixed order: the ACI finalizer, the store, the Secrets, the ACI's and
/// then the ClusterDeployment's `clusterMetadata`, the event, the day-2 hand-over.
/// `aci` is the AgentClusterInstall the read phase found (its finalizer is set on it).
pub(super) async fn apply(
    cd: &ClusterDeployment,
    aci: Option<&AgentClusterInstall>,
    ctx: &Context,
    plan: Plan,
    now: Timestamp,
) -> Result<Action, Error> {
    let id = cd.uid().unwrap_or_default();
    let aci_name = is_ours(cd).unwrap_or_default();
    let sync = match plan {
        Plan::WaitForAci => {
            tracing::debug!(cluster = %cd.name_any(), "waiting for AgentClusterInstall {aci_name}");
            return Ok(Action::await_change());
        }
        Plan::Deregister { release_finalizer } => {
            if release_finalizer {
                tracing::info!(cluster = %cd.name_any(), "AgentClusterInstall deleted: deregistering the cluster");
                ctx.store.remove_cluster(&id);
                ctx.forget_cluster(&id).await;
                if let Some(aci) = aci {
                    set_finalizer(&ctx.client, aci, FIELD_MANAGER, ACI_FINALIZER, false).await?;
                }
            }
            return Ok(Action::await_change());
        }
        Plan::Sync(sync) => sync,
    };
    if sync.add_aci_finalizer
        && let Some(aci) = aci
    {
        set_finalizer(&ctx.client, aci, FIELD_MANAGER, ACI_FINALIZER, true).await?;
    }
    let config = sync.config;
    ctx.store.upsert_cluster(
        &id,
        &cd.spec.cluster_name,
        sync.settings,
        sync.spec_error,
        now,
        |snap| {
            if let Some(c) = &config {
                c.apply(snap);
            }
        },
    );
    if let Some(creds) = sync.credentials {
        publish(cd, ctx, &creds, now).await?;
    }
    Ok(Action::requeue(sync.recheck))
}

/// Server-side apply bodies need apiVersion and kind.
fn with_kind(s: &Secret) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    v["apiVersion"] = "v1".into();
    v["kind"] = "Secret".into();
    v
}

/// The ClusterDeployment is being deleted: deregister the cluster, release the finalizer of
/// its AgentClusterInstall (`aci`, as the cleanup read found it), then its own.
pub(super) async fn deregister(
    cd: &ClusterDeployment,
    aci: Option<&AgentClusterInstall>,
    ctx: &Context,
) -> Result<(), Error> {
    let id = cd.uid().unwrap_or_default();
    tracing::info!(cluster = %cd.name_any(), "ClusterDeployment deleted: deregistering the cluster");
    ctx.store.remove_cluster(&id);
    ctx.forget_cluster(&id).await;
    if let Some(aci) = aci
        && finalizer_step(aci, ACI_FINALIZER) != FinalizerStep::Add
    {
        set_finalizer(&ctx.client, aci, FIELD_MANAGER, ACI_FINALIZER, false).await?;
    }
    set_finalizer(&ctx.client, cd, FIELD_MANAGER, CD_FINALIZER, false).await?;
    Ok(())
}

/// Hive's part, in order: the Secrets, the ACI's and then the ClusterDeployment's
/// `clusterMetadata`, the event, the day-2 hand-over.
async fn publish(
    cd: &ClusterDeployment,
    ctx: &Context,
    creds: &Credentials,
    now: Timestamp,
) -> Result<(), Error> {
    let ns = cd.namespace().unwrap_or_default();
    let id = cd.uid().unwrap_or_default();
    let aci_name = is_ours(cd).unwrap_or_default();
    let acis: Api<AgentClusterInstall> = Api::namespaced(ctx.client.clone(), &ns);
    apply_secrets(ctx, &ns, &creds.secrets).await?;
    if let Some(metadata) = &creds.aci_cluster_metadata {
        acis.patch(
            &aci_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"clusterMetadata": metadata}})),
        )
        .await
        .map_err(|source| Error::Apply {
            what: format!("AgentClusterInstall {aci_name} clusterMetadata"),
            source,
        })?;
    }
    if let Some(metadata) = &creds.mark_installed {
        Api::<ClusterDeployment>::namespaced(ctx.client.clone(), &ns)
            .patch(
                &cd.name_any(),
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {
                    "installed": true,
                    "clusterMetadata": metadata,
                }})),
            )
            .await
            .map_err(|source| Error::Apply {
                what: format!("ClusterDeployment {} installed", cd.name_any()),
                source,
            })?;
        tracing::info!(cluster = %cd.name_any(), "cluster installed: ClusterDeployment marked installed");
    }
    if let Some((on, event)) = &creds.event {
        ctx.events.planned(on, event).await;
    }
    if creds.day2 {
        // Hive would now hand the cluster over to day-2.
        ctx.store.transform_to_day2(&id, now);
    }

    Ok(())
}

/// The credential Secrets, each applied unless it was applied as it is lately.
async fn apply_secrets(ctx: &Context, ns: &str, wanted: &[Secret]) -> Result<(), Error> {
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    for s in wanted {
        // Each reconcile of an installed cluster plans them again: applied when changed.
        let (applied, key, hash) = ctx.secret_applied(s);
        if applied {
            continue;
        }
        let name = s.name_any();
        secrets
            .patch(&name, &pp, &Patch::Apply(&with_kind(s)))
            .await
            .map_err(|source| Error::Apply {
                what: format!("Secret {name}"),
                source,
            })?;
        ctx.applied.record(&key, hash);
    }
    Ok(())
}

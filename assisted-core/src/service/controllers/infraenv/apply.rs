//! The apply phase: the store, the event, then the status, in that order.

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use manager::controller::{Error, PlannedEvent};

use super::image::ImageUrls;
use super::plan::Problem;
use crate::api::infraenv::{InfraEnv, InfraEnvStatus};
use crate::service::controllers::context::Context;
use crate::service::controllers::events;
use crate::service::shards;
use crate::service::store::InfraEnvRecord;

/// Owns the InfraEnv's status and finalizer.
pub(super) const STATUS_MANAGER: &str = "assisted-core-infraenv";

/// Registers the infra-env (when it has an image), sends the event, writes the status when
/// it changed.
pub(super) async fn apply(
    ie: &InfraEnv,
    ctx: &Context,
    outcome: &Result<(InfraEnvRecord, ImageUrls), Problem>,
    status: &InfraEnvStatus,
    event: Option<&PlannedEvent>,
) -> Result<(), Error> {
    if let Ok((rec, _)) = outcome {
        ctx.store.upsert_infra_env(rec.clone());
    }
    if let Some(event) = event {
        let on = events::reference(
            "agent-install.openshift.io/v1beta1",
            "InfraEnv",
            &ie.namespace().unwrap_or_default(),
            &ie.name_any(),
        );
        ctx.events.planned(&on, event).await;
    }
    if ie.status.as_ref() != Some(status) {
        write_status(ie, ctx, status).await?;
    }
    if ctx.scope.is_sharded() {
        announce(ie, ctx).await?;
    }
    Ok(())
}

/// A sharded core writes its URLs on the InfraEnvs it serves, so that another shard's core can
/// send a host that reached it here (`service::shards`). Once per InfraEnv.
async fn announce(ie: &InfraEnv, ctx: &Context) -> Result<(), Error> {
    let Some(body) = shards::announcement(ie.annotations(), &ctx.images.urls) else {
        return Ok(());
    };
    let api: Api<InfraEnv> =
        Api::namespaced(ctx.client.clone(), &ie.namespace().unwrap_or_default());
    api.patch(
        &ie.name_any(),
        &PatchParams::apply(shards::ANNOUNCE_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .map_err(|source| Error::Apply {
        what: "the shard's URLs on the InfraEnv".into(),
        source,
    })?;
    Ok(())
}

async fn write_status(ie: &InfraEnv, ctx: &Context, status: &InfraEnvStatus) -> Result<(), Error> {
    let api: Api<InfraEnv> =
        Api::namespaced(ctx.client.clone(), &ie.namespace().unwrap_or_default());
    let body = serde_json::json!({
        "apiVersion": InfraEnv::api_version(&()),
        "kind": InfraEnv::kind(&()),
        "status": status,
    });
    api.patch_status(
        &ie.name_any(),
        &PatchParams::apply(STATUS_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .map_err(Error::Status)?;
    ctx.infra_env_statuses
        .record(written_key(ie), status.clone());
    Ok(())
}

/// The key of an InfraEnv's status in `Context::infra_env_statuses` (its UID: a new InfraEnv
/// of the same name starts afresh).
pub(crate) fn written_key(ie: &InfraEnv) -> String {
    ie.uid().unwrap_or_default()
}

//! ClusterDeployment + AgentClusterInstall controller: validates the references, mirrors the
//! spec into the cluster record, and does Hive's part after the install (admin Secrets,
//! `clusterMetadata`, `spec.installed`, then the day-2 cluster).
//!
//! `dereference` reads, `plan` (with the pure `config` and `credentials`) decides, `apply`
//! writes; the ACI's status is the persister's, from the store.

mod apply;
mod config;
mod credentials;
mod dereference;
mod input_error;
mod ours;
mod plan;
mod record;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use jiff::Timestamp;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use manager::cache::TriggerStream;
use manager::controller::{Error, set_finalizer};

use super::context::Context;
use super::finalizer::{FinalizerStep, finalizer_step};
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::hive::ClusterDeployment;

pub use super::release_info::{
    RELEASE_ARCHITECTURE_ANNOTATION, RELEASE_VERSION_ANNOTATION, ReleaseInfoSource, TagReleaseInfo,
    release_from_tag,
};
pub use config::{ClusterConfig, cluster_config, disk_encryption_of, ignition_ca_of, manifests_of};
pub use credentials::{Credentials, credentials};
pub use dereference::Dereferenced;
pub use input_error::InputError;
pub use ours::{ACI_FINALIZER, CD_FINALIZER};
use ours::{FIELD_MANAGER, is_ours};
pub use plan::{Plan, SyncPlan, plan};
pub use record::{ClusterFiles, RecordFacts};

/// The ClusterDeployment controller: reconciles on a ClusterDeployment change and on a change
/// of the AgentClusterInstall its `clusterInstallRef` names.
pub(super) async fn run(
    ctx: Arc<Context>,
    cds: (
        TriggerStream<ClusterDeployment>,
        kube::runtime::reflector::Store<ClusterDeployment>,
    ),
    acis: TriggerStream<AgentClusterInstall>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    Controller::for_stream(cds.0, cds.1)
        // An ACI change reconciles the ClusterDeployment its clusterDeploymentRef names.
        .watches_stream(acis, |aci: AgentClusterInstall| {
            let ns = kube::ResourceExt::namespace(&aci).unwrap_or_default();
            Some(
                ObjectRef::<ClusterDeployment>::new(&aci.spec.cluster_deployment_ref.name)
                    .within(&ns),
            )
        })
        .graceful_shutdown_on(stop)
        .run(
            reconcile,
            super::context::error_policy(|c| &c.metrics.cluster),
            ctx,
        )
        .for_each(|_| async {})
        .await
}

pub async fn reconcile(cd: Arc<ClusterDeployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    if is_ours(&cd).is_none() {
        return Ok(Action::await_change());
    }
    ctx.metrics.cluster.reconciled();
    match finalizer_step(cd.as_ref(), CD_FINALIZER) {
        FinalizerStep::Add => {
            set_finalizer(&ctx.client, cd.as_ref(), FIELD_MANAGER, CD_FINALIZER, true).await?
        }
        FinalizerStep::Proceed => {}
        FinalizerStep::Cleanup => {
            let aci = dereference::aci_to_release(&cd, &ctx).await?;
            apply::deregister(&cd, aci.as_ref(), &ctx).await?;
            return Ok(Action::await_change());
        }
        FinalizerStep::Gone => return Ok(Action::await_change()),
    }
    sync(&cd, &ctx).await
}

/// Read, decide, apply (`docs/architecture.md`, "How to add a controller"); the ACI's status
/// is the persister's, from the store.
pub(crate) async fn sync(cd: &ClusterDeployment, ctx: &Context) -> Result<Action, Error> {
    let read = dereference::dereference(cd, ctx).await?;
    let plan = plan::plan(cd, &read, ctx.release_info.as_ref());
    apply::apply(cd, read.aci.as_ref(), ctx, plan, Timestamp::now()).await
}

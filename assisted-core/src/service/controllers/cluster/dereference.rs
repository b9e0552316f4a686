//! The read phase: the only file of this controller that reads from the API server, the store
//! or the cluster's files.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::Api;
use manager::controller::Error;

use super::config::ignition_ca_namespace;
use super::credentials::publishes_credentials;
use super::ours::is_ours;
use super::record::{ClusterFiles, RecordFacts};
use crate::api::agentclusterinstall::AgentClusterInstall;
use crate::api::hive::{ClusterDeployment, ClusterImageSet};
use crate::service::controllers::context::Context;

/// Everything one ClusterDeployment reconcile reads (the only phase with client calls).
#[derive(Debug, Clone, Default)]
pub struct Dereferenced {
    pub aci: Option<AgentClusterInstall>,
    pub pull_secret: Option<Secret>,
    /// The ClusterImageSet `imageSetRef` names, when it exists.
    pub image_set: Option<ClusterImageSet>,
    /// The manifests ConfigMaps the ACI names, in order; `None` for a missing one.
    pub manifests: Vec<(String, Option<ConfigMap>)>,
    /// The ConfigMap `mirrorRegistryRef` names.
    pub mirror_registry: crate::service::controllers::mirror_config::MirrorRead,
    /// The Secret `ignitionEndpoint.caCertificateReference` names, when it exists.
    pub ignition_ca: Option<Secret>,
    /// The cluster's record in the store before this reconcile.
    pub record: Option<RecordFacts>,
    pub files: ClusterFiles,
}

/// The read phase.
pub(super) async fn dereference(
    cd: &ClusterDeployment,
    ctx: &Context,
) -> Result<Dereferenced, Error> {
    let ns = cd.namespace().unwrap_or_default();
    let Some(aci_name) = is_ours(cd) else {
        return Ok(Dereferenced::default());
    };
    let aci = ctx.aci(&ns, &aci_name).await.map_err(Error::Read)?;
    let Some(aci) = aci else {
        return Ok(Dereferenced::default());
    };
    let pull_secret = match cd
        .spec
        .pull_secret_ref
        .as_ref()
        .map(|r| r.name.as_str())
        .filter(|n| !n.is_empty())
    {
        Some(name) => ctx.secret(&ns, name).await.map_err(Error::Read)?,
        None => None,
    };
    let image_set = match &aci.spec.image_set_ref {
        Some(r) => ctx.image_set(&r.name).await.map_err(Error::Read)?,
        None => None,
    };
    let ignition_ca = match aci
        .spec
        .ignition_endpoint
        .as_ref()
        .and_then(|e| e.ca_certificate_reference.as_ref())
    {
        Some(r) => ctx
            .secret(&ignition_ca_namespace(&aci), &r.name)
            .await
            .map_err(Error::Read)?,
        None => None,
    };
    let mut manifests = Vec::new();
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    for name in manifest_config_maps(&aci) {
        let cm = cms.get_opt(&name).await.map_err(Error::Read)?;
        manifests.push((name, cm));
    }
    let mirror_registry = crate::service::controllers::mirror_config::read(
        ctx,
        aci.spec.mirror_registry_ref.as_ref(),
        &ns,
    )
    .await?;
    let id = cd.uid().unwrap_or_default();
    let record = ctx
        .store
        .view(|st| st.clusters.get(&id).map(RecordFacts::of));
    let files = match record.as_ref().map(|r| r.status) {
        Some(status) if publishes_credentials(status) => ClusterFiles {
            kubeconfig: ctx.file(&id, "kubeconfig").await,
            kubeconfig_noingress: ctx.file(&id, "kubeconfig-noingress").await,
            metadata: ctx.file(&id, "metadata.json").await,
            kubeadmin_password: ctx.file(&id, "kubeadmin-password").await,
        },
        _ => ClusterFiles::default(),
    };
    Ok(Dereferenced {
        aci: Some(aci),
        pull_secret,
        image_set,
        manifests,
        mirror_registry,
        ignition_ca,
        record,
        files,
    })
}

/// The ConfigMap names of the ACI's user manifests (the list, then the single reference).
fn manifest_config_maps(aci: &AgentClusterInstall) -> Vec<String> {
    aci.spec
        .manifests_config_map_refs
        .iter()
        .map(|r| r.name.clone())
        .chain(
            aci.spec
                .manifests_config_map_ref
                .as_ref()
                .map(|r| r.name.clone()),
        )
        .collect()
}

/// The cleanup read: the AgentClusterInstall of a ClusterDeployment being deleted, whose
/// finalizer nothing else would release once the ClusterDeployment is gone.
pub(super) async fn aci_to_release(
    cd: &ClusterDeployment,
    ctx: &Context,
) -> Result<Option<AgentClusterInstall>, Error> {
    let (Some(name), Some(ns)) = (is_ours(cd), cd.namespace()) else {
        return Ok(None);
    };
    Api::<AgentClusterInstall>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&name)
        .await
        .map_err(Error::Read)
}

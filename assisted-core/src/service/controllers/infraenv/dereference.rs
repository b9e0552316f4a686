//! The read phase: the only file of this controller that reads from the API server or the store.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use manager::controller::Error;

use super::image::current_token;
use crate::api::infraenv::InfraEnv;
use crate::api::nmstateconfig::NMStateConfig;
use crate::service::auth::Claims;
use crate::service::controllers::context::Context;
use crate::service::tls::{AgentTrust, agent_trust};

/// The cluster an InfraEnv's `clusterRef` names, as far as it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundCluster {
    /// No ClusterDeployment of that name.
    Missing { namespace: String, name: String },
    /// The ClusterDeployment exists but its cluster is not in the store yet.
    Unregistered { namespace: String, name: String },
    /// The cluster record: ClusterDeployment uid and name, OpenShift version.
    Registered {
        id: String,
        name: String,
        version: String,
    },
}

/// Everything one InfraEnv reconcile reads (the only phase with client calls).
#[derive(Debug, Clone)]
pub struct Dereferenced {
    /// The pull secret, when it exists.
    pub pull_secret: Option<Secret>,
    /// `None` without `clusterRef`.
    pub cluster: Option<BoundCluster>,
    /// The NMStateConfigs the selector selects, by name.
    pub nmstate_configs: Vec<NMStateConfig>,
    /// The agent token: the one already published (URLs stay stable) or a new one.
    pub token: String,
    /// How the agent verifies the agent API's certificate.
    pub agent_trust: AgentTrust,
    /// The ConfigMap `mirrorRegistryRef` names.
    pub mirror_registry: crate::service::controllers::mirror_config::MirrorRead,
}

/// The read phase: the pull secret, the bound cluster, the selected NMStateConfigs, the token.
pub(super) async fn dereference(ie: &InfraEnv, ctx: &Context) -> Result<Dereferenced, Error> {
    let ns = ie.namespace().unwrap_or_default();
    let id = ie.uid().unwrap_or_default();
    let spec = &ie.spec;
    let pull_secret = ctx
        .secret(&ns, &spec.pull_secret_ref.name)
        .await
        .map_err(Error::Read)?;
    let cluster = match &spec.cluster_ref {
        Some(r) => {
            let cd = ctx
                .cluster_deployment(&r.namespace, &r.name)
                .await
                .map_err(Error::Read)?;
            let (namespace, name) = (r.namespace.clone(), r.name.clone());
            Some(match cd {
                None => BoundCluster::Missing { namespace, name },
                Some(cd) => {
                    let id = cd.uid().unwrap_or_default();
                    let version = ctx.store.view(|st| {
                        st.clusters
                            .get(&id)
                            .map(|c| c.snapshot.openshift_version.clone())
                    });
                    match version.filter(|v| !v.is_empty()) {
                        Some(version) => BoundCluster::Registered { id, name, version },
                        None => BoundCluster::Unregistered { namespace, name },
                    }
                }
            })
        }
        None => None,
    };
    // An empty selector selects none.
    let mut nmstate_configs = match spec
        .nm_state_config_label_selector
        .as_ref()
        .and_then(selector_string)
    {
        Some(sel) => {
            Api::<NMStateConfig>::namespaced(ctx.client.clone(), &ns)
                .list(&ListParams::default().labels(&sel))
                .await
                .map_err(Error::Read)?
                .items
        }
        None => Vec::new(),
    };
    nmstate_configs.sort_by_key(|n| n.name_any());
    // The published token, else the one this core already signed for the InfraEnv (a
    // reconcile may see the object before its own status write arrives), else a new one.
    let token = current_token(ie, &ctx.keys, &id)
        .or_else(|| {
            ctx.store
                .infra_env_record(&id)
                .ok()
                .map(|r| r.token)
                .filter(|t| !t.is_empty())
        })
        .unwrap_or_else(|| ctx.keys.sign(&Claims::infra_env(&id)));
    let mirror_registry = crate::service::controllers::mirror_config::read(
        ctx,
        spec.mirror_registry_ref.as_ref(),
        &ns,
    )
    .await?;
    Ok(Dereferenced {
        pull_secret,
        cluster,
        nmstate_configs,
        token,
        agent_trust: agent_trust(&ctx.images.urls.agent_api, ctx.images.serving.as_deref()),
        mirror_registry,
    })
}

fn selector_string(sel: &LabelSelector) -> Option<String> {
    let labels = sel.match_labels.as_ref().filter(|m| !m.is_empty())?;
    Some(
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

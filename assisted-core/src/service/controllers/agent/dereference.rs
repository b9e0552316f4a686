//! The read phase: the only file of this controller that reads from the API server or the store.

use kube::ResourceExt;
use kube::api::Api;
use manager::controller::Error;

use crate::api::agent::Agent;
use crate::api::hive::ClusterDeployment;
use crate::service::controllers::context::Context;

/// What one Agent reconcile reads: where its host is bound and whether the ClusterDeployment
/// the spec names exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dereferenced {
    /// `(namespace, name)` of the ClusterDeployment the spec names.
    pub wanted: Option<(String, String)>,
    /// `(namespace, name)` of the host's cluster in the store.
    pub bound: Option<(String, String)>,
    /// The host's approval in the store (kept while the binding is wrong).
    pub approved_now: bool,
    pub wanted_exists: bool,
}

/// The read phase: the host's binding from the store; the named ClusterDeployment is read only
/// when it is not the bound one.
pub(super) async fn dereference(agent: &Agent, ctx: &Context) -> Result<Dereferenced, Error> {
    let ns = agent.namespace().unwrap_or_default();
    let wanted = agent.spec.cluster_deployment_name.as_ref().map(|r| {
        let wns = if r.namespace.is_empty() {
            ns.clone()
        } else {
            r.namespace.clone()
        };
        (wns, r.name.clone())
    });
    let (bound, approved_now) =
        ctx.store
            .view(|st| match st.host_with_cluster(&agent.name_any()) {
                Some((h, rec)) => (
                    rec.map(|r| {
                        (
                            r.settings.namespace.clone(),
                            r.settings.cluster_deployment.clone(),
                        )
                    }),
                    h.approved,
                ),
                None => (None, false),
            });
    let wanted_exists = match &wanted {
        Some(w) if Some(w) != bound.as_ref() => {
            Api::<ClusterDeployment>::namespaced(ctx.client.clone(), &w.0)
                .get_opt(&w.1)
                .await
                .map_err(Error::Read)?
                .is_some()
        }
        _ => true,
    };
    Ok(Dereferenced {
        wanted,
        bound,
        approved_now,
        wanted_exists,
    })
}

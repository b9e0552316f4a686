//! The ConfigMap an AgentClusterInstall's or InfraEnv's `mirrorRegistryRef` names: read once by
//! each controller's dereference, parsed by their decide phase with one wording for its errors.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

use super::context::Context;
use crate::api::infraenv::NamespacedReference;
use crate::domain::mirrors::{self, MirrorConfig, MirrorConfigError};
use manager::controller::Error;

/// Why the mirror registry ConfigMap cannot be used: an input error the user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MirrorError {
    #[error("mirror registry ConfigMap {0} (spec.mirrorRegistryRef) not found")]
    Missing(String),
    #[error("mirror registry ConfigMap {name} (spec.mirrorRegistryRef): {source}")]
    Invalid {
        name: String,
        source: MirrorConfigError,
    },
}

/// The referenced ConfigMap's name and the ConfigMap (`None` inside: it does not exist);
/// `None` without a reference. The reference's namespace defaults to the object's.
pub type MirrorRead = Option<(String, Option<ConfigMap>)>;

pub async fn read(
    ctx: &Context,
    reference: Option<&NamespacedReference>,
    object_namespace: &str,
) -> Result<MirrorRead, Error> {
    let Some(r) = reference else {
        return Ok(None);
    };
    let namespace = Some(r.namespace.as_str())
        .filter(|n| !n.is_empty())
        .unwrap_or(object_namespace);
    let cm = Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace)
        .get_opt(&r.name)
        .await
        .map_err(Error::Read)?;
    Ok(Some((r.name.clone(), cm)))
}

/// The parsed configuration, or the input error to show (the ConfigMap missing, or what is
/// wrong in it, naming the key and line).
pub fn parse(read: &MirrorRead) -> Result<Option<MirrorConfig>, MirrorError> {
    let Some((name, cm)) = read else {
        return Ok(None);
    };
    let cm = cm
        .as_ref()
        .ok_or_else(|| MirrorError::Missing(name.clone()))?;
    mirrors::parse(&cm.data.clone().unwrap_or_default())
        .map(Some)
        .map_err(|source| MirrorError::Invalid {
            name: name.clone(),
            source,
        })
}

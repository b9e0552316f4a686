//! Owner references to the control plane: what goes when it goes, and how watches on the
//! owned objects map back to it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;
use thiserror::Error;

pub const OACP_API_VERSION: &str = "controlplane.cluster.x-k8s.io/v1alpha3";
pub const OACP_KIND: &str = "OpenshiftAssistedControlPlane";

/// A field an owner reference needs that the object lacks: only objects read from the API
/// server have them.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{kind} has no metadata.{field}: only objects read from the API server can be used")]
pub struct MissingMetadata {
    pub kind: &'static str,
    pub field: &'static str,
}

/// The controller owner reference to the control plane: the ClusterDeployment,
/// AgentClusterInstall and generated manifests go when it goes, and watches on them map back
/// to it. Names the first missing field (name, then uid).
pub fn controller_reference(
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<OwnerReference, MissingMetadata> {
    let missing = |field| MissingMetadata {
        kind: OACP_KIND,
        field,
    };
    Ok(OwnerReference {
        api_version: OACP_API_VERSION.into(),
        kind: OACP_KIND.into(),
        name: oacp.meta().name.clone().ok_or(missing("name"))?,
        uid: oacp.meta().uid.clone().ok_or(missing("uid"))?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// An owner reference to the control plane (controller for Machines only: CAPI makes the
/// Machine the controller of its config and infrastructure machine).
pub fn reference(oacp: &OpenshiftAssistedControlPlane, controller: bool) -> Option<OwnerReference> {
    let mut reference = oacp.controller_owner_ref(&())?;
    if !controller {
        reference.controller = None;
        reference.block_owner_deletion = None;
    }
    Some(reference)
}

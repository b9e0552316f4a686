//! The control-plane provider's kinds: OpenshiftAssistedControlPlane and its template.

pub mod api;
pub mod conversion;
pub mod v1alpha2;

//! controlplane-provider: the Cluster API control-plane provider for OpenShift through the
//! assisted installer; it embeds assisted-core.

pub mod admission;
pub mod api;
pub mod controller;
pub mod conversion;
pub mod manifests;
pub mod serving;
pub mod v1alpha2;

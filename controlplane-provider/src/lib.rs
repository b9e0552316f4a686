//! controlplane-provider: the Cluster API control-plane provider for OpenShift through the
//! assisted installer; it embeds assisted-core.

pub mod admission;
pub mod controller;
pub mod manifests;
pub mod serving;

//! bootstrap-provider: the Cluster API bootstrap provider for OpenShift through the assisted installer.

pub mod admission;
pub mod controller;
pub mod manifests;

//! bootstrap-provider: the Cluster API bootstrap provider for OpenShift through the assisted installer.

pub mod admission;
pub mod api;
pub mod controller;
pub mod conversion;
pub mod manifests;
pub mod v1alpha1;

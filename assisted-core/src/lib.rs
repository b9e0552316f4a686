//! assisted-core: the heart of the OpenShift Assisted Installer, embedded.

pub mod api;
pub mod domain;

//! assisted-core: the heart of the OpenShift Assisted Installer, embedded.

pub mod api;
pub mod cli;
pub mod domain;
pub mod external;
pub mod manifests;
pub mod runtime;
pub mod service;

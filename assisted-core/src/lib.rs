//! assisted-core: the heart of the OpenShift Assisted Installer, embedded.

/// The assisted CRD types live in their own crate so the providers can use them without the core.
pub use assisted_api as api;
pub mod domain;
pub mod service;

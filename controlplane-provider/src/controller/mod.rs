//! The OpenshiftAssistedControlPlane controller, in the pipeline shape of `docs/architecture.md`
//! ("How to add a controller"): dereference (the only reads) → pure decisions → apply → status.

pub mod hive;
pub mod install_config;
pub mod release;

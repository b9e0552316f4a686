//! The OpenshiftAssistedConfig and Agent controllers, in the pipeline shape of
//! `docs/architecture.md` ("How to add a controller"): dereference (the only reads) → pure
//! decisions → apply → status.

pub mod agent;
pub mod image;
pub mod infraenv;
pub mod matching;

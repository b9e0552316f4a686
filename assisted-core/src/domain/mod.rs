//! Pure install domain: state machines, validations, orchestration (no I/O).
//!
//! Everything here is a function of plain snapshots plus an explicit `now`; nothing reads a
//! clock, a random source or the network, so the service layer (REST handlers, Kubernetes
//! controllers) decides *what* to do here and performs the I/O itself.
//!
//! Main entry points:
//! - host machine: [`refresh_host`], [`apply_host_event`], [`update_host_progress`],
//!   [`apply_host_outcome`], table [`HOST_TRANSITIONS`];
//! - cluster machine: [`refresh_cluster`], [`apply_cluster_event`], [`refresh_all`],
//!   [`transform_to_day2`], table [`CLUSTER_TRANSITIONS`];
//! - validations: [`validate_host`], [`validate_cluster`];
//! - orchestration: [`auto_start_day1`], [`start_install`], [`suggest_roles`],
//!   [`select_bootstrap`], [`day2_hosts_to_install`];
//! - agent protocol: [`next_steps`], [`apply_step_reply`], [`Inventory::parse`].

pub mod cluster_sm;
pub mod hardware;
pub mod host_sm;
pub mod inventory;
pub mod net;
pub mod orchestration;
pub mod snapshot;
pub mod stages;
pub mod step_reply;
pub mod steps;
pub mod types;
pub mod validation_ids;
pub mod validations;

pub use cluster_sm::*;
pub use hardware::*;
pub use host_sm::*;
pub use inventory::Inventory;
pub use orchestration::*;
pub use snapshot::*;
pub use stages::*;
pub use step_reply::*;
pub use steps::*;
pub use types::*;
pub use validation_ids::*;
pub use validations::*;

#[cfg(test)]
mod tests;

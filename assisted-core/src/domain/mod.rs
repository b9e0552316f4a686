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
//! - both machines run on one engine, [`state_machine`] (rows tried in order, first match wins);
//! - validations: [`validate_host`], [`validate_cluster`], tables [`HOST_VALIDATIONS`] and
//!   [`CLUSTER_VALIDATIONS`] (rows of id, why, check);
//! - orchestration: [`auto_start_day1`], [`start_install`], [`suggest_roles`],
//!   [`select_bootstrap`], [`day2_hosts_to_install`];
//! - agent protocol: [`register_host`], [`next_steps`], [`apply_step_reply`],
//!   [`next_step_runner_command`], [`Inventory::parse`].
//!
//! How the service layer drives it:
//! - build a [`ClusterSnapshot`] (with its [`HostSnapshot`]s) from AgentClusterInstall /
//!   ClusterDeployment / Agent status plus the in-memory `checked_in_at` of each agent;
//! - monitor pass: `let r = refresh_all(&cluster, now, &cfg)`, then persist each changed
//!   [`HostOutcome`] (status, status_info, `validations.to_validations_info()`, suggested role)
//!   and the [`ClusterOutcome`]; [`apply_refresh`] does the same on the in-memory snapshot;
//! - REST: register → [`register_host`]; GET instructions → update `checked_in_at` /
//!   `host_timestamp`, then [`next_steps`]; POST step reply → [`StepReply::parse`] +
//!   [`apply_step_reply`] (fire [`HostEvent::MediaDisconnect`] on exit code 256);
//!   PUT progress → [`update_host_progress`] (errors map to 409);
//! - kube-API day-1: [`auto_start_day1`] gives the RequirementsMet reason; when it says start,
//!   [`start_install`] + [`apply_install_plan`], run the install backend, then set
//!   `ClusterSnapshot::preparation = Success`; the monitor does the rest;
//! - day-2: [`transform_to_day2`] once installed, [`day2_hosts_to_install`] +
//!   [`HostEvent::Install`] for approved known hosts.
//!
//! Every `apply_*` call returns a `Result`; an `Err` means the event is not allowed in the
//! current state (HTTP 409 / a condition), never a panic.

pub mod cluster_sm;
pub mod connectivity_pace;
pub mod formats;
pub mod hardware;
pub mod host_sm;
pub mod image_mode;
pub mod inventory;
pub mod mirrors;
pub mod net;
pub mod orchestration;
pub mod release_support;
pub mod roles;
pub mod snapshot;
pub mod stages;
pub mod state_machine;
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
pub use roles::*;
pub use snapshot::*;
pub use stages::*;
pub use step_reply::*;
pub use steps::*;
pub use types::*;
pub use validation_ids::*;
pub use validations::*;

#[cfg(test)]
mod tests;

//! A simulated host for end-to-end tests of an assisted-service compatible server: the
//! discovery agent, the installer it starts, and the in-cluster installer-controller.
//!
//! Everything talks to the server over the real agent REST API (`/api/assisted-install/v2`,
//! header `X-Secret-Key`) with wire types defined here, independently of the server crate.
//!
//! - [`HostProfile`] + [`inventory_json`]: deterministic simulated hardware;
//! - [`step_reply`]: pure answers to each step type;
//! - [`Host`] / [`agent::run`]: the agent loop (register, poll, reply, install, reboot);
//! - [`InstallerController`]: post-reboot stages, ingress CA, operators, until installed;
//! - [`Kubelet`]: a day-2 node's TLS bootstrap and registration in the workload cluster.

pub mod agent;
pub mod args;
pub mod client;
pub mod controller;
pub mod fixtures;
pub mod kubelet;
pub mod net;
pub mod profile;
pub mod reply;
pub mod runtime;
pub mod stages;
pub mod wire;

pub use agent::{AgentConfig, AgentEvent, AgentOutcome, AgentStatus, Host, run};
pub use client::{Trust, call};
pub use controller::{ControllerReport, InstallerController};
pub use kubelet::{Kubelet, KubeletReport};
pub use profile::{HostProfile, inventory_json};
pub use reply::{ReplyCtx, step_reply};
pub use runtime::{ContainerRuntime, Pulled};
pub use wire::{Step, StepKind, StepReply};

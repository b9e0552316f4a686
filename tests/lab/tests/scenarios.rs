//! The lab's end-to-end scenarios, in one test binary so that they run in parallel (see
//! tests/lab/Cargo.toml). Each needs `make testbed` and the provider binaries in `target/debug/`
//! (`make test` builds them). One of them: `cargo test -p lab --test scenarios sno`.

#[path = "chaos.rs"]
mod chaos;
#[path = "cluster_class.rs"]
mod cluster_class;
#[path = "cluster_file.rs"]
mod cluster_file;
#[path = "common.rs"]
mod common;
#[path = "control_plane_scaling.rs"]
mod control_plane_scaling;
#[path = "disconnected.rs"]
mod disconnected;
#[path = "host_runtime.rs"]
mod host_runtime;
#[path = "image_mode.rs"]
mod image_mode;
#[path = "kubelet_exec.rs"]
mod kubelet_exec;
#[path = "remediation.rs"]
mod remediation;
#[path = "shards.rs"]
mod shards;
#[path = "sno.rs"]
mod sno;
#[path = "upgrade.rs"]
mod upgrade;

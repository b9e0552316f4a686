//! The control-plane manager (with assisted-core embedded). Its controllers and the core's REST
//! API arrive in later issues; until then it serves probes and metrics, takes part in leader
//! election, and reconciles nothing (and logs that it does not).

use std::process::ExitCode;

use assisted_core::cli::{self, ManagerSpec};
use controlplane_provider::manifests;

fn main() -> ExitCode {
    let spec = ManagerSpec {
        name: manifests::NAME,
        lease_name: manifests::LEASE_NAME,
        crds: manifests::crds,
        manifest: Some(manifests::provider_manifest),
    };
    cli::main(spec, |leader| {
        assisted_core::runtime::idle_until_shutdown(manifests::NAME, leader)
    })
}

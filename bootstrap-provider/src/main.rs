//! The bootstrap manager. Its controllers arrive in later issues; until then it serves probes and
//! metrics, takes part in leader election, and reconciles nothing (and logs that it does not).

use std::process::ExitCode;

use bootstrap_provider::manifests;
use manager::cli::{self, ManagerSpec};

fn main() -> ExitCode {
    let spec = ManagerSpec {
        name: manifests::NAME,
        lease_name: manifests::LEASE_NAME,
        crds: manifests::crds,
        manifest: Some(manifests::provider_manifest),
    };
    cli::main(spec, |leader| {
        manager::runtime::idle_until_shutdown(manifests::NAME, leader)
    })
}

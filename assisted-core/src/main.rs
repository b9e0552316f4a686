//! The assisted-core binary: the embedded core run on its own. Until its controllers and REST API
//! exist it only serves probes and metrics (and prints its CRDs with `crd`).

use std::process::ExitCode;

use assisted_core::cli::{self, ManagerSpec};

fn main() -> ExitCode {
    let spec = ManagerSpec {
        name: "assisted-core",
        lease_name: "assisted-core-leader",
        crds: assisted_core::api::crds,
        manifest: None,
    };
    cli::main(spec, |leader| {
        assisted_core::runtime::idle_until_shutdown("assisted-core", leader)
    })
}

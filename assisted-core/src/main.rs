//! The assisted-core binary: the embedded core run on its own (controllers, agent REST API,
//! image server), for users who run it beside the providers or without them.

use std::process::ExitCode;

use assisted_core::service::server::{self, CoreArgs, Listeners};
use manager::cli::{self, ManagerSpec};

fn main() -> ExitCode {
    let spec = ManagerSpec {
        name: "assisted-core",
        lease_name: "assisted-core-leader",
        crds: assisted_core::api::crds,
        manifest: None,
        convert: None,
        validate: &[],
        mutate: &[],
    };
    cli::main_with::<CoreArgs, _, _>(spec, |leader, args| async move {
        let listeners = Listeners::bind(&args).await?;
        server::run(
            leader.client,
            leader.scope,
            args,
            listeners,
            leader.registry,
            leader.shutdown,
        )
        .await
    })
}

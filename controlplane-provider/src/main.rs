//! The control-plane manager: the OpenshiftAssistedControlPlane controller, and the embedded
//! assisted-core (controllers for the assisted CRDs, the agent REST API and the image server)
//! unless `--assisted-core=external`.

use std::process::ExitCode;

use assisted_core::service::server::{self, CoreArgs, Listeners};
use controlplane_provider::{controller, manifests};
use manager::cli::{self, ManagerSpec};

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum CoreMode {
    /// Run assisted-core in this process.
    Embedded,
    /// A real assisted-service (or a standalone assisted-core) serves the assisted CRDs.
    External,
}

#[derive(clap::Args, Debug, Clone)]
struct ControlPlaneArgs {
    #[arg(long = "assisted-core", value_enum, default_value_t = CoreMode::Embedded)]
    assisted_core: CoreMode,
    #[command(flatten)]
    core: CoreArgs,
}

fn main() -> ExitCode {
    let spec = ManagerSpec {
        name: manifests::NAME,
        lease_name: manifests::LEASE_NAME,
        crds: manifests::crds,
        manifest: Some(manifests::provider_manifest),
        convert: Some(|object, version| {
            provider_api::controlplane::conversion::convert(object, version)
                .map_err(|e| manager::webhook::Refusal::because(e.to_string()))
        }),
        validate: &[(
            controlplane_provider::admission::VALIDATE_PATH,
            controlplane_provider::admission::review,
        )],
        mutate: &[(
            controlplane_provider::admission::MUTATE_PATH,
            controlplane_provider::admission::default_patch,
        )],
    };
    cli::main_with::<ControlPlaneArgs, _, _>(spec, |leader, args| async move {
        let controller = controller::run(
            leader.client.clone(),
            leader.scope.clone(),
            leader.registry.clone(),
            leader.shutdown.clone(),
        );
        match args.assisted_core {
            CoreMode::Embedded => {
                let listeners = Listeners::bind(&args.core).await?;
                // Bound: the Service may send this pod the hosts' traffic now.
                controlplane_provider::serving::claim(&leader.client, &leader.scope).await?;
                let core = server::run(
                    leader.client,
                    leader.scope,
                    args.core,
                    listeners,
                    leader.registry,
                    leader.shutdown,
                );
                let (core, ()) = tokio::join!(core, controller);
                core
            }
            CoreMode::External => {
                controller.await;
                Ok(())
            }
        }
    })
}

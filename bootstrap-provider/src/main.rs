//! The bootstrap manager: the OpenshiftAssistedConfig and Agent controllers.

use std::process::ExitCode;

use bootstrap_provider::{controller, manifests};
use manager::cli::{self, ManagerSpec};

fn main() -> ExitCode {
    let spec = ManagerSpec {
        name: manifests::NAME,
        lease_name: manifests::LEASE_NAME,
        crds: manifests::crds,
        manifest: Some(manifests::provider_manifest),
        convert: Some(|object, version| {
            provider_api::bootstrap::conversion::convert(object, version)
                .map_err(|e| manager::webhook::Refusal::because(e.to_string()))
        }),
        validate: &[
            (
                bootstrap_provider::admission::VALIDATE_CONFIG_PATH,
                provider_api::bootstrap::validation::review,
            ),
            (
                bootstrap_provider::admission::VALIDATE_TEMPLATE_PATH,
                provider_api::bootstrap::validation::review,
            ),
        ],
        mutate: &[],
    };
    cli::main(spec, |leader| async move {
        controller::run(
            leader.client,
            leader.scope,
            leader.registry,
            leader.shutdown,
        )
        .await;
        Ok(())
    })
}

//! The command line every manager binary shares: run (the default), `crd`, `manifests`, `validate`.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::manifests::{self, ProviderManifest};
use crate::runtime::{self, Leader, ManagerArgs};
use crate::webhook;

#[derive(Parser, Debug)]
#[command(version, args_conflicts_with_subcommands = true)]
pub struct Cli<A: clap::Args> {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub manager: ManagerArgs,
    /// The binary's own flags (the embedded core's, for the control-plane manager).
    #[command(flatten)]
    pub extra: A,
}

/// No extra flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct NoArgs {}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print this manager's CRDs as YAML (all, or only the given kinds).
    Crd {
        /// Kinds (or plurals) to print, e.g. `OpenshiftAssistedConfig`.
        kinds: Vec<String>,
    },
    /// Regenerate this manager's files under the config directory.
    Manifests {
        #[arg(long, default_value = "config")]
        dir: PathBuf,
    },
    /// Validate a YAML manifest (`-` for stdin) against this manager's CRD schemas.
    Validate { file: PathBuf },
}

/// What a manager binary is: its name, Lease, CRDs and (for providers) release manifest.
pub struct ManagerSpec {
    pub name: &'static str,
    pub lease_name: &'static str,
    pub crds: fn() -> Vec<CustomResourceDefinition>,
    pub manifest: Option<fn() -> ProviderManifest>,
    /// Converts the provider's objects between its API versions (`/convert` on the webhook
    /// server); `None` for managers without older versions to serve.
    pub convert: Option<webhook::ConvertFn>,
    /// Validating admission webhooks: (path, validation), served next to `/convert`.
    pub validate: &'static [(&'static str, webhook::ValidateFn)],
    /// Mutating (defaulting) admission webhooks: (path, mutation), served next to `/convert`.
    pub mutate: &'static [(&'static str, webhook::MutateFn)],
}

/// Parses the command line and runs it; errors are printed as one clear message.
pub fn main<F, Fut>(spec: ManagerSpec, run_leader: F) -> ExitCode
where
    F: FnOnce(Leader) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    main_with::<NoArgs, _, _>(spec, |leader, _| run_leader(leader))
}

/// [`main`] for binaries with flags of their own (`A`), handed to `run_leader`.
pub fn main_with<A, F, Fut>(spec: ManagerSpec, run_leader: F) -> ExitCode
where
    A: clap::Args,
    F: FnOnce(Leader, A) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let cli = Cli::<A>::parse();
    match run(spec, cli, run_leader) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run<A, F, Fut>(spec: ManagerSpec, cli: Cli<A>, run_leader: F) -> anyhow::Result<()>
where
    A: clap::Args,
    F: FnOnce(Leader, A) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    match cli.command {
        Some(Command::Crd { kinds }) => {
            print!("{}", manifests::crds_yaml(&(spec.crds)(), &kinds)?);
            Ok(())
        }
        Some(Command::Manifests { dir }) => {
            let manifest = spec
                .manifest
                .ok_or_else(|| anyhow::anyhow!("{} has no release manifests", spec.name))?;
            for path in manifests::write_config(&dir, &manifest().files()?)? {
                eprintln!("wrote {}", path.display());
            }
            Ok(())
        }
        Some(Command::Validate { file }) => {
            let yaml = read_input(&file)?;
            let checked = manifests::validate_manifests(&(spec.crds)(), &yaml)?;
            eprintln!("{}: {checked} document(s) valid", file.display());
            Ok(())
        }
        None => {
            runtime::init_tracing(cli.manager.log_format, &cli.manager.log_level)
                .map_err(anyhow::Error::msg)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let extra = cli.extra;
            let mut webhooks = spec.convert.map(|convert| {
                let convert: webhook::Converter = std::sync::Arc::new(convert);
                webhook::conversion_router(convert)
            });
            let routers = spec
                .validate
                .iter()
                .map(|(path, validate)| webhook::validation_router(path, *validate))
                .chain(
                    spec.mutate
                        .iter()
                        .map(|(path, mutate)| webhook::mutation_router(path, *mutate)),
                );
            for router in routers {
                webhooks = Some(match webhooks {
                    Some(w) => w.merge(router),
                    None => router,
                });
            }
            runtime.block_on(runtime::run_manager(
                spec.name,
                spec.lease_name,
                cli.manager,
                webhooks,
                move |leader| run_leader(leader, extra),
            ))
        }
    }
}

fn read_input(file: &PathBuf) -> anyhow::Result<String> {
    if file.as_os_str() == "-" {
        let mut input = String::new();
        std::io::stdin().read_to_string(&mut input)?;
        Ok(input)
    } else {
        std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))
    }
}

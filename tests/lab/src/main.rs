//! `lab`: installs OpenShift clusters with our providers on a simulated Metal3 site. See
//! docs/lab.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use lab::{Options, Topology};

#[derive(Parser, Debug)]
#[command(
    version,
    about = "Watch OpenShift clusters get installed by our Cluster API providers on a simulated Metal3 site"
)]
struct Cli {
    /// What to install: 3+2 (three masters, two workers, then a day-2 worker added and
    /// removed) or sno (one node, no day-2 step).
    #[arg(long, value_enum, default_value = "3+2")]
    topology: Topology,
    /// How many clusters of the topology to install concurrently, each in its own namespace
    /// with its own BareMetalHosts and machine network. The day-2 step runs in every cluster.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    clusters: u32,
    /// After the scenario keep everything running and print how to look at it, until Ctrl-C.
    #[arg(long)]
    keep: bool,
    /// The lab directory (logs, the core's data, certificates). Default: a new temporary
    /// directory, deleted on success and kept on failure. A directory given here is kept.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Fail if the scenario has not finished after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
}

/// The lab's own log (the simulator and the libraries it uses) goes to `<dir>/logs/lab.log`.
fn init_logs(dir: &std::path::Path) -> Result<()> {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let file = std::fs::File::create(logs.join("lab.log")).context("creating lab.log")?;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,kube=warn,tower=warn,hyper=warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init()
        .map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))
}

async fn run(cli: Cli) -> Result<bool> {
    // The providers are built into the same target directory as this binary.
    let exe = std::env::current_exe().context("locating the lab binary")?;
    let bin_dir = exe
        .parent()
        .context("the lab binary has no directory")?
        .to_path_buf();
    let (dir, tmp) = match &cli.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            (d.canonicalize().unwrap_or_else(|_| d.clone()), None)
        }
        None => {
            let tmp = tempfile::Builder::new()
                .prefix("capoa-lab-")
                .tempdir()
                .context("creating the lab directory")?;
            (tmp.path().to_path_buf(), Some(tmp))
        }
    };
    init_logs(&dir)?;
    let opts = Options {
        topology: cli.topology,
        clusters: cli.clusters,
        dir: dir.clone(),
        bin_dir,
        timeout: Duration::from_secs(cli.timeout),
        keep: cli.keep,
        keep_dirs: cli.dir.is_some(),
    };
    let result = lab::run(&opts).await;
    let ok = matches!(&result, Ok(r) if r.ok);
    if let Some(tmp) = tmp {
        if ok && !cli.keep {
            drop(tmp);
        } else {
            let kept = tmp.keep();
            println!("lab directory kept: {}", kept.display());
        }
    }
    result.map(|r| r.ok)
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

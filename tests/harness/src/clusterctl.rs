//! A local clusterctl provider repository and the real `clusterctl` run against a testbed.
//!
//! Layout (clusterctl's local-repository contract, `{base}/{provider-label}/{version}/{file}`):
//!
//! ```text
//! repo/cluster-api/<capi version>/{core-components.yaml,metadata.yaml}        from the cache
//! repo/bootstrap-openshift-assisted/v<ours>/{bootstrap-components.yaml,metadata.yaml}
//! repo/control-plane-openshift-assisted/v<ours>/{control-plane-components.yaml,metadata.yaml}
//! repo/infrastructure-metal3/<capm3 version>/{infrastructure-components.yaml,metadata.yaml}  cache
//! clusterctl.yaml   providers pointing at the files above; cert-manager externally provisioned
//! ```
//!
//! Without a node, cert-manager is "externally provisioned": clusterctl then only checks that the
//! cert-manager API accepts an Issuer and a Certificate, which the cert-manager CRDs from the Go
//! module cache provide ([`Clusterctl::install_cert_manager_crds`]). With a node
//! ([`crate::TestbedBuilder::node`]) clusterctl installs the real cert-manager build.sh built,
//! from its rendered manifests. See docs/testing.md.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::Testbed;
use crate::cache::repo_root;
use crate::resources;

/// Our providers' clusterctl name.
pub const PROVIDER: &str = "openshift-assisted";
/// CAPM3's clusterctl name.
pub const METAL3: &str = "metal3";

/// `clusterctl init` of Cluster API core and our two providers (no infrastructure provider).
pub const INIT_OUR_PROVIDERS: &[&str] = &[
    "init",
    "--core",
    "cluster-api",
    "--bootstrap",
    PROVIDER,
    "--control-plane",
    PROVIDER,
];

/// The variables our control-plane components require (they have no default), set unless a
/// test gives its own: the agent API's and image server's URLs as a site's hosts would reach
/// them. Here, the in-cluster Service: nothing but the lab's pods mode reaches the core through
/// them, and it sets its own. Plus Cluster API's `ClusterTopology` feature gate, on as a user of
/// ClusterClasses sets it.
pub const DEFAULT_VARIABLES: &[(&str, &str)] = &[
    ("CLUSTER_TOPOLOGY", "true"),
    (
        "OPENSHIFT_ASSISTED_CORE_AGENT_API_URL",
        "https://capoa-controlplane-assisted-core.capoa-controlplane-system.svc:8090",
    ),
    (
        "OPENSHIFT_ASSISTED_CORE_IMAGES_URL",
        "https://capoa-controlplane-assisted-core.capoa-controlplane-system.svc:8091",
    ),
];

pub struct Clusterctl {
    pub bin: PathBuf,
    /// The clusterctl configuration file (`--config`).
    pub config: PathBuf,
    /// The provider repository's root.
    pub repo: PathBuf,
    /// Used as HOME and XDG_CONFIG_HOME so that nothing of the user's is read or written.
    pub home: PathBuf,
    pub kubeconfig: PathBuf,
    /// Our providers' version in the repository (`v` + the workspace version).
    pub version: String,
    pub capi_version: String,
    log: PathBuf,
}

impl Clusterctl {
    /// Assembles the repository from `config/release/` and the cache, inside the testbed
    /// directory, with the testbed's clusterctl variables ([`crate::TestbedBuilder::clusterctl_variable`],
    /// else [`DEFAULT_VARIABLES`]).
    pub fn new(tb: &Testbed) -> Result<Clusterctl> {
        let mut variables: Vec<(String, String)> = DEFAULT_VARIABLES
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        for (k, v) in &tb.clusterctl_variables {
            variables.retain(|(name, _)| name != k);
            variables.push((k.clone(), v.clone()));
        }
        Clusterctl::with_variables(tb, &variables)
    }

    /// As [`Clusterctl::new`], with exactly `variables` in `clusterctl.yaml`.
    pub fn with_variables(tb: &Testbed, variables: &[(String, String)]) -> Result<Clusterctl> {
        let base = tb.dir.join("clusterctl");
        let repo = base.join("repo");
        let home = base.join("home");
        std::fs::create_dir_all(&home)?;
        let capi_version = tb.cache.version("CLUSTER_API_VERSION")?;
        let version = format!("v{}", env!("CARGO_PKG_VERSION"));
        let release = repo_root().join("config/release");
        let capi = tb.cache.manifests().join("capi");

        let core = repo.join("cluster-api").join(&capi_version);
        copy(&capi.join("core-components.yaml"), &core)?;
        copy(&capi.join("metadata.yaml"), &core)?;
        let bootstrap = repo.join(format!("bootstrap-{PROVIDER}")).join(&version);
        copy(&release.join("bootstrap-components.yaml"), &bootstrap)?;
        copy(&release.join("metadata.yaml"), &bootstrap)?;
        let controlplane = repo
            .join(format!("control-plane-{PROVIDER}"))
            .join(&version);
        copy(
            &release.join("control-plane-components.yaml"),
            &controlplane,
        )?;
        copy(&release.join("metadata.yaml"), &controlplane)?;
        let capm3_version = tb.cache.version("CAPM3_VERSION")?;
        let capm3 = tb.cache.manifests().join("capm3");
        let metal3 = repo
            .join(format!("infrastructure-{METAL3}"))
            .join(&capm3_version);
        copy(&capm3.join("infrastructure-components.yaml"), &metal3)?;
        copy(&capm3.join("metadata.yaml"), &metal3)?;

        let url = |dir: &Path, file: &str| format!("file://{}", dir.join(file).display());
        let cert_manager = if tb.has_node() {
            // clusterctl installs the test bed's real cert-manager and waits for it to issue;
            // a local repository's layout is {base}/{name}/{version}/{file}.
            let version = tb.cache.version("CERT_MANAGER_VERSION")?;
            let dir = repo.join("cert-manager").join(&version);
            copy(
                &tb.cache.manifests().join("cert-manager/cert-manager.yaml"),
                &dir,
            )?;
            format!(
                "cert-manager:\n  url: {}\n  version: {version}\n  timeout: 5m\n",
                url(&dir, "cert-manager.yaml"),
            )
        } else {
            "cert-manager:\n  externallyProvisioned: \"true\"\n  timeout: 2m\n".to_owned()
        };
        // clusterctl reads its variables from the top-level keys of its configuration file.
        let variables: String = variables
            .iter()
            .map(|(k, v)| format!("{k}: {}\n", serde_json::Value::from(v.as_str())))
            .collect();
        let config = base.join("clusterctl.yaml");
        std::fs::write(
            &config,
            format!(
                "providers:\n\
                 - name: cluster-api\n  type: CoreProvider\n  url: {}\n\
                 - name: {PROVIDER}\n  type: BootstrapProvider\n  url: {}\n\
                 - name: {PROVIDER}\n  type: ControlPlaneProvider\n  url: {}\n\
                 - name: {METAL3}\n  type: InfrastructureProvider\n  url: {}\n\
                 {cert_manager}\
                 {variables}\
                 overridesFolder: {}\n",
                url(&core, "core-components.yaml"),
                url(&bootstrap, "bootstrap-components.yaml"),
                url(&controlplane, "control-plane-components.yaml"),
                url(&metal3, "infrastructure-components.yaml"),
                base.join("overrides").display(),
            ),
        )?;
        Ok(Clusterctl {
            bin: tb.cache.bin("clusterctl"),
            config,
            repo,
            home,
            kubeconfig: tb.kubeconfig.clone(),
            version,
            capi_version,
            log: tb.dir.join("logs/clusterctl.log"),
        })
    }

    /// Installs the CRDs of the cert-manager build.sh rendered (no cert-manager controllers run).
    pub async fn install_cert_manager_crds(tb: &Testbed) -> Result<()> {
        let docs: Vec<_> = resources::load_yaml_path(
            &tb.cache.manifests().join("cert-manager/cert-manager.yaml"),
        )?
        .into_iter()
        .filter(|d| resources::kind_of(d) == "CustomResourceDefinition")
        .collect();
        resources::install_crds(&tb.client, docs).await
    }

    /// Runs `clusterctl <args> --config <config> --kubeconfig <testbed>`; its output goes to
    /// `logs/clusterctl.log` and is returned. Fails with the output if clusterctl fails.
    pub async fn run(&self, args: &[&str]) -> Result<String> {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .arg("--config")
            .arg(&self.config)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("-v=4")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("CLUSTERCTL_DISABLE_VERSIONCHECK", "true")
            .env_remove("KUBECONFIG");
        let shown = format!("clusterctl {}", args.join(" "));
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await?
            .with_context(|| format!("running {shown}"))?;
        let text = format!(
            "$ {shown}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.push_str(&text);
        std::fs::write(&self.log, log)?;
        if !out.status.success() {
            bail!(
                "{shown} failed ({}); log {}:\n{text}",
                out.status,
                self.log.display()
            );
        }
        Ok(text)
    }
}

fn copy(file: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = file.file_name().context("file name")?;
    std::fs::copy(file, dir.join(name))
        .with_context(|| format!("copying {} into the clusterctl repository", file.display()))?;
    Ok(())
}

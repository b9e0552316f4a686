//! A real control plane for tests: etcd, kube-apiserver, optionally kube-controller-manager,
//! the Cluster API core manager, CAPM3 and baremetal-operator (fixture provisioner), built from
//! their Go modules by `tests/testbed/build.sh` and started on loopback by [`Testbed`]. See
//! docs/testing.md.
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! let tb = testbed::Testbed::builder().controller_manager().our_crds().start().await?;
//! let client = tb.client.clone();
//! # Ok(()) }
//! ```
//!
//! Every process logs to `<testbed dir>/logs/<process>.log`. The directory is printed when the
//! testbed starts (libtest shows it only for failing tests) and kept when the testbed is dropped
//! during a panic or when `CAPOA_TESTBED_KEEP=1`; otherwise it is deleted. Processes are killed on
//! drop, and by the kernel if the test process dies.

pub mod cache;
pub mod capi;
pub mod certs;
pub mod clusterctl;
pub mod metal3;
pub mod node;
pub mod process;
pub mod registry;
pub mod resources;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

pub use cache::{Cache, SKIP_ENV};
use certs::Ca;
use process::{Process, free_port, http_get, wait_until};

/// Environment variable: `1` keeps every testbed's directory (logs, data, certificates).
pub const KEEP_ENV: &str = "CAPOA_TESTBED_KEEP";

/// True when `CAPOA_TESTBED_SKIP=1`: tests that need the testbed should then return early.
/// Prints a note saying so. Without the variable a missing testbed is an error, never a skip.
pub fn skip() -> bool {
    let skip = std::env::var(SKIP_ENV).is_ok_and(|v| v == "1");
    if skip {
        eprintln!("{SKIP_ENV}=1: skipping a test that needs the testbed");
    }
    skip
}

/// What to start; see [`Testbed::builder`].
#[derive(Debug, Default, Clone)]
pub struct TestbedBuilder {
    name: Option<String>,
    controller_manager: bool,
    crd_files: Vec<PathBuf>,
    crd_yaml: Vec<String>,
    clusterctl_init: bool,
    capi: bool,
    metal3: bool,
    node: bool,
    node_images: Vec<PathBuf>,
    listen: Option<String>,
    clusterctl_variables: Vec<(String, String)>,
    kubelet_network: Option<PathBuf>,
}

impl TestbedBuilder {
    /// Names the testbed's directory (default: the test's name).
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Also start kube-controller-manager with the garbage-collector and namespace controllers.
    pub fn controller_manager(mut self) -> Self {
        self.controller_manager = true;
        self
    }

    /// Install our CRDs, every `config/crd/*.yaml`.
    pub fn our_crds(mut self) -> Self {
        self.crd_files.push(cache::repo_root().join("config/crd"));
        self
    }

    /// Install the CRDs in a YAML file, or in every `*.yaml` of a directory.
    pub fn crds_from(mut self, path: impl Into<PathBuf>) -> Self {
        self.crd_files.push(path.into());
        self
    }

    /// Install the CRDs in a YAML string (one or more documents).
    pub fn crd_yaml(mut self, yaml: &str) -> Self {
        self.crd_yaml.push(yaml.to_owned());
        self
    }

    /// Install Cluster API core's CRDs and webhook configurations and start its manager, webhooks
    /// served on loopback.
    pub fn capi(mut self) -> Self {
        self.capi = true;
        self
    }

    /// Install the upstream Metal3 CRDs (CAPM3, BMO) and start baremetal-operator with its
    /// fixture provisioner (no Ironic) and the CAPM3 manager, webhooks on loopback. Implies
    /// [`TestbedBuilder::capi`]. Do not combine with `config/testing/metal3` (the same CRDs).
    pub fn metal3(mut self) -> Self {
        self.capi = true;
        self.metal3 = true;
        self
    }

    /// Install Cluster API, CAPM3 (infrastructure `metal3`) and our two providers with the real
    /// `clusterctl init` from a local repository (cert-manager externally provisioned: its CRDs
    /// only), as a user would. Their Deployments have no kubelet to run them, so Cluster API and
    /// CAPM3 then run as processes, their CRD conversion and admission webhooks re-pointed at
    /// loopback (what the Services and cert-manager's CA injector do in a cluster); our managers
    /// are the caller's to run ([`Testbed::point_conversion_webhook`]). Implies
    /// [`TestbedBuilder::metal3`].
    pub fn clusterctl_init(mut self) -> Self {
        self.clusterctl_init = true;
        self.capi = true;
        self.metal3 = true;
        self
    }

    /// Give the cluster a real node (root only; see [`node`]): containerd, kubelet, kube-proxy
    /// and kube-scheduler, the apiserver on [`node::NODE_IP`], kube-controller-manager with
    /// every default controller. Combined with [`TestbedBuilder::clusterctl_init`],
    /// `clusterctl init` also installs cert-manager, and Cluster API, CAPM3, cert-manager and
    /// our providers run as the pods their manifests describe, and baremetal-operator (fixture
    /// provisioner) as the pod of its own manifests. The node has the images build.sh wrote and those of
    /// [`TestbedBuilder::node_images`].
    pub fn node(mut self) -> Self {
        self.node = true;
        self.controller_manager = true;
        self
    }

    /// Serve the apiserver on `address` instead of 127.0.0.1 (a testbed whose apiserver pods
    /// must reach: [`node::NODE_IP`] once another testbed's node made the bridge).
    pub fn listen_on(mut self, address: &str) -> Self {
        self.listen = Some(address.to_owned());
        self
    }

    /// The apiserver reaches kubelets (pod exec, logs, port-forward) through an HTTP CONNECT
    /// proxy on this Unix socket (its `cluster` egress selection), presenting a kubelet client
    /// certificate of the testbed's CA and checking the kubelets' serving certificates against
    /// it: a simulated site's network between the apiserver and its Nodes.
    pub fn kubelet_network(mut self, socket: impl Into<PathBuf>) -> Self {
        self.kubelet_network = Some(socket.into());
        self
    }

    /// A variable for `clusterctl init` (written into its configuration file), replacing the
    /// default of [`clusterctl::DEFAULT_VARIABLES`] of the same name.
    pub fn clusterctl_variable(mut self, name: &str, value: &str) -> Self {
        self.clusterctl_variables
            .push((name.to_owned(), value.to_owned()));
        self
    }

    /// OCI archives to import into the node's containerd (our managers' images, say).
    pub fn node_images(mut self, archives: impl IntoIterator<Item = PathBuf>) -> Self {
        self.node_images.extend(archives);
        self
    }

    pub async fn start(self) -> Result<Testbed> {
        Testbed::start(self).await
    }
}

/// A running control plane. Dropping it kills its processes.
pub struct Testbed {
    /// A client authenticated as a `system:masters` user.
    pub client: Client,
    /// A kubeconfig file for the same user (for Go tools such as clusterctl).
    pub kubeconfig: PathBuf,
    /// The testbed's directory: `logs/`, `pki/`, `etcd/`, ...
    pub dir: PathBuf,
    /// `https://127.0.0.1:<port>`
    pub server: String,
    pub cache: Cache,
    pub(crate) ca: Ca,
    name: String,
    procs: Vec<Process>,
    tmp: Option<tempfile::TempDir>,
    /// CAPI and CAPM3 were installed by `clusterctl init`: their objects exist and are
    /// re-pointed rather than applied.
    installed_by_clusterctl: bool,
    /// The kube-apiserver's flags, to start it again ([`Testbed::start_apiserver_again`]).
    apiserver_args: Vec<String>,
    /// The machine state of the testbed's node, when it has one (undone on drop).
    node: Option<node::NodeHost>,
    /// The apiserver's address.
    address: String,
    /// [`TestbedBuilder::clusterctl_variable`]s.
    pub(crate) clusterctl_variables: Vec<(String, String)>,
    /// [`TestbedBuilder::kubelet_network`].
    kubelet_network: Option<PathBuf>,
}

impl Testbed {
    pub fn builder() -> TestbedBuilder {
        TestbedBuilder::default()
    }

    async fn start(opts: TestbedBuilder) -> Result<Testbed> {
        let cache = Cache::locate()?;
        let name = opts.name.clone().unwrap_or_else(default_name);
        let tmp = tempfile::Builder::new()
            .prefix(&format!("capoa-testbed-{name}-"))
            .tempdir()
            .context("creating the testbed directory")?;
        let dir = tmp.path().to_owned();
        for d in ["logs", "pki", "etcd"] {
            std::fs::create_dir_all(dir.join(d))?;
        }
        eprintln!(
            "testbed {name}: directory {} (process logs in {}/logs/)",
            dir.display(),
            dir.display()
        );
        let ca = Ca::new("capoa-testbed-ca")?;
        let mut tb = Testbed {
            client: placeholder_client()?,
            kubeconfig: dir.join("kubeconfig"),
            server: String::new(),
            dir,
            cache,
            ca,
            name,
            procs: Vec::new(),
            tmp: Some(tmp),
            installed_by_clusterctl: false,
            apiserver_args: Vec::new(),
            node: None,
            address: match (&opts.listen, opts.node) {
                (_, true) => node::NODE_IP.to_owned(),
                (Some(a), false) => a.clone(),
                (None, false) => "127.0.0.1".to_owned(),
            },
            clusterctl_variables: opts.clusterctl_variables.clone(),
            kubelet_network: opts.kubelet_network.clone(),
        };
        match tb.boot(&opts).await {
            Ok(()) => Ok(tb),
            Err(e) => {
                // Keep the logs the error refers to.
                tb.keep_dir();
                Err(e)
            }
        }
    }

    async fn boot(&mut self, opts: &TestbedBuilder) -> Result<()> {
        if opts.node {
            self.node =
                Some(node::NodeHost::prepare(&self.dir, self.cache.bin("kube-proxy")).await?);
        }
        self.start_etcd_and_apiserver().await?;
        let mut crds = Vec::new();
        for f in &opts.crd_files {
            crds.extend(resources::load_yaml_path(f)?);
        }
        for y in &opts.crd_yaml {
            crds.extend(resources::parse_yaml(y)?);
        }
        resources::install_crds(&self.client, crds).await?;
        if opts.node {
            self.start_controller_manager().await?;
            let mut images = self.cache.node_images()?;
            images.extend(opts.node_images.iter().cloned());
            node::start(self, &images).await?;
        }
        if opts.clusterctl_init {
            if !opts.node {
                clusterctl::Clusterctl::install_cert_manager_crds(self).await?;
            }
            let clusterctl = clusterctl::Clusterctl::new(self)?;
            clusterctl
                .run(&[
                    "init",
                    "--core",
                    "cluster-api",
                    "--infrastructure",
                    clusterctl::METAL3,
                    "--bootstrap",
                    clusterctl::PROVIDER,
                    "--control-plane",
                    clusterctl::PROVIDER,
                ])
                .await?;
            self.installed_by_clusterctl = true;
        }
        if opts.node && opts.clusterctl_init {
            // Cluster API and CAPM3 run as pods; baremetal-operator, not a clusterctl provider,
            // from its own manifests.
            metal3::start_bmo_pod(self).await?;
        } else {
            if opts.capi {
                capi::start(self).await?;
            }
            if opts.metal3 {
                metal3::start(self).await?;
            }
        }
        // Last, so that its garbage collector discovers every CRD installed above at start-up;
        // it only re-discovers resources every 30 s.
        if opts.controller_manager && !opts.node {
            self.start_controller_manager().await?;
        }
        Ok(())
    }

    /// Keeps the testbed directory after drop and prints where its logs are.
    pub fn keep_dir(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let dir = tmp.keep();
            let logs = std::fs::read_dir(dir.join("logs"))
                .map(|rd| {
                    rd.filter_map(|e| e.ok().map(|e| e.path().display().to_string()))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            eprintln!(
                "testbed {}: kept {}; logs: {logs}",
                self.name,
                dir.display()
            );
        }
    }

    fn pki(&self, file: &str, content: &str) -> Result<PathBuf> {
        let p = self.dir.join("pki").join(file);
        std::fs::write(&p, content).with_context(|| format!("writing {}", p.display()))?;
        Ok(p)
    }

    fn log(&self, process: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{process}.log"))
    }

    /// Starts a process whose log is `logs/<name>.log`, owned by the testbed.
    pub fn spawn(
        &mut self,
        name: &str,
        program: &Path,
        args: &[String],
        envs: &[(&str, &str)],
    ) -> Result<&mut Process> {
        let p = Process::spawn(name, program, args, envs, self.log(name))?;
        self.procs.push(p);
        Ok(self.procs.last_mut().expect("just pushed"))
    }

    async fn start_etcd_and_apiserver(&mut self) -> Result<()> {
        let (client_port, peer_port) = (free_port()?, free_port()?);
        let etcd_dir = self.dir.join("etcd");
        let args = vec![
            "--name=default".to_owned(),
            format!("--data-dir={}", etcd_dir.display()),
            format!("--listen-client-urls=http://127.0.0.1:{client_port}"),
            format!("--advertise-client-urls=http://127.0.0.1:{client_port}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-cluster=default=http://127.0.0.1:{peer_port}"),
            "--unsafe-no-fsync=true".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        let bin = self.cache.bin("etcd");
        let etcd = self.spawn("etcd", &bin, &args, &[])?;
        wait_until("etcd", etcd, Duration::from_secs(30), async || {
            let (code, body) = http_get(client_port, "/health")?;
            Ok(code == 200 && body.contains("\"true\""))
        })
        .await?;

        let port = free_port()?;
        let address = self.address.clone();
        let address = address.as_str();
        self.server = format!("https://{address}:{port}");
        let serving = self.ca.serving_for(
            "kube-apiserver",
            &[
                address,
                node::KUBERNETES_SERVICE_IP,
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
        )?;
        let admin = self
            .ca
            .client("capoa-testbed-admin", Some("system:masters"))?;
        let (sa_pub, sa_key) = certs::service_account_keys()?;
        let ca_file = self.pki("ca.crt", &self.ca.cert_pem)?;
        let tls_crt = self.pki("apiserver.crt", &serving.cert_pem)?;
        let tls_key = self.pki("apiserver.key", &serving.key_pem)?;
        let sa_pub_file = self.pki("sa.pub", &sa_pub)?;
        let sa_key_file = self.pki("sa.key", &sa_key)?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: testbed\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n\
             users:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n\
             contexts:\n- name: testbed\n  context:\n    cluster: testbed\n    user: admin\ncurrent-context: testbed\n",
            self.server,
            b64(&self.ca.cert_pem),
            b64(&admin.cert_pem),
            b64(&admin.key_pem),
        );
        std::fs::write(&self.kubeconfig, &kubeconfig)?;
        let mut args = vec![
            format!("--etcd-servers=http://127.0.0.1:{client_port}"),
            format!("--cert-dir={}", self.dir.join("pki").display()),
            format!("--tls-cert-file={}", tls_crt.display()),
            format!("--tls-private-key-file={}", tls_key.display()),
            format!("--client-ca-file={}", ca_file.display()),
            format!("--secure-port={port}"),
            format!("--bind-address={address}"),
            format!("--advertise-address={address}"),
            format!("--service-cluster-ip-range={}", node::SERVICE_SUBNET),
            "--allow-privileged=true".to_owned(),
            format!("--service-account-issuer=https://{address}:{port}/"),
            format!("--service-account-key-file={}", sa_pub_file.display()),
            format!(
                "--service-account-signing-key-file={}",
                sa_key_file.display()
            ),
        ];
        if self.node.is_some() {
            // As a cluster's: the node authorizer, service-account tokens in pods, the
            // `kubernetes` Service's endpoint kept, and a client certificate for kubelets.
            args.extend([
                "--authorization-mode=Node,RBAC".to_owned(),
                "--enable-admission-plugins=NodeRestriction".to_owned(),
            ]);
            args.extend(self.kubelet_client_args(&ca_file)?);
        } else {
            args.extend([
                "--authorization-mode=RBAC".to_owned(),
                "--disable-admission-plugins=ServiceAccount".to_owned(),
                "--endpoint-reconciler-type=none".to_owned(),
            ]);
            if let Some(socket) = &self.kubelet_network {
                args.extend(self.kubelet_client_args(&ca_file)?);
                let egress = self.dir.join("egress-selector.yaml");
                std::fs::write(&egress, egress_selector_config(socket))
                    .context("writing the egress selector configuration")?;
                args.push(format!(
                    "--egress-selector-config-file={}",
                    egress.display()
                ));
            }
        }
        let bin = self.cache.bin("kube-apiserver");
        self.spawn("kube-apiserver", &bin, &args, &[])?;
        self.apiserver_args = args;
        let config = kube::Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&kubeconfig)?,
            &KubeConfigOptions::default(),
        )
        .await
        .context("reading the testbed kubeconfig")?;
        let client = Client::try_from(config).context("creating the testbed client")?;
        let apiserver = self.procs.last_mut().expect("just pushed");
        wait_until(
            "kube-apiserver",
            apiserver,
            Duration::from_secs(60),
            async || {
                let req = http::Request::get("/readyz").body(Vec::new())?;
                Ok(client.request_text(req).await? == "ok")
            },
        )
        .await?;
        self.client = client;
        Ok(())
    }

    async fn start_controller_manager(&mut self) -> Result<()> {
        let kc = self.kubeconfig.display().to_string();
        let mut args = vec![
            format!("--kubeconfig={kc}"),
            format!("--authentication-kubeconfig={kc}"),
            format!("--authorization-kubeconfig={kc}"),
            "--leader-elect=false".to_owned(),
            "--use-service-account-credentials=false".to_owned(),
            "--bind-address=127.0.0.1".to_owned(),
            format!("--secure-port={}", free_port()?),
            format!("--cert-dir={}", self.dir.join("pki").display()),
        ];
        if self.node.is_some() {
            // A cluster's: Deployments, ReplicaSets, endpoints, node lifecycle (the not-ready
            // taint), role aggregation (CAPI's aggregated role), kube-root-ca.crt, ...
            let pki = self.dir.join("pki");
            let ca_key = self.pki("ca.key", &self.ca.key_pem)?;
            args.extend([
                "--controllers=*".to_owned(),
                format!("--root-ca-file={}", pki.join("ca.crt").display()),
                format!(
                    "--service-account-private-key-file={}",
                    pki.join("sa.key").display()
                ),
                format!(
                    "--cluster-signing-cert-file={}",
                    pki.join("ca.crt").display()
                ),
                format!("--cluster-signing-key-file={}", ca_key.display()),
            ]);
        } else {
            args.push("--controllers=garbage-collector-controller,namespace-controller".to_owned());
        }
        let bin = self.cache.bin("kube-controller-manager");
        let kcm = self.spawn("kube-controller-manager", &bin, &args, &[])?;
        // Its health endpoint needs authentication; give it a moment and make sure it stayed up.
        tokio::time::sleep(Duration::from_millis(500)).await;
        kcm.check_running()
    }

    /// The testbed's certificate authority (PEM): it signs the apiserver's and the webhooks'
    /// serving certificates.
    pub fn ca_pem(&self) -> &str {
        &self.ca.cert_pem
    }

    /// The CA's private key (PEM). The apiserver also trusts this CA for client certificates,
    /// so whatever it signs authenticates here (a lab installer's admin kubeconfig, say).
    pub fn ca_key_pem(&self) -> &str {
        &self.ca.key_pem
    }

    /// A client authenticated by a certificate of the testbed CA as `user` in `group`
    /// (subject to RBAC, unlike [`Testbed::client`]).
    pub async fn client_as(&self, user: &str, group: Option<&str>) -> Result<Client> {
        Client::try_from(self.config_as(user, group).await?).context("creating a client")
    }

    /// The client configuration of [`Testbed::client_as`], for a manager that builds its own
    /// client from it (`manager::runtime::client_from_config`). A user named
    /// `system:serviceaccount:<namespace>:<name>` is bound by RBAC as that ServiceAccount.
    pub async fn config_as(&self, user: &str, group: Option<&str>) -> Result<kube::Config> {
        let kubeconfig = self.kubeconfig_as(user, group)?;
        kube::Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&kubeconfig)?,
            &KubeConfigOptions::default(),
        )
        .await
        .context("reading a client kubeconfig")
    }

    /// Writes a kubeconfig for `user` in `group` (a certificate of the testbed CA) to `path`.
    pub fn write_kubeconfig_as(
        &self,
        path: &Path,
        user: &str,
        group: Option<&str>,
    ) -> Result<PathBuf> {
        let kubeconfig = self.kubeconfig_as(user, group)?;
        std::fs::write(path, kubeconfig).with_context(|| format!("writing {}", path.display()))?;
        Ok(path.to_owned())
    }

    /// A kubeconfig (YAML) for `user` in `group`, authenticated by a new certificate of the
    /// testbed CA.
    fn kubeconfig_as(&self, user: &str, group: Option<&str>) -> Result<String> {
        let pair = self.ca.client(user, group)?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        Ok(format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: testbed\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n\
             users:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n\
             contexts:\n- name: u\n  context:\n    cluster: testbed\n    user: u\ncurrent-context: u\n",
            self.server,
            b64(&self.ca.cert_pem),
            b64(&pair.cert_pem),
            b64(&pair.key_pem),
        ))
    }

    /// The apiserver's kubelet client certificate, and the testbed CA to check kubelets with.
    fn kubelet_client_args(&self, ca_file: &Path) -> Result<Vec<String>> {
        let kubelet_client = self
            .ca
            .client("kube-apiserver-kubelet-client", Some("system:masters"))?;
        let kc_crt = self.pki("kubelet-client.crt", &kubelet_client.cert_pem)?;
        let kc_key = self.pki("kubelet-client.key", &kubelet_client.key_pem)?;
        Ok(vec![
            format!("--kubelet-client-certificate={}", kc_crt.display()),
            format!("--kubelet-client-key={}", kc_key.display()),
            format!("--kubelet-certificate-authority={}", ca_file.display()),
            // Node names resolve nowhere: reach kubelets by address.
            "--kubelet-preferred-address-types=InternalIP".to_owned(),
        ])
    }

    /// A serving certificate signed by [`Testbed::ca_pem`] for these names and addresses (a
    /// simulated kubelet's, for its Node's address).
    pub fn serving_cert_for(&self, name: &str, names: &[&str]) -> Result<certs::CertPair> {
        self.ca.serving_for(name, names)
    }

    /// True when the testbed has a node ([`TestbedBuilder::node`]).
    pub fn has_node(&self) -> bool {
        self.node.is_some()
    }

    /// A serving certificate for 127.0.0.1 signed by [`Testbed::ca_pem`].
    pub fn serving_cert(&self, name: &str) -> Result<certs::CertPair> {
        self.ca.serving(name)
    }

    /// Writes a serving certificate for 127.0.0.1 as `tls.crt` / `tls.key` into `dir`, the layout
    /// our managers' `--webhook-cert-dir` reads.
    pub fn write_serving_cert(&self, name: &str, dir: &Path) -> Result<()> {
        let pair = self.ca.serving(name)?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("tls.crt"), &pair.cert_pem).context("writing tls.crt")?;
        std::fs::write(dir.join("tls.key"), &pair.key_pem).context("writing tls.key")?;
        Ok(())
    }

    /// Points every webhook of the installed ValidatingWebhookConfiguration `name` at
    /// `https://127.0.0.1:<port><its path>`, trusting the testbed CA.
    pub async fn point_validating_webhooks(&self, name: &str, port: u16) -> Result<()> {
        self.point_webhook_configuration("ValidatingWebhookConfiguration", name, port)
            .await
    }

    /// The same for the installed MutatingWebhookConfiguration `name`.
    pub async fn point_mutating_webhooks(&self, name: &str, port: u16) -> Result<()> {
        self.point_webhook_configuration("MutatingWebhookConfiguration", name, port)
            .await
    }

    async fn point_webhook_configuration(&self, kind: &str, name: &str, port: u16) -> Result<()> {
        let doc = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
        });
        resources::repoint_existing(&self.client, &doc, port, self.ca_pem()).await
    }

    /// Points the conversion webhook of the installed CRD `crd_name` at
    /// `https://127.0.0.1:<port>/convert`, trusting the testbed CA: what the webhook Service and
    /// cert-manager's CA injector do in a cluster.
    pub async fn point_conversion_webhook(&self, crd_name: &str, port: u16) -> Result<()> {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(self.client.clone());
        let crd = crds
            .get(crd_name)
            .await
            .with_context(|| format!("reading CRD {crd_name}"))?;
        let value = serde_json::to_value(&crd)?;
        if value
            .pointer("/spec/conversion/strategy")
            .and_then(serde_json::Value::as_str)
            != Some("Webhook")
        {
            anyhow::bail!("CRD {crd_name} does not convert by webhook");
        }
        let pointed = capi::point_webhooks_at(value, port, self.ca_pem());
        let crd: CustomResourceDefinition = serde_json::from_value(pointed)?;
        crds.replace(crd_name, &Default::default(), &crd)
            .await
            .with_context(|| format!("pointing CRD {crd_name} at port {port}"))?;
        Ok(())
    }

    /// SIGKILLs the kube-apiserver, as a crash would; etcd and every other process keep
    /// running (and retrying). [`Testbed::start_apiserver_again`] brings it back.
    pub fn kill_apiserver(&mut self) -> Result<()> {
        let p = self
            .procs
            .iter_mut()
            .find(|p| p.name == "kube-apiserver")
            .context("the testbed has no kube-apiserver")?;
        p.kill();
        Ok(())
    }

    /// Starts the kube-apiserver again with the flags, port, certificates and etcd it had
    /// (its log is appended to) and waits until it is ready.
    pub async fn start_apiserver_again(&mut self) -> Result<()> {
        let bin = self.cache.bin("kube-apiserver");
        let log = self.log("kube-apiserver");
        let mut p = Process::spawn("kube-apiserver", &bin, &self.apiserver_args, &[], log)?;
        let client = self.client.clone();
        wait_until(
            "kube-apiserver",
            &mut p,
            Duration::from_secs(60),
            async || {
                let req = http::Request::get("/readyz").body(Vec::new())?;
                Ok(client.request_text(req).await? == "ok")
            },
        )
        .await?;
        match self.procs.iter_mut().find(|p| p.name == "kube-apiserver") {
            Some(old) => *old = p,
            None => self.procs.push(p),
        }
        Ok(())
    }

    /// The process id of the testbed's process `name` (`etcd`, `kube-apiserver`, ...), to read
    /// its CPU and memory from `/proc` (benchmarks).
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.procs.iter().find(|p| p.name == name).map(Process::id)
    }

    /// Every process's log file.
    pub fn logs(&self) -> Vec<PathBuf> {
        self.procs.iter().map(|p| p.log.clone()).collect()
    }

    /// Fails if any process of the testbed has exited.
    pub fn check_running(&mut self) -> Result<()> {
        self.procs.iter_mut().try_for_each(Process::check_running)
    }

    /// Server-side applies every object in `yaml` (multi-document) with field manager
    /// `capoa-testbed`, resolving kinds through discovery.
    pub async fn apply_yaml(&self, yaml: &str) -> Result<Vec<kube::api::DynamicObject>> {
        resources::apply_all(&self.client, resources::parse_yaml(yaml)?).await
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Some(node) = &self.node {
            // kubelet first, or it restarts the pods being killed.
            if let Some(kubelet) = self.procs.iter_mut().find(|p| p.name == "kubelet") {
                kubelet.kill();
            }
            node.kill_pods();
        }
        while let Some(mut p) = self.procs.pop() {
            p.kill();
        }
        // Mounts, rules, the bridge and cgroups, after containerd is gone.
        self.node = None;
        if std::thread::panicking() || std::env::var(KEEP_ENV).is_ok_and(|v| v == "1") {
            self.keep_dir();
        }
    }
}

/// The test's name (libtest names each test's thread after it), made file-name safe.
fn default_name() -> String {
    let t = std::thread::current();
    let raw = t.name().unwrap_or("testbed");
    let name: String = raw
        .rsplit("::")
        .next()
        .unwrap_or(raw)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    if name.is_empty() || name == "main" {
        "testbed".into()
    } else {
        name
    }
}

/// A client that is never used: replaced once the apiserver is up.
fn placeholder_client() -> Result<Client> {
    let config = kube::Config::new("https://127.0.0.1:1".parse()?);
    Ok(Client::try_from(config)?)
}

/// The apiserver's egress selection `cluster` (its traffic to nodes and pods) through an HTTP
/// CONNECT proxy on a Unix socket (the TCP transport always speaks TLS to the proxy).
fn egress_selector_config(socket: &Path) -> String {
    format!(
        "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n\
         egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n\
         \x20   transport:\n      uds:\n        udsName: {}\n",
        socket.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_egress_selection_is_the_cluster_through_http_connect_over_a_unix_socket() {
        let yaml = egress_selector_config(Path::new("/tmp/labnet/net.sock"));
        let doc: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(doc["apiVersion"].as_str(), Some("apiserver.k8s.io/v1beta1"));
        assert_eq!(doc["kind"].as_str(), Some("EgressSelectorConfiguration"));
        let selection = &doc["egressSelections"][0];
        assert_eq!(selection["name"].as_str(), Some("cluster"));
        let connection = &selection["connection"];
        assert_eq!(connection["proxyProtocol"].as_str(), Some("HTTPConnect"));
        assert_eq!(
            connection["transport"]["uds"]["udsName"].as_str(),
            Some("/tmp/labnet/net.sock")
        );
        assert!(
            connection["transport"].get("tcp").is_none(),
            "TCP always dials TLS"
        );
    }
}

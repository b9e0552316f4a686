//! Starts the whole core in-process: agent token keys, the store (restored from the file
//! store), the agent REST API and image servers, and the controllers. The control-plane manager
//! calls [`run`]; the `assisted-core` binary does the same on its own.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::FutureExt;
use kube::Client;
use tokio::sync::watch;

use super::auth::{Keys, load_or_create_keys};
use super::controllers;
use super::controllers::context::Context;
use super::controllers::context::ImageSettings;
use super::controllers::prepare::BackendPreparer;
use super::image_server::{self, ImageServerState};
use super::images::{OsImage, OsImageCache};
use super::install::{FileStore, InstallBackend, LabBackend, LabClientCa, OpenshiftInstallBackend};
use super::store::Store;
use super::tls::{self, CertificateNames, ServingCertificate, TlsSettings, certificate_names};
use super::urls::ServiceUrls;
use super::{journal, monitor, persister, shards};
use crate::domain::Config;
use manager::runtime::parse_bind_address;
use manager::runtime::{SharedRegistry, WatchScope};

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Run the real `openshift-install`: each release's own, from its payload, or the binary
    /// `--openshift-install-binary` names.
    OpenshiftInstall,
    /// Generate lab artifacts (valid Ignition, a real CA and admin kubeconfig); no installer.
    Lab,
}

/// Settings of the embedded core (flags of the control-plane manager and of `assisted-core`).
#[derive(clap::Args, Debug, Clone)]
pub struct CoreArgs {
    /// Where the agent REST API listens.
    #[arg(long, default_value = ":8090", value_parser = parse_bind_address)]
    pub agent_api_bind_address: SocketAddr,
    /// Where the image server listens.
    #[arg(long, default_value = ":8091", value_parser = parse_bind_address)]
    pub images_bind_address: SocketAddr,
    /// Agent API base URL as hosts reach it (written into discovery images).
    #[arg(long, env = "ASSISTED_CORE_AGENT_API_URL", default_value = "")]
    pub agent_api_url: String,
    /// Image server base URL as BMCs reach it (the ISO URLs in InfraEnv status).
    #[arg(long, env = "ASSISTED_CORE_IMAGES_URL", default_value = "")]
    pub images_url: String,
    /// Directory of the file store (cluster artifacts, state, ISO cache).
    #[arg(long, default_value = "/var/lib/assisted-core")]
    pub data_dir: PathBuf,
    /// JSON list of base OS images: [{openshift_version, cpu_architecture, url, version}].
    #[arg(long, env = "OS_IMAGES", default_value = "[]")]
    pub os_images: String,
    #[arg(long, value_enum, default_value_t = Backend::OpenshiftInstall)]
    pub install_backend: Backend,
    /// One installer binary for every release. Unset: each cluster's installer is extracted
    /// from its release payload (read with the cluster's pull secret) into
    /// `<data-dir>/installers`, as `oc adm release extract --command=openshift-install` does.
    #[arg(long)]
    pub openshift_install_binary: Option<PathBuf>,
    /// Lab backend: the workload API URL written into the admin kubeconfig.
    #[arg(long)]
    pub lab_api_url: Option<String>,
    /// Lab backend: CA bundle (PEM file) of that API server, trusted by the admin kubeconfig.
    #[arg(long)]
    pub lab_server_ca_file: Option<PathBuf>,
    /// Lab backend: client CA certificate and key (PEM files) of that API server; the admin
    /// certificate is signed with them so the kubeconfig authenticates there.
    #[arg(long, requires = "lab_client_ca_key_file")]
    pub lab_client_ca_cert_file: Option<PathBuf>,
    #[arg(long, requires = "lab_client_ca_cert_file")]
    pub lab_client_ca_key_file: Option<PathBuf>,
    /// Discovery agent image the discovery ignition runs.
    #[arg(
        long,
        env = "AGENT_IMAGE",
        default_value = "quay.io/edge-infrastructure/assisted-installer-agent:latest"
    )]
    pub agent_image: String,
    /// The assisted-installer image the hosts' install step runs (pin it for a release).
    #[arg(
        long,
        env = "INSTALLER_IMAGE",
        default_value = "quay.io/edge-infrastructure/assisted-installer:latest"
    )]
    pub installer_image: String,
    /// The assisted-installer-controller image the install runs in the new cluster.
    #[arg(
        long,
        env = "CONTROLLER_IMAGE",
        default_value = "quay.io/edge-infrastructure/assisted-installer-controller:latest"
    )]
    pub controller_image: String,
    /// Namespace of the Secret holding the agent token keys.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub keys_namespace: String,
    #[arg(long, default_value = "assisted-core-agent-token-keys")]
    pub keys_secret: String,
    /// Seconds between monitor passes (passes also run at once on changes).
    #[arg(long, default_value_t = 2)]
    pub monitor_interval_seconds: u64,
    /// Host disconnection timeout in seconds (upstream: 180).
    #[arg(long, default_value_t = 180)]
    pub host_disconnection_timeout_seconds: u64,
    /// The cert-manager issuer of the serving certificate, needed when a URL above is https:
    /// the core asks it for a certificate naming those URLs' hosts (see `service::tls`).
    #[arg(long)]
    pub tls_issuer: Option<String>,
    #[arg(long, default_value = "Issuer", value_parser = ["Issuer", "ClusterIssuer"])]
    pub tls_issuer_kind: String,
    /// Name of the Certificate and of its Secret, in the manager's namespace (`POD_NAMESPACE`).
    #[arg(long, default_value = "assisted-core-tls")]
    pub tls_secret: String,
}

impl CoreArgs {
    fn urls(&self) -> ServiceUrls {
        let or_local = |url: &str, addr: SocketAddr| {
            if url.is_empty() {
                format!("http://{addr}")
            } else {
                url.trim_end_matches('/').to_string()
            }
        };
        ServiceUrls {
            agent_api: or_local(&self.agent_api_url, self.agent_api_bind_address),
            images: or_local(&self.images_url, self.images_bind_address),
        }
    }
}

/// Where the serving certificate comes from, when a public URL is https: `None` when none is.
/// An https URL without `--tls-issuer` is refused at startup, with what to set.
pub fn tls_plan(
    args: &CoreArgs,
    urls: &ServiceUrls,
) -> anyhow::Result<Option<(TlsSettings, CertificateNames)>> {
    let names = certificate_names(urls)
        .map_err(|e| anyhow::anyhow!("--agent-api-url/--images-url: {e}"))?;
    if names.is_empty() {
        return Ok(None);
    }
    let Some(issuer) = args.tls_issuer.clone() else {
        anyhow::bail!(
            "the agent API or image URL is https ({}, {}) but no --tls-issuer names the \
             cert-manager issuer of its certificate",
            urls.agent_api,
            urls.images
        );
    };
    Ok(Some((
        TlsSettings {
            namespace: args.keys_namespace.clone(),
            secret: args.tls_secret.clone(),
            issuer,
            issuer_kind: args.tls_issuer_kind.clone(),
        },
        names,
    )))
}

/// Bound listeners, so callers (tests) can learn the ports before the core runs.
pub struct Listeners {
    pub agent_api: tokio::net::TcpListener,
    pub images: tokio::net::TcpListener,
}

impl Listeners {
    pub async fn bind(args: &CoreArgs) -> anyhow::Result<Listeners> {
        Ok(Listeners {
            agent_api: tokio::net::TcpListener::bind(args.agent_api_bind_address)
                .await
                .with_context(|| {
                    format!("binding the agent API on {}", args.agent_api_bind_address)
                })?,
            images: tokio::net::TcpListener::bind(args.images_bind_address)
                .await
                .with_context(|| {
                    format!("binding the image server on {}", args.images_bind_address)
                })?,
        })
    }
}

async fn lab_backend(args: &CoreArgs) -> anyhow::Result<LabBackend> {
    let read = |p: PathBuf| async move {
        tokio::fs::read_to_string(&p)
            .await
            .with_context(|| format!("reading {}", p.display()))
    };
    let server_ca_pem = match args.lab_server_ca_file.clone() {
        Some(p) => Some(read(p).await?),
        None => None,
    };
    let client_ca = match (
        args.lab_client_ca_cert_file.clone(),
        args.lab_client_ca_key_file.clone(),
    ) {
        (Some(c), Some(k)) => Some(LabClientCa {
            cert_pem: read(c).await?,
            key_pem: read(k).await?,
        }),
        _ => None,
    };
    Ok(LabBackend {
        server_ca_pem,
        client_ca,
    })
}

/// Runs the core until `shutdown` turns true.
pub async fn run(
    client: Client,
    scope: WatchScope,
    args: CoreArgs,
    listeners: Listeners,
    registry: SharedRegistry,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let os_images: Vec<OsImage> = serde_json::from_str(&args.os_images).context(
        "--os-images must be a JSON list of {openshift_version, cpu_architecture, url, version}",
    )?;
    let keys = Arc::new(
        load_or_create_keys(client.clone(), &args.keys_namespace, &args.keys_secret)
            .await
            .context("loading the agent token keys")?,
    );
    let files_root = args.data_dir.join("files");
    tokio::fs::create_dir_all(&files_root)
        .await
        .with_context(|| format!("creating {}", files_root.display()))?;
    let cfg = store_config(&args);
    let (store, dirty) = Store::new(cfg);
    let preparer = preparer(&args, &files_root).await?;
    let signer = keys.clone();
    let urls = args.urls();
    let tls = tls_plan(&args, &urls)?;
    let serving = tls.as_ref().map(|_| Arc::new(ServingCertificate::new()));
    let acceptor = tls_acceptor(serving.as_ref())?;
    let acceptor_for = |url: &str| acceptor.clone().filter(|_| url.starts_with("https://"));
    let k8s = client.clone();
    let ctx = Arc::new(
        Context::new(
            client,
            store.clone(),
            files_root.clone(),
            preparer,
            signer,
            ImageSettings {
                urls: urls.clone(),
                agent_image: args.agent_image.clone(),
                os_images: os_images.clone(),
                serving: serving.clone(),
            },
            &registry,
        )
        .serving(scope),
    );
    resume(&ctx).await;
    // Sharded: every InfraEnv's metadata, to send a host that reached the wrong shard on.
    let directory = ctx.scope.is_sharded().then(|| {
        shards::Directory::start(ctx.scope.api(&ctx.client), urls.clone(), shutdown.clone())
    });
    let (api, images) = routers(&ctx, &keys, &args, os_images, directory);
    tracing::info!(agent_api = %urls.agent_api, images = %urls.images, "assisted-core serving");
    let agents = controllers::watch_agents(ctx.client.clone(), &ctx.scope, shutdown.clone());
    let agent_store = agents.store.clone();
    let certificate = async {
        if let (Some((settings, names)), Some(serving)) = (tls, serving) {
            tls::run(k8s, settings, names, serving, shutdown.clone()).await;
        }
    };
    tokio::join!(
        serve(
            listeners.agent_api,
            api,
            acceptor_for(&urls.agent_api),
            HEADER_READ_TIMEOUT,
            shutdown.clone()
        ),
        serve(
            listeners.images,
            images,
            acceptor_for(&urls.images),
            HEADER_READ_TIMEOUT,
            shutdown.clone()
        ),
        controllers::run(ctx.clone(), agents, shutdown.clone()),
        // Boxed as before the move: a large future kept off the stack.
        journal::run(store.clone(), files_root.clone(), shutdown.clone()),
        persister::run(ctx.clone(), dirty, agent_store, shutdown.clone()).boxed(),
        monitor::run(ctx.clone(), Duration::from_secs(2), shutdown.clone()),
        controllers::day2::run(ctx, shutdown.clone()),
        certificate,
    );
    Ok(())
}

/// After a (re)start, before serving: the journal's clusters back in the store, every cluster
/// and infra-env registered once, and the preparations that were running started again.
async fn resume(ctx: &Arc<Context>) {
    let resume = journal::restore(&ctx.store, &ctx.files_root).await;
    controllers::initial_sync(ctx).await;
    for id in resume {
        monitor::start_preparation(ctx, id).await;
    }
}

/// The agent REST API's router and the image server's.
fn routers(
    ctx: &Context,
    keys: &Arc<Keys>,
    args: &CoreArgs,
    os_images: Vec<OsImage>,
    directory: Option<Arc<shards::Directory>>,
) -> (axum::Router, axum::Router) {
    let api = super::http::router(super::http::AppState {
        store: ctx.store.clone(),
        keys: keys.clone(),
        files_root: ctx.files_root.clone(),
        client: Some(ctx.client.clone()),
    });
    let images = image_server::router(ImageServerState {
        store: ctx.store.clone(),
        keys: keys.clone(),
        cache: Arc::new(OsImageCache::new(args.data_dir.join("os-images"))),
        os_images: Arc::new(os_images),
    });
    let Some(directory) = directory else {
        return (api, images);
    };
    let guard = |service| shards::Guard {
        directory: directory.clone(),
        store: ctx.store.clone(),
        keys: keys.clone(),
        service,
    };
    (
        shards::redirect_foreign(api, guard(shards::Service::AgentApi)),
        shards::redirect_foreign(images, guard(shards::Service::Images)),
    )
}

/// The store's settings from the command line.
fn store_config(args: &CoreArgs) -> Config {
    Config {
        host_disconnection_timeout: std::time::Duration::from_secs(
            args.host_disconnection_timeout_seconds,
        ),
        agent_image: args.agent_image.clone(),
        installer_image: args.installer_image.clone(),
        controller_image: args.controller_image.clone(),
        ..Config::default()
    }
}

/// The install backend the command line names, behind the controllers' preparer.
async fn preparer(args: &CoreArgs, files_root: &Path) -> anyhow::Result<Arc<BackendPreparer>> {
    let backend: Arc<dyn InstallBackend> = match args.install_backend {
        Backend::Lab => Arc::new(lab_backend(args).await?),
        Backend::OpenshiftInstall => Arc::new(match &args.openshift_install_binary {
            Some(binary) => OpenshiftInstallBackend::new(binary.clone()),
            None => {
                OpenshiftInstallBackend::from_release_payloads(args.data_dir.join("installers"))
                    .context("the registry client for release payloads")?
            }
        }),
    };
    Ok(Arc::new(BackendPreparer {
        backend,
        files: FileStore::new(files_root.to_path_buf()),
        work_root: args.data_dir.join("work"),
        api_url: args.lab_api_url.clone(),
    }))
}

/// The TLS acceptor of the https listeners, when a serving certificate is used.
fn tls_acceptor(
    serving: Option<&Arc<ServingCertificate>>,
) -> anyhow::Result<Option<tokio_rustls::TlsAcceptor>> {
    Ok(match serving {
        Some(s) => Some(manager::webhook::tls_acceptor(s.clone()).map_err(|e| {
            anyhow::anyhow!("configuring TLS for the agent API and image server: {e}")
        })?),
        None => None,
    })
}

/// How long a client may take to send a request's head (request line and headers). Without a
/// limit, a client that opens a connection and never finishes its headers holds it for ever.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` over HTTP/1.1 (in TLS when `tls` is given) until `shutdown`, closing connections whose
/// request head does not arrive within `header_read_timeout` (`axum::serve` sets no such limit).
/// On shutdown, requests in flight finish and idle connections close.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    header_read_timeout: Duration,
    shutdown: watch::Receiver<bool>,
) {
    manager::http::serve(listener, router, tls, header_read_timeout, shutdown).await;
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    fn core_args(flags: &[&str]) -> CoreArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            core: CoreArgs,
        }
        let argv = std::iter::once("core").chain(flags.iter().copied());
        <Cli as clap::Parser>::try_parse_from(argv).unwrap().core
    }

    #[test]
    fn an_https_url_needs_an_issuer_and_gets_a_certificate_for_its_host() {
        let args = core_args(&[
            "--agent-api-url=https://10.244.0.1:30890",
            "--images-url=http://10.244.0.1:30891",
        ]);
        let e = tls_plan(&args, &args.urls()).unwrap_err().to_string();
        assert!(
            e.contains("--tls-issuer") && e.contains("https://10.244.0.1:30890"),
            "{e}"
        );

        let args = core_args(&[
            "--agent-api-url=https://10.244.0.1:30890",
            "--tls-issuer=core-ca",
            "--keys-namespace=capoa-controlplane-system",
        ]);
        let (settings, names) = tls_plan(&args, &args.urls()).unwrap().unwrap();
        assert_eq!(settings.issuer, "core-ca");
        assert_eq!(settings.issuer_kind, "Issuer");
        assert_eq!(settings.namespace, "capoa-controlplane-system");
        // The images URL defaulted to plain http on its bind address: only the agent API's host.
        assert_eq!(names.ip_addresses, ["10.244.0.1"]);

        // All http: no TLS, the issuer is not needed.
        let args = core_args(&["--agent-api-url=http://a:1", "--images-url=http://a:2"]);
        assert!(tls_plan(&args, &args.urls()).unwrap().is_none());
        let args = core_args(&["--agent-api-url=ftp://a:1"]);
        assert!(tls_plan(&args, &args.urls()).is_err());
    }

    #[tokio::test]
    async fn a_request_head_that_never_ends_is_cut_off_and_others_are_served() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let (stop, shutdown) = watch::channel(false);
        let server = tokio::spawn(serve(
            listener,
            router,
            None,
            Duration::from_millis(300),
            shutdown,
        ));

        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n")
            .await
            .unwrap();
        let started = Instant::now();

        let mut complete = TcpStream::connect(addr).await.unwrap();
        complete
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        complete.read_to_end(&mut answer).await.unwrap();
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");

        // The unfinished head is dropped after the timeout (a reset counts as closed too).
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut rest))
            .await
            .expect("the connection is closed within 5 s");
        assert!(closed.map_or(true, |n| n == 0 || !rest.starts_with(b"HTTP/1.1 200")));
        assert!(started.elapsed() >= Duration::from_millis(250));

        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the server stops on shutdown")
            .unwrap();
    }
}

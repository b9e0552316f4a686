//! What every manager binary shares: flags, logging, the Kubernetes client, `/healthz`,
//! `/readyz` and `/metrics`, leader election on a Lease, and graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

/// Flags every manager accepts (the names CAPI providers use, so Deployments look familiar).
#[derive(clap::Args, Debug, Clone)]
pub struct ManagerArgs {
    /// Kubeconfig to use; default: $KUBECONFIG, ~/.kube/config, then the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Only watch this namespace; empty watches all namespaces (what clusterctl installs).
    #[arg(long, default_value = "")]
    pub namespace: String,
    /// Only reconcile objects labelled `cluster.x-k8s.io/watch-filter=<value>` (CAPI's flag, so
    /// several instances of a provider can share a management cluster).
    #[arg(long, default_value = "")]
    pub watch_filter: String,
    /// Run only while holding the leader Lease, so several replicas can run.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the leader Lease (default: the pod's namespace).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub leader_election_namespace: String,
    /// Identity written in the Lease (default: the pod name).
    #[arg(long, env = "POD_NAME")]
    pub leader_election_identity: Option<String>,
    /// Address of the Prometheus `/metrics` endpoint (`:8080` means all interfaces).
    #[arg(long, default_value = ":8080", value_parser = parse_bind_address)]
    pub metrics_bind_address: SocketAddr,
    /// Address of `/healthz` and `/readyz`.
    #[arg(long, default_value = ":8081", value_parser = parse_bind_address)]
    pub health_probe_bind_address: SocketAddr,
    /// Address of the HTTPS webhook server (CRD conversion), for managers that serve webhooks.
    #[arg(long, default_value = ":9443", value_parser = parse_bind_address)]
    pub webhook_bind_address: SocketAddr,
    /// Directory with the webhook server's `tls.crt` and `tls.key` (re-read when they change).
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs")]
    pub webhook_cert_dir: PathBuf,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter, e.g. `info` or `info,assisted_core=debug`.
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log_level: String,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

/// Why a manager could not read its flags or install its logging.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("invalid bind address {value:?} (expected host:port or :port): {source}")]
    BindAddress {
        value: String,
        source: std::net::AddrParseError,
    },
    #[error("invalid log filter {filter:?}: {source}")]
    LogFilter {
        filter: String,
        source: tracing_subscriber::filter::ParseError,
    },
    #[error("cannot install the log subscriber: {0}")]
    LogSubscriber(Box<dyn std::error::Error + Send + Sync>),
}

/// Parses a bind address; a leading `:` (the Go convention) means every interface.
pub fn parse_bind_address(value: &str) -> Result<SocketAddr, StartupError> {
    let full = if value.starts_with(':') {
        format!("0.0.0.0{value}")
    } else {
        value.to_string()
    };
    full.parse().map_err(|source| StartupError::BindAddress {
        value: value.to_string(),
        source,
    })
}

pub fn init_tracing(format: LogFormat, filter: &str) -> Result<(), StartupError> {
    let env_filter = tracing_subscriber::EnvFilter::try_new(filter).map_err(|source| {
        StartupError::LogFilter {
            filter: filter.to_string(),
            source,
        }
    })?;
    let builder = tracing_subscriber::fmt().with_env_filter(env_filter);
    let result = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    result.map_err(StartupError::LogSubscriber)
}

/// Builds the client from `--kubeconfig`, or infers it ($KUBECONFIG, ~/.kube/config, in-cluster).
pub async fn client(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|e| anyhow::anyhow!("cannot read kubeconfig {}: {e}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer().await?,
    };
    client_from_config(config)
}

/// Retries of a request the apiserver answered 429, 503 or 504, at most (client-go's bound).
const MAX_RETRIES: u32 = 10;

/// A client whose retries are bounded as client-go's are: at most [`MAX_RETRIES`] on 429, 503
/// and 504, 0.2 s doubling to 2 s apart, or the `Retry-After` the apiserver asks for when that
/// is longer. kube's default retries 15 times with waits growing to 1,000 s, so one request
/// could hold a reconcile for minutes after an apiserver restart.
pub fn client_from_config(config: Config) -> anyhow::Result<Client> {
    bounded_retry_client(
        config,
        std::time::Duration::from_millis(200),
        std::time::Duration::from_secs(2),
    )
}

fn bounded_retry_client(
    mut config: Config,
    first_wait: std::time::Duration,
    max_wait: std::time::Duration,
) -> anyhow::Result<Client> {
    config.default_retry = false;
    let policy = kube::client::retry::RetryPolicy::new(first_wait, max_wait, MAX_RETRIES, true)?;
    // The retry layer calls the service again, so it needs a clone of it: a buffer (what
    // kube's Client keeps inside too).
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&crate::requests::CountLayer)
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&tower::retry::RetryLayer::new(policy))
        .build())
}

/// The Prometheus registry controllers add their metrics to; `/metrics` encodes it.
pub type SharedRegistry = Arc<Mutex<Registry>>;

/// Shared by the probe and metrics servers.
pub struct Health {
    ready: watch::Receiver<bool>,
    registry: SharedRegistry,
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(health): State<Arc<Health>>) -> impl IntoResponse {
    if *health.ready.borrow() {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the API server has not been reached yet",
        )
    }
}

async fn metrics(State(health): State<Arc<Health>>) -> impl IntoResponse {
    let mut body = String::new();
    let encoded = match health.registry.lock() {
        Ok(registry) => encode(&mut body, &registry).map_err(|e| e.to_string()),
        Err(_) => Err("the metrics registry is poisoned".to_string()),
    };
    match encoded {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        ),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            e,
        ),
    }
}

async fn serve(
    address: SocketAddr,
    router: Router,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {address}: {e}"))?;
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        })
        .await?;
    Ok(())
}

/// What a manager runs while it is the leader: its controllers. It must return when `shutdown`
/// turns true.
pub struct Leader {
    pub client: Client,
    pub shutdown: watch::Receiver<bool>,
    /// Where the leader's controllers register their metrics.
    pub registry: SharedRegistry,
    /// `--namespace` and `--watch-filter`, for the controllers' watches.
    pub scope: WatchScope,
}

/// Which objects a manager's controllers watch (`--namespace`, `--watch-filter`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchScope {
    /// Empty: all namespaces.
    pub namespace: String,
    /// Empty: no filter; else only objects labelled `cluster.x-k8s.io/watch-filter=<value>`.
    pub watch_filter: String,
}

/// The label `--watch-filter` selects by (Cluster API's), and that a sharded manager's objects
/// carry from the object they were made for.
pub const WATCH_FILTER_LABEL: &str = "cluster.x-k8s.io/watch-filter";

impl WatchScope {
    /// The label selector the watches use, if any.
    pub fn label_selector(&self) -> Option<String> {
        (!self.watch_filter.is_empty())
            .then(|| format!("{WATCH_FILTER_LABEL}={}", self.watch_filter))
    }

    /// Whether this manager serves one shard of the objects (`--watch-filter` set).
    pub fn is_sharded(&self) -> bool {
        !self.watch_filter.is_empty()
    }

    /// The leader Lease of this manager's shard: `base`, or `base-<filter>` when sharded, so
    /// each shard elects its own leader. The filter is a label value; the characters a Lease
    /// name cannot hold (`_`, capitals) become `-` and lower case.
    pub fn lease_name(&self, base: &str) -> String {
        if !self.is_sharded() {
            return base.to_string();
        }
        let shard: String = self
            .watch_filter
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9' | '-' | '.') => c,
                _ => '-',
            })
            .collect();
        format!("{base}-{shard}")
    }

    /// An `Api` over the watched namespace (or all namespaces).
    pub fn api<K>(&self, client: &Client) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        if self.namespace.is_empty() {
            kube::Api::all(client.clone())
        } else {
            kube::Api::namespaced(client.clone(), &self.namespace)
        }
    }

    /// The watcher configuration: the watch-filter selector when set.
    pub fn watcher_config(&self) -> kube::runtime::watcher::Config {
        let config = kube::runtime::watcher::Config::default().any_semantic();
        match self.label_selector() {
            Some(selector) => config.labels(&selector),
            None => config,
        }
    }
}

/// Runs a manager: probes, metrics and `webhooks` (every replica serves them) at once, then
/// (after winning the Lease if `--leader-elect`) `run_leader`, until SIGTERM/SIGINT or until
/// leadership is lost.
pub async fn run_manager<F, Fut>(
    name: &str,
    lease_name: &str,
    args: ManagerArgs,
    webhooks: Option<Router>,
    run_leader: F,
) -> anyhow::Result<()>
where
    F: FnOnce(Leader) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let client = client(args.kubeconfig.as_ref()).await?;
    let (ready_tx, ready_rx) = watch::channel(false);
    let (shutdown_tx, shutdown_rx) = watch::channel(false);

    let leader_gauge = Gauge::<i64>::default();
    let registry = manager_registry(&leader_gauge);
    let scope = WatchScope {
        namespace: args.namespace.clone(),
        watch_filter: args.watch_filter.clone(),
    };
    let lease_name = scope.lease_name(lease_name);
    let health = Arc::new(Health {
        ready: ready_rx,
        registry: registry.clone(),
    });
    let http_servers = spawn_probe_and_metrics_servers(name, &args, health, &shutdown_rx);
    if let Some(router) = webhooks {
        spawn_webhook_server(&args, router, &shutdown_rx).await?;
    }
    spawn_signal_listener(shutdown_tx.clone());
    wait_for_apiserver(&client, &ready_tx).await?;

    let leader = Leader {
        client,
        shutdown: shutdown_rx.clone(),
        registry,
        scope,
    };
    let result = if args.leader_elect {
        let lease = LeaseSettings {
            name,
            lease_name: &lease_name,
            namespace: &args.leader_election_namespace,
            identity: args.leader_election_identity.clone(),
        };
        run_while_leader(lease, leader, &leader_gauge, run_leader).await
    } else {
        leader_gauge.set(1);
        run_leader(leader).await
    };

    let _ = shutdown_tx.send(true);
    join_http_servers(http_servers).await;
    result
}

/// The registry every manager starts with: the leader gauge and the apiserver request counter.
fn manager_registry(leader_gauge: &Gauge<i64>) -> SharedRegistry {
    let mut registry = Registry::with_prefix("capoa");
    registry.register(
        "leader",
        "1 while this replica holds the leader Lease",
        leader_gauge.clone(),
    );
    registry.register(
        "api_requests",
        "Requests sent to the apiserver, by verb and resource (every attempt)",
        crate::requests::family(),
    );
    Arc::new(Mutex::new(registry))
}

type ServerTask = tokio::task::JoinHandle<anyhow::Result<()>>;

/// `/healthz` and `/readyz` on the probe address, `/metrics` on the metrics address.
fn spawn_probe_and_metrics_servers(
    name: &str,
    args: &ManagerArgs,
    health: Arc<Health>,
    shutdown: &watch::Receiver<bool>,
) -> [ServerTask; 2] {
    let probes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health.clone());
    let metrics_router = Router::new()
        .route("/metrics", get(metrics))
        .with_state(health);
    let probe_server = tokio::spawn(serve(
        args.health_probe_bind_address,
        probes,
        shutdown.clone(),
    ));
    let metrics_server = tokio::spawn(serve(
        args.metrics_bind_address,
        metrics_router,
        shutdown.clone(),
    ));
    tracing::info!(manager = name, metrics = %args.metrics_bind_address, probes = %args.health_probe_bind_address, "serving metrics and probes");
    [probe_server, metrics_server]
}

/// Binds the webhook address now (so a taken port fails the start) and serves HTTPS behind it.
async fn spawn_webhook_server(
    args: &ManagerArgs,
    router: Router,
    shutdown: &watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(args.webhook_bind_address)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.webhook_bind_address))?;
    tracing::info!(address = %args.webhook_bind_address, certificates = %args.webhook_cert_dir.display(), "serving webhooks");
    tokio::spawn(crate::webhook::serve_tls(
        listener,
        args.webhook_cert_dir.clone(),
        router,
        shutdown.clone(),
    ));
    Ok(())
}

/// Turns SIGTERM/SIGINT into the shutdown signal.
fn spawn_signal_listener(shutdown: watch::Sender<bool>) {
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown requested");
        let _ = shutdown.send(true);
    });
}

/// Ready once the API server answers; standby replicas are ready too.
async fn wait_for_apiserver(client: &Client, ready: &watch::Sender<bool>) -> anyhow::Result<()> {
    let version = client
        .apiserver_version()
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the API server: {e}"))?;
    tracing::info!(server = %version.git_version, "connected to the API server");
    let _ = ready.send(true);
    Ok(())
}

/// The leader Lease a replica competes for (`--leader-elect`).
struct LeaseSettings<'a> {
    /// The manager's name: the Lease's field manager and the default identity's prefix.
    name: &'a str,
    lease_name: &'a str,
    namespace: &'a str,
    identity: Option<String>,
}

/// Waits for the Lease, runs `run_leader` while it is held, then releases it. Losing the Lease
/// stops the leader and is an error, so the process exits and a fresh one competes again.
async fn run_while_leader<F, Fut>(
    lease: LeaseSettings<'_>,
    leader: Leader,
    leader_gauge: &Gauge<i64>,
    run_leader: F,
) -> anyhow::Result<()>
where
    F: FnOnce(Leader) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let identity = lease
        .identity
        .unwrap_or_else(|| format!("{}-{}", lease.name, std::process::id()));
    let manager =
        kube_lease_manager::LeaseManagerBuilder::new(leader.client.clone(), lease.lease_name)
            .with_namespace(lease.namespace)
            .with_identity(identity.clone())
            .with_field_manager(lease.name)
            .build()
            .await?;
    let (mut is_leader, lease_task) = manager.watch().await;
    tracing::info!(lease = lease.lease_name, namespace = %lease.namespace, %identity, "waiting for the leader Lease");
    let mut stop = leader.shutdown.clone();
    let won = tokio::select! {
        result = is_leader.wait_for(|leader| *leader) => result.is_ok(),
        _ = stop.wait_for(|stop| *stop) => false,
    };
    let result = if won {
        tracing::info!("became leader");
        leader_gauge.set(1);
        lead_until_lost_or_stopped(leader, &mut is_leader, run_leader).await
    } else {
        Ok(())
    };
    // Dropping the receiver makes the lease task release the Lease, so a successor takes over at once.
    drop(is_leader);
    match lease_task.await {
        Ok(Err(e)) => tracing::warn!(error = %e, "releasing the leader Lease failed"),
        Err(e) => tracing::warn!(error = %e, "leader election task failed"),
        Ok(Ok(_)) => tracing::info!("released the leader Lease"),
    }
    result
}

/// Runs the leader's controllers with their own stop signal, sent when the Lease is lost or the
/// manager shuts down; the controllers always finish before this returns.
async fn lead_until_lost_or_stopped<F, Fut>(
    leader: Leader,
    is_leader: &mut watch::Receiver<bool>,
    run_leader: F,
) -> anyhow::Result<()>
where
    F: FnOnce(Leader) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let mut stop = leader.shutdown.clone();
    let (leader_stop_tx, leader_stop_rx) = watch::channel(false);
    let leader_future = run_leader(Leader {
        shutdown: leader_stop_rx,
        ..leader
    });
    tokio::pin!(leader_future);
    tokio::select! {
        result = &mut leader_future => result,
        _ = is_leader.wait_for(|leader| !*leader) => {
            let _ = leader_stop_tx.send(true);
            let _ = leader_future.await;
            Err(anyhow::anyhow!("lost the leader Lease; exiting so a fresh process can compete for it"))
        }
        _ = stop.wait_for(|stop| *stop) => {
            let _ = leader_stop_tx.send(true);
            leader_future.await
        }
    }
}

async fn join_http_servers(servers: [ServerTask; 2]) {
    for server in servers {
        match server.await {
            Ok(Err(e)) => tracing::error!(error = %e, "HTTP server failed"),
            Err(e) => tracing::error!(error = %e, "HTTP server task failed"),
            Ok(Ok(())) => {}
        }
    }
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An apiserver that always answers 429 is asked 1 + MAX_RETRIES times, then the request
    /// fails (kube's default would ask 16 times, waiting up to 1,000 s between).
    #[tokio::test]
    async fn throttled_requests_are_retried_at_most_ten_times() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let asked = Arc::new(AtomicU32::new(0));
        let counter = asked.clone();
        let app = Router::new().fallback(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("Retry-After", "0")],
                    "slow down",
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let config = Config::new(url.parse().unwrap());
        let ms = std::time::Duration::from_millis(1);
        let client = bounded_retry_client(config, ms, ms).unwrap();
        let request = axum::http::Request::get("/api").body(Vec::new()).unwrap();
        assert!(client.request_text(request).await.is_err());
        assert_eq!(asked.load(Ordering::SeqCst), 1 + MAX_RETRIES);
    }

    #[test]
    fn bind_address_accepts_go_style_port_only() {
        assert_eq!(
            parse_bind_address(":8080").unwrap(),
            "0.0.0.0:8080".parse().unwrap()
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9000").unwrap(),
            "127.0.0.1:9000".parse().unwrap()
        );
    }

    #[test]
    fn bind_address_rejects_garbage_with_a_clear_message() {
        let error = parse_bind_address("localhost").unwrap_err().to_string();
        assert!(error.contains("expected host:port or :port"), "{error}");
    }

    #[test]
    fn each_shard_elects_its_own_leader() {
        let scope = |filter: &str| WatchScope {
            namespace: String::new(),
            watch_filter: filter.into(),
        };
        assert_eq!(scope("").lease_name("capoa-leader"), "capoa-leader");
        assert_eq!(
            scope("shard-1").lease_name("capoa-leader"),
            "capoa-leader-shard-1"
        );
        // A label value may hold what a Lease name may not.
        assert_eq!(scope("East_DC.2").lease_name("l"), "l-east-dc.2");
        assert!(!scope("").is_sharded());
        assert_eq!(
            scope("a").label_selector().as_deref(),
            Some("cluster.x-k8s.io/watch-filter=a")
        );
    }
}

//! Helpers shared by the end-to-end tests (and the reaction benchmark): waiting, a test ISO,
//! and the embedded core started in-process on loopback with the lab backend.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assisted_core::service::images::{TestIsoContents, write_test_iso};
use assisted_core::service::server::{self, Backend, CoreArgs, Listeners};
use kube::Client;
use serde_json::json;
use testbed::Testbed;
use tokio::sync::watch;

/// The kernel, initrd and rootfs the test ISO carries.
pub const ISO_CONTENTS: TestIsoContents<'static> = TestIsoContents {
    kernel: b"k",
    initrd: b"i",
    rootfs: b"r",
};

/// Writes a small live-ISO-shaped image (256 KiB embed area) at `dir/base.iso`.
pub fn test_iso(dir: &Path) -> PathBuf {
    let iso = dir.join("base.iso");
    write_test_iso(&iso, &ISO_CONTENTS, 256 * 1024).expect("write test ISO");
    iso
}

const STEP: Duration = Duration::from_millis(200);

pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(STEP).await;
    }
}

/// Lab backend flags: where the admin kubeconfig points and which CAs make it valid there.
#[derive(Default)]
pub struct LabFlags {
    pub api_url: Option<String>,
    pub server_ca_file: Option<PathBuf>,
    pub client_ca_files: Option<(PathBuf, PathBuf)>,
}

impl LabFlags {
    /// The admin kubeconfig the core publishes authenticates against `workload`: its server CA
    /// is trusted and the admin certificate is signed by its (client) CA.
    pub fn for_testbed(workload: &Testbed, dir: &Path) -> LabFlags {
        let ca = dir.join("workload-ca.crt");
        let key = dir.join("workload-ca.key");
        std::fs::write(&ca, workload.ca_pem()).unwrap();
        std::fs::write(&key, workload.ca_key_pem()).unwrap();
        LabFlags {
            api_url: Some(workload.server.clone()),
            server_ca_file: Some(ca.clone()),
            client_ca_files: Some((ca, key)),
        }
    }
}

/// A running core bound to loopback with the lab backend.
pub struct Core {
    pub api_url: String,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

pub async fn start_core(
    client: Client,
    data_dir: &Path,
    iso: &Path,
    api_port: u16,
    images_port: u16,
    lab: &LabFlags,
) -> Core {
    let args = CoreArgs {
        agent_api_bind_address: format!("127.0.0.1:{api_port}").parse().unwrap(),
        images_bind_address: format!("127.0.0.1:{images_port}").parse().unwrap(),
        agent_api_url: String::new(),
        images_url: String::new(),
        data_dir: data_dir.to_path_buf(),
        os_images: json!([{
            "openshift_version": "4.17",
            "cpu_architecture": "x86_64",
            "url": format!("file://{}", iso.display()),
            "version": "417.94.202410090854-0",
        }])
        .to_string(),
        install_backend: Backend::Lab,
        openshift_install_binary: "openshift-install".into(),
        lab_api_url: lab.api_url.clone(),
        lab_server_ca_file: lab.server_ca_file.clone(),
        lab_client_ca_cert_file: lab.client_ca_files.as_ref().map(|f| f.0.clone()),
        lab_client_ca_key_file: lab.client_ca_files.as_ref().map(|f| f.1.clone()),
        agent_image: "quay.io/edge-infrastructure/assisted-installer-agent:latest".into(),
        keys_namespace: "default".into(),
        keys_secret: "assisted-core-agent-token-keys".into(),
        monitor_interval_seconds: 1,
        host_disconnection_timeout_seconds: 180,
    };
    let listeners = Listeners::bind(&args).await.expect("bind core listeners");
    let api_url = format!("http://{}", listeners.agent_api.local_addr().unwrap());
    let images_url = format!("http://{}", listeners.images.local_addr().unwrap());
    // The ISO URLs in InfraEnv status point at this image server.
    let mut args = args;
    args.agent_api_url = api_url.clone();
    args.images_url = images_url;
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(server::run(client, args, listeners, rx));
    Core {
        api_url,
        stop,
        task,
    }
}

impl Core {
    pub async fn kill(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// Logs of the core and the simulator, shown for failing tests (`RUST_LOG` filters them).
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn,tower=warn,hyper=warn".into()),
        )
        .with_test_writer()
        .try_init();
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

//! Wire conformance of the agent REST API: the Go program built from assisted-service's own
//! client and models (tests/wire-conformance/go) plays every host, the installer and the
//! installer-controller against the embedded core on a real kube-apiserver, through whole
//! installs (tests/steps.rs covers the step types no install reaches). Mismatches fail the test
//! unless [`ALLOWED`] lists them. See docs/wire-conformance.md.

use std::path::Path;
use std::time::{Duration, Instant};

use assisted_core::api::agent::Agent;
use assisted_core::api::hive::ClusterDeployment;
use assisted_core::api::infraenv::InfraEnv;
use assisted_core::service::images::{
    TestIsoContents, extract_embedded_ignition, parse_discovery_ignition, write_test_iso,
};
use assisted_core::service::server::{self, CoreArgs, Listeners};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use testbed::Testbed;
use tokio::sync::watch;
use wire_conformance::{ALLOWED, Finding, Run, Summary};

/// Step types every install must have decoded.
const DAY1_STEPS: &[&str] = &[
    "inventory",
    "ntp-synchronizer",
    "domain-resolution",
    "installation-disk-speed-check",
    "container-image-availability",
    "install",
];

/// The machine network of the simulated hosts.
const MACHINE_CIDR: &str = "192.168.111.0/24";

#[tokio::test]
async fn three_masters_and_a_worker_install_then_a_day2_worker_fails() {
    if testbed::skip() {
        return;
    }
    let started = Instant::now();
    let program = wire_conformance::program().expect("the wire-conformance program");
    let env = Env::start("multinode").await;
    let ie = env
        .cluster(3, 1, &["192.168.111.5"], &["192.168.111.4"])
        .await;
    let run = env
        .run(
            &program,
            &ie,
            &[
                "-masters",
                "3",
                "-workers",
                "1",
                "-day2",
                "1",
                "-api-vip",
                "192.168.111.5",
                "-ingress-vip",
                "192.168.111.4",
            ],
        )
        .await;
    let mut want: Vec<&str> = DAY1_STEPS.to_vec();
    want.extend([
        "connectivity-check",
        "free-network-addresses",
        "verify-vips",
        "api-vip-connectivity-check",
        "logs-gather",
        "stop-installation",
    ]);
    check(&run, &want, &env.stored_logs(&ie.cluster_id));
    eprintln!("multinode wire conformance in {:?}", started.elapsed());
    env.stop().await;
}

#[tokio::test]
async fn single_node_openshift_installs() {
    if testbed::skip() {
        return;
    }
    let started = Instant::now();
    let program = wire_conformance::program().expect("the wire-conformance program");
    let env = Env::start("sno").await;
    let ie = env.cluster(1, 0, &[], &[]).await;
    let run = env
        .run(&program, &ie, &["-masters", "1", "-workers", "0"])
        .await;
    check(&run, DAY1_STEPS, &env.stored_logs(&ie.cluster_id));
    eprintln!("SNO wire conformance in {:?}", started.elapsed());
    env.stop().await;
}

/// Asserts a run: it finished, decoded the wanted step types, and every mismatch is allowed.
fn check(run: &Run, want_steps: &[&str], stored_logs: &[(String, Vec<u8>)]) {
    let s = &run.summary;
    // Shown for failed tests (and with --nocapture): the program's progress and findings.
    eprintln!("{}", run.stderr);
    eprintln!("{}", serde_json::to_string(&summary_counts(s)).unwrap());
    assert!(
        s.fatal.is_none(),
        "the scenario did not finish: {:?}",
        s.fatal
    );
    for t in want_steps {
        assert!(
            s.steps.contains_key(*t),
            "no {t} instruction was decoded: {:?}",
            s.steps
        );
        if !matches!(*t, "stop-installation") {
            assert!(s.replies.contains_key(*t), "no {t} reply was accepted");
        }
    }
    for op in [
        "v2RegisterHost 201",
        "v2RegisterHost 401",
        "v2GetNextSteps 200",
        "v2GetNextSteps 404",
        "v2UpdateHostInstallProgress 200",
        "v2UpdateHostInstallProgress 404",
        "v2GetCluster 200",
        "v2GetCluster 403",
        "ListClusterHosts 200",
        "v2ListOfClusterOperators 200",
        "v2CompleteInstallation 202",
        "v2DownloadHostIgnition 200",
        "V2DownloadClusterFiles 200",
        "V2DownloadClusterCredentials 200",
        "v2PostStepReply 204",
        "v2UploadClusterIngressCert 201",
        "v2ReportMonitoredOperatorStatus 200",
        "v2UpdateClusterFinalizingProgress 204",
        "v2UploadLogs 204",
        "v2UpdateClusterLogsProgress 204",
    ] {
        assert!(
            s.responses.contains_key(op),
            "no {op} response was decoded: {:?}",
            s.responses
        );
    }
    // An uploaded archive is stored as the archive (a gzip stream), not as the request body
    // that carried it.
    let mut failures = s.failures.clone();
    for (name, bytes) in stored_logs {
        if !bytes.starts_with(&[0x1f, 0x8b]) {
            failures.push(Finding {
                at: "v2UploadLogs 204".into(),
                kind: "stored".into(),
                field: "upfile".into(),
                message: format!(
                    "{name} is not the gzip archive that was uploaded: {:?}",
                    String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
                ),
                count: 1,
            });
        }
    }
    let all = Summary {
        failures,
        ..s.clone()
    };
    if let Err(e) = all.check(ALLOWED) {
        panic!("wire mismatches:\n{e}");
    }
}

fn summary_counts(s: &Summary) -> serde_json::Value {
    serde_json::json!({
        "scenario": s.scenario,
        "requests": s.requests.values().sum::<u64>(),
        "responses": s.responses,
        "steps": s.steps,
        "notes": s.notes,
    })
}

/// The test ISO's files (the hosts only read its embedded ignition).
const ISO_CONTENTS: TestIsoContents<'static> = TestIsoContents {
    kernel: b"k",
    initrd: b"i",
    rootfs: b"r",
};

/// A testbed, the embedded core on it, and an approver for the Agents.
struct Env {
    tb: Testbed,
    client: Client,
    dir: tempfile::TempDir,
    stop: watch::Sender<bool>,
    core: tokio::task::JoinHandle<anyhow::Result<()>>,
    ns: String,
}

/// What the hosts read from the ISO, plus the cluster's id.
struct InfraEnvAccess {
    service_url: String,
    infra_env_id: String,
    token: String,
    cluster_id: String,
}

impl Env {
    async fn start(ns: &str) -> Env {
        let tb = Testbed::builder()
            .controller_manager()
            .our_crds()
            .start()
            .await
            .expect("testbed");
        let client = tb.client.clone();
        let dir = tempfile::tempdir().expect("temporary directory");
        let iso = dir.path().join("base.iso");
        write_test_iso(&iso, &ISO_CONTENTS, 256 * 1024).expect("write test ISO");
        let os_images = serde_json::json!([{
            "openshift_version": "4.17",
            "cpu_architecture": "x86_64",
            "url": format!("file://{}", iso.display()),
            "version": "417.94.202410090854-0",
        }])
        .to_string();
        let data = dir.path().join("data");
        let mut args = parse_core_args(&[
            "--agent-api-bind-address",
            "127.0.0.1:0",
            "--images-bind-address",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
            "--os-images",
            &os_images,
            "--install-backend",
            "lab",
            "--keys-namespace",
            "default",
            "--monitor-interval-seconds",
            "1",
        ]);
        let listeners = Listeners::bind(&args).await.expect("bind core listeners");
        // The ISO and the discovery ignition carry these URLs.
        args.agent_api_url = format!("http://{}", listeners.agent_api.local_addr().unwrap());
        args.images_url = format!("http://{}", listeners.images.local_addr().unwrap());
        let (stop, stopped) = watch::channel(false);
        let core = tokio::spawn(server::run(
            client.clone(),
            Default::default(),
            args,
            listeners,
            Default::default(),
            stopped,
        ));
        Env {
            tb,
            client,
            dir,
            stop,
            core,
            ns: ns.to_string(),
        }
    }

    /// Applies a cluster (ClusterDeployment, AgentClusterInstall, ClusterImageSet, InfraEnv),
    /// waits for the ISO, boots it, and starts approving every Agent that registers.
    async fn cluster(
        &self,
        masters: u32,
        workers: u32,
        api_vips: &[&str],
        ingress_vips: &[&str],
    ) -> InfraEnvAccess {
        let name = &self.ns;
        self.tb
            .apply_yaml(&cluster_yaml(
                &self.ns,
                masters,
                workers,
                api_vips,
                ingress_vips,
            ))
            .await
            .expect("apply the cluster");
        let ies: Api<InfraEnv> = Api::namespaced(self.client.clone(), &self.ns);
        let iso_url = wait_for("the InfraEnv's ISO URL", || async {
            ies.get(name).await.ok()?.status?.iso_download_url
        })
        .await;
        let (status, iso) = agent_sim::call(
            &agent_sim::Trust::none(),
            http::Method::GET,
            &iso_url,
            "",
            None,
        )
        .await
        .expect("download the ISO");
        assert!(status.is_success(), "ISO download: {status}");
        let ign = extract_embedded_ignition(std::io::Cursor::new(iso.to_vec()))
            .expect("read the ISO")
            .expect("the ISO carries an ignition");
        let cfg = parse_discovery_ignition(&ign).expect("discovery ignition");
        let cd = Api::<ClusterDeployment>::namespaced(self.client.clone(), &self.ns)
            .get(name)
            .await
            .expect("ClusterDeployment");
        tokio::spawn(approve_agents(self.client.clone(), self.ns.clone()));
        InfraEnvAccess {
            service_url: cfg.service_url,
            infra_env_id: cfg.infra_env_id,
            token: cfg.token,
            cluster_id: cd.uid().expect("ClusterDeployment uid"),
        }
    }

    async fn run(&self, program: &Path, ie: &InfraEnvAccess, extra: &[&str]) -> Run {
        let mut args: Vec<String> = [
            "cluster",
            "-url",
            &ie.service_url,
            "-infra-env-id",
            &ie.infra_env_id,
            "-token",
            &ie.token,
            "-machine-cidr",
            MACHINE_CIDR,
            "-timeout",
            "150s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        wire_conformance::run(program, &args, self.dir.path())
            .await
            .expect("run the wire-conformance program")
    }

    /// Every uploaded log archive of the cluster, as the core stored it.
    fn stored_logs(&self, cluster_id: &str) -> Vec<(String, Vec<u8>)> {
        let dir = self
            .dir
            .path()
            .join("data/files")
            .join(cluster_id)
            .join("logs");
        let mut out = Vec::new();
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            out.push((e.file_name().to_string_lossy().into_owned(), bytes));
        }
        assert!(!out.is_empty(), "no logs stored under {}", dir.display());
        out
    }

    async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.core).await;
    }
}

/// Parses the core's flags as its binary does, so new flags get their defaults.
fn parse_core_args(args: &[&str]) -> CoreArgs {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        core: CoreArgs,
    }
    use clap::Parser;
    Cli::try_parse_from(std::iter::once("assisted-core").chain(args.iter().copied()))
        .expect("core flags")
        .core
}

/// Approves every Agent of the namespace as it appears (as a user or a provider would).
async fn approve_agents(client: Client, ns: String) {
    let agents: Api<Agent> = Api::namespaced(client, &ns);
    loop {
        if let Ok(list) = agents.list(&Default::default()).await {
            for a in list.items.iter().filter(|a| !a.spec.approved) {
                let _ = agents
                    .patch(
                        &a.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(serde_json::json!({"spec": {"approved": true}})),
                    )
                    .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn wait_for<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The cluster's objects; the namespace, the cluster and the InfraEnv share one name.
fn cluster_yaml(
    ns: &str,
    masters: u32,
    workers: u32,
    api_vips: &[&str],
    ingress_vips: &[&str],
) -> String {
    agent_sim::fixtures::ClusterManifests {
        namespace: ns,
        name: ns,
        masters,
        workers,
        api_vips,
        ingress_vips,
        machine_cidr: MACHINE_CIDR,
        ssh_comment: "wire",
    }
    .yaml()
}

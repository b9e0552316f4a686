//! End to end on the real testbed: a real kube-apiserver (+ kube-controller-manager), the
//! embedded assisted-core (controllers, agent REST API, image server, lab install backend),
//! and simulated hosts that boot the discovery ISO the core serves: the agent reads its
//! service URL, infra-env id and token from the ignition embedded in the ISO.

use std::time::{Duration, Instant};

use agent_sim::{AgentConfig, AgentStatus, Host, HostProfile, InstallerController};
use assisted_core::api::agent::Agent;
use assisted_core::api::agentclusterinstall::AgentClusterInstall;
use assisted_core::api::hive::ClusterDeployment;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use testbed::Testbed;

mod common;
use common::{
    Cluster, LabFlags, MACHINE_CIDR, approve_all, boot_hosts, cluster_yaml, free_port, init_logs,
    join_workload, start_core, state, test_iso, wait_for,
};

async fn apply(tb: &Testbed, yaml: &str) {
    tb.apply_yaml(yaml).await.expect("apply");
}

fn condition(
    conds: &[assisted_core::api::hive::ClusterInstallCondition],
    t: &str,
) -> (String, String, String) {
    conds
        .iter()
        .find(|c| c.type_ == t)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .unwrap_or_default()
}

/// Prints every Agent's state and failing validations (for failed tests).
async fn dump_agents(client: &Client, ns: &str) {
    let agents: Api<Agent> = Api::namespaced(client.clone(), ns);
    for a in agents
        .list(&Default::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
    {
        let st = a.status.clone().unwrap_or_default();
        let failing: Vec<String> = st
            .validations_info
            .values()
            .flatten()
            .filter(|v| v.status != "success")
            .map(|v| format!("{}={}: {}", v.id, v.status, v.message))
            .collect();
        eprintln!(
            "agent {} approved={} state={:?} info={:?} role={:?} stage={:?} not passing={failing:?}",
            a.name_any(),
            a.spec.approved,
            st.debug_info.state,
            st.debug_info.state_info,
            st.role,
            st.progress.current_stage
        );
    }
}

async fn aci(client: &Client, ns: &str, name: &str) -> AgentClusterInstall {
    Api::<AgentClusterInstall>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("get ACI")
}

async fn wait_state(
    client: &Client,
    ns: &str,
    name: &str,
    want: &[&str],
    timeout: Duration,
) -> AgentClusterInstall {
    wait_for(
        &format!("ACI {name} state in {want:?}"),
        timeout,
        || async {
            let a = aci(client, ns, name).await;
            want.contains(&state(&a).as_str()).then_some(a)
        },
    )
    .await
}

async fn finish_install(client: &Client, ns: &str, name: &str, c: &Cluster) {
    for h in &c.hosts {
        h.wait_for_status(Duration::from_secs(120), |s| {
            matches!(s, AgentStatus::Rebooted)
        })
        .await
        .expect("host rebooted into the installed OS");
    }
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("get CD");
    let report = InstallerController::new(&c.service_url, cd.uid().unwrap(), &c.token)
        .with_speed(0.0)
        .with_timeout(Duration::from_secs(120))
        .run()
        .await
        .expect("installer controller finished");
    assert!(report.ingress_cert_uploaded);
}

fn master(i: u32) -> HostProfile {
    HostProfile::master_like(i, MACHINE_CIDR).unwrap()
}
fn worker(i: u32) -> HostProfile {
    HostProfile::worker_like(i, MACHINE_CIDR).unwrap()
}

#[tokio::test]
async fn three_masters_two_workers_install_then_a_day2_worker_joins() {
    if testbed::skip() {
        return;
    }
    init_logs();
    let started = Instant::now();
    // The hub, and the workload cluster the day-2 worker's kubelet joins.
    let (tb, workload) = tokio::join!(
        Testbed::builder().controller_manager().our_crds().start(),
        Testbed::builder().name("workload").start(),
    );
    let (tb, workload) = (tb.expect("testbed"), workload.expect("workload testbed"));
    eprintln!("testbeds up after {:?}", started.elapsed());
    let client = tb.client.clone();
    let dir = tempfile::tempdir().unwrap();
    let iso = test_iso(dir.path());
    let core = start_core(
        client.clone(),
        &dir.path().join("data"),
        &iso,
        free_port(),
        free_port(),
        &LabFlags::for_testbed(&workload, dir.path()),
    )
    .await;
    let (ns, name) = ("multinode", "mn");
    apply(&tb, &cluster_yaml(ns, name, 3, 2)).await;

    let profiles = vec![master(0), master(1), master(2), worker(0), worker(1)];
    let cluster = boot_hosts(
        &client,
        ns,
        name,
        profiles,
        (&["192.168.111.5"], &["192.168.111.4"]),
    )
    .await;
    assert!(cluster.service_url.starts_with(&core.api_url));
    approve_all(&client, ns, 5).await;

    let a = wait_state(
        &client,
        ns,
        name,
        &["installing", "finalizing", "installed", "adding-hosts"],
        Duration::from_secs(90),
    )
    .await;
    let (_, reason, _) = condition(&a.status.as_ref().unwrap().conditions, "RequirementsMet");
    assert_eq!(reason, "ClusterAlreadyInstalling");
    finish_install(&client, ns, name, &cluster).await;

    let a = wait_state(
        &client,
        ns,
        name,
        &["adding-hosts"],
        Duration::from_secs(60),
    )
    .await;
    let conds = &a.status.as_ref().unwrap().conditions;
    let (st, reason, msg) = condition(conds, "Completed");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("True", "InstallationCompleted"),
        "{msg}"
    );
    assert!(msg.starts_with("The installation has completed:"), "{msg}");
    assert_eq!(condition(conds, "Failed").1, "InstallationNotFailed");
    assert_eq!(condition(conds, "Stopped").1, "InstallationCompleted");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let kc = secrets
        .get(&format!("{name}-admin-kubeconfig"))
        .await
        .expect("admin kubeconfig Secret");
    assert!(kc.data.unwrap().contains_key("kubeconfig"));
    let pw = secrets
        .get(&format!("{name}-admin-password"))
        .await
        .expect("admin password Secret");
    assert!(pw.data.unwrap().contains_key("password"));
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .unwrap();
    assert!(cd.spec.installed, "ClusterDeployment marked installed");
    assert_eq!(
        a.spec
            .cluster_metadata
            .as_ref()
            .map(|m| m.admin_kubeconfig_secret_ref.name.clone()),
        Some(format!("{name}-admin-kubeconfig"))
    );

    // Day-2: one more worker boots the same ISO and installs into the running cluster.
    let day2 = worker(7);
    let day2_profile = day2.clone();
    cluster.peers.write().unwrap().push(day2.clone());
    let mut cfg = AgentConfig::new(
        &cluster.service_url,
        &cluster.infra_env_id,
        &cluster.token,
        day2,
    )
    .with_peers(cluster.peers.clone())
    .with_speed(0.0);
    cfg.reply_ctx = cluster.reply_ctx.clone();
    let h = Host::spawn(cfg);
    approve_all(&client, ns, 6).await;
    // The Node labels CAPM3 relies on: the core puts them on the day-2 Node (no kubelet flag
    // sets them here).
    let agents: Api<Agent> = Api::namespaced(client.clone(), ns);
    agents
        .patch(
            &day2_profile.uuid,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"nodeLabels": {
                "metal3.io/uuid": day2_profile.uuid,
                "example.com/tier": "day2",
            }}})),
        )
        .await
        .expect("day-2 node labels");
    if let Err(e) = h
        .wait_for_status(Duration::from_secs(90), |s| {
            matches!(s, AgentStatus::Rebooted)
        })
        .await
    {
        dump_agents(&client, ns).await;
        panic!("day-2 worker did not install and reboot: {e:?}");
    }
    // After the reboot its kubelet joins the workload cluster; the core approves its CSRs
    // through the admin kubeconfig it published and reports Joined, then Done.
    let report = join_workload(&workload, &day2_profile).await;
    wait_for(
        "day-2 Agent Done and added-to-existing-cluster",
        Duration::from_secs(30),
        || async {
            let st = agents.get(&day2_profile.uuid).await.ok()?.status?;
            (st.progress.current_stage == "Done"
                && st.debug_info.state.as_deref() == Some("added-to-existing-cluster"))
            .then_some(())
        },
    )
    .await;
    let node = Api::<Node>::all(workload.client.clone())
        .get(&agent_sim::kubelet::node_name(&day2_profile.hostname))
        .await
        .expect("Node");
    assert_eq!(
        node.labels().get("metal3.io/uuid"),
        Some(&day2_profile.uuid),
        "the day-2 Node got its Agent's nodeLabels"
    );
    assert_eq!(
        node.labels().get("example.com/tier").map(String::as_str),
        Some("day2")
    );
    let csrs: Api<CertificateSigningRequest> = Api::all(workload.client.clone());
    for name in [&report.client_csr, &report.serving_csr] {
        let csr = csrs.get(name).await.expect("CSR");
        assert_eq!(agent_sim::kubelet::decision(&csr), Some(true), "{name}");
    }
    eprintln!("day-2 worker Done after {:?}", started.elapsed());
    core.kill().await;
}

#[tokio::test]
async fn single_node_openshift_installs_across_a_core_restart() {
    if testbed::skip() {
        return;
    }
    init_logs();
    let tb = Testbed::builder()
        .controller_manager()
        .our_crds()
        .start()
        .await
        .expect("testbed");
    let client = tb.client.clone();
    let dir = tempfile::tempdir().unwrap();
    let iso = test_iso(dir.path());
    let data = dir.path().join("data");
    let (api_port, images_port) = (free_port(), free_port());
    let core = start_core(
        client.clone(),
        &data,
        &iso,
        api_port,
        images_port,
        &LabFlags::default(),
    )
    .await;
    let (ns, name) = ("sno", "sno");
    apply(&tb, &cluster_yaml(ns, name, 1, 0)).await;
    let cluster = boot_hosts(
        &client,
        ns,
        name,
        vec![HostProfile::sno_like(0, MACHINE_CIDR).unwrap()],
        (&[], &[]),
    )
    .await;
    approve_all(&client, ns, 1).await;
    let installing = wait_state(&client, ns, name, &["installing"], Duration::from_secs(90)).await;
    let logs_url = installing
        .status
        .unwrap()
        .debug_info
        .logs_url
        .unwrap_or_default();
    assert!(
        logs_url.starts_with(&format!(
            "http://127.0.0.1:{api_port}/api/assisted-install/v2/clusters/"
        )) && logs_url.contains("/logs?api_key="),
        "{logs_url}"
    );

    // Kill the core mid-install and start it again on the same data and ports.
    core.kill().await;
    let core = start_core(
        client.clone(),
        &data,
        &iso,
        api_port,
        images_port,
        &LabFlags::default(),
    )
    .await;
    finish_install(&client, ns, name, &cluster).await;
    let a = wait_state(
        &client,
        ns,
        name,
        &["adding-hosts"],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        condition(&a.status.as_ref().unwrap().conditions, "Completed").1,
        "InstallationCompleted"
    );
    // The logs bundle: the same URL across the restart (its token signed once), the core's view
    // of the cluster, and what a ConfigMap labelled for this cluster attaches.
    assert_eq!(
        a.status.as_ref().unwrap().debug_info.logs_url.as_deref(),
        Some(logs_url.as_str())
    );
    let attached: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "sno-image-mode-status", "namespace": ns,
            "labels": {"assisted-core.openshift.io/logs-of": name}},
        "data": {"image-mode.yaml": "pools: attached-for-the-bundle\n"},
    }))
    .unwrap();
    Api::namespaced(client.clone(), ns)
        .create(&Default::default(), &attached)
        .await
        .unwrap();
    let (status, bundle) = agent_sim::client::call(
        &agent_sim::client::Trust::none(),
        http::Method::GET,
        &logs_url,
        "",
        None,
    )
    .await
    .unwrap();
    assert_eq!(status, http::StatusCode::OK);
    let has = |s: &str| bundle.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(
        has("/cluster.json") && has("\"status\": \"adding-hosts\""),
        "the bundle has the cluster"
    );
    assert!(
        has("/sno-image-mode-status/image-mode.yaml") && has("pools: attached-for-the-bundle"),
        "the bundle has the attached ConfigMap"
    );
    // The Agent shows the host as upstream does: state, conditions, inventory labels.
    let agent = wait_for(
        "installed Agent status",
        Duration::from_secs(30),
        || async {
            let agents: Api<Agent> = Api::namespaced(client.clone(), ns);
            let a = agents.list(&Default::default()).await.ok()?.items.pop()?;
            let st = a.status.clone()?;
            (st.debug_info.state.as_deref() == Some("installed")).then_some(a)
        },
    )
    .await;
    let st = agent.status.clone().unwrap();
    let installed = st
        .conditions
        .iter()
        .find(|c| c.type_ == "Installed")
        .unwrap();
    assert_eq!(
        (installed.status.as_str(), installed.reason.as_deref()),
        ("True", Some("InstallationCompleted"))
    );
    assert_eq!(st.progress.current_stage, "Done");
    assert!(st.bootstrap, "the SNO host is its own bootstrap");
    let label = |k: &str| agent.labels().get(k).cloned();
    assert_eq!(
        label("inventory.agent-install.openshift.io/cpu-architecture").as_deref(),
        Some("x86_64")
    );
    assert_eq!(
        label("infraenvs.agent-install.openshift.io").as_deref(),
        Some(name)
    );

    // An installed Agent moved to a ClusterDeployment that does not exist says so on
    // SpecSynced (upstream's message), and recovers when moved back.
    let agents: Api<Agent> = Api::namespaced(client.clone(), ns);
    let spec_synced = |name: String| {
        let agents = agents.clone();
        async move {
            let a = agents.get(&name).await.ok()?;
            let c = a
                .status?
                .conditions
                .into_iter()
                .find(|c| c.type_ == "SpecSynced")?;
            Some((
                c.status,
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default(),
            ))
        }
    };
    let move_to = |cd: &'static str| json!({"spec": {"clusterDeploymentName": {"name": cd, "namespace": ns}}});
    agents
        .patch(
            &agent.name_any(),
            &PatchParams::default(),
            &Patch::Merge(move_to("elsewhere")),
        )
        .await
        .expect("move the Agent");
    let (_, reason, message) = wait_for("SpecSynced False", Duration::from_secs(30), || async {
        spec_synced(agent.name_any())
            .await
            .filter(|(s, _, _)| s == "False")
    })
    .await;
    assert_eq!(reason, "InputError");
    assert!(
        message.contains("failed to get clusterDeployment with name elsewhere in namespace sno"),
        "{message}"
    );
    agents
        .patch(
            &agent.name_any(),
            &PatchParams::default(),
            &Patch::Merge(move_to("sno")),
        )
        .await
        .expect("move the Agent back");
    wait_for("SpecSynced True again", Duration::from_secs(30), || async {
        spec_synced(agent.name_any())
            .await
            .filter(|(s, _, _)| s == "True")
    })
    .await;

    // Deleting the namespace deregisters everything: every deprovision finalizer (InfraEnv,
    // Agent, ClusterDeployment, AgentClusterInstall) is released and the namespace goes.
    let cd_id = Api::<ClusterDeployment>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .unwrap()
        .uid()
        .unwrap();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .delete(ns, &Default::default())
        .await
        .expect("delete namespace");
    wait_for(
        "the namespace to be gone",
        Duration::from_secs(60),
        || async { namespaces.get_opt(ns).await.ok()?.is_none().then_some(()) },
    )
    .await;
    assert!(
        !dir.path().join("data/files").join(&cd_id).exists(),
        "the cluster's files are removed with it"
    );
    core.kill().await;
}

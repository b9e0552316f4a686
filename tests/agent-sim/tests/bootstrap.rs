//! Both providers end to end on the testbed with the real Cluster API, CAPM3 and
//! baremetal-operator (fixture provisioner): one InfraEnv per Metal3MachineTemplate; its live
//! ISO written into the templates and Metal3Machines before any Machine gets its data Secret;
//! CAPM3 hands the ISO to the BareMetalHosts BMO provisions; simulated hosts boot the ISO from
//! their BareMetalHost with its boot MAC; their Agents are matched to Machines, labelled and
//! approved by the bootstrap provider; the cluster installs day-1; a late worker waits for
//! day-2; scale-down removes the Agent.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use agent_sim::{AgentConfig, AgentStatus, Host, HostProfile, InstallerController, ReplyCtx};
use assisted_core::api::agent::{Agent, HostRole};
use assisted_core::api::agentclusterinstall::AgentClusterInstall;
use assisted_core::api::hive::ClusterDeployment;
use assisted_core::api::infraenv::InfraEnv;
use assisted_core::service::auth::{Claims, Keys, PRIVATE_KEY_FIELD};
use bootstrap_provider::controller::labels::MACHINE_NAME_LABEL;
use external_types::capi::Machine;
use external_types::capm3::v1beta2::{Metal3Machine, Metal3MachineTemplate};
use external_types::metal3_io::BareMetalHost;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use provider_api::bootstrap::api::OpenshiftAssistedConfig;
use testbed::Testbed;

mod common;
use common::{
    MACHINE_CIDR, Run, boot_iso, events_about, init_logs, join_workload, scale_machine_deployment,
    start_providers, start_test_core, start_test_core_against, state, wait_for,
};
use serde_json::json;

const NS: &str = "bs-e2e";
const CLUSTER: &str = "bm";
const CP: &str = "bm-cp";

fn host_yaml(name: &str, role: &str, mac: &str) -> String {
    format!(
        r#"---
apiVersion: v1
kind: Secret
metadata: {{name: {name}-bmc, namespace: {NS}}}
stringData: {{username: admin, password: password}}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: {name}, namespace: {NS}, labels: {{role: {role}}}}}
spec:
  online: true
  bootMACAddress: "{mac}"
  bmc: {{address: "redfish+http://192.0.2.1:8000/redfish/v1/Systems/{name}", credentialsName: {name}-bmc}}
"#
    )
}

fn cluster_yaml() -> String {
    format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: pull-secret, namespace: {NS}}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{"quay.io":{{"auth":"dXNlcjpwYXNz"}}}}}}'
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {CLUSTER}, namespace: {NS}}}
spec:
  clusterNetwork:
    pods: {{cidrBlocks: ["10.128.0.0/14"]}}
    services: {{cidrBlocks: ["172.30.0.0/16"]}}
  controlPlaneRef: {{apiGroup: controlplane.cluster.x-k8s.io, kind: OpenshiftAssistedControlPlane, name: {CP}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: {CLUSTER}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: {CLUSTER}, namespace: {NS}}}
spec:
  controlPlaneEndpoint: {{host: 192.168.111.5, port: 6443}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: {CLUSTER}-controlplane, namespace: {NS}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
      hostSelector: {{matchLabels: {{role: master}}}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: {CP}, namespace: {NS}}}
spec:
  distributionVersion: 4.17.3
  replicas: 3
  openshiftAssistedConfigSpec:
    pullSecretRef: {{name: pull-secret}}
    sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk e2e
    nodeRegistration:
      name: $METADATA_NAME
      kubeletExtraLabels: ["metal3.io/uuid=$METADATA_UUID"]
  config:
    apiVIPs: [192.168.111.5]
    ingressVIPs: [192.168.111.4]
    baseDomain: lab.example.com
    pullSecretRef: {{name: pull-secret}}
  machineTemplate:
    infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: {CLUSTER}-controlplane}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: {CLUSTER}-workers, namespace: {NS}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
      hostSelector: {{matchLabels: {{role: worker}}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: {CLUSTER}-workers, namespace: {NS}}}
spec:
  template:
    spec:
      pullSecretRef: {{name: pull-secret}}
      sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk e2e
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: {CLUSTER}-workers, namespace: {NS}, labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}}}}}
spec:
  clusterName: {CLUSTER}
  replicas: 1
  selector: {{matchLabels: {{cluster.x-k8s.io/deployment-name: {CLUSTER}-workers}}}}
  template:
    metadata: {{labels: {{cluster.x-k8s.io/deployment-name: {CLUSTER}-workers}}}}
    spec:
      clusterName: {CLUSTER}
      bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfigTemplate, name: {CLUSTER}-workers}}}}
      infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: {CLUSTER}-workers}}
"#
    )
}

/// The simulated site: boots every provisioned BareMetalHost from the image Metal3 gave it,
/// as the host with that boot MAC. Returns the hosts booted so far by BareMetalHost name.
struct Site {
    client: Client,
    profiles: BTreeMap<String, HostProfile>,
    peers: Arc<RwLock<Vec<HostProfile>>>,
    reply_ctx: Arc<RwLock<ReplyCtx>>,
    booted: BTreeMap<String, Host>,
    /// The agent API URL and token of the last boot (for the installer controller).
    service: Option<(String, String)>,
}

impl Site {
    async fn boot_provisioned(&mut self) {
        let hosts: Api<BareMetalHost> = Api::namespaced(self.client.clone(), NS);
        for bmh in hosts
            .list(&ListParams::default())
            .await
            .expect("list hosts")
            .items
        {
            let name = bmh.name_any();
            let provisioned =
                bmh.status.as_ref().map(|s| s.provisioning.state.as_str()) == Some("provisioned");
            if !provisioned || self.booted.contains_key(&name) {
                continue;
            }
            let url = bmh
                .spec
                .image
                .as_ref()
                .map(|i| i.url.clone())
                .unwrap_or_default();
            assert!(
                !url.contains("placeholder"),
                "BareMetalHost {name} got the template's placeholder image"
            );
            let (service_url, infra_env_id, token) = boot_iso(&url).await;
            let profile = self.profiles[&name].clone();
            self.peers.write().unwrap().push(profile.clone());
            let mut cfg = AgentConfig::new(&service_url, &infra_env_id, &token, profile)
                .with_peers(self.peers.clone())
                .with_speed(0.0);
            cfg.reply_ctx = self.reply_ctx.clone();
            self.booted.insert(name, Host::spawn(cfg));
            self.service = Some((service_url, token));
        }
    }
}

async fn agents_by_machine(client: &Client) -> BTreeMap<String, Agent> {
    Api::<Agent>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|a| Some((a.labels().get(MACHINE_NAME_LABEL)?.clone(), a)))
        .collect()
}

#[tokio::test]
async fn metal3_hosts_boot_the_live_iso_and_install_through_both_providers() {
    if testbed::skip() {
        return;
    }
    init_logs();
    let started = Instant::now();
    let tb = Testbed::builder()
        .controller_manager()
        .our_crds()
        .metal3()
        .start()
        .await
        .expect("testbed");
    let client = tb.client.clone();
    // The admin kubeconfig the core publishes is valid against this testbed, which stands in for
    // the installed cluster: the day-2 worker's kubelet joins it and the core follows it to Done.
    let (core, _dir) = start_test_core_against(&client, &tb).await;
    let providers = start_providers(&client, Run::Both);

    // Four servers for day-1 (three masters, one worker) and a spare for the day-2 worker.
    let mut profiles = BTreeMap::new();
    for i in 0..3 {
        profiles.insert(
            format!("master-{i}"),
            HostProfile::master_like(i, MACHINE_CIDR).unwrap(),
        );
    }
    for i in 0..2 {
        profiles.insert(
            format!("worker-{i}"),
            HostProfile::worker_like(i, MACHINE_CIDR).unwrap(),
        );
    }
    let mut site_yaml = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n");
    for (name, p) in &profiles {
        let role = if name.starts_with("master") {
            "master"
        } else {
            "worker"
        };
        site_yaml.push_str(&host_yaml(name, role, &p.nics[0].mac));
    }
    tb.apply_yaml(&site_yaml).await.expect("apply site");
    // Masters' templates select master-sized hosts, workers' worker-sized ones.
    let hosts: Api<BareMetalHost> = Api::namespaced(client.clone(), NS);
    wait_for(
        "BareMetalHosts available",
        Duration::from_secs(120),
        || async {
            let l = hosts.list(&ListParams::default()).await.ok()?;
            l.items
                .iter()
                .all(|h| {
                    h.status.as_ref().map(|s| s.provisioning.state.as_str()) == Some("available")
                })
                .then_some(())
        },
    )
    .await;
    eprintln!("hosts available after {:?}", started.elapsed());
    tb.apply_yaml(&cluster_yaml()).await.expect("apply cluster");

    // One InfraEnv per template; its ISO reaches the templates and Metal3Machines.
    let infraenvs: Api<InfraEnv> = Api::namespaced(client.clone(), NS);
    let urls = wait_for(
        "two InfraEnvs with ISO URLs",
        Duration::from_secs(90),
        || async {
            let l = infraenvs.list(&ListParams::default()).await.ok()?;
            let urls: BTreeMap<String, String> = l
                .items
                .iter()
                .filter_map(|ie| {
                    Some((ie.name_any(), ie.status.as_ref()?.iso_download_url.clone()?))
                })
                .collect();
            (urls.len() == 2).then_some(urls)
        },
    )
    .await;
    assert_eq!(
        urls.keys().cloned().collect::<Vec<_>>(),
        [
            format!("{CLUSTER}-controlplane"),
            format!("{CLUSTER}-workers")
        ]
    );
    let templates: Api<Metal3MachineTemplate> = Api::namespaced(client.clone(), NS);
    for (name, url) in &urls {
        wait_for(
            &format!("template {name} carries its ISO"),
            Duration::from_secs(30),
            || async {
                let t = templates.get(name).await.ok()?;
                (t.spec.template.spec.image.as_ref()?.url == *url).then_some(())
            },
        )
        .await;
    }

    // No Machine gets its data Secret before its Metal3Machine carries the current ISO.
    let machines: Api<Machine> = Api::namespaced(client.clone(), NS);
    let m3ms: Api<Metal3Machine> = Api::namespaced(client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let configs: Api<OpenshiftAssistedConfig> = Api::namespaced(client.clone(), NS);
    let mut site = Site {
        client: client.clone(),
        profiles: profiles.clone(),
        peers: Arc::new(RwLock::new(Vec::new())),
        reply_ctx: Arc::new(RwLock::new(ReplyCtx {
            api_vips: vec!["192.168.111.5".into()],
            ingress_vips: vec!["192.168.111.4".into()],
            ..ReplyCtx::default()
        })),
        booted: BTreeMap::new(),
        service: None,
    };
    // Every ISO URL each InfraEnv has published: an image regenerated meanwhile (the core
    // signs a new URL when the content changes) is followed by the machines not yet handed
    // over, so a Metal3Machine may carry any of its own template's URLs, but never another
    // template's or anything else. The InfraEnvs are named after their templates.
    let mut published: BTreeMap<String, std::collections::BTreeSet<String>> = urls
        .iter()
        .map(|(template, url)| (template.clone(), [url.clone()].into()))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        for ie in infraenvs.list(&ListParams::default()).await.unwrap().items {
            let template = ie.name_any();
            if let Some(url) = ie.status.and_then(|s| s.iso_download_url)
                && published.entry(template).or_default().insert(url.clone())
            {
                eprintln!(
                    "InfraEnv {} published a new ISO URL: {url}",
                    ie.metadata.name.unwrap_or_default()
                );
            }
        }
        for m in machines.list(&ListParams::default()).await.unwrap().items {
            let Some(secret_name) = m.spec.bootstrap.data_secret_name.clone() else {
                continue;
            };
            let secret = secrets
                .get(&secret_name)
                .await
                .expect("data Secret named by the Machine exists");
            assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
            let m3m = m3ms.get(&m.spec.infrastructure_ref.name).await.unwrap();
            let image = m3m
                .spec
                .image
                .as_ref()
                .map(|i| i.url.clone())
                .unwrap_or_default();
            let own_template = if m.labels().contains_key("cluster.x-k8s.io/control-plane") {
                format!("{CLUSTER}-controlplane")
            } else {
                format!("{CLUSTER}-workers")
            };
            assert!(
                published[&own_template].contains(&image),
                "Machine {} has data but its Metal3Machine has image {image}, which its \
                 template's InfraEnv {own_template} never published ({published:?})",
                m.name_any()
            );
        }
        site.boot_provisioned().await;
        if site.booted.len() == 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {} hosts provisioned and booted",
            site.booted.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!("four hosts booted the ISO after {:?}", started.elapsed());

    // The Agents are matched by boot MAC, labelled and approved; the install runs.
    let by_machine = wait_for("four approved Agents", Duration::from_secs(60), || async {
        let a = agents_by_machine(&client).await;
        (a.len() == 4 && a.values().all(|a| a.spec.approved)).then_some(a)
    })
    .await;
    let masters = by_machine
        .values()
        .filter(|a| a.spec.role == HostRole::Master)
        .count();
    assert_eq!(masters, 3, "control-plane Machines' Agents are masters");
    // Each Agent's `metal3.io/uuid` node label is the UID of the BareMetalHost its Machine's
    // Metal3Machine consumes: what CAPM3 matches the Node by.
    let hosts_api: Api<BareMetalHost> = Api::namespaced(client.clone(), NS);
    for (machine, a) in &by_machine {
        let m = machines.get(machine).await.unwrap();
        let m3m = m3ms.get(&m.spec.infrastructure_ref.name).await.unwrap();
        let host = m3m
            .annotations()
            .get("metal3.io/BareMetalHost")
            .and_then(|v| v.split_once('/'))
            .map(|(_, name)| name.to_string())
            .unwrap_or_else(|| panic!("Metal3Machine of {machine} names no host"));
        let uid = hosts_api.get(&host).await.unwrap().uid().unwrap();
        assert_eq!(
            a.spec.node_labels.get("metal3.io/uuid"),
            Some(&uid),
            "{machine} on host {host}: {:?}",
            a.spec.node_labels
        );
    }
    let acis: Api<AgentClusterInstall> = Api::namespaced(client.clone(), NS);
    wait_for("install started", Duration::from_secs(90), || async {
        let a = acis.get(CP).await.ok()?;
        ["installing", "finalizing", "installed", "adding-hosts"]
            .contains(&state(&a).as_str())
            .then_some(())
    })
    .await;

    // A worker added now is held until day-2.
    scale_machine_deployment(&client, NS, &format!("{CLUSTER}-workers"), 2).await;
    let late = wait_for(
        "the late worker's config held",
        Duration::from_secs(60),
        || async {
            let l = configs.list(&ListParams::default()).await.ok()?;
            l.items.into_iter().find(|c| {
                c.status.as_ref().is_some_and(|s| {
                    s.conditions.iter().any(|c| {
                        c.type_ == "DataSecretAvailable" && c.reason == "WaitingForInstallComplete"
                    })
                })
            })
        },
    )
    .await;
    eprintln!(
        "late worker {} held after {:?}",
        late.name_any(),
        started.elapsed()
    );

    for h in site.booted.values() {
        h.wait_for_status(Duration::from_secs(120), |s| {
            matches!(s, AgentStatus::Rebooted)
        })
        .await
        .expect("host rebooted into the installed OS");
    }
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), NS)
        .get(CP)
        .await
        .unwrap();
    // The in-cluster installer-controller speaks for the whole cluster (its hosts booted two
    // InfraEnvs' ISOs), so it holds a cluster-scoped token, as upstream's does.
    let (service_url, _) = site.service.clone().unwrap();
    let keys_secret = Api::<Secret>::namespaced(client.clone(), "default")
        .get("assisted-core-agent-token-keys")
        .await
        .expect("agent token keys");
    let private = &keys_secret.data.as_ref().unwrap()[PRIVATE_KEY_FIELD].0;
    let keys = Keys::from_pkcs8_pem(std::str::from_utf8(private).unwrap()).expect("keys");
    let token = keys.sign(&Claims::cluster(cd.uid().unwrap()));
    InstallerController::new(&service_url, cd.uid().unwrap(), &token)
        .with_speed(0.0)
        .with_timeout(Duration::from_secs(120))
        .run()
        .await
        .expect("installer controller finished");
    wait_for("adding-hosts", Duration::from_secs(60), || async {
        (state(&acis.get(CP).await.ok()?) == "adding-hosts").then_some(())
    })
    .await;
    eprintln!("day-1 installed after {:?}", started.elapsed());

    // Day-2: the late worker's host is provisioned with the ISO, boots, is approved, installs.
    let day1_hosts: Vec<String> = site.booted.keys().cloned().collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while site.booted.len() < 5 {
        site.boot_provisioned().await;
        assert!(
            Instant::now() < deadline,
            "the day-2 worker's host was not provisioned"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    wait_for("five approved Agents", Duration::from_secs(60), || async {
        let a = agents_by_machine(&client).await;
        (a.len() == 5 && a.values().all(|a| a.spec.approved)).then_some(())
    })
    .await;
    eprintln!("day-2 worker approved after {:?}", started.elapsed());
    // Installed, not only approved: the host reboots into the installed OS, its kubelet joins
    // the cluster, and the core takes its Agent to Done and added-to-existing-cluster.
    let (day2_host, day2) = site
        .booted
        .iter()
        .find(|(name, _)| !day1_hosts.contains(name))
        .expect("the day-2 host booted");
    day2.wait_for_status(Duration::from_secs(120), |s| {
        matches!(s, AgentStatus::Rebooted)
    })
    .await
    .expect("the day-2 worker rebooted into the installed OS");
    // Its Node is named as the host was installed: the Agent's hostname (the bootstrap provider
    // sets it from nodeRegistration.name), not the simulator's own name for the server.
    let day2_agent = agents_by_machine(&client)
        .await
        .into_iter()
        .find(|(machine, _)| !by_machine.contains_key(machine))
        .map(|(_, agent)| agent)
        .expect("the day-2 worker's Agent");
    let mut installed_as = profiles[day2_host].clone();
    if let Some(hostname) = day2_agent.spec.hostname.clone() {
        installed_as.hostname = hostname;
    }
    join_workload(&tb, &installed_as).await;
    wait_for(
        "the day-2 Agent Done and added-to-existing-cluster",
        Duration::from_secs(60),
        || async {
            let a = agents_by_machine(&client).await;
            a.values()
                .any(|a| {
                    a.status.as_ref().is_some_and(|st| {
                        st.progress.current_stage == "Done"
                            && st.debug_info.state.as_deref() == Some("added-to-existing-cluster")
                    })
                })
                .then_some(())
        },
    )
    .await;
    eprintln!("day-2 worker installed after {:?}", started.elapsed());

    // Scale-down: the removed Machine's Agent goes with it.
    scale_machine_deployment(&client, NS, &format!("{CLUSTER}-workers"), 1).await;
    wait_for(
        "four Agents after scale-down",
        Duration::from_secs(90),
        || async {
            // Every Agent, labelled or not: the removed Machine's one must be gone.
            let all = Api::<Agent>::namespaced(client.clone(), NS)
                .list(&ListParams::default())
                .await
                .ok()?
                .items;
            let workers = machines
                .list(&ListParams::default().labels(&format!(
                    "cluster.x-k8s.io/deployment-name={CLUSTER}-workers"
                )))
                .await
                .ok()?
                .items;
            let worker = workers.first()?.name_any();
            let by_machine = agents_by_machine(&client).await;
            (all.len() == 4 && workers.len() == 1 && by_machine.contains_key(&worker)).then_some(())
        },
    )
    .await;
    eprintln!("scaled down after {:?}", started.elapsed());
    // Reconciles per controller over the whole scenario (reported in docs/benchmarks.md).
    providers.print_reconciles();

    providers.stop().await;
    core.kill().await;
}

/// CAPOA's raw-image flow, as in its SNO example: the template boots a disk image, and the
/// Machine's user data is the InfraEnv's discovery ignition. The host boots the image with that
/// user data (BMO's config drive), its agent registers, is approved, and the install starts.
#[tokio::test]
async fn sno_from_a_disk_image_with_the_discovery_ignition_as_user_data() {
    if testbed::skip() {
        return;
    }
    init_logs();
    const NS: &str = "raw-e2e";
    let tb = Testbed::builder()
        .controller_manager()
        .our_crds()
        .metal3()
        .start()
        .await
        .expect("testbed");
    let client = tb.client.clone();
    let (core, _dir) = start_test_core(&client).await;
    let providers = start_providers(&client, Run::Both);
    let profile = HostProfile::sno_like(0, MACHINE_CIDR).unwrap();
    let image = "https://mirror.example.com/rhcos-4.17-nutanix.x86_64.qcow2";
    tb.apply_yaml(&format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: sno-bmc, namespace: {NS}}}
stringData: {{username: admin, password: password}}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: sno, namespace: {NS}}}
spec:
  online: true
  bootMACAddress: "{mac}"
  bmc: {{address: "redfish+http://192.0.2.1:8000/redfish/v1/Systems/sno", credentialsName: sno-bmc}}
---
apiVersion: v1
kind: Secret
metadata: {{name: pull-secret, namespace: {NS}}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{"quay.io":{{"auth":"dXNlcjpwYXNz"}}}}}}'
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: sno, namespace: {NS}}}
spec:
  clusterNetwork:
    pods: {{cidrBlocks: ["10.128.0.0/14"]}}
    services: {{cidrBlocks: ["172.30.0.0/16"]}}
  controlPlaneRef: {{apiGroup: controlplane.cluster.x-k8s.io, kind: OpenshiftAssistedControlPlane, name: sno}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: sno}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: sno, namespace: {NS}}}
spec:
  controlPlaneEndpoint: {{host: sno.lab.example.com, port: 6443}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: sno-controlplane, namespace: {NS}}}
spec:
  template:
    spec:
      image: {{url: "{image}", checksum: "{image}.sha256sum", checksumType: sha256, diskFormat: qcow2}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: sno, namespace: {NS}}}
spec:
  distributionVersion: 4.17.3
  replicas: 1
  openshiftAssistedConfigSpec:
    pullSecretRef: {{name: pull-secret}}
    sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk e2e
    nodeRegistration:
      name: $METADATA_NAME
      kubeletExtraLabels: ["metal3.io/uuid=$METADATA_UUID"]
    preBootstrapCommands: ["touch /etc/capoa-e2e"]
  config:
    baseDomain: lab.example.com
    pullSecretRef: {{name: pull-secret}}
  machineTemplate:
    infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: sno-controlplane}}
"#,
        mac = profile.nics[0].mac
    ))
    .await
    .expect("apply");

    // CAPM3 hands the disk image and our user data to the host; the site boots it.
    let hosts: Api<BareMetalHost> = Api::namespaced(client.clone(), NS);
    let bmh = wait_for("the host provisioned", Duration::from_secs(180), || async {
        let h = hosts.get("sno").await.ok()?;
        (h.status.as_ref()?.provisioning.state == "provisioned").then_some(h)
    })
    .await;
    assert_eq!(
        bmh.spec.image.as_ref().map(|i| i.url.as_str()),
        Some(image),
        "the template's disk image is kept"
    );
    let user_data = bmh
        .spec
        .user_data
        .as_ref()
        .and_then(|r| r.name.clone())
        .expect("user data");
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get(&user_data)
        .await
        .unwrap();
    let ignition = String::from_utf8(secret.data.unwrap()["value"].0.clone()).unwrap();
    let discovery = assisted_core::service::images::parse_discovery_ignition(&ignition)
        .expect("the user data is the discovery ignition");
    // nodeRegistration.name is set: the host names itself from its config drive, as with CAPOA.
    let user_data_json: serde_json::Value = serde_json::from_str(&ignition).unwrap();
    let units: Vec<&str> = user_data_json["systemd"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["name"].as_str())
        .collect();
    for unit in [
        "capoa-configdrive-metadata.service",
        "capoa-set-hostname.service",
    ] {
        assert!(units.contains(&unit), "{unit} in the user data: {units:?}");
    }
    let mut cfg = AgentConfig::new(
        &discovery.service_url,
        &discovery.infra_env_id,
        &discovery.token,
        profile,
    )
    .with_speed(0.0);
    cfg.reply_ctx = Arc::new(RwLock::new(ReplyCtx::default()));
    let host = Host::spawn(cfg);

    let agents: Api<Agent> = Api::namespaced(client.clone(), NS);
    wait_for(
        "the Agent approved as master",
        Duration::from_secs(60),
        || async {
            let l = agents.list(&ListParams::default()).await.ok()?;
            let a = l.items.first()?;
            (a.spec.approved
                && a.spec.role == HostRole::Master
                && a.spec.hostname.as_deref() == Some("sno"))
            .then_some(())
        },
    )
    .await;
    let acis: Api<AgentClusterInstall> = Api::namespaced(client.clone(), NS);
    wait_for(
        "the SNO install started",
        Duration::from_secs(90),
        || async {
            let a = acis.get("sno").await.ok()?;
            ["installing", "finalizing", "installed", "adding-hosts"]
                .contains(&state(&a).as_str())
                .then_some(())
        },
    )
    .await;

    // The config's bootstrap commands reach the host's install ignition through the Agent.
    let agent = agents.list(&ListParams::default()).await.unwrap().items[0].clone();
    let overrides = agent
        .spec
        .ignition_config_overrides
        .clone()
        .expect("the Agent carries the install-time ignition");
    assert!(
        overrides.contains("capoa-pre-bootstrap.service"),
        "{overrides}"
    );
    let cluster_id = Api::<ClusterDeployment>::namespaced(client.clone(), NS)
        .get("sno")
        .await
        .unwrap()
        .uid()
        .unwrap();
    let url = agent_sim::client::api_url(
        &discovery.service_url,
        &format!(
            "/clusters/{cluster_id}/downloads/files?file_name=master-{}.ign",
            agent.name_any()
        ),
    );
    let (status, body) = agent_sim::call(
        &agent_sim::Trust::none(),
        http::Method::GET,
        &url,
        &discovery.token,
        None,
    )
    .await
    .expect("download the host's ignition");
    assert!(status.is_success(), "{status}");
    let ignition: serde_json::Value = serde_json::from_slice(&body).expect("ignition JSON");
    let units: Vec<&str> = ignition["systemd"]["units"]
        .as_array()
        .map(|u| u.iter().filter_map(|u| u["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(units.contains(&"capoa-pre-bootstrap.service"), "{units:?}");
    let files: Vec<&str> = ignition["storage"]["files"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["path"].as_str()).collect())
        .unwrap_or_default();
    assert!(files.contains(&"/etc/hostname"), "{files:?}");
    assert!(
        files.contains(&"/usr/local/bin/capoa-pre-bootstrap.sh"),
        "{files:?}"
    );

    // To installed: the host reboots into the installed OS and the in-cluster
    // installer-controller (a cluster-scoped token, as upstream's) finishes the install.
    host.wait_for_status(Duration::from_secs(120), |s| {
        matches!(s, AgentStatus::Rebooted)
    })
    .await
    .expect("the SNO host rebooted into the installed OS");
    let keys_secret = Api::<Secret>::namespaced(client.clone(), "default")
        .get("assisted-core-agent-token-keys")
        .await
        .expect("agent token keys");
    let private = &keys_secret.data.as_ref().unwrap()[PRIVATE_KEY_FIELD].0;
    let keys = Keys::from_pkcs8_pem(std::str::from_utf8(private).unwrap()).expect("keys");
    InstallerController::new(
        &discovery.service_url,
        cluster_id.clone(),
        keys.sign(&Claims::cluster(cluster_id.clone())),
    )
    .with_speed(0.0)
    .with_timeout(Duration::from_secs(120))
    .run()
    .await
    .expect("installer controller finished");
    wait_for(
        "the SNO cluster installed",
        Duration::from_secs(60),
        || async {
            let a = acis.get("sno").await.ok()?;
            ["installed", "adding-hosts"]
                .contains(&state(&a).as_str())
                .then_some(())
        },
    )
    .await;

    providers.stop().await;
    core.kill().await;
}

/// The boot MAC two BareMetalHosts of `bad_input_gets_a_condition_and_no_retry_storm` share.
const SHARED_MAC: &str = "52:54:00:dd:00:01";

/// The hosts of the `site` cluster in `bad_input_gets_a_condition_and_no_retry_storm`, each a
/// boot-MAC problem, with the `Ready` reason its Machine's config must show. `nomac` boots by
/// virtual media, the one BMC type baremetal-operator accepts without a bootMACAddress even with
/// its webhook; the malformed MAC passes the CRD's (unanchored) pattern; two hosts sharing a MAC
/// would be refused by Ironic, not by the fixture provisioner the testbed runs.
const SITE_HOSTS: &[(&str, Option<&str>, &str)] = &[
    ("nomac", None, "BareMetalHostWithoutBootMAC"),
    ("badmac", Some("52:54:00:aa:00:01:"), "InvalidBootMAC"),
    ("dup-a", Some(SHARED_MAC), "DuplicateBootMAC"),
    ("dup-b", Some(SHARED_MAC), "DuplicateBootMAC"),
];

/// Bad input gets a condition and no retry storm: a config no Machine owns; a worker of a
/// cluster that has no ClusterDeployment (no control plane yet); in cluster `site`, whose
/// InfraEnv gets an ISO URL from the test (no assisted core runs), four workers whose
/// BareMetalHosts have no, a malformed or a shared boot MAC; and Agents, created as the core
/// would, with garbage inventories.
#[tokio::test]
async fn bad_input_gets_a_condition_and_no_retry_storm() {
    if testbed::skip() {
        return;
    }
    init_logs();
    const NS: &str = "bs-bad";
    let started = Instant::now();
    let tb = Testbed::builder()
        .controller_manager()
        .our_crds()
        .metal3()
        .start()
        .await
        .expect("testbed");
    let client = tb.client.clone();
    let providers = start_providers(&client, Run::Bootstrap);
    tb.apply_yaml(&format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata: {{name: lonely, namespace: {NS}}}
spec: {{sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: headless, namespace: {NS}}}
spec:
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: headless}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: headless, namespace: {NS}}}
spec:
  controlPlaneEndpoint: {{host: 192.0.2.10, port: 6443}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: headless-workers, namespace: {NS}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: headless-workers, namespace: {NS}}}
spec: {{template: {{spec: {{}}}}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: headless-workers, namespace: {NS}, labels: {{cluster.x-k8s.io/cluster-name: headless}}}}
spec:
  clusterName: headless
  replicas: 1
  selector: {{matchLabels: {{cluster.x-k8s.io/deployment-name: headless-workers}}}}
  template:
    metadata: {{labels: {{cluster.x-k8s.io/deployment-name: headless-workers}}}}
    spec:
      clusterName: headless
      bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfigTemplate, name: headless-workers}}}}
      infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: headless-workers}}
"#
    ))
    .await
    .expect("apply");
    tb.apply_yaml(&site_yaml(NS)).await.expect("apply site");

    let configs: Api<OpenshiftAssistedConfig> = Api::namespaced(client.clone(), NS);
    let reason_of = |c: &OpenshiftAssistedConfig| {
        c.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == "DataSecretAvailable")
                .map(|c| (c.reason.clone(), c.message.clone()))
        })
    };
    let (reason, message) = wait_for(
        "the lonely config waits for a Machine",
        Duration::from_secs(60),
        || async { reason_of(&configs.get("lonely").await.ok()?) },
    )
    .await;
    assert_eq!(reason, "WaitingForMachine", "{message}");
    let (reason, message) = wait_for(
        "the worker's config waits for a ClusterDeployment",
        Duration::from_secs(120),
        || async {
            let l = configs
                .list(&ListParams::default().labels("cluster.x-k8s.io/cluster-name=headless"))
                .await
                .ok()?;
            let (reason, message) = reason_of(l.items.first()?)?;
            (reason == "WaitingForClusterDeployment").then_some((reason, message))
        },
    )
    .await;
    assert!(message.contains("headless"), "{reason}: {message}");
    let secrets = Api::<Secret>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels("cluster.x-k8s.io/cluster-name=headless"))
        .await
        .unwrap();
    assert!(
        secrets.items.is_empty(),
        "no data Secret while the cluster has no install objects"
    );
    eprintln!("waiting configs checked after {:?}", started.elapsed());

    site_hosts_problems_show_on_their_configs(&client, NS).await;
    eprintln!("host problems shown after {:?}", started.elapsed());
    garbage_agents_say_why_they_are_not_matched(&client, NS).await;
    eprintln!("garbage Agents annotated after {:?}", started.elapsed());

    // Steady state: the two waiting configs are looked at every 30 s, not in a loop; the site's
    // configs (their Secrets exist) and the Agents wait for a change.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = providers.total_reconciles();
    tokio::time::sleep(Duration::from_secs(15)).await;
    let during = providers.total_reconciles() - before;
    eprintln!(
        "reconciles in 15 s of steady state with 2 waiting configs, 4 configs with host \
         problems and 4 unmatched Agents: {during}"
    );
    providers.print_reconciles();
    assert!(during <= 6, "{during} reconciles in 15 s: a retry loop");

    providers.stop().await;
}

/// Cluster `site`: its Metal3Cluster, a ClusterDeployment and AgentClusterInstall (no control
/// plane provider runs, so they are written here), a worker template selecting the
/// [`SITE_HOSTS`], and a 4-replica MachineDeployment.
fn site_yaml(ns: &str) -> String {
    let mut yaml = format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: pull-secret, namespace: {ns}}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{"quay.io":{{"auth":"dXNlcjpwYXNz"}}}}}}'
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: site, namespace: {ns}}}
spec:
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: site}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: site, namespace: {ns}}}
spec:
  controlPlaneEndpoint: {{host: 192.0.2.20, port: 6443}}
---
apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata: {{name: site, namespace: {ns}, labels: {{cluster.x-k8s.io/cluster-name: site}}}}
spec:
  clusterName: site
  baseDomain: lab.example.com
  platform: {{agentBareMetal: {{agentSelector: {{}}}}}}
  pullSecretRef: {{name: pull-secret}}
  clusterInstallRef: {{group: extensions.hive.openshift.io, version: v1beta1, kind: AgentClusterInstall, name: site}}
---
apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata: {{name: site, namespace: {ns}, labels: {{cluster.x-k8s.io/cluster-name: site}}}}
spec:
  clusterDeploymentRef: {{name: site}}
  provisionRequirements: {{controlPlaneAgents: 3}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: site-workers, namespace: {ns}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
      hostSelector: {{matchLabels: {{role: site-worker}}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: site-workers, namespace: {ns}}}
spec: {{template: {{spec: {{}}}}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: site-workers, namespace: {ns}, labels: {{cluster.x-k8s.io/cluster-name: site}}}}
spec:
  clusterName: site
  replicas: {replicas}
  selector: {{matchLabels: {{cluster.x-k8s.io/deployment-name: site-workers}}}}
  template:
    metadata: {{labels: {{cluster.x-k8s.io/deployment-name: site-workers}}}}
    spec:
      clusterName: site
      bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfigTemplate, name: site-workers}}}}
      infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: site-workers}}
"#,
        replicas = SITE_HOSTS.len()
    );
    for (name, mac, _) in SITE_HOSTS {
        let (bmc, mac) = match mac {
            Some(mac) => ("redfish+http", format!("\n  bootMACAddress: \"{mac}\"")),
            None => ("redfish-virtualmedia+http", String::new()),
        };
        yaml.push_str(&format!(
            r#"---
apiVersion: v1
kind: Secret
metadata: {{name: {name}-bmc, namespace: {ns}}}
stringData: {{username: admin, password: password}}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: {name}, namespace: {ns}, labels: {{role: site-worker}}}}
spec:
  online: true{mac}
  bmc: {{address: "{bmc}://192.0.2.1:8000/redfish/v1/Systems/{name}", credentialsName: {name}-bmc}}
"#
        ));
    }
    yaml
}

/// Once the hosts are available and the InfraEnv has an ISO URL (written here, as the core
/// would), each site Machine gets its Secret, CAPM3 gives it a host, and its config shows that
/// host's boot-MAC problem on `Ready`, naming the host, with one Warning event.
async fn site_hosts_problems_show_on_their_configs(client: &Client, ns: &str) {
    let hosts: Api<BareMetalHost> = Api::namespaced(client.clone(), ns);
    wait_for(
        "the site's BareMetalHosts available",
        Duration::from_secs(120),
        || async {
            let l = hosts
                .list(&ListParams::default().labels("role=site-worker"))
                .await
                .ok()?;
            (l.items.len() == SITE_HOSTS.len()
                && l.items.iter().all(|h| {
                    h.status.as_ref().map(|s| s.provisioning.state.as_str()) == Some("available")
                }))
            .then_some(())
        },
    )
    .await;
    let infraenvs: Api<InfraEnv> = Api::namespaced(client.clone(), ns);
    wait_for("the site's InfraEnv", Duration::from_secs(60), || async {
        infraenvs.get_opt("site-workers").await.ok()?
    })
    .await;
    infraenvs
        .patch_status(
            "site-workers",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"isoDownloadURL": "http://images.invalid/site.iso"}})),
        )
        .await
        .expect("write the InfraEnv's ISO URL");

    let configs: Api<OpenshiftAssistedConfig> = Api::namespaced(client.clone(), ns);
    let m3ms: Api<Metal3Machine> = Api::namespaced(client.clone(), ns);
    let expected: BTreeMap<&str, &str> = SITE_HOSTS
        .iter()
        .map(|(host, _, reason)| (*host, *reason))
        .collect();
    // Config (= Machine = Metal3Machine name) → (host, Ready reason, message).
    let shown = wait_for(
        "every site config showing its host's problem",
        Duration::from_secs(180),
        || async {
            let l = configs
                .list(&ListParams::default().labels("cluster.x-k8s.io/cluster-name=site"))
                .await
                .ok()?;
            let mut shown = BTreeMap::new();
            for c in &l.items {
                let m3m = m3ms.get(&c.name_any()).await.ok()?;
                let host = m3m.annotations().get("metal3.io/BareMetalHost")?.clone();
                let ready = c
                    .status
                    .as_ref()?
                    .conditions
                    .iter()
                    .find(|c| c.type_ == "Ready")?;
                let host = host.rsplit('/').next()?.to_string();
                if ready.status != "False" || ready.reason != *expected.get(host.as_str())? {
                    return None;
                }
                shown.insert(
                    c.name_any(),
                    (host, ready.reason.clone(), ready.message.clone()),
                );
            }
            (shown.len() == SITE_HOSTS.len()).then_some(shown)
        },
    )
    .await;
    for (config, (host, reason, message)) in &shown {
        assert!(
            message.contains(&format!("BareMetalHost {ns}/{host}")),
            "{config}: {message}"
        );
        let c = configs.get(config).await.unwrap();
        let status = c.status.as_ref().unwrap();
        assert_eq!(
            status.data_secret_name.as_deref(),
            Some(config.as_str()),
            "the Secret exists and stays"
        );
        let available = status
            .conditions
            .iter()
            .find(|c| c.type_ == "DataSecretAvailable")
            .unwrap();
        assert_eq!(available.status, "True", "{config}");
        let warnings = wait_for(
            &format!("the {reason} event of {config}"),
            Duration::from_secs(30),
            || async {
                let w: Vec<_> = events_about(client, ns, config)
                    .await
                    .into_iter()
                    .filter(|(type_, r, _)| type_ == "Warning" && r == reason)
                    .collect();
                (!w.is_empty()).then_some(w)
            },
        )
        .await;
        assert_eq!(warnings.len(), 1, "one event per change: {warnings:?}");
        assert_eq!(&warnings[0].2, message);
    }
    let dup = shown.values().find(|(host, _, _)| host == "dup-a").unwrap();
    assert!(dup.2.contains(&format!("{ns}/dup-b")), "{}", dup.2);
}

/// Agents of the site's InfraEnv, created as the assisted core would, with inventories that
/// cannot match: none, no MACs, MACs that are not MACs, and the MAC two hosts share. Each gets
/// the match annotation saying why, and its event; none is approved.
async fn garbage_agents_say_why_they_are_not_matched(client: &Client, ns: &str) {
    let agents: Api<Agent> = Api::namespaced(client.clone(), ns);
    let cases: &[(&str, serde_json::Value, &str, &str)] = &[
        (
            "no-inventory",
            json!(null),
            "AgentInventoryPending",
            "has reported no network interfaces yet",
        ),
        (
            "empty-interfaces",
            json!({"inventory": {"interfaces": []}}),
            "AgentInventoryPending",
            "has reported no network interfaces yet",
        ),
        (
            "not-macs",
            json!({"inventory": {"interfaces": [
                {"name": "eth0", "macAddress": "not a mac"},
                {"name": "eth1", "macAddress": ""},
                {"name": "eth2"},
                {"macAddress": "52:54:00:zz:00:01"},
            ]}}),
            "AgentNotMatched",
            "reports no valid MAC address",
        ),
        (
            "shared-mac",
            json!({"inventory": {"interfaces": [{"name": "eth0", "macAddress": SHARED_MAC}]}}),
            "AgentConflict",
            "has the boot MACs of several Machines' hosts",
        ),
    ];
    for (name, status, _, _) in cases {
        let agent: Agent = serde_json::from_value(json!({
            "apiVersion": "agent-install.openshift.io/v1beta1",
            "kind": "Agent",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {"infraenvs.agent-install.openshift.io": "site-workers"},
            },
            "spec": {"approved": false},
        }))
        .unwrap();
        agents
            .create(&PostParams::default(), &agent)
            .await
            .expect("create Agent");
        if !status.is_null() {
            agents
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": status })),
                )
                .await
                .expect("write the Agent's inventory");
        }
    }
    for (name, _, reason, why) in cases {
        let annotation = wait_for(
            &format!("Agent {name}'s match annotation"),
            Duration::from_secs(60),
            || async {
                let a = agents.get(name).await.ok()?;
                a.annotations()
                    .get("bootstrap.cluster.x-k8s.io/match")
                    .filter(|v| v.starts_with(&format!("{reason}: ")) && v.contains(why))
                    .cloned()
            },
        )
        .await;
        let agent = agents.get(name).await.unwrap();
        assert!(!agent.spec.approved, "{name}");
        assert!(
            !agent.labels().contains_key(MACHINE_NAME_LABEL),
            "{name}: not configured"
        );
        // An Agent seen before its inventory arrived may first have been told "no network
        // interfaces yet"; the event that matches the final annotation must follow.
        wait_for(
            &format!("Agent {name}'s {reason} event saying {annotation:?}"),
            Duration::from_secs(30),
            || async {
                events_about(client, ns, name)
                    .await
                    .into_iter()
                    .any(|(_, r, note)| r == *reason && annotation == format!("{r}: {note}"))
                    .then_some(())
            },
        )
        .await;
    }
}

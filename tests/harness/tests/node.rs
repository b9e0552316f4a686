//! Runs as shipped: `clusterctl init` on a testbed with a real node installs cert-manager,
//! Cluster API, CAPM3 and our two providers (and the harness baremetal-operator from its own
//! manifests), and every one of them runs as the pod its manifests describe — our managers from the images `make images` built, with their generated
//! ServiceAccounts and RBAC, probes, Services, and webhooks served through those Services with
//! certificates cert-manager issued and its CA injector put in place.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DynamicObject, ListParams, LogParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use serde_json::json;
use testbed::Testbed;

/// `GET path` over TLS at `addr`, the server verified as `server_name` with `ca_pem` only; the
/// whole answer (status line, headers, body).
async fn https_get(
    addr: std::net::SocketAddr,
    server_name: &str,
    ca_pem: &str,
    path: &str,
) -> Result<String, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let name = ServerName::try_from(server_name.to_owned()).map_err(|e| e.to_string())?;
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {addr} as {server_name}: {e}"))?;
    let request =
        format!("GET {path} HTTP/1.1\r\nhost: {server_name}\r\nconnection: close\r\n\r\n");
    tls.write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer)
        .await
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// Our providers' namespaces, as `config/release/` names them.
const OUR_NAMESPACES: &[&str] = &["capoa-bootstrap-system", "capoa-controlplane-system"];

fn available(d: &Deployment) -> bool {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = d.status.clone().unwrap_or_default();
    status.observed_generation == d.metadata.generation
        && status.available_replicas.unwrap_or(0) == want
        && status.updated_replicas.unwrap_or(0) == want
}

/// What every pod of the cluster is doing, for failure messages.
async fn pods_report(client: &Client) -> String {
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    pods.iter()
        .map(|p| {
            let status = p.status.clone().unwrap_or_default();
            let containers = status
                .container_statuses
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    format!(
                        "{} ready={} restarts={} state={}",
                        c.name,
                        c.ready,
                        c.restart_count,
                        serde_json::to_string(&c.state).unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            format!(
                "{}/{} {}: {containers}",
                p.namespace().unwrap_or_default(),
                p.name_any(),
                status.phase.unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until every Deployment in the cluster is Available with all its replicas.
async fn wait_deployments_available(tb: &mut Testbed, timeout: Duration) -> Vec<Deployment> {
    let api = Api::<Deployment>::all(tb.client.clone());
    let start = Instant::now();
    loop {
        tb.check_running().expect("testbed processes running");
        let all = api.list(&ListParams::default()).await.expect("list").items;
        if !all.is_empty() && all.iter().all(available) {
            return all;
        }
        if start.elapsed() > timeout {
            let waiting: Vec<String> = all
                .iter()
                .filter(|d| !available(d))
                .map(|d| format!("{}/{}", d.namespace().unwrap_or_default(), d.name_any()))
                .collect();
            panic!(
                "Deployments not Available after {timeout:?}: {waiting:?}\npods:\n{}",
                pods_report(&tb.client).await
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until the Service `ns/name` has a ready endpoint: kube-proxy routes to a pod only
/// after that, up to a second after the Deployment is Available.
async fn wait_service_ready(client: &Client, ns: &str, name: &str) {
    let api = Api::<EndpointSlice>::namespaced(client.clone(), ns);
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={name}"));
    let start = Instant::now();
    loop {
        let slices = api.list(&lp).await.expect("list EndpointSlices").items;
        let ready = slices
            .iter()
            .flat_map(|s| s.endpoints.iter().flatten())
            .any(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false));
        if ready {
            // kube-proxy syncs its rules after the endpoint shows up.
            tokio::time::sleep(Duration::from_secs(2)).await;
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Service {ns}/{name} has no ready endpoint after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn dynamic(
    client: &Client,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk(&gvk))
}

#[tokio::test(flavor = "multi_thread")]
async fn providers_run_as_pods_installed_by_clusterctl() {
    if testbed::skip() {
        return;
    }
    let started = Instant::now();
    let mut tb = Testbed::builder()
        .node()
        .node_images(testbed::cache::our_images().expect("our images"))
        .clusterctl_init()
        .start()
        .await
        .expect("start a testbed with a node and clusterctl init");
    eprintln!("node: clusterctl init done in {:.0?}", started.elapsed());

    // 1. Every Deployment clusterctl installed runs: cert-manager's three, CAPI, CAPM3, ours.
    let deployments = wait_deployments_available(&mut tb, Duration::from_secs(300)).await;
    let names: Vec<String> = deployments
        .iter()
        .map(|d| format!("{}/{}", d.namespace().unwrap_or_default(), d.name_any()))
        .collect();
    eprintln!(
        "node: all Available after {:.0?}: {names:?}",
        started.elapsed()
    );
    for ns in [
        "cert-manager",
        "capi-system",
        "capm3-system",
        "baremetal-operator-system",
    ]
    .iter()
    .chain(OUR_NAMESPACES)
    {
        assert!(
            names.iter().any(|n| n.starts_with(&format!("{ns}/"))),
            "no Deployment in {ns}: {names:?}"
        );
    }

    // The core's file store is a PersistentVolumeClaim, bound to one of the node's volumes.
    let pvc = Api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>::namespaced(
        tb.client.clone(),
        "capoa-controlplane-system",
    )
    .get("capoa-controlplane-file-store")
    .await
    .expect("the core's PersistentVolumeClaim");
    assert_eq!(
        pvc.status.and_then(|s| s.phase).as_deref(),
        Some("Bound"),
        "the core's claim is bound"
    );

    // 2. Our webhooks are reached through their Services, with cert-manager's certificates and
    //    the CA its injector wrote: a conversion (v1alpha1 stored as v1alpha2 and read back)
    //    and an admission refusal with our message.
    wait_service_ready(
        &tb.client,
        "capoa-bootstrap-system",
        "capoa-bootstrap-webhook-service",
    )
    .await;
    wait_service_ready(
        &tb.client,
        "capoa-controlplane-system",
        "capoa-controlplane-webhook-service",
    )
    .await;
    let ns = "default";
    let old = dynamic(
        &tb.client,
        ns,
        "bootstrap.cluster.x-k8s.io",
        "v1alpha1",
        "OpenshiftAssistedConfig",
    );
    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1",
        "kind": "OpenshiftAssistedConfig",
        "metadata": {"name": "converted", "namespace": ns},
        "spec": {"cpuArchitecture": "x86_64"},
    }))
    .expect("object");
    old.create(&PostParams::default(), &config)
        .await
        .expect("create a v1alpha1 OpenshiftAssistedConfig through the conversion webhook");
    let new = dynamic(
        &tb.client,
        ns,
        "bootstrap.cluster.x-k8s.io",
        "v1alpha2",
        "OpenshiftAssistedConfig",
    );
    let read = new
        .get("converted")
        .await
        .expect("read it back as v1alpha2");
    assert_eq!(read.data["spec"]["cpuArchitecture"], "x86_64");

    let cp = dynamic(
        &tb.client,
        ns,
        "controlplane.cluster.x-k8s.io",
        "v1alpha3",
        "OpenshiftAssistedControlPlane",
    );
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
        "kind": "OpenshiftAssistedControlPlane",
        "metadata": {"name": "bad", "namespace": ns},
        "spec": {
            "distributionVersion": "not-a-version",
            "replicas": 3,
            "config": {"baseDomain": "example.com"},
            "openshiftAssistedConfigSpec": {},
            "machineTemplate": {"infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "Metal3MachineTemplate",
                "name": "cp",
            }},
        },
    }))
    .expect("object");
    let err = cp
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("an unparsable distributionVersion is refused at admission");
    let msg = err.to_string();
    assert!(
        msg.contains("distributionVersion"),
        "the refusal names the field: {msg}"
    );

    // 3. The core's agent API speaks TLS with the certificate cert-manager issued for the host
    //    of its URL (the harness's default: the Service's DNS name), from the core's own CA.
    let core_ns = "capoa-controlplane-system";
    wait_service_ready(&tb.client, core_ns, "capoa-controlplane-assisted-core").await;
    let ca = testbed::resources::wait_secret_key(
        &tb.client,
        core_ns,
        "capoa-controlplane-assisted-core-tls",
        "ca.crt",
        Duration::from_secs(120),
    )
    .await
    .expect("cert-manager issues the core's certificate");
    let service = Api::<Service>::namespaced(tb.client.clone(), core_ns)
        .get("capoa-controlplane-assisted-core")
        .await
        .expect("the core's Service");
    let cluster_ip: std::net::IpAddr = service
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("a ClusterIP")
        .parse()
        .expect("an IP");
    let name = "capoa-controlplane-assisted-core.capoa-controlplane-system.svc";
    let addr = std::net::SocketAddr::new(cluster_ip, 8090);
    let answer = https_get(addr, name, &ca, "/api/assisted-install/v2/openapi.yaml")
        .await
        .expect("the agent API over TLS, verified with the CA in the Secret");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.200}");
    let other_name = https_get(addr, "elsewhere.example.com", &ca, "/").await;
    assert!(
        other_name.is_err(),
        "the certificate names the URL's host only"
    );

    // 4. No cluster-admin for any provider: every binding of their ServiceAccounts is to a role
    //    their manifests define.
    let bindings = Api::<ClusterRoleBinding>::all(tb.client.clone())
        .list(&ListParams::default())
        .await
        .expect("list ClusterRoleBindings")
        .items;
    for b in &bindings {
        let provider_sa = b.subjects.iter().flatten().any(|s| {
            s.kind == "ServiceAccount"
                && s.namespace.as_deref().is_some_and(|n| {
                    OUR_NAMESPACES.contains(&n)
                        || [
                            "capi-system",
                            "capm3-system",
                            "cert-manager",
                            "baremetal-operator-system",
                        ]
                        .contains(&n)
                })
        });
        if provider_sa {
            assert_ne!(
                b.role_ref.name,
                "cluster-admin",
                "{} binds a provider to cluster-admin",
                b.name_any()
            );
        }
    }

    // 5. Each of our managers leads through its Lease, has not restarted, and its log has no
    //    `forbidden`: a missing RBAC rule fails here instead of being retried in silence.
    for ns in OUR_NAMESPACES {
        let leases = Api::<Lease>::namespaced(tb.client.clone(), ns)
            .list(&ListParams::default())
            .await
            .expect("list Leases")
            .items;
        let pods = Api::<Pod>::namespaced(tb.client.clone(), ns);
        let list = pods.list(&ListParams::default()).await.expect("pods").items;
        assert_eq!(list.len(), 1, "one manager pod in {ns}");
        let pod = &list[0];
        let holder = leases
            .iter()
            .filter_map(|l| l.spec.as_ref()?.holder_identity.clone())
            .collect::<Vec<_>>();
        assert!(
            holder.iter().any(|h| h.contains(&pod.name_any())),
            "{ns}: the pod {} holds no Lease (holders {holder:?})",
            pod.name_any()
        );
        let restarts: i32 = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .map(|cs| cs.iter().map(|c| c.restart_count).sum())
            .unwrap_or(0);
        assert_eq!(restarts, 0, "{ns}/{} restarted", pod.name_any());
        let log = pods
            .logs(&pod.name_any(), &LogParams::default())
            .await
            .expect("read the manager's log through the apiserver and kubelet");
        let forbidden: Vec<&str> = log
            .lines()
            .filter(|l| l.to_ascii_lowercase().contains("forbidden"))
            .collect();
        assert!(
            forbidden.is_empty(),
            "{ns}: RBAC refused the manager:\n{}",
            forbidden.join("\n")
        );
    }
    tb.check_running().expect("testbed processes still running");
    eprintln!("node: checks done after {:.0?}", started.elapsed());
}

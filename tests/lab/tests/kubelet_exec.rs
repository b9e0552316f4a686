//! The path a master's remediation removes its etcd member by, without the lab around it:
//! kube-rs `Api::<Pod>::exec` to the workload kube-apiserver (1.36: a WebSocket exec proxied
//! straight to the kubelet of a Node that declares `ExtendWebSocketsToKubelet`), the
//! apiserver's `cluster` egress (the site network's CONNECT proxy on a Unix socket), a master's
//! simulated kubelet (TLS both ways with the workload CA) running `etcdctl` in its etcd pod
//! against the lab's etcd members. Everything but the kubelet and etcd is the real apiserver.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, Patch, PatchParams, PostParams};
use lab::etcd_operator::{self, EtcdMembers};
use lab::kubelet_api::{KubeletServer, Network, kubelet_address, kubelet_status_fields};
use serde_json::json;
use testbed::Testbed;
use tokio::io::AsyncReadExt;

const MASTERS: [(&str, &str); 3] = [
    ("master-0", "192.0.2.10"),
    ("master-1", "192.0.2.11"),
    ("master-2", "192.0.2.12"),
];

/// Long enough for a slow CI machine, short enough that a hang fails the test.
const EXEC_TIMEOUT: Duration = Duration::from_secs(30);

/// A Node as its kubelet registers and reports it: its InternalIP, the kubelet's port and
/// declared features, Ready.
async fn register_node(nodes: &Api<Node>, name: &str, ip: &str) {
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
            "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""}}});
    nodes
        .create(
            &PostParams::default(),
            &serde_json::from_value(node).unwrap(),
        )
        .await
        .unwrap();
    let now = jiff::Timestamp::now().to_string();
    let mut status = json!({
        "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "simulated", "lastHeartbeatTime": now, "lastTransitionTime": now}],
    });
    if let (Some(s), serde_json::Value::Object(fields)) =
        (status.as_object_mut(), kubelet_status_fields())
    {
        s.extend(fields);
    }
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap();
}

/// `etcdctl <args>` in the `etcdctl` container of `etcd-<node>`, exactly as a client of the
/// apiserver runs it: stdout, stderr and the status the kubelet wrote.
async fn etcdctl(
    pods: &Api<Pod>,
    node: &str,
    args: &[&str],
) -> kube::Result<(String, String, Status)> {
    let command: Vec<&str> = std::iter::once("etcdctl")
        .chain(args.iter().copied())
        .collect();
    let params = AttachParams::default()
        .container("etcdctl")
        .stdout(true)
        .stderr(true);
    let mut process = pods.exec(&format!("etcd-{node}"), command, &params).await?;
    let mut stdout = process.stdout().expect("stdout");
    let mut stderr = process.stderr().expect("stderr");
    let status = process.take_status().expect("a status");
    let (mut out, mut err) = (String::new(), String::new());
    let (o, e) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    o.expect("reading stdout");
    e.expect("reading stderr");
    let status = status.await.expect("the kubelet wrote a status");
    process.join().await.expect("the exec ends cleanly");
    Ok((out, err, status))
}

async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(EXEC_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish in {EXEC_TIMEOUT:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_runs_in_a_masters_etcd_pod_through_the_apiserver_and_the_site_network() {
    if testbed::skip() {
        return;
    }
    // Unix socket paths are short (107 bytes): not under the testbed's directory.
    let net_dir = tempfile::Builder::new()
        .prefix("kexec")
        .tempdir_in("/tmp")
        .unwrap();
    let network = Network::start(&net_dir.path().join("net.sock")).unwrap();
    let tb = Testbed::builder()
        .name("kubelet-exec")
        .kubelet_network(network.socket.clone())
        .start()
        .await
        .expect("the workload testbed starts");
    let client = tb.client.clone();

    let nodes: Api<Node> = Api::all(client.clone());
    for (name, ip) in MASTERS {
        register_node(&nodes, name, ip).await;
    }
    let node = serde_json::to_value(nodes.get("master-0").await.unwrap()).unwrap();
    assert_eq!(
        node["status"]["declaredFeatures"],
        json!(["ExtendWebSocketsToKubelet"]),
        "the apiserver keeps the declared features (NodeDeclaredFeatures on)"
    );

    // Only master-0's kubelet is on the network.
    let etcd = EtcdMembers::new();
    let cert = tb.serving_cert_for("kubelet", &["192.0.2.10"]).unwrap();
    let kubelet = KubeletServer::start(
        "master-0",
        &cert.cert_pem,
        &cert.key_pem,
        tb.ca_pem(),
        etcd.clone(),
    )
    .await
    .unwrap();
    let master_0 = kubelet_address("192.0.2.10").unwrap();
    network.route(master_0, kubelet.addr);
    for (name, ip) in MASTERS {
        etcd_operator::ensure_member(&client, &etcd, name, ip)
            .await
            .unwrap();
    }
    // Twice: idempotent.
    etcd_operator::ensure_member(&client, &etcd, "master-0", "192.0.2.10")
        .await
        .unwrap();

    // The operator's objects.
    let ns = etcd_operator::NAMESPACE;
    let pod = Api::<Pod>::namespaced(client.clone(), ns)
        .get("etcd-master-0")
        .await
        .unwrap();
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    assert!(annotations.contains_key("kubernetes.io/config.mirror"));
    assert_eq!(pod.status.and_then(|s| s.phase).as_deref(), Some("Running"));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    for name in etcd_operator::member_secret_names("master-1") {
        let s = secrets.get(&name).await.unwrap();
        assert_eq!(s.type_.as_deref(), Some("kubernetes.io/tls"));
    }
    let endpoints = Api::<ConfigMap>::namespaced(client.clone(), ns);
    let data = endpoints.get("etcd-endpoints").await.unwrap().data.unwrap();
    assert_eq!(data.len(), 3);

    // `etcdctl member list -w json`: three members, IDs exact.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let (out, err, status) = bounded(
        "member list",
        etcdctl(&pods, "master-0", &["member", "list", "-w", "json"]),
    )
    .await
    .expect("exec through the apiserver");
    assert_eq!(
        status.status.as_deref(),
        Some("Success"),
        "{status:?} {err}"
    );
    let list: serde_json::Value = serde_json::from_str(&out).expect("JSON member list");
    let members = list["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "{out}");
    let master_2 = members
        .iter()
        .find(|m| m["name"] == "master-2")
        .and_then(|m| m["ID"].as_u64())
        .expect("master-2's member ID as a u64");
    assert!(etcd.has(master_2));

    // `etcdctl member remove <hex>`.
    let hex = format!("{master_2:x}");
    let (out, _, status) = bounded(
        "member remove",
        etcdctl(&pods, "master-0", &["member", "remove", &hex]),
    )
    .await
    .unwrap();
    assert_eq!(status.status.as_deref(), Some("Success"));
    assert!(
        out.starts_with(&format!("Member {master_2:16x} removed from cluster")),
        "{out}"
    );
    let names = bounded(
        "member names",
        etcd_operator::member_names(&client, "master-0"),
    )
    .await
    .unwrap();
    assert_eq!(names, ["master-0", "master-1"]);
    etcd_operator::sync_endpoints(&client, &etcd).await.unwrap();
    let data = endpoints.get("etcd-endpoints").await.unwrap().data.unwrap();
    assert_eq!(data.len(), 2);
    assert!(!data.contains_key(&format!("{master_2:016x}")));

    // Again: the member is gone; etcdctl exits 1 and the status says so.
    let (_, err, status) = bounded(
        "member remove again",
        etcdctl(&pods, "master-0", &["member", "remove", &hex]),
    )
    .await
    .unwrap();
    assert_eq!(err, "Error: etcdserver: member not found\n");
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    // kube-rs offers v5.channel.k8s.io first, which the kubelet's own stream translator
    // answers: its message wraps what its SPDY client decoded from the runtime.
    assert_eq!(
        status.message.as_deref(),
        Some("command terminated with non-zero exit code: command terminated with exit code 1")
    );
    let cause = &status.details.unwrap().causes.unwrap()[0];
    assert_eq!(
        (cause.reason.as_deref(), cause.message.as_deref()),
        (Some("ExitCode"), Some("1"))
    );
    let removed_again = bounded(
        "exec_etcdctl",
        etcd_operator::exec_etcdctl(&client, "master-0", &["member", "remove", &hex]),
    )
    .await
    .unwrap();
    assert_eq!(removed_again.exit_code, 1);

    // A container the pod spec does not name: the apiserver refuses it (400) before dialing.
    let params = AttachParams::default().container("etcd-nope").stdout(true);
    let refused = bounded(
        "exec in a missing container",
        pods.exec("etcd-master-0", ["etcdctl"], &params),
    )
    .await;
    let Err(e) = refused else {
        panic!("a missing container is an error");
    };
    eprintln!("exec in a missing container: {e}");

    // master-1's kubelet is not on the network; master-0 powered off: errors, not hangs.
    let unreachable = bounded(
        "exec on a Node without a route",
        etcdctl(&pods, "master-1", &["member", "list"]),
    )
    .await;
    let Err(e) = unreachable else {
        panic!("no route to master-1, yet the exec ran");
    };
    eprintln!("exec on a Node without a route: {e}");
    network.unroute(master_0);
    let down = bounded(
        "exec on a powered-off Node",
        etcdctl(&pods, "master-0", &["member", "list"]),
    )
    .await;
    let Err(e) = down else {
        panic!("no route to master-0 any more, yet the exec ran");
    };
    eprintln!("exec on a powered-off Node: {e}");
    drop(kubelet);
}

//! The agent REST API over real HTTP: bad input, token isolation and the agent happy path.

use std::path::PathBuf;
use std::sync::Arc;

use assisted_core::domain::{ClusterSnapshot, Config, HostRole, HostStage, HostStatus};
use assisted_core::service::auth::{Claims, Keys};
use assisted_core::service::http::{AppState, router};
use assisted_core::service::server::HEADER_READ_TIMEOUT;
use assisted_core::service::store::{ClusterRecord, ClusterSettings, InfraEnvRecord, Store};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jiff::Timestamp;
use serde_json::{Value, json};

const IE_A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const IE_B: &str = "bbbbbbbb-0000-4000-8000-000000000002";
const CL_A: &str = "aaaaaaaa-1111-4000-8000-000000000001";
const CL_B: &str = "bbbbbbbb-1111-4000-8000-000000000002";
const H1: &str = "11111111-2222-4000-8000-000000000001";
const H2: &str = "11111111-2222-4000-8000-000000000002";
const H9: &str = "11111111-2222-4000-8000-000000000009";
const IE_UNKNOWN: &str = "cccccccc-0000-4000-8000-000000000003";

struct Api {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
    keys: Arc<Keys>,
    store: Arc<Store>,
    root: PathBuf,
    _dir: tempfile::TempDir,
}

/// (what, method, path, token, body with content type, expected status).
type Case<'a> = (
    &'a str,
    Method,
    String,
    &'a str,
    Option<(&'a str, Vec<u8>)>,
    u16,
);

struct Resp {
    status: StatusCode,
    content_type: String,
    body: Bytes,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body[..self.body.len().min(300)])
            )
        })
    }
    /// Asserts the upstream error body: `infra_error` (`{code, message}`) for 401 and 403, as
    /// upstream's server answers them, `error` for the rest.
    fn assert_error(&self, status: u16, what: &str) {
        assert_eq!(self.status.as_u16(), status, "{what}: {:?}", self.body);
        let v = self.json();
        if status == 401 || status == 403 {
            assert_eq!(v["code"], status, "{what}: {v}");
            assert!(
                v["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{what}: {v}"
            );
            return;
        }
        assert_eq!(v["code"], status.to_string(), "{what}: {v}");
        assert_eq!(v["id"], status, "{what}: {v}");
        assert_eq!(v["kind"], "Error", "{what}: {v}");
        assert!(
            v["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{what}: {v}"
        );
    }
}

fn record(id: &str, name: &str) -> ClusterRecord {
    let mut c = ClusterSnapshot::new(id, name, Timestamp::UNIX_EPOCH);
    c.base_domain = "example.com".into();
    ClusterRecord::new(c, ClusterSettings::default())
}

fn infra_env(id: &str, cluster: &str) -> InfraEnvRecord {
    InfraEnvRecord {
        id: id.into(),
        namespace: "ns".into(),
        name: format!("ie-{}", &id[..8]),
        cluster_id: Some(cluster.into()),
        discovery_ignition: format!("{{\"ignition\":{{\"version\":\"3.2.0\"}},\"ie\":\"{id}\"}}")
            .into(),
        static_network_config: "[]".into(),
        ipxe_script: "#!ipxe\n".into(),
        ..Default::default()
    }
}

fn pem_cert() -> String {
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        STANDARD.encode([0x30, 0x03, 0x02, 0x01, 0x01])
    )
}

async fn start() -> Api {
    let (store, _rx) = Store::new(Config::default());
    // The dirty receiver is not needed: sends to a closed channel are ignored.
    store.edit_for_tests(|st| {
        st.infra_envs.insert(IE_A.into(), infra_env(IE_A, CL_A));
        st.infra_envs.insert(IE_B.into(), infra_env(IE_B, CL_B));
        st.clusters.insert(CL_A.into(), record(CL_A, "a"));
        st.clusters.insert(CL_B.into(), record(CL_B, "b"));
    });
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("files");
    for (cl, name, data) in [
        (CL_A, "bootstrap.ign", "bootstrap-of-a".to_string()),
        (CL_B, "bootstrap.ign", "bootstrap-of-b".to_string()),
        (CL_A, "kubeadmin-password", "secret-a".to_string()),
        (
            CL_A,
            "kubeconfig-noingress",
            format!(
                "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://api.a.example.com:6443\n  name: a\n",
                STANDARD.encode("-----BEGIN CERTIFICATE-----\nAAA=\n-----END CERTIFICATE-----\n")
            ),
        ),
        (CL_A, &format!("master-{H1}.ign"), "pointer-h1".to_string()),
    ] {
        std::fs::create_dir_all(root.join(cl)).unwrap();
        std::fs::write(root.join(cl).join(name), data).unwrap();
    }
    // Targets for traversal attempts.
    std::fs::write(root.join("secret.txt"), "top secret").unwrap();
    std::fs::write(dir.path().join("secret.ign"), "top secret").unwrap();

    let keys = Arc::new(Keys::generate().unwrap());
    let app = router(AppState {
        store: store.clone(),
        keys: keys.clone(),
        files_root: root.clone(),
        client: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The production server loop (header-read timeout included); never shut down here.
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        assisted_core::service::server::serve(listener, app, None, HEADER_READ_TIMEOUT, shutdown)
            .await;
        drop(stop);
    });
    Api {
        base: format!("http://{addr}/api/assisted-install/v2"),
        client: Client::builder(TokioExecutor::new()).build_http(),
        keys,
        store,
        root,
        _dir: dir,
    }
}

impl Api {
    fn token(&self, c: Claims) -> String {
        self.keys.sign(&c)
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<(&str, Vec<u8>)>,
    ) -> Resp {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.header("X-Secret-Key", t);
        }
        let bytes = match body {
            Some((ct, b)) => {
                req = req.header("content-type", ct);
                Bytes::from(b)
            }
            None => Bytes::new(),
        };
        let resp = self
            .client
            .request(req.body(Full::new(bytes)).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        Resp {
            status,
            content_type,
            body,
        }
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Resp {
        self.call(Method::GET, path, token, None).await
    }

    async fn json(&self, method: Method, path: &str, token: &str, v: Value) -> Resp {
        self.call(
            method,
            path,
            Some(token),
            Some(("application/json", v.to_string().into_bytes())),
        )
        .await
    }

    async fn register(&self, ie: &str, host: &str, token: &str) -> Resp {
        self.json(
            Method::POST,
            &format!("/infra-envs/{ie}/hosts"),
            token,
            json!({"host_id": host, "discovery_agent_version": "agent:v1"}),
        )
        .await
    }
}

#[tokio::test]
async fn happy_path_register_instructions_inventory() {
    let api = start().await;
    let ta = api.token(Claims::infra_env(IE_A));

    let r = api.register(IE_A, H1, &ta).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let h = r.json();
    assert_eq!(h["id"], H1);
    assert_eq!(h["kind"], "Host");
    assert_eq!(h["status"], "discovering");
    assert_eq!(h["cluster_id"], CL_A);
    assert_eq!(h["discovery_agent_version"], "agent:v1");
    let cmd: Value =
        serde_json::from_str(h["next_step_runner_command"]["args"][0].as_str().unwrap()).unwrap();
    assert_eq!(cmd["host_id"], H1);
    assert_eq!(cmd["infra_env_id"], IE_A);

    let now = Timestamp::now().as_second();
    let r = api
        .get(
            &format!("/infra-envs/{IE_A}/hosts/{H1}/instructions?timestamp={now}"),
            Some(&ta),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let steps = r.json();
    assert_eq!(steps["post_step_action"], "continue");
    let inv_step = steps["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step_type"] == "inventory")
        .expect("an inventory step")
        .clone();

    let inventory = json!({
        "hostname": "node-a1",
        "cpu": {"count": 8, "architecture": "x86_64"},
        "memory": {"physical_bytes": 34359738368u64, "usable_bytes": 34359738368u64},
        "disks": [{"id": "/dev/disk/by-id/wwn-1", "name": "sda", "path": "/dev/sda",
                   "drive_type": "SSD", "size_bytes": 137438953472u64,
                   "installation_eligibility": {"eligible": true}}],
        "interfaces": [{"name": "eth0", "mac_address": "52:54:00:00:00:01",
                        "ipv4_addresses": ["192.168.10.11/24"]}]
    });
    let reply = json!({
        "step_type": "inventory",
        "step_id": inv_step["step_id"],
        "exit_code": 0,
        "output": inventory.to_string(),
        "error": ""
    });
    let r = api
        .json(
            Method::POST,
            &format!("/infra-envs/{IE_A}/hosts/{H1}/instructions"),
            &ta,
            reply,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);

    let r = api.get(&format!("/clusters/{CL_A}/hosts"), Some(&ta)).await;
    assert_eq!(r.status, StatusCode::OK);
    let hosts = r.json();
    assert_eq!(hosts.as_array().unwrap().len(), 1);
    let inv: Value = serde_json::from_str(hosts[0]["inventory"].as_str().unwrap()).unwrap();
    assert_eq!(inv["hostname"], "node-a1");
    assert_eq!(inv["cpu"]["count"], 8);

    let r = api.get(&format!("/clusters/{CL_A}"), Some(&ta)).await;
    let c = r.json();
    assert_eq!(c["id"], CL_A);
    assert_eq!(c["kind"], "Cluster");
    assert_eq!(c["high_availability_mode"], "Full");
    assert_eq!(c["total_host_count"], 1);
    assert_eq!(c["hosts"][0]["id"], H1);

    // Installer and controller side.
    let r = api
        .get(
            &format!("/infra-env/{IE_A}/hosts/{H1}/downloads/ignition"),
            Some(&ta),
        )
        .await;
    r.assert_error(409, "no role yet: no ignition");
    api.store.edit_for_tests(|st| {
        st.clusters.get_mut(CL_A).unwrap().snapshot.hosts[0].role = HostRole::Master
    });
    let r = api
        .get(
            &format!("/infra-env/{IE_A}/hosts/{H1}/downloads/ignition"),
            Some(&ta),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(&r.body[..], b"pointer-h1");

    let cred = |f: &str| format!("/clusters/{CL_A}/downloads/credentials?file_name={f}");
    api.get(&cred("kubeconfig"), Some(&ta))
        .await
        .assert_error(409, "kubeconfig before the ingress cert");
    let r = api.get(&cred("kubeadmin-password"), Some(&ta)).await;
    assert_eq!(&r.body[..], b"secret-a");
    let r = api
        .call(
            Method::POST,
            &format!("/clusters/{CL_A}/uploads/ingress-cert"),
            Some(&ta),
            Some((
                "application/json",
                json!(pem_cert()).to_string().into_bytes(),
            )),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = api.get(&cred("kubeconfig"), Some(&ta)).await;
    assert_eq!(r.status, StatusCode::OK);
    let kc: serde_yaml::Value = serde_yaml::from_slice(&r.body).unwrap();
    let ca = STANDARD
        .decode(
            kc["clusters"][0]["cluster"]["certificate-authority-data"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(ca)
            .unwrap()
            .matches("BEGIN CERTIFICATE")
            .count(),
        2
    );
    assert!(
        api.store
            .cluster(CL_A)
            .unwrap()
            .snapshot
            .kubeconfig_uploaded
    );

    let r = api
        .json(
            Method::PUT,
            &format!("/clusters/{CL_A}/progress"),
            &ta,
            json!({"finalizing_stage": "Waiting for cluster operators"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = api
        .json(
            Method::PUT,
            &format!("/clusters/{CL_A}/monitored-operators"),
            &ta,
            json!({"name": "console", "status": "available", "version": "4.20"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let ops = api
        .get(
            &format!("/clusters/{CL_A}/monitored-operators?operator_name=console"),
            Some(&ta),
        )
        .await
        .json();
    assert_eq!(ops[0]["status"], "available");
    let r = api
        .json(
            Method::POST,
            &format!("/clusters/{CL_A}/actions/complete-installation"),
            &ta,
            json!({"is_success": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_eq!(r.json()["id"], CL_A);
    let r = api
        .json(
            Method::PUT,
            &format!("/clusters/{CL_A}/logs-progress"),
            &ta,
            json!({"logs_state": "completed"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = api
        .json(
            Method::PUT,
            &format!("/infra-envs/{IE_A}/hosts/{H1}/logs-progress"),
            &ta,
            json!({"logs_state": "collecting"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = api
        .call(
            Method::POST,
            &format!("/clusters/{CL_A}/logs?logs_type=host&host_id={H1}&infra_env_id={IE_A}"),
            Some(&ta),
            Some(("application/octet-stream", vec![7u8; 100_000])),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let stored = std::fs::read(
        api.root
            .join(CL_A)
            .join("logs")
            .join(format!("host_{H1}.tar.gz")),
    )
    .unwrap();
    assert_eq!(stored.len(), 100_000);
    // As upstream's client sends it: multipart/form-data with the archive in the part `upfile`;
    // only the archive is stored.
    let archive: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
    let mut form = b"--XyZ\r\nContent-Disposition: form-data; name=\"upfile\"; filename=\"logs.tar.gz\"\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
    form.extend_from_slice(&archive);
    form.extend_from_slice(b"\r\n--XyZ--\r\n");
    let r = api
        .call(
            Method::POST,
            &format!("/clusters/{CL_A}/logs?logs_type=controller"),
            Some(&ta),
            Some(("multipart/form-data; boundary=XyZ", form)),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let stored = std::fs::read(
        api.root
            .join(CL_A)
            .join("logs")
            .join("controller_controller.tar.gz"),
    )
    .unwrap();
    assert!(stored == archive, "the upfile part, byte for byte");
    let r = api
        .call(
            Method::POST,
            &format!("/clusters/{CL_A}/logs?logs_type=controller"),
            Some(&ta),
            Some(("multipart/form-data; boundary=XyZ", b"--XyZ--\r\n".to_vec())),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "no upfile part");

    // Downloads: one archive, or the whole bundle (the uploads and the cluster).
    let r = api
        .get(
            &format!("/clusters/{CL_A}/logs?logs_type=host&host_id={H1}"),
            Some(&ta),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body.len(), 100_000);
    let r = api
        .get(
            &format!("/clusters/{CL_A}/logs?logs_type=node-boot&host_id={H1}"),
            Some(&ta),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{:?}", r.body);
    assert!(
        r.json()["reason"]
            .as_str()
            .unwrap()
            .contains("no node-boot logs")
    );
    let r = api
        .get(
            &format!("/clusters/{CL_A}/logs?logs_type=kernel"),
            Some(&ta),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = api.get(&format!("/clusters/{CL_A}/logs"), Some(&ta)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let mut names = std::collections::BTreeMap::new();
    for e in tar::Archive::new(&r.body[..]).entries().unwrap() {
        let e = e.unwrap();
        names.insert(
            e.path().unwrap().to_string_lossy().into_owned(),
            e.header().size().unwrap(),
        );
    }
    let in_bundle = |suffix: &str| {
        names
            .iter()
            .find(|(n, _)| n.ends_with(suffix))
            .map(|(_, size)| *size)
    };
    assert_eq!(
        in_bundle(&format!("/uploads/host_{H1}.tar.gz")),
        Some(100_000),
        "{names:?}"
    );
    assert_eq!(
        in_bundle("/uploads/controller_controller.tar.gz"),
        Some(150_000)
    );
    assert!(in_bundle("/cluster.json").is_some(), "{names:?}");
    assert!(
        names
            .keys()
            .all(|n| n.starts_with(&format!("_{CL_A}/")) || n.contains(&format!("_{CL_A}/"))),
        "one directory named after the cluster: {names:?}"
    );
    // Nothing of the bundle is left behind in the cluster's directory.
    let leftovers: Vec<_> = std::fs::read_dir(api.root.join(CL_A))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("bundle"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let r = api
        .json(Method::POST, "/events", &ta, json!({"message": "hello"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);

    // Infra-env files for the image service and iPXE.
    let r = api
        .get(
            &format!("/infra-envs/{IE_A}/downloads/files?file_name=discovery.ign"),
            Some(&ta),
        )
        .await;
    assert_eq!(r.json()["ie"], IE_A);
    // Upstream's generated client reads these as a byte stream: with another content type it
    // hands back an empty discovery.ign and fails on the iPXE script.
    assert_eq!(r.content_type, "application/octet-stream");
    let r = api
        .get(
            &format!("/infra-envs/{IE_A}/downloads/files?file_name=ipxe-script"),
            Some(&ta),
        )
        .await;
    assert_eq!(&r.body[..], b"#!ipxe\n");
    assert_eq!(r.content_type, "application/octet-stream");
    let r = api
        .get(
            &format!("/infra-envs/{IE_A}/downloads/minimal-initrd"),
            Some(&ta),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    api.store.edit_for_tests(|st| {
        st.infra_envs.get_mut(IE_A).unwrap().minimal_initrd = Some(Arc::from(&b"070701"[..]))
    });
    let r = api
        .get(
            &format!("/infra-envs/{IE_A}/downloads/minimal-initrd"),
            Some(&ta),
        )
        .await;
    assert_eq!((r.status, &r.body[..]), (StatusCode::OK, &b"070701"[..]));

    // The spec is public.
    let r = api.get("/openapi.yaml", None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&r.body).contains("v2RegisterHost"));
}

#[tokio::test]
async fn bad_input_answers_json_errors() {
    let api = start().await;
    let ta = api.token(Claims::infra_env(IE_A));
    let tb = api.token(Claims::infra_env(IE_B));
    let tu = api.token(Claims::infra_env(IE_UNKNOWN));
    assert_eq!(
        api.register(IE_A, H1, &ta).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        api.register(IE_A, H2, &ta).await.status,
        StatusCode::CREATED
    );

    let reg = format!("/infra-envs/{IE_A}/hosts");
    let instr = |ie: &str, h: &str| format!("/infra-envs/{ie}/hosts/{h}/instructions");
    let progress = format!("/infra-envs/{IE_A}/hosts/{H2}/progress");
    let files = |f: &str| format!("/clusters/{CL_A}/downloads/files?file_name={f}");
    let json_ct = "application/json";
    let big = format!(
        "{{\"host_id\":\"{H9}\",\"pad\":\"{}\"}}",
        "x".repeat(3 * 1024 * 1024)
    );
    let cases: Vec<Case> = vec![
        (
            "malformed JSON",
            Method::POST,
            reg.clone(),
            &ta,
            Some((json_ct, b"{\"host_id\":".to_vec())),
            400,
        ),
        (
            "wrong content type",
            Method::POST,
            reg.clone(),
            &ta,
            Some((
                "text/plain",
                format!("{{\"host_id\":\"{H9}\"}}").into_bytes(),
            )),
            415,
        ),
        (
            "wrong field type",
            Method::POST,
            reg.clone(),
            &ta,
            Some((json_ct, b"{\"host_id\":5}".to_vec())),
            400,
        ),
        (
            // upstream's model validation: "host_id in body is required"
            "missing host_id",
            Method::POST,
            reg.clone(),
            &ta,
            Some((json_ct, b"{}".to_vec())),
            422,
        ),
        (
            "JSON array body",
            Method::POST,
            reg.clone(),
            &ta,
            Some((json_ct, b"[]".to_vec())),
            400,
        ),
        (
            "non-UUID host id",
            Method::POST,
            reg.clone(),
            &ta,
            Some((json_ct, b"{\"host_id\":\"../../etc\"}".to_vec())),
            400,
        ),
        (
            "oversized body",
            Method::POST,
            reg.clone(),
            &ta,
            Some((json_ct, big.into_bytes())),
            413,
        ),
        (
            "unknown infra-env",
            Method::POST,
            format!("/infra-envs/{IE_UNKNOWN}/hosts"),
            &tu,
            Some((json_ct, format!("{{\"host_id\":\"{H9}\"}}").into_bytes())),
            404,
        ),
        ("unknown host", Method::GET, instr(IE_A, H9), &ta, None, 404),
        (
            "host of A via B",
            Method::GET,
            instr(IE_B, H1),
            &tb,
            None,
            404,
        ),
        (
            "non-UUID host in path",
            Method::GET,
            instr(IE_A, "not-a-uuid"),
            &ta,
            None,
            404,
        ),
        (
            "bad timestamp",
            Method::GET,
            format!("{}?timestamp=yesterday", instr(IE_A, H1)),
            &ta,
            None,
            400,
        ),
        (
            "step reply not JSON",
            Method::POST,
            instr(IE_A, H1),
            &ta,
            Some((json_ct, b"inventory!".to_vec())),
            400,
        ),
        (
            "step reply not an object",
            Method::POST,
            instr(IE_A, H1),
            &ta,
            Some((json_ct, b"\"x\"".to_vec())),
            400,
        ),
        (
            "unknown ipxe_script_type",
            Method::GET,
            format!("/infra-envs/{IE_A}/downloads/files?file_name=ipxe-script&ipxe_script_type=fancy"),
            &ta,
            None,
            422,
        ),
        (
            "unknown discovery_iso_type",
            Method::GET,
            format!("/infra-envs/{IE_A}/downloads/files?file_name=discovery.ign&discovery_iso_type=tiny-iso"),
            &ta,
            None,
            422,
        ),
        (
            "step reply with an unknown step_type",
            Method::POST,
            instr(IE_A, H1),
            &ta,
            Some((
                json_ct,
                br#"{"step_type":"format-the-disk","step_id":"x","exit_code":0,"output":""}"#.to_vec(),
            )),
            422,
        ),
        (
            "step reply with exit_code 2^63",
            Method::POST,
            instr(IE_A, H1),
            &ta,
            Some((
                json_ct,
                br#"{"step_type":"inventory","step_id":"x","exit_code":9223372036854775808,"output":"{}"}"#.to_vec(),
            )),
            400,
        ),
        (
            "inventory reply whose output is not a JSON object",
            Method::POST,
            instr(IE_A, H1),
            &ta,
            Some((
                json_ct,
                br#"{"step_type":"inventory","step_id":"x","exit_code":0,"output":"[1,2]"}"#.to_vec(),
            )),
            400,
        ),
        (
            "unknown stage",
            Method::PUT,
            progress.clone(),
            &ta,
            Some((json_ct, b"{\"current_stage\":\"Flying\"}".to_vec())),
            400,
        ),
        (
            "progress before install",
            Method::PUT,
            format!("/infra-envs/{IE_A}/hosts/{H1}/progress"),
            &ta,
            Some((json_ct, b"{\"current_stage\":\"Installing\"}".to_vec())),
            409,
        ),
        (
            "unknown logs_state",
            Method::PUT,
            format!("/infra-envs/{IE_A}/hosts/{H1}/logs-progress"),
            &ta,
            Some((json_ct, b"{\"logs_state\":\"lost\"}".to_vec())),
            400,
        ),
        (
            "unknown finalizing stage",
            Method::PUT,
            format!("/clusters/{CL_A}/progress"),
            &ta,
            Some((json_ct, b"{\"finalizing_stage\":\"Nearly\"}".to_vec())),
            400,
        ),
        (
            "unknown operator status",
            Method::PUT,
            format!("/clusters/{CL_A}/monitored-operators"),
            &ta,
            Some((
                json_ct,
                b"{\"name\":\"console\",\"status\":\"meh\"}".to_vec(),
            )),
            400,
        ),
        (
            "bad file_name",
            Method::GET,
            files("kubeconfig"),
            &ta,
            None,
            400,
        ),
        (
            "missing file_name",
            Method::GET,
            format!("/clusters/{CL_A}/downloads/files"),
            &ta,
            None,
            400,
        ),
        (
            "traversal ../",
            Method::GET,
            files("../secret.txt"),
            &ta,
            None,
            400,
        ),
        (
            "traversal encoded",
            Method::GET,
            files("..%2Fsecret.txt"),
            &ta,
            None,
            400,
        ),
        (
            "traversal dotted encoded",
            Method::GET,
            files("%2e%2e%2f%2e%2e%2fsecret.ign"),
            &ta,
            None,
            400,
        ),
        (
            "traversal in role file",
            Method::GET,
            files(&format!("master-{H1}.ign%2F..%2F..%2F..%2Fsecret.ign")),
            &ta,
            None,
            400,
        ),
        (
            "absolute path",
            Method::GET,
            files("%2Fetc%2Fpasswd"),
            &ta,
            None,
            400,
        ),
        (
            "allowed but missing file",
            Method::GET,
            files("worker.ign"),
            &ta,
            None,
            404,
        ),
        (
            "bad credentials name",
            Method::GET,
            format!("/clusters/{CL_A}/downloads/credentials?file_name=..%2Fsecret.txt"),
            &ta,
            None,
            400,
        ),
        (
            "bad infra-env file",
            Method::GET,
            format!("/infra-envs/{IE_A}/downloads/files?file_name=..%2Fsecret.txt"),
            &ta,
            None,
            400,
        ),
        (
            "ingress cert not PEM",
            Method::POST,
            format!("/clusters/{CL_A}/uploads/ingress-cert"),
            &ta,
            Some(("text/plain", b"hello".to_vec())),
            400,
        ),
        (
            "bad logs host id",
            Method::POST,
            format!("/clusters/{CL_A}/logs?logs_type=host&host_id=..%2F..%2Fx"),
            &ta,
            Some(("application/octet-stream", b"x".to_vec())),
            400,
        ),
        (
            "unknown route",
            Method::GET,
            "/nothing/here".to_string(),
            &ta,
            None,
            404,
        ),
        (
            "wrong method",
            Method::DELETE,
            format!("/clusters/{CL_A}"),
            &ta,
            None,
            405,
        ),
    ];
    for (what, method, path, tok, body, status) in cases {
        api.call(method, &path, Some(tok), body)
            .await
            .assert_error(status, what);
    }

    // Stage regression: Rebooting, then Installing again.
    api.store.edit_for_tests(|st| {
        let h = st
            .clusters
            .get_mut(CL_A)
            .unwrap()
            .snapshot
            .host_mut(H2)
            .unwrap();
        h.status = HostStatus::Installing;
        h.role = HostRole::Master;
    });
    let put = |stage: &'static str| {
        api.json(
            Method::PUT,
            &progress,
            &ta,
            json!({"current_stage": stage, "progress_info": ""}),
        )
    };
    assert_eq!(put("Rebooting").await.status, StatusCode::OK);
    assert_eq!(
        api.store
            .view(|st| st.host(H2).unwrap().progress.current_stage),
        Some(HostStage::Rebooting)
    );
    let r = put("Installing").await;
    assert!(r.status.is_client_error(), "{:?}", r.status);
    r.assert_error(r.status.as_u16(), "stage regression");
}

#[tokio::test]
async fn tokens_are_isolated_per_infra_env_and_cluster() {
    let api = start().await;
    let ta = api.token(Claims::infra_env(IE_A));
    let tb = api.token(Claims::infra_env(IE_B));
    let tca = api.token(Claims::cluster(CL_A));
    assert_eq!(
        api.register(IE_B, H2, &tb).await.status,
        StatusCode::CREATED
    );

    // A cannot register or read in B, nor read B's cluster.
    api.register(IE_B, H1, &ta)
        .await
        .assert_error(403, "register in B");
    api.get(
        &format!("/infra-envs/{IE_B}/hosts/{H2}/instructions"),
        Some(&ta),
    )
    .await
    .assert_error(403, "instructions in B");
    api.get(&format!("/clusters/{CL_B}"), Some(&ta))
        .await
        .assert_error(403, "cluster B");
    api.get(&format!("/clusters/{CL_B}/hosts"), Some(&ta))
        .await
        .assert_error(403, "hosts of B");
    api.get(
        &format!("/clusters/{CL_B}/downloads/files?file_name=bootstrap.ign"),
        Some(&ta),
    )
    .await
    .assert_error(403, "files of B");
    api.get(
        &format!("/clusters/{CL_B}/downloads/files?file_name=bootstrap.ign&api_key={ta}"),
        None,
    )
    .await
    .assert_error(403, "files of B by api_key");
    api.get(
        &format!("/infra-envs/{IE_B}/downloads/files?file_name=discovery.ign&api_key={ta}"),
        None,
    )
    .await
    .assert_error(403, "infra-env B files by api_key");

    // api_key works for downloads of one's own cluster.
    let r = api
        .get(
            &format!("/clusters/{CL_A}/downloads/files?file_name=bootstrap.ign&api_key={ta}"),
            None,
        )
        .await;
    assert_eq!(
        (r.status, &r.body[..]),
        (StatusCode::OK, &b"bootstrap-of-a"[..])
    );

    // A cluster token opens its cluster and the infra-envs bound to it.
    let r = api
        .get(
            &format!("/infra-envs/{IE_A}/downloads/files?file_name=static-network-config"),
            Some(&tca),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        api.get(&format!("/clusters/{CL_A}"), Some(&tca))
            .await
            .status,
        StatusCode::OK
    );
    api.get(
        &format!("/infra-envs/{IE_B}/downloads/files?file_name=discovery.ign"),
        Some(&tca),
    )
    .await
    .assert_error(403, "cluster token on another infra-env");

    // Bad tokens.
    let other_key = Keys::generate().unwrap().sign(&Claims::infra_env(IE_A));
    for (what, tok) in [
        ("garbage", "garbage"),
        ("three garbage parts", "a.b.c"),
        ("another key", other_key.as_str()),
    ] {
        api.get(&format!("/clusters/{CL_A}"), Some(tok))
            .await
            .assert_error(401, what);
    }
    api.get(&format!("/clusters/{CL_A}"), None)
        .await
        .assert_error(401, "no token");
    api.get(
        &format!("/clusters/{CL_A}/downloads/files?file_name=bootstrap.ign&api_key=garbage"),
        None,
    )
    .await
    .assert_error(401, "garbage api_key");
    api.call(
        Method::POST,
        "/events",
        None,
        Some(("application/json", b"{}".to_vec())),
    )
    .await
    .assert_error(401, "events without token");
    let r = api.json(Method::POST, "/events", &tb, json!({})).await;
    assert_eq!(r.status, StatusCode::CREATED);
}

/// Parallel uploads of the same host's logs all succeed (they once shared one temporary file
/// name and about one in twenty failed with 500 "cannot store logs").
#[tokio::test]
async fn concurrent_log_uploads_all_succeed() {
    let api = Arc::new(start().await);
    let ta = api.token(Claims::infra_env(IE_A));
    let uploads: Vec<_> = (0..40u8)
        .map(|i| {
            let api = api.clone();
            let ta = ta.clone();
            tokio::spawn(async move {
                api.call(
                    Method::POST,
                    &format!(
                        "/clusters/{CL_A}/logs?logs_type=host&host_id={H1}&infra_env_id={IE_A}"
                    ),
                    Some(&ta),
                    Some(("application/octet-stream", vec![i; 50_000])),
                )
                .await
                .status
            })
        })
        .collect();
    for upload in uploads {
        assert_eq!(upload.await.unwrap(), StatusCode::NO_CONTENT);
    }
    let logs = api.root.join(CL_A).join("logs");
    let stored = std::fs::read(logs.join(format!("host_{H1}.tar.gz"))).unwrap();
    assert_eq!(stored.len(), 50_000, "one whole upload, not a mix");
    assert!(
        stored.iter().all(|b| *b == stored[0]),
        "one whole upload, not a mix"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("tmp-upload"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// iPXE `BootOrderControl` walked as a host's firmware walks it: the published script asks
/// again with the MAC; a MAC nobody has, or a host still discovering, gets the discovery boot;
/// an installed host (or one past its reboot) gets a 404, so the chain fails and the firmware
/// boots the disk; two hosts with one MAC get a 500. Never a script that chains to itself.
#[tokio::test]
async fn ipxe_boot_order_control_boots_discovery_or_the_disk_by_mac() {
    let api = start().await;
    api.store.edit_for_tests(|st| {
        let ie = st.infra_envs.get_mut(IE_A).unwrap();
        ie.ipxe_script = "#!ipxe\n# discovery boot\n".into();
        ie.ipxe_redirect_script = "#!ipxe\nchain http://core/ipxe-script&mac=${net0/mac}\n".into();
    });
    let ta = api.token(Claims::infra_env(IE_A));
    assert_eq!(
        api.register(IE_A, H1, &ta).await.status,
        StatusCode::CREATED
    );
    let mac = "52:54:00:aa:bb:01";
    let inventory: assisted_core::domain::Inventory =
        serde_json::from_value(json!({"interfaces": [{"name": "eth0", "mac_address": mac}]}))
            .unwrap();
    api.store.edit_for_tests(|st| {
        st.clusters.get_mut(CL_A).unwrap().snapshot.hosts[0].inventory = Some(inventory.clone())
    });
    let script = |mac: Option<&str>| {
        let mut path = format!(
            "/infra-envs/{IE_A}/downloads/files?file_name=ipxe-script&ipxe_script_type=boot-order-control"
        );
        if let Some(m) = mac {
            path.push_str(&format!("&mac={m}"));
        }
        path
    };
    let body = |r: &Resp| String::from_utf8_lossy(&r.body).to_string();

    let r = api.get(&script(None), Some(&ta)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(body(&r).contains("mac=${net0/mac}"), "{}", body(&r));
    for (what, asked) in [
        ("an unknown MAC", "52:54:00:00:00:99"),
        ("a discovering host, MAC in capitals", "52:54:00:AA:BB:01"),
    ] {
        let r = api.get(&script(Some(asked)), Some(&ta)).await;
        assert_eq!(r.status, StatusCode::OK, "{what}");
        assert!(body(&r).contains("discovery boot"), "{what}: {}", body(&r));
    }
    for (status, stage) in [
        (HostStatus::Installed, None),
        (HostStatus::InstallingInProgress, Some(HostStage::Rebooting)),
    ] {
        api.store.edit_for_tests(|st| {
            let h = &mut st.clusters.get_mut(CL_A).unwrap().snapshot.hosts[0];
            h.status = status;
            h.progress.current_stage = stage;
        });
        let r = api.get(&script(Some(mac)), Some(&ta)).await;
        r.assert_error(404, &format!("{status} {stage:?}: boot from disk"));
        assert!(r.json()["reason"].as_str().unwrap().contains(H1));
    }
    // A host still writing its disk boots discovery again (upstream's rule).
    api.store.edit_for_tests(|st| {
        st.clusters.get_mut(CL_A).unwrap().snapshot.hosts[0]
            .progress
            .current_stage = Some(HostStage::WritingImageToDisk)
    });
    assert_eq!(
        api.get(&script(Some(mac)), Some(&ta)).await.status,
        StatusCode::OK
    );
    // Two hosts of the infra-env with one MAC: nothing is booted.
    assert_eq!(
        api.register(IE_A, H2, &ta).await.status,
        StatusCode::CREATED
    );
    api.store.edit_for_tests(|st| {
        st.clusters.get_mut(CL_A).unwrap().snapshot.hosts[1].inventory = Some(inventory.clone())
    });
    api.get(&script(Some(mac)), Some(&ta))
        .await
        .assert_error(500, "two hosts with one MAC");
}

//! The site's network between the workload kube-apiserver and its Nodes, and the part of a
//! kubelet's HTTPS API that a pod exec reaches.
//!
//! [`Network`] is an HTTP CONNECT proxy on a Unix socket, the workload apiserver's `cluster`
//! egress (see `testbed::TestbedBuilder::kubelet_network`): it dials `<node IP>:10250` to a
//! simulated kubelet listening on loopback, and answers `502 Bad Gateway` for a host that is
//! down (no route).
//!
//! [`KubeletServer`] serves `/exec/{namespace}/{pod}/{container}` over TLS (a serving
//! certificate of the workload CA for the Node's IP, a client certificate of that CA required:
//! the apiserver's kubelet client certificate) as a 1.36 kubelet does for WebSocket clients.
//! Kubernetes 1.36's apiserver proxies a WebSocket exec straight to a kubelet whose Node
//! declares `ExtendWebSocketsToKubelet` ([`kubelet_status_fields`]); the kubelet then
//!
//! - answers a request for `v5.channel.k8s.io` itself (its stream translator, `v5` only, the
//!   protocol kube-rs and kubectl ask for first), writing the exit status as a `metav1.Status`;
//! - hands any other request to the container runtime's streaming server, which picks the first
//!   protocol the client offers among `channel.k8s.io`, `base64.channel.k8s.io`,
//!   `v4.channel.k8s.io` and `v4.base64.channel.k8s.io`, of which `v4.channel.k8s.io` is
//!   simulated here (its status has no `metadata`).
//!
//! Either way: channel-prefixed binary messages, an empty message on the first requested output
//! channel once open, stdout on 1, stderr on 2, the status on 3, then the connection closes.
//! Before the upgrade, a pod this kubelet does not run is `404 pod does not exist`, a container
//! the pod does not have `500 container not found ("<name>")`. Of the commands, only `etcdctl`
//! in an etcd-image container of a master's etcd pod runs, against [`EtcdMembers`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use futures::{SinkExt, StreamExt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

use crate::etcd_operator::{self, EtcdMembers, ExecResult};

/// The port a kubelet serves on (what its Node's `daemonEndpoints` say).
pub const KUBELET_PORT: u16 = 10250;

/// What the kubelet of a 1.36 Node reports besides its conditions and addresses: its API's
/// port and that it takes WebSocket streams itself. Merge into the Node's `status`.
pub fn kubelet_status_fields() -> serde_json::Value {
    json!({
        "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
        "declaredFeatures": ["ExtendWebSocketsToKubelet"],
    })
}

/// Where the workload apiserver dials the kubelet of the Node with address `ip` (an address,
/// or a CIDR as host profiles write them).
pub fn kubelet_address(ip: &str) -> Option<SocketAddr> {
    let ip = ip.split('/').next().unwrap_or(ip);
    Some(SocketAddr::new(ip.parse().ok()?, KUBELET_PORT))
}

type Routes = Arc<Mutex<HashMap<SocketAddr, SocketAddr>>>;

/// The CONNECT proxy; see the module docs. Stops when dropped.
pub struct Network {
    pub socket: PathBuf,
    routes: Routes,
    task: JoinHandle<()>,
}

impl Drop for Network {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Network {
    /// Listens on `socket` (replacing a stale file). Unix socket paths are at most 107 bytes.
    pub fn start(socket: &Path) -> Result<Network> {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)
            .with_context(|| format!("listening on {}", socket.display()))?;
        let routes = Routes::default();
        let table = routes.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let table = table.clone();
                tokio::spawn(async move {
                    if let Err(e) = tunnel(conn, &table).await {
                        tracing::debug!("site network: {e:#}");
                    }
                });
            }
        });
        Ok(Network {
            socket: socket.to_owned(),
            routes,
            task,
        })
    }

    /// Connections to `from` (a Node's address and port) reach `to` (a local listener).
    pub fn route(&self, from: SocketAddr, to: SocketAddr) {
        self.table().insert(from, to);
    }

    /// `from` is down: connections to it get `502 Bad Gateway`. Tunnels already open stay.
    pub fn unroute(&self, from: SocketAddr) {
        self.table().remove(&from);
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, SocketAddr>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The target of a CONNECT request head (`CONNECT 192.0.2.10:10250 HTTP/1.1`).
fn connect_target(head: &str) -> Option<SocketAddr> {
    let mut words = head.lines().next()?.split_whitespace();
    match (words.next(), words.next()) {
        (Some("CONNECT"), Some(target)) => target.parse().ok(),
        _ => None,
    }
}

/// One CONNECT: the request head read byte by byte (nothing of the tunnel is read ahead), then
/// exactly `200 Connection established` (Go's egress dialer refuses bytes buffered after it)
/// and the bytes copied both ways, or `502` and closed for a host that is not there.
async fn tunnel(mut conn: UnixStream, routes: &Routes) -> Result<()> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8192 {
            anyhow::bail!("CONNECT request head too long");
        }
        let mut b = [0u8; 1];
        if conn.read(&mut b).await? == 0 {
            anyhow::bail!("closed before the request head ended");
        }
        head.push(b[0]);
    }
    let target = connect_target(&String::from_utf8_lossy(&head));
    let to = target.and_then(|t| {
        let table = routes.lock().unwrap_or_else(|e| e.into_inner());
        table.get(&t).copied()
    });
    let upstream = match to {
        Some(addr) => TcpStream::connect(addr).await.ok(),
        None => None,
    };
    let Some(mut upstream) = upstream else {
        conn.write_all(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .await?;
        conn.shutdown().await.ok();
        anyhow::bail!("{target:?}: no route to host");
    };
    conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await?;
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

/// A simulated kubelet's exec endpoint; see the module docs. Stops when dropped.
pub struct KubeletServer {
    /// Where it listens (loopback): route the Node's [`kubelet_address`] here.
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for KubeletServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KubeletServer {
    /// The kubelet of Node `node`, serving on a free loopback port with `cert_pem`/`key_pem`
    /// and requiring client certificates signed by `ca_pem`. It runs the Node's etcd pod
    /// (`openshift-etcd/etcd-<node>`), whose `etcdctl` answers from `etcd`.
    pub async fn start(
        node: &str,
        cert_pem: &str,
        key_pem: &str,
        ca_pem: &str,
        etcd: EtcdMembers,
    ) -> Result<KubeletServer> {
        let acceptor = tls_acceptor(cert_pem, key_pem, ca_pem)?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let node = node.to_owned();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let etcd = etcd.clone();
                let node = node.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve_one(acceptor, tcp, &node, etcd).await {
                        tracing::debug!("simulated kubelet of {node}: {e:#}");
                    }
                });
            }
        });
        Ok(KubeletServer { addr, task })
    }
}

fn tls_acceptor(cert_pem: &str, key_pem: &str, ca_pem: &str) -> Result<tokio_rustls::TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .context("kubelet serving certificate")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).context("kubelet key")?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(ca.context("the workload CA")?)?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// The exec a request names: its path and the query parameters the apiserver sets.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct ExecRequest {
    namespace: String,
    pod: String,
    container: String,
    command: Vec<String>,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
}

fn parse_exec(path_and_query: &str) -> Option<ExecRequest> {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let ["exec", namespace, pod, container] = parts.as_slice() else {
        return None;
    };
    let params: Vec<(&str, String)> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k, percent_decode(v)))
        .collect();
    // The kubelet reads each flag as `FormValue(name) == "1"`: the first value.
    let flag = |name: &str| {
        params
            .iter()
            .find(|(k, _)| *k == name)
            .is_some_and(|(_, v)| v == "1")
    };
    let tty = flag("tty");
    Some(ExecRequest {
        namespace: namespace.to_string(),
        pod: pod.to_string(),
        container: container.to_string(),
        command: params
            .iter()
            .filter(|(k, _)| *k == "command")
            .map(|(_, v)| v.clone())
            .collect(),
        stdin: flag("input"),
        stdout: flag("output"),
        // A TTY has no separate stderr: the kubelet drops it.
        stderr: flag("error") && !tty,
        tty,
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The WebSocket subprotocols of remote command streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// `v5.channel.k8s.io`: the kubelet's own stream translator.
    V5,
    /// `v4.channel.k8s.io`: the container runtime's streaming server.
    V4,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::V5 => "v5.channel.k8s.io",
            Protocol::V4 => "v4.channel.k8s.io",
        }
    }
}

/// The subprotocol a 1.36 kubelet settles on for what the client offers (in its order), or
/// why the upgrade is refused.
fn negotiate(offered: &[&str]) -> Result<Protocol, String> {
    if offered.contains(&Protocol::V5.name()) {
        return Ok(Protocol::V5);
    }
    // The runtime's streaming server: the first offered that it knows ("" when none is).
    let runtime = [
        "",
        "channel.k8s.io",
        "base64.channel.k8s.io",
        "v4.channel.k8s.io",
        "v4.base64.channel.k8s.io",
    ];
    let offered = if offered.is_empty() {
        &[""][..]
    } else {
        offered
    };
    match offered.iter().find(|p| runtime.contains(p)) {
        Some(&p) if p == Protocol::V4.name() => Ok(Protocol::V4),
        Some(p) => Err(format!(
            "the lab's kubelet does not simulate subprotocol {p:?} (only v5.channel.k8s.io and v4.channel.k8s.io)"
        )),
        None => Err(format!(
            "requested protocol(s) are not supported: {offered:?}; supports {runtime:?}"
        )),
    }
}

/// What the kubelet of `node` answers before the upgrade: nothing (go on), or a status and
/// body.
fn admit(req: &ExecRequest, node: &str) -> Option<(http::StatusCode, String)> {
    if !(req.stdin || req.stdout || req.stderr) {
        return Some((
            http::StatusCode::BAD_REQUEST,
            "you must specify at least 1 of stdin, stdout, stderr".into(),
        ));
    }
    if req.namespace != etcd_operator::NAMESPACE || req.pod != etcd_operator::pod_name(node) {
        return Some((http::StatusCode::NOT_FOUND, "pod does not exist".into()));
    }
    if !etcd_operator::CONTAINERS
        .iter()
        .any(|(c, _)| *c == req.container)
    {
        return Some((
            http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("container not found ({:?})", req.container),
        ));
    }
    None
}

/// What a command in the etcd pod's container does: `etcdctl` where the image has it; any
/// other executable is missing, as the runtime reports it (runc's error, exit code 255).
fn run(req: &ExecRequest, etcd: &EtcdMembers) -> ExecResult {
    let has_etcdctl = etcd_operator::CONTAINERS
        .iter()
        .any(|(c, etcd_image)| *c == req.container && *etcd_image);
    match req.command.split_first() {
        Some((cmd, args)) if has_etcdctl && cmd == "etcdctl" => etcd.run_etcdctl(args),
        Some((cmd, _)) => ExecResult {
            exit_code: 255,
            stdout: String::new(),
            stderr: format!(
                "exec failed: unable to start container process: exec: {cmd:?}: executable file not found in $PATH\n"
            ),
        },
        None => ExecResult {
            exit_code: 255,
            stdout: String::new(),
            stderr: "exec failed: unable to start container process: exec: no command\n".into(),
        },
    }
}

/// The exit status written on channel 3.
fn status_json(protocol: Protocol, req: &ExecRequest, result: &ExecResult) -> String {
    let code = result.exit_code;
    match (protocol, code) {
        // The runtime's streaming server marshals its own status type: no `metadata`.
        (Protocol::V4, 0) => json!({"status": "Success"}),
        (Protocol::V4, _) => json!({
            "status": "Failure",
            "message": format!(
                "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                req.command.join(" ")
            ),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
        }),
        // The kubelet's translator writes a metav1.Status from what its SPDY client decoded.
        (Protocol::V5, 0) => json!({"metadata": {}, "status": "Success"}),
        (Protocol::V5, _) => json!({
            "metadata": {},
            "status": "Failure",
            "message": format!(
                "command terminated with non-zero exit code: command terminated with exit code {code}"
            ),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
        }),
    }
    .to_string()
}

/// The binary messages the kubelet sends for a finished command, in order.
fn messages(protocol: Protocol, req: &ExecRequest, result: &ExecResult) -> Vec<Vec<u8>> {
    let frame = |channel: u8, data: &[u8]| {
        let mut m = vec![channel];
        m.extend_from_slice(data);
        m
    };
    // "Connection established": an empty message on the lowest writable channel.
    let first = if req.stdout {
        1
    } else if req.stderr {
        2
    } else {
        3
    };
    let mut out = vec![frame(first, b"")];
    if req.stdout && !result.stdout.is_empty() {
        out.push(frame(1, result.stdout.as_bytes()));
    }
    if req.stderr && !result.stderr.is_empty() {
        out.push(frame(2, result.stderr.as_bytes()));
    }
    out.push(frame(3, status_json(protocol, req, result).as_bytes()));
    out
}

/// What the handshake callback decided.
enum Verdict {
    Upgrade(Protocol, ExecRequest),
    Refused,
}

async fn serve_one(
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: TcpStream,
    node: &str,
    etcd: EtcdMembers,
) -> Result<()> {
    let tls = acceptor.accept(tcp).await.context("TLS")?;
    let mut verdict = Verdict::Refused;
    // The signature is tungstenite's handshake callback.
    #[allow(clippy::result_large_err)]
    let callback = |request: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
        let refuse = |status: http::StatusCode, body: String| {
            let mut refused = ErrorResponse::new(Some(body));
            *refused.status_mut() = status;
            refused
        };
        let asked = request
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let Some(req) = parse_exec(&asked) else {
            return Err(refuse(
                http::StatusCode::NOT_FOUND,
                "404 page not found".into(),
            ));
        };
        if let Some((status, body)) = admit(&req, node) {
            return Err(refuse(status, body));
        }
        let offered: Vec<&str> = request
            .headers()
            .get_all("sec-websocket-protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let protocol = negotiate(&offered).map_err(|e| refuse(http::StatusCode::BAD_REQUEST, e))?;
        response.headers_mut().insert(
            "sec-websocket-protocol",
            http::HeaderValue::from_static(protocol.name()),
        );
        verdict = Verdict::Upgrade(protocol, req);
        Ok(response)
    };
    let mut ws = tokio_tungstenite::accept_hdr_async(tls, callback)
        .await
        .context("WebSocket handshake")?;
    let Verdict::Upgrade(protocol, req) = verdict else {
        anyhow::bail!("upgrade refused");
    };
    let result = run(&req, &etcd);
    for m in messages(protocol, &req, &result) {
        ws.send(Message::Binary(m.into())).await?;
    }
    ws.close(None).await.ok();
    // Read until the client's close answers ours, so that nothing it sent is left unread (a
    // socket closed with unread input is reset, and a reset can lose what we wrote).
    let drain = async { while let Some(Ok(_)) = ws.next().await {} };
    tokio::time::timeout(Duration::from_secs(5), drain)
        .await
        .ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "/exec/openshift-etcd/etcd-master-0/etcdctl?command=etcdctl&command=member&command=list&command=-w&command=json&error=1&output=1";

    fn request(path: &str) -> ExecRequest {
        parse_exec(path).expect("an exec path")
    }

    #[test]
    fn exec_paths_parse_as_the_apiserver_sends_them() {
        assert_eq!(
            request(LIST),
            ExecRequest {
                namespace: "openshift-etcd".into(),
                pod: "etcd-master-0".into(),
                container: "etcdctl".into(),
                command: ["etcdctl", "member", "list", "-w", "json"]
                    .map(String::from)
                    .to_vec(),
                stdin: false,
                stdout: true,
                stderr: true,
                tty: false,
            }
        );
        let r = request("/exec/ns/p/c?command=a%20b&command=--x%3Dy&input=1&tty=1&error=1");
        assert_eq!(r.command, vec!["a b".to_string(), "--x=y".into()]);
        assert!(r.stdin && r.tty && !r.stdout);
        assert!(!r.stderr, "a TTY has no stderr");
        assert_eq!(parse_exec("/logs/ns/p"), None);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn protocol_rows() {
        // (offered in the client's order, negotiated or refused)
        let rows: [(&[&str], Option<Protocol>); 7] = [
            // kube-rs and kubectl: v5 first; the kubelet's translator.
            (
                &["v5.channel.k8s.io", "v4.channel.k8s.io"],
                Some(Protocol::V5),
            ),
            // v5 anywhere wins: the kubelet checks for it before the runtime negotiates.
            (
                &["v4.channel.k8s.io", "v5.channel.k8s.io"],
                Some(Protocol::V5),
            ),
            (&["v4.channel.k8s.io"], Some(Protocol::V4)),
            (&["foo", "v4.channel.k8s.io"], Some(Protocol::V4)),
            // The runtime would pick these first: not simulated, refused.
            (&["channel.k8s.io", "v4.channel.k8s.io"], None),
            (&[], None),
            (&["v6.channel.k8s.io"], None),
        ];
        for (offered, want) in rows {
            assert_eq!(negotiate(offered).ok(), want, "{offered:?}");
        }
    }

    #[test]
    fn admission_rows() {
        // (path, refused with)
        let rows: [(&str, Option<u16>); 6] = [
            (LIST, None),
            (
                "/exec/openshift-etcd/etcd-master-0/etcd?command=etcdctl&output=1",
                None,
            ),
            // Another Node's pod: not on this kubelet.
            (
                "/exec/openshift-etcd/etcd-master-1/etcdctl?command=etcdctl&output=1",
                Some(404),
            ),
            (
                "/exec/default/etcd-master-0/etcdctl?command=etcdctl&output=1",
                Some(404),
            ),
            (
                "/exec/openshift-etcd/etcd-master-0/nope?command=etcdctl&output=1",
                Some(500),
            ),
            (
                "/exec/openshift-etcd/etcd-master-0/etcdctl?command=etcdctl",
                Some(400),
            ),
        ];
        for (path, want) in rows {
            let got = admit(&request(path), "master-0").map(|(s, _)| s.as_u16());
            assert_eq!(got, want, "{path}");
        }
    }

    #[test]
    fn commands_and_their_status_rows() {
        let etcd = EtcdMembers::default();
        etcd.add("master-0", "192.0.2.10");
        let at = |container: &str, command: &str| ExecRequest {
            container: container.into(),
            command: command.split_whitespace().map(String::from).collect(),
            stdout: true,
            stderr: true,
            ..ExecRequest::default()
        };
        // (container, command, exit code)
        let rows = [
            ("etcdctl", "etcdctl member list", 0),
            ("etcd", "etcdctl member list", 0),
            ("etcd-metrics", "etcdctl member list", 0),
            ("etcdctl", "etcdctl member remove 1", 1),
            // The operator's image has no etcdctl.
            ("etcd-readyz", "etcdctl member list", 255),
            ("etcdctl", "sh -c true", 255),
        ];
        for (container, command, code) in rows {
            let req = at(container, command);
            let result = run(&req, &etcd);
            assert_eq!(result.exit_code, code, "{container}: {command}: {result:?}");
            for protocol in [Protocol::V4, Protocol::V5] {
                let status: serde_json::Value =
                    serde_json::from_str(&status_json(protocol, &req, &result)).unwrap();
                assert_eq!(
                    status["status"],
                    if code == 0 { "Success" } else { "Failure" }
                );
                assert_eq!(status.get("metadata").is_some(), protocol == Protocol::V5);
                if code != 0 {
                    assert_eq!(status["reason"], "NonZeroExitCode");
                    assert_eq!(status["details"]["causes"][0]["reason"], "ExitCode");
                    assert_eq!(status["details"]["causes"][0]["message"], code.to_string());
                }
            }
        }
    }

    #[test]
    fn messages_open_on_the_first_requested_channel_and_end_with_the_status() {
        let result = ExecResult {
            exit_code: 0,
            stdout: "out".into(),
            stderr: "err".into(),
        };
        let mut req = request(LIST);
        let channels = |req: &ExecRequest| {
            messages(Protocol::V5, req, &result)
                .iter()
                .map(|m| (m[0], String::from_utf8_lossy(&m[1..]).into_owned()))
                .collect::<Vec<_>>()
        };
        let status = r#"{"metadata":{},"status":"Success"}"#.to_string();
        assert_eq!(
            channels(&req),
            vec![
                (1, String::new()),
                (1, "out".into()),
                (2, "err".into()),
                (3, status.clone())
            ]
        );
        req.stdout = false;
        assert_eq!(
            channels(&req),
            vec![(2, String::new()), (2, "err".into()), (3, status.clone())]
        );
        req.stderr = false;
        req.stdin = true;
        assert_eq!(channels(&req), vec![(3, String::new()), (3, status)]);
    }

    #[test]
    fn connect_targets_parse() {
        assert_eq!(
            connect_target("CONNECT 192.0.2.10:10250 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
            Some("192.0.2.10:10250".parse().unwrap())
        );
        assert_eq!(
            connect_target("CONNECT [2001:db8::1]:10250 HTTP/1.1\r\n\r\n"),
            Some("[2001:db8::1]:10250".parse().unwrap())
        );
        assert_eq!(connect_target("GET / HTTP/1.1\r\n\r\n"), None);
        assert_eq!(
            connect_target("CONNECT master-0:10250 HTTP/1.1\r\n\r\n"),
            None
        );
        assert_eq!(
            kubelet_address("192.0.2.10/24"),
            Some("192.0.2.10:10250".parse().unwrap())
        );
    }

    /// A CONNECT through the proxy, as the apiserver's egress dialer sends it; the proxy's
    /// whole answer head and the stream after it.
    async fn connect(network: &Network, target: &str) -> (String, UnixStream) {
        let mut conn = UnixStream::connect(&network.socket).await.unwrap();
        conn.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut b = [0u8; 1];
            if conn.read(&mut b).await.unwrap() == 0 {
                break;
            }
            head.push(b[0]);
        }
        (String::from_utf8(head).unwrap(), conn)
    }

    #[tokio::test]
    async fn the_network_tunnels_routed_addresses_and_refuses_the_rest() {
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_addr = echo.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    tokio::io::copy(&mut r, &mut w).await.ok();
                });
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let network = Network::start(&dir.path().join("net.sock")).unwrap();
        let node: SocketAddr = "192.0.2.10:10250".parse().unwrap();
        network.route(node, echo_addr);

        let (head, mut conn) = connect(&network, "192.0.2.10:10250").await;
        assert_eq!(head, "HTTP/1.1 200 Connection established\r\n\r\n");
        conn.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        conn.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");

        let (head, mut refused) = connect(&network, "192.0.2.11:10250").await;
        assert!(head.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{head}");
        let mut rest = Vec::new();
        refused.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "closed after the 502");

        network.unroute(node);
        let (head, _) = connect(&network, "192.0.2.10:10250").await;
        assert!(head.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{head}");
        // The tunnel opened before stays up.
        conn.write_all(b"pong").await.unwrap();
        conn.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
    }
}

//! The site's network between the workload kube-apiserver and its Nodes, and the part of a
//! kubelet's HTTPS API that a pod exec reaches.
//!
//! [`Network`] is an HTTP CONNECT proxy on a Unix socket, the workload apiserver's `cluster`
//! egress (see `testbed::TestbedBuilder::kubelet_network`): it dials `<node IP>:10250` to a
//! simulated kubelet listening on loopback, and refuses a host that is down (no route).
//!
//! [`KubeletServer`] serves `/exec/{namespace}/{pod}/{container}` over TLS (a serving
//! certificate of the workload CA for the Node's IP, the apiserver's kubelet client certificate
//! required) as a real kubelet does for WebSocket clients: Kubernetes 1.36's apiserver proxies a
//! WebSocket exec straight to a kubelet whose Node declares `ExtendWebSocketsToKubelet`. Like
//! the kubelet's streaming server it speaks `v4.channel.k8s.io` (channel-prefixed binary
//! messages; an empty message on stdout once open; the exit status as a `metav1.Status` on
//! channel 3). Only `etcdctl` in an etcd pod's `etcdctl` container runs, against
//! [`EtcdMembers`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use futures::SinkExt;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

use crate::etcd_operator::{EtcdMembers, ExecResult};

/// The port a kubelet serves on (what its Node's `daemonEndpoints` say).
pub const KUBELET_PORT: u16 = 10250;
const V4_PROTOCOL: &str = "v4.channel.k8s.io";

/// What the kubelet of a 1.36 Node reports besides its conditions: its API's port and that it
/// takes WebSocket streams itself.
pub fn kubelet_status_fields() -> serde_json::Value {
    json!({
        "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
        "declaredFeatures": ["ExtendWebSocketsToKubelet"],
    })
}

/// The CONNECT proxy; see the module docs.
pub struct Network {
    pub socket: PathBuf,
    routes: Arc<Mutex<HashMap<String, SocketAddr>>>,
    task: JoinHandle<()>,
}

impl Drop for Network {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Network {
    pub fn start(socket: &Path) -> Result<Network> {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)
            .with_context(|| format!("listening on {}", socket.display()))?;
        let routes: Arc<Mutex<HashMap<String, SocketAddr>>> = Arc::default();
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

    /// Connections to `from` (`ip:port`) reach `to`.
    pub fn route(&self, from: &str, to: SocketAddr) {
        if let Ok(mut r) = self.routes.lock() {
            r.insert(from.to_string(), to);
        }
    }

    /// `from` is down: connections to it are refused.
    pub fn unroute(&self, from: &str) {
        if let Ok(mut r) = self.routes.lock() {
            r.remove(from);
        }
    }
}

/// One CONNECT: the request head read byte by byte (nothing of the tunnel is read ahead), then
/// `200` and the bytes copied both ways, or `502` for a host that is not there.
async fn tunnel(mut conn: UnixStream, routes: &Mutex<HashMap<String, SocketAddr>>) -> Result<()> {
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
    let text = String::from_utf8_lossy(&head);
    let target = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("CONNECT "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    let to = routes.lock().ok().and_then(|r| r.get(&target).copied());
    let upstream = match to {
        Some(addr) => TcpStream::connect(addr).await.ok(),
        None => None,
    };
    let Some(mut upstream) = upstream else {
        conn.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            .await?;
        anyhow::bail!("{target}: no route to host");
    };
    conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await?;
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

/// A simulated kubelet's exec endpoint; see the module docs.
pub struct KubeletServer {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for KubeletServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KubeletServer {
    /// Serves on a free loopback port with `cert_pem`/`key_pem`, requiring client certificates
    /// signed by `ca_pem`.
    pub async fn start(
        cert_pem: &str,
        key_pem: &str,
        ca_pem: &str,
        etcd: EtcdMembers,
    ) -> Result<KubeletServer> {
        let acceptor = tls_acceptor(cert_pem, key_pem, ca_pem)?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let etcd = etcd.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve_one(acceptor, tcp, etcd).await {
                        tracing::debug!("simulated kubelet: {e:#}");
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

/// The exec a request path names.
#[derive(Debug, Default, PartialEq, Eq)]
struct ExecRequest {
    namespace: String,
    pod: String,
    container: String,
    command: Vec<String>,
}

fn parse_exec(path_and_query: &str) -> Option<ExecRequest> {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let ["exec", namespace, pod, container] = parts.as_slice() else {
        return None;
    };
    let command = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| *k == "command")
        .map(|(_, v)| percent_decode(v))
        .collect();
    Some(ExecRequest {
        namespace: namespace.to_string(),
        pod: pod.to_string(),
        container: container.to_string(),
        command,
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

/// What the kubelet runs for an exec: `etcdctl` in an etcd pod's `etcdctl` container.
fn run(req: &ExecRequest, etcd: &EtcdMembers) -> ExecResult {
    let in_etcdctl = req.namespace == crate::etcd_operator::NAMESPACE
        && req.pod.starts_with("etcd-")
        && req.container == "etcdctl";
    match req.command.split_first() {
        Some((cmd, args)) if in_etcdctl && cmd == "etcdctl" => etcd.run_etcdctl(args),
        Some((cmd, _)) => ExecResult {
            exit_code: 127,
            stdout: String::new(),
            stderr: format!("exec: \"{cmd}\": executable file not found in $PATH\n"),
        },
        None => ExecResult {
            exit_code: 1,
            stdout: String::new(),
            stderr: "you must specify at least one command for the container\n".into(),
        },
    }
}

/// The exit status as the kubelet writes it on the error channel (v4).
fn status_json(req: &ExecRequest, result: &ExecResult) -> String {
    if result.exit_code == 0 {
        return json!({"metadata": {}, "status": "Success"}).to_string();
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command {:?}, exit code {}",
            req.command, result.exit_code
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": result.exit_code.to_string()}]},
    })
    .to_string()
}

async fn serve_one(
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: TcpStream,
    etcd: EtcdMembers,
) -> Result<()> {
    let tls = acceptor.accept(tcp).await.context("TLS")?;
    let mut asked = String::new();
    // The signature is tungstenite's handshake callback.
    #[allow(clippy::result_large_err)]
    let callback = |request: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
        asked = request
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let offers_v4 = request
            .headers()
            .get_all("sec-websocket-protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|p| p.trim() == V4_PROTOCOL);
        if !offers_v4 {
            let mut refused =
                ErrorResponse::new(Some(format!("this kubelet streams {V4_PROTOCOL} only")));
            *refused.status_mut() = http::StatusCode::BAD_REQUEST;
            return Err(refused);
        }
        response.headers_mut().insert(
            "sec-websocket-protocol",
            http::HeaderValue::from_static(V4_PROTOCOL),
        );
        Ok(response)
    };
    let mut ws = tokio_tungstenite::accept_hdr_async(tls, callback)
        .await
        .context("WebSocket handshake")?;
    let req = parse_exec(&asked).with_context(|| format!("not an exec: {asked}"))?;
    let result = run(&req, &etcd);
    let frame = |channel: u8, data: &[u8]| {
        let mut m = vec![channel];
        m.extend_from_slice(data);
        Message::Binary(m.into())
    };
    // The kubelet's "connection established": an empty message on the first output channel.
    ws.send(frame(1, b"")).await?;
    if !result.stdout.is_empty() {
        ws.send(frame(1, result.stdout.as_bytes())).await?;
    }
    if !result.stderr.is_empty() {
        ws.send(frame(2, result.stderr.as_bytes())).await?;
    }
    ws.send(frame(3, status_json(&req, &result).as_bytes()))
        .await?;
    ws.close(None).await.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_paths_parse_as_the_apiserver_sends_them() {
        let r = parse_exec(
            "/exec/openshift-etcd/etcd-master-0/etcdctl?command=etcdctl&command=member&command=list&command=-w&command=json&error=1&output=1",
        )
        .unwrap();
        assert_eq!(
            r,
            ExecRequest {
                namespace: "openshift-etcd".into(),
                pod: "etcd-master-0".into(),
                container: "etcdctl".into(),
                command: ["etcdctl", "member", "list", "-w", "json"]
                    .map(String::from)
                    .to_vec(),
            }
        );
        assert_eq!(
            parse_exec("/exec/ns/p/c?command=a%20b&command=--x%3Dy")
                .unwrap()
                .command,
            vec!["a b".to_string(), "--x=y".into()]
        );
        assert_eq!(parse_exec("/logs/ns/p"), None);
    }

    #[test]
    fn only_etcdctl_runs_and_failures_carry_the_exit_code() {
        let etcd = EtcdMembers::default();
        etcd.add("m0", "10.0.0.1");
        let mut req = parse_exec(
            "/exec/openshift-etcd/etcd-m0/etcdctl?command=etcdctl&command=member&command=list",
        )
        .unwrap();
        let ok = run(&req, &etcd);
        assert_eq!(ok.exit_code, 0);
        assert_eq!(
            status_json(&req, &ok),
            r#"{"metadata":{},"status":"Success"}"#
        );
        req.container = "etcd".into();
        let missing = run(&req, &etcd);
        assert_eq!(missing.exit_code, 127);
        let status: serde_json::Value = serde_json::from_str(&status_json(&req, &missing)).unwrap();
        assert_eq!(status["reason"], "NonZeroExitCode");
        assert_eq!(status["details"]["causes"][0]["message"], "127");
    }
}

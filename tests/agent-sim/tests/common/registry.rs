//! The test bed's real OCI registry (`crane registry serve`, built by
//! tests/openshift-install/payload.sh) for the tests that read images from one: included with
//! `#[path]` by the tests that need it.
#![allow(dead_code)]

use std::path::PathBuf;

/// `${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/<dir>`.
pub fn cache(dir: &str) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    base.join("capoa-rs").join(dir)
}

/// The real OCI registry of the test bed (`crane registry serve`, built by
/// tests/openshift-install/payload.sh), on a loopback port, in memory; gone when dropped.
pub struct Registry {
    child: std::process::Child,
    pub host: String,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn crane() -> PathBuf {
    let bin = cache("crane-v0.22.1/bin/crane");
    assert!(
        bin.exists(),
        "crane is not built: run `bash tests/openshift-install/payload.sh` (make test does)"
    );
    bin
}

pub fn start_registry() -> Registry {
    use std::io::BufRead;
    let mut child = std::process::Command::new(crane())
        .args(["registry", "serve", "--address", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start crane registry serve");
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("crane registry serve exited")
            .expect("read crane's log");
        if let Some(port) = line.split("serving on port ").nth(1) {
            break port.trim().to_string();
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Registry {
        child,
        host: format!("127.0.0.1:{port}"),
    }
}

/// Runs crane, giving back its stdout (a pushed image's pull spec by digest).
pub fn crane_run(args: &[&str]) -> String {
    let out = std::process::Command::new(crane())
        .args(args)
        .output()
        .expect("run crane");
    assert!(
        out.status.success(),
        "crane {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Pushes a one-layer image (a small file) as `reference`; gives back its pull spec by digest.
pub fn push_small_image(reference: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("release-metadata"), "{}").unwrap();
    let layer = dir.path().join("layer.tar");
    let status = std::process::Command::new("tar")
        .arg("-C")
        .arg(dir.path())
        .arg("-cf")
        .arg(&layer)
        .arg("release-metadata")
        .status()
        .expect("run tar");
    assert!(status.success());
    crane_run(&[
        "append",
        "--oci-empty-base",
        "-f",
        layer.to_str().unwrap(),
        "-t",
        reference,
    ]);
    crane_run(&["digest", "--full-ref", reference])
}

/// A TLS and Basic-auth front of a [`Registry`], as a site's mirror registry is: https on
/// 127.0.0.2 (a loopback address clients reach over https, unlike 127.0.0.1) with a serving
/// certificate of a CA of its own, every request without the right `user:password` answered
/// `401` with a Basic challenge, the rest passed to the registry as they are. Gone when
/// dropped.
pub struct Gate {
    pub host: String,
    /// The CA its certificate chains to (a mirror ConfigMap's `ca-bundle.crt`).
    pub ca_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn start_gate(registry: &Registry, user: &str, password: &str) -> Gate {
    use base64::Engine;
    use http_body_util::BodyExt;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let ca = testbed::certs::Ca::new("mirror registry CA").expect("CA");
    let pair = ca
        .serving_for("mirror registry", &["127.0.0.2"])
        .expect("serving certificate");
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pair.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .expect("certificate PEM");
    let key = PrivateKeyDer::from_pem_slice(pair.key_pem.as_bytes()).expect("key PEM");
    let tls = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("TLS config");
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0")
        .await
        .expect("bind 127.0.0.2");
    let host = format!("127.0.0.2:{}", listener.local_addr().unwrap().port());
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    );
    let upstream = registry.host.clone();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<hyper::body::Incoming>();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, expected, upstream, client) = (
                acceptor.clone(),
                expected.clone(),
                upstream.clone(),
                client.clone(),
            );
            tokio::spawn(async move {
                // A client that does not trust the CA ends the handshake: nothing to serve.
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let (expected, upstream, client) =
                            (expected.clone(), upstream.clone(), client.clone());
                        async move {
                            type Body =
                                http_body_util::combinators::BoxBody<bytes::Bytes, hyper::Error>;
                            let authorized = req
                                .headers()
                                .get(http::header::AUTHORIZATION)
                                .is_some_and(|v| v.as_bytes() == expected.as_bytes());
                            if !authorized {
                                let denied: Body = http_body_util::Empty::new()
                                    .map_err(|never| match never {})
                                    .boxed();
                                return Ok::<_, hyper::Error>(
                                    hyper::Response::builder()
                                        .status(401)
                                        .header("WWW-Authenticate", "Basic realm=\"mirror\"")
                                        .body(denied)
                                        .unwrap(),
                                );
                            }
                            let (mut parts, body) = req.into_parts();
                            let path = parts
                                .uri
                                .path_and_query()
                                .map_or("/", |p| p.as_str())
                                .to_string();
                            parts.uri = format!("http://{upstream}{path}").parse().unwrap();
                            parts.headers.remove(http::header::HOST);
                            parts.headers.remove(http::header::AUTHORIZATION);
                            match client
                                .request(hyper::Request::from_parts(parts, body))
                                .await
                            {
                                Ok(resp) => Ok(resp.map(|b| b.boxed())),
                                Err(e) => {
                                    let failed: Body = http_body_util::Full::new(
                                        bytes::Bytes::from(e.to_string()),
                                    )
                                    .map_err(|never| match never {})
                                    .boxed();
                                    Ok(hyper::Response::builder().status(502).body(failed).unwrap())
                                }
                            }
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Gate {
        host,
        ca_pem: ca.cert_pem.clone(),
        task,
    }
}

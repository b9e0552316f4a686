//! The test bed's real OCI registry (`crane registry serve` from go-containerregistry, built by
//! `tests/openshift-install/crane.sh`) and a TLS + Basic-auth front for it, as a site's mirror
//! registry usually is. Used by the real-installer tests and by the lab's disconnected run.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};

/// The crane release `tests/openshift-install/crane.sh` builds.
pub const CRANE_VERSION: &str = "v0.22.1";

/// `${XDG_CACHE_HOME:-$HOME/.cache}/capoa-rs/<dir>`.
pub fn cache(dir: &str) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache")
        });
    base.join("capoa-rs").join(dir)
}

/// The crane binary, or an error saying how to build it.
pub fn crane() -> Result<PathBuf> {
    let bin = cache(&format!("crane-{CRANE_VERSION}/bin/crane"));
    if !bin.exists() {
        bail!(
            "crane is not built ({}): run `bash tests/openshift-install/crane.sh` (make test and make lab do)",
            bin.display()
        );
    }
    Ok(bin)
}

/// The real OCI registry, on a loopback port, in memory; gone when dropped.
pub struct Registry {
    child: std::process::Child,
    /// `127.0.0.1:<port>`, plain http.
    pub host: String,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Registry {
    /// Starts `crane registry serve` on a free loopback port.
    pub fn start() -> Result<Registry> {
        use std::io::BufRead;
        let mut child = std::process::Command::new(crane()?)
            .args(["registry", "serve", "--address", "127.0.0.1:0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .context("starting crane registry serve")?;
        let stderr = child.stderr.take().context("crane's log")?;
        let mut lines = std::io::BufReader::new(stderr).lines();
        let port = loop {
            let line = lines
                .next()
                .ok_or_else(|| anyhow!("crane registry serve exited before serving"))?
                .context("reading crane's log")?;
            if let Some(port) = line.split("serving on port ").nth(1) {
                break port.trim().to_string();
            }
        };
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Registry {
            child,
            host: format!("127.0.0.1:{port}"),
        })
    }
}

/// Runs crane, giving back its stdout, trimmed.
pub fn crane_run(args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(crane()?)
        .args(args)
        .output()
        .context("running crane")?;
    if !out.status.success() {
        bail!(
            "crane {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Pushes a one-layer image as `reference` (a plain-http registry: `127.0.0.1:<port>/...`)
/// whose one file is `name` with `contents`; gives back its pull spec by digest.
pub fn push_file_image(reference: &str, name: &str, contents: &[u8]) -> Result<String> {
    let dir = tempfile::tempdir().context("a temporary directory")?;
    std::fs::write(dir.path().join(name), contents).context("writing the image's file")?;
    let layer = dir.path().join("layer.tar");
    let status = std::process::Command::new("tar")
        .arg("-C")
        .arg(dir.path())
        .arg("-cf")
        .arg(&layer)
        .arg(name)
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("tar of {name} failed: {status}");
    }
    let layer = layer.to_str().context("a UTF-8 temporary path")?;
    crane_run(&["append", "--oci-empty-base", "-f", layer, "-t", reference])?;
    crane_run(&["digest", "--full-ref", reference])
}

/// Pushes a one-layer image (a small file) as `reference`; gives back its pull spec by digest.
pub fn push_small_image(reference: &str) -> Result<String> {
    push_file_image(reference, "release-metadata", b"{}")
}

/// One request the [`Gate`] passed on or refused: method, path (with the query) and status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub method: String,
    pub path: String,
    pub status: u16,
}

impl Served {
    /// The repository and reference of a manifest request (`/v2/<repo>/manifests/<ref>`).
    pub fn manifest(&self) -> Option<(&str, &str)> {
        let rest = self.path.strip_prefix("/v2/")?;
        let rest = rest.split('?').next().unwrap_or(rest);
        let (repo, reference) = rest.rsplit_once("/manifests/")?;
        Some((repo, reference))
    }
}

/// A TLS and Basic-auth front of a [`Registry`], as a site's mirror registry is: https on
/// 127.0.0.2 (a loopback address clients reach over https, unlike 127.0.0.1) with a serving
/// certificate of a CA of its own, every request without the right `user:password` answered
/// `401` with a Basic challenge, the rest passed to the registry as they are. Each request is
/// kept in [`Gate::served`]. Gone when dropped.
pub struct Gate {
    /// `127.0.0.2:<port>`.
    pub host: String,
    /// The CA its certificate chains to (a mirror ConfigMap's `ca-bundle.crt`).
    pub ca_pem: String,
    served: Arc<Mutex<Vec<Served>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Body = http_body_util::combinators::BoxBody<bytes::Bytes, hyper::Error>;

fn body(text: String) -> Body {
    use http_body_util::BodyExt;
    http_body_util::Full::new(bytes::Bytes::from(text))
        .map_err(|never| match never {})
        .boxed()
}

impl Gate {
    /// What it served so far, in order.
    pub fn served(&self) -> Vec<Served> {
        self.served.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Starts the front of `registry` on 127.0.0.2, letting in `user:password` only.
    pub async fn start(registry: &Registry, user: &str, password: &str) -> Result<Gate> {
        Gate::start_on("127.0.0.2", registry, user, password).await
    }

    /// [`Gate::start`] on `ip` (not 127.0.0.1, which clients speak plain http to), its
    /// certificate naming it.
    pub async fn start_on(
        ip: &str,
        registry: &Registry,
        user: &str,
        password: &str,
    ) -> Result<Gate> {
        use base64::Engine;
        use http_body_util::BodyExt;
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};

        let ca = crate::certs::Ca::new("mirror registry CA")?;
        let pair = ca.serving_for("mirror registry", &[ip])?;
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(pair.cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow!("the mirror's certificate: {e}"))?;
        let key = PrivateKeyDer::from_pem_slice(pair.key_pem.as_bytes())
            .map_err(|e| anyhow!("the mirror's key: {e}"))?;
        let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind((ip, 0))
            .await
            .with_context(|| format!("binding {ip}"))?;
        let host = format!("{ip}:{}", listener.local_addr()?.port());
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        let upstream = registry.host.clone();
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<hyper::body::Incoming>();
        let served: Arc<Mutex<Vec<Served>>> = Arc::default();
        let log = served.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, expected, upstream, client, log) = (
                    acceptor.clone(),
                    expected.clone(),
                    upstream.clone(),
                    client.clone(),
                    log.clone(),
                );
                tokio::spawn(async move {
                    // A client that does not trust the CA ends the handshake: nothing to serve.
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let (expected, upstream, client, log) = (
                                expected.clone(),
                                upstream.clone(),
                                client.clone(),
                                log.clone(),
                            );
                            async move {
                                let method = req.method().to_string();
                                let path = req
                                    .uri()
                                    .path_and_query()
                                    .map_or("/", |p| p.as_str())
                                    .to_string();
                                let keep = |status: u16| {
                                    if let Ok(mut l) = log.lock() {
                                        l.push(Served {
                                            method: method.clone(),
                                            path: path.clone(),
                                            status,
                                        });
                                    }
                                };
                                let authorized = req
                                    .headers()
                                    .get(http::header::AUTHORIZATION)
                                    .is_some_and(|v| v.as_bytes() == expected.as_bytes());
                                if !authorized {
                                    keep(401);
                                    return hyper::Response::builder()
                                        .status(401)
                                        .header("WWW-Authenticate", "Basic realm=\"mirror\"")
                                        .body(body(String::new()));
                                }
                                let (mut parts, incoming) = req.into_parts();
                                let uri = format!("http://{upstream}{path}");
                                parts.uri = match uri.parse() {
                                    Ok(u) => u,
                                    Err(e) => {
                                        keep(400);
                                        return hyper::Response::builder()
                                            .status(400)
                                            .body(body(e.to_string()));
                                    }
                                };
                                parts.headers.remove(http::header::HOST);
                                parts.headers.remove(http::header::AUTHORIZATION);
                                match client
                                    .request(hyper::Request::from_parts(parts, incoming))
                                    .await
                                {
                                    Ok(resp) => {
                                        keep(resp.status().as_u16());
                                        Ok(resp.map(|b| b.boxed()))
                                    }
                                    Err(e) => {
                                        keep(502);
                                        hyper::Response::builder()
                                            .status(502)
                                            .body(body(e.to_string()))
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
        Ok(Gate {
            host,
            ca_pem: ca.cert_pem.clone(),
            served,
            task,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_request_names_its_repository_and_reference() {
        let s = |path: &str| Served {
            method: "GET".into(),
            path: path.into(),
            status: 200,
        };
        assert_eq!(
            s("/v2/ocp4/openshift4/manifests/sha256:ab").manifest(),
            Some(("ocp4/openshift4", "sha256:ab"))
        );
        assert_eq!(
            s("/v2/a/manifests/4.17.3-x86_64?x=1").manifest(),
            Some(("a", "4.17.3-x86_64"))
        );
        assert_eq!(s("/v2/a/blobs/sha256:ab").manifest(), None);
        assert_eq!(s("/v2/").manifest(), None);
    }
}

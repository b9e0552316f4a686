//! The one HTTP helper: HTTP/1.1, or HTTPS verified against the CA a caller was given (as the
//! real agent's `--cacert`), through hyper-util's pooled client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;

/// The agent API base path under the server URL.
pub const API_BASE: &str = "/api/assisted-install/v2";
/// Header carrying the agent token.
pub const AUTH_HEADER: &str = "X-Secret-Key";
/// No single call may hang a test for longer than this.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("bad request {method} {url}: {reason}")]
    BadRequest {
        method: Method,
        url: String,
        reason: String,
    },
    /// Connection refused/reset, DNS, ...: the server is (maybe temporarily) unreachable.
    #[error("{method} {url}: {reason}")]
    Transport {
        method: Method,
        url: String,
        reason: String,
    },
    #[error("{method} {url}: no answer within {CALL_TIMEOUT:?}")]
    Timeout { method: Method, url: String },
}

/// The certificates a caller trusts over https: the CA bundle (PEM) it was given — a host's
/// from its discovery ignition, a BMC's or the lab's from the site's operator — or none, and
/// then no https server at all (the lab never reaches beyond this machine, so there is no
/// system trust store to fall back on).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Trust(Option<Arc<str>>);

impl Trust {
    /// Trusts nothing: plain http only.
    pub fn none() -> Trust {
        Trust(None)
    }

    /// Trusts the certificates `ca_pem` holds.
    pub fn ca(ca_pem: impl Into<Arc<str>>) -> Trust {
        Trust(Some(ca_pem.into()))
    }
}

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One pooled client per trust (a lab has one or two).
fn client(trust: &Trust) -> Result<HttpClient, String> {
    static CLIENTS: OnceLock<Mutex<HashMap<Trust, HttpClient>>> = OnceLock::new();
    let mut clients = CLIENTS
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| "HTTP client cache poisoned".to_string())?;
    if let Some(c) = clients.get(trust) {
        return Ok(c.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = &trust.0 {
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let cert = cert.map_err(|e| format!("the trusted CA bundle: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("the trusted CA bundle: {e}"))?;
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    let c = Client::builder(TokioExecutor::new()).build(connector);
    clients.insert(trust.clone(), c.clone());
    Ok(c)
}

/// Sends one request and returns the status and the whole body. `body` is sent as JSON; an
/// empty `token` sends no auth header (auth type "none"); https servers are verified with
/// `trust`.
pub async fn call(
    trust: &Trust,
    method: Method,
    url: &str,
    token: &str,
    body: Option<&Value>,
) -> Result<(StatusCode, Bytes), CallError> {
    let bad = |reason: String| CallError::BadRequest {
        method: method.clone(),
        url: url.to_string(),
        reason,
    };
    let mut req = Request::builder()
        .method(method.clone())
        .uri(url)
        .header(header::ACCEPT, "application/json");
    if !token.is_empty() {
        req = req.header(AUTH_HEADER, token);
    }
    let payload = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Bytes::from(serde_json::to_vec(v).map_err(|e| bad(e.to_string()))?)
        }
        None => Bytes::new(),
    };
    let req = req
        .body(Full::new(payload))
        .map_err(|e| bad(e.to_string()))?;
    let transport = |reason: String| CallError::Transport {
        method: method.clone(),
        url: url.to_string(),
        reason,
    };
    let client = client(trust).map_err(&bad)?;
    let exchange = async {
        let resp = client
            .request(req)
            .await
            .map_err(|e| transport(format!("{e:?}")))?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| transport(e.to_string()))?
            .to_bytes();
        Ok((status, bytes))
    };
    match tokio::time::timeout(CALL_TIMEOUT, exchange).await {
        Ok(r) => r,
        Err(_) => Err(CallError::Timeout {
            method,
            url: url.to_string(),
        }),
    }
}

/// `<base_url>/api/assisted-install/v2<path>`, tolerating a trailing slash on the base.
pub fn api_url(base_url: &str, path: &str) -> String {
    format!("{}{API_BASE}{path}", base_url.trim_end_matches('/'))
}

/// A short, printable excerpt of a response body for error messages.
pub fn body_excerpt(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out: String = s.chars().take(300).collect();
    if s.chars().count() > 300 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            api_url("http://127.0.0.1:8090/", "/clusters/c1"),
            "http://127.0.0.1:8090/api/assisted-install/v2/clusters/c1"
        );
        assert_eq!(
            api_url("http://h", "/infra-envs/i/hosts"),
            "http://h/api/assisted-install/v2/infra-envs/i/hosts"
        );
    }

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(body_excerpt(b"short"), "short");
        let long = vec![b'x'; 1000];
        assert_eq!(body_excerpt(&long).chars().count(), 301);
    }

    /// A CA, and a server certificate it signed for 127.0.0.1 in `dir` (`tls.crt`, `tls.key`).
    fn issue(dir: &std::path::Path) -> String {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
        ca.pem()
    }

    #[tokio::test]
    async fn https_is_verified_with_the_ca_given_and_refused_without_it() {
        let dir = tempfile::tempdir().unwrap();
        let ca = issue(dir.path());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/x", listener.local_addr().unwrap());
        let acceptor = manager::webhook::tls_acceptor(std::sync::Arc::new(
            manager::webhook::CertificateFiles::new(dir.path()),
        ))
        .unwrap();
        let router = axum::Router::new().route("/x", axum::routing::get(|| async { "ok" }));
        let (stop, shutdown) = tokio::sync::watch::channel(false);
        let server = tokio::spawn(manager::http::serve(
            listener,
            router,
            Some(acceptor),
            Duration::from_secs(5),
            shutdown,
        ));

        let (status, body) = call(&Trust::ca(ca), Method::GET, &url, "", None)
            .await
            .unwrap();
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"ok"[..]));
        // Without the CA (an ignition that lacks it), the agent cannot reach the service.
        let err = call(&Trust::none(), Method::GET, &url, "", None)
            .await
            .unwrap_err();
        assert!(
            matches!(err, CallError::Transport { .. }) && format!("{err}").contains("Unknown"),
            "{err}"
        );
        // Another CA is no better.
        let other = issue(tempfile::tempdir().unwrap().path());
        assert!(
            call(&Trust::ca(other), Method::GET, &url, "", None)
                .await
                .is_err()
        );
        stop.send(true).unwrap();
        server.await.unwrap();
    }

    #[tokio::test]
    async fn refused_connection_is_a_transport_error() {
        // Bind then drop a listener so the port is very likely closed.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("http://127.0.0.1:{port}/x");
        let none = Trust::none();
        let err = call(&none, Method::GET, &url, "t", None).await.unwrap_err();
        assert!(matches!(err, CallError::Transport { .. }), "{err}");
        let err = call(&none, Method::GET, "not a url", "t", None)
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::BadRequest { .. }), "{err}");
    }
}

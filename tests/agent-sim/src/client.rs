//! The one HTTP helper: plain HTTP/1.1 on loopback through hyper-util's pooled client.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
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

fn client() -> &'static Client<HttpConnector, Full<Bytes>> {
    static CLIENT: OnceLock<Client<HttpConnector, Full<Bytes>>> = OnceLock::new();
    CLIENT.get_or_init(|| Client::builder(TokioExecutor::new()).build_http())
}

/// Sends one request and returns the status and the whole body. `body` is sent as JSON; an
/// empty `token` sends no auth header (auth type "none").
pub async fn call(
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
    let exchange = async {
        let resp = client()
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

    #[tokio::test]
    async fn refused_connection_is_a_transport_error() {
        // Bind then drop a listener so the port is very likely closed.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("http://127.0.0.1:{port}/x");
        let err = call(Method::GET, &url, "t", None).await.unwrap_err();
        assert!(matches!(err, CallError::Transport { .. }), "{err}");
        let err = call(Method::GET, "not a url", "t", None).await.unwrap_err();
        assert!(matches!(err, CallError::BadRequest { .. }), "{err}");
    }
}

//! Reads an InfraEnv's discovery ignition over HTTP(S), for the raw-image flow, where it becomes
//! the Machine's user data. The URL is the InfraEnv's `status.bootArtifacts.discoveryIgnitionURL`
//! (it carries the infra-env's token), which the embedded core and assisted-service both publish.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// A discovery ignition is a few KiB; anything near this is not one.
const MAX_BYTES: usize = 4 << 20;
const TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("bad discovery ignition URL: {0}")]
    Url(String),
    #[error("cannot reach {host}: {reason}")]
    Connect { host: String, reason: String },
    #[error("{host} answered {status} for the discovery ignition")]
    Status { host: String, status: u16 },
    #[error("the discovery ignition from {host} is not a JSON object")]
    NotIgnition { host: String },
}

/// GETs the discovery ignition; the token is in the URL, so errors name only the host.
pub async fn fetch_discovery_ignition(url: &str) -> Result<String, FetchError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| FetchError::Url(e.to_string()))?;
    let host = uri.authority().map(|a| a.to_string()).unwrap_or_default();
    let connect = |reason: String| FetchError::Connect {
        host: host.clone(),
        reason,
    };
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| connect(format!("loading the system CA certificates: {e}")))?
        .https_or_http()
        .enable_http1()
        .build();
    let client = Client::builder(TokioExecutor::new()).build::<_, Empty<Bytes>>(connector);
    let response = tokio::time::timeout(TIMEOUT, client.get(uri))
        .await
        .map_err(|_| connect("timed out".into()))?
        .map_err(|e| connect(e.to_string()))?;
    if !response.status().is_success() {
        return Err(FetchError::Status {
            host,
            status: response.status().as_u16(),
        });
    }
    let body = tokio::time::timeout(
        TIMEOUT,
        Limited::new(response.into_body(), MAX_BYTES).collect(),
    )
    .await
    .map_err(|_| connect("timed out reading the body".into()))?
    .map_err(|e| connect(e.to_string()))?
    .to_bytes();
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| FetchError::NotIgnition { host: host.clone() })?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Object(_)) => Ok(text),
        _ => Err(FetchError::NotIgnition { host }),
    }
}

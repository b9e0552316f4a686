//! A small client for the OCI distribution API (registry v2): manifests and blobs, with
//! anonymous, Basic and Bearer-token authentication.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ring::digest;
use tokio::io::AsyncWriteExt;

use super::auth::{Challenge, Credentials, parse_www_authenticate};
use super::reference::{ImageRef, check_digest};

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// Everything we can read; registries convert or refuse other formats (schema 1).
const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";

/// How long a registry (or token service) may take to send response headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Bodies can be hundreds of MB, so no total deadline, but a stalled one fails.
const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;
const MAX_TOKEN_BYTES: u64 = 1024 * 1024;
/// Installer image layers are a few hundred MB; anything past this is not a layer we want.
pub const DEFAULT_MAX_BLOB_BYTES: u64 = 4 * 1024 * 1024 * 1024;
const MAX_REDIRECTS: usize = 5;
/// How much of an error body is shown.
const ERROR_EXCERPT: usize = 300;
const USER_AGENT: &str = concat!("assisted-core/", env!("CARGO_PKG_VERSION"));

/// Why a registry request failed. URLs in messages never carry query strings (redirects
/// to object stores put signatures there).
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No HTTP exchange: DNS, TCP, TLS, or the connection dropped mid-body.
    #[error("GET {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("GET {url}: {what} took longer than {secs} s")]
    Timeout {
        url: String,
        what: &'static str,
        secs: u64,
    },
    /// The registry answered with an error status.
    #[error("GET {url}: registry answered {status}{}", excerpt_suffix(.detail))]
    Status {
        url: String,
        status: StatusCode,
        /// The first error code of a distribution-API error body (`MANIFEST_UNKNOWN`, ...).
        code: Option<String>,
        detail: String,
    },
    /// The registry's authentication challenge could not be answered.
    #[error("authenticating to {url}: {reason}")]
    Auth { url: String, reason: String },
    #[error("{url}: content has digest {actual}, expected {expected}")]
    Digest {
        url: String,
        expected: String,
        actual: String,
    },
    #[error("{url}: more than {limit} bytes")]
    TooLarge { url: String, limit: u64 },
    #[error("{url}: {reason}")]
    Redirect { url: String, reason: String },
    /// A manifest, index or config that cannot be used.
    #[error("{reference}: {reason}")]
    Manifest { reference: String, reason: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

fn excerpt_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl RegistryError {
    /// Whether the image is not readable where it was looked for (unreachable registry,
    /// unknown repository or manifest, access denied), so another location may have it.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::Timeout { .. } | Self::Auth { .. } => true,
            Self::Status { status, code, .. } => {
                matches!(status.as_u16(), 401 | 403 | 404)
                    || code.as_deref().is_some_and(|c| {
                        matches!(
                            c,
                            "NAME_UNKNOWN"
                                | "MANIFEST_UNKNOWN"
                                | "BLOB_UNKNOWN"
                                | "UNAUTHORIZED"
                                | "DENIED"
                        )
                    })
            }
            _ => false,
        }
    }

    fn manifest(r: &ImageRef, reason: impl Into<String>) -> Self {
        Self::Manifest {
            reference: r.to_string(),
            reason: reason.into(),
        }
    }
}

/// Why a registry's answer (a manifest list, a token, a redirect) cannot be used: the reason
/// a [`RegistryError`] carries.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("bad manifest list: {0}")]
    ManifestList(serde_json::Error),
    #[error("no {platform} image in the manifest list (it has: {available})")]
    NoPlatform { platform: String, available: String },
    #[error("bad token response: {0}")]
    TokenResponse(serde_json::Error),
    #[error("the token response has no token")]
    NoToken,
    #[error("bad URL: {0}")]
    BadUrl(http::uri::InvalidUri),
    #[error("redirect to a non-HTTP URL {0}")]
    NotHttp(String),
}

/// One layer of an image manifest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Layer {
    pub digest: String,
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    #[serde(default)]
    pub size: u64,
}

/// An image as pulled for one platform.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedImage {
    /// Digest of what the reference names: the index's for a multi-arch image. This is
    /// what `oc adm release info` shows and what pins the image.
    pub digest: String,
    /// Digest of the platform's image manifest (equal to `digest` for a single-arch image).
    pub manifest_digest: String,
    /// The image config (`architecture`, `config.Labels`, ...).
    pub config: serde_json::Value,
    /// Bottom layer first, as in the manifest.
    pub layers: Vec<Layer>,
}

impl ResolvedImage {
    /// The config's `architecture` (`amd64`, `arm64`, ...).
    pub fn architecture(&self) -> Option<&str> {
        self.config.get("architecture")?.as_str()
    }

    /// A label of the image config.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.config
            .get("config")?
            .get("Labels")?
            .get(name)?
            .as_str()
    }
}

/// The OCI platform of this process: the images whose binaries it can run.
pub fn host_platform() -> (&'static str, &'static str) {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        other => other,
    };
    ("linux", arch)
}

/// OCI architecture names for the aliases release tooling uses.
pub fn normalize_arch(arch: &str) -> &str {
    match arch {
        "x86_64" | "x86-64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The token cache key: per repository and per credentials, so that one pull secret's
/// token never serves a request made with another (or with none).
fn auth_key(r: &ImageRef, creds: Option<&Credentials>) -> String {
    let who = creds.map_or_else(
        || "anonymous".to_string(),
        |c| sha256_digest(c.basic_header().as_bytes()),
    );
    format!("{}/{} {who}", r.registry, r.repository)
}

type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// A registry client; clones share one connection pool and token cache.
#[derive(Clone)]
pub struct RegistryClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: HttpClient,
    /// [`auth_key`] → `Authorization` value that worked, for the client's life.
    auth: Mutex<HashMap<String, String>>,
    max_blob_bytes: u64,
}

// Tokens stay out of logs.
impl fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryClient")
            .field("max_blob_bytes", &self.inner.max_blob_bytes)
            .finish_non_exhaustive()
    }
}

impl RegistryClient {
    /// A client trusting the system's CA certificates, with [`DEFAULT_MAX_BLOB_BYTES`].
    pub fn new() -> Result<Self, RegistryError> {
        Self::with_max_blob_bytes(DEFAULT_MAX_BLOB_BYTES)
    }

    /// A client that refuses blobs larger than `max_blob_bytes`.
    pub fn with_max_blob_bytes(max_blob_bytes: u64) -> Result<Self, RegistryError> {
        // https with the system's trust store; plain http only for local registries
        // (the scheme is chosen per registry in `ImageRef::scheme`).
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|source| RegistryError::Io {
                context: "loading the system CA certificates".into(),
                source,
            })?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self::from_connector(connector, max_blob_bytes))
    }

    /// A client trusting the system's CA certificates and the PEM certificates of
    /// `extra_pem` (a mirror registry's `ca-bundle.crt`), with [`DEFAULT_MAX_BLOB_BYTES`].
    pub fn with_extra_roots(extra_pem: &str) -> Result<Self, RegistryError> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let invalid = |what: String| RegistryError::Io {
            context: "reading the mirror registries' CA bundle".into(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, what),
        };
        let mut roots = rustls::RootCertStore::empty();
        // As `with_native_roots`: the certificates that load, whatever else fails to.
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        for cert in CertificateDer::pem_slice_iter(extra_pem.as_bytes()) {
            let cert = cert.map_err(|e| invalid(e.to_string()))?;
            roots.add(cert).map_err(|e| invalid(e.to_string()))?;
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self::from_connector(connector, DEFAULT_MAX_BLOB_BYTES))
    }

    fn from_connector(connector: HttpsConnector<HttpConnector>, max_blob_bytes: u64) -> Self {
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Self {
            inner: Arc::new(Inner {
                http,
                auth: Mutex::default(),
                max_blob_bytes,
            }),
        }
    }

    /// The manifest `r` names: its bytes, media type and digest (`sha256:...`). A
    /// reference pinned by digest is checked against the bytes.
    pub async fn manifest(
        &self,
        r: &ImageRef,
        creds: Option<&Credentials>,
    ) -> Result<(Vec<u8>, String, String), RegistryError> {
        let url = format!("{}/manifests/{}", r.api_base(), r.reference());
        let (shown, resp) = self.get(r, &url, Some(MANIFEST_ACCEPT), creds).await?;
        let resp = expect_ok(&shown, resp).await?;
        let content_type = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim().to_string())
            .unwrap_or_default();
        let bytes = read_capped(&shown, resp, MAX_MANIFEST_BYTES).await?;
        let digest = match &r.digest {
            Some(expected) => {
                verify(&shown, expected, &bytes)?;
                expected.clone()
            }
            None => sha256_digest(&bytes),
        };
        let media_type = manifest_media_type(&content_type, &bytes);
        Ok((bytes, media_type, digest))
    }

    /// Streams blob `digest` of `r`'s repository into `dest`, checking its size and digest.
    /// `dest` is removed on failure.
    pub async fn blob_to_file(
        &self,
        r: &ImageRef,
        digest: &str,
        creds: Option<&Credentials>,
        dest: &Path,
    ) -> Result<(), RegistryError> {
        // Written through an async block so a failure at any step removes `dest`.
        let result: Result<(), RegistryError> = async {
            let url = self.blob_url(r, digest)?;
            let limit = self.inner.max_blob_bytes;
            let (shown, resp) = self.get(r, &url, None, creds).await?;
            let resp = expect_ok(&shown, resp).await?;
            check_length(&shown, &resp, limit)?;
            let context = format!("writing {}", dest.display());
            let file = tokio::fs::File::create(dest)
                .await
                .map_err(io_error(&context))?;
            let mut out = tokio::io::BufWriter::with_capacity(1024 * 1024, file);
            let mut hasher = Hasher::for_digest(digest);
            let mut body = resp.into_body();
            let mut total = 0u64;
            while let Some(chunk) = next_chunk(&shown, &mut body).await? {
                total += chunk.len() as u64;
                if total > limit {
                    return Err(RegistryError::TooLarge { url: shown, limit });
                }
                hasher.update(&chunk);
                out.write_all(&chunk).await.map_err(io_error(&context))?;
            }
            out.flush().await.map_err(io_error(&context))?;
            hasher.check(&shown, digest)
        }
        .await;
        if result.is_err() {
            let _ = tokio::fs::remove_file(dest).await;
        }
        result
    }

    /// A small blob (an image config) in memory, digest-checked.
    pub async fn blob_bytes(
        &self,
        r: &ImageRef,
        digest: &str,
        creds: Option<&Credentials>,
        limit: u64,
    ) -> Result<Vec<u8>, RegistryError> {
        let url = self.blob_url(r, digest)?;
        let (shown, resp) = self.get(r, &url, None, creds).await?;
        let resp = expect_ok(&shown, resp).await?;
        let bytes = read_capped(&shown, resp, limit).await?;
        verify(&shown, digest, &bytes)?;
        Ok(bytes)
    }

    /// The image `r` for `os`/`arch`: an index (manifest list) is followed to that
    /// platform's manifest; a single manifest is taken as it is.
    pub async fn resolve_image(
        &self,
        r: &ImageRef,
        creds: Option<&Credentials>,
        os: &str,
        arch: &str,
    ) -> Result<ResolvedImage, RegistryError> {
        let (bytes, media_type, digest) = self.manifest(r, creds).await?;
        let (bytes, media_type, manifest_digest) = if is_index(&media_type) {
            let child = pick_platform(&bytes, os, arch)
                .map_err(|reason| RegistryError::manifest(r, reason.to_string()))?;
            let child_ref = r.with_digest(&child);
            let (b, mt, d) = self.manifest(&child_ref, creds).await?;
            if is_index(&mt) {
                return Err(RegistryError::manifest(
                    &child_ref,
                    "an index inside an index is not supported",
                ));
            }
            (b, mt, d)
        } else {
            (bytes, media_type, digest.clone())
        };
        if media_type != OCI_MANIFEST && media_type != DOCKER_MANIFEST {
            let shown = r.with_digest(&manifest_digest);
            return Err(RegistryError::manifest(
                &shown,
                format!("manifest type {media_type:?} is not supported"),
            ));
        }
        let manifest: ImageManifest = serde_json::from_slice(&bytes).map_err(|e| {
            RegistryError::manifest(
                &r.with_digest(&manifest_digest),
                format!("bad manifest: {e}"),
            )
        })?;
        let config = self
            .blob_bytes(r, &manifest.config.digest, creds, MAX_CONFIG_BYTES)
            .await?;
        let config = serde_json::from_slice(&config).map_err(|e| {
            RegistryError::manifest(
                r,
                format!("bad image config {}: {e}", manifest.config.digest),
            )
        })?;
        Ok(ResolvedImage {
            digest,
            manifest_digest,
            config,
            layers: manifest.layers,
        })
    }

    fn blob_url(&self, r: &ImageRef, digest: &str) -> Result<String, RegistryError> {
        // Checked so that a digest from a manifest cannot steer the URL.
        check_digest(digest).map_err(|reason| RegistryError::manifest(r, reason.to_string()))?;
        Ok(format!("{}/blobs/{digest}", r.api_base()))
    }

    /// GETs `url` of `r`'s registry: with the cached authorization, answering a 401
    /// challenge once, then following redirects. Returns the final URL (for messages,
    /// without its query) and the response.
    async fn get(
        &self,
        r: &ImageRef,
        url: &str,
        accept: Option<&str>,
        creds: Option<&Credentials>,
    ) -> Result<(String, Response<Incoming>), RegistryError> {
        let key = auth_key(r, creds);
        let cached = self.cached_auth(&key);
        let mut auth = cached;
        let mut resp = self.send(url, accept, auth.as_deref()).await?;
        if resp.status() == StatusCode::UNAUTHORIZED {
            // No or an expired authorization: ask as the challenge says, and retry once.
            let challenges: Vec<Challenge> = resp
                .headers()
                .get_all(header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(parse_www_authenticate)
                .collect();
            let Some(fresh) = self.authorize(url, r, &challenges, creds).await? else {
                return Ok((strip_query(url), resp));
            };
            self.inner
                .auth
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, fresh.clone());
            auth = Some(fresh);
            resp = self.send(url, accept, auth.as_deref()).await?;
        }
        self.follow_redirects(url, resp, accept, auth.as_deref())
            .await
    }

    fn cached_auth(&self, key: &str) -> Option<String> {
        // A poisoned lock only means a panic elsewhere; the map is still consistent.
        let cache = self.inner.auth.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(key).cloned()
    }

    /// Follows up to [`MAX_REDIRECTS`] redirects; the registry's authorization goes only
    /// to the registry itself, never to another host (object stores sign their URLs).
    async fn follow_redirects(
        &self,
        original: &str,
        mut resp: Response<Incoming>,
        accept: Option<&str>,
        auth: Option<&str>,
    ) -> Result<(String, Response<Incoming>), RegistryError> {
        let mut current = original.to_string();
        for _ in 0..MAX_REDIRECTS {
            if !resp.status().is_redirection() || resp.status() == StatusCode::NOT_MODIFIED {
                return Ok((strip_query(&current), resp));
            }
            let location = resp
                .headers()
                .get(header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| RegistryError::Redirect {
                    url: strip_query(&current),
                    reason: format!("{} without a Location", resp.status()),
                })?;
            current =
                resolve_location(&current, location).map_err(|reason| RegistryError::Redirect {
                    url: strip_query(&current),
                    reason: reason.to_string(),
                })?;
            let same_origin = origin(&current) == origin(original);
            resp = self
                .send(&current, accept, auth.filter(|_| same_origin))
                .await?;
        }
        Err(RegistryError::Redirect {
            url: strip_query(original),
            reason: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }

    /// The `Authorization` value answering `challenges`, or None when there is nothing
    /// to try (the 401 then stands).
    async fn authorize(
        &self,
        url: &str,
        r: &ImageRef,
        challenges: &[Challenge],
        creds: Option<&Credentials>,
    ) -> Result<Option<String>, RegistryError> {
        let bearer = challenges.iter().find_map(|c| match c {
            Challenge::Bearer { realm, service, .. } => Some((realm, service)),
            _ => None,
        });
        if let Some((realm, service)) = bearer {
            let token = self
                .fetch_token(realm, service.as_deref(), r, creds)
                .await?;
            return Ok(Some(format!("Bearer {token}")));
        }
        let basic = challenges.is_empty()
            || challenges
                .iter()
                .any(|c| matches!(c, Challenge::Basic { .. }));
        match creds {
            Some(c) if basic => Ok(Some(c.basic_header())),
            Some(_) => Err(RegistryError::Auth {
                url: strip_query(url),
                reason: "the registry asks for an authentication scheme other than Basic \
                         or Bearer"
                    .into(),
            }),
            None => Ok(None),
        }
    }

    /// A pull token for `r`'s repository from the token service at `realm`.
    async fn fetch_token(
        &self,
        realm: &str,
        service: Option<&str>,
        r: &ImageRef,
        creds: Option<&Credentials>,
    ) -> Result<String, RegistryError> {
        if !(realm.starts_with("https://") || realm.starts_with("http://")) {
            return Err(RegistryError::Auth {
                url: realm.to_string(),
                reason: "the token realm is not an http(s) URL".into(),
            });
        }
        let scope = format!("repository:{}:pull", r.repository);
        let mut query = Vec::new();
        if let Some(service) = service {
            query.push(format!("service={}", percent_encode(service)));
        }
        query.push(format!("scope={}", percent_encode(&scope)));
        let sep = if realm.contains('?') { '&' } else { '?' };
        let url = format!("{realm}{sep}{}", query.join("&"));
        let basic = creds.map(Credentials::basic_header);
        let resp = self.send(&url, None, basic.as_deref()).await?;
        let resp = expect_ok(&strip_query(&url), resp).await?;
        let body = read_capped(&strip_query(&url), resp, MAX_TOKEN_BYTES).await?;
        parse_token(&body).map_err(|reason| RegistryError::Auth {
            url: strip_query(&url),
            reason: reason.to_string(),
        })
    }

    /// One GET with the header timeout.
    async fn send(
        &self,
        url: &str,
        accept: Option<&str>,
        auth: Option<&str>,
    ) -> Result<Response<Incoming>, RegistryError> {
        let shown = strip_query(url);
        let mut req = http::Request::get(url).header(header::USER_AGENT, USER_AGENT);
        if let Some(accept) = accept {
            req = req.header(header::ACCEPT, accept);
        }
        if let Some(auth) = auth {
            req = req.header(header::AUTHORIZATION, auth);
        }
        let req = req.body(Empty::new()).map_err(|e| RegistryError::Connect {
            url: shown.clone(),
            reason: format!("bad request URL: {e}"),
        })?;
        match tokio::time::timeout(HEADER_TIMEOUT, self.inner.http.request(req)).await {
            Err(_) => Err(RegistryError::Timeout {
                url: shown,
                what: "the response headers",
                secs: HEADER_TIMEOUT.as_secs(),
            }),
            Ok(Err(e)) => Err(RegistryError::Connect {
                url: shown,
                reason: error_chain(&e),
            }),
            Ok(Ok(resp)) => Ok(resp),
        }
    }
}

#[derive(serde::Deserialize)]
struct ImageManifest {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Layer>,
}

#[derive(serde::Deserialize)]
struct Descriptor {
    digest: String,
}

#[derive(serde::Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<IndexEntry>,
}

#[derive(serde::Deserialize)]
struct IndexEntry {
    digest: String,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(serde::Deserialize)]
struct Platform {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
}

pub fn is_index(media_type: &str) -> bool {
    media_type == OCI_INDEX || media_type == DOCKER_LIST
}

/// The media type of a manifest: the Content-Type when it is a manifest type, else the
/// JSON's `mediaType`, else guessed from its shape (OCI allows omitting both).
fn manifest_media_type(content_type: &str, bytes: &[u8]) -> String {
    const KNOWN: [&str; 4] = [OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST];
    if KNOWN.contains(&content_type) {
        return content_type.to_string();
    }
    let json: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    if let Some(mt) = json.get("mediaType").and_then(|m| m.as_str()) {
        return mt.to_string();
    }
    if json.get("manifests").is_some() {
        OCI_INDEX.to_string()
    } else if json.get("layers").is_some() {
        OCI_MANIFEST.to_string()
    } else {
        content_type.to_string()
    }
}

/// The digest of the index entry for `os`/`arch`, or why there is none.
fn pick_platform(index: &[u8], os: &str, arch: &str) -> Result<String, Unusable> {
    let index: Index = serde_json::from_slice(index).map_err(Unusable::ManifestList)?;
    let arch = normalize_arch(arch);
    let platform_of = |e: &IndexEntry| {
        e.platform
            .as_ref()
            .map(|p| (p.os.clone(), normalize_arch(&p.architecture).to_string()))
    };
    if let Some(hit) = index
        .manifests
        .iter()
        .find(|e| platform_of(e).is_some_and(|(o, a)| o == os && a == arch))
    {
        return Ok(hit.digest.clone());
    }
    let available: Vec<String> = index
        .manifests
        .iter()
        .filter_map(platform_of)
        .map(|(o, a)| format!("{o}/{a}"))
        .collect();
    Err(Unusable::NoPlatform {
        platform: format!("{os}/{arch}"),
        available: if available.is_empty() {
            "none".to_string()
        } else {
            available.join(", ")
        },
    })
}

fn parse_token(body: &[u8]) -> Result<String, Unusable> {
    #[derive(serde::Deserialize)]
    struct TokenResponse {
        token: Option<String>,
        access_token: Option<String>,
    }
    let t: TokenResponse = serde_json::from_slice(body).map_err(Unusable::TokenResponse)?;
    t.token
        .filter(|t| !t.is_empty())
        .or(t.access_token.filter(|t| !t.is_empty()))
        .ok_or(Unusable::NoToken)
}

/// Keeps a 2xx response; turns anything else into [`RegistryError::Status`].
async fn expect_ok(
    url: &str,
    resp: Response<Incoming>,
) -> Result<Response<Incoming>, RegistryError> {
    if resp.status().is_success() {
        return Ok(resp);
    }
    let status = resp.status();
    // Best effort: the status alone is still a useful error.
    let body = read_capped(url, resp, 64 * 1024).await.unwrap_or_default();
    let (code, detail) = error_detail(&body);
    Err(RegistryError::Status {
        url: url.to_string(),
        status,
        code,
        detail,
    })
}

/// `CODE: message` of a distribution-API error body, else its first bytes.
fn error_detail(body: &[u8]) -> (Option<String>, String) {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<ApiError>,
    }
    #[derive(serde::Deserialize)]
    struct ApiError {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    if let Ok(parsed) = serde_json::from_slice::<Errors>(body)
        && !parsed.errors.is_empty()
    {
        let code = Some(parsed.errors[0].code.clone()).filter(|c| !c.is_empty());
        let text = parsed
            .errors
            .iter()
            .map(|e| match (e.code.is_empty(), e.message.is_empty()) {
                (false, false) => format!("{}: {}", e.code, e.message),
                (false, true) => e.code.clone(),
                _ => e.message.clone(),
            })
            .collect::<Vec<_>>()
            .join("; ");
        return (code, truncate(&text));
    }
    let text = String::from_utf8_lossy(&body[..body.len().min(ERROR_EXCERPT * 4)]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (None, truncate(&text))
}

fn truncate(s: &str) -> String {
    match s.char_indices().nth(ERROR_EXCERPT) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

fn check_length(url: &str, resp: &Response<Incoming>, limit: u64) -> Result<(), RegistryError> {
    let length = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match length {
        Some(n) if n > limit => Err(RegistryError::TooLarge {
            url: url.to_string(),
            limit,
        }),
        _ => Ok(()),
    }
}

/// The next data chunk of a body; a body silent for [`BODY_IDLE_TIMEOUT`] fails.
async fn next_chunk(url: &str, body: &mut Incoming) -> Result<Option<Bytes>, RegistryError> {
    loop {
        let frame = match tokio::time::timeout(BODY_IDLE_TIMEOUT, body.frame()).await {
            Err(_) => {
                return Err(RegistryError::Timeout {
                    url: url.to_string(),
                    what: "waiting for more of the body",
                    secs: BODY_IDLE_TIMEOUT.as_secs(),
                });
            }
            Ok(None) => return Ok(None),
            Ok(Some(frame)) => frame.map_err(|e| RegistryError::Connect {
                url: url.to_string(),
                reason: format!("reading the body: {}", error_chain(&e)),
            })?,
        };
        // Trailers carry no data.
        if let Ok(data) = frame.into_data() {
            return Ok(Some(data));
        }
    }
}

async fn read_capped(
    url: &str,
    resp: Response<Incoming>,
    limit: u64,
) -> Result<Vec<u8>, RegistryError> {
    check_length(url, &resp, limit)?;
    let mut body = resp.into_body();
    let mut out = Vec::new();
    while let Some(chunk) = next_chunk(url, &mut body).await? {
        if (out.len() + chunk.len()) as u64 > limit {
            return Err(RegistryError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Incremental digest for the algorithm `expected` names.
struct Hasher(digest::Context);

impl Hasher {
    fn for_digest(expected: &str) -> Self {
        let algorithm = if expected.starts_with("sha512:") {
            &digest::SHA512
        } else {
            &digest::SHA256
        };
        Self(digest::Context::new(algorithm))
    }

    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn check(self, url: &str, expected: &str) -> Result<(), RegistryError> {
        let algorithm = expected.split(':').next().unwrap_or("sha256");
        let actual = format!("{algorithm}:{}", hex(self.0.finish().as_ref()));
        if actual == expected {
            Ok(())
        } else {
            Err(RegistryError::Digest {
                url: url.to_string(),
                expected: expected.to_string(),
                actual,
            })
        }
    }
}

fn verify(url: &str, expected: &str, bytes: &[u8]) -> Result<(), RegistryError> {
    let mut h = Hasher::for_digest(expected);
    h.update(bytes);
    h.check(url, expected)
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        hex(digest::digest(&digest::SHA256, bytes).as_ref())
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn io_error(context: &str) -> impl FnOnce(std::io::Error) -> RegistryError {
    let context = context.to_string();
    move |source| RegistryError::Io { context, source }
}

/// An error and its causes: hyper's top-level message alone ("client error (Connect)")
/// does not say what went wrong.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

fn strip_query(url: &str) -> String {
    url.split(['?', '#']).next().unwrap_or(url).to_string()
}

/// `(scheme, authority)` of a URL, for same-origin checks.
fn origin(url: &str) -> Option<(String, String)> {
    let uri: http::Uri = url.parse().ok()?;
    Some((
        uri.scheme_str()?.to_ascii_lowercase(),
        uri.authority()?.as_str().to_ascii_lowercase(),
    ))
}

/// The absolute URL a `Location` header points to from `base`.
fn resolve_location(base: &str, location: &str) -> Result<String, Unusable> {
    if location.starts_with("https://") || location.starts_with("http://") {
        return Ok(location.to_string());
    }
    let uri: http::Uri = base.parse().map_err(Unusable::BadUrl)?;
    let scheme = uri.scheme_str().unwrap_or("https");
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    if let Some(rest) = location.strip_prefix("//") {
        return Ok(format!("{scheme}://{rest}"));
    }
    if location.starts_with('/') {
        return Ok(format!("{scheme}://{authority}{location}"));
    }
    if location.contains("://") {
        return Err(Unusable::NotHttp(strip_query(location)));
    }
    let dir = uri.path().rsplit_once('/').map_or("", |(d, _)| d);
    Ok(format!("{scheme}://{authority}{dir}/{location}"))
}

/// Percent-encodes all but RFC 3986 unreserved characters (for query values).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_selection_in_an_index() {
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                {"digest": "sha256:aa", "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
                {"digest": "sha256:bb", "platform": {"os": "linux", "architecture": "amd64"}},
                {"digest": "sha256:cc", "platform": {"os": "unknown", "architecture": "unknown"}},
                {"digest": "sha256:dd"},
            ]
        })
        .to_string();
        let pick = |os, arch| pick_platform(index.as_bytes(), os, arch);
        assert_eq!(pick("linux", "amd64").unwrap(), "sha256:bb");
        assert_eq!(pick("linux", "x86_64").unwrap(), "sha256:bb");
        assert_eq!(pick("linux", "aarch64").unwrap(), "sha256:aa");
        let e = pick("linux", "s390x").unwrap_err().to_string();
        assert!(
            e.contains("no linux/s390x") && e.contains("linux/arm64, linux/amd64"),
            "{e}"
        );
        assert!(pick_platform(b"[]", "linux", "amd64").is_err());
    }

    #[test]
    fn media_types() {
        let m = |ct: &str, body: serde_json::Value| {
            manifest_media_type(ct, body.to_string().as_bytes())
        };
        assert_eq!(m(DOCKER_LIST, serde_json::json!({})), DOCKER_LIST);
        assert_eq!(
            m(
                "application/json",
                serde_json::json!({"mediaType": DOCKER_MANIFEST})
            ),
            DOCKER_MANIFEST
        );
        assert_eq!(m("", serde_json::json!({"manifests": []})), OCI_INDEX);
        assert_eq!(m("", serde_json::json!({"layers": []})), OCI_MANIFEST);
        assert_eq!(m("text/plain", serde_json::json!({})), "text/plain");
        assert!(is_index(OCI_INDEX) && is_index(DOCKER_LIST) && !is_index(OCI_MANIFEST));
    }

    #[test]
    fn registry_error_bodies() {
        let body = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{}},{"code":"X","message":""}]}"#;
        assert_eq!(
            error_detail(body),
            (
                Some("MANIFEST_UNKNOWN".to_string()),
                "MANIFEST_UNKNOWN: manifest unknown; X".to_string()
            )
        );
        let html = format!("<html>\n  <body>{}</body></html>", "x".repeat(1000));
        let (code, detail) = error_detail(html.as_bytes());
        assert_eq!(code, None);
        assert!(detail.starts_with("<html> <body>xxx") && detail.ends_with("..."));
        assert_eq!(detail.chars().count(), ERROR_EXCERPT + 3);
        assert_eq!(error_detail(b""), (None, String::new()));
        let e = RegistryError::Status {
            url: "https://quay.io/v2/a/b/manifests/t".into(),
            status: StatusCode::NOT_FOUND,
            code: Some("MANIFEST_UNKNOWN".into()),
            detail: "MANIFEST_UNKNOWN: manifest unknown".into(),
        };
        assert_eq!(
            e.to_string(),
            "GET https://quay.io/v2/a/b/manifests/t: registry answered 404 Not Found: \
             MANIFEST_UNKNOWN: manifest unknown"
        );
        assert!(e.is_unavailable());
        let e = RegistryError::Status {
            url: "u".into(),
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: None,
            detail: String::new(),
        };
        assert_eq!(
            e.to_string(),
            "GET u: registry answered 500 Internal Server Error"
        );
        assert!(!e.is_unavailable());
        let e = RegistryError::Status {
            url: "u".into(),
            status: StatusCode::BAD_REQUEST,
            code: Some("NAME_UNKNOWN".into()),
            detail: String::new(),
        };
        assert!(e.is_unavailable());
    }

    #[test]
    fn tokens() {
        assert_eq!(
            parse_token(br#"{"token":"t","expires_in":300}"#).unwrap(),
            "t"
        );
        assert_eq!(parse_token(br#"{"access_token":"a"}"#).unwrap(), "a");
        assert_eq!(
            parse_token(br#"{"token":"","access_token":"a"}"#).unwrap(),
            "a"
        );
        assert!(
            parse_token(br#"{}"#)
                .unwrap_err()
                .to_string()
                .contains("no token")
        );
        assert!(
            parse_token(b"nope")
                .unwrap_err()
                .to_string()
                .contains("bad token response")
        );
        assert_eq!(
            percent_encode("repository:ocp/release:pull"),
            "repository%3Aocp%2Frelease%3Apull"
        );
        assert_eq!(percent_encode("a b~"), "a%20b~");
    }

    #[test]
    fn redirects_and_origins() {
        let base = "https://quay.io/v2/a/b/blobs/sha256:x?q=1";
        assert_eq!(
            resolve_location(base, "https://cdn.example/blob?sig=s").unwrap(),
            "https://cdn.example/blob?sig=s"
        );
        assert_eq!(
            resolve_location(base, "/storage/x").unwrap(),
            "https://quay.io/storage/x"
        );
        assert_eq!(
            resolve_location(base, "//cdn.example/y").unwrap(),
            "https://cdn.example/y"
        );
        assert_eq!(
            resolve_location("http://127.0.0.1:5000/v2/a/blobs/d", "other").unwrap(),
            "http://127.0.0.1:5000/v2/a/blobs/other"
        );
        assert!(resolve_location(base, "ftp://x/y").is_err());
        assert_eq!(origin(base), origin("https://QUAY.io/other"));
        assert_ne!(origin(base), origin("http://quay.io/v2"));
        assert_ne!(origin(base), origin("https://quay.io:8443/v2"));
        assert_eq!(strip_query(base), "https://quay.io/v2/a/b/blobs/sha256:x");
    }

    #[test]
    fn digests() {
        let d = sha256_digest(b"abc");
        assert_eq!(
            d,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(verify("u", &d, b"abc").is_ok());
        let e = verify("u", &d, b"abd").unwrap_err();
        assert!(e.to_string().contains("expected sha256:ba78"), "{e}");
        let sha512 = format!(
            "sha512:{}",
            hex(digest::digest(&digest::SHA512, b"abc").as_ref())
        );
        assert!(verify("u", &sha512, b"abc").is_ok());
        assert!(verify("u", &sha512, b"x").is_err());
        let (os, arch) = host_platform();
        assert_eq!(os, "linux");
        assert_eq!(normalize_arch(std::env::consts::ARCH), arch);
    }
}

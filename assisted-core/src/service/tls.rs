//! The agent API and the image server over TLS, as a site's hosts and BMCs reach them.
//!
//! A listener whose public URL (`--agent-api-url`, `--images-url`) is `https` serves TLS. The
//! certificate comes from cert-manager: the core keeps one `Certificate` (`--tls-secret`, issued
//! by `--tls-issuer`) naming exactly the hosts of its https URLs, so the certificate cannot
//! disagree with the configuration, then watches the Secret cert-manager writes and serves its
//! key pair, re-read the moment cert-manager renews it. The Secret's `ca.crt` is the CA every
//! discovery image gives the agent (`--cacert`): until cert-manager has issued the certificate,
//! no discovery image is built (an image without the CA would leave its hosts unable to
//! register).

use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher::Config;
use kube::{Client, ResourceExt};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::urls::ServiceUrls;

/// Field manager of the core's writes to its Certificate.
const FIELD_MANAGER: &str = "assisted-core-tls";
/// Wait between attempts to write the Certificate (cert-manager's CRD missing, RBAC).
const RETRY: Duration = Duration::from_secs(10);

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The core's own namespace: the Certificate and its Secret live there.
    pub namespace: String,
    /// Name of the Certificate and of the Secret cert-manager writes.
    pub secret: String,
    /// The cert-manager issuer (`Issuer` in `namespace`, or a `ClusterIssuer`).
    pub issuer: String,
    pub issuer_kind: String,
}

/// The names the certificate must carry: the hosts of the https URLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertificateNames {
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<String>,
}

impl CertificateNames {
    pub fn is_empty(&self) -> bool {
        self.dns_names.is_empty() && self.ip_addresses.is_empty()
    }
}

/// Why the serving certificate cannot be planned, loaded or requested.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{url:?} is not a URL: {source}")]
    NotUrl {
        url: String,
        source: http::uri::InvalidUri,
    },
    #[error("{0:?} must start with https:// (or http://, without TLS)")]
    Scheme(String),
    #[error("{0:?} names no host")]
    NoHost(String),
    #[error("Secret {0} has no tls.crt and tls.key (not issued yet?)")]
    NotIssued(String),
    #[error("Secret {secret}: {problem}")]
    KeyPair {
        secret: String,
        problem: manager::webhook::PemError,
    },
    #[error("Secret {0}: ca.crt is not PEM")]
    CaNotPem(String),
    #[error("serving certificate lock poisoned")]
    LockPoisoned,
    #[error("applying Certificate {namespace}/{name}: {source}")]
    Apply {
        namespace: String,
        name: String,
        source: kube::Error,
    },
}

fn parse_url(url: &str) -> Result<http::Uri, TlsError> {
    url.parse().map_err(|source| TlsError::NotUrl {
        url: url.to_string(),
        source,
    })
}

/// Whether a public URL is served over TLS: `Ok(true)` for https, `Ok(false)` for http, an
/// error for anything else (hosts and BMCs speak nothing else).
pub fn is_https(url: &str) -> Result<bool, TlsError> {
    let uri = parse_url(url)?;
    match uri.scheme_str() {
        Some("https") => Ok(true),
        Some("http") => Ok(false),
        _ => Err(TlsError::Scheme(url.to_string())),
    }
}

/// The certificate's names for `urls`: each https URL's host, as a DNS name or an IP address.
pub fn certificate_names(urls: &ServiceUrls) -> Result<CertificateNames, TlsError> {
    let mut names = CertificateNames::default();
    for url in [&urls.agent_api, &urls.images] {
        if !is_https(url)? {
            continue;
        }
        let uri = parse_url(url)?;
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| TlsError::NoHost(url.to_string()))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let list = if host.parse::<IpAddr>().is_ok() {
            &mut names.ip_addresses
        } else {
            &mut names.dns_names
        };
        if !list.iter().any(|h| h == host) {
            list.push(host.to_string());
        }
    }
    Ok(names)
}

/// The cert-manager Certificate of the serving certificate (server-side applied).
pub fn certificate_object(settings: &TlsSettings, names: &CertificateNames) -> Value {
    let mut spec = json!({
        "secretName": settings.secret,
        "issuerRef": {
            "group": "cert-manager.io",
            "kind": settings.issuer_kind,
            "name": settings.issuer,
        },
        "usages": ["server auth", "digital signature", "key encipherment"],
    });
    if !names.dns_names.is_empty() {
        spec["dnsNames"] = json!(names.dns_names);
    }
    if !names.ip_addresses.is_empty() {
        spec["ipAddresses"] = json!(names.ip_addresses);
    }
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {
            "name": settings.secret,
            "namespace": settings.namespace,
            "labels": { "app.kubernetes.io/managed-by": "assisted-core" },
        },
        "spec": spec,
    })
}

/// The certificate being served, and the CA the agents get.
#[derive(Debug)]
struct Served {
    key: Arc<CertifiedKey>,
    /// The Secret's `ca.crt`; `None` for a certificate a public CA issued (none given).
    ca_bundle: Option<String>,
    resource_version: Option<String>,
}

/// The serving certificate as cert-manager last wrote it: what the TLS listeners present and
/// what discovery images carry.
#[derive(Debug, Default)]
pub struct ServingCertificate {
    current: RwLock<Option<Arc<Served>>>,
}

impl ServingCertificate {
    pub fn new() -> ServingCertificate {
        ServingCertificate::default()
    }

    /// Serves the key pair in `secret` (`tls.crt`, `tls.key`, optional `ca.crt`); an unusable
    /// Secret leaves the previous certificate in place.
    pub fn load(&self, secret: &Secret) -> Result<bool, TlsError> {
        let name = secret.name_any();
        let version = secret.resource_version();
        if let Ok(current) = self.current.read()
            && let Some(served) = current.as_ref()
            && version.is_some()
            && served.resource_version == version
        {
            return Ok(false);
        }
        let data = secret.data.clone().unwrap_or_default();
        let field = |k: &str| data.get(k).map(|b| b.0.clone()).filter(|b| !b.is_empty());
        let (Some(cert), Some(key)) = (field("tls.crt"), field("tls.key")) else {
            return Err(TlsError::NotIssued(name));
        };
        let key = manager::webhook::certified_key(&cert, &key).map_err(|e| TlsError::KeyPair {
            secret: name.clone(),
            problem: e,
        })?;
        let ca_bundle = match field("ca.crt") {
            Some(ca) => Some(String::from_utf8(ca).map_err(|_| TlsError::CaNotPem(name.clone()))?),
            None => None,
        };
        let served = Served {
            key: Arc::new(key),
            ca_bundle,
            resource_version: version,
        };
        *self.current.write().map_err(|_| TlsError::LockPoisoned)? = Some(Arc::new(served));
        Ok(true)
    }

    /// `None` until a certificate is served; then the CA bundle agents verify it with (`None`
    /// inside when the Secret names no CA: a publicly trusted certificate).
    pub fn ca_bundle(&self) -> Option<Option<String>> {
        let current = self.current.read().ok()?;
        current.as_ref().map(|s| s.ca_bundle.clone())
    }
}

impl ResolvesServerCert for ServingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let served = self.current.read().ok()?.as_ref().map(|s| s.key.clone());
        if served.is_none() {
            tracing::debug!("TLS handshake before cert-manager issued the serving certificate");
        }
        served
    }
}

/// What a discovery image tells its agent about the service's TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentTrust {
    /// The agent API URL is http: no TLS.
    Plain,
    /// The agent API is https but cert-manager has not issued its certificate yet.
    Pending,
    /// Verify with this CA bundle (`None`: the system's trust store suffices).
    Verify(Option<String>),
}

/// The agent's trust for `agent_api_url` given the served certificate.
pub fn agent_trust(agent_api_url: &str, serving: Option<&ServingCertificate>) -> AgentTrust {
    if !agent_api_url.starts_with("https://") {
        return AgentTrust::Plain;
    }
    match serving.and_then(ServingCertificate::ca_bundle) {
        Some(ca) => AgentTrust::Verify(ca),
        None => AgentTrust::Pending,
    }
}

/// Keeps the Certificate written and the served key pair current until `shutdown`.
pub async fn run(
    client: Client,
    settings: TlsSettings,
    names: CertificateNames,
    serving: Arc<ServingCertificate>,
    mut shutdown: watch::Receiver<bool>,
) {
    let certificate = certificate_object(&settings, &names);
    let mut cached = manager::cache::watch(
        Api::<Secret>::namespaced(client.clone(), &settings.namespace),
        Config::default().fields(&format!("metadata.name={}", settings.secret)),
        1,
        |_| {},
        shutdown.clone(),
    );
    let Some(mut secrets) = cached.triggers.pop() else {
        return;
    };
    let writer = async {
        loop {
            match apply_certificate(&client, &settings, &certificate).await {
                Ok(()) => {
                    tracing::info!(
                        certificate = %settings.secret, issuer = %settings.issuer,
                        dns = ?names.dns_names, ips = ?names.ip_addresses,
                        "serving certificate requested from cert-manager"
                    );
                    return;
                }
                Err(e) => tracing::error!(
                    certificate = %settings.secret, error = %e,
                    "cannot write the serving certificate's cert-manager Certificate; the https \
                     listeners have no certificate until it is written (retrying)"
                ),
            }
            tokio::time::sleep(RETRY).await;
        }
    };
    let reader = async {
        use futures::StreamExt;
        while let Some(Ok(secret)) = secrets.next().await {
            if secret.metadata.deletion_timestamp.is_some() {
                continue;
            }
            match serving.load(&secret) {
                Ok(true) => {
                    tracing::info!(secret = %settings.secret, "serving the certificate cert-manager issued")
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "serving certificate not usable"),
            }
        }
    };
    tokio::select! {
        _ = async { tokio::join!(writer, reader) } => {}
        _ = manager::http::stopped(&mut shutdown) => {}
    }
}

async fn apply_certificate(
    client: &Client,
    settings: &TlsSettings,
    certificate: &Value,
) -> Result<(), TlsError> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cert-manager.io",
        "v1",
        "Certificate",
    ));
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &settings.namespace, &resource);
    api.patch(
        &settings.secret,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(certificate),
    )
    .await
    .map(|_| ())
    .map_err(|source| TlsError::Apply {
        namespace: settings.namespace.clone(),
        name: settings.secret.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;
    use rcgen::{CertificateParams, KeyPair};

    use super::*;

    fn urls(agent_api: &str, images: &str) -> ServiceUrls {
        ServiceUrls {
            agent_api: agent_api.into(),
            images: images.into(),
        }
    }

    #[test]
    fn the_certificate_names_the_hosts_of_the_https_urls_only() {
        let names = certificate_names(&urls(
            "https://10.244.0.1:30890",
            "https://hub.example.com:30891",
        ))
        .unwrap();
        assert_eq!(names.ip_addresses, ["10.244.0.1"]);
        assert_eq!(names.dns_names, ["hub.example.com"]);

        // Images over plain http (BMCs that cannot be given a CA): only the agent API's host.
        let names = certificate_names(&urls(
            "https://[fd00::1]:8090",
            "http://hub.example.com:8091",
        ))
        .unwrap();
        assert_eq!(names.ip_addresses, ["fd00::1"]);
        assert!(names.dns_names.is_empty());

        // The same host twice is named once.
        let names = certificate_names(&urls("https://hub:1", "https://hub:2")).unwrap();
        assert_eq!(names.dns_names, ["hub"]);

        assert!(
            certificate_names(&urls("http://a:1", "http://b:2"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn other_schemes_and_hostless_urls_are_refused_with_the_url() {
        let e = certificate_names(&urls("ftp://a:1", "http://b"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"ftp://a:1\"") && e.contains("https://"), "{e}");
        let e = certificate_names(&urls("not a url", "http://b"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a URL"), "{e}");
    }

    #[test]
    fn the_certificate_object_points_at_the_issuer_and_the_secret() {
        let settings = TlsSettings {
            namespace: "capoa-controlplane-system".into(),
            secret: "core-tls".into(),
            issuer: "core-ca".into(),
            issuer_kind: "ClusterIssuer".into(),
        };
        let names = CertificateNames {
            dns_names: vec![],
            ip_addresses: vec!["10.0.0.1".into()],
        };
        let c = certificate_object(&settings, &names);
        assert_eq!(c["metadata"]["namespace"], "capoa-controlplane-system");
        assert_eq!(c["spec"]["secretName"], "core-tls");
        assert_eq!(c["spec"]["issuerRef"]["kind"], "ClusterIssuer");
        assert_eq!(c["spec"]["ipAddresses"], json!(["10.0.0.1"]));
        // cert-manager refuses an empty list less kindly than an absent one.
        assert!(c["spec"].get("dnsNames").is_none());
    }

    fn issued(ca: Option<&str>) -> Secret {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["hub".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let mut data = BTreeMap::from([
            ("tls.crt".to_string(), ByteString(cert.pem().into_bytes())),
            (
                "tls.key".to_string(),
                ByteString(key.serialize_pem().into_bytes()),
            ),
        ]);
        if let Some(ca) = ca {
            data.insert("ca.crt".into(), ByteString(ca.as_bytes().to_vec()));
        }
        let mut s = Secret {
            data: Some(data),
            ..Default::default()
        };
        s.metadata.name = Some("core-tls".into());
        s.metadata.resource_version = Some("1".into());
        s
    }

    #[test]
    fn nothing_is_served_and_no_image_built_until_the_secret_is_issued() {
        let serving = ServingCertificate::new();
        assert_eq!(
            agent_trust("https://hub:8090", Some(&serving)),
            AgentTrust::Pending
        );
        let mut empty = issued(None);
        empty.data = Some(BTreeMap::new());
        let e = serving.load(&empty).unwrap_err().to_string();
        assert!(e.contains("no tls.crt and tls.key"), "{e}");
        assert_eq!(serving.ca_bundle(), None);

        assert!(serving.load(&issued(Some("CA PEM"))).unwrap());
        assert_eq!(
            agent_trust("https://hub:8090", Some(&serving)),
            AgentTrust::Verify(Some("CA PEM".into()))
        );
        // The same resourceVersion is not parsed again.
        assert!(!serving.load(&issued(Some("CA PEM"))).unwrap());
        assert_eq!(
            agent_trust("http://hub:8090", Some(&serving)),
            AgentTrust::Plain
        );
    }

    #[test]
    fn a_broken_renewal_keeps_the_certificate_being_served() {
        let serving = ServingCertificate::new();
        serving.load(&issued(Some("CA PEM"))).unwrap();
        let mut broken = issued(Some("other"));
        broken.metadata.resource_version = Some("2".into());
        broken
            .data
            .as_mut()
            .unwrap()
            .insert("tls.key".into(), ByteString(b"garbage".to_vec()));
        let e = serving.load(&broken).unwrap_err().to_string();
        assert!(
            e.contains("Secret core-tls") && e.contains("tls.key"),
            "{e}"
        );
        assert_eq!(serving.ca_bundle(), Some(Some("CA PEM".into())));
    }
}

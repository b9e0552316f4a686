//! The managers' webhook server: HTTPS with the certificate in `--webhook-cert-dir` (`tls.crt`,
//! `tls.key`, the layout cert-manager and controller-runtime use), re-read when the files change
//! so a rotated certificate is served without a restart. It serves CRD conversion (`/convert`,
//! `ConversionReview` v1) for the provider's older API versions and admission (`AdmissionReview`
//! v1) for the kinds a provider validates.
//!
//! [`review_response`] is the pure part: one review in, one review out.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde_json::{Value, json};
use tokio::sync::watch;

/// The certificate file names in the directory.
pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";

/// How long a client may take for the request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The apiserver sends whole objects; a conversion review of a few objects stays far below.
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Why a webhook refuses a request or fails a conversion: the message the user sees (the
/// apiserver passes it on), every problem named, joined by `; `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join("; "))]
pub struct Refusal {
    pub problems: Vec<String>,
}

impl Refusal {
    /// A refusal for one reason.
    pub fn because(problem: impl Into<String>) -> Self {
        Refusal {
            problems: vec![problem.into()],
        }
    }
}

/// Converts one object (as JSON) to `desired_api_version`; the error is shown to the user by the
/// apiserver, so it says what is wrong with the object.
pub type Converter = Arc<dyn Fn(Value, &str) -> Result<Value, Refusal> + Send + Sync>;

/// A provider's conversion function, as [`crate::cli::ManagerSpec`] takes it.
pub type ConvertFn = fn(Value, &str) -> Result<Value, Refusal>;

/// The answer to a `ConversionReview` v1: every object converted, or a failure naming the first
/// object that could not be (the apiserver then fails the whole request, as it requires).
pub fn review_response(
    review: &Value,
    convert: &dyn Fn(Value, &str) -> Result<Value, Refusal>,
) -> Value {
    let request = &review["request"];
    let uid = request["uid"].clone();
    let answer = |result: Value, objects: Vec<Value>| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {"uid": uid, "convertedObjects": objects, "result": result},
        })
    };
    let failure = |message: String| json!({"status": "Failure", "message": message});
    let Some(desired) = request["desiredAPIVersion"].as_str() else {
        return answer(
            failure("the review has no request.desiredAPIVersion".into()),
            vec![],
        );
    };
    let Some(objects) = request["objects"].as_array() else {
        return answer(failure("the review has no request.objects".into()), vec![]);
    };
    let mut converted = Vec::with_capacity(objects.len());
    for object in objects {
        match convert(object.clone(), desired) {
            Ok(o) => converted.push(o),
            Err(e) => {
                let name = object["metadata"]["name"].as_str().unwrap_or("<unnamed>");
                let kind = object["kind"].as_str().unwrap_or("<no kind>");
                return answer(
                    failure(format!("converting {kind} {name} to {desired}: {e}")),
                    vec![],
                );
            }
        }
    }
    answer(json!({"status": "Success"}), converted)
}

async fn convert_handler(
    State(convert): State<Converter>,
    body: axum::body::Bytes,
) -> impl IntoResponse {
    let review: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"message": format!("the body is not a ConversionReview: {e}")})),
            );
        }
    };
    let response = review_response(&review, convert.as_ref());
    (StatusCode::OK, axum::Json(response))
}

/// A provider's validation of one kind: the `AdmissionReview` request in, the warnings to show
/// (allowed) or the reason to refuse.
pub type ValidateFn = fn(&Value) -> Result<Vec<String>, Refusal>;

/// The answer to an `AdmissionReview` v1: allowed (with warnings) or refused with the reason,
/// as controller-runtime's `Denied` does (403). The request's uid is echoed.
pub fn admission_response(review: &Value, validate: ValidateFn) -> Value {
    let request = &review["request"];
    let (allowed, warnings, message) = match validate(request) {
        Ok(warnings) => (true, warnings, None),
        Err(refusal) => (false, Vec::new(), Some(refusal.to_string())),
    };
    let mut response = json!({"uid": request["uid"].clone(), "allowed": allowed});
    if !warnings.is_empty() {
        response["warnings"] = json!(warnings);
    }
    if let Some(message) = message {
        response["status"] = json!({"code": 403, "reason": "Forbidden", "message": message});
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

async fn validate_handler(
    State(validate): State<ValidateFn>,
    body: axum::body::Bytes,
) -> impl IntoResponse {
    answer_admission_review(&body, |review| admission_response(review, validate))
}

/// Parses an `AdmissionReview` body and answers it with `respond`, or 400 when it is not one.
fn answer_admission_review(
    body: &[u8],
    respond: impl FnOnce(&Value) -> Value,
) -> (StatusCode, axum::Json<Value>) {
    match serde_json::from_slice::<Value>(body) {
        Ok(review) => (StatusCode::OK, axum::Json(respond(&review))),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"message": format!("the body is not an AdmissionReview: {e}")})),
        ),
    }
}

/// A validation's answer from its list of problems: allowed with no warnings when there are
/// none, else refused with every problem, each naming its field.
pub fn decision(problems: Vec<String>) -> Result<Vec<String>, Refusal> {
    if problems.is_empty() {
        Ok(Vec::new())
    } else {
        Err(Refusal { problems })
    }
}

/// `path` answering `AdmissionReview`s with `validate`.
pub fn validation_router(path: &str, validate: ValidateFn) -> Router {
    Router::new()
        .route(path, post(validate_handler))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(validate)
}

/// A provider's defaulting of one kind: the `AdmissionReview` request in, the JSON Patch
/// (RFC 6902) operations that complete the object (none: unchanged), or the reason to refuse.
pub type MutateFn = fn(&Value) -> Result<Vec<Value>, Refusal>;

/// The answer to a mutating `AdmissionReview` v1: allowed with the operations as a base64
/// `JSONPatch` (none when there is nothing to change), or refused with the reason (403).
pub fn mutation_response(review: &Value, mutate: MutateFn) -> Value {
    use base64::Engine as _;
    let request = &review["request"];
    let mut response = json!({"uid": request["uid"].clone()});
    match mutate(request) {
        Ok(operations) => {
            response["allowed"] = json!(true);
            if !operations.is_empty() {
                let patch = serde_json::to_vec(&operations).unwrap_or_default();
                response["patchType"] = json!("JSONPatch");
                response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch));
            }
        }
        Err(refusal) => {
            response["allowed"] = json!(false);
            response["status"] =
                json!({"code": 403, "reason": "Forbidden", "message": refusal.to_string()});
        }
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

async fn mutate_handler(
    State(mutate): State<MutateFn>,
    body: axum::body::Bytes,
) -> impl IntoResponse {
    answer_admission_review(&body, |review| mutation_response(review, mutate))
}

/// `path` answering mutating `AdmissionReview`s with `mutate`.
pub fn mutation_router(path: &str, mutate: MutateFn) -> Router {
    Router::new()
        .route(path, post(mutate_handler))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(mutate)
}

/// `/convert`, for the provider's CRDs.
pub fn conversion_router(convert: Converter) -> Router {
    Router::new()
        .route("/convert", post(convert_handler))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(convert)
}

/// Serves the certificate in a directory, re-read when `tls.crt` or `tls.key` changes.
#[derive(Debug)]
pub struct CertificateFiles {
    dir: PathBuf,
    loaded: Mutex<Option<Loaded>>,
}

#[derive(Debug)]
struct Loaded {
    stamps: (SystemTime, SystemTime),
    key: Arc<CertifiedKey>,
}

impl CertificateFiles {
    pub fn new(dir: impl Into<PathBuf>) -> CertificateFiles {
        CertificateFiles {
            dir: dir.into(),
            loaded: Mutex::new(None),
        }
    }

    fn stamps(&self) -> std::io::Result<(SystemTime, SystemTime)> {
        let modified = |f: &str| std::fs::metadata(self.dir.join(f))?.modified();
        Ok((modified(CERT_FILE)?, modified(KEY_FILE)?))
    }

    /// The current certificate: the cached one unless the files changed since it was read.
    pub fn current(&self) -> Result<Arc<CertifiedKey>, CertificateError> {
        let stamps = self.stamps().map_err(|source| CertificateError::Stamps {
            dir: self.dir.clone(),
            source,
        })?;
        let mut loaded = self
            .loaded
            .lock()
            .map_err(|_| CertificateError::CachePoisoned)?;
        if let Some(l) = loaded.as_ref()
            && l.stamps == stamps
        {
            return Ok(l.key.clone());
        }
        let key = Arc::new(load(&self.dir)?);
        tracing::info!(dir = %self.dir.display(), "webhook certificate loaded");
        *loaded = Some(Loaded {
            stamps,
            key: key.clone(),
        });
        Ok(key)
    }
}

/// Why the webhook certificate in `--webhook-cert-dir` cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("reading {}: {source}", dir.display())]
    Stamps {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("certificate cache poisoned")]
    CachePoisoned,
    #[error("{}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", dir.display())]
    Parse { dir: PathBuf, source: PemError },
}

/// Why a PEM certificate chain and key are not something rustls can serve.
#[derive(Debug, thiserror::Error)]
pub enum PemError {
    #[error("{}: {source}", CERT_FILE)]
    Chain {
        source: rustls::pki_types::pem::Error,
    },
    #[error("{} holds no certificate", CERT_FILE)]
    NoCertificate,
    #[error("{}: {source}", KEY_FILE)]
    Key {
        source: rustls::pki_types::pem::Error,
    },
    #[error("{}: {source}", KEY_FILE)]
    KeyType { source: rustls::Error },
}

fn load(dir: &Path) -> Result<CertifiedKey, CertificateError> {
    let read = |f: &str| {
        let path = dir.join(f);
        std::fs::read(&path).map_err(|source| CertificateError::ReadFile { path, source })
    };
    certified_key(&read(CERT_FILE)?, &read(KEY_FILE)?).map_err(|source| CertificateError::Parse {
        dir: dir.to_path_buf(),
        source,
    })
}

/// A certificate chain and its private key, both PEM, as rustls serves them.
pub fn certified_key(chain_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, PemError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<_, _>>()
        .map_err(|source| PemError::Chain { source })?;
    if chain.is_empty() {
        return Err(PemError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|source| PemError::Key { source })?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|source| PemError::KeyType { source })?;
    Ok(CertifiedKey::new(chain, signing))
}

/// An HTTP/1.1 TLS acceptor serving whatever certificate `resolver` gives (no client auth).
pub fn tls_acceptor(
    resolver: Arc<dyn ResolvesServerCert>,
) -> Result<tokio_rustls::TlsAcceptor, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

impl ResolvesServerCert for CertificateFiles {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match self.current() {
            Ok(k) => Some(k),
            Err(e) => {
                tracing::warn!(error = %e, "no webhook certificate to serve");
                None
            }
        }
    }
}

/// Serves `router` over HTTPS on `listener` with the certificate in `cert_dir` until `shutdown`.
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    cert_dir: PathBuf,
    router: Router,
    shutdown: watch::Receiver<bool>,
) {
    let acceptor = match tls_acceptor(Arc::new(CertificateFiles::new(cert_dir))) {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "cannot configure TLS for the webhook server");
            return;
        }
    };
    crate::http::serve(
        listener,
        router,
        Some(acceptor),
        HEADER_READ_TIMEOUT,
        shutdown,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rename_kind(object: Value, desired: &str) -> Result<Value, Refusal> {
        if object["spec"]["bad"].as_bool() == Some(true) {
            return Err(Refusal::because("spec.bad is set"));
        }
        let mut o = object;
        o["apiVersion"] = Value::String(desired.to_string());
        Ok(o)
    }

    fn review(objects: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": "g/v2", "objects": objects},
        })
    }

    #[test]
    fn every_object_is_converted_and_the_uid_echoed() {
        let out = review_response(
            &review(json!([
                {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}},
                {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "b"}},
            ])),
            &rename_kind,
        );
        assert_eq!(out["kind"], "ConversionReview");
        assert_eq!(out["response"]["uid"], "u-1");
        assert_eq!(out["response"]["result"]["status"], "Success");
        let objects = out["response"]["convertedObjects"].as_array().unwrap();
        assert_eq!(objects.len(), 2);
        assert!(objects.iter().all(|o| o["apiVersion"] == "g/v2"));
        assert_eq!(objects[1]["metadata"]["name"], "b");
    }

    #[test]
    fn one_failure_fails_the_review_naming_the_object() {
        let out = review_response(
            &review(json!([
                {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}},
                {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "b"}, "spec": {"bad": true}},
            ])),
            &rename_kind,
        );
        assert_eq!(out["response"]["uid"], "u-1");
        assert_eq!(out["response"]["result"]["status"], "Failure");
        let message = out["response"]["result"]["message"].as_str().unwrap();
        assert!(
            message.contains("K b to g/v2: spec.bad is set"),
            "{message}"
        );
        assert_eq!(out["response"]["convertedObjects"], json!([]));
    }

    fn refuse_odd(request: &Value) -> Result<Vec<String>, Refusal> {
        match request["object"]["n"].as_i64() {
            Some(n) if n % 2 == 1 => Err(Refusal::because(format!("spec.n: {n} is odd"))),
            Some(_) => Ok(vec!["even numbers only for now".into()]),
            None => Err(Refusal::because("no n")),
        }
    }

    #[test]
    fn admission_answers_echo_the_uid_and_carry_the_reason_or_warnings() {
        let allowed = admission_response(
            &json!({"request": {"uid": "a", "object": {"n": 2}}}),
            refuse_odd,
        );
        assert_eq!(allowed["kind"], "AdmissionReview");
        assert_eq!(allowed["response"]["uid"], "a");
        assert_eq!(allowed["response"]["allowed"], true);
        assert_eq!(
            allowed["response"]["warnings"][0],
            "even numbers only for now"
        );
        let refused = admission_response(
            &json!({"request": {"uid": "b", "object": {"n": 3}}}),
            refuse_odd,
        );
        assert_eq!(refused["response"]["allowed"], false);
        assert_eq!(refused["response"]["status"]["code"], 403);
        assert_eq!(refused["response"]["status"]["message"], "spec.n: 3 is odd");
        let malformed = admission_response(&json!({}), refuse_odd);
        assert_eq!(malformed["response"]["allowed"], false);
    }

    fn add_a_label(request: &Value) -> Result<Vec<Value>, Refusal> {
        match request["object"]["metadata"]["name"].as_str() {
            Some("refused") => Err(Refusal::because("no")),
            Some("plain") => Ok(Vec::new()),
            _ => Ok(vec![
                json!({"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}),
            ]),
        }
    }

    #[test]
    fn mutation_answers_carry_a_base64_json_patch_only_when_there_is_one() {
        use base64::Engine as _;
        let review =
            |name: &str| json!({"request": {"uid": "u-9", "object": {"metadata": {"name": name}}}});
        let patched = mutation_response(&review("x"), add_a_label);
        let response = &patched["response"];
        assert_eq!(
            (
                &response["uid"],
                &response["allowed"],
                &response["patchType"]
            ),
            (&json!("u-9"), &json!(true), &json!("JSONPatch"))
        );
        let patch = base64::engine::general_purpose::STANDARD
            .decode(response["patch"].as_str().unwrap())
            .unwrap();
        let operations: Value = serde_json::from_slice(&patch).unwrap();
        assert_eq!(operations[0]["path"], "/metadata/labels");
        let plain = mutation_response(&review("plain"), add_a_label);
        assert_eq!(plain["response"]["allowed"], true);
        assert_eq!(plain["response"].get("patch"), None);
        assert_eq!(plain["response"].get("patchType"), None);
        let refused = mutation_response(&review("refused"), add_a_label);
        assert_eq!(refused["response"]["allowed"], false);
        assert_eq!(refused["response"]["status"]["message"], "no");
    }

    #[test]
    fn a_malformed_review_is_a_failure_not_a_panic() {
        for bad in [
            json!({}),
            json!({"request": {"uid": "x"}}),
            json!({"request": {"desiredAPIVersion": "g/v2"}}),
        ] {
            let out = review_response(&bad, &rename_kind);
            assert_eq!(out["response"]["result"]["status"], "Failure", "{bad}");
        }
    }

    fn write_cert(dir: &Path, name: &str) {
        let cert = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
        std::fs::write(dir.join(CERT_FILE), cert.cert.pem()).unwrap();
        std::fs::write(dir.join(KEY_FILE), cert.signing_key.serialize_pem()).unwrap();
    }

    #[test]
    fn the_certificate_is_reread_when_the_files_change() {
        let dir = tempfile::tempdir().unwrap();
        let files = CertificateFiles::new(dir.path());
        assert!(files.current().unwrap_err().to_string().contains("reading"));
        write_cert(dir.path(), "first.example");
        let first = files.current().unwrap();
        assert!(
            Arc::ptr_eq(&first, &files.current().unwrap()),
            "cached while unchanged"
        );
        // A rotation writes new files; their modification time moves on.
        std::thread::sleep(Duration::from_millis(20));
        write_cert(dir.path(), "second.example");
        let stamps = files.stamps().unwrap();
        let second = files.current().unwrap();
        assert!(!Arc::ptr_eq(&first, &second), "rotated certificate served");
        assert_eq!(files.stamps().unwrap(), stamps);
        std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
        assert!(files.current().is_err());
    }
}

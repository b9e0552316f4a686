//! An in-process registry on 127.0.0.1 for tests (manifests, blobs, Bearer tokens, blob
//! redirects), and the end-to-end tests of this module that use it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;

use super::registry::{OCI_INDEX, OCI_MANIFEST, sha256_digest};

/// `(repository, tag or digest)` → `(bytes, media type)`.
type Manifests = HashMap<(String, String), (Vec<u8>, String)>;

#[derive(Default)]
pub(crate) struct Registry {
    addr: Mutex<Option<SocketAddr>>,
    manifests: Mutex<Manifests>,
    blobs: Mutex<HashMap<(String, String), Vec<u8>>>,
    /// Basic credentials the token service wants; None: anonymous, no auth at all.
    user: Option<(String, String)>,
    /// Blob requests are redirected to this server's `/redirected/...`.
    redirect_to: Mutex<Option<SocketAddr>>,
    /// `<path> auth=<bool>` of every request, in order.
    pub(crate) log: Mutex<Vec<String>>,
}

pub(crate) struct Fake {
    pub(crate) addr: SocketAddr,
    pub(crate) state: Arc<Registry>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    /// A registry; with `user`, every `/v2/` request needs a token for which the token
    /// service wants these Basic credentials.
    pub(crate) async fn start(user: Option<(&str, &str)>) -> Fake {
        let state = Arc::new(Registry {
            user: user.map(|(u, p)| (u.to_string(), p.to_string())),
            ..Registry::default()
        });
        let app = Router::new()
            .route("/v2/{*rest}", get(v2))
            .route("/token", get(token))
            .route("/redirected/{*rest}", get(redirected))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        *state.addr.lock().unwrap() = Some(addr);
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Fake { addr, state, task }
    }

    pub(crate) fn host(&self) -> String {
        self.addr.to_string()
    }

    pub(crate) fn redirect_blobs_to(&self, other: &Fake) {
        *self.state.redirect_to.lock().unwrap() = Some(other.addr);
    }

    pub(crate) fn push_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = sha256_digest(bytes);
        self.state
            .blobs
            .lock()
            .unwrap()
            .insert((repo.to_string(), digest.clone()), bytes.to_vec());
        digest
    }

    /// Replaces a blob's bytes without changing its digest (a corrupt registry).
    pub(crate) fn corrupt_blob(&self, repo: &str, digest: &str, bytes: &[u8]) {
        self.state
            .blobs
            .lock()
            .unwrap()
            .insert((repo.to_string(), digest.to_string()), bytes.to_vec());
    }

    fn push_manifest(
        &self,
        repo: &str,
        tag: Option<&str>,
        bytes: Vec<u8>,
        media_type: &str,
    ) -> String {
        let digest = sha256_digest(&bytes);
        let mut manifests = self.state.manifests.lock().unwrap();
        for reference in [Some(digest.as_str()), tag].into_iter().flatten() {
            manifests.insert(
                (repo.to_string(), reference.to_string()),
                (bytes.clone(), media_type.to_string()),
            );
        }
        digest
    }

    /// An OCI image of `layers` (bytes, media type), bottom first. Returns its digest.
    pub(crate) fn push_image(
        &self,
        repo: &str,
        tag: Option<&str>,
        config: serde_json::Value,
        layers: &[(Vec<u8>, &str)],
    ) -> String {
        let config = config.to_string().into_bytes();
        let config_digest = self.push_blob(repo, &config);
        let layers: Vec<serde_json::Value> = layers
            .iter()
            .map(|(bytes, media_type)| {
                let digest = self.push_blob(repo, bytes);
                serde_json::json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
            })
            .collect();
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
            "layers": layers,
        });
        self.push_manifest(repo, tag, manifest.to_string().into_bytes(), OCI_MANIFEST)
    }

    /// An OCI index of `(digest, os, arch)` entries.
    pub(crate) fn push_index(
        &self,
        repo: &str,
        tag: Option<&str>,
        entries: &[(&str, &str, &str)],
    ) -> String {
        let manifests: Vec<serde_json::Value> = entries
            .iter()
            .map(|(digest, os, arch)| {
                serde_json::json!({"mediaType": OCI_MANIFEST, "digest": digest, "size": 1,
                                   "platform": {"os": os, "architecture": arch}})
            })
            .collect();
        let index =
            serde_json::json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests});
        self.push_manifest(repo, tag, index.to_string().into_bytes(), OCI_INDEX)
    }

    pub(crate) fn requests(&self, containing: &str) -> usize {
        self.state
            .log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(containing))
            .count()
    }
}

fn api_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = serde_json::json!({"errors": [{"code": code, "message": message, "detail": null}]});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn v2(
    State(s): State<Arc<Registry>>,
    Path(rest): Path<String>,
    headers: HeaderMap,
) -> Response {
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    s.log
        .lock()
        .unwrap()
        .push(format!("/v2/{rest} auth={}", auth.is_some()));
    let (repo, kind, reference) = if let Some((repo, r)) = rest.rsplit_once("/manifests/") {
        (repo, "manifests", r)
    } else if let Some((repo, r)) = rest.rsplit_once("/blobs/") {
        (repo, "blobs", r)
    } else {
        return api_error(StatusCode::NOT_FOUND, "NOT_FOUND", "no such endpoint");
    };
    if s.user.is_some() && auth.as_deref() != Some(&format!("Bearer tok:{repo}")) {
        let addr = s.addr.lock().unwrap().unwrap();
        let challenge = format!(
            "Bearer realm=\"http://{addr}/token\",service=\"fake\",scope=\"repository:{repo}:pull\""
        );
        let mut resp = api_error(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "authentication required",
        );
        resp.headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge.parse().unwrap());
        return resp;
    }
    let key = (repo.to_string(), reference.to_string());
    if kind == "manifests" {
        let known_repo = s.manifests.lock().unwrap().keys().any(|(r, _)| r == repo);
        return match s.manifests.lock().unwrap().get(&key) {
            Some((bytes, media_type)) => {
                ([(header::CONTENT_TYPE, media_type.clone())], bytes.clone()).into_response()
            }
            None if known_repo => api_error(
                StatusCode::NOT_FOUND,
                "MANIFEST_UNKNOWN",
                "manifest unknown",
            ),
            None => api_error(
                StatusCode::NOT_FOUND,
                "NAME_UNKNOWN",
                "repository name not known to registry",
            ),
        };
    }
    if let Some(other) = *s.redirect_to.lock().unwrap() {
        let location = format!("http://{other}/redirected/{repo}/{reference}?X-Signature=secret");
        return (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, location)],
        )
            .into_response();
    }
    match s.blobs.lock().unwrap().get(&key) {
        Some(bytes) => bytes.clone().into_response(),
        None => api_error(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            "blob unknown to registry",
        ),
    }
}

/// Blobs served from "another host" (another port): they must come without credentials.
async fn redirected(
    State(s): State<Arc<Registry>>,
    Path(rest): Path<String>,
    headers: HeaderMap,
) -> Response {
    let auth = headers.contains_key(header::AUTHORIZATION);
    s.log
        .lock()
        .unwrap()
        .push(format!("/redirected/{rest} auth={auth}"));
    let Some((repo, digest)) = rest.rsplit_once('/') else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match s
        .blobs
        .lock()
        .unwrap()
        .get(&(repo.to_string(), digest.to_string()))
    {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn token(
    State(s): State<Arc<Registry>>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    s.log.lock().unwrap().push(format!("/token {q:?}"));
    let Some((user, pass)) = &s.user else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    );
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if given != Some(expected.as_str()) || q.get("service").map(String::as_str) != Some("fake") {
        return api_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "bad credentials");
    }
    let Some(repo) = q
        .get("scope")
        .and_then(|s| s.strip_prefix("repository:"))
        .and_then(|s| s.strip_suffix(":pull"))
    else {
        return api_error(StatusCode::BAD_REQUEST, "DENIED", "bad scope");
    };
    axum::Json(serde_json::json!({"token": format!("tok:{repo}"), "expires_in": 300}))
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    use super::super::registry::host_platform;
    use super::super::*;
    use super::*;

    const GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
    const TAR: &str = "application/vnd.oci.image.layer.v1.tar";

    /// A tar of regular files, names written as given (`./x`, `/x` are kept).
    fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(data.len() as u64);
            h.set_mode(0o755);
            h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn gz(bytes: Vec<u8>) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&bytes).unwrap();
        enc.finish().unwrap()
    }

    fn host_arch() -> &'static str {
        host_platform().1
    }

    /// An installer image in `repo` whose top layer has `binary` (over an older one).
    fn push_installer(reg: &Fake, repo: &str, binary: &[u8]) -> String {
        reg.push_image(
            repo,
            None,
            serde_json::json!({"architecture": host_arch(), "os": "linux"}),
            &[
                (tar_of(&[("usr/bin/openshift-install", b"old")]), TAR),
                (gz(tar_of(&[("./usr/bin/openshift-install", binary)])), GZIP),
                (gz(tar_of(&[("etc/motd", b"hi")])), GZIP),
            ],
        )
    }

    /// A multi-arch release image `repo:tag` whose installer is `installer`.
    fn push_release(reg: &Fake, repo: &str, tag: &str, version: &str, installer: &str) -> String {
        let references = serde_json::json!({
            "kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
            "metadata": {"name": version, "annotations": {"io.openshift.build.versions": "kubernetes=1.30.4"}},
            "spec": {"tags": [
                {"name": "installer", "from": {"kind": "DockerImage", "name": installer}},
                {"name": "rhel-coreos", "from": {"kind": "DockerImage", "name": "quay.io/o/art@sha256:1"}},
            ]}
        });
        let metadata = serde_json::json!({"kind": "cincinnati-metadata-v0", "version": version});
        let manifest = reg.push_image(
            repo,
            None,
            serde_json::json!({"architecture": host_arch(), "config": {"Labels": {"io.openshift.release": "ignored"}}}),
            &[
                (gz(tar_of(&[("etc/os-release", b"x")])), GZIP),
                (
                    gz(tar_of(&[
                        ("release-manifests/image-references", references.to_string().as_bytes()),
                        ("release-manifests/release-metadata", metadata.to_string().as_bytes()),
                    ])),
                    GZIP,
                ),
            ],
        );
        let other = if host_arch() == "amd64" {
            "arm64"
        } else {
            "amd64"
        };
        let absent = format!("sha256:{}", "e".repeat(64));
        reg.push_index(
            repo,
            Some(tag),
            &[(&absent, "linux", other), (&manifest, "linux", host_arch())],
        )
    }

    fn secret_for(host: &str, user: &str, pass: &str) -> PullSecret {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
        PullSecret::parse(&serde_json::json!({"auths": {host: {"auth": auth}}}).to_string())
            .unwrap()
    }

    #[tokio::test]
    async fn payload_and_installer_through_token_auth() {
        let reg = Fake::start(Some(("u", "p"))).await;
        let installer_digest = push_installer(&reg, "art/dev", b"#!new");
        let installer = format!("{}/art/dev@{installer_digest}", reg.host());
        let index = push_release(&reg, "ocp/release", "4.17.3", "4.17.3", &installer);
        let release = ImageRef::parse(&format!("{}/ocp/release:4.17.3", reg.host())).unwrap();
        let client = RegistryClient::new().unwrap();
        let secret = secret_for(&reg.host(), "u", "p");

        let payload = read_payload(&client, &release, &secret).await.unwrap();
        assert_eq!(payload.version, "4.17.3");
        assert_eq!(payload.digest, index);
        assert_eq!(payload.installer_image(), Some(installer.as_str()));
        assert_eq!(payload.kubernetes_version(), Some("1.30.4"));
        assert_eq!(payload.architecture.as_deref(), Some(host_arch()));
        // Only the last layer was needed: the base layer was never downloaded.
        assert_eq!(
            reg.requests("/v2/ocp/release/blobs/"),
            2,
            "config + manifests layer"
        );
        // One token per repository, then reused.
        assert_eq!(reg.requests("/token"), 1);

        let dir = tempfile::tempdir().unwrap();
        let bin = extract_installer(&client, &payload, &release, &secret, dir.path())
            .await
            .unwrap();
        assert_eq!(bin, dir.path().join("openshift-install"));
        assert_eq!(std::fs::read(&bin).unwrap(), b"#!new");
        assert_eq!(
            std::fs::metadata(&bin).unwrap().permissions().mode() & 0o777,
            0o755
        );
        // Nothing but the binary is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(reg.requests("/token"), 2);

        // Without credentials the token service refuses, and the error says where. The
        // token cached for the pull secret is not used for requests without it.
        let e = read_payload(&client, &release, &PullSecret::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("http://{}/token", reg.host())) && e.contains("401"),
            "{e}"
        );
        assert!(e.contains("UNAUTHORIZED: bad credentials"), "{e}");
        let e = read_payload(&client, &release, &secret_for(&reg.host(), "u", "wrong"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("401"), "{e}");
        // The right secret still works from the cache: no new token.
        let tokens = reg.requests("/token");
        read_payload(&client, &release, &secret).await.unwrap();
        assert_eq!(reg.requests("/token"), tokens);
    }

    #[tokio::test]
    async fn installer_falls_back_to_the_release_repository() {
        let reg = Fake::start(None).await;
        // Mirrored: the installer exists only in the release's own repository.
        let digest = push_installer(&reg, "mirror/release", b"#!mirrored");
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let client = RegistryClient::new().unwrap();
        let secret = PullSecret::default();
        let release = ImageRef::parse(&format!("{}/mirror/release:4.17.3", reg.host())).unwrap();
        for installer in [
            format!("{closed}/openshift-release-dev/ocp-v4.0-art-dev@{digest}"),
            format!(
                "{}/openshift-release-dev/ocp-v4.0-art-dev@{digest}",
                reg.host()
            ),
        ] {
            push_release(&reg, "mirror/release", "4.17.3", "4.17.3", &installer);
            let payload = read_payload(&client, &release, &secret).await.unwrap();
            let dir = tempfile::tempdir().unwrap();
            let bin = extract_installer(&client, &payload, &release, &secret, dir.path())
                .await
                .unwrap();
            assert_eq!(std::fs::read(bin).unwrap(), b"#!mirrored", "{installer}");
        }

        // Nowhere: the error names both places and why each failed.
        let missing = format!("sha256:{}", "f".repeat(64));
        let installer = format!("{}/art/dev@{missing}", reg.host());
        push_release(&reg, "mirror/release", "4.17.4", "4.17.4", &installer);
        let release = ImageRef::parse(&format!("{}/mirror/release:4.17.4", reg.host())).unwrap();
        let payload = read_payload(&client, &release, &secret).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let e = extract_installer(&client, &payload, &release, &secret, dir.path())
            .await
            .unwrap_err();
        let e = e.to_string();
        assert!(e.contains(&installer) && e.contains("NAME_UNKNOWN"), "{e}");
        assert!(
            e.contains(&format!("mirror/release@{missing}")) && e.contains("MANIFEST_UNKNOWN"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn missing_installer_and_whiteouts_are_reported() {
        let reg = Fake::start(None).await;
        let client = RegistryClient::new().unwrap();
        let secret = PullSecret::default();
        let config = serde_json::json!({"architecture": host_arch()});
        let no_binary = reg.push_image(
            "art/dev",
            None,
            config.clone(),
            &[(gz(tar_of(&[("etc/x", b"")])), GZIP)],
        );
        // The top layer deletes the binary a lower layer has.
        let deleted = reg.push_image(
            "art/dev",
            None,
            config,
            &[
                (gz(tar_of(&[("usr/bin/openshift-install", b"old")])), GZIP),
                (gz(tar_of(&[("usr/bin/.wh.openshift-install", b"")])), GZIP),
            ],
        );
        for digest in [no_binary, deleted] {
            let installer = format!("{}/art/dev@{digest}", reg.host());
            push_release(&reg, "ocp/release", "x", "4.17.0", &installer);
            let release = ImageRef::parse(&format!("{}/ocp/release:x", reg.host())).unwrap();
            let payload = read_payload(&client, &release, &secret).await.unwrap();
            let dir = tempfile::tempdir().unwrap();
            let e = extract_installer(&client, &payload, &release, &secret, dir.path())
                .await
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("image {installer} has no usr/bin/openshift-install")
            );
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
        let mut payload = read_payload(
            &client,
            &ImageRef::parse(&format!("{}/ocp/release:x", reg.host())).unwrap(),
            &secret,
        )
        .await
        .unwrap();
        payload.images.clear();
        let release = ImageRef::parse(&format!("{}/ocp/release:x", reg.host())).unwrap();
        let e = extract_installer(
            &client,
            &payload,
            &release,
            &secret,
            std::path::Path::new("/nonexistent"),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "release {release} has no installer image in release-manifests/image-references"
            )
        );
        // Not a release at all.
        reg.push_image(
            "plain/img",
            Some("1"),
            serde_json::json!({}),
            &[(gz(tar_of(&[("a", b"")])), GZIP)],
        );
        let e = read_payload(
            &client,
            &ImageRef::parse(&format!("{}/plain/img:1", reg.host())).unwrap(),
            &secret,
        )
        .await
        .unwrap_err();
        assert!(e.to_string().contains("is not a release image"), "{e}");
        let e = read_payload(
            &client,
            &ImageRef::parse(&format!("{}/plain/img:2", reg.host())).unwrap(),
            &secret,
        )
        .await
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("404 Not Found: MANIFEST_UNKNOWN: manifest unknown"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn blobs_are_verified_and_redirects_drop_credentials() {
        let reg = Fake::start(Some(("u", "p"))).await;
        let cdn = Fake::start(None).await;
        let client = RegistryClient::new().unwrap();
        let secret = secret_for(&reg.host(), "u", "p");
        let image = ImageRef::parse(&format!("{}/a/b:1", reg.host())).unwrap();
        let creds = secret.credentials_for(&reg.host());
        let data = vec![7u8; 100_000];
        let digest = reg.push_blob("a/b", &data);
        cdn.push_blob("a/b", &data);
        reg.redirect_blobs_to(&cdn);
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("blob");
        client
            .blob_to_file(&image, &digest, creds, &dest)
            .await
            .unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), data);
        assert_eq!(cdn.requests("auth=false"), 1);
        assert_eq!(cdn.requests("auth=true"), 0);

        // A blob whose bytes do not match its digest is refused and not left on disk.
        cdn.corrupt_blob("a/b", &digest, b"tampered");
        let e = client
            .blob_to_file(&image, &digest, creds, &dest)
            .await
            .unwrap_err();
        assert!(matches!(e, RegistryError::Digest { .. }), "{e}");
        // The redirect's signed query never shows in messages.
        assert!(!e.to_string().contains("secret"), "{e}");
        assert!(!dest.exists());

        let small = RegistryClient::with_max_blob_bytes(10).unwrap();
        cdn.corrupt_blob("a/b", &digest, &data);
        let e = small
            .blob_to_file(&image, &digest, creds, &dest)
            .await
            .unwrap_err();
        assert!(matches!(e, RegistryError::TooLarge { .. }), "{e}");
        assert!(!dest.exists());

        let e = client
            .blob_to_file(&image, "sha256:../../x", creds, &dest)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("digest"), "{e}");
        let refused = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let e = client
            .manifest(&ImageRef::parse(&format!("{refused}/a/b:1")).unwrap(), None)
            .await
            .unwrap_err();
        assert!(
            matches!(e, RegistryError::Connect { .. }) && e.is_unavailable(),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains(&format!("http://{refused}/v2/a/b/manifests/1")),
            "{e}"
        );
    }

    #[tokio::test]
    async fn cache_shares_extractions_and_evicts_the_least_recently_used() {
        let reg = Fake::start(None).await;
        let client = RegistryClient::new().unwrap();
        let secret = PullSecret::default();
        let d1 = push_installer(&reg, "art/dev", b"#!one");
        let d2 = push_installer(&reg, "art/dev", b"#!two");
        let i1 = push_release(
            &reg,
            "ocp/release",
            "4.17.1",
            "4.17.1",
            &format!("{}/art/dev@{d1}", reg.host()),
        );
        let i2 = push_release(
            &reg,
            "ocp/release",
            "4.17.2",
            "4.17.2",
            &format!("{}/art/dev@{d2}", reg.host()),
        );
        let r1 = ImageRef::parse(&format!("{}/ocp/release:4.17.1", reg.host())).unwrap();
        let r2 = ImageRef::parse(&format!("{}/ocp/release:4.17.2", reg.host())).unwrap();
        let root = tempfile::tempdir().unwrap();
        let cache = InstallerCache::new(root.path().join("installers"), 1);

        let (a, b) = tokio::join!(
            cache.get(&client, &r1, &secret),
            cache.get(&client, &r1, &secret)
        );
        let ((bin_a, payload_a), (bin_b, _)) = (a.unwrap(), b.unwrap());
        assert_eq!(bin_a, bin_b);
        assert_eq!(
            bin_a,
            root.path()
                .join("installers")
                .join(i1.trim_start_matches("sha256:"))
                .join("openshift-install")
        );
        assert_eq!(std::fs::read(&bin_a).unwrap(), b"#!one");
        assert_eq!(payload_a.version, "4.17.1");
        let blobs = reg.requests("/blobs/");
        assert_eq!(
            blobs,
            2 + 3,
            "release config + last layer, installer config + 2 top layers, once"
        );

        // A hit downloads no blob, and by digest needs no request at all.
        let requests = reg.state.log.lock().unwrap().len();
        let (bin, payload) = cache
            .get(&client, &r1.with_digest(&i1), &secret)
            .await
            .unwrap();
        assert_eq!((bin, payload), (bin_a.clone(), payload_a));
        assert_eq!(reg.state.log.lock().unwrap().len(), requests);

        // A second release pushes the first out (capacity 1).
        let (bin2, p2) = cache.get(&client, &r2, &secret).await.unwrap();
        assert_eq!(std::fs::read(&bin2).unwrap(), b"#!two");
        assert_eq!(p2.digest, i2);
        assert!(!bin_a.exists());
        let left: Vec<_> = std::fs::read_dir(root.path().join("installers"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1);
    }
}

//! The image server: discovery ISOs at `/byapikey/<token>/<version>/<arch>/<type>.iso`, the
//! discovery ignition embedded into the cached base ISO as it streams (Range and HEAD);
//! and the PXE artifacts read out of that same base ISO: `/boot-artifacts/{kernel,rootfs}`
//! and the per-infra-env `/images/<id>/pxe-initrd` (base initrd + ignition cpio + overlay).

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;

use super::auth::Keys;
use super::error::ApiError;
use super::http::ApiQuery;
use super::images::{
    CustomizedIso, FileParts, IsoExtent, OsImage, OsImageCache, Part, cpio::embed_area_payload,
    find_file, ignition_cpio, select,
};
use super::store::Store;

/// Where CoreOS live ISOs keep the PXE files (primary-volume names match case-insensitively).
const KERNEL_PATH: &str = "images/pxeboot/vmlinuz";
const INITRD_PATH: &str = "images/pxeboot/initrd.img";
const ROOTFS_PATH: &str = "images/pxeboot/rootfs.img";

#[derive(Clone)]
pub struct ImageServerState {
    pub store: Arc<Store>,
    pub keys: Arc<Keys>,
    pub cache: Arc<OsImageCache>,
    pub os_images: Arc<Vec<OsImage>>,
}

pub fn router(state: ImageServerState) -> Router {
    Router::new()
        .route(
            "/byapikey/{token}/{version}/{arch}/{file}",
            get(iso).head(iso),
        )
        .route(
            "/boot-artifacts/{artifact}",
            get(boot_artifact).head(boot_artifact),
        )
        .route("/images/{id}/pxe-initrd", get(pxe_initrd).head(pxe_initrd))
        .with_state(state)
}

async fn iso(
    State(s): State<ImageServerState>,
    Path((token, version, arch, file)): Path<(String, String, String, String)>,
    method: Method,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if !matches!(file.as_str(), "full.iso" | "minimal.iso") {
        return Err(ApiError::not_found(format!("unknown image {file:?}")));
    }
    let claims = s
        .keys
        .verify(&token)
        .map_err(|e| ApiError::unauthorized(format!("invalid image token: {e}")))?;
    let id = claims
        .infra_env_id
        .ok_or_else(|| ApiError::forbidden("the token is not an infra-env token"))?;
    let rec = s.store.infra_env_record(&id)?;
    let minimal = match file.as_str() {
        "minimal.iso" => minimal_base_iso(&s, &version, &arch).await?,
        _ => None,
    };
    let customized = match minimal {
        // The root filesystem by URL, and the network scripts the initramfs needs to fetch it
        // (static network, proxy) beside the ignition.
        Some(base) => {
            let overlays: Vec<&[u8]> = rec.minimal_initrd.iter().map(|o| &o[..]).collect();
            let embed = embed_area_payload(rec.discovery_ignition.as_bytes(), &overlays)
                .map_err(|e| ApiError::internal(format!("cannot customize the ISO: {e}")))?;
            let mut kargs = rec.kernel_arguments.clone();
            kargs.push(format!("coreos.live.rootfs_url={}", rec.rootfs_url));
            CustomizedIso::with_embed(base, embed.into(), &kargs).await
        }
        // The full ISO (also for `minimal.iso` when the base has no minimal-ISO data).
        None => {
            let base = base_iso(&s, &version, &arch).await?;
            CustomizedIso::open_with_kargs(base, &rec.discovery_ignition, &rec.kernel_arguments)
                .await
        }
    }
    .map_err(|e| ApiError::internal(format!("cannot customize the ISO: {e}")))?;
    Ok(customized
        .response(method == Method::HEAD, range(&headers))
        .into_response())
}

/// `arch` and `version` of the PXE URLs; `api_key` only on the initrd.
#[derive(Debug, Deserialize)]
struct PxeQuery {
    arch: Option<String>,
    version: Option<String>,
    api_key: Option<String>,
}

async fn boot_artifact(
    State(s): State<ImageServerState>,
    Path(artifact): Path<String>,
    ApiQuery(q): ApiQuery<PxeQuery>,
    method: Method,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let iso_path = match artifact.as_str() {
        "kernel" => KERNEL_PATH,
        "rootfs" => ROOTFS_PATH,
        _ => {
            return Err(ApiError::not_found(format!(
                "unknown boot artifact {artifact:?} (kernel or rootfs)"
            )));
        }
    };
    let (Some(arch), Some(version)) = (non_empty(&q.arch), non_empty(&q.version)) else {
        return Err(ApiError::bad_request(
            "the arch and version query parameters are required",
        ));
    };
    let base = base_iso(&s, version, arch).await?;
    let extent = locate(&base, iso_path).await?;
    let body = FileParts {
        path: base,
        parts: vec![Part::File {
            offset: extent.offset,
            len: extent.len,
        }],
    };
    Ok(body
        .response(method == Method::HEAD, range(&headers))
        .into_response())
}

async fn pxe_initrd(
    State(s): State<ImageServerState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<PxeQuery>,
    method: Method,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let token = non_empty(&q.api_key)
        .ok_or_else(|| ApiError::unauthorized("missing api_key query parameter"))?;
    let claims = s
        .keys
        .verify(token)
        .map_err(|e| ApiError::unauthorized(format!("invalid image token: {e}")))?;
    if claims.infra_env_id.as_deref() != Some(id.as_str()) {
        return Err(ApiError::forbidden(
            "the token does not grant access to this infra-env",
        ));
    }
    let rec = s.store.infra_env_record(&id)?;
    // The advertised URL always carries both; fall back to the infra-env's own image.
    let arch = non_empty(&q.arch).unwrap_or(&rec.cpu_architecture);
    let version = non_empty(&q.version).unwrap_or(&rec.openshift_version);
    let base = base_iso(&s, version, arch).await?;
    let initrd = locate(&base, INITRD_PATH).await?;
    let mut parts = vec![Part::File {
        offset: initrd.offset,
        len: initrd.len,
    }];
    // The kernel only finds an uncompressed cpio appended at a 4-byte boundary; it skips
    // the zero padding between archives.
    let pad = initrd.len.next_multiple_of(4) - initrd.len;
    if pad > 0 {
        parts.push(Part::Bytes(Bytes::from(vec![0u8; pad as usize])));
    }
    // CoreOS's live initrd reads `/config.ign`, as it does from the ISO embed area.
    parts.push(Part::Bytes(Bytes::from(ignition_cpio(
        rec.discovery_ignition.as_bytes(),
    ))));
    if let Some(overlay) = &rec.minimal_initrd {
        parts.push(Part::Bytes(Bytes::copy_from_slice(overlay)));
    }
    let body = FileParts { path: base, parts };
    Ok(body
        .response(method == Method::HEAD, range(&headers))
        .into_response())
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

fn range(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::RANGE).and_then(|v| v.to_str().ok())
}

/// The configured base image for `version`/`arch`, or 404 saying none is.
fn os_image<'a>(
    s: &'a ImageServerState,
    version: &str,
    arch: &str,
) -> Result<&'a OsImage, ApiError> {
    select(&s.os_images, version, arch).ok_or_else(|| {
        ApiError::not_found(format!(
            "no OS image configured for OpenShift {version} on {arch}"
        ))
    })
}

/// The cached base ISO for `version`/`arch`, downloading it on first use.
async fn base_iso(s: &ImageServerState, version: &str, arch: &str) -> Result<PathBuf, ApiError> {
    let image = os_image(s, version, arch)?;
    s.cache
        .get(image)
        .await
        .map_err(|e| ApiError::internal(format!("base ISO unavailable: {e}")))
}

/// The minimal ISO rebuilt from the base for `version`/`arch`; `None` when the base carries no
/// minimal-ISO data (logged with each download: its hosts get the full ISO).
async fn minimal_base_iso(
    s: &ImageServerState,
    version: &str,
    arch: &str,
) -> Result<Option<PathBuf>, ApiError> {
    let image = os_image(s, version, arch)?;
    let minimal = s
        .cache
        .minimal(image)
        .await
        .map_err(|e| ApiError::internal(format!("minimal ISO unavailable: {e}")))?;
    if minimal.is_none() {
        tracing::info!(
            url = %image.url,
            "the base ISO has no coreos/miniso.dat (CoreOS before 2021-12): minimal.iso serves the full ISO"
        );
    }
    Ok(minimal)
}

/// The extent of `iso_path` in the base ISO; the directory walk is blocking file I/O.
async fn locate(base: &std::path::Path, iso_path: &'static str) -> Result<IsoExtent, ApiError> {
    let base = base.to_path_buf();
    let found = tokio::task::spawn_blocking(move || {
        let mut f = std::fs::File::open(&base).map_err(|e| e.to_string())?;
        find_file(&mut f, iso_path).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| ApiError::internal(format!("reading the base ISO: {e}")))?;
    found.map_err(|e| ApiError::internal(format!("base ISO has no usable {iso_path}: {e}")))
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use http_body_util::BodyExt;

    use super::super::auth::Claims;
    use super::super::images::cpio::{self, Entry};
    use super::super::images::{TestIsoContents, write_test_iso};
    use super::super::store::InfraEnvRecord;
    use super::*;
    use crate::domain::Config;

    const IE: &str = "7b0e4a6c-0000-4000-8000-000000000001";
    const IGN: &str = r#"{"ignition":{"version":"3.1.0"}}"#;

    struct Fixture {
        _dir: tempfile::TempDir,
        state: ImageServerState,
        token: String,
    }

    fn fixture(overlay: Option<&[u8]>) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let iso = dir.path().join("base.iso");
        let contents = TestIsoContents {
            kernel: b"kernel!",
            initrd: b"initrd",
            rootfs: b"rootfs",
        };
        write_test_iso(&iso, &contents, 64 * 1024).unwrap();
        let (store, _rx) = Store::new(Config::default());
        store.upsert_infra_env(InfraEnvRecord {
            id: IE.into(),
            discovery_ignition: IGN.into(),
            minimal_initrd: overlay.map(Into::into),
            cpu_architecture: "x86_64".into(),
            openshift_version: "4.17".into(),
            ..Default::default()
        });
        let keys = Keys::generate().unwrap();
        let token = keys.sign(&Claims::infra_env(IE));
        let os_images = vec![OsImage {
            openshift_version: "4.17".into(),
            cpu_architecture: "x86_64".into(),
            url: format!("file://{}", iso.display()),
            version: "417".into(),
        }];
        let state = ImageServerState {
            store,
            keys: Arc::new(keys),
            cache: Arc::new(OsImageCache::new(dir.path().join("cache"))),
            os_images: Arc::new(os_images),
        };
        Fixture {
            _dir: dir,
            state,
            token,
        }
    }

    fn query(arch: Option<&str>, version: Option<&str>, key: Option<&str>) -> ApiQuery<PxeQuery> {
        ApiQuery(PxeQuery {
            arch: arch.map(Into::into),
            version: version.map(Into::into),
            api_key: key.map(Into::into),
        })
    }

    async fn artifact(
        f: &Fixture,
        name: &str,
        q: ApiQuery<PxeQuery>,
        range: Option<&str>,
    ) -> Result<(StatusCode, Vec<u8>), ApiError> {
        let mut headers = HeaderMap::new();
        if let Some(r) = range {
            headers.insert(header::RANGE, r.parse().unwrap());
        }
        let r = boot_artifact(
            State(f.state.clone()),
            Path(name.into()),
            q,
            Method::GET,
            headers,
        )
        .await?;
        let status = r.status();
        Ok((status, body(r).await))
    }

    async fn body(r: Response) -> Vec<u8> {
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    async fn initrd(f: &Fixture, id: &str, key: Option<&str>) -> Result<Vec<u8>, ApiError> {
        let q = query(Some("x86_64"), Some("4.17"), key);
        let r = pxe_initrd(
            State(f.state.clone()),
            Path(id.into()),
            q,
            Method::GET,
            HeaderMap::new(),
        )
        .await?;
        assert_eq!(r.status(), StatusCode::OK);
        Ok(body(r).await)
    }

    #[tokio::test]
    async fn kernel_and_rootfs_come_out_of_the_base_iso() {
        let f = fixture(None);
        let q = || query(Some("x86_64"), Some("4.17"), None);
        let (st, b) = artifact(&f, "kernel", q(), None).await.unwrap();
        assert_eq!((st, b.as_slice()), (StatusCode::OK, &b"kernel!"[..]));
        let (st, b) = artifact(&f, "rootfs", q(), None).await.unwrap();
        assert_eq!((st, b.as_slice()), (StatusCode::OK, &b"rootfs"[..]));
        let (st, b) = artifact(&f, "kernel", q(), Some("bytes=2-3"))
            .await
            .unwrap();
        assert_eq!(
            (st, b.as_slice()),
            (StatusCode::PARTIAL_CONTENT, &b"rn"[..])
        );
        let status = |r: Result<(StatusCode, Vec<u8>), ApiError>| r.unwrap_err().status;
        assert_eq!(
            status(artifact(&f, "initrd", q(), None).await),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status(artifact(&f, "kernel", query(Some("x86_64"), None, None), None).await),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(artifact(&f, "kernel", query(Some(""), Some("4.17"), None), None).await),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(artifact(&f, "kernel", query(Some("s390x"), Some("4.17"), None), None).await),
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn initrd_appends_the_ignition_cpio_and_overlay() {
        let overlay = cpio::ignition_cpio(b"overlay");
        let f = fixture(Some(&overlay));
        let got = initrd(&f, IE, Some(&f.token)).await.unwrap();
        // "initrd" is 6 bytes: two zero bytes align the appended archive.
        assert_eq!(&got[..8], b"initrd\0\0");
        let cpio_len = cpio::ignition_cpio(IGN.as_bytes()).len();
        // The kernel reads both archives, one after the other.
        let entries = cpio::read(&got[8..]).unwrap();
        assert!(
            matches!(&entries[..], [Entry::File { path, data, .. }, Entry::File { data: second, .. }]
            if path == "config.ign" && data == IGN.as_bytes() && second == b"overlay")
        );
        assert_eq!(&got[8 + cpio_len..], &overlay[..]);

        let f = fixture(None);
        let got = initrd(&f, IE, Some(&f.token)).await.unwrap();
        assert_eq!(got.len(), 8 + cpio_len);
    }

    #[tokio::test]
    async fn initrd_needs_a_token_for_this_infra_env() {
        let f = fixture(None);
        let err = initrd(&f, IE, None).await.unwrap_err();
        assert_eq!(err.status, StatusCode::UNAUTHORIZED);
        let err = initrd(&f, IE, Some("x.y.z")).await.unwrap_err();
        assert_eq!(err.status, StatusCode::UNAUTHORIZED);
        let other = f.state.keys.sign(&Claims::infra_env("another"));
        let err = initrd(&f, IE, Some(&other)).await.unwrap_err();
        assert_eq!(err.status, StatusCode::FORBIDDEN);
        let cluster = f.state.keys.sign(&Claims::cluster("c1"));
        let err = initrd(&f, IE, Some(&cluster)).await.unwrap_err();
        assert_eq!(err.status, StatusCode::FORBIDDEN);
    }
}

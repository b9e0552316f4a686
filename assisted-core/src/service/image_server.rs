//! The image server: discovery ISOs at `/byapikey/<token>/<version>/<arch>/<type>.iso`, the
//! discovery ignition embedded into the cached base ISO as it streams (Range and HEAD).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::auth::Keys;
use super::error::ApiError;
use super::images::{CustomizedIso, OsImage, OsImageCache, select};
use super::store::Store;

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
        .route("/boot-artifacts/{artifact}", get(not_served))
        .route("/images/{id}/pxe-initrd", get(not_served))
        .with_state(state)
}

async fn not_served() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_IMPLEMENTED,
        "PXE boot artifacts are not served yet; boot the discovery ISO",
    )
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
    let image = select(&s.os_images, &version, &arch).ok_or_else(|| {
        ApiError::not_found(format!(
            "no OS image configured for OpenShift {version} on {arch}"
        ))
    })?;
    let base = s
        .cache
        .get(image)
        .await
        .map_err(|e| ApiError::internal(format!("base ISO unavailable: {e}")))?;
    let customized = CustomizedIso::open(base, &rec.discovery_ignition)
        .await
        .map_err(|e| ApiError::internal(format!("cannot customize the ISO: {e}")))?;
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    Ok(customized
        .response(method == Method::HEAD, range)
        .into_response())
}

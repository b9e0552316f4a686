//! The agent REST API: assisted-service's v2 paths and JSON shapes, so the unmodified discovery
//! agent, assisted-installer and controller talk to it. Every error, including axum's own
//! extractor rejections, is answered with the upstream JSON error body.

mod files;
mod handlers;
pub mod logs;
pub mod models;
mod multipart;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use utoipa::OpenApi;

use super::auth::{Claims, Keys};
use super::error::ApiError;
use super::store::Store;

/// Every route lives under this prefix, like upstream's basePath + `/v2`.
pub const BASE: &str = "/api/assisted-install/v2";
/// Limit for JSON bodies; inventories of big hosts stay well below it.
pub const JSON_BODY_LIMIT: usize = 2 * 1024 * 1024;
/// Limit for uploaded log archives.
pub const LOGS_BODY_LIMIT: usize = 256 * 1024 * 1024;

/// Header carrying the agent token (`agentAuth`).
pub const TOKEN_HEADER: &str = "x-secret-key";
/// Query parameter carrying the token in download URLs (`urlAuth`).
pub const TOKEN_QUERY: &str = "api_key";

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub keys: Arc<Keys>,
    /// Root of the file store: `<cluster_id>/<file>` like upstream's object keys.
    pub files_root: PathBuf,
    /// Reads what other controllers attach to a cluster's logs bundle (`None` in tests that
    /// run without an apiserver: the bundle then has no attachments).
    pub client: Option<kube::Client>,
}

/// The API router, every route under [`BASE`].
pub fn router(state: AppState) -> Router {
    use handlers::*;
    let api = Router::new()
        .route("/infra-envs/{infra_env_id}/hosts", post(register_host))
        .route(
            "/infra-envs/{infra_env_id}/hosts/{host_id}/instructions",
            get(next_steps).post(step_reply),
        )
        .route(
            "/infra-envs/{infra_env_id}/hosts/{host_id}/progress",
            put(host_progress),
        )
        .route(
            "/infra-envs/{infra_env_id}/hosts/{host_id}/logs-progress",
            put(host_logs_progress),
        )
        .route(
            "/infra-envs/{infra_env_id}/downloads/files",
            get(infra_env_files),
        )
        .route(
            "/infra-envs/{infra_env_id}/downloads/minimal-initrd",
            get(minimal_initrd),
        )
        .route(
            "/infra-env/{infra_env_id}/hosts/{host_id}/downloads/ignition",
            get(host_ignition),
        )
        .route("/clusters/{cluster_id}", get(get_cluster))
        .route("/clusters/{cluster_id}/hosts", get(list_cluster_hosts))
        .route(
            "/clusters/{cluster_id}/logs",
            // The handler streams the body and enforces its own, larger limit.
            post(upload_logs)
                .layer(DefaultBodyLimit::disable())
                .get(download_logs),
        )
        .route("/clusters/{cluster_id}/downloads/files", get(cluster_files))
        .route(
            "/clusters/{cluster_id}/downloads/credentials",
            get(cluster_credentials),
        )
        .route(
            "/clusters/{cluster_id}/uploads/ingress-cert",
            post(upload_ingress_cert),
        )
        .route("/clusters/{cluster_id}/progress", put(cluster_progress))
        .route(
            "/clusters/{cluster_id}/monitored-operators",
            get(list_operators).put(report_operator),
        )
        .route(
            "/clusters/{cluster_id}/actions/complete-installation",
            post(complete_installation),
        )
        .route(
            "/clusters/{cluster_id}/logs-progress",
            put(cluster_logs_progress),
        )
        .route("/events", post(trigger_event))
        .route_layer(middleware::from_fn_with_state(
            state.store.clone(),
            acknowledge_once_saved,
        ))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
        // Public: the spec describes the API, it grants nothing.
        .route("/openapi.yaml", get(serve_openapi))
        .layer(DefaultBodyLimit::max(JSON_BODY_LIMIT))
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
        })
        .with_state(state);
    Router::new()
        .nest(BASE, api)
        .fallback(|| async { ApiError::not_found("no such endpoint") })
}

async fn serve_openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/yaml")], openapi_yaml()).into_response()
}

/// The API description generated from the handlers and models.
pub fn openapi_yaml() -> String {
    // The document is plain data; serializing it cannot fail in practice.
    serde_yaml::to_string(&handlers::ApiDoc::openapi()).unwrap_or_default()
}

/// The agent token of a request: the `X-Secret-Key` header, else the `api_key` query parameter.
pub(crate) fn token(parts: &Parts) -> Option<String> {
    let header = parts
        .headers
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if let Some(token) = header {
        return Some(token.to_string());
    }
    // JWTs are base64url and dots: no percent-decoding is needed.
    parts.uri.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == TOKEN_QUERY).then(|| v.to_string())
    })
}

/// Decides whether `claims` may act on the resource named by the path's first two segments.
fn authorize(store: &Store, claims: &Claims, path: &str) -> Result<(), ApiError> {
    let path = path.strip_prefix(BASE).unwrap_or(path);
    let mut segs = path.trim_start_matches('/').split('/');
    let (kind, id) = (segs.next().unwrap_or(""), segs.next().unwrap_or(""));
    let deny = || ApiError::forbidden("the token does not grant access to this resource");
    let bound = |ie: &str| store.infra_env_bound_cluster(ie);
    let allowed = match (kind, &claims.infra_env_id, &claims.cluster_id) {
        ("events", _, _) => true,
        ("infra-envs" | "infra-env", Some(ie), _) => ie == id,
        ("infra-envs" | "infra-env", None, Some(cid)) => bound(id).as_deref() == Some(cid),
        ("clusters", Some(ie), _) => bound(ie).as_deref() == Some(id),
        ("clusters", None, Some(cid)) => cid == id,
        _ => false,
    };
    if allowed {
        return Ok(());
    }
    // Why, for whoever reads the log after a 403 (the token's scope, what the path names).
    tracing::warn!(
        path,
        token_infra_env = claims.infra_env_id.as_deref().unwrap_or(""),
        token_cluster = claims.cluster_id.as_deref().unwrap_or(""),
        bound_cluster = kind
            .starts_with("infra-env")
            .then(|| bound(id))
            .flatten()
            .unwrap_or_default(),
        "agent API request refused: the token's scope does not cover the resource"
    );
    Err(deny())
}

async fn authenticate(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let Some(tok) = token(&parts).filter(|t| !t.is_empty()) else {
        return ApiError::unauthorized("missing agent token (X-Secret-Key or api_key)")
            .into_response();
    };
    let claims = match st.keys.verify(&tok) {
        Ok(c) => c,
        Err(e) => return ApiError::unauthorized(e.to_string()).into_response(),
    };
    // Inside `nest` the URI is already stripped of BASE; authorize accepts both forms.
    if let Err(e) = authorize(&st.store, &claims, parts.uri.path()) {
        return e.into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

/// How long a request that changed the store waits for the journal before it is answered 503
/// (the agent tries again; every change it reports can be reported twice).
pub const SAVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A request that may have changed the store (anything but GET and HEAD) is answered only once
/// the journal has saved its change: an acknowledged report survives the core being killed the
/// next moment, as upstream's database commit does. Requests that arrive together wait for one
/// write together.
async fn acknowledge_once_saved(
    State(store): State<Arc<Store>>,
    req: Request,
    next: Next,
) -> Response {
    let reads_only = matches!(*req.method(), Method::GET | Method::HEAD);
    let response = next.run(req).await;
    if reads_only || !response.status().is_success() {
        return response;
    }
    if store.wait_saved(store.marks(), SAVE_TIMEOUT).await {
        response
    } else {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the change could not be saved yet; try again",
        )
        .into_response()
    }
}

/// Path parameters; rejections become JSON errors.
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e| ApiError::new(e.status(), e.body_text()))
    }
}

/// Query parameters; rejections become JSON errors.
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))
    }
}

/// How long a request body may take to arrive: a client that announces a body and sends none
/// must not hold a connection (and a handler) forever.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The error for a body that did not arrive in time.
pub fn body_timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "the request body did not arrive within {} s",
            BODY_READ_TIMEOUT.as_secs()
        ),
    )
}

/// A body within the route's limit (413 beyond it), read within [`BODY_READ_TIMEOUT`] (408).
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        tokio::time::timeout(BODY_READ_TIMEOUT, Bytes::from_request(req, state))
            .await
            .map_err(|_| body_timeout())?
            .map(RawBody)
            .map_err(|e| ApiError::new(e.status(), e.body_text()))
    }
}

/// A JSON body as bytes: the content type, when given, must be JSON.
pub struct JsonBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBytes {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
            let essence = ct.split(';').next().unwrap_or("").trim();
            if essence != "application/json" && !essence.ends_with("+json") {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!("expected application/json, got {essence:?}"),
                ));
            }
        }
        RawBody::from_request(req, state)
            .await
            .map(|b| JsonBytes(b.0))
    }
}

/// A JSON body decoded into `T`; malformed or mistyped JSON is a 400, a missing required
/// field a 422 (upstream's go-swagger validation: "<field> in body is required").
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let JsonBytes(b) = JsonBytes::from_request(req, state).await?;
        serde_json::from_slice(&b).map(ApiJson).map_err(body_error)
    }
}

/// The error for a body that does not decode into the model.
fn body_error(e: serde_json::Error) -> ApiError {
    let text = e.to_string();
    match text
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
    {
        Some(field) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{field} in body is required"),
        ),
        None => ApiError::bad_request(format!("invalid request body: {text}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Config;
    use crate::service::store::InfraEnvRecord;

    const IE_A: &str = "11111111-1111-1111-1111-111111111111";
    const IE_B: &str = "44444444-4444-4444-4444-444444444444";
    const CL_A: &str = "22222222-2222-2222-2222-222222222222";

    fn store() -> Arc<Store> {
        let (s, _rx) = Store::new(Config::default());
        s.edit_for_tests(|st| {
            st.infra_envs.insert(
                IE_A.into(),
                InfraEnvRecord {
                    id: IE_A.into(),
                    cluster_id: Some(CL_A.into()),
                    ..Default::default()
                },
            );
            st.infra_envs.insert(
                IE_B.into(),
                InfraEnvRecord {
                    id: IE_B.into(),
                    ..Default::default()
                },
            );
        });
        s
    }

    /// A route that marks the store, behind [`acknowledge_once_saved`].
    fn marking_router(store: &Arc<Store>) -> Router {
        use crate::service::store::Dirty;
        let marks = store.clone();
        let mark = move || async move {
            marks.mark(Dirty::Cluster(CL_A.into()));
            StatusCode::OK
        };
        Router::new()
            .route("/change", post(mark.clone()).get(mark))
            .route_layer(middleware::from_fn_with_state(
                store.clone(),
                acknowledge_once_saved,
            ))
    }

    async fn call(router: &Router, method: &str) -> StatusCode {
        use tower::ServiceExt;
        let req = Request::builder()
            .method(method)
            .uri("/change")
            .body(axum::body::Body::empty())
            .unwrap();
        router.clone().oneshot(req).await.unwrap().status()
    }

    /// A change is acknowledged once the journal saved it; unsaved after [`SAVE_TIMEOUT`], 503
    /// (the agent sends it again). A GET does not wait.
    #[tokio::test(start_paused = true)]
    async fn a_change_is_acknowledged_once_saved() {
        let store = store();
        store.attach_journal();
        let router = marking_router(&store);
        assert_eq!(call(&router, "GET").await, StatusCode::OK);
        // Nobody saves: the answer waits the whole timeout, then says so.
        let started = tokio::time::Instant::now();
        assert_eq!(call(&router, "POST").await, StatusCode::SERVICE_UNAVAILABLE);
        assert!(started.elapsed() >= SAVE_TIMEOUT);
        // Saved meanwhile (what the journal publishes after its pass): answered at once.
        let saver = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            saver.saved_through(saver.marks());
        });
        let started = tokio::time::Instant::now();
        assert_eq!(call(&router, "POST").await, StatusCode::OK);
        assert!(started.elapsed() < SAVE_TIMEOUT);
    }

    /// A body that never arrives is answered 408 after [`BODY_READ_TIMEOUT`] (it held the
    /// connection forever before).
    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_arrives_times_out() {
        let body = axum::body::Body::from_stream(futures::stream::pending::<
            Result<Bytes, std::io::Error>,
        >());
        let req = Request::builder()
            .method("POST")
            .uri("/")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, "10000000")
            .body(body)
            .unwrap();
        let read = tokio::spawn(async move { JsonBytes::from_request(req, &()).await });
        tokio::time::sleep(BODY_READ_TIMEOUT + std::time::Duration::from_secs(1)).await;
        let Err(e) = read.await.unwrap() else {
            panic!("a body that never arrived was read");
        };
        assert_eq!(e.status, StatusCode::REQUEST_TIMEOUT);
    }

    #[test]
    fn infra_env_tokens_open_their_infra_env_and_bound_cluster() {
        let s = store();
        let a = Claims::infra_env(IE_A);
        assert!(authorize(&s, &a, &format!("{BASE}/infra-envs/{IE_A}/hosts")).is_ok());
        assert!(
            authorize(
                &s,
                &a,
                &format!("/infra-env/{IE_A}/hosts/x/downloads/ignition")
            )
            .is_ok()
        );
        assert!(authorize(&s, &a, &format!("/clusters/{CL_A}/hosts")).is_ok());
        assert!(authorize(&s, &a, "/events").is_ok());
        let e = authorize(&s, &a, &format!("/infra-envs/{IE_B}/hosts")).unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);
        let b = Claims::infra_env(IE_B);
        assert!(authorize(&s, &b, &format!("/clusters/{CL_A}")).is_err());
        assert!(authorize(&s, &a, "/clusters").is_err());
        assert!(authorize(&s, &a, "/openapi.yaml").is_err());
    }

    #[test]
    fn a_clusters_hosts_vouch_for_their_infra_env_until_it_is_loaded_and_bound() {
        use crate::domain::{ClusterSnapshot, HostSnapshot};
        use crate::service::store::{ClusterRecord, ClusterSettings};
        // The restored cluster knows its host and the infra-env it came through; the
        // infra-env's record arrives with its next reconcile.
        const IE_C: &str = "55555555-5555-5555-5555-555555555555";
        let (s, _rx) = Store::new(Config::default());
        let now = jiff::Timestamp::UNIX_EPOCH;
        let mut snap = ClusterSnapshot::new(CL_A, "c", now);
        let host = HostSnapshot::new_registered("h1", IE_C, Some(&snap), now);
        snap.hosts.push(host);
        s.restore_cluster(ClusterRecord::new(snap, ClusterSettings::default()), now);
        let progress = format!("/infra-envs/{IE_C}/hosts/h1/progress");
        assert!(authorize(&s, &Claims::cluster(CL_A), &progress).is_ok());
        assert!(authorize(&s, &Claims::cluster("another-cluster"), &progress).is_err());
        assert!(authorize(&s, &Claims::infra_env(IE_C), &format!("/clusters/{CL_A}")).is_ok());
        // Loaded but bound to no cluster (late binding): its hosts still vouch, as the cluster's
        // installer-controller reports their progress through it.
        let load = |cluster_id: Option<&str>| {
            s.edit_for_tests(|st| {
                st.infra_envs.insert(
                    IE_C.into(),
                    InfraEnvRecord {
                        id: IE_C.into(),
                        cluster_id: cluster_id.map(str::to_string),
                        ..Default::default()
                    },
                );
            })
        };
        load(None);
        assert!(authorize(&s, &Claims::cluster(CL_A), &progress).is_ok());
        // Bound, the record decides.
        load(Some("another-cluster"));
        assert!(authorize(&s, &Claims::cluster(CL_A), &progress).is_err());
    }

    #[test]
    fn cluster_tokens_open_their_cluster_and_bound_infra_envs() {
        let s = store();
        let c = Claims::cluster(CL_A);
        assert!(authorize(&s, &c, &format!("/clusters/{CL_A}/downloads/files")).is_ok());
        assert!(authorize(&s, &c, &format!("/infra-envs/{IE_A}/hosts")).is_ok());
        assert!(authorize(&s, &c, &format!("/infra-envs/{IE_B}/hosts")).is_err());
        assert!(authorize(&s, &c, "/clusters/other").is_err());
    }
}

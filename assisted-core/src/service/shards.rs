//! Sharded cores (`--watch-filter`): each core serves the InfraEnvs, Agents and clusters of its
//! shard only, and a host or BMC that reaches another shard's core is sent to the right one.
//!
//! A host normally never does: the discovery image of its InfraEnv carries its own shard's
//! agent API URL, and the InfraEnv's ISO URL its own shard's image server. It does when a
//! Service in front of several shards picks the wrong pod, or when a cluster moved to another
//! shard after its image was made. Then the core it reached does not hold the infra-env, and
//! answers `307 Temporary Redirect` to the core that does, with the same path and query (the
//! discovery agent's HTTP client follows it, keeping the method, body and token header).
//!
//! How a core learns who serves an infra-env: every sharded core writes its two URLs as
//! annotations on the InfraEnvs it serves ([`announcement`], one write per InfraEnv), and
//! every sharded core reads every InfraEnv's metadata (a metadata-only watch: no spec, no
//! status, no managedFields; about half a KiB per InfraEnv). Only a request whose token is
//! valid is redirected (the shards share the agent token keys), so an id's owner is not told
//! to a stranger. A cluster-scoped token (the installer controller in a new cluster) carries
//! no infra-env and is not redirected: it runs from the install's own ignition, which names
//! the right core.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use kube::Resource;
use kube::api::{Api, ObjectMeta};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::{Claims, Keys};
use super::error::ApiError;
use super::store::Store;
use super::urls::ServiceUrls;
use crate::api::infraenv::InfraEnv;

/// On an InfraEnv: the agent API base URL of the core serving it.
pub const AGENT_API_URL_ANNOTATION: &str = "assisted-core.openshift-assisted.io/agent-api-url";
/// On an InfraEnv: the image server base URL of the core serving it.
pub const IMAGES_URL_ANNOTATION: &str = "assisted-core.openshift-assisted.io/images-url";
/// The field manager of those two annotations.
pub const ANNOUNCE_MANAGER: &str = "assisted-core-shard";

/// Which of a core's two servers a request reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    AgentApi,
    Images,
}

impl Service {
    fn annotation(self) -> &'static str {
        match self {
            Service::AgentApi => AGENT_API_URL_ANNOTATION,
            Service::Images => IMAGES_URL_ANNOTATION,
        }
    }

    fn own(self, urls: &ServiceUrls) -> &str {
        match self {
            Service::AgentApi => &urls.agent_api,
            Service::Images => &urls.images,
        }
    }
}

/// The server-side apply body that announces this core on an InfraEnv, or `None` when its
/// annotations already say so.
pub fn announcement(annotations: &BTreeMap<String, String>, own: &ServiceUrls) -> Option<Value> {
    let says = |key: &str, url: &str| annotations.get(key).map(String::as_str) == Some(url);
    if says(AGENT_API_URL_ANNOTATION, &own.agent_api) && says(IMAGES_URL_ANNOTATION, &own.images) {
        return None;
    }
    Some(json!({
        "apiVersion": InfraEnv::api_version(&()),
        "kind": InfraEnv::kind(&()),
        "metadata": { "annotations": {
            AGENT_API_URL_ANNOTATION: own.agent_api,
            IMAGES_URL_ANNOTATION: own.images,
        }},
    }))
}

/// The base URL of `service` on the core announced on the InfraEnv with uid `id`, when that
/// is another core than `own`.
pub fn owner_among<'a>(
    infraenvs: impl IntoIterator<Item = &'a ObjectMeta>,
    id: &str,
    service: Service,
    own: &ServiceUrls,
) -> Option<String> {
    let meta = infraenvs
        .into_iter()
        .find(|m| m.uid.as_deref() == Some(id))?;
    let url = meta.annotations.as_ref()?.get(service.annotation())?;
    (!url.is_empty() && url != service.own(own)).then(|| url.clone())
}

/// The infra-env a request is about: the token's, else the one its path names
/// (`/infra-envs/{id}/...`, `/infra-env/{id}/...` or the image server's `/images/{id}/...`).
pub fn infra_env_of(claims: &Claims, path: &str) -> Option<String> {
    if let Some(id) = &claims.infra_env_id {
        return Some(id.clone());
    }
    let mut segments = path.trim_start_matches('/').split('/');
    while let Some(segment) = segments.next() {
        if matches!(segment, "infra-envs" | "infra-env" | "images") {
            return segments
                .next()
                .filter(|id| !id.is_empty())
                .map(String::from);
        }
    }
    None
}

/// Where the redirect goes: the owner's base URL and the request's own path and query.
pub fn location(base: &str, path_and_query: &str) -> String {
    format!("{}{path_and_query}", base.trim_end_matches('/'))
}

/// The 307 answer: the Location, and upstream's JSON error body saying why.
pub fn redirect(location: &str, infra_env: &str) -> Response {
    let reason = format!("infra-env {infra_env} is served by another core: {location}");
    let mut response = ApiError::new(StatusCode::TEMPORARY_REDIRECT, reason).into_response();
    match HeaderValue::from_str(location) {
        Ok(value) => {
            response.headers_mut().insert(header::LOCATION, value);
            response
        }
        // A URL the annotation cannot make a header of: say so rather than redirect nowhere.
        Err(_) => ApiError::not_found(format!(
            "infra-env {infra_env} is served by another core whose URL is not valid: {location:?}"
        ))
        .into_response(),
    }
}

/// Every InfraEnv's metadata, as a sharded core reads it to find other shards' InfraEnvs.
pub struct Directory {
    infraenvs: reflector::Store<PartialObjectMeta<InfraEnv>>,
    own: ServiceUrls,
}

impl Directory {
    /// Starts the metadata watch of InfraEnvs (every namespace `api` covers); it runs until
    /// `shutdown`.
    pub fn start(
        api: Api<PartialObjectMeta<InfraEnv>>,
        own: ServiceUrls,
        shutdown: watch::Receiver<bool>,
    ) -> Arc<Directory> {
        let (reader, writer) = reflector::store();
        let stream = watcher(api, watcher::Config::default().any_semantic())
            .default_backoff()
            .modify(|m: &mut PartialObjectMeta<InfraEnv>| m.metadata.managed_fields = None)
            .reflect(writer)
            .applied_objects();
        tokio::spawn(async move {
            let mut stop = shutdown;
            let mut stream = std::pin::pin!(stream);
            loop {
                tokio::select! {
                    next = stream.next() => match next {
                        Some(Err(e)) => tracing::debug!(error = %e, "InfraEnv metadata watch"),
                        Some(Ok(_)) => {}
                        None => return,
                    },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        });
        Arc::new(Directory {
            infraenvs: reader,
            own,
        })
    }

    /// The base URL of `service` on the core serving infra-env `id`, when another core does.
    pub fn owner(&self, id: &str, service: Service) -> Option<String> {
        let state = self.infraenvs.state();
        owner_among(state.iter().map(|m| &m.metadata), id, service, &self.own)
    }

    /// The redirect for a request with valid `claims` to `path_and_query` (as the client sent
    /// it) that this core cannot serve because another core holds its infra-env.
    pub fn redirect_if_foreign(
        &self,
        held: impl Fn(&str) -> bool,
        claims: &Claims,
        path_and_query: &str,
        service: Service,
    ) -> Option<Response> {
        let path = path_and_query.split('?').next().unwrap_or_default();
        let infra_env = infra_env_of(claims, path)?;
        if held(&infra_env) {
            return None;
        }
        let base = self.owner(&infra_env, service)?;
        tracing::info!(%infra_env, to = %base, "request for another shard's infra-env redirected");
        Some(redirect(&location(&base, path_and_query), &infra_env))
    }
}

/// What the redirecting layer needs: the directory, what this core holds, the token keys.
#[derive(Clone)]
pub struct Guard {
    pub directory: Arc<Directory>,
    pub store: Arc<Store>,
    pub keys: Arc<Keys>,
    pub service: Service,
}

/// `router` with requests for other shards' infra-envs redirected there (see the module doc).
/// It runs before the router's own authentication: a request without a valid token goes on
/// and is refused there as before.
pub fn redirect_foreign(router: Router, guard: Guard) -> Router {
    router.layer(middleware::from_fn_with_state(
        guard,
        send_foreign_elsewhere,
    ))
}

async fn send_foreign_elsewhere(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let path_and_query = req
        .uri()
        .path_and_query()
        .map(|pq| pq.as_str().to_string())
        .unwrap_or_default();
    let path = req.uri().path();
    let held = |id: &str| guard.store.holds_infra_env(id);
    // The common case first, without checking a signature: the path names one we hold.
    if infra_env_of(&Claims::default(), path).is_some_and(|id| held(&id)) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let claims = token_of(&parts).and_then(|t| guard.keys.verify(&t).ok());
    let req = Request::from_parts(parts, body);
    let redirect = claims.and_then(|claims| {
        guard
            .directory
            .redirect_if_foreign(held, &claims, &path_and_query, guard.service)
    });
    match redirect {
        Some(response) => response,
        None => next.run(req).await,
    }
}

/// The agent token of a request: the agent API's (the `X-Secret-Key` header, the `api_key`
/// query parameter), else the image server's `/byapikey/{token}/...` path.
fn token_of(parts: &Parts) -> Option<String> {
    super::http::token(parts)
        .filter(|t| !t.is_empty())
        .or_else(|| {
            let mut segments = parts.uri.path().trim_start_matches('/').split('/');
            (segments.next() == Some("byapikey"))
                .then(|| segments.next().map(String::from))
                .flatten()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> ServiceUrls {
        ServiceUrls {
            agent_api: "http://a:8090".into(),
            images: "http://a:8091".into(),
        }
    }

    fn announced(uid: &str, api: &str, images: &str) -> ObjectMeta {
        ObjectMeta {
            uid: Some(uid.into()),
            annotations: Some(BTreeMap::from([
                (AGENT_API_URL_ANNOTATION.into(), api.into()),
                (IMAGES_URL_ANNOTATION.into(), images.into()),
            ])),
            ..Default::default()
        }
    }

    #[test]
    fn a_core_announces_itself_once() {
        let body = announcement(&BTreeMap::new(), &own()).unwrap();
        assert_eq!(
            body["metadata"]["annotations"][AGENT_API_URL_ANNOTATION],
            "http://a:8090"
        );
        assert_eq!(body["kind"], "InfraEnv");
        let done = announced("x", "http://a:8090", "http://a:8091")
            .annotations
            .unwrap();
        assert_eq!(announcement(&done, &own()), None);
        // Another core announced before (the cluster moved here): announce again.
        let moved = announced("x", "http://b:8090", "http://b:8091")
            .annotations
            .unwrap();
        assert!(announcement(&moved, &own()).is_some());
    }

    #[test]
    fn the_owner_is_another_core_or_none() {
        let list = [
            announced("ie-1", "http://b:8090", "http://b:8091"),
            announced("ie-2", "http://a:8090", "http://a:8091"),
            ObjectMeta {
                uid: Some("ie-3".into()),
                ..Default::default()
            },
        ];
        let owner = |id, service| owner_among(&list, id, service, &own());
        assert_eq!(
            owner("ie-1", Service::AgentApi).as_deref(),
            Some("http://b:8090")
        );
        assert_eq!(
            owner("ie-1", Service::Images).as_deref(),
            Some("http://b:8091")
        );
        // Ours (not synced yet), not announced yet, unknown: nothing to redirect to.
        assert_eq!(owner("ie-2", Service::AgentApi), None);
        assert_eq!(owner("ie-3", Service::AgentApi), None);
        assert_eq!(owner("ie-4", Service::AgentApi), None);
    }

    #[test]
    fn the_infra_env_comes_from_the_token_then_the_path() {
        let none = Claims {
            infra_env_id: None,
            cluster_id: Some("c".into()),
        };
        assert_eq!(
            infra_env_of(&Claims::infra_env("t"), "/clusters/c/downloads/files").as_deref(),
            Some("t")
        );
        assert_eq!(
            infra_env_of(&none, "/api/assisted-install/v2/infra-envs/ie/hosts").as_deref(),
            Some("ie")
        );
        assert_eq!(
            infra_env_of(&none, "/infra-env/ie/hosts/h/downloads/ignition").as_deref(),
            Some("ie")
        );
        assert_eq!(
            infra_env_of(&none, "/images/ie/pxe-initrd").as_deref(),
            Some("ie")
        );
        assert_eq!(infra_env_of(&none, "/clusters/c/progress"), None);
        assert_eq!(infra_env_of(&none, "/infra-envs/"), None);
    }

    #[test]
    fn the_redirect_keeps_path_and_query() {
        assert_eq!(
            location(
                "http://b:8090/",
                "/api/assisted-install/v2/infra-envs/x/hosts?a=1"
            ),
            "http://b:8090/api/assisted-install/v2/infra-envs/x/hosts?a=1"
        );
        let r = redirect("http://b:8090/p?q=1", "x");
        assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT);
        assert_eq!(r.headers()[header::LOCATION], "http://b:8090/p?q=1");
        let bad = redirect("http://b:8090/\n", "x");
        assert_eq!(bad.status(), StatusCode::NOT_FOUND);
    }
}

//! Every request a manager sends to the apiserver, counted by verb and resource:
//! `capoa_api_requests_total{verb, resource}` on its `/metrics`. The apiserver counts requests
//! too, but not by client; these say which of ours they are (what to cut first).

use std::sync::LazyLock;
use std::task::{Context, Poll};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

type Labels = Vec<(String, String)>;

static API_REQUESTS: LazyLock<Family<Labels, Counter>> = LazyLock::new(Family::default);

/// The counters, to register in the manager's registry (once).
pub fn family() -> Family<Labels, Counter> {
    API_REQUESTS.clone()
}

/// The count so far for `verb` and `resource` (tests, and whoever reads them in process).
pub fn count(verb: &str, resource: &str) -> u64 {
    API_REQUESTS
        .get_or_create(&vec![
            ("verb".into(), verb.into()),
            ("resource".into(), resource.into()),
        ])
        .get()
}

/// A request's verb and resource as the apiserver names them (`get`, `list`, `watch`,
/// `create`, `update`, `apply` (server-side apply), `patch`, `delete`, `deletecollection`;
/// `agentclusterinstalls/status`), from its method, path, query and content type. A path
/// outside the resource API (`/version`, discovery) is `(non-resource)`.
pub fn classify(
    method: &str,
    path: &str,
    query: Option<&str>,
    content_type: Option<&str>,
) -> (String, String) {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest: &[&str] = match segs.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => &[],
    };
    // `namespaces/<ns>/<resource>...`, unless it is the namespace itself.
    let rest = match rest {
        ["namespaces", _ns, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s, ..] => (*r, Some(*n), Some(*s)),
        _ => return (method.to_ascii_lowercase(), "(non-resource)".into()),
    };
    let watching =
        query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let verb = match (method, name.is_some()) {
        ("GET", _) if watching => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) if content_type.is_some_and(|c| c.starts_with("application/apply-patch")) => {
            "apply"
        }
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        (other, _) => return (other.to_ascii_lowercase(), resource.to_string()),
    };
    let resource = match sub {
        Some(s) => format!("{resource}/{s}"),
        None => resource.to_string(),
    };
    (verb.to_string(), resource)
}

fn record<B>(req: &http::Request<B>) {
    let content_type = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let (verb, resource) = classify(
        req.method().as_str(),
        req.uri().path(),
        req.uri().query(),
        content_type,
    );
    // Which object, for whoever profiles the requests (`--log-level=info,manager::requests=trace`).
    tracing::trace!(%verb, path = req.uri().path(), "apiserver request");
    API_REQUESTS
        .get_or_create(&vec![("verb".into(), verb), ("resource".into(), resource)])
        .inc();
}

/// The layer that counts; put it under the retry layer so that every attempt counts, as the
/// apiserver counts them.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountLayer;

impl<S> tower::Layer<S> for CountLayer {
    type Service = Counted<S>;
    fn layer(&self, inner: S) -> Counted<S> {
        Counted(inner)
    }
}

#[derive(Clone, Debug)]
pub struct Counted<S>(S);

impl<S, B> tower::Service<http::Request<B>> for Counted<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        record(&req);
        self.0.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(method: &str, path: &str, query: Option<&str>, ct: Option<&str>) -> (String, String) {
        classify(method, path, query, ct)
    }

    #[test]
    fn requests_are_named_as_the_apiserver_names_them() {
        let apply = Some("application/apply-patch+yaml");
        let merge = Some("application/merge-patch+json");
        let rows = [
            (
                c("GET", "/api/v1/namespaces/lab/secrets/s1", None, None),
                ("get", "secrets"),
            ),
            (
                c("GET", "/api/v1/namespaces/lab/secrets", None, None),
                ("list", "secrets"),
            ),
            (
                c(
                    "GET",
                    "/apis/cluster.x-k8s.io/v1beta2/machines",
                    Some("watch=true&resourceVersion=5"),
                    None,
                ),
                ("watch", "machines"),
            ),
            (
                c(
                    "PATCH",
                    "/apis/extensions.hive.openshift.io/v1beta1/namespaces/lab/agentclusterinstalls/a/status",
                    None,
                    apply,
                ),
                ("apply", "agentclusterinstalls/status"),
            ),
            (
                c(
                    "PATCH",
                    "/apis/controlplane.cluster.x-k8s.io/v1alpha3/namespaces/lab/openshiftassistedcontrolplanes/cp",
                    None,
                    merge,
                ),
                ("patch", "openshiftassistedcontrolplanes"),
            ),
            (
                c("POST", "/api/v1/namespaces/lab/events", None, None),
                ("create", "events"),
            ),
            (
                c(
                    "PUT",
                    "/apis/coordination.k8s.io/v1/namespaces/x/leases/l",
                    None,
                    None,
                ),
                ("update", "leases"),
            ),
            (
                c("DELETE", "/api/v1/namespaces/lab/configmaps/x", None, None),
                ("delete", "configmaps"),
            ),
            (
                c("GET", "/api/v1/namespaces/lab", None, None),
                ("get", "namespaces"),
            ),
            (c("GET", "/api/v1/nodes", None, None), ("list", "nodes")),
            (c("GET", "/version", None, None), ("get", "(non-resource)")),
            (c("GET", "/apis", None, None), ("get", "(non-resource)")),
        ];
        for (got, (verb, resource)) in rows {
            assert_eq!(got, (verb.to_string(), resource.to_string()));
        }
    }

    struct Answer;

    impl tower::Service<http::Request<()>> for Answer {
        type Response = ();
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<(), Self::Error>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: http::Request<()>) -> Self::Future {
            std::future::ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn the_layer_counts_each_request() {
        use tower::{Layer, Service};
        let before = count("get", "counted-things");
        let mut svc = CountLayer.layer(Answer);
        let req = http::Request::get("/api/v1/namespaces/x/counted-things/one")
            .body(())
            .unwrap();
        std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        svc.call(req).await.unwrap();
        assert_eq!(count("get", "counted-things"), before + 1);
    }
}

//! Write requests served by the kube-apiserver, from its `apiserver_request_total` counter.

use std::collections::BTreeMap;

/// The verbs of `apiserver_request_total` that change objects (`APPLY` is a server-side apply).
const WRITE_VERBS: [&str; 6] = [
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
];

/// `key="value"` labels of one sample line (no escaped quotes in the labels read here).
fn labels(inner: &str) -> BTreeMap<&str, &str> {
    let mut out = BTreeMap::new();
    let mut rest = inner;
    while let Some((key, after)) = rest.split_once("=\"") {
        let Some((value, tail)) = after.split_once('"') else {
            break;
        };
        out.insert(key.trim_start_matches(',').trim(), value);
        rest = tail;
    }
    out
}

/// Write requests so far by `"<resource>[/<subresource>] <VERB>"`, summed over response codes,
/// groups and versions, from the text of the apiserver's `/metrics`.
pub fn write_requests(metrics: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in metrics.lines() {
        let Some(sample) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((inner, value)) = sample.rsplit_once("} ") else {
            continue;
        };
        let l = labels(inner);
        let verb = l.get("verb").copied().unwrap_or("");
        if !WRITE_VERBS.contains(&verb) {
            continue;
        }
        let mut resource = l.get("resource").copied().unwrap_or("").to_owned();
        if let Some(sub) = l.get("subresource").filter(|s| !s.is_empty()) {
            resource = format!("{resource}/{sub}");
        }
        let n: f64 = value.trim().parse().unwrap_or(0.0);
        *out.entry(format!("{resource} {verb}")).or_insert(0) += n as u64;
    }
    out
}

/// What each key grew by from `before` to `after`; keys that did not grow are left out.
pub fn growth(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, &v)| {
            let d = v.saturating_sub(before.get(k).copied().unwrap_or(0));
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}

/// Writes not made by the kube-apiserver itself: it renews its identity Lease every 10 s.
pub fn core_writes(growth: &BTreeMap<String, u64>) -> u64 {
    growth
        .iter()
        .filter(|(k, _)| !k.starts_with("leases "))
        .map(|(_, v)| v)
        .sum()
}

/// The writes to one resource (e.g. `agents/status`), whatever their verb.
pub fn status_writes(growth: &BTreeMap<String, u64>, resource: &str) -> u64 {
    growth
        .iter()
        .filter(|(k, _)| k.split_once(' ').is_some_and(|(r, _)| r == resource))
        .map(|(_, v)| v)
        .sum()
}

/// `"agents/status APPLY: 12, events POST: 3"`, largest first.
pub fn summary(growth: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = growth.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="agent-install.openshift.io",resource="agents",scope="resource",subresource="status",verb="APPLY",version="v1beta1"} 40
apiserver_request_total{code="409",component="apiserver",dry_run="",group="agent-install.openshift.io",resource="agents",scope="resource",subresource="status",verb="APPLY",version="v1beta1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="agent-install.openshift.io",resource="agents",scope="resource",subresource="",verb="POST",version="v1beta1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 3
apiserver_request_total_other{verb="POST"} 9
"#;

    #[test]
    fn writes_by_resource_and_verb() {
        let w = write_requests(TEXT);
        assert_eq!(w.get("agents/status APPLY"), Some(&42));
        assert_eq!(w.get("agents POST"), Some(&10));
        assert_eq!(w.get("leases PUT"), Some(&3));
        assert_eq!(w.len(), 3, "{w:?}");
    }

    #[test]
    fn growth_and_core_writes() {
        let before = write_requests(TEXT);
        let after_text = TEXT.replace("} 40", "} 45").replace("} 3\n", "} 5\n");
        let g = growth(&before, &write_requests(&after_text));
        assert_eq!(g.get("agents/status APPLY"), Some(&5));
        assert_eq!(g.get("leases PUT"), Some(&2));
        assert!(!g.contains_key("agents POST"));
        assert_eq!(core_writes(&g), 5);
        assert_eq!(status_writes(&g, "agents/status"), 5);
        assert_eq!(status_writes(&g, "agents"), 0);
        assert_eq!(summary(&g), "agents/status APPLY: 5, leases PUT: 2");
    }
}

//! API requests, counted by the apiservers themselves: `apiserver_request_total` and
//! `apiserver_flowcontrol_dispatched_requests_total` from their `/metrics`, read before the
//! clusters' objects are applied and at the end of the run.
//!
//! `apiserver_request_total` has no client label. To tell clients apart the lab runs our two
//! managers and itself as ServiceAccounts with FlowSchemas of their own ([`identities_yaml`]):
//! API Priority and Fairness counts every request it dispatches by FlowSchema, so
//! `apiserver_flowcontrol_dispatched_requests_total{flow_schema=...}` is a per-client count.
//! Everything that stays `system:masters` (Cluster API, CAPM3, baremetal-operator,
//! kube-controller-manager, the apiserver's own loopback clients, the testbed harness) lands in
//! the mandatory `exempt` FlowSchema and cannot be split further from the metrics.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The namespace of the lab's clients' ServiceAccounts.
pub const IDENTITY_NS: &str = "capoa-lab-clients";
/// The lab's own ServiceAccount (its polling, the simulated site, applying the clusters).
pub const LAB: &str = "lab";
/// The FlowSchema of everything authenticated as `system:masters`.
pub const EXEMPT: &str = "exempt";

/// The FlowSchema of one of the lab's ServiceAccounts: its writes (every request that is
/// not a read).
pub fn flow_schema(sa: &str) -> String {
    format!("capoa-lab-{sa}")
}

/// The FlowSchema of the reads (get, list, watch) of one of the lab's ServiceAccounts.
pub fn reads_flow_schema(sa: &str) -> String {
    format!("capoa-lab-{sa}-reads")
}

/// The ServiceAccounts (bound to `cluster-admin`, as `system:masters` was) and their
/// FlowSchemas, two each: reads (get, list, watch) and the rest. The FlowSchemas send the
/// requests to the `exempt` priority level, where `system:masters` requests go: nothing is
/// queued or limited that was not before.
pub fn identities_yaml(names: &[&str]) -> String {
    let mut yaml = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {IDENTITY_NS}}}\n");
    let mut subjects = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let _ = write!(
            yaml,
            "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {name}, namespace: {IDENTITY_NS}}}\n"
        );
        yaml.push_str(&flow_schemas_yaml(name, IDENTITY_NS, name, 100 + 2 * i));
        subjects.push(format!(
            "{{kind: ServiceAccount, name: {name}, namespace: {IDENTITY_NS}}}"
        ));
    }
    let _ = write!(
        yaml,
        r#"---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: capoa-lab-clients}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects: [{}]
"#,
        subjects.join(", ")
    );
    yaml
}

/// The two FlowSchemas ([`reads_flow_schema`] and [`flow_schema`] of `name`) of ServiceAccount
/// `namespace/sa`, at `precedence` and the next: how the requests of an existing ServiceAccount
/// (a manager's pod's) are counted apart.
pub fn flow_schemas_yaml(name: &str, namespace: &str, sa: &str, precedence: usize) -> String {
    format!(
        r#"---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {reads}}}
spec:
  matchingPrecedence: {first}
  priorityLevelConfiguration: {{name: exempt}}
  rules:
  - subjects: [{{kind: ServiceAccount, serviceAccount: {{name: {sa}, namespace: {namespace}}}}}]
    resourceRules: [{{verbs: [get, list, watch], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}}]
    nonResourceRules: [{{verbs: [get], nonResourceURLs: ["*"]}}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {all}}}
spec:
  matchingPrecedence: {second}
  priorityLevelConfiguration: {{name: exempt}}
  rules:
  - subjects: [{{kind: ServiceAccount, serviceAccount: {{name: {sa}, namespace: {namespace}}}}}]
    resourceRules: [{{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}}]
    nonResourceRules: [{{verbs: ["*"], nonResourceURLs: ["*"]}}]
"#,
        reads = reads_flow_schema(name),
        all = flow_schema(name),
        first = precedence,
        second = precedence + 1,
    )
}

/// A kubeconfig for ServiceAccount `name` of [`IDENTITY_NS`]: a token from the TokenRequest
/// API (valid for a day), the apiserver's CA from `ca_file`.
pub async fn service_account_kubeconfig(
    admin: &Client,
    server: &str,
    ca_file: &Path,
    name: &str,
) -> Result<String> {
    let tr = Api::<ServiceAccount>::namespaced(admin.clone(), IDENTITY_NS)
        .create_token_request(
            name,
            &PostParams::default(),
            &TokenRequest {
                spec: Some(TokenRequestSpec {
                    expiration_seconds: Some(24 * 3600),
                    ..TokenRequestSpec::default()
                }),
                ..TokenRequest::default()
            },
        )
        .await
        .with_context(|| format!("requesting a token for ServiceAccount {IDENTITY_NS}/{name}"))?;
    let token = tr
        .status
        .and_then(|s| s.token)
        .with_context(|| format!("the TokenRequest of {name} returned no token"))?;
    Ok(format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: testbed\n  cluster:\n    server: {server}\n    certificate-authority: {}\n\
         users:\n- name: {name}\n  user:\n    token: {token}\n\
         contexts:\n- name: {name}\n  context:\n    cluster: testbed\n    user: {name}\ncurrent-context: {name}\n",
        ca_file.display()
    ))
}

/// Writes [`service_account_kubeconfig`] to `<dir>/<name>.kubeconfig`.
pub async fn write_kubeconfig(
    admin: &Client,
    server: &str,
    ca_file: &Path,
    name: &str,
    dir: &Path,
) -> Result<PathBuf> {
    let text = service_account_kubeconfig(admin, server, ca_file, name).await?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// A client from a kubeconfig file.
pub async fn client_from(kubeconfig: &Path) -> Result<Client> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    Client::try_from(config).context("creating a client")
}

/// One metric line: name, labels, value.
pub struct Line<'a> {
    pub name: &'a str,
    pub labels: Vec<(&'a str, String)>,
    pub value: f64,
}

impl Line<'_> {
    pub fn label(&self, key: &str) -> &str {
        self.labels
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// The samples of a Prometheus text exposition (comments and unparseable lines skipped).
pub fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    text.lines().filter_map(parse_line)
}

fn parse_line(l: &str) -> Option<Line<'_>> {
    let l = l.trim();
    if l.is_empty() || l.starts_with('#') {
        return None;
    }
    let name_end = l.find(['{', ' '])?;
    let name = &l[..name_end];
    let mut labels = Vec::new();
    let mut rest = &l[name_end..];
    if let Some(r) = rest.strip_prefix('{') {
        let mut r = r;
        loop {
            r = r.trim_start_matches([',', ' ']);
            if let Some(after) = r.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = r.find('=')?;
            let key = r[..eq].trim();
            let mut chars = r[eq + 1..].char_indices();
            if chars.next()?.1 != '"' {
                return None;
            }
            let mut value = String::new();
            let mut escaped = false;
            let mut end = None;
            for (i, c) in chars {
                match (escaped, c) {
                    (true, 'n') => {
                        value.push('\n');
                        escaped = false;
                    }
                    (true, c) => {
                        value.push(c);
                        escaped = false;
                    }
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        end = Some(i);
                        break;
                    }
                    (false, c) => value.push(c),
                }
            }
            labels.push((key, value));
            r = &r[eq + 1 + end? + 1..];
        }
    }
    let value = rest.split_whitespace().next()?.parse::<f64>().ok()?;
    Some(Line {
        name,
        labels,
        value,
    })
}

/// What one apiserver had counted at one moment (or, from [`Counts::since`], in between).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// `apiserver_request_total`, summed over every label.
    pub total: f64,
    /// ... by `verb` (LIST, WATCH, GET, PATCH, ...).
    pub by_verb: BTreeMap<String, f64>,
    /// ... by `resource` (with `/subresource`).
    pub by_resource: BTreeMap<String, f64>,
    /// ... by HTTP `code` (409: conflicts).
    pub by_code: BTreeMap<String, f64>,
    /// `apiserver_flowcontrol_dispatched_requests_total` by `flow_schema`.
    pub by_flow_schema: BTreeMap<String, f64>,
}

impl Counts {
    pub fn parse(text: &str) -> Counts {
        let mut c = Counts::default();
        for l in lines(text) {
            match l.name {
                "apiserver_request_total" => {
                    c.total += l.value;
                    *c.by_verb.entry(l.label("verb").to_string()).or_default() += l.value;
                    let resource = match (l.label("resource"), l.label("subresource")) {
                        ("", _) => "(non-resource)".to_string(),
                        (r, "") => r.to_string(),
                        (r, s) => format!("{r}/{s}"),
                    };
                    *c.by_resource.entry(resource).or_default() += l.value;
                    *c.by_code.entry(l.label("code").to_string()).or_default() += l.value;
                }
                "apiserver_flowcontrol_dispatched_requests_total" => {
                    *c.by_flow_schema
                        .entry(l.label("flow_schema").to_string())
                        .or_default() += l.value;
                }
                _ => {}
            }
        }
        c
    }

    /// `GET /metrics` of the apiserver `client` talks to.
    pub async fn read(client: &Client) -> Result<Counts> {
        let req = http::Request::get("/metrics")
            .body(Vec::new())
            .context("building GET /metrics")?;
        let text = client
            .request_text(req)
            .await
            .context("reading the apiserver's /metrics")?;
        Ok(Counts::parse(&text))
    }

    /// What was counted after `before`.
    pub fn since(&self, before: &Counts) -> Counts {
        let diff = |a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>| {
            a.iter()
                .map(|(k, v)| (k.clone(), v - b.get(k).copied().unwrap_or_default()))
                .filter(|(_, v)| *v > 0.0)
                .collect()
        };
        Counts {
            total: self.total - before.total,
            by_verb: diff(&self.by_verb, &before.by_verb),
            by_resource: diff(&self.by_resource, &before.by_resource),
            by_code: diff(&self.by_code, &before.by_code),
            by_flow_schema: diff(&self.by_flow_schema, &before.by_flow_schema),
        }
    }
}

/// A manager's own `capoa_reconciles_total`, by controller, from its `/metrics` (OpenMetrics
/// text).
pub fn reconciles(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for l in lines(text).filter(|l| l.name == "capoa_reconciles_total") {
        *out.entry(l.label("controller").to_string()).or_default() += l.value;
    }
    out
}

/// Requests by verb and resource.
pub type ByRequest = BTreeMap<(String, String), f64>;

/// A manager's own count of its requests to the management apiserver
/// (`capoa_api_requests_total`), by verb and resource.
pub fn own_requests(text: &str) -> ByRequest {
    let mut out = BTreeMap::new();
    for l in lines(text).filter(|l| l.name == "capoa_api_requests_total") {
        *out.entry((l.label("verb").to_string(), l.label("resource").to_string()))
            .or_default() += l.value;
    }
    out
}

/// The API requests of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiRequests {
    /// The BareMetalHosts of the run (every cluster's, the day-2 spares included).
    pub hosts: u64,
    /// The management apiserver's counts between the two reads.
    pub management: Counts,
    /// The workload apiserver's, same period.
    pub workload: Counts,
    /// Who sent the management requests, see [`clients`].
    pub clients: Vec<ClientCount>,
    /// Our managers' reconciles over the whole run (their own metrics), by controller.
    pub reconciles: BTreeMap<String, f64>,
    /// Each of our managers' requests over the whole run by its own count, by verb and
    /// resource: the manager's name and the counts.
    pub own: Vec<(String, ByRequest)>,
}

/// One client's requests to the management apiserver (dispatched by APF).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientCount {
    pub name: String,
    pub requests: f64,
    /// Of them get, list and watch (`None`: not counted apart).
    pub reads: Option<f64>,
}

/// The clients as named in the output, from the FlowSchemas' counts: ours (ServiceAccount,
/// label) with their reads apart, everything `system:masters`, the rest.
pub fn clients(by_flow_schema: &BTreeMap<String, f64>, ours: &[(&str, &str)]) -> Vec<ClientCount> {
    let count = |fs: &str| by_flow_schema.get(fs).copied().unwrap_or_default();
    let mut out = Vec::new();
    let mut named = Vec::new();
    for (sa, label) in ours {
        let (reads, all) = (reads_flow_schema(sa), flow_schema(sa));
        out.push(ClientCount {
            name: (*label).to_string(),
            requests: count(&reads) + count(&all),
            reads: Some(count(&reads)),
        });
        named.extend([reads, all]);
    }
    out.push(ClientCount {
        name: "system:masters: kube-controller-manager, the apiserver itself, the testbed harness, and Cluster API, CAPM3 and baremetal-operator when they run as processes".into(),
        requests: count(EXEMPT),
        reads: None,
    });
    named.push(EXEMPT.into());
    let other: f64 = by_flow_schema
        .iter()
        .filter(|(k, _)| !named.contains(k))
        .map(|(_, v)| v)
        .sum();
    if other > 0.0 {
        let schemas = by_flow_schema
            .keys()
            .filter(|k| !named.contains(k))
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        out.push(ClientCount {
            name: format!(
                "other FlowSchemas ({schemas}; `service-accounts`: the pods' own, such as Cluster API's, CAPM3's, baremetal-operator's and cert-manager's when they run as pods)"
            ),
            requests: other,
            reads: None,
        });
    }
    out
}

impl ApiRequests {
    fn per_host(&self, n: f64) -> f64 {
        if self.hosts == 0 {
            0.0
        } else {
            n / self.hosts as f64
        }
    }

    /// The lines printed at the end of a run.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let m = &self.management;
        let _ = writeln!(
            out,
            "API requests to the management apiserver (its apiserver_request_total, from before the BareMetalHosts were registered to the end): {:.0} = {:.1} per host ({} BareMetalHosts)",
            m.total,
            self.per_host(m.total),
            self.hosts
        );
        let top = |map: &BTreeMap<String, f64>, k: usize| {
            let mut v: Vec<(&String, &f64)> = map.iter().collect();
            v.sort_by(|a, b| b.1.total_cmp(a.1));
            v.iter()
                .take(k)
                .map(|(k, v)| format!("{k} {v:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(out, "  by verb: {}", top(&m.by_verb, 12));
        let _ = writeln!(out, "  by resource (top 10): {}", top(&m.by_resource, 10));
        let _ = writeln!(out, "  by response code: {}", top(&m.by_code, 12));
        let dispatched: f64 = m.by_flow_schema.values().sum();
        let _ = writeln!(
            out,
            "  by client (apiserver_flowcontrol_dispatched_requests_total by FlowSchema, {dispatched:.0} dispatched; a watch counts when it starts there, when it ends in apiserver_request_total):"
        );
        for c in &self.clients {
            let reads = c.reads.map_or(String::new(), |r| {
                format!(" ({r:.0} get/list/watch, {:.0} writes)", c.requests - r)
            });
            let _ = writeln!(
                out,
                "    {:>8.0}  {:>6.1} per host  {}{reads}",
                c.requests,
                self.per_host(c.requests),
                c.name
            );
        }
        if !self.reconciles.is_empty() {
            let sum: f64 = self.reconciles.values().sum();
            let _ = writeln!(
                out,
                "  our managers' reconciles (their capoa_reconciles_total, whole run): {sum:.0} = {:.1} per host ({})",
                self.per_host(sum),
                self.reconciles
                    .iter()
                    .map(|(k, v)| format!("{k} {v:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for (manager, counts) in &self.own {
            let total: f64 = counts.values().sum();
            let mut top: Vec<(&(String, String), &f64)> = counts.iter().collect();
            top.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
            let _ = writeln!(
                out,
                "  {manager} by its own count (capoa_api_requests_total, whole run): {total:.0} = {:.1} per host; most: {}",
                self.per_host(total),
                top.iter()
                    .take(12)
                    .map(|((verb, resource), n)| format!("{verb} {resource} {n:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(
            out,
            "API requests to the workload apiserver (same period): {:.0} = {:.1} per host",
            self.workload.total,
            self.per_host(self.workload.total)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 1
apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 4
apiserver_flowcontrol_dispatched_requests_total{flow_schema="capoa-lab-lab",priority_level="exempt"} 2
some_other{a="x \"quoted\", y"} 7.5
"#;

    #[test]
    fn parses_the_counters() {
        let c = Counts::parse(TEXT);
        assert_eq!(c.total, 6.0);
        assert_eq!(c.by_verb["LIST"], 3.0);
        assert_eq!(c.by_resource["pods/status"], 2.0);
        assert_eq!(c.by_resource["(non-resource)"], 1.0);
        assert_eq!(c.by_code["201"], 2.0);
        assert_eq!(c.by_flow_schema["capoa-lab-lab"], 2.0);
        let l = lines(TEXT).find(|l| l.name == "some_other").expect("line");
        assert_eq!(l.label("a"), "x \"quoted\", y");
        assert_eq!(l.value, 7.5);
    }

    #[test]
    fn differences_and_clients() {
        let before = Counts::parse(TEXT);
        let after = Counts::parse(&TEXT.replace("} 3\n", "} 13\n").replace("} 4\n", "} 9\n"));
        let d = after.since(&before);
        assert_eq!(d.total, 10.0);
        assert_eq!(d.by_verb.get("PATCH"), None);
        assert_eq!(d.by_flow_schema["exempt"], 5.0);
        let c = clients(&d.by_flow_schema, &[(LAB, "the lab")]);
        assert_eq!(
            c[0],
            ClientCount {
                name: "the lab".to_string(),
                requests: 0.0,
                reads: Some(0.0)
            }
        );
        assert_eq!(c[1].requests, 5.0);
        let mut fs = BTreeMap::from([("capoa-lab-lab-reads".to_string(), 3.0)]);
        fs.insert("capoa-lab-lab".into(), 1.0);
        fs.insert("probes".into(), 2.0);
        let c = clients(&fs, &[(LAB, "the lab")]);
        assert_eq!((c[0].requests, c[0].reads), (4.0, Some(3.0)));
        assert!(c[2].name.starts_with("other FlowSchemas (probes;"));
        let r = ApiRequests {
            hosts: 5,
            management: d,
            clients: c,
            ..ApiRequests::default()
        };
        assert!(
            r.report().contains("10 = 2.0 per host (5 BareMetalHosts)"),
            "{}",
            r.report()
        );
    }

    #[test]
    fn reads_reconciles() {
        let text = "# TYPE capoa_reconciles counter\ncapoa_reconciles_total{controller=\"agent\"} 5\ncapoa_reconciles_total{controller=\"config\"} 7\ncapoa_reconcile_errors_total{controller=\"agent\",phase=\"x\"} 1\n# EOF\n";
        let r = reconciles(text);
        assert_eq!(r["agent"], 5.0);
        assert_eq!(r["config"], 7.0);
    }

    #[test]
    fn identities_yaml_parses() {
        let docs = testbed::resources::parse_yaml(&identities_yaml(&["a", "b"])).expect("YAML");
        assert_eq!(docs.len(), 1 + 2 * 3 + 1);
        assert_eq!(docs[2]["metadata"]["name"], "capoa-lab-a-reads");
        assert_eq!(
            docs[2]["spec"]["priorityLevelConfiguration"]["name"],
            "exempt"
        );
        assert_eq!(docs[3]["metadata"]["name"], "capoa-lab-a");
        assert_eq!(docs[6]["spec"]["matchingPrecedence"], 103);
        assert_eq!(docs[7]["subjects"][1]["name"], "b");
    }
}

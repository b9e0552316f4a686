//! `--shards N`: our managers as N shards each. Shard `i`'s control-plane and bootstrap
//! managers run with `--watch-filter=shard-<i>` and reconcile only the objects labelled
//! `cluster.x-k8s.io/watch-filter=shard-<i>`; the lab puts cluster `c` in shard `c % N` by
//! labelling its manifests ([`label_for_shard`]). At the end it shows the split (per shard: its
//! clusters, how many installed, each manager's own request count and peak memory, the clusters
//! and hosts its core holds) and checks it ([`Split::problems`], [`agent_label_problems`],
//! [`redirect_problem`]): each core holds exactly its shard's clusters, every Agent carries
//! its cluster's shard label, and another shard's agent API sends a host to its own (307).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result};
use manager::runtime::WATCH_FILTER_LABEL;
use serde_json::{Value, json};

/// The shard of cluster `c` (0-based) when the managers run as `shards` shards.
pub fn shard_of(c: u32, shards: u32) -> u32 {
    c % shards.max(1)
}

/// Shard `i`'s `--watch-filter` value, and the label value of its objects.
pub fn watch_filter(shard: u32) -> String {
    format!("shard-{shard}")
}

/// Labels a cluster's manifests for `shard`: every object, and the templates Cluster API
/// makes objects from — a MachineDeployment's and an OpenshiftAssistedConfigTemplate's
/// `spec.template.metadata` (Cluster API copies those onto the Machines and the
/// OpenshiftAssistedConfigs it makes) and, for a Cluster with a topology, the metadata of its
/// control plane and of each of its MachineDeployments (Cluster API puts those on the objects
/// it makes from the ClusterClass). The control plane labels what it makes itself.
pub fn label_for_shard(objects: &mut [Value], shard: u32) {
    let value = watch_filter(shard);
    for o in objects.iter_mut() {
        add_label(&mut o["metadata"], &value);
        let kind = o["kind"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "MachineDeployment" | "OpenshiftAssistedConfigTemplate" => {
                add_label(&mut o["spec"]["template"]["metadata"], &value);
            }
            "Cluster" if o["spec"]["topology"].is_object() => {
                let topology = &mut o["spec"]["topology"];
                add_label(&mut topology["controlPlane"]["metadata"], &value);
                if let Some(mds) = topology["workers"]["machineDeployments"].as_array_mut() {
                    for md in mds {
                        add_label(&mut md["metadata"], &value);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `metadata.labels[WATCH_FILTER_LABEL] = value` (the maps made when missing).
fn add_label(metadata: &mut Value, value: &str) {
    if !metadata.is_object() {
        *metadata = json!({});
    }
    if !metadata["labels"].is_object() {
        metadata["labels"] = json!({});
    }
    metadata["labels"][WATCH_FILTER_LABEL] = json!(value);
}

/// The clusters and hosts a core holds, from its manager's `/metrics` (`None` when the gauge
/// is not there).
pub fn core_gauges(metrics: &str) -> (Option<f64>, Option<f64>) {
    let gauge = |name: &str| {
        crate::apimetrics::lines(metrics)
            .filter(|l| l.name == name)
            .map(|l| l.value)
            .reduce(|a, b| a + b)
    };
    (gauge("capoa_core_clusters"), gauge("capoa_core_hosts"))
}

/// One manager process of a shard, at the end of the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShardManager {
    pub name: String,
    /// Its own count of its management API requests (`capoa_api_requests_total`, whole run);
    /// `None` when its `/metrics` did not answer.
    pub requests: Option<f64>,
    /// Its peak resident memory (VmHWM), MiB.
    pub peak_mib: f64,
}

/// One shard at the end of the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Shard {
    /// `shard-<i>`, its watch filter.
    pub shard: String,
    /// The clusters labelled for it.
    pub clusters: Vec<String>,
    /// Of them, those installed.
    pub installed: usize,
    /// Its control-plane manager, then its bootstrap manager.
    pub managers: Vec<ShardManager>,
    /// What its core holds (`capoa_core_clusters`, `capoa_core_hosts`); `None` when its
    /// manager's `/metrics` did not have it.
    pub core_clusters: Option<f64>,
    pub core_hosts: Option<f64>,
    /// Where its core serves the agent REST API.
    pub agent_api_url: String,
}

/// The split of a sharded run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Split {
    pub shards: Vec<Shard>,
    /// The wrong-shard request and its answers (`None` when it could not be made).
    pub redirect: Option<Redirect>,
    /// What the checks found wrong (empty: the split is right).
    pub problems: Vec<String>,
}

impl Split {
    /// Each core must hold exactly its shard's clusters: one that holds fewer left some
    /// unreconciled, one that holds more reconciled another shard's.
    pub fn core_problems(&self) -> Vec<String> {
        self.shards
            .iter()
            .filter_map(|s| match s.core_clusters {
                None => Some(format!(
                    "{}'s core: no capoa_core_clusters in its manager's /metrics",
                    s.shard
                )),
                Some(held) if held != s.clusters.len() as f64 => Some(format!(
                    "{}'s core holds {held} clusters, its shard has {} ({})",
                    s.shard,
                    s.clusters.len(),
                    s.clusters.join(", ")
                )),
                Some(_) => None,
            })
            .collect()
    }

    /// The split as printed at the end of the run: a line per shard, the redirect, the
    /// problems.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "Shards (each manager's own count of its API requests, peak memory; what each core holds at the end):\n",
        );
        for s in &self.shards {
            let managers = s
                .managers
                .iter()
                .map(|m| {
                    format!(
                        "{} {} requests, {:.1} MiB",
                        m.name,
                        m.requests.map_or("?".into(), |r| format!("{r:.0}")),
                        m.peak_mib
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            let held = |v: Option<f64>| v.map_or("?".into(), |v| format!("{v:.0}"));
            let _ = writeln!(
                out,
                "  {}: {} clusters ({}), {} installed; core {} clusters, {} hosts; {managers}",
                s.shard,
                s.clusters.len(),
                names_shortly(&s.clusters),
                s.installed,
                held(s.core_clusters),
                held(s.core_hosts),
            );
        }
        if let Some(r) = &self.redirect {
            let _ = writeln!(out, "  {}", r.describe());
        }
        for p in &self.problems {
            let _ = writeln!(out, "  problem: {p}");
        }
        out
    }
}

/// At most four names, then how many more.
fn names_shortly(names: &[String]) -> String {
    match names.len() {
        0 => "none".into(),
        n if n <= 4 => names.join(", "),
        n => format!("{}, ... {} more", names[..3].join(", "), n - 3),
    }
}

/// The Agents of a cluster of `shard` without that shard's label (`agents`: each Agent's name
/// and its label's value, if any); no Agent at all is a problem too (nothing was checked).
pub fn agent_label_problems(
    cluster: &str,
    shard: u32,
    agents: &[(String, Option<String>)],
) -> Vec<String> {
    let want = watch_filter(shard);
    if agents.is_empty() {
        return vec![format!("no Agent of cluster {cluster} to check its label")];
    }
    agents
        .iter()
        .filter(|(_, label)| label.as_deref() != Some(want.as_str()))
        .map(|(name, label)| {
            format!(
                "Agent {name} of cluster {cluster} has {WATCH_FILTER_LABEL}={}, its cluster is in {want}",
                label.as_deref().unwrap_or("(none)")
            )
        })
        .collect()
}

/// The hosts of a cluster of `shard` whose agent talks to another shard's agent API than
/// `owner_url` (`hosts`: each host's name and its discovery image's agent API URL): the
/// discovery image of a shard's cluster must come from, and point at, that shard's core. No
/// host at all is a problem too (nothing was checked).
pub fn host_problems(
    cluster: &str,
    shard: u32,
    owner_url: &str,
    hosts: &[(String, String)],
) -> Vec<String> {
    if hosts.is_empty() {
        return vec![format!(
            "no host of cluster {cluster} booted to check its agent API"
        )];
    }
    hosts
        .iter()
        .filter(|(_, url)| url != owner_url)
        .map(|(host, url)| {
            format!(
                "host {host} of cluster {cluster} ({}) talks to {url}, not to its shard's core at {owner_url}",
                watch_filter(shard)
            )
        })
        .collect()
}

/// A host's request to the agent REST API of a shard that does not own its infra-env, and
/// the answers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Redirect {
    /// The host and the cluster it belongs to.
    pub host: String,
    pub cluster: String,
    /// The request, to the wrong shard's agent API.
    pub url: String,
    pub status: u16,
    pub location: Option<String>,
    /// The owner's agent API, where the Location must point.
    pub owner_url: String,
    /// The status of the same request sent to the Location (`None`: not followed).
    pub followed_status: Option<u16>,
}

impl Redirect {
    pub fn describe(&self) -> String {
        format!(
            "wrong shard: host {} of {} asked {} → {}{}{}",
            self.host,
            self.cluster,
            self.url,
            self.status,
            self.location
                .as_ref()
                .map_or(String::new(), |l| format!(" Location {l}")),
            self.followed_status
                .map_or(String::new(), |s| format!(", followed → {s}"))
        )
    }
}

/// What is wrong with the wrong shard's answer: it must be `307 Temporary Redirect` to the same
/// path on the owner's agent API, and the owner must answer it `200`.
pub fn redirect_problem(r: &Redirect) -> Option<String> {
    let to_owner = r
        .location
        .as_deref()
        .is_some_and(|l| l.starts_with(&format!("{}/", r.owner_url)));
    if r.status != 307 || !to_owner {
        return Some(format!(
            "the agent API of another shard answered host {}'s request {} with {} and Location {}, expected 307 to its own shard's {}",
            r.host,
            r.url,
            r.status,
            r.location.as_deref().unwrap_or("(none)"),
            r.owner_url
        ));
    }
    match r.followed_status {
        Some(200) => None,
        other => Some(format!(
            "the redirect of host {}'s request to {} was answered {}, expected 200",
            r.host,
            r.location.as_deref().unwrap_or_default(),
            other.map_or("nothing".into(), |s| s.to_string())
        )),
    }
}

/// The status code and `Location` header of an HTTP/1.x response's head.
pub fn parse_head(response: &str) -> Option<(u16, Option<String>)> {
    let head = response.split("\r\n\r\n").next()?;
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let location = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    Some((status, location))
}

/// `GET url` (plain http) with the agent token, not following a redirect: the status and the
/// `Location`.
pub async fn get_unfollowed(url: &str, token: &str) -> Result<(u16, Option<String>)> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url}: the lab's agent APIs are plain http"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr: SocketAddr = host
        .parse()
        .with_context(|| format!("{url}: not an address"))?;
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {host}\r\n{}: {token}\r\nAccept: application/json\r\n\r\n",
        agent_sim::client::AUTH_HEADER
    );
    let response = tokio::time::timeout(Duration::from_secs(10), async {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        s.write_all(request.as_bytes()).await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await?;
        Ok::<_, std::io::Error>(out)
    })
    .await
    .with_context(|| format!("GET {url}: no answer in 10 s"))?
    .with_context(|| format!("GET {url}"))?;
    parse_head(&String::from_utf8_lossy(&response))
        .with_context(|| format!("GET {url}: not an HTTP response"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_go_round_the_shards() {
        let shards: Vec<u32> = (0..5).map(|c| shard_of(c, 2)).collect();
        assert_eq!(shards, [0, 1, 0, 1, 0]);
        assert_eq!(shard_of(7, 1), 0);
        // No shards at all is one.
        assert_eq!(shard_of(7, 0), 0);
        assert_eq!(watch_filter(3), "shard-3");
    }

    fn label(v: &Value) -> &Value {
        &v["labels"][WATCH_FILTER_LABEL]
    }

    #[test]
    fn a_clusters_manifests_and_the_templates_capi_copies_from_are_labelled() {
        let mut objects = vec![
            json!({"kind": "Cluster", "metadata": {"name": "c", "labels": {"keep": "me"}}}),
            json!({"kind": "OpenshiftAssistedControlPlane", "metadata": {"name": "c-cp"}}),
            json!({"kind": "MachineDeployment", "metadata": {"name": "w"},
                   "spec": {"template": {"spec": {"clusterName": "c"}}}}),
            json!({"kind": "OpenshiftAssistedConfigTemplate", "metadata": {"name": "w"},
                   "spec": {"template": {"spec": {}}}}),
            json!({"kind": "Metal3MachineTemplate", "metadata": {"name": "m"}}),
        ];
        label_for_shard(&mut objects, 1);
        for o in &objects {
            assert_eq!(label(&o["metadata"]), "shard-1", "{o}");
        }
        assert_eq!(objects[0]["metadata"]["labels"]["keep"], "me");
        assert_eq!(
            label(&objects[2]["spec"]["template"]["metadata"]),
            "shard-1"
        );
        assert_eq!(
            label(&objects[3]["spec"]["template"]["metadata"]),
            "shard-1"
        );
        assert_eq!(objects[2]["spec"]["template"]["spec"]["clusterName"], "c");
        // Objects that have no template get none.
        assert!(objects[1]["spec"].is_null());
    }

    #[test]
    fn a_topology_labels_what_cluster_api_makes_from_the_class() {
        let mut objects = vec![json!({"kind": "Cluster", "metadata": {"name": "c"},
            "spec": {"topology": {"controlPlane": {"replicas": 3},
                "workers": {"machineDeployments": [{"class": "worker", "name": "workers"}]}}}})];
        label_for_shard(&mut objects, 0);
        let t = &objects[0]["spec"]["topology"];
        assert_eq!(label(&t["controlPlane"]["metadata"]), "shard-0");
        assert_eq!(t["controlPlane"]["replicas"], 3);
        assert_eq!(
            label(&t["workers"]["machineDeployments"][0]["metadata"]),
            "shard-0"
        );
    }

    #[test]
    fn reads_the_cores_gauges() {
        let text = "# TYPE capoa_core_clusters gauge\ncapoa_core_clusters 3\ncapoa_core_hosts 7\ncapoa_reconciles_total{controller=\"x\"} 4\n";
        assert_eq!(core_gauges(text), (Some(3.0), Some(7.0)));
        assert_eq!(core_gauges("other 1\n"), (None, None));
    }

    fn shard(i: u32, clusters: &[&str], held: Option<f64>) -> Shard {
        Shard {
            shard: watch_filter(i),
            clusters: clusters.iter().map(|c| c.to_string()).collect(),
            installed: clusters.len(),
            managers: vec![
                ShardManager {
                    name: format!("controlplane-provider-shard-{i}"),
                    requests: Some(120.0),
                    peak_mib: 40.25,
                },
                ShardManager {
                    name: format!("bootstrap-provider-shard-{i}"),
                    requests: None,
                    peak_mib: 20.0,
                },
            ],
            core_clusters: held,
            core_hosts: held,
            agent_api_url: format!("http://127.0.0.1:{}", 4000 + i),
        }
    }

    #[test]
    fn each_core_must_hold_exactly_its_shards_clusters() {
        let right = Split {
            shards: vec![
                shard(0, &["sno-01"], Some(1.0)),
                shard(1, &["sno-02"], Some(1.0)),
            ],
            ..Split::default()
        };
        assert!(right.core_problems().is_empty());
        let wrong = Split {
            shards: vec![
                shard(0, &["sno-01", "sno-03"], Some(3.0)),
                shard(1, &["sno-02"], None),
            ],
            ..Split::default()
        };
        assert_eq!(
            wrong.core_problems(),
            [
                "shard-0's core holds 3 clusters, its shard has 2 (sno-01, sno-03)",
                "shard-1's core: no capoa_core_clusters in its manager's /metrics",
            ]
        );
    }

    #[test]
    fn the_split_as_printed() {
        let split = Split {
            shards: vec![
                shard(0, &["a", "b", "c", "d", "e"], Some(5.0)),
                shard(1, &[], None),
            ],
            redirect: None,
            problems: vec!["something".into()],
        };
        let table = split.table();
        assert!(
            table.contains("  shard-0: 5 clusters (a, b, c, ... 2 more), 5 installed; core 5 clusters, 5 hosts; controlplane-provider-shard-0 120 requests, 40.2 MiB; bootstrap-provider-shard-0 ? requests, 20.0 MiB\n"),
            "{table}"
        );
        assert!(
            table.contains("  shard-1: 0 clusters (none), 0 installed; core ? clusters, ? hosts;"),
            "{table}"
        );
        assert!(table.ends_with("  problem: something\n"), "{table}");
        let v = serde_json::to_value(&split).expect("JSON");
        assert_eq!(v["shards"][0]["managers"][0]["requests"], 120.0);
        assert_eq!(v["shards"][1]["core_clusters"], Value::Null);
    }

    #[test]
    fn every_agent_carries_its_clusters_shard() {
        let agents = vec![
            ("a1".to_string(), Some("shard-1".to_string())),
            ("a2".to_string(), Some("shard-0".to_string())),
            ("a3".to_string(), None),
        ];
        assert_eq!(
            agent_label_problems("sno-02", 1, &agents),
            [
                "Agent a2 of cluster sno-02 has cluster.x-k8s.io/watch-filter=shard-0, its cluster is in shard-1",
                "Agent a3 of cluster sno-02 has cluster.x-k8s.io/watch-filter=(none), its cluster is in shard-1",
            ]
        );
        assert!(agent_label_problems("sno-02", 1, &agents[..1]).is_empty());
        assert_eq!(
            agent_label_problems("sno-02", 1, &[]),
            ["no Agent of cluster sno-02 to check its label"]
        );
    }

    #[test]
    fn hosts_talk_to_their_shards_core() {
        let hosts = vec![
            ("m0".to_string(), "http://127.0.0.1:4001".to_string()),
            ("m1".to_string(), "http://127.0.0.1:4000".to_string()),
        ];
        assert_eq!(
            host_problems("sno-02", 1, "http://127.0.0.1:4001", &hosts),
            [
                "host m1 of cluster sno-02 (shard-1) talks to http://127.0.0.1:4000, not to its shard's core at http://127.0.0.1:4001"
            ]
        );
        assert!(host_problems("sno-02", 1, "http://127.0.0.1:4001", &hosts[..1]).is_empty());
        assert_eq!(
            host_problems("sno-02", 1, "http://127.0.0.1:4001", &[]),
            ["no host of cluster sno-02 booted to check its agent API"]
        );
    }

    #[test]
    fn the_wrong_shard_must_send_the_host_to_its_own() {
        let path = "/api/assisted-install/v2/infra-envs/ie/hosts/h/instructions";
        let redirect = Redirect {
            host: "sno-01-master-0".into(),
            cluster: "sno-01".into(),
            url: format!("http://127.0.0.1:4001{path}"),
            status: 307,
            location: Some(format!("http://127.0.0.1:4000{path}")),
            owner_url: "http://127.0.0.1:4000".into(),
            followed_status: Some(200),
        };
        assert_eq!(redirect_problem(&redirect), None);
        // Served by the wrong shard, sent elsewhere, or not served where it was sent.
        for wrong in [
            Redirect {
                status: 200,
                location: None,
                ..redirect.clone()
            },
            Redirect {
                location: Some(format!("http://127.0.0.1:40001{path}")),
                ..redirect.clone()
            },
            Redirect {
                followed_status: Some(404),
                ..redirect.clone()
            },
        ] {
            assert!(redirect_problem(&wrong).is_some(), "{wrong:?}");
        }
        assert!(
            redirect.describe().ends_with(" → 307 Location http://127.0.0.1:4000/api/assisted-install/v2/infra-envs/ie/hosts/h/instructions, followed → 200"),
            "{}",
            redirect.describe()
        );
    }

    #[test]
    fn reads_a_responses_status_and_location() {
        let r = "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://a/b?c=d\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(parse_head(r), Some((307, Some("http://a/b?c=d".into()))));
        assert_eq!(
            parse_head("HTTP/1.0 200 OK\r\n\r\n{\"Location\": 1}"),
            Some((200, None))
        );
        assert_eq!(parse_head("garbage"), None);
    }
}

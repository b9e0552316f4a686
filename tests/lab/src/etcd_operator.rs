//! The workload cluster's etcd as the lab simulates it: the member list (what `etcdctl` in an
//! etcd pod answers) and the objects OpenShift's cluster-etcd-operator keeps per master — its
//! static etcd pod (a mirror pod `openshift-etcd/etcd-<node>` whose first container is
//! `etcdctl`), the member's certificate Secrets and the `etcd-endpoints` ConfigMap. Adding a
//! master's member once its Node is Ready is what the operator does for a new control-plane
//! Node; removing a member is the provider's job, through `etcdctl` in a pod exec that the
//! master's simulated kubelet serves ([`crate::kubelet_api`]).

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Secret};
use kube::Client;
use kube::api::{Api, AttachParams, Patch, PatchParams};
use serde_json::json;
use tokio::io::AsyncReadExt;

pub const NAMESPACE: &str = "openshift-etcd";
const FIELD_MANAGER: &str = "lab-etcd-operator";
const ETCD_IMAGE: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0000000000000000000000000000000000000000000000000000000000000e7c";
const OPERATOR_IMAGE: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:00000000000000000000000000000000000000000000000000000000000000e0";

/// The etcd pod's containers in the operator's order (`etcdctl` first, for `oc rsh`), and
/// whether each runs the etcd image (which has `etcdctl`) rather than the operator's.
pub const CONTAINERS: [(&str, bool); 5] = [
    ("etcdctl", true),
    ("etcd", true),
    ("etcd-metrics", true),
    ("etcd-readyz", false),
    ("etcd-rev", false),
];

/// The static etcd pod of `node`.
pub fn pod_name(node: &str) -> String {
    format!("etcd-{node}")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    pub name: String,
    pub ip: String,
}

impl Member {
    pub fn peer_urls(&self) -> Vec<String> {
        vec![format!("https://{}:2380", self.ip)]
    }

    pub fn client_urls(&self) -> Vec<String> {
        vec![format!("https://{}:2379", self.ip)]
    }
}

#[derive(Debug)]
struct State {
    cluster_id: u64,
    raft_term: u64,
    members: Vec<Member>,
}

/// The member list, shared by the simulated kubelets' exec and the lab. Clones share it.
#[derive(Clone, Debug)]
pub struct EtcdMembers(Arc<Mutex<State>>);

/// What a command run in a container printed and returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecResult {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl ExecResult {
    fn ok(stdout: String) -> ExecResult {
        ExecResult {
            exit_code: 0,
            stdout,
            stderr: String::new(),
        }
    }

    /// etcdctl's `ExitWithError`: `Error: <err>` on stderr.
    fn error(exit_code: i32, err: impl std::fmt::Display) -> ExecResult {
        ExecResult {
            exit_code,
            stdout: String::new(),
            stderr: format!("Error: {err}\n"),
        }
    }
}

/// etcdctl's exit codes (`cobrautl`).
const EXIT_ERROR: i32 = 1;
const EXIT_BAD_ARGS: i32 = 128;

/// A random non-zero 64-bit number, as etcd's cluster and member IDs look.
fn random_id() -> u64 {
    loop {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(0x6574_6364);
        let id = h.finish();
        if id != 0 {
            return id;
        }
    }
}

impl Default for EtcdMembers {
    fn default() -> Self {
        EtcdMembers::new()
    }
}

/// `member list` output formats (`-w`, `--write-out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Simple,
    Json,
    Table,
}

/// The parts of an etcdctl command line: its words and output format, flags taken out.
#[derive(Debug, PartialEq, Eq)]
struct CommandLine<'a> {
    words: Vec<&'a str>,
    format: Format,
}

/// etcdctl's global flags that take a value (connection and auth: no effect here).
const VALUE_FLAGS: [&str; 8] = [
    "endpoints",
    "cacert",
    "cert",
    "key",
    "user",
    "password",
    "dial-timeout",
    "command-timeout",
];
/// Its boolean flags with no effect here.
const BOOL_FLAGS: [&str; 3] = ["debug", "insecure-skip-tls-verify", "insecure-transport"];

fn parse_command_line<'a>(args: &'a [String]) -> Result<CommandLine<'a>, ExecResult> {
    let mut words = Vec::new();
    let mut format = None;
    let mut it = args.iter().map(String::as_str);
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            },
            None => match arg.strip_prefix('-') {
                Some(short) if short.starts_with('w') => {
                    let v = short[1..].trim_start_matches('=');
                    ("write-out", (!v.is_empty()).then_some(v))
                }
                Some(short) if !short.is_empty() => {
                    let c = short.chars().next().unwrap_or('-');
                    return Err(ExecResult::error(
                        EXIT_ERROR,
                        format!("unknown shorthand flag: '{c}' in {arg}"),
                    ));
                }
                _ => {
                    words.push(arg);
                    continue;
                }
            },
        };
        if name == "write-out" || VALUE_FLAGS.contains(&name) {
            let Some(value) = inline.or_else(|| it.next()) else {
                return Err(ExecResult::error(
                    EXIT_ERROR,
                    format!("flag needs an argument: --{name}"),
                ));
            };
            if name == "write-out" {
                format = Some(match value {
                    "simple" => Format::Simple,
                    "json" => Format::Json,
                    "table" => Format::Table,
                    other => {
                        return Err(ExecResult::error(
                            EXIT_ERROR,
                            format!(
                                "output format {other:?}: the lab's etcdctl prints simple, json and table"
                            ),
                        ));
                    }
                });
            }
        } else if !BOOL_FLAGS.contains(&name) {
            return Err(ExecResult::error(
                EXIT_ERROR,
                format!("unknown flag: --{name} (or not simulated by the lab's etcdctl)"),
            ));
        }
    }
    Ok(CommandLine {
        words,
        format: format.unwrap_or(Format::Simple),
    })
}

impl EtcdMembers {
    /// An empty cluster with a random cluster ID.
    pub fn new() -> EtcdMembers {
        EtcdMembers(Arc::new(Mutex::new(State {
            cluster_id: random_id(),
            raft_term: 2,
            members: Vec::new(),
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn cluster_id(&self) -> u64 {
        self.state().cluster_id
    }

    /// Adds `name`'s member (a new random ID) unless it has one; its ID either way.
    pub fn add(&self, name: &str, ip: &str) -> u64 {
        let mut st = self.state();
        if let Some(m) = st.members.iter().find(|m| m.name == name) {
            return m.id;
        }
        let id = loop {
            let id = random_id();
            if id != st.cluster_id && st.members.iter().all(|m| m.id != id) {
                break id;
            }
        };
        st.members.push(Member {
            id,
            name: name.into(),
            ip: ip.into(),
        });
        id
    }

    /// etcd's `MemberRemove`; the error is the server's.
    pub fn remove(&self, id: u64) -> Result<(), String> {
        let mut st = self.state();
        let before = st.members.len();
        st.members.retain(|m| m.id != id);
        if st.members.len() == before {
            return Err("etcdserver: member not found".into());
        }
        Ok(())
    }

    pub fn members(&self) -> Vec<Member> {
        self.state().members.clone()
    }

    /// `name (hex id)`, comma-separated, for the timeline.
    pub fn describe(&self) -> String {
        let mut members = self.members();
        members.sort_by(|a, b| a.name.cmp(&b.name));
        members
            .iter()
            .map(|m| format!("{} ({:x})", m.name, m.id))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn has(&self, id: u64) -> bool {
        self.state().members.iter().any(|m| m.id == id)
    }

    /// The members' names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.members().into_iter().map(|m| m.name).collect();
        names.sort();
        names
    }

    /// `etcdctl <args>` as etcdctl 3.5 answers it: `member list` (simple, `-w json`,
    /// `-w table`) and `member remove <hex id>`, connection flags accepted and ignored.
    pub fn run_etcdctl(&self, args: &[String]) -> ExecResult {
        let line = match parse_command_line(args) {
            Ok(line) => line,
            Err(e) => return e,
        };
        match line.words.as_slice() {
            ["member", "list"] => ExecResult::ok(match line.format {
                Format::Simple => self.list_simple(),
                Format::Json => self.list_json().to_string() + "\n",
                Format::Table => self.list_table(),
            }),
            ["member", "remove", rest @ ..] => {
                let [hex] = rest else {
                    return ExecResult::error(EXIT_BAD_ARGS, "member ID is not provided");
                };
                // Go's strconv.ParseUint: no sign.
                let parsed = if hex.starts_with('+') {
                    None
                } else {
                    u64::from_str_radix(hex, 16).ok()
                };
                let Some(id) = parsed else {
                    return ExecResult::error(
                        EXIT_BAD_ARGS,
                        format!(
                            "bad member ID arg (strconv.ParseUint: parsing {hex:?}: invalid syntax), expecting ID in Hex"
                        ),
                    );
                };
                match self.remove(id) {
                    Ok(()) => ExecResult::ok(format!(
                        "Member {id:16x} removed from cluster {:16x}\n",
                        self.cluster_id()
                    )),
                    Err(e) => ExecResult::error(EXIT_ERROR, e),
                }
            }
            [] => ExecResult::error(
                EXIT_ERROR,
                "no command (the lab's etcdctl knows member list and member remove)",
            ),
            words => ExecResult::error(
                EXIT_ERROR,
                format!(
                    "unknown command {:?} for \"etcdctl\" (the lab's etcdctl knows member list and member remove)",
                    words.join(" ")
                ),
            ),
        }
    }

    /// etcdctl's JSON printer (Go's encoding of the MemberListResponse): IDs as unsigned
    /// 64-bit numbers, the header of the member that answered.
    fn list_json(&self) -> serde_json::Value {
        let st = self.state();
        let answering = st.members.first().map_or(0, |m| m.id);
        json!({
            "header": {"cluster_id": st.cluster_id, "member_id": answering, "raft_term": st.raft_term},
            "members": st.members.iter().map(|m| json!({
                "ID": m.id,
                "name": m.name,
                "peerURLs": m.peer_urls(),
                "clientURLs": m.client_urls(),
            })).collect::<Vec<_>>(),
        })
    }

    /// etcdctl's member list table rows: ID, status, name, peer and client URLs, learner.
    fn list_rows(&self) -> Vec<[String; 6]> {
        self.state()
            .members
            .iter()
            .map(|m| {
                [
                    format!("{:x}", m.id),
                    "started".to_string(),
                    m.name.clone(),
                    m.peer_urls().join(","),
                    m.client_urls().join(","),
                    "false".to_string(),
                ]
            })
            .collect()
    }

    /// The simple format: each row joined by `, `.
    fn list_simple(&self) -> String {
        self.list_rows()
            .iter()
            .map(|row| row.join(", ") + "\n")
            .collect()
    }

    /// `-w table` (olekukonko/tablewriter as etcdctl sets it up: headers centred, cells
    /// right-aligned).
    fn list_table(&self) -> String {
        let header = [
            "ID",
            "STATUS",
            "NAME",
            "PEER ADDRS",
            "CLIENT ADDRS",
            "IS LEARNER",
        ];
        let rows = self.list_rows();
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].len())
                    .chain([header[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let rule = widths
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("+");
        let rule = format!("+{rule}+\n");
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let centred = header
            .iter()
            .zip(&widths)
            .map(|(h, w)| {
                let left = (w - h.len()) / 2;
                format!("{}{h}{}", " ".repeat(left), " ".repeat(w - h.len() - left))
            })
            .collect();
        let mut out = rule.clone() + &line(centred) + &rule;
        for row in &rows {
            out += &line(
                row.iter()
                    .zip(&widths)
                    .map(|(c, &w)| format!("{c:>w$}"))
                    .collect(),
            );
        }
        out + &rule
    }
}

/// The certificate Secrets the etcd operator keeps for a master's member.
pub fn member_secret_names(node: &str) -> [String; 3] {
    [
        format!("etcd-peer-{node}"),
        format!("etcd-serving-{node}"),
        format!("etcd-serving-metrics-{node}"),
    ]
}

/// The `etcd-endpoints` ConfigMap's data: each member's ID (`%016x`) to its IP.
fn endpoints_data(members: &[Member]) -> BTreeMap<String, String> {
    members
        .iter()
        .map(|m| (format!("{:016x}", m.id), m.ip.clone()))
        .collect()
}

/// The mirror pod the kubelet of `node` keeps for the static etcd pod.
fn mirror_pod(node: &str, node_uid: &str) -> serde_json::Value {
    let name = pod_name(node);
    let containers: Vec<serde_json::Value> = CONTAINERS
        .iter()
        .map(|(c, etcd_image)| {
            json!({"name": c, "image": if *etcd_image { ETCD_IMAGE } else { OPERATOR_IMAGE },
                   "command": ["/bin/sh", "-c", "trap TERM INT; sleep infinity & wait"]})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE,
            "labels": {"app": "etcd", "etcd": "true", "k8s-app": "etcd", "revision": "1"},
            "annotations": {
                "kubernetes.io/config.hash": format!("lab-{node}"),
                "kubernetes.io/config.mirror": format!("lab-{node}"),
                "kubernetes.io/config.source": "file",
                "kubectl.kubernetes.io/default-container": "etcd"},
            // The kubelet makes its Node the mirror pod's owner.
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                "uid": node_uid, "controller": true}]},
        "spec": {"nodeName": node, "hostNetwork": true, "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}],
            "containers": containers}})
}

/// The mirror pod's status: running, every container ready.
fn mirror_pod_status(ip: &str, now: &str) -> serde_json::Value {
    let condition = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": now});
    let statuses: Vec<serde_json::Value> = CONTAINERS
        .iter()
        .map(|(c, etcd_image)| {
            let image = if *etcd_image {
                ETCD_IMAGE
            } else {
                OPERATOR_IMAGE
            };
            json!({"name": c, "image": image, "imageID": image, "ready": true, "started": true,
                   "restartCount": 0, "state": {"running": {"startedAt": now}}})
        })
        .collect();
    let conditions = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .map(condition);
    json!({"status": {"phase": "Running", "hostIP": ip, "hostIPs": [{"ip": ip}],
        "podIP": ip, "podIPs": [{"ip": ip}], "startTime": now,
        "conditions": conditions,
        "containerStatuses": statuses}})
}

/// As the etcd operator (and the master's kubelet, for the static pod) do for a Ready master:
/// its member, certificate Secrets, etcd mirror pod (Running, owned by the Node) and
/// `etcd-endpoints` entry. The Node must exist. Idempotent.
pub async fn ensure_member(
    workload: &Client,
    members: &EtcdMembers,
    node: &str,
    ip: &str,
) -> Result<()> {
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    Api::<Namespace>::all(workload.clone())
        .patch(
            NAMESPACE,
            &pp,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": NAMESPACE}})),
        )
        .await
        .context("applying Namespace openshift-etcd")?;
    let node_uid = Api::<Node>::all(workload.clone())
        .get(node)
        .await
        .with_context(|| format!("reading Node {node}"))?
        .metadata
        .uid
        .with_context(|| format!("Node {node} has no UID"))?;
    members.add(node, ip);
    let secrets: Api<Secret> = Api::namespaced(workload.clone(), NAMESPACE);
    for name in member_secret_names(node) {
        secrets
            .patch(
                &name,
                &pp,
                &Patch::Apply(json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                    "type": "kubernetes.io/tls",
                    "stringData": {"tls.crt": "simulated", "tls.key": "simulated"}})),
            )
            .await
            .with_context(|| format!("applying Secret {NAMESPACE}/{name}"))?;
    }
    let pod = pod_name(node);
    let pods: Api<Pod> = Api::namespaced(workload.clone(), NAMESPACE);
    pods.patch(&pod, &pp, &Patch::Apply(mirror_pod(node, &node_uid)))
        .await
        .with_context(|| format!("applying the mirror pod {NAMESPACE}/{pod}"))?;
    let now = jiff::Timestamp::now().to_string();
    pods.patch_status(
        &pod,
        &PatchParams::default(),
        &Patch::Merge(mirror_pod_status(ip, &now)),
    )
    .await
    .with_context(|| format!("reporting {NAMESPACE}/{pod} Running"))?;
    sync_endpoints(workload, members).await
}

/// Writes `etcd-endpoints` from the member list, as the operator's endpoints controller keeps
/// it (a removed member's entry goes).
pub async fn sync_endpoints(workload: &Client, members: &EtcdMembers) -> Result<()> {
    Api::<ConfigMap>::namespaced(workload.clone(), NAMESPACE)
        .patch(
            "etcd-endpoints",
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "etcd-endpoints", "namespace": NAMESPACE},
                "data": endpoints_data(&members.members())})),
        )
        .await
        .context("applying ConfigMap openshift-etcd/etcd-endpoints")?;
    Ok(())
}

/// The certificate Secrets of `node` still in the workload cluster.
pub async fn member_secrets_left(workload: &Client, node: &str) -> Result<Vec<String>> {
    let secrets: Api<Secret> = Api::namespaced(workload.clone(), NAMESPACE);
    let mut left = Vec::new();
    for name in member_secret_names(node) {
        if secrets
            .get_opt(&name)
            .await
            .with_context(|| format!("reading Secret {NAMESPACE}/{name}"))?
            .is_some()
        {
            left.push(name);
        }
    }
    Ok(left)
}

/// `etcdctl <args>` in the `etcdctl` container of `node`'s etcd pod, through the workload
/// apiserver's pod exec (what `oc rsh -n openshift-etcd etcd-<node>` reaches): what it printed
/// and its exit code as the kubelet reported it. Not bounded in time: wrap it in a timeout.
pub async fn exec_etcdctl(workload: &Client, node: &str, args: &[&str]) -> Result<ExecResult> {
    let pod = pod_name(node);
    let command: Vec<&str> = std::iter::once("etcdctl")
        .chain(args.iter().copied())
        .collect();
    let params = AttachParams::default()
        .container("etcdctl")
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut process = Api::<Pod>::namespaced(workload.clone(), NAMESPACE)
        .exec(&pod, command, &params)
        .await
        .with_context(|| format!("exec in {NAMESPACE}/{pod}"))?;
    let mut stdout = process.stdout().context("the exec has no stdout")?;
    let mut stderr = process.stderr().context("the exec has no stderr")?;
    let status = process.take_status().context("the exec has no status")?;
    let (mut out, mut err) = (String::new(), String::new());
    let (read_out, read_err) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    read_out.context("reading stdout")?;
    read_err.context("reading stderr")?;
    let status = status.await;
    process
        .join()
        .await
        .with_context(|| format!("exec in {NAMESPACE}/{pod}"))?;
    let status = status.context("the kubelet reported no exit status")?;
    let exit_code = match (status.status.as_deref(), status.reason.as_deref()) {
        (Some("Success"), _) => 0,
        (_, Some("NonZeroExitCode")) => status
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|c| c.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message.as_deref()?.parse().ok())
            .context("a non-zero exit without its code")?,
        _ => bail!(
            "exec in {NAMESPACE}/{pod} failed: {}",
            status.message.unwrap_or_default()
        ),
    };
    Ok(ExecResult {
        exit_code,
        stdout: out,
        stderr: err,
    })
}

/// The etcd member names as `etcdctl member list -w json` in `node`'s etcd pod lists them
/// (through the workload apiserver, as the provider sees them), sorted.
pub async fn member_names(workload: &Client, node: &str) -> Result<Vec<String>> {
    let listed = exec_etcdctl(workload, node, &["member", "list", "-w", "json"]).await?;
    if listed.exit_code != 0 {
        bail!(
            "etcdctl member list exited {}: {}",
            listed.exit_code,
            listed.stderr.trim()
        );
    }
    let list: serde_json::Value =
        serde_json::from_str(&listed.stdout).context("parsing etcdctl's member list")?;
    let mut names: Vec<String> = list["members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str().map(String::from))
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// master-0 and master-1 at 192.0.2.10 and .11; their IDs.
    fn two() -> (EtcdMembers, u64, u64) {
        let m = EtcdMembers::default();
        let a = m.add("master-0", "192.0.2.10");
        let b = m.add("master-1", "192.0.2.11");
        (m, a, b)
    }

    #[test]
    fn members_have_random_distinct_ids_and_add_is_idempotent_by_name() {
        let (m, a, b) = two();
        assert_ne!(a, 0);
        assert_ne!(a, b);
        assert_eq!(m.add("master-0", "192.0.2.10"), a);
        assert_ne!(EtcdMembers::default().cluster_id(), m.cluster_id());
        assert_eq!(m.names(), ["master-0", "master-1"]);
        assert_eq!(
            m.remove(a ^ b),
            Err("etcdserver: member not found".to_string())
        );
        assert_eq!(m.remove(a), Ok(()));
        assert_eq!(m.names(), ["master-1"]);
    }

    #[test]
    fn member_list_rows() {
        let (m, a, b) = two();
        let simple = format!(
            "{a:x}, started, master-0, https://192.0.2.10:2380, https://192.0.2.10:2379, false\n\
             {b:x}, started, master-1, https://192.0.2.11:2380, https://192.0.2.11:2379, false\n"
        );
        // (command line, stdout)
        let rows = [
            ("member list", simple.clone()),
            ("member list -w simple", simple.clone()),
            (
                "--endpoints https://192.0.2.10:2379 member list --cacert=/ca.crt",
                simple,
            ),
        ];
        for (line, stdout) in rows {
            assert_eq!(m.run_etcdctl(&args(line)), ExecResult::ok(stdout), "{line}");
        }
        for line in [
            "member list -w json",
            "member list --write-out=json",
            "member list --write-out json",
            "-w json member list",
            "member list -wjson",
            "member list -w=json",
        ] {
            let out = m.run_etcdctl(&args(line));
            assert_eq!(out.exit_code, 0, "{line}: {out:?}");
            assert!(out.stdout.ends_with("}\n"), "{line}");
            let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            assert_eq!(v["header"]["cluster_id"].as_u64(), Some(m.cluster_id()));
            assert_eq!(v["header"]["member_id"].as_u64(), Some(a));
            assert_eq!(v["members"][0]["ID"].as_u64(), Some(a), "exact as u64");
            assert_eq!(v["members"][1]["name"], "master-1");
            assert_eq!(v["members"][1]["peerURLs"][0], "https://192.0.2.11:2380");
            assert_eq!(v["members"][1]["clientURLs"][0], "https://192.0.2.11:2379");
        }
    }

    #[test]
    fn member_list_table_is_tablewriters() {
        let m = EtcdMembers::default();
        let id = m.add("master-0", "192.0.2.10");
        let hex = format!("{id:x}");
        let w = hex.len().max(2);
        let id_head = format!("{:^w$}", "ID");
        let rule_id = "-".repeat(w + 2);
        let expected = format!(
            "+{rule_id}+---------+----------+-------------------------+-------------------------+------------+\n\
             | {id_head} | STATUS  |   NAME   |       PEER ADDRS        |      CLIENT ADDRS       | IS LEARNER |\n\
             +{rule_id}+---------+----------+-------------------------+-------------------------+------------+\n\
             | {hex:>w$} | started | master-0 | https://192.0.2.10:2380 | https://192.0.2.10:2379 |      false |\n\
             +{rule_id}+---------+----------+-------------------------+-------------------------+------------+\n"
        );
        assert_eq!(
            m.run_etcdctl(&args("member list -w table")).stdout,
            expected
        );
    }

    #[test]
    fn member_remove_rows() {
        let (m, a, b) = two();
        let cluster = m.cluster_id();
        // (command line, exit code, stdout, stderr); run in order on the same members.
        let rows = [
            (
                format!("member remove {b:x}"),
                0,
                format!("Member {b:16x} removed from cluster {cluster:16x}\n"),
                String::new(),
            ),
            (
                format!("member remove {b:x}"),
                1,
                String::new(),
                "Error: etcdserver: member not found\n".into(),
            ),
            (
                format!("member remove {:X}", a),
                0,
                format!("Member {a:16x} removed from cluster {cluster:16x}\n"),
                String::new(),
            ),
            (
                "member remove".into(),
                128,
                String::new(),
                "Error: member ID is not provided\n".into(),
            ),
            (
                "member remove master-0".into(),
                128,
                String::new(),
                "Error: bad member ID arg (strconv.ParseUint: parsing \"master-0\": invalid syntax), expecting ID in Hex\n".into(),
            ),
            (
                "member remove +1".into(),
                128,
                String::new(),
                "Error: bad member ID arg (strconv.ParseUint: parsing \"+1\": invalid syntax), expecting ID in Hex\n".into(),
            ),
        ];
        for (line, code, stdout, stderr) in rows {
            assert_eq!(
                m.run_etcdctl(&args(&line)),
                ExecResult {
                    exit_code: code,
                    stdout,
                    stderr
                },
                "{line}"
            );
        }
        assert!(m.names().is_empty());
    }

    #[test]
    fn anything_else_fails_with_an_error_rows() {
        let (m, _, _) = two();
        // (command line, exit code, stderr starts with)
        let rows = [
            ("", 1, "Error: no command"),
            (
                "endpoint health",
                1,
                "Error: unknown command \"endpoint health\"",
            ),
            ("member add x", 1, "Error: unknown command \"member add x\""),
            (
                "member list -w fields",
                1,
                "Error: output format \"fields\"",
            ),
            ("member list --hex", 1, "Error: unknown flag: --hex"),
            (
                "member list -x",
                1,
                "Error: unknown shorthand flag: 'x' in -x",
            ),
            (
                "member list -w",
                1,
                "Error: flag needs an argument: --write-out",
            ),
        ];
        for (line, code, stderr) in rows {
            let out = m.run_etcdctl(&args(line));
            assert_eq!(out.exit_code, code, "{line}: {out:?}");
            assert!(out.stderr.starts_with(stderr), "{line}: {out:?}");
            assert!(out.stdout.is_empty(), "{line}");
        }
        assert_eq!(m.names().len(), 2, "nothing changed");
    }

    #[test]
    fn endpoints_and_the_mirror_pod_are_the_operators() {
        let (m, a, _) = two();
        let data = endpoints_data(&m.members());
        assert_eq!(
            data.get(&format!("{a:016x}")).map(String::as_str),
            Some("192.0.2.10")
        );
        let pod = mirror_pod("master-0", "uid-0");
        assert_eq!(pod["metadata"]["name"], "etcd-master-0");
        assert_eq!(
            pod["metadata"]["annotations"]["kubernetes.io/config.source"],
            "file"
        );
        assert!(pod["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string());
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "Node");
        assert_eq!(pod["spec"]["containers"][0]["name"], "etcdctl");
        assert_eq!(pod["spec"]["nodeName"], "master-0");
    }
}

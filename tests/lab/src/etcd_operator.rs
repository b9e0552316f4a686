//! The workload cluster's etcd as the lab simulates it: the member list (what `etcdctl` in an
//! etcd pod answers) and the objects OpenShift's cluster-etcd-operator keeps per master — its
//! static etcd pod (a mirror pod `openshift-etcd/etcd-<node>` with an `etcdctl` container), the
//! member's certificate Secrets and the `etcd-endpoints` ConfigMap. Adding a master's member once
//! its Node is Ready is what the operator does for a new control-plane Node; removing a member
//! is the provider's job, through `etcdctl` in a pod exec ([`crate::kubelet_api`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

pub const NAMESPACE: &str = "openshift-etcd";
const FIELD_MANAGER: &str = "lab-etcd-operator";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    pub name: String,
    pub ip: String,
}

#[derive(Debug)]
struct State {
    cluster_id: u64,
    next: u64,
    members: Vec<Member>,
}

/// The member list, shared by the simulated kubelets' exec and the lab.
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

    fn error(stderr: impl Into<String>) -> ExecResult {
        ExecResult {
            exit_code: 1,
            stdout: String::new(),
            stderr: stderr.into(),
        }
    }
}

impl Default for EtcdMembers {
    fn default() -> Self {
        EtcdMembers::new(0x6881_c977_b979_90d7)
    }
}

impl EtcdMembers {
    /// Member IDs are derived from `cluster_id` (deterministic, large, as etcd's are).
    pub fn new(cluster_id: u64) -> EtcdMembers {
        EtcdMembers(Arc::new(Mutex::new(State {
            cluster_id,
            next: 1,
            members: Vec::new(),
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `name`'s member unless it has one; its ID either way.
    pub fn add(&self, name: &str, ip: &str) -> u64 {
        let mut st = self.state();
        if let Some(m) = st.members.iter().find(|m| m.name == name) {
            return m.id;
        }
        let id = st
            .cluster_id
            .rotate_left(17)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(st.next.wrapping_mul(0x2545_f491_4f6c_dd1d))
            | 1;
        st.next += 1;
        st.members.push(Member {
            id,
            name: name.into(),
            ip: ip.into(),
        });
        id
    }

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

    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.members().into_iter().map(|m| m.name).collect();
        names.sort();
        names
    }

    /// `etcdctl <args>` as etcdctl 3.5 answers it (the subset the documented member
    /// replacement uses).
    pub fn run_etcdctl(&self, args: &[String]) -> ExecResult {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let json_output = |rest: &[&str]| {
            matches!(
                rest,
                ["-w", "json"] | ["--write-out=json"] | ["--write-out", "json"]
            )
        };
        match args.as_slice() {
            ["member", "list", rest @ ..] if json_output(rest) => {
                ExecResult::ok(self.list_json().to_string() + "\n")
            }
            ["member", "list"] => ExecResult::ok(self.list_simple()),
            ["member", "remove", hex] => match u64::from_str_radix(hex, 16) {
                Err(_) => ExecResult::error(format!(
                    "Error: bad member ID arg (strconv.ParseUint: parsing \"{hex}\": invalid syntax), expecting ID in Hex\n"
                )),
                Ok(id) => match self.remove(id) {
                    Ok(()) => ExecResult::ok(format!(
                        "Member {id:16x} removed from cluster {:16x}\n",
                        self.state().cluster_id
                    )),
                    Err(e) => ExecResult::error(format!("Error: {e}\n")),
                },
            },
            _ => ExecResult::error(format!(
                "Error: unknown command {:?} for \"etcdctl\" (the lab's etcd knows member list and member remove)\n",
                args.join(" ")
            )),
        }
    }

    /// etcd's JSON printer: IDs as unsigned 64-bit numbers.
    fn list_json(&self) -> serde_json::Value {
        let st = self.state();
        let first = st.members.first().map_or(0, |m| m.id);
        json!({
            "header": {"cluster_id": st.cluster_id, "member_id": first, "raft_term": 3},
            "members": st.members.iter().map(|m| json!({
                "ID": m.id,
                "name": m.name,
                "peerURLs": [format!("https://{}:2380", m.ip)],
                "clientURLs": [format!("https://{}:2379", m.ip)],
            })).collect::<Vec<_>>(),
        })
    }

    /// etcdctl's simple format: `id, status, name, peer, client, is learner`.
    fn list_simple(&self) -> String {
        self.state()
            .members
            .iter()
            .map(|m| {
                format!(
                    "{:x}, started, {}, https://{ip}:2380, https://{ip}:2379, false\n",
                    m.id,
                    m.name,
                    ip = m.ip
                )
            })
            .collect()
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

/// As the etcd operator does for a Ready master: its member, certificate Secrets, static etcd
/// pod (mirror pod, status Running) and `etcd-endpoints` entry. Idempotent.
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
    let pod = format!("etcd-{node}");
    let pods: Api<Pod> = Api::namespaced(workload.clone(), NAMESPACE);
    let container = |name: &str| {
        json!({"name": name, "image": "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0000000000000000000000000000000000000000000000000000000000000e7c",
               "command": ["/bin/sh", "-c", "exec etcd"]})
    };
    pods.patch(
        &pod,
        &pp,
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": NAMESPACE,
                "labels": {"app": "etcd", "etcd": "true", "k8s-app": "etcd"},
                "annotations": {"kubernetes.io/config.mirror": format!("lab-{node}"),
                                "kubernetes.io/config.source": "file"}},
            "spec": {"nodeName": node, "hostNetwork": true, "priorityClassName": "system-node-critical",
                "containers": [container("etcdctl"), container("etcd")]}})),
    )
    .await
    .with_context(|| format!("applying the static pod {NAMESPACE}/{pod}"))?;
    let now = jiff::Timestamp::now().to_string();
    pods.patch_status(
        &pod,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"phase": "Running", "podIP": ip, "hostIP": ip,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}}),
        ),
    )
    .await
    .with_context(|| format!("reporting {NAMESPACE}/{pod} Running"))?;
    let endpoints: BTreeMap<String, String> = members
        .members()
        .into_iter()
        .map(|m| (format!("{:x}", m.id), m.ip))
        .collect();
    Api::<ConfigMap>::namespaced(workload.clone(), NAMESPACE)
        .patch(
            "etcd-endpoints",
            &pp,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "etcd-endpoints", "namespace": NAMESPACE},
                "data": endpoints})),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn etcdctl_rows() {
        let m = EtcdMembers::default();
        let a = m.add("master-0", "192.168.111.20");
        let b = m.add("master-1", "192.168.111.21");
        assert_eq!(m.add("master-0", "192.168.111.20"), a, "idempotent by name");
        assert_ne!(a, b);

        let list = m.run_etcdctl(&args("member list -w json"));
        assert_eq!(list.exit_code, 0);
        let v: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
        assert_eq!(v["members"][0]["ID"].as_u64(), Some(a));
        assert_eq!(v["members"][1]["name"], "master-1");
        assert_eq!(
            v["members"][1]["clientURLs"][0],
            "https://192.168.111.21:2379"
        );
        assert_eq!(m.run_etcdctl(&args("member list --write-out=json")), list);
        assert!(
            m.run_etcdctl(&args("member list"))
                .stdout
                .starts_with(&format!(
                    "{a:x}, started, master-0, https://192.168.111.20:2380"
                ))
        );

        let removed = m.run_etcdctl(&args(&format!("member remove {b:x}")));
        assert_eq!(removed.exit_code, 0, "{removed:?}");
        assert!(
            removed
                .stdout
                .starts_with(&format!("Member {b:16x} removed from cluster"))
        );
        assert_eq!(m.names(), vec!["master-0".to_string()]);

        let again = m.run_etcdctl(&args(&format!("member remove {b:x}")));
        assert_eq!(
            (again.exit_code, again.stderr.as_str()),
            (1, "Error: etcdserver: member not found\n")
        );
        assert_eq!(m.run_etcdctl(&args("member remove xyz")).exit_code, 1);
        assert_eq!(m.run_etcdctl(&args("endpoint health")).exit_code, 1);
    }
}

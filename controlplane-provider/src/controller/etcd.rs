//! The installed cluster's etcd membership, edited through its API as OpenShift documents
//! replacing an unhealthy member: `etcdctl` run in the `etcdctl` container of a healthy
//! master's etcd pod (`oc rsh -n openshift-etcd etcd-<node>`, here a pod exec over the
//! `<cluster>-kubeconfig` admin client), then the member's certificate Secrets and its Node
//! deleted. The container's environment names the endpoints and certificates, as for `oc rsh`.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::Client;
use kube::api::{Api, AttachParams};
use serde::Deserialize;
use thiserror::Error;
use tokio::io::AsyncReadExt;

use super::remediation::{Member, member_secrets};

pub const ETCD_NAMESPACE: &str = "openshift-etcd";
const ETCDCTL_CONTAINER: &str = "etcdctl";
/// An exec that does not finish in this long is abandoned (the reconcile retries).
const EXEC_TIMEOUT: Duration = Duration::from_secs(30);

/// `etcdctl member list -w json`, as etcd's JSON printer writes it (IDs as unsigned numbers).
#[derive(Deserialize)]
struct MemberList {
    #[serde(default)]
    members: Vec<JsonMember>,
}

#[derive(Deserialize)]
struct JsonMember {
    #[serde(rename = "ID")]
    id: u64,
    /// Empty for a member added but not started yet.
    #[serde(default)]
    name: String,
}

/// What went wrong editing the membership; the texts end up in events and conditions.
#[derive(Debug, Error)]
pub enum EtcdError {
    #[error("etcdctl member list printed no member list ({0})")]
    MemberList(serde_json::Error),
    #[error("{0} (namespace {ETCD_NAMESPACE})")]
    DeleteSecret(manager::controller::Error),
    #[error("{0}")]
    DeleteNode(manager::controller::Error),
    #[error("`{command}` in {ETCD_NAMESPACE}/{pod}: {cause}")]
    Etcdctl {
        command: String,
        pod: String,
        cause: Box<ExecError>,
    },
    #[error("`{command}` in {ETCD_NAMESPACE}/{pod} did not finish in {}s", EXEC_TIMEOUT.as_secs())]
    Timeout { command: String, pod: String },
}

/// Why one exec of `etcdctl` failed.
#[derive(Debug, Error)]
pub enum ExecError {
    #[error("exec in {ETCD_NAMESPACE}/{pod}: {source}")]
    Exec { pod: String, source: kube::Error },
    #[error("the exec has no {0}")]
    NoStream(&'static str),
    #[error("reading {stream}: {source}")]
    Read {
        stream: &'static str,
        source: std::io::Error,
    },
    #[error("exec in {ETCD_NAMESPACE}/{pod}: {message}")]
    Join { pod: String, message: String },
    #[error("{message}: {stderr}")]
    Failed { message: String, stderr: String },
    #[error("no exit status reported; stderr: {stderr}")]
    NoExitStatus { stderr: String },
}

pub fn parse_member_list(stdout: &str) -> Result<Vec<Member>, EtcdError> {
    let list: MemberList = serde_json::from_str(stdout.trim()).map_err(EtcdError::MemberList)?;
    Ok(list
        .members
        .into_iter()
        .map(|m| Member {
            id: m.id,
            name: m.name,
        })
        .collect())
}

/// `etcdctl member list` in the etcd pod on `node`.
pub async fn member_list(workload: &Client, node: &str) -> Result<Vec<Member>, EtcdError> {
    let out = etcdctl(workload, node, &["member", "list", "-w", "json"]).await?;
    parse_member_list(&out)
}

/// `etcdctl member remove <hex id>` in the etcd pod on `node`; a member already gone is done.
pub async fn member_remove(workload: &Client, node: &str, id: u64) -> Result<(), EtcdError> {
    let hex = format!("{id:x}");
    match etcdctl(workload, node, &["member", "remove", &hex]).await {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("member not found") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the etcd operator's certificate Secrets of `node`'s member; absent ones are done.
pub async fn delete_member_secrets(workload: &Client, node: &str) -> Result<(), EtcdError> {
    let secrets: Api<Secret> = Api::namespaced(workload.clone(), ETCD_NAMESPACE);
    for name in member_secrets(node) {
        manager::controller::delete(&secrets, &name)
            .await
            .map_err(EtcdError::DeleteSecret)?;
    }
    Ok(())
}

/// Deletes `node`'s Node object; an absent one is done.
pub async fn delete_node(workload: &Client, node: &str) -> Result<(), EtcdError> {
    manager::controller::delete(&Api::<Node>::all(workload.clone()), node)
        .await
        .map_err(EtcdError::DeleteNode)
}

/// Runs `etcdctl <args>` in `etcd-<node>`; stdout, or what went wrong (stderr and the exit
/// status the kubelet reported).
async fn etcdctl(workload: &Client, node: &str, args: &[&str]) -> Result<String, EtcdError> {
    let pod = format!("etcd-{node}");
    let command: Vec<&str> = std::iter::once("etcdctl")
        .chain(args.iter().copied())
        .collect();
    let shown = command.join(" ");
    match tokio::time::timeout(EXEC_TIMEOUT, exec(workload, &pod, command)).await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(cause)) => Err(EtcdError::Etcdctl {
            command: shown,
            pod,
            cause: Box::new(cause),
        }),
        Err(_) => Err(EtcdError::Timeout {
            command: shown,
            pod,
        }),
    }
}

/// One exec of `command` in the etcdctl container of `pod`: its stdout when it succeeded.
async fn exec(workload: &Client, pod: &str, command: Vec<&str>) -> Result<String, ExecError> {
    let pods: Api<Pod> = Api::namespaced(workload.clone(), ETCD_NAMESPACE);
    let params = AttachParams::default()
        .container(ETCDCTL_CONTAINER)
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut process = pods
        .exec(pod, command, &params)
        .await
        .map_err(|source| ExecError::Exec {
            pod: pod.to_string(),
            source,
        })?;
    let mut stdout = process.stdout().ok_or(ExecError::NoStream("stdout"))?;
    let mut stderr = process.stderr().ok_or(ExecError::NoStream("stderr"))?;
    let status = process.take_status().ok_or(ExecError::NoStream("status"))?;
    let (mut out, mut err) = (String::new(), String::new());
    let (read_out, read_err) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    read_out.map_err(|source| ExecError::Read {
        stream: "stdout",
        source,
    })?;
    read_err.map_err(|source| ExecError::Read {
        stream: "stderr",
        source,
    })?;
    let status = status.await;
    process.join().await.map_err(|e| ExecError::Join {
        pod: pod.to_string(),
        message: e.to_string(),
    })?;
    match status {
        Some(s) if s.status.as_deref() == Some("Success") => Ok(out),
        Some(s) => Err(ExecError::Failed {
            message: s.message.unwrap_or_else(|| "failed".into()),
            stderr: err.trim().to_string(),
        }),
        None => Err(ExecError::NoExitStatus {
            stderr: err.trim().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_lists_parse_as_etcdctl_prints_them() {
        // IDs above 2^53 stay exact: etcdctl prints raw unsigned 64-bit numbers.
        let out = r#"{"header":{"cluster_id":7530473437513917903,"member_id":3177452470771245603,"raft_term":4},"members":[{"ID":3177452470771245603,"name":"master-0","peerURLs":["https://192.168.111.20:2380"],"clientURLs":["https://192.168.111.20:2379"]},{"ID":18446744073709551615,"peerURLs":["https://192.168.111.23:2380"],"isLearner":true}]}
"#;
        let members = parse_member_list(out).unwrap();
        assert_eq!(
            members,
            vec![
                Member {
                    id: 3177452470771245603,
                    name: "master-0".into()
                },
                Member {
                    id: u64::MAX,
                    name: String::new()
                },
            ]
        );
        assert_eq!(format!("{:x}", members[0].id), "2c18942ff301e223");
        assert!(parse_member_list("Error: context deadline exceeded").is_err());
    }
}

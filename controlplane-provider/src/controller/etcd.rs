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

pub fn parse_member_list(stdout: &str) -> Result<Vec<Member>, String> {
    let list: MemberList = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("etcdctl member list printed no member list ({e})"))?;
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
pub async fn member_list(workload: &Client, node: &str) -> Result<Vec<Member>, String> {
    let out = etcdctl(workload, node, &["member", "list", "-w", "json"]).await?;
    parse_member_list(&out)
}

/// `etcdctl member remove <hex id>` in the etcd pod on `node`; a member already gone is done.
pub async fn member_remove(workload: &Client, node: &str, id: u64) -> Result<(), String> {
    let hex = format!("{id:x}");
    match etcdctl(workload, node, &["member", "remove", &hex]).await {
        Ok(_) => Ok(()),
        Err(e) if e.contains("member not found") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the etcd operator's certificate Secrets of `node`'s member; absent ones are done.
pub async fn delete_member_secrets(workload: &Client, node: &str) -> Result<(), String> {
    let secrets: Api<Secret> = Api::namespaced(workload.clone(), ETCD_NAMESPACE);
    for name in member_secrets(node) {
        manager::controller::delete(&secrets, &name)
            .await
            .map_err(|e| format!("{e} (namespace {ETCD_NAMESPACE})"))?;
    }
    Ok(())
}

/// Deletes `node`'s Node object; an absent one is done.
pub async fn delete_node(workload: &Client, node: &str) -> Result<(), String> {
    manager::controller::delete(&Api::<Node>::all(workload.clone()), node)
        .await
        .map_err(|e| e.to_string())
}

/// Runs `etcdctl <args>` in `etcd-<node>`; stdout, or what went wrong (stderr and the exit
/// status the kubelet reported).
async fn etcdctl(workload: &Client, node: &str, args: &[&str]) -> Result<String, String> {
    let pod = format!("etcd-{node}");
    let command: Vec<&str> = std::iter::once("etcdctl")
        .chain(args.iter().copied())
        .collect();
    let shown = command.join(" ");
    let run = async {
        let pods: Api<Pod> = Api::namespaced(workload.clone(), ETCD_NAMESPACE);
        let params = AttachParams::default()
            .container(ETCDCTL_CONTAINER)
            .stdin(false)
            .stdout(true)
            .stderr(true);
        let mut process = pods
            .exec(&pod, command.clone(), &params)
            .await
            .map_err(|e| format!("exec in {ETCD_NAMESPACE}/{pod}: {e}"))?;
        let mut stdout = process.stdout().ok_or("the exec has no stdout")?;
        let mut stderr = process.stderr().ok_or("the exec has no stderr")?;
        let status = process.take_status().ok_or("the exec has no status")?;
        let (mut out, mut err) = (String::new(), String::new());
        let (read_out, read_err) = tokio::join!(
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        read_out.map_err(|e| format!("reading stdout: {e}"))?;
        read_err.map_err(|e| format!("reading stderr: {e}"))?;
        let status = status.await;
        process
            .join()
            .await
            .map_err(|e| format!("exec in {ETCD_NAMESPACE}/{pod}: {e}"))?;
        match status {
            Some(s) if s.status.as_deref() == Some("Success") => Ok(out),
            Some(s) => Err(format!(
                "{}: {}",
                s.message.unwrap_or_else(|| "failed".into()),
                err.trim()
            )),
            None => Err(format!("no exit status reported; stderr: {}", err.trim())),
        }
    };
    match tokio::time::timeout(EXEC_TIMEOUT, run).await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => Err(format!("`{shown}` in {ETCD_NAMESPACE}/{pod}: {e}")),
        Err(_) => Err(format!(
            "`{shown}` in {ETCD_NAMESPACE}/{pod} did not finish in {}s",
            EXEC_TIMEOUT.as_secs()
        )),
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

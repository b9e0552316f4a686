//! Day-2 hosts after their reboot into an existing cluster: no installer reports the last
//! stages, so the core watches the workload cluster (as assisted-service's Agent controller,
//! `internal/controller/controllers/agent_controller.go`, does). With the client
//! from the `<cd>-admin-kubeconfig` Secret it approves the node's pending CSRs, then reports
//! Joined once the Node exists and Done once it is Ready, labelled with the Agent's
//! `nodeLabels` and both CSRs were approved.
//!
//! The decisions are pure functions over [`CsrView`] / [`NodeView`]; [`run`] is the I/O loop.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use rcgen::{CertificateSigningRequestParams, DnType, DnValue};
use serde_json::json;
use tokio::sync::watch;

use super::context::Context;
use crate::domain::{ClusterStatus, HostStage};
use crate::service::store::Store;

pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// Who asks for a new node's first client certificate (the bootstrap kubeconfig's identity).
pub const NODE_BOOTSTRAPPER: &str =
    "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper";
const NODES_GROUP: &str = "system:nodes";
const POLL: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsrKind {
    Client,
    Serving,
}

/// What the decisions need of one CertificateSigningRequest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CsrView {
    pub name: String,
    pub signer: String,
    pub username: String,
    pub usages: Vec<String>,
    /// The PEM `CERTIFICATE REQUEST`.
    pub request: Vec<u8>,
    pub approved: bool,
    pub denied: bool,
}

impl CsrView {
    pub fn from_csr(csr: &CertificateSigningRequest) -> CsrView {
        let conds = csr
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let has = |t: &str| conds.iter().any(|c| c.type_ == t && c.status == "True");
        CsrView {
            name: csr.name_any(),
            signer: csr.spec.signer_name.clone(),
            username: csr.spec.username.clone().unwrap_or_default(),
            usages: csr.spec.usages.clone().unwrap_or_default(),
            request: csr.spec.request.0.clone(),
            approved: has("Approved"),
            denied: has("Denied"),
        }
    }
}

/// Subject of a PEM certificate request: (CN, O). `None` when it does not parse or its
/// signature does not verify.
pub fn request_subject(pem: &[u8]) -> Option<(String, String)> {
    let pem = std::str::from_utf8(pem).ok()?;
    let req = CertificateSigningRequestParams::from_pem(pem).ok()?;
    let dn = &req.params.distinguished_name;
    let text = |t: DnType| match dn.get(&t)? {
        DnValue::Utf8String(s) => Some(s.clone()),
        DnValue::PrintableString(s) => Some(s.as_str().to_string()),
        DnValue::Ia5String(s) => Some(s.as_str().to_string()),
        _ => None,
    };
    Some((text(DnType::CommonName)?, text(DnType::OrganizationName)?))
}

fn node_user(hostname: &str) -> String {
    format!("system:node:{}", hostname.to_ascii_lowercase())
}

/// Whether `csr` is the kubelet client or serving CSR of node `hostname`, whatever its state.
/// The request must name the node (CN `system:node:<hostname>`, O `system:nodes`) and come
/// from an identity allowed to ask for it: the node bootstrapper or the node itself for the
/// client certificate, only the node for the serving one.
pub fn node_csr_kind(csr: &CsrView, hostname: &str) -> Option<CsrKind> {
    if hostname.is_empty() {
        return None;
    }
    let kind = match csr.signer.as_str() {
        CLIENT_SIGNER => CsrKind::Client,
        SERVING_SIGNER => CsrKind::Serving,
        _ => return None,
    };
    let node = node_user(hostname);
    let allowed_user = match kind {
        CsrKind::Client => csr.username == NODE_BOOTSTRAPPER || csr.username == node,
        CsrKind::Serving => csr.username == node,
    };
    let usage = match kind {
        CsrKind::Client => "client auth",
        CsrKind::Serving => "server auth",
    };
    if !allowed_user || !csr.usages.iter().any(|u| u == usage) {
        return None;
    }
    let (cn, org) = request_subject(&csr.request)?;
    (cn.eq_ignore_ascii_case(&node) && org == NODES_GROUP).then_some(kind)
}

/// The CSRs of `hostname` still waiting for a decision.
pub fn csrs_to_approve(csrs: &[CsrView], hostname: &str) -> Vec<(String, CsrKind)> {
    csrs.iter()
        .filter(|c| !c.approved && !c.denied)
        .filter_map(|c| node_csr_kind(c, hostname).map(|k| (c.name.clone(), k)))
        .collect()
}

/// Which of the node's CSRs are approved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Approvals {
    pub client: bool,
    pub serving: bool,
}

pub fn approvals(csrs: &[CsrView], hostname: &str) -> Approvals {
    let mut a = Approvals::default();
    for c in csrs.iter().filter(|c| c.approved && !c.denied) {
        match node_csr_kind(c, hostname) {
            Some(CsrKind::Client) => a.client = true,
            Some(CsrKind::Serving) => a.serving = true,
            None => {}
        }
    }
    a
}

/// What the decisions need of the Node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeView {
    pub ready: bool,
}

impl NodeView {
    pub fn from_node(node: &Node) -> NodeView {
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        NodeView { ready }
    }
}

/// The stage to report, `None` when nothing changes: Joined once the Node exists, Done once
/// it is Ready and both CSRs are approved. Never backwards.
pub fn next_stage(
    current: Option<HostStage>,
    node: Option<NodeView>,
    approvals: Approvals,
) -> Option<HostStage> {
    let node = node?;
    let want = if node.ready && approvals.client && approvals.serving {
        HostStage::Done
    } else {
        HostStage::Joined
    };
    match current {
        Some(HostStage::Done) => None,
        Some(c) if c == want => None,
        _ => Some(want),
    }
}

/// Stages after which the core, not an installer, moves a day-2 host on.
fn watched(stage: Option<HostStage>) -> bool {
    matches!(
        stage,
        Some(HostStage::Rebooting | HostStage::Configuring | HostStage::Joined)
    )
}

/// One cluster's day-2 hosts to follow.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub cluster_id: String,
    pub namespace: String,
    pub cluster_deployment: String,
    pub hosts: Vec<Day2Host>,
}

/// A day-2 host between its reboot and Done.
#[derive(Debug, Clone, PartialEq)]
pub struct Day2Host {
    pub id: String,
    pub hostname: String,
    pub stage: Option<HostStage>,
    /// The Agent's `nodeLabels`, put on the Node once it is Ready (as upstream does for day-2).
    pub node_labels: BTreeMap<String, String>,
}

/// The labels of `wanted` the Node lacks or has with another value; empty when none.
pub fn labels_to_apply(wanted: &BTreeMap<String, String>, node: &Node) -> BTreeMap<String, String> {
    let present = node.metadata.labels.as_ref();
    wanted
        .iter()
        .filter(|(k, v)| present.and_then(|l| l.get(*k)) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Clusters in adding-hosts with day-2 hosts between their reboot and Done.
pub fn pending(store: &Store) -> Vec<Work> {
    let mut out: Vec<Work> = store.view(|st| {
        st.clusters
            .iter()
            .filter(|(_, r)| r.snapshot.status == ClusterStatus::AddingHosts)
            .filter_map(|(id, r)| {
                let hosts: Vec<_> = r
                    .snapshot
                    .hosts
                    .iter()
                    .filter(|h| h.is_day2() && watched(h.progress.current_stage))
                    .map(|h| Day2Host {
                        id: h.id.clone(),
                        hostname: h.hostname().to_string(),
                        stage: h.progress.current_stage,
                        node_labels: h.node_labels.clone(),
                    })
                    .collect();
                (!hosts.is_empty()).then(|| Work {
                    cluster_id: id.clone(),
                    namespace: r.settings.namespace.clone(),
                    cluster_deployment: r.settings.cluster_deployment.clone(),
                    hosts,
                })
            })
            .collect()
    });
    out.sort_by(|a, b| a.cluster_id.cmp(&b.cluster_id));
    out
}

/// Polls the workload clusters of clusters with day-2 hosts until `shutdown`.
pub async fn run(ctx: Arc<Context>, mut shutdown: watch::Receiver<bool>) {
    // Workload clients by cluster id, rebuilt when the kubeconfig changes.
    let mut clients: HashMap<String, (Vec<u8>, Client)> = HashMap::new();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = shutdown.changed() => return,
        }
        let work = pending(&ctx.store);
        clients.retain(|id, _| work.iter().any(|w| &w.cluster_id == id));
        for w in work {
            if let Err(e) = pass(&ctx, &mut clients, &w).await {
                tracing::warn!(cluster = %w.cluster_deployment, error = %e, "day-2 hosts: workload cluster check failed; retrying");
            }
        }
    }
}

/// Why a pass over one cluster's day-2 hosts stopped (retried on the next poll).
#[derive(Debug, thiserror::Error)]
pub enum Day2Error {
    /// Reading the admin kubeconfig Secret from the management cluster failed.
    #[error("reading Secret {name}: {source}")]
    ReadSecret {
        name: String,
        #[source]
        source: kube::Error,
    },
    /// The admin kubeconfig is missing or unusable.
    #[error("admin kubeconfig: {0}")]
    Kubeconfig(String),
    /// A call to the workload cluster failed.
    #[error("workload cluster: {what}: {source}")]
    Workload {
        what: String,
        #[source]
        source: kube::Error,
    },
}

async fn workload_client(
    ctx: &Context,
    clients: &mut HashMap<String, (Vec<u8>, Client)>,
    w: &Work,
) -> Result<Client, Day2Error> {
    let name = format!("{}-admin-kubeconfig", w.cluster_deployment);
    let secret = Api::<Secret>::namespaced(ctx.client.clone(), &w.namespace)
        .get_opt(&name)
        .await
        .map_err(|source| Day2Error::ReadSecret {
            name: name.clone(),
            source,
        })?
        .ok_or_else(|| Day2Error::Kubeconfig(format!("Secret {name} not found")))?;
    let kubeconfig = secret
        .data
        .as_ref()
        .and_then(|d| d.get("kubeconfig"))
        .map(|b| b.0.clone())
        .ok_or_else(|| Day2Error::Kubeconfig(format!("Secret {name} has no kubeconfig key")))?;
    if let Some((kc, client)) = clients.get(&w.cluster_id)
        && *kc == kubeconfig
    {
        return Ok(client.clone());
    }
    let text = String::from_utf8(kubeconfig.clone())
        .map_err(|_| Day2Error::Kubeconfig("not UTF-8".into()))?;
    let parsed = Kubeconfig::from_yaml(&text).map_err(|e| Day2Error::Kubeconfig(e.to_string()))?;
    let mut config = kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
        .await
        .map_err(|e| Day2Error::Kubeconfig(e.to_string()))?;
    // An unreachable workload cluster must not hold up the other clusters for long.
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(Duration::from_secs(10));
    let client = Client::try_from(config).map_err(|e| Day2Error::Kubeconfig(e.to_string()))?;
    clients.insert(w.cluster_id.clone(), (kubeconfig, client.clone()));
    Ok(client)
}

async fn pass(
    ctx: &Context,
    clients: &mut HashMap<String, (Vec<u8>, Client)>,
    w: &Work,
) -> Result<(), Day2Error> {
    let client = workload_client(ctx, clients, w).await?;
    let csr_api = Api::<CertificateSigningRequest>::all(client.clone());
    let nodes = Api::<Node>::all(client);
    let list = csr_api
        .list(&Default::default())
        .await
        .map_err(|source| Day2Error::Workload {
            what: "listing CSRs".into(),
            source,
        })?;
    let mut csrs: Vec<CsrView> = list.items.iter().map(CsrView::from_csr).collect();
    for host in &w.hosts {
        let (host_id, hostname, stage) = (&host.id, &host.hostname, &host.stage);
        approve_for(&csr_api, &mut csrs, hostname).await;
        let node = nodes
            .get_opt(&hostname.to_ascii_lowercase())
            .await
            .map_err(|source| Day2Error::Workload {
                what: format!("reading Node {hostname}"),
                source,
            })?;
        if let Some(n) = node.as_ref().filter(|n| NodeView::from_node(n).ready)
            && !label(&nodes, n, host).await
        {
            // Not Done until the Node has its labels: CAPM3 finds it by them.
            continue;
        }
        let next = next_stage(
            *stage,
            node.as_ref().map(NodeView::from_node),
            approvals(&csrs, hostname),
        );
        if let Some(next) = next {
            match ctx
                .store
                .day2_progress(&w.cluster_id, host_id, next, Timestamp::now())
            {
                Ok(()) => tracing::info!(host = %hostname, stage = ?next, "day-2 host progress"),
                Err(e) => {
                    tracing::warn!(host = %hostname, error = %e, "cannot record day-2 progress")
                }
            }
        }
    }
    Ok(())
}

/// Approves the host's pending CSRs. Upstream's race (#8622): the client CSR is approved
/// even when the Node already exists.
async fn approve_for(
    csr_api: &Api<CertificateSigningRequest>,
    csrs: &mut [CsrView],
    hostname: &str,
) {
    for (name, kind) in csrs_to_approve(csrs, hostname) {
        match approve(csr_api, &name, hostname).await {
            Ok(()) => {
                tracing::info!(host = %hostname, csr = %name, ?kind, "approved day-2 node CSR");
                if let Some(c) = csrs.iter_mut().find(|c| c.name == name) {
                    c.approved = true;
                }
            }
            Err(e) => {
                tracing::warn!(host = %hostname, csr = %name, error = %e, "cannot approve CSR")
            }
        }
    }
}

/// Gives a ready Node the labels the host asks for; false when that failed (retried).
async fn label(nodes: &Api<Node>, n: &Node, host: &Day2Host) -> bool {
    let hostname = &host.hostname;
    let missing = labels_to_apply(&host.node_labels, n);
    if missing.is_empty() {
        return true;
    }
    let patch = json!({"metadata": {"labels": missing}});
    match nodes
        .patch(
            &n.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => {
            tracing::info!(host = %hostname, labels = ?missing, "labelled day-2 Node");
            true
        }
        Err(e) => {
            tracing::warn!(host = %hostname, error = %e, "cannot label day-2 Node; retrying");
            false
        }
    }
}

async fn approve(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    hostname: &str,
) -> Result<(), kube::Error> {
    let now = Timestamp::now().to_string();
    let patch = json!({"status": {"conditions": [{
        "type": "Approved",
        "status": "True",
        "reason": "AgentCSRApproved",
        "message": format!("Approved by assisted-core for day-2 host {hostname}"),
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }]}});
    api.patch_approval(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, KeyPair};

    fn request(cn: &str, org: &str) -> Vec<u8> {
        let mut p = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        dn.push(DnType::OrganizationName, org);
        p.distinguished_name = dn;
        let key = KeyPair::generate().unwrap();
        p.serialize_request(&key)
            .unwrap()
            .pem()
            .unwrap()
            .into_bytes()
    }

    fn csr(name: &str, kind: CsrKind, user: &str, cn: &str) -> CsrView {
        let (signer, usages) = match kind {
            CsrKind::Client => (CLIENT_SIGNER, vec!["digital signature", "client auth"]),
            CsrKind::Serving => (SERVING_SIGNER, vec!["digital signature", "server auth"]),
        };
        CsrView {
            name: name.into(),
            signer: signer.into(),
            username: user.into(),
            usages: usages.into_iter().map(String::from).collect(),
            request: request(cn, NODES_GROUP),
            approved: false,
            denied: false,
        }
    }

    #[test]
    fn subject_is_read_from_the_pem_request() {
        let pem = request("system:node:w7", "system:nodes");
        assert_eq!(
            request_subject(&pem),
            Some(("system:node:w7".into(), "system:nodes".into()))
        );
        assert_eq!(request_subject(b"not a csr"), None);
    }

    #[test]
    fn client_csr_from_the_bootstrapper_or_the_node_is_approved() {
        let csrs = vec![
            csr("a", CsrKind::Client, NODE_BOOTSTRAPPER, "system:node:w7"),
            csr("b", CsrKind::Client, "system:node:w7", "system:node:w7"),
            csr("c", CsrKind::Serving, "system:node:w7", "system:node:w7"),
        ];
        assert_eq!(
            csrs_to_approve(&csrs, "W7"),
            vec![
                ("a".into(), CsrKind::Client),
                ("b".into(), CsrKind::Client),
                ("c".into(), CsrKind::Serving)
            ]
        );
    }

    #[test]
    fn other_hosts_users_signers_and_decided_csrs_are_left_alone() {
        let mut other_host = csr("a", CsrKind::Client, NODE_BOOTSTRAPPER, "system:node:w8");
        let serving_by_bootstrapper =
            csr("b", CsrKind::Serving, NODE_BOOTSTRAPPER, "system:node:w7");
        let client_by_stranger = csr("c", CsrKind::Client, "mallory", "system:node:w7");
        let mut other_signer = csr("d", CsrKind::Client, NODE_BOOTSTRAPPER, "system:node:w7");
        other_signer.signer = "example.com/signer".into();
        let mut approved = csr("e", CsrKind::Client, NODE_BOOTSTRAPPER, "system:node:w7");
        approved.approved = true;
        let mut denied = csr("f", CsrKind::Serving, "system:node:w7", "system:node:w7");
        denied.denied = true;
        let mut wrong_org = csr("g", CsrKind::Client, NODE_BOOTSTRAPPER, "system:node:w7");
        wrong_org.request = request("system:node:w7", "system:masters");
        let mut no_usage = csr("h", CsrKind::Serving, "system:node:w7", "system:node:w7");
        no_usage.usages = vec!["client auth".into()];
        other_host.request = request("system:node:w8", NODES_GROUP);
        let csrs = vec![
            other_host,
            serving_by_bootstrapper,
            client_by_stranger,
            other_signer,
            approved,
            denied,
            wrong_org,
            no_usage,
        ];
        assert!(csrs_to_approve(&csrs, "w7").is_empty());
        assert!(csrs_to_approve(&csrs, "").is_empty());
        assert_eq!(
            approvals(&csrs, "w7"),
            Approvals {
                client: true,
                serving: false
            }
        );
    }

    #[test]
    fn stages_follow_the_node_and_the_approvals() {
        let both = Approvals {
            client: true,
            serving: true,
        };
        let client_only = Approvals {
            client: true,
            serving: false,
        };
        let ready = Some(NodeView { ready: true });
        let not_ready = Some(NodeView { ready: false });
        let rebooting = Some(HostStage::Rebooting);
        assert_eq!(next_stage(rebooting, None, both), None);
        assert_eq!(
            next_stage(rebooting, not_ready, both),
            Some(HostStage::Joined)
        );
        assert_eq!(
            next_stage(rebooting, ready, client_only),
            Some(HostStage::Joined)
        );
        assert_eq!(next_stage(rebooting, ready, both), Some(HostStage::Done));
        assert_eq!(next_stage(Some(HostStage::Joined), not_ready, both), None);
        assert_eq!(
            next_stage(Some(HostStage::Joined), ready, both),
            Some(HostStage::Done)
        );
        assert_eq!(
            next_stage(Some(HostStage::Configuring), ready, both),
            Some(HostStage::Done)
        );
        assert_eq!(next_stage(Some(HostStage::Done), ready, both), None);
    }

    #[test]
    fn only_missing_or_different_labels_are_applied() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "w", "labels": {"a": "1", "b": "old"}}
        }))
        .unwrap();
        let wanted: BTreeMap<String, String> = [("a", "1"), ("b", "new"), ("metal3.io/uuid", "u")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let missing = labels_to_apply(&wanted, &node);
        assert_eq!(missing.len(), 2);
        assert_eq!(missing["b"], "new");
        assert_eq!(missing["metal3.io/uuid"], "u");
        assert!(labels_to_apply(&BTreeMap::new(), &node).is_empty());
        let bare: Node = serde_json::from_value(json!({"metadata": {"name": "w"}})).unwrap();
        assert_eq!(labels_to_apply(&wanted, &bare).len(), 3);
    }
}

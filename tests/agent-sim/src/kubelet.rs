//! A simulated kubelet joining a workload cluster after a day-2 host's reboot: the TLS
//! bootstrap of a real kubelet, minus the container runtime. It asks for a client certificate
//! (CSR with signer `kube-apiserver-client-kubelet`) as the node bootstrapper, waits for the
//! approval, registers its Node, asks for a serving certificate (`kubelet-serving`) as the
//! node, and reports the Node Ready.
//!
//! No signer runs in the test bed, so approved CSRs get no certificate; the caller hands in a
//! client that already authenticates as `system:node:<hostname>` for the steps after the
//! approval (what the issued certificate would be used for).

use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use serde_json::{Value, json};

pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
pub const NODES_GROUP: &str = "system:nodes";
/// The label baremetal hosts' Nodes carry (the BMH / host UUID).
pub const UUID_LABEL: &str = "metal3.io/uuid";

#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    #[error("cannot build a certificate request: {0}")]
    Csr(String),
    #[error("kubernetes API: {what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("CSR {0} was denied")]
    Denied(String),
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout { what: String, timeout: Duration },
}

fn kube_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> KubeletError {
    let what = what.into();
    move |source| KubeletError::Kube { what, source }
}

/// `system:node:<hostname>`, the identity a node's certificates carry (Node names are
/// lowercase).
pub fn node_user(hostname: &str) -> String {
    format!("system:node:{}", node_name(hostname))
}

pub fn node_name(hostname: &str) -> String {
    hostname.to_ascii_lowercase()
}

/// A PEM certificate request for the node: subject `CN=system:node:<hostname>,
/// O=system:nodes`; the serving one also names the hostname and addresses.
pub fn csr_pem(hostname: &str, san: &[String]) -> Result<String, KubeletError> {
    let err = |e: rcgen::Error| KubeletError::Csr(e.to_string());
    let mut params = CertificateParams::new(san.to_vec()).map_err(err)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, node_user(hostname));
    dn.push(DnType::OrganizationName, NODES_GROUP);
    params.distinguished_name = dn;
    let key = KeyPair::generate().map_err(err)?;
    params
        .serialize_request(&key)
        .map_err(err)?
        .pem()
        .map_err(err)
}

/// A CSR object as the kubelet posts it (`generateName: csr-`).
pub fn csr_object(signer: &str, usages: &[&str], pem: &str) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some("csr-".into()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            signer_name: signer.into(),
            usages: Some(usages.iter().map(|u| u.to_string()).collect()),
            request: ByteString(pem.as_bytes().to_vec()),
            ..Default::default()
        },
        status: None,
    }
}

/// The client certificate request (ECDSA keys: no key encipherment).
pub fn client_csr(hostname: &str) -> Result<CertificateSigningRequest, KubeletError> {
    Ok(csr_object(
        CLIENT_SIGNER,
        &["digital signature", "client auth"],
        &csr_pem(hostname, &[])?,
    ))
}

/// The serving certificate request, for the hostname and the node's addresses.
pub fn serving_csr(
    hostname: &str,
    addresses: &[String],
) -> Result<CertificateSigningRequest, KubeletError> {
    let mut san = vec![node_name(hostname)];
    san.extend(addresses.iter().cloned());
    Ok(csr_object(
        SERVING_SIGNER,
        &["digital signature", "server auth"],
        &csr_pem(hostname, &san)?,
    ))
}

/// `Some(true)` approved, `Some(false)` denied, `None` undecided.
pub fn decision(csr: &CertificateSigningRequest) -> Option<bool> {
    let conds = csr
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let has = |t: &str| conds.iter().any(|c| c.type_ == t && c.status == "True");
    if has("Denied") {
        Some(false)
    } else if has("Approved") {
        Some(true)
    } else {
        None
    }
}

/// The Node a worker's kubelet registers: named after the host, with its role label.
pub fn node_object(hostname: &str) -> Node {
    node_object_with_role(hostname, false)
}

/// The Node the kubelet registers, with the role labels its machine-config pool's kubelet
/// flags set: `worker`, or `master` and `control-plane`.
pub fn node_object_with_role(hostname: &str, master: bool) -> Node {
    let name = node_name(hostname);
    let roles: &[&str] = if master {
        &["master", "control-plane"]
    } else {
        &["worker"]
    };
    let mut labels: std::collections::BTreeMap<String, String> =
        [("kubernetes.io/hostname".to_string(), name.clone())].into();
    for role in roles {
        labels.insert(format!("node-role.kubernetes.io/{role}"), String::new());
    }
    Node {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A status patch reporting the Node Ready at `now` (RFC 3339).
pub fn ready_status(addresses: &[String], now: &str) -> Value {
    let addrs: Vec<Value> = addresses
        .iter()
        .map(|a| json!({"type": "InternalIP", "address": a}))
        .collect();
    json!({"status": {
        "addresses": addrs,
        "conditions": [{
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status (simulated)",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }],
    }})
}

/// One simulated kubelet; see the module docs.
#[derive(Clone)]
pub struct Kubelet {
    pub hostname: String,
    pub addresses: Vec<String>,
    /// Authenticates as the node bootstrapper (the bootstrap kubeconfig).
    pub bootstrap: Client,
    /// Authenticates as `system:node:<hostname>` in `system:nodes`.
    pub node: Client,
    pub poll: Duration,
    pub timeout: Duration,
    /// A control-plane host's kubelet (the `master` pool's labels).
    pub master: bool,
}

/// The CSRs the kubelet created, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletReport {
    pub client_csr: String,
    pub serving_csr: String,
}

impl Kubelet {
    pub fn new(hostname: &str, bootstrap: Client, node: Client) -> Kubelet {
        Kubelet {
            hostname: hostname.into(),
            addresses: Vec::new(),
            bootstrap,
            node,
            poll: Duration::from_millis(200),
            timeout: Duration::from_secs(60),
            master: false,
        }
    }

    /// A control-plane host's kubelet.
    pub fn as_master(mut self, master: bool) -> Kubelet {
        self.master = master;
        self
    }

    pub fn with_addresses(mut self, addresses: Vec<String>) -> Kubelet {
        self.addresses = addresses;
        self
    }

    /// TLS bootstrap, registration, serving CSR, Ready; returns once both CSRs are approved.
    pub async fn join(&self) -> Result<KubeletReport, KubeletError> {
        let boot_csrs = Api::<CertificateSigningRequest>::all(self.bootstrap.clone());
        let client_csr = boot_csrs
            .create(&PostParams::default(), &client_csr(&self.hostname)?)
            .await
            .map_err(kube_err("creating the client CSR"))?
            .name_any();
        tracing::info!(host = %self.hostname, csr = %client_csr, "kubelet: client CSR created");
        self.wait_approved(&boot_csrs, &client_csr).await?;

        let nodes = Api::<Node>::all(self.node.clone());
        let name = node_name(&self.hostname);
        match nodes
            .create(
                &PostParams::default(),
                &node_object_with_role(&self.hostname, self.master),
            )
            .await
        {
            Ok(_) => {}
            // A kubelet restart finds its Node in place.
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(kube_err("registering the Node")(e)),
        }
        let node_csrs = Api::<CertificateSigningRequest>::all(self.node.clone());
        let serving_csr = node_csrs
            .create(
                &PostParams::default(),
                &serving_csr(&self.hostname, &self.addresses)?,
            )
            .await
            .map_err(kube_err("creating the serving CSR"))?
            .name_any();
        tracing::info!(host = %self.hostname, csr = %serving_csr, "kubelet: Node registered, serving CSR created");
        let now = jiff::Timestamp::now().to_string();
        nodes
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(ready_status(&self.addresses, &now)),
            )
            .await
            .map_err(kube_err("reporting the Node Ready"))?;
        self.wait_approved(&node_csrs, &serving_csr).await?;
        Ok(KubeletReport {
            client_csr,
            serving_csr,
        })
    }

    async fn wait_approved(
        &self,
        api: &Api<CertificateSigningRequest>,
        name: &str,
    ) -> Result<(), KubeletError> {
        let start = Instant::now();
        loop {
            let csr = api
                .get(name)
                .await
                .map_err(kube_err(format!("reading CSR {name}")))?;
            match decision(&csr) {
                Some(true) => return Ok(()),
                Some(false) => return Err(KubeletError::Denied(name.into())),
                None => {}
            }
            if start.elapsed() > self.timeout {
                return Err(KubeletError::Timeout {
                    what: format!("the approval of CSR {name}"),
                    timeout: self.timeout,
                });
            }
            tokio::time::sleep(self.poll).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::certificates::v1::{
        CertificateSigningRequestCondition, CertificateSigningRequestStatus,
    };

    #[test]
    fn csrs_name_the_node_with_the_right_signers_and_usages() {
        let c = client_csr("Worker-7").unwrap();
        assert_eq!(c.spec.signer_name, CLIENT_SIGNER);
        assert_eq!(
            c.spec.usages.as_deref().unwrap(),
            ["digital signature", "client auth"]
        );
        assert_eq!(c.metadata.generate_name.as_deref(), Some("csr-"));
        let pem = String::from_utf8(c.spec.request.0.clone()).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE REQUEST-----"));
        let s = serving_csr("worker-7", &["192.168.111.27".into()]).unwrap();
        assert_eq!(s.spec.signer_name, SERVING_SIGNER);
        assert!(s.spec.usages.unwrap().contains(&"server auth".to_string()));
        assert_eq!(node_user("Worker-7"), "system:node:worker-7");
    }

    #[test]
    fn decisions_read_the_conditions() {
        let mut c = client_csr("w").unwrap();
        assert_eq!(decision(&c), None);
        let cond = |t: &str| CertificateSigningRequestCondition {
            type_: t.into(),
            status: "True".into(),
            ..Default::default()
        };
        c.status = Some(CertificateSigningRequestStatus {
            conditions: Some(vec![cond("Approved")]),
            ..Default::default()
        });
        assert_eq!(decision(&c), Some(true));
        c.status = Some(CertificateSigningRequestStatus {
            conditions: Some(vec![cond("Approved"), cond("Denied")]),
            ..Default::default()
        });
        assert_eq!(decision(&c), Some(false));
    }

    #[test]
    fn node_has_the_kubelet_labels_only_and_ready_status() {
        let n = node_object("Worker-7");
        assert_eq!(n.metadata.name.as_deref(), Some("worker-7"));
        let labels = n.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "worker-7");
        // metal3.io/uuid comes from the Agent's nodeLabels, applied after registration.
        assert!(!labels.contains_key(UUID_LABEL));
        let st = ready_status(&["192.168.111.27".into()], "2025-01-01T00:00:00Z");
        assert_eq!(st["status"]["conditions"][0]["type"], "Ready");
        assert_eq!(st["status"]["conditions"][0]["status"], "True");
        assert_eq!(st["status"]["addresses"][0]["address"], "192.168.111.27");
    }
}

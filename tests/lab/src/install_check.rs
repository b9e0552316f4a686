//! The installed cluster read back (ClusterDeployment, ClusterImageSet, kubeconfig and
//! kubeadmin Secrets) and compared with what was asked.

use anyhow::{Context as _, Result, anyhow};
use assisted_core::api::hive::ClusterDeployment;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::Api;
use serde_json::Value;

use crate::cluster_ops::cluster_token;
use crate::generate;
use crate::managers::Managers;
use crate::manifests::ClusterSpec;
/// What the lab reads back once a cluster is installed: the core's view of it and the release
/// its control plane asked for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InstallCheck {
    /// The core's `schedulable_masters` (`GET /clusters/{id}` of the agent REST API): true
    /// when the cluster has fewer than two day-1 workers (compact, SNO).
    pub schedulable_masters: bool,
    /// The core's `openshift_version` of the cluster.
    pub openshift_version: String,
    /// The ClusterImageSet the AgentClusterInstall refers to, and its release image.
    pub cluster_image_set: String,
    pub release_image: String,
    /// The pull secret the ClusterDeployment refers to (`spec.pullSecretRef`).
    pub pull_secret: String,
}

/// Repositories of the release images the control plane picks (controlplane-provider's
/// `release.rs`): OKD (SCOS) and OCP.
pub const OKD_RELEASE_REPOSITORY: &str = "quay.io/okd/scos-release";

pub const OCP_RELEASE_REPOSITORY: &str = "quay.io/openshift-release-dev/ocp-release";

/// Reads back an installed cluster: the core's view of it (`GET /clusters/{id}` with a cluster
/// token) and the release image of the ClusterImageSet its AgentClusterInstall refers to.
pub(crate) async fn install_check(
    client: &Client,
    managers: &Managers,
    spec: &ClusterSpec,
    aci: Option<&assisted_core::api::agentclusterinstall::AgentClusterInstall>,
) -> Result<InstallCheck> {
    let (cluster_id, token) = cluster_token(client, &managers.keys_namespace, spec).await?;
    let url = agent_sim::client::api_url(
        managers.agent_api_url(spec.shard),
        &format!("/clusters/{cluster_id}"),
    );
    let (status, body) = agent_sim::call(&managers.trust, http::Method::GET, &url, &token, None)
        .await
        .map_err(|e| anyhow!("GET {url}: {e}"))?;
    if !status.is_success() {
        anyhow::bail!(
            "GET {url}: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let view: Value = serde_json::from_slice(&body).context("the core's cluster view")?;
    let cd = Api::<ClusterDeployment>::namespaced(client.clone(), &spec.ns)
        .get(&spec.control_plane_name())
        .await
        .context("reading the ClusterDeployment")?;
    let pull_secret = serde_json::to_value(&cd.spec)?
        .pointer("/pullSecretRef/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !pull_secret.is_empty() {
        Api::<Secret>::namespaced(client.clone(), &spec.ns)
            .get(&pull_secret)
            .await
            .with_context(|| format!("reading pull secret {pull_secret}"))?;
    }
    let aci = serde_json::to_value(aci.context("no AgentClusterInstall")?)?;
    let image_set = aci
        .pointer("/spec/imageSetRef/name")
        .and_then(Value::as_str)
        .context("the AgentClusterInstall has no spec.imageSetRef")?
        .to_string();
    let req = http::Request::get(format!(
        "/apis/hive.openshift.io/v1/clusterimagesets/{image_set}"
    ))
    .body(Vec::new())?;
    let set: Value = client
        .request(req)
        .await
        .with_context(|| format!("reading ClusterImageSet {image_set}"))?;
    Ok(InstallCheck {
        schedulable_masters: view["schedulable_masters"].as_bool().unwrap_or_default(),
        openshift_version: view["openshift_version"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        release_image: set
            .pointer("/spec/releaseImage")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        cluster_image_set: image_set,
        pull_secret,
    })
}

impl InstallCheck {
    /// What is wrong with it for a cluster of `spec` (`okd`: an OKD release was asked for;
    /// `None`: the release is the user's, not checked), or `None`.
    pub fn problem(&self, spec: &ClusterSpec, okd: Option<bool>) -> Option<String> {
        let schedulable = spec.workers < 2;
        if self.schedulable_masters != schedulable {
            return Some(format!(
                "the core says schedulable_masters={} for a cluster with {} control-plane nodes and {} workers (expected {schedulable}: masters run workloads when there are fewer than two workers)",
                self.schedulable_masters, spec.masters, spec.workers
            ));
        }
        let (repo, secret) = match okd {
            // No pull secret in the OKD flavours: the control plane's placeholder.
            Some(true) => (
                OKD_RELEASE_REPOSITORY,
                format!("{}-placeholder-pull-secret", spec.control_plane),
            ),
            Some(false) => (
                OCP_RELEASE_REPOSITORY,
                generate::PULL_SECRET_NAME.to_string(),
            ),
            None => return None,
        };
        // By tag, or by digest where the control plane could read the release (a mirror).
        if !self.release_image.starts_with(&format!("{repo}:"))
            && !self.release_image.starts_with(&format!("{repo}@sha256:"))
        {
            return Some(format!(
                "ClusterImageSet {} has release image {:?}, expected one of {repo}",
                self.cluster_image_set, self.release_image
            ));
        }
        if self.pull_secret != secret {
            return Some(format!(
                "the ClusterDeployment's pull secret is {:?}, expected {secret:?}",
                self.pull_secret
            ));
        }
        None
    }

    /// One line for the output.
    pub fn describe(&self) -> String {
        format!(
            "masters {}schedulable; OpenShift {} from ClusterImageSet {} ({}); pull secret {}",
            if self.schedulable_masters { "" } else { "not " },
            self.openshift_version,
            self.cluster_image_set,
            self.release_image,
            self.pull_secret
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Topology;

    #[test]
    fn an_installed_cluster_is_read_back_against_what_was_asked() {
        let ocp = InstallCheck {
            schedulable_masters: false,
            openshift_version: "4.17.3".into(),
            cluster_image_set: "lab.bm-cp".into(),
            release_image: format!("{OCP_RELEASE_REPOSITORY}:4.17.3-x86_64"),
            pull_secret: "pull-secret".into(),
        };
        let three_two = ClusterSpec::new(Topology::ThreePlusTwo, 2, 0, 1);
        assert_eq!(ocp.problem(&three_two, Some(false)), None);
        // Pinned by digest (read through a mirror) is the same repository.
        let pinned = InstallCheck {
            release_image: format!("{OCP_RELEASE_REPOSITORY}@sha256:{}", "a".repeat(64)),
            ..ocp.clone()
        };
        assert_eq!(pinned.problem(&three_two, Some(false)), None);
        // Two workers: the masters must not be schedulable; fewer: they must.
        let compact = ClusterSpec::new(Topology::Compact, 0, 0, 1);
        let e = ocp.problem(&compact, Some(false)).expect("a problem");
        assert!(e.contains("schedulable_masters=false"), "{e}");
        // OKD asked for: OKD's repository and the control plane's placeholder pull secret.
        let e = ocp.problem(&three_two, Some(true)).expect("a problem");
        assert!(e.contains(OKD_RELEASE_REPOSITORY), "{e}");
        let okd = InstallCheck {
            release_image: format!("{OKD_RELEASE_REPOSITORY}:4.19.0-okd-scos.ec.6"),
            pull_secret: "bm-cp-placeholder-pull-secret".into(),
            ..ocp.clone()
        };
        assert_eq!(okd.problem(&three_two, Some(true)), None);
        let e = InstallCheck {
            pull_secret: "pull-secret".into(),
            ..okd.clone()
        }
        .problem(&three_two, Some(true))
        .expect("a problem");
        assert!(e.contains("bm-cp-placeholder-pull-secret"), "{e}");
        // A cluster file's release is not checked.
        assert_eq!(okd.problem(&three_two, None), None);
    }
}

//! The workload cluster's cluster-version operator, simulated: it writes the one ClusterVersion
//! `version` of an installed cluster (the real CRD, from openshift/api) and walks a
//! `spec.desiredUpdate` the way a real CVO reports it — a Partial history entry, `Progressing`
//! "Working towards X: k of n done", the Nodes rebooted one at a time into the new release
//! (control-plane pool first, then workers: Ready False, then Ready with the new kubelet and OS
//! versions), then the entry Completed and "Cluster version is X". An upgrade to the version
//! given as failing stops after its first Node with `Failing` True, as a degraded operator
//! does. Stateless between passes: everything it knows is in the workload API.

use std::time::SystemTime;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const NAME: &str = "version";
/// How many manifests the simulated payload has (the `k of n done` of the messages).
const MANIFESTS: u64 = 841;
/// What a failing upgrade says, as a real CVO names a degraded operator.
pub const FAILURE_MESSAGE: &str = "Cluster operator kube-apiserver is degraded";

fn resource() -> ApiResource {
    ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: "ClusterVersion".into(),
        plural: "clusterversions".into(),
    }
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::try_from(SystemTime::now())
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// The Kubernetes version the simulated release `openshift` ships: 4.N runs 1.(N+13), as
/// OpenShift 4.14-4.21 do; the patch follows the release's (simulated).
pub fn kubernetes_of(openshift: &str) -> String {
    let mut parts = openshift.split(['.', '-']);
    let _major = parts.next();
    let minor: u64 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let patch: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    format!("v1.{}.{patch}", minor + 13)
}

fn condition(type_: &str, status: bool, reason: &str, message: &str, at: &str) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": message, "lastTransitionTime": at})
}

fn settled(version: &str, at: &str) -> Value {
    json!([
        condition(
            "Available",
            true,
            "",
            &format!("Done applying {version}"),
            at
        ),
        condition("Failing", false, "", "", at),
        condition(
            "Progressing",
            false,
            "",
            &format!("Cluster version is {version}"),
            at
        ),
        condition(
            "ReleaseAccepted",
            true,
            "PayloadLoaded",
            &format!("Payload loaded version=\"{version}\""),
            at
        ),
    ])
}

fn node_info(version: &str) -> Value {
    json!({
        "kubeletVersion": kubernetes_of(version),
        "kubeProxyVersion": kubernetes_of(version),
        "osImage": format!("Red Hat Enterprise Linux CoreOS {version} (simulated)"),
        "containerRuntimeVersion": "cri-o://1.30.0",
        "kernelVersion": "5.14.0",
        "operatingSystem": "linux",
        "architecture": "amd64",
        "machineID": "", "systemUUID": "", "bootID": "",
    })
}

/// A version-4 UUID for `spec.clusterID` (the CRD wants one), from the clock: the lab needs it
/// unique per run, not unpredictable.
fn cluster_id(seed: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut bytes = [0u8; 16];
    for (i, b) in format!("{seed}/{nanos}").bytes().enumerate() {
        bytes[i % 16] = bytes[i % 16].wrapping_mul(31).wrapping_add(b);
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn is_master(node: &Node) -> bool {
    node.labels().contains_key("node-role.kubernetes.io/master")
}

fn kubelet_version(node: &Node) -> &str {
    node.status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map_or("", |i| i.kubelet_version.as_str())
}

fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The simulated CVO of the lab's one workload cluster.
pub struct Cvo {
    api: Api<DynamicObject>,
    nodes: Api<Node>,
    /// An upgrade to this version fails.
    pub fail: Option<String>,
}

impl Cvo {
    pub fn new(workload: &Client, fail: Option<String>) -> Cvo {
        Cvo {
            api: Api::all_with(workload.clone(), &resource()),
            nodes: Api::all(workload.clone()),
            fail,
        }
    }

    /// Writes the installed cluster's ClusterVersion: `version` from `image`, Completed.
    pub async fn install(&self, version: &str, image: &str) -> Result<()> {
        if self.api.get_opt(NAME).await?.is_none() {
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                "metadata": {"name": NAME},
                "spec": {"clusterID": cluster_id(version),
                         "channel": format!("stable-{}", version.split('.').take(2).collect::<Vec<_>>().join("."))},
            }))?;
            self.api
                .create(&PostParams::default(), &object)
                .await
                .context("creating ClusterVersion version")?;
        }
        let at = now();
        self.write_status(json!({
            "desired": {"version": version, "image": image},
            "history": [{"state": "Completed", "version": version, "image": image,
                         "startedTime": at, "completionTime": at, "verified": false}],
            "availableUpdates": null,
            "observedGeneration": 1,
            "versionHash": "sim",
            "conditions": settled(version, &at),
        }))
        .await
    }

    /// Replaces `status` with these fields merged in (a PUT of the status: a merge patch
    /// cannot write the `null`s the CRD requires, e.g. a running entry's `completionTime`).
    async fn write_status(&self, fields: Value) -> Result<()> {
        let current = self
            .api
            .get(NAME)
            .await
            .context("reading ClusterVersion version")?;
        let mut object = serde_json::to_value(&current)?;
        if !object["status"].is_object() {
            object["status"] = json!({});
        }
        if let (Some(status), Some(fields)) = (object["status"].as_object_mut(), fields.as_object())
        {
            for (k, v) in fields {
                status.insert(k.clone(), v.clone());
            }
        }
        self.api
            .replace_status(
                NAME,
                &PostParams::default(),
                &serde_json::from_value::<DynamicObject>(object)?,
            )
            .await
            .context("writing ClusterVersion version's status")?;
        Ok(())
    }

    /// One step of the CVO; what happened, for the timeline.
    pub async fn tick(&self) -> Result<Vec<String>> {
        let Some(cv) = self.api.get_opt(NAME).await? else {
            return Ok(Vec::new());
        };
        let cv = serde_json::to_value(&cv)?;
        let status = &cv["status"];
        let mut history: Vec<Value> = status["history"].as_array().cloned().unwrap_or_default();
        let Some(newest) = history.first().cloned() else {
            return Ok(Vec::new());
        };
        let version = newest["version"].as_str().unwrap_or_default().to_string();
        let mut nodes = self.nodes.list(&ListParams::default()).await?.items;
        // Control-plane pool first, then the workers, each in name order.
        nodes.sort_by_key(|n| (!is_master(n), n.name_any()));
        let at = now();
        let mut said = Vec::new();

        if newest["state"] == "Completed" {
            // A Node that joined since (day-2) reports the running release.
            for n in nodes
                .iter()
                .filter(|n| kubelet_version(n).is_empty() && ready(n))
            {
                self.patch_node(
                    &n.name_any(),
                    json!({"status": {"nodeInfo": node_info(&version)}}),
                )
                .await?;
            }
            let update = &cv["spec"]["desiredUpdate"];
            let to = update["version"].as_str().filter(|v| !v.is_empty());
            if let Some(to) = to
                && to != version
            {
                let image = update["image"].as_str().unwrap_or_default();
                history.insert(
                    0,
                    json!({"state": "Partial", "version": to, "image": image,
                           "startedTime": at, "completionTime": null, "verified": !image.is_empty()}),
                );
                self.write_status(json!({
                    "desired": {"version": to, "image": image},
                    "history": history,
                    "conditions": [
                        condition("Available", true, "", &format!("Done applying {version}"), &at),
                        condition("Failing", false, "", "", &at),
                        condition("Progressing", true, "", &format!("Working towards {to}: 0 of {MANIFESTS} done (0% complete)"), &at),
                        condition("ReleaseAccepted", true, "PayloadLoaded", &format!("Payload loaded version=\"{to}\""), &at),
                    ],
                }))
                .await?;
                said.push(format!(
                    "cluster-version operator: upgrade from {version} to {to} started"
                ));
            }
            return Ok(said);
        }

        // Partial: an upgrade to `version` runs.
        let to = version;
        let from = history
            .iter()
            .find(|e| e["state"] == "Completed")
            .and_then(|e| e["version"].as_str())
            .unwrap_or_default()
            .to_string();
        let target = kubernetes_of(&to);
        let done = nodes
            .iter()
            .filter(|n| kubelet_version(n) == target && ready(n))
            .count();
        let failing = self.fail.as_deref() == Some(to.as_str()) && done >= 1;
        let already_failing = status["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Failing" && c["status"] == "True")
        });
        if failing {
            if !already_failing {
                self.write_status(json!({"conditions": [
                    condition("Available", true, "", &format!("Done applying {from}"), &at),
                    condition("Failing", true, "ClusterOperatorDegraded", FAILURE_MESSAGE, &at),
                    condition("Progressing", true, "ClusterOperatorDegraded", &format!("Unable to apply {to}: wait has exceeded 40 minutes for these operators: kube-apiserver"), &at),
                    condition("ReleaseAccepted", true, "PayloadLoaded", &format!("Payload loaded version=\"{to}\""), &at),
                ]}))
                .await?;
                said.push(format!(
                    "cluster-version operator: the upgrade to {to} fails: {FAILURE_MESSAGE}"
                ));
            }
            return Ok(said);
        }
        if let Some(node) = nodes
            .iter()
            .find(|n| kubelet_version(n) != target || !ready(n))
        {
            let name = node.name_any();
            if ready(node) {
                self.patch_node(
                    &name,
                    json!({"status": {"conditions": [{
                    "type": "Ready", "status": "False", "reason": "KubeletNotReady",
                    "message": format!("rebooting into {to} (simulated upgrade)"),
                    "lastHeartbeatTime": at, "lastTransitionTime": at}]}}),
                )
                .await?;
                said.push(format!(
                    "cluster-version operator: Node {name} reboots into {to}"
                ));
            } else {
                self.patch_node(
                    &name,
                    json!({"status": {
                    "nodeInfo": node_info(&to),
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status (simulated)",
                        "lastHeartbeatTime": at, "lastTransitionTime": at}]}}),
                )
                .await?;
                let k = done as u64 + 1;
                let n = nodes.len().max(1) as u64;
                let applied = MANIFESTS * k / n;
                self.write_status(json!({"conditions": [
                    condition("Available", true, "", &format!("Done applying {from}"), &at),
                    condition("Failing", false, "", "", &at),
                    condition("Progressing", true, "", &format!("Working towards {to}: {applied} of {MANIFESTS} done ({}% complete)", applied * 100 / MANIFESTS), &at),
                    condition("ReleaseAccepted", true, "PayloadLoaded", &format!("Payload loaded version=\"{to}\""), &at),
                ]}))
                .await?;
                said.push(format!(
                    "cluster-version operator: Node {name} runs {to} (Kubernetes {target})"
                ));
            }
            return Ok(said);
        }
        history[0]["state"] = json!("Completed");
        history[0]["completionTime"] = json!(at);
        self.write_status(json!({"history": history, "conditions": settled(&to, &at)}))
            .await?;
        said.push(format!("cluster-version operator: Cluster version is {to}"));
        Ok(said)
    }

    async fn patch_node(&self, name: &str, patch: Value) -> Result<()> {
        self.nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .with_context(|| format!("updating Node {name}"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_ship_their_kubernetes() {
        assert_eq!(kubernetes_of("4.17.3"), "v1.30.3");
        assert_eq!(kubernetes_of("4.20.0"), "v1.33.0");
        assert_eq!(kubernetes_of("4.19.0-okd-scos.6"), "v1.32.0");
    }
}

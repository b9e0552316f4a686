//! The simulated machine-config operator of the lab's installed cluster, for image mode
//! (`--image-mode`): what the bootstrap MCO and the cluster's MCO do with the MachineOSConfigs
//! the install was given (OpenShift 4.21's install-time image mode). Once the cluster is
//! installed it reads those MachineOSConfigs from the ConfigMaps the AgentClusterInstall lists
//! (the install's manifests), applies them to the workload apiserver as the installer would
//! (strict field validation: a field the real CRD does not know fails the run), seeds each
//! (`Seeded` True, `currentImagePullSpec`), writes the pool's MachineOSBuild labelled as a
//! pre-built image and its MachineConfigPool, and moves the pool's Nodes to the image one at a
//! time (the `machineconfiguration.openshift.io/currentImage` annotation the machine-config
//! daemon sets), the pool's counters following.

use anyhow::{Context, Result};
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::params::ValidationDirective;
use kube::{Client, ResourceExt};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::manifests::ClusterSpec;

const GROUP_VERSION: &str = "machineconfiguration.openshift.io/v1";
const MCO_NAMESPACE: &str = "openshift-machine-config-operator";
const CURRENT_IMAGE: &str = "machineconfiguration.openshift.io/currentImage";
const DESIRED_IMAGE: &str = "machineconfiguration.openshift.io/desiredImage";
const PRE_BUILT_IMAGE: &str = "machineconfiguration.openshift.io/pre-built-image";
const FIELD_MANAGER: &str = "lab-machine-config-operator";

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "machineconfiguration.openshift.io".into(),
        version: "v1".into(),
        api_version: GROUP_VERSION.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The OpenShift release an image-mode cluster installs (pre-built images need 4.21).
pub const IMAGE_MODE_VERSION: &str = "4.21.2";
/// The registry of the lab's pre-built OS images and where the MCO pushes its builds.
pub const OS_REGISTRY: &str = "registry.example.com";
/// The push Secret the lab makes in the cluster's namespace.
pub const PUSH_SECRET: &str = "image-mode-push";

/// The pre-built image of a pool: by digest, or by tag (`by_tag`: the mistake the refused
/// run makes).
pub fn pool_image(pool: &str, by_tag: bool) -> String {
    if by_tag {
        format!("{OS_REGISTRY}/os/{pool}:latest")
    } else {
        let fill = if pool == "master" { "a" } else { "b" };
        format!("{OS_REGISTRY}/os/{pool}@sha256:{}", fill.repeat(64))
    }
}

/// A cluster's manifests in image mode: the control plane's `spec.config.imageMode` with
/// `pools`, the push Secret it names, and credentials for the OS images' registry in the pull
/// secret (the nodes pull them with it).
pub fn make_image_mode(
    objects: &mut Vec<Value>,
    ns: &str,
    pools: &[&str],
    by_tag: bool,
) -> Result<()> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let spec_pools: Vec<Value> = pools
        .iter()
        .map(|p| {
            json!({
                "pool": p,
                "image": pool_image(p, by_tag),
                "containerfile": "FROM configs AS final\nRUN dnf install -y tmux && dnf clean all\n",
                "renderedImagePushSpec": format!("{OS_REGISTRY}/os/{p}-builds:latest"),
                "renderedImagePushSecretRef": {"name": PUSH_SECRET},
            })
        })
        .collect();
    crate::manifests::control_plane_mut(objects)?["spec"]["config"]["imageMode"] =
        json!({ "pools": spec_pools });
    crate::manifests::add_pull_secret_auth(
        objects,
        OS_REGISTRY,
        &b64("lab:a-placeholder-os-image-pull"),
    )?;
    objects.insert(
        0,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": PUSH_SECRET, "namespace": ns},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": json!({"auths": {OS_REGISTRY: {
                "auth": b64("lab:a-placeholder-os-image-push")}}}).to_string()},
        }),
    );
    Ok(())
}

/// One pool in image mode, as its MachineOSConfig says.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub name: String,
    pub image: String,
    pub machine_os_config: Value,
}

/// The MachineOSConfigs among the documents of a manifests ConfigMap's files (YAML or JSON).
pub fn pools_in(files: &[String]) -> Vec<Pool> {
    let mut out = Vec::new();
    for text in files {
        for doc in serde_yaml::Deserializer::from_str(text) {
            let Ok(v) = serde_json::to_value(
                serde_yaml::Value::deserialize(doc).unwrap_or(serde_yaml::Value::Null),
            ) else {
                continue;
            };
            if v["kind"] != "MachineOSConfig" {
                continue;
            }
            out.push(Pool {
                name: v["spec"]["machineConfigPool"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                image: v["metadata"]["annotations"][PRE_BUILT_IMAGE]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                machine_os_config: v,
            });
        }
    }
    out
}

/// Whether `node` belongs to `pool` (a master-and-worker node is the master pool's).
pub fn in_pool(node: &Node, pool: &str) -> bool {
    let has = |role: &str| {
        node.labels()
            .contains_key(&format!("node-role.kubernetes.io/{role}"))
    };
    has(pool) && (pool == "master" || !has("master"))
}

/// The next Node of a pool to move to its image, if any (name order, one at a time).
pub fn next_to_update<'a>(nodes: &'a [Node], pool: &Pool) -> Option<&'a Node> {
    let mut pending: Vec<&Node> = nodes
        .iter()
        .filter(|n| in_pool(n, &pool.name))
        .filter(|n| n.annotations().get(CURRENT_IMAGE) != Some(&pool.image))
        .collect();
    pending.sort_by_key(|n| n.name_any());
    pending.first().copied()
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": message, "lastTransitionTime": jiff::Timestamp::now().to_string()})
}

/// The simulated machine-config operator of one cluster.
pub struct Mco {
    mgmt: Client,
    workload: Client,
    ns: String,
    control_plane: String,
    /// Read once the cluster is installed; empty: no image mode.
    pools: Option<Vec<Pool>>,
    /// `--image-mode failed-build`: the last pool's pre-built image cannot be pulled.
    fail_last_pool: bool,
    /// Each pool's counters as last written (nodes on the image, nodes): a pool's status is
    /// written when they change, as the real MCO does (its conditions' times stay put).
    written: std::collections::HashMap<String, (usize, usize)>,
}

impl Mco {
    pub fn new(mgmt: &Client, workload: &Client, spec: &ClusterSpec, fail_last_pool: bool) -> Mco {
        Mco {
            mgmt: mgmt.clone(),
            workload: workload.clone(),
            ns: spec.ns.clone(),
            control_plane: spec.control_plane.clone(),
            pools: None,
            fail_last_pool,
            written: Default::default(),
        }
    }

    /// Whether `pool`'s image is the one that cannot be pulled.
    fn fails(&self, pool: &Pool, pools: &[Pool]) -> bool {
        self.fail_last_pool && pools.last().is_some_and(|p| p.name == pool.name)
    }

    /// What the failing pool's build says.
    fn pull_failure(pool: &Pool) -> String {
        format!(
            "pulling the pre-built image {}: manifest unknown",
            pool.image
        )
    }

    fn params() -> PatchParams {
        let mut p = PatchParams::apply(FIELD_MANAGER).force();
        p.field_validation = Some(ValidationDirective::Strict);
        p
    }

    /// The MachineOSConfigs of the install's manifests (the ConfigMaps the
    /// AgentClusterInstall lists).
    async fn load(&self) -> Result<Vec<Pool>> {
        let aci: Api<assisted_core::api::agentclusterinstall::AgentClusterInstall> =
            Api::namespaced(self.mgmt.clone(), &self.ns);
        let aci = aci
            .get(&self.control_plane)
            .await
            .context("reading the AgentClusterInstall")?;
        let maps: Api<ConfigMap> = Api::namespaced(self.mgmt.clone(), &self.ns);
        let mut files = Vec::new();
        for r in &aci.spec.manifests_config_map_refs {
            let cm = maps
                .get(&r.name)
                .await
                .with_context(|| format!("reading manifests ConfigMap {}", r.name))?;
            files.extend(cm.data.unwrap_or_default().into_values());
        }
        Ok(pools_in(&files))
    }

    /// The pools in image mode (empty: none), once read.
    pub fn pools(&self) -> &[Pool] {
        self.pools.as_deref().unwrap_or_default()
    }

    /// One pass, once the cluster is installed: what it did, for the output.
    pub async fn tick(&mut self) -> Result<Vec<String>> {
        let mut said = Vec::new();
        if self.pools.is_none() {
            let pools = self.load().await?;
            if !pools.is_empty() {
                said.push(format!(
                    "machine-config operator: image mode for {}",
                    pools
                        .iter()
                        .map(|p| format!("{} on {}", p.name, p.image))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                self.install(&pools).await?;
            }
            self.pools = Some(pools);
        }
        let pools = self.pools().to_vec();
        if pools.is_empty() {
            return Ok(said);
        }
        let nodes_api: Api<Node> = Api::all(self.workload.clone());
        let nodes = nodes_api.list(&ListParams::default()).await?.items;
        for pool in pools.iter().filter(|p| !self.fails(p, &pools)) {
            if let Some(node) = next_to_update(&nodes, pool) {
                let name = node.name_any();
                let patch = json!({"metadata": {"annotations": {
                    CURRENT_IMAGE: pool.image, DESIRED_IMAGE: pool.image}}});
                nodes_api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .with_context(|| format!("annotating Node {name}"))?;
                said.push(format!(
                    "machine-config operator: Node {name} ({} pool) now runs {}",
                    pool.name, pool.image
                ));
            }
        }
        let nodes = nodes_api.list(&ListParams::default()).await?.items;
        for pool in &pools {
            self.pool_status(pool, &nodes, self.fails(pool, &pools))
                .await?;
        }
        Ok(said)
    }

    /// What the installer and the bootstrap MCO leave: the namespace, each pool's
    /// MachineConfigPool, its MachineOSConfig (seeded) and its pre-built MachineOSBuild.
    async fn install(&self, pools: &[Pool]) -> Result<()> {
        let namespaces: Api<Namespace> = Api::all(self.workload.clone());
        let ns =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MCO_NAMESPACE}});
        namespaces
            .patch(MCO_NAMESPACE, &Self::params(), &Patch::Apply(&ns))
            .await
            .context("the machine-config operator's namespace")?;
        let all = |kind: &str, plural: &str| -> Api<DynamicObject> {
            Api::all_with(self.workload.clone(), &resource(kind, plural))
        };
        let (mcps, moscs, mosbs) = (
            all("MachineConfigPool", "machineconfigpools"),
            all("MachineOSConfig", "machineosconfigs"),
            all("MachineOSBuild", "machineosbuilds"),
        );
        for pool in pools {
            let mcp = json!({
                "apiVersion": GROUP_VERSION, "kind": "MachineConfigPool",
                "metadata": {"name": pool.name},
                "spec": {
                    "machineConfigSelector": {"matchLabels": {
                        "machineconfiguration.openshift.io/role": pool.name}},
                    "nodeSelector": {"matchLabels": {
                        format!("node-role.kubernetes.io/{}", pool.name): ""}},
                },
            });
            mcps.patch(&pool.name, &Self::params(), &Patch::Apply(&mcp))
                .await
                .with_context(|| format!("MachineConfigPool {}", pool.name))?;
            // As the installer applies the manifest: as given, unknown fields refused.
            moscs
                .patch(
                    &pool.name,
                    &Self::params(),
                    &Patch::Apply(&pool.machine_os_config),
                )
                .await
                .with_context(|| format!("applying MachineOSConfig {} as given", pool.name))?;
            let seeded = json!({
                "apiVersion": GROUP_VERSION, "kind": "MachineOSConfig",
                "metadata": {"name": pool.name},
                "status": {
                    "observedGeneration": 1,
                    "currentImagePullSpec": pool.image,
                    "conditions": [condition("Seeded", true, "PreBuiltImageSeeded",
                        &format!("seeded from the pre-built image {}", pool.image))],
                },
            });
            moscs
                .patch_status(&pool.name, &Self::params(), &Patch::Apply(&seeded))
                .await
                .with_context(|| format!("MachineOSConfig {} status", pool.name))?;
            let build_name = format!("{}-pre-built", pool.name);
            let build = json!({
                "apiVersion": GROUP_VERSION, "kind": "MachineOSBuild",
                "metadata": {"name": build_name, "labels": {PRE_BUILT_IMAGE: ""}},
                "spec": {
                    "machineConfig": {"name": format!("rendered-{}-pre-built", pool.name)},
                    "machineOSConfig": {"name": pool.name},
                    "renderedImagePushSpec": pool.machine_os_config["spec"]["renderedImagePushSpec"],
                },
            });
            mosbs
                .patch(&build_name, &Self::params(), &Patch::Apply(&build))
                .await
                .with_context(|| format!("MachineOSBuild {build_name}"))?;
            let outcome = if self.fails(pool, pools) {
                json!({"conditions": [condition("Failed", true, "PreBuiltImagePullFailed",
                    &Self::pull_failure(pool))]})
            } else {
                json!({
                    "digestedImagePushSpec": pool.image,
                    "conditions": [condition("Succeeded", true, "PreBuiltImage",
                        "the pre-built image stands for this build")],
                })
            };
            let succeeded = json!({
                "apiVersion": GROUP_VERSION, "kind": "MachineOSBuild",
                "metadata": {"name": build_name},
                "status": outcome,
            });
            mosbs
                .patch_status(&build_name, &Self::params(), &Patch::Apply(&succeeded))
                .await
                .with_context(|| format!("MachineOSBuild {build_name} status"))?;
        }
        Ok(())
    }

    /// The MachineConfigPool's counters from its Nodes; `failed`: degraded, its image not
    /// pulled.
    async fn pool_status(&mut self, pool: &Pool, nodes: &[Node], failed: bool) -> Result<()> {
        let members: Vec<&Node> = nodes.iter().filter(|n| in_pool(n, &pool.name)).collect();
        let updated = members
            .iter()
            .filter(|n| n.annotations().get(CURRENT_IMAGE) == Some(&pool.image))
            .count();
        let total = members.len();
        if self.written.get(&pool.name) == Some(&(updated, total)) {
            return Ok(());
        }
        let done = updated == total;
        let status = json!({
            "apiVersion": GROUP_VERSION, "kind": "MachineConfigPool",
            "metadata": {"name": pool.name},
            "status": {
                "machineCount": total, "updatedMachineCount": updated,
                "readyMachineCount": updated, "unavailableMachineCount": total - updated,
                "degradedMachineCount": if failed { total - updated } else { 0 },
                "conditions": [
                    condition("Updated", done, "", ""),
                    condition("Updating", !done && !failed, "", ""),
                    if failed {
                        condition("Degraded", true, "PreBuiltImagePullFailed", &Self::pull_failure(pool))
                    } else {
                        condition("Degraded", false, "", "")
                    },
                ],
            },
        });
        Api::<DynamicObject>::all_with(
            self.workload.clone(),
            &resource("MachineConfigPool", "machineconfigpools"),
        )
        .patch_status(&pool.name, &Self::params(), &Patch::Apply(&status))
        .await
        .with_context(|| format!("MachineConfigPool {} status", pool.name))?;
        self.written.insert(pool.name.clone(), (updated, total));
        Ok(())
    }
}

/// What a cluster's logs bundle says of image mode (its `image-mode.yaml`).
#[derive(Debug, Clone, PartialEq)]
pub struct BundleImageMode {
    /// The `ImageMode` condition's reason when it was written.
    pub reason: String,
    /// Each pool, with its Nodes on the pool's image and all its Nodes.
    pub pools: Vec<(String, usize, usize)>,
}

impl BundleImageMode {
    /// Whether it shows the rollout ended as `reason` says: `RolledOut` with every Node of
    /// every pool on its image, or `RolloutFailed`.
    pub fn shows(&self, reason: &str) -> bool {
        self.reason == reason
            && !self.pools.is_empty()
            && (reason != "RolledOut" || self.pools.iter().all(|(_, on, n)| on == n && *n > 0))
    }

    pub fn describe(&self) -> String {
        let pools: Vec<String> = self
            .pools
            .iter()
            .map(|(p, on, n)| format!("{p} {on}/{n} nodes on its image"))
            .collect();
        format!("{} ({})", self.reason, pools.join(", "))
    }
}

/// Reads a cluster's logs bundle for its `*-image-mode-status/image-mode.yaml`.
pub fn bundle_image_mode(tar_bytes: &[u8]) -> Result<BundleImageMode> {
    let mut archive = tar::Archive::new(tar_bytes);
    for entry in archive.entries().context("reading the logs bundle")? {
        let mut entry = entry.context("reading the logs bundle")?;
        let path = entry.path()?.to_string_lossy().into_owned();
        if !path.ends_with("-image-mode-status/image-mode.yaml") {
            continue;
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text)?;
        let file: Value = serde_yaml::from_str(&text).with_context(|| path.clone())?;
        let pools = file["pools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let nodes = p["nodes"].as_array().cloned().unwrap_or_default();
                let on_image = nodes
                    .iter()
                    .filter(|n| n["currentImage"] == p["image"])
                    .count();
                (
                    p["pool"].as_str().unwrap_or_default().to_string(),
                    on_image,
                    nodes.len(),
                )
            })
            .collect();
        return Ok(BundleImageMode {
            reason: file["condition"]["reason"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            pools,
        });
    }
    anyhow::bail!("the logs bundle has no */image-mode.yaml")
}

/// Downloads a cluster's logs bundle from its AgentClusterInstall's `debugInfo.logsURL` into
/// `into`, and reads what it says of image mode.
pub async fn fetch_logs_bundle(
    aci: &assisted_core::api::agentclusterinstall::AgentClusterInstall,
    trust: &agent_sim::Trust,
    into: &std::path::Path,
) -> Result<BundleImageMode> {
    let url = aci
        .status
        .as_ref()
        .and_then(|s| s.debug_info.logs_url.clone())
        .context("the AgentClusterInstall has no status.debugInfo.logsURL")?;
    let (status, body) = agent_sim::client::call(trust, http::Method::GET, &url, "", None).await?;
    anyhow::ensure!(
        status == http::StatusCode::OK,
        "GET logsURL: {status} {}",
        agent_sim::client::body_excerpt(&body)
    );
    std::fs::write(into, &body).with_context(|| format!("writing {}", into.display()))?;
    bundle_image_mode(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, roles: &[&str], image: Option<&str>) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some(name.into());
        n.metadata.labels = Some(
            roles
                .iter()
                .map(|r| (format!("node-role.kubernetes.io/{r}"), String::new()))
                .collect(),
        );
        if let Some(i) = image {
            n.metadata.annotations = Some([(CURRENT_IMAGE.to_string(), i.to_string())].into());
        }
        n
    }

    #[test]
    fn a_cluster_in_image_mode_names_its_pools_their_push_secret_and_can_pull_them() {
        let mut o = testbed::resources::parse_yaml(&crate::manifests::pull_secret_yaml(
            "lab",
            "pull-secret",
        ))
        .unwrap();
        o.push(json!({"kind": "OpenshiftAssistedControlPlane",
            "spec": {"config": {"pullSecretRef": {"name": "pull-secret"}}}}));
        make_image_mode(&mut o, "lab", &["master", "worker"], false).unwrap();
        assert_eq!(o[0]["metadata"]["name"], PUSH_SECRET);
        let cp = o
            .iter()
            .find(|v| v["kind"] == "OpenshiftAssistedControlPlane")
            .unwrap();
        let pools = cp["spec"]["config"]["imageMode"]["pools"]
            .as_array()
            .unwrap();
        assert_eq!(pools.len(), 2);
        assert!(pools[1]["image"].as_str().unwrap().contains("@sha256:"));
        let pull = o
            .iter()
            .find(|v| v["metadata"]["name"] == "pull-secret")
            .unwrap();
        assert!(
            pull["stringData"][".dockerconfigjson"]
                .as_str()
                .unwrap()
                .contains(OS_REGISTRY)
        );
        assert_eq!(
            pool_image("worker", true),
            "registry.example.com/os/worker:latest"
        );
    }

    #[test]
    fn the_machine_os_configs_of_the_manifests_are_found_in_yaml_and_json() {
        let json_file = json!({"apiVersion": GROUP_VERSION, "kind": "MachineOSConfig",
            "metadata": {"name": "worker", "annotations": {PRE_BUILT_IMAGE: "r/os@sha256:1"}},
            "spec": {"machineConfigPool": {"name": "worker"}}})
        .to_string();
        let yaml_file = "kind: ConfigMap\n---\nkind: MachineOSConfig\nmetadata:\n  name: master\n  annotations:\n    machineconfiguration.openshift.io/pre-built-image: r/os@sha256:2\nspec:\n  machineConfigPool: {name: master}\n".to_string();
        let pools = pools_in(&[json_file, yaml_file]);
        let names: Vec<(&str, &str)> = pools
            .iter()
            .map(|p| (p.name.as_str(), p.image.as_str()))
            .collect();
        assert_eq!(
            names,
            [("worker", "r/os@sha256:1"), ("master", "r/os@sha256:2")]
        );
    }

    #[test]
    fn nodes_move_to_their_pools_image_one_at_a_time_masters_in_their_own_pool() {
        let worker = Pool {
            name: "worker".into(),
            image: "w@sha256:1".into(),
            machine_os_config: Value::Null,
        };
        let nodes = vec![
            node("master-0", &["master", "worker"], None),
            node("worker-1", &["worker"], None),
            node("worker-0", &["worker"], Some("w@sha256:1")),
        ];
        assert!(!in_pool(&nodes[0], "worker") && in_pool(&nodes[0], "master"));
        assert_eq!(
            next_to_update(&nodes, &worker).map(|n| n.name_any()),
            Some("worker-1".into())
        );
        let done = vec![node("worker-0", &["worker"], Some("w@sha256:1"))];
        assert!(next_to_update(&done, &worker).is_none());
    }
}

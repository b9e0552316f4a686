//! `spec.config.imageMode`: image mode at install (on-cluster layering from day 1). Each pool
//! becomes a MachineOSConfig among the install's manifests (a generated ConfigMap in the
//! AgentClusterInstall's `manifestsConfigMapRefs`), annotated with its pre-built image, as
//! the bootstrap machine-config operator reads them (OpenShift 4.21 and later). The push
//! Secrets stay out of the manifests (a ConfigMap would hold their credentials in clear): the
//! control plane copies each into the installed cluster's `openshift-machine-config-operator`
//! namespace once its API answers, and tells the core so through an AgentClusterInstall
//! annotation, so that its image-mode validation counts them. The core checks the rest (digest,
//! pool, pull credentials, release, stream) and holds the install while anything is wrong.
//! Pure: the Secrets come from `dereference`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use provider_api::controlplane::api::{ImageModePool, OpenshiftAssistedControlPlane};
use serde_json::{Value, json};

use super::blocked::Blocked;
use manager::conditions::Desired;

/// The control plane's condition following image mode: each pool's MachineOSConfig seeded and
/// its nodes on the pool's image.
pub const IMAGE_MODE: &str = "ImageMode";
/// Set on the control plane (to the time) once image mode first rolled out: until then the
/// rollout is part of the install, and its failure is an install failure. Kept on the object,
/// not in its status, as Cluster API keeps what it must remember (status can be rebuilt).
pub const ROLLED_OUT_ANNOTATION: &str = "controlplane.cluster.x-k8s.io/image-mode-rolled-out";
/// The Node annotation the machine-config daemon sets to the image a node runs.
pub const CURRENT_IMAGE_ANNOTATION: &str = "machineconfiguration.openshift.io/currentImage";

/// The core's names: where the machine-config operator reads the push Secrets, the annotation
/// of a pool's pre-built image, and the AgentClusterInstall annotation naming the Secrets
/// (`namespace/name`, comma-separated) the control plane puts into the installed cluster.
pub use assisted_core::domain::image_mode::{
    MCO_NAMESPACE, POST_INSTALL_SECRETS_ANNOTATION, PRE_BUILT_IMAGE_ANNOTATION,
};

/// What `spec.config.imageMode` becomes.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageModeObjects {
    /// The generated ConfigMap with one MachineOSConfig per pool.
    pub manifests: ConfigMap,
    /// The annotation's value: the push Secrets, as `openshift-machine-config-operator/<name>`.
    pub post_install_secrets: String,
    /// The push Secrets as the installed cluster gets them, once its API answers.
    pub push_secrets: Vec<Secret>,
}

/// The generated ConfigMap's name.
pub fn manifests_config_map_name(oacp: &OpenshiftAssistedControlPlane) -> String {
    format!("{}-image-mode", oacp.name_any())
}

/// The push Secrets `spec.config.imageMode` names, each once.
pub fn push_secret_names(oacp: &OpenshiftAssistedControlPlane) -> Vec<String> {
    let mut out: Vec<String> = pools(oacp)
        .iter()
        .map(|p| p.rendered_image_push_secret_ref.name.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn pools(oacp: &OpenshiftAssistedControlPlane) -> &[ImageModePool] {
    oacp.spec
        .config
        .as_ref()
        .and_then(|c| c.image_mode.as_ref())
        .map_or(&[], |m| &m.pools[..])
}

/// One pool's MachineOSConfig (machineconfiguration.openshift.io/v1).
pub fn machine_os_config(pool: &ImageModePool) -> Value {
    let mut spec = json!({
        "machineConfigPool": {"name": pool.pool},
        "imageBuilder": {"imageBuilderType": "Job"},
        "renderedImagePushSecret": {"name": pool.rendered_image_push_secret_ref.name},
        "renderedImagePushSpec": pool.rendered_image_push_spec,
    });
    if let Some(content) = pool.containerfile.as_ref().filter(|c| !c.trim().is_empty()) {
        spec["containerFile"] = json!([{"containerfileArch": "NoArch", "content": content}]);
    }
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineOSConfig",
        "metadata": {
            "name": pool.pool,
            "annotations": {PRE_BUILT_IMAGE_ANNOTATION: pool.image},
        },
        "spec": spec,
    })
}

/// `Ok(None)` without pools; a push Secret that is missing or holds no `.dockerconfigjson`
/// blocks the control plane, naming it (nothing is written).
pub fn desired(
    oacp: &OpenshiftAssistedControlPlane,
    secrets: &BTreeMap<String, Option<Secret>>,
    owner: OwnerReference,
    labels: BTreeMap<String, String>,
) -> Result<Option<ImageModeObjects>, Blocked> {
    let pools = pools(oacp);
    if pools.is_empty() {
        return Ok(None);
    }
    let ns = oacp.namespace().unwrap_or_default();
    let mut push_secrets = Vec::new();
    for name in push_secret_names(oacp) {
        let secret = secrets.get(&name).and_then(Option::as_ref).ok_or_else(|| Blocked {
            reason: "ImageModePushSecretNotFound",
            message: format!(
                "Secret {name} (spec.config.imageMode.pools[].renderedImagePushSecretRef) does not \
                 exist in namespace {ns}; create it with key .dockerconfigjson holding the push \
                 credentials"
            ),
        })?;
        let config = secret
            .data
            .as_ref()
            .and_then(|d| d.get(".dockerconfigjson"))
            .ok_or_else(|| Blocked {
                reason: "InvalidImageModePushSecret",
                message: format!(
                    "Secret {name} (spec.config.imageMode.pools[].renderedImagePushSecretRef) has \
                     no .dockerconfigjson key"
                ),
            })?;
        let mut copy = Secret {
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            data: Some(BTreeMap::from([(
                ".dockerconfigjson".into(),
                config.clone(),
            )])),
            ..Secret::default()
        };
        copy.metadata.name = Some(name.clone());
        copy.metadata.namespace = Some(MCO_NAMESPACE.into());
        push_secrets.push(copy);
    }
    let files: BTreeMap<String, String> = pools
        .iter()
        .map(|p| {
            (
                format!("machine-os-config-{}.yaml", p.pool),
                machine_os_config(p).to_string(),
            )
        })
        .collect();
    let mut manifests = ConfigMap {
        data: Some(files),
        ..ConfigMap::default()
    };
    manifests.metadata.name = Some(manifests_config_map_name(oacp));
    manifests.metadata.namespace = Some(ns);
    manifests.metadata.labels = Some(labels);
    manifests.metadata.owner_references = Some(vec![owner]);
    let post_install_secrets = push_secrets
        .iter()
        .map(|s| format!("{MCO_NAMESPACE}/{}", s.name_any()))
        .collect::<Vec<_>>()
        .join(",");
    Ok(Some(ImageModeObjects {
        manifests,
        post_install_secrets,
        push_secrets,
    }))
}

/// What the installed cluster says of image mode, read through its API.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Rollout {
    /// Not read: not installed yet, or no image mode.
    #[default]
    NotRead,
    /// Its API did not answer; why.
    Unreachable(String),
    Read(Vec<PoolState>),
}

/// One pool as the installed cluster has it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolState {
    pub pool: String,
    /// The MachineOSConfig named after the pool, its MachineOSBuilds and the MachineConfigPool.
    pub machine_os_config: Option<Value>,
    pub builds: Vec<Value>,
    pub machine_config_pool: Option<Value>,
    /// The pool's Nodes: name and the image they run (the current-image annotation).
    pub nodes: Vec<(String, Option<String>)>,
}

fn condition_true(object: &Value, type_: &str) -> Option<(bool, String)> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"] == "True",
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// How one pool stands.
enum PoolProgress {
    /// A degraded pool or a failed build, named.
    Failed(String),
    /// Whether the pool is done, and its line of the condition's message.
    Rolling { done: bool, line: String },
}

/// How one pool stands, from what was read of it.
fn pool_progress(spec: &ImageModePool, state: Option<&PoolState>) -> PoolProgress {
    let pool = &spec.pool;
    let Some(state) = state else {
        return PoolProgress::Rolling {
            done: false,
            line: format!("{pool}: not read yet"),
        };
    };
    if let Some((true, message)) = state
        .machine_config_pool
        .as_ref()
        .and_then(|p| condition_true(p, "Degraded"))
    {
        return PoolProgress::Failed(format!("{pool}: MachineConfigPool degraded: {message}"));
    }
    for build in &state.builds {
        if let Some((true, message)) = condition_true(build, "Failed") {
            let name = build["metadata"]["name"].as_str().unwrap_or_default();
            return PoolProgress::Failed(format!(
                "{pool}: MachineOSBuild {name} failed: {message}"
            ));
        }
    }
    let seeded = state.machine_os_config.as_ref().is_some_and(|m| {
        condition_true(m, "Seeded").is_some_and(|(ok, _)| ok)
            || m["status"]["currentImagePullSpec"] == spec.image.as_str()
    });
    let total = state.nodes.len();
    let on_image = state
        .nodes
        .iter()
        .filter(|(_, image)| image.as_deref() == Some(spec.image.as_str()))
        .count();
    let seeded_text = if seeded {
        ""
    } else {
        ", MachineOSConfig not seeded yet"
    };
    PoolProgress::Rolling {
        done: seeded && total > 0 && on_image == total,
        line: format!(
            "{pool}: {on_image}/{total} nodes on {}{seeded_text}",
            spec.image
        ),
    }
}

/// The `ImageMode` condition, or `None` without image mode. Before the install it waits; after,
/// `RolledOut` once every pool's MachineOSConfig is seeded and all its nodes run its image,
/// `RolloutFailed` on a degraded pool or a failed build (naming it), else `RollingOut` with
/// each pool's count.
pub fn condition(
    oacp: &OpenshiftAssistedControlPlane,
    installed: bool,
    rollout: &Rollout,
) -> Option<Desired> {
    let specs = pools(oacp);
    if specs.is_empty() {
        return None;
    }
    let names = specs
        .iter()
        .map(|p| p.pool.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let states = match rollout {
        _ if !installed => {
            return Some(Desired::false_(
                IMAGE_MODE,
                "WaitingForInstall",
                format!("the pools {names} install on their pre-built images"),
            ));
        }
        Rollout::NotRead => {
            return Some(Desired::unknown(
                IMAGE_MODE,
                "NotRead",
                "the installed cluster was not read yet",
            ));
        }
        Rollout::Unreachable(why) => {
            return Some(Desired::unknown(
                IMAGE_MODE,
                "WorkloadUnreachable",
                why.clone(),
            ));
        }
        Rollout::Read(states) => states,
    };
    let mut done = true;
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for spec in specs {
        match pool_progress(spec, states.iter().find(|s| s.pool == spec.pool)) {
            PoolProgress::Rolling {
                done: pool_done,
                line,
            } => {
                done &= pool_done;
                lines.push(line);
            }
            PoolProgress::Failed(failure) => failures.push(failure),
        }
    }
    Some(if !failures.is_empty() {
        Desired::false_(IMAGE_MODE, "RolloutFailed", failures.join("; "))
    } else if done {
        Desired::new(
            IMAGE_MODE,
            manager::conditions::Status::True,
            "RolledOut",
            lines.join("; "),
        )
    } else {
        Desired::false_(IMAGE_MODE, "RollingOut", lines.join("; "))
    })
}

/// The label that attaches a ConfigMap to a cluster's logs bundle (the core's
/// `GET /clusters/{id}/logs`); its value is the AgentClusterInstall's name.
pub use assisted_core::service::http::logs::LOGS_OF_LABEL;

/// The ConfigMap that carries the rollout, as last read, into the cluster's logs bundle.
pub fn logs_config_map_name(oacp: &OpenshiftAssistedControlPlane) -> String {
    format!("{}-image-mode-status", oacp.name_any())
}

/// The file of that ConfigMap (and so of the bundle's `<ConfigMap>/` directory).
pub const LOGS_FILE: &str = "image-mode.yaml";

/// An object's identity and status, without what only the apiserver needs (managed fields,
/// resource versions): what someone reading a failed install's logs looks at.
fn for_logs(object: &Value) -> Value {
    let m = &object["metadata"];
    let mut out = json!({"metadata": {"name": m["name"]}});
    for key in ["labels", "annotations", "creationTimestamp"] {
        if !m[key].is_null() {
            out["metadata"][key] = m[key].clone();
        }
    }
    for key in ["spec", "status"] {
        if !object[key].is_null() {
            out[key] = object[key].clone();
        }
    }
    out
}

/// The image-mode rollout as the installed cluster showed it, for the cluster's logs bundle:
/// the `ImageMode` condition, and per pool its image, MachineOSConfig, MachineOSBuilds,
/// MachineConfigPool and Nodes (with the image each runs). A ConfigMap labelled for the
/// AgentClusterInstall `aci`, owned by the control plane.
pub fn logs_attachment(
    oacp: &OpenshiftAssistedControlPlane,
    aci: &str,
    owner: OwnerReference,
    states: &[PoolState],
    condition: &Desired,
) -> ConfigMap {
    let pools: Vec<Value> = pools(oacp)
        .iter()
        .map(|spec| {
            let state = states.iter().find(|s| s.pool == spec.pool);
            json!({
                "pool": spec.pool,
                "image": spec.image,
                "machineOSConfig": state.and_then(|s| s.machine_os_config.as_ref()).map(for_logs),
                "machineOSBuilds": state.map(|s| s.builds.iter().map(for_logs).collect::<Vec<_>>()).unwrap_or_default(),
                "machineConfigPool": state.and_then(|s| s.machine_config_pool.as_ref()).map(for_logs),
                "nodes": state.map(|s| s.nodes.iter().map(|(name, image)| json!({"name": name, "currentImage": image})).collect::<Vec<_>>()).unwrap_or_default(),
            })
        })
        .collect();
    let content = json!({
        "condition": {
            "type": IMAGE_MODE,
            "status": condition.status.as_str(),
            "reason": condition.reason,
            "message": condition.message,
        },
        "pools": pools,
    });
    let mut cm = ConfigMap {
        data: Some(BTreeMap::from([(
            LOGS_FILE.to_string(),
            serde_yaml::to_string(&content).unwrap_or_default(),
        )])),
        ..ConfigMap::default()
    };
    cm.metadata.name = Some(logs_config_map_name(oacp));
    cm.metadata.namespace = oacp.namespace();
    cm.metadata.labels = Some(BTreeMap::from([(
        LOGS_OF_LABEL.to_string(),
        aci.to_string(),
    )]));
    cm.metadata.owner_references = Some(vec![owner]);
    cm
}

/// `Available`'s reason when image mode's first rollout failed.
pub const INSTALL_FAILED_REASON: &str = "ImageModeInstallFailed";

/// Whether image mode has rolled out once on this control plane (its annotation).
pub fn rolled_out_once(oacp: &OpenshiftAssistedControlPlane) -> bool {
    oacp.annotations().contains_key(ROLLED_OUT_ANNOTATION)
}

/// The install failure image mode makes, if any: a failed rollout before the pools ever
/// rolled out is the install failing (the bootstrap machine-config operator's image did not
/// take), as upstream treats build and rollout failures at install time. A failure after
/// that (a later build, a day-2 node) only shows on `ImageMode`.
pub fn install_failure(
    oacp: &OpenshiftAssistedControlPlane,
    condition: Option<&Desired>,
) -> Option<String> {
    let c = condition.filter(|c| c.reason == "RolloutFailed")?;
    (!rolled_out_once(oacp)).then(|| c.message.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn oacp() -> OpenshiftAssistedControlPlane {
        serde_yaml::from_str(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: cp, namespace: ns, uid: u-1}
spec:
  distributionVersion: 4.21.2
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: t}
  config:
    baseDomain: example.com
    imageMode:
      osImageStream: rhel-9
      pools:
      - pool: master
        image: registry.example.com/os/master@sha256:1111111111111111111111111111111111111111111111111111111111111111
        renderedImagePushSpec: registry.example.com/os/master:latest
        renderedImagePushSecretRef: {name: push}
      - pool: worker
        image: registry.example.com/os/worker@sha256:2222222222222222222222222222222222222222222222222222222222222222
        containerfile: "FROM configs AS final\nRUN dnf install -y tmux\n"
        renderedImagePushSpec: registry.example.com/os/worker:latest
        renderedImagePushSecretRef: {name: push}
"#,
        )
        .unwrap()
    }

    fn push_secret() -> Secret {
        Secret {
            data: Some(BTreeMap::from([(
                ".dockerconfigjson".into(),
                ByteString(
                    br#"{"auths":{"registry.example.com":{"auth":"cHVzaDpwdw=="}}}"#.to_vec(),
                ),
            )])),
            ..Secret::default()
        }
    }

    fn decide(
        secrets: &BTreeMap<String, Option<Secret>>,
    ) -> Result<Option<ImageModeObjects>, Blocked> {
        desired(&oacp(), secrets, OwnerReference::default(), BTreeMap::new())
    }

    #[test]
    fn each_pool_becomes_a_machine_os_config_with_its_pre_built_image() {
        let out = decide(&BTreeMap::from([("push".into(), Some(push_secret()))]))
            .unwrap()
            .unwrap();
        assert_eq!(out.manifests.name_any(), "cp-image-mode");
        let data = out.manifests.data.unwrap();
        let worker: Value = serde_json::from_str(&data["machine-os-config-worker.yaml"]).unwrap();
        assert_eq!(
            worker,
            json!({
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineOSConfig",
                "metadata": {"name": "worker", "annotations": {
                    PRE_BUILT_IMAGE_ANNOTATION: "registry.example.com/os/worker@sha256:2222222222222222222222222222222222222222222222222222222222222222"}},
                "spec": {
                    "machineConfigPool": {"name": "worker"},
                    "imageBuilder": {"imageBuilderType": "Job"},
                    "containerFile": [{"containerfileArch": "NoArch", "content": "FROM configs AS final\nRUN dnf install -y tmux\n"}],
                    "renderedImagePushSecret": {"name": "push"},
                    "renderedImagePushSpec": "registry.example.com/os/worker:latest",
                },
            })
        );
        let master: Value = serde_json::from_str(&data["machine-os-config-master.yaml"]).unwrap();
        assert!(master["spec"].get("containerFile").is_none(), "{master}");
        // The push Secret: once, for the installed cluster, never among the manifests.
        assert_eq!(
            out.post_install_secrets,
            "openshift-machine-config-operator/push"
        );
        assert_eq!(out.push_secrets.len(), 1);
        assert_eq!(
            out.push_secrets[0].namespace().as_deref(),
            Some(MCO_NAMESPACE)
        );
        assert_eq!(out.push_secrets[0].data, push_secret().data);
        assert!(!data.values().any(|f| f.contains("cHVzaDpwdw==")));
    }

    #[test]
    fn a_missing_or_empty_push_secret_blocks_naming_it() {
        let e = decide(&BTreeMap::from([("push".into(), None)])).unwrap_err();
        assert_eq!(e.reason, "ImageModePushSecretNotFound");
        assert!(
            e.message.contains("Secret push") && e.message.contains("namespace ns"),
            "{}",
            e.message
        );
        let e = decide(&BTreeMap::from([("push".into(), Some(Secret::default()))])).unwrap_err();
        assert_eq!(e.reason, "InvalidImageModePushSecret");
    }

    fn state(pool: &str, seeded: bool, nodes: &[Option<&str>]) -> PoolState {
        PoolState {
            pool: pool.into(),
            machine_os_config: Some(json!({"status": {"conditions": [
                {"type": "Seeded", "status": if seeded { "True" } else { "False" }, "message": ""}]}})),
            builds: Vec::new(),
            machine_config_pool: Some(json!({"status": {"conditions": []}})),
            nodes: nodes
                .iter()
                .enumerate()
                .map(|(i, image)| (format!("{pool}-{i}"), image.map(str::to_string)))
                .collect(),
        }
    }

    const MASTER_IMAGE: &str = "registry.example.com/os/master@sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const WORKER_IMAGE: &str = "registry.example.com/os/worker@sha256:2222222222222222222222222222222222222222222222222222222222222222";

    #[test]
    fn the_condition_follows_each_pool_to_its_image() {
        let cp = oacp();
        let c = |installed: bool, rollout: &Rollout| condition(&cp, installed, rollout).unwrap();
        let before = c(false, &Rollout::NotRead);
        assert_eq!(
            (before.status, before.reason.as_str()),
            (manager::conditions::Status::False, "WaitingForInstall")
        );
        assert_eq!(
            c(true, &Rollout::Unreachable("down".into())).reason,
            "WorkloadUnreachable"
        );

        let rolling = c(
            true,
            &Rollout::Read(vec![
                state(
                    "master",
                    true,
                    &[Some(MASTER_IMAGE), Some(MASTER_IMAGE), None],
                ),
                state("worker", false, &[None]),
            ]),
        );
        assert_eq!(rolling.reason, "RollingOut");
        assert_eq!(
            rolling.message,
            format!(
                "master: 2/3 nodes on {MASTER_IMAGE}; worker: 0/1 nodes on {WORKER_IMAGE}, MachineOSConfig not seeded yet"
            )
        );
        let done = c(
            true,
            &Rollout::Read(vec![
                state("master", true, &[Some(MASTER_IMAGE); 3]),
                state("worker", true, &[Some(WORKER_IMAGE); 2]),
            ]),
        );
        assert_eq!(
            (done.status, done.reason.as_str()),
            (manager::conditions::Status::True, "RolledOut")
        );
        // A pool without nodes is not rolled out.
        let empty = c(
            true,
            &Rollout::Read(vec![
                state("master", true, &[Some(MASTER_IMAGE); 3]),
                state("worker", true, &[]),
            ]),
        );
        assert_eq!(empty.reason, "RollingOut");
    }

    #[test]
    fn a_degraded_pool_or_a_failed_build_fails_the_rollout_naming_it() {
        let cp = oacp();
        let mut worker = state("worker", true, &[None]);
        worker.builds.push(
            json!({"metadata": {"name": "worker-pre-built"}, "status": {"conditions": [
            {"type": "Failed", "status": "True", "message": "pull: unauthorized"}]}}),
        );
        let failed = condition(
            &cp,
            true,
            &Rollout::Read(vec![state("master", true, &[Some(MASTER_IMAGE)]), worker]),
        )
        .unwrap();
        assert_eq!(failed.reason, "RolloutFailed");
        assert_eq!(
            failed.message,
            "worker: MachineOSBuild worker-pre-built failed: pull: unauthorized"
        );
        let mut master = state("master", true, &[None]);
        master.machine_config_pool = Some(json!({"status": {"conditions": [
            {"type": "Degraded", "status": "True", "message": "node master-0: image not found"}]}}));
        let degraded = condition(
            &cp,
            true,
            &Rollout::Read(vec![master, state("worker", true, &[None])]),
        )
        .unwrap();
        assert_eq!(
            degraded.message,
            "master: MachineConfigPool degraded: node master-0: image not found"
        );
    }

    #[test]
    fn the_rollout_goes_into_the_logs_bundle_without_the_apiservers_bookkeeping() {
        let cp = oacp();
        let mut worker = state("worker", true, &[Some(WORKER_IMAGE), None]);
        worker.builds.push(json!({
            "metadata": {"name": "worker-pre-built", "managedFields": [{"manager": "x"}],
                "resourceVersion": "7", "labels": {"machineconfiguration.openshift.io/pre-built-image": ""}},
            "status": {"conditions": [{"type": "Failed", "status": "True", "message": "pull: unauthorized"}]},
        }));
        let states = vec![state("master", true, &[Some(MASTER_IMAGE)]), worker];
        let failed = condition(&cp, true, &Rollout::Read(states.clone())).unwrap();
        let cm = logs_attachment(&cp, "cp", OwnerReference::default(), &states, &failed);
        assert_eq!(cm.name_any(), "cp-image-mode-status");
        assert_eq!(cm.labels()[LOGS_OF_LABEL], "cp");
        let file: Value = serde_yaml::from_str(&cm.data.unwrap()[LOGS_FILE]).unwrap();
        assert_eq!(file["condition"]["reason"], "RolloutFailed");
        let worker = &file["pools"][1];
        assert_eq!(worker["pool"], "worker");
        assert_eq!(worker["image"], WORKER_IMAGE);
        assert_eq!(
            worker["machineOSBuilds"][0],
            json!({
                "metadata": {"name": "worker-pre-built",
                    "labels": {"machineconfiguration.openshift.io/pre-built-image": ""}},
                "status": {"conditions": [{"type": "Failed", "status": "True", "message": "pull: unauthorized"}]},
            })
        );
        assert_eq!(
            worker["nodes"],
            json!([{"name": "worker-0", "currentImage": WORKER_IMAGE},
                   {"name": "worker-1", "currentImage": null}])
        );
        assert_eq!(
            file["pools"][0]["machineOSConfig"]["status"]["conditions"][0]["type"],
            "Seeded"
        );
    }

    #[test]
    fn a_failed_rollout_is_an_install_failure_until_the_pools_first_rolled_out() {
        let mut cp = oacp();
        let failed = Desired::false_(IMAGE_MODE, "RolloutFailed", "worker: degraded");
        let rolling = Desired::false_(IMAGE_MODE, "RollingOut", "worker: 1/2 nodes");
        assert_eq!(
            install_failure(&cp, Some(&failed)).as_deref(),
            Some("worker: degraded")
        );
        assert_eq!(install_failure(&cp, Some(&rolling)), None);
        assert_eq!(install_failure(&cp, None), None);
        cp.metadata.annotations = Some(BTreeMap::from([(
            ROLLED_OUT_ANNOTATION.to_string(),
            "2026-11-28T20:00:00Z".to_string(),
        )]));
        assert!(rolled_out_once(&cp));
        assert_eq!(install_failure(&cp, Some(&failed)), None);
    }

    #[test]
    fn without_pools_nothing_is_written() {
        let mut cp = oacp();
        cp.spec.config.as_mut().unwrap().image_mode = None;
        assert_eq!(
            desired(
                &cp,
                &BTreeMap::new(),
                OwnerReference::default(),
                BTreeMap::new()
            )
            .unwrap(),
            None
        );
        assert!(push_secret_names(&cp).is_empty());
        assert_eq!(condition(&cp, true, &Rollout::NotRead), None);
    }
}

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
use serde_json::{Value, json};

use super::blocked::Blocked;
use crate::api::{ImageModePool, OpenshiftAssistedControlPlane};

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
    }
}

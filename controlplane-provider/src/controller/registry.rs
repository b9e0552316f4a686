//! CAPOA's `spec.config.imageRegistryRef`: a ConfigMap with a mirror `registries.conf` (and an
//! optional `ca-bundle.crt`). As CAPOA, the installed cluster gets the mirror sets, the CA and
//! the image config as manifests (a generated ConfigMap in the AgentClusterInstall's
//! `manifestsConfigMapRefs`); beyond CAPOA, the AgentClusterInstall's `mirrorRegistryRef` names
//! the user's ConfigMap, so the core puts the mirrors into the install-config
//! (`imageDigestSources`, the CA in `additionalTrustBundle`). Pure: the ConfigMap's data comes
//! from `dereference`.

use std::collections::BTreeMap;

use assisted_core::domain::mirrors;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use super::blocked::Blocked;

/// The user's ConfigMap, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageRegistry {
    /// No `config.imageRegistryRef`.
    Unset,
    Missing(String),
    Present {
        name: String,
        data: BTreeMap<String, String>,
    },
}

/// What the reference becomes.
#[derive(Clone, Debug, PartialEq)]
pub struct RegistryObjects {
    /// The generated ConfigMap of the installed cluster's manifests.
    pub manifests: ConfigMap,
    /// The user's ConfigMap, for the AgentClusterInstall's `mirrorRegistryRef`.
    pub mirror_config_map: String,
}

/// The generated ConfigMap's name: one per control plane (CAPOA's fixed
/// `additional-registry-config` would collide between two clusters of a namespace).
pub fn manifests_config_map_name(oacp: &OpenshiftAssistedControlPlane) -> String {
    format!("{}-registry-config", oacp.name_any())
}

/// `Ok(None)` without a reference; a malformed or missing ConfigMap blocks the control plane
/// with a reason naming it.
pub fn desired(
    oacp: &OpenshiftAssistedControlPlane,
    registry: &ImageRegistry,
    owner: k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    labels: BTreeMap<String, String>,
) -> Result<Option<RegistryObjects>, Blocked> {
    let (name, data) = match registry {
        ImageRegistry::Unset => return Ok(None),
        ImageRegistry::Missing(name) => {
            return Err(Blocked {
                reason: "ImageRegistryConfigNotFound",
                message: format!(
                    "ConfigMap {name} (spec.config.imageRegistryRef) does not exist in namespace \
                     {}; create it with key registries.conf (and ca-bundle.crt for a private CA)",
                    oacp.namespace().unwrap_or_default()
                ),
            });
        }
        ImageRegistry::Present { name, data } => (name, data),
    };
    let config = mirrors::parse(data).map_err(|e| Blocked {
        reason: "InvalidImageRegistryConfig",
        message: format!("ConfigMap {name} (spec.config.imageRegistryRef): {e}"),
    })?;
    let files: BTreeMap<String, String> = mirrors::cluster_manifests(&config)
        .into_iter()
        .map(|(file, object)| (file, object.to_string()))
        .collect();
    let mut manifests = ConfigMap {
        data: Some(files),
        ..ConfigMap::default()
    };
    manifests.metadata.name = Some(manifests_config_map_name(oacp));
    manifests.metadata.namespace = oacp.namespace();
    manifests.metadata.labels = Some(labels);
    manifests.metadata.owner_references = Some(vec![owner]);
    Ok(Some(RegistryObjects {
        manifests,
        mirror_config_map: name.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oacp() -> OpenshiftAssistedControlPlane {
        serde_yaml::from_str(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: cp, namespace: ns, uid: u-1}
spec:
  distributionVersion: 4.17.3
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: t}
  config: {baseDomain: example.com, imageRegistryRef: {name: mirrors}}
"#,
        )
        .unwrap()
    }

    fn decide(registry: &ImageRegistry) -> Result<Option<RegistryObjects>, Blocked> {
        desired(
            &oacp(),
            registry,
            Default::default(),
            BTreeMap::from([("l".to_string(), "v".to_string())]),
        )
    }

    fn present(conf: &str) -> ImageRegistry {
        ImageRegistry::Present {
            name: "mirrors".into(),
            data: BTreeMap::from([(mirrors::REGISTRIES_CONF_KEY.to_string(), conf.to_string())]),
        }
    }

    #[test]
    fn the_reference_becomes_the_clusters_manifests_or_a_clear_block() {
        assert_eq!(decide(&ImageRegistry::Unset), Ok(None));

        let missing = decide(&ImageRegistry::Missing("mirrors".into())).unwrap_err();
        assert_eq!(missing.reason, "ImageRegistryConfigNotFound");
        assert!(
            missing.message.starts_with(
                "ConfigMap mirrors (spec.config.imageRegistryRef) does not exist in namespace ns"
            ),
            "{}",
            missing.message
        );

        let bad = decide(&present("[[registry]]\nlocation = \"quay.io/ocp\"\n")).unwrap_err();
        assert_eq!(bad.reason, "InvalidImageRegistryConfig");
        assert!(
            bad.message
                .starts_with("ConfigMap mirrors (spec.config.imageRegistryRef): registries.conf"),
            "{}",
            bad.message
        );

        let good = decide(&present(
            "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"mirror.example.com/ocp\"\n",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(good.mirror_config_map, "mirrors");
        let cm = &good.manifests;
        assert_eq!(cm.metadata.name.as_deref(), Some("cp-registry-config"));
        assert_eq!(cm.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(cm.metadata.owner_references.as_ref().map(Vec::len), Some(1));
        let data = cm.data.as_ref().unwrap();
        let idms: serde_json::Value =
            serde_json::from_str(&data[mirrors::DIGEST_MIRROR_SET_FILE]).unwrap();
        assert_eq!(idms["kind"], "ImageDigestMirrorSet");
        assert_eq!(
            idms["spec"]["imageDigestMirrors"][0]["mirrors"][0],
            "mirror.example.com/ocp"
        );
    }
}

//! `<cluster>-kubeconfig`: the workload cluster's admin kubeconfig, in the shape the CAPI
//! control-plane contract asks for (type `cluster.x-k8s.io/secret`, key `value`, cluster-name
//! label, controller owner reference to the control plane). Its source is the admin kubeconfig
//! Secret the assisted core publishes and names in `AgentClusterInstall.spec.clusterMetadata`.
//! Unlike CAPOA, which copies it once, it is re-applied whenever the source changes.

use std::collections::BTreeMap;

use assisted_api::AgentClusterInstall;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::ObjectMeta;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use super::labels::CLUSTER_NAME_LABEL;
use super::owner;

/// The key of the kubeconfig in the core's (and Hive's) admin kubeconfig Secret.
pub const SOURCE_KEY: &str = "kubeconfig";
/// The key CAPI reads.
pub const VALUE_KEY: &str = "value";
pub const CAPI_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";

pub fn secret_name(cluster_name: &str) -> String {
    format!("{cluster_name}-kubeconfig")
}

/// The admin kubeconfig Secret the core names once the install has produced one.
pub fn source_secret_name(aci: &AgentClusterInstall) -> Option<String> {
    aci.spec
        .cluster_metadata
        .as_ref()
        .map(|m| m.admin_kubeconfig_secret_ref.name.clone())
        .filter(|n| !n.is_empty())
}

/// The kubeconfig from the source Secret, if it holds one.
pub fn source_kubeconfig(source: &Secret) -> Option<&[u8]> {
    source
        .data
        .as_ref()?
        .get(SOURCE_KEY)
        .map(|b| b.0.as_slice())
        .filter(|b| !b.is_empty())
}

/// The Secret to apply; `None` while the control plane has no uid (never, once stored).
pub fn desired_secret(
    oacp: &OpenshiftAssistedControlPlane,
    cluster_name: &str,
    kubeconfig: &[u8],
) -> Option<Secret> {
    Some(Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(cluster_name)),
            namespace: oacp.namespace(),
            labels: Some(BTreeMap::from([(
                CLUSTER_NAME_LABEL.to_string(),
                cluster_name.to_string(),
            )])),
            owner_references: Some(vec![owner::reference(oacp, true)?]),
            ..Default::default()
        },
        type_: Some(CAPI_SECRET_TYPE.to_string()),
        data: Some(BTreeMap::from([(
            VALUE_KEY.to_string(),
            ByteString(kubeconfig.to_vec()),
        )])),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_secret_follows_the_contract() {
        let oacp: OpenshiftAssistedControlPlane = serde_yaml::from_str(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: cp, namespace: ns, uid: u-1}
spec:
  distributionVersion: 4.20.0
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: t}
"#,
        )
        .unwrap();
        let secret = desired_secret(&oacp, "c1", b"apiVersion: v1").unwrap();
        assert_eq!(secret.metadata.name.as_deref(), Some("c1-kubeconfig"));
        assert_eq!(secret.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
        assert_eq!(
            secret.metadata.labels.as_ref().unwrap()[CLUSTER_NAME_LABEL],
            "c1"
        );
        let owner = &secret.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.name.as_str(), owner.controller), ("cp", Some(true)));
        assert_eq!(secret.data.as_ref().unwrap()["value"].0, b"apiVersion: v1");
    }

    #[test]
    fn source_is_read_from_the_cluster_metadata_and_the_kubeconfig_key() {
        let mut aci: AgentClusterInstall = serde_yaml::from_str(
            r#"
apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata: {name: cp, namespace: ns}
spec:
  clusterDeploymentRef: {name: cp}
  imageSetRef: {name: img}
  provisionRequirements: {controlPlaneAgents: 3}
"#,
        )
        .unwrap();
        assert_eq!(source_secret_name(&aci), None);
        aci.spec.cluster_metadata = serde_json::from_value(serde_json::json!({
            "clusterID": "x", "infraID": "y",
            "adminKubeconfigSecretRef": {"name": "cp-admin-kubeconfig"},
        }))
        .unwrap();
        assert_eq!(
            source_secret_name(&aci).as_deref(),
            Some("cp-admin-kubeconfig")
        );

        let mut source = Secret::default();
        assert_eq!(source_kubeconfig(&source), None);
        source.data = Some(BTreeMap::from([(
            SOURCE_KEY.into(),
            ByteString(b"kc".to_vec()),
        )]));
        assert_eq!(source_kubeconfig(&source), Some(&b"kc"[..]));
    }
}

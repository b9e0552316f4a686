//! The Hive objects one OpenshiftAssistedControlPlane asks the assisted installer for: the
//! ClusterDeployment (which cluster), its AgentClusterInstall (how agents install it) and the
//! ClusterImageSet (which release). What CAPOA's control-plane and ClusterDeployment
//! controllers build, minus their bugs. Pure: each object holds only the fields we own, ready
//! for a server-side apply with one field manager.

use std::collections::BTreeMap;

use assisted_api::agentclusterinstall::{
    AgentClusterInstall, AgentClusterInstallSpec, ClusterImageSetReference, ClusterNetworkEntry,
    Networking, PlatformType, ProvisionRequirements,
};
use assisted_api::common::LocalObjectReference;
use assisted_api::hive::{
    AgentBareMetalPlatform, ClusterDeployment, ClusterDeploymentSpec, ClusterImageSet,
    ClusterImageSetSpec, ClusterInstallLocalReference, Platform,
};
use external_types::capi::{Cluster, MachineDeployment};
use kube::Resource;
use manager::names::capi_label_value;
use provider_api::controlplane::api::{
    OpenshiftAssistedControlPlane, OpenshiftAssistedControlPlaneConfigSpec,
};
use serde_json::Value;
use thiserror::Error;

use super::labels::{CLUSTER_NAME_LABEL, labels};
use super::owner::{self, MissingMetadata, OACP_KIND};
use super::release::cluster_image_set_name;

/// Tells assisted which kind of object drives this AgentClusterInstall.
pub const ACI_CONSUMER_LABEL: &str = "agentclusterinstalls.agent-install.openshift.io/consumer";
pub const ACI_CONSUMER: &str = "OpenshiftAssistedControlPlane";
/// Namespace and name of the control plane a (cluster-scoped) ClusterImageSet belongs to.
pub const IMAGE_SET_NAMESPACE_LABEL: &str =
    "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/namespace";
pub const IMAGE_SET_NAME_LABEL: &str =
    "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/name";
/// Host prefix of every pod network, as CAPOA sets it (a /23 per node: 510 pods).
pub const CLUSTER_NETWORK_HOST_PREFIX: i32 = 23;

const ACI_GROUP: &str = "extensions.hive.openshift.io";
const ACI_VERSION: &str = "v1beta1";
const ACI_KIND: &str = "AgentClusterInstall";

/// Everything the Hive objects are built from; the controller reads it.
pub struct HiveInputs<'a> {
    /// The control plane, as read from the API server (name, namespace and uid set).
    pub oacp: &'a OpenshiftAssistedControlPlane,
    /// Its CAPI Cluster: the name labels the objects, `clusterNetwork` becomes the networking.
    pub cluster: &'a Cluster,
    /// Σ `spec.replicas` of the cluster's MachineDeployments (see [`worker_agents`]).
    pub worker_replicas: i32,
    /// `config.pullSecretRef`, or the placeholder pull secret when it is unset (OKD).
    pub pull_secret_name: &'a str,
    /// The release image ([`super::release::release_image`], or its digest form).
    pub release_image: &'a str,
    /// [`super::install_config::install_config_override`].
    pub install_config_override: Option<&'a str>,
    /// The ConfigMaps of manifests the control plane generates (the mirror manifests of
    /// `config.imageRegistryRef`, the MachineOSConfigs of `config.imageMode`); they follow the
    /// user's `manifestsConfigMapRefs`, as in CAPOA.
    pub generated_manifests: &'a [String],
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HiveError {
    #[error("{kind} has no metadata.{field}: only objects read from the API server can be used")]
    MissingMetadata {
        kind: &'static str,
        field: &'static str,
    },
    #[error(
        "spec.config.baseDomain is required: the cluster's domain is <clusterName>.<baseDomain>"
    )]
    MissingBaseDomain,
    /// The webhook refuses it too; without the webhook the VIPs would be dropped silently.
    #[error(
        "spec.config: apiVIPs and ingressVIPs go together: give both (platform BareMetal) or \
         neither (platform None)"
    )]
    UnpairedVips,
}

impl From<MissingMetadata> for HiveError {
    fn from(MissingMetadata { kind, field }: MissingMetadata) -> Self {
        HiveError::MissingMetadata { kind, field }
    }
}

/// The desired ClusterDeployment: named like the control plane, installed by the
/// AgentClusterInstall of the same name on the agent bare-metal platform.
///
/// Apply it with [`cluster_deployment_apply_body`]: assisted marks it `spec.installed`.
pub fn cluster_deployment(inputs: &HiveInputs) -> Result<ClusterDeployment, HiveError> {
    let (namespace, name) = oacp_key(inputs.oacp)?;
    let config = config(inputs.oacp)?;
    let capi_name = capi_cluster_name(inputs.cluster)?;
    let spec = ClusterDeploymentSpec {
        cluster_name: openshift_cluster_name(config, capi_name),
        base_domain: config.base_domain.clone(),
        platform: Platform {
            agent_bare_metal: Some(AgentBareMetalPlatform::default()),
            ..Platform::default()
        },
        pull_secret_ref: Some(LocalObjectReference {
            name: inputs.pull_secret_name.to_string(),
        }),
        cluster_install_ref: Some(ClusterInstallLocalReference {
            group: ACI_GROUP.into(),
            version: ACI_VERSION.into(),
            kind: ACI_KIND.into(),
            name: name.to_string(),
        }),
        ..ClusterDeploymentSpec::default()
    };
    let mut cd = ClusterDeployment::new(name, spec);
    cd.metadata.namespace = Some(namespace.to_string());
    cd.metadata.labels = Some(labels(inputs.oacp, capi_name));
    cd.metadata.owner_references = Some(vec![owner::controller_reference(inputs.oacp)?]);
    Ok(cd)
}

/// The ClusterDeployment as a server-side-apply body. assisted-api's typed spec always
/// serializes `installed` (false here), which assisted sets to true once the cluster is
/// installed; applying false would undo that, so the field is left out.
pub fn cluster_deployment_apply_body(cd: &ClusterDeployment) -> Value {
    // Serializing a typed object with string keys cannot fail.
    let mut body = serde_json::to_value(cd).unwrap_or(Value::Null);
    if let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("installed");
    }
    body
}

/// The desired AgentClusterInstall (CAPOA's ClusterDeployment controller's, with a controller
/// owner reference and a per-cluster image set).
pub fn agent_cluster_install(inputs: &HiveInputs) -> Result<AgentClusterInstall, HiveError> {
    let (namespace, name) = oacp_key(inputs.oacp)?;
    let config = config(inputs.oacp)?;
    let capi_name = capi_cluster_name(inputs.cluster)?;
    let platform = platform_type(inputs.oacp);
    let (api_vips, ingress_vips) = match platform {
        PlatformType::BareMetal => (config.api_vips.clone(), config.ingress_vips.clone()),
        _ => (Vec::new(), Vec::new()),
    };
    let mut manifests = config.manifests_config_map_refs.clone();
    for generated in inputs.generated_manifests {
        if !manifests.iter().any(|m| &m.name == generated) {
            manifests.push(LocalObjectReference {
                name: generated.clone(),
            });
        }
    }
    let spec = AgentClusterInstallSpec {
        image_set_ref: Some(ClusterImageSetReference {
            name: cluster_image_set_name(namespace, name),
        }),
        cluster_deployment_ref: LocalObjectReference {
            name: name.to_string(),
        },
        manifests_config_map_refs: manifests,
        networking: networking(inputs.cluster),
        ssh_public_key: config
            .ssh_authorized_key
            .clone()
            .filter(|key| !key.trim().is_empty()),
        provision_requirements: ProvisionRequirements {
            control_plane_agents: control_plane_agents(inputs.oacp),
            worker_agents: inputs.worker_replicas,
            arbiter_agents: 0,
        },
        api_vips,
        ingress_vips,
        disk_encryption: config.disk_encryption.clone(),
        proxy: config.proxy.clone(),
        platform_type: Some(platform),
        masters_schedulable: config.masters_schedulable,
        ..AgentClusterInstallSpec::default()
    };
    let mut aci = AgentClusterInstall::new(name, spec);
    aci.metadata.namespace = Some(namespace.to_string());
    let mut labels = labels(inputs.oacp, capi_name);
    labels.insert(ACI_CONSUMER_LABEL.into(), ACI_CONSUMER.into());
    aci.metadata.labels = Some(labels);
    aci.metadata.owner_references = Some(vec![owner::controller_reference(inputs.oacp)?]);
    if let Some(overrides) = inputs.install_config_override {
        aci.metadata.annotations = Some(BTreeMap::from([(
            assisted_api::agentclusterinstall::INSTALL_CONFIG_OVERRIDES_ANNOTATION.to_string(),
            overrides.to_string(),
        )]));
    }
    Ok(aci)
}

/// The desired ClusterImageSet, named by [`cluster_image_set_name`].
///
/// It is cluster-scoped, so it cannot carry an owner reference to the namespaced control plane
/// and garbage collection never removes it (CAPOA leaks it). The controller deletes it itself
/// when the control plane goes; the labels name the owner so leftovers can be found.
pub fn cluster_image_set(inputs: &HiveInputs) -> Result<ClusterImageSet, HiveError> {
    let (namespace, name) = oacp_key(inputs.oacp)?;
    let capi_name = capi_cluster_name(inputs.cluster)?;
    let mut set = ClusterImageSet::new(
        &cluster_image_set_name(namespace, name),
        ClusterImageSetSpec {
            release_image: inputs.release_image.to_string(),
        },
    );
    set.metadata.labels = Some(BTreeMap::from([
        (CLUSTER_NAME_LABEL.to_string(), capi_name.to_string()),
        (IMAGE_SET_NAMESPACE_LABEL.to_string(), namespace.to_string()),
        (IMAGE_SET_NAME_LABEL.to_string(), capi_label_value(name)),
    ]));
    Ok(set)
}

/// `provisionRequirements.controlPlaneAgents`: `spec.replicas`, or 1 when unset. The CRD has
/// no default; 1 is what CAPI's KubeadmControlPlane defaults to, and a single control-plane
/// agent is what assisted installs as single-node OpenShift (CAPOA would write 0).
pub fn control_plane_agents(oacp: &OpenshiftAssistedControlPlane) -> i32 {
    super::machines::desired_replicas(oacp)
}

/// Σ `spec.replicas` of the cluster's MachineDeployments. An unset count is 1, CAPI's
/// MachineDeployment default (CAPOA dereferences it and would panic).
pub fn worker_agents(machine_deployments: &[MachineDeployment]) -> i32 {
    machine_deployments
        .iter()
        .map(|md| md.spec.replicas.unwrap_or(1).max(0))
        .fold(0, i32::saturating_add)
}

/// `BareMetal` when both VIP lists are set (assisted then runs keepalived for them), else
/// `None`: single node, or user-managed load balancing.
pub fn platform_type(oacp: &OpenshiftAssistedControlPlane) -> PlatformType {
    match &oacp.spec.config {
        Some(c) if !c.api_vips.is_empty() && !c.ingress_vips.is_empty() => PlatformType::BareMetal,
        _ => PlatformType::None,
    }
}

/// The OpenShift cluster name: `config.clusterName`, else the CAPI Cluster's name.
pub fn openshift_cluster_name(
    config: &OpenshiftAssistedControlPlaneConfigSpec,
    capi_cluster_name: &str,
) -> String {
    config
        .cluster_name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(capi_cluster_name)
        .to_string()
}

/// Pod networks with CAPOA's host prefix and service networks from `Cluster.spec.clusterNetwork`;
/// left empty when the Cluster has none, so assisted uses its defaults.
fn networking(cluster: &Cluster) -> Networking {
    let network = cluster.spec.cluster_network.as_ref();
    let cluster_network = network
        .and_then(|n| n.pods.as_ref())
        .map(|pods| {
            pods.cidr_blocks
                .iter()
                .map(|cidr| ClusterNetworkEntry {
                    cidr: cidr.clone(),
                    host_prefix: Some(CLUSTER_NETWORK_HOST_PREFIX),
                })
                .collect()
        })
        .unwrap_or_default();
    let service_network = network
        .and_then(|n| n.services.as_ref())
        .map(|services| services.cidr_blocks.clone())
        .unwrap_or_default();
    Networking {
        cluster_network,
        service_network,
        ..Networking::default()
    }
}

/// Namespace and name: always set on objects read from the API server.
fn oacp_key(oacp: &OpenshiftAssistedControlPlane) -> Result<(&str, &str), HiveError> {
    let missing = |field| HiveError::MissingMetadata {
        kind: OACP_KIND,
        field,
    };
    let meta = oacp.meta();
    Ok((
        meta.namespace.as_deref().ok_or(missing("namespace"))?,
        meta.name.as_deref().ok_or(missing("name"))?,
    ))
}

/// `spec.config` with its required `baseDomain` (the CRD requires it only when config is set).
fn config(
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<&OpenshiftAssistedControlPlaneConfigSpec, HiveError> {
    let config = oacp
        .spec
        .config
        .as_ref()
        .filter(|c| !c.base_domain.trim().is_empty())
        .ok_or(HiveError::MissingBaseDomain)?;
    if vips_unpaired(config) {
        return Err(HiveError::UnpairedVips);
    }
    Ok(config)
}

/// One VIP list set without the other: neither platform fits.
pub fn vips_unpaired(config: &OpenshiftAssistedControlPlaneConfigSpec) -> bool {
    config.api_vips.is_empty() != config.ingress_vips.is_empty()
}

fn capi_cluster_name(cluster: &Cluster) -> Result<&str, HiveError> {
    cluster
        .meta()
        .name
        .as_deref()
        .ok_or(HiveError::MissingMetadata {
            kind: "Cluster",
            field: "name",
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use assisted_api::agentclusterinstall::{DiskEncryptionEnableOn, DiskEncryptionMode};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use serde_json::json;

    /// The control plane of docs/examples/capoa-multinode.yaml, with a uid.
    const MULTINODE: &str = r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata:
  name: test-multinode
  namespace: test-capi
  uid: 6f1c1c9e-1111-2222-3333-444455556666
spec:
  openshiftAssistedConfigSpec:
    pullSecretRef:
      name: pull-secret
    sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk user@example
    nodeRegistration:
      name: $METADATA_NAME
      kubeletExtraLabels:
        - metal3.io/uuid=$METADATA_UUID
  distributionVersion: 4.20.0
  config:
    apiVIPs:
      - 192.168.222.40
    ingressVIPs:
      - 192.168.222.41
    baseDomain: lab.home
    pullSecretRef:
      name: pull-secret
    sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk user@example
  machineTemplate:
    infrastructureRef:
      apiGroup: infrastructure.cluster.x-k8s.io
      kind: Metal3MachineTemplate
      name: test-multinode-controlplane
  replicas: 3
"#;

    const CLUSTER: &str = r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: test-multinode
  namespace: test-capi
spec:
  clusterNetwork:
    pods:
      cidrBlocks:
        - 172.18.0.0/20
    services:
      cidrBlocks:
        - 10.96.0.0/12
"#;

    const RELEASE: &str = "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64";

    fn oacp() -> OpenshiftAssistedControlPlane {
        serde_yaml::from_str(MULTINODE).unwrap()
    }

    /// The multinode control plane with `edit` applied to its JSON.
    fn oacp_with(edit: impl FnOnce(&mut Value)) -> OpenshiftAssistedControlPlane {
        let mut value: Value = serde_yaml::from_str(MULTINODE).unwrap();
        edit(&mut value);
        serde_json::from_value(value).unwrap()
    }

    fn cluster() -> Cluster {
        serde_yaml::from_str(CLUSTER).unwrap()
    }

    fn inputs<'a>(oacp: &'a OpenshiftAssistedControlPlane, cluster: &'a Cluster) -> HiveInputs<'a> {
        HiveInputs {
            oacp,
            cluster,
            worker_replicas: 2,
            pull_secret_name: "pull-secret",
            release_image: RELEASE,
            install_config_override: None,
            generated_manifests: &[],
        }
    }

    fn expected_owner() -> OwnerReference {
        OwnerReference {
            api_version: "controlplane.cluster.x-k8s.io/v1alpha3".into(),
            kind: "OpenshiftAssistedControlPlane".into(),
            name: "test-multinode".into(),
            uid: "6f1c1c9e-1111-2222-3333-444455556666".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn expected_labels() -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                "cluster.x-k8s.io/cluster-name".into(),
                "test-multinode".into(),
            ),
            ("cluster.x-k8s.io/control-plane".into(), String::new()),
            (
                "cluster.x-k8s.io/control-plane-name".into(),
                "test-multinode".into(),
            ),
        ])
    }

    #[test]
    fn cluster_deployment_of_the_multinode_example() {
        let (oacp, cluster) = (oacp(), cluster());
        let cd = cluster_deployment(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(cd.metadata.name.as_deref(), Some("test-multinode"));
        assert_eq!(cd.metadata.namespace.as_deref(), Some("test-capi"));
        assert_eq!(cd.metadata.labels, Some(expected_labels()));
        assert_eq!(cd.metadata.owner_references, Some(vec![expected_owner()]));
        assert_eq!(cd.metadata.annotations, None);
        let body = cluster_deployment_apply_body(&cd);
        assert_eq!(body["apiVersion"], "hive.openshift.io/v1");
        assert_eq!(body["kind"], "ClusterDeployment");
        assert_eq!(
            body["spec"],
            json!({
                "clusterName": "test-multinode",
                "baseDomain": "lab.home",
                "platform": {"agentBareMetal": {}},
                "pullSecretRef": {"name": "pull-secret"},
                "clusterInstallRef": {
                    "group": "extensions.hive.openshift.io",
                    "version": "v1beta1",
                    "kind": "AgentClusterInstall",
                    "name": "test-multinode",
                },
            })
        );
    }

    #[test]
    fn the_apply_body_leaves_installed_to_assisted() {
        let (oacp, cluster) = (oacp(), cluster());
        let cd = cluster_deployment(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(
            serde_json::to_value(&cd).unwrap()["spec"]["installed"],
            false
        );
        assert!(
            cluster_deployment_apply_body(&cd)["spec"]
                .get("installed")
                .is_none()
        );
    }

    #[test]
    fn the_openshift_name_comes_from_config_but_labels_keep_the_capi_name() {
        let oacp = oacp_with(|v| v["spec"]["config"]["clusterName"] = json!("ocp-prod"));
        let cluster = cluster();
        let cd = cluster_deployment(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(cd.spec.cluster_name, "ocp-prod");
        assert_eq!(cd.metadata.labels, Some(expected_labels()));
        let aci = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(
            aci.metadata.labels.unwrap()[CLUSTER_NAME_LABEL],
            "test-multinode"
        );
        // An empty clusterName is unset.
        let oacp = oacp_with(|v| v["spec"]["config"]["clusterName"] = json!(""));
        let cd = cluster_deployment(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(cd.spec.cluster_name, "test-multinode");
    }

    #[test]
    fn the_pull_secret_is_the_one_given() {
        let oacp = oacp_with(|v| {
            v["spec"]["config"]
                .as_object_mut()
                .unwrap()
                .remove("pullSecretRef");
        });
        let cluster = cluster();
        let cd = cluster_deployment(&HiveInputs {
            pull_secret_name: "placeholder-pull-secret",
            ..inputs(&oacp, &cluster)
        })
        .unwrap();
        assert_eq!(
            cd.spec.pull_secret_ref.map(|r| r.name).as_deref(),
            Some("placeholder-pull-secret")
        );
    }

    #[test]
    fn template_labels_are_kept_and_capi_labels_win() {
        let oacp = oacp_with(|v| {
            v["spec"]["machineTemplate"]["metadata"] = json!({"labels": {
                "team": "edge",
                "cluster.x-k8s.io/cluster-name": "wrong",
                "cluster.x-k8s.io/control-plane": "wrong",
            }});
        });
        let cluster = cluster();
        let mut want = expected_labels();
        want.insert("team".into(), "edge".into());
        let cd = cluster_deployment(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(cd.metadata.labels, Some(want.clone()));
        let aci = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap();
        want.insert(ACI_CONSUMER_LABEL.into(), ACI_CONSUMER.into());
        assert_eq!(aci.metadata.labels, Some(want));
    }

    #[test]
    fn the_control_planes_shard_labels_its_install_objects() {
        let oacp = oacp_with(|v| {
            v["metadata"]["labels"] =
                json!({"cluster.x-k8s.io/watch-filter": "east", "other": "x"});
        });
        let cluster = cluster();
        let mut want = expected_labels();
        want.insert("cluster.x-k8s.io/watch-filter".into(), "east".into());
        let cd = cluster_deployment(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(cd.metadata.labels, Some(want));
    }

    #[test]
    fn long_control_plane_names_are_hashed_as_capi_does() {
        let long = "control-plane-with-a-very-long-name-that-does-not-fit-in-a-label-value";
        assert_eq!(long.len(), 70);
        let oacp = oacp_with(|v| v["metadata"]["name"] = json!(long));
        let cluster = cluster();
        let cd = cluster_deployment(&inputs(&oacp, &cluster)).unwrap();
        let labels = cd.metadata.labels.unwrap();
        // Go: fmt.Sprintf("hash_%s_z", base64.RawURLEncoding.EncodeToString(fnv32a(long)))
        assert_eq!(
            labels[super::super::labels::CONTROL_PLANE_NAME_LABEL],
            "hash_2XcEZQ_z"
        );
        assert_eq!(cd.metadata.name.as_deref(), Some(long));
    }

    #[test]
    fn agent_cluster_install_of_the_multinode_example() {
        let (oacp, cluster) = (oacp(), cluster());
        let overrides = r#"{"capabilities":{"baselineCapabilitySet":"None"}}"#;
        let aci = agent_cluster_install(&HiveInputs {
            install_config_override: Some(overrides),
            ..inputs(&oacp, &cluster)
        })
        .unwrap();
        assert_eq!(aci.metadata.name.as_deref(), Some("test-multinode"));
        assert_eq!(aci.metadata.namespace.as_deref(), Some("test-capi"));
        let mut labels = expected_labels();
        labels.insert(
            "agentclusterinstalls.agent-install.openshift.io/consumer".into(),
            "OpenshiftAssistedControlPlane".into(),
        );
        assert_eq!(aci.metadata.labels, Some(labels));
        assert_eq!(aci.metadata.owner_references, Some(vec![expected_owner()]));
        assert_eq!(
            aci.metadata.annotations,
            Some(BTreeMap::from([(
                "agent-install.openshift.io/install-config-overrides".to_string(),
                overrides.to_string()
            )]))
        );
        let body = serde_json::to_value(&aci).unwrap();
        assert_eq!(body["apiVersion"], "extensions.hive.openshift.io/v1beta1");
        assert_eq!(
            body["spec"],
            json!({
                "imageSetRef": {"name": "test-capi.test-multinode"},
                "clusterDeploymentRef": {"name": "test-multinode"},
                "networking": {
                    "clusterNetwork": [{"cidr": "172.18.0.0/20", "hostPrefix": 23}],
                    "serviceNetwork": ["10.96.0.0/12"],
                },
                "sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk user@example",
                "provisionRequirements": {"controlPlaneAgents": 3, "workerAgents": 2},
                "apiVIPs": ["192.168.222.40"],
                "ingressVIPs": ["192.168.222.41"],
                "platformType": "BareMetal",
            })
        );
    }

    #[test]
    fn no_override_no_annotation() {
        let (oacp, cluster) = (oacp(), cluster());
        let aci = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(aci.metadata.annotations, None);
    }

    #[test]
    fn platform_is_bare_metal_only_with_both_vip_lists() {
        let cluster = cluster();
        let rows: [(Value, Value, PlatformType); 4] = [
            (
                json!(["192.168.222.40"]),
                json!(["192.168.222.41"]),
                PlatformType::BareMetal,
            ),
            (json!(["192.168.222.40"]), json!([]), PlatformType::None),
            (json!([]), json!(["192.168.222.41"]), PlatformType::None),
            (json!([]), json!([]), PlatformType::None),
        ];
        for (api, ingress, want) in rows {
            let oacp = oacp_with(|v| {
                v["spec"]["config"]["apiVIPs"] = api.clone();
                v["spec"]["config"]["ingressVIPs"] = ingress.clone();
            });
            assert_eq!(platform_type(&oacp), want, "{api} {ingress}");
            // One list without the other is refused rather than its VIPs dropped (the webhook
            // refuses it too).
            if api.as_array().map(Vec::len) != ingress.as_array().map(Vec::len) {
                let err = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap_err();
                assert_eq!(err, HiveError::UnpairedVips);
                assert!(err.to_string().contains("go together"), "{err}");
                continue;
            }
            let aci = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap();
            assert_eq!(aci.spec.platform_type, Some(want));
            if want == PlatformType::None {
                assert!(aci.spec.api_vips.is_empty() && aci.spec.ingress_vips.is_empty());
            } else {
                assert_eq!(aci.spec.api_vips, ["192.168.222.40"]);
                assert_eq!(aci.spec.ingress_vips, ["192.168.222.41"]);
            }
        }
    }

    #[test]
    fn single_node_from_the_sno_shape() {
        let oacp = oacp_with(|v| {
            v["spec"]["replicas"] = json!(1);
            let config = v["spec"]["config"].as_object_mut().unwrap();
            config.remove("apiVIPs");
            config.remove("ingressVIPs");
        });
        let cluster = cluster();
        let aci = agent_cluster_install(&HiveInputs {
            worker_replicas: 0,
            ..inputs(&oacp, &cluster)
        })
        .unwrap();
        assert_eq!(aci.spec.platform_type, Some(PlatformType::None));
        assert_eq!(
            aci.spec.provision_requirements,
            ProvisionRequirements {
                control_plane_agents: 1,
                worker_agents: 0,
                arbiter_agents: 0
            }
        );
    }

    #[test]
    fn unset_replicas_mean_one_control_plane_agent() {
        let oacp = oacp_with(|v| {
            v["spec"].as_object_mut().unwrap().remove("replicas");
        });
        assert_eq!(control_plane_agents(&oacp), 1);
        let cluster = cluster();
        let aci = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(aci.spec.provision_requirements.control_plane_agents, 1);
        assert_eq!(
            control_plane_agents(&oacp_with(|v| v["spec"]["replicas"] = json!(5))),
            5
        );
    }

    #[test]
    fn config_fields_are_copied() {
        let oacp = oacp_with(|v| {
            let config = &mut v["spec"]["config"];
            config["diskEncryption"] =
                json!({"enableOn": "masters,workers", "mode": "tang", "tangServers": "[]"});
            config["mastersSchedulable"] = json!(true);
            config["proxy"] = json!({"httpProxy": "http://proxy:3128", "noProxy": ".lab.home"});
            config["manifestsConfigMapRefs"] = json!([{"name": "extra"}, {"name": "more"}]);
        });
        let cluster = cluster();
        let aci = agent_cluster_install(&HiveInputs {
            generated_manifests: &["additional-registry-config".to_string()],
            ..inputs(&oacp, &cluster)
        })
        .unwrap();
        let encryption = aci.spec.disk_encryption.unwrap();
        assert_eq!(
            encryption.enable_on,
            Some(DiskEncryptionEnableOn::MastersWorkers)
        );
        assert_eq!(encryption.mode, Some(DiskEncryptionMode::Tang));
        assert_eq!(encryption.tang_servers.as_deref(), Some("[]"));
        assert_eq!(aci.spec.masters_schedulable, Some(true));
        let proxy = aci.spec.proxy.unwrap();
        assert_eq!(proxy.http_proxy.as_deref(), Some("http://proxy:3128"));
        assert_eq!(proxy.no_proxy.as_deref(), Some(".lab.home"));
        let names: Vec<_> = aci
            .spec
            .manifests_config_map_refs
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(names, ["extra", "more", "additional-registry-config"]);
    }

    #[test]
    fn an_empty_ssh_key_is_left_out() {
        let oacp = oacp_with(|v| v["spec"]["config"]["sshAuthorizedKey"] = json!(""));
        let cluster = cluster();
        let aci = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(aci.spec.ssh_public_key, None);
    }

    #[test]
    fn networking_follows_the_cluster() {
        let oacp = oacp();
        let dual: Cluster = serde_yaml::from_str(
            r#"
metadata: {name: test-multinode, namespace: test-capi}
spec:
  clusterNetwork:
    pods: {cidrBlocks: [10.128.0.0/14, "fd01::/48"]}
    services: {cidrBlocks: [172.30.0.0/16, "fd02::/112"]}
"#,
        )
        .unwrap();
        let aci = agent_cluster_install(&inputs(&oacp, &dual)).unwrap();
        assert_eq!(
            aci.spec.networking.cluster_network,
            [
                ClusterNetworkEntry {
                    cidr: "10.128.0.0/14".into(),
                    host_prefix: Some(23)
                },
                ClusterNetworkEntry {
                    cidr: "fd01::/48".into(),
                    host_prefix: Some(23)
                },
            ]
        );
        assert_eq!(
            aci.spec.networking.service_network,
            ["172.30.0.0/16", "fd02::/112"]
        );

        // No clusterNetwork: nothing set, assisted's defaults apply.
        let bare: Cluster = serde_yaml::from_str(
            "metadata: {name: test-multinode, namespace: test-capi}\nspec: {}",
        )
        .unwrap();
        let aci = agent_cluster_install(&inputs(&oacp, &bare)).unwrap();
        assert_eq!(aci.spec.networking, Networking::default());
    }

    #[test]
    fn cluster_image_set_is_cluster_scoped_and_labelled_with_its_owner() {
        let (oacp, cluster) = (oacp(), cluster());
        let set = cluster_image_set(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(
            set.metadata.name.as_deref(),
            Some("test-capi.test-multinode")
        );
        assert_eq!(set.metadata.namespace, None);
        assert_eq!(set.metadata.owner_references, None);
        assert_eq!(set.spec.release_image, RELEASE);
        assert_eq!(
            set.metadata.labels,
            Some(BTreeMap::from([
                (
                    "cluster.x-k8s.io/cluster-name".into(),
                    "test-multinode".into()
                ),
                (
                    "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/namespace".into(),
                    "test-capi".into()
                ),
                (
                    "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/name".into(),
                    "test-multinode".into()
                ),
            ]))
        );
        // The ACI points at it.
        let aci = agent_cluster_install(&inputs(&oacp, &cluster)).unwrap();
        assert_eq!(aci.spec.image_set_ref.map(|r| r.name), set.metadata.name);
    }

    #[test]
    fn missing_metadata_and_base_domain_are_errors() {
        let cluster = cluster();
        for field in ["name", "namespace", "uid"] {
            let oacp = oacp_with(|v| {
                v["metadata"].as_object_mut().unwrap().remove(field);
            });
            let want = HiveError::MissingMetadata {
                kind: "OpenshiftAssistedControlPlane",
                field,
            };
            let inputs = inputs(&oacp, &cluster);
            assert_eq!(cluster_deployment(&inputs).unwrap_err(), want);
            assert_eq!(agent_cluster_install(&inputs).unwrap_err(), want);
            assert!(
                want.to_string().contains(&format!("metadata.{field}")),
                "{want}"
            );
            // The image set carries no owner reference, so it does without a uid.
            assert_eq!(
                cluster_image_set(&inputs).is_ok(),
                field == "uid",
                "{field}"
            );
        }

        for edit in [
            (|v: &mut Value| {
                v["spec"].as_object_mut().unwrap().remove("config");
            }) as fn(&mut Value),
            |v: &mut Value| v["spec"]["config"]["baseDomain"] = json!(""),
            |v: &mut Value| v["spec"]["config"]["baseDomain"] = json!("  "),
        ] {
            let oacp = oacp_with(edit);
            let inputs = inputs(&oacp, &cluster);
            assert_eq!(
                cluster_deployment(&inputs).unwrap_err(),
                HiveError::MissingBaseDomain
            );
            let err = agent_cluster_install(&inputs).unwrap_err();
            assert_eq!(err, HiveError::MissingBaseDomain);
            assert!(err.to_string().contains("spec.config.baseDomain"), "{err}");
        }

        let oacp = oacp();
        let unnamed = Cluster {
            metadata: Default::default(),
            ..cluster.clone()
        };
        let want = HiveError::MissingMetadata {
            kind: "Cluster",
            field: "name",
        };
        let inputs = inputs(&oacp, &unnamed);
        assert_eq!(cluster_deployment(&inputs).unwrap_err(), want);
        assert_eq!(agent_cluster_install(&inputs).unwrap_err(), want);
        assert_eq!(cluster_image_set(&inputs).unwrap_err(), want);
    }

    #[test]
    fn worker_agents_sum_machine_deployment_replicas() {
        let md = |replicas: Option<i32>| {
            let mut value = json!({
                "metadata": {"name": "w", "namespace": "test-capi"},
                "spec": {
                    "clusterName": "test-multinode",
                    "selector": {},
                    "template": {"spec": {
                        "clusterName": "test-multinode",
                        "bootstrap": {},
                        "infrastructureRef": {"apiGroup": "g", "kind": "K", "name": "n"},
                    }},
                },
            });
            if let Some(r) = replicas {
                value["spec"]["replicas"] = json!(r);
            }
            serde_json::from_value::<MachineDeployment>(value).unwrap()
        };
        assert_eq!(worker_agents(&[]), 0);
        assert_eq!(worker_agents(&[md(Some(2))]), 2);
        assert_eq!(worker_agents(&[md(Some(2)), md(Some(3)), md(Some(0))]), 5);
        assert_eq!(worker_agents(&[md(None), md(Some(2))]), 3);
        assert_eq!(worker_agents(&[md(Some(i32::MAX)), md(Some(1))]), i32::MAX);
    }
}

//! The labels that tie objects to their Cluster and control plane, as Cluster API names them:
//! on the install objects, the control-plane Machines and everything cloned for them.

use std::collections::BTreeMap;

use kube::{Resource, ResourceExt};
use manager::names::capi_label_value;
use manager::runtime::WATCH_FILTER_LABEL;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
pub const CONTROL_PLANE_NAME_LABEL: &str = "cluster.x-k8s.io/control-plane-name";

/// The labels of the ClusterDeployment and AgentClusterInstall, as CAPOA's
/// `ControlPlaneMachineLabelsForCluster`: the machine template's labels, the control plane's
/// shard (its `cluster.x-k8s.io/watch-filter` label), then the CAPI ones.
/// The cluster name is the CAPI Cluster's even when `config.clusterName` differs (CAPOA puts
/// the OpenShift name there, and its bootstrap provider then cannot find the cluster).
pub fn labels(
    oacp: &OpenshiftAssistedControlPlane,
    capi_cluster_name: &str,
) -> BTreeMap<String, String> {
    let mut labels = oacp
        .spec
        .machine_template
        .metadata
        .as_ref()
        .map(|m| m.labels.clone())
        .unwrap_or_default();
    // The shard goes with everything made for the control plane: the shard's managers and
    // core watch only their own (`--watch-filter`).
    if let Some(shard) = oacp.labels().get(WATCH_FILTER_LABEL) {
        labels.insert(WATCH_FILTER_LABEL.into(), shard.clone());
    }
    labels.insert(CLUSTER_NAME_LABEL.into(), capi_cluster_name.into());
    labels.insert(CONTROL_PLANE_LABEL.into(), String::new());
    let name = oacp.meta().name.as_deref().unwrap_or_default();
    labels.insert(CONTROL_PLANE_NAME_LABEL.into(), capi_label_value(name));
    labels
}

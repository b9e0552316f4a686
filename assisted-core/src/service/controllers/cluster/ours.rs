//! Which ClusterDeployments this controller handles, and the finalizers and field manager it
//! writes under.

use crate::api::hive::ClusterDeployment;

pub const CD_FINALIZER: &str = "clusterdeployments.agent-install.openshift.io/ai-deprovision";
pub const ACI_FINALIZER: &str = "agentclusterinstall.agent-install.openshift.io/ai-deprovision";
pub(super) const FIELD_MANAGER: &str = "assisted-core-cluster";

/// The name of the AgentClusterInstall when the ClusterDeployment's `clusterInstallRef` names
/// one (the agent flow); `None` for any other install.
pub(super) fn is_ours(cd: &ClusterDeployment) -> Option<String> {
    let r = cd.spec.cluster_install_ref.as_ref()?;
    (r.group == "extensions.hive.openshift.io" && r.kind == "AgentClusterInstall")
        .then(|| r.name.clone())
}

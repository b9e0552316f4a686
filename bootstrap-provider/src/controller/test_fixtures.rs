//! Objects the controllers' unit tests share.

use assisted_api::AgentClusterInstall;

/// The AgentClusterInstall `ns/cp` of a cluster with `control_plane_agents`, in install `state`,
/// with `conditions` (a YAML list).
pub fn aci(control_plane_agents: u32, state: &str, conditions: &str) -> AgentClusterInstall {
    serde_yaml::from_str(&format!(
        r#"
apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata: {{name: cp, namespace: ns}}
spec:
  clusterDeploymentRef: {{name: cp}}
  provisionRequirements: {{controlPlaneAgents: {control_plane_agents}}}
status:
  debugInfo: {{state: "{state}"}}
  conditions: {conditions}
"#
    ))
    .unwrap()
}

//! Objects the controllers' unit tests share.

use assisted_api::AgentClusterInstall;
use external_types::metal3_io::BareMetalHost;

use crate::controller::hold::{Hold, HoldReason};

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

/// The BareMetalHost `ns/host-0` (uid `0b1c2d3e-…`), with `yaml_extra` added to its spec.
pub fn host(yaml_extra: &str) -> BareMetalHost {
    serde_yaml::from_str(&format!(
        r#"
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: host-0, namespace: ns, uid: 0b1c2d3e-aaaa-bbbb-cccc-000000000000}}
spec:
  online: true
  bootMACAddress: "52:54:00:aa:bb:cc"
  {yaml_extra}
"#
    ))
    .unwrap()
}

/// A worker held while the day-1 install is in `state`.
pub fn held_install(state: &str) -> Hold {
    Hold::Held(HoldReason::InstallInProgress {
        state: state.into(),
    })
}

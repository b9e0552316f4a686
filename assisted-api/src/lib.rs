//! Typed assisted-service CRDs, wire-compatible with upstream: same groups, versions, kinds and
//! JSON field names (`agent-install.openshift.io/v1beta1`, `extensions.hive.openshift.io/v1beta1`,
//! `hive.openshift.io/v1`).

pub mod agent;
pub mod agentclusterinstall;
pub mod common;
pub mod hive;
pub mod infraenv;
pub mod nmstateconfig;

pub use agent::{Agent, AgentSpec, AgentStatus};
pub use agentclusterinstall::{
    AgentClusterInstall, AgentClusterInstallSpec, AgentClusterInstallStatus,
};
pub use hive::{ClusterDeployment, ClusterDeploymentSpec, ClusterImageSet, ClusterImageSetSpec};
pub use infraenv::{InfraEnv, InfraEnvSpec, InfraEnvStatus};
pub use nmstateconfig::{NMStateConfig, NMStateConfigSpec};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::CustomResourceExt;

/// The CRDs assisted-core owns, in a stable order (the order they are written to `config/`).
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        InfraEnv::crd(),
        Agent::crd(),
        NMStateConfig::crd(),
        AgentClusterInstall::crd(),
        ClusterDeployment::crd(),
        ClusterImageSet::crd(),
    ]
}

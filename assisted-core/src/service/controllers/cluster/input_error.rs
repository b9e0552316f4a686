//! Why a ClusterDeployment + AgentClusterInstall spec cannot be applied: the input error the
//! ACI's SpecSynced condition shows, one variant per check.

use crate::service::controllers::mirror_config::MirrorError;
use crate::service::controllers::release_info::ReleaseInfoError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// A name, key or proxy URL in a format the installer refuses (`field` is where).
    #[error("{field}: {problem}")]
    Format {
        field: &'static str,
        problem: String,
    },
    #[error("spec.{0}")]
    Proxy(crate::domain::formats::ProxyError),
    #[error(
        "ClusterDeployment spec.{field} cannot change after the install started (it is {before:?}, the spec says {after:?})"
    )]
    FixedName {
        field: &'static str,
        before: String,
        after: String,
    },
    #[error(
        "provisionRequirements.controlPlaneAgents: OpenShift {version} installs 1 or 3 control-plane nodes, not {count} (4 and 5 need 4.18 or later)"
    )]
    LargeControlPlane { version: String, count: u32 },
    #[error(
        "provisionRequirements.arbiterAgents: arbiter nodes need OpenShift 4.19 or later, this cluster installs {0}"
    )]
    Arbiter(String),
    #[error(
        "networking.networkType: OpenShift {0} does not install OpenShiftSDN (4.14 was the last); use OVNKubernetes"
    )]
    OpenShiftSdn(String),
    #[error("annotation {annotation}: {problem}")]
    Overrides {
        annotation: &'static str,
        problem: String,
    },
    #[error("annotation {0} must be a JSON object")]
    OverridesNotObject(&'static str),
    #[error("provisionRequirements.{0} must not be negative")]
    Negative(&'static str),
    #[error(
        "provisionRequirements.controlPlaneAgents must be 1 or 3 to 5 (2 with arbiterAgents), got {0}"
    )]
    ControlPlaneCount(u32),
    #[error("apiVIPs and ingressVIPs are required for a multi-node baremetal cluster")]
    VipsRequired,
    #[error("networking.{field} {cidr:?} is not a CIDR (address/prefix)")]
    NotCidr { field: &'static str, cidr: String },
    #[error("{field} {vip:?} is not an IP address")]
    NotIp { field: &'static str, vip: String },
    #[error("{0}")]
    Tang(String),
    #[error("{0} not found")]
    CaMissing(String),
    #[error("{0} has no tls.crt key")]
    CaNoCert(String),
    #[error("{0}: tls.crt is not PEM text")]
    CaNotPem(String),
    #[error("manifests ConfigMap {config_map}: {problem}")]
    Manifest { config_map: String, problem: String },
    #[error("manifests ConfigMap {0} not found")]
    ManifestsMissing(String),
    #[error("spec.pullSecretRef is required")]
    NoPullSecretRef,
    #[error("pull secret {0} not found")]
    PullSecretMissing(String),
    #[error("pull secret {0} has no .dockerconfigjson key")]
    PullSecretNoKey(String),
    #[error("pull secret {0} is not UTF-8")]
    PullSecretNotUtf8(String),
    #[error("pull secret {name}: {problem}")]
    PullSecretShape { name: String, problem: String },
    #[error("ClusterImageSet {0} not found")]
    ImageSetMissing(String),
    #[error("spec.imageSetRef is required")]
    NoImageSetRef,
    #[error(transparent)]
    Release(#[from] ReleaseInfoError),
    #[error(transparent)]
    Mirror(#[from] MirrorError),
}

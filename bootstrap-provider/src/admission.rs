//! Admission of OpenshiftAssistedConfigs and OpenshiftAssistedConfigTemplates: what would only
//! fail once a host has booted and its Agent is matched — a malformed `kubeletExtraLabels`
//! entry, an install-time `ignition-override` that is not an Ignition 3 config — is refused
//! when it is written, naming the field. Configs are immutable, so a mistake found later costs
//! a new Machine.
//!
//! The rules and the decision are the API's (`provider_api::bootstrap::validation`: `review`,
//! which the webhook server calls, and `spec_problems`, which the control plane applies to its
//! `spec.openshiftAssistedConfigSpec` too); this module says where the manager serves them.
//!
//! The controllers keep their own checks (an Agent's `InvalidLabel`, `InvalidIgnitionOverride`):
//! objects written while the webhook was not installed still get a condition.

/// Where the bootstrap manager serves the config's validation (kubebuilder's path convention).
pub const VALIDATE_CONFIG_PATH: &str =
    "/validate-bootstrap-cluster-x-k8s-io-v1alpha2-openshiftassistedconfig";
/// And the template's.
pub const VALIDATE_TEMPLATE_PATH: &str =
    "/validate-bootstrap-cluster-x-k8s-io-v1alpha2-openshiftassistedconfigtemplate";

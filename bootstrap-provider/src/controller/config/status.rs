//! The config's status: the CAPI v1beta2 bootstrap contract fields (`initialization`,
//! `dataSecretName`) and its conditions (`Ready`, `DataSecretAvailable`, `Paused`,
//! `FieldsSupported`). Pure: no client, no clock (`now` is given).

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use manager::conditions::{self, Desired};
use provider_api::bootstrap::api::{
    BootstrapInitialization, OpenshiftAssistedConfig, OpenshiftAssistedConfigStatus,
};

use crate::controller::matching::HostProblem;
use crate::controller::{image, unsupported};
use assisted_api::InfraEnv;

pub const READY: &str = "Ready";
pub const DATA_SECRET_AVAILABLE: &str = "DataSecretAvailable";
pub const PAUSED: &str = "Paused";

/// `DataSecretAvailable` while reconciling is paused.
pub fn paused_data_available() -> Desired {
    Desired::false_(DATA_SECRET_AVAILABLE, "Paused", "reconciling is paused")
}

/// What the status is built from.
pub struct StatusInputs<'a> {
    pub config: &'a OpenshiftAssistedConfig,
    /// The template's InfraEnv as read (for `FieldsSupported`).
    pub infraenv: Option<&'a InfraEnv>,
    /// `DataSecretAvailable` as the writes decided it (before the Secret's existence).
    pub data_available: Desired,
    /// The boot-MAC problem of the Machine's host, shown on `Ready`.
    pub host_problem: Option<&'a HostProblem>,
    /// The data Secret exists or is written in this reconcile.
    pub created: bool,
    pub paused: bool,
}

/// Whether `Ready` already says `problem`: its event is said once per change, not on every
/// reconcile.
pub fn ready_says(config: &OpenshiftAssistedConfig, problem: &HostProblem) -> bool {
    config.status.iter().flat_map(|s| &s.conditions).any(|c| {
        c.type_ == READY
            && c.status == "False"
            && c.reason == problem.reason
            && c.message == problem.message
    })
}

/// The status the config should have.
pub fn desired_status(inputs: StatusInputs<'_>, now: Timestamp) -> OpenshiftAssistedConfigStatus {
    let config = inputs.config;
    let created = inputs.created;
    // Once the Secret exists it stays available (it is never taken back), whatever else waits.
    let data_available = if created {
        Desired::true_(
            DATA_SECRET_AVAILABLE,
            "the bootstrap data Secret is available",
        )
    } else {
        inputs.data_available
    };
    // A host that keeps the Machine's Agent from being matched shows on Ready, Secret or not
    // (CAPM3 claims the host only once the Secret exists); the Secret gate is not affected.
    let ready = match (inputs.host_problem, created) {
        (Some(problem), _) => Desired::false_(READY, problem.reason, problem.message.clone()),
        (None, true) => Desired::true_(READY, "the bootstrap data Secret is available"),
        (None, false) => Desired::false_(
            READY,
            data_available.reason.clone(),
            data_available.message.clone(),
        ),
    };
    let paused_condition = if inputs.paused {
        Desired::true_(
            PAUSED,
            "the Cluster or this config is paused; nothing is reconciled",
        )
    } else {
        Desired::false_(PAUSED, "NotPaused", "")
    };
    // Fields that take no effect block nothing: a condition of their own, present only while
    // one is set.
    let mut desired = vec![ready, data_available, paused_condition];
    desired.extend(unsupported::fields_supported(&config.spec, inputs.infraenv));
    let previous = config.status.clone().unwrap_or_default();
    OpenshiftAssistedConfigStatus {
        conditions: conditions::merge_owned(
            &previous.conditions,
            &desired,
            &[conditions::FIELDS_SUPPORTED],
            config.metadata.generation,
            now,
        ),
        initialization: Some(BootstrapInitialization {
            data_secret_created: Some(created),
        }),
        data_secret_name: created.then(|| image::data_secret_name(&config.name_any())),
        observed_generation: config.metadata.generation,
        v1beta1_conditions: previous.v1beta1_conditions,
    }
}

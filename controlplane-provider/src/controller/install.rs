//! The day-1 install as the AgentClusterInstall reports it, and what follows from its state.

/// Assisted cluster states in which the control plane answers: CAPOA's ACI controller marks the
/// control plane available from `finalizing` on.
pub const AVAILABLE_STATES: &[&str] = &["finalizing", "installed", "adding-hosts"];

/// The install as the AgentClusterInstall reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Install {
    /// `status.debugInfo.state`, empty before the core has seen the cluster.
    pub state: String,
    pub state_info: String,
    pub percentage: i64,
    /// The AgentClusterInstall's `Validated` message while its validations fail (the core's
    /// "The cluster's validations are failing: ..."), empty otherwise: what the user must fix
    /// before the install can start (e.g. VIPs outside every host's network).
    pub failing_validations: String,
    /// The AgentClusterInstall's `SpecSynced` message while it is False (the core's "The Spec
    /// could not be synced due to an input error: ..."), empty otherwise: while it is set the
    /// install does not start (an invalid value, or a field the core does not support yet).
    pub spec_error: String,
    /// The AgentClusterInstall's `FieldsSupported` message while it is False, empty otherwise.
    pub unsupported_fields: String,
}

impl Install {
    pub fn available(&self) -> bool {
        AVAILABLE_STATES.contains(&self.state.as_str())
    }

    /// Whether the day-1 install is done: upgrades may be asked for from then on.
    pub fn installed(&self) -> bool {
        ["installed", "adding-hosts"].contains(&self.state.as_str())
    }

    /// Whether the day-1 install has begun: from then on the masters are fixed.
    pub fn started(&self) -> bool {
        !assisted_api::agentclusterinstall::PRE_INSTALL_STATES.contains(&self.state.as_str())
    }
}

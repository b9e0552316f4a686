//! Spec fields a user can set that the core does not act on yet, as rows: the field as users
//! write it, when it counts as set (to a value the core ignores), and what to tell the user.
//! DESIGN §2: a field that is set but not supported yields a condition, never silence.
//!
//! Where each kind's rows are shown:
//! - AgentClusterInstall and Agent rows change what gets installed: they make `SpecSynced`
//!   False / `InputError` (an ACI with one does not start installing, as after any input error).
//! - InfraEnv rows only change the discovery environment: a separate `FieldsSupported`
//!   condition ([`fields_supported`]), so `ImageCreated` keeps upstream's reasons and the image
//!   is still served.
//! - ClusterDeployment rows are Hive's features: the core writes no ClusterDeployment status,
//!   so they go on the AgentClusterInstall's `FieldsSupported` condition and block nothing.
//!
//! `coverage.rs` checks that every `spec` field of the six CRDs is either acted on or has a row.

use crate::api::agent::AgentSpec;
use crate::api::agentclusterinstall::{
    AgentClusterInstallSpec, Hyperthreading, PlatformType as AciPlatform,
};
use crate::api::hive::ClusterDeploymentSpec;
use crate::api::infraenv::InfraEnvSpec;

use super::conditions::Cond;

#[cfg(test)]
mod coverage;

pub use manager::fields::Row;

/// The messages of the rows whose field is set in `spec`, in row order.
pub fn unsupported<S>(rows: &[Row<S>], spec: &S) -> Vec<String> {
    manager::fields::set_rows(rows, spec)
        .map(Row::message)
        .collect()
}

/// The rows' messages as one input error (for `SpecSynced`), `None` when nothing is set.
pub fn input_error<S>(rows: &[Row<S>], spec: &S) -> Option<String> {
    let found = unsupported(rows, spec);
    (!found.is_empty()).then(|| found.join("; "))
}

pub const FIELDS_SUPPORTED: &str = "FieldsSupported";

/// The condition for fields that block nothing (InfraEnv, the ClusterDeployment's Hive-only
/// fields). Not an upstream condition type: upstream has none for this, and putting it on
/// `ImageCreated` would change upstream's reasons there. Present only while such a field is
/// set, so objects without any look exactly like upstream's.
pub fn fields_supported(messages: &[String]) -> Option<Cond> {
    (!messages.is_empty()).then(|| Cond {
        type_: FIELDS_SUPPORTED,
        status: "False",
        reason: "UnsupportedFields",
        message: format!(
            "Some fields are set that are not supported yet and have no effect: {}",
            messages.join("; ")
        ),
    })
}

/// InfraEnv: discovery-only fields.
pub const INFRAENV_ROWS: &[Row<InfraEnvSpec>] = &[
    Row {
        field: "spec.approvedMACAddressConfigMapLabelSelector",
        is_set: |s| s.approved_mac_address_config_map_label_selector.is_some(),
        note: "it is not an assisted-service field; use agentApproval or approve Agents",
    },
    Row {
        field: "spec.nmStateConfigLabelSelector.matchExpressions",
        is_set: |s| {
            s.nm_state_config_label_selector
                .as_ref()
                .and_then(|sel| sel.match_expressions.as_ref())
                .is_some_and(|e| !e.is_empty())
        },
        note: "only matchLabels selects NMStateConfigs, as in assisted-service",
    },
    Row {
        field: "spec.ntpSources",
        is_set: |s| !s.ntp_sources.is_empty(),
        note: "the sources are added to the image's default ones instead of replacing them",
    },
];

/// Agent: fields that change how the host is installed.
pub const AGENT_ROWS: &[Row<AgentSpec>] = &[
    Row {
        field: "spec.ignitionEndpointTokenReference",
        is_set: |s| s.ignition_endpoint_token_reference.is_some(),
        note: "",
    },
    Row {
        field: "spec.ignitionEndpointHTTPHeaders",
        is_set: |s| !s.ignition_endpoint_http_headers.is_empty(),
        note: "",
    },
    Row {
        field: "spec.fencingCredentialsSecretRef",
        is_set: |s| s.fencing_credentials_secret_ref.is_some(),
        note: "two-node clusters with fencing are not supported",
    },
];

fn disabled(pool: Option<&crate::api::agentclusterinstall::AgentMachinePool>) -> bool {
    pool.and_then(|p| p.hyperthreading) == Some(Hyperthreading::Disabled)
}

/// AgentClusterInstall: fields that change what gets installed.
pub const ACI_ROWS: &[Row<AgentClusterInstallSpec>] = &[
    Row {
        field: "spec.platformType",
        is_set: |s| {
            matches!(
                s.platform_type,
                Some(AciPlatform::VSphere | AciPlatform::Nutanix)
            )
        },
        note: "only BareMetal, None and External are installed; VSphere and Nutanix are not",
    },
    Row {
        field: "spec.controlPlane.hyperthreading",
        is_set: |s| disabled(s.control_plane.as_ref()),
        note: "Disabled is not rendered into install-config",
    },
    Row {
        field: "spec.compute[].hyperthreading",
        is_set: |s| s.compute.iter().any(|p| disabled(Some(p))),
        note: "Disabled is not rendered into install-config",
    },
    Row {
        field: "spec.arbiter.hyperthreading",
        is_set: |s| disabled(s.arbiter.as_ref()),
        note: "Disabled is not rendered into install-config",
    },
];

/// ClusterDeployment: Hive's features. The core does Hive's part of the agent flow only.
pub const CLUSTER_DEPLOYMENT_ROWS: &[Row<ClusterDeploymentSpec>] = &[
    Row {
        field: "ClusterDeployment spec.platform",
        is_set: |s| !s.platform.other.is_empty(),
        note: "only agentBareMetal is an agent-flow platform",
    },
    Row {
        field: "ClusterDeployment spec.preserveOnDelete",
        is_set: |s| s.preserve_on_delete,
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.controlPlaneConfig",
        is_set: |s| s.control_plane_config.is_some(),
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.ingress",
        is_set: |s| !s.ingress.is_empty(),
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.certificateBundles",
        is_set: |s| !s.certificate_bundles.is_empty(),
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.manageDNS",
        is_set: |s| s.manage_dns,
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.provisioning",
        is_set: |s| s.provisioning.is_some(),
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.clusterPoolRef",
        is_set: |s| s.cluster_pool_ref.is_some(),
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.powerState",
        is_set: |s| s.power_state.as_deref().is_some_and(|p| p != "Running"),
        note: "hibernation is Hive's",
    },
    Row {
        field: "ClusterDeployment spec.hibernateAfter",
        is_set: |s| s.hibernate_after.is_some(),
        note: "hibernation is Hive's",
    },
    Row {
        field: "ClusterDeployment spec.installAttemptsLimit",
        is_set: |s| s.install_attempts_limit.is_some(),
        note: "",
    },
    Row {
        field: "ClusterDeployment spec.boundServiceAccountSigningKeySecretRef",
        is_set: |s| s.bound_service_account_signing_key_secret_ref.is_some(),
        note: "",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::agentclusterinstall::{AgentMachinePool, ProvisionRequirements};

    fn aci(cp: i32, workers: i32) -> AgentClusterInstallSpec {
        AgentClusterInstallSpec {
            provision_requirements: ProvisionRequirements {
                control_plane_agents: cp,
                worker_agents: workers,
                arbiter_agents: 0,
            },
            ..Default::default()
        }
    }

    #[test]
    fn nothing_set_means_no_message_and_no_condition() {
        assert_eq!(input_error(ACI_ROWS, &aci(3, 2)), None);
        assert_eq!(input_error(AGENT_ROWS, &AgentSpec::default()), None);
        assert!(unsupported(INFRAENV_ROWS, &InfraEnvSpec::default()).is_empty());
        assert!(unsupported(CLUSTER_DEPLOYMENT_ROWS, &ClusterDeploymentSpec::default()).is_empty());
        assert_eq!(fields_supported(&[]), None);
    }

    #[test]
    fn aci_rows_name_each_field_in_one_input_error() {
        let mut s = aci(3, 2);
        s.platform_type = Some(AciPlatform::VSphere);
        s.compute = vec![AgentMachinePool {
            hyperthreading: Some(Hyperthreading::Disabled),
            name: "worker".into(),
        }];
        let e = input_error(ACI_ROWS, &s).unwrap();
        assert!(
            e.starts_with("spec.platformType is not supported yet"),
            "{e}"
        );
        assert!(e.contains("spec.compute[].hyperthreading"), "{e}");
        // Enabled is what the install does anyway.
        s.compute[0].hyperthreading = Some(Hyperthreading::Enabled);
        assert!(
            !input_error(ACI_ROWS, &s)
                .unwrap()
                .contains("hyperthreading")
        );
    }

    #[test]
    fn values_the_core_acts_on_are_not_reported() {
        let mut s = aci(3, 2);
        for p in [
            AciPlatform::BareMetal,
            AciPlatform::None,
            AciPlatform::External,
        ] {
            s.platform_type = Some(p);
            assert_eq!(input_error(ACI_ROWS, &s), None, "{p:?}");
        }
        // Schedulable masters (a Scheduler patch) and NTP sources (chrony MachineConfigs)
        // are rendered on every platform.
        let mut s = aci(3, 2);
        s.masters_schedulable = Some(true);
        s.ntp_sources = vec!["ntp.example.com".into()];
        assert_eq!(input_error(ACI_ROWS, &s), None);
        s.networking.user_managed_networking = Some(true);
        assert_eq!(input_error(ACI_ROWS, &s), None);
        let mut sno = aci(1, 0);
        sno.masters_schedulable = Some(true);
        sno.ntp_sources = vec!["ntp.example.com".into()];
        assert_eq!(input_error(ACI_ROWS, &sno), None);
    }

    #[test]
    fn agent_rows_are_input_errors() {
        let s = AgentSpec {
            ignition_endpoint_http_headers: [("X-A".to_string(), "b".to_string())].into(),
            fencing_credentials_secret_ref: Some(Default::default()),
            ..Default::default()
        };
        assert_eq!(
            input_error(AGENT_ROWS, &s).unwrap(),
            "spec.ignitionEndpointHTTPHeaders is not supported yet; \
             spec.fencingCredentialsSecretRef is not supported yet: \
             two-node clusters with fencing are not supported"
        );
    }

    #[test]
    fn infraenv_and_hive_fields_make_one_condition() {
        let ie = InfraEnvSpec {
            approved_mac_address_config_map_label_selector: Some(Default::default()),
            ..Default::default()
        };
        let c = fields_supported(&unsupported(INFRAENV_ROWS, &ie)).unwrap();
        assert_eq!(
            (c.type_, c.status, c.reason),
            ("FieldsSupported", "False", "UnsupportedFields")
        );
        assert!(
            c.message
                .contains("spec.approvedMACAddressConfigMapLabelSelector is not supported yet")
        );

        let cd = ClusterDeploymentSpec {
            manage_dns: true,
            power_state: Some("Running".into()),
            ..Default::default()
        };
        assert_eq!(
            unsupported(CLUSTER_DEPLOYMENT_ROWS, &cd),
            vec!["ClusterDeployment spec.manageDNS is not supported yet".to_string()]
        );
    }
}

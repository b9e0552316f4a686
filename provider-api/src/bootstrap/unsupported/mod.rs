//! Fields of an OpenshiftAssistedConfig spec a user can set that take no effect (or only part of
//! it), as rows ([`CONFIG_ROWS`]): the field as users write it, when it counts as set, and what
//! to tell the user; and what the bootstrap controller does with every field
//! ([`CONFIG_COVERAGE`]). DESIGN §2: a field that is set but not supported yields a condition,
//! never silence.
//!
//! The bootstrap provider reports the rows on the config (`FieldsSupported` False /
//! `UnsupportedFields`), the control-plane provider under its `spec.openshiftAssistedConfigSpec`,
//! and its completeness test reads [`CONFIG_COVERAGE`]; `coverage.rs` is the config's and
//! template's own.

use manager::fields::Coverage::{self, *};
use manager::fields::Row;

use super::api::OpenshiftAssistedConfigSpec;

#[cfg(test)]
mod coverage;

/// The messages of the rows whose field is set in `spec`, in row order, each field named under
/// `parent` (`spec.` on the config itself, `spec.openshiftAssistedConfigSpec.` on a control
/// plane).
pub fn unsupported<S>(rows: &[Row<S>], spec: &S, parent: &str) -> Vec<String> {
    manager::fields::set_rows(rows, spec)
        .map(|row| row.message_under(parent))
        .collect()
}

/// Every field of the config spec, relative to the spec (`spec.` as on the config), and what the
/// bootstrap provider's controller does with it (the files named are that crate's).
pub const CONFIG_COVERAGE: &[(&str, Coverage)] = &[
    (
        "spec.proxy",
        Acted("infraenv.rs project: InfraEnv proxy (discovery)"),
    ),
    (
        "spec.pullSecretRef",
        Acted("infraenv.rs project: InfraEnv pullSecretRef"),
    ),
    (
        "spec.additionalNTPSources",
        Acted("infraenv.rs project: InfraEnv additionalNTPSources"),
    ),
    (
        "spec.sshAuthorizedKey",
        Acted("infraenv.rs project: InfraEnv sshAuthorizedKey"),
    ),
    (
        "spec.nmStateConfigLabelSelector.matchLabels",
        Acted("InfraEnv nmStateConfigLabelSelector"),
    ),
    (
        "spec.nmStateConfigLabelSelector.matchExpressions",
        Unsupported,
    ),
    (
        "spec.cpuArchitecture",
        Acted("InfraEnv cpuArchitecture; control plane's release architecture"),
    ),
    (
        "spec.kernelArguments",
        Acted("agent.rs installer_args; InfraEnv kernelArguments (ISO and iPXE)"),
    ),
    (
        "spec.additionalTrustBundle",
        Acted("InfraEnv additionalTrustBundle (discovery, as CAPOA)"),
    ),
    (
        "spec.osImageVersion",
        Partly("compared between configs only"),
    ),
    (
        "spec.preBootstrapCommands",
        Acted("install_ignition.rs: Agent ignitionConfigOverrides"),
    ),
    ("spec.postBootstrapCommands", Acted("install_ignition.rs")),
    (
        "spec.bootstrapCommandSentinelDir",
        Acted("install_ignition.rs"),
    ),
    (
        "spec.postBootstrapKubeconfigPath",
        Acted("install_ignition.rs"),
    ),
    (
        "spec.nodeRegistration.name",
        Acted("agent.rs desired_agent hostname; user_data.rs"),
    ),
    (
        "spec.nodeRegistration.kubeletExtraLabels",
        Acted("agent.rs desired_agent nodeLabels"),
    ),
    (
        "spec.nodeRegistration.providerID",
        Acted("install_ignition.rs provider_id_drop_in"),
    ),
];

/// The config's rows. Paths are the config's; the control plane reports them under its
/// `spec.openshiftAssistedConfigSpec`.
pub const CONFIG_ROWS: &[Row<OpenshiftAssistedConfigSpec>] = &[
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
        field: "spec.osImageVersion",
        is_set: |s| {
            s.os_image_version
                .as_deref()
                .is_some_and(|v| !v.trim().is_empty())
        },
        note: "the discovery image is the cluster's OpenShift version (the control plane's \
               distributionVersion); configs of one template must still agree on it",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> OpenshiftAssistedConfigSpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn each_row_names_its_field_under_the_parent() {
        let s = spec(
            r#"
osImageVersion: "4.19"
nmStateConfigLabelSelector: {matchExpressions: [{key: a, operator: Exists}]}
kernelArguments: [{value: console=ttyS0}]
"#,
        );
        let messages = unsupported(CONFIG_ROWS, &s, "spec.");
        let fields: Vec<&str> = messages
            .iter()
            .map(|m| m.split(" is not supported yet").next().unwrap_or_default())
            .collect();
        assert_eq!(
            fields,
            [
                "spec.nmStateConfigLabelSelector.matchExpressions",
                "spec.osImageVersion"
            ]
        );
        let on_control_plane = unsupported(CONFIG_ROWS, &s, "spec.openshiftAssistedConfigSpec.");
        assert!(
            on_control_plane[1].starts_with(
                "spec.openshiftAssistedConfigSpec.osImageVersion is not supported yet: "
            )
        );
    }
}

//! Fields of an OpenshiftAssistedConfig a user can set that take no effect (or only part of it),
//! as rows: the field as users write it, when it counts as set, and what to tell the user.
//! DESIGN §2: a field that is set but not supported yields a condition, never silence.
//!
//! They show as `FieldsSupported` False / `UnsupportedFields` on the config (the type, reason and
//! wording assisted-core uses on InfraEnvs), present only while such a field is set. It blocks
//! nothing: `DataSecretAvailable` and `Ready` do not look at it. The template InfraEnv's own
//! `FieldsSupported` is mirrored when it names something these rows do not.
//!
//! The control-plane provider reports the same rows under `spec.openshiftAssistedConfigSpec`,
//! and its completeness test reads [`CONFIG_COVERAGE`]; `coverage.rs` is this crate's.

use assisted_api::InfraEnv;
use manager::conditions::{self, Desired};
use provider_api::bootstrap::api::OpenshiftAssistedConfigSpec;

#[cfg(test)]
mod coverage;

pub use manager::fields::Row;

/// The messages of the rows whose field is set in `spec`, in row order, each field named under
/// `parent` (`spec.` on the config itself, `spec.openshiftAssistedConfigSpec.` on a control
/// plane).
pub fn unsupported<S>(rows: &[Row<S>], spec: &S, parent: &str) -> Vec<String> {
    manager::fields::set_rows(rows, spec)
        .map(|row| row.message_under(parent))
        .collect()
}

/// What a controller does with a field; one entry per field path prefix in the completeness
/// tables (the longest prefix covering a schema leaf decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Acted on; where, in short.
    Acted(&'static str),
    /// Acted on, except for the values or places its row reports.
    Partly(&'static str),
    /// Not acted on; its row reports it.
    Unsupported,
    /// Copied into an assisted CR whose core conditions (SpecSynced, FieldsSupported) are
    /// mirrored onto ours; where, in short.
    Forwarded(&'static str),
}

impl Coverage {
    /// Whether the field needs a row.
    pub fn needs_row(self) -> bool {
        matches!(self, Coverage::Partly(_) | Coverage::Unsupported)
    }
}

use Coverage::*;

/// Every field of the config spec, relative to the spec (`spec.` as on the config).
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

/// The InfraEnv fields whose core rows repeat one of [`CONFIG_ROWS`] (the InfraEnv gets them
/// from the configs), so that its condition is mirrored only when it says more.
const INFRAENV_FIELDS_REPORTED_HERE: &[&str] =
    &["spec.nmStateConfigLabelSelector.matchExpressions"];

/// The prefix of assisted-core's `FieldsSupported` message (as [`conditions::fields_supported`]).
const CORE_PREFIX: &str = "Some fields are set that are not supported yet and have no effect: ";

/// The template InfraEnv's `FieldsSupported` False message, as one more message for the config,
/// when it names a field beyond those the config rows already report. Each of the core's
/// entries reads `<field> is not supported yet[: why]` (docs/assisted-core.md), which is how the
/// entries are counted.
pub fn infraenv_report(infraenv: Option<&InfraEnv>) -> Option<String> {
    let infraenv = infraenv?;
    let condition = infraenv
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == conditions::FIELDS_SUPPORTED && c.status == "False")?;
    let message = condition.message.as_deref().unwrap_or_default();
    let entries = message.matches(" is not supported yet").count();
    let repeated = INFRAENV_FIELDS_REPORTED_HERE
        .iter()
        .filter(|f| message.contains(&format!("{f} is not supported yet")))
        .count();
    (entries > repeated).then(|| {
        format!(
            "InfraEnv {}: {}",
            infraenv.metadata.name.as_deref().unwrap_or_default(),
            message.strip_prefix(CORE_PREFIX).unwrap_or(message)
        )
    })
}

/// The config's `FieldsSupported` condition: its rows, then what the template's InfraEnv
/// reports beyond them; `None` while nothing is set.
pub fn fields_supported(
    spec: &OpenshiftAssistedConfigSpec,
    infraenv: Option<&InfraEnv>,
) -> Option<Desired> {
    let mut messages = unsupported(CONFIG_ROWS, spec, "spec.");
    messages.extend(infraenv_report(infraenv));
    conditions::fields_supported(&messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> OpenshiftAssistedConfigSpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn infraenv(message: &str) -> InfraEnv {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "agent-install.openshift.io/v1beta1",
            "kind": "InfraEnv",
            "metadata": {"name": "workers-ie", "namespace": "ns"},
            "spec": {"pullSecretRef": {"name": "ps"}},
            "status": {"conditions": [
                {"type": "ImageCreated", "status": "True", "reason": "ImageCreated"},
                {"type": "FieldsSupported", "status": "False", "reason": "UnsupportedFields",
                 "message": format!("{CORE_PREFIX}{message}")},
            ]},
        }))
        .unwrap()
    }

    #[test]
    fn nothing_set_means_no_condition() {
        let plain = spec(
            "{sshAuthorizedKey: k, osImageVersion: ' ', kernelArguments: [{operation: replace, value: a=b}]}",
        );
        assert_eq!(fields_supported(&plain, None), None);
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
        let c = fields_supported(&s, None).unwrap();
        assert_eq!(
            (c.type_, c.status.as_str(), c.reason.as_str()),
            ("FieldsSupported", "False", "UnsupportedFields")
        );
        assert!(
            c.message
                .contains("only matchLabels selects NMStateConfigs"),
            "{}",
            c.message
        );
    }

    #[test]
    fn the_infraenv_is_mirrored_only_when_it_says_more() {
        let s =
            spec("{nmStateConfigLabelSelector: {matchExpressions: [{key: a, operator: Exists}]}}");
        // The core's matchExpressions row repeats ours: not mirrored.
        let same = infraenv(
            "spec.nmStateConfigLabelSelector.matchExpressions is not supported yet: only \
             matchLabels selects NMStateConfigs; as in assisted-service",
        );
        let c = fields_supported(&s, Some(&same)).unwrap();
        assert!(!c.message.contains("InfraEnv workers-ie"), "{}", c.message);

        // A field the rows do not know (its note has a `;` too): mirrored, once.
        let more = infraenv(
            "spec.nmStateConfigLabelSelector.matchExpressions is not supported yet: only \
             matchLabels selects NMStateConfigs; as in assisted-service; \
             spec.additionalTrustBundle is not supported yet: the installed cluster does not \
             trust it",
        );
        let c = fields_supported(&s, Some(&more)).unwrap();
        assert!(
            c.message.contains(
                "; InfraEnv workers-ie: spec.nmStateConfigLabelSelector.matchExpressions is not \
                 supported yet: only"
            ),
            "{}",
            c.message
        );
        assert_eq!(c.message.matches(CORE_PREFIX).count(), 1, "{}", c.message);

        // Even with nothing set on the config itself.
        let c = fields_supported(&OpenshiftAssistedConfigSpec::default(), Some(&more)).unwrap();
        assert!(
            c.message
                .starts_with(&format!("{CORE_PREFIX}InfraEnv workers-ie: "))
        );
        assert_eq!(infraenv_report(None), None);
    }
}

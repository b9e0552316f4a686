//! The config's `FieldsSupported` condition. The fields of an OpenshiftAssistedConfig a user can
//! set that take no effect (or only part of it) are rows of the API's
//! (`provider_api::bootstrap::unsupported`: [`CONFIG_ROWS`], and the completeness table
//! `CONFIG_COVERAGE` with its test). DESIGN §2: a field that is set but not supported yields a
//! condition, never silence.
//!
//! They show as `FieldsSupported` False / `UnsupportedFields` on the config (the type, reason and
//! wording assisted-core uses on InfraEnvs), present only while such a field is set. It blocks
//! nothing: `DataSecretAvailable` and `Ready` do not look at it. The template InfraEnv's own
//! `FieldsSupported` is mirrored when it names something these rows do not.

use assisted_api::InfraEnv;
use manager::conditions::{self, Desired};
use provider_api::bootstrap::api::OpenshiftAssistedConfigSpec;
use provider_api::bootstrap::unsupported::{CONFIG_ROWS, unsupported};

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
    fn a_set_row_makes_fields_supported_false() {
        let s = spec(
            r#"
osImageVersion: "4.19"
nmStateConfigLabelSelector: {matchExpressions: [{key: a, operator: Exists}]}
kernelArguments: [{value: console=ttyS0}]
"#,
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

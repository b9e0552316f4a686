//! The config spec's admission rules, as facts about the API: what a malformed
//! `kubeletExtraLabels` entry is and what makes an `ignition-override` annotation unusable
//! ([`spec_problems`]), and the admission decision for a config or template request
//! ([`review`]). The bootstrap manager's webhook serves [`review`] (at the paths in
//! `bootstrap_provider::admission`), the control plane's admission applies [`spec_problems`] to
//! its `spec.openshiftAssistedConfigSpec`, and the bootstrap controller parses the annotation
//! with [`parse_override`] before merging it. Pure.

use std::collections::BTreeMap;

use manager::names::is_label_value;
use manager::webhook::Refusal;
use serde_json::{Map, Value};

use super::api::{IGNITION_OVERRIDE_ANNOTATION, OpenshiftAssistedConfigSpec};

/// A label name part (after an optional `prefix/`): 63 characters at most, alphanumerics, `-`,
/// `_`, `.` inside, alphanumeric at both ends (Kubernetes' qualified name).
fn is_label_name(name: &str) -> bool {
    !name.is_empty() && is_label_value(name)
}

/// A DNS subdomain (the optional prefix of a label key).
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part.len() <= 63
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// What is wrong with one `kubeletExtraLabels` entry, if anything. The value may hold
/// `$METADATA_*` variables resolved per host when the Agent is matched; only its literal parts
/// are checked here.
pub fn kubelet_extra_label_problem(entry: &str) -> Option<String> {
    let Some((key, value)) = entry.split_once('=') else {
        return Some(format!("{entry:?} is not key=value"));
    };
    let key = key.trim();
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if !is_label_name(name) || prefix.is_some_and(|p| !is_dns_subdomain(p)) {
        return Some(format!(
            "{entry:?}: {key:?} is not a label key (an optional DNS-subdomain prefix and `/`, then \
             up to 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)"
        ));
    }
    let value = value.trim().trim_matches('"');
    if value.contains('$') {
        return None;
    }
    if !is_label_value(value) {
        return Some(format!(
            "{entry:?}: {value:?} is not a label value (up to 63 alphanumerics, '-', '_' or '.', \
             starting and ending alphanumeric)"
        ));
    }
    None
}

/// The problems of one config spec and its annotations, each naming its field under `at`.
pub fn spec_problems(
    spec: &OpenshiftAssistedConfigSpec,
    annotations: Option<&serde_json::Map<String, Value>>,
    at: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(registration) = &spec.node_registration {
        for (i, entry) in registration.kubelet_extra_labels.iter().enumerate() {
            if let Some(p) = kubelet_extra_label_problem(entry) {
                out.push(format!(
                    "{at}.nodeRegistration.kubeletExtraLabels[{i}]: {p}"
                ));
            }
        }
    }
    if let Some(raw) = annotations
        .and_then(|a| a.get(IGNITION_OVERRIDE_ANNOTATION))
        .and_then(Value::as_str)
        && let Err(e) = check_override(raw)
    {
        // The error names the annotation already.
        out.push(e.to_string());
    }
    out
}

/// The admission decision for a config or template request: the warnings, or why it is refused.
pub fn review(request: &Value) -> Result<Vec<String>, Refusal> {
    let object = &request["object"];
    let kind = object["kind"].as_str().unwrap_or_default();
    let (spec, annotations, at) = match kind {
        "OpenshiftAssistedConfig" => (&object["spec"], &object["metadata"]["annotations"], "spec"),
        "OpenshiftAssistedConfigTemplate" => (
            &object["spec"]["template"]["spec"],
            &object["spec"]["template"]["metadata"]["annotations"],
            "spec.template.spec",
        ),
        other => return Err(Refusal::because(format!("unexpected kind {other:?}"))),
    };
    let spec: OpenshiftAssistedConfigSpec = serde_json::from_value(spec.clone())
        .map_err(|e| Refusal::because(format!("{at} does not parse: {e}")))?;
    manager::webhook::decision(spec_problems(&spec, annotations.as_object(), at))
}

/// Why the `ignition-override` annotation is not a usable Ignition config.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("annotation {annotation} is not a usable Ignition config: {detail}")]
pub struct InvalidOverride {
    pub annotation: &'static str,
    pub detail: String,
}

/// An [`InvalidOverride`] of the `ignition-override` annotation.
pub fn invalid_override(detail: impl Into<String>) -> InvalidOverride {
    InvalidOverride {
        annotation: IGNITION_OVERRIDE_ANNOTATION,
        detail: detail.into(),
    }
}

/// Whether `raw`, the `ignition-override` annotation's value, is an overlay the install can
/// merge (what admission checks; the error says what is wrong).
pub fn check_override(raw: &str) -> Result<(), InvalidOverride> {
    let annotations = BTreeMap::from([(IGNITION_OVERRIDE_ANNOTATION.to_string(), raw.to_string())]);
    parse_override(&annotations).map(|_| ())
}

/// The user's overlay: the annotation parsed, when present and not blank. It must be a JSON
/// object whose `ignition.version` is a 3.x spec (the host's ignition is spec 3).
pub struct IgnitionOverride {
    pub config: Map<String, Value>,
    pub version: String,
    pub version_numbers: (u32, u32, u32),
}

/// The `ignition-override` annotation among `annotations`, parsed; `None` when it is absent or
/// blank.
pub fn parse_override(
    annotations: &BTreeMap<String, String>,
) -> Result<Option<IgnitionOverride>, InvalidOverride> {
    let Some(raw) = annotations
        .get(IGNITION_OVERRIDE_ANNOTATION)
        .filter(|raw| !raw.trim().is_empty())
    else {
        return Ok(None);
    };
    let config = match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(config)) => config,
        Ok(_) => return Err(invalid_override("not a JSON object")),
        Err(e) => return Err(invalid_override(format!("not JSON: {e}"))),
    };
    let version = config
        .get("ignition")
        .and_then(|i| i.get("version"))
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_override("ignition.version is missing"))?
        .to_string();
    let version_numbers = spec_version(&version)
        .filter(|(major, _, _)| *major == 3)
        .ok_or_else(|| {
            invalid_override(format!(
                "ignition.version {version:?} is not a 3.x spec version"
            ))
        })?;
    Ok(Some(IgnitionOverride {
        config,
        version,
        version_numbers,
    }))
}

/// `X.Y.Z`, optionally with a `-suffix` (`3.5.0-experimental`), as numbers.
fn spec_version(text: &str) -> Option<(u32, u32, u32)> {
    let numbers = text.split_once('-').map_or(text, |(numbers, _)| numbers);
    let mut parts = numbers.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => {
            Some((major, minor, patch))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn label_entries_follow_kubernetes_rules_and_leave_variables_to_the_host() {
        // (entry, refused with this in the message)
        let rows = [
            ("node-role.kubernetes.io/infra=", None),
            ("metal3.io/uuid=$METADATA_UUID", None),
            ("rack=\"r1\"", None),
            ("zone = a", None),
            ("topology.example.com/rack=${METADATA_NAME}-x", None),
            ("no-equals-sign", Some("is not key=value")),
            ("=value", Some("is not a label key")),
            ("Bad Key=v", Some("is not a label key")),
            ("UPPER.example.com/k=v", Some("is not a label key")),
            ("-leading=v", Some("is not a label key")),
            ("k=has space", Some("is not a label value")),
            ("k=-leading", Some("is not a label value")),
        ];
        for (entry, refused) in rows {
            let got = kubelet_extra_label_problem(entry);
            match refused {
                None => assert_eq!(got, None, "{entry}"),
                Some(why) => assert!(
                    got.as_deref().is_some_and(|p| p.contains(why)),
                    "{entry}: {got:?}"
                ),
            }
        }
        let long = format!("k={}", "v".repeat(64));
        assert!(kubelet_extra_label_problem(&long).is_some());
    }

    #[test]
    fn spec_versions() {
        assert_eq!(spec_version("3.2.0"), Some((3, 2, 0)));
        assert_eq!(spec_version("3.5.0-experimental"), Some((3, 5, 0)));
        assert_eq!(spec_version("3.2"), None);
        assert_eq!(spec_version("3.2.0.1"), None);
        assert_eq!(spec_version(""), None);
    }

    fn request(object: Value) -> Value {
        json!({"uid": "u", "object": object})
    }

    #[test]
    fn configs_and_templates_are_refused_naming_the_field() {
        let config = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2",
            "kind": "OpenshiftAssistedConfig",
            "metadata": {"name": "c", "annotations": {IGNITION_OVERRIDE_ANNOTATION: "{\"ignition\":{\"version\":\"2.2.0\"}}"}},
            "spec": {"nodeRegistration": {"kubeletExtraLabels": ["ok=yes", "bad"]}},
        });
        let e = review(&request(config)).unwrap_err().to_string();
        assert!(
            e.contains("spec.nodeRegistration.kubeletExtraLabels[1]: \"bad\" is not key=value"),
            "{e}"
        );
        assert!(
            e.contains(IGNITION_OVERRIDE_ANNOTATION) && e.contains("2.2.0"),
            "{e}"
        );

        let template = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2",
            "kind": "OpenshiftAssistedConfigTemplate",
            "metadata": {"name": "t"},
            "spec": {"template": {
                "metadata": {"annotations": {IGNITION_OVERRIDE_ANNOTATION: "not json"}},
                "spec": {"nodeRegistration": {"kubeletExtraLabels": ["a=b c"]}},
            }},
        });
        let e = review(&request(template)).unwrap_err().to_string();
        assert!(
            e.contains("spec.template.spec.nodeRegistration.kubeletExtraLabels[0]")
                && e.contains("not JSON"),
            "{e}"
        );

        let fine = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2",
            "kind": "OpenshiftAssistedConfig",
            "metadata": {"name": "c", "annotations": {IGNITION_OVERRIDE_ANNOTATION: "{\"ignition\":{\"version\":\"3.2.0\"}}"}},
            "spec": {"nodeRegistration": {"kubeletExtraLabels": ["metal3.io/uuid=$METADATA_UUID"]}},
        });
        assert_eq!(review(&request(fine)), Ok(Vec::new()));
    }
}

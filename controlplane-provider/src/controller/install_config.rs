//! The install-config override a control plane hands the assisted installer (the
//! AgentClusterInstall annotation `agent-install.openshift.io/install-config-overrides`): the
//! cluster capabilities CAPOA's ClusterDeployment controller computes, merged over the user's
//! `controlplane.cluster.x-k8s.io/install-config-override` annotation. Pure.

use assisted_api::agentclusterinstall::PlatformType;
use provider_api::controlplane::api::{
    Capabilities, INSTALL_CONFIG_OVERRIDE_ANNOTATION, OpenshiftAssistedControlPlane,
};
use serde_json::{Map, Value};
use thiserror::Error;

use super::hive::platform_type;

/// Capabilities a bare-metal cluster with baseline `None` still needs (CAPOA's list): the
/// bare-metal operator, console, ingress, OLM and the rest of a usable cluster.
pub const BAREMETAL_DEFAULT_CAPABILITIES: [&str; 8] = [
    "baremetal",
    "Console",
    "Insights",
    "OperatorLifecycleManager",
    "Ingress",
    "marketplace",
    "NodeTuning",
    "DeploymentConfig",
];

/// Dropped on bare metal: Machines there are CAPI's, the spoke must not run its own Machine API.
const MACHINE_API: &str = "MachineAPI";

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum InstallConfigError {
    #[error(
        "spec.config.capabilities.baselineCapability {value:?} is not valid: use None, vCurrent or v4.N (e.g. v4.20)"
    )]
    InvalidBaselineCapability { value: String },
    #[error(
        "annotation {annotation} must hold a JSON object merged into the install-config, e.g. {{\"networking\":{{\"networkType\":\"OVNKubernetes\"}}}}: {reason}"
    )]
    InvalidOverrideAnnotation {
        annotation: &'static str,
        reason: String,
    },
}

/// The JSON for the AgentClusterInstall's install-config-overrides annotation, or None when
/// there is nothing to override. The user's annotation is merged at the top level only, and
/// the computed `capabilities` replaces the user's (as CAPOA). Keys are sorted at every level,
/// so the same inputs always give the same string (no needless ACI updates).
///
/// Unlike CAPOA, an annotation that is not a JSON object is always an error; CAPOA passes it
/// through unchecked when no capabilities are computed.
pub fn install_config_override(
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<Option<String>, InstallConfigError> {
    let capabilities = oacp
        .spec
        .config
        .as_ref()
        .and_then(|c| c.capabilities.as_ref());
    let bare_metal = platform_type(oacp) == PlatformType::BareMetal;
    let annotation = oacp
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(INSTALL_CONFIG_OVERRIDE_ANNOTATION))
        .map(String::as_str);
    let os_image_stream = oacp
        .spec
        .config
        .as_ref()
        .and_then(|c| c.image_mode.as_ref())
        .and_then(|m| m.os_image_stream.as_deref());
    merge(
        annotation,
        capabilities_override(capabilities, bare_metal)?,
        os_image_stream,
    )
}

/// The `capabilities` section, or None when CAPOA adds none: no user capabilities on a
/// platform other than bare metal.
fn capabilities_override(
    capabilities: Option<&Capabilities>,
    bare_metal: bool,
) -> Result<Option<Value>, InstallConfigError> {
    let baseline = capabilities
        .and_then(|c| c.baseline_capability.as_deref())
        .filter(|b| !b.is_empty());
    let requested = capabilities.map_or(&[][..], |c| &c.additional_enabled_capabilities[..]);
    if baseline.is_none() && requested.is_empty() && !bare_metal {
        return Ok(None);
    }

    let baseline = match baseline {
        None if bare_metal => "None",
        None => "vCurrent",
        Some(b) if is_valid_baseline(b) => b,
        Some(b) => {
            return Err(InstallConfigError::InvalidBaselineCapability {
                value: b.to_string(),
            });
        }
    };

    let mut additional: Vec<&str> = if bare_metal {
        BAREMETAL_DEFAULT_CAPABILITIES.to_vec()
    } else {
        Vec::new()
    };
    for capability in requested.iter().map(|c| c.trim()) {
        let dropped = capability.is_empty()
            || (bare_metal && capability.eq_ignore_ascii_case(MACHINE_API))
            // Capability names are case-sensitive in the install-config, so duplicates are exact.
            || additional.contains(&capability);
        if !dropped {
            additional.push(capability);
        }
    }

    let mut section = Map::new();
    section.insert("baselineCapabilitySet".into(), baseline.into());
    if !additional.is_empty() {
        section.insert("additionalEnabledCapabilities".into(), additional.into());
    }
    Ok(Some(Value::Object(section)))
}

/// `None`, `vCurrent` or `v4.<digits>`: the baseline sets the installer knows.
fn is_valid_baseline(baseline: &str) -> bool {
    matches!(baseline, "None" | "vCurrent")
        || baseline
            .strip_prefix("v4.")
            .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
}

/// The user's annotation with the computed `capabilities` and `spec.config.imageMode`'s
/// `osImageStream` over it.
fn merge(
    annotation: Option<&str>,
    capabilities: Option<Value>,
    os_image_stream: Option<&str>,
) -> Result<Option<String>, InstallConfigError> {
    let invalid = |reason: String| InstallConfigError::InvalidOverrideAnnotation {
        annotation: INSTALL_CONFIG_OVERRIDE_ANNOTATION,
        reason,
    };
    let mut merged = match annotation.filter(|a| !a.is_empty()) {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(invalid("it is JSON but not an object".into())),
            Err(e) => return Err(invalid(e.to_string())),
        },
    };
    if let Some(capabilities) = capabilities {
        merged.insert("capabilities".into(), capabilities);
    }
    if let Some(stream) = os_image_stream {
        merged.insert("osImageStream".into(), stream.into());
    }
    if merged.is_empty() {
        return Ok(None);
    }
    Ok(Some(sorted(Value::Object(merged)).to_string()))
}

/// Sorts object keys at every level, whatever order `serde_json::Map` keeps.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A control plane with VIPs (bare metal) or without (platform None), capabilities and
    /// the override annotation as given.
    fn oacp(
        bare_metal: bool,
        capabilities: Option<Value>,
        annotation: Option<&str>,
    ) -> OpenshiftAssistedControlPlane {
        let mut value: Value = serde_yaml::from_str(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: test-multinode, namespace: test-capi}
spec:
  distributionVersion: 4.20.0
  replicas: 3
  config:
    baseDomain: lab.home
    pullSecretRef: {name: pull-secret}
  machineTemplate:
    infrastructureRef:
      apiGroup: infrastructure.cluster.x-k8s.io
      kind: Metal3MachineTemplate
      name: test-multinode-controlplane
"#,
        )
        .unwrap();
        if bare_metal {
            value["spec"]["config"]["apiVIPs"] = json!(["192.168.222.40"]);
            value["spec"]["config"]["ingressVIPs"] = json!(["192.168.222.41"]);
        }
        if let Some(c) = capabilities {
            value["spec"]["config"]["capabilities"] = c;
        }
        if let Some(a) = annotation {
            value["metadata"]["annotations"] = json!({ INSTALL_CONFIG_OVERRIDE_ANNOTATION: a });
        }
        serde_json::from_value(value).unwrap()
    }

    fn parsed(out: Option<String>) -> Value {
        serde_json::from_str(&out.expect("an override")).unwrap()
    }

    const BM_DEFAULTS: [&str; 8] = BAREMETAL_DEFAULT_CAPABILITIES;

    #[test]
    fn the_image_mode_stream_is_the_install_configs_over_the_users() {
        let mut cp = oacp(
            false,
            None,
            Some(r#"{"osImageStream":"rhel-9","fips":true}"#),
        );
        cp.spec.config.as_mut().unwrap().image_mode =
            Some(provider_api::controlplane::api::ImageModeSpec {
                os_image_stream: Some("rhel-10".into()),
                pools: Vec::new(),
            });
        assert_eq!(
            parsed(install_config_override(&cp).unwrap()),
            json!({"fips": true, "osImageStream": "rhel-10"})
        );
        // Without a stream the user's stays.
        cp.spec.config.as_mut().unwrap().image_mode = Some(Default::default());
        assert_eq!(
            parsed(install_config_override(&cp).unwrap())["osImageStream"],
            "rhel-9"
        );
    }

    #[test]
    fn capabilities_table() {
        // (bare metal, spec.config.capabilities, expected `capabilities`, or None for no override)
        let rows: Vec<(bool, Option<Value>, Option<Value>)> = vec![
            // Platform None, nothing asked: no override at all.
            (false, None, None),
            (false, Some(json!({})), None),
            (
                false,
                Some(json!({"additionalEnabledCapabilities": []})),
                None,
            ),
            // Bare metal defaults: baseline None plus the bare-metal list.
            (
                true,
                None,
                Some(
                    json!({"baselineCapabilitySet": "None", "additionalEnabledCapabilities": BM_DEFAULTS}),
                ),
            ),
            // Platform None with capabilities: baseline vCurrent, user's list only.
            (
                false,
                Some(json!({"additionalEnabledCapabilities": ["Storage"]})),
                Some(
                    json!({"baselineCapabilitySet": "vCurrent", "additionalEnabledCapabilities": ["Storage"]}),
                ),
            ),
            // Explicit baselines are kept on either platform.
            (
                false,
                Some(json!({"baselineCapability": "None"})),
                Some(json!({"baselineCapabilitySet": "None"})),
            ),
            (
                false,
                Some(json!({"baselineCapability": "v4.14"})),
                Some(json!({"baselineCapabilitySet": "v4.14"})),
            ),
            (
                true,
                Some(json!({"baselineCapability": "vCurrent"})),
                Some(
                    json!({"baselineCapabilitySet": "vCurrent", "additionalEnabledCapabilities": BM_DEFAULTS}),
                ),
            ),
            (
                true,
                Some(json!({"baselineCapability": "v4.20"})),
                Some(
                    json!({"baselineCapabilitySet": "v4.20", "additionalEnabledCapabilities": BM_DEFAULTS}),
                ),
            ),
            // An empty baseline is the default.
            (
                true,
                Some(json!({"baselineCapability": ""})),
                Some(
                    json!({"baselineCapabilitySet": "None", "additionalEnabledCapabilities": BM_DEFAULTS}),
                ),
            ),
            // User entries follow the defaults, deduplicated (exact names), blanks dropped.
            (
                true,
                Some(
                    json!({"additionalEnabledCapabilities": ["Console", "Storage", "Storage", "console", ""]}),
                ),
                Some(json!({
                    "baselineCapabilitySet": "None",
                    "additionalEnabledCapabilities": [
                        "baremetal", "Console", "Insights", "OperatorLifecycleManager", "Ingress",
                        "marketplace", "NodeTuning", "DeploymentConfig", "Storage", "console"
                    ]
                })),
            ),
            (
                false,
                Some(
                    json!({"additionalEnabledCapabilities": ["Storage", "CSISnapshot", "Storage"]}),
                ),
                Some(
                    json!({"baselineCapabilitySet": "vCurrent", "additionalEnabledCapabilities": ["Storage", "CSISnapshot"]}),
                ),
            ),
            // MachineAPI is dropped on bare metal, whatever its case...
            (
                true,
                Some(
                    json!({"additionalEnabledCapabilities": ["MachineAPI", "machineapi", "MACHINEAPI", "Storage"]}),
                ),
                Some(json!({
                    "baselineCapabilitySet": "None",
                    "additionalEnabledCapabilities": [
                        "baremetal", "Console", "Insights", "OperatorLifecycleManager", "Ingress",
                        "marketplace", "NodeTuning", "DeploymentConfig", "Storage"
                    ]
                })),
            ),
            // ...and kept elsewhere.
            (
                false,
                Some(json!({"additionalEnabledCapabilities": ["MachineAPI"]})),
                Some(
                    json!({"baselineCapabilitySet": "vCurrent", "additionalEnabledCapabilities": ["MachineAPI"]}),
                ),
            ),
        ];
        for (bare_metal, capabilities, want) in rows {
            let label = format!("bare_metal={bare_metal} capabilities={capabilities:?}");
            let out = install_config_override(&oacp(bare_metal, capabilities, None))
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            match want {
                None => assert_eq!(out, None, "{label}"),
                Some(want) => assert_eq!(parsed(out), json!({"capabilities": want}), "{label}"),
            }
        }
    }

    #[test]
    fn invalid_baselines_are_errors_naming_the_value() {
        for (bare_metal, baseline) in [
            (true, "v5.0"),
            (false, "v4."),
            (false, "v4.x"),
            (true, "none"),
            (false, "4.14"),
            (false, "vcurrent"),
        ] {
            let err = install_config_override(&oacp(
                bare_metal,
                Some(json!({"baselineCapability": baseline})),
                None,
            ))
            .unwrap_err();
            assert_eq!(
                err,
                InstallConfigError::InvalidBaselineCapability {
                    value: baseline.into()
                }
            );
            assert!(err.to_string().contains(&format!("{baseline:?}")), "{err}");
        }
    }

    #[test]
    fn the_annotation_is_merged_at_the_top_level_and_capabilities_win() {
        let annotation = r#"{"networking":{"networkType":"OVNKubernetes"},"capabilities":{"baselineCapabilitySet":"vCurrent"},"fips":true}"#;
        let out = install_config_override(&oacp(true, None, Some(annotation))).unwrap();
        assert_eq!(
            parsed(out),
            json!({
                "networking": {"networkType": "OVNKubernetes"},
                "fips": true,
                "capabilities": {"baselineCapabilitySet": "None", "additionalEnabledCapabilities": BM_DEFAULTS},
            })
        );
    }

    #[test]
    fn the_annotation_alone_is_passed_on_when_no_capabilities_are_computed() {
        let annotation = r#"{"networking":{"networkType":"OVNKubernetes"},"capabilities":{"baselineCapabilitySet":"v4.16"}}"#;
        let out = install_config_override(&oacp(false, None, Some(annotation))).unwrap();
        assert_eq!(
            parsed(out),
            serde_json::from_str::<Value>(annotation).unwrap()
        );
    }

    #[test]
    fn an_empty_annotation_or_object_is_nothing_to_override() {
        for annotation in ["", "{}"] {
            assert_eq!(
                install_config_override(&oacp(false, None, Some(annotation))),
                Ok(None),
                "{annotation:?}"
            );
        }
    }

    #[test]
    fn an_invalid_annotation_is_an_error_naming_it() {
        for annotation in ["{not json", "[1,2]", "\"text\"", "null", " "] {
            for bare_metal in [false, true] {
                let err =
                    install_config_override(&oacp(bare_metal, None, Some(annotation))).unwrap_err();
                assert!(
                    matches!(&err, InstallConfigError::InvalidOverrideAnnotation { annotation, .. }
                        if *annotation == INSTALL_CONFIG_OVERRIDE_ANNOTATION),
                    "{annotation:?}: {err:?}"
                );
                assert!(
                    err.to_string()
                        .contains("controlplane.cluster.x-k8s.io/install-config-override"),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn output_is_deterministic_with_sorted_keys() {
        let annotation = r#"{"zeta":{"b":1,"a":[{"y":1,"x":2}]},"alpha":true}"#;
        let out = install_config_override(&oacp(
            false,
            Some(json!({"baselineCapability": "vCurrent", "additionalEnabledCapabilities": ["Storage"]})),
            Some(annotation),
        ))
        .unwrap();
        assert_eq!(
            out.as_deref(),
            Some(
                r#"{"alpha":true,"capabilities":{"additionalEnabledCapabilities":["Storage"],"baselineCapabilitySet":"vCurrent"},"zeta":{"a":[{"x":2,"y":1}],"b":1}}"#
            )
        );
        let bm = install_config_override(&oacp(true, None, None)).unwrap();
        assert_eq!(
            bm.as_deref(),
            Some(
                r#"{"capabilities":{"additionalEnabledCapabilities":["baremetal","Console","Insights","OperatorLifecycleManager","Ingress","marketplace","NodeTuning","DeploymentConfig"],"baselineCapabilitySet":"None"}}"#
            )
        );
    }

    #[test]
    fn baselines() {
        for ok in ["None", "vCurrent", "v4.0", "v4.14", "v4.20"] {
            assert!(is_valid_baseline(ok), "{ok}");
        }
        for bad in ["", "v4", "v4.", "v4.1a", "v5.1", "current", " None"] {
            assert!(!is_valid_baseline(bad), "{bad}");
        }
    }
}

//! Fields of an OpenshiftAssistedControlPlane a user can set that take no effect (or only part
//! of it), as rows ([`Row`]), and what the AgentClusterInstall's core
//! conditions say about the fields copied into it. DESIGN §2: a field that is set but not
//! supported yields a condition, never silence.
//!
//! - This control plane's rows, and the config rows under `spec.openshiftAssistedConfigSpec`
//!   (each control-plane Machine's config gets that spec), go on `FieldsSupported` False /
//!   `UnsupportedFields`, present only while one is set; it blocks nothing.
//! - The ACI's `FieldsSupported` is mirrored into that condition; its `SpecSynced` input error
//!   (which keeps the install from starting) shows on `Available` (see `status.rs`).
//!
//! `coverage.rs` checks that every `spec` field is acted on, forwarded or has a row.

use manager::conditions::{self, Desired};
use manager::fields::Row;
use provider_api::bootstrap::unsupported as config_rows;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use super::super::install::Install;

#[cfg(test)]
mod coverage;

/// Where the config rows are reported on a control plane.
pub const CONFIG_SPEC_PARENT: &str = "spec.openshiftAssistedConfigSpec.";

/// This control plane's own rows.
/// (None today: every field of the control plane's own is acted on; the config spec's rows
/// follow.)
pub const CONTROL_PLANE_ROWS: &[Row<OpenshiftAssistedControlPlane>] = &[];

/// The prefix of assisted-core's `FieldsSupported` message (as `conditions::fields_supported`).
const CORE_PREFIX: &str = "Some fields are set that are not supported yet and have no effect: ";

/// The messages for this control plane: its rows, the config rows under
/// `spec.openshiftAssistedConfigSpec`, then the AgentClusterInstall's report.
pub fn messages(oacp: &OpenshiftAssistedControlPlane, install: &Install) -> Vec<String> {
    let mut out = config_rows::unsupported(CONTROL_PLANE_ROWS, oacp, "spec.");
    out.extend(config_rows::unsupported(
        config_rows::CONFIG_ROWS,
        &oacp.spec.openshift_assisted_config_spec,
        CONFIG_SPEC_PARENT,
    ));
    if !install.unsupported_fields.is_empty() {
        let reported = &install.unsupported_fields;
        out.push(format!(
            "AgentClusterInstall {}: {}",
            oacp.metadata.name.as_deref().unwrap_or_default(),
            reported.strip_prefix(CORE_PREFIX).unwrap_or(reported)
        ));
    }
    out
}

/// The control plane's `FieldsSupported` condition; `None` while nothing is set.
pub fn fields_supported(
    oacp: &OpenshiftAssistedControlPlane,
    install: &Install,
) -> Option<Desired> {
    conditions::fields_supported(&messages(oacp, install))
}

/// The AgentClusterInstall fields this control plane sets, by the name the core's messages use,
/// and the field of ours each comes from.
const ACI_FIELDS_FROM: &[(&str, &str)] = &[
    ("mastersSchedulable", "spec.config.mastersSchedulable"),
    ("diskEncryption", "spec.config.diskEncryption"),
    (
        "manifestsConfigMapRef",
        "spec.config.manifestsConfigMapRefs",
    ),
    ("proxy", "spec.config.proxy"),
    ("sshPublicKey", "spec.config.sshAuthorizedKey"),
    ("apiVIP", "spec.config.apiVIPs"),
    ("ingressVIP", "spec.config.ingressVIPs"),
];

/// Names our fields behind the ACI fields an ACI message mentions, e.g.
/// ` (from this control plane's spec.config.mastersSchedulable)`; empty when none.
pub fn our_fields_behind(aci_message: &str) -> String {
    let ours: Vec<&str> = ACI_FIELDS_FROM
        .iter()
        .filter(|(aci, _)| aci_message.contains(aci))
        .map(|(_, ours)| *ours)
        .collect();
    if ours.is_empty() {
        return String::new();
    }
    format!(" (from this control plane's {})", ours.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oacp(extra_spec: &str, status: &str) -> OpenshiftAssistedControlPlane {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: cp, namespace: ns}}
spec:
  distributionVersion: 4.20.0
  machineTemplate:
    infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: t}}
  {extra_spec}
status: {status}
"#
        ))
        .unwrap()
    }

    #[test]
    fn nothing_set_means_no_condition() {
        let plain = oacp(
            "config: {baseDomain: e.com}",
            "{distributionVersion: 4.20.0}",
        );
        assert_eq!(fields_supported(&plain, &Install::default()), None);
    }

    #[test]
    fn the_config_rows_and_the_aci_report_make_one_condition() {
        let o = oacp(
            "config: {baseDomain: e.com, imageRegistryRef: {name: mirrors}}\n  \
             openshiftAssistedConfigSpec: {osImageVersion: '4.19'}",
            "{distributionVersion: 4.19.2}",
        );
        let install = Install {
            unsupported_fields: format!(
                "{CORE_PREFIX}ClusterDeployment spec.manageDNS is not supported yet"
            ),
            ..Default::default()
        };
        let fields: Vec<String> = messages(&o, &install)
            .iter()
            .map(|m| {
                m.split(" is not supported yet")
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        // imageRegistryRef is acted on (registry.rs): not reported.
        assert_eq!(
            fields,
            [
                "spec.openshiftAssistedConfigSpec.osImageVersion",
                "AgentClusterInstall cp: ClusterDeployment spec.manageDNS",
            ]
        );
        let c = fields_supported(&o, &install).unwrap();
        assert_eq!(
            (c.type_, c.reason.as_str()),
            ("FieldsSupported", "UnsupportedFields")
        );
        assert_eq!(c.message.matches(CORE_PREFIX).count(), 1, "{}", c.message);
    }

    #[test]
    fn aci_messages_name_the_control_plane_fields_behind_them() {
        assert_eq!(
            our_fields_behind(
                "The Spec could not be synced due to an input error: spec.mastersSchedulable is \
                 not supported yet: control-plane nodes run workloads only in clusters without \
                 workers"
            ),
            " (from this control plane's spec.config.mastersSchedulable)"
        );
        assert_eq!(
            our_fields_behind("diskEncryption.tangServers must name at least one server"),
            " (from this control plane's spec.config.diskEncryption)"
        );
        assert_eq!(our_fields_behind("pull secret is invalid"), "");
    }
}

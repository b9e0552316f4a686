//! `controlplane.cluster.x-k8s.io/v1alpha2` OpenshiftAssistedControlPlane: CAPOA's previous API
//! version (Cluster API v1beta1 contract), served (deprecated) so that manifests written for it
//! still apply. Only the conversion webhook ([`crate::controlplane::conversion`]) reads these
//! types; the controller works on the hub, [`crate::controlplane::api`].
//!
//! The schema accepts what CAPOA's v1alpha2 CRD accepted: the same fields, enums and limits,
//! printer columns, short names and scale subresource.
// Each `printcolumn(...)` repeats keys such as `type_`; clippy reads that as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use std::fmt;

use assisted_api::agentclusterinstall::DiskEncryption;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bootstrap::api::{ObjectMetaTemplate, V1Beta1Condition};
use crate::bootstrap::v1alpha1::{LocalObjectReference, OpenshiftAssistedConfigSpec, Proxy};

/// The warning kubectl prints for every request at this version.
pub const DEPRECATION_WARNING: &str = "v1alpha2 is deprecated, use v1alpha3";

/// An OpenShift control plane installed on bare metal through the assisted installer (v1alpha2).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "controlplane.cluster.x-k8s.io",
    version = "v1alpha2",
    kind = "OpenshiftAssistedControlPlane",
    plural = "openshiftassistedcontrolplanes",
    shortname = "oacp",
    shortname = "oacps",
    category = "cluster-api",
    namespaced,
    status = "OpenshiftAssistedControlPlaneStatus",
    derive = "PartialEq",
    deprecated = "v1alpha2 is deprecated, use v1alpha3",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",
        description = "Cluster"
    ),
    printcolumn(
        name = "Initialized",
        type_ = "boolean",
        json_path = ".status.initialized",
        description = "This denotes whether or not the control plane has the uploaded kubeadm-config configmap"
    ),
    printcolumn(
        name = "API Server Available",
        type_ = "boolean",
        json_path = ".status.ready",
        description = "KubeadmControlPlane API Server is ready to receive requests"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "Total number of machines desired by this control plane",
        priority = 10
    ),
    printcolumn(
        name = "Replicas",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "Total number of non-terminated machines targeted by this control plane"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "Total number of fully running and ready control plane machines"
    ),
    printcolumn(
        name = "Up-To-Date",
        type_ = "integer",
        json_path = ".status.updatedReplicas",
        description = "Total number of non-terminated machines targeted by this control plane that have the desired template spec"
    ),
    printcolumn(
        name = "Unavailable",
        type_ = "integer",
        json_path = ".status.unavailableReplicas",
        description = "Total number of unavailable machines targeted by this control plane"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of KubeadmControlPlane"
    ),
    printcolumn(
        name = "Distribution Version",
        type_ = "string",
        json_path = ".spec.distributionVersion",
        description = "OpenShift version associated with this control plane"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<OpenshiftAssistedControlPlaneConfigSpec>,
    pub machine_template: OpenshiftAssistedControlPlaneMachineTemplate,
    /// The bootstrap v1alpha1 config spec of every control-plane Machine.
    #[serde(default)]
    pub openshift_assisted_config_spec: OpenshiftAssistedConfigSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The OpenShift version to install.
    pub distribution_version: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneMachineTemplate {
    /// Labels and annotations of the control-plane Machines (Cluster API v1beta1 `ObjectMeta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMetaTemplate>,
    /// The infrastructure template cloned for each control-plane Machine.
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub infrastructure_ref: ObjectReference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_drain_timeout: Option<GoDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_volume_detach_timeout: Option<GoDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_deletion_timeout: Option<GoDuration>,
}

/// Cluster-wide install settings, as v1alpha2 had them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneConfigSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "apiVIPs")]
    #[schemars(length(max = 2))]
    pub api_vips: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "ingressVIPs")]
    #[schemars(length(max = 2))]
    pub ingress_vips: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests_config_map_refs: Vec<ManifestsConfigMapReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_encryption: Option<DiskEncryption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masters_schedulable: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_authorized_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    pub base_domain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_registry_ref: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

/// A ConfigMap of extra install manifests (hiveext's `ManifestsConfigMapReference`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ManifestsConfigMapReference {
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_capability: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_enabled_capabilities: Vec<String>,
}

/// v1alpha2's status: the Cluster API v1beta1 control-plane contract. The counters and flags
/// are always written, as CAPOA did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneStatus {
    /// The ClusterDeployment of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub cluster_deployment_ref: Option<ObjectReference>,
    /// Label selector of the control-plane Machines (for the scale subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    #[serde(default)]
    pub replicas: i32,
    /// Kubernetes version of the control plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The OpenShift version installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution_version: Option<String>,
    #[serde(default)]
    pub updated_replicas: i32,
    #[serde(default)]
    pub ready_replicas: i32,
    #[serde(default)]
    pub unavailable_replicas: i32,
    #[serde(default)]
    pub initialized: bool,
    #[serde(default)]
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
}

/// A `metav1.Duration`: Go's duration syntax (`10s`, `1m30s`, `1h0m0s`, `500ms`, `-2.5h`).
/// Holds the text as written, so it round-trips unchanged; [`GoDuration::parse`] rejects what
/// Go's `time.ParseDuration` rejects (CAPOA's webhook failed on such values too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoDuration {
    text: String,
    nanos: i64,
}

/// Why a duration does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {reason}")]
pub struct DurationError {
    text: String,
    reason: &'static str,
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;

impl GoDuration {
    /// Parses Go's syntax: an optional sign, then one or more decimal numbers each with a unit
    /// (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`); `0` alone needs none.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        let error = |reason| DurationError {
            text: text.to_string(),
            reason,
        };
        let (negative, mut rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        if rest == "0" {
            return Ok(Self {
                text: text.to_string(),
                nanos: 0,
            });
        }
        if rest.is_empty() {
            return Err(error("empty"));
        }
        let mut total: u128 = 0;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let whole: u128 = if digits == 0 {
                0
            } else {
                rest[..digits]
                    .parse()
                    .map_err(|_| error("number too large"))?
            };
            rest = &rest[digits..];
            let mut fraction = "";
            if let Some(after_dot) = rest.strip_prefix('.') {
                let fraction_digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
                fraction = &after_dot[..fraction_digits];
                rest = &after_dot[fraction_digits..];
            }
            if digits == 0 && fraction.is_empty() {
                return Err(error("a number is missing"));
            }
            let unit_len = rest
                .bytes()
                .take_while(|b| *b != b'.' && !b.is_ascii_digit())
                .count();
            if unit_len == 0 {
                return Err(error("a unit is missing"));
            }
            let unit: u128 = match &rest[..unit_len] {
                "ns" => 1,
                "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                "m" => 60_000_000_000,
                "h" => 3_600_000_000_000,
                _ => return Err(error("unknown unit (ns, us, ms, s, m or h)")),
            };
            rest = &rest[unit_len..];
            let mut value = whole.checked_mul(unit).ok_or_else(|| error("too large"))?;
            if !fraction.is_empty() {
                // As Go: the fraction's digits (at most 18 of them count) scaled by the unit.
                let kept = &fraction[..fraction.len().min(18)];
                let numerator: u128 = kept.parse().map_err(|_| error("bad fraction"))?;
                let scale = 10u128.pow(kept.len() as u32);
                value += (numerator as f64 * (unit as f64 / scale as f64)) as u128;
            }
            total = total.checked_add(value).ok_or_else(|| error("too large"))?;
            if total > 1u128 << 63 {
                return Err(error("too large"));
            }
        }
        let nanos = if negative {
            -(total as i128)
        } else {
            total as i128
        };
        let nanos = i64::try_from(nanos).map_err(|_| error("too large"))?;
        Ok(Self {
            text: text.to_string(),
            nanos,
        })
    }

    /// Whole seconds as Go prints them (`Duration.String()`): `0s`, `10s`, `1m30s`, `1h0m0s`.
    pub fn from_seconds(seconds: i32) -> Self {
        let magnitude = seconds.unsigned_abs();
        let (hours, minutes, secs) = (magnitude / 3600, magnitude / 60 % 60, magnitude % 60);
        let sign = if seconds < 0 { "-" } else { "" };
        let text = if hours > 0 {
            format!("{sign}{hours}h{minutes}m{secs}s")
        } else if minutes > 0 {
            format!("{sign}{minutes}m{secs}s")
        } else {
            format!("{sign}{secs}s")
        };
        Self {
            text,
            nanos: i64::from(seconds) * NANOS_PER_SECOND,
        }
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn nanos(&self) -> i64 {
        self.nanos
    }

    /// Whole seconds, truncated toward zero and clamped to `i32`, as CAPOA's
    /// `int32(d.Seconds())` for the values that fit.
    pub fn seconds(&self) -> i32 {
        let seconds = self.nanos / NANOS_PER_SECOND;
        seconds.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    }
}

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for GoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GoDuration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration in Go's syntax, e.g. 10s, 1m30s or 1h."
        })
    }

    fn inline_schema() -> bool {
        true
    }
}

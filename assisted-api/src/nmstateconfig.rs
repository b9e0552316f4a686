//! `agent-install.openshift.io/v1beta1` NMStateConfig: static network configuration for hosts.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::preserve_unknown_object;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "agent-install.openshift.io",
    version = "v1beta1",
    kind = "NMStateConfig",
    plural = "nmstateconfigs",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct NMStateConfigSpec {
    /// Logical interface names of `config` and the MAC addresses they map to on the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    /// Raw nmstate configuration (the YAML document, stored as an object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_object")]
    pub config: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    /// Interface name used in the nmstate configuration.
    pub name: String,
    /// MAC address of the host's NIC that takes this name.
    #[schemars(regex(pattern = r"^([0-9A-Fa-f]{2}[:]){5}([0-9A-Fa-f]{2})$"))]
    pub mac_address: String,
}

//! The host inventory as the Agent shows it (pure): the inventory fields and the labels
//! derived from them.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use manager::names::sanitized_label_value;

use crate::api::agent;
use crate::api::agent::HostInventory;
use crate::domain::*;

/// snake_case REST inventory keys → the Agent CR's camelCase keys (with upstream's spellings).
fn camel_key(k: &str) -> String {
    match k {
        "ipv4_addresses" => return "ipV4Addresses".into(),
        "ipv6_addresses" => return "ipV6Addresses".into(),
        "by_id" => return "byID".into(),
        "bmc_v6address" => return "bmcV6Address".into(),
        "frequency" => return "clockMegahertz".into(),
        _ => {}
    }
    let mut out = String::with_capacity(k.len());
    let mut up = false;
    for c in k.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn camelize(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.into_iter()
                .map(|(k, v)| (camel_key(&k), camelize(v)))
                .collect(),
        ),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(camelize).collect())
        }
        other => other,
    }
}

/// The REST inventory in the Agent CR's shape; fields the CR does not have are dropped.
pub fn agent_inventory(inv: &Inventory, report_time: Option<Timestamp>) -> HostInventory {
    let mut v = camelize(serde_json::to_value(inv).unwrap_or_default());
    // The CR's clockMegahertz is an integer, the REST API's frequency a float (truncated, as
    // Go's int conversion does).
    if let Some(mhz) = v.pointer_mut("/cpu/clockMegahertz")
        && let Some(f) = mhz.as_f64()
    {
        *mhz = serde_json::json!(f as i64);
    }
    let mut out: HostInventory =
        serde_json::from_value(v.clone()).unwrap_or_else(|_| inventory_field_by_field(v));
    out.report_time = report_time.map(Time);
    out
}

/// Keeps every top-level part of the inventory that fits the CR, so one odd field never
/// empties the whole inventory (the bootstrap provider matches Agents by its MACs).
fn inventory_field_by_field(v: serde_json::Value) -> HostInventory {
    let mut kept = serde_json::Map::new();
    if let serde_json::Value::Object(fields) = v {
        for (key, value) in fields {
            let mut trial = kept.clone();
            trial.insert(key.clone(), value);
            if serde_json::from_value::<HostInventory>(serde_json::Value::Object(trial.clone()))
                .is_ok()
            {
                kept = trial;
            } else {
                tracing::warn!(field = %key, "inventory field does not fit the Agent CR; left out");
            }
        }
    }
    serde_json::from_value(serde_json::Value::Object(kept)).unwrap_or_default()
}

pub(super) fn agent_role(r: HostRole) -> agent::HostRole {
    match r {
        HostRole::Master => agent::HostRole::Master,
        HostRole::Worker => agent::HostRole::Worker,
        HostRole::Arbiter => agent::HostRole::Arbiter,
        HostRole::Bootstrap => agent::HostRole::Master,
        HostRole::AutoAssign => agent::HostRole::AutoAssign,
    }
}

/// Labels derived from the inventory (upstream's `inventory.agent-install.openshift.io/*`).
pub fn inventory_labels(inv: &Inventory) -> BTreeMap<String, String> {
    const P: &str = "inventory.agent-install.openshift.io/";
    let non_rotational = inv
        .disks
        .iter()
        .any(|d| d.drive_type.eq_ignore_ascii_case("SSD"));
    let virt = inv.cpu.flags.iter().any(|f| f == "vmx" || f == "svm");
    BTreeMap::from([
        (
            format!("{P}storage-hasnonrotationaldisk"),
            non_rotational.to_string(),
        ),
        (
            format!("{P}cpu-architecture"),
            sanitized_label_value(&inv.cpu.architecture),
        ),
        (format!("{P}cpu-virtenabled"), virt.to_string()),
        (
            format!("{P}host-manufacturer"),
            sanitized_label_value(&inv.system_vendor.manufacturer),
        ),
        (
            format!("{P}host-productname"),
            sanitized_label_value(&inv.system_vendor.product_name),
        ),
        (
            format!("{P}host-isvirtual"),
            inv.system_vendor.is_virtual.to_string(),
        ),
    ])
}

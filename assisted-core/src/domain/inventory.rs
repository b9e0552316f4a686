//! Agent-reported data: the hardware inventory and the step-reply payloads.
//!
//! Parsing is lenient by design: the agent may truncate documents, and a malformed or absurd
//! field must become a failed validation, never a panic or a rejected host. Every field defaults,
//! and a field of the wrong type falls back to its default instead of failing the document.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

/// Deserializes a field through `serde_json::Value`, falling back to the default on a type error.
fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// Like [`lenient`] for lists, dropping only the elements that do not parse.
fn lenient_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v {
        serde_json::Value::Array(items) => items
            .into_iter()
            .filter_map(|i| serde_json::from_value(i).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// How much of the inventory the agent had to drop to fit the size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Truncation {
    #[default]
    #[serde(rename = "none")]
    None,
    #[serde(rename = "partial")]
    Partial,
    #[serde(rename = "full")]
    Full,
}

impl Truncation {
    fn from_value(v: &serde_json::Value) -> Truncation {
        let s = match v {
            serde_json::Value::String(s) => s.as_str(),
            serde_json::Value::Object(o) => o
                .get("truncated")
                .or_else(|| o.get("status"))
                .and_then(|x| x.as_str())
                .unwrap_or(""),
            serde_json::Value::Bool(true) => "partial",
            _ => "",
        };
        match s.to_ascii_lowercase().as_str() {
            "full" | "fully" | "fully-truncated" => Truncation::Full,
            "partial" | "partially" | "partially-truncated" => Truncation::Partial,
            _ => Truncation::None,
        }
    }
}

/// The host hardware inventory (snake_case, as the agent posts it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Inventory {
    #[serde(deserialize_with = "lenient")]
    pub hostname: String,
    #[serde(deserialize_with = "lenient")]
    pub bmc_address: String,
    #[serde(deserialize_with = "lenient")]
    pub bmc_v6address: String,
    #[serde(deserialize_with = "lenient_vec")]
    pub interfaces: Vec<Interface>,
    #[serde(deserialize_with = "lenient_vec")]
    pub disks: Vec<Disk>,
    #[serde(deserialize_with = "lenient")]
    pub boot: Boot,
    #[serde(deserialize_with = "lenient")]
    pub system_vendor: SystemVendor,
    #[serde(deserialize_with = "lenient")]
    pub memory: Memory,
    #[serde(deserialize_with = "lenient")]
    pub cpu: Cpu,
    #[serde(deserialize_with = "lenient_vec")]
    pub gpus: Vec<serde_json::Value>,
    #[serde(deserialize_with = "lenient_vec")]
    pub routes: Vec<Route>,
    #[serde(deserialize_with = "lenient")]
    pub tpm_version: String,
    /// Set by [`Inventory::parse`]; any agent-side truncation marker is folded into it.
    #[serde(skip_deserializing)]
    pub truncation: Truncation,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Interface {
    #[serde(deserialize_with = "lenient")]
    pub name: String,
    #[serde(deserialize_with = "lenient")]
    pub mac_address: String,
    #[serde(deserialize_with = "lenient")]
    pub ipv4_addresses: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub ipv6_addresses: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub mtu: i64,
    #[serde(deserialize_with = "lenient")]
    pub speed_mbps: i64,
    #[serde(deserialize_with = "lenient")]
    pub has_carrier: bool,
    #[serde(deserialize_with = "lenient")]
    pub vendor: String,
    #[serde(deserialize_with = "lenient")]
    pub product: String,
    #[serde(deserialize_with = "lenient")]
    pub biosdevname: String,
    #[serde(deserialize_with = "lenient")]
    pub client_id: String,
    #[serde(deserialize_with = "lenient")]
    pub flags: Vec<String>,
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub kind: String,
}

impl Interface {
    /// All IPv4 and IPv6 addresses in CIDR notation.
    pub fn addresses(&self) -> impl Iterator<Item = &str> {
        self.ipv4_addresses
            .iter()
            .chain(self.ipv6_addresses.iter())
            .map(String::as_str)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Disk {
    #[serde(deserialize_with = "lenient")]
    pub id: String,
    #[serde(deserialize_with = "lenient")]
    pub name: String,
    #[serde(deserialize_with = "lenient")]
    pub path: String,
    #[serde(deserialize_with = "lenient")]
    pub by_id: String,
    #[serde(deserialize_with = "lenient")]
    pub by_path: String,
    #[serde(deserialize_with = "lenient")]
    pub drive_type: String,
    /// Negative or non-numeric sizes read as 0, which makes the disk ineligible.
    #[serde(deserialize_with = "lenient")]
    pub size_bytes: u64,
    #[serde(deserialize_with = "lenient")]
    pub bootable: bool,
    #[serde(deserialize_with = "lenient")]
    pub hctl: String,
    #[serde(deserialize_with = "lenient")]
    pub wwn: String,
    #[serde(deserialize_with = "lenient")]
    pub serial: String,
    #[serde(deserialize_with = "lenient")]
    pub model: String,
    #[serde(deserialize_with = "lenient")]
    pub vendor: String,
    #[serde(deserialize_with = "lenient")]
    pub holders: String,
    #[serde(deserialize_with = "lenient")]
    pub iscsi: Option<Iscsi>,
    #[serde(deserialize_with = "lenient")]
    pub installation_eligibility: InstallationEligibility,
    #[serde(deserialize_with = "lenient")]
    pub io_perf: IoPerf,
}

impl Disk {
    /// The stable path the installer should use.
    pub fn install_path(&self) -> &str {
        if !self.by_id.is_empty() {
            &self.by_id
        } else if !self.path.is_empty() {
            &self.path
        } else {
            &self.by_path
        }
    }

    /// The id a user or the service selects the disk by.
    pub fn key(&self) -> &str {
        if !self.id.is_empty() {
            &self.id
        } else {
            self.install_path()
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Iscsi {
    #[serde(deserialize_with = "lenient")]
    pub host_ip_address: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InstallationEligibility {
    #[serde(deserialize_with = "lenient")]
    pub eligible: bool,
    #[serde(deserialize_with = "lenient")]
    pub not_eligible_reasons: Vec<String>,
}

impl Default for InstallationEligibility {
    /// Absent eligibility means the agent made no objection.
    fn default() -> Self {
        InstallationEligibility {
            eligible: true,
            not_eligible_reasons: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoPerf {
    #[serde(deserialize_with = "lenient")]
    pub sync_duration: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Boot {
    #[serde(deserialize_with = "lenient")]
    pub current_boot_mode: String,
    #[serde(deserialize_with = "lenient")]
    pub pxe_interface: String,
    #[serde(deserialize_with = "lenient")]
    pub device_type: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SystemVendor {
    #[serde(deserialize_with = "lenient")]
    pub manufacturer: String,
    #[serde(deserialize_with = "lenient")]
    pub product_name: String,
    #[serde(deserialize_with = "lenient")]
    pub serial_number: String,
    #[serde(rename = "virtual", deserialize_with = "lenient")]
    pub is_virtual: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    #[serde(deserialize_with = "lenient")]
    pub physical_bytes: u64,
    #[serde(deserialize_with = "lenient")]
    pub usable_bytes: u64,
    #[serde(deserialize_with = "lenient")]
    pub physical_bytes_method: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    /// Core count; negative or fractional values read as 0.
    #[serde(deserialize_with = "lenient")]
    pub count: u32,
    #[serde(deserialize_with = "lenient")]
    pub frequency: f64,
    #[serde(deserialize_with = "lenient")]
    pub flags: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub model_name: String,
    #[serde(deserialize_with = "lenient")]
    pub architecture: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Route {
    #[serde(deserialize_with = "lenient")]
    pub interface: String,
    #[serde(deserialize_with = "lenient")]
    pub gateway: String,
    #[serde(deserialize_with = "lenient")]
    pub destination: String,
    #[serde(deserialize_with = "lenient")]
    pub family: i64,
    #[serde(deserialize_with = "lenient")]
    pub metric: i64,
}

impl Route {
    pub fn is_default(&self) -> bool {
        matches!(
            self.destination.as_str(),
            "0.0.0.0" | "::" | "0.0.0.0/0" | "::/0"
        ) && !self.gateway.is_empty()
    }
}

/// Upper bound on an accepted inventory document; larger ones are treated as fully truncated.
pub const MAX_INVENTORY_BYTES: usize = 4 << 20;

impl Inventory {
    /// Parses an inventory document. Never fails: an unparseable or oversized document yields an
    /// empty inventory marked fully truncated, so validations explain what is wrong.
    pub fn parse(bytes: &[u8]) -> Inventory {
        if bytes.len() > MAX_INVENTORY_BYTES {
            return Inventory::fully_truncated();
        }
        let value: serde_json::Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(_) => return Inventory::fully_truncated(),
        };
        if !value.is_object() {
            return Inventory::fully_truncated();
        }
        let truncation = value
            .get("truncation")
            .or_else(|| value.get("truncated"))
            .map(Truncation::from_value)
            .unwrap_or_default();
        let mut inv: Inventory = serde_json::from_value(value).unwrap_or_default();
        inv.truncation = truncation;
        inv
    }

    fn fully_truncated() -> Inventory {
        Inventory {
            truncation: Truncation::Full,
            ..Inventory::default()
        }
    }

    /// Every interface address in CIDR notation.
    pub fn all_addresses(&self) -> impl Iterator<Item = &str> {
        self.interfaces.iter().flat_map(|i| i.addresses())
    }

    /// True when a MAC (case-insensitive) belongs to this host.
    pub fn has_mac(&self, mac: &str) -> bool {
        self.interfaces
            .iter()
            .any(|i| i.mac_address.eq_ignore_ascii_case(mac))
    }
}

// ---- step-reply payloads -------------------------------------------------------------------

/// `connectivity_report` from a connectivity-check step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectivityReport {
    #[serde(deserialize_with = "lenient_vec")]
    pub remote_hosts: Vec<ConnectivityRemoteHost>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectivityRemoteHost {
    #[serde(deserialize_with = "lenient")]
    pub host_id: String,
    #[serde(deserialize_with = "lenient_vec")]
    pub l2_connectivity: Vec<L2Connectivity>,
    #[serde(deserialize_with = "lenient_vec")]
    pub l3_connectivity: Vec<L3Connectivity>,
    #[serde(deserialize_with = "lenient_vec")]
    pub mtu_report: Vec<MtuReport>,
}

impl ConnectivityRemoteHost {
    pub fn l3_ok(&self) -> bool {
        self.l3_connectivity.iter().any(|c| c.successful)
    }
    pub fn l2_ok(&self) -> bool {
        self.l2_connectivity.iter().any(|c| c.successful)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct L2Connectivity {
    #[serde(deserialize_with = "lenient")]
    pub outgoing_ip_address: String,
    /// The local NIC the ARP request left from.
    #[serde(deserialize_with = "lenient")]
    pub outgoing_nic: String,
    #[serde(deserialize_with = "lenient")]
    pub remote_ip_address: String,
    #[serde(deserialize_with = "lenient")]
    pub remote_mac: String,
    #[serde(deserialize_with = "lenient")]
    pub successful: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct L3Connectivity {
    #[serde(deserialize_with = "lenient")]
    pub remote_ip_address: String,
    #[serde(deserialize_with = "lenient")]
    pub successful: bool,
    #[serde(deserialize_with = "lenient")]
    pub average_rtt_ms: f64,
    #[serde(deserialize_with = "lenient")]
    pub packet_loss_percentage: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MtuReport {
    #[serde(deserialize_with = "lenient")]
    pub remote_ip: String,
    #[serde(deserialize_with = "lenient")]
    pub mtu_successful: bool,
}

/// One chrony source from the ntp-synchronizer reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NtpSource {
    #[serde(deserialize_with = "lenient")]
    pub source_name: String,
    #[serde(deserialize_with = "lenient")]
    pub source_state: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NtpSynchronizationResponse {
    #[serde(deserialize_with = "lenient_vec")]
    pub ntp_sources: Vec<NtpSource>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DomainResolutionResponse {
    #[serde(deserialize_with = "lenient_vec")]
    pub resolutions: Vec<DomainResolution>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DomainResolution {
    #[serde(deserialize_with = "lenient")]
    pub domain_name: String,
    #[serde(deserialize_with = "lenient")]
    pub ipv4_addresses: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub ipv6_addresses: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub cnames: Vec<String>,
}

impl DomainResolution {
    pub fn resolved(&self) -> bool {
        !self.ipv4_addresses.is_empty() || !self.ipv6_addresses.is_empty()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContainerImageAvailabilityResponse {
    #[serde(deserialize_with = "lenient_vec")]
    pub images: Vec<ContainerImageAvailability>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContainerImageAvailability {
    #[serde(deserialize_with = "lenient")]
    pub name: String,
    /// `success` or `failure`.
    #[serde(deserialize_with = "lenient")]
    pub result: String,
    #[serde(deserialize_with = "lenient")]
    pub download_rate: f64,
    #[serde(deserialize_with = "lenient")]
    pub size_bytes: f64,
    #[serde(deserialize_with = "lenient")]
    pub time: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskSpeedCheckResponse {
    #[serde(deserialize_with = "lenient")]
    pub io_sync_duration: i64,
    #[serde(deserialize_with = "lenient")]
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApiVipConnectivityResponse {
    #[serde(deserialize_with = "lenient")]
    pub is_success: bool,
    #[serde(deserialize_with = "lenient")]
    pub url: String,
    #[serde(deserialize_with = "lenient")]
    pub ignition: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TangConnectivityResponse {
    #[serde(deserialize_with = "lenient")]
    pub is_success: bool,
}

/// Parses any lenient payload; malformed JSON yields the default.
pub fn parse_lenient<T: DeserializeOwned + Default>(bytes: &[u8]) -> T {
    serde_json::from_slice(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_inventory_survives_garbage() {
        let inv = Inventory::parse(
            br#"{"hostname":"h1","cpu":{"count":-3},"memory":{"physical_bytes":"lots"},
                "disks":[{"size_bytes":1e30},{"size_bytes":1000,"id":"d2"},7],
                "interfaces":"nope","truncation":"partial"}"#,
        );
        assert_eq!(inv.hostname, "h1");
        assert_eq!(inv.cpu.count, 0);
        assert_eq!(inv.memory.physical_bytes, 0);
        assert_eq!(inv.disks.len(), 2);
        assert_eq!(inv.disks[0].size_bytes, 0);
        assert_eq!(inv.disks[1].size_bytes, 1000);
        assert!(inv.interfaces.is_empty());
        assert_eq!(inv.truncation, Truncation::Partial);
    }

    #[test]
    fn cut_document_is_fully_truncated() {
        let inv = Inventory::parse(br#"{"hostname":"h1","cpu":{"cou"#);
        assert_eq!(inv.truncation, Truncation::Full);
        assert_eq!(Inventory::parse(b"[]").truncation, Truncation::Full);
        assert_eq!(Inventory::parse(b"{}").truncation, Truncation::None);
    }
}

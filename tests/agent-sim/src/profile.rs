//! Simulated host hardware and its inventory document in the upstream (snake_case) shape.
//!
//! Builders derive everything (UUID, MAC, IP, hostname) from a role kind and an index, so the
//! same test always produces the same hosts and hosts of different kinds never collide.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::net::{Ipv4Cidr, NetError, parse_interface_v4};

pub const GIB: u64 = 1 << 30;
/// Disk sizes are decimal, as the agent reports them and the service compares them.
pub const GB: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DriveType {
    #[serde(rename = "SSD")]
    Ssd,
    #[serde(rename = "HDD")]
    Hdd,
    /// The live ISO's optical drive; never eligible.
    #[serde(rename = "ODD")]
    Odd,
}

impl DriveType {
    pub fn as_str(self) -> &'static str {
        match self {
            DriveType::Ssd => "SSD",
            DriveType::Hdd => "HDD",
            DriveType::Odd => "ODD",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskProfile {
    /// Kernel name, e.g. `sda`.
    pub name: String,
    /// `/dev/sda`
    pub path: String,
    /// `/dev/disk/by-id/...`; also the disk id the service selects it by.
    pub by_id: String,
    pub size_bytes: u64,
    pub drive_type: DriveType,
    pub bootable: bool,
    pub eligible: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicProfile {
    pub name: String,
    /// Lowercase, colon separated.
    pub mac: String,
    /// IPv4 addresses in interface notation (`a.b.c.d/len`).
    pub ipv4: Vec<String>,
    /// IPv6 addresses in interface notation.
    pub ipv6: Vec<String>,
    pub speed_mbps: i64,
    pub mtu: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BootMode {
    #[serde(rename = "uefi")]
    Uefi,
    #[serde(rename = "bios")]
    Bios,
}

impl BootMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BootMode::Uefi => "uefi",
            BootMode::Bios => "bios",
        }
    }
}

/// Which builder made a profile; keeps UUID/MAC/IP spaces of the kinds apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProfileKind {
    Master,
    Worker,
    Sno,
    Custom,
}

impl ProfileKind {
    fn tag(self) -> u8 {
        match self {
            ProfileKind::Master => 1,
            ProfileKind::Worker => 2,
            ProfileKind::Sno => 3,
            ProfileKind::Custom => 4,
        }
    }

    /// First host offset in the machine network. Masters .10+, workers .100+, SNO .200+ on a
    /// /24, which leaves the low addresses for gateways and VIPs.
    fn ip_base(self) -> u32 {
        match self {
            ProfileKind::Master => 10,
            ProfileKind::Worker => 100,
            ProfileKind::Sno => 200,
            ProfileKind::Custom => 150,
        }
    }

    fn hostname_prefix(self) -> &'static str {
        match self {
            ProfileKind::Master => "master",
            ProfileKind::Worker => "worker",
            ProfileKind::Sno => "sno",
            ProfileKind::Custom => "host",
        }
    }
}

/// One simulated machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostProfile {
    /// Lowercase RFC 4122 UUID; the agent registers with it as `host_id`.
    pub uuid: String,
    pub hostname: String,
    pub cpu_count: u32,
    pub cpu_architecture: String,
    pub cpu_flags: Vec<String>,
    pub cpu_model: String,
    pub cpu_frequency_mhz: f64,
    pub memory_bytes: u64,
    pub disks: Vec<DiskProfile>,
    pub nics: Vec<NicProfile>,
    pub vendor: String,
    pub product: String,
    pub serial: String,
    pub is_virtual: bool,
    pub boot_mode: BootMode,
    /// Default gateway (IPv4), routed through the first NIC.
    pub gateway: Option<String>,
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A version-4 style UUID (random-looking, but a pure function of kind and index).
pub fn deterministic_uuid(kind: ProfileKind, index: u32) -> String {
    let seed = (u64::from(kind.tag()) << 32) | u64::from(index);
    let hi = splitmix64(seed);
    let lo = splitmix64(hi ^ 0x5eed);
    // Version nibble 4, variant bits 10xx.
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// Locally administered unicast MAC: `02:<kind>:<nic>:<index as 3 bytes>`.
pub fn deterministic_mac(kind: ProfileKind, index: u32, nic: u8) -> String {
    format!(
        "02:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        kind.tag(),
        nic,
        (index >> 16) & 0xff,
        (index >> 8) & 0xff,
        index & 0xff
    )
}

/// True for `xxxxxxxx-xxxx-Mxxx-Nxxx-xxxxxxxxxxxx`, lowercase hex, version 1-5, variant 10xx.
pub fn is_rfc4122_lowercase(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 36 {
        return false;
    }
    for (i, c) in b.iter().enumerate() {
        let dash = matches!(i, 8 | 13 | 18 | 23);
        if dash != (*c == b'-') {
            return false;
        }
        if !dash && !matches!(c, b'0'..=b'9' | b'a'..=b'f') {
            return false;
        }
    }
    matches!(b[14], b'1'..=b'5') && matches!(b[19], b'8' | b'9' | b'a' | b'b')
}

impl HostProfile {
    /// A host of `kind` with profile `index`, the `nth` of its kind in the network.
    fn numbered(
        kind: ProfileKind,
        index: u32,
        nth: u32,
        machine_cidr: &str,
        cpus: u32,
        memory: u64,
        disk_gb: u64,
    ) -> Result<HostProfile, NetError> {
        let net: Ipv4Cidr = machine_cidr.parse()?;
        let offset = kind.ip_base().saturating_add(nth);
        let ip = net.host(offset)?;
        let gateway = net.host(1).ok().map(|g| g.to_string());
        let uuid = deterministic_uuid(kind, index);
        let wwn = format!("0x5000c500{:08x}", splitmix64(u64::from(index)) as u32);
        Ok(HostProfile {
            hostname: format!("{}-{index}", kind.hostname_prefix()),
            cpu_count: cpus,
            cpu_architecture: "x86_64".into(),
            cpu_flags: [
                "fpu", "vme", "pae", "sse4_2", "avx2", "vmx", "aes", "x2apic",
            ]
            .map(String::from)
            .to_vec(),
            cpu_model: "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz".into(),
            cpu_frequency_mhz: 2100.0,
            memory_bytes: memory,
            disks: vec![
                DiskProfile {
                    name: "sda".into(),
                    path: "/dev/sda".into(),
                    by_id: format!("/dev/disk/by-id/wwn-{wwn}"),
                    size_bytes: disk_gb * GB,
                    drive_type: DriveType::Ssd,
                    bootable: false,
                    eligible: true,
                },
                // The discovery ISO shows up as a small optical drive, as on real hosts.
                DiskProfile {
                    name: "sr0".into(),
                    path: "/dev/sr0".into(),
                    by_id: format!("/dev/disk/by-id/ata-QEMU_DVD-ROM_QM{index:05}"),
                    size_bytes: GB,
                    drive_type: DriveType::Odd,
                    bootable: true,
                    eligible: false,
                },
            ],
            nics: vec![NicProfile {
                name: "ens3".into(),
                mac: deterministic_mac(kind, index, 0),
                ipv4: vec![net.with_addr(ip)],
                // Every up NIC has one; the inventory leaves it out, as the agent does.
                ipv6: link_local_v6(&deterministic_mac(kind, index, 0))
                    .into_iter()
                    .collect(),
                speed_mbps: 10_000,
                mtu: 1500,
            }],
            vendor: "Red Hat".into(),
            product: "KVM".into(),
            serial: uuid[24..].to_string(),
            uuid,
            is_virtual: true,
            boot_mode: BootMode::Uefi,
            gateway,
        })
    }

    /// Control-plane sized host: 4 CPUs, 16 GiB, a 120 GB SSD. IP = network + 10 + i.
    pub fn master_like(index: u32, machine_cidr: &str) -> Result<HostProfile, NetError> {
        Self::nth_in_network(ProfileKind::Master, index, index, machine_cidr)
    }

    /// Worker sized host: 2 CPUs, 8 GiB, a 120 GB SSD. IP = network + 100 + i.
    pub fn worker_like(index: u32, machine_cidr: &str) -> Result<HostProfile, NetError> {
        Self::nth_in_network(ProfileKind::Worker, index, index, machine_cidr)
    }

    /// Single-node sized host: 8 CPUs, 16 GiB, a 120 GB SSD. IP = network + 200 + i.
    pub fn sno_like(index: u32, machine_cidr: &str) -> Result<HostProfile, NetError> {
        Self::nth_in_network(ProfileKind::Sno, index, index, machine_cidr)
    }

    /// The host `kind`'s constructor makes for `index` (same UUID, MAC, hostname, hardware),
    /// addressed as the `nth` of its kind in `machine_cidr` instead of the `index`th: for sites
    /// with more hosts than one network holds, each cluster on its own small network.
    pub fn nth_in_network(
        kind: ProfileKind,
        index: u32,
        nth: u32,
        machine_cidr: &str,
    ) -> Result<HostProfile, NetError> {
        let (cpus, memory) = match kind {
            ProfileKind::Master => (4, 16 * GIB),
            ProfileKind::Worker | ProfileKind::Custom => (2, 8 * GIB),
            ProfileKind::Sno => (8, 16 * GIB),
        };
        Self::numbered(kind, index, nth, machine_cidr, cpus, memory, 120)
    }

    /// A starting point for hand-made hosts (undersized hardware, odd disks, ...).
    pub fn custom(index: u32, machine_cidr: &str) -> Result<HostProfile, NetError> {
        Self::nth_in_network(ProfileKind::Custom, index, index, machine_cidr)
    }

    /// The host's IPv4 addresses without prefix length.
    pub fn ipv4_addresses(&self) -> impl Iterator<Item = &str> {
        self.nics
            .iter()
            .flat_map(|n| n.ipv4.iter())
            .map(|a| crate::net::strip_prefix_len(a))
    }

    /// First IPv4 address (no prefix length), if any.
    pub fn primary_ipv4(&self) -> Option<&str> {
        self.ipv4_addresses().next()
    }

    /// True if `addr` (with or without prefix length) or `mac` belongs to this host.
    pub fn owns(&self, addr_or_mac: &str) -> bool {
        let bare = crate::net::strip_prefix_len(addr_or_mac);
        self.nics.iter().any(|n| {
            n.mac.eq_ignore_ascii_case(addr_or_mac)
                || n.ipv4
                    .iter()
                    .chain(n.ipv6.iter())
                    .any(|a| crate::net::strip_prefix_len(a) == bare)
        })
    }

    /// The NIC whose IPv4 network contains `ip`, with that network.
    pub fn nic_for(&self, ip: std::net::Ipv4Addr) -> Option<(&NicProfile, Ipv4Cidr)> {
        self.nics.iter().find_map(|n| {
            n.ipv4
                .iter()
                .filter_map(|a| parse_interface_v4(a))
                .find(|(_, net)| net.contains(ip))
                .map(|(_, net)| (n, net))
        })
    }

    /// Adds a second NIC (`ens4`), cabled but unconfigured: only its link-local address, which
    /// the agent leaves out of the inventory, as on most multi-NIC servers.
    pub fn with_second_nic(mut self) -> HostProfile {
        if let Some(first) = self.nics.first() {
            let mut mac: Vec<String> = first.mac.split(':').map(str::to_string).collect();
            if let Some(nic_byte) = mac.get_mut(2) {
                *nic_byte = "01".into();
            }
            let mac = mac.join(":");
            self.nics.push(NicProfile {
                name: "ens4".into(),
                ipv4: Vec::new(),
                ipv6: link_local_v6(&mac).into_iter().collect(),
                mac,
                speed_mbps: 10_000,
                mtu: 1500,
            });
        }
        self
    }

    /// The installation disk the service is expected to pick (first eligible one).
    pub fn install_disk(&self) -> Option<&DiskProfile> {
        self.disks.iter().find(|d| d.eligible)
    }
}

/// The IPv6 link-local address every up NIC has (EUI-64 from its MAC), in interface notation.
/// The agent leaves link-local addresses out of the inventory and never sends from a NIC that
/// has nothing else.
pub fn link_local_v6(mac: &str) -> Option<String> {
    let b: Vec<u8> = mac
        .split(':')
        .map(|x| u8::from_str_radix(x, 16).ok())
        .collect::<Option<_>>()?;
    let [a, b1, c, d, e, f] = <[u8; 6]>::try_from(b).ok()?;
    let w = |hi: u8, lo: u8| u16::from(hi) << 8 | u16::from(lo);
    let ip = std::net::Ipv6Addr::new(
        0xfe80,
        0,
        0,
        0,
        w(a ^ 2, b1),
        w(c, 0xff),
        w(0xfe, d),
        w(e, f),
    );
    Some(format!("{ip}/64"))
}

/// `/dev/disk/by-path/...` of the `i`-th disk.
pub fn by_path(i: usize) -> String {
    format!("/dev/disk/by-path/pci-0000:00:05.0-scsi-0:0:{i}:0")
}

/// Addresses as the agent lists them: link-local ones (169.254/16, fe80::/10) left out.
fn listed(addrs: &[String]) -> Vec<&str> {
    addrs
        .iter()
        .map(String::as_str)
        .filter(
            |a| match crate::net::strip_prefix_len(a).parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(v4)) => !v4.is_link_local(),
                Ok(std::net::IpAddr::V6(v6)) => v6.segments()[0] & 0xffc0 != 0xfe80,
                Err(_) => true,
            },
        )
        .collect()
}

/// The inventory document (`inventory` model) as the agent posts it in the inventory step.
/// As on a real host, the interfaces start with the loopback `lo` (127.0.0.1/8, ::1/128: the
/// agent does not filter it) and list no link-local address.
pub fn inventory_json(p: &HostProfile) -> Value {
    let lo = json!({
        "name": "lo",
        "mac_address": "",
        "ipv4_addresses": ["127.0.0.1/8"],
        "ipv6_addresses": ["::1/128"],
        "mtu": 65536,
        "speed_mbps": 0,
        "has_carrier": true,
        "vendor": "",
        "product": "",
        "biosdevname": "",
        "client_id": "",
        "flags": ["up", "loopback", "running"],
        "type": "device",
    });
    let nics = p.nics.iter().map(|n| {
        json!({
            "name": n.name,
            "mac_address": n.mac,
            "ipv4_addresses": listed(&n.ipv4),
            "ipv6_addresses": listed(&n.ipv6),
            "mtu": n.mtu,
            "speed_mbps": n.speed_mbps,
            "has_carrier": true,
            "vendor": "0x1af4",
            "product": "0x0001",
            "biosdevname": "",
            "client_id": "",
            "flags": ["up", "broadcast", "multicast"],
            "type": "physical",
        })
    });
    let interfaces: Vec<Value> = std::iter::once(lo).chain(nics).collect();
    let disks: Vec<Value> = p
        .disks
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let reasons: Vec<&str> = if d.eligible {
                Vec::new()
            } else if d.drive_type == DriveType::Odd {
                vec!["Drive type is ODD, it must be one of HDD, SSD."]
            } else {
                vec!["Disk is not eligible for installation"]
            };
            json!({
                "id": d.by_id,
                "name": d.name,
                "path": d.path,
                "by_id": d.by_id,
                "by_path": by_path(i),
                "drive_type": d.drive_type.as_str(),
                "size_bytes": d.size_bytes,
                "bootable": d.bootable,
                "hctl": format!("0:0:{i}:0"),
                "wwn": d.by_id.split_once("wwn-").map(|(_, w)| w).unwrap_or(""),
                "serial": format!("{}-{}", p.serial, d.name),
                "model": "QEMU HARDDISK",
                "vendor": "QEMU",
                "holders": "",
                "smart": "{}",
                "is_installation_media": d.drive_type == DriveType::Odd,
                "installation_eligibility": {
                    "eligible": d.eligible,
                    "not_eligible_reasons": reasons,
                },
            })
        })
        .collect();
    let routes: Vec<Value> = match (&p.gateway, p.nics.first()) {
        (Some(gw), Some(nic)) => vec![json!({
            "interface": nic.name,
            "gateway": gw,
            "destination": "0.0.0.0",
            "family": 2,
            "metric": 100,
        })],
        _ => Vec::new(),
    };
    // The NIC the host booted from; empty when it has none.
    let pxe = p.nics.first().map(|n| n.name.as_str()).unwrap_or("");
    json!({
        "hostname": p.hostname,
        "bmc_address": "0.0.0.0",
        "bmc_v6address": "::/0",
        "interfaces": interfaces,
        "disks": disks,
        "boot": {
            "current_boot_mode": p.boot_mode.as_str(),
            "pxe_interface": pxe,
            "device_type": "persistent",
        },
        "system_vendor": {
            "manufacturer": p.vendor,
            "product_name": p.product,
            "serial_number": p.serial,
            "virtual": p.is_virtual,
        },
        "memory": {
            "physical_bytes": p.memory_bytes,
            "usable_bytes": p.memory_bytes.saturating_sub(p.memory_bytes / 50),
            "physical_bytes_method": "dmidecode",
        },
        "cpu": {
            "count": p.cpu_count,
            "frequency": p.cpu_frequency_mhz,
            "flags": p.cpu_flags,
            "model_name": p.cpu_model,
            "architecture": p.cpu_architecture,
        },
        "gpus": [],
        "routes": routes,
        "tpm_version": "none",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: &str = "192.168.111.0/24";

    #[test]
    fn uuids_are_valid_distinct_and_stable() {
        let mut seen = std::collections::HashSet::new();
        for kind in [ProfileKind::Master, ProfileKind::Worker, ProfileKind::Sno] {
            for i in 0..50 {
                let u = deterministic_uuid(kind, i);
                assert!(is_rfc4122_lowercase(&u), "{u}");
                assert_eq!(u, deterministic_uuid(kind, i));
                assert!(seen.insert(u));
            }
        }
        assert!(!is_rfc4122_lowercase(
            "ABCDEF00-0000-4000-8000-000000000000"
        ));
        assert!(!is_rfc4122_lowercase(
            "abcdef00-0000-0000-8000-000000000000"
        ));
        assert!(!is_rfc4122_lowercase(
            "abcdef00-0000-4000-c000-000000000000"
        ));
    }

    #[test]
    fn a_host_numbered_apart_from_its_index_fits_a_small_network() {
        // Index 9990 is past a /24's addresses; as the first of its kind it is .200.
        let far = HostProfile::nth_in_network(ProfileKind::Sno, 9990, 0, "10.3.231.0/24").unwrap();
        let same = HostProfile::sno_like(9990, "10.0.0.0/8").unwrap();
        assert_eq!(far.primary_ipv4(), Some("10.3.231.200"));
        assert_eq!(far.gateway.as_deref(), Some("10.3.231.1"));
        assert_eq!((&far.uuid, &far.hostname), (&same.uuid, &same.hostname));
        assert_eq!(far.nics[0].mac, same.nics[0].mac);
        assert_eq!(far.cpu_count, same.cpu_count);
        assert!(HostProfile::sno_like(9990, "10.3.231.0/24").is_err());
    }

    #[test]
    fn master_meets_minimums() {
        let m = HostProfile::master_like(2, NET).unwrap();
        assert!(m.cpu_count >= 4);
        assert!(m.memory_bytes >= 16 * GIB);
        let d = m.install_disk().unwrap();
        assert!(d.size_bytes >= 120 * GB);
        assert_eq!(d.drive_type, DriveType::Ssd);
        assert!(m.cpu_flags.iter().any(|f| f == "vmx"));
        assert_eq!(m.hostname, "master-2");
        assert_eq!(m.primary_ipv4(), Some("192.168.111.12"));
        assert_eq!(m.nics[0].ipv4, vec!["192.168.111.12/24"]);
        assert_eq!(m.nics[0].mac, "02:01:00:00:00:02");
        assert_eq!(m.gateway.as_deref(), Some("192.168.111.1"));
    }

    #[test]
    fn worker_and_sno_minimums() {
        let w = HostProfile::worker_like(0, NET).unwrap();
        assert!(w.cpu_count >= 2 && w.memory_bytes >= 8 * GIB);
        assert_eq!(w.primary_ipv4(), Some("192.168.111.100"));
        let s = HostProfile::sno_like(0, NET).unwrap();
        assert!(s.cpu_count >= 8 && s.memory_bytes >= 16 * GIB);
        assert_eq!(s.primary_ipv4(), Some("192.168.111.200"));
    }

    #[test]
    fn kinds_never_collide() {
        let m = HostProfile::master_like(0, NET).unwrap();
        let w = HostProfile::worker_like(0, NET).unwrap();
        assert_ne!(m.uuid, w.uuid);
        assert_ne!(m.nics[0].mac, w.nics[0].mac);
        assert_ne!(m.primary_ipv4(), w.primary_ipv4());
    }

    #[test]
    fn bad_network_is_an_error() {
        assert!(HostProfile::master_like(0, "nope").is_err());
        // Index past the end of a small network.
        assert!(HostProfile::worker_like(0, "10.0.0.0/28").is_err());
    }

    #[test]
    fn owns_by_ip_or_mac() {
        let m = HostProfile::master_like(1, NET).unwrap();
        assert!(m.owns("192.168.111.11"));
        assert!(m.owns("192.168.111.11/24"));
        assert!(m.owns("02:01:00:00:00:01"));
        assert!(m.owns("02:01:00:00:00:01".to_uppercase().as_str()));
        assert!(!m.owns("192.168.111.12"));
    }

    #[test]
    fn inventory_shape() {
        let m = HostProfile::master_like(0, NET).unwrap();
        let inv = inventory_json(&m);
        assert_eq!(inv["hostname"], "master-0");
        assert_eq!(inv["cpu"]["count"], 4);
        assert_eq!(inv["cpu"]["architecture"], "x86_64");
        assert_eq!(inv["memory"]["physical_bytes"], 16 * GIB);
        assert_eq!(inv["interfaces"][0]["name"], "lo");
        assert_eq!(
            inv["interfaces"][0]["ipv4_addresses"],
            json!(["127.0.0.1/8"])
        );
        assert_eq!(inv["interfaces"][0]["ipv6_addresses"], json!(["::1/128"]));
        assert_eq!(inv["interfaces"][1]["mac_address"], "02:01:00:00:00:00");
        assert_eq!(
            inv["interfaces"][1]["ipv4_addresses"][0],
            "192.168.111.10/24"
        );
        assert_eq!(inv["interfaces"][1]["type"], "physical");
        assert_eq!(inv["disks"][0]["drive_type"], "SSD");
        assert_eq!(
            inv["disks"][0]["installation_eligibility"]["eligible"],
            true
        );
        assert_eq!(
            inv["disks"][1]["installation_eligibility"]["eligible"],
            false
        );
        assert_eq!(inv["boot"]["current_boot_mode"], "uefi");
        assert_eq!(inv["system_vendor"]["virtual"], true);
        assert_eq!(inv["routes"][0]["destination"], "0.0.0.0");
        assert_eq!(inv["routes"][0]["gateway"], "192.168.111.1");
        assert!(inv["disks"][0]["wwn"].as_str().unwrap().starts_with("0x"));
    }

    #[test]
    fn second_nic_and_link_local_addresses() {
        let m = HostProfile::master_like(0, NET).unwrap().with_second_nic();
        assert_eq!(m.nics[1].mac, "02:01:01:00:00:00");
        assert_eq!(
            link_local_v6(&m.nics[0].mac).as_deref(),
            Some("fe80::1:ff:fe00:0/64")
        );
        assert_eq!(m.nics[0].ipv6, ["fe80::1:ff:fe00:0/64"]);
        assert_eq!(m.nics[1].ipv6, ["fe80::1:1ff:fe00:0/64"]);
        let mut m = m;
        // The agent lists no link-local address: the second NIC shows up empty.
        m.nics[0].ipv4.push("169.254.10.1/16".into());
        let inv = inventory_json(&m);
        assert_eq!(inv["interfaces"].as_array().unwrap().len(), 3);
        assert_eq!(
            inv["interfaces"][1]["ipv4_addresses"],
            json!(["192.168.111.10/24"])
        );
        assert_eq!(inv["interfaces"][1]["ipv6_addresses"], json!([]));
        assert_eq!(inv["interfaces"][2]["name"], "ens4");
        assert_eq!(inv["interfaces"][2]["ipv4_addresses"], json!([]));
    }
}

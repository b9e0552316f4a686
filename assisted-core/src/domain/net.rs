//! Minimal IP/CIDR arithmetic on std types (no external crate needed for containment/overlap).

use std::net::IpAddr;

/// An IPv4 or IPv6 network, normalised to its network address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    /// Network address as a 128-bit number (IPv4 in the low 32 bits).
    bits: u128,
    prefix: u8,
    v6: bool,
}

impl Cidr {
    /// Parses `addr/prefix`. A bare address is a host route (/32 or /128). Never panics.
    pub fn parse(s: &str) -> Option<Cidr> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
            None => (s, None),
        };
        let ip: IpAddr = addr.parse().ok()?;
        let (raw, v6, max) = match ip {
            IpAddr::V4(v4) => (u32::from(v4) as u128, false, 32u8),
            IpAddr::V6(v6) => (u128::from(v6), true, 128u8),
        };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return None;
        }
        Some(Cidr {
            bits: raw & mask(prefix, max),
            prefix,
            v6,
        })
    }

    /// Parses an interface address such as `192.168.1.10/24` and returns (address, network).
    pub fn parse_interface(s: &str) -> Option<(IpAddr, Cidr)> {
        let addr = s.split('/').next()?.trim().parse::<IpAddr>().ok()?;
        Some((addr, Cidr::parse(s)?))
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    pub fn is_v6(&self) -> bool {
        self.v6
    }

    fn max(&self) -> u8 {
        if self.v6 { 128 } else { 32 }
    }

    /// True when `ip` lies inside this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (ip, self.v6) {
            (IpAddr::V4(v4), false) => (u32::from(v4) as u128) & mask(self.prefix, 32) == self.bits,
            (IpAddr::V6(v6), true) => u128::from(v6) & mask(self.prefix, 128) == self.bits,
            _ => false,
        }
    }

    /// True when the two networks share at least one address.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        if self.v6 != other.v6 {
            return false;
        }
        let p = self.prefix.min(other.prefix);
        let m = mask(p, self.max());
        self.bits & m == other.bits & m
    }

    /// True when `ip` is this network's address or its IPv4 broadcast address.
    pub fn is_network_or_broadcast(&self, ip: IpAddr) -> bool {
        let v = match ip {
            IpAddr::V4(v4) if !self.v6 => u32::from(v4) as u128,
            IpAddr::V6(v6) if self.v6 => u128::from(v6),
            _ => return false,
        };
        if v == self.bits {
            return true;
        }
        !self.v6 && self.prefix < 31 && v == self.bits | (!mask(self.prefix, 32) & 0xffff_ffff)
    }

    /// Number of addresses as a power of two (host bits).
    pub fn host_bits(&self) -> u8 {
        self.max() - self.prefix
    }
}

impl std::fmt::Display for Cidr {
    /// `network/prefix`, e.g. `192.168.111.0/24`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let address: IpAddr = if self.v6 {
            IpAddr::V6(self.bits.into())
        } else {
            IpAddr::V4((self.bits as u32).into())
        };
        write!(f, "{address}/{}", self.prefix)
    }
}

/// The machine network a cluster's API VIP lies in, as upstream's monitor calculates it when
/// the user gave none (`autoAssignMachineNetworkCidr` in assisted-service's cluster manager):
/// the network of the first host interface address whose network contains the first API VIP.
/// `None` when the cluster has a machine network, manages its own networking, has no API VIP,
/// or no host reports an address in the VIP's network yet.
pub fn calculated_machine_network(cluster: &super::snapshot::ClusterSnapshot) -> Option<String> {
    if !cluster.machine_networks.is_empty() || cluster.umn() {
        return None;
    }
    let vip = parse_ip(cluster.api_vips.first()?)?;
    cluster
        .hosts
        .iter()
        .filter_map(|h| h.inventory.as_ref())
        .flat_map(|inv| inv.interfaces.iter())
        .flat_map(|i| i.addresses())
        .filter_map(|a| Cidr::parse_interface(a).map(|(_, net)| net))
        .find(|net| net.contains(vip))
        .map(|net| net.to_string())
}

fn mask(prefix: u8, max: u8) -> u128 {
    if prefix == 0 {
        return 0;
    }
    let all: u128 = if max == 128 {
        u128::MAX
    } else {
        (1u128 << max) - 1
    };
    let host = max - prefix;
    if host >= 128 {
        0
    } else {
        all & !((1u128 << host) - 1)
    }
}

/// Parses an IP address without a prefix, tolerating a `/nn` suffix.
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    s.split('/').next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_contains_overlap() {
        let a = Cidr::parse("192.168.1.0/24").unwrap();
        assert!(a.contains("192.168.1.77".parse().unwrap()));
        assert!(!a.contains("192.168.2.1".parse().unwrap()));
        let b = Cidr::parse("192.168.0.0/16").unwrap();
        assert!(a.overlaps(&b) && b.overlaps(&a));
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(!a.overlaps(&c));
        let v6 = Cidr::parse("fd00::/64").unwrap();
        assert!(v6.contains("fd00::5".parse().unwrap()));
        assert!(!v6.overlaps(&a));
        assert!(a.is_network_or_broadcast("192.168.1.255".parse().unwrap()));
        assert!(a.is_network_or_broadcast("192.168.1.0".parse().unwrap()));
        assert!(!a.is_network_or_broadcast("192.168.1.1".parse().unwrap()));
        assert_eq!(Cidr::parse("0.0.0.0/0").unwrap().host_bits(), 32);
        assert!(Cidr::parse("1.2.3.4/33").is_none());
        assert!(Cidr::parse("garbage").is_none());
        let (ip, net) = Cidr::parse_interface("10.1.2.3/16").unwrap();
        assert!(net.contains(ip));
        assert_eq!(net.to_string(), "10.1.0.0/16");
        assert_eq!(Cidr::parse("fd00::5/64").unwrap().to_string(), "fd00::/64");
    }
}

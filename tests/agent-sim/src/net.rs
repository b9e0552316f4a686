//! Minimal IPv4 CIDR arithmetic: enough to place simulated hosts, VIPs and free addresses.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// Errors from parsing or addressing a machine network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    #[error("invalid IPv4 CIDR {0:?} (expected a.b.c.d/len)")]
    InvalidCidr(String),
    #[error("host offset {offset} does not fit in network {cidr}")]
    OutOfRange { cidr: String, offset: u32 },
}

/// An IPv4 network, normalised to its network address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    network: Ipv4Addr,
    prefix: u8,
}

impl Ipv4Cidr {
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Result<Self, NetError> {
        if prefix > 32 {
            return Err(NetError::InvalidCidr(format!("{addr}/{prefix}")));
        }
        let bits = u32::from(addr) & Self::mask_of(prefix);
        Ok(Self {
            network: Ipv4Addr::from(bits),
            prefix,
        })
    }

    fn mask_of(prefix: u8) -> u32 {
        if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(prefix))
        }
    }

    pub fn network(&self) -> Ipv4Addr {
        self.network
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Number of addresses in the block (including network and broadcast).
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// The address `offset` past the network address, if it is a usable host address
    /// (not the network or broadcast address, for prefixes shorter than /31).
    pub fn host(&self, offset: u32) -> Result<Ipv4Addr, NetError> {
        let usable = if self.prefix >= 31 {
            u64::from(offset) < self.size()
        } else {
            offset >= 1 && u64::from(offset) < self.size() - 1
        };
        if !usable {
            return Err(NetError::OutOfRange {
                cidr: self.to_string(),
                offset,
            });
        }
        Ok(Ipv4Addr::from(u32::from(self.network) + offset))
    }

    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & Self::mask_of(self.prefix) == u32::from(self.network)
    }

    /// Usable host addresses in order (network and broadcast excluded for prefixes < /31).
    pub fn hosts(&self) -> impl Iterator<Item = Ipv4Addr> + '_ {
        let (first, last) = if self.prefix >= 31 {
            (0, self.size())
        } else {
            (1, self.size() - 1)
        };
        let base = u64::from(u32::from(self.network));
        // `last` is at most 2^32, so base + offset stays within u32 for every yielded offset.
        (first..last).map(move |o| Ipv4Addr::from((base + o) as u32))
    }

    /// `addr/prefix` for an address of this network (interface notation).
    pub fn with_addr(&self, addr: Ipv4Addr) -> String {
        format!("{addr}/{}", self.prefix)
    }
}

impl FromStr for Ipv4Cidr {
    type Err = NetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || NetError::InvalidCidr(s.to_string());
        let (a, p) = s.trim().split_once('/').ok_or_else(bad)?;
        let addr: Ipv4Addr = a.parse().map_err(|_| bad())?;
        let prefix: u8 = p.parse().map_err(|_| bad())?;
        Ipv4Cidr::new(addr, prefix).map_err(|_| bad())
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// Splits `a.b.c.d/len` interface notation into the address and its network.
pub fn parse_interface_v4(s: &str) -> Option<(Ipv4Addr, Ipv4Cidr)> {
    let (a, p) = s.trim().split_once('/')?;
    let addr: Ipv4Addr = a.parse().ok()?;
    let prefix: u8 = p.parse().ok()?;
    Some((addr, Ipv4Cidr::new(addr, prefix).ok()?))
}

/// The bare address of `addr` or `addr/len`.
pub fn strip_prefix_len(s: &str) -> &str {
    s.split('/').next().unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_normalise() {
        let c: Ipv4Cidr = "192.168.111.7/24".parse().unwrap();
        assert_eq!(c.to_string(), "192.168.111.0/24");
        assert_eq!(c.size(), 256);
        assert!(c.contains("192.168.111.254".parse().unwrap()));
        assert!(!c.contains("192.168.112.1".parse().unwrap()));
        assert!("192.168.1.0".parse::<Ipv4Cidr>().is_err());
        assert!("192.168.1.0/33".parse::<Ipv4Cidr>().is_err());
        assert!("x/24".parse::<Ipv4Cidr>().is_err());
    }

    #[test]
    fn host_offsets() {
        let c: Ipv4Cidr = "10.0.0.0/29".parse().unwrap();
        assert_eq!(c.host(1).unwrap().to_string(), "10.0.0.1");
        assert_eq!(c.host(6).unwrap().to_string(), "10.0.0.6");
        assert!(c.host(0).is_err());
        assert!(c.host(7).is_err());
        assert_eq!(c.hosts().count(), 6);
        let p2p: Ipv4Cidr = "10.0.0.0/31".parse().unwrap();
        assert_eq!(p2p.hosts().count(), 2);
    }

    #[test]
    fn interface_notation() {
        let (a, n) = parse_interface_v4("192.168.111.20/24").unwrap();
        assert_eq!(a.to_string(), "192.168.111.20");
        assert_eq!(n.to_string(), "192.168.111.0/24");
        assert!(parse_interface_v4("fd00::1/64").is_none());
        assert_eq!(strip_prefix_len("1.2.3.4/24"), "1.2.3.4");
        assert_eq!(strip_prefix_len("1.2.3.4"), "1.2.3.4");
    }
}

//! Command-line values: scenarios and loads.

use std::fmt;
use std::str::FromStr;

/// `CLUSTERSxHOSTS`: that many clusters, each with one InfraEnv and that many hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    pub clusters: usize,
    pub hosts_per_cluster: usize,
}

impl Scenario {
    pub fn hosts(&self) -> usize {
        self.clusters * self.hosts_per_cluster
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (c, h) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("{s:?}: expected CLUSTERSxHOSTS, e.g. 1x1000"))?;
        let num = |v: &str| -> Result<usize, String> {
            v.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{s:?}: {v:?} is not a positive number"))
        };
        Ok(Scenario {
            clusters: num(c)?,
            hosts_per_cluster: num(h)?,
        })
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} × {}", self.clusters, self.hosts_per_cluster)
    }
}

/// `N`: N closed-loop clients; `N/s`: requests started at N per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    Closed(usize),
    Open(f64),
}

impl FromStr for Load {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?}: expected N (closed-loop clients) or N/s (a fixed rate)");
        match s.trim().strip_suffix("/s") {
            Some(rate) => rate
                .parse::<f64>()
                .ok()
                .filter(|r| *r > 0.0)
                .map(Load::Open)
                .ok_or_else(bad),
            None => s
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .map(Load::Closed)
                .ok_or_else(bad),
        }
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Load::Closed(1) => write!(f, "1 client"),
            Load::Closed(n) => write!(f, "{n} clients"),
            Load::Open(r) => write!(f, "open {r}/s"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios() {
        assert_eq!(
            "10x100".parse::<Scenario>(),
            Ok(Scenario {
                clusters: 10,
                hosts_per_cluster: 100
            })
        );
        assert_eq!("1X1000".parse::<Scenario>().unwrap().hosts(), 1000);
        assert!("1000".parse::<Scenario>().is_err());
        assert!("0x10".parse::<Scenario>().is_err());
        assert_eq!(
            "100x10".parse::<Scenario>().unwrap().to_string(),
            "100 × 10"
        );
    }

    #[test]
    fn loads() {
        assert_eq!("8".parse::<Load>(), Ok(Load::Closed(8)));
        assert_eq!("500/s".parse::<Load>(), Ok(Load::Open(500.0)));
        assert!("0".parse::<Load>().is_err());
        assert!("fast".parse::<Load>().is_err());
        assert_eq!(Load::Closed(1).to_string(), "1 client");
        assert_eq!(Load::Open(100.0).to_string(), "open 100/s");
    }
}

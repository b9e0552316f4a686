//! Hardware requirements as versioned data (`default_hw_requirements.json` upstream).
//!
//! A table is a default entry plus `min_version` overrides, applied in ascending order; each
//! override replaces only the role entries it names.

use serde::{Deserialize, Serialize};

/// Minimums for one role.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoleRequirements {
    pub cpu_cores: u32,
    pub ram_mib: u64,
    pub disk_size_gb: u64,
    pub installation_disk_speed_threshold_ms: u64,
    /// Maximum average RTT to same-role peers; `None` = not checked.
    pub network_latency_threshold_ms: Option<f64>,
    /// Maximum packet loss to same-role peers in percent; `None` = not checked.
    pub packet_loss_percentage: Option<f64>,
}

/// Requirements per role for one OpenShift version range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VersionRequirements {
    pub master: RoleRequirements,
    pub worker: RoleRequirements,
    pub arbiter: RoleRequirements,
    pub sno: RoleRequirements,
    pub edge_worker: RoleRequirements,
}

/// Partial override that applies from `min_version` (inclusive) upwards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VersionOverride {
    /// (major, minor)
    pub min_version: (u32, u32),
    pub master: Option<RoleRequirements>,
    pub worker: Option<RoleRequirements>,
    pub arbiter: Option<RoleRequirements>,
    pub sno: Option<RoleRequirements>,
    pub edge_worker: Option<RoleRequirements>,
}

/// The full versioned table.
#[derive(Debug, Clone, PartialEq)]
pub struct HwRequirementsTable {
    pub default: VersionRequirements,
    /// Sorted by `min_version` ascending.
    pub overrides: Vec<VersionOverride>,
}

const fn req(
    cpu: u32,
    ram_mib: u64,
    disk_gb: u64,
    lat: Option<f64>,
    loss: Option<f64>,
) -> RoleRequirements {
    RoleRequirements {
        cpu_cores: cpu,
        ram_mib,
        disk_size_gb: disk_gb,
        installation_disk_speed_threshold_ms: 10,
        network_latency_threshold_ms: lat,
        packet_loss_percentage: loss,
    }
}

/// The upstream defaults (assisted-service's `data/default_hw_requirements.json`).
pub const DEFAULT_REQUIREMENTS: VersionRequirements = VersionRequirements {
    master: req(4, 16384, 100, Some(100.0), Some(0.0)),
    worker: req(2, 8192, 100, Some(1000.0), Some(10.0)),
    arbiter: req(2, 8192, 50, Some(1000.0), Some(0.0)),
    sno: req(8, 16384, 100, None, None),
    edge_worker: req(2, 8192, 15, None, None),
};

impl Default for HwRequirementsTable {
    fn default() -> Self {
        HwRequirementsTable {
            default: DEFAULT_REQUIREMENTS,
            overrides: vec![VersionOverride {
                // OCP 4.22 lowered the single-node CPU minimum from 8 to 4 cores.
                min_version: (4, 22),
                master: None,
                worker: None,
                arbiter: None,
                sno: Some(req(4, 16384, 100, None, None)),
                edge_worker: None,
            }],
        }
    }
}

/// Parses `major.minor` from an OpenShift version such as `4.22.0-ec.1`; `None` if unparseable.
pub fn parse_major_minor(version: &str) -> Option<(u32, u32)> {
    let mut it = version.trim().trim_start_matches('v').split(['.', '-']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

impl HwRequirementsTable {
    /// Requirements for an OpenShift version; an unparseable version gets the default entry.
    pub fn for_version(&self, openshift_version: &str) -> VersionRequirements {
        let mut r = self.default;
        let Some(v) = parse_major_minor(openshift_version) else {
            return r;
        };
        for o in self.overrides.iter().filter(|o| o.min_version <= v) {
            r.master = o.master.unwrap_or(r.master);
            r.worker = o.worker.unwrap_or(r.worker);
            r.arbiter = o.arbiter.unwrap_or(r.arbiter);
            r.sno = o.sno.unwrap_or(r.sno);
            r.edge_worker = o.edge_worker.unwrap_or(r.edge_worker);
        }
        r
    }
}

impl VersionRequirements {
    /// The smallest requirement over the roles a host could take in a multi-node cluster.
    pub fn min_any_role(&self, sno: bool) -> RoleRequirements {
        if sno {
            return self.sno;
        }
        let (m, w) = (self.master, self.worker);
        RoleRequirements {
            cpu_cores: m.cpu_cores.min(w.cpu_cores),
            ram_mib: m.ram_mib.min(w.ram_mib),
            disk_size_gb: m.disk_size_gb.min(w.disk_size_gb),
            installation_disk_speed_threshold_ms: m
                .installation_disk_speed_threshold_ms
                .max(w.installation_disk_speed_threshold_ms),
            network_latency_threshold_ms: None,
            packet_loss_percentage: None,
        }
    }
}

/// Overrides `base` with the numeric fields present in a role object of the upstream JSON.
fn merge_role(base: RoleRequirements, v: &serde_json::Value) -> RoleRequirements {
    let u = |k: &str, d: u64| v.get(k).and_then(|x| x.as_u64()).unwrap_or(d);
    let f = |k: &str, d: Option<f64>| v.get(k).and_then(|x| x.as_f64()).or(d);
    RoleRequirements {
        cpu_cores: u32::try_from(u("cpu_cores", base.cpu_cores as u64)).unwrap_or(base.cpu_cores),
        ram_mib: u("ram_mib", base.ram_mib),
        disk_size_gb: u("disk_size_gb", base.disk_size_gb),
        installation_disk_speed_threshold_ms: u(
            "installation_disk_speed_threshold_ms",
            base.installation_disk_speed_threshold_ms,
        ),
        network_latency_threshold_ms: f(
            "network_latency_threshold_ms",
            base.network_latency_threshold_ms,
        ),
        packet_loss_percentage: f("packet_loss_percentage", base.packet_loss_percentage),
    }
}

/// Why a `HW_VALIDATOR_REQUIREMENTS` value was refused.
#[derive(Debug, thiserror::Error)]
pub enum HwRequirementsError {
    #[error("invalid hardware requirements JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("hardware requirements must be a JSON list")]
    NotAList,
    #[error("unparseable version {0:?}")]
    Version(String),
}

impl HwRequirementsTable {
    /// Parses the upstream `HW_VALIDATOR_REQUIREMENTS` format: a JSON list of entries with
    /// `version` ("default" or a version) or `min_version`, and role objects `master`, `worker`,
    /// `arbiter`, `sno`, `edge-worker`. Missing fields inherit from the built-in defaults.
    pub fn from_json(s: &str) -> Result<HwRequirementsTable, HwRequirementsError> {
        let v: serde_json::Value = serde_json::from_str(s)?;
        let list = v.as_array().ok_or(HwRequirementsError::NotAList)?;
        let mut table = HwRequirementsTable::default();
        let role = |e: &serde_json::Value, k: &str, base: RoleRequirements| {
            e.get(k).map(|r| merge_role(base, r))
        };
        for e in list {
            let version = e
                .get("min_version")
                .or_else(|| e.get("version"))
                .and_then(|x| x.as_str())
                .unwrap_or("default");
            if version == "default" {
                let d = table.default;
                table.default = VersionRequirements {
                    master: role(e, "master", d.master).unwrap_or(d.master),
                    worker: role(e, "worker", d.worker).unwrap_or(d.worker),
                    arbiter: role(e, "arbiter", d.arbiter).unwrap_or(d.arbiter),
                    sno: role(e, "sno", d.sno).unwrap_or(d.sno),
                    edge_worker: role(e, "edge-worker", d.edge_worker).unwrap_or(d.edge_worker),
                };
                continue;
            }
            let min_version = parse_major_minor(version)
                .ok_or_else(|| HwRequirementsError::Version(version.to_string()))?;
            let d = table.default;
            let o = VersionOverride {
                min_version,
                master: role(e, "master", d.master),
                worker: role(e, "worker", d.worker),
                arbiter: role(e, "arbiter", d.arbiter),
                sno: role(e, "sno", d.sno),
                edge_worker: role(e, "edge-worker", d.edge_worker),
            };
            table.overrides.retain(|x| x.min_version != min_version);
            table.overrides.push(o);
        }
        table.overrides.sort_by_key(|o| o.min_version);
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_upstream_json() {
        let t = HwRequirementsTable::from_json(
            r#"[{"version":"default","master":{"cpu_cores":6},"worker":{"ram_mib":4096}},
                {"min_version":"4.30","sno":{"cpu_cores":2}}]"#,
        )
        .unwrap();
        assert_eq!(t.for_version("4.20").master.cpu_cores, 6);
        assert_eq!(t.for_version("4.20").master.ram_mib, 16384);
        assert_eq!(t.for_version("4.20").worker.ram_mib, 4096);
        // The built-in 4.22 SNO override stays; 4.30 lowers it further.
        assert_eq!(t.for_version("4.25").sno.cpu_cores, 4);
        assert_eq!(t.for_version("4.30").sno.cpu_cores, 2);
        assert!(HwRequirementsTable::from_json("{}").is_err());
        assert!(HwRequirementsTable::from_json(r#"[{"min_version":"x"}]"#).is_err());
    }

    #[test]
    fn sno_cpu_changes_at_4_22() {
        let t = HwRequirementsTable::default();
        assert_eq!(t.for_version("4.21.9").sno.cpu_cores, 8);
        assert_eq!(t.for_version("4.22.0").sno.cpu_cores, 4);
        assert_eq!(t.for_version("4.22.0-ec.3").sno.cpu_cores, 4);
        assert_eq!(t.for_version("4.23").sno.cpu_cores, 4);
        assert_eq!(t.for_version("5.0").sno.cpu_cores, 4);
        assert_eq!(t.for_version("garbage").sno.cpu_cores, 8);
        // Other roles are untouched by the override.
        assert_eq!(t.for_version("4.22.0").master, DEFAULT_REQUIREMENTS.master);
    }

    #[test]
    fn default_table_values() {
        let d = DEFAULT_REQUIREMENTS;
        assert_eq!(
            (d.master.cpu_cores, d.master.ram_mib, d.master.disk_size_gb),
            (4, 16384, 100)
        );
        assert_eq!(
            (d.worker.cpu_cores, d.worker.ram_mib, d.worker.disk_size_gb),
            (2, 8192, 100)
        );
        assert_eq!(
            (
                d.arbiter.cpu_cores,
                d.arbiter.ram_mib,
                d.arbiter.disk_size_gb
            ),
            (2, 8192, 50)
        );
        assert_eq!(d.edge_worker.disk_size_gb, 15);
        assert_eq!(d.min_any_role(false).cpu_cores, 2);
        assert_eq!(d.min_any_role(true).cpu_cores, 8);
    }
}

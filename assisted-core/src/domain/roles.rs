//! Roles: which day-1 hosts become masters or workers (auto-assignment), the role each host
//! has in effect, whether the cluster has enough of each, and whether masters are schedulable.
//! Shared by the validations, the state machines and the install orchestration.

use std::collections::HashMap;

use super::snapshot::*;
use super::types::*;

/// Auto-assigns roles to day-1 `auto-assign` hosts: masters first (strongest hosts first, only
/// hosts meeting the master requirements) until the control plane is full, then workers.
pub fn suggest_roles<'a>(cluster: &'a ClusterSnapshot, cfg: &Config) -> Vec<(&'a str, HostRole)> {
    let day1 = cluster.hosts.iter().filter(|h| !h.is_day2());
    let mut masters = day1
        .clone()
        .filter(|h| matches!(h.role, HostRole::Master | HostRole::Bootstrap))
        .count() as u32;
    let mut auto: Vec<&HostSnapshot> = day1.filter(|h| h.role == HostRole::AutoAssign).collect();
    if auto.is_empty() {
        return Vec::new();
    }
    let req = cfg.hw.for_version(&cluster.openshift_version);
    let master_req = if cluster.is_sno() {
        req.sno
    } else {
        req.master
    };
    let strength = |h: &HostSnapshot| {
        h.inventory
            .as_ref()
            .map(|i| (i.cpu.count, i.memory.physical_bytes))
            .unwrap_or((0, 0))
    };
    auto.sort_by(|a, b| strength(b).cmp(&strength(a)).then_with(|| a.id.cmp(&b.id)));
    auto.into_iter()
        .map(|h| {
            let (cpu, mem) = strength(h);
            let capable = cpu >= master_req.cpu_cores
                && mem.saturating_add(100 << 20) >= master_req.ram_mib.saturating_mul(1 << 20);
            let role = if masters < cluster.control_plane_count && capable {
                masters += 1;
                HostRole::Master
            } else {
                HostRole::Worker
            };
            (h.id.as_str(), role)
        })
        .collect()
}

/// `HasEnoughMastersAndWorkers`: are enough hosts of each role in one of `statuses`?
pub fn has_enough_masters_and_workers(
    cluster: &ClusterSnapshot,
    hosts: &[HostView],
    statuses: &[HostStatus],
) -> bool {
    let day1 = || hosts.iter().filter(|h| !h.day2);
    let is_master = |h: &&HostView| matches!(h.role, HostRole::Master | HostRole::Bootstrap);
    let in_s = |h: &&HostView| statuses.contains(&h.status);
    let masters = day1().filter(is_master).filter(in_s).count() as u32;
    let workers_in = day1()
        .filter(|h| h.role == HostRole::Worker)
        .filter(in_s)
        .count();
    let workers_total = day1().filter(|h| h.role == HostRole::Worker).count();
    if cluster.is_sno() {
        return masters == 1 && workers_in == 0;
    }
    let min_masters = if cluster.arbiter_count > 0 { 2 } else { 3 };
    if masters < cluster.control_plane_count.max(min_masters) {
        return false;
    }
    if cluster.arbiter_count > 0
        && !day1().any(|h| h.role == HostRole::Arbiter && statuses.contains(&h.status))
    {
        return false;
    }
    workers_total < 2 || workers_in >= 2
}

/// Masters must be schedulable when fewer than two workers exist.
pub fn schedulable_masters_forced_true(cluster: &ClusterSnapshot, cfg: &Config) -> bool {
    let workers = HostView::from_cluster(cluster, cfg)
        .iter()
        .filter(|h| !h.day2 && h.role == HostRole::Worker)
        .count();
    workers < 2
}

/// Effective schedulable-masters setting.
pub fn masters_schedulable(cluster: &ClusterSnapshot, cfg: &Config) -> bool {
    cluster.schedulable_masters || schedulable_masters_forced_true(cluster, cfg)
}

/// Effective role: day-2 hosts are workers unless asked to be masters; auto-assign hosts take
/// the freshly computed suggestion while pre-install (and whenever none is stored), the stored
/// one afterwards.
pub(crate) fn resolve_role(h: &HostSnapshot, fresh: Option<HostRole>) -> HostRole {
    if h.is_day2() {
        return h.day2_role();
    }
    let stored = h.effective_role();
    if h.role == HostRole::AutoAssign
        && (h.status.is_pre_install() || stored == HostRole::AutoAssign)
    {
        fresh.unwrap_or(HostRole::AutoAssign)
    } else {
        stored
    }
}

/// A light per-host view used by cluster logic (statuses may be the freshly refreshed ones).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostView {
    pub status: HostStatus,
    pub role: HostRole,
    pub day2: bool,
}

impl HostView {
    pub fn from_cluster(cluster: &ClusterSnapshot, cfg: &Config) -> Vec<HostView> {
        let suggested: HashMap<String, HostRole> = suggest_roles(cluster, cfg)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        cluster
            .hosts
            .iter()
            .map(|h| HostView {
                status: h.status,
                role: resolve_role(h, suggested.get(&h.id).copied()),
                day2: h.is_day2(),
            })
            .collect()
    }
}

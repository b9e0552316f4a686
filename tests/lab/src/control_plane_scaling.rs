//! `--scale-control-plane N`: once the cluster is installed (and its other day-2 steps done),
//! its control plane's `spec.replicas` is set to N, then back to the masters it was installed
//! with. Where OpenShift runs N masters (3 to 5, 4 and 5 since 4.18) the run waits for N
//! control-plane Machines Running, each new one a day-2 control-plane host whose Node is Ready
//! and whose etcd member joined, then for the way back (the first extra Machine deleted by hand
//! as a user might, the rest left to the control plane): the extra Machines gone one at a time,
//! their etcd members removed through the workload API and their certificate Secrets deleted,
//! their BareMetalHosts deprovisioned. Where it does not (a single-node cluster, an older
//! release), the run waits for `ScalingUp` False `ScalingNotSupported` with nothing created.

use anyhow::{Context, Result};
use external_types::capi::Machine;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::manifests::ClusterSpec;
use crate::observe::{self, Snapshot};
use crate::site::Site;

/// The first release that runs 4 or 5 control-plane nodes.
const FIVE_MASTERS_SINCE: (u64, u64) = (4, 18);

/// Whether OpenShift runs `to` masters on a cluster installed with `masters` on `version`.
pub fn supported(masters: u32, version: &str, to: u32) -> bool {
    let minor = || -> Option<(u64, u64)> {
        let mut parts = version.split(['.', '-']);
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    match (masters, to) {
        (1, to) => to == 1,
        (_, 3) => true,
        (_, 4 | 5) => minor().is_some_and(|v| v >= FIVE_MASTERS_SINCE),
        _ => false,
    }
}

/// Sets the control plane's `spec.replicas`.
pub async fn set_replicas(client: &Client, spec: &ClusterSpec, replicas: u32) -> Result<()> {
    let name = spec.control_plane_name();
    Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &spec.ns,
        &observe::control_plane_resource(),
    )
    .patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .with_context(|| format!("setting {name}'s spec.replicas to {replicas}"))?;
    Ok(())
}

/// Deletes one control-plane Machine, as `kubectl delete machine` does.
pub async fn delete_machine(client: &Client, spec: &ClusterSpec, name: &str) -> Result<()> {
    Api::<Machine>::namespaced(client.clone(), &spec.ns)
        .delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting Machine {name}"))?;
    Ok(())
}

/// `to` control-plane Machines Running on Ready Nodes, every one an etcd member.
pub fn scaled_up(spec: &ClusterSpec, s: &Snapshot, site: &Site, to: u32) -> bool {
    let n = spec.hosts_day1() + (to as usize).saturating_sub(spec.masters as usize);
    let members = site.etcd.names();
    let masters_nodes: Vec<String> = s
        .machines
        .iter()
        .filter(|m| Snapshot::is_control_plane(m))
        .filter_map(|m| Snapshot::node_of(m).map(str::to_string))
        .collect();
    s.machines.len() == n
        && s.machines_running() == n
        && s.nodes_ready() == n
        && members.len() == to as usize
        && masters_nodes.len() == to as usize
        && masters_nodes.iter().all(|node| members.contains(node))
}

/// The control plane refused the size: `ScalingUp` False `ScalingNotSupported`, nothing made.
pub fn refused(spec: &ClusterSpec, s: &Snapshot) -> bool {
    s.machines.len() == spec.hosts_day1()
        && s.control_plane.as_ref().is_some_and(|c| {
            crate::cluster_ops::control_plane_condition(c, "ScalingUp")
                .is_some_and(|(st, r, _)| st == "False" && r == "ScalingNotSupported")
        })
}

/// Back to the day-1 count: Machines, Agents and Nodes, etcd back to the installed masters,
/// the freed BareMetalHosts `available` again.
pub fn scaled_back(spec: &ClusterSpec, s: &Snapshot, site: &Site, servers: usize) -> bool {
    let n = spec.hosts_day1();
    s.machines.len() == n
        && s.machines_running() == n
        && s.agents.len() == n
        && s.nodes.len() == n
        && site.etcd.names().len() == spec.masters as usize
        && s.bmhs_in("provisioned") == n
        && s.bmhs_in("available") == servers - n
}

/// The members that were removed on the way back: in `before` but no longer in etcd.
pub fn removed(before: &[String], site: &Site) -> Vec<String> {
    let now = site.etcd.names();
    before
        .iter()
        .filter(|n| !now.contains(n))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openshifts_control_plane_sizes() {
        let rows = [
            (3, "4.19.0-okd-scos.ec.6", 5, true),
            (3, "4.18.1", 4, true),
            (3, "4.17.3", 5, false),
            (3, "4.17.3", 3, true),
            (3, "4.20.0", 6, false),
            (3, "4.20.0", 2, false),
            (1, "4.20.0", 3, false),
            (1, "4.20.0", 1, true),
        ];
        for (masters, version, to, ok) in rows {
            assert_eq!(
                supported(masters, version, to),
                ok,
                "{masters} -> {to} on {version}"
            );
        }
    }
}

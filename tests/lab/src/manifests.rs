//! The YAML the lab writes itself: the site's BareMetalHosts and placeholder pull secrets. The
//! clusters come from `templates/` through clusterctl ([`crate::generate`]) or from the user's
//! `--cluster-file` ([`crate::clusterfile`]).

use std::collections::BTreeMap;

use crate::Topology;
use crate::clusterfile::ClusterFile;

/// Namespace of the site and the cluster when the lab installs one cluster.
pub const NS: &str = "lab";
/// The machine network the simulated hosts live on (one cluster).
pub const MACHINE_CIDR: &str = "192.168.111.0/24";
pub const API_VIP: &str = "192.168.111.5";
pub const INGRESS_VIP: &str = "192.168.111.4";

/// The cluster's name for a topology.
pub fn cluster_name(t: Topology) -> &'static str {
    match t {
        Topology::ThreePlusTwo => "bm",
        Topology::Compact => "compact",
        Topology::Sno => "sno",
    }
}

/// Hosts' profile indexes per cluster: cluster `c` uses `c * INDEX_STRIDE ..`, so boot MACs and
/// UUIDs (functions of kind and index) never collide across clusters.
pub const INDEX_STRIDE: u32 = 10;

/// Day-1 workers of a 3+N cluster (`--workers`) by default.
pub const DEFAULT_WORKERS: u32 = 2;
/// Most day-1 workers of a generated 3+N cluster: its worker hosts (the day-2 spare included)
/// must fit in [`INDEX_STRIDE`] profile indexes.
pub const MAX_WORKERS: u32 = INDEX_STRIDE - 1;

/// The first three octets of cluster `k`'s (1-based) /24 when the lab runs several:
/// `10.<k / 256>.<k % 256>`, room for 65,535 clusters (masters from .10, workers from .100, a
/// single node at .200, at most [`INDEX_STRIDE`] of each; the VIPs .5 and .4).
pub fn cluster_network(k: u32) -> String {
    format!("10.{}.{}", (k >> 8) & 0xff, k & 0xff)
}

/// One cluster of the lab: its namespace, names, size, machine network and host index range.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// `Sno` for one control-plane node without workers (the hosts' hardware follows it).
    pub topology: Topology,
    /// The namespace of its BareMetalHosts and CAPI objects.
    pub ns: String,
    /// The Cluster's name.
    pub name: String,
    /// Prefix of its BareMetalHosts' names (empty with one cluster: `master-0`).
    pub host_prefix: String,
    pub machine_cidr: String,
    /// The VIPs (empty without: SNO).
    pub api_vip: String,
    pub ingress_vip: String,
    /// The first agent-sim profile index of its hosts.
    pub index_base: u32,
    /// Control-plane nodes and workers installed day-1.
    pub masters: u32,
    pub workers: u32,
    /// The OpenshiftAssistedControlPlane (also its ClusterDeployment and AgentClusterInstall).
    pub control_plane: String,
    /// The MachineDeployment the day-2 step scales up by one and back, with its day-1
    /// replicas; `None`: no day-2 step.
    pub day2: Option<(String, u32)>,
    /// InfraEnvs made day-1 (one per Metal3MachineTemplate with Machines).
    pub infraenvs: usize,
    /// `--upgrade-to`: once the rest is done, the control plane's `distributionVersion` is
    /// set to this and the run waits for the upgrade (or, `--upgrade-fails`, its failure).
    pub upgrade: Option<crate::Upgrade>,
    /// The release it is installed with (`distributionVersion`); empty when unknown (a
    /// cluster file).
    pub installed_version: String,
    /// Declared as a Cluster with `spec.topology` over a ClusterClass (`--cluster-class`):
    /// scaling and upgrading edit the Cluster's topology.
    pub cluster_class: bool,
    /// `--scale-control-plane`: once the rest is done, the control plane scaled to this many
    /// masters and back.
    pub control_plane_to: Option<u32>,
    /// The shard of our managers that owns it (`--shards`, [`crate::shards::shard_of`]); 0
    /// with one shard.
    pub shard: u32,
}

impl ClusterSpec {
    /// Cluster `c` (0-based) of `n`, with `workers` day-1 workers for 3+N (ignored for SNO).
    /// One cluster keeps the names `lab`, `bm`/`sno`, `master-0` and 192.168.111.0/24; with
    /// more, cluster `c` is `<name>-<c+1, 2 digits>` in namespace `lab-<c+1>` on its own /24
    /// ([`cluster_network`]). A 3+N cluster with workers has the day-2 step; without, it has none.
    pub fn new(topology: Topology, workers: u32, c: u32, n: u32) -> ClusterSpec {
        let (masters, workers) = match topology {
            Topology::ThreePlusTwo => (3, workers),
            Topology::Compact => (3, 0),
            Topology::Sno => (1, 0),
        };
        let (ns, name, host_prefix, machine_cidr, api_vip, ingress_vip, index_base) = if n == 1 {
            (
                NS.to_string(),
                cluster_name(topology).to_string(),
                String::new(),
                MACHINE_CIDR.to_string(),
                API_VIP.to_string(),
                INGRESS_VIP.to_string(),
                0,
            )
        } else {
            let k = c + 1;
            let name = format!("{}-{k:02}", cluster_name(topology));
            let net = cluster_network(k);
            (
                format!("lab-{k:02}"),
                name.clone(),
                format!("{name}-"),
                format!("{net}.0/24"),
                format!("{net}.5"),
                format!("{net}.4"),
                c * INDEX_STRIDE,
            )
        };
        let (api_vip, ingress_vip) = if masters > 1 {
            (api_vip, ingress_vip)
        } else {
            (String::new(), String::new())
        };
        ClusterSpec {
            topology,
            control_plane: format!("{name}-cp"),
            day2: (workers > 0).then(|| (format!("{name}-workers"), workers)),
            infraenvs: if workers > 0 { 2 } else { 1 },
            ns,
            name,
            host_prefix,
            machine_cidr,
            api_vip,
            ingress_vip,
            index_base,
            masters,
            workers,
            upgrade: None,
            installed_version: String::new(),
            cluster_class: false,
            control_plane_to: None,
            shard: 0,
        }
    }

    /// The cluster a user's manifests describe (`--cluster-file`): one cluster, hosts named
    /// `master-0`, `worker-0`, ..., on the /24 around its API VIP (192.168.111.0/24 without).
    pub fn from_file(f: &ClusterFile) -> ClusterSpec {
        let workers = f.workers();
        ClusterSpec {
            topology: if f.masters == 1 && f.pools.is_empty() {
                Topology::Sno
            } else {
                Topology::ThreePlusTwo
            },
            ns: f.namespace.clone(),
            name: f.name.clone(),
            host_prefix: String::new(),
            machine_cidr: f
                .machine_cidr
                .clone()
                .unwrap_or_else(|| MACHINE_CIDR.into()),
            api_vip: f.api_vips.first().cloned().unwrap_or_default(),
            ingress_vip: f.ingress_vips.first().cloned().unwrap_or_default(),
            index_base: 0,
            masters: f.masters,
            workers,
            control_plane: f.control_plane.clone(),
            day2: f.day2_pool().map(|p| (p.name.clone(), p.replicas)),
            infraenvs: f.infraenvs_day1(),
            upgrade: None,
            installed_version: String::new(),
            cluster_class: f.cluster_class,
            control_plane_to: None,
            shard: 0,
        }
    }

    /// The OpenshiftAssistedControlPlane's name (also its ClusterDeployment and
    /// AgentClusterInstall).
    pub fn control_plane_name(&self) -> String {
        self.control_plane.clone()
    }

    /// The workers' MachineDeployment (the one the day-2 step scales).
    pub fn workers_name(&self) -> String {
        self.day2
            .as_ref()
            .map_or_else(|| format!("{}-workers", self.name), |(n, _)| n.clone())
    }

    /// BareMetalHosts installed day-1.
    pub fn hosts_day1(&self) -> usize {
        (self.masters + self.workers) as usize
    }
}

pub fn namespace_yaml(ns: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")
}

/// One server: its BMC Secret and BareMetalHost, labelled with the role templates select.
pub fn host_yaml(ns: &str, name: &str, role: &str, mac: &str) -> String {
    host_yaml_labels(
        ns,
        name,
        &BTreeMap::from([("role".into(), role.into())]),
        mac,
    )
}

/// One server: its BMC Secret and BareMetalHost with `labels`.
pub fn host_yaml_labels(
    ns: &str,
    name: &str,
    labels: &BTreeMap<String, String>,
    mac: &str,
) -> String {
    // JSON strings are YAML flow scalars: any label key or value is safe.
    let labels = labels
        .iter()
        .map(|(k, v)| {
            format!(
                "{}: {}",
                serde_json::Value::from(k.as_str()),
                serde_json::Value::from(v.as_str())
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"---
apiVersion: v1
kind: Secret
metadata: {{name: {name}-bmc, namespace: {ns}}}
stringData: {{username: admin, password: password}}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: {name}, namespace: {ns}, labels: {{{labels}}}}}
spec:
  online: true
  bootMACAddress: "{mac}"
  bmc: {{address: "redfish+http://192.0.2.1:8000/redfish/v1/Systems/{name}", credentialsName: {name}-bmc}}
"#
    )
}

/// A placeholder pull secret (the lab pulls no images). Its `auth` is base64 of
/// `lab:a-placeholder-not-a-real-pull-secret`: long enough for the end-of-run search for leaked
/// secrets to look for it (`secrets::MIN_LEN`).
pub fn pull_secret_yaml(ns: &str, name: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: {name}, namespace: {ns}}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{"quay.io":{{"auth":"bGFiOmEtcGxhY2Vob2xkZXItbm90LWEtcmVhbC1wdWxsLXNlY3JldA=="}}}}}}'
"#
    )
}

/// The OpenshiftAssistedControlPlane among a cluster's manifests.
pub fn control_plane_mut(
    objects: &mut [serde_json::Value],
) -> anyhow::Result<&mut serde_json::Value> {
    use anyhow::Context;
    objects
        .iter_mut()
        .find(|o| o["kind"] == "OpenshiftAssistedControlPlane")
        .context("the cluster's manifests have no OpenshiftAssistedControlPlane")
}

/// Gives the pull secret the control plane names (a Secret among the manifests, with
/// `stringData.dockerconfigjson`) credentials `auth` (base64 of `user:password`) for `registry`.
pub fn add_pull_secret_auth(
    objects: &mut [serde_json::Value],
    registry: &str,
    auth: &str,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let name = control_plane_mut(objects)?["spec"]["config"]["pullSecretRef"]["name"]
        .as_str()
        .context("the control plane names no pull secret (spec.config.pullSecretRef)")?
        .to_string();
    let secret = objects
        .iter_mut()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == name.as_str())
        .with_context(|| format!("the cluster's manifests have no Secret {name}"))?;
    let config = secret["stringData"][".dockerconfigjson"]
        .as_str()
        .with_context(|| format!("Secret {name} has no stringData .dockerconfigjson"))?;
    let mut config: serde_json::Value = serde_json::from_str(config)
        .with_context(|| format!("Secret {name}'s .dockerconfigjson"))?;
    config["auths"][registry] = serde_json::json!({ "auth": auth });
    secret["stringData"][".dockerconfigjson"] = serde_json::Value::String(config.to_string());
    Ok(())
}

/// What a day-2 kubelet needs in the workload cluster: its bootstrap identity may ask for a
/// client certificate, and nodes may act as nodes (what a cluster's install sets up).
pub fn workload_rbac_yaml(node_bootstrapper: &str) -> String {
    format!(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: node-bootstrapper}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node-bootstrapper"}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: "{node_bootstrapper}"}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: nodes}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node"}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}}]
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_clusters_each_get_their_own_network() {
        assert_eq!(cluster_network(1), "10.0.1");
        assert_eq!(cluster_network(256), "10.1.0");
        assert_eq!(cluster_network(1000), "10.3.232");
        let nets: std::collections::BTreeSet<_> = (1..=1000).map(cluster_network).collect();
        assert_eq!(nets.len(), 1000);
        let last = ClusterSpec::new(Topology::ThreePlusTwo, 2, 999, 1000);
        assert_eq!(
            (
                last.ns.as_str(),
                last.machine_cidr.as_str(),
                last.api_vip.as_str()
            ),
            ("lab-1000", "10.3.232.0/24", "10.3.232.5")
        );
    }
}

//! The YAML the lab applies: the site's BareMetalHosts and the cluster a user would write for
//! CAPOA (Cluster, Metal3Cluster, OpenshiftAssistedControlPlane, Metal3MachineTemplates,
//! MachineDeployment, OpenshiftAssistedConfigTemplate).

use crate::Topology;

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
        Topology::Sno => "sno",
    }
}

/// Hosts' profile indexes per cluster: cluster `c` uses `c * INDEX_STRIDE ..`, so boot MACs and
/// UUIDs (functions of kind and index) never collide across clusters.
pub const INDEX_STRIDE: u32 = 10;

/// One cluster of the lab: its namespace, names, machine network and host index range.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub topology: Topology,
    /// The namespace of its BareMetalHosts and CAPI objects.
    pub ns: String,
    /// The Cluster's name.
    pub name: String,
    /// Prefix of its BareMetalHosts' names (empty with one cluster: `master-0`).
    pub host_prefix: String,
    pub machine_cidr: String,
    pub api_vip: String,
    pub ingress_vip: String,
    /// The first agent-sim profile index of its hosts.
    pub index_base: u32,
}

impl ClusterSpec {
    /// Cluster `c` (0-based) of `n`. One cluster keeps the names `lab`, `bm`/`sno`, `master-0`
    /// and 192.168.111.0/24; with more, cluster `c` is `<name>-<c+1, 2 digits>` in namespace
    /// `lab-<c+1>` on 10.<c+1>.0.0/16.
    pub fn new(topology: Topology, c: u32, n: u32) -> ClusterSpec {
        if n == 1 {
            return ClusterSpec {
                topology,
                ns: NS.into(),
                name: cluster_name(topology).into(),
                host_prefix: String::new(),
                machine_cidr: MACHINE_CIDR.into(),
                api_vip: API_VIP.into(),
                ingress_vip: INGRESS_VIP.into(),
                index_base: 0,
            };
        }
        let k = c + 1;
        let name = format!("{}-{k:02}", cluster_name(topology));
        ClusterSpec {
            topology,
            ns: format!("lab-{k:02}"),
            host_prefix: format!("{name}-"),
            name,
            machine_cidr: format!("10.{k}.0.0/16"),
            api_vip: format!("10.{k}.0.5"),
            ingress_vip: format!("10.{k}.0.4"),
            index_base: c * INDEX_STRIDE,
        }
    }

    /// The OpenshiftAssistedControlPlane's name (also its ClusterDeployment and
    /// AgentClusterInstall).
    pub fn control_plane_name(&self) -> String {
        format!("{}-cp", self.name)
    }

    /// The workers' MachineDeployment.
    pub fn workers_name(&self) -> String {
        format!("{}-workers", self.name)
    }
}

pub fn namespace_yaml(ns: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")
}

/// One server: its BMC Secret and BareMetalHost, labelled with the role templates select.
pub fn host_yaml(ns: &str, name: &str, role: &str, mac: &str) -> String {
    format!(
        r#"---
apiVersion: v1
kind: Secret
metadata: {{name: {name}-bmc, namespace: {ns}}}
stringData: {{username: admin, password: password}}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: {name}, namespace: {ns}, labels: {{role: {role}}}}}
spec:
  online: true
  bootMACAddress: "{mac}"
  bmc: {{address: "redfish+http://192.0.2.1:8000/redfish/v1/Systems/{name}", credentialsName: {name}-bmc}}
"#
    )
}

/// The cluster as a user writes it for CAPOA: live-ISO templates whose image URL the bootstrap
/// provider replaces with its InfraEnv's ISO.
pub fn cluster_yaml(spec: &ClusterSpec) -> String {
    let t = spec.topology;
    let cluster = &spec.name;
    let cp = spec.control_plane_name();
    let ns = &spec.ns;
    let (api_vip, ingress_vip) = (&spec.api_vip, &spec.ingress_vip);
    let (masters, workers) = t.day1();
    let (endpoint, vips) = if masters > 1 {
        (
            api_vip.to_string(),
            format!("    apiVIPs: [{api_vip}]\n    ingressVIPs: [{ingress_vip}]\n"),
        )
    } else {
        (format!("{cluster}.lab.example.com"), String::new())
    };
    let mut yaml = format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: pull-secret, namespace: {ns}}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{"quay.io":{{"auth":"dXNlcjpwYXNz"}}}}}}'
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {cluster}, namespace: {ns}}}
spec:
  clusterNetwork:
    pods: {{cidrBlocks: ["10.128.0.0/14"]}}
    services: {{cidrBlocks: ["172.30.0.0/16"]}}
  controlPlaneRef: {{apiGroup: controlplane.cluster.x-k8s.io, kind: OpenshiftAssistedControlPlane, name: {cp}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: {cluster}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: {cluster}, namespace: {ns}}}
spec:
  controlPlaneEndpoint: {{host: "{endpoint}", port: 6443}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: {cluster}-controlplane, namespace: {ns}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
      hostSelector: {{matchLabels: {{role: master}}}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: {cp}, namespace: {ns}}}
spec:
  distributionVersion: 4.17.3
  replicas: {masters}
  openshiftAssistedConfigSpec:
    pullSecretRef: {{name: pull-secret}}
    sshAuthorizedKey: ssh-ed25519 AAAA lab
    nodeRegistration:
      name: $METADATA_NAME
      kubeletExtraLabels: ["metal3.io/uuid=$METADATA_UUID"]
  config:
{vips}    baseDomain: lab.example.com
    pullSecretRef: {{name: pull-secret}}
  machineTemplate:
    infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: {cluster}-controlplane}}
"#
    );
    if workers > 0 {
        let md = spec.workers_name();
        yaml.push_str(&format!(
            r#"---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: {md}, namespace: {ns}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
      hostSelector: {{matchLabels: {{role: worker}}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: {md}, namespace: {ns}}}
spec:
  template:
    spec:
      pullSecretRef: {{name: pull-secret}}
      sshAuthorizedKey: ssh-ed25519 AAAA lab
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: {md}, namespace: {ns}, labels: {{cluster.x-k8s.io/cluster-name: {cluster}}}}}
spec:
  clusterName: {cluster}
  replicas: {workers}
  # Scale-down removes the day-2 worker, the newest Machine.
  deletion: {{order: Newest}}
  selector: {{matchLabels: {{cluster.x-k8s.io/deployment-name: {md}}}}}
  template:
    metadata: {{labels: {{cluster.x-k8s.io/deployment-name: {md}}}}}
    spec:
      clusterName: {cluster}
      bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfigTemplate, name: {md}}}}}
      infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: {md}}}
"#
        ));
    }
    yaml
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

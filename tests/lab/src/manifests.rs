//! The YAML the lab applies: the site's BareMetalHosts and the cluster a user would write for
//! CAPOA (Cluster, Metal3Cluster, OpenshiftAssistedControlPlane, Metal3MachineTemplates,
//! MachineDeployment, OpenshiftAssistedConfigTemplate).

use crate::Topology;

/// Namespace of the site and the cluster.
pub const NS: &str = "lab";
/// The machine network the simulated hosts live on.
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

/// The OpenshiftAssistedControlPlane's name (also its ClusterDeployment and AgentClusterInstall).
pub fn control_plane_name(t: Topology) -> String {
    format!("{}-cp", cluster_name(t))
}

/// The workers' MachineDeployment.
pub fn workers_name(t: Topology) -> String {
    format!("{}-workers", cluster_name(t))
}

pub fn namespace_yaml() -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n")
}

/// One server: its BMC Secret and BareMetalHost, labelled with the role templates select.
pub fn host_yaml(name: &str, role: &str, mac: &str) -> String {
    format!(
        r#"---
apiVersion: v1
kind: Secret
metadata: {{name: {name}-bmc, namespace: {NS}}}
stringData: {{username: admin, password: password}}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: {name}, namespace: {NS}, labels: {{role: {role}}}}}
spec:
  online: true
  bootMACAddress: "{mac}"
  bmc: {{address: "redfish+http://192.0.2.1:8000/redfish/v1/Systems/{name}", credentialsName: {name}-bmc}}
"#
    )
}

/// The cluster as a user writes it for CAPOA: live-ISO templates whose image URL the bootstrap
/// provider replaces with its InfraEnv's ISO.
pub fn cluster_yaml(t: Topology) -> String {
    let cluster = cluster_name(t);
    let cp = control_plane_name(t);
    let (masters, workers) = t.day1();
    let (endpoint, vips) = if masters > 1 {
        (
            API_VIP.to_string(),
            format!("    apiVIPs: [{API_VIP}]\n    ingressVIPs: [{INGRESS_VIP}]\n"),
        )
    } else {
        (format!("{cluster}.lab.example.com"), String::new())
    };
    let mut yaml = format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: pull-secret, namespace: {NS}}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{"quay.io":{{"auth":"dXNlcjpwYXNz"}}}}}}'
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {cluster}, namespace: {NS}}}
spec:
  clusterNetwork:
    pods: {{cidrBlocks: ["10.128.0.0/14"]}}
    services: {{cidrBlocks: ["172.30.0.0/16"]}}
  controlPlaneRef: {{apiGroup: controlplane.cluster.x-k8s.io, kind: OpenshiftAssistedControlPlane, name: {cp}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Cluster, name: {cluster}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {{name: {cluster}, namespace: {NS}}}
spec:
  controlPlaneEndpoint: {{host: "{endpoint}", port: 6443}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: {cluster}-controlplane, namespace: {NS}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
      hostSelector: {{matchLabels: {{role: master}}}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: {cp}, namespace: {NS}}}
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
        let md = workers_name(t);
        yaml.push_str(&format!(
            r#"---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: {md}, namespace: {NS}}}
spec:
  template:
    spec:
      image: {{url: "http://placeholder.invalid/discovery.iso", checksum: "", diskFormat: live-iso}}
      hostSelector: {{matchLabels: {{role: worker}}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfigTemplate
metadata: {{name: {md}, namespace: {NS}}}
spec:
  template:
    spec:
      pullSecretRef: {{name: pull-secret}}
      sshAuthorizedKey: ssh-ed25519 AAAA lab
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {{name: {md}, namespace: {NS}, labels: {{cluster.x-k8s.io/cluster-name: {cluster}}}}}
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

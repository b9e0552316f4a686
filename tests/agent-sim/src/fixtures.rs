//! The assisted objects of one test cluster as YAML for `Testbed::apply_yaml`: Namespace, pull
//! secret, ClusterImageSet, ClusterDeployment, AgentClusterInstall and a bound InfraEnv, shaped as
//! the Hive and assisted APIs expect them. The end-to-end tests, the wire conformance suite and
//! the core benchmark all start from these.

/// One cluster's objects.
#[derive(Debug, Clone, Copy)]
pub struct ClusterManifests<'a> {
    pub namespace: &'a str,
    /// Names the ClusterDeployment, the AgentClusterInstall and the InfraEnv; the
    /// ClusterImageSet is `<name>-img`.
    pub name: &'a str,
    pub masters: u32,
    pub workers: u32,
    /// Left out of the AgentClusterInstall when empty.
    pub api_vips: &'a [&'a str],
    pub ingress_vips: &'a [&'a str],
    pub machine_cidr: &'a str,
    /// The comment of the SSH key (who made the cluster).
    pub ssh_comment: &'a str,
}

/// A namespace and its pull secret (`pull-secret`).
pub fn namespace_with_pull_secret(ns: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: pull-secret, namespace: {ns}}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{"quay.io":{{"auth":"dXNlcjpwYXNz"}}}}}}'
"#
    )
}

/// A ClusterImageSet of OpenShift 4.17.3.
pub fn image_set(name: &str) -> String {
    format!(
        r#"apiVersion: hive.openshift.io/v1
kind: ClusterImageSet
metadata: {{name: {name}}}
spec:
  releaseImage: quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64
"#
    )
}

impl ClusterManifests<'_> {
    /// Everything: namespace, pull secret, the ClusterImageSet `<name>-img`, then
    /// [`Self::install_objects`].
    pub fn yaml(&self) -> String {
        let image_set_name = format!("{}-img", self.name);
        format!(
            "{}---\n{}---\n{}",
            namespace_with_pull_secret(self.namespace),
            image_set(&image_set_name),
            self.install_objects(&image_set_name)
        )
    }

    /// The ClusterDeployment, the AgentClusterInstall (with the ClusterImageSet
    /// `image_set_name`) and the InfraEnv.
    pub fn install_objects(&self, image_set_name: &str) -> String {
        let ClusterManifests {
            namespace: ns,
            name,
            masters,
            workers,
            api_vips,
            ingress_vips,
            machine_cidr,
            ssh_comment,
        } = *self;
        let list = |v: &[&str]| format!("[{}]", v.join(", "));
        let vips = if api_vips.is_empty() {
            String::new()
        } else {
            format!(
                "  apiVIPs: {}\n  ingressVIPs: {}\n",
                list(api_vips),
                list(ingress_vips)
            )
        };
        let ssh = format!(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5i0Vg4Kk9U1Xg7gTj4bm6b0Q2b1d3zN0yVb8m2G4Wd {ssh_comment}"
        );
        format!(
            r#"apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata: {{name: {name}, namespace: {ns}}}
spec:
  clusterName: {name}
  baseDomain: lab.example.com
  platform:
    agentBareMetal:
      agentSelector: {{}}
  pullSecretRef: {{name: pull-secret}}
  clusterInstallRef:
    group: extensions.hive.openshift.io
    version: v1beta1
    kind: AgentClusterInstall
    name: {name}
---
apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata: {{name: {name}, namespace: {ns}}}
spec:
  clusterDeploymentRef: {{name: {name}}}
  imageSetRef: {{name: {image_set_name}}}
  networking:
    machineNetwork: [{{cidr: "{machine_cidr}"}}]
    clusterNetwork: [{{cidr: 10.128.0.0/14, hostPrefix: 23}}]
    serviceNetwork: [172.30.0.0/16]
  provisionRequirements:
    controlPlaneAgents: {masters}
    workerAgents: {workers}
{vips}  sshPublicKey: {ssh}
---
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {{name: {name}, namespace: {ns}}}
spec:
  clusterRef: {{name: {name}, namespace: {ns}}}
  pullSecretRef: {{name: pull-secret}}
  sshAuthorizedKey: {ssh}
"#
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vips_appear_only_when_given() {
        let mut c = ClusterManifests {
            namespace: "ns",
            name: "c1",
            masters: 3,
            workers: 2,
            api_vips: &["192.168.111.5"],
            ingress_vips: &["192.168.111.4"],
            machine_cidr: "192.168.111.0/24",
            ssh_comment: "test",
        };
        let yaml = c.yaml();
        assert!(yaml.contains("  apiVIPs: [192.168.111.5]\n  ingressVIPs: [192.168.111.4]\n"));
        assert_eq!(yaml.matches("\n---\n").count(), 5);
        for doc in yaml.split("\n---\n") {
            serde_yaml::from_str::<serde_yaml::Value>(doc).expect("each document parses");
        }
        c.api_vips = &[];
        assert!(!c.yaml().contains("apiVIPs"));
    }
}

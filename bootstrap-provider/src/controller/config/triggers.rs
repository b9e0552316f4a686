//! The config controller's watch mappers: which OpenshiftAssistedConfigs a change of a watched
//! object concerns. Pure: they read objects and the cached lists they are given, never the API
//! server; `mod.rs` wires them to the watches, behind the filters of
//! [`crate::controller::fingerprints`].

use std::sync::Arc;

use assisted_api::{AgentClusterInstall, InfraEnv};
use external_types::capi::{Cluster, Machine};
use external_types::capm3::v1beta2::Metal3Machine;
use external_types::metal3_io::BareMetalHost;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use provider_api::bootstrap::api::OpenshiftAssistedConfig;

use super::status::READY;
use crate::controller::labels::CLUSTER_NAME_LABEL;
use crate::controller::matching::HOST_PROBLEM_REASONS;

type ConfigRef = ObjectRef<OpenshiftAssistedConfig>;

/// A Machine names its config.
pub fn config_of_machine(machine: &Machine) -> Option<ConfigRef> {
    machine
        .spec
        .bootstrap
        .config_ref
        .as_ref()
        .filter(|r| r.kind == "OpenshiftAssistedConfig")
        .map(|r| ObjectRef::new(&r.name).within(&machine.namespace().unwrap_or_default()))
}

/// A Metal3Machine's config: CAPI names the Metal3Machine's owner Machine like its config.
pub fn config_of_metal3machine(metal3machine: &Metal3Machine) -> Option<ConfigRef> {
    metal3machine
        .owner_references()
        .iter()
        .find(|o| o.kind == "Machine")
        .map(|o| ObjectRef::new(&o.name).within(&metal3machine.namespace().unwrap_or_default()))
}

/// Every config of a cluster, among `configs`.
pub fn configs_of_cluster(
    configs: &[Arc<OpenshiftAssistedConfig>],
    namespace: Option<String>,
    cluster: Option<&String>,
) -> Vec<ConfigRef> {
    let Some(cluster) = cluster else {
        return Vec::new();
    };
    configs
        .iter()
        .filter(|c| {
            c.namespace() == namespace && c.labels().get(CLUSTER_NAME_LABEL) == Some(cluster)
        })
        .map(|c| ObjectRef::from_obj(&**c))
        .collect()
}

/// The configs of the cluster an InfraEnv serves: its ISO URL concerns all of them.
pub fn configs_of_infraenv(
    configs: &[Arc<OpenshiftAssistedConfig>],
    infraenv: &InfraEnv,
) -> Vec<ConfigRef> {
    configs_of_cluster(
        configs,
        infraenv.namespace(),
        infraenv.labels().get(CLUSTER_NAME_LABEL),
    )
}

/// The configs of an AgentClusterInstall's cluster: its state decides their hold.
pub fn configs_of_aci(
    configs: &[Arc<OpenshiftAssistedConfig>],
    aci: &AgentClusterInstall,
) -> Vec<ConfigRef> {
    configs_of_cluster(
        configs,
        aci.namespace(),
        aci.labels().get(CLUSTER_NAME_LABEL),
    )
}

/// The configs of a Cluster: its pause and readiness concern all of them.
pub fn configs_of_capi_cluster(
    configs: &[Arc<OpenshiftAssistedConfig>],
    cluster: &Cluster,
) -> Vec<ConfigRef> {
    configs_of_cluster(configs, cluster.namespace(), Some(&cluster.name_any()))
}

/// The configs a BareMetalHost's boot MAC concerns: its consumer's (CAPM3 names the consumer
/// Metal3Machine, which CAPI names like the Machine and its config), the consumers' of the other
/// hosts with the same boot MAC (a claim can make or end their duplicate), and every config of
/// the namespace that shows a host problem now (one host's change can end another's duplicate).
pub fn configs_of_host(
    configs: &[Arc<OpenshiftAssistedConfig>],
    hosts: &[Arc<BareMetalHost>],
    host: &BareMetalHost,
) -> Vec<ConfigRef> {
    let namespace = host.namespace();
    let consumer_of = |h: &BareMetalHost| {
        h.spec
            .consumer_ref
            .as_ref()
            .filter(|r| r.kind.as_deref() == Some("Metal3Machine"))
            .and_then(|r| r.name.clone())
    };
    let mac = |h: &BareMetalHost| {
        h.spec
            .boot_mac_address
            .as_deref()
            .map(|m| m.trim().to_ascii_lowercase())
            .filter(|m| !m.is_empty())
    };
    let mut consumers: Vec<String> = consumer_of(host).into_iter().collect();
    if let Some(own) = mac(host) {
        consumers.extend(
            hosts
                .iter()
                .filter(|h| h.namespace() == namespace && h.uid() != host.uid())
                .filter(|h| mac(h).as_deref() == Some(own.as_str()))
                .filter_map(|h| consumer_of(h)),
        );
    }
    configs
        .iter()
        .filter(|c| c.namespace() == namespace)
        .filter(|c| consumers.iter().any(|n| *n == c.name_any()) || shows_host_problem(c))
        .map(|c| ObjectRef::from_obj(&**c))
        .collect()
}

/// The config's `Ready` condition says a boot-MAC problem.
fn shows_host_problem(config: &OpenshiftAssistedConfig) -> bool {
    config.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|cond| cond.type_ == READY && HOST_PROBLEM_REASONS.contains(&cond.reason.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs() -> Vec<Arc<OpenshiftAssistedConfig>> {
        let config = |name: &str, ns: &str, cluster: &str, ready_reason: &str| {
            Arc::new(
                serde_yaml::from_str::<OpenshiftAssistedConfig>(&format!(
                    r#"
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata: {{name: {name}, namespace: {ns}, labels: {{cluster.x-k8s.io/cluster-name: {cluster}}}}}
spec: {{}}
status:
  conditions:
  - {{type: Ready, status: 'False', reason: {ready_reason}, lastTransitionTime: '2027-01-15T08:00:00Z', message: ''}}
"#
                ))
                .unwrap(),
            )
        };
        vec![
            config("c1-a", "ns", "c1", "WaitingForMachine"),
            config("c1-b", "ns", "c1", "DuplicateBootMAC"),
            config("c2-a", "ns", "c2", "WaitingForMachine"),
            config("c1-other-ns", "other", "c1", "WaitingForMachine"),
        ]
    }

    fn names(refs: Vec<ConfigRef>) -> Vec<String> {
        let mut names: Vec<String> = refs.into_iter().map(|r| r.name).collect();
        names.sort();
        names
    }

    fn ns() -> Option<String> {
        Some("ns".into())
    }

    #[test]
    fn a_machine_maps_to_the_config_it_names() {
        let machine = |kind: &str| -> Machine {
            serde_yaml::from_str(&format!(
                "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata: {{name: m, namespace: ns}}\nspec: {{clusterName: c1, bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: {kind}, name: cfg}}}}, infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Machine, name: m}}}}"
            ))
            .unwrap()
        };
        assert_eq!(
            config_of_machine(&machine("OpenshiftAssistedConfig")),
            Some(ObjectRef::new("cfg").within("ns"))
        );
        assert_eq!(config_of_machine(&machine("KubeadmConfig")), None);
    }

    #[test]
    fn a_metal3machine_maps_to_its_owner_machines_config() {
        let m3m = |owners: &str| -> Metal3Machine {
            serde_yaml::from_str(&format!(
                "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: Metal3Machine\nmetadata: {{name: m, namespace: ns, ownerReferences: {owners}}}\nspec: {{}}"
            ))
            .unwrap()
        };
        assert_eq!(
            config_of_metal3machine(&m3m(
                "[{apiVersion: cluster.x-k8s.io/v1beta2, kind: Machine, name: c1-a, uid: u}]"
            )),
            Some(ObjectRef::new("c1-a").within("ns"))
        );
        assert_eq!(config_of_metal3machine(&m3m("[]")), None);
    }

    #[test]
    fn a_cluster_maps_to_its_configs_in_its_namespace() {
        let configs = configs();
        assert_eq!(
            names(configs_of_cluster(&configs, ns(), Some(&"c1".into()))),
            ["c1-a", "c1-b"]
        );
        assert!(configs_of_cluster(&configs, ns(), None).is_empty());
        let cluster: Cluster = serde_yaml::from_str(
            "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: c2, namespace: ns}\nspec: {}",
        )
        .unwrap();
        assert_eq!(names(configs_of_capi_cluster(&configs, &cluster)), ["c2-a"]);
    }

    #[test]
    fn an_infraenv_and_an_aci_map_to_the_configs_of_their_cluster() {
        let configs = configs();
        let infraenv: InfraEnv = serde_yaml::from_str(
            "apiVersion: agent-install.openshift.io/v1beta1\nkind: InfraEnv\nmetadata: {name: workers, namespace: ns, labels: {cluster.x-k8s.io/cluster-name: c1}}\nspec: {pullSecretRef: {name: ps}}",
        )
        .unwrap();
        assert_eq!(
            names(configs_of_infraenv(&configs, &infraenv)),
            ["c1-a", "c1-b"]
        );
        let mut aci = crate::controller::test_fixtures::aci(3, "ready", "[]");
        aci.metadata.labels = Some([(CLUSTER_NAME_LABEL.into(), "c2".into())].into());
        assert_eq!(names(configs_of_aci(&configs, &aci)), ["c2-a"]);
        aci.metadata.labels = None;
        assert!(configs_of_aci(&configs, &aci).is_empty());
    }

    #[test]
    fn a_host_maps_to_its_consumer_the_consumers_of_its_mac_and_the_configs_with_host_problems() {
        let host = |name: &str, uid: &str, mac: &str, consumer: &str| -> Arc<BareMetalHost> {
            Arc::new(
                serde_yaml::from_str(&format!(
                    "apiVersion: metal3.io/v1alpha1\nkind: BareMetalHost\nmetadata: {{name: {name}, namespace: ns, uid: {uid}}}\nspec: {{online: true, bootMACAddress: '{mac}', consumerRef: {{kind: Metal3Machine, name: {consumer}}}}}"
                ))
                .unwrap(),
            )
        };
        let configs = configs();
        let subject = host("h0", "u0", "52:54:00:AA:BB:CC", "c1-a");
        // Another host with the same boot MAC (any case): its consumer looks again too.
        let twin = host("h1", "u1", "52:54:00:aa:bb:cc", "c2-a");
        let hosts = vec![subject.clone(), twin];
        assert_eq!(
            names(configs_of_host(&configs, &hosts, &subject)),
            ["c1-a", "c1-b", "c2-a"]
        );
        // Alone with its MAC: its consumer, and the config showing a host problem.
        assert_eq!(
            names(configs_of_host(
                &configs,
                std::slice::from_ref(&subject),
                &subject
            )),
            ["c1-a", "c1-b"]
        );
    }
}

//! The fields of each watched kind whose change re-queues the controllers' objects: a watched
//! object changes far more often than the fields the controllers read (`Fingerprints` remembers
//! them per object). Pure.

use std::hash::Hash;

use assisted_api::{AgentClusterInstall, InfraEnv};
use external_types::capi::Cluster;
use external_types::capm3::v1beta2::Metal3Machine;
use external_types::metal3_io::BareMetalHost;
use kube::ResourceExt;

use super::PAUSED_ANNOTATION;
use super::hold::install_started_at;
use super::matching::BAREMETALHOST_ANNOTATION;

/// A Metal3Machine's host claim and deletion: a host claimed or released can make or end a
/// duplicate boot MAC, and moves the Agent matching.
pub fn claim_fields(metal3machine: &Metal3Machine) -> impl Hash + use<> {
    (
        metal3machine
            .annotations()
            .get(BAREMETALHOST_ANNOTATION)
            .cloned(),
        metal3machine.metadata.deletion_timestamp.is_some(),
    )
}

/// An AgentClusterInstall's state and install start: they decide the hold.
pub fn hold_fields(aci: &AgentClusterInstall) -> impl Hash + use<> {
    (
        aci.status.as_ref().and_then(|s| s.debug_info.state.clone()),
        install_started_at(aci),
    )
}

/// A host's boot MAC and identity: what Agent matching reads.
pub fn host_identity_fields(host: &BareMetalHost) -> impl Hash + use<> {
    (host.spec.boot_mac_address.clone(), host.uid())
}

/// A host's boot MAC, identity, claim and deletion: the boot-MAC problems shown on `Ready`.
pub fn host_claim_fields(host: &BareMetalHost) -> impl Hash + use<> {
    (
        host.spec.boot_mac_address.clone(),
        host.uid(),
        host.spec
            .consumer_ref
            .as_ref()
            .map(|r| (r.kind.clone(), r.name.clone())),
        host.metadata.deletion_timestamp.is_some(),
    )
}

/// The ISO and discovery ignition URLs an InfraEnv publishes.
pub fn infraenv_fields(infraenv: &InfraEnv) -> impl Hash + use<> {
    infraenv.status.as_ref().map(|s| {
        (
            s.iso_download_url.clone(),
            s.boot_artifacts.discovery_ignition_url.clone(),
        )
    })
}

/// A Cluster's pause and infrastructure readiness.
pub fn cluster_fields(cluster: &Cluster) -> impl Hash + use<> {
    (
        cluster.spec.paused,
        cluster.annotations().contains_key(PAUSED_ANNOTATION),
        cluster
            .status
            .as_ref()
            .and_then(|s| s.initialization.as_ref())
            .and_then(|i| i.infrastructure_provisioned),
    )
}

#[cfg(test)]
mod tests {
    use std::hash::{DefaultHasher, Hasher};

    use super::*;

    fn hash(fields: impl Hash) -> u64 {
        let mut hasher = DefaultHasher::new();
        fields.hash(&mut hasher);
        hasher.finish()
    }

    fn metal3machine(metadata: &str) -> Metal3Machine {
        serde_yaml::from_str(&format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: Metal3Machine\nmetadata: {metadata}\nspec: {{}}"
        ))
        .unwrap()
    }

    #[test]
    fn a_claim_changes_with_the_host_annotation_and_deletion_only() {
        let unclaimed = hash(claim_fields(&metal3machine("{name: m, namespace: ns}")));
        let relabelled = metal3machine("{name: m, namespace: ns, labels: {a: b}}");
        assert_eq!(hash(claim_fields(&relabelled)), unclaimed);
        let claimed = metal3machine(
            "{name: m, namespace: ns, annotations: {metal3.io/BareMetalHost: ns/host-0}}",
        );
        assert_ne!(hash(claim_fields(&claimed)), unclaimed);
        let deleting = metal3machine(
            "{name: m, namespace: ns, deletionTimestamp: '2027-01-15T08:00:00Z', finalizers: [f]}",
        );
        assert_ne!(hash(claim_fields(&deleting)), unclaimed);
    }

    #[test]
    fn the_hold_changes_with_the_install_state_and_start() {
        let aci = |state: &str, conditions: &str| {
            hash(hold_fields(&crate::controller::test_fixtures::aci(
                3, state, conditions,
            )))
        };
        let ready = aci("ready", "[]");
        assert_eq!(aci("ready", "[]"), ready);
        assert_ne!(aci("installing", "[]"), ready);
        assert_ne!(
            aci(
                "ready",
                "[{type: RequirementsMet, status: 'True', lastTransitionTime: '2027-01-15T08:30:00Z'}]"
            ),
            ready
        );
    }
}

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

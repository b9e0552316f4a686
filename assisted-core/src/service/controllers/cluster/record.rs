//! What a reconcile knows of the cluster's record in the store and of its install files.

use k8s_openapi::api::core::v1::ObjectReference;

use crate::domain::ClusterStatus;
use crate::service::store::ClusterRecord;

/// Install artifacts the credentials are published from (read only while installing or
/// installed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterFiles {
    pub kubeconfig: Option<Vec<u8>>,
    pub kubeconfig_noingress: Option<Vec<u8>>,
    pub metadata: Option<Vec<u8>>,
    pub kubeadmin_password: Option<Vec<u8>>,
}

/// What a reconcile needs of the cluster's record in the store: a few fields, not a copy of
/// its hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordFacts {
    pub status: ClusterStatus,
    /// The name and base domain the cluster was registered (and is installed) with.
    pub name: String,
    pub base_domain: String,
    pub kubeconfig_uploaded: bool,
    /// The AgentClusterInstall, for events.
    pub aci: ObjectReference,
}

impl RecordFacts {
    pub fn of(rec: &ClusterRecord) -> RecordFacts {
        RecordFacts {
            status: rec.snapshot.status,
            name: rec.snapshot.name.clone(),
            base_domain: rec.snapshot.base_domain.clone(),
            kubeconfig_uploaded: rec.snapshot.kubeconfig_uploaded,
            aci: crate::service::controllers::events::aci_reference(rec),
        }
    }
}

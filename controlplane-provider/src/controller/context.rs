//! What every reconcile shares: the client, caches, recorder and metrics ([`Context`]), and the
//! names and intervals every write uses.

use std::time::Duration;

use kube::runtime::events::Recorder;
use kube::{Client, ResourceExt};
use manager::controller::Applied;
use manager::metrics::ControllerMetrics;
use manager::runtime::SharedRegistry;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use super::{dereference, release_lookup};

/// One field manager for everything this controller writes.
pub const FIELD_MANAGER: &str = "openshift-assisted-controlplane";
/// The finalizer name CAPOA uses, so objects move between the two implementations.
pub const FINALIZER: &str =
    "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/deprovision";
/// How often a steady control plane is looked at again even if nothing changed.
pub(super) const RESYNC: Duration = Duration::from_secs(600);
/// At most one status write per control plane in this interval; the newest status goes when it
/// ends (`manager::pace`). An install's states came quicker than anyone reads them.
pub const STATUS_EVERY: Duration = Duration::from_secs(2);

pub struct Context {
    pub client: Client,
    /// Release tags resolved to digests through their registries.
    pub releases: release_lookup::Resolver,
    pub recorder: Recorder,
    pub metrics: ControllerMetrics,
    pub install: InstallMetrics,
    /// What this manager last applied: an unchanged body is not sent again within
    /// [`RESYNC`] (see `manager::controller::Applied`).
    pub applied: Applied,
    /// When each control plane's status was last written ([`STATUS_EVERY`]).
    pub status_pace: manager::pace::Pace,
    /// The watch caches the reconcile reads instead of the API server.
    pub caches: dereference::Caches,
}

/// `capoa_install_percentage{namespace, control_plane}`: each cluster's install progress, as its
/// AgentClusterInstall reports it, for dashboards and alerts on stuck installs.
#[derive(Clone, Default)]
pub struct InstallMetrics(Family<Vec<(String, String)>, Gauge>);

impl InstallMetrics {
    pub fn register(registry: &SharedRegistry) -> InstallMetrics {
        let metrics = InstallMetrics::default();
        if let Ok(mut registry) = registry.lock() {
            registry.register(
                "install_percentage",
                "Install progress of each cluster, from its AgentClusterInstall",
                metrics.0.clone(),
            );
        }
        metrics
    }

    fn labels(oacp: &OpenshiftAssistedControlPlane) -> Vec<(String, String)> {
        vec![
            ("namespace".into(), oacp.namespace().unwrap_or_default()),
            ("control_plane".into(), oacp.name_any()),
        ]
    }

    /// Follows the AgentClusterInstall; a deleted control plane's series goes away.
    pub(super) fn observe(&self, d: &dereference::Dereferenced) {
        let labels = InstallMetrics::labels(&d.oacp);
        if d.oacp.metadata.deletion_timestamp.is_some() {
            self.0.remove(&labels);
        } else if let Some(status) = d.aci.as_ref().and_then(|a| a.status.as_ref()) {
            self.0
                .get_or_create(&labels)
                .set(status.progress.total_percentage);
        }
    }
}

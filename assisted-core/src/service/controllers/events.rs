//! Kubernetes Events for what users watch with `kubectl describe`: registrations, image
//! (re)creation, install start, preparation failures, completion. Best effort: an event that
//! cannot be written is logged, never an error of the reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

/// The reporter name every event carries.
pub const REPORTER: &str = "assisted-core";

pub struct Events {
    recorder: Recorder,
}

/// A reference to one of the assisted objects by kind and name.
pub fn reference(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        ..Default::default()
    }
}

impl Events {
    pub fn new(client: kube::Client) -> Events {
        Events {
            recorder: Recorder::new(client, Reporter::from(REPORTER)),
        }
    }

    async fn publish(&self, on: &ObjectReference, type_: EventType, reason: &str, note: String) {
        let ev = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, on).await {
            tracing::debug!(reason, error = %e, "event not recorded");
        }
    }

    pub async fn normal(&self, on: &ObjectReference, reason: &str, note: impl Into<String>) {
        self.publish(on, EventType::Normal, reason, note.into())
            .await;
    }

    /// Publishes an event a decide phase planned.
    pub async fn planned(&self, on: &ObjectReference, event: &manager::controller::PlannedEvent) {
        let type_ = if event.warning {
            EventType::Warning
        } else {
            EventType::Normal
        };
        self.publish(on, type_, event.reason, event.note.clone())
            .await;
    }

    pub async fn warning(&self, on: &ObjectReference, reason: &str, note: impl Into<String>) {
        self.publish(on, EventType::Warning, reason, note.into())
            .await;
    }
}

/// The AgentClusterInstall of a cluster record, for events.
pub fn aci_reference(
    rec: &crate::service::store::ClusterRecord,
) -> k8s_openapi::api::core::v1::ObjectReference {
    reference(
        "extensions.hive.openshift.io/v1beta1",
        "AgentClusterInstall",
        &rec.settings.namespace,
        &rec.settings.agent_cluster_install,
    )
}

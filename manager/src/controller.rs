//! What every controller's I/O shell shares: the error type (one variant per phase, labelled in
//! metrics), events a plan asks for, our finalizer added and released under the controller's
//! field manager, and deletes that treat "already gone" as done.

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

/// Reconcile errors, one variant per phase; invalid input is a condition or event, not an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading from the API server: {0}")]
    Read(#[source] kube::Error),
    #[error("applying {what}: {source}")]
    Apply {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("deleting {what}: {source}")]
    Delete {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing status: {0}")]
    Status(#[source] kube::Error),
}

impl Error {
    /// The metrics label of the phase that failed.
    pub fn phase(&self) -> &'static str {
        match self {
            Error::Read(_) => "dereference",
            Error::Apply { .. } => "apply",
            Error::Delete { .. } => "delete",
            Error::Status(_) => "status",
        }
    }
}

/// An event a plan asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub warning: bool,
    pub reason: &'static str,
    pub note: String,
}

/// Publishes an event (also logged); a failure to publish is logged, never fatal.
pub async fn publish(recorder: &Recorder, regarding: &ObjectReference, event: &PlannedEvent) {
    tracing::info!(kind = ?regarding.kind, name = ?regarding.name, reason = event.reason, note = %event.note, "event");
    let published = Event {
        type_: if event.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: event.reason.to_string(),
        note: Some(event.note.clone()),
        action: event.reason.to_string(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&published, regarding).await {
        tracing::warn!(error = %e, reason = event.reason, "cannot publish event");
    }
}

/// Adds (`present`) or releases our finalizer by applying it, or no longer applying it, under
/// `field_manager`: the API server keeps everyone else's finalizers. Releasing it on an object
/// that is already gone is done.
pub async fn set_finalizer<K>(
    client: &Client,
    object: &K,
    field_manager: &str,
    finalizer: &str,
    present: bool,
) -> Result<(), Error>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
    <K as Resource>::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    let api: Api<K> = Api::namespaced(client.clone(), &object.namespace().unwrap_or_default());
    let finalizers: Vec<&str> = if present { vec![finalizer] } else { vec![] };
    let patch = json!({
        "apiVersion": K::api_version(&dt),
        "kind": K::kind(&dt),
        // The uid makes the apply fail (409) instead of re-creating an object deleted meanwhile.
        "metadata": {"name": object.name_any(), "uid": object.uid(), "finalizers": finalizers},
    });
    match api
        .patch(
            &object.name_any(),
            &PatchParams::apply(field_manager).force(),
            &Patch::Apply(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() && !present => Ok(()),
        // Deleted meanwhile (the uid precondition fails): there is nothing to hold any more.
        Err(source @ kube::Error::Api(_)) => match api.get_opt(&object.name_any()).await {
            Ok(None) => Ok(()),
            _ => Err(Error::Apply {
                what: format!("finalizer of {} {}", K::kind(&dt), object.name_any()),
                source,
            }),
        },
        Err(source) => Err(Error::Apply {
            what: format!("finalizer of {} {}", K::kind(&dt), object.name_any()),
            source,
        }),
    }
}

/// Deletes `name` in the background; already gone counts as deleted.
pub async fn delete<K>(api: &Api<K>, name: &str) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    <K as Resource>::DynamicType: Default,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(source) => Err(Error::Delete {
            what: format!("{} {name}", K::kind(&K::DynamicType::default())),
            source,
        }),
    }
}

/// One fingerprint per watched object, so a watch mapper passes on only changes of the fields
/// its controller reads (an AgentClusterInstall's status moves with every install percent; the
/// configs only care about its state). Memory: one `u64` per watched object.
#[derive(Clone, Default)]
pub struct Fingerprints(std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>);

impl Fingerprints {
    /// True when `key` is new or its fingerprint differs from the last one seen.
    pub fn changed(&self, key: String, fields: impl std::hash::Hash) -> bool {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let fingerprint =
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .hash_one(fields);
        match self.0.lock() {
            Ok(mut seen) => seen.insert(key, fingerprint) != Some(fingerprint),
            // A poisoned map must not silence the watch: pass everything on.
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_pass_on_new_objects_and_changes_only() {
        let seen = Fingerprints::default();
        assert!(seen.changed("ns/a".into(), ("installing", 1)));
        assert!(!seen.changed("ns/a".into(), ("installing", 1)));
        assert!(seen.changed("ns/a".into(), ("installed", 1)));
        assert!(seen.changed("ns/b".into(), ("installing", 1)));
        assert!(
            !seen.clone().changed("ns/b".into(), ("installing", 1)),
            "clones share the map"
        );
    }
}

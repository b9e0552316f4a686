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

/// What a controller last applied, by object: a hash of the body it sent and when. A reconcile
/// runs on every change of a watched object (an AgentClusterInstall's status, a Machine's),
/// while what it applies seldom changes: a body applied less than `ttl` ago is not sent again.
/// After that it is (someone may have changed a field the controller owns), and after a
/// restart everything is, once. Memory: a key and 16 bytes per applied object.
pub struct Applied {
    ttl: std::time::Duration,
    sent: std::sync::Mutex<std::collections::HashMap<String, (u64, std::time::Instant)>>,
}

impl Applied {
    pub fn new(ttl: std::time::Duration) -> Applied {
        Applied {
            ttl,
            sent: Default::default(),
        }
    }

    /// A body's hash (of its JSON: every applied object serializes).
    pub fn hash(body: &impl serde::Serialize) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one(serde_json::to_vec(body).unwrap_or_default())
    }

    /// Whether `hash` is what was applied to `key` less than the ttl ago.
    pub fn is_current(&self, key: &str, hash: u64) -> bool {
        self.sent.lock().is_ok_and(|m| {
            m.get(key)
                .is_some_and(|(h, at)| *h == hash && at.elapsed() < self.ttl)
        })
    }

    /// `hash` was applied to `key` now.
    pub fn record(&self, key: &str, hash: u64) {
        if let Ok(mut m) = self.sent.lock() {
            // Expired entries go as new ones come: the map holds what was applied lately.
            if m.len() > 4096 {
                let ttl = self.ttl;
                m.retain(|_, (_, at)| at.elapsed() < ttl);
            }
            m.insert(key.to_string(), (hash, std::time::Instant::now()));
        }
    }

    /// Forgets every object whose key starts with `prefix` (a deleted owner's).
    pub fn forget(&self, prefix: &str) {
        if let Ok(mut m) = self.sent.lock() {
            m.retain(|k, _| !k.starts_with(prefix));
        }
    }
}

/// Whether `actual` already holds everything `desired` says: every key of a desired object
/// present and holding its value, arrays and scalars equal, a desired `null` matching an absent
/// key. What an apply of `desired` would leave unchanged (for the fields it names).
pub fn contains(actual: &serde_json::Value, desired: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (actual, desired) {
        (Value::Object(a), Value::Object(d)) => d.iter().all(|(k, dv)| match a.get(k) {
            Some(av) => contains(av, dv),
            None => dv.is_null(),
        }),
        (a, d) => a == d,
    }
}

/// Whether applying `desired` to `actual` (the object as the watch cache has it) can be left
/// out: the same body as applied last (`applied`, under `key`, within its ttl: a field dropped
/// from the body is then dropped by the apply) and the object still holding all of it
/// (nobody changed a field this controller owns).
pub fn unchanged<K: serde::Serialize>(
    applied: &Applied,
    key: &str,
    actual: Option<&K>,
    desired: &impl serde::Serialize,
) -> (bool, u64) {
    let hash = Applied::hash(desired);
    let holds = || {
        actual.is_some_and(
            |a| match (serde_json::to_value(a), serde_json::to_value(desired)) {
                (Ok(a), Ok(d)) => contains(&a, &d),
                _ => false,
            },
        )
    };
    (applied.is_current(key, hash) && holds(), hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_compares_what_the_desired_body_names() {
        use serde_json::json;
        let actual = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}},
                            "spec": {"approved": true, "role": "master"}, "status": {"s": 1}});
        assert!(contains(
            &actual,
            &json!({"metadata": {"labels": {"x": "1"}}, "spec": {"approved": true}})
        ));
        assert!(contains(&actual, &json!({"spec": {"hostname": null}})));
        assert!(!contains(&actual, &json!({"spec": {"approved": false}})));
        assert!(!contains(
            &actual,
            &json!({"metadata": {"labels": {"z": "3"}}})
        ));
        assert!(
            !contains(&json!({"a": [1, 2]}), &json!({"a": [1]})),
            "arrays are whole"
        );
    }

    #[test]
    fn an_apply_is_left_out_only_when_sent_before_and_still_held() {
        use serde_json::json;
        let applied = Applied::new(std::time::Duration::from_secs(60));
        let desired = json!({"spec": {"approved": true}});
        let actual = json!({"spec": {"approved": true, "role": "worker"}});
        let (skip, hash) = unchanged(&applied, "k", Some(&actual), &desired);
        assert!(!skip, "never applied by this manager");
        applied.record("k", hash);
        assert!(unchanged(&applied, "k", Some(&actual), &desired).0);
        let edited = json!({"spec": {"approved": false, "role": "worker"}});
        assert!(
            !unchanged(&applied, "k", Some(&edited), &desired).0,
            "someone changed it"
        );
        assert!(
            !unchanged::<serde_json::Value>(&applied, "k", None, &desired).0,
            "gone"
        );
    }

    #[test]
    fn an_applied_body_is_current_until_it_changes_or_expires() {
        let applied = Applied::new(std::time::Duration::from_secs(60));
        let a = Applied::hash(&serde_json::json!({"spec": {"x": 1}}));
        let b = Applied::hash(&serde_json::json!({"spec": {"x": 2}}));
        assert!(!applied.is_current("ns/cp:ACI/ns/cp", a), "never applied");
        applied.record("ns/cp:ACI/ns/cp", a);
        assert!(applied.is_current("ns/cp:ACI/ns/cp", a));
        assert!(!applied.is_current("ns/cp:ACI/ns/cp", b), "a changed body");
        applied.forget("ns/cp:");
        assert!(!applied.is_current("ns/cp:ACI/ns/cp", a), "forgotten");
        let expired = Applied::new(std::time::Duration::ZERO);
        expired.record("k", a);
        assert!(!expired.is_current("k", a), "expired");
    }

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

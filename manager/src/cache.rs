//! One watch per kind, cached: a reflector store that the controllers read instead of the API
//! server, and the same watch's objects handed to every controller that is triggered by the
//! kind. A controller built on it reads nothing but what its watches already brought.
//!
//! The store may lag the API server by a watch event: a reconcile that runs right after its
//! own write can see the object as it was, which server-side apply makes harmless (it writes
//! the same again), and the write's own event queues another reconcile.

use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Config, Event};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// How many objects a controller's trigger queue holds before the watch waits for it.
const TRIGGER_QUEUE: usize = 1024;

/// A watched kind: its store, and the trigger streams of the controllers that asked for one.
pub struct Cached<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    pub store: Store<K>,
    pub triggers: Vec<TriggerStream<K>>,
}

/// The objects of one watch as one controller receives them (`Controller::watches_stream`).
pub type TriggerStream<K> =
    std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send + 'static>>;

/// Starts watching `api` (a task that runs until `shutdown` turns true): the store, and
/// `triggers` streams that each get every object the watch touches, deletions included.
/// `strip` trims each object before it is stored (what no controller reads).
///
/// The watch has a backoff of its own ([`WatchBackoff`]) and its errors never reach a
/// controller: one failing kind cannot pause another's watch, and a `410 Gone` (the resource
/// version the watch resumed from is older than a restarted apiserver keeps) re-lists at once.
pub fn watch<K>(
    api: Api<K>,
    config: Config,
    triggers: usize,
    strip: fn(&mut K),
    mut shutdown: watch::Receiver<bool>,
) -> Cached<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Default + Send + Sync,
{
    let (store, writer) = reflector::store::<K>();
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..triggers).map(|_| mpsc::channel(TRIGGER_QUEUE)).unzip();
    let events = watcher::watcher(api, config)
        .modify(move |object: &mut K| {
            object.managed_fields_mut().clear();
            strip(object);
        })
        .reflect(writer);
    tokio::spawn(async move {
        let kind = K::kind(&Default::default()).to_string();
        let mut events = std::pin::pin!(events);
        let mut backoff = WatchBackoff::default();
        loop {
            let next = tokio::select! {
                next = events.next() => next,
                _ = shutdown.wait_for(|stop| *stop) => return,
            };
            let object = match next {
                Some(Ok(event)) => {
                    backoff.succeeded();
                    match event {
                        Event::Apply(object) | Event::Delete(object) | Event::InitApply(object) => {
                            object
                        }
                        Event::Init | Event::InitDone => continue,
                    }
                }
                Some(Err(error)) => {
                    let retry = backoff.failed(resource_gone(&error), Instant::now());
                    // A kind that cannot be listed (CRD missing, RBAC) keeps the controllers
                    // from starting: said at warn, once a minute while it lasts.
                    if retry.warn {
                        tracing::warn!(%kind, %error, wait = ?retry.wait, "watch failed; retrying");
                    } else {
                        tracing::debug!(%kind, %error, wait = ?retry.wait, "watch failed; retrying");
                    }
                    let sleep = tokio::time::sleep(retry.wait);
                    tokio::select! {
                        _ = sleep => continue,
                        _ = shutdown.wait_for(|stop| *stop) => return,
                    }
                }
                None => return,
            };
            for sender in &senders {
                // A controller that stopped no longer listens; the others still do.
                let _ = sender.send(object.clone()).await;
            }
        }
    });
    let triggers = receivers
        .into_iter()
        .map(|rx| {
            futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|object| (Ok(object), rx))
            })
            .boxed()
        })
        .collect();
    Cached { store, triggers }
}

/// `410 Gone`: the watcher has already dropped its resource version and lists again on its
/// next step, which is the whole recovery.
fn resource_gone(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchError(status) => status.code == 410,
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

/// The first wait after an error, doubled per error in a row up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(500);
/// Short enough that a watch is back within seconds of a restarted apiserver answering (the
/// recovery budget is 15 s, and a 403 while its RBAC loads costs one more wait); one request
/// per watch every 4 s against a dead apiserver is no load.
const MAX_WAIT: Duration = Duration::from_secs(4);
/// While errors last, how often one is said at warn.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// One watch's retry policy (pure: the caller passes the clock). client-go gives each
/// reflector its own backoff too; kube's `Controller::new` shares one between all its watches,
/// which made every watch of a controller wait while any one failed.
#[derive(Debug, Default)]
pub struct WatchBackoff {
    /// Errors since the last success.
    errors: u32,
    /// Whether the free re-list after a `410` was used since the last success: a second one
    /// in a row waits like any error, so an apiserver that keeps answering `410` is not
    /// listed in a tight loop.
    gone_used: bool,
    last_warned: Option<Instant>,
}

/// What to do after a watch error.
#[derive(Debug, PartialEq, Eq)]
pub struct Retry {
    pub wait: Duration,
    pub warn: bool,
}

impl WatchBackoff {
    /// The watch delivered something: the next error starts the ladder again.
    pub fn succeeded(&mut self) {
        *self = WatchBackoff::default();
    }

    /// The watch failed (`gone`: with `410`); how long to wait before its next step.
    pub fn failed(&mut self, gone: bool, now: Instant) -> Retry {
        let warn = !gone
            && self
                .last_warned
                .is_none_or(|at| now.duration_since(at) >= WARN_EVERY);
        if warn {
            self.last_warned = Some(now);
        }
        if gone && !self.gone_used {
            self.gone_used = true;
            return Retry {
                wait: Duration::ZERO,
                warn,
            };
        }
        let doublings = self.errors.min(16);
        self.errors = self.errors.saturating_add(1);
        let wait = FIRST_WAIT.saturating_mul(1 << doublings).min(MAX_WAIT);
        Retry { wait, warn }
    }
}

/// The owner of kind `P` that controls `object` (what `Controller::owns` triggers on).
pub fn controller_owner<P>(object: &impl Resource) -> Option<ObjectRef<P>>
where
    P: Resource,
    P::DynamicType: Default + Eq + Hash + Clone,
{
    let dynamic = P::DynamicType::default();
    let (kind, api_version) = (P::kind(&dynamic), P::api_version(&dynamic));
    let owner =
        object.meta().owner_references.iter().flatten().find(|o| {
            o.controller == Some(true) && o.kind == kind && o.api_version == api_version
        })?;
    Some(ObjectRef::new(&owner.name).within(object.meta().namespace.as_deref().unwrap_or_default()))
}

/// Keeps the object as it came.
pub fn keep<K>(_: &mut K) {}

/// The object of this name in this namespace, as last seen.
pub fn get<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone + Default,
{
    store
        .get(&ObjectRef::new(name).within(namespace))
        .map(|o| (*o).clone())
}

/// The objects of a namespace carrying `label` = `value`, as last seen.
pub fn labelled<K>(store: &Store<K>, namespace: &str, label: &str, value: &str) -> Vec<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    select(store, namespace, |o| {
        o.labels().get(label).map(String::as_str) == Some(value)
    })
}

/// Every object of a namespace, as last seen.
pub fn in_namespace<K>(store: &Store<K>, namespace: &str) -> Vec<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    select(store, namespace, |_| true)
}

fn select<K>(store: &Store<K>, namespace: &str, keep: impl Fn(&K) -> bool) -> Vec<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    store
        .state()
        .into_iter()
        .filter(|o| o.namespace().as_deref() == Some(namespace) && keep(o))
        .map(|o| (*o).clone())
        .collect()
}

/// Objects read by GET that no watch keeps whole (Secrets, which are many and mostly not
/// ours; cluster-scoped objects read now and then), kept after a read that found them: the
/// reconciles of one object come seconds apart. With the object's current resourceVersion
/// (from a watch that keeps only metadata) the remembered copy is used while it is that
/// version; without, for `ttl`. One not found is asked for again each time.
#[derive(Clone)]
pub struct Recent {
    ttl: Duration,
    read: std::sync::Arc<
        std::sync::Mutex<std::collections::BTreeMap<String, (serde_json::Value, Instant)>>,
    >,
}

impl Recent {
    pub fn new(ttl: Duration) -> Recent {
        Recent {
            ttl,
            read: Default::default(),
        }
    }

    /// The object at `key` (`kind/namespace/name`): remembered, or through `read`.
    pub async fn get<K, F>(
        &self,
        key: String,
        version: Option<&str>,
        read: F,
    ) -> Result<Option<K>, kube::Error>
    where
        K: serde::Serialize + DeserializeOwned,
        F: std::future::Future<Output = Result<Option<K>, kube::Error>>,
    {
        let ttl = self.ttl;
        let remembered = self.read.lock().ok().and_then(|m| {
            let (object, at) = m.get(&key)?;
            let current = match version {
                Some(v) => object["metadata"]["resourceVersion"] == v,
                None => at.elapsed() < ttl,
            };
            current.then(|| object.clone())
        });
        if let Some(object) = remembered.and_then(|v| serde_json::from_value(v).ok()) {
            return Ok(Some(object));
        }
        let found = read.await?;
        if let (Some(object), Ok(mut m)) = (&found, self.read.lock()) {
            // Old entries go as new ones come: the map holds what was read lately.
            if m.len() > 1024 {
                m.retain(|_, (_, at)| at.elapsed() < ttl);
            }
            if let Ok(v) = serde_json::to_value(object) {
                m.insert(key, (v, Instant::now()));
            }
        }
        Ok(found)
    }
}

/// Objects this manager created lately, for the reconciles that come before its watch cache
/// shows them: under load a watch event comes seconds after the create (tens of seconds with
/// 500 clusters installing), and a reconcile deciding from the cache alone would create the
/// object again: an idempotent apply, but with its event and the reads and applies around it,
/// each time. An entry goes once the cache shows an object of that name, or after `ttl`.
#[derive(Clone)]
pub struct Created<K> {
    ttl: Duration,
    made: std::sync::Arc<std::sync::Mutex<Vec<(K, Instant)>>>,
}

impl<K: Resource + Clone> Created<K> {
    pub fn new(ttl: Duration) -> Created<K> {
        Created {
            ttl,
            made: Default::default(),
        }
    }

    /// `object` (as the API server answered the create) was created now.
    pub fn record(&self, object: K) {
        if let Ok(mut made) = self.made.lock() {
            made.retain(|(o, _)| !same_object(o, &object));
            made.push((object, Instant::now()));
        }
    }

    /// Adds to `cached` (a namespace's objects, as its watch cache has them) those of the
    /// namespace created lately that it does not show yet and that `keep` selects.
    pub fn add_missing(&self, namespace: &str, cached: &mut Vec<K>, keep: impl Fn(&K) -> bool) {
        let Ok(mut made) = self.made.lock() else {
            return;
        };
        let in_cache = |o: &K| {
            o.namespace().as_deref() == Some(namespace) && cached.iter().any(|c| same_object(c, o))
        };
        // Seen by the cache, or too old to matter: forgotten.
        made.retain(|(o, at)| at.elapsed() < self.ttl && !in_cache(o));
        let missing: Vec<K> = made
            .iter()
            .filter(|(o, _)| o.namespace().as_deref() == Some(namespace) && keep(o))
            .map(|(o, _)| o.clone())
            .collect();
        cached.extend(missing);
    }
}

/// The status this manager wrote last on each object (by key), for the reconciles that come
/// before its watch cache shows it. Only for a status this manager alone writes: then what it
/// wrote is the object's status, and deciding from the cache's older one would write it again
/// (and say again what changed). Kept `ttl`.
#[derive(Clone)]
pub struct LastWritten<S> {
    ttl: Duration,
    written: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, (S, Instant)>>>,
}

impl<S: Clone> LastWritten<S> {
    pub fn new(ttl: Duration) -> LastWritten<S> {
        LastWritten {
            ttl,
            written: Default::default(),
        }
    }

    /// `status` was written to the object `key` now.
    pub fn record(&self, key: String, status: S) {
        if let Ok(mut written) = self.written.lock() {
            // Old entries go as new ones come: the map holds what was written lately.
            let ttl = self.ttl;
            written.retain(|_, (_, at)| at.elapsed() < ttl);
            written.insert(key, (status, Instant::now()));
        }
    }

    /// The status written to `key` less than `ttl` ago, if any.
    pub fn get(&self, key: &str) -> Option<S> {
        let written = self.written.lock().ok()?;
        let (status, at) = written.get(key)?;
        (at.elapsed() < self.ttl).then(|| status.clone())
    }
}

fn same_object(a: &impl Resource, b: &impl Resource) -> bool {
    a.meta().name == b.meta().name && a.meta().namespace == b.meta().namespace
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(ns: &str, name: &str) -> k8s_openapi::api::core::v1::ConfigMap {
        let mut c = k8s_openapi::api::core::v1::ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c
    }

    #[tokio::test]
    async fn a_created_object_counts_until_the_cache_shows_it() {
        let created = Created::new(Duration::from_secs(60));
        created.record(config_map("a", "m-0"));
        created.record(config_map("b", "m-0"));
        let names = |v: &[k8s_openapi::api::core::v1::ConfigMap]| {
            v.iter().map(|o| o.name_any()).collect::<Vec<_>>()
        };

        let mut cached = vec![config_map("a", "other")];
        created.add_missing("a", &mut cached, |_| true);
        assert_eq!(names(&cached), ["other", "m-0"], "the cache lags: added");

        let mut filtered = Vec::new();
        created.add_missing("a", &mut filtered, |o| o.name_any() != "m-0");
        assert!(filtered.is_empty(), "what `keep` leaves out is not added");

        let mut shown = vec![config_map("a", "m-0")];
        created.add_missing("a", &mut shown, |_| true);
        assert_eq!(names(&shown), ["m-0"], "the cache shows it: not twice");
        let mut later = Vec::new();
        created.add_missing("a", &mut later, |_| true);
        assert!(later.is_empty(), "once shown, forgotten (deleted since)");

        let mut other_namespace = Vec::new();
        created.add_missing("b", &mut other_namespace, |_| true);
        assert_eq!(names(&other_namespace), ["m-0"], "namespaces apart");
    }

    #[tokio::test]
    async fn the_last_written_status_is_kept_for_its_ttl() {
        let written = LastWritten::new(Duration::from_secs(60));
        assert_eq!(written.get("ns/a"), None);
        written.record("ns/a".into(), 1);
        written.record("ns/a".into(), 2);
        assert_eq!(written.get("ns/a"), Some(2), "the newest");
        assert_eq!(written.get("ns/b"), None);
        let expired = LastWritten::new(Duration::ZERO);
        expired.record("ns/a".into(), 1);
        assert_eq!(expired.get("ns/a"), None);
    }

    #[tokio::test]
    async fn a_created_object_is_forgotten_after_the_ttl() {
        let created = Created::new(Duration::ZERO);
        created.record(config_map("a", "m-0"));
        let mut cached = Vec::new();
        created.add_missing("a", &mut cached, |_| true);
        assert!(cached.is_empty());
    }

    #[tokio::test]
    async fn recent_remembers_while_current_and_reads_again_when_the_version_moves() {
        use serde_json::json;
        let recent = Recent::new(Duration::from_secs(60));
        // What a read would answer now: its resourceVersion tells which answer was used.
        let get = |version: Option<&'static str>, now: &'static str| {
            recent.get::<serde_json::Value, _>(
                "Secret/ns/s".into(),
                version,
                std::future::ready(Ok(Some(json!({"metadata": {"resourceVersion": now}})))),
            )
        };
        let rv = |v: Option<serde_json::Value>| v.unwrap()["metadata"]["resourceVersion"].clone();
        assert_eq!(rv(get(None, "1").await.unwrap()), "1", "first: read");
        assert_eq!(
            rv(get(None, "2").await.unwrap()),
            "1",
            "within the ttl: remembered"
        );
        assert_eq!(
            rv(get(Some("1"), "3").await.unwrap()),
            "1",
            "the version it has"
        );
        assert_eq!(
            rv(get(Some("4"), "4").await.unwrap()),
            "4",
            "a new version: read"
        );
        let missing = recent
            .get::<serde_json::Value, _>(
                "Secret/ns/none".into(),
                None,
                std::future::ready(Ok(None)),
            )
            .await
            .unwrap();
        assert_eq!(missing, None);
    }

    fn waits(backoff: &mut WatchBackoff, gone: &[bool], now: Instant) -> Vec<Duration> {
        gone.iter().map(|g| backoff.failed(*g, now).wait).collect()
    }

    #[test]
    fn the_controller_owner_of_the_kind_is_found() {
        use k8s_openapi::api::core::v1::{ConfigMap, Secret};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owner = |kind: &str, name: &str, controller| OwnerReference {
            api_version: "v1".into(),
            kind: kind.into(),
            name: name.into(),
            controller: Some(controller),
            ..Default::default()
        };
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.owner_references = Some(vec![
            owner("Secret", "not-controller", false),
            owner("ConfigMap", "other-kind", true),
            owner("Secret", "it", true),
        ]);
        assert_eq!(
            controller_owner::<Secret>(&cm),
            Some(ObjectRef::new("it").within("ns"))
        );
        cm.metadata.owner_references = Some(vec![owner("Secret", "not-controller", false)]);
        assert_eq!(controller_owner::<Secret>(&cm), None);
    }

    #[test]
    fn errors_in_a_row_double_the_wait_up_to_the_cap() {
        let mut b = WatchBackoff::default();
        let ms = Duration::from_millis;
        assert_eq!(
            waits(&mut b, &[false; 6], Instant::now()),
            [ms(500), ms(1000), ms(2000), ms(4000), ms(4000), ms(4000)]
        );
    }

    #[test]
    fn a_success_starts_the_ladder_again() {
        let mut b = WatchBackoff::default();
        waits(&mut b, &[false; 5], Instant::now());
        b.succeeded();
        assert_eq!(b.failed(false, Instant::now()).wait, FIRST_WAIT);
    }

    #[test]
    fn one_gone_relists_at_once_even_after_a_long_outage() {
        // The apiserver was down (connection errors up to the cap), comes back, and the
        // resumed watch is answered 410: the re-list must not wait.
        let mut b = WatchBackoff::default();
        waits(&mut b, &[false; 8], Instant::now());
        assert_eq!(b.failed(true, Instant::now()).wait, Duration::ZERO);
    }

    #[test]
    fn gone_again_without_a_success_waits_like_any_error() {
        let mut b = WatchBackoff::default();
        let now = Instant::now();
        assert_eq!(b.failed(true, now).wait, Duration::ZERO);
        assert_eq!(b.failed(true, now).wait, FIRST_WAIT);
        assert_eq!(b.failed(true, now).wait, FIRST_WAIT * 2);
        b.succeeded();
        assert_eq!(b.failed(true, now).wait, Duration::ZERO);
    }

    #[test]
    fn errors_are_said_at_warn_once_a_minute() {
        let mut b = WatchBackoff::default();
        let start = Instant::now();
        let warned: Vec<bool> = [0, 1, 30, 59, 60, 61, 125]
            .iter()
            .map(|s| b.failed(false, start + Duration::from_secs(*s)).warn)
            .collect();
        assert_eq!(warned, [true, false, false, false, true, false, true]);
        // The re-list after a 410 is routine, never a warning.
        let mut b = WatchBackoff::default();
        assert!(!b.failed(true, start).warn);
    }
}

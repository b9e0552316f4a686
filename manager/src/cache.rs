//! One watch per kind, cached: a reflector store that the controllers read instead of the API
//! server, and the same watch's objects handed to every controller that is triggered by the
//! kind. A controller built on it reads nothing but what its watches already brought.
//!
//! The store may lag the API server by a watch event: a reconcile that runs right after its
//! own write can see the object as it was, which server-side apply makes harmless (it writes
//! the same again), and the write's own event queues another reconcile.

use std::fmt::Debug;
use std::hash::Hash;

use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::runtime::{WatchStreamExt, watcher::Config};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};

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
    let events = watcher(api, config)
        .default_backoff()
        .modify(move |object: &mut K| {
            object.managed_fields_mut().clear();
            strip(object);
        })
        .reflect(writer)
        .touched_objects();
    tokio::spawn(async move {
        let mut events = std::pin::pin!(events);
        loop {
            let next = tokio::select! {
                next = events.next() => next,
                _ = shutdown.wait_for(|stop| *stop) => return,
            };
            match next {
                Some(Ok(object)) => {
                    for sender in &senders {
                        // A controller that stopped no longer listens; the others still do.
                        let _ = sender.send(object.clone()).await;
                    }
                }
                // Said at warn: a kind that cannot be listed (CRD missing, RBAC) keeps the
                // controllers from starting, and the backoff keeps this to a few lines a minute.
                Some(Err(error)) => {
                    tracing::warn!(kind = %K::kind(&Default::default()), %error, "watch failed; retrying with backoff")
                }
                None => return,
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

//! The core's durable state: each cluster's snapshot, and each host that belongs to no cluster,
//! as a file in the file store, from which a restarted core continues (`restore`).
//!
//! A change the agent API acknowledged must survive the core being killed the next moment, as
//! it would in upstream's database: the journal writes the files first (the CRs follow, by the
//! persister), and the API answers a request that changed the store only once the journal has
//! saved it ([`crate::service::store::Store::wait_saved`]). One pass saves every change marked
//! since the last, so requests that arrive together wait for one write together.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::watch;

use crate::domain::{ClusterSnapshot, ClusterStatus, HostSnapshot, PreparationStatus};
use crate::service::store::{ClusterRecord, ClusterSettings, Dirty, Store};

/// How long a pass waits for more changes to join it: a burst of step replies is one write of
/// their cluster, not one each.
const GATHER: Duration = Duration::from_millis(20);
/// How long a pass that could not write waits before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

pub fn state_path(files_root: &Path, cluster_id: &str) -> PathBuf {
    files_root.join(cluster_id).join("state.json")
}

fn unbound_path(files_root: &Path, host_id: &str) -> PathBuf {
    files_root.join("unbound").join(format!("{host_id}.json"))
}

async fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let tmp = path.with_extension("tmp");
    tokio::fs::write(&tmp, bytes).await?;
    tokio::fs::rename(&tmp, path).await
}

/// Loads persisted clusters and unbound hosts into the store. Returns the clusters whose
/// install preparation was running when the core stopped (to be started again).
pub async fn restore(store: &Store, files_root: &Path) -> Vec<String> {
    let now = Timestamp::now();
    let mut resume = Vec::new();
    let Ok(mut dir) = tokio::fs::read_dir(files_root).await else {
        return resume;
    };
    while let Ok(Some(entry)) = dir.next_entry().await {
        let name = entry.file_name().to_string_lossy().to_string();
        if name == "unbound" {
            continue;
        }
        let Ok(bytes) = tokio::fs::read(state_path(files_root, &name)).await else {
            continue;
        };
        match serde_json::from_slice::<ClusterSnapshot>(&bytes) {
            Ok(snap) => {
                if snap.status == ClusterStatus::PreparingForInstallation
                    && snap.preparation == PreparationStatus::InProgress
                {
                    resume.push(snap.id.clone());
                }
                tracing::info!(cluster = %snap.name, status = %snap.status, hosts = snap.hosts.len(), "restored cluster state");
                store.restore_cluster(ClusterRecord::new(snap, ClusterSettings::default()), now);
            }
            Err(e) => {
                tracing::warn!(cluster = %name, error = %e, "unreadable cluster state; skipped")
            }
        }
    }
    if let Ok(mut dir) = tokio::fs::read_dir(files_root.join("unbound")).await {
        while let Ok(Some(entry)) = dir.next_entry().await {
            if let Ok(bytes) = tokio::fs::read(entry.path()).await
                && let Ok(h) = serde_json::from_slice::<HostSnapshot>(&bytes)
            {
                store.restore_unbound(h, now);
            }
        }
    }
    store.mark_all();
    resume
}

/// Saves one cluster's snapshot; false when it could not be written (a cluster that is gone
/// has nothing to save).
async fn save_cluster(store: &Store, files_root: &Path, id: &str) -> bool {
    // Encoded under the read lock: cheaper than copying the cluster first.
    let Some(encoded) =
        store.view(|st| st.clusters.get(id).map(|r| serde_json::to_vec(&r.snapshot)))
    else {
        return true;
    };
    let written = match encoded {
        Ok(bytes) => write_atomic(&state_path(files_root, id), &bytes).await,
        Err(e) => Err(std::io::Error::other(e)),
    };
    if let Err(e) = &written {
        tracing::warn!(cluster = %id, error = %e, "cannot save cluster state");
    }
    written.is_ok()
}

/// Saves one host that belongs to no cluster; false when it could not be written.
async fn save_unbound(store: &Store, files_root: &Path, host_id: &str) -> bool {
    let Some(host) = store.view(|st| st.unbound.get(host_id).cloned()) else {
        return true;
    };
    let written = match serde_json::to_vec(&host) {
        Ok(bytes) => write_atomic(&unbound_path(files_root, host_id), &bytes).await,
        Err(e) => Err(std::io::Error::other(e)),
    };
    if let Err(e) = &written {
        tracing::warn!(host = %host_id, error = %e, "cannot save host state");
    }
    written.is_ok()
}

/// Where the changes behind `keys` are saved: each bound host's cluster, or the unbound host.
/// A host the store no longer knows has nothing to save.
fn files_to_write(store: &Store, keys: &BTreeSet<Dirty>) -> (BTreeSet<String>, BTreeSet<String>) {
    store.view(|st| {
        let mut clusters = BTreeSet::new();
        let mut unbound = BTreeSet::new();
        for key in keys {
            match key {
                Dirty::Cluster(id) => {
                    clusters.insert(id.clone());
                }
                Dirty::Host(id) | Dirty::NewHost(id) => match st.host_cluster.get(id) {
                    Some(cluster) => {
                        clusters.insert(cluster.clone());
                    }
                    None if st.unbound.contains_key(id) => {
                        unbound.insert(id.clone());
                    }
                    None => {}
                },
            }
        }
        (clusters, unbound)
    })
}

/// Big transient buffers in mappings of their own, returned to the system when freed.
///
/// Each journal pass encodes a whole cluster (4 MB at 1,000 hosts) and a monitor pass over a big
/// cluster allocates as much again. glibc serves such buffers from their own mappings, but the
/// first one freed raises its mmap threshold to that size (up to 32 MiB), so the next ones come
/// from the heap and leave it fragmented: at 1 × 1,000 the core's RSS grew by 45–50 KiB per host
/// for 17 KiB of live heap (heaptrack; docs/benchmarks.md). Fixing the threshold at its initial
/// 128 KiB stops that adjustment. Process-wide, and set here because the journal is what
/// makes the biggest of those buffers, in the standalone core and in the manager embedding it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_big_buffers_out_of_the_heap() {
    use std::ffi::c_int;
    /// glibc's `malloc.h`.
    const M_MMAP_THRESHOLD: c_int = -3;
    const INITIAL_THRESHOLD: c_int = 128 * 1024;
    unsafe extern "C" {
        // Sets one allocator parameter; glibc documents it as callable at any time.
        safe fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    if mallopt(M_MMAP_THRESHOLD, INITIAL_THRESHOLD) != 1 {
        tracing::warn!("could not fix the allocator's mmap threshold");
    }
}

/// Other C libraries (musl, in the static images) keep no such adjustable threshold.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_big_buffers_out_of_the_heap() {}

/// Saves what changed, pass after pass, until shutdown; each pass publishes the count of marks
/// it covered once all its files are written. The store waits for the journal from this call
/// on, before the returned future first runs: no request is acknowledged unsaved in between.
pub fn run(
    store: Arc<Store>,
    files_root: PathBuf,
    mut shutdown: watch::Receiver<bool>,
) -> impl Future<Output = ()> {
    store.attach_journal();
    keep_big_buffers_out_of_the_heap();
    async move {
        loop {
            tokio::select! {
                _ = store.journal_wake.notified() => {}
                _ = shutdown.changed() => return,
            }
            tokio::time::sleep(GATHER).await;
            let (marks, keys) = store.take_unsaved();
            let (clusters, unbound) = files_to_write(&store, &keys);
            let mut failed = false;
            for id in &clusters {
                failed |= !save_cluster(&store, &files_root, id).await;
            }
            for id in &unbound {
                failed |= !save_unbound(&store, &files_root, id).await;
            }
            if failed {
                // All of this pass again: its count is published only when all of it is in.
                store.requeue_unsaved(keys);
                tokio::time::sleep(RETRY_AFTER).await;
            } else {
                store.saved_through(marks);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Config;

    const IE: &str = "11111111-1111-1111-1111-111111111111";
    const CL: &str = "22222222-2222-2222-2222-222222222222";
    const H1: &str = "33333333-3333-3333-3333-333333333333";
    const WAIT: Duration = Duration::from_secs(5);

    fn store_with_a_cluster() -> Arc<Store> {
        let (store, _rx) = Store::with_bound_infra_env(IE, CL);
        store.mark(Dirty::Cluster(CL.into()));
        store
    }

    fn start(store: &Arc<Store>, root: &Path) -> watch::Sender<bool> {
        let (stop, shutdown) = watch::channel(false);
        tokio::spawn(run(store.clone(), root.to_path_buf(), shutdown));
        stop
    }

    async fn restored_hosts(root: &Path) -> Vec<String> {
        let (fresh, _rx) = Store::new(Config::default());
        restore(&fresh, root).await;
        fresh.view(|st| st.host_cluster.keys().cloned().collect())
    }

    #[tokio::test]
    async fn a_change_is_on_disk_once_its_marks_are_saved() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_a_cluster();
        let _stop = start(&store, dir.path());
        store
            .register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap();
        assert!(store.wait_saved(store.marks(), WAIT).await);
        // What a restarted core reads: the acknowledged registration is there.
        assert_eq!(restored_hosts(dir.path()).await, vec![H1.to_string()]);
    }

    #[tokio::test]
    async fn a_change_that_cannot_be_written_is_not_acknowledged_and_is_written_later() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the cluster's directory goes: its state cannot be written.
        let blocker = dir.path().join(CL);
        std::fs::write(&blocker, b"").unwrap();
        let store = store_with_a_cluster();
        let _stop = start(&store, dir.path());
        store
            .register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap();
        let marks = store.marks();
        assert!(!store.wait_saved(marks, Duration::from_millis(300)).await);
        std::fs::remove_file(&blocker).unwrap();
        // The next pass (after RETRY_AFTER) writes it and the wait ends.
        assert!(store.wait_saved(marks, WAIT).await);
        assert_eq!(restored_hosts(dir.path()).await, vec![H1.to_string()]);
    }

    #[tokio::test]
    async fn without_a_journal_nothing_is_waited_for() {
        let store = store_with_a_cluster();
        assert!(store.wait_saved(store.marks(), Duration::ZERO).await);
        // Once one is attached, unsaved marks are waited for.
        store.attach_journal();
        assert!(
            !store
                .wait_saved(store.marks(), Duration::from_millis(50))
                .await
        );
    }
}

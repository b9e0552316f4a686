//! What the persister and the journal ask of the store: a full resync after a restart, the
//! restore of saved clusters and unbound hosts, and the changes not yet saved.

use jiff::Timestamp;

use super::*;

impl Store {
    /// How many marks were made so far: a request that changed the store waits until the journal
    /// has saved this many ([`Store::wait_saved`]).
    pub fn marks(&self) -> u64 {
        self.unsaved.lock().unwrap_or_else(|e| e.into_inner()).marks
    }

    /// Takes what the journal must write: the keys marked since its last call and the count
    /// of marks they cover.
    pub fn take_unsaved(&self) -> (u64, BTreeSet<Dirty>) {
        let mut unsaved = self.unsaved.lock().unwrap_or_else(|e| e.into_inner());
        (unsaved.marks, std::mem::take(&mut unsaved.keys))
    }

    /// Gives back keys the journal could not write; they go with its next pass.
    pub fn requeue_unsaved(&self, keys: impl IntoIterator<Item = Dirty>) {
        self.unsaved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys
            .extend(keys);
        self.journal_wake.notify_one();
    }

    /// Called by the journal when it starts: from now on changes are acknowledged once saved.
    pub fn attach_journal(&self) {
        self.journal_attached
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Published by the journal: the first `marks` marks are in the file store.
    pub fn saved_through(&self, marks: u64) {
        self.saved.send_if_modified(|saved| {
            let newer = marks > *saved;
            if newer {
                *saved = marks;
            }
            newer
        });
    }

    /// Waits until the first `marks` marks are saved; false when `timeout` passed first. Without
    /// a journal there is nothing to wait for.
    pub async fn wait_saved(&self, marks: u64, timeout: std::time::Duration) -> bool {
        if !self
            .journal_attached
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return true;
        }
        let mut saved = self.saved.subscribe();
        matches!(
            tokio::time::timeout(timeout, saved.wait_for(|s| *s >= marks)).await,
            Ok(Ok(_))
        )
    }

    /// Every dirty key for a full resync (after a restart).
    pub fn mark_all(&self) {
        let st = self.read();
        for (id, c) in &st.clusters {
            self.mark(Dirty::Cluster(id.clone()));
            for h in &c.snapshot.hosts {
                self.mark(Dirty::Host(h.id.clone()));
            }
        }
        for id in st.unbound.keys() {
            self.mark(Dirty::Host(id.clone()));
        }
    }

    /// Restores a persisted cluster after a restart; every agent gets a fresh check-in so it
    /// has one full disconnection timeout of grace.
    pub fn restore_cluster(&self, mut rec: ClusterRecord, now: Timestamp) {
        let mut st = self.write();
        for h in rec.snapshot.hosts.iter_mut() {
            if h.checked_in_at.is_some() {
                h.checked_in_at = Some(now);
            }
            st.host_cluster
                .insert(h.id.clone(), rec.snapshot.id.clone());
        }
        st.clusters.insert(rec.snapshot.id.clone(), rec);
    }

    pub fn restore_unbound(&self, mut h: HostSnapshot, now: Timestamp) {
        if h.checked_in_at.is_some() {
            h.checked_in_at = Some(now);
        }
        self.write().unbound.insert(h.id.clone(), h);
    }
}

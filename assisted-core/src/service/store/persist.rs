//! What the persister asks of the store: a full resync after a restart and the restore of
//! persisted clusters and unbound hosts.

use jiff::Timestamp;

use super::*;

impl Store {
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

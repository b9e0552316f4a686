//! What the monitor asks of the store: one pass over every cluster and host, the results of
//! install preparations, and day-2 installs once their ignition is written.

use jiff::Timestamp;

use super::*;
use crate::domain::net::calculated_machine_network;

/// How long auto-start waits after a failed preparation (so a broken input is not retried in
/// a tight loop; the condition tells the user what failed).
pub const PREPARATION_RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(30);

/// Work the monitor asks the async side to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Generate install-config and ignitions for a cluster that entered preparation.
    Prepare(String),
    /// Write the pointer ignition of a day-2 host (cluster id, host id), then start its install.
    InstallDay2(String, String),
}

/// One monitor pass over one cluster: what it marks dirty and asks of the async side.
struct Pass<'a> {
    cid: &'a String,
    now: Timestamp,
    cfg: &'a Config,
    dirty: &'a mut Vec<Dirty>,
    actions: &'a mut Vec<Action>,
}

impl Pass<'_> {
    /// Refreshes the cluster and its hosts (statuses, validations, suggested roles).
    fn refresh(&mut self, rec: &mut ClusterRecord, host_extra: &mut HashMap<String, HostExtra>) {
        let (cid, now, cfg) = (self.cid, self.now, self.cfg);
        let (dirty, actions) = (&mut *self.dirty, &mut *self.actions);
        if let Some(cidr) = calculated_machine_network(&rec.snapshot) {
            rec.snapshot.machine_networks = vec![cidr];
            dirty.push(Dirty::Cluster(cid.clone()));
        }
        let refresh = refresh_all(&rec.snapshot, now, cfg);
        for (h, o) in rec.snapshot.hosts.iter().zip(&refresh.hosts) {
            let extra = host_extra.entry(h.id.clone()).or_default();
            let suggested_changed =
                o.suggested_role.is_some() && o.suggested_role != h.suggested_role;
            // Typed comparison: building their JSON for each host on every pass was
            // most of an idle 1,000-host core's CPU.
            let validations_changed = o.validations.is_some() && extra.validations != o.validations;
            if o.changed || suggested_changed || validations_changed {
                dirty.push(Dirty::Host(h.id.clone()));
            }
            if validations_changed {
                extra.validations.clone_from(&o.validations);
            }
        }
        let cluster_validations_changed =
            refresh.cluster.validations.is_some() && rec.validations != refresh.cluster.validations;
        if refresh.cluster.changed || cluster_validations_changed {
            dirty.push(Dirty::Cluster(cid.clone()));
        }
        if cluster_validations_changed {
            rec.validations.clone_from(&refresh.cluster.validations);
        }
        apply_refresh(&mut rec.snapshot, &refresh, now);
        if refresh
            .cluster
            .effects
            .contains(&ClusterEffect::PreparationStarted)
        {
            actions.push(Action::Prepare(cid.clone()));
        }
    }

    /// Day-1 auto-start and day-2 installs.
    fn start_installs(&mut self, rec: &mut ClusterRecord) {
        let (cid, now, cfg) = (self.cid, self.now, self.cfg);
        let (dirty, actions) = (&mut *self.dirty, &mut *self.actions);
        // Day-1 auto-start (kube-API rule).
        let decision = auto_start_day1(
            &rec.snapshot,
            &AutoStartParams {
                hold: rec.settings.hold,
                unsynced_agents: rec.settings.unsynced_agents,
                spec_unsynced: rec.spec_error.is_some(),
            },
            cfg,
        );
        let backing_off = rec
            .preparation_failed_at
            .is_some_and(|t| elapsed(now, t) < PREPARATION_RETRY_DELAY);
        if decision.start
            && !backing_off
            && let Ok(plan) = start_install(&rec.snapshot, now, cfg)
        {
            apply_install_plan(&mut rec.snapshot, &plan, now);
            rec.preparation_error = None;
            if plan.schedulable_masters_forced_true {
                rec.snapshot.schedulable_masters = true;
            }
            actions.push(Action::Prepare(cid.clone()));
            dirty.push(Dirty::Cluster(cid.clone()));
            dirty.extend(rec.snapshot.hosts.iter().map(|h| Dirty::Host(h.id.clone())));
        }
        if rec.requirements.as_ref() != Some(&decision) {
            rec.requirements = Some(decision);
            dirty.push(Dirty::Cluster(cid.clone()));
        }

        // Day-2: approved known hosts of an adding-hosts cluster install once their
        // ignition is written (see `start_day2_install`).
        for hid in day2_hosts_to_install(&rec.snapshot) {
            actions.push(Action::InstallDay2(cid.clone(), hid.to_string()));
        }
    }
}

impl Store {
    /// One monitor pass: refresh every cluster and its hosts, decide day-1 auto-start and
    /// day-2 installs, and mark what changed. Pure apart from the dirty/wake signals.
    pub fn monitor_pass(&self, now: Timestamp) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut dirty = Vec::new();
        {
            let mut st = self.write();
            let st = &mut *st;
            for (cid, rec) in st.clusters.iter_mut() {
                let mut pass = Pass {
                    cid,
                    now,
                    cfg: &self.cfg,
                    dirty: &mut dirty,
                    actions: &mut actions,
                };
                pass.refresh(rec, &mut st.host_extra);
                pass.start_installs(rec);
            }
            for (hid, h) in st.unbound.iter_mut() {
                let o = refresh_host(h, None, now, &self.cfg);
                if o.changed {
                    dirty.push(Dirty::Host(hid.clone()));
                }
                apply_host_outcome(h, &o, now);
            }
        }
        dirty.sort();
        dirty.dedup();
        for d in dirty {
            self.mark(d);
        }
        actions
    }

    /// The install preparation finished (`Ok`) or failed.
    /// The install step's outcome; on success also the release's images the hosts' install
    /// step names (MCO, must-gather, CoreOS).
    pub fn preparation_done(
        &self,
        cluster_id: &str,
        result: Result<crate::domain::ReleaseInfo, impl std::fmt::Display>,
        now: Timestamp,
    ) {
        let mut st = self.write();
        if let Some(rec) = st.clusters.get_mut(cluster_id) {
            match result {
                Ok(release) => {
                    rec.snapshot.release = release;
                    rec.snapshot.preparation = PreparationStatus::Success;
                    rec.preparation_error = None;
                }
                Err(e) => {
                    rec.snapshot.preparation = PreparationStatus::Failed;
                    rec.preparation_error = Some(e.to_string());
                    rec.preparation_failed_at = Some(now);
                }
            }
        }
        drop(st);
        self.mark(Dirty::Cluster(cluster_id.to_string()));
        self.wake.notify_one();
    }

    /// Day-2 install of a known, approved host whose ignition is in place.
    pub fn start_day2_install(&self, cluster_id: &str, host_id: &str, now: Timestamp) -> bool {
        let mut st = self.write();
        let Some(rec) = st.clusters.get_mut(cluster_id) else {
            return false;
        };
        let Ok(idx) = host_index(rec, host_id) else {
            return false;
        };
        let Ok(o) = apply_host_event(
            &rec.snapshot.hosts[idx],
            Some(&rec.snapshot),
            &HostEvent::Install,
            now,
            &self.cfg,
        ) else {
            return false;
        };
        apply_host_outcome(&mut rec.snapshot.hosts[idx], &o, now);
        drop(st);
        self.mark(Dirty::Host(host_id.to_string()));
        self.wake.notify_one();
        true
    }
}

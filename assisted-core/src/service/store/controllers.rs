//! What the Kubernetes controllers ask of the store: InfraEnv, cluster and Agent specs in,
//! deregistration, and the day-2 hand-over after the install.

use jiff::Timestamp;

use super::*;

impl Store {
    /// Adds or updates an infra-env (InfraEnv controller).
    pub fn upsert_infra_env(&self, rec: InfraEnvRecord) {
        let mut st = self.write();
        // Kept apart from the records: the NTP step reads them for every host it plans.
        if rec.ntp_sources.is_empty() {
            st.infra_env_ntp.remove(&rec.id);
        } else {
            st.infra_env_ntp
                .insert(rec.id.clone(), rec.ntp_sources.clone());
        }
        st.infra_envs.insert(rec.id.clone(), rec);
    }

    pub fn remove_infra_env(&self, id: &str) {
        let mut st = self.write();
        st.infra_envs.remove(id);
        st.infra_env_ntp.remove(id);
    }

    /// Creates the cluster or updates its settings; `configure` writes the spec-derived
    /// fields of the snapshot (networks, counts, VIPs...) and leaves the state alone.
    pub fn upsert_cluster(
        &self,
        id: &str,
        name: &str,
        settings: ClusterSettings,
        spec_error: Option<String>,
        now: Timestamp,
        configure: impl FnOnce(&mut ClusterSnapshot),
    ) {
        let mut st = self.write();
        let rec = st.clusters.entry(id.to_string()).or_insert_with(|| {
            ClusterRecord::new(ClusterSnapshot::new(id, name, now), settings.clone())
        });
        // `configure` leaves the hosts alone: they are set aside rather than copied (a
        // 1,000-host cluster's copy on every reconcile was most of its cost).
        let hosts = std::mem::take(&mut rec.snapshot.hosts);
        let before = rec.snapshot.clone();
        configure(&mut rec.snapshot);
        let changed =
            rec.snapshot != before || rec.settings != settings || rec.spec_error != spec_error;
        rec.snapshot.hosts = hosts;
        rec.settings = settings;
        rec.spec_error = spec_error;
        drop(st);
        if changed {
            self.mark(Dirty::Cluster(id.to_string()));
            self.wake.notify_one();
        }
    }

    /// Drops a cluster and its hosts (deregistration).
    pub fn remove_cluster(&self, id: &str) {
        let mut st = self.write();
        if let Some(rec) = st.clusters.remove(id) {
            for h in rec.snapshot.hosts {
                st.host_cluster.remove(&h.id);
                st.host_extra.remove(&h.id);
            }
        }
        drop(st);
        // Its connectivity-check line goes with it (kept forever before: one per cluster ever made).
        self.connectivity_queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// Drops a host (Agent deleted).
    pub fn remove_host(&self, host_id: &str) {
        let mut st = self.write();
        match st.host_cluster.remove(host_id) {
            Some(cid) => {
                if let Some(rec) = st.clusters.get_mut(&cid) {
                    rec.snapshot.hosts.retain(|h| h.id != host_id);
                }
            }
            None => {
                st.unbound.remove(host_id);
            }
        }
        st.host_extra.remove(host_id);
        drop(st);
        self.wake.notify_one();
    }

    /// Applies the Agent spec to the host; `false` when the host is unknown.
    pub fn sync_host_spec(
        &self,
        host_id: &str,
        spec: &HostSpec,
        spec_error: Option<String>,
    ) -> bool {
        let mut st = self.write();
        let st = &mut *st;
        let host = match st.host_cluster.get(host_id) {
            Some(cid) => st
                .clusters
                .get_mut(cid)
                .and_then(|c| c.snapshot.host_mut(host_id)),
            None => st.unbound.get_mut(host_id),
        };
        let Some(h) = host else {
            return false;
        };
        let before = h.clone();
        // Roles and disks are fixed once the install started; later edits are ignored.
        if h.status.is_pre_install() || h.status.is_unbound_state() {
            h.role = match spec.role {
                HostRole::Bootstrap => HostRole::Master,
                // Hosts added to an installed cluster are workers unless told otherwise.
                HostRole::AutoAssign if h.is_day2() => HostRole::Worker,
                r => r,
            };
            h.requested_hostname = spec.hostname.clone();
            if spec.installation_disk_id.is_some() {
                h.installation_disk_id = spec.installation_disk_id.clone();
            }
            if spec.machine_config_pool.is_some() {
                h.machine_config_pool = spec.machine_config_pool.clone();
            } else if h.is_day2()
                && h.role != before.role
                && h.machine_config_pool
                    .as_deref()
                    .is_none_or(|p| p == before.day2_role().as_str())
            {
                // A day-2 host's pool follows its role unless one was named (upstream's
                // updateRole): a day-2 master fetches `/config/master`.
                h.machine_config_pool = Some(h.day2_role().as_str().to_string());
            }
            h.installer_args = spec.installer_args.clone();
            h.ignition_config_overrides = spec.ignition_config_overrides.clone();
        }
        // Labels may change at any time: they are applied to the Node after the install.
        h.node_labels = spec.node_labels.clone();
        h.approved = spec.approved;
        let changed = *h != before;
        let extra = st.host_extra.entry(host_id.to_string()).or_default();
        let err_changed = extra.spec_error != spec_error;
        extra.spec_error = spec_error;
        if changed || err_changed {
            self.mark(Dirty::Host(host_id.to_string()));
            self.wake.notify_one();
        }
        true
    }

    /// A day-2 host's stage as the workload cluster shows it (Joined, Done): the core reports
    /// it because no installer runs after the reboot into the existing cluster.
    pub fn day2_progress(
        &self,
        cluster_id: &str,
        host_id: &str,
        stage: HostStage,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut st = self.write();
        let rec = st
            .clusters
            .get_mut(cluster_id)
            .ok_or_else(|| host_not_found(host_id))?;
        let idx = host_index(rec, host_id)?;
        let out = update_host_progress(
            &rec.snapshot.hosts[idx],
            Some(&rec.snapshot),
            stage,
            "",
            now,
            &self.cfg,
        )
        .map_err(StoreError::from)?;
        apply_host_outcome(&mut rec.snapshot.hosts[idx], &out, now);
        drop(st);
        self.mark(Dirty::Host(host_id.to_string()));
        self.wake.notify_one();
        Ok(())
    }

    /// installed → adding-hosts once the ClusterDeployment is marked installed.
    pub fn transform_to_day2(&self, cluster_id: &str, now: Timestamp) -> bool {
        let mut st = self.write();
        let Some(rec) = st.clusters.get_mut(cluster_id) else {
            return false;
        };
        if rec.snapshot.status != ClusterStatus::Installed {
            return false;
        }
        let Ok(out) = transform_to_day2(&rec.snapshot) else {
            return false;
        };
        apply_cluster_outcome(&mut rec.snapshot, &out, now);
        drop(st);
        self.mark(Dirty::Cluster(cluster_id.to_string()));
        self.wake.notify_one();
        true
    }
}

#[cfg(test)]
mod ntp_tests {
    use super::*;

    /// The NTP step of an unbound host of an InfraEnv asks for that InfraEnv's sources.
    #[test]
    fn infra_env_ntp_sources_reach_the_ntp_step() {
        let (store, _rx) = Store::new(Config::default());
        store.upsert_infra_env(InfraEnvRecord {
            id: "ie".into(),
            ntp_sources: vec![
                "clock.example.com".into(),
                "10.0.0.1".into(),
                "pool.ntp.org".into(),
            ],
            ..Default::default()
        });
        let now = Timestamp::UNIX_EPOCH;
        let host = "33333333-3333-3333-3333-333333333333";
        store.register_host("ie", host, "agent", now).unwrap();
        let steps = store
            .next_steps("ie", host, None, None, 1, None, now)
            .unwrap();
        let ntp = steps
            .instructions
            .iter()
            .find(|s| s.step_type == StepType::NtpSynchronizer)
            .expect("an unbound host gets the NTP step");
        assert_eq!(
            ntp.args,
            [r#"{"ntp_source":"clock.example.com,10.0.0.1,pool.ntp.org"}"#]
        );
        store.remove_infra_env("ie");
        assert!(store.view(|st| st.infra_env_ntp.is_empty()));
    }
}

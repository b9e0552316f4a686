//! What the agent REST API asks of the store: registration, next-steps, step replies, install
//! and finalizing progress, and the records the handlers answer with.

use jiff::Timestamp;

use super::*;
use crate::domain::connectivity_pace::{
    MAX_CONNECTIVITY_CHECKS_PER_MINUTE, connectivity_check_due,
};

fn parse_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

impl Store {
    /// `v2RegisterHost`.
    pub fn register_host(
        &self,
        infra_env_id: &str,
        host_id: &str,
        agent_version: &str,
        now: Timestamp,
    ) -> Result<HostSnapshot, StoreError> {
        if !parse_uuid(host_id) {
            return Err(StoreError::Invalid(format!(
                "host_id {host_id:?} is not a UUID"
            )));
        }
        let mut st = self.write();
        let ie = Self::infra_env(&st, infra_env_id)?;
        let existing_ie = st.host(host_id).map(|h| h.infra_env_id.clone());
        if let Some(other) = existing_ie.as_deref()
            && other != infra_env_id
        {
            return Err(StoreError::Conflict(format!(
                "host {host_id} is already registered in another infra-env"
            )));
        }
        let cluster = ie.cluster_id.as_deref().and_then(|c| st.clusters.get(c));
        if ie.cluster_id.is_some() && cluster.is_none() {
            return Err(StoreError::Conflict(format!(
                "the cluster of infra-env {infra_env_id} is not ready yet"
            )));
        }
        let existing = st.host(host_id);
        let reg = register_host(
            host_id,
            infra_env_id,
            existing,
            cluster.map(|c| &c.snapshot),
            now,
            &self.cfg,
        )
        .map_err(StoreError::from)?;
        let registered = match reg {
            Registration::New(mut h) => {
                h.discovery_agent_version = agent_version.to_string();
                if ie.auto_approve {
                    h.approved = true;
                }
                let h = *h;
                match &h.cluster_id {
                    Some(cid) => {
                        st.host_cluster.insert(h.id.clone(), cid.clone());
                        if let Some(c) = st.clusters.get_mut(cid) {
                            c.snapshot.hosts.push(h.clone());
                        }
                    }
                    None => {
                        st.unbound.insert(h.id.clone(), h.clone());
                    }
                }
                self.mark(Dirty::NewHost(h.id.clone()));
                h
            }
            Registration::Existing(out) => {
                drop(st);
                self.with_host_mut(infra_env_id, host_id, |h, _, _| {
                    apply_host_outcome(h, &out, now);
                    h.discovery_agent_version = agent_version.to_string();
                    h.checked_in_at = Some(now);
                    Ok(h.clone())
                })?
            }
        };
        self.mark(Dirty::Host(host_id.to_string()));
        self.wake.notify_one();
        Ok(registered)
    }

    /// `v2GetNextSteps`: records the check-in, then asks the domain for the steps.
    // Each argument is one piece of the agent's request; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub fn next_steps(
        &self,
        infra_env_id: &str,
        host_id: &str,
        host_timestamp: Option<Timestamp>,
        agent_version: Option<&str>,
        seed: u64,
        boot_artifacts: Option<&BootArtifactUrls>,
        now: Timestamp,
    ) -> Result<Steps, StoreError> {
        let missing = || StoreError::NotFound(format!("host {host_id} not found"));
        {
            // The check-in is a few field writes in place: no copy of the host.
            let mut st = self.write();
            let st = &mut *st;
            let h = match st.host_cluster.get(host_id) {
                Some(cid) => st
                    .clusters
                    .get_mut(cid)
                    .and_then(|c| c.snapshot.host_mut(host_id)),
                None => st.unbound.get_mut(host_id),
            }
            .filter(|h| h.infra_env_id == infra_env_id)
            .ok_or_else(missing)?;
            h.checked_in_at = Some(now);
            if host_timestamp.is_some() {
                h.host_timestamp = host_timestamp;
            }
            if let Some(v) = agent_version
                && h.discovery_agent_version != v
            {
                h.discovery_agent_version = v.to_string();
            }
        }
        // Computing the steps only reads: under the read lock agents are served in parallel.
        let st = self.read();
        let (h, rec) = st
            .host_with_cluster(host_id)
            .filter(|(h, _)| h.infra_env_id == infra_env_id)
            .ok_or_else(missing)?;
        let connectivity_check = state_carries_connectivity_check(h.status)
            && rec.is_none_or(|r| self.connectivity_check_due(r, host_id, now));
        Ok(next_steps_with_ntp(
            &NextStepsInput {
                host: h,
                cluster: rec.map(|r| &r.snapshot),
                cfg: &self.cfg,
                seed,
                boot_artifacts,
                connectivity_check,
            },
            &st.infra_env_ntp,
        ))
    }

    /// Whether the host's next-steps answer carries the connectivity check: always in clusters up
    /// to 150 hosts, else at upstream's pace (`domain::connectivity_pace`). The pace is volatile,
    /// as upstream's in-memory queue is.
    fn connectivity_check_due(
        &self,
        cluster: &ClusterRecord,
        host_id: &str,
        now: Timestamp,
    ) -> bool {
        let hosts = cluster.snapshot.hosts.len();
        if hosts <= MAX_CONNECTIVITY_CHECKS_PER_MINUTE {
            return true;
        }
        let mut queues = self
            .connectivity_queues
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let queue = queues.entry(cluster.snapshot.id.clone()).or_default();
        connectivity_check_due(hosts, queue, host_id, now)
    }

    /// `v2PostStepReply`.
    pub fn step_reply(
        &self,
        infra_env_id: &str,
        host_id: &str,
        reply: &StepReply,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let changed = self.with_host_mut(infra_env_id, host_id, |h, cluster, cfg| {
            let out = apply_step_reply(h, reply, cfg);
            if out.media_disconnected
                && let Ok(o) = apply_host_event(h, cluster, &HostEvent::MediaDisconnect, now, cfg)
            {
                apply_host_outcome(h, &o, now);
            }
            if let Some(err) = &out.error {
                tracing::info!(host = %host_id, step = %reply.step_id, error = %err, "step failed");
            }
            Ok(out.updated || out.media_disconnected)
        })?;
        if changed {
            self.mark(Dirty::Host(host_id.to_string()));
            self.wake.notify_one();
        }
        Ok(())
    }

    /// `v2UpdateHostInstallProgress`.
    pub fn update_progress(
        &self,
        infra_env_id: &str,
        host_id: &str,
        stage: &str,
        progress_info: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let stage = HostStage::parse(stage)
            .ok_or_else(|| StoreError::Invalid(format!("unknown host stage {stage:?}")))?;
        self.with_host_mut(infra_env_id, host_id, |h, cluster, cfg| {
            let out = update_host_progress(h, cluster, stage, progress_info, now, cfg)
                .map_err(StoreError::from)?;
            apply_host_outcome(h, &out, now);
            Ok(())
        })?;
        self.mark(Dirty::Host(host_id.to_string()));
        self.wake.notify_one();
        Ok(())
    }

    /// `v2UpdateHostLogsProgress`.
    pub fn update_logs_progress(
        &self,
        infra_env_id: &str,
        host_id: &str,
        state: &str,
    ) -> Result<(), StoreError> {
        let state = match state {
            "requested" => LogsState::Requested,
            "collecting" => LogsState::Collecting,
            "completed" => LogsState::Completed,
            "timeout" => LogsState::Timeout,
            other => {
                return Err(StoreError::Invalid(format!("unknown logs_state {other:?}")));
            }
        };
        self.with_host_mut(infra_env_id, host_id, |h, _, _| {
            h.logs_state = state;
            Ok(())
        })?;
        self.mark(Dirty::Host(host_id.to_string()));
        Ok(())
    }

    /// Whether the cluster is known (`NotFound` otherwise), without copying it.
    pub fn cluster_exists(&self, cluster_id: &str) -> Result<(), StoreError> {
        if self.read().clusters.contains_key(cluster_id) {
            Ok(())
        } else {
            Err(StoreError::NotFound(format!(
                "cluster {cluster_id} not found"
            )))
        }
    }

    /// A copy of a cluster (GET cluster, hosts list).
    pub fn cluster(&self, cluster_id: &str) -> Result<ClusterRecord, StoreError> {
        self.read()
            .clusters
            .get(cluster_id)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(format!("cluster {cluster_id} not found")))
    }

    /// Cluster ids an infra-env's token may act on.
    pub fn infra_env_cluster(&self, infra_env_id: &str) -> Option<Option<String>> {
        self.read()
            .infra_envs
            .get(infra_env_id)
            .map(|ie| ie.cluster_id.clone())
    }

    /// Whether this core serves the infra-env (its InfraEnv reconciled here).
    pub fn holds_infra_env(&self, infra_env_id: &str) -> bool {
        self.read().infra_envs.contains_key(infra_env_id)
    }

    /// The cluster an infra-env serves: its record's binding, or, while its record is not
    /// loaded or not yet bound (a restarted core learns infra-envs from their next reconcile,
    /// but restores the clusters with their hosts at once), the cluster one of whose hosts
    /// registered through it.
    pub fn infra_env_bound_cluster(&self, infra_env_id: &str) -> Option<String> {
        let st = self.read();
        let recorded = st
            .infra_envs
            .get(infra_env_id)
            .and_then(|ie| ie.cluster_id.clone());
        recorded.or_else(|| {
            st.clusters
                .values()
                .find(|c| {
                    c.snapshot
                        .hosts
                        .iter()
                        .any(|h| h.infra_env_id == infra_env_id)
                })
                .map(|c| c.snapshot.id.clone())
        })
    }

    /// The infra-env's hosts whose inventory lists `mac` (any case): what its iPXE script
    /// answers a host booting with that MAC.
    pub fn hosts_with_mac(
        &self,
        infra_env_id: &str,
        mac: &str,
    ) -> Vec<crate::service::images::pxe::HostWithMac> {
        self.view(|st| {
            st.clusters
                .values()
                .flat_map(|c| c.snapshot.hosts.iter())
                .chain(st.unbound.values())
                .filter(|h| h.infra_env_id == infra_env_id)
                .filter(|h| h.inventory.as_ref().is_some_and(|i| i.has_mac(mac)))
                .map(|h| crate::service::images::pxe::HostWithMac {
                    id: h.id.clone(),
                    status: h.status,
                    stage: h.progress.current_stage,
                })
                .collect()
        })
    }

    pub fn infra_env_record(&self, infra_env_id: &str) -> Result<InfraEnvRecord, StoreError> {
        Self::infra_env(&self.read(), infra_env_id)
    }
    /// `v2UpdateClusterFinalizingProgress`.
    pub fn finalizing_progress(
        &self,
        cluster_id: &str,
        stage: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let stage = FinalizingStage::parse(stage)
            .ok_or_else(|| StoreError::Invalid(format!("unknown finalizing stage {stage:?}")))?;
        self.with_cluster_mut(cluster_id, |c| {
            if c.snapshot.finalizing_stage != Some(stage) {
                c.snapshot.finalizing_stage = Some(stage);
                c.snapshot.finalizing_stage_started_at = Some(now);
            }
            Ok(())
        })
    }

    /// `v2ReportMonitoredOperatorStatus`.
    pub fn report_operator(
        &self,
        cluster_id: &str,
        name: &str,
        status: &str,
    ) -> Result<(), StoreError> {
        let status = OperatorStatus::parse(status)
            .ok_or_else(|| StoreError::Invalid(format!("unknown operator status {status:?}")))?;
        self.with_cluster_mut(cluster_id, |c| {
            match c
                .snapshot
                .monitored_operators
                .iter_mut()
                .find(|o| o.name == name)
            {
                Some(o) => o.status = Some(status),
                None => c.snapshot.monitored_operators.push(MonitoredOperator {
                    name: name.to_string(),
                    kind: OperatorType::Olm,
                    status: Some(status),
                }),
            }
            Ok(())
        })
    }

    /// The final kubeconfig (with the ingress CA) was written to the file store.
    pub fn kubeconfig_uploaded(&self, cluster_id: &str) -> Result<(), StoreError> {
        self.with_cluster_mut(cluster_id, |c| {
            c.snapshot.kubeconfig_uploaded = true;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IE: &str = "11111111-1111-1111-1111-111111111111";
    const CL: &str = "22222222-2222-2222-2222-222222222222";
    const H1: &str = "33333333-3333-3333-3333-333333333333";

    fn store() -> (Arc<Store>, DirtyReceiver) {
        Store::with_bound_infra_env(IE, CL)
    }

    #[test]
    fn register_creates_a_bound_host_and_marks_it_new() {
        let (s, mut rx) = store();
        let h = s
            .register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap();
        assert_eq!(h.status, HostStatus::Discovering);
        assert_eq!(h.cluster_id.as_deref(), Some(CL));
        assert_eq!(rx.try_recv().unwrap(), Dirty::NewHost(H1.into()));
        assert!(s.read().host(H1).is_some());
    }

    #[test]
    fn register_rejects_bad_ids_and_unknown_infra_envs() {
        let (s, _rx) = store();
        let e = s
            .register_host(IE, "not-a-uuid", "v1", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert!(matches!(e, StoreError::Invalid(_)), "{e:?}");
        let e = s
            .register_host(CL, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert!(matches!(e, StoreError::NotFound(_)), "{e:?}");
    }

    #[test]
    fn a_host_is_invisible_through_another_infra_env() {
        let (s, _rx) = store();
        s.register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap();
        let e = s
            .next_steps(CL, H1, None, None, 1, None, Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert!(matches!(e, StoreError::NotFound(_)), "{e:?}");
    }

    /// `n` hosts registered to the big cluster, ids `00000000-0000-0000-0000-<n as 12 digits>`.
    fn big_cluster(n: usize) -> (Arc<Store>, Vec<String>) {
        let (s, _rx) = store();
        let ids: Vec<String> = (0..n)
            .map(|i| format!("00000000-0000-0000-0000-{i:012}"))
            .collect();
        for id in &ids {
            s.register_host(IE, id, "v1", Timestamp::UNIX_EPOCH)
                .unwrap();
        }
        (s, ids)
    }

    fn queued(s: &Store) -> bool {
        s.connectivity_queues.lock().unwrap().contains_key(CL)
    }

    #[test]
    fn discovering_hosts_do_not_use_up_the_connectivity_pace() {
        let (s, ids) = big_cluster(MAX_CONNECTIVITY_CHECKS_PER_MINUTE + 10);
        let now = Timestamp::from_second(10).unwrap();
        for id in &ids {
            s.next_steps(IE, id, None, None, 1, None, now).unwrap();
        }
        // Discovering hosts never carry the check, so they are not admitted (upstream asks its
        // limiter only from the connectivity command, run in the discovery states).
        assert!(!queued(&s));
        s.edit_for_tests(|st| {
            let c = st.clusters.get_mut(CL).unwrap();
            c.snapshot.host_mut(&ids[0]).unwrap().status = HostStatus::Insufficient;
        });
        s.next_steps(IE, &ids[0], None, None, 1, None, now).unwrap();
        assert!(queued(&s));
        // The cluster's line goes with the cluster.
        s.remove_cluster(CL);
        assert!(!queued(&s));
    }

    #[test]
    fn next_steps_records_the_check_in() {
        let (s, _rx) = store();
        let t0 = Timestamp::UNIX_EPOCH;
        s.register_host(IE, H1, "v1", t0).unwrap();
        let later = Timestamp::from_second(100).unwrap();
        let steps = s
            .next_steps(IE, H1, None, Some("v2"), 1, None, later)
            .unwrap();
        assert!(!steps.instructions.is_empty());
        let st = s.read();
        let h = st.host(H1).unwrap();
        assert_eq!(h.checked_in_at, Some(later));
        assert_eq!(h.discovery_agent_version, "v2");
    }

    #[test]
    fn progress_rejects_unknown_stages_and_wrong_states() {
        let (s, _rx) = store();
        s.register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap();
        let e = s
            .update_progress(IE, H1, "Flying", "", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert!(matches!(e, StoreError::Invalid(_)), "{e:?}");
        let e = s
            .update_progress(IE, H1, "Installing", "", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
    }

    #[test]
    fn registration_is_refused_once_the_cluster_installs() {
        let (s, _rx) = store();
        s.write().clusters.get_mut(CL).unwrap().snapshot.status = ClusterStatus::Installed;
        let e = s
            .register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
        assert!(e.to_string().contains("original Discovery ISO"));
    }
}

//! The in-memory index of clusters, hosts and infra-envs that the REST API, the controllers and
//! the monitor share. Every mutation goes through the pure [`crate::domain`] functions; what
//! changed is reported as [`Dirty`] keys, which the persister writes to the CRs and the file
//! store. Only the agents' last check-in is volatile: it is not persisted.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use jiff::Timestamp;
use tokio::sync::{Notify, mpsc};

use super::error::ApiError;
use crate::domain::net::calculated_machine_network;
use crate::domain::*;

/// A record whose persisted form is out of date.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dirty {
    /// A host registered for the first time: its Agent CR must be created.
    NewHost(String),
    Host(String),
    Cluster(String),
}

/// What the REST layer needs of an InfraEnv (filled by the InfraEnv controller).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InfraEnvRecord {
    /// The InfraEnv's `metadata.uid`: stable across restarts, a UUID like upstream's ids.
    pub id: String,
    pub namespace: String,
    pub name: String,
    /// The bound cluster (ClusterDeployment uid), `None` for late binding.
    pub cluster_id: Option<String>,
    /// ClusterDeployment name for new Agents' `spec.clusterDeploymentName`.
    pub cluster_deployment_name: Option<String>,
    /// Labels every new Agent gets (`spec.agentLabels`).
    pub agent_labels: BTreeMap<String, String>,
    pub auto_approve: bool,
    /// The discovery ignition served as `discovery.ign`.
    pub discovery_ignition: Arc<str>,
    /// `static-network-config` file content (JSON list).
    pub static_network_config: String,
    /// The iPXE script served as `ipxe-script` (DiscoveryImageAlways form).
    pub ipxe_script: String,
    /// The minimal-ISO initrd overlay; `None` when there is nothing to add (204).
    pub minimal_initrd: Option<Arc<[u8]>>,
    pub cpu_architecture: String,
    pub openshift_version: String,
}

/// Cluster settings and kube-side flags the controller owns; the domain snapshot holds state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterSettings {
    pub namespace: String,
    pub cluster_deployment: String,
    pub agent_cluster_install: String,
    pub pull_secret: String,
    pub ssh_public_key: String,
    pub install_config_overrides: Option<String>,
    /// `holdInstallation` or the Hive reconcile-pause annotation.
    pub hold: bool,
    /// Agents whose spec could not be applied (SpecSynced=False).
    pub unsynced_agents: usize,
    pub release_image: String,
    pub proxy: Option<Proxy>,
    /// User manifests from the ACI's ConfigMaps (file name → content).
    pub manifests: Vec<(String, Vec<u8>)>,
}

/// One cluster: the domain snapshot plus what the service layer keeps beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRecord {
    pub snapshot: ClusterSnapshot,
    pub settings: ClusterSettings,
    /// Last validations of the cluster (`validationsInfo`).
    pub validations_info: Option<serde_json::Value>,
    /// Last RequirementsMet decision.
    pub requirements: Option<AutoStartDecision>,
    /// Last install-preparation error, for the LastInstallationPreparationFailed condition.
    pub preparation_error: Option<String>,
    /// Why the CD/ACI spec could not be applied (SpecSynced=False).
    pub spec_error: Option<String>,
    /// When the last install preparation failed; auto-start waits a while before retrying.
    pub preparation_failed_at: Option<Timestamp>,
}

/// How long auto-start waits after a failed preparation (so a broken input is not retried in
/// a tight loop; the condition tells the user what failed).
pub const PREPARATION_RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(30);

impl ClusterRecord {
    pub fn new(snapshot: ClusterSnapshot, settings: ClusterSettings) -> ClusterRecord {
        ClusterRecord {
            snapshot,
            settings,
            validations_info: None,
            requirements: None,
            preparation_error: None,
            spec_error: None,
            preparation_failed_at: None,
        }
    }
}

/// Per-host data beside the snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostExtra {
    pub validations_info: Option<serde_json::Value>,
    /// Why the Agent spec could not be applied (SpecSynced=False).
    pub spec_error: Option<String>,
}

/// The Agent spec fields the host record follows.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    pub role: HostRole,
    pub hostname: Option<String>,
    pub approved: bool,
    pub installation_disk_id: Option<String>,
    pub machine_config_pool: Option<String>,
    pub installer_args: Option<String>,
    pub ignition_config_overrides: Option<String>,
    pub node_labels: BTreeMap<String, String>,
}

#[derive(Default)]
pub struct State {
    pub infra_envs: HashMap<String, InfraEnvRecord>,
    pub clusters: HashMap<String, ClusterRecord>,
    /// Unbound (late-binding) hosts by id.
    pub unbound: HashMap<String, HostSnapshot>,
    /// Bound host id → cluster id.
    pub host_cluster: HashMap<String, String>,
    pub host_extra: HashMap<String, HostExtra>,
}

impl State {
    pub fn host(&self, host_id: &str) -> Option<&HostSnapshot> {
        match self.host_cluster.get(host_id) {
            Some(c) => self.clusters.get(c).and_then(|c| c.snapshot.host(host_id)),
            None => self.unbound.get(host_id),
        }
    }

    /// The host and its cluster, for read-only decisions.
    pub fn host_with_cluster(
        &self,
        host_id: &str,
    ) -> Option<(&HostSnapshot, Option<&ClusterRecord>)> {
        match self.host_cluster.get(host_id) {
            Some(c) => {
                let rec = self.clusters.get(c)?;
                Some((rec.snapshot.host(host_id)?, Some(rec)))
            }
            None => self.unbound.get(host_id).map(|h| (h, None)),
        }
    }
}

/// The shared store. Locks are held only for the pure computations, never across I/O.
pub struct Store {
    state: RwLock<State>,
    pub cfg: Config,
    dirty: mpsc::UnboundedSender<Dirty>,
    /// Wakes the monitor early (a host changed state, an approval arrived...).
    pub wake: Notify,
}

/// The receiving end of the dirty keys, for the persister.
pub type DirtyReceiver = mpsc::UnboundedReceiver<Dirty>;

fn parse_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn host_error(e: HostEventError) -> ApiError {
    match e {
        HostEventError::RegistrationRefused(m) => ApiError::conflict(m),
        HostEventError::StageBackwards { .. } => ApiError::bad_request(e.to_string()),
        other => ApiError::conflict(other.to_string()),
    }
}

impl Store {
    pub fn new(cfg: Config) -> (Arc<Store>, DirtyReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let store = Store {
            state: RwLock::new(State::default()),
            cfg,
            dirty: tx,
            wake: Notify::new(),
        };
        (Arc::new(store), rx)
    }

    // A poisoned lock means a panic elsewhere; the state itself is still consistent because
    // every mutation is computed before it is written, so keep serving.
    pub fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }
    pub fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn mark(&self, d: Dirty) {
        // The receiver lives as long as the service; a send error only happens at shutdown.
        let _ = self.dirty.send(d);
    }

    fn infra_env(st: &State, infra_env_id: &str) -> Result<InfraEnvRecord, ApiError> {
        st.infra_envs
            .get(infra_env_id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("infra-env {infra_env_id} not found")))
    }

    /// Runs `f` on the host (and its cluster), checking it belongs to `infra_env_id`.
    fn with_host_mut<T>(
        &self,
        infra_env_id: &str,
        host_id: &str,
        f: impl FnOnce(&mut HostSnapshot, Option<&ClusterSnapshot>, &Config) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut st = self.write();
        let missing = || ApiError::not_found(format!("host {host_id} not found"));
        let st = &mut *st;
        let r = match st.host_cluster.get(host_id) {
            Some(cid) => {
                let rec = st.clusters.get_mut(cid).ok_or_else(missing)?;
                let idx = rec
                    .snapshot
                    .hosts
                    .iter()
                    .position(|h| h.id == host_id)
                    .ok_or_else(missing)?;
                if rec.snapshot.hosts[idx].infra_env_id != infra_env_id {
                    return Err(missing());
                }
                // The domain reads the cluster while the host changes: work on a copy.
                let mut host = rec.snapshot.hosts[idx].clone();
                let r = f(&mut host, Some(&rec.snapshot), &self.cfg)?;
                rec.snapshot.hosts[idx] = host;
                r
            }
            None => {
                let host = st.unbound.get_mut(host_id).ok_or_else(missing)?;
                if host.infra_env_id != infra_env_id {
                    return Err(missing());
                }
                f(host, None, &self.cfg)?
            }
        };
        Ok(r)
    }

    /// `v2RegisterHost`.
    pub fn register_host(
        &self,
        infra_env_id: &str,
        host_id: &str,
        agent_version: &str,
        now: Timestamp,
    ) -> Result<HostSnapshot, ApiError> {
        if !parse_uuid(host_id) {
            return Err(ApiError::bad_request(format!(
                "host_id {host_id:?} is not a UUID"
            )));
        }
        let mut st = self.write();
        let ie = Self::infra_env(&st, infra_env_id)?;
        let existing_ie = st.host(host_id).map(|h| h.infra_env_id.clone());
        if let Some(other) = existing_ie.as_deref()
            && other != infra_env_id
        {
            return Err(ApiError::conflict(format!(
                "host {host_id} is already registered in another infra-env"
            )));
        }
        let cluster = ie.cluster_id.as_deref().and_then(|c| st.clusters.get(c));
        if ie.cluster_id.is_some() && cluster.is_none() {
            return Err(ApiError::conflict(format!(
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
        .map_err(host_error)?;
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
    ) -> Result<Steps, ApiError> {
        let missing = || ApiError::not_found(format!("host {host_id} not found"));
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
        Ok(next_steps(&NextStepsInput {
            host: h,
            cluster: rec.map(|r| &r.snapshot),
            cfg: &self.cfg,
            seed,
            boot_artifacts,
        }))
    }

    /// `v2PostStepReply`.
    pub fn step_reply(
        &self,
        infra_env_id: &str,
        host_id: &str,
        reply: &StepReply,
        now: Timestamp,
    ) -> Result<(), ApiError> {
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
    ) -> Result<(), ApiError> {
        let stage = HostStage::parse(stage)
            .ok_or_else(|| ApiError::bad_request(format!("unknown host stage {stage:?}")))?;
        self.with_host_mut(infra_env_id, host_id, |h, cluster, cfg| {
            let out = update_host_progress(h, cluster, stage, progress_info, now, cfg)
                .map_err(host_error)?;
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
    ) -> Result<(), ApiError> {
        let state = match state {
            "requested" => LogsState::Requested,
            "collecting" => LogsState::Collecting,
            "completed" => LogsState::Completed,
            "timeout" => LogsState::Timeout,
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown logs_state {other:?}"
                )));
            }
        };
        self.with_host_mut(infra_env_id, host_id, |h, _, _| {
            h.logs_state = state;
            Ok(())
        })?;
        self.mark(Dirty::Host(host_id.to_string()));
        Ok(())
    }

    /// A copy of a cluster (GET cluster, hosts list).
    pub fn cluster(&self, cluster_id: &str) -> Result<ClusterRecord, ApiError> {
        self.read()
            .clusters
            .get(cluster_id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("cluster {cluster_id} not found")))
    }

    /// Cluster ids an infra-env's token may act on.
    pub fn infra_env_cluster(&self, infra_env_id: &str) -> Option<Option<String>> {
        self.read()
            .infra_envs
            .get(infra_env_id)
            .map(|ie| ie.cluster_id.clone())
    }

    pub fn infra_env_record(&self, infra_env_id: &str) -> Result<InfraEnvRecord, ApiError> {
        Self::infra_env(&self.read(), infra_env_id)
    }

    fn with_cluster_mut<T>(
        &self,
        cluster_id: &str,
        f: impl FnOnce(&mut ClusterRecord) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut st = self.write();
        let rec = st
            .clusters
            .get_mut(cluster_id)
            .ok_or_else(|| ApiError::not_found(format!("cluster {cluster_id} not found")))?;
        let r = f(rec)?;
        drop(st);
        self.mark(Dirty::Cluster(cluster_id.to_string()));
        self.wake.notify_one();
        Ok(r)
    }

    /// `v2UpdateClusterFinalizingProgress`.
    pub fn finalizing_progress(
        &self,
        cluster_id: &str,
        stage: &str,
        now: Timestamp,
    ) -> Result<(), ApiError> {
        let stage = FinalizingStage::parse(stage)
            .ok_or_else(|| ApiError::bad_request(format!("unknown finalizing stage {stage:?}")))?;
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
    ) -> Result<(), ApiError> {
        let status = OperatorStatus::parse(status)
            .ok_or_else(|| ApiError::bad_request(format!("unknown operator status {status:?}")))?;
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
    pub fn kubeconfig_uploaded(&self, cluster_id: &str) -> Result<(), ApiError> {
        self.with_cluster_mut(cluster_id, |c| {
            c.snapshot.kubeconfig_uploaded = true;
            Ok(())
        })
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const IE: &str = "11111111-1111-1111-1111-111111111111";
    const CL: &str = "22222222-2222-2222-2222-222222222222";
    const H1: &str = "33333333-3333-3333-3333-333333333333";

    fn store() -> (Arc<Store>, DirtyReceiver) {
        let (s, rx) = Store::new(Config::default());
        {
            let mut st = s.write();
            st.infra_envs.insert(
                IE.into(),
                InfraEnvRecord {
                    id: IE.into(),
                    cluster_id: Some(CL.into()),
                    ..Default::default()
                },
            );
            st.clusters.insert(
                CL.into(),
                ClusterRecord::new(
                    ClusterSnapshot::new(CL, "c1", Timestamp::UNIX_EPOCH),
                    ClusterSettings::default(),
                ),
            );
        }
        (s, rx)
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
        assert_eq!(e.status.as_u16(), 400);
        let e = s
            .register_host(CL, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert_eq!(e.status.as_u16(), 404);
    }

    #[test]
    fn a_host_is_invisible_through_another_infra_env() {
        let (s, _rx) = store();
        s.register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap();
        let e = s
            .next_steps(CL, H1, None, None, 1, None, Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert_eq!(e.status.as_u16(), 404);
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
        assert_eq!(e.status.as_u16(), 400);
        let e = s
            .update_progress(IE, H1, "Installing", "", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert_eq!(e.status.as_u16(), 409);
    }

    #[test]
    fn registration_is_refused_once_the_cluster_installs() {
        let (s, _rx) = store();
        s.write().clusters.get_mut(CL).unwrap().snapshot.status = ClusterStatus::Installed;
        let e = s
            .register_host(IE, H1, "v1", Timestamp::UNIX_EPOCH)
            .unwrap_err();
        assert_eq!(e.status.as_u16(), 409);
        assert!(e.reason.contains("original Discovery ISO"));
    }
}

impl Store {
    /// Adds or updates an infra-env (InfraEnv controller).
    pub fn upsert_infra_env(&self, rec: InfraEnvRecord) {
        self.write().infra_envs.insert(rec.id.clone(), rec);
    }

    pub fn remove_infra_env(&self, id: &str) {
        self.write().infra_envs.remove(id);
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
        let before = (
            rec.snapshot.clone(),
            rec.settings.clone(),
            rec.spec_error.clone(),
        );
        configure(&mut rec.snapshot);
        rec.settings = settings;
        rec.spec_error = spec_error;
        let changed = before
            != (
                rec.snapshot.clone(),
                rec.settings.clone(),
                rec.spec_error.clone(),
            );
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

    /// Day-2 install of a known, approved host whose ignition is in place.
    pub fn start_day2_install(&self, cluster_id: &str, host_id: &str, now: Timestamp) -> bool {
        let mut st = self.write();
        let Some(rec) = st.clusters.get_mut(cluster_id) else {
            return false;
        };
        let Some(idx) = rec.snapshot.hosts.iter().position(|h| h.id == host_id) else {
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

    /// A day-2 host's stage as the workload cluster shows it (Joined, Done): the core reports
    /// it because no installer runs after the reboot into the existing cluster.
    pub fn day2_progress(
        &self,
        cluster_id: &str,
        host_id: &str,
        stage: HostStage,
        now: Timestamp,
    ) -> Result<(), ApiError> {
        let mut st = self.write();
        let missing = || ApiError::not_found(format!("host {host_id} not found"));
        let rec = st.clusters.get_mut(cluster_id).ok_or_else(missing)?;
        let idx = rec
            .snapshot
            .hosts
            .iter()
            .position(|h| h.id == host_id)
            .ok_or_else(missing)?;
        let out = update_host_progress(
            &rec.snapshot.hosts[idx],
            Some(&rec.snapshot),
            stage,
            "",
            now,
            &self.cfg,
        )
        .map_err(host_error)?;
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

/// Work the monitor asks the async side to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Generate install-config and ignitions for a cluster that entered preparation.
    Prepare(String),
    /// Write the pointer ignition of a day-2 host (cluster id, host id), then start its install.
    InstallDay2(String, String),
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
                if let Some(cidr) = calculated_machine_network(&rec.snapshot) {
                    rec.snapshot.machine_networks = vec![cidr];
                    dirty.push(Dirty::Cluster(cid.clone()));
                }
                let refresh = refresh_all(&rec.snapshot, now, &self.cfg);
                for (h, o) in rec.snapshot.hosts.iter().zip(&refresh.hosts) {
                    let v = o.validations.as_ref().map(|v| v.to_validations_info());
                    let extra = st.host_extra.entry(h.id.clone()).or_default();
                    let suggested_changed =
                        o.suggested_role.is_some() && o.suggested_role != h.suggested_role;
                    if o.changed
                        || suggested_changed
                        || (v.is_some() && extra.validations_info != v)
                    {
                        dirty.push(Dirty::Host(h.id.clone()));
                    }
                    if v.is_some() {
                        extra.validations_info = v;
                    }
                }
                let cv = refresh
                    .cluster
                    .validations
                    .as_ref()
                    .map(|v| v.to_validations_info());
                if refresh.cluster.changed || (cv.is_some() && rec.validations_info != cv) {
                    dirty.push(Dirty::Cluster(cid.clone()));
                }
                if cv.is_some() {
                    rec.validations_info = cv;
                }
                apply_refresh(&mut rec.snapshot, &refresh, now);
                if refresh
                    .cluster
                    .effects
                    .contains(&ClusterEffect::PreparationStarted)
                {
                    actions.push(Action::Prepare(cid.clone()));
                }

                // Day-1 auto-start (kube-API rule).
                let decision = auto_start_day1(
                    &rec.snapshot,
                    &AutoStartParams {
                        hold: rec.settings.hold,
                        unsynced_agents: rec.settings.unsynced_agents,
                    },
                    &self.cfg,
                );
                let backing_off = rec
                    .preparation_failed_at
                    .is_some_and(|t| elapsed(now, t) < PREPARATION_RETRY_DELAY);
                if decision.start
                    && !backing_off
                    && let Ok(plan) = start_install(&rec.snapshot, now, &self.cfg)
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
    pub fn preparation_done(&self, cluster_id: &str, result: Result<(), String>) {
        let mut st = self.write();
        if let Some(rec) = st.clusters.get_mut(cluster_id) {
            match result {
                Ok(()) => {
                    rec.snapshot.preparation = PreparationStatus::Success;
                    rec.preparation_error = None;
                }
                Err(e) => {
                    rec.snapshot.preparation = PreparationStatus::Failed;
                    rec.preparation_error = Some(e);
                    rec.preparation_failed_at = Some(Timestamp::now());
                }
            }
        }
        drop(st);
        self.mark(Dirty::Cluster(cluster_id.to_string()));
        self.wake.notify_one();
    }
}

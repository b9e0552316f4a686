//! The in-memory index of clusters, hosts and infra-envs that the REST API, the controllers and
//! the monitor share. Every mutation goes through the pure [`crate::domain`] functions; what
//! changed is reported as [`Dirty`] keys, which the journal writes to the file store (before the
//! agent API acknowledges the change) and the persister to the CRs. Only the agents' last
//! check-in is volatile: it is not persisted.
//!
//! The lock never leaves this module: readers get a shared view for one closure
//! ([`Store::view`]), writers call the methods of their audience's file:
//! - `agent_api.rs`: the agent REST API (registration, next-steps, step replies, progress);
//! - `controllers.rs`: the Kubernetes controllers (specs in, deregistration, day-2 hand-over);
//! - `monitor.rs`: the monitor pass and the install-preparation results;
//! - `persist.rs`: the persister and the journal (full resync, restore after a restart, what is
//!   not yet saved).
//!
//! Errors are [`StoreError`]s; the HTTP layer maps them to its `StoreError`. The store never reads
//! the clock: every method that stamps a time takes `now`.

mod agent_api;
mod controllers;
mod error;
mod monitor;
mod persist;

pub use error::StoreError;
pub use monitor::{Action, PREPARATION_RETRY_DELAY};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use jiff::Timestamp;
use tokio::sync::{Notify, mpsc, watch};

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
    /// The agent token the discovery ignition and image URLs carry.
    pub token: String,
    /// The discovery ignition served as `discovery.ign`.
    pub discovery_ignition: Arc<str>,
    /// `static-network-config` file content (JSON list).
    pub static_network_config: String,
    /// The iPXE script served as `ipxe-script`: the discovery boot.
    pub ipxe_script: String,
    /// What `ipxe-script` answers with `ipxe_script_type=boot-order-control` and no MAC: a
    /// script that asks again with the host's MAC.
    pub ipxe_redirect_script: String,
    /// Kernel arguments appended to the ISO's own (`spec.kernelArguments`, `append`).
    pub kernel_arguments: Vec<String>,
    /// The NTP sources the discovery image carries (`additionalNTPSources`, `ntpSources`), one
    /// name or address each: the NTP step's fallback when the host's cluster names none.
    pub ntp_sources: Vec<String>,
    /// `spec.additionalTrustBundle`: trusted by the discovery image and, merged with the
    /// other InfraEnvs' of the cluster, by the installed cluster (install-config).
    pub additional_trust_bundle: Option<String>,
    /// The minimal-ISO initrd overlay; `None` when there is nothing to add (204).
    pub minimal_initrd: Option<Arc<[u8]>>,
    /// Where a minimal ISO's host fetches its root filesystem (`coreos.live.rootfs_url`).
    pub rootfs_url: String,
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
    /// ACI `loadBalancer.type: UserManaged`.
    pub user_managed_load_balancer: bool,
    /// ACI `spec.external`, for platform External.
    pub external_platform: crate::service::install::ExternalPlatformInput,
    /// Fields set that the core ignores and that block nothing (the ClusterDeployment's
    /// Hive-only ones): the ACI's `FieldsSupported` condition.
    pub unsupported_fields: Vec<String>,
    /// The ACI's `mirrorRegistryRef` configuration: the install-config's
    /// `imageDigestSources` and trust bundle.
    pub mirrors: Option<crate::domain::mirrors::MirrorConfig>,
}

/// One cluster: the domain snapshot plus what the service layer keeps beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRecord {
    pub snapshot: ClusterSnapshot,
    pub settings: ClusterSettings,
    /// Last validations of the cluster (`validationsInfo`), kept typed: a monitor pass compares
    /// them, and JSON is built only when a status or the REST API shows them.
    pub validations: Option<ClusterValidations>,
    /// Last RequirementsMet decision.
    pub requirements: Option<AutoStartDecision>,
    /// Last install-preparation error, for the LastInstallationPreparationFailed condition.
    pub preparation_error: Option<String>,
    /// Why the CD/ACI spec could not be applied (SpecSynced=False).
    pub spec_error: Option<String>,
    /// When the last install preparation failed; auto-start waits a while before retrying.
    pub preparation_failed_at: Option<Timestamp>,
}

impl ClusterRecord {
    pub fn new(snapshot: ClusterSnapshot, settings: ClusterSettings) -> ClusterRecord {
        ClusterRecord {
            snapshot,
            settings,
            validations: None,
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
    /// Last validations of the host, typed (see [`ClusterRecord::validations`]).
    pub validations: Option<HostValidations>,
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
    /// Each InfraEnv's NTP sources (from its record), the NTP step's fallback when a cluster
    /// names none.
    pub infra_env_ntp: NtpSourcesByInfraEnv,
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

fn host_not_found(host_id: &str) -> StoreError {
    StoreError::NotFound(format!("host {host_id} not found"))
}

/// Where a bound host sits in its cluster's host list.
fn host_index(rec: &ClusterRecord, host_id: &str) -> Result<usize, StoreError> {
    rec.snapshot
        .hosts
        .iter()
        .position(|h| h.id == host_id)
        .ok_or_else(|| host_not_found(host_id))
}

/// The shared store. Locks are held only for the pure computations, never across I/O.
pub struct Store {
    state: RwLock<State>,
    pub cfg: Config,
    dirty: mpsc::UnboundedSender<Dirty>,
    /// Wakes the monitor early (a host changed state, an approval arrived...).
    pub wake: Notify,
    /// Changes the journal has not written to the file store yet.
    unsaved: Mutex<Unsaved>,
    /// Wakes the journal.
    pub journal_wake: Notify,
    /// The count of marks whose changes are in the file store (published by the journal).
    saved: watch::Sender<u64>,
    /// Each big cluster's connectivity-check admissions (`domain::connectivity_pace`).
    connectivity_queues:
        Mutex<HashMap<String, crate::domain::connectivity_pace::ConnectivityQueue>>,
    /// False until a journal runs: a store without one (the API's tests) keeps nothing on disk,
    /// so there is nothing to wait for.
    journal_attached: AtomicBool,
}

/// What the journal has still to write: every mark is counted, so a request that changed the
/// store knows which count must be saved before it is acknowledged.
#[derive(Debug, Default)]
pub struct Unsaved {
    /// Marks made since the start.
    pub marks: u64,
    pub keys: BTreeSet<Dirty>,
}

/// The receiving end of the dirty keys, for the persister.
pub type DirtyReceiver = mpsc::UnboundedReceiver<Dirty>;

impl Store {
    pub fn new(cfg: Config) -> (Arc<Store>, DirtyReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let store = Store {
            state: RwLock::new(State::default()),
            cfg,
            dirty: tx,
            wake: Notify::new(),
            unsaved: Mutex::new(Unsaved::default()),
            journal_wake: Notify::new(),
            saved: watch::Sender::new(0),
            journal_attached: AtomicBool::new(false),
            connectivity_queues: Mutex::new(HashMap::new()),
        };
        (Arc::new(store), rx)
    }

    // A poisoned lock means a panic elsewhere; the state itself is still consistent because
    // every mutation is computed before it is written, so keep serving.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }
    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// A shared view of the state for one read-only decision; the lock is held only while `f`
    /// runs, so `f` must not wait on I/O.
    pub fn view<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.read())
    }

    /// Direct access for tests that set up a state no API call reaches quickly.
    #[cfg(any(test, feature = "test-support"))]
    pub fn edit_for_tests<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.write())
    }

    /// For tests: a store holding infra-env `ie` bound to cluster `cl` (named c1, no hosts).
    #[cfg(test)]
    pub(crate) fn with_bound_infra_env(ie: &str, cl: &str) -> (Arc<Store>, DirtyReceiver) {
        let (store, rx) = Store::new(crate::domain::Config::default());
        store.edit_for_tests(|st| {
            st.infra_envs.insert(
                ie.into(),
                InfraEnvRecord {
                    id: ie.into(),
                    cluster_id: Some(cl.into()),
                    ..Default::default()
                },
            );
            st.clusters.insert(
                cl.into(),
                ClusterRecord::new(
                    ClusterSnapshot::new(cl, "c1", Timestamp::UNIX_EPOCH),
                    ClusterSettings::default(),
                ),
            );
        });
        (store, rx)
    }

    pub fn mark(&self, d: Dirty) {
        {
            let mut unsaved = self.unsaved.lock().unwrap_or_else(|e| e.into_inner());
            unsaved.marks += 1;
            unsaved.keys.insert(d.clone());
        }
        self.journal_wake.notify_one();
        // The receiver lives as long as the service; a send error only happens at shutdown.
        let _ = self.dirty.send(d);
    }

    fn infra_env(st: &State, infra_env_id: &str) -> Result<InfraEnvRecord, StoreError> {
        st.infra_envs
            .get(infra_env_id)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(format!("infra-env {infra_env_id} not found")))
    }

    /// Runs `f` on the host (and its cluster), checking it belongs to `infra_env_id`.
    fn with_host_mut<T>(
        &self,
        infra_env_id: &str,
        host_id: &str,
        f: impl FnOnce(&mut HostSnapshot, Option<&ClusterSnapshot>, &Config) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut st = self.write();
        let missing = || host_not_found(host_id);
        let st = &mut *st;
        let r = match st.host_cluster.get(host_id) {
            Some(cid) => {
                let rec = st.clusters.get_mut(cid).ok_or_else(missing)?;
                let idx = host_index(rec, host_id)?;
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
    fn with_cluster_mut<T>(
        &self,
        cluster_id: &str,
        f: impl FnOnce(&mut ClusterRecord) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut st = self.write();
        let rec = st
            .clusters
            .get_mut(cluster_id)
            .ok_or_else(|| StoreError::NotFound(format!("cluster {cluster_id} not found")))?;
        let r = f(rec)?;
        drop(st);
        self.mark(Dirty::Cluster(cluster_id.to_string()));
        self.wake.notify_one();
        Ok(r)
    }
}

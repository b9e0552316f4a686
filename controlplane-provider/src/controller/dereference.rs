//! The only file of this controller that reads from the API server: everything one reconcile of
//! an OpenshiftAssistedControlPlane decides from, gathered into [`Dereferenced`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use assisted_api::{AgentClusterInstall, ClusterDeployment, ClusterImageSet};
use external_types::capi::{Cluster, Machine, MachineDeployment};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};
use manager::cache::{self, Recent};
use provider_api::bootstrap::api::OpenshiftAssistedConfig;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use super::etcd;
use super::hooks;
use super::kubeconfig;
use super::labels::CLUSTER_NAME_LABEL;
use super::machines::{self, plural};
use super::registry::ImageRegistry;
use super::release_lookup::{self, Lookup};
use super::remediation::{self, Members};
use super::upgrade::{self, WorkloadClusterVersion};
use manager::controller::Error;

/// The CAPI contract this provider speaks; CAPI picks a referenced kind's version from the CRD
/// label of the same name (its `internal/contract` package), so do we.
pub const CONTRACT_LABEL: &str = "cluster.x-k8s.io/v1beta2";

/// What the infrastructure template lookup found.
#[derive(Clone, Debug)]
pub enum Template {
    Found(Box<DynamicObject>, ApiResource),
    /// The kind's CRD is missing or has no contract label.
    UnknownKind(String),
    NotFound(String),
    /// Not read: every wanted Machine exists.
    NotNeeded,
}

/// Whether the pull secret the cluster needs exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PullSecret {
    Present(String),
    Missing(String),
    /// No `config.pullSecretRef`.
    Unset,
}

/// The Kubernetes version of the installed cluster, read from its API's `/version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadVersion {
    /// Not asked: no admin kubeconfig yet, or `status.version` is already known.
    NotRead,
    /// `gitVersion` as the workload kube-apiserver reports it.
    Read(String),
    /// The workload API did not answer; the message says why.
    Unreachable(String),
}

/// The label OpenShift gives its control-plane Nodes.
pub const CONTROL_PLANE_NODE_LABEL: &str = "node-role.kubernetes.io/master";

pub struct Dereferenced {
    pub oacp: Arc<OpenshiftAssistedControlPlane>,
    /// The owning Cluster; `None` until CAPI has set the owner reference (or it is gone).
    pub cluster: Option<Cluster>,
    /// Sum of `spec.replicas` of the Cluster's MachineDeployments.
    pub worker_replicas: i32,
    /// Machines this control plane controls, those being deleted included.
    pub machines: Vec<Machine>,
    /// Their configs, by name.
    pub configs: BTreeMap<String, OpenshiftAssistedConfig>,
    /// `cpuArchitecture` of the control plane's config spec and of every config of the cluster.
    pub architectures: Vec<Option<String>>,
    pub template: Template,
    pub aci: Option<AgentClusterInstall>,
    /// Read only while the control plane is being deleted; false otherwise.
    pub cluster_deployment_exists: bool,
    /// The admin kubeconfig the core published, once it has.
    pub admin_kubeconfig: Option<Vec<u8>>,
    pub pull_secret: PullSecret,
    /// The ConfigMap `config.imageRegistryRef` names.
    pub image_registry: ImageRegistry,
    /// The push Secrets `config.imageMode` names, by name (`None`: it does not exist).
    pub image_mode_push_secrets: BTreeMap<String, Option<Secret>>,
    /// Image mode in the installed cluster (its pools' MachineOSConfigs, builds, pools and
    /// Nodes), read once it is installed.
    pub image_mode_rollout: super::image_mode::Rollout,
    pub workload_version: WorkloadVersion,
    /// The installed cluster's ClusterVersion, read on every reconcile once it is installed.
    pub cluster_version: WorkloadClusterVersion,
    /// `status.nodeInfo.kubeletVersion` of the installed cluster's control-plane Nodes that
    /// report one, read with the ClusterVersion.
    pub control_plane_kubelets: Vec<String>,
    /// A client of the installed cluster, when one was built (to ask it for an upgrade).
    pub workload: Option<Client>,
    /// The ClusterImageSet as it is, read only while the day-1 install runs: the release the
    /// install started with, which a changed `distributionVersion` must not rewrite.
    pub installing_image_set: Option<ClusterImageSet>,
    /// What the registry says of `distributionVersion`'s release image; `None`: not asked
    /// (the install runs, the control plane is deleted or paused, or the image is invalid).
    pub release_lookup: Option<Lookup>,
    /// The installed cluster's etcd members, read only when a control-plane Machine is left
    /// to us and may be remediated but for them.
    pub etcd_members: Members,
}

/// The watch caches the reconcile reads instead of the API server (whole objects but their
/// managed fields; the MachineDeployments without status).
#[derive(Clone)]
pub struct Caches {
    pub clusters: Store<Cluster>,
    pub deployments: Store<MachineDeployment>,
    pub machines: Store<Machine>,
    pub configs: Store<OpenshiftAssistedConfig>,
    pub acis: Store<AgentClusterInstall>,
    /// ClusterImageSets (one per cluster, small; cluster-scoped).
    pub image_sets: Store<ClusterImageSet>,
    /// Every Secret's metadata (no data): its resourceVersion says whether the copy `recent`
    /// holds is current, so a Secret is read again only when it changed.
    pub secret_versions: Store<PartialObjectMeta<Secret>>,
    /// Secrets (as read last), the template and its CRD (as read lately).
    pub recent: Recent,
    /// The control-plane Machines this manager created and the Machine cache may not show yet.
    pub created_machines: cache::Created<Machine>,
}

/// How long an object read by GET is taken as current (see `manager::cache::Recent`).
pub const RECENT_FOR: Duration = Duration::from_secs(30);

/// How long a Machine this manager created counts while the cache does not show it (see
/// `manager::cache::Created`): far beyond a watch's lag, short enough that a Machine deleted
/// before the cache ever showed it is made again soon.
pub const CREATED_FOR: Duration = Duration::from_secs(120);

impl Caches {
    /// Waits until each kind has been listed once, so that no reconcile decides from a store
    /// still filling (a Machine not seen yet would be made again).
    pub async fn wait_until_ready(&self) {
        let _ = tokio::join!(
            self.clusters.wait_until_ready(),
            self.deployments.wait_until_ready(),
            self.machines.wait_until_ready(),
            self.configs.wait_until_ready(),
            self.acis.wait_until_ready(),
            self.image_sets.wait_until_ready(),
            self.secret_versions.wait_until_ready(),
        );
    }
}

/// Everything one reconcile reads, one read per concern: the Cluster and its Machines, the
/// template, the install objects, the Secrets and ConfigMaps the spec names, the release's
/// digest, and the installed cluster's API.
pub async fn dereference(
    client: &Client,
    caches: &Caches,
    releases: &release_lookup::Resolver,
    oacp: Arc<OpenshiftAssistedControlPlane>,
) -> Result<Dereferenced, Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let name = oacp.name_any();

    let cluster = owning_cluster(caches, &oacp);
    let (worker_replicas, machines, cluster_configs) = match &cluster {
        Some(c) => read_cluster_objects(caches, &oacp, c),
        None => (0, Vec::new(), Vec::new()),
    };
    let architectures = architectures(&oacp, &cluster_configs);
    let configs = cluster_configs
        .into_iter()
        .filter(|c| machines.iter().any(|m| m.metadata.name == c.metadata.name))
        .map(|c| (c.name_any(), c))
        .collect();
    let template = if template_needed(cluster.is_some(), &oacp, &machines) {
        infrastructure_template(client, &caches.recent, &oacp).await?
    } else {
        Template::NotNeeded
    };

    let aci = cache::get(&caches.acis, &ns, &name);
    let cluster_deployment_exists = cluster_deployment_exists(client, &oacp).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let admin_kubeconfig = read_admin_kubeconfig(caches, &secrets, &ns, aci.as_ref()).await?;
    let (pull_secret, pull_secret_json) = read_pull_secret(caches, &secrets, &oacp).await?;
    let image_registry = read_image_registry(client, &oacp).await?;
    let image_mode_push_secrets = read_push_secrets(caches, &secrets, &oacp).await?;

    let (installed, installing) = install_progress(aci.as_ref());
    let installing_image_set = installing.then(|| image_set(caches, &ns, &name)).flatten();
    // The release's digest: asked whenever the ClusterImageSet may be written (answers are
    // kept, see `release_lookup`), never while the install runs on the release it has.
    let asks_registry = !installing
        && oacp.metadata.deletion_timestamp.is_none()
        && !matches!(pull_secret, PullSecret::Missing(_));
    let release_lookup = if asks_registry {
        lookup_release(
            releases,
            &oacp,
            &architectures,
            &image_registry,
            pull_secret_json.as_deref(),
        )
        .await
    } else {
        None
    };

    let read = read_workload(admin_kubeconfig.as_deref(), installed, &oacp).await;
    let etcd_members = read_etcd_members(&oacp, installed, &machines, read.workload.as_ref()).await;
    let image_mode_rollout = read_image_mode_rollout(&oacp, installed, &read).await;

    Ok(Dereferenced {
        oacp,
        cluster,
        worker_replicas,
        machines,
        configs,
        architectures,
        template,
        aci,
        cluster_deployment_exists,
        admin_kubeconfig,
        pull_secret,
        image_registry,
        image_mode_push_secrets,
        image_mode_rollout,
        workload_version: read.workload_version,
        cluster_version: read.cluster_version,
        control_plane_kubelets: read.control_plane_kubelets,
        workload: read.workload,
        installing_image_set,
        release_lookup,
        etcd_members,
    })
}

/// The CAPI Cluster that owns the control plane, from the watch cache.
fn owning_cluster(caches: &Caches, oacp: &OpenshiftAssistedControlPlane) -> Option<Cluster> {
    let ns = oacp.namespace().unwrap_or_default();
    let cluster_name = oacp
        .owner_references()
        .iter()
        .find(|o| o.kind == "Cluster" && o.api_version.starts_with("cluster.x-k8s.io/"))
        .map(|o| o.name.clone())?;
    cache::get(&caches.clusters, &ns, &cluster_name)
}

/// Whether the ClusterDeployment is still there. Only deletion asks (the ClusterDeployment can
/// outlive its AgentClusterInstall).
async fn cluster_deployment_exists(
    client: &Client,
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<bool, Error> {
    if oacp.metadata.deletion_timestamp.is_none() {
        return Ok(false);
    }
    let ns = oacp.namespace().unwrap_or_default();
    Ok(Api::<ClusterDeployment>::namespaced(client.clone(), &ns)
        .get_opt(&oacp.name_any())
        .await
        .map_err(Error::Read)?
        .is_some())
}

/// The push Secrets image mode names, each as found (or not).
async fn read_push_secrets(
    caches: &Caches,
    secrets: &Api<Secret>,
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<BTreeMap<String, Option<Secret>>, Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let mut found = BTreeMap::new();
    for secret in super::image_mode::push_secret_names(oacp) {
        let read = secret_read(caches, secrets, &ns, &secret).await?;
        found.insert(secret, read);
    }
    Ok(found)
}

/// The control plane's ClusterImageSet as the watch cache has it.
fn image_set(caches: &Caches, ns: &str, name: &str) -> Option<ClusterImageSet> {
    let set = super::release::cluster_image_set_name(ns, name);
    caches
        .image_sets
        .get(&kube::runtime::reflector::ObjectRef::new(&set))
        .map(|o| (*o).clone())
}

/// The CPU architectures the release must serve: the control plane's and every config's of
/// the cluster.
fn architectures(
    oacp: &OpenshiftAssistedControlPlane,
    cluster_configs: &[OpenshiftAssistedConfig],
) -> Vec<Option<String>> {
    std::iter::once(
        oacp.spec
            .openshift_assisted_config_spec
            .cpu_architecture
            .clone(),
    )
    .chain(
        cluster_configs
            .iter()
            .map(|c| c.spec.cpu_architecture.clone()),
    )
    .collect()
}

/// The admin kubeconfig of the installed cluster, from the Secret its AgentClusterInstall
/// names.
async fn read_admin_kubeconfig(
    caches: &Caches,
    secrets: &Api<Secret>,
    ns: &str,
    aci: Option<&AgentClusterInstall>,
) -> Result<Option<Vec<u8>>, Error> {
    Ok(match aci.and_then(kubeconfig::source_secret_name) {
        Some(source) => secret_read(caches, secrets, ns, &source)
            .await?
            .as_ref()
            .and_then(kubeconfig::source_kubeconfig)
            .map(<[u8]>::to_vec),
        None => None,
    })
}

/// The release's digest from its registry, through the mirrors of imageRegistryRef (a
/// malformed one blocks elsewhere); `None` when the release image is invalid.
async fn lookup_release(
    releases: &release_lookup::Resolver,
    oacp: &OpenshiftAssistedControlPlane,
    architectures: &[Option<String>],
    image_registry: &ImageRegistry,
    pull_secret_json: Option<&str>,
) -> Option<Lookup> {
    let image = super::release::control_plane_release_image(oacp, architectures).ok()?;
    let mirrors = match image_registry {
        ImageRegistry::Present { data, .. } => assisted_core::domain::mirrors::parse(data).ok(),
        _ => None,
    };
    Some(
        releases
            .resolve(&image, pull_secret_json, mirrors.as_ref())
            .await,
    )
}

/// From the watch caches: the Cluster's worker count (its live MachineDeployments), our
/// Machines and the cluster's configs, each in name order as a list answers.
fn read_cluster_objects(
    caches: &Caches,
    oacp: &OpenshiftAssistedControlPlane,
    cluster: &Cluster,
) -> (i32, Vec<Machine>, Vec<OpenshiftAssistedConfig>) {
    let ns = oacp.namespace().unwrap_or_default();
    let cluster_name = cluster.name_any();
    let live: Vec<MachineDeployment> =
        cache::labelled(&caches.deployments, &ns, CLUSTER_NAME_LABEL, &cluster_name)
            .into_iter()
            .filter(|md| md.metadata.deletion_timestamp.is_none())
            .collect();
    let workers = super::hive::worker_agents(&live);
    let ours = |m: &Machine| {
        m.labels().get(CLUSTER_NAME_LABEL) == Some(&cluster_name) && controlled_by(m, oacp)
    };
    let mut machines: Vec<Machine> =
        cache::labelled(&caches.machines, &ns, CLUSTER_NAME_LABEL, &cluster_name)
            .into_iter()
            .filter(|m| controlled_by(m, oacp))
            .collect();
    caches
        .created_machines
        .add_missing(&ns, &mut machines, ours);
    machines.sort_by_key(|m| m.name_any());
    let mut configs = cache::labelled(&caches.configs, &ns, CLUSTER_NAME_LABEL, &cluster_name);
    configs.sort_by_key(|c| c.name_any());
    (workers, machines, configs)
}

/// The template matters only to make a Machine: read it only while there are fewer than
/// wanted, once the Cluster names this control plane (no Machine is made before) and unless
/// the control plane is being deleted. CAPI reads it at creation too.
fn template_needed(
    cluster_found: bool,
    oacp: &OpenshiftAssistedControlPlane,
    machines: &[Machine],
) -> bool {
    let live = machines
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .count();
    cluster_found
        && oacp.metadata.deletion_timestamp.is_none()
        && (live as i32) < machines::desired_replicas(oacp)
}

/// `config.pullSecretRef`: whether it is there, and its `.dockerconfigjson` for the registry.
async fn read_pull_secret(
    caches: &Caches,
    secrets: &Api<Secret>,
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<(PullSecret, Option<String>), Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let reference = oacp
        .spec
        .config
        .as_ref()
        .and_then(|c| c.pull_secret_ref.as_ref());
    Ok(match reference {
        Some(r) if !r.name.is_empty() => match secret_read(caches, secrets, &ns, &r.name).await? {
            Some(secret) => {
                let json = secret
                    .data
                    .as_ref()
                    .and_then(|d| d.get(".dockerconfigjson"))
                    .and_then(|v| String::from_utf8(v.0.clone()).ok());
                (PullSecret::Present(r.name.clone()), json)
            }
            None => (PullSecret::Missing(r.name.clone()), None),
        },
        _ => (PullSecret::Unset, None),
    })
}

/// `config.imageRegistryRef`'s ConfigMap.
async fn read_image_registry(
    client: &Client,
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<ImageRegistry, Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let reference = oacp
        .spec
        .config
        .as_ref()
        .and_then(|c| c.image_registry_ref.as_ref());
    Ok(match reference {
        Some(r) if !r.name.is_empty() => {
            match Api::<ConfigMap>::namespaced(client.clone(), &ns)
                .get_opt(&r.name)
                .await
                .map_err(Error::Read)?
            {
                Some(cm) => ImageRegistry::Present {
                    name: r.name.clone(),
                    data: cm.data.unwrap_or_default(),
                },
                None => ImageRegistry::Missing(r.name.clone()),
            }
        }
        _ => ImageRegistry::Unset,
    })
}

/// Whether the cluster is installed, and whether its day-1 install runs (past the pre-install
/// states, not installed yet), from the AgentClusterInstall's state.
fn install_progress(aci: Option<&AgentClusterInstall>) -> (bool, bool) {
    let state = aci
        .and_then(|a| a.status.as_ref())
        .and_then(|s| s.debug_info.state.as_deref());
    let installed = state.is_some_and(|state| {
        super::install::Install {
            state: state.to_string(),
            ..Default::default()
        }
        .installed()
    });
    let installing = state.is_some_and(|state| {
        !assisted_api::agentclusterinstall::PRE_INSTALL_STATES.contains(&state)
    }) && !installed;
    (installed, installing)
}

/// What the installed cluster's API said.
struct WorkloadReads {
    workload: Option<Client>,
    workload_version: WorkloadVersion,
    cluster_version: WorkloadClusterVersion,
    control_plane_kubelets: Vec<String>,
}

impl Default for WorkloadReads {
    /// Nothing read: no kubeconfig yet, or nothing to ask.
    fn default() -> Self {
        WorkloadReads {
            workload: None,
            workload_version: WorkloadVersion::NotRead,
            cluster_version: WorkloadClusterVersion::NotRead,
            control_plane_kubelets: Vec::new(),
        }
    }
}

/// The installed cluster's API: its ClusterVersion and control-plane Nodes follow upgrades;
/// `/version` is asked only while no Node reports its kubelet's version. Nothing is asked
/// without the admin kubeconfig, or before the install when the version is known.
async fn read_workload(
    kubeconfig: Option<&[u8]>,
    installed: bool,
    oacp: &OpenshiftAssistedControlPlane,
) -> WorkloadReads {
    let mut read = WorkloadReads::default();
    let version_known = oacp
        .status
        .as_ref()
        .is_some_and(|s| s.version.as_deref().is_some_and(|v| !v.is_empty()));
    let Some(kubeconfig) = kubeconfig.filter(|_| installed || !version_known) else {
        return read;
    };
    match workload_client(kubeconfig).await {
        Err(why) => {
            let why = why.to_string();
            read.workload_version = WorkloadVersion::Unreachable(why.clone());
            if installed {
                read.cluster_version = WorkloadClusterVersion::Unreachable(why);
            }
        }
        Ok(client) => {
            if installed {
                read.cluster_version = read_cluster_version(&client).await;
                read.control_plane_kubelets = read_control_plane_kubelets(&client).await;
            }
            if !version_known && read.control_plane_kubelets.is_empty() {
                read.workload_version = read_workload_version(&client).await;
            }
            read.workload = Some(client);
        }
    }
    read
}

/// The image-mode pools' rollout, read once installed when the spec has pools.
async fn read_image_mode_rollout(
    oacp: &OpenshiftAssistedControlPlane,
    installed: bool,
    read: &WorkloadReads,
) -> super::image_mode::Rollout {
    let pools: Vec<String> = oacp
        .spec
        .config
        .as_ref()
        .and_then(|c| c.image_mode.as_ref())
        .map(|m| m.pools.iter().map(|p| p.pool.clone()).collect())
        .unwrap_or_default();
    match (&read.workload, installed && !pools.is_empty()) {
        (Some(w), true) => read_image_mode(w, &pools).await,
        (None, true) => match &read.workload_version {
            WorkloadVersion::Unreachable(why) => {
                super::image_mode::Rollout::Unreachable(why.clone())
            }
            _ => super::image_mode::Rollout::NotRead,
        },
        _ => super::image_mode::Rollout::NotRead,
    }
}

/// A Secret of the control plane's namespace: the copy read last while the Secrets' metadata
/// watch shows the same resourceVersion, else read again. A Secret the watch has not seen (yet)
/// is read through [`Recent`]'s time limit, as before the watch.
async fn secret_read(
    caches: &Caches,
    secrets: &Api<Secret>,
    ns: &str,
    name: &str,
) -> Result<Option<Secret>, Error> {
    let version = caches
        .secret_versions
        .get(&ObjectRef::new(name).within(ns))
        .and_then(|meta| meta.metadata.resource_version.clone());
    caches
        .recent
        .get(
            format!("Secret/{ns}/{name}"),
            version.as_deref(),
            secrets.get_opt(name),
        )
        .await
        .map_err(Error::Read)
}

/// The etcd member list, through a healthy master's etcd pod, when a remediation, a scale-down
/// or a deleted Machine's pre-terminate hook waits on it.
async fn read_etcd_members(
    oacp: &OpenshiftAssistedControlPlane,
    installed: bool,
    machines: &[Machine],
    workload: Option<&Client>,
) -> Members {
    let last = oacp
        .status
        .as_ref()
        .and_then(|s| s.last_remediation.as_ref());
    let inputs = remediation::Inputs {
        installed,
        replicas: machines::desired_replicas(oacp),
        machines,
        policy: remediation::Policy::of(oacp.spec.remediation.as_ref()),
        last,
        members: &Members::NotRead,
        now: k8s_openapi::jiff::Timestamp::now(),
    };
    if !remediation::needs_members(&inputs)
        && !machines::scale_down_pending(installed, machines, inputs.replicas)
        && !hooks::needs_members(installed, machines)
    {
        return Members::NotRead;
    }
    let Some(workload) = workload else {
        return Members::Unreadable("the cluster's admin kubeconfig gave no client".into());
    };
    let Some(node) = remediation::healthy_nodes(machines).into_iter().next() else {
        return Members::Unreadable("no control-plane Node is healthy".into());
    };
    match etcd::member_list(workload, &node).await {
        Ok(members) => Members::Read(members),
        Err(why) => Members::Unreadable(why.to_string()),
    }
}

/// A client of the cluster the admin kubeconfig points at, with short timeouts so an
/// unreachable cluster does not hold the reconcile up.
async fn workload_client(kubeconfig: &[u8]) -> Result<Client, WorkloadClientError> {
    let text = std::str::from_utf8(kubeconfig).map_err(|_| WorkloadClientError::NotUtf8)?;
    let parsed = Kubeconfig::from_yaml(text).map_err(WorkloadClientError::Parse)?;
    let mut config = kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
        .await
        .map_err(WorkloadClientError::Unusable)?;
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(Duration::from_secs(5));
    Client::try_from(config).map_err(WorkloadClientError::Client)
}

/// Why the admin kubeconfig gave no client; shown as the workload's unreachable reason.
#[derive(Debug, thiserror::Error)]
enum WorkloadClientError {
    #[error("the kubeconfig is not UTF-8")]
    NotUtf8,
    #[error("the kubeconfig does not parse: {0}")]
    Parse(kube::config::KubeconfigError),
    #[error("the kubeconfig is not usable: {0}")]
    Unusable(kube::config::KubeconfigError),
    #[error("cannot build a client from the kubeconfig: {0}")]
    Client(kube::Error),
}

/// `/version` of the installed cluster.
async fn read_workload_version(client: &Client) -> WorkloadVersion {
    match client.apiserver_version().await {
        Ok(info) if !info.git_version.is_empty() => WorkloadVersion::Read(info.git_version),
        Ok(_) => WorkloadVersion::Unreachable("the cluster's /version has no gitVersion".into()),
        Err(e) => WorkloadVersion::Unreachable(format!("GET /version: {e}")),
    }
}

/// `config.openshift.io/v1` ClusterVersion, the API the cluster-version operator serves.
pub fn cluster_version_resource() -> ApiResource {
    ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: "ClusterVersion".into(),
        plural: "clusterversions".into(),
    }
}

/// The installed cluster's ClusterVersion `version`; a cluster whose API does not serve the
/// kind (or has no such object yet) has none.
async fn read_cluster_version(client: &Client) -> WorkloadClusterVersion {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &cluster_version_resource());
    match api.get_opt(upgrade::CLUSTER_VERSION_NAME).await {
        Ok(Some(object)) => {
            let value = serde_json::to_value(&object).unwrap_or_default();
            WorkloadClusterVersion::Read(Box::new(upgrade::ClusterVersion::from_object(&value)))
        }
        Ok(None) => WorkloadClusterVersion::Absent,
        Err(kube::Error::Api(e)) if e.code == 404 => WorkloadClusterVersion::Absent,
        Err(e) => WorkloadClusterVersion::Unreachable(format!("GET ClusterVersion version: {e}")),
    }
}

fn machine_config_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "machineconfiguration.openshift.io".into(),
        version: "v1".into(),
        api_version: "machineconfiguration.openshift.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Each pool's MachineOSConfig (named after the pool), its MachineOSBuilds, its
/// MachineConfigPool and its Nodes (a worker is a Node with the worker role and not the master
/// one, as the machine-config operator places them), through the installed cluster's API.
async fn read_image_mode(client: &Client, pools: &[String]) -> super::image_mode::Rollout {
    use super::image_mode::{CURRENT_IMAGE_ANNOTATION, PoolState, Rollout};
    let all = |kind: &str, plural: &str| -> Api<DynamicObject> {
        Api::all_with(client.clone(), &machine_config_resource(kind, plural))
    };
    let value = |o: &DynamicObject| serde_json::to_value(o).unwrap_or_default();
    let read = async {
        let configs = all("MachineOSConfig", "machineosconfigs")
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("LIST MachineOSConfigs: {e}"))?;
        let builds = all("MachineOSBuild", "machineosbuilds")
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("LIST MachineOSBuilds: {e}"))?;
        let machine_pools = all("MachineConfigPool", "machineconfigpools")
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("LIST MachineConfigPools: {e}"))?;
        let nodes = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("LIST Nodes: {e}"))?;
        Ok::<_, String>((configs, builds, machine_pools, nodes))
    };
    let (configs, builds, machine_pools, nodes) = match read.await {
        Ok(r) => r,
        Err(why) => return Rollout::Unreachable(why),
    };
    let has_role = |n: &Node, role: &str| {
        n.labels()
            .contains_key(&format!("node-role.kubernetes.io/{role}"))
    };
    let states = pools
        .iter()
        .map(|pool| PoolState {
            pool: pool.clone(),
            machine_os_config: configs
                .items
                .iter()
                .find(|c| c.name_any() == *pool)
                .map(value),
            builds: builds
                .items
                .iter()
                .map(value)
                .filter(|b| b["spec"]["machineOSConfig"]["name"] == pool.as_str())
                .collect(),
            machine_config_pool: machine_pools
                .items
                .iter()
                .find(|p| p.name_any() == *pool)
                .map(value),
            nodes: nodes
                .items
                .iter()
                .filter(|n| has_role(n, pool) && (pool == "master" || !has_role(n, "master")))
                .map(|n| {
                    (
                        n.name_any(),
                        n.annotations().get(CURRENT_IMAGE_ANNOTATION).cloned(),
                    )
                })
                .collect(),
        })
        .collect();
    Rollout::Read(states)
}

/// The kubelet versions the installed cluster's control-plane Nodes report (empty when they
/// cannot be read: `/version` stands in).
async fn read_control_plane_kubelets(client: &Client) -> Vec<String> {
    let nodes: Api<Node> = Api::all(client.clone());
    let Ok(list) = nodes
        .list(&ListParams::default().labels(CONTROL_PLANE_NODE_LABEL))
        .await
    else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter_map(|n| n.status?.node_info.map(|i| i.kubelet_version))
        .filter(|v| !v.is_empty())
        .collect()
}

fn controlled_by(machine: &Machine, oacp: &OpenshiftAssistedControlPlane) -> bool {
    let uid = oacp.uid();
    machine
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
}

/// Reads `machineTemplate.infrastructureRef` at the API version its CRD's contract label names.
async fn infrastructure_template(
    client: &Client,
    recent: &Recent,
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<Template, Error> {
    let reference = match machines::infrastructure_reference(oacp) {
        Ok(reference) => reference,
        Err(message) => return Ok(Template::NotFound(message.to_string())),
    };
    let crd_name = format!("{}.{}", plural(&reference.kind), reference.api_group);
    // The CRD and the template, as read in the last 30 s: the reconciles that make one
    // Machine come seconds apart (templates are not edited in place, as Cluster API has it).
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = recent
        .get(
            format!("CustomResourceDefinition//{crd_name}"),
            None,
            crds.get_opt(&crd_name),
        )
        .await
        .map_err(Error::Read)?;
    let Some(crd) = crd else {
        return Ok(Template::UnknownKind(format!(
            "machineTemplate.infrastructureRef: no CRD {crd_name} is installed for kind {} in group {}",
            reference.kind, reference.api_group
        )));
    };
    let Some(version) = crd
        .labels()
        .get(CONTRACT_LABEL)
        .and_then(|v| v.rsplit('_').next())
        .map(str::to_string)
    else {
        return Ok(Template::UnknownKind(format!(
            "CRD {crd_name} has no {CONTRACT_LABEL} label, so its provider does not implement the contract this control plane needs"
        )));
    };
    let resource = ApiResource {
        group: reference.api_group.clone(),
        version: version.clone(),
        api_version: format!("{}/{version}", reference.api_group),
        kind: reference.kind.clone(),
        plural: plural(&reference.kind),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &oacp.namespace().unwrap_or_default(),
        &resource,
    );
    let key = format!(
        "{}/{}/{}",
        reference.kind,
        oacp.namespace().unwrap_or_default(),
        reference.name
    );
    Ok(
        match recent
            .get(key, None, api.get_opt(&reference.name))
            .await
            .map_err(Error::Read)?
        {
            Some(template) => Template::Found(Box::new(template), resource),
            None => Template::NotFound(format!(
                "{} {} (machineTemplate.infrastructureRef) does not exist",
                reference.kind, reference.name
            )),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::store;

    fn empty_caches() -> Caches {
        Caches {
            clusters: store().0,
            deployments: store().0,
            machines: store().0,
            configs: store().0,
            acis: store().0,
            image_sets: store().0,
            secret_versions: store().0,
            recent: Recent::new(RECENT_FOR),
            created_machines: cache::Created::new(CREATED_FOR),
        }
    }

    fn machine(name: &str, cluster: &str, controller_uid: &str) -> Machine {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {
                "name": name, "namespace": "ns",
                "labels": {CLUSTER_NAME_LABEL: cluster},
                "ownerReferences": [{
                    "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
                    "kind": "OpenshiftAssistedControlPlane", "name": "cp",
                    "uid": controller_uid, "controller": true
                }]
            },
            "spec": {"clusterName": cluster, "bootstrap": {}, "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3Machine", "name": name
            }}
        }))
        .unwrap()
    }

    #[test]
    fn the_template_is_read_only_while_a_machine_is_to_be_made() {
        let oacp = |deleting: bool| {
            let mut o: OpenshiftAssistedControlPlane = serde_json::from_value(serde_json::json!({
                "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
                "kind": "OpenshiftAssistedControlPlane",
                "metadata": {"name": "cp", "namespace": "ns", "uid": "u-cp"},
                "spec": {"distributionVersion": "4.17.3", "replicas": 1,
                         "config": {"baseDomain": "example.com"},
                         "machineTemplate": {"infrastructureRef": {
                             "apiGroup": "infrastructure.cluster.x-k8s.io",
                             "kind": "Metal3MachineTemplate", "name": "t"}}}
            }))
            .unwrap();
            if deleting {
                o.metadata.deletion_timestamp =
                    Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        "2026-01-01T00:00:00Z".parse().unwrap(),
                    ));
            }
            o
        };
        let one = [machine("cp-0", "c", "u-cp")];
        assert!(
            template_needed(true, &oacp(false), &[]),
            "a Machine to make"
        );
        assert!(!template_needed(false, &oacp(false), &[]), "no Cluster yet");
        assert!(!template_needed(true, &oacp(true), &[]), "being deleted");
        assert!(!template_needed(true, &oacp(false), &one), "all there");
    }

    #[test]
    fn a_machine_just_created_counts_before_the_cache_shows_it() {
        let caches = empty_caches();
        let oacp: OpenshiftAssistedControlPlane = serde_json::from_value(serde_json::json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
            "kind": "OpenshiftAssistedControlPlane",
            "metadata": {"name": "cp", "namespace": "ns", "uid": "u-cp"},
            "spec": {"distributionVersion": "4.17.3", "config": {"baseDomain": "example.com"},
                     "machineTemplate": {"infrastructureRef": {
                         "apiGroup": "infrastructure.cluster.x-k8s.io",
                         "kind": "Metal3MachineTemplate", "name": "t"}}}
        }))
        .unwrap();
        let cluster: Cluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "c", "namespace": "ns"}, "spec": {}
        }))
        .unwrap();
        caches.created_machines.record(machine("cp-0", "c", "u-cp"));
        caches
            .created_machines
            .record(machine("other-0", "c", "u-other"));
        caches
            .created_machines
            .record(machine("cp-x", "another-cluster", "u-cp"));

        let (_, machines, _) = read_cluster_objects(&caches, &oacp, &cluster);
        let names: Vec<String> = machines.iter().map(|m| m.name_any()).collect();
        assert_eq!(
            names,
            ["cp-0"],
            "ours, of this cluster, though not cached yet"
        );
    }
}

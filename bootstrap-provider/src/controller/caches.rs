//! Every kind the bootstrap controllers read, watched once and cached (`manager::cache`): the
//! controllers read these stores, not the API server. Only the BareMetalHost's `metaData` Secret
//! and the discovery ignition are still asked for.

use assisted_api::{Agent, AgentClusterInstall, ClusterDeployment, InfraEnv};
use external_types::capi::{Cluster, Machine};
use external_types::capm3::v1beta2::{Metal3Machine, Metal3MachineTemplate};
use external_types::metal3_io::BareMetalHost;
use kube::Client;
use kube::runtime::reflector::Store;
use manager::cache::{self, TriggerStream, keep};
use manager::runtime::WatchScope;
use provider_api::bootstrap::api::OpenshiftAssistedConfig;
use tokio::sync::watch;

#[derive(Clone)]
pub struct Caches {
    pub configs: Store<OpenshiftAssistedConfig>,
    pub agents: Store<Agent>,
    pub machines: Store<Machine>,
    pub metal3machines: Store<Metal3Machine>,
    pub templates: Store<Metal3MachineTemplate>,
    pub hosts: Store<BareMetalHost>,
    pub infraenvs: Store<InfraEnv>,
    pub clusters: Store<Cluster>,
    pub cluster_deployments: Store<ClusterDeployment>,
    pub acis: Store<AgentClusterInstall>,
}

/// What triggers the OpenshiftAssistedConfig controller.
pub struct ConfigTriggers {
    pub configs: TriggerStream<OpenshiftAssistedConfig>,
    pub machines: TriggerStream<Machine>,
    pub metal3machines: TriggerStream<Metal3Machine>,
    pub hosts: TriggerStream<BareMetalHost>,
    pub infraenvs: TriggerStream<InfraEnv>,
    pub acis: TriggerStream<AgentClusterInstall>,
    pub clusters: TriggerStream<Cluster>,
}

/// What triggers the Agent controller.
pub struct AgentTriggers {
    pub agents: TriggerStream<Agent>,
    pub metal3machines: TriggerStream<Metal3Machine>,
    pub hosts: TriggerStream<BareMetalHost>,
    pub acis: TriggerStream<AgentClusterInstall>,
}

/// Hardware details are the bulk of a BareMetalHost and nothing here reads them.
fn strip_host(host: &mut BareMetalHost) {
    if let Some(status) = host.status.as_mut() {
        status.hardware = None;
    }
}

/// Starts every watch (they run until `shutdown`) and waits until each has listed its kind once,
/// so that no reconcile decides from a store that is still filling.
pub async fn start(
    client: &Client,
    scope: &WatchScope,
    shutdown: watch::Receiver<bool>,
) -> (Caches, ConfigTriggers, AgentTriggers) {
    // Configs follow --watch-filter, and so do the objects made for them, which carry their
    // config's shard label: InfraEnvs (made here), Agents (the core labels them with their
    // InfraEnv's `agentLabels`), ClusterDeployments and AgentClusterInstalls (the control
    // plane's). Cluster API's and Metal3's kinds carry it only where users put it: those are
    // watched unfiltered.
    let all = kube::runtime::watcher::Config::default().any_semantic();
    let shard = scope.watcher_config();
    let s = || shutdown.clone();
    let mut configs = cache::watch(
        scope.api::<OpenshiftAssistedConfig>(client),
        scope.watcher_config(),
        1,
        keep,
        s(),
    );
    let mut agents = cache::watch(scope.api::<Agent>(client), shard.clone(), 1, keep, s());
    let mut machines = cache::watch(scope.api::<Machine>(client), all.clone(), 1, keep, s());
    let mut metal3machines = cache::watch(
        scope.api::<Metal3Machine>(client),
        all.clone(),
        2,
        keep,
        s(),
    );
    let templates = cache::watch(
        scope.api::<Metal3MachineTemplate>(client),
        all.clone(),
        0,
        keep,
        s(),
    );
    let mut hosts = cache::watch(
        scope.api::<BareMetalHost>(client),
        all.clone(),
        2,
        strip_host,
        s(),
    );
    let mut infraenvs = cache::watch(scope.api::<InfraEnv>(client), shard.clone(), 1, keep, s());
    let mut clusters = cache::watch(scope.api::<Cluster>(client), all.clone(), 1, keep, s());
    let cluster_deployments = cache::watch(
        scope.api::<ClusterDeployment>(client),
        shard.clone(),
        0,
        keep,
        s(),
    );
    let mut acis = cache::watch(
        scope.api::<AgentClusterInstall>(client),
        shard,
        2,
        keep,
        s(),
    );

    let caches = Caches {
        configs: configs.store.clone(),
        agents: agents.store.clone(),
        machines: machines.store.clone(),
        metal3machines: metal3machines.store.clone(),
        templates: templates.store.clone(),
        hosts: hosts.store.clone(),
        infraenvs: infraenvs.store.clone(),
        clusters: clusters.store.clone(),
        cluster_deployments: cluster_deployments.store.clone(),
        acis: acis.store.clone(),
    };
    caches.wait_until_ready().await;
    let config_triggers = ConfigTriggers {
        configs: configs.triggers.remove(0),
        machines: machines.triggers.remove(0),
        metal3machines: metal3machines.triggers.remove(0),
        hosts: hosts.triggers.remove(0),
        infraenvs: infraenvs.triggers.remove(0),
        acis: acis.triggers.remove(0),
        clusters: clusters.triggers.remove(0),
    };
    let agent_triggers = AgentTriggers {
        agents: agents.triggers.remove(0),
        metal3machines: metal3machines.triggers.remove(0),
        hosts: hosts.triggers.remove(0),
        acis: acis.triggers.remove(0),
    };
    (caches, config_triggers, agent_triggers)
}

impl Caches {
    async fn wait_until_ready(&self) {
        // A kind whose CRD is missing never lists: the watch retries with backoff and the
        // controllers wait here, as they would wait on an empty store otherwise.
        let _ = tokio::join!(
            self.configs.wait_until_ready(),
            self.agents.wait_until_ready(),
            self.machines.wait_until_ready(),
            self.metal3machines.wait_until_ready(),
            self.templates.wait_until_ready(),
            self.hosts.wait_until_ready(),
            self.infraenvs.wait_until_ready(),
            self.clusters.wait_until_ready(),
            self.cluster_deployments.wait_until_ready(),
            self.acis.wait_until_ready(),
        );
    }
}

//! The only file of the Agent controller that reads from the API server.

use std::collections::BTreeMap;
use std::sync::Arc;

use assisted_api::infraenv::INFRAENV_NAME_LABEL;
use assisted_api::{Agent, AgentClusterInstall, ClusterDeployment, InfraEnv};
use external_types::capi::{Cluster, Machine};
use external_types::capm3::v1beta2::Metal3Machine;
use external_types::metal3_io::BareMetalHost;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::{Client, ResourceExt};
use manager::cache;
use provider_api::bootstrap::api::OpenshiftAssistedConfig;

use crate::controller::caches::Caches;
use crate::controller::labels::{CLUSTER_NAME_LABEL, TEMPLATE_LABEL};
use crate::controller::matching::{AgentInput, Mac, host_of};
use crate::controller::{Error, PAUSED_ANNOTATION, variables};

/// One Machine of the cluster with what matching and the Agent spec need.
pub struct MachineObjects {
    pub machine: Machine,
    pub metal3machine: Option<Metal3Machine>,
    pub host: Option<BareMetalHost>,
    /// The host's Metal3Data keys (its `metaData` Secret), which its config drive carries. Read
    /// only for a host whose boot MAC is one of the Agent's (the only host it can match); empty
    /// for the others.
    pub host_metadata: BTreeMap<String, String>,
    pub config: Option<OpenshiftAssistedConfig>,
}

pub struct Dereferenced {
    pub agent: Arc<Agent>,
    /// The Agent's InfraEnv when it is one of ours (it carries our template label).
    pub infraenv: Option<InfraEnv>,
    pub cluster_name: String,
    /// Every Agent of the same InfraEnv, this one included (two may claim one Machine).
    pub agents: Vec<Agent>,
    pub machines: Vec<MachineObjects>,
    /// The AgentClusterInstall of the InfraEnv's ClusterDeployment: its state and install start
    /// decide the day-1/day-2 hold.
    pub aci: Option<AgentClusterInstall>,
    /// The Cluster is paused (`spec.paused` or the paused annotation): nothing is written.
    pub paused: bool,
}

/// Everything comes from the caches but the hosts' `metaData` Secrets.
pub async fn dereference(
    client: &Client,
    caches: &Caches,
    agent: Arc<Agent>,
) -> Result<Dereferenced, Error> {
    let ns = agent.namespace().unwrap_or_default();
    let mut d = Dereferenced {
        agent: agent.clone(),
        infraenv: None,
        cluster_name: String::new(),
        agents: Vec::new(),
        machines: Vec::new(),
        aci: None,
        paused: false,
    };
    let Some(infraenv_name) = agent.labels().get(INFRAENV_NAME_LABEL).cloned() else {
        return Ok(d);
    };
    let Some(infraenv) = cache::get(&caches.infraenvs, &ns, &infraenv_name)
        .filter(|ie: &InfraEnv| ie.labels().contains_key(TEMPLATE_LABEL))
    else {
        return Ok(d);
    };
    let Some(cluster_name) = infraenv.labels().get(CLUSTER_NAME_LABEL).cloned() else {
        return Ok(d);
    };
    d.paused = cache::get(&caches.clusters, &ns, &cluster_name).is_some_and(|c: Cluster| {
        c.spec.paused == Some(true) || c.annotations().contains_key(PAUSED_ANNOTATION)
    });
    d.agents = cache::labelled(&caches.agents, &ns, INFRAENV_NAME_LABEL, &infraenv_name);

    d.machines = read_machines(client, caches, &ns, &cluster_name, &agent).await?;
    d.aci = read_aci(caches, &ns, &infraenv);
    d.cluster_name = cluster_name;
    d.infraenv = Some(infraenv);
    Ok(d)
}

/// The cluster's Machines (not being deleted), each with its Metal3Machine, host and config;
/// the `metaData` keys are read only for the host whose boot MAC the Agent has.
async fn read_machines(
    client: &Client,
    caches: &Caches,
    ns: &str,
    cluster_name: &str,
    agent: &Agent,
) -> Result<Vec<MachineObjects>, Error> {
    let mut out = Vec::new();
    let machines: Vec<Machine> =
        cache::labelled(&caches.machines, ns, CLUSTER_NAME_LABEL, cluster_name);
    let metal3machines: BTreeMap<String, Metal3Machine> =
        cache::labelled(&caches.metal3machines, ns, CLUSTER_NAME_LABEL, cluster_name)
            .into_iter()
            .map(|m: Metal3Machine| (m.name_any(), m))
            .collect();
    let configs: BTreeMap<String, OpenshiftAssistedConfig> =
        cache::labelled(&caches.configs, ns, CLUSTER_NAME_LABEL, cluster_name)
            .into_iter()
            .map(|c: OpenshiftAssistedConfig| (c.name_any(), c))
            .collect();
    let agent_macs: Vec<Mac> = AgentInput::from_agent(agent)
        .macs
        .iter()
        .filter_map(|m| Mac::parse(m))
        .collect();
    for machine in machines {
        if machine.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let metal3machine = (machine.spec.infrastructure_ref.kind == "Metal3Machine")
            .then(|| {
                metal3machines
                    .get(&machine.spec.infrastructure_ref.name)
                    .cloned()
            })
            .flatten();
        let host = match metal3machine.as_ref().and_then(host_of) {
            Some((host_ns, host_name)) => cache::get(&caches.hosts, &host_ns, &host_name),
            None => None,
        };
        let config = machine
            .spec
            .bootstrap
            .config_ref
            .as_ref()
            .and_then(|r| configs.get(&r.name).cloned());
        let host_metadata = match host.as_ref() {
            Some(h) if agent_has_boot_mac(&agent_macs, h) => host_metadata(client, h).await?,
            _ => BTreeMap::new(),
        };
        out.push(MachineObjects {
            machine,
            metal3machine,
            host,
            host_metadata,
            config,
        });
    }
    Ok(out)
}

/// The AgentClusterInstall of the InfraEnv's ClusterDeployment (in the InfraEnv's namespace
/// when the reference names none).
fn read_aci(caches: &Caches, ns: &str, infraenv: &InfraEnv) -> Option<AgentClusterInstall> {
    let cd_ref = infraenv.spec.cluster_ref.as_ref()?;
    let cd_ns = if cd_ref.namespace.is_empty() {
        ns
    } else {
        cd_ref.namespace.as_str()
    };
    let cd: ClusterDeployment = cache::get(&caches.cluster_deployments, cd_ns, &cd_ref.name)?;
    let install = cd.spec.cluster_install_ref.as_ref()?;
    cache::get(&caches.acis, cd_ns, &install.name)
}

/// The keys of the host's `metaData` Secret (CAPM3 sets the reference from the rendered
/// Metal3Data); none when it has no such Secret.
async fn host_metadata(
    client: &Client,
    host: &BareMetalHost,
) -> Result<BTreeMap<String, String>, Error> {
    let Some(name) = host
        .spec
        .meta_data
        .as_ref()
        .and_then(|m| m.name.clone())
        .filter(|n| !n.is_empty())
    else {
        return Ok(BTreeMap::new());
    };
    // Secret references of a BareMetalHost are in its own namespace (baremetal-operator).
    let ns = host.namespace().unwrap_or_default();
    let secret = Api::<Secret>::namespaced(client.clone(), &ns)
        .get_opt(&name)
        .await
        .map_err(Error::Read)?;
    let yaml = secret
        .and_then(|s| s.data)
        .and_then(|mut data| data.remove("metaData"))
        .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned())
        .unwrap_or_default();
    Ok(variables::metadata_secret_keys(&yaml))
}

/// Whether the host's boot MAC is among the Agent's: only then can it be the Agent's host.
fn agent_has_boot_mac(agent_macs: &[Mac], host: &BareMetalHost) -> bool {
    host.spec
        .boot_mac_address
        .as_deref()
        .and_then(Mac::parse)
        .is_some_and(|mac| agent_macs.contains(&mac))
}

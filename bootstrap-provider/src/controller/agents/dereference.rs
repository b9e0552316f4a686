//! The only file of the Agent controller that reads from the API server.

use std::collections::BTreeMap;
use std::sync::Arc;

use assisted_api::infraenv::INFRAENV_NAME_LABEL;
use assisted_api::{Agent, AgentClusterInstall, ClusterDeployment, InfraEnv};
use external_types::capi::{Cluster, Machine};
use external_types::capm3::v1beta2::Metal3Machine;
use external_types::metal3_io::BareMetalHost;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use crate::api::OpenshiftAssistedConfig;
use crate::controller::infraenv::{CLUSTER_NAME_LABEL, TEMPLATE_LABEL};
use crate::controller::matching::host_of;
use crate::controller::{Error, PAUSED_ANNOTATION, agent};

/// One Machine of the cluster with what matching and the Agent spec need.
pub struct MachineObjects {
    pub machine: Machine,
    pub metal3machine: Option<Metal3Machine>,
    pub host: Option<BareMetalHost>,
    /// The host's Metal3Data keys (its `metaData` Secret), which its config drive carries.
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

pub async fn dereference(client: &Client, agent: Arc<Agent>) -> Result<Dereferenced, Error> {
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
    let Some(infraenv) = Api::<InfraEnv>::namespaced(client.clone(), &ns)
        .get_opt(&infraenv_name)
        .await
        .map_err(Error::Read)?
        .filter(|ie| ie.labels().contains_key(TEMPLATE_LABEL))
    else {
        return Ok(d);
    };
    let Some(cluster_name) = infraenv.labels().get(CLUSTER_NAME_LABEL).cloned() else {
        return Ok(d);
    };
    d.paused = Api::<Cluster>::namespaced(client.clone(), &ns)
        .get_opt(&cluster_name)
        .await
        .map_err(Error::Read)?
        .is_some_and(|c| {
            c.spec.paused == Some(true) || c.annotations().contains_key(PAUSED_ANNOTATION)
        });
    d.agents = Api::<Agent>::namespaced(client.clone(), &ns)
        .list(&ListParams::default().labels(&format!("{INFRAENV_NAME_LABEL}={infraenv_name}")))
        .await
        .map_err(Error::Read)?
        .items;

    let by_cluster = ListParams::default().labels(&format!("{CLUSTER_NAME_LABEL}={cluster_name}"));
    let machines = Api::<Machine>::namespaced(client.clone(), &ns)
        .list(&by_cluster)
        .await
        .map_err(Error::Read)?
        .items;
    let metal3machines: BTreeMap<String, Metal3Machine> =
        Api::<Metal3Machine>::namespaced(client.clone(), &ns)
            .list(&by_cluster)
            .await
            .map_err(Error::Read)?
            .items
            .into_iter()
            .map(|m| (m.name_any(), m))
            .collect();
    let configs: BTreeMap<String, OpenshiftAssistedConfig> =
        Api::<OpenshiftAssistedConfig>::namespaced(client.clone(), &ns)
            .list(&by_cluster)
            .await
            .map_err(Error::Read)?
            .items
            .into_iter()
            .map(|c| (c.name_any(), c))
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
            Some((host_ns, host_name)) => {
                Api::<BareMetalHost>::namespaced(client.clone(), &host_ns)
                    .get_opt(&host_name)
                    .await
                    .map_err(Error::Read)?
            }
            None => None,
        };
        let config = machine
            .spec
            .bootstrap
            .config_ref
            .as_ref()
            .and_then(|r| configs.get(&r.name).cloned());
        let host_metadata = match host.as_ref() {
            Some(h) => host_metadata(client, h).await?,
            None => BTreeMap::new(),
        };
        d.machines.push(MachineObjects {
            machine,
            metal3machine,
            host,
            host_metadata,
            config,
        });
    }

    let cd_ref = infraenv.spec.cluster_ref.clone();
    if let Some(cd_ref) = cd_ref {
        let cd_ns = if cd_ref.namespace.is_empty() {
            ns.clone()
        } else {
            cd_ref.namespace.clone()
        };
        if let Some(cd) = Api::<ClusterDeployment>::namespaced(client.clone(), &cd_ns)
            .get_opt(&cd_ref.name)
            .await
            .map_err(Error::Read)?
            && let Some(install) = &cd.spec.cluster_install_ref
        {
            d.aci = Api::<AgentClusterInstall>::namespaced(client.clone(), &cd_ns)
                .get_opt(&install.name)
                .await
                .map_err(Error::Read)?;
        }
    }
    d.cluster_name = cluster_name;
    d.infraenv = Some(infraenv);
    Ok(d)
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
    Ok(agent::metadata_secret_keys(&yaml))
}

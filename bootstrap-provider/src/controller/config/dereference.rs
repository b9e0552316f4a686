//! The only file of the OpenshiftAssistedConfig controller that reads from the API server.

use std::sync::Arc;

use assisted_api::{AgentClusterInstall, ClusterDeployment, InfraEnv};
use external_types::capi::{Cluster, Machine};
use external_types::capm3::v1beta2::{Metal3Machine, Metal3MachineTemplate};
use external_types::metal3_io::BareMetalHost;
use kube::ResourceExt;
use manager::cache;
use provider_api::bootstrap::api::OpenshiftAssistedConfig;

use crate::controller::Error;
use crate::controller::caches::Caches;
use crate::controller::infraenv;
use crate::controller::labels::CLUSTER_NAME_LABEL;
use crate::controller::matching::host_of;
use crate::controller::template::{TemplateRef, template_of};
use crate::controller::{discovery, image};

/// One Machine of the cluster as boot-MAC matching sees it.
pub struct MachineHost {
    pub machine: Machine,
    pub metal3machine: Option<Metal3Machine>,
    /// The BareMetalHost the Metal3Machine's `metal3.io/BareMetalHost` annotation names, when
    /// it exists in the config's namespace (CAPM3 claims hosts of its own namespace only).
    pub host: Option<BareMetalHost>,
}

/// Everything one reconcile of a config decides from.
pub struct Dereferenced {
    pub config: Arc<OpenshiftAssistedConfig>,
    /// The Machine that controls the config (CAPI sets it); `None` until then.
    pub machine: Option<Machine>,
    pub cluster: Option<Cluster>,
    pub metal3machine: Option<Metal3Machine>,
    pub template_ref: Option<TemplateRef>,
    pub template: Option<Metal3MachineTemplate>,
    /// Every config whose Machine's Metal3Machine was cloned from the same template.
    pub template_configs: Vec<OpenshiftAssistedConfig>,
    /// The ClusterDeployments labelled with the cluster's name (exactly one is expected).
    pub cluster_deployments: Vec<ClusterDeployment>,
    pub aci: Option<AgentClusterInstall>,
    pub infraenv: Option<InfraEnv>,
    pub data_secret_exists: bool,
    /// The InfraEnv's discovery ignition, read only for a disk-image template whose data Secret
    /// is still missing; `Err` says why it could not be read.
    pub discovery_ignition: Option<Result<String, discovery::FetchError>>,
    /// The cluster's Machines (not being deleted), what the Agent controller matches Agents
    /// against, so that the boot-MAC problems of this config's host are reported here. Read
    /// only once this config's Metal3Machine has claimed a host; empty before.
    pub cluster_machines: Vec<MachineHost>,
}

impl Dereferenced {
    /// The config alone, before anything it refers to is read.
    fn nothing_found(config: Arc<OpenshiftAssistedConfig>) -> Dereferenced {
        Dereferenced {
            config,
            machine: None,
            cluster: None,
            metal3machine: None,
            template_ref: None,
            template: None,
            template_configs: Vec::new(),
            cluster_deployments: Vec::new(),
            aci: None,
            infraenv: None,
            data_secret_exists: false,
            discovery_ignition: None,
            cluster_machines: Vec::new(),
        }
    }
}

/// Whether the config's data Secret exists. Not asked for: the status names the data Secret
/// once it was made (it is written right after, as CAPI's bootstrap contract has it), and this
/// process remembers making it until the watch cache shows that status. Before, asking each
/// reconcile until the Secret existed was a third of this manager's requests.
fn data_secret_exists(
    data_secrets: &manager::controller::Applied,
    config: &OpenshiftAssistedConfig,
) -> bool {
    let data_secret = crate::controller::image::data_secret_name(&config.name_any());
    let key =
        crate::controller::data_secret_key(&config.namespace().unwrap_or_default(), &data_secret);
    data_secrets.is_current(&key, 0) || status_names_data_secret(config)
}

/// The config's status says its data Secret was made.
fn status_names_data_secret(config: &OpenshiftAssistedConfig) -> bool {
    config.status.as_ref().is_some_and(|s| {
        s.data_secret_name.is_some()
            || s.initialization
                .as_ref()
                .is_some_and(|i| i.data_secret_created == Some(true))
    })
}

/// Everything comes from the caches but, for a disk-image
/// template still without its Secret, the discovery ignition.
pub async fn dereference(
    caches: &Caches,
    data_secrets: &manager::controller::Applied,
    config: Arc<OpenshiftAssistedConfig>,
) -> Result<Dereferenced, Error> {
    let ns = config.namespace().unwrap_or_default();
    let mut d = Dereferenced::nothing_found(config.clone());
    d.data_secret_exists = data_secret_exists(data_secrets, &config);

    let Some(machine_name) = config
        .owner_references()
        .iter()
        .find(|o| o.kind == "Machine" && o.controller == Some(true))
        .map(|o| o.name.clone())
    else {
        return Ok(d);
    };
    let Some(machine) = cache::get(&caches.machines, &ns, &machine_name) else {
        return Ok(d);
    };
    let cluster_name = machine.spec.cluster_name.clone();
    d.cluster = cache::get(&caches.clusters, &ns, &cluster_name);
    if machine.spec.infrastructure_ref.kind == "Metal3Machine" {
        d.metal3machine = cache::get(
            &caches.metal3machines,
            &ns,
            &machine.spec.infrastructure_ref.name,
        );
    }
    d.template_ref = d.metal3machine.as_ref().and_then(template_of);
    d.machine = Some(machine);
    let claimed = d.metal3machine.as_ref().and_then(host_of).is_some();

    // The cluster's Machines and Metal3Machines: for the template's other configs and for
    // matching's view once this Machine has a host. CAPI labels what it creates with the
    // cluster's name: only this cluster's objects.
    let (cluster_machines, cluster_metal3machines) = if d.template_ref.is_some() || claimed {
        (
            cache::labelled(&caches.machines, &ns, CLUSTER_NAME_LABEL, &cluster_name),
            cache::labelled(
                &caches.metal3machines,
                &ns,
                CLUSTER_NAME_LABEL,
                &cluster_name,
            ),
        )
    } else {
        (Vec::new(), Vec::new())
    };

    if let Some(template_ref) = d.template_ref.clone() {
        d.template = cache::get(&caches.templates, &ns, &template_ref.name);
        d.template_configs = template_configs(
            caches,
            &ns,
            &template_ref,
            &cluster_name,
            &cluster_machines,
            &cluster_metal3machines,
        );
        d.infraenv = cache::get(
            &caches.infraenvs,
            &ns,
            &infraenv::infraenv_name(&template_ref.name),
        );
        d.discovery_ignition = read_discovery_ignition(&d).await;
    }

    if claimed {
        let hosts: Vec<BareMetalHost> = cache::in_namespace(&caches.hosts, &ns);
        d.cluster_machines = machine_hosts(cluster_machines, &cluster_metal3machines, &hosts, &ns);
    }

    (d.cluster_deployments, d.aci) = read_install(caches, &ns, &cluster_name);
    Ok(d)
}

/// The ClusterDeployments labelled with the cluster's name and, when there is exactly one, the
/// AgentClusterInstall it names.
fn read_install(
    caches: &Caches,
    ns: &str,
    cluster_name: &str,
) -> (Vec<ClusterDeployment>, Option<AgentClusterInstall>) {
    let cluster_deployments = cache::labelled(
        &caches.cluster_deployments,
        ns,
        CLUSTER_NAME_LABEL,
        cluster_name,
    );
    let aci = match cluster_deployments.as_slice() {
        [cd] => cd
            .spec
            .cluster_install_ref
            .as_ref()
            .and_then(|install| cache::get(&caches.acis, ns, &install.name)),
        _ => None,
    };
    (cluster_deployments, aci)
}

/// The template's users: Metal3Machines cloned from it → their Machines → configs.
fn template_configs(
    caches: &Caches,
    ns: &str,
    template_ref: &TemplateRef,
    cluster_name: &str,
    cluster_machines: &[Machine],
    cluster_metal3machines: &[Metal3Machine],
) -> Vec<OpenshiftAssistedConfig> {
    let cloned: Vec<String> = cluster_metal3machines
        .iter()
        .filter(|m| template_of(m).as_ref() == Some(template_ref))
        .map(|m| m.name_any())
        .collect();
    let config_names: Vec<String> = cluster_machines
        .iter()
        .filter(|m| {
            m.spec.infrastructure_ref.kind == "Metal3Machine"
                && cloned.contains(&m.spec.infrastructure_ref.name)
                && m.metadata.deletion_timestamp.is_none()
        })
        .filter_map(|m| m.spec.bootstrap.config_ref.as_ref())
        .filter(|r| r.kind == "OpenshiftAssistedConfig")
        .map(|r| r.name.clone())
        .collect();
    cache::labelled(&caches.configs, ns, CLUSTER_NAME_LABEL, cluster_name)
        .into_iter()
        .filter(|c| config_names.contains(&c.name_any()))
        .collect()
}

/// The InfraEnv's discovery ignition, for a disk-image template whose data Secret is still
/// missing (it becomes the user data); None otherwise or before the InfraEnv publishes it.
async fn read_discovery_ignition(
    d: &Dereferenced,
) -> Option<Result<String, discovery::FetchError>> {
    let disk_image = d
        .template
        .as_ref()
        .is_some_and(|t| image::image_mode(t) == image::ImageMode::DiskImage);
    let url = d
        .infraenv
        .as_ref()
        .and_then(|ie| ie.status.as_ref())
        .map(|s| s.boot_artifacts.discovery_ignition_url.clone())
        .filter(|u| !u.is_empty())?;
    if !disk_image || d.data_secret_exists {
        return None;
    }
    Some(discovery::fetch_discovery_ignition(&url).await)
}

/// The cluster's Machines (not being deleted), each with its Metal3Machine and the host that
/// claims, as boot-MAC matching sees them.
fn machine_hosts(
    cluster_machines: Vec<Machine>,
    cluster_metal3machines: &[Metal3Machine],
    hosts: &[BareMetalHost],
    ns: &str,
) -> Vec<MachineHost> {
    cluster_machines
        .into_iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .map(|machine| {
            let metal3machine = cluster_metal3machines
                .iter()
                .find(|m3m| {
                    machine.spec.infrastructure_ref.kind == "Metal3Machine"
                        && m3m.name_any() == machine.spec.infrastructure_ref.name
                })
                .cloned();
            let host = metal3machine
                .as_ref()
                .and_then(host_of)
                .and_then(|(host_ns, host_name)| {
                    hosts
                        .iter()
                        .find(|h| host_ns == ns && h.name_any() == host_name)
                        .cloned()
                });
            MachineHost {
                machine,
                metal3machine,
                host,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use provider_api::bootstrap::api::{BootstrapInitialization, OpenshiftAssistedConfigStatus};

    fn with_status(status: Option<OpenshiftAssistedConfigStatus>) -> OpenshiftAssistedConfig {
        let mut c = OpenshiftAssistedConfig::new("c", Default::default());
        c.status = status;
        c
    }

    #[test]
    fn the_status_says_whether_the_data_secret_was_made() {
        assert!(!status_names_data_secret(&with_status(None)));
        assert!(!status_names_data_secret(&with_status(Some(
            OpenshiftAssistedConfigStatus {
                initialization: Some(BootstrapInitialization {
                    data_secret_created: Some(false),
                }),
                ..Default::default()
            }
        ))));
        assert!(status_names_data_secret(&with_status(Some(
            OpenshiftAssistedConfigStatus {
                data_secret_name: Some("c".into()),
                ..Default::default()
            }
        ))));
        assert!(status_names_data_secret(&with_status(Some(
            OpenshiftAssistedConfigStatus {
                initialization: Some(BootstrapInitialization {
                    data_secret_created: Some(true),
                }),
                ..Default::default()
            }
        ))));
    }
}

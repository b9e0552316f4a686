//! Install preparation: install-config.yaml → install backend → artifacts and per-host
//! ignitions in the file store.

use std::path::PathBuf;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::domain::net::Cidr;
use crate::domain::{ClusterSnapshot, HostRole, HostSnapshot, ReleaseInfo};
use crate::service::install::{
    FileStore, GenerateHost, GenerateRequest, InstallBackend, InstallConfigInput, InstallError,
    Manifest, ManifestFolder, ProxyInput, chrony_conf, chrony_manifests, disk_encryption_manifests,
    host_ignition, host_ignition_file_name, masters_schedulable_patch, render_install_config_yaml,
};
use crate::service::store::ClusterRecord;

pub struct BackendPreparer {
    pub backend: Arc<dyn InstallBackend>,
    pub files: FileStore,
    /// Scratch space for the installer; one fresh directory per run.
    pub work_root: PathBuf,
    /// The workload API URL the admin kubeconfig points at; default `https://api.<domain>:6443`.
    pub api_url: Option<String>,
}

/// What the cluster's InfraEnvs add to its install (read from the store when the install
/// starts): the trust bundles for install-config and the NTP sources the hosts were given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InfraEnvInputs {
    pub trust_bundles: Vec<String>,
    pub ntp_sources: Vec<String>,
}

/// The request for the backend: day-1 hosts with their fixed roles and addresses; the
/// manifests the core generates (chrony, disk encryption, schedulable masters) first, the
/// user's after them, so a user manifest of the same name wins.
pub fn generate_request(
    rec: &ClusterRecord,
    infra_envs: &InfraEnvInputs,
    install_config_yaml: String,
    api_url: &str,
) -> Result<GenerateRequest, InstallError> {
    let c = &rec.snapshot;
    let hosts: Vec<GenerateHost> = day1_hosts(c)
        .map(|h| GenerateHost {
            id: h.id.clone(),
            hostname: h.hostname().to_string(),
            role: h.effective_role(),
            bootstrap: h.bootstrap,
            inventory: h.inventory.clone(),
            machine_ip: machine_network_ip(h, &c.machine_networks),
        })
        .collect();
    let mut manifests = core_manifests(c, infra_envs)?;
    manifests.extend(
        rec.settings
            .manifests
            .iter()
            .map(|(name, content)| Manifest {
                folder: ManifestFolder::Openshift,
                name: name.clone(),
                content: content.clone(),
                user: true,
            }),
    );
    Ok(GenerateRequest {
        cluster_id: c.id.clone(),
        cluster_name: c.name.clone(),
        base_domain: c.base_domain.clone(),
        install_config_yaml,
        sno: c.is_sno(),
        release_image: rec.settings.release_image.clone(),
        api_url: api_url.to_string(),
        pull_secret: rec.settings.pull_secret.clone(),
        bootstrap_node_ip: bootstrap_node_ip(rec, &hosts)?,
        machine_networks: c.machine_networks.clone(),
        hosts,
        manifests,
        mirrors: rec.settings.mirrors.clone(),
    })
}

/// The manifests the core adds to every install (all in `openshift/`).
fn core_manifests(
    c: &ClusterSnapshot,
    infra_envs: &InfraEnvInputs,
) -> Result<Vec<Manifest>, InstallError> {
    let arbiter = c.arbiter_count > 0;
    let cluster_sources: Vec<String> =
        crate::service::install::split_list(&c.additional_ntp_source);
    // What the hosts synced with during discovery, then what their InfraEnvs gave them.
    let host_sources: Vec<String> = day1_hosts(c)
        .flat_map(|h| h.ntp_sources.iter().map(|s| s.source_name.clone()))
        .chain(infra_envs.ntp_sources.iter().cloned())
        .collect();
    let mut files = chrony_manifests(&chrony_conf(&cluster_sources, &host_sources), arbiter)?;
    if let Some(enc) = &c.disk_encryption {
        files.extend(disk_encryption_manifests(enc, arbiter)?);
    }
    let mut manifests: Vec<Manifest> = files
        .into_iter()
        .map(|(name, content)| Manifest {
            folder: ManifestFolder::Openshift,
            name,
            content,
            user: false,
        })
        .collect();
    // The installer makes control-plane nodes schedulable only without workers; upstream
    // also forces it below two workers (ingress needs two schedulable nodes).
    let workers = day1_hosts(c)
        .filter(|h| h.effective_role() == HostRole::Worker)
        .count();
    if c.schedulable_masters || workers < 2 {
        manifests.push(masters_schedulable_patch());
    }
    Ok(manifests)
}

/// The host's address (no prefix) in the first machine network.
fn machine_network_ip(h: &HostSnapshot, machine_networks: &[String]) -> Option<String> {
    let net = Cidr::parse(machine_networks.first()?)?;
    h.inventory
        .as_ref()?
        .interfaces
        .iter()
        .flat_map(|n| n.addresses())
        .filter_map(Cidr::parse_interface)
        .map(|(ip, _)| ip)
        .find(|ip| net.contains(*ip))
        .map(|ip| ip.to_string())
}

/// `OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP`: the bootstrap host's machine-network address, so
/// the bootstrap kubelet and etcd bind where the other nodes reach them. Upstream sets it
/// unless the network (multi-node) or the load balancer is user-managed.
fn bootstrap_node_ip(
    rec: &ClusterRecord,
    hosts: &[GenerateHost],
) -> Result<Option<String>, InstallError> {
    let c = &rec.snapshot;
    let user_managed =
        (!c.is_sno() && c.user_managed_networking) || rec.settings.user_managed_load_balancer;
    if user_managed || c.machine_networks.is_empty() {
        return Ok(None);
    }
    let Some(bootstrap) = hosts.iter().find(|h| h.bootstrap) else {
        return Ok(None);
    };
    match &bootstrap.machine_ip {
        Some(ip) => Ok(Some(ip.clone())),
        None => Err(InstallError::InvalidInput(format!(
            "bootstrap host {} has no address in machine network {}",
            bootstrap.hostname, c.machine_networks[0]
        ))),
    }
}

/// install-config input: the snapshot plus what the ClusterDeployment/ACI settings carry
/// (pull secret, SSH key, proxy, overrides) and the InfraEnvs' trust bundles.
pub fn install_config_input(
    rec: &ClusterRecord,
    infra_envs: &InfraEnvInputs,
) -> InstallConfigInput {
    let mut input = InstallConfigInput::from_snapshot(
        &rec.snapshot,
        &rec.settings.pull_secret,
        Some(rec.settings.ssh_public_key.as_str()).filter(|k| !k.is_empty()),
        rec.settings.install_config_overrides.as_deref(),
    );
    input.proxy = rec.settings.proxy.as_ref().map(|p| ProxyInput {
        http_proxy: p.http_proxy.clone(),
        https_proxy: p.https_proxy.clone(),
        no_proxy: p.no_proxy.clone(),
    });
    input.user_managed_load_balancer = rec.settings.user_managed_load_balancer;
    input.external = rec.settings.external_platform.clone();
    input.additional_trust_bundles = infra_envs.trust_bundles.clone();
    if let Some(m) = &rec.settings.mirrors {
        input.image_digest_sources = crate::domain::mirrors::image_digest_sources(m);
        // The mirrors' CA: the bootstrap and the nodes must trust them to pull the release.
        input.additional_trust_bundles.extend(m.ca_bundle.clone());
    }
    input
}

fn day1_hosts(c: &ClusterSnapshot) -> impl Iterator<Item = &crate::domain::HostSnapshot> {
    c.hosts.iter().filter(|h| !h.is_day2())
}

/// Why a cluster's install preparation failed, by step (shown in the ACI's
/// LastInstallationPreparationFailed condition).
#[derive(Debug, thiserror::Error)]
pub enum PreparationError {
    #[error("install-config: {0}")]
    InstallConfig(InstallError),
    #[error("{0}")]
    Request(InstallError),
    #[error("creating {}: {source}", path.display())]
    WorkDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Generate(InstallError),
    #[error("storing artifacts: {0}")]
    StoreArtifacts(InstallError),
    #[error("ignition of host {host}: {source}")]
    HostIgnition { host: String, source: InstallError },
    #[error("storing ignition of host {host}: {source}")]
    StoreIgnition { host: String, source: InstallError },
}

impl BackendPreparer {
    /// The install step; gives back what it learned of the release.
    async fn run(
        &self,
        rec: ClusterRecord,
        infra_envs: InfraEnvInputs,
    ) -> Result<ReleaseInfo, PreparationError> {
        let c = &rec.snapshot;
        let input = install_config_input(&rec, &infra_envs);
        let yaml = render_install_config_yaml(&input).map_err(PreparationError::InstallConfig)?;
        let api_url = self
            .api_url
            .clone()
            .unwrap_or_else(|| format!("https://api.{}:6443", c.domain()));
        let req = generate_request(&rec, &infra_envs, yaml, &api_url)
            .map_err(PreparationError::Request)?;
        let work = self.work_root.join(format!(
            "{}-{}",
            c.id,
            jiff::Timestamp::now().as_millisecond()
        ));
        crate::service::private_fs::create_dir_all(&work)
            .await
            .map_err(|source| PreparationError::WorkDir {
                path: work.clone(),
                source,
            })?;
        let result = self.backend.generate(&req, &work).await;
        let _ = tokio::fs::remove_dir_all(&work).await;
        let art = result.map_err(PreparationError::Generate)?;
        for warning in &art.warnings {
            tracing::warn!(cluster = %c.id, %warning, "openshift-install warned");
        }
        self.files
            .put_artifacts(&c.id, &art)
            .await
            .map_err(PreparationError::StoreArtifacts)?;
        for h in day1_hosts(c) {
            let role = h.effective_role();
            let base = match role {
                HostRole::Worker => &art.worker_ign,
                _ => &art.master_ign,
            };
            let ign = host_ignition(
                base,
                h.hostname(),
                role,
                h.ignition_config_overrides.as_deref(),
            )
            .map_err(|source| PreparationError::HostIgnition {
                host: h.id.clone(),
                source,
            })?;
            self.files
                .put(&c.id, &host_ignition_file_name(role, &h.id), &ign)
                .await
                .map_err(|source| PreparationError::StoreIgnition {
                    host: h.id.clone(),
                    source,
                })?;
        }
        // What the payload told (a pinned installer binary tells nothing but the image).
        Ok(art.release.clone().unwrap_or_else(|| ReleaseInfo {
            release_image: rec.settings.release_image.clone(),
            ..ReleaseInfo::default()
        }))
    }
}

impl Preparer for BackendPreparer {
    fn prepare(
        &self,
        cluster: ClusterRecord,
        infra_envs: InfraEnvInputs,
    ) -> BoxFuture<'static, Result<ReleaseInfo, PreparationError>> {
        let this = BackendPreparer {
            backend: self.backend.clone(),
            files: FileStore::new(self.files.root.clone()),
            work_root: self.work_root.clone(),
            api_url: self.api_url.clone(),
        };
        async move { this.run(cluster, infra_envs).await }.boxed()
    }
}

/// Generates install artifacts for a cluster that entered preparation (install backend).
pub trait Preparer: Send + Sync {
    fn prepare(
        &self,
        cluster: ClusterRecord,
        infra_envs: InfraEnvInputs,
    ) -> BoxFuture<'static, Result<crate::domain::ReleaseInfo, PreparationError>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ClusterSnapshot, Proxy};
    use crate::service::store::ClusterSettings;

    #[test]
    fn the_aci_proxy_reaches_install_config() {
        let rec = ClusterRecord::new(
            ClusterSnapshot::new("c", "c", jiff::Timestamp::UNIX_EPOCH),
            ClusterSettings {
                proxy: Some(Proxy {
                    http_proxy: Some("http://proxy:3128".into()),
                    https_proxy: None,
                    no_proxy: Some(".lab".into()),
                }),
                ..Default::default()
            },
        );
        let p = install_config_input(&rec, &InfraEnvInputs::default())
            .proxy
            .unwrap();
        assert_eq!(p.http_proxy.as_deref(), Some("http://proxy:3128"));
        assert_eq!(p.no_proxy.as_deref(), Some(".lab"));
    }

    #[test]
    fn load_balancer_and_external_platform_reach_install_config() {
        let mut snap = ClusterSnapshot::new("c", "c", jiff::Timestamp::UNIX_EPOCH);
        snap.platform = crate::domain::PlatformType::External;
        let rec = ClusterRecord::new(
            snap,
            ClusterSettings {
                user_managed_load_balancer: true,
                external_platform: crate::service::install::ExternalPlatformInput {
                    platform_name: Some("oci".into()),
                    cloud_controller_manager: None,
                },
                ..Default::default()
            },
        );
        let input = install_config_input(&rec, &InfraEnvInputs::default());
        assert!(input.user_managed_load_balancer);
        assert_eq!(
            input.platform,
            crate::service::install::InstallPlatform::External
        );
        assert_eq!(input.external.platform_name.as_deref(), Some("oci"));
    }

    #[test]
    fn disk_encryption_manifests_go_before_the_users() {
        let mut snap = ClusterSnapshot::new("c", "c", jiff::Timestamp::UNIX_EPOCH);
        snap.disk_encryption = Some(crate::domain::DiskEncryption {
            enable_on: "masters,workers".into(),
            mode: "tpmv2".into(),
            tang_servers: String::new(),
        });
        let rec = ClusterRecord::new(
            snap,
            ClusterSettings {
                manifests: vec![("50-user.yaml".into(), b"kind: X\n".to_vec())],
                ..Default::default()
            },
        );
        let none = InfraEnvInputs::default();
        let req = generate_request(&rec, &none, String::new(), "https://api:6443").unwrap();
        let names: Vec<&str> = req.manifests.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "50-masters-chrony-configuration.yaml",
                "50-workers-chrony-configuration.yaml",
                "99-openshift-master-tpmv2-encryption.yaml",
                "99-openshift-worker-tpmv2-encryption.yaml",
                "cluster-scheduler-02-config.yml.patch_ai_set_masters_schedulable",
                "50-user.yaml",
            ]
        );
        assert!(
            req.manifests
                .iter()
                .all(|m| m.user == (m.name == "50-user.yaml"))
        );
        // Without encryption: no encryption manifests.
        let plain = ClusterRecord::new(
            ClusterSnapshot::new("c", "c", jiff::Timestamp::UNIX_EPOCH),
            rec.settings.clone(),
        );
        let req = generate_request(&plain, &none, String::new(), "https://api:6443").unwrap();
        assert_eq!(req.manifests.len(), 4);
    }

    #[test]
    fn ntp_sources_and_trust_bundles_reach_the_install() {
        let mut snap = ClusterSnapshot::new("c", "c", jiff::Timestamp::UNIX_EPOCH);
        snap.additional_ntp_source = "clock.lab, 10.0.0.1".into();
        snap.openshift_version = "4.17.3".into();
        snap.platform = crate::domain::PlatformType::BareMetal;
        let rec = ClusterRecord::new(snap, ClusterSettings::default());
        let ie = InfraEnvInputs {
            trust_bundles: vec!["-----BEGIN CERTIFICATE----- lab".into()],
            ntp_sources: vec!["ie.ntp".into()],
        };
        let req = generate_request(&rec, &ie, String::new(), "https://api:6443").unwrap();
        let conf =
            crate::service::install::chrony_conf_of_manifest(&req.manifests[0].content).unwrap();
        assert!(
            conf.ends_with(
                "server clock.lab iburst\nserver 10.0.0.1 iburst\nserver ie.ntp iburst\n"
            ),
            "{conf}"
        );
        let input = install_config_input(&rec, &ie);
        assert_eq!(input.additional_trust_bundles, ie.trust_bundles);
        // 4.17's installer does not know additionalNTPServers; 4.18's does.
        assert!(input.additional_ntp_servers.is_empty());
        let mut newer = rec.clone();
        newer.snapshot.openshift_version = "4.18.1".into();
        assert_eq!(
            install_config_input(&newer, &ie).additional_ntp_servers,
            ["clock.lab", "10.0.0.1"]
        );
    }
}

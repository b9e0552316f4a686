//! Install preparation: install-config.yaml → install backend → artifacts and per-host
//! ignitions in the file store.

use std::path::PathBuf;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::Preparer;
use crate::domain::{ClusterSnapshot, HostRole};
use crate::service::install::{
    FileStore, GenerateHost, GenerateRequest, InstallBackend, InstallConfigInput, InstallError,
    ProxyInput, disk_encryption_manifests, host_ignition, host_ignition_file_name,
    render_install_config_yaml,
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

/// The request for the backend: day-1 hosts with their fixed roles; the manifests the core
/// generates (disk encryption) first, the user's after them, so a user manifest of the same
/// name wins.
pub fn generate_request(
    rec: &ClusterRecord,
    install_config_yaml: String,
    api_url: &str,
) -> Result<GenerateRequest, InstallError> {
    let c = &rec.snapshot;
    let mut manifests = match &c.disk_encryption {
        Some(enc) => disk_encryption_manifests(enc, c.arbiter_count > 0)?,
        None => Vec::new(),
    };
    manifests.extend(rec.settings.manifests.iter().cloned());
    Ok(GenerateRequest {
        cluster_id: c.id.clone(),
        cluster_name: c.name.clone(),
        base_domain: c.base_domain.clone(),
        install_config_yaml,
        sno: c.is_sno(),
        release_image: rec.settings.release_image.clone(),
        api_url: api_url.to_string(),
        hosts: day1_hosts(c)
            .map(|h| GenerateHost {
                id: h.id.clone(),
                hostname: h.hostname().to_string(),
                role: h.effective_role(),
            })
            .collect(),
        manifests,
    })
}

/// install-config input: the snapshot plus what the ClusterDeployment/ACI settings carry
/// (pull secret, SSH key, proxy, overrides).
pub fn install_config_input(rec: &ClusterRecord) -> InstallConfigInput {
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
    input
}

fn day1_hosts(c: &ClusterSnapshot) -> impl Iterator<Item = &crate::domain::HostSnapshot> {
    c.hosts.iter().filter(|h| !h.is_day2())
}

impl BackendPreparer {
    async fn run(&self, rec: ClusterRecord) -> Result<(), String> {
        let c = &rec.snapshot;
        let input = install_config_input(&rec);
        let yaml =
            render_install_config_yaml(&input).map_err(|e| format!("install-config: {e}"))?;
        let api_url = self
            .api_url
            .clone()
            .unwrap_or_else(|| format!("https://api.{}:6443", c.domain()));
        let req = generate_request(&rec, yaml, &api_url).map_err(|e| e.to_string())?;
        let work = self.work_root.join(format!(
            "{}-{}",
            c.id,
            jiff::Timestamp::now().as_millisecond()
        ));
        tokio::fs::create_dir_all(&work)
            .await
            .map_err(|e| format!("creating {}: {e}", work.display()))?;
        let result = self.backend.generate(&req, &work).await;
        let _ = tokio::fs::remove_dir_all(&work).await;
        let art = result.map_err(|e| e.to_string())?;
        self.files
            .put_artifacts(&c.id, &art)
            .await
            .map_err(|e| format!("storing artifacts: {e}"))?;
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
            .map_err(|e| format!("ignition of host {}: {e}", h.id))?;
            self.files
                .put(&c.id, &host_ignition_file_name(role, &h.id), &ign)
                .await
                .map_err(|e| format!("storing ignition of host {}: {e}", h.id))?;
        }
        Ok(())
    }
}

impl Preparer for BackendPreparer {
    fn prepare(&self, cluster: ClusterRecord) -> BoxFuture<'static, Result<(), String>> {
        let this = BackendPreparer {
            backend: self.backend.clone(),
            files: FileStore::new(self.files.root.clone()),
            work_root: self.work_root.clone(),
            api_url: self.api_url.clone(),
        };
        async move { this.run(cluster).await }.boxed()
    }
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
        let p = install_config_input(&rec).proxy.unwrap();
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
        let input = install_config_input(&rec);
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
        let req = generate_request(&rec, String::new(), "https://api:6443").unwrap();
        let names: Vec<&str> = req.manifests.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "99-openshift-master-tpmv2-encryption.yaml",
                "99-openshift-worker-tpmv2-encryption.yaml",
                "50-user.yaml",
            ]
        );
        // Without encryption only the user's.
        let plain = ClusterRecord::new(
            ClusterSnapshot::new("c", "c", jiff::Timestamp::UNIX_EPOCH),
            rec.settings.clone(),
        );
        let req = generate_request(&plain, String::new(), "https://api:6443").unwrap();
        assert_eq!(req.manifests.len(), 1);
    }
}

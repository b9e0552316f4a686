//! The decide phase (pure): the infra-env record the REST API serves and the image URLs, or
//! why there is no image.

use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::controller::Action;

use super::DEFAULT_OS_VERSION;
use super::dereference::{BoundCluster, Dereferenced};
use super::image::{
    ImageRevision, ImageUrls, content_rev, image_urls, static_network_json, static_network_of,
};
use crate::api::infraenv::{ImageType, InfraEnv, IpxeScriptType, KernelArgumentOperation};
use crate::service::controllers::context::ImageSettings;
use crate::service::images::StaticNetworkConfig;
use crate::service::images::{
    DiscoveryIgnitionParams, ProxySettings, discovery_ignition, ipxe_boot_order_control_script,
    ipxe_script, minimal_initrd,
};
use crate::service::store::InfraEnvRecord;
use crate::service::tls::AgentTrust;

/// Why an InfraEnv has no image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// ImageCreated=False ImageCreationError: the InfraEnv or what it references is invalid.
    Error(String),
    /// ImageCreated=Unknown MissingClusterDeployment: the bound cluster is not there (yet).
    MissingCluster(String),
    /// ImageCreated=Unknown ServingCertificatePending: the agent API is https and cert-manager
    /// has not issued its certificate yet, so the CA the image must carry is not known.
    CertificatePending,
}

/// The decide phase (pure): the infra-env record the REST API serves and the image URLs, or
/// why there is no image.
pub fn decide(
    ie: &InfraEnv,
    read: &Dereferenced,
    settings: &ImageSettings,
) -> Result<(InfraEnvRecord, ImageUrls), Problem> {
    let ns = ie.namespace().unwrap_or_default();
    let id = ie.uid().unwrap_or_default();
    let spec = &ie.spec;
    let ps_name = &spec.pull_secret_ref.name;
    let pull_secret = read
        .pull_secret
        .as_ref()
        .and_then(|s| s.data.as_ref()?.get(".dockerconfigjson").cloned())
        .ok_or_else(|| {
            Problem::Error(format!(
                "pull secret {ps_name} not found or has no .dockerconfigjson key"
            ))
        })?;
    let pull_secret = String::from_utf8(pull_secret.0)
        .map_err(|_| Problem::Error(format!("pull secret {ps_name} is not UTF-8")))?;

    let (cluster_id, cd_name, cluster_version) = match &read.cluster {
        Some(BoundCluster::Missing { namespace, name }) => {
            return Err(Problem::MissingCluster(format!(
                "ClusterDeployment {namespace}/{name} not found"
            )));
        }
        Some(BoundCluster::Unregistered { namespace, name }) => {
            return Err(Problem::MissingCluster(format!(
                "ClusterDeployment {namespace}/{name} is not registered yet"
            )));
        }
        Some(BoundCluster::Registered { id, name, version }) => {
            (Some(id.clone()), Some(name.clone()), Some(version.clone()))
        }
        None => (None, None, None),
    };
    let version = cluster_version
        .or_else(|| spec.os_image_version.clone())
        .unwrap_or_else(|| DEFAULT_OS_VERSION.into());
    let arch = spec
        .cpu_architecture
        .map(|a| {
            serde_json::to_value(a)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        })
        .unwrap_or_else(|| "x86_64".into());
    // No base ISO, no image: a URL that answers 404 would send hosts after nothing.
    if crate::service::images::select(&settings.os_images, &version, &arch).is_none() {
        return Err(Problem::Error(format!(
            "no base OS image for OpenShift {version} on {arch}: assisted-core was started \
             without one; list the RHCOS live ISOs in --os-images \
             (OPENSHIFT_ASSISTED_CORE_OS_IMAGES when installed with clusterctl)"
        )));
    }
    let static_network: Vec<StaticNetworkConfig> =
        read.nmstate_configs.iter().map(static_network_of).collect();

    if let Some(p) = &spec.proxy {
        crate::domain::formats::check_proxy(p.http_proxy.as_deref(), p.https_proxy.as_deref())
            .map_err(|e| Problem::Error(e.to_string()))?;
    }
    let proxy = spec
        .proxy
        .as_ref()
        .map(|p| ProxySettings {
            http_proxy: p.http_proxy.clone(),
            https_proxy: p.https_proxy.clone(),
            no_proxy: p.no_proxy.clone(),
        })
        .unwrap_or_default();
    let mut ntp = spec.additional_ntp_sources.clone();
    ntp.extend(spec.ntp_sources.iter().cloned());
    let kernel_arguments: Vec<String> = spec
        .kernel_arguments
        .iter()
        .filter(|k| matches!(k.operation, None | Some(KernelArgumentOperation::Append)))
        .map(|k| k.value.clone())
        .collect();
    let token = read.token.clone();
    let service_ca_bundle = match &read.agent_trust {
        AgentTrust::Pending => return Err(Problem::CertificatePending),
        AgentTrust::Plain => None,
        AgentTrust::Verify(ca) => ca.clone(),
    };
    // The schema keeps it at 0 or more; anything else waits not at all.
    let discovery_delay = spec
        .network_discovery_delay_seconds
        .and_then(|d| u64::try_from(d).ok())
        .unwrap_or(0);
    // The mirrors the discovery agent pulls through (its registries.conf and CA).
    let mirror_files = crate::service::controllers::mirror_config::parse(&read.mirror_registry)
        .map_err(Problem::Error)?
        .map(|c| crate::domain::mirrors::discovery_files(&c))
        .unwrap_or_default();
    let params = DiscoveryIgnitionParams {
        service_base_url: settings.urls.agent_api.clone(),
        infra_env_id: id.clone(),
        agent_token: token.clone(),
        agent_image: settings.agent_image.clone(),
        insecure: settings.urls.agent_api.starts_with("http://"),
        service_ca_bundle,
        pull_secret,
        ssh_authorized_key: spec.ssh_authorized_key.clone().unwrap_or_default(),
        ntp_sources: ntp.clone(),
        proxy: proxy.clone(),
        additional_trust_bundle: spec.additional_trust_bundle.clone(),
        static_network: static_network.clone(),
        network_discovery_delay_seconds: discovery_delay,
        ignition_config_override: spec
            .ignition_config_override
            .clone()
            .filter(|o| !o.is_empty()),
        kernel_arguments: kernel_arguments.clone(),
        openshift_version: Some(version.clone()),
        mirror_files,
    };
    let ignition = discovery_ignition(&params).map_err(|e| Problem::Error(e.to_string()))?;
    let initrd = minimal_initrd(&static_network, &proxy, discovery_delay)
        .map_err(|e| Problem::Error(e.to_string()))?;
    let image_type = match spec.image_type {
        Some(ImageType::FullIso) => "full",
        // Upstream's kube-API default is the minimal ISO; we serve both from one base ISO.
        Some(ImageType::MinimalIso) | None => "minimal",
    };
    let rev = content_rev(&[
        ignition.as_bytes(),
        initrd.as_deref().unwrap_or_default(),
        image_type.as_bytes(),
        version.as_bytes(),
        arch.as_bytes(),
        kernel_arguments.join(" ").as_bytes(),
    ]);
    let boot_order = spec.ipxe_script_type == Some(IpxeScriptType::BootOrderControl);
    let urls = image_urls(
        &settings.urls,
        &id,
        &token,
        &ImageRevision {
            version: &version,
            arch: &arch,
            image_type,
            rev: &rev,
            ipxe_boot_order: boot_order,
        },
    );
    let script = ipxe_script(
        &urls.boot.initrd,
        &urls.boot.kernel,
        &urls.boot.rootfs,
        &kernel_arguments,
    );
    let redirect_script = ipxe_boot_order_control_script(&urls.boot.ipxe_script);
    let rec = InfraEnvRecord {
        id,
        namespace: ns,
        name: ie.name_any(),
        cluster_id,
        cluster_deployment_name: cd_name,
        agent_labels: spec.agent_labels.clone(),
        auto_approve: spec.agent_approval.as_ref().is_some_and(|a| a.auto_approve),
        token,
        discovery_ignition: ignition.into(),
        static_network_config: static_network_json(&static_network),
        ipxe_script: script,
        ipxe_redirect_script: redirect_script,
        kernel_arguments,
        ntp_sources: ntp_names(&ntp),
        additional_trust_bundle: spec
            .additional_trust_bundle
            .clone()
            .filter(|b| !b.trim().is_empty()),
        minimal_initrd: initrd.map(Into::into),
        rootfs_url: urls.boot.rootfs.clone(),
        cpu_architecture: arch,
        openshift_version: version,
    };
    Ok((rec, urls))
}

/// One name or address per entry: an InfraEnv entry may list several, comma-separated (as the
/// discovery image's NTP unit reads them).
fn ntp_names(sources: &[String]) -> Vec<String> {
    sources
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// When to look again after a reconcile with this outcome.
pub(super) fn next_look(
    ie: &InfraEnv,
    outcome: &Result<(InfraEnvRecord, ImageUrls), Problem>,
) -> Action {
    match outcome {
        Ok(_) => Action::requeue(Duration::from_secs(300)),
        // The store is not watched: look again until the cluster registers.
        Err(Problem::MissingCluster(_)) => Action::requeue(Duration::from_secs(10)),
        // cert-manager usually issues within seconds of the core's start.
        Err(Problem::CertificatePending) => Action::requeue(Duration::from_secs(3)),
        // Invalid input: the InfraEnv, its Secret, NMStateConfigs and ClusterDeployments are
        // watched, so a fix reconciles it again; the mirror ConfigMap is not: looked at again
        // every minute.
        Err(Problem::Error(_)) if ie.spec.mirror_registry_ref.is_some() => {
            Action::requeue(Duration::from_secs(60))
        }
        Err(Problem::Error(_)) => Action::await_change(),
    }
}

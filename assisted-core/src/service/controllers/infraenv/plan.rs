//! The decide phase (pure): the infra-env record the REST API serves and the image URLs, or
//! why there is no image.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::controller::Action;
use manager::runtime::WATCH_FILTER_LABEL;

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

/// OpenShift version of images for infra-envs without a cluster or `osImageVersion`.
pub const DEFAULT_OS_VERSION: &str = "4.20";
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
/// why there is no image. The checks run in the order their errors are shown: pull secret,
/// bound cluster, base OS image, then the image content.
pub fn decide(
    ie: &InfraEnv,
    read: &Dereferenced,
    settings: &ImageSettings,
) -> Result<(InfraEnvRecord, ImageUrls), Problem> {
    let pull_secret = pull_secret_text(ie, read)?;
    let cluster = bound_cluster(read)?;
    let version = cluster
        .as_ref()
        .map(|c| c.version.clone())
        .or_else(|| ie.spec.os_image_version.clone())
        .unwrap_or_else(|| DEFAULT_OS_VERSION.into());
    let arch = architecture(ie);
    // No base ISO, no image: a URL that answers 404 would send hosts after nothing.
    if crate::service::images::select(&settings.os_images, &version, &arch).is_none() {
        return Err(Problem::Error(format!(
            "no base OS image for OpenShift {version} on {arch}: assisted-core was started \
             without one; list the RHCOS live ISOs in --os-images \
             (OPENSHIFT_ASSISTED_CORE_OS_IMAGES when installed with clusterctl)"
        )));
    }
    let content = image_content(ie, read, settings, pull_secret, &version)?;
    let image_type = match ie.spec.image_type {
        Some(ImageType::FullIso) => "full",
        // Upstream's kube-API default is the minimal ISO; we serve both from one base ISO.
        Some(ImageType::MinimalIso) | None => "minimal",
    };
    let rev = content_rev(&[
        content.ignition.as_bytes(),
        content.initrd.as_deref().unwrap_or_default(),
        image_type.as_bytes(),
        version.as_bytes(),
        arch.as_bytes(),
        content.kernel_arguments.join(" ").as_bytes(),
    ]);
    let urls = image_urls(
        &settings.urls,
        &ie.uid().unwrap_or_default(),
        &read.token,
        &ImageRevision {
            version: &version,
            arch: &arch,
            image_type,
            rev: &rev,
            ipxe_boot_order: ie.spec.ipxe_script_type == Some(IpxeScriptType::BootOrderControl),
        },
    );
    let rec = record(ie, read, cluster, content, &urls, arch, version);
    Ok((rec, urls))
}

/// The pull secret's `.dockerconfigjson`, as text.
fn pull_secret_text(ie: &InfraEnv, read: &Dereferenced) -> Result<String, Problem> {
    let ps_name = &ie.spec.pull_secret_ref.name;
    let pull_secret = read
        .pull_secret
        .as_ref()
        .and_then(|s| s.data.as_ref()?.get(".dockerconfigjson").cloned())
        .ok_or_else(|| {
            Problem::Error(format!(
                "pull secret {ps_name} not found or has no .dockerconfigjson key"
            ))
        })?;
    String::from_utf8(pull_secret.0)
        .map_err(|_| Problem::Error(format!("pull secret {ps_name} is not UTF-8")))
}

/// The registered cluster an InfraEnv is bound to.
struct Registered {
    id: String,
    name: String,
    version: String,
}

/// The cluster `clusterRef` names, `None` without one; a cluster not there (or not registered)
/// yet is a problem to wait on.
fn bound_cluster(read: &Dereferenced) -> Result<Option<Registered>, Problem> {
    match &read.cluster {
        Some(BoundCluster::Missing { namespace, name }) => Err(Problem::MissingCluster(format!(
            "ClusterDeployment {namespace}/{name} not found"
        ))),
        Some(BoundCluster::Unregistered { namespace, name }) => Err(Problem::MissingCluster(
            format!("ClusterDeployment {namespace}/{name} is not registered yet"),
        )),
        Some(BoundCluster::Registered { id, name, version }) => Ok(Some(Registered {
            id: id.clone(),
            name: name.clone(),
            version: version.clone(),
        })),
        None => Ok(None),
    }
}

/// The image's architecture as the API spells it, x86_64 by default.
fn architecture(ie: &InfraEnv) -> String {
    ie.spec
        .cpu_architecture
        .map(|a| {
            serde_json::to_value(a)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        })
        .unwrap_or_else(|| "x86_64".into())
}

/// What the image carries: the discovery ignition, the minimal ISO's initrd and the inputs
/// they were built from that the record keeps.
struct ImageContent {
    ignition: String,
    initrd: Option<Vec<u8>>,
    static_network: Vec<StaticNetworkConfig>,
    ntp: Vec<String>,
    kernel_arguments: Vec<String>,
}

/// The discovery ignition and initrd; a bad proxy, a pending certificate, a bad mirror
/// ConfigMap or an ignition that does not build is the problem to show.
fn image_content(
    ie: &InfraEnv,
    read: &Dereferenced,
    settings: &ImageSettings,
    pull_secret: String,
    version: &str,
) -> Result<ImageContent, Problem> {
    let spec = &ie.spec;
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
        .map_err(|e| Problem::Error(e.to_string()))?
        .map(|c| crate::domain::mirrors::discovery_files(&c))
        .unwrap_or_default();
    let params = DiscoveryIgnitionParams {
        service_base_url: settings.urls.agent_api.clone(),
        infra_env_id: ie.uid().unwrap_or_default(),
        agent_token: read.token.clone(),
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
        openshift_version: Some(version.to_string()),
        mirror_files,
    };
    let ignition = discovery_ignition(&params).map_err(|e| Problem::Error(e.to_string()))?;
    let initrd = minimal_initrd(&static_network, &proxy, discovery_delay)
        .map_err(|e| Problem::Error(e.to_string()))?;
    Ok(ImageContent {
        ignition,
        initrd,
        static_network,
        ntp,
        kernel_arguments,
    })
}

/// The infra-env record the REST API serves.
fn record(
    ie: &InfraEnv,
    read: &Dereferenced,
    cluster: Option<Registered>,
    content: ImageContent,
    urls: &ImageUrls,
    arch: String,
    version: String,
) -> InfraEnvRecord {
    let spec = &ie.spec;
    let script = ipxe_script(
        &urls.boot.initrd,
        &urls.boot.kernel,
        &urls.boot.rootfs,
        &content.kernel_arguments,
    );
    let (cluster_id, cd_name) = match cluster {
        Some(c) => (Some(c.id), Some(c.name)),
        None => (None, None),
    };
    InfraEnvRecord {
        id: ie.uid().unwrap_or_default(),
        namespace: ie.namespace().unwrap_or_default(),
        name: ie.name_any(),
        cluster_id,
        cluster_deployment_name: cd_name,
        agent_labels: agent_labels(ie),
        auto_approve: spec.agent_approval.as_ref().is_some_and(|a| a.auto_approve),
        token: read.token.clone(),
        discovery_ignition: content.ignition.into(),
        static_network_config: static_network_json(&content.static_network),
        ipxe_script: script,
        ipxe_redirect_script: ipxe_boot_order_control_script(&urls.boot.ipxe_script),
        kernel_arguments: content.kernel_arguments,
        ntp_sources: ntp_names(&content.ntp),
        additional_trust_bundle: spec
            .additional_trust_bundle
            .clone()
            .filter(|b| !b.trim().is_empty()),
        minimal_initrd: content.initrd.map(Into::into),
        rootfs_url: urls.boot.rootfs.clone(),
        cpu_architecture: arch,
        openshift_version: version,
    }
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

/// The labels every new Agent of `ie` gets: its `agentLabels`, and its shard (the
/// `cluster.x-k8s.io/watch-filter` label the InfraEnv carries), because a sharded core watches
/// only its shard's Agents and must see the ones it makes.
pub fn agent_labels(ie: &InfraEnv) -> BTreeMap<String, String> {
    let mut labels = ie.spec.agent_labels.clone();
    if let Some(shard) = ie.labels().get(WATCH_FILTER_LABEL) {
        labels.insert(WATCH_FILTER_LABEL.to_string(), shard.clone());
    }
    labels
}

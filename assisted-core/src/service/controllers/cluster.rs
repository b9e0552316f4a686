//! ClusterDeployment + AgentClusterInstall controller: validates the references, mirrors the
//! spec into the cluster record, and does Hive's part after the install (admin Secrets,
//! `clusterMetadata`, `spec.installed`, then the day-2 cluster).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use manager::controller::{PlannedEvent, set_finalizer};

use super::unsupported;
use super::{Context, Error, FinalizerStep, finalizer_step};
use crate::api::agentclusterinstall::{
    AgentClusterInstall, DiskEncryptionEnableOn, DiskEncryptionMode,
    INSTALL_CONFIG_OVERRIDES_ANNOTATION, LoadBalancerType, NetworkType,
    PlatformType as AciPlatform,
};
use crate::api::hive::{ClusterDeployment, ClusterImageSet};
use crate::domain::{
    ClusterNetwork, ClusterSnapshot, ClusterStatus, DiskEncryption, IgnitionEndpoint, PlatformType,
};
use crate::service::install::ExternalPlatformInput;
use crate::service::store::{ClusterRecord, ClusterSettings};

pub const CD_FINALIZER: &str = "clusterdeployments.agent-install.openshift.io/ai-deprovision";
pub const ACI_FINALIZER: &str = "agentclusterinstall.agent-install.openshift.io/ai-deprovision";
const PAUSE_ANNOTATION: &str = "hive.openshift.io/reconcile-pause";
/// Explicit OpenShift version of a ClusterImageSet whose image tag does not carry one.
pub const RELEASE_VERSION_ANNOTATION: &str = "assisted-core.openshift.io/openshift-version";
/// Explicit architecture of a ClusterImageSet whose image is pinned by digest (no tag).
pub const RELEASE_ARCHITECTURE_ANNOTATION: &str = "assisted-core.openshift.io/cpu-architecture";
const FIELD_MANAGER: &str = "assisted-core-cluster";

/// Learns a release image's OpenShift version and architecture. The real lookup
/// (`oc adm release info`) can replace the tag parser behind this trait.
pub trait ReleaseInfoSource: Send + Sync {
    fn version(&self, image_set: &ClusterImageSet) -> Result<(String, String), String>;
}

/// Reads the version from the annotation, else from the image tag (`...:4.17.3-x86_64`).
pub struct TagReleaseInfo;

impl ReleaseInfoSource for TagReleaseInfo {
    fn version(&self, cis: &ClusterImageSet) -> Result<(String, String), String> {
        let image = &cis.spec.release_image;
        let (tag_version, tag_arch) = release_from_tag(image);
        let arch = cis
            .annotations()
            .get(RELEASE_ARCHITECTURE_ANNOTATION)
            .cloned()
            .unwrap_or(tag_arch);
        let version = cis
            .annotations()
            .get(RELEASE_VERSION_ANNOTATION)
            .cloned()
            .or(tag_version)
            .ok_or_else(|| {
                format!(
                    "cannot tell the OpenShift version of release image {image:?}: use a tag like :4.17.3-x86_64 or set the {RELEASE_VERSION_ANNOTATION} annotation"
                )
            })?;
        Ok((version, arch))
    }
}

/// `quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64` → ("4.17.3", "x86_64").
pub fn release_from_tag(image: &str) -> (Option<String>, String) {
    let name = image.split('@').next().unwrap_or(image);
    let Some((_, tag)) = name
        .rsplit_once(':')
        .filter(|(repo, _)| !repo.ends_with('/') && !repo.is_empty())
    else {
        return (None, "x86_64".into());
    };
    if tag.contains('/') || !tag.starts_with(|c: char| c.is_ascii_digit()) {
        return (None, "x86_64".into());
    }
    for arch in ["x86_64", "aarch64", "arm64", "ppc64le", "s390x", "multi"] {
        if let Some(v) = tag.strip_suffix(&format!("-{arch}")) {
            return (Some(v.to_string()), arch.to_string());
        }
    }
    (Some(tag.to_string()), "x86_64".into())
}

/// Spec-derived cluster fields (everything the user sets; no state).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    pub name: String,
    pub base_domain: String,
    pub openshift_version: String,
    pub cpu_architecture: String,
    pub control_plane_count: u32,
    pub worker_count: u32,
    pub arbiter_count: u32,
    pub platform: PlatformType,
    pub user_managed_networking: bool,
    pub machine_networks: Vec<String>,
    pub cluster_networks: Vec<ClusterNetwork>,
    pub service_networks: Vec<String>,
    pub api_vips: Vec<String>,
    pub ingress_vips: Vec<String>,
    pub network_type: Option<String>,
    pub schedulable_masters: Option<bool>,
    pub ntp: String,
    /// `None` unless encryption is enabled on some role.
    pub disk_encryption: Option<DiskEncryption>,
    /// URL and CA (PEM) of the ignition endpoint day-2 hosts' pointer ignition uses.
    pub ignition_endpoint: IgnitionEndpoint,
    /// Image mode at install, from the custom manifests (checked by a validation).
    pub image_mode: crate::domain::image_mode::ImageMode,
    /// The ClusterImageSet's release image.
    pub release_image: String,
}

impl ClusterConfig {
    pub fn apply(&self, c: &mut ClusterSnapshot) {
        c.name.clone_from(&self.name);
        c.base_domain.clone_from(&self.base_domain);
        c.openshift_version.clone_from(&self.openshift_version);
        c.cpu_architecture.clone_from(&self.cpu_architecture);
        c.control_plane_count = self.control_plane_count;
        c.worker_count = self.worker_count;
        c.arbiter_count = self.arbiter_count;
        c.platform = self.platform;
        c.user_managed_networking = self.user_managed_networking;
        // A machine network the monitor calculated from the API VIP (none was given) stays
        // while the VIP still lies in it, as upstream keeps its auto-assigned CIDR.
        let keep_calculated = self.machine_networks.is_empty()
            && c.machine_networks.len() == 1
            && self.api_vips.first().is_some_and(|vip| {
                crate::domain::net::parse_ip(vip).is_some_and(|ip| {
                    crate::domain::net::Cidr::parse(&c.machine_networks[0])
                        .is_some_and(|net| net.contains(ip))
                })
            });
        if !keep_calculated {
            c.machine_networks.clone_from(&self.machine_networks);
        }
        if !self.cluster_networks.is_empty() {
            c.cluster_networks.clone_from(&self.cluster_networks);
        }
        if !self.service_networks.is_empty() {
            c.service_networks.clone_from(&self.service_networks);
        }
        c.api_vips.clone_from(&self.api_vips);
        c.ingress_vips.clone_from(&self.ingress_vips);
        c.network_type.clone_from(&self.network_type);
        if let Some(s) = self.schedulable_masters {
            c.schedulable_masters = s;
        }
        c.pull_secret_set = true;
        c.additional_ntp_source.clone_from(&self.ntp);
        c.disk_encryption.clone_from(&self.disk_encryption);
        c.image_mode.clone_from(&self.image_mode);
        // The hosts' image availability check names the release from the start, as
        // upstream's does; its other images come with the payload, at preparation.
        if c.release.release_image != self.release_image {
            c.release = crate::domain::ReleaseInfo {
                release_image: self.release_image.clone(),
                ..Default::default()
            };
        }
        // The token is per host (Agent ignitionEndpointTokenReference, not supported yet).
        c.ignition_endpoint
            .url
            .clone_from(&self.ignition_endpoint.url);
        c.ignition_endpoint
            .ca_certificate
            .clone_from(&self.ignition_endpoint.ca_certificate);
    }
}

/// ACI `diskEncryption` → the snapshot's (which turns on the TPM/Tang validations and the
/// Tang step) or the input error; `None` when it is off. Mode defaults to tpmv2, as upstream.
pub fn disk_encryption_of(aci: &AgentClusterInstall) -> Result<Option<DiskEncryption>, String> {
    let Some(enc) = &aci.spec.disk_encryption else {
        return Ok(None);
    };
    let enable_on = match enc.enable_on {
        None | Some(DiskEncryptionEnableOn::None) => return Ok(None),
        Some(on) => serde_json::to_value(on)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
    };
    let mode = match enc.mode {
        Some(DiskEncryptionMode::Tang) => "tang",
        Some(DiskEncryptionMode::Tpmv2) | None => "tpmv2",
    };
    let tang_servers = enc.tang_servers.clone().unwrap_or_default();
    if mode == "tang" {
        crate::service::install::tang_servers(&tang_servers).map_err(|e| e.to_string())?;
    }
    Ok(Some(DiskEncryption {
        enable_on,
        mode: mode.into(),
        tang_servers,
    }))
}

/// The CA of ACI `ignitionEndpoint.caCertificateReference` (the Secret's `tls.crt`, as
/// upstream), `Ok(None)` without a reference. `secret` is what the read phase found.
pub fn ignition_ca_of(
    aci: &AgentClusterInstall,
    secret: Option<&Secret>,
) -> Result<Option<String>, String> {
    let Some(r) = aci
        .spec
        .ignition_endpoint
        .as_ref()
        .and_then(|e| e.ca_certificate_reference.as_ref())
    else {
        return Ok(None);
    };
    let ns = ignition_ca_namespace(aci);
    let what = format!(
        "ignitionEndpoint.caCertificateReference: Secret {ns}/{}",
        r.name
    );
    let secret = secret.ok_or_else(|| format!("{what} not found"))?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get("tls.crt"))
        .ok_or_else(|| format!("{what} has no tls.crt key"))?;
    String::from_utf8(bytes.0.clone())
        .map(Some)
        .map_err(|_| format!("{what}: tls.crt is not PEM text"))
}

/// The namespace of the CA Secret: the reference's, else the ACI's own.
fn ignition_ca_namespace(aci: &AgentClusterInstall) -> String {
    aci.spec
        .ignition_endpoint
        .as_ref()
        .and_then(|e| e.ca_certificate_reference.as_ref())
        .map(|r| r.namespace.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| aci.namespace().unwrap_or_default())
}

/// Names and the SSH key in the formats the installer checks (it would fail the install on
/// them, after the hosts were discovered).
fn check_formats(cd: &ClusterDeployment, aci: &AgentClusterInstall) -> Result<(), String> {
    use crate::domain::formats::{dns_label_problem, dns_subdomain_problem, ssh_keys_problem};
    if let Some(p) = dns_label_problem(&cd.spec.cluster_name) {
        return Err(format!("ClusterDeployment spec.clusterName: {p}"));
    }
    if let Some(p) = dns_subdomain_problem(&cd.spec.base_domain) {
        return Err(format!("ClusterDeployment spec.baseDomain: {p}"));
    }
    if let Some(p) = aci
        .spec
        .ssh_public_key
        .as_deref()
        .filter(|k| !k.trim().is_empty())
        .and_then(ssh_keys_problem)
    {
        return Err(format!("spec.sshPublicKey: {p}"));
    }
    if let Some(p) = &aci.spec.proxy {
        crate::domain::formats::check_proxy(p.http_proxy.as_deref(), p.https_proxy.as_deref())
            .map_err(|e| format!("spec.{e}"))?;
    }
    Ok(())
}

/// Once the install started, the cluster's name and domain are in its certificates and DNS
/// names: a ClusterDeployment edit of them is refused (Hive makes them immutable), and the
/// record keeps the old ones.
fn fixed_names(record: Option<&RecordFacts>, config: &ClusterConfig) -> Result<(), String> {
    let Some(rec) = record else {
        return Ok(());
    };
    let started = !matches!(
        rec.status,
        ClusterStatus::Insufficient | ClusterStatus::Ready | ClusterStatus::PendingForInput
    );
    if !started {
        return Ok(());
    }
    for (field, before, after) in [
        ("clusterName", &rec.name, &config.name),
        ("baseDomain", &rec.base_domain, &config.base_domain),
    ] {
        if !before.is_empty() && before != after {
            return Err(format!(
                "ClusterDeployment spec.{field} cannot change after the install started (it is {before:?}, the spec says {after:?})"
            ));
        }
    }
    Ok(())
}

/// What the release's installer would refuse, refused before the install starts (upstream
/// checks these when the cluster is created or updated). No version (an installed cluster
/// adopted without a ClusterImageSet) checks nothing.
fn release_rules(
    version: &str,
    control_plane: u32,
    arbiters: u32,
    network_type: Option<&NetworkType>,
) -> Result<(), String> {
    use crate::domain::release_support::{
        Support, arbiter_support, large_control_plane_supported, openshift_sdn_supported,
    };
    if version.is_empty() {
        return Ok(());
    }
    if control_plane > 3 && !large_control_plane_supported(version) {
        return Err(format!(
            "provisionRequirements.controlPlaneAgents: OpenShift {version} installs 1 or 3 control-plane nodes, not {control_plane} (4 and 5 need 4.18 or later)"
        ));
    }
    if arbiters > 0 && arbiter_support(version) == Support::Unsupported {
        return Err(format!(
            "provisionRequirements.arbiterAgents: arbiter nodes need OpenShift 4.19 or later, this cluster installs {version}"
        ));
    }
    if network_type == Some(&NetworkType::OpenShiftSDN) && !openshift_sdn_supported(version) {
        return Err(format!(
            "networking.networkType: OpenShift {version} does not install OpenShiftSDN (4.14 was the last); use OVNKubernetes"
        ));
    }
    Ok(())
}

/// CD + ACI (+ the release version) → cluster config. Pure; errors are input errors.
pub fn cluster_config(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    version: (String, String),
) -> Result<ClusterConfig, String> {
    let s = &aci.spec;
    check_formats(cd, aci)?;
    check_networks(aci)?;
    if let Some(overrides) = aci.annotations().get(INSTALL_CONFIG_OVERRIDES_ANNOTATION) {
        match serde_json::from_str::<serde_json::Value>(overrides) {
            Ok(doc @ serde_json::Value::Object(_)) => {
                if let Some(p) = crate::domain::formats::owned_override_problem(&doc) {
                    return Err(format!(
                        "annotation {INSTALL_CONFIG_OVERRIDES_ANNOTATION}: {p}"
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "annotation {INSTALL_CONFIG_OVERRIDES_ANNOTATION} must be a JSON object"
                ));
            }
        }
    }
    let req = &s.provision_requirements;
    let cp = u32::try_from(req.control_plane_agents)
        .map_err(|_| "provisionRequirements.controlPlaneAgents must not be negative".to_string())?;
    let workers = u32::try_from(req.worker_agents)
        .map_err(|_| "provisionRequirements.workerAgents must not be negative".to_string())?;
    let arbiters = u32::try_from(req.arbiter_agents)
        .map_err(|_| "provisionRequirements.arbiterAgents must not be negative".to_string())?;
    // Two control-plane nodes only beside an arbiter.
    if !(cp == 1 || (3..=5).contains(&cp) || (cp == 2 && arbiters > 0)) {
        return Err(format!(
            "provisionRequirements.controlPlaneAgents must be 1 or 3 to 5 (2 with arbiterAgents), got {cp}"
        ));
    }
    release_rules(&version.0, cp, arbiters, s.networking.network_type.as_ref())?;
    let mut api_vips = s.api_vips.clone();
    if api_vips.is_empty() {
        api_vips.extend(s.api_vip.clone().filter(|v| !v.is_empty()));
    }
    let mut ingress_vips = s.ingress_vips.clone();
    if ingress_vips.is_empty() {
        ingress_vips.extend(s.ingress_vip.clone().filter(|v| !v.is_empty()));
    }
    let platform = match s.platform_type {
        Some(AciPlatform::None) => PlatformType::None,
        Some(AciPlatform::External) => PlatformType::External,
        Some(AciPlatform::VSphere) => PlatformType::VSphere,
        Some(AciPlatform::Nutanix) => PlatformType::Nutanix,
        Some(AciPlatform::BareMetal) => PlatformType::BareMetal,
        // Upstream: SNO or user-managed networking without a platform means "none".
        None if cp == 1 || s.networking.user_managed_networking == Some(true) => PlatformType::None,
        None => PlatformType::BareMetal,
    };
    if platform == PlatformType::BareMetal
        && cp > 1
        && (api_vips.is_empty() || ingress_vips.is_empty())
    {
        return Err(
            "apiVIPs and ingressVIPs are required for a multi-node baremetal cluster".into(),
        );
    }
    Ok(ClusterConfig {
        name: cd.spec.cluster_name.clone(),
        base_domain: cd.spec.base_domain.clone(),
        openshift_version: version.0,
        cpu_architecture: version.1,
        control_plane_count: cp,
        worker_count: workers,
        arbiter_count: arbiters,
        platform,
        user_managed_networking: s.networking.user_managed_networking.unwrap_or(cp == 1),
        machine_networks: s
            .networking
            .machine_network
            .iter()
            .map(|m| m.cidr.clone())
            .collect(),
        cluster_networks: s
            .networking
            .cluster_network
            .iter()
            .map(|c| ClusterNetwork {
                cidr: c.cidr.clone(),
                host_prefix: c
                    .host_prefix
                    .and_then(|p| u8::try_from(p).ok())
                    .unwrap_or(23),
            })
            .collect(),
        service_networks: s.networking.service_network.clone(),
        api_vips,
        ingress_vips,
        network_type: s.networking.network_type.as_ref().map(|n| match n {
            NetworkType::OpenShiftSDN => "OpenShiftSDN".to_string(),
            NetworkType::OVNKubernetes => "OVNKubernetes".to_string(),
        }),
        schedulable_masters: s.masters_schedulable,
        ntp: s.ntp_sources.join(","),
        disk_encryption: disk_encryption_of(aci)?,
        ignition_endpoint: IgnitionEndpoint {
            url: s
                .ignition_endpoint
                .as_ref()
                .and_then(|e| e.url.clone())
                .filter(|u| !u.trim().is_empty()),
            // The CA comes from a Secret: `plan` fills it from what the read phase found.
            ca_certificate: None,
            token: None,
        },
        // Read from the manifests and the pull secret: `plan` fills it.
        image_mode: Default::default(),
        // The ClusterImageSet's: `plan` fills it.
        release_image: String::new(),
    })
}

/// Image mode at install, from the custom manifests, the pull secret's registries, the
/// install-config overrides (`osImageStream`) and the Secrets the control plane delivers after
/// the install (the ACI's post-install-secrets annotation).
fn image_mode_of(
    manifests: &[(String, Vec<u8>)],
    version: &str,
    pull_secret: &str,
    aci: &AgentClusterInstall,
) -> crate::domain::image_mode::ImageMode {
    let annotation = |name: &str| aci.annotations().get(name).map(String::as_str);
    let registries: Vec<String> = crate::service::release::PullSecret::parse(pull_secret)
        .map(|p| p.registries().map(str::to_string).collect())
        .unwrap_or_default();
    crate::domain::image_mode::check(&crate::domain::image_mode::Inputs {
        manifests,
        openshift_version: version,
        pull_secret_registries: &registries,
        install_config_overrides: annotation(INSTALL_CONFIG_OVERRIDES_ANNOTATION),
        post_install_secrets: annotation(
            crate::domain::image_mode::POST_INSTALL_SECRETS_ANNOTATION,
        ),
    })
}

/// Every CIDR and VIP of the networking section must parse (upstream's ACI controller answers
/// SpecSynced False / InputError; they were dropped silently).
fn check_networks(aci: &AgentClusterInstall) -> Result<(), String> {
    use crate::domain::net::{Cidr, parse_ip};
    let n = &aci.spec.networking;
    let cidrs = n
        .cluster_network
        .iter()
        .map(|c| ("clusterNetwork", c.cidr.as_str()))
        .chain(
            n.service_network
                .iter()
                .map(|c| ("serviceNetwork", c.as_str())),
        )
        .chain(
            n.machine_network
                .iter()
                .map(|m| ("machineNetwork", m.cidr.as_str())),
        );
    for (field, cidr) in cidrs {
        if !cidr.contains('/') || Cidr::parse(cidr).is_none() {
            return Err(format!(
                "networking.{field} {cidr:?} is not a CIDR (address/prefix)"
            ));
        }
    }
    let vips = aci
        .spec
        .api_vips
        .iter()
        .map(|v| ("apiVIPs", v))
        .chain(aci.spec.ingress_vips.iter().map(|v| ("ingressVIPs", v)));
    for (field, vip) in vips {
        if vip.contains('/') || parse_ip(vip).is_none() {
            return Err(format!("{field} {vip:?} is not an IP address"));
        }
    }
    Ok(())
}

fn is_ours(cd: &ClusterDeployment) -> Option<String> {
    let r = cd.spec.cluster_install_ref.as_ref()?;
    (r.group == "extensions.hive.openshift.io" && r.kind == "AgentClusterInstall")
        .then(|| r.name.clone())
}

pub async fn reconcile(cd: Arc<ClusterDeployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    if is_ours(&cd).is_none() {
        return Ok(Action::await_change());
    }
    ctx.metrics.cluster.reconciled();
    match finalizer_step(cd.as_ref(), CD_FINALIZER) {
        FinalizerStep::Add => {
            set_finalizer(&ctx.client, cd.as_ref(), FIELD_MANAGER, CD_FINALIZER, true).await?
        }
        FinalizerStep::Proceed => {}
        FinalizerStep::Cleanup => {
            let id = cd.uid().unwrap_or_default();
            tracing::info!(cluster = %cd.name_any(), "ClusterDeployment deleted: deregistering the cluster");
            ctx.store.remove_cluster(&id);
            ctx.forget_cluster(&id).await;
            // With the ClusterDeployment gone nothing would release the ACI's finalizer.
            if let (Some(name), Some(ns)) = (is_ours(&cd), cd.namespace())
                && let Some(aci) = Api::<AgentClusterInstall>::namespaced(ctx.client.clone(), &ns)
                    .get_opt(&name)
                    .await
                    .map_err(Error::Read)?
                && finalizer_step(&aci, ACI_FINALIZER) != FinalizerStep::Add
            {
                set_finalizer(&ctx.client, &aci, FIELD_MANAGER, ACI_FINALIZER, false).await?;
            }
            set_finalizer(&ctx.client, cd.as_ref(), FIELD_MANAGER, CD_FINALIZER, false).await?;
            return Ok(Action::await_change());
        }
        FinalizerStep::Gone => return Ok(Action::await_change()),
    }
    sync(&cd, &ctx).await
}

/// Install artifacts the credentials are published from (read only while installing or
/// installed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterFiles {
    pub kubeconfig: Option<Vec<u8>>,
    pub kubeconfig_noingress: Option<Vec<u8>>,
    pub metadata: Option<Vec<u8>>,
    pub kubeadmin_password: Option<Vec<u8>>,
}

/// Everything one ClusterDeployment reconcile reads (the only phase with client calls).
#[derive(Debug, Clone, Default)]
pub struct Dereferenced {
    pub aci: Option<AgentClusterInstall>,
    pub pull_secret: Option<Secret>,
    /// The ClusterImageSet `imageSetRef` names, when it exists.
    pub image_set: Option<ClusterImageSet>,
    /// The manifests ConfigMaps the ACI names, in order; `None` for a missing one.
    pub manifests: Vec<(String, Option<ConfigMap>)>,
    /// The ConfigMap `mirrorRegistryRef` names.
    pub mirror_registry: super::mirror_config::MirrorRead,
    /// The Secret `ignitionEndpoint.caCertificateReference` names, when it exists.
    pub ignition_ca: Option<Secret>,
    /// The cluster's record in the store before this reconcile.
    pub record: Option<RecordFacts>,
    pub files: ClusterFiles,
}

/// What a reconcile needs of the cluster's record in the store: a few fields, not a copy of
/// its hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordFacts {
    pub status: ClusterStatus,
    /// The name and base domain the cluster was registered (and is installed) with.
    pub name: String,
    pub base_domain: String,
    pub kubeconfig_uploaded: bool,
    /// The AgentClusterInstall, for events.
    pub aci: ObjectReference,
}

impl RecordFacts {
    pub fn of(rec: &ClusterRecord) -> RecordFacts {
        RecordFacts {
            status: rec.snapshot.status,
            name: rec.snapshot.name.clone(),
            base_domain: rec.snapshot.base_domain.clone(),
            kubeconfig_uploaded: rec.snapshot.kubeconfig_uploaded,
            aci: super::events::aci_reference(rec),
        }
    }
}

/// What the decide phase asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// No AgentClusterInstall yet; its creation reconciles the ClusterDeployment.
    WaitForAci,
    /// The AgentClusterInstall is being deleted: deregister the cluster, release its finalizer.
    Deregister {
        release_finalizer: bool,
    },
    Sync(Box<SyncPlan>),
}

/// The cluster record to follow the spec, and Hive's part once the install runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncPlan {
    pub add_aci_finalizer: bool,
    pub settings: ClusterSettings,
    /// `None` when the spec cannot be applied (`spec_error` says why).
    pub config: Option<ClusterConfig>,
    pub spec_error: Option<String>,
    pub credentials: Option<Credentials>,
    /// The store is not watched: install progress is followed by looking again.
    pub recheck: Duration,
}

/// Hive's job, ours here: admin kubeconfig during the install, the final kubeconfig and the
/// kubeadmin password once installed, `clusterMetadata`, then `spec.installed` and day-2.
#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    /// Applied under the controller's field manager.
    pub secrets: Vec<Secret>,
    /// The ACI's `spec.clusterMetadata`, when it differs from the wanted one.
    pub aci_cluster_metadata: Option<serde_json::Value>,
    /// The ClusterDeployment's `spec.clusterMetadata` when it is to be marked installed now.
    pub mark_installed: Option<serde_json::Value>,
    pub event: Option<(ObjectReference, PlannedEvent)>,
    /// Hand the installed cluster over to day-2.
    pub day2: bool,
}

/// Read, decide, apply (`docs/architecture.md`, "How to add a controller"); the ACI's status
/// is the persister's, from the store.
pub(crate) async fn sync(cd: &ClusterDeployment, ctx: &Context) -> Result<Action, Error> {
    let read = dereference(cd, ctx).await?;
    let plan = plan(cd, &read, ctx.release_info.as_ref());
    apply(cd, read.aci.as_ref(), ctx, plan, Timestamp::now()).await
}

/// The read phase.
async fn dereference(cd: &ClusterDeployment, ctx: &Context) -> Result<Dereferenced, Error> {
    let ns = cd.namespace().unwrap_or_default();
    let Some(aci_name) = is_ours(cd) else {
        return Ok(Dereferenced::default());
    };
    let aci = ctx.aci(&ns, &aci_name).await.map_err(Error::Read)?;
    let Some(aci) = aci else {
        return Ok(Dereferenced::default());
    };
    let pull_secret = match cd
        .spec
        .pull_secret_ref
        .as_ref()
        .map(|r| r.name.as_str())
        .filter(|n| !n.is_empty())
    {
        Some(name) => ctx.secret(&ns, name).await.map_err(Error::Read)?,
        None => None,
    };
    let image_set = match &aci.spec.image_set_ref {
        Some(r) => ctx.image_set(&r.name).await.map_err(Error::Read)?,
        None => None,
    };
    let ignition_ca = match aci
        .spec
        .ignition_endpoint
        .as_ref()
        .and_then(|e| e.ca_certificate_reference.as_ref())
    {
        Some(r) => ctx
            .secret(&ignition_ca_namespace(&aci), &r.name)
            .await
            .map_err(Error::Read)?,
        None => None,
    };
    let mut manifests = Vec::new();
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    for name in manifest_config_maps(&aci) {
        let cm = cms.get_opt(&name).await.map_err(Error::Read)?;
        manifests.push((name, cm));
    }
    let mirror_registry =
        super::mirror_config::read(ctx, aci.spec.mirror_registry_ref.as_ref(), &ns).await?;
    let id = cd.uid().unwrap_or_default();
    let record = ctx
        .store
        .view(|st| st.clusters.get(&id).map(RecordFacts::of));
    let files = match record.as_ref().map(|r| r.status) {
        Some(status) if publishes_credentials(status) => ClusterFiles {
            kubeconfig: ctx.file(&id, "kubeconfig").await,
            kubeconfig_noingress: ctx.file(&id, "kubeconfig-noingress").await,
            metadata: ctx.file(&id, "metadata.json").await,
            kubeadmin_password: ctx.file(&id, "kubeadmin-password").await,
        },
        _ => ClusterFiles::default(),
    };
    Ok(Dereferenced {
        aci: Some(aci),
        pull_secret,
        image_set,
        manifests,
        mirror_registry,
        ignition_ca,
        record,
        files,
    })
}

fn publishes_credentials(status: ClusterStatus) -> bool {
    matches!(
        status,
        ClusterStatus::Installing
            | ClusterStatus::Finalizing
            | ClusterStatus::InstallingPendingUserAction
            | ClusterStatus::Installed
    )
}

/// The ConfigMap names of the ACI's user manifests (the list, then the single reference).
fn manifest_config_maps(aci: &AgentClusterInstall) -> Vec<String> {
    aci.spec
        .manifests_config_map_refs
        .iter()
        .map(|r| r.name.clone())
        .chain(
            aci.spec
                .manifests_config_map_ref
                .as_ref()
                .map(|r| r.name.clone()),
        )
        .collect()
}

/// The pull secret's `.dockerconfigjson`, or the input error to show.
fn pull_secret_of(cd: &ClusterDeployment, secret: Option<&Secret>) -> Result<String, String> {
    let name = cd
        .spec
        .pull_secret_ref
        .as_ref()
        .map(|r| r.name.clone())
        .filter(|n| !n.is_empty())
        .ok_or("spec.pullSecretRef is required")?;
    let secret = secret.ok_or_else(|| format!("pull secret {name} not found"))?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(".dockerconfigjson"))
        .ok_or_else(|| format!("pull secret {name} has no .dockerconfigjson key"))?;
    let text = String::from_utf8(bytes.0.clone())
        .map_err(|_| format!("pull secret {name} is not UTF-8"))?;
    // The shape the installer and every registry client need (`{"auths": {...}}`, each entry
    // `auth` or `username`/`password`): caught here, not when the install or an image read fails.
    crate::service::release::PullSecret::parse(&text)
        .map_err(|e| format!("pull secret {name}: {e}"))?;
    Ok(text)
}

/// The decide phase (pure).
pub fn plan(cd: &ClusterDeployment, read: &Dereferenced, release: &dyn ReleaseInfoSource) -> Plan {
    let Some(aci) = &read.aci else {
        return Plan::WaitForAci;
    };
    // The ACI carries its own deregistration finalizer: deleting it (alone, or with its
    // namespace) deregisters the cluster before the object goes.
    if aci.metadata.deletion_timestamp.is_some() {
        return Plan::Deregister {
            release_finalizer: finalizer_step(aci, ACI_FINALIZER) == FinalizerStep::Cleanup,
        };
    }
    let ns = cd.namespace().unwrap_or_default();
    let pull = pull_secret_of(cd, read.pull_secret.as_ref());
    let version = match &aci.spec.image_set_ref {
        Some(r) => match &read.image_set {
            Some(cis) => release
                .version(cis)
                .map(|v| (v, cis.spec.release_image.clone())),
            None => Err(format!("ClusterImageSet {} not found", r.name)),
        },
        None if cd.spec.installed => Ok((("".into(), "x86_64".into()), String::new())),
        None => Err("spec.imageSetRef is required".into()),
    };
    let manifests: Result<Vec<(String, Vec<u8>)>, String> =
        read.manifests
            .iter()
            .try_fold(Vec::new(), |mut out, (name, cm)| {
                let cm = cm
                    .as_ref()
                    .ok_or_else(|| format!("manifests ConfigMap {name} not found"))?;
                out.extend(manifests_of(cm)?);
                Ok(out)
            });
    let mirrors = super::mirror_config::parse(&read.mirror_registry);
    let (config, release_image, spec_error) = match (&pull, &version) {
        (Ok(secret), Ok((v, image))) => {
            match cluster_config(cd, aci, v.clone()).and_then(|mut c| {
                c.ignition_endpoint.ca_certificate =
                    ignition_ca_of(aci, read.ignition_ca.as_ref())?;
                fixed_names(read.record.as_ref(), &c)?;
                c.image_mode = image_mode_of(
                    manifests.as_deref().unwrap_or_default(),
                    &c.openshift_version,
                    secret,
                    aci,
                );
                c.release_image.clone_from(image);
                Ok(c)
            }) {
                Ok(c) => (Some(c), image.clone(), None),
                Err(e) => (None, image.clone(), Some(e)),
            }
        }
        (Err(e), _) | (_, Err(e)) => (None, String::new(), Some(e.clone())),
    };
    // A field set that the core would ignore changes what gets installed: an input error
    // (after the real ones), which also keeps the install from starting. The spec still
    // applies, so validations go on.
    let spec_error = spec_error
        .or_else(|| manifests.as_ref().err().cloned())
        .or_else(|| mirrors.as_ref().err().cloned())
        .or_else(|| unsupported::input_error(unsupported::ACI_ROWS, &aci.spec));
    let settings = ClusterSettings {
        namespace: ns,
        cluster_deployment: cd.name_any(),
        agent_cluster_install: aci.name_any(),
        pull_secret: pull.unwrap_or_default(),
        ssh_public_key: aci.spec.ssh_public_key.clone().unwrap_or_default(),
        install_config_overrides: aci
            .annotations()
            .get(INSTALL_CONFIG_OVERRIDES_ANNOTATION)
            .cloned(),
        hold: aci.spec.hold_installation
            || cd
                .annotations()
                .get(PAUSE_ANNOTATION)
                .is_some_and(|v| v == "true"),
        unsynced_agents: 0,
        release_image,
        manifests: manifests.unwrap_or_default(),
        proxy: aci.spec.proxy.as_ref().map(|p| crate::domain::Proxy {
            http_proxy: p.http_proxy.clone(),
            https_proxy: p.https_proxy.clone(),
            no_proxy: p.no_proxy.clone(),
        }),
        user_managed_load_balancer: aci
            .spec
            .load_balancer
            .as_ref()
            .is_some_and(|lb| lb.type_ == LoadBalancerType::UserManaged),
        external_platform: aci
            .spec
            .external
            .as_ref()
            .map(|e| ExternalPlatformInput {
                platform_name: e.platform_name.clone(),
                cloud_controller_manager: e.cloud_controller_manager.clone(),
            })
            .unwrap_or_default(),
        unsupported_fields: unsupported::unsupported(
            unsupported::CLUSTER_DEPLOYMENT_ROWS,
            &cd.spec,
        ),
        mirrors: mirrors.ok().flatten(),
    };
    let status = read.record.as_ref().map(|r| r.status);
    let recheck = match status {
        Some(ClusterStatus::Installed | ClusterStatus::AddingHosts) => Duration::from_secs(60),
        _ => Duration::from_secs(10),
    };
    Plan::Sync(Box::new(SyncPlan {
        add_aci_finalizer: finalizer_step(aci, ACI_FINALIZER) == FinalizerStep::Add,
        settings,
        config,
        spec_error,
        credentials: read
            .record
            .as_ref()
            .and_then(|rec| credentials(cd, aci, rec, &read.files)),
        recheck,
    }))
}

/// Hive's part once the install runs (pure); `None` before, or while no kubeconfig exists.
pub fn credentials(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    rec: &RecordFacts,
    files: &ClusterFiles,
) -> Option<Credentials> {
    let status = rec.status;
    if !publishes_credentials(status) {
        return None;
    }
    let installed = status == ClusterStatus::Installed;
    let ns = cd.namespace().unwrap_or_default();
    let kubeconfig_name = cd
        .spec
        .cluster_metadata
        .as_ref()
        .map(|m| m.admin_kubeconfig_secret_ref.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("{}-admin-kubeconfig", cd.name_any()));
    let password_name = cd
        .spec
        .cluster_metadata
        .as_ref()
        .and_then(|m| m.admin_password_secret_ref.as_ref())
        .map(|r| r.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("{}-admin-password", cd.name_any()));
    let kubeconfig = if installed && rec.kubeconfig_uploaded {
        files.kubeconfig.clone()
    } else {
        None
    }
    .or(files.kubeconfig_noingress.clone())?;
    let mut secrets = vec![secret(
        &kubeconfig_name,
        &ns,
        cd,
        "kubeconfig",
        BTreeMap::from([("kubeconfig".into(), ByteString(kubeconfig))]),
    )];
    let meta: serde_json::Value =
        serde_json::from_slice(files.metadata.as_deref().unwrap_or_default()).unwrap_or_default();
    let openshift_cluster_id = meta
        .get("clusterID")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let mut cluster_metadata = serde_json::json!({
        "clusterID": openshift_cluster_id,
        "infraID": cd.uid().unwrap_or_default(),
        "adminKubeconfigSecretRef": {"name": kubeconfig_name},
    });
    if installed {
        secrets.push(secret(
            &password_name,
            &ns,
            cd,
            "kubeadmincreds",
            BTreeMap::from([
                ("username".into(), ByteString(b"kubeadmin".to_vec())),
                (
                    "password".into(),
                    ByteString(files.kubeadmin_password.clone().unwrap_or_default()),
                ),
            ]),
        ));
        cluster_metadata["adminPasswordSecretRef"] = serde_json::json!({"name": password_name});
    }
    let aci_metadata = aci
        .spec
        .cluster_metadata
        .as_ref()
        .map(|m| serde_json::to_value(m).unwrap_or_default());
    let mark_installed = installed && !cd.spec.installed;
    Some(Credentials {
        secrets,
        aci_cluster_metadata: (aci_metadata.as_ref() != Some(&cluster_metadata))
            .then(|| cluster_metadata.clone()),
        event: mark_installed.then(|| {
            (
                rec.aci.clone(),
                PlannedEvent {
                    warning: false,
                    reason: "InstallationCompleted",
                    note: format!(
                        "The installation has completed; credentials are in Secrets {kubeconfig_name} and {password_name}"
                    ),
                },
            )
        }),
        mark_installed: mark_installed.then_some(cluster_metadata),
        day2: installed,
    })
}

/// The apply phase, in a fixed order: the ACI finalizer, the store, the Secrets, the ACI's and
/// then the ClusterDeployment's `clusterMetadata`, the event, the day-2 hand-over.
/// `aci` is the AgentClusterInstall the read phase found (its finalizer is set on it).
async fn apply(
    cd: &ClusterDeployment,
    aci: Option<&AgentClusterInstall>,
    ctx: &Context,
    plan: Plan,
    now: Timestamp,
) -> Result<Action, Error> {
    let ns = cd.namespace().unwrap_or_default();
    let id = cd.uid().unwrap_or_default();
    let aci_name = is_ours(cd).unwrap_or_default();
    let acis: Api<AgentClusterInstall> = Api::namespaced(ctx.client.clone(), &ns);
    let sync = match plan {
        Plan::WaitForAci => {
            tracing::debug!(cluster = %cd.name_any(), "waiting for AgentClusterInstall {aci_name}");
            return Ok(Action::await_change());
        }
        Plan::Deregister { release_finalizer } => {
            if release_finalizer {
                tracing::info!(cluster = %cd.name_any(), "AgentClusterInstall deleted: deregistering the cluster");
                ctx.store.remove_cluster(&id);
                ctx.forget_cluster(&id).await;
                if let Some(aci) = aci {
                    set_finalizer(&ctx.client, aci, FIELD_MANAGER, ACI_FINALIZER, false).await?;
                }
            }
            return Ok(Action::await_change());
        }
        Plan::Sync(sync) => sync,
    };
    if sync.add_aci_finalizer
        && let Some(aci) = aci
    {
        set_finalizer(&ctx.client, aci, FIELD_MANAGER, ACI_FINALIZER, true).await?;
    }
    let config = sync.config;
    ctx.store.upsert_cluster(
        &id,
        &cd.spec.cluster_name,
        sync.settings,
        sync.spec_error,
        now,
        |snap| {
            if let Some(c) = &config {
                c.apply(snap);
            }
        },
    );
    if let Some(creds) = sync.credentials {
        let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        for s in &creds.secrets {
            // Each reconcile of an installed cluster plans them again: applied when changed.
            let (applied, key, hash) = ctx.secret_applied(s);
            if applied {
                continue;
            }
            let name = s.name_any();
            secrets
                .patch(&name, &pp, &Patch::Apply(&with_kind(s)))
                .await
                .map_err(|source| Error::Apply {
                    what: format!("Secret {name}"),
                    source,
                })?;
            ctx.applied.record(&key, hash);
        }
        if let Some(metadata) = &creds.aci_cluster_metadata {
            acis.patch(
                &aci_name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {"clusterMetadata": metadata}})),
            )
            .await
            .map_err(|source| Error::Apply {
                what: format!("AgentClusterInstall {aci_name} clusterMetadata"),
                source,
            })?;
        }
        if let Some(metadata) = &creds.mark_installed {
            Api::<ClusterDeployment>::namespaced(ctx.client.clone(), &ns)
                .patch(
                    &cd.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({"spec": {
                        "installed": true,
                        "clusterMetadata": metadata,
                    }})),
                )
                .await
                .map_err(|source| Error::Apply {
                    what: format!("ClusterDeployment {} installed", cd.name_any()),
                    source,
                })?;
            tracing::info!(cluster = %cd.name_any(), "cluster installed: ClusterDeployment marked installed");
        }
        if let Some((on, event)) = &creds.event {
            ctx.events.planned(on, event).await;
        }
        if creds.day2 {
            // Hive would now hand the cluster over to day-2.
            ctx.store.transform_to_day2(&id, now);
        }
    }
    Ok(Action::requeue(sync.recheck))
}

/// ConfigMap → manifest files; a key that is not a plain YAML/JSON/patch file name, or content
/// that does not parse as its kind, is an input error (caught before the install starts).
pub fn manifests_of(cm: &ConfigMap) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    for (key, value) in cm.data.iter().flatten() {
        crate::service::install::check_manifest(key, value.as_bytes())
            .map_err(|e| format!("manifests ConfigMap {}: {e}", cm.name_any()))?;
        out.push((key.clone(), value.clone().into_bytes()));
    }
    Ok(out)
}

fn secret(
    name: &str,
    ns: &str,
    cd: &ClusterDeployment,
    secret_type: &str,
    data: BTreeMap<String, ByteString>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(BTreeMap::from([
                (
                    "hive.openshift.io/cluster-deployment-name".into(),
                    cd.name_any(),
                ),
                ("hive.openshift.io/secret-type".into(), secret_type.into()),
            ])),
            owner_references: cd.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// Server-side apply bodies need apiVersion and kind.
fn with_kind(s: &Secret) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    v["apiVersion"] = "v1".into();
    v["kind"] = "Secret".into();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::agentclusterinstall::{AgentClusterInstallSpec, ProvisionRequirements};
    use crate::api::hive::ClusterDeploymentSpec;

    #[test]
    fn versions_come_from_release_tags() {
        assert_eq!(
            release_from_tag("quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"),
            (Some("4.17.3".into()), "x86_64".into())
        );
        assert_eq!(
            release_from_tag("quay.io/okd/scos-release:4.18.0-okd-scos.9"),
            (Some("4.18.0-okd-scos.9".into()), "x86_64".into())
        );
        assert_eq!(
            release_from_tag("registry:5000/ocp-release:4.16.0-aarch64").1,
            "aarch64"
        );
        assert_eq!(release_from_tag("quay.io/x/y@sha256:abc").0, None);
        assert_eq!(release_from_tag("registry:5000/ocp-release").0, None);
    }

    #[test]
    fn a_release_pinned_by_digest_takes_version_and_architecture_from_annotations() {
        let mut cis = ClusterImageSet::new(
            "ns.c1",
            crate::api::hive::ClusterImageSetSpec {
                release_image: "quay.io/openshift-release-dev/ocp-release@sha256:abc".into(),
            },
        );
        assert!(TagReleaseInfo.version(&cis).is_err());
        cis.metadata.annotations = Some(
            [
                (RELEASE_VERSION_ANNOTATION.to_string(), "4.17.3".to_string()),
                (
                    RELEASE_ARCHITECTURE_ANNOTATION.to_string(),
                    "aarch64".to_string(),
                ),
            ]
            .into(),
        );
        assert_eq!(
            TagReleaseInfo.version(&cis),
            Ok(("4.17.3".into(), "aarch64".into()))
        );
    }

    fn cd() -> ClusterDeployment {
        ClusterDeployment::new(
            "c1",
            ClusterDeploymentSpec {
                cluster_name: "c1".into(),
                base_domain: "example.com".into(),
                ..Default::default()
            },
        )
    }

    fn aci(cp: i32, workers: i32) -> AgentClusterInstall {
        AgentClusterInstall::new(
            "c1",
            AgentClusterInstallSpec {
                provision_requirements: ProvisionRequirements {
                    control_plane_agents: cp,
                    worker_agents: workers,
                    arbiter_agents: 0,
                },
                api_vips: vec!["192.168.111.5".into()],
                ingress_vips: vec!["192.168.111.4".into()],
                ..Default::default()
            },
        )
    }

    #[test]
    fn config_maps_counts_vips_and_platform() {
        let c = cluster_config(&cd(), &aci(3, 2), ("4.17.3".into(), "x86_64".into())).unwrap();
        assert_eq!((c.control_plane_count, c.worker_count), (3, 2));
        assert_eq!(c.platform, PlatformType::BareMetal);
        assert_eq!(c.api_vips, vec!["192.168.111.5".to_string()]);
        let sno = cluster_config(&cd(), &aci(1, 0), ("4.17.3".into(), "x86_64".into())).unwrap();
        assert_eq!(sno.platform, PlatformType::None);
        assert!(sno.user_managed_networking);
    }

    #[test]
    fn manifests_come_from_config_map_keys() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("m".into());
        cm.data = Some(BTreeMap::from([("50-a.yaml".into(), "kind: X".into())]));
        assert_eq!(
            manifests_of(&cm).unwrap(),
            vec![("50-a.yaml".to_string(), b"kind: X".to_vec())]
        );
        cm.data = Some(BTreeMap::from([("../a.yaml".into(), "x".into())]));
        assert!(manifests_of(&cm).unwrap_err().contains("../a.yaml"));
    }

    #[test]
    fn config_rejects_bad_counts_and_missing_vips() {
        let e = cluster_config(&cd(), &aci(2, 0), ("4.17".into(), "x86_64".into())).unwrap_err();
        assert!(e.contains("controlPlaneAgents"), "{e}");
        let mut a = aci(3, 0);
        a.spec.api_vips.clear();
        let e = cluster_config(&cd(), &a, ("4.17".into(), "x86_64".into())).unwrap_err();
        assert!(e.contains("apiVIPs"), "{e}");
    }

    #[test]
    fn config_refuses_names_and_keys_the_installer_would() {
        let v = || ("4.17.3".to_string(), "x86_64".to_string());
        let mut bad = cd();
        bad.spec.cluster_name = "Bad_Name!".into();
        let e = cluster_config(&bad, &aci(3, 2), v()).unwrap_err();
        assert!(e.starts_with("ClusterDeployment spec.clusterName"), "{e}");
        let mut bad = cd();
        bad.spec.base_domain = "bad_domain!.example".into();
        let e = cluster_config(&bad, &aci(3, 2), v()).unwrap_err();
        assert!(e.starts_with("ClusterDeployment spec.baseDomain"), "{e}");
        let mut a = aci(3, 2);
        a.spec.ssh_public_key = Some("not a key".into());
        let e = cluster_config(&cd(), &a, v()).unwrap_err();
        assert!(e.starts_with("spec.sshPublicKey"), "{e}");
    }

    #[test]
    fn config_refuses_what_the_release_cannot_install() {
        let v = |s: &str| (s.to_string(), "x86_64".to_string());
        let mut sdn = aci(3, 2);
        sdn.spec.networking.network_type = Some(NetworkType::OpenShiftSDN);
        let e = cluster_config(&cd(), &sdn, v("4.17.3")).unwrap_err();
        assert!(
            e.contains("networkType") && e.contains("OVNKubernetes"),
            "{e}"
        );
        assert!(cluster_config(&cd(), &sdn, v("4.14.2")).is_ok());
        let e = cluster_config(&cd(), &aci(5, 0), v("4.17.3")).unwrap_err();
        assert!(e.contains("4.18"), "{e}");
        assert!(cluster_config(&cd(), &aci(5, 0), v("4.18.1")).is_ok());
        let mut tna = aci(2, 0);
        tna.spec.provision_requirements.arbiter_agents = 1;
        let e = cluster_config(&cd(), &tna, v("4.18.1")).unwrap_err();
        assert!(e.contains("arbiter"), "{e}");
    }

    #[test]
    fn config_rejects_networks_that_do_not_parse_and_bad_overrides() {
        let version = || ("4.17".to_string(), "x86_64".to_string());
        for bad in ["300.1.1.0/24", "banana", "10.0.0.0/33", "10.0.0.0"] {
            let mut a = aci(3, 2);
            a.spec.networking.service_network = vec![bad.into()];
            let e = cluster_config(&cd(), &a, version()).unwrap_err();
            assert!(e.contains("serviceNetwork") && e.contains(bad), "{e}");
        }
        let mut a = aci(3, 2);
        a.spec.api_vips = vec!["not-an-ip".into()];
        assert!(
            cluster_config(&cd(), &a, version())
                .unwrap_err()
                .contains("apiVIPs")
        );
        let mut a = aci(3, 2);
        a.metadata.annotations = Some(BTreeMap::from([(
            INSTALL_CONFIG_OVERRIDES_ANNOTATION.to_string(),
            "{not json".to_string(),
        )]));
        assert!(
            cluster_config(&cd(), &a, version())
                .unwrap_err()
                .contains(INSTALL_CONFIG_OVERRIDES_ANNOTATION)
        );
        assert!(cluster_config(&cd(), &aci(3, 2), version()).is_ok());
    }

    fn plan_fixture() -> (ClusterDeployment, Dereferenced) {
        let mut cd = cd();
        cd.metadata.namespace = Some("ns".into());
        cd.metadata.uid = Some("cd-uid".into());
        cd.spec.cluster_install_ref = Some(crate::api::hive::ClusterInstallLocalReference {
            group: "extensions.hive.openshift.io".into(),
            version: "v1beta1".into(),
            kind: "AgentClusterInstall".into(),
            name: "c1".into(),
        });
        cd.spec.pull_secret_ref = Some(crate::api::common::LocalObjectReference {
            name: "pull".into(),
        });
        let mut aci = aci(3, 2);
        aci.spec.image_set_ref = Some(crate::api::agentclusterinstall::ClusterImageSetReference {
            name: "4.17".into(),
        });
        let pull = Secret {
            data: Some(BTreeMap::from([(
                ".dockerconfigjson".into(),
                ByteString(b"{\"auths\":{}}".to_vec()),
            )])),
            ..Default::default()
        };
        let cis = ClusterImageSet::new(
            "4.17",
            crate::api::hive::ClusterImageSetSpec {
                release_image: "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64".into(),
            },
        );
        let read = Dereferenced {
            aci: Some(aci),
            pull_secret: Some(pull),
            image_set: Some(cis),
            ..Default::default()
        };
        (cd, read)
    }

    fn sync_plan(plan: Plan) -> SyncPlan {
        match plan {
            Plan::Sync(s) => *s,
            other => panic!("expected a sync plan, got {other:?}"),
        }
    }

    #[test]
    fn a_pull_secret_of_the_wrong_shape_is_an_input_error() {
        let (cd, mut read) = plan_fixture();
        read.pull_secret.as_mut().unwrap().data = Some(BTreeMap::from([(
            ".dockerconfigjson".into(),
            ByteString(br#"{"auths":"nope"}"#.to_vec()),
        )]));
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        let e = p.spec_error.expect("an input error");
        assert!(e.starts_with("pull secret pull: "), "{e}");
    }

    #[test]
    fn plan_waits_for_the_aci_and_deregisters_when_it_goes() {
        let (cd, mut read) = plan_fixture();
        assert_eq!(
            plan(&cd, &Dereferenced::default(), &TagReleaseInfo),
            Plan::WaitForAci
        );
        let aci = read.aci.as_mut().unwrap();
        aci.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
        );
        aci.metadata.finalizers = Some(vec![ACI_FINALIZER.into()]);
        assert_eq!(
            plan(&cd, &read, &TagReleaseInfo),
            Plan::Deregister {
                release_finalizer: true
            }
        );
        read.aci.as_mut().unwrap().metadata.finalizers = Some(vec!["someone-else".into()]);
        assert_eq!(
            plan(&cd, &read, &TagReleaseInfo),
            Plan::Deregister {
                release_finalizer: false
            }
        );
    }

    #[test]
    fn the_mirror_registry_config_map_reaches_the_settings_or_names_its_error() {
        let (cd, mut read) = plan_fixture();
        let cm = |conf: &str| ConfigMap {
            data: Some(BTreeMap::from([(
                "registries.conf".to_string(),
                conf.to_string(),
            )])),
            ..ConfigMap::default()
        };
        let good = "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"mirror.example.com/ocp\"\n";
        read.mirror_registry = Some(("mirrors".into(), Some(cm(good))));
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(p.spec_error, None);
        let mirrors = p.settings.mirrors.expect("parsed");
        assert_eq!(
            crate::domain::mirrors::image_digest_sources(&mirrors)[0].mirrors,
            ["mirror.example.com/ocp"]
        );

        // Missing, or malformed: an input error naming the ConfigMap (and the line), no mirrors.
        read.mirror_registry = Some(("mirrors".into(), None));
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(
            p.spec_error.as_deref(),
            Some("mirror registry ConfigMap mirrors (spec.mirrorRegistryRef) not found")
        );
        read.mirror_registry = Some(("mirrors".into(), Some(cm("[[registry]]\nlocation = \n"))));
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        let e = p.spec_error.unwrap();
        assert!(
            e.starts_with("mirror registry ConfigMap mirrors (spec.mirrorRegistryRef): ")
                && e.contains("line 2"),
            "{e}"
        );
        assert_eq!(p.settings.mirrors, None);
    }

    #[test]
    fn plan_registers_the_cluster_and_names_input_errors() {
        let (cd, mut read) = plan_fixture();
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert!(p.add_aci_finalizer);
        assert_eq!(p.spec_error, None);
        assert_eq!(p.config.unwrap().openshift_version, "4.17.3");
        assert_eq!(p.settings.pull_secret, "{\"auths\":{}}");
        assert_eq!(p.credentials, None);
        assert_eq!(p.recheck, Duration::from_secs(10));

        read.pull_secret = None;
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(p.spec_error.as_deref(), Some("pull secret pull not found"));
        assert_eq!(p.config, None);

        let (cd, mut read) = plan_fixture();
        read.image_set = None;
        read.manifests = vec![("extra".into(), None)];
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(
            p.spec_error.as_deref(),
            Some("ClusterImageSet 4.17 not found")
        );

        let (cd, mut read) = plan_fixture();
        read.manifests = vec![("extra".into(), None)];
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(
            p.spec_error.as_deref(),
            Some("manifests ConfigMap extra not found")
        );
    }

    #[test]
    fn disk_encryption_reaches_the_snapshot_or_is_an_input_error() {
        use crate::api::agentclusterinstall::DiskEncryption as AciEncryption;
        let version = || ("4.17".to_string(), "x86_64".to_string());
        let mut a = aci(3, 2);
        assert_eq!(
            cluster_config(&cd(), &a, version())
                .unwrap()
                .disk_encryption,
            None
        );
        a.spec.disk_encryption = Some(AciEncryption {
            enable_on: Some(DiskEncryptionEnableOn::MastersWorkers),
            mode: None,
            tang_servers: None,
        });
        let c = cluster_config(&cd(), &a, version()).unwrap();
        let enc = c.disk_encryption.clone().unwrap();
        assert_eq!(
            (enc.enable_on.as_str(), enc.mode.as_str()),
            ("masters,workers", "tpmv2")
        );
        let mut snap = ClusterSnapshot::new("c", "c", Timestamp::UNIX_EPOCH);
        c.apply(&mut snap);
        assert_eq!(snap.disk_encryption, Some(enc));

        // enableOn none is off.
        a.spec.disk_encryption.as_mut().unwrap().enable_on = Some(DiskEncryptionEnableOn::None);
        assert_eq!(
            cluster_config(&cd(), &a, version())
                .unwrap()
                .disk_encryption,
            None
        );

        // Tang needs servers.
        a.spec.disk_encryption = Some(AciEncryption {
            enable_on: Some(DiskEncryptionEnableOn::All),
            mode: Some(DiskEncryptionMode::Tang),
            tang_servers: Some("not json".into()),
        });
        let e = cluster_config(&cd(), &a, version()).unwrap_err();
        assert!(e.contains("tangServers"), "{e}");
        a.spec.disk_encryption.as_mut().unwrap().tang_servers =
            Some(r#"[{"url":"http://tang:7500","thumbprint":"t"}]"#.into());
        let enc = cluster_config(&cd(), &a, version())
            .unwrap()
            .disk_encryption
            .unwrap();
        assert_eq!((enc.enable_on.as_str(), enc.mode.as_str()), ("all", "tang"));
    }

    #[test]
    fn ignition_endpoint_url_and_ca_reach_the_snapshot() {
        use crate::api::agentclusterinstall::IgnitionEndpoint as AciEndpoint;
        use crate::api::infraenv::NamespacedReference;
        let (cd, mut read) = plan_fixture();
        let aci = read.aci.as_mut().unwrap();
        aci.metadata.namespace = Some("ns".into());
        aci.spec.ignition_endpoint = Some(AciEndpoint {
            url: Some("https://ign.example.com:22623".into()),
            ca_certificate_reference: Some(NamespacedReference {
                name: "ign-ca".into(),
                namespace: String::new(),
            }),
        });
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(
            p.spec_error.as_deref(),
            Some("ignitionEndpoint.caCertificateReference: Secret ns/ign-ca not found")
        );
        assert_eq!(p.config, None);

        read.ignition_ca = Some(Secret {
            data: Some(BTreeMap::from([(
                "tls.crt".into(),
                ByteString(b"-----BEGIN CERTIFICATE-----".to_vec()),
            )])),
            ..Default::default()
        });
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(p.spec_error, None);
        let mut snap = ClusterSnapshot::new("c", "c1", Timestamp::UNIX_EPOCH);
        snap.base_domain = "example.com".into();
        p.config.unwrap().apply(&mut snap);
        assert_eq!(
            snap.ignition_endpoint.ca_certificate.as_deref(),
            Some("-----BEGIN CERTIFICATE-----")
        );
        // The release is known before the payload is read (the image availability check).
        assert_eq!(
            snap.release.release_image,
            "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"
        );
        // The day-2 pointer ignition and the connectivity check use the custom endpoint.
        assert_eq!(
            crate::domain::day2_ignition_url(&snap, "worker"),
            "https://ign.example.com:22623/config/worker"
        );

        read.ignition_ca.as_mut().unwrap().data = Some(BTreeMap::new());
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert!(p.spec_error.unwrap().contains("has no tls.crt key"));
    }

    #[test]
    fn plan_reports_unsupported_fields_without_unconfiguring_the_cluster() {
        let (mut cd, mut read) = plan_fixture();
        read.aci.as_mut().unwrap().spec.platform_type =
            Some(crate::api::agentclusterinstall::PlatformType::VSphere);
        cd.spec.manage_dns = true;
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert!(
            p.spec_error
                .as_deref()
                .unwrap()
                .starts_with("spec.platformType is not supported yet"),
            "{:?}",
            p.spec_error
        );
        // The spec still applies: validations go on, only the install waits.
        assert!(p.config.is_some());
        assert_eq!(
            p.settings.unsupported_fields,
            vec!["ClusterDeployment spec.manageDNS is not supported yet".to_string()]
        );
        // A real input error comes first.
        read.pull_secret = None;
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(p.spec_error.as_deref(), Some("pull secret pull not found"));
    }

    #[test]
    fn load_balancer_and_external_platform_reach_the_settings() {
        use crate::api::agentclusterinstall::{ExternalPlatformSpec, LoadBalancer};
        let (cd, mut read) = plan_fixture();
        let aci = read.aci.as_mut().unwrap();
        aci.spec.load_balancer = Some(LoadBalancer {
            type_: LoadBalancerType::UserManaged,
        });
        aci.spec.platform_type = Some(AciPlatform::External);
        aci.spec.external = Some(ExternalPlatformSpec {
            platform_name: Some("oci".into()),
            cloud_controller_manager: Some("External".into()),
        });
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        assert_eq!(p.spec_error, None);
        assert!(p.settings.user_managed_load_balancer);
        assert_eq!(
            p.settings
                .external_platform
                .cloud_controller_manager
                .as_deref(),
            Some("External")
        );
        assert_eq!(p.config.unwrap().platform, PlatformType::External);
    }

    fn record(status: ClusterStatus) -> RecordFacts {
        let mut snap = ClusterSnapshot::new("cd-uid", "c1", Timestamp::UNIX_EPOCH);
        snap.status = status;
        snap.base_domain = "example.com".into();
        RecordFacts::of(&ClusterRecord::new(snap, ClusterSettings::default()))
    }

    #[test]
    fn name_and_domain_are_fixed_once_the_install_started() {
        let (mut cd, mut read) = plan_fixture();
        cd.spec.base_domain = "other.example.com".into();
        read.record = Some(record(ClusterStatus::Ready));
        assert_eq!(
            sync_plan(plan(&cd, &read, &TagReleaseInfo)).spec_error,
            None
        );
        read.record = Some(record(ClusterStatus::Installed));
        let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
        let e = p.spec_error.expect("refused");
        assert!(
            e.starts_with("ClusterDeployment spec.baseDomain cannot change"),
            "{e}"
        );
        assert!(p.config.is_none(), "the record keeps the installed names");
    }

    #[test]
    fn credentials_follow_the_install() {
        let (cd, read) = plan_fixture();
        let aci = read.aci.unwrap();
        let files = ClusterFiles {
            kubeconfig: Some(b"final".to_vec()),
            kubeconfig_noingress: Some(b"early".to_vec()),
            metadata: Some(br#"{"clusterID":"ocp-id"}"#.to_vec()),
            kubeadmin_password: Some(b"pw".to_vec()),
        };
        // Nothing before the install, nor without a kubeconfig.
        assert_eq!(
            credentials(&cd, &aci, &record(ClusterStatus::Ready), &files),
            None
        );
        assert_eq!(
            credentials(
                &cd,
                &aci,
                &record(ClusterStatus::Installing),
                &ClusterFiles::default()
            ),
            None
        );

        let c = credentials(&cd, &aci, &record(ClusterStatus::Installing), &files).unwrap();
        assert_eq!(c.secrets.len(), 1);
        let kc = &c.secrets[0];
        assert_eq!(kc.metadata.name.as_deref(), Some("c1-admin-kubeconfig"));
        assert_eq!(kc.data.as_ref().unwrap()["kubeconfig"].0, b"early");
        assert_eq!(
            c.aci_cluster_metadata.as_ref().unwrap()["clusterID"],
            "ocp-id"
        );
        assert_eq!(
            (c.mark_installed.is_some(), c.day2, c.event.is_some()),
            (false, false, false)
        );

        let mut installed = record(ClusterStatus::Installed);
        installed.kubeconfig_uploaded = true;
        let c = credentials(&cd, &aci, &installed, &files).unwrap();
        assert_eq!(c.secrets.len(), 2);
        assert_eq!(
            c.secrets[0].data.as_ref().unwrap()["kubeconfig"].0,
            b"final"
        );
        assert_eq!(c.secrets[1].data.as_ref().unwrap()["password"].0, b"pw");
        let meta = c.mark_installed.unwrap();
        assert_eq!(meta["adminPasswordSecretRef"]["name"], "c1-admin-password");
        assert_eq!(c.event.unwrap().1.reason, "InstallationCompleted");
        assert!(c.day2);

        // A password Secret name the user chose is honoured.
        let mut named = cd.clone();
        named.spec.cluster_metadata = Some(crate::api::hive::ClusterMetadata {
            admin_password_secret_ref: Some(crate::api::common::LocalObjectReference {
                name: "my-password".into(),
            }),
            ..Default::default()
        });
        let c = credentials(&named, &aci, &installed, &files).unwrap();
        assert_eq!(c.secrets[1].metadata.name.as_deref(), Some("my-password"));

        // Marked installed already: no second mark, no second event.
        let mut done = cd.clone();
        done.spec.installed = true;
        let c = credentials(&done, &aci, &installed, &files).unwrap();
        assert_eq!((c.mark_installed, c.event), (None, None));
    }
}

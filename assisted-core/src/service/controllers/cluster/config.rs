//! The cluster config the spec asks for (pure): the ClusterDeployment and AgentClusterInstall
//! fields checked as the installer would, then mapped onto the cluster snapshot.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;

use super::input_error::InputError;
use super::record::RecordFacts;
use crate::api::agentclusterinstall::{
    AgentClusterInstall, DiskEncryptionEnableOn, DiskEncryptionMode,
    INSTALL_CONFIG_OVERRIDES_ANNOTATION, NetworkType, PlatformType as AciPlatform,
};
use crate::api::hive::ClusterDeployment;
use crate::domain::{
    ClusterNetwork, ClusterSnapshot, ClusterStatus, DiskEncryption, IgnitionEndpoint, PlatformType,
};

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
pub fn disk_encryption_of(aci: &AgentClusterInstall) -> Result<Option<DiskEncryption>, InputError> {
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
        crate::service::install::tang_servers(&tang_servers)
            .map_err(|e| InputError::Tang(e.to_string()))?;
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
) -> Result<Option<String>, InputError> {
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
    let secret = secret.ok_or_else(|| InputError::CaMissing(what.clone()))?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get("tls.crt"))
        .ok_or_else(|| InputError::CaNoCert(what.clone()))?;
    String::from_utf8(bytes.0.clone())
        .map(Some)
        .map_err(|_| InputError::CaNotPem(what))
}

/// The namespace of the CA Secret: the reference's, else the ACI's own.
pub(super) fn ignition_ca_namespace(aci: &AgentClusterInstall) -> String {
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
fn check_formats(cd: &ClusterDeployment, aci: &AgentClusterInstall) -> Result<(), InputError> {
    use crate::domain::formats::{dns_label_problem, dns_subdomain_problem, ssh_keys_problem};
    if let Some(p) = dns_label_problem(&cd.spec.cluster_name) {
        return Err(InputError::Format {
            field: "ClusterDeployment spec.clusterName",
            problem: p,
        });
    }
    if let Some(p) = dns_subdomain_problem(&cd.spec.base_domain) {
        return Err(InputError::Format {
            field: "ClusterDeployment spec.baseDomain",
            problem: p,
        });
    }
    if let Some(p) = aci
        .spec
        .ssh_public_key
        .as_deref()
        .filter(|k| !k.trim().is_empty())
        .and_then(ssh_keys_problem)
    {
        return Err(InputError::Format {
            field: "spec.sshPublicKey",
            problem: p,
        });
    }
    if let Some(p) = &aci.spec.proxy {
        crate::domain::formats::check_proxy(p.http_proxy.as_deref(), p.https_proxy.as_deref())
            .map_err(InputError::Proxy)?;
    }
    Ok(())
}

/// Once the install started, the cluster's name and domain are in its certificates and DNS
/// names: a ClusterDeployment edit of them is refused (Hive makes them immutable), and the
/// record keeps the old ones.
pub(super) fn fixed_names(
    record: Option<&RecordFacts>,
    config: &ClusterConfig,
) -> Result<(), InputError> {
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
            return Err(InputError::FixedName {
                field,
                before: before.clone(),
                after: after.clone(),
            });
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
) -> Result<(), InputError> {
    use crate::domain::release_support::{
        Support, arbiter_support, large_control_plane_supported, openshift_sdn_supported,
    };
    if version.is_empty() {
        return Ok(());
    }
    if control_plane > 3 && !large_control_plane_supported(version) {
        return Err(InputError::LargeControlPlane {
            version: version.to_string(),
            count: control_plane,
        });
    }
    if arbiters > 0 && arbiter_support(version) == Support::Unsupported {
        return Err(InputError::Arbiter(version.to_string()));
    }
    if network_type == Some(&NetworkType::OpenShiftSDN) && !openshift_sdn_supported(version) {
        return Err(InputError::OpenShiftSdn(version.to_string()));
    }
    Ok(())
}

/// CD + ACI (+ the release version) → cluster config. Pure; errors are input errors.
pub fn cluster_config(
    cd: &ClusterDeployment,
    aci: &AgentClusterInstall,
    version: (String, String),
) -> Result<ClusterConfig, InputError> {
    let s = &aci.spec;
    check_formats(cd, aci)?;
    check_networks(aci)?;
    check_overrides(aci)?;
    let (cp, workers, arbiters) = node_counts(aci)?;
    release_rules(&version.0, cp, arbiters, s.networking.network_type.as_ref())?;
    let (api_vips, ingress_vips) = vips(aci);
    let platform = platform_of(aci, cp);
    if platform == PlatformType::BareMetal
        && cp > 1
        && (api_vips.is_empty() || ingress_vips.is_empty())
    {
        return Err(InputError::VipsRequired);
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

/// The install-config overrides annotation, when set, is a JSON object that leaves alone
/// what the core owns.
fn check_overrides(aci: &AgentClusterInstall) -> Result<(), InputError> {
    let Some(overrides) = aci.annotations().get(INSTALL_CONFIG_OVERRIDES_ANNOTATION) else {
        return Ok(());
    };
    match serde_json::from_str::<serde_json::Value>(overrides) {
        Ok(doc @ serde_json::Value::Object(_)) => {
            match crate::domain::formats::owned_override_problem(&doc) {
                Some(problem) => Err(InputError::Overrides {
                    annotation: INSTALL_CONFIG_OVERRIDES_ANNOTATION,
                    problem,
                }),
                None => Ok(()),
            }
        }
        _ => Err(InputError::OverridesNotObject(
            INSTALL_CONFIG_OVERRIDES_ANNOTATION,
        )),
    }
}

/// (control plane, workers, arbiters) from `provisionRequirements`, in the topologies the
/// installer knows.
fn node_counts(aci: &AgentClusterInstall) -> Result<(u32, u32, u32), InputError> {
    let req = &aci.spec.provision_requirements;
    let cp = u32::try_from(req.control_plane_agents)
        .map_err(|_| InputError::Negative("controlPlaneAgents"))?;
    let workers =
        u32::try_from(req.worker_agents).map_err(|_| InputError::Negative("workerAgents"))?;
    let arbiters =
        u32::try_from(req.arbiter_agents).map_err(|_| InputError::Negative("arbiterAgents"))?;
    // Two control-plane nodes only beside an arbiter.
    if !(cp == 1 || (3..=5).contains(&cp) || (cp == 2 && arbiters > 0)) {
        return Err(InputError::ControlPlaneCount(cp));
    }
    Ok((cp, workers, arbiters))
}

/// The API and ingress VIPs: the lists, else the single (deprecated) fields.
fn vips(aci: &AgentClusterInstall) -> (Vec<String>, Vec<String>) {
    let s = &aci.spec;
    let mut api_vips = s.api_vips.clone();
    if api_vips.is_empty() {
        api_vips.extend(s.api_vip.clone().filter(|v| !v.is_empty()));
    }
    let mut ingress_vips = s.ingress_vips.clone();
    if ingress_vips.is_empty() {
        ingress_vips.extend(s.ingress_vip.clone().filter(|v| !v.is_empty()));
    }
    (api_vips, ingress_vips)
}

/// The platform the spec names, else the one upstream picks for the topology.
fn platform_of(aci: &AgentClusterInstall, cp: u32) -> PlatformType {
    let s = &aci.spec;
    match s.platform_type {
        Some(AciPlatform::None) => PlatformType::None,
        Some(AciPlatform::External) => PlatformType::External,
        Some(AciPlatform::VSphere) => PlatformType::VSphere,
        Some(AciPlatform::Nutanix) => PlatformType::Nutanix,
        Some(AciPlatform::BareMetal) => PlatformType::BareMetal,
        // Upstream: SNO or user-managed networking without a platform means "none".
        None if cp == 1 || s.networking.user_managed_networking == Some(true) => PlatformType::None,
        None => PlatformType::BareMetal,
    }
}

/// Image mode at install, from the custom manifests, the pull secret's registries, the
/// install-config overrides (`osImageStream`) and the Secrets the control plane delivers after
/// the install (the ACI's post-install-secrets annotation).
pub(super) fn image_mode_of(
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
fn check_networks(aci: &AgentClusterInstall) -> Result<(), InputError> {
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
            return Err(InputError::NotCidr {
                field,
                cidr: cidr.to_string(),
            });
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
            return Err(InputError::NotIp {
                field,
                vip: vip.clone(),
            });
        }
    }
    Ok(())
}

/// ConfigMap → manifest files; a key that is not a plain YAML/JSON/patch file name, or content
/// that does not parse as its kind, is an input error (caught before the install starts).
pub fn manifests_of(cm: &ConfigMap) -> Result<Vec<(String, Vec<u8>)>, InputError> {
    let mut out = Vec::new();
    for (key, value) in cm.data.iter().flatten() {
        crate::service::install::check_manifest(key, value.as_bytes()).map_err(|e| {
            InputError::Manifest {
                config_map: cm.name_any(),
                problem: e.to_string(),
            }
        })?;
        out.push((key.clone(), value.clone().into_bytes()));
    }
    Ok(out)
}

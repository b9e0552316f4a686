//! install-config.yaml builder (pure).
//!
//! The output uses the installer's field names; pieces that are empty are left out rather
//! than written as empty lists, because the installer treats a present-but-empty list
//! differently from an absent one for some fields (it defaults absent networks).

use serde_json::{Map, Value, json};

use super::error::InstallError;
use crate::domain::net::Cidr;
use crate::domain::release_support::{
    Support, arbiter_support, install_config_has_additional_ntp_servers,
};
use crate::domain::{ClusterNetwork, ClusterSnapshot, HostRole, HostSnapshot, PlatformType};

/// Platforms this builder renders. vsphere and nutanix have their own providers and are not
/// implemented (the AgentClusterInstall reports them as not supported yet); they render `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InstallPlatform {
    #[default]
    BareMetal,
    None,
    /// `platform.external` (ACI platformType External, with `spec.external`).
    External,
}

impl InstallPlatform {
    /// Baremetal only with cluster-managed networking; external as asked; everything else
    /// renders as `none`.
    pub fn from_snapshot(cluster: &ClusterSnapshot) -> InstallPlatform {
        match cluster.platform {
            PlatformType::BareMetal if !cluster.umn() => InstallPlatform::BareMetal,
            PlatformType::External => InstallPlatform::External,
            _ => InstallPlatform::None,
        }
    }
}

/// `platform.external` of install-config (ACI `spec.external`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExternalPlatformInput {
    pub platform_name: Option<String>,
    /// `None` or `External`.
    pub cloud_controller_manager: Option<String>,
}

/// Firmware boot mode as the installer spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BootMode {
    #[default]
    Uefi,
    Legacy,
}

impl BootMode {
    /// Maps the agent inventory's `boot.current_boot_mode` (`uefi` / `bios`).
    pub fn from_inventory(mode: &str) -> BootMode {
        match mode.to_ascii_lowercase().as_str() {
            "bios" | "legacy" => BootMode::Legacy,
            _ => BootMode::Uefi,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BootMode::Uefi => "UEFI",
            BootMode::Legacy => "legacy",
        }
    }
}

/// One NIC of a host: its MAC and its addresses in CIDR notation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostNic {
    pub mac: String,
    pub addresses: Vec<String>,
}

/// One host as the install-config needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallHost {
    pub hostname: String,
    /// Effective role; the bootstrap host is a master here.
    pub role: HostRole,
    pub nics: Vec<HostNic>,
    pub boot_mode: BootMode,
    /// Stable disk path (e.g. `/dev/disk/by-id/...`); needed for SNO.
    pub installation_disk: Option<String>,
}

/// Cluster-wide proxy settings (all optional).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyInput {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    /// Comma-separated list, as the user wrote it.
    pub no_proxy: Option<String>,
}

/// Everything [`build_install_config`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallConfigInput {
    pub cluster_name: String,
    pub base_domain: String,
    pub pull_secret: String,
    pub ssh_key: Option<String>,
    pub control_plane_replicas: u32,
    pub worker_replicas: u32,
    /// Two-node-with-arbiter clusters; 0 leaves the `arbiter` pool out.
    pub arbiter_replicas: u32,
    pub hyperthreading: bool,
    pub cluster_networks: Vec<ClusterNetwork>,
    pub machine_networks: Vec<String>,
    pub service_networks: Vec<String>,
    /// `None` renders the default, OVNKubernetes.
    pub network_type: Option<String>,
    pub platform: InstallPlatform,
    pub api_vips: Vec<String>,
    pub ingress_vips: Vec<String>,
    /// Baremetal `loadBalancer.type: UserManaged` (ACI `spec.loadBalancer`): the user runs
    /// the API and ingress load balancer, the cluster does not deploy keepalived/haproxy.
    pub user_managed_load_balancer: bool,
    /// Used when `platform` is [`InstallPlatform::External`].
    pub external: ExternalPlatformInput,
    /// `platform.baremetal.additionalNTPServers`: only for installers that know the field
    /// (4.18 on); chrony MachineConfigs carry the sources on every release.
    pub additional_ntp_servers: Vec<String>,
    /// `featureSet` (`TechPreviewNoUpgrade` for what the release has as a tech preview).
    pub feature_set: Option<String>,
    pub proxy: Option<ProxyInput>,
    /// PEM bundles the cluster trusts besides its own CAs (the InfraEnvs'
    /// `additionalTrustBundle`), appended to any bundle the install-config overrides set.
    pub additional_trust_bundles: Vec<String>,
    /// `imageDigestSources`: the mirrors the release is pulled from (the ACI's
    /// `mirrorRegistryRef`); empty leaves the field out.
    pub image_digest_sources: Vec<crate::domain::mirrors::ImageDigestSource>,
    pub hosts: Vec<InstallHost>,
    /// The install-config overrides annotation (JSON merge patch), applied last.
    pub install_config_overrides: Option<String>,
}

impl InstallConfigInput {
    /// Fills the input from a cluster snapshot; secrets and user documents come from the
    /// caller because the snapshot does not carry them.
    pub fn from_snapshot(
        cluster: &ClusterSnapshot,
        pull_secret: &str,
        ssh_key: Option<&str>,
        overrides: Option<&str>,
    ) -> InstallConfigInput {
        let bound: Vec<&HostSnapshot> = cluster
            .hosts
            .iter()
            .filter(|h| h.cluster_id.as_deref() == Some(cluster.id.as_str()) && !h.is_day2())
            .collect();
        let count = |role: HostRole| {
            let n = bound.iter().filter(|h| h.effective_role() == role).count();
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        InstallConfigInput {
            cluster_name: cluster.name.clone(),
            base_domain: cluster.base_domain.clone(),
            pull_secret: pull_secret.to_string(),
            ssh_key: ssh_key.filter(|k| !k.trim().is_empty()).map(str::to_string),
            control_plane_replicas: count(HostRole::Master),
            worker_replicas: count(HostRole::Worker),
            arbiter_replicas: count(HostRole::Arbiter),
            hyperthreading: true,
            cluster_networks: cluster.cluster_networks.clone(),
            machine_networks: cluster.machine_networks.clone(),
            service_networks: cluster.service_networks.clone(),
            network_type: cluster.network_type.clone().filter(|t| !t.is_empty()),
            platform: InstallPlatform::from_snapshot(cluster),
            api_vips: cluster.api_vips.clone(),
            ingress_vips: cluster.ingress_vips.clone(),
            user_managed_load_balancer: false,
            external: ExternalPlatformInput::default(),
            additional_ntp_servers: if install_config_has_additional_ntp_servers(
                &cluster.openshift_version,
            ) {
                split_list(&cluster.additional_ntp_source)
            } else {
                Vec::new()
            },
            feature_set: (count(HostRole::Arbiter) > 0
                && arbiter_support(&cluster.openshift_version) == Support::TechPreview)
                .then(|| "TechPreviewNoUpgrade".to_string()),
            proxy: None,
            additional_trust_bundles: Vec::new(),
            image_digest_sources: Vec::new(),
            hosts: bound.iter().map(|h| install_host(h)).collect(),
            install_config_overrides: overrides.map(str::to_string),
        }
    }
}

fn install_host(h: &HostSnapshot) -> InstallHost {
    let inv = h.inventory.as_ref();
    InstallHost {
        hostname: h.hostname().to_string(),
        role: h.effective_role(),
        nics: inv
            .map(|i| {
                i.interfaces
                    .iter()
                    .map(|n| HostNic {
                        mac: n.mac_address.clone(),
                        addresses: n.addresses().map(str::to_string).collect(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        boot_mode: inv
            .map(|i| BootMode::from_inventory(&i.boot.current_boot_mode))
            .unwrap_or_default(),
        // The chosen disk, else the one the domain would pick (what upstream stores at
        // registration as installation_disk_id).
        installation_disk: inv
            .and_then(|i| {
                let id = h.installation_disk_id.as_deref()?;
                i.disks
                    .iter()
                    .find(|d| d.key() == id || d.install_path() == id)
                    .map(|d| d.install_path().to_string())
            })
            .or_else(|| {
                crate::domain::installation_disk(h, 0).map(|d| d.install_path().to_string())
            }),
    }
}

/// A comma-separated list, entries trimmed, empty ones dropped.
pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Builds the install-config document. Errors name the offending input.
pub fn build_install_config(input: &InstallConfigInput) -> Result<Value, InstallError> {
    if input.cluster_name.trim().is_empty() || input.base_domain.trim().is_empty() {
        return Err(InstallError::InvalidInput(
            "cluster name and base domain are required".into(),
        ));
    }
    let ht = if input.hyperthreading {
        "Enabled"
    } else {
        "Disabled"
    };
    let mut root = Map::new();
    root.insert("apiVersion".into(), json!("v1"));
    root.insert("baseDomain".into(), json!(input.base_domain));
    root.insert("metadata".into(), json!({ "name": input.cluster_name }));
    root.insert(
        "compute".into(),
        json!([{ "name": "worker", "replicas": input.worker_replicas, "hyperthreading": ht }]),
    );
    root.insert(
        "controlPlane".into(),
        json!({ "name": "master", "replicas": input.control_plane_replicas, "hyperthreading": ht }),
    );
    if input.arbiter_replicas > 0 {
        root.insert(
            "arbiter".into(),
            json!({ "name": "arbiter", "replicas": input.arbiter_replicas, "hyperthreading": ht }),
        );
    }
    if let Some(set) = &input.feature_set {
        root.insert("featureSet".into(), json!(set));
    }
    root.insert("networking".into(), networking(input));
    root.insert("platform".into(), platform(input)?);
    // Single-node clusters bootstrap in place on every platform without an installer-run
    // bootstrap machine (none and external here).
    if input.platform != InstallPlatform::BareMetal && input.control_plane_replicas == 1 {
        let disk = sno_installation_disk(input)?;
        root.insert(
            "bootstrapInPlace".into(),
            json!({ "installationDisk": disk }),
        );
    }
    if !input.image_digest_sources.is_empty() {
        root.insert(
            "imageDigestSources".into(),
            json!(input.image_digest_sources),
        );
    }
    if let Some(proxy) = proxy(input) {
        root.insert("proxy".into(), proxy);
    }
    root.insert("pullSecret".into(), json!(input.pull_secret));
    if let Some(key) = &input.ssh_key {
        root.insert("sshKey".into(), json!(key));
    }
    let mut doc = Value::Object(root);
    apply_overrides(&mut doc, input)?;
    // The overrides' bundle first, then the InfraEnvs' (upstream merges them, in this order).
    let bundle = doc
        .get("additionalTrustBundle")
        .and_then(Value::as_str)
        .into_iter()
        .chain(input.additional_trust_bundles.iter().map(String::as_str))
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if !bundle.is_empty() {
        doc["additionalTrustBundle"] = json!(bundle);
    }
    Ok(doc)
}

/// The user's install-config overrides (the ACI annotation), merged over the generated document.
fn apply_overrides(doc: &mut Value, input: &InstallConfigInput) -> Result<(), InstallError> {
    if let Some(overrides) = input
        .install_config_overrides
        .as_deref()
        .filter(|o| !o.trim().is_empty())
    {
        let patch: Value = serde_json::from_str(overrides).map_err(|e| {
            InstallError::json(
                format!(
                    "install-config overrides ({})",
                    super::INSTALL_CONFIG_OVERRIDES_ANNOTATION
                ),
                e,
            )
        })?;
        if !patch.is_object() {
            return Err(InstallError::json(
                format!(
                    "install-config overrides ({})",
                    super::INSTALL_CONFIG_OVERRIDES_ANNOTATION
                ),
                "expected a JSON object",
            ));
        }
        apply_merge_patch(doc, &patch);
    }
    Ok(())
}

/// Renders the document as install-config.yaml.
pub fn render_install_config_yaml(input: &InstallConfigInput) -> Result<String, InstallError> {
    let doc = build_install_config(input)?;
    serde_yaml::to_string(&doc).map_err(|source| InstallError::Yaml {
        context: "rendering install-config.yaml".into(),
        source,
    })
}

fn networking(input: &InstallConfigInput) -> Value {
    let mut net = Map::new();
    if !input.cluster_networks.is_empty() {
        let list: Vec<Value> = input
            .cluster_networks
            .iter()
            .map(|n| json!({ "cidr": n.cidr, "hostPrefix": n.host_prefix }))
            .collect();
        net.insert("clusterNetwork".into(), Value::Array(list));
    }
    if !input.machine_networks.is_empty() {
        let list: Vec<Value> = input
            .machine_networks
            .iter()
            .map(|c| json!({ "cidr": c }))
            .collect();
        net.insert("machineNetwork".into(), Value::Array(list));
    }
    if !input.service_networks.is_empty() {
        net.insert("serviceNetwork".into(), json!(input.service_networks));
    }
    let network_type = input.network_type.as_deref().unwrap_or("OVNKubernetes");
    net.insert("networkType".into(), json!(network_type));
    Value::Object(net)
}

fn platform(input: &InstallConfigInput) -> Result<Value, InstallError> {
    match input.platform {
        InstallPlatform::None => Ok(json!({ "none": {} })),
        InstallPlatform::External => {
            let mut external = Map::new();
            let set = |v: &Option<String>| {
                v.as_deref()
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_string)
            };
            if let Some(name) = set(&input.external.platform_name) {
                external.insert("platformName".into(), json!(name));
            }
            if let Some(ccm) = set(&input.external.cloud_controller_manager) {
                external.insert("cloudControllerManager".into(), json!(ccm));
            }
            Ok(json!({ "external": external }))
        }
        InstallPlatform::BareMetal => {
            if input.api_vips.is_empty() || input.ingress_vips.is_empty() {
                return Err(InstallError::InvalidInput(
                    "platform baremetal needs API and ingress VIPs".into(),
                ));
            }
            let first_machine_net = input.machine_networks.first().and_then(|c| Cidr::parse(c));
            let hosts = input
                .hosts
                .iter()
                .map(|h| baremetal_host(h, first_machine_net.as_ref()))
                .collect::<Result<Vec<_>, _>>()?;
            let mut bm = Map::new();
            bm.insert("apiVIPs".into(), json!(input.api_vips));
            bm.insert("ingressVIPs".into(), json!(input.ingress_vips));
            bm.insert("provisioningNetwork".into(), json!("Disabled"));
            if input.user_managed_load_balancer {
                bm.insert("loadBalancer".into(), json!({ "type": "UserManaged" }));
            }
            bm.insert("hosts".into(), Value::Array(hosts));
            if !input.additional_ntp_servers.is_empty() {
                bm.insert(
                    "additionalNTPServers".into(),
                    json!(input.additional_ntp_servers),
                );
            }
            Ok(json!({ "baremetal": bm }))
        }
    }
}

fn baremetal_host(h: &InstallHost, machine_net: Option<&Cidr>) -> Result<Value, InstallError> {
    let role = match h.role {
        HostRole::Master | HostRole::Bootstrap => "master",
        HostRole::Worker => "worker",
        HostRole::Arbiter => "arbiter",
        HostRole::AutoAssign => {
            return Err(InstallError::InvalidInput(format!(
                "host {:?} has no role assigned",
                h.hostname
            )));
        }
    };
    let with_mac = || h.nics.iter().filter(|n| !n.mac.is_empty());
    let in_machine_net = |n: &&HostNic| {
        machine_net.is_some_and(|net| {
            n.addresses
                .iter()
                .filter_map(|a| crate::domain::net::parse_ip(a))
                .any(|ip| net.contains(ip))
        })
    };
    // The installer boots the host from this NIC, so prefer the one on the machine network;
    // fall back to the first NIC when no machine network is known.
    let nic = with_mac()
        .find(in_machine_net)
        .or_else(|| with_mac().next())
        .ok_or_else(|| {
            InstallError::InvalidInput(format!("host {:?} has no NIC with a MAC", h.hostname))
        })?;
    Ok(json!({
        "name": h.hostname,
        "role": role,
        "bootMACAddress": nic.mac,
        "bootMode": h.boot_mode.as_str(),
    }))
}

fn sno_installation_disk(input: &InstallConfigInput) -> Result<&str, InstallError> {
    input
        .hosts
        .iter()
        .find(|h| matches!(h.role, HostRole::Master | HostRole::Bootstrap))
        .and_then(|h| h.installation_disk.as_deref())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            InstallError::InvalidInput(
                "single-node cluster needs the master's installation disk".into(),
            )
        })
}

fn proxy(input: &InstallConfigInput) -> Option<Value> {
    let p = input.proxy.as_ref()?;
    let set = |s: &Option<String>| {
        s.as_deref()
            .filter(|v| !v.trim().is_empty())
            .map(str::to_string)
    };
    let (http, https) = (set(&p.http_proxy), set(&p.https_proxy));
    if http.is_none() && https.is_none() {
        return None;
    }
    // Cluster-internal traffic must never go through the proxy.
    let mut no_proxy = p.no_proxy.as_deref().map(split_list).unwrap_or_default();
    let extra = std::iter::once(format!(".{}.{}", input.cluster_name, input.base_domain))
        .chain(input.cluster_networks.iter().map(|n| n.cidr.clone()))
        .chain(input.service_networks.iter().cloned())
        .chain(input.machine_networks.iter().cloned());
    for e in extra {
        if !no_proxy.contains(&e) {
            no_proxy.push(e);
        }
    }
    let mut out = Map::new();
    if let Some(h) = http {
        out.insert("httpProxy".into(), json!(h));
    }
    if let Some(h) = https {
        out.insert("httpsProxy".into(), json!(h));
    }
    out.insert("noProxy".into(), json!(no_proxy.join(",")));
    Some(Value::Object(out))
}

/// Applies `patch` to `target` as a JSON merge patch (RFC 7386): objects merge recursively,
/// `null` removes a member, anything else replaces.
pub fn apply_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in patch_map {
            if v.is_null() {
                t.remove(k);
            } else {
                apply_merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, role: HostRole, mac: &str, addr: &str) -> InstallHost {
        InstallHost {
            hostname: name.into(),
            role,
            nics: vec![
                HostNic {
                    mac: format!("{mac}:ff"),
                    addresses: vec!["10.9.9.9/24".into()],
                },
                HostNic {
                    mac: mac.into(),
                    addresses: vec![addr.into()],
                },
            ],
            boot_mode: BootMode::Uefi,
            installation_disk: Some("/dev/disk/by-id/wwn-0x1".into()),
        }
    }

    fn input() -> InstallConfigInput {
        InstallConfigInput {
            cluster_name: "lab".into(),
            base_domain: "example.com".into(),
            pull_secret: r#"{"auths":{}}"#.into(),
            ssh_key: Some("ssh-ed25519 AAAA test".into()),
            control_plane_replicas: 3,
            worker_replicas: 1,
            arbiter_replicas: 0,
            hyperthreading: true,
            cluster_networks: vec![ClusterNetwork {
                cidr: "10.128.0.0/14".into(),
                host_prefix: 23,
            }],
            machine_networks: vec!["192.168.111.0/24".into()],
            service_networks: vec!["172.30.0.0/16".into()],
            network_type: None,
            platform: InstallPlatform::BareMetal,
            api_vips: vec!["192.168.111.5".into()],
            ingress_vips: vec!["192.168.111.4".into()],
            user_managed_load_balancer: false,
            external: ExternalPlatformInput::default(),
            additional_ntp_servers: vec![],
            feature_set: None,
            proxy: None,
            additional_trust_bundles: Vec::new(),
            image_digest_sources: Vec::new(),
            hosts: vec![
                host(
                    "m0",
                    HostRole::Master,
                    "52:54:00:00:00:01",
                    "192.168.111.20/24",
                ),
                host(
                    "m1",
                    HostRole::Bootstrap,
                    "52:54:00:00:00:02",
                    "192.168.111.21/24",
                ),
                host(
                    "m2",
                    HostRole::Master,
                    "52:54:00:00:00:03",
                    "192.168.111.22/24",
                ),
                host(
                    "w0",
                    HostRole::Worker,
                    "52:54:00:00:00:04",
                    "192.168.111.23/24",
                ),
            ],
            install_config_overrides: None,
        }
    }

    #[test]
    fn baremetal_fields_use_installer_names() {
        let doc = build_install_config(&input()).unwrap();
        assert_eq!(doc["apiVersion"], "v1");
        assert_eq!(doc["baseDomain"], "example.com");
        assert_eq!(doc["metadata"]["name"], "lab");
        assert_eq!(doc["pullSecret"], r#"{"auths":{}}"#);
        assert_eq!(doc["sshKey"], "ssh-ed25519 AAAA test");
        assert_eq!(doc["compute"][0]["name"], "worker");
        assert_eq!(doc["compute"][0]["replicas"], 1);
        assert_eq!(doc["compute"][0]["hyperthreading"], "Enabled");
        assert_eq!(doc["controlPlane"]["name"], "master");
        assert_eq!(doc["controlPlane"]["replicas"], 3);
        assert!(doc.get("arbiter").is_none());
        let net = &doc["networking"];
        assert_eq!(net["clusterNetwork"][0]["cidr"], "10.128.0.0/14");
        assert_eq!(net["clusterNetwork"][0]["hostPrefix"], 23);
        assert_eq!(net["machineNetwork"][0]["cidr"], "192.168.111.0/24");
        assert_eq!(net["serviceNetwork"][0], "172.30.0.0/16");
        assert_eq!(net["networkType"], "OVNKubernetes");
        let bm = &doc["platform"]["baremetal"];
        assert_eq!(bm["apiVIPs"][0], "192.168.111.5");
        assert_eq!(bm["ingressVIPs"][0], "192.168.111.4");
        assert_eq!(bm["provisioningNetwork"], "Disabled");
        assert_eq!(bm["hosts"].as_array().unwrap().len(), 4);
        assert_eq!(bm["hosts"][1]["name"], "m1");
        assert_eq!(bm["hosts"][1]["role"], "master");
        assert_eq!(bm["hosts"][3]["role"], "worker");
        // The second NIC is the one on the machine network.
        assert_eq!(bm["hosts"][0]["bootMACAddress"], "52:54:00:00:00:01");
        assert_eq!(bm["hosts"][0]["bootMode"], "UEFI");
        assert!(doc.get("bootstrapInPlace").is_none());
        assert!(doc.get("proxy").is_none());
    }

    #[test]
    fn user_managed_load_balancer_is_rendered_on_baremetal() {
        let doc = build_install_config(&input()).unwrap();
        assert!(doc["platform"]["baremetal"].get("loadBalancer").is_none());
        let mut i = input();
        i.user_managed_load_balancer = true;
        let doc = build_install_config(&i).unwrap();
        assert_eq!(
            doc["platform"]["baremetal"]["loadBalancer"],
            json!({ "type": "UserManaged" })
        );
    }

    #[test]
    fn external_platform_carries_its_name_and_cloud_controller_manager() {
        let mut i = input();
        i.platform = InstallPlatform::External;
        i.external = ExternalPlatformInput {
            platform_name: Some("oci".into()),
            cloud_controller_manager: Some("External".into()),
        };
        let doc = build_install_config(&i).unwrap();
        assert_eq!(
            doc["platform"],
            json!({ "external": { "platformName": "oci", "cloudControllerManager": "External" } })
        );
        assert!(doc.get("bootstrapInPlace").is_none());
        // Single node: bootstrap in place, as with platform none.
        i.control_plane_replicas = 1;
        i.worker_replicas = 0;
        i.hosts.truncate(1);
        i.external = ExternalPlatformInput::default();
        let doc = build_install_config(&i).unwrap();
        assert_eq!(doc["platform"], json!({ "external": {} }));
        assert_eq!(
            doc["bootstrapInPlace"]["installationDisk"],
            "/dev/disk/by-id/wwn-0x1"
        );
    }

    #[test]
    fn boot_mac_falls_back_to_first_nic_and_legacy_mode() {
        let mut i = input();
        i.machine_networks.clear();
        i.hosts[0].boot_mode = BootMode::from_inventory("bios");
        let doc = build_install_config(&i).unwrap();
        let h = &doc["platform"]["baremetal"]["hosts"][0];
        assert_eq!(h["bootMACAddress"], "52:54:00:00:00:01:ff");
        assert_eq!(h["bootMode"], "legacy");
        assert!(doc["networking"].get("machineNetwork").is_none());
    }

    #[test]
    fn baremetal_rejects_missing_vips_and_unassigned_roles() {
        let mut i = input();
        i.api_vips.clear();
        assert!(matches!(
            build_install_config(&i),
            Err(InstallError::InvalidInput(m)) if m.contains("VIPs")
        ));
        let mut i = input();
        i.hosts[0].role = HostRole::AutoAssign;
        let err = build_install_config(&i).unwrap_err().to_string();
        assert!(err.contains("m0"), "{err}");
    }

    #[test]
    fn sno_platform_none_gets_bootstrap_in_place() {
        let mut i = input();
        i.platform = InstallPlatform::None;
        i.control_plane_replicas = 1;
        i.worker_replicas = 0;
        i.api_vips.clear();
        i.hosts.truncate(1);
        let doc = build_install_config(&i).unwrap();
        assert_eq!(doc["platform"], json!({ "none": {} }));
        assert_eq!(
            doc["bootstrapInPlace"]["installationDisk"],
            "/dev/disk/by-id/wwn-0x1"
        );
        assert_eq!(doc["compute"][0]["replicas"], 0);
        i.hosts[0].installation_disk = None;
        assert!(build_install_config(&i).is_err());
    }

    #[test]
    fn proxy_no_proxy_is_extended() {
        let mut i = input();
        i.proxy = Some(ProxyInput {
            http_proxy: Some("http://proxy:3128".into()),
            https_proxy: None,
            no_proxy: Some("internal.example, 172.30.0.0/16".into()),
        });
        i.additional_trust_bundles = vec!["-----BEGIN CERTIFICATE-----".into()];
        let doc = build_install_config(&i).unwrap();
        assert_eq!(doc["proxy"]["httpProxy"], "http://proxy:3128");
        assert!(doc["proxy"].get("httpsProxy").is_none());
        assert_eq!(
            doc["proxy"]["noProxy"],
            "internal.example,172.30.0.0/16,.lab.example.com,10.128.0.0/14,192.168.111.0/24"
        );
        assert_eq!(doc["additionalTrustBundle"], "-----BEGIN CERTIFICATE-----");
        i.install_config_overrides =
            Some(r#"{"additionalTrustBundle":"-----BEGIN CERTIFICATE----- override\n"}"#.into());
        assert_eq!(
            build_install_config(&i).unwrap()["additionalTrustBundle"],
            "-----BEGIN CERTIFICATE----- override\n-----BEGIN CERTIFICATE-----"
        );
        i.install_config_overrides = None;
        // A proxy without any URL is ignored.
        i.proxy = Some(ProxyInput::default());
        assert!(build_install_config(&i).unwrap().get("proxy").is_none());
    }

    #[test]
    fn overrides_are_a_json_merge_patch_applied_last() {
        let mut i = input();
        i.install_config_overrides = Some(
            r#"{"networking":{"networkType":"OpenShiftSDN"},"sshKey":null,
                "capabilities":{"baselineCapabilitySet":"None"},
                "controlPlane":{"hyperthreading":"Disabled"}}"#
                .into(),
        );
        let doc = build_install_config(&i).unwrap();
        assert_eq!(doc["networking"]["networkType"], "OpenShiftSDN");
        assert_eq!(doc["networking"]["clusterNetwork"][0]["hostPrefix"], 23);
        assert!(doc.get("sshKey").is_none());
        assert_eq!(doc["capabilities"]["baselineCapabilitySet"], "None");
        assert_eq!(doc["controlPlane"]["hyperthreading"], "Disabled");
        assert_eq!(doc["controlPlane"]["replicas"], 3);
    }

    #[test]
    fn bad_overrides_name_the_annotation() {
        for bad in ["{not json", "[1,2]"] {
            let mut i = input();
            i.install_config_overrides = Some(bad.into());
            let err = build_install_config(&i).unwrap_err().to_string();
            assert!(err.contains("install-config overrides"), "{err}");
            assert!(err.contains(crate::service::install::INSTALL_CONFIG_OVERRIDES_ANNOTATION));
        }
    }

    #[test]
    fn merge_patch_rfc7386_examples() {
        let mut t = json!({"a":"b","c":{"d":"e","f":"g"}});
        apply_merge_patch(&mut t, &json!({"a":"z","c":{"f":null}}));
        assert_eq!(t, json!({"a":"z","c":{"d":"e"}}));
        let mut t = json!({"a":[{"b":"c"}]});
        apply_merge_patch(&mut t, &json!({"a":[1]}));
        assert_eq!(t, json!({"a":[1]}));
        let mut t = json!(["a"]);
        apply_merge_patch(&mut t, &json!({"a":{"bb":{"ccc":null}}}));
        assert_eq!(t, json!({"a":{"bb":{}}}));
    }

    #[test]
    fn yaml_rendering_round_trips() {
        let yaml = render_install_config_yaml(&input()).unwrap();
        assert!(yaml.contains("apiVersion: v1"));
        let back: Value = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back, build_install_config(&input()).unwrap());
    }

    #[test]
    fn from_snapshot_counts_roles_and_maps_platform() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let mut c = ClusterSnapshot::new("c1", "sno", now);
        c.base_domain = "example.com".into();
        c.control_plane_count = 1;
        let mut h = HostSnapshot::new_registered("h1", "ie", Some(&c), now);
        h.role = HostRole::Master;
        h.requested_hostname = Some("node0".into());
        c.hosts.push(h);
        let i = InstallConfigInput::from_snapshot(&c, "{}", Some(""), None);
        assert_eq!(i.platform, InstallPlatform::None);
        c.platform = PlatformType::External;
        assert_eq!(
            InstallPlatform::from_snapshot(&c),
            InstallPlatform::External
        );
        c.platform = PlatformType::VSphere;
        assert_eq!(InstallPlatform::from_snapshot(&c), InstallPlatform::None);
        c.platform = PlatformType::None;
        assert_eq!(i.control_plane_replicas, 1);
        assert_eq!(i.worker_replicas, 0);
        assert_eq!(i.ssh_key, None);
        assert_eq!(i.hosts[0].hostname, "node0");
    }
}

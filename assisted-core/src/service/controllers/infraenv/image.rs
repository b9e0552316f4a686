//! One infra-env's image revision (pure): its URLs, its content hash, the agent token it
//! carries and the static network files.

use crate::api::infraenv::BootArtifacts;
use crate::api::infraenv::InfraEnv;
use crate::api::nmstateconfig::NMStateConfig;
use crate::service::auth::Keys;
use crate::service::images::{MacInterface, StaticNetworkConfig};
use crate::service::urls::ServiceUrls;

/// The URLs of one infra-env's image revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUrls {
    pub iso: String,
    pub boot: BootArtifacts,
    pub static_network: String,
    /// `status.debugInfo.eventsURL`: upstream's events URL, which carries the infra-env's
    /// token (CAPOA reads the token and id from it).
    pub events: String,
}

/// What one image revision is: OS version, architecture, `full`/`minimal`, content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRevision<'a> {
    pub version: &'a str,
    pub arch: &'a str,
    pub image_type: &'a str,
    pub rev: &'a str,
    pub ipxe_boot_order: bool,
}

/// Image and file URLs; `rev` (a content hash) makes every content change a new URL.
pub fn image_urls(urls: &ServiceUrls, id: &str, token: &str, r: &ImageRevision) -> ImageUrls {
    let ImageRevision {
        version,
        arch,
        image_type,
        rev,
        ipxe_boot_order,
    } = *r;
    let files = |name: &str| {
        format!(
            "{}/api/assisted-install/v2/infra-envs/{id}/downloads/files?file_name={name}&api_key={token}",
            urls.agent_api
        )
    };
    let mut ipxe = files("ipxe-script");
    if ipxe_boot_order {
        ipxe.push_str("&ipxe_script_type=boot-order-control");
    }
    ImageUrls {
        iso: format!(
            "{}/byapikey/{token}/{version}/{arch}/{image_type}.iso?rev={rev}",
            urls.images
        ),
        boot: BootArtifacts {
            initrd: format!(
                "{}/images/{id}/pxe-initrd?api_key={token}&arch={arch}&version={version}&rev={rev}",
                urls.images
            ),
            rootfs: format!(
                "{}/boot-artifacts/rootfs?arch={arch}&version={version}",
                urls.images
            ),
            kernel: format!(
                "{}/boot-artifacts/kernel?arch={arch}&version={version}",
                urls.images
            ),
            ipxe_script: ipxe,
            discovery_ignition_url: files("discovery.ign"),
        },
        static_network: files("static-network-config"),
        events: format!(
            "{}/api/assisted-install/v2/events?api_key={token}&infra_env_id={id}",
            urls.agent_api
        ),
    }
}

/// The token in the InfraEnv's current ISO URL, if it is still a valid token for this
/// infra-env. ES256 signatures are randomised, so reusing it keeps the URL stable across
/// reconciles and restarts: a new URL makes Metal3 re-provision the hosts.
pub fn current_token(ie: &InfraEnv, keys: &Keys, id: &str) -> Option<String> {
    let url = ie.status.as_ref()?.iso_download_url.as_deref()?;
    let token = url.split("/byapikey/").nth(1)?.split('/').next()?;
    let claims = keys.verify(token).ok()?;
    (claims.infra_env_id.as_deref() == Some(id)).then(|| token.to_string())
}

/// Short content hash (hex) of everything the image depends on.
pub fn content_rev(parts: &[&[u8]]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for p in parts {
        ctx.update(&(p.len() as u64).to_le_bytes());
        ctx.update(p);
    }
    ctx.finish().as_ref()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// NMStateConfig → static network entry (the YAML of `spec.config` and the MAC map).
pub fn static_network_of(nm: &NMStateConfig) -> StaticNetworkConfig {
    StaticNetworkConfig {
        network_yaml: nm
            .spec
            .config
            .as_ref()
            .and_then(|c| serde_yaml::to_string(c).ok())
            .unwrap_or_default(),
        mac_interface_map: nm
            .spec
            .interfaces
            .iter()
            .map(|i| MacInterface {
                mac_address: i.mac_address.clone(),
                logical_nic_name: i.name.clone(),
            })
            .collect(),
    }
}

/// The upstream `static_network_config` JSON list.
pub(super) fn static_network_json(list: &[StaticNetworkConfig]) -> String {
    let v: Vec<serde_json::Value> = list
        .iter()
        .map(|s| {
            serde_json::json!({
                "network_yaml": s.network_yaml,
                "mac_interface_map": s.mac_interface_map.iter().map(|m| serde_json::json!({
                    "mac_address": m.mac_address, "logical_nic_name": m.logical_nic_name,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&v).unwrap_or_else(|_| "[]".into())
}

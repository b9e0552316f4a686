//! Disk encryption of the installed nodes (ACI `diskEncryption`), pure: one MachineConfig per
//! role it is enabled on, whose Ignition encrypts the root partition with LUKS and binds it with
//! clevis to the host's TPM 2.0 or to Tang servers. They go to the installer's `openshift/`
//! manifests beside the user's, as assisted-service does.

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::InstallError;
use crate::domain::DiskEncryption;

/// One Tang server of `diskEncryption.tangServers` (a JSON list).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TangServer {
    pub url: String,
    pub thumbprint: String,
}

/// Parses `tangServers`; a Tang binding needs at least one server with a URL and thumbprint.
pub fn tang_servers(raw: &str) -> Result<Vec<TangServer>, InstallError> {
    let servers: Vec<TangServer> = serde_json::from_str(raw).map_err(|e| {
        InstallError::InvalidInput(format!(
            "diskEncryption.tangServers must be a JSON list of {{\"url\", \"thumbprint\"}}: {e}"
        ))
    })?;
    if servers.is_empty() {
        return Err(InstallError::InvalidInput(
            "diskEncryption.tangServers must name at least one server for mode tang".into(),
        ));
    }
    if let Some(bad) = servers
        .iter()
        .find(|s| s.url.trim().is_empty() || s.thumbprint.trim().is_empty())
    {
        return Err(InstallError::InvalidInput(format!(
            "diskEncryption.tangServers: every server needs a url and a thumbprint, got {bad:?}"
        )));
    }
    Ok(servers)
}

/// Whether `enable_on` (`all`, or a comma-separated list of `masters`, `arbiters`, `workers`)
/// covers a role (`master`, `arbiter`, `worker`).
pub fn enabled_for(enable_on: &str, role: &str) -> bool {
    enable_on
        .split(',')
        .map(str::trim)
        .any(|on| on == "all" || on.strip_suffix('s') == Some(role))
}

/// The cipher of the LUKS volume (what the MCO documentation uses for root encryption).
const CIPHER: &str = "aes-cbc-essiv:sha256";

/// `(file name, YAML)` of the MachineConfigs for `enc`; empty when no role is covered.
/// Arbiter MachineConfigs only for clusters with arbiters (there is no arbiter pool otherwise).
pub fn disk_encryption_manifests(
    enc: &DiskEncryption,
    with_arbiters: bool,
) -> Result<Vec<(String, Vec<u8>)>, InstallError> {
    let (mode, clevis) = match enc.mode.as_str() {
        "tang" => (
            "tang",
            json!({ "tang": tang_servers(&enc.tang_servers)?
                .iter()
                .map(|s| json!({ "url": s.url, "thumbprint": s.thumbprint }))
                .collect::<Vec<_>>() }),
        ),
        "tpmv2" | "" => ("tpmv2", json!({ "tpm2": true })),
        other => {
            return Err(InstallError::InvalidInput(format!(
                "diskEncryption.mode {other:?} is not tpmv2 or tang"
            )));
        }
    };
    let roles = ["master", "arbiter", "worker"]
        .into_iter()
        .filter(|role| *role != "arbiter" || with_arbiters)
        .filter(|role| enabled_for(&enc.enable_on, role));
    roles
        .map(|role| {
            let doc = machine_config(role, mode, &clevis);
            let yaml = serde_yaml::to_string(&doc)
                .map_err(|e| InstallError::InvalidInput(format!("disk encryption: {e}")))?;
            Ok((
                format!("99-openshift-{role}-{mode}-encryption.yaml"),
                yaml.into_bytes(),
            ))
        })
        .collect()
}

fn machine_config(role: &str, mode: &str, clevis: &Value) -> Value {
    let mut spec = json!({
        "config": {
            "ignition": { "version": "3.2.0" },
            "storage": {
                "luks": [{
                    "name": "root",
                    "label": "luks-root",
                    "device": "/dev/disk/by-partlabel/root",
                    "clevis": clevis,
                    "options": ["--cipher", CIPHER],
                    "wipeVolume": true,
                }],
                "filesystems": [{
                    "device": "/dev/mapper/root",
                    "format": "xfs",
                    "wipeFilesystem": true,
                    "label": "root",
                }],
            },
        },
    });
    // Tang is reached over the network before the root is unlocked.
    if mode == "tang" {
        spec["kernelArguments"] = json!(["rd.neednet=1"]);
    }
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": format!("99-{role}-disk-encryption-{mode}"),
            "labels": { "machineconfiguration.openshift.io/role": role },
        },
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(enable_on: &str, mode: &str, tang: &str) -> DiskEncryption {
        DiskEncryption {
            enable_on: enable_on.into(),
            mode: mode.into(),
            tang_servers: tang.into(),
        }
    }

    fn parse(yaml: &[u8]) -> Value {
        serde_yaml::from_slice(yaml).unwrap()
    }

    #[test]
    fn tpm_on_masters_is_one_machine_config_binding_the_root_to_the_tpm() {
        let out = disk_encryption_manifests(&enc("masters", "tpmv2", ""), false).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, "99-openshift-master-tpmv2-encryption.yaml");
        assert!(crate::service::install::valid_manifest_name(&out[0].0));
        let mc = parse(&out[0].1);
        assert_eq!(mc["kind"], "MachineConfig");
        assert_eq!(
            mc["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
            "master"
        );
        let luks = &mc["spec"]["config"]["storage"]["luks"][0];
        assert_eq!(luks["device"], "/dev/disk/by-partlabel/root");
        assert_eq!(luks["clevis"], json!({ "tpm2": true }));
        assert_eq!(luks["wipeVolume"], true);
        assert_eq!(
            mc["spec"]["config"]["storage"]["filesystems"][0]["device"],
            "/dev/mapper/root"
        );
        assert!(mc["spec"].get("kernelArguments").is_none());
    }

    #[test]
    fn tang_on_all_roles_lists_the_servers_and_needs_the_network() {
        let servers = r#"[{"url":"http://tang.example:7500","thumbprint":"abc"}]"#;
        let out = disk_encryption_manifests(&enc("all", "tang", servers), true).unwrap();
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "99-openshift-master-tang-encryption.yaml",
                "99-openshift-arbiter-tang-encryption.yaml",
                "99-openshift-worker-tang-encryption.yaml",
            ]
        );
        let mc = parse(&out[2].1);
        assert_eq!(
            mc["spec"]["config"]["storage"]["luks"][0]["clevis"]["tang"][0],
            json!({ "url": "http://tang.example:7500", "thumbprint": "abc" })
        );
        assert_eq!(mc["spec"]["kernelArguments"], json!(["rd.neednet=1"]));
        // Without arbiters there is no arbiter pool to configure.
        let out = disk_encryption_manifests(&enc("all", "tang", servers), false).unwrap();
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn role_lists_and_none() {
        assert!(enabled_for("masters,workers", "worker"));
        assert!(!enabled_for("masters,workers", "arbiter"));
        assert!(!enabled_for("none", "master"));
        assert!(
            disk_encryption_manifests(&enc("none", "tpmv2", ""), true)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn bad_tang_servers_name_the_field() {
        for bad in ["", "{}", "[]", r#"[{"url":"","thumbprint":"x"}]"#] {
            let e = disk_encryption_manifests(&enc("all", "tang", bad), false)
                .unwrap_err()
                .to_string();
            assert!(e.contains("tangServers"), "{bad}: {e}");
        }
        assert!(tang_servers(r#"[{"url":"http://t","thumbprint":"x"}]"#).is_ok());
    }
}

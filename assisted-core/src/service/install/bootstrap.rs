//! What the core changes in the installer's bootstrap.ign before a host boots it, as upstream
//! does for an assisted install (pure):
//!
//! - multi-node: the bootstrap host becomes a control-plane node itself, with two other
//!   masters. `/opt/openshift/assisted-install-bootstrap` tells cluster-etcd-operator so (it
//!   then finishes bootstrap with two etcd members instead of waiting for a third), and
//!   NetworkManager must leave resolv.conf to the installer's own resolver setup
//!   (`99-kni.conf`, `rc-manager=unmanaged`);
//! - baremetal: the BareMetalHost manifests the installer writes describe hosts it would
//!   provision with Ironic; these hosts install themselves, so each becomes externally
//!   provisioned with the hardware the discovery agent reported (the `status` annotation
//!   baremetal-operator reads at adoption);
//! - the installer's own static NetworkManager connection is dropped (the hosts keep the
//!   network they were discovered with), and `/etc/motd` written whole, not appended.

use serde_json::{Value, json};

use super::error::InstallError;
use super::ignition::{data_url, decode_data_url};
use crate::domain::net::Cidr;
use crate::domain::{HostRole, Inventory};

/// A day-1 host of the cluster, for what the backend renders per host.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateHost {
    pub id: String,
    pub hostname: String,
    /// Effective role (the bootstrap host is a master).
    pub role: HostRole,
    /// The host that runs the bootstrap (then becomes a master).
    pub bootstrap: bool,
    /// What its discovery agent reported (hardware for the BareMetalHost manifests).
    pub inventory: Option<crate::domain::Inventory>,
    /// Its address in the first machine network, without prefix.
    pub machine_ip: Option<String>,
}

/// The marker cluster-etcd-operator looks for on an assisted bootstrap host.
pub const ASSISTED_BOOTSTRAP_MARKER: &str = "/opt/openshift/assisted-install-bootstrap";
/// NetworkManager drop-in that leaves resolv.conf alone on the bootstrap host.
pub const NM_RESOLV_UNMANAGED: &str = "/etc/NetworkManager/conf.d/99-kni.conf";
const NM_RESOLV_UNMANAGED_CONTENT: &str = "\n[main]\nrc-manager=unmanaged\n";
/// The installer's static connection, which assisted hosts do not use.
const INSTALLER_STATIC_CONNECTION: &str = "/etc/NetworkManager/system-connections/nmconnection";
/// The annotation baremetal-operator reads a host's status from when it adopts it.
pub const BMH_STATUS_ANNOTATION: &str = "baremetalhost.metal3.io/status";

/// Everything [`post_process_bootstrap`] reads besides the ignition.
pub struct BootstrapInput<'a> {
    pub sno: bool,
    pub hosts: &'a [GenerateHost],
    pub machine_networks: &'a [String],
}

/// Rewrites bootstrap.ign as described in the module docs.
pub fn post_process_bootstrap(
    ign: &[u8],
    input: &BootstrapInput<'_>,
) -> Result<Vec<u8>, InstallError> {
    let bad = |reason: String| InstallError::BadOutput {
        file: "bootstrap.ign".into(),
        reason,
    };
    let mut doc: Value = serde_json::from_slice(ign).map_err(|e| bad(e.to_string()))?;
    if !doc.is_object() {
        return Err(bad("not an ignition config".into()));
    }
    if doc.pointer("/storage/files").is_none() {
        doc["storage"]["files"] = json!([]);
    }
    let files = doc
        .pointer_mut("/storage/files")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad("storage.files is not a list".into()))?;
    files.retain(|f| f["path"] != INSTALLER_STATIC_CONNECTION);
    let mut bmh_hosts = BmhHosts::new(input.hosts);
    for file in files.iter_mut() {
        let path = file["path"].as_str().unwrap_or_default().to_string();
        if path == "/etc/motd" {
            motd_whole(file);
        } else if path.contains("openshift-cluster-api_hosts")
            || path.contains("openshift-cluster-api_arbiter_hosts")
        {
            let source = file["contents"]["source"].as_str().unwrap_or_default();
            let yaml = decode_data_url(source)
                .ok_or_else(|| bad(format!("{path}: contents are not a data URL")))?;
            let rewritten = externally_provisioned_bmh(&yaml, &mut bmh_hosts, input)
                .map_err(|e| bad(format!("{path}: {e}")))?;
            file["contents"] = json!({ "source": data_url(&rewritten) });
        }
    }
    if !input.sno {
        files.push(added_file(ASSISTED_BOOTSTRAP_MARKER, b""));
        files.push(added_file(
            NM_RESOLV_UNMANAGED,
            NM_RESOLV_UNMANAGED_CONTENT.as_bytes(),
        ));
    }
    serde_json::to_vec(&doc).map_err(|e| bad(e.to_string()))
}

/// A root-owned 0644 file that does not replace one already there.
fn added_file(path: &str, contents: &[u8]) -> Value {
    json!({
        "path": path,
        "mode": 0o644,
        "overwrite": false,
        "user": { "name": "root" },
        "contents": { "source": data_url(contents) },
    })
}

/// The installer appends its message of the day; an append to a file RHCOS already has is
/// refused by the MCO later, so write it as the whole file.
fn motd_whole(file: &mut Value) {
    let has_source = file["contents"]["source"].is_string();
    let Some(append) = file["append"].as_array().filter(|a| a.len() == 1) else {
        return;
    };
    if has_source {
        return;
    }
    let first = append[0].clone();
    file["contents"] = first;
    file["append"] = json!([]);
}

/// Hosts not yet given to a BareMetalHost manifest, by role.
struct BmhHosts<'a> {
    left: Vec<&'a GenerateHost>,
}

impl<'a> BmhHosts<'a> {
    fn new(hosts: &'a [GenerateHost]) -> Self {
        let mut left: Vec<&GenerateHost> = hosts.iter().collect();
        left.sort_by(|a, b| a.hostname.cmp(&b.hostname));
        BmhHosts { left }
    }

    /// The host named like the manifest, else the first free host of the role its name
    /// implies (the installer names them `<cluster>-master-N` when it knows no hostnames).
    fn take(&mut self, bmh_name: &str) -> Result<&'a GenerateHost, BmhError> {
        if let Some(i) = self.left.iter().position(|h| h.hostname == bmh_name) {
            return Ok(self.left.remove(i));
        }
        let role = if bmh_name.contains("-master-") {
            HostRole::Master
        } else if bmh_name.contains("-arbiter-") {
            HostRole::Arbiter
        } else {
            HostRole::Worker
        };
        let i = self
            .left
            .iter()
            .position(|h| h.role == role)
            .ok_or_else(|| BmhError::NoHostLeft {
                role,
                bmh: bmh_name.to_string(),
            })?;
        Ok(self.left.remove(i))
    }
}

/// Why a BareMetalHost manifest of the installer cannot be rewritten.
#[derive(Debug, thiserror::Error)]
enum BmhError {
    #[error("{0}")]
    Yaml(serde_yaml::Error),
    #[error("{0}")]
    Shape(&'static str),
    #[error("no registered {role:?} host left for BareMetalHost {bmh}")]
    NoHostLeft { role: HostRole, bmh: String },
    #[error("host {0} has no inventory")]
    NoInventory(String),
}

/// One BareMetalHost manifest, externally provisioned, with its hardware in the status
/// annotation, and no `status` of its own.
fn externally_provisioned_bmh(
    yaml: &[u8],
    hosts: &mut BmhHosts<'_>,
    input: &BootstrapInput<'_>,
) -> Result<Vec<u8>, BmhError> {
    let mut bmh: Value = serde_yaml::from_slice(yaml).map_err(BmhError::Yaml)?;
    let name = bmh["metadata"]["name"]
        .as_str()
        .ok_or(BmhError::Shape("BareMetalHost has no metadata.name"))?
        .to_string();
    let host = hosts.take(&name)?;
    let inventory = host
        .inventory
        .as_ref()
        .ok_or_else(|| BmhError::NoInventory(host.hostname.clone()))?;
    let status = json!({
        "operationalStatus": "",
        "hardwareProfile": "",
        "hardware": hardware_details(inventory, &host.hostname, input.machine_networks),
        "provisioning": { "state": "", "ID": "", "image": { "url": "" } },
        "poweredOn": true,
        "errorMessage": "",
        "errorCount": 0,
    });
    let obj = bmh
        .as_object_mut()
        .ok_or(BmhError::Shape("BareMetalHost is not a mapping"))?;
    obj.remove("status");
    let metadata = obj
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or(BmhError::Shape("metadata is not a mapping"))?;
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[BMH_STATUS_ANNOTATION] = json!(status.to_string());
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        return Err(BmhError::Shape("spec is not a mapping"));
    }
    spec["externallyProvisioned"] = json!(true);
    serde_yaml::to_string(&bmh)
        .map(String::into_bytes)
        .map_err(BmhError::Yaml)
}

/// metal3 `HardwareDetails` from the discovery inventory.
pub fn hardware_details(inv: &Inventory, hostname: &str, machine_networks: &[String]) -> Value {
    let networks: Vec<Cidr> = machine_networks
        .iter()
        .filter_map(|c| Cidr::parse(c))
        .collect();
    let nics: Vec<Value> = inv
        .interfaces
        .iter()
        .map(|n| {
            let family = if n.ipv4_addresses.is_empty() {
                &n.ipv6_addresses
            } else {
                &n.ipv4_addresses
            };
            json!({
                "name": n.name,
                "model": n.product,
                "mac": n.mac_address,
                "ip": nic_ip(family, &networks),
                "speedGbps": n.speed_mbps / 1024,
            })
        })
        .collect();
    let storage: Vec<Value> = inv
        .disks
        .iter()
        .map(|d| {
            json!({
                "name": if d.by_path.is_empty() { &d.path } else { &d.by_path },
                "vendor": d.vendor,
                "sizeBytes": d.size_bytes,
                "model": d.model,
                "wwn": d.wwn,
                "hctl": d.hctl,
                "serialNumber": d.serial,
                "rotational": d.drive_type == "HDD",
            })
        })
        .collect();
    json!({
        "systemVendor": {
            "manufacturer": inv.system_vendor.manufacturer,
            "productName": inv.system_vendor.product_name,
            "serialNumber": inv.system_vendor.serial_number,
        },
        "firmware": { "bios": {} },
        "ramMebibytes": inv.memory.physical_bytes / 1024 / 1024,
        "nics": nics,
        "storage": storage,
        "cpu": {
            "arch": inv.cpu.architecture,
            "model": inv.cpu.model_name,
            "clockMegahertz": inv.cpu.frequency,
            "flags": inv.cpu.flags,
            "count": inv.cpu.count,
        },
        "hostname": hostname,
    })
}

/// The first address inside a machine network, else the first address; without its prefix.
fn nic_ip(addresses: &[String], networks: &[Cidr]) -> String {
    let parsed: Vec<(std::net::IpAddr, &String)> = addresses
        .iter()
        .filter_map(|a| Cidr::parse_interface(a).map(|(ip, _)| (ip, a)))
        .collect();
    parsed
        .iter()
        .find(|(ip, _)| networks.iter().any(|n| n.contains(*ip)))
        .or(parsed.first())
        .map(|(ip, _)| ip.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::inventory::{Cpu, Disk, Interface, Memory, SystemVendor};

    fn inventory(ip: &str) -> Inventory {
        Inventory {
            interfaces: vec![Interface {
                name: "eth0".into(),
                mac_address: "52:54:00:00:00:01".into(),
                ipv4_addresses: vec!["10.0.0.9/8".into(), ip.to_string()],
                speed_mbps: 10240,
                product: "virtio".into(),
                ..Default::default()
            }],
            disks: vec![Disk {
                path: "/dev/vda".into(),
                by_path: "/dev/disk/by-path/pci-0000:00:05.0".into(),
                size_bytes: 120 << 30,
                drive_type: "HDD".into(),
                serial: "S1".into(),
                ..Default::default()
            }],
            system_vendor: SystemVendor {
                manufacturer: "Red Hat".into(),
                product_name: "KVM".into(),
                ..Default::default()
            },
            memory: Memory {
                physical_bytes: 16 << 30,
                ..Default::default()
            },
            cpu: Cpu {
                count: 8,
                frequency: 2400.0,
                architecture: "x86_64".into(),
                model_name: "Xeon".into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn host(name: &str, role: HostRole, ip: &str) -> GenerateHost {
        GenerateHost {
            id: format!("id-{name}"),
            hostname: name.into(),
            role,
            bootstrap: false,
            inventory: Some(inventory(ip)),
            machine_ip: None,
        }
    }

    fn file(path: &str, body: &str) -> Value {
        json!({ "path": path, "contents": { "source": data_url(body.as_bytes()) } })
    }

    fn files(doc: &Value) -> Vec<(String, Value)> {
        doc["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["path"].as_str().unwrap().to_string(), f.clone()))
            .collect()
    }

    fn text(f: &Value) -> String {
        String::from_utf8(decode_data_url(f["contents"]["source"].as_str().unwrap()).unwrap())
            .unwrap()
    }

    const BMH: &str = "apiVersion: metal3.io/v1alpha1\nkind: BareMetalHost\nmetadata:\n  name: master-1\n  namespace: openshift-machine-api\nspec:\n  bootMACAddress: 52:54:00:00:00:01\n  online: true\nstatus:\n  hardwareProfile: unknown\n";

    #[test]
    fn multi_node_gets_the_marker_and_externally_provisioned_hosts() {
        let ign = json!({
            "ignition": { "version": "3.2.0" },
            "storage": { "files": [
                file(INSTALLER_STATIC_CONNECTION, "[connection]"),
                file("/opt/openshift/openshift/99_openshift-cluster-api_hosts-0.yaml", BMH),
                { "path": "/etc/motd", "append": [{ "source": data_url(b"hello") }] },
            ]},
        });
        let hosts = [
            host("master-0", HostRole::Master, "192.168.111.20/24"),
            host("master-1", HostRole::Master, "192.168.111.21/24"),
        ];
        let nets = ["192.168.111.0/24".to_string()];
        let out = post_process_bootstrap(
            ign.to_string().as_bytes(),
            &BootstrapInput {
                sno: false,
                hosts: &hosts,
                machine_networks: &nets,
            },
        )
        .unwrap();
        let doc: Value = serde_json::from_slice(&out).unwrap();
        let files = files(&doc);
        let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/opt/openshift/openshift/99_openshift-cluster-api_hosts-0.yaml",
                "/etc/motd",
                ASSISTED_BOOTSTRAP_MARKER,
                NM_RESOLV_UNMANAGED,
            ]
        );
        assert_eq!(text(&files[1].1), "hello");
        assert_eq!(files[1].1["append"], json!([]));
        assert_eq!(text(&files[2].1), "");
        assert_eq!(files[2].1["mode"], 420);
        assert_eq!(text(&files[3].1), "\n[main]\nrc-manager=unmanaged\n");
        let bmh: Value = serde_yaml::from_str(&text(&files[0].1)).unwrap();
        assert_eq!(bmh["spec"]["externallyProvisioned"], true);
        assert_eq!(bmh["spec"]["online"], true);
        assert!(bmh.get("status").is_none());
        let status: Value = serde_json::from_str(
            bmh["metadata"]["annotations"][BMH_STATUS_ANNOTATION]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(status["poweredOn"], true);
        let hw = &status["hardware"];
        assert_eq!(hw["hostname"], "master-1");
        assert_eq!(hw["ramMebibytes"], 16384);
        assert_eq!(hw["cpu"]["count"], 8);
        // The address in the machine network, not the first one.
        assert_eq!(hw["nics"][0]["ip"], "192.168.111.21");
        assert_eq!(hw["nics"][0]["speedGbps"], 10);
        assert_eq!(hw["storage"][0]["rotational"], true);
        assert_eq!(
            hw["storage"][0]["name"],
            "/dev/disk/by-path/pci-0000:00:05.0"
        );
    }

    #[test]
    fn sno_gets_no_marker_and_unknown_bmh_names_take_a_host_of_their_role() {
        let ign = json!({ "ignition": { "version": "3.2.0" }, "storage": { "files": [] } });
        let out = post_process_bootstrap(
            ign.to_string().as_bytes(),
            &BootstrapInput {
                sno: true,
                hosts: &[],
                machine_networks: &[],
            },
        )
        .unwrap();
        let doc: Value = serde_json::from_slice(&out).unwrap();
        assert!(files(&doc).is_empty());

        let hosts = [
            host("w0", HostRole::Worker, "10.1.0.5/16"),
            host("m0", HostRole::Master, "10.1.0.4/16"),
        ];
        let mut left = BmhHosts::new(&hosts);
        assert_eq!(left.take("ocp-master-0").unwrap().hostname, "m0");
        assert!(
            left.take("ocp-master-1")
                .unwrap_err()
                .to_string()
                .contains("no registered")
        );
        assert_eq!(left.take("ocp-worker-0").unwrap().hostname, "w0");
    }

    #[test]
    fn broken_input_is_a_bad_output_error() {
        let input = BootstrapInput {
            sno: false,
            hosts: &[],
            machine_networks: &[],
        };
        let err = post_process_bootstrap(b"[]", &input).unwrap_err();
        assert!(err.to_string().contains("not an ignition config"), "{err}");
        let ign = json!({ "storage": { "files": [
            file("/opt/openshift/openshift/99_openshift-cluster-api_hosts-0.yaml", BMH),
        ]}});
        let err = post_process_bootstrap(ign.to_string().as_bytes(), &input).unwrap_err();
        assert!(err.to_string().contains("no registered"), "{err}");
    }
}

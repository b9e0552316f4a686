//! The desired Agent of a matched Machine. Pure: no client, no clock.
//!
//! CAPOA's Agent controller sets role, approval, installer arguments and the install-time
//! ignition, finding the Machine through a per-Machine InfraEnv. Here Agents are matched by boot
//! MAC (`matching.rs`), and the Agent also gets the hostname, node labels (with
//! `metal3.io/uuid`, which CAPM3 needs to set the providerID), installation disk and kubelet
//! provider ID that CAPOA left to config-drive scripts on the installed host. The install-time
//! ignition is built by `install_ignition.rs`; whether the Agent is approved comes from
//! [`crate::controller::hold`].

use std::collections::BTreeMap;

use assisted_api::agent::{Agent, AgentSpec, HostDisk, HostRole};
use assisted_api::infraenv::ClusterReference;
use external_types::metal3_io::BareMetalHost;
use external_types::metal3_io::baremetalhost::BareMetalHostRootDeviceHints;
use kube::ResourceExt;

use manager::names::{is_label_value, readable_label_value};
use provider_api::bootstrap::api::{KernelArgumentOperation, OpenshiftAssistedConfigSpec};

use crate::controller::hold::Hold;
use crate::controller::install_ignition::{InstallIgnitionError, install_ignition};
use crate::controller::labels::{
    BAREMETALHOST_ANNOTATION, CLUSTER_NAME_LABEL, MACHINE_ANNOTATION, MACHINE_NAME_LABEL,
    METAL3_UUID_LABEL,
};
use crate::controller::variables::{
    ResolveError, config_drive_variables, resolve_variables, unquote,
};

/// Everything the desired Agent depends on.
#[derive(Clone, Debug)]
pub struct AgentInputs<'a> {
    /// The Agent as read (its inventory picks the installation disk; its approval is kept).
    pub agent: &'a Agent,
    pub machine_name: &'a str,
    pub machine_namespace: &'a str,
    /// The Machine has the `cluster.x-k8s.io/control-plane` label.
    pub control_plane: bool,
    pub cluster_name: &'a str,
    pub cluster_deployment: &'a ClusterReference,
    /// The Machine's OpenshiftAssistedConfig spec.
    pub config: &'a OpenshiftAssistedConfigSpec,
    /// The annotations of that OpenshiftAssistedConfig (the `ignition-override` one is read).
    pub config_annotations: &'a BTreeMap<String, String>,
    /// The BareMetalHost the Machine's Metal3Machine consumes.
    pub host: &'a BareMetalHost,
    /// Keys of the rendered Metal3Data metaData (as in `meta_data.json`); empty without a
    /// Metal3DataTemplate.
    pub extra_metadata: &'a BTreeMap<String, String>,
    pub hold: &'a Hold,
}

/// The fields of the Agent this controller owns (applied with server-side apply).
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredAgent {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub spec: AgentSpec,
}

/// Why an Agent cannot be configured for its Machine; it stays unapproved until the input
/// changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("nodeRegistration.kubeletExtraLabels entry {entry:?} is not key=value")]
    MalformedLabel { entry: String },
    #[error(
        "nodeRegistration.kubeletExtraLabels entry {entry:?} resolves to the invalid label value {value:?}"
    )]
    InvalidLabelValue { entry: String, value: String },
    #[error("BareMetalHost {host} has no uid (it must be read from the API server)")]
    HostWithoutUid { host: String },
    #[error(
        "BareMetalHost {host} has rootDeviceHints, and Agent {agent} has reported no disks yet"
    )]
    InventoryPending { host: String, agent: String },
    #[error("no disk of Agent {agent} matches the rootDeviceHints of BareMetalHost {host}")]
    NoDiskMatchesHints { host: String, agent: String },
    /// The provider ID cannot go into kubelet's drop-in, or the `ignition-override` annotation
    /// is not a usable Ignition config.
    #[error(transparent)]
    InstallIgnition(#[from] InstallIgnitionError),
}

impl AgentError {
    /// The condition/event reason (CamelCase).
    pub fn reason(&self) -> &'static str {
        match self {
            AgentError::Resolve(_) => "UnresolvedNodeRegistration",
            AgentError::MalformedLabel { .. } | AgentError::InvalidLabelValue { .. } => {
                "InvalidKubeletExtraLabels"
            }
            AgentError::HostWithoutUid { .. } => "BareMetalHostWithoutUID",
            AgentError::InventoryPending { .. } => "WaitingForInventory",
            AgentError::NoDiskMatchesHints { .. } => "NoDiskMatchesRootDeviceHints",
            AgentError::InstallIgnition(InstallIgnitionError::InvalidProviderId { .. }) => {
                "InvalidProviderID"
            }
            AgentError::InstallIgnition(InstallIgnitionError::InvalidOverride(_)) => {
                "InvalidIgnitionOverride"
            }
        }
    }
}

/// The Agent spec, labels and annotations for the Agent matched to a Machine.
///
/// - role: `master` for control-plane Machines, else `worker` (as CAPOA).
/// - hostname: `nodeRegistration.name` resolved against the host's config drive, else the
///   Machine's name.
/// - nodeLabels: `kubeletExtraLabels` resolved the same way, plus `metal3.io/uuid=<host UID>`.
/// - installation disk: the inventory disk the host's `rootDeviceHints` select.
/// - installerArgs: every kernel argument as `--<operation>-karg <value>` (as CAPOA).
/// - ignitionConfigOverrides: the bootstrap-command units, the kubelet drop-in with
///   `nodeRegistration.providerID` (resolved like the name) and the `ignition-override`
///   annotation, see [`install_ignition`]; unset when the config needs none of them.
/// - approved: when not held; an Agent already approved stays approved, because withdrawing
///   approval from a host that may be installing would strand it.
pub fn desired_agent(inputs: &AgentInputs<'_>) -> Result<DesiredAgent, AgentError> {
    let host = inputs.host;
    let host_name = format!(
        "{}/{}",
        host.namespace().unwrap_or_default(),
        host.name_any()
    );
    let uid = host
        .uid()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| AgentError::HostWithoutUid {
            host: host_name.clone(),
        })?;
    let vars = config_drive_variables(host, inputs.extra_metadata);
    let registration = inputs.config.node_registration.clone().unwrap_or_default();

    let hostname = match registration.name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => resolve_variables("nodeRegistration.name", name, &vars, &host_name)?,
        None => inputs.machine_name.to_string(),
    };

    let node_labels = node_labels(&registration.kubelet_extra_labels, &vars, &host_name, uid)?;

    // Resolved here like the name and labels (CAPOA resolves it on the host).
    let provider_id = match registration
        .provider_id
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        Some(id) => Some(resolve_variables(
            "nodeRegistration.providerID",
            id,
            &vars,
            &host_name,
        )?),
        None => None,
    };
    // Before the disk: a config error is reported rather than a wait for the inventory.
    let ignition_config_overrides = install_ignition(
        inputs.config,
        inputs.config_annotations,
        provider_id.as_deref(),
    )?;
    let installation_disk_id = installation_disk(inputs.agent, host, &host_name)?;

    let (labels, annotations) = agent_metadata(inputs, host_name);
    let spec = AgentSpec {
        cluster_deployment_name: Some(inputs.cluster_deployment.clone()),
        role: if inputs.control_plane {
            HostRole::Master
        } else {
            HostRole::Worker
        },
        hostname: Some(hostname),
        approved: inputs.agent.spec.approved || inputs.hold.is_proceed(),
        installation_disk_id,
        installer_args: installer_args(inputs.config),
        ignition_config_overrides,
        node_labels,
        ..AgentSpec::default()
    };
    Ok(DesiredAgent {
        labels,
        annotations,
        spec,
    })
}

/// The Agent's labels (the cluster and Machine, in label-value form) and annotations (the
/// Machine and BareMetalHost in full).
fn agent_metadata(
    inputs: &AgentInputs<'_>,
    host_name: String,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let labels = BTreeMap::from([
        (
            CLUSTER_NAME_LABEL.to_string(),
            readable_label_value(inputs.cluster_name),
        ),
        (
            MACHINE_NAME_LABEL.to_string(),
            readable_label_value(inputs.machine_name),
        ),
    ]);
    let annotations = BTreeMap::from([
        (
            MACHINE_ANNOTATION.to_string(),
            format!("{}/{}", inputs.machine_namespace, inputs.machine_name),
        ),
        (BAREMETALHOST_ANNOTATION.to_string(), host_name),
    ]);
    (labels, annotations)
}

/// `kubeletExtraLabels` (`key=value`, the value resolved against the host's config drive), plus
/// `metal3.io/uuid=<host UID>`.
fn node_labels(
    entries: &[String],
    vars: &BTreeMap<String, String>,
    host_name: &str,
    uid: String,
) -> Result<BTreeMap<String, String>, AgentError> {
    let mut node_labels = BTreeMap::new();
    for entry in entries {
        let Some((key, value)) = entry.split_once('=') else {
            return Err(AgentError::MalformedLabel {
                entry: entry.clone(),
            });
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(AgentError::MalformedLabel {
                entry: entry.clone(),
            });
        }
        let value = resolve_variables(
            "nodeRegistration.kubeletExtraLabels",
            unquote(value.trim()),
            vars,
            host_name,
        )?;
        if !is_label_value(&value) {
            return Err(AgentError::InvalidLabelValue {
                entry: entry.clone(),
                value,
            });
        }
        node_labels.insert(key.to_string(), value);
    }
    // Always, whatever the config says: CAPM3 finds the Node by this label to set the
    // providerID, and CAPI needs the providerID for the nodeRef.
    node_labels.insert(METAL3_UUID_LABEL.to_string(), uid);
    Ok(node_labels)
}

/// The inventory disk the host's `rootDeviceHints` select; None without hints.
fn installation_disk(
    agent: &Agent,
    host: &BareMetalHost,
    host_name: &str,
) -> Result<Option<String>, AgentError> {
    let Some(hints) = host
        .spec
        .root_device_hints
        .as_ref()
        .filter(|h| !hints_are_empty(h))
    else {
        return Ok(None);
    };
    let agent_name = agent.name_any();
    let disks = agent
        .status
        .as_ref()
        .map(|s| s.inventory.disks.as_slice())
        .unwrap_or_default();
    if disks.is_empty() {
        return Err(AgentError::InventoryPending {
            host: host_name.to_string(),
            agent: agent_name,
        });
    }
    let disk = disks
        .iter()
        .find(|d| disk_matches(d, hints))
        .ok_or_else(|| AgentError::NoDiskMatchesHints {
            host: host_name.to_string(),
            agent: agent_name,
        })?;
    Ok(Some(disk_key(disk).to_string()))
}

/// CAPOA's installer arguments: a JSON array `["--append-karg", "v", "--delete-karg", "w"]`;
/// None without kernel arguments. An unset operation means append (the CRD's only sensible
/// default).
pub fn installer_args(config: &OpenshiftAssistedConfigSpec) -> Option<String> {
    let args: Vec<String> = config
        .kernel_arguments
        .iter()
        .filter(|k| !k.value.is_empty())
        .flat_map(|k| {
            let op = match k.operation {
                None | Some(KernelArgumentOperation::Append) => "--append-karg",
                Some(KernelArgumentOperation::Replace) => "--replace-karg",
                Some(KernelArgumentOperation::Delete) => "--delete-karg",
            };
            [op.to_string(), k.value.clone()]
        })
        .collect();
    if args.is_empty() {
        return None;
    }
    // Serialising a Vec<String> cannot fail; the fallback is never used.
    serde_json::to_string(&args).ok()
}

fn hints_are_empty(h: &BareMetalHostRootDeviceHints) -> bool {
    *h == BareMetalHostRootDeviceHints::default()
}

/// The id assisted-core selects a disk by (its `id`, else its stable path).
fn disk_key(d: &HostDisk) -> &str {
    [&d.id, &d.by_id, &d.path, &d.by_path]
        .into_iter()
        .find(|s| !s.is_empty())
        .map(String::as_str)
        .unwrap_or_default()
}

/// Ironic's root-device-hint semantics over the Agent's inventory: exact match for device name
/// (the device path or its by-path link), HCTL, serial and WWN; substring for model and vendor;
/// size in GiB; rotational = an HDD. `wwnVendorExtension` is not in the inventory and is ignored.
fn disk_matches(d: &HostDisk, h: &BareMetalHostRootDeviceHints) -> bool {
    let exact = |hint: &Option<String>, actual: &[&str]| {
        hint.as_deref()
            .is_none_or(|h| actual.iter().any(|a| !a.is_empty() && *a == h))
    };
    let contains =
        |hint: &Option<String>, actual: &str| hint.as_deref().is_none_or(|h| actual.contains(h));
    exact(&h.device_name, &[&d.path, &d.by_path, &d.by_id])
        && exact(&h.hctl, &[&d.hctl])
        && exact(&h.serial_number, &[&d.serial])
        && exact(&h.wwn, &[&d.wwn])
        && exact(&h.wwn_with_extension, &[&d.wwn])
        && contains(&h.model, &d.model)
        && contains(&h.vendor, &d.vendor)
        && h.min_size_gigabytes
            .is_none_or(|gib| d.size_bytes >= gib.saturating_mul(1 << 30))
        && h.rotational
            .is_none_or(|r| r == d.drive_type.eq_ignore_ascii_case("HDD"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::test_fixtures::{held_install, host};

    // -- desired agent ----------------------------------------------------------------------

    /// An Agent whose `status` is `yaml_status` (flow or block YAML).
    fn agent(yaml_status: &str) -> Agent {
        let status: String = yaml_status.lines().map(|l| format!("  {l}\n")).collect();
        serde_yaml::from_str(&format!(
            "apiVersion: agent-install.openshift.io/v1beta1\nkind: Agent\nmetadata: {{name: 6f0e1d2c, namespace: ns}}\nspec: {{approved: false}}\nstatus:\n{status}"
        ))
        .unwrap()
    }

    fn spec(yaml: &str) -> OpenshiftAssistedConfigSpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    struct Fixture {
        agent: Agent,
        host: BareMetalHost,
        config: OpenshiftAssistedConfigSpec,
        config_annotations: BTreeMap<String, String>,
        cd: ClusterReference,
        extra: BTreeMap<String, String>,
        hold: Hold,
        control_plane: bool,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                agent: agent("{}"),
                host: host(""),
                config: spec("{}"),
                config_annotations: BTreeMap::new(),
                cd: ClusterReference {
                    name: "c1".into(),
                    namespace: "ns".into(),
                },
                extra: BTreeMap::new(),
                hold: Hold::Proceed,
                control_plane: false,
            }
        }

        fn run(&self) -> Result<DesiredAgent, AgentError> {
            desired_agent(&AgentInputs {
                agent: &self.agent,
                machine_name: "c1-workers-abc12",
                machine_namespace: "ns",
                control_plane: self.control_plane,
                cluster_name: "c1",
                cluster_deployment: &self.cd,
                config: &self.config,
                config_annotations: &self.config_annotations,
                host: &self.host,
                extra_metadata: &self.extra,
                hold: &self.hold,
            })
        }
    }

    #[test]
    fn worker_defaults() {
        let d = Fixture::new().run().unwrap();
        let json = serde_json::to_value(&d.spec).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "clusterDeploymentName": {"name": "c1", "namespace": "ns"},
                "role": "worker",
                "hostname": "c1-workers-abc12",
                "approved": true,
                "nodeLabels": {"metal3.io/uuid": "0b1c2d3e-aaaa-bbbb-cccc-000000000000"}
            })
        );
        assert_eq!(
            d.labels,
            BTreeMap::from([
                ("cluster.x-k8s.io/cluster-name".into(), "c1".into()),
                (
                    "bootstrap.cluster.x-k8s.io/machine-name".into(),
                    "c1-workers-abc12".into()
                ),
            ])
        );
        assert_eq!(d.annotations[MACHINE_ANNOTATION], "ns/c1-workers-abc12");
        assert_eq!(d.annotations[BAREMETALHOST_ANNOTATION], "ns/host-0");
    }

    #[test]
    fn control_plane_is_master_with_resolved_name_labels_and_kargs() {
        let mut f = Fixture::new();
        f.control_plane = true;
        f.config = spec(
            r#"
nodeRegistration:
  name: ${METADATA_NAME}
  kubeletExtraLabels:
  - metal3.io/uuid=$METADATA_UUID
  - 'topology.kubernetes.io/zone="${METADATA_LOCAL_HOSTNAME}"'
  - static=yes
kernelArguments:
- {operation: append, value: console=ttyS0}
- {operation: delete, value: quiet}
- {operation: replace, value: "mitigations=auto=off"}
"#,
        );
        let d = f.run().unwrap();
        assert_eq!(d.spec.role, HostRole::Master);
        assert_eq!(d.spec.hostname.as_deref(), Some("host-0"));
        assert_eq!(
            d.spec.node_labels,
            BTreeMap::from([
                (
                    "metal3.io/uuid".into(),
                    "0b1c2d3e-aaaa-bbbb-cccc-000000000000".into()
                ),
                ("static".into(), "yes".into()),
                ("topology.kubernetes.io/zone".into(), "host-0".into()),
            ])
        );
        assert_eq!(
            d.spec.installer_args.as_deref(),
            Some(
                r#"["--append-karg","console=ttyS0","--delete-karg","quiet","--replace-karg","mitigations=auto=off"]"#
            )
        );
    }

    #[test]
    fn metal3_uuid_label_wins_over_the_config() {
        let mut f = Fixture::new();
        f.config = spec("nodeRegistration: {kubeletExtraLabels: [metal3.io/uuid=other]}");
        let d = f.run().unwrap();
        assert_eq!(
            d.spec.node_labels["metal3.io/uuid"],
            "0b1c2d3e-aaaa-bbbb-cccc-000000000000"
        );
    }

    #[test]
    fn unknown_variable_is_an_error_naming_it() {
        let mut f = Fixture::new();
        f.config = spec("nodeRegistration: {name: $METADATA_HOSTNAME}");
        let err = f.run().unwrap_err();
        assert!(err.to_string().contains("METADATA_HOSTNAME"), "{err}");
        assert_eq!(err.reason(), "UnresolvedNodeRegistration");
        f.extra = BTreeMap::from([("hostname".into(), "n1".into())]);
        assert_eq!(f.run().unwrap().spec.hostname.as_deref(), Some("n1"));
    }

    #[test]
    fn bad_labels_are_errors() {
        let mut f = Fixture::new();
        f.config = spec("nodeRegistration: {kubeletExtraLabels: [novalue]}");
        assert!(matches!(f.run(), Err(AgentError::MalformedLabel { .. })));
        f.config = spec("nodeRegistration: {kubeletExtraLabels: ['a=has space']}");
        assert!(matches!(f.run(), Err(AgentError::InvalidLabelValue { .. })));
    }

    #[test]
    fn host_without_uid_is_an_error() {
        let mut f = Fixture::new();
        f.host.metadata.uid = None;
        assert!(matches!(f.run(), Err(AgentError::HostWithoutUid { .. })));
    }

    #[test]
    fn held_agent_is_configured_but_not_approved_and_approval_is_sticky() {
        let mut f = Fixture::new();
        f.hold = held_install("installing");
        let d = f.run().unwrap();
        assert!(!d.spec.approved);
        assert_eq!(d.spec.role, HostRole::Worker);
        f.agent.spec.approved = true;
        assert!(f.run().unwrap().spec.approved);
    }

    const DISKS: &str = r#"
inventory:
  disks:
  - {id: /dev/disk/by-id/wwn-0x1, byID: /dev/disk/by-id/wwn-0x1, path: /dev/sda, byPath: /dev/disk/by-path/pci-0-scsi-0, hctl: "0:0:0:0", model: "QEMU HARDDISK", vendor: ATA, serial: s-a, wwn: "0x1", sizeBytes: 21474836480, driveType: HDD}
  - {id: /dev/disk/by-id/wwn-0x2, byID: /dev/disk/by-id/wwn-0x2, path: /dev/sdb, hctl: "1:0:0:0", model: "Samsung SSD 980", vendor: Samsung, serial: s-b, wwn: "0x2", sizeBytes: 536870912000, driveType: SSD}
  - {path: /dev/vda, sizeBytes: 107374182400, driveType: HDD}
"#;

    #[test]
    fn installation_disk_from_root_device_hints() {
        let cases = [
            ("{deviceName: /dev/sdb}", Some("/dev/disk/by-id/wwn-0x2")),
            (
                "{deviceName: /dev/disk/by-path/pci-0-scsi-0}",
                Some("/dev/disk/by-id/wwn-0x1"),
            ),
            ("{deviceName: /dev/vda}", Some("/dev/vda")),
            ("{hctl: '1:0:0:0'}", Some("/dev/disk/by-id/wwn-0x2")),
            ("{model: Samsung}", Some("/dev/disk/by-id/wwn-0x2")),
            ("{vendor: AT}", Some("/dev/disk/by-id/wwn-0x1")),
            ("{serialNumber: s-b}", Some("/dev/disk/by-id/wwn-0x2")),
            ("{wwn: '0x1'}", Some("/dev/disk/by-id/wwn-0x1")),
            ("{minSizeGigabytes: 100}", Some("/dev/disk/by-id/wwn-0x2")),
            ("{rotational: false}", Some("/dev/disk/by-id/wwn-0x2")),
            ("{rotational: true, minSizeGigabytes: 50}", Some("/dev/vda")),
            ("{}", None),
        ];
        for (hints, want) in cases {
            let mut f = Fixture::new();
            f.agent = agent(DISKS);
            f.host = host(&format!("rootDeviceHints: {hints}"));
            let d = f.run().unwrap_or_else(|e| panic!("{hints}: {e}"));
            assert_eq!(d.spec.installation_disk_id.as_deref(), want, "{hints}");
        }
    }

    #[test]
    fn root_device_hints_need_a_matching_reported_disk() {
        let mut f = Fixture::new();
        f.host = host("rootDeviceHints: {deviceName: /dev/nvme0n1}");
        let err = f.run().unwrap_err();
        assert_eq!(err.reason(), "WaitingForInventory");
        f.agent = agent(DISKS);
        let err = f.run().unwrap_err();
        assert!(
            matches!(err, AgentError::NoDiskMatchesHints { .. }),
            "{err}"
        );
    }

    #[test]
    fn no_kernel_arguments_no_installer_args() {
        assert_eq!(installer_args(&spec("{}")), None);
        assert_eq!(
            installer_args(&spec("kernelArguments: [{value: nomodeset}]")).as_deref(),
            Some(r#"["--append-karg","nomodeset"]"#)
        );
    }

    #[test]
    fn long_machine_names_are_hashed_in_labels_but_kept_in_annotations() {
        let f = Fixture::new();
        let long = "m".repeat(100);
        let d = desired_agent(&AgentInputs {
            agent: &f.agent,
            machine_name: &long,
            machine_namespace: "ns",
            control_plane: false,
            cluster_name: "c1",
            cluster_deployment: &f.cd,
            config: &f.config,
            config_annotations: &f.config_annotations,
            host: &f.host,
            extra_metadata: &f.extra,
            hold: &f.hold,
        })
        .unwrap();
        assert!(d.labels[MACHINE_NAME_LABEL].len() <= 63);
        assert_eq!(d.annotations[MACHINE_ANNOTATION], format!("ns/{long}"));
        assert_eq!(d.spec.hostname.as_deref(), Some(long.as_str()));
        assert_eq!(d.spec.ignition_config_overrides, None);
    }

    // -- install-time ignition --------------------------------------------------------------

    /// The text of `path` in the Agent's ignitionConfigOverrides (its data URL decoded).
    fn override_file(d: &DesiredAgent, path: &str) -> String {
        let ignition: serde_json::Value =
            serde_json::from_str(d.spec.ignition_config_overrides.as_deref().unwrap()).unwrap();
        let source = ignition["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("no {path} in {ignition}"))["contents"]["source"]
            .as_str()
            .unwrap()
            .to_string();
        let encoded = source
            .strip_prefix("data:text/plain;charset=utf-8;base64,")
            .unwrap();
        // Standard base64, decoded the long way so the test does not share the encoder's code.
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let bits: String = encoded
            .bytes()
            .filter(|b| *b != b'=')
            .map(|b| format!("{:06b}", ALPHABET.iter().position(|a| *a == b).unwrap()))
            .collect();
        let bytes: Vec<u8> = bits
            .as_bytes()
            .chunks_exact(8)
            .map(|byte| u8::from_str_radix(std::str::from_utf8(byte).unwrap(), 2).unwrap())
            .collect();
        String::from_utf8(bytes).unwrap()
    }

    const DROP_IN: &str = "/etc/systemd/system/kubelet.service.d/20-provider-id.conf";

    #[test]
    fn static_provider_id_reaches_kubelet() {
        let mut f = Fixture::new();
        f.config = spec("nodeRegistration: {providerID: 'metal3://static-id'}");
        let d = f.run().unwrap();
        assert!(
            override_file(&d, DROP_IN)
                .contains("Environment=\"KUBELET_PROVIDERID=metal3://static-id\"\n")
        );
    }

    #[test]
    fn provider_id_variables_are_resolved_from_the_config_drive() {
        let mut f = Fixture::new();
        f.config = spec("nodeRegistration: {providerID: 'metal3://${METADATA_UUID}'}");
        let d = f.run().unwrap();
        assert!(override_file(&d, DROP_IN).contains(
            "Environment=\"KUBELET_PROVIDERID=metal3://0b1c2d3e-aaaa-bbbb-cccc-000000000000\"\n"
        ));

        f.config = spec("nodeRegistration: {providerID: $METADATA_NOPE}");
        let err = f.run().unwrap_err();
        assert_eq!(err.reason(), "UnresolvedNodeRegistration");
        assert!(
            err.to_string().contains("nodeRegistration.providerID"),
            "{err}"
        );
    }

    #[test]
    fn a_provider_id_that_would_break_the_drop_in_is_an_error() {
        let mut f = Fixture::new();
        f.extra = BTreeMap::from([("pid".into(), "a\"b".into())]);
        f.config = spec("nodeRegistration: {providerID: $METADATA_PID}");
        let err = f.run().unwrap_err();
        assert_eq!(err.reason(), "InvalidProviderID");
        assert!(
            err.to_string().contains("nodeRegistration.providerID"),
            "{err}"
        );
    }

    #[test]
    fn bootstrap_commands_and_the_annotation_reach_ignition_config_overrides() {
        let mut f = Fixture::new();
        f.config = spec("preBootstrapCommands: [echo hello]");
        let d = f.run().unwrap();
        let script = override_file(&d, "/usr/local/bin/capoa-pre-bootstrap.sh");
        assert!(script.contains("\necho hello\n"), "{script}");

        f.config_annotations = BTreeMap::from([(
            provider_api::bootstrap::api::IGNITION_OVERRIDE_ANNOTATION.to_string(),
            r#"{"ignition": {"version": "3.2.0"}}"#.to_string(),
        )]);
        let d = f.run().unwrap();
        let ignition: serde_json::Value =
            serde_json::from_str(d.spec.ignition_config_overrides.as_deref().unwrap()).unwrap();
        assert_eq!(ignition["ignition"]["version"], "3.2.0");
    }

    #[test]
    fn an_unusable_ignition_override_is_an_error() {
        let mut f = Fixture::new();
        f.config_annotations = BTreeMap::from([(
            provider_api::bootstrap::api::IGNITION_OVERRIDE_ANNOTATION.to_string(),
            r#"{"ignition": {"version": "2.2.0"}}"#.to_string(),
        )]);
        let err = f.run().unwrap_err();
        assert_eq!(err.reason(), "InvalidIgnitionOverride");
        assert!(
            err.to_string()
                .contains(provider_api::bootstrap::api::IGNITION_OVERRIDE_ANNOTATION),
            "{err}"
        );
    }
}

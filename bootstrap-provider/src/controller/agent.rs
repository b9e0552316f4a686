//! The desired Agent of a matched Machine, and the day-1/day-2 hold. Pure: no client, no clock.
//!
//! CAPOA's Agent controller sets role, approval, installer arguments and the install-time
//! ignition, finding the Machine through a per-Machine InfraEnv. Here Agents are matched by boot
//! MAC (`matching.rs`), and the Agent also gets the hostname, node labels (with
//! `metal3.io/uuid`, which CAPM3 needs to set the providerID), installation disk and kubelet
//! provider ID that CAPOA left to config-drive scripts on the installed host. The install-time
//! ignition is built by `install_ignition.rs`.

use std::collections::BTreeMap;

use assisted_api::AgentClusterInstall;
use assisted_api::agent::{Agent, AgentSpec, HostDisk, HostRole};
use assisted_api::infraenv::ClusterReference;
use external_types::metal3_io::BareMetalHost;
use external_types::metal3_io::baremetalhost::BareMetalHostRootDeviceHints;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use manager::names::{is_label_value, readable_label_value};
use provider_api::bootstrap::api::{KernelArgumentOperation, OpenshiftAssistedConfigSpec};

use super::infraenv::CLUSTER_NAME_LABEL;
use super::install_ignition::{InstallIgnitionError, install_ignition};

/// On the Agent: the Machine it belongs to, in label-value form (hashed when longer than 63).
pub const MACHINE_NAME_LABEL: &str = "bootstrap.cluster.x-k8s.io/machine-name";
/// On the Agent: `<namespace>/<name>` of the Machine, in full.
pub const MACHINE_ANNOTATION: &str = "bootstrap.cluster.x-k8s.io/machine";
/// On the Agent: `<namespace>/<name>` of the BareMetalHost it runs on.
pub const BAREMETALHOST_ANNOTATION: &str = "bootstrap.cluster.x-k8s.io/baremetalhost";
/// The node label CAPM3 finds the Node by to set its providerID (value: the BareMetalHost UID).
pub const METAL3_UUID_LABEL: &str = "metal3.io/uuid";

// ---------------------------------------------------------------------------------------------
// Day-1 / day-2 hold
// ---------------------------------------------------------------------------------------------

/// A worker approved in one of these states is part of day-1. Unlike CAPOA's gate, `ready` is
/// included: with the masters ready the cluster can be `ready` while it waits for the workers
/// it counts, and holding them there would stall the install.
pub use assisted_api::agentclusterinstall::{ADDING_HOSTS_STATE, PRE_INSTALL_STATES};

/// Whether a Machine's Agent may be approved (and its data Secret created) now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hold {
    Proceed,
    Held(HoldReason),
}

impl Hold {
    pub fn is_proceed(&self) -> bool {
        matches!(self, Hold::Proceed)
    }
}

/// Why a worker waits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HoldReason {
    /// The day-1 install is running (or finished, or failed) and the cluster does not accept
    /// day-2 hosts yet.
    #[error(
        "the cluster's day-1 install is in progress (state {state:?}); this worker joins as a day-2 host once the cluster reaches adding-hosts"
    )]
    InstallInProgress { state: String },
    /// The Machine appeared after day-1 started, yet the cluster reports a pre-install state
    /// (a reset install, or a stale read). Joining a restarted day-1 would change the install the
    /// user started, so it stays a day-2 host.
    #[error(
        "this worker's Machine was created after the day-1 install started (cluster state {state:?}); it joins as a day-2 host once the cluster reaches adding-hosts"
    )]
    LateForDay1 { state: String },
}

/// One row of the hold decision: a name and why it is so.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub name: &'static str,
    pub why: &'static str,
}

/// The hold decision table, in evaluation order.
pub static HOLD_RULES: &[Rule] = &[
    Rule {
        name: "control-plane-never-held",
        why: "day-1 cannot start without every master",
    },
    Rule {
        name: "worker-day2",
        why: "an installed cluster in adding-hosts installs new hosts as day-2",
    },
    Rule {
        name: "late-worker-waits-for-day2",
        why: "a Machine created after day-1 started never joins day-1",
    },
    Rule {
        name: "worker-day1",
        why: "before the install starts, workers join day-1",
    },
    Rule {
        name: "worker-waits-for-install",
        why: "during (or after) day-1, workers wait for adding-hosts",
    },
];

/// Whether the Machine's Agent may go ahead, from the AgentClusterInstall's
/// `status.debugInfo.state` and whether the Machine was created after day-1 started.
///
/// Evaluated until the Agent is approved; approval is never withdrawn (see [`desired_agent`]).
pub fn hold(
    is_control_plane: bool,
    aci_state: &str,
    machine_created_after_install_started: bool,
) -> Hold {
    decide_hold(
        is_control_plane,
        aci_state,
        machine_created_after_install_started,
    )
    .1
}

fn decide_hold(control_plane: bool, state: &str, late: bool) -> (&'static str, Hold) {
    let pre_install = PRE_INSTALL_STATES.contains(&state);
    if control_plane {
        ("control-plane-never-held", Hold::Proceed)
    } else if state == ADDING_HOSTS_STATE {
        ("worker-day2", Hold::Proceed)
    } else if late && pre_install {
        (
            "late-worker-waits-for-day2",
            Hold::Held(HoldReason::LateForDay1 {
                state: state.to_string(),
            }),
        )
    } else if pre_install {
        ("worker-day1", Hold::Proceed)
    } else {
        (
            "worker-waits-for-install",
            Hold::Held(HoldReason::InstallInProgress {
                state: state.to_string(),
            }),
        )
    }
}

/// The AgentClusterInstall condition whose `lastTransitionTime` tells when day-1 started.
pub const INSTALL_STARTED_CONDITION: &str = "RequirementsMet";

/// The AgentClusterInstall's `status.debugInfo.state`; empty when it has none (or there is no
/// AgentClusterInstall), which counts as before the install.
pub fn install_state(aci: Option<&AgentClusterInstall>) -> String {
    aci.and_then(|a| a.status.as_ref())
        .and_then(|s| s.debug_info.state.clone())
        .unwrap_or_default()
}

/// When the day-1 install started, as the AgentClusterInstall tells it; None when it cannot.
///
/// The signal is the `RequirementsMet` condition while it is True. The assisted core (as
/// assisted-service) turns it True in the pass that starts the install (reason `ClusterIsReady`:
/// the cluster is ready, every agent approved and synced, nothing holds it) and keeps it True
/// (`ClusterAlreadyInstalling`) through preparing, installing, finalizing, installed and
/// adding-hosts. A condition keeps its `lastTransitionTime` while its status holds, so that time
/// is when the install first started. It also stays True when a failed or timed-out preparation
/// sends the cluster back to `ready` and the install is retried: the pre-install state the
/// late-worker rule is for. It turns False on an error, a cancel, or a host leaving preparation
/// (back to `insufficient`); the start is then unknown.
///
/// Not `status.debugInfo.state`: it carries no time. Not `Completed`: it is False from creation
/// until the install completes, so its `lastTransitionTime` is the creation's.
pub fn install_started_at(aci: &AgentClusterInstall) -> Option<Timestamp> {
    aci.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == INSTALL_STARTED_CONDITION && c.status == "True")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

/// Whether a Machine created at `machine_created` came after the day-1 install started at
/// `install_started`: true only when both are known and the Machine is strictly later. Both
/// times have second precision, so a Machine created in the second the install started counts
/// as before it. Unknown either way: false, and the cluster state alone decides the hold.
pub fn created_after_install_started(
    machine_created: Option<Timestamp>,
    install_started: Option<Timestamp>,
) -> bool {
    match (machine_created, install_started) {
        (Some(created), Some(started)) => created > started,
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Config-drive variables
// ---------------------------------------------------------------------------------------------

/// The `METADATA_*` variables a host would read from its Metal3 config drive: baremetal-operator
/// writes `uuid`, `metal3-namespace`, `metal3-name`, `local-hostname`, `local_hostname` and
/// `name` into `meta_data.json`, then the rendered Metal3Data keys (`extra`, which win), and
/// CAPOA's `configdrive_metadata` script exports each key as `METADATA_<KEY>` with the key
/// upper-cased and `-` turned into `_`.
pub fn config_drive_variables(
    host: &BareMetalHost,
    extra: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let name = host.name_any();
    let mut meta: BTreeMap<String, String> = BTreeMap::from([
        ("uuid".into(), host.uid().unwrap_or_default()),
        (
            "metal3-namespace".into(),
            host.namespace().unwrap_or_default(),
        ),
        ("metal3-name".into(), name.clone()),
        ("local-hostname".into(), name.clone()),
        ("local_hostname".into(), name.clone()),
        ("name".into(), name),
    ]);
    meta.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    meta.into_iter()
        .map(|(k, v)| {
            (
                format!("METADATA_{}", k.to_uppercase().replace('-', "_")),
                v,
            )
        })
        .collect()
}

/// The keys of a BareMetalHost's `metaData` Secret (key `metaData`, a YAML map: CAPM3 renders it
/// from the Metal3DataTemplate), which baremetal-operator writes into the config drive's
/// `meta_data.json` over its own keys. Scalars become their text, as the host's config-drive
/// script prints them; nested values are left out, as it leaves them out. Not a YAML map: none.
pub fn metadata_secret_keys(yaml: &str) -> BTreeMap<String, String> {
    let Ok(serde_yaml::Value::Mapping(map)) = serde_yaml::from_str::<serde_yaml::Value>(yaml)
    else {
        return BTreeMap::new();
    };
    let text = |v: &serde_yaml::Value| match v {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    map.iter()
        .filter_map(|(k, v)| Some((text(k)?, text(v)?)))
        .collect()
}

/// Why a config value could not be resolved against the host's config drive.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "{field} refers to ${variable}, which the config drive of BareMetalHost {host} does not define"
    )]
    UnknownVariable {
        field: &'static str,
        variable: String,
        host: String,
    },
    #[error("{field} has an unterminated or empty ${{...}} reference: {text:?}")]
    Malformed { field: &'static str, text: String },
}

/// A piece of a config value: text as written, or a `$NAME` / `${NAME}` reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// Splits `text` at its `$NAME` and `${NAME}` references (NAME = `[A-Za-z_][A-Za-z0-9_]*`), as
/// the host's shell reads them; a `$` not followed by a name is text, as the shell keeps it.
pub fn variable_segments<'a>(
    field: &'static str,
    text: &'a str,
) -> Result<Vec<Segment<'a>>, ResolveError> {
    let malformed = || ResolveError::Malformed {
        field,
        text: text.to_string(),
    };
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_rest = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        if pos > 0 {
            out.push(Segment::Text(&rest[..pos]));
        }
        let after = &rest[pos + 1..];
        if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or_else(malformed)?;
            let name = &braced[..end];
            if name.is_empty() || !name.starts_with(is_start) || !name.chars().all(is_rest) {
                return Err(malformed());
            }
            out.push(Segment::Variable(name));
            rest = &braced[end + 1..];
        } else if after.starts_with(is_start) {
            let end = after.find(|c: char| !is_rest(c)).unwrap_or(after.len());
            out.push(Segment::Variable(&after[..end]));
            rest = &after[end..];
        } else {
            out.push(Segment::Text("$"));
            rest = after;
        }
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest));
    }
    Ok(out)
}

/// Expands `$NAME` and `${NAME}` (see [`variable_segments`]) from `vars`, as the host's shell
/// would after reading its config drive.
pub fn resolve_variables(
    field: &'static str,
    text: &str,
    vars: &BTreeMap<String, String>,
    host: &str,
) -> Result<String, ResolveError> {
    let mut out = String::with_capacity(text.len());
    for segment in variable_segments(field, text)? {
        match segment {
            Segment::Text(t) => out.push_str(t),
            Segment::Variable(name) => {
                let value = vars
                    .get(name)
                    .ok_or_else(|| ResolveError::UnknownVariable {
                        field,
                        variable: name.to_string(),
                        host: host.to_string(),
                    })?;
                out.push_str(value);
            }
        }
    }
    Ok(out)
}

/// One pair of surrounding quotes, as the shell would remove them (CAPOA's OKD example writes
/// `metal3.io/uuid="${METADATA_UUID}"`).
fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

// ---------------------------------------------------------------------------------------------
// Desired Agent
// ---------------------------------------------------------------------------------------------

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

    let mut node_labels = BTreeMap::new();
    for entry in &registration.kubelet_extra_labels {
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
            &vars,
            &host_name,
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

    let installation_disk_id = match host.spec.root_device_hints.as_ref() {
        Some(hints) if !hints_are_empty(hints) => {
            let agent_name = inputs.agent.name_any();
            let disks = inputs
                .agent
                .status
                .as_ref()
                .map(|s| s.inventory.disks.as_slice())
                .unwrap_or_default();
            if disks.is_empty() {
                return Err(AgentError::InventoryPending {
                    host: host_name,
                    agent: agent_name,
                });
            }
            let disk = disks
                .iter()
                .find(|d| disk_matches(d, hints))
                .ok_or_else(|| AgentError::NoDiskMatchesHints {
                    host: host_name.clone(),
                    agent: agent_name,
                })?;
            Some(disk_key(disk).to_string())
        }
        _ => None,
    };

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

    // -- hold: one test per rule, and a check that every rule has one ------------------------

    struct Case {
        control_plane: bool,
        state: &'static str,
        late: bool,
        expect: Hold,
    }

    fn check(rule: &str, c: Case) {
        let (got_rule, got) = decide_hold(c.control_plane, c.state, c.late);
        assert_eq!(got_rule, rule);
        assert_eq!(got, c.expect);
        assert_eq!(hold(c.control_plane, c.state, c.late), c.expect);
    }

    fn held_install(state: &str) -> Hold {
        Hold::Held(HoldReason::InstallInProgress {
            state: state.into(),
        })
    }

    macro_rules! hold_rows {
        ($($test:ident: $rule:literal => $case:expr;)+) => {
            $(#[test] fn $test() { check($rule, $case) })+
            const TESTED: &[&str] = &[$($rule),+];
        };
    }

    hold_rows! {
        control_plane_installing: "control-plane-never-held" =>
            Case { control_plane: true, state: "installing", late: true, expect: Hold::Proceed };
        worker_adding_hosts: "worker-day2" =>
            Case { control_plane: false, state: "adding-hosts", late: true, expect: Hold::Proceed };
        worker_adding_hosts_early: "worker-day2" =>
            Case { control_plane: false, state: "adding-hosts", late: false, expect: Hold::Proceed };
        late_worker_ready: "late-worker-waits-for-day2" =>
            Case { control_plane: false, state: "ready", late: true,
                   expect: Hold::Held(HoldReason::LateForDay1 { state: "ready".into() }) };
        worker_empty_state: "worker-day1" =>
            Case { control_plane: false, state: "", late: false, expect: Hold::Proceed };
        worker_insufficient: "worker-day1" =>
            Case { control_plane: false, state: "insufficient", late: false, expect: Hold::Proceed };
        worker_pending_for_input: "worker-day1" =>
            Case { control_plane: false, state: "pending-for-input", late: false, expect: Hold::Proceed };
        worker_ready: "worker-day1" =>
            Case { control_plane: false, state: "ready", late: false, expect: Hold::Proceed };
        worker_installing: "worker-waits-for-install" =>
            Case { control_plane: false, state: "installing", late: false, expect: held_install("installing") };
        worker_preparing: "worker-waits-for-install" =>
            Case { control_plane: false, state: "preparing-for-installation", late: true,
                   expect: held_install("preparing-for-installation") };
        worker_installed: "worker-waits-for-install" =>
            Case { control_plane: false, state: "installed", late: true, expect: held_install("installed") };
        worker_error: "worker-waits-for-install" =>
            Case { control_plane: false, state: "error", late: false, expect: held_install("error") };
    }

    #[test]
    fn every_hold_rule_is_tested() {
        for r in HOLD_RULES {
            assert!(TESTED.contains(&r.name), "rule {} has no test", r.name);
        }
        for t in TESTED {
            assert!(HOLD_RULES.iter().any(|r| r.name == *t), "unknown rule {t}");
        }
    }

    #[test]
    fn hold_messages_say_what_to_wait_for() {
        let m = held_install("installing").clone();
        let Hold::Held(reason) = m else { panic!() };
        assert!(reason.to_string().contains("adding-hosts"));
        assert!(reason.to_string().contains("installing"));
    }

    // -- when day-1 started, and late Machines ---------------------------------------------

    fn at(second: i64) -> Option<Timestamp> {
        Timestamp::from_second(1_800_000_000 + second).ok()
    }

    #[test]
    fn a_machine_is_late_only_when_created_after_a_known_install_start() {
        // Created before the start: part of day-1.
        assert!(!created_after_install_started(at(0), at(10)));
        // Created after: late.
        assert!(created_after_install_started(at(11), at(10)));
        // The same second: before (the times have second precision).
        assert!(!created_after_install_started(at(10), at(10)));
        // The start unknown, or the Machine's creation: not late.
        assert!(!created_after_install_started(at(11), None));
        assert!(!created_after_install_started(None, at(10)));
        assert!(!created_after_install_started(None, None));
    }

    fn aci_with(conditions: &str) -> AgentClusterInstall {
        crate::controller::test_fixtures::aci(3, "ready", conditions)
    }

    #[test]
    fn the_install_start_is_when_requirements_met_turned_true() {
        let started = aci_with(
            "[{type: Completed, status: 'False', reason: InstallationNotStarted,               lastTransitionTime: '2027-01-15T08:00:00Z'},              {type: RequirementsMet, status: 'True', reason: ClusterAlreadyInstalling,               lastTransitionTime: '2027-01-15T08:30:00Z'}]",
        );
        assert_eq!(
            install_started_at(&started),
            Some("2027-01-15T08:30:00Z".parse().unwrap())
        );
        assert_eq!(install_state(Some(&started)), "ready");
        // Not met (not started, or stopped by an error or a reset): unknown.
        let not_met = aci_with(
            "[{type: RequirementsMet, status: 'False', reason: InsufficientAgents,               lastTransitionTime: '2027-01-15T08:30:00Z'}]",
        );
        assert_eq!(install_started_at(&not_met), None);
        // No condition, or no time on it: unknown.
        assert_eq!(install_started_at(&aci_with("[]")), None);
        let no_time = aci_with("[{type: RequirementsMet, status: 'True'}]");
        assert_eq!(install_started_at(&no_time), None);
        assert_eq!(install_state(None), "");
    }

    #[test]
    fn a_worker_created_after_a_retried_install_started_waits_for_day2() {
        // Back in `ready` after a failed preparation: RequirementsMet is still True from the
        // first start, so a worker created since is late and held; one created before joins.
        let aci = aci_with(
            "[{type: RequirementsMet, status: 'True', reason: ClusterIsReady,               lastTransitionTime: '2027-01-15T08:30:00Z'}]",
        );
        let started = install_started_at(&aci);
        let state = install_state(Some(&aci));
        let late = created_after_install_started("2027-01-15T08:31:00Z".parse().ok(), started);
        assert_eq!(
            hold(false, &state, late),
            Hold::Held(HoldReason::LateForDay1 {
                state: "ready".into()
            })
        );
        let early = created_after_install_started("2027-01-15T08:29:00Z".parse().ok(), started);
        assert_eq!(hold(false, &state, early), Hold::Proceed);
    }

    // -- variables --------------------------------------------------------------------------

    fn host(yaml_extra: &str) -> BareMetalHost {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {{name: host-0, namespace: ns, uid: 0b1c2d3e-aaaa-bbbb-cccc-000000000000}}
spec:
  online: true
  bootMACAddress: "52:54:00:aa:bb:cc"
  {yaml_extra}
"#
        ))
        .unwrap()
    }

    #[test]
    fn config_drive_variables_as_the_host_sees_them() {
        let extra = BTreeMap::from([("rack-id".to_string(), "r7".to_string())]);
        let vars = config_drive_variables(&host(""), &extra);
        assert_eq!(vars["METADATA_NAME"], "host-0");
        assert_eq!(vars["METADATA_LOCAL_HOSTNAME"], "host-0");
        assert_eq!(
            vars["METADATA_UUID"],
            "0b1c2d3e-aaaa-bbbb-cccc-000000000000"
        );
        assert_eq!(vars["METADATA_METAL3_NAMESPACE"], "ns");
        assert_eq!(vars["METADATA_METAL3_NAME"], "host-0");
        assert_eq!(vars["METADATA_RACK_ID"], "r7");
    }

    #[test]
    fn metal3data_keys_are_read_as_the_config_drive_carries_them() {
        let keys = metadata_secret_keys(
            "rack-id: r7\nindex: 3\nenabled: true\nnested: {a: b}\nlist: [1]\nname: custom\n",
        );
        assert_eq!(
            keys,
            BTreeMap::from([
                ("enabled".to_string(), "true".to_string()),
                ("index".to_string(), "3".to_string()),
                ("name".to_string(), "custom".to_string()),
                ("rack-id".to_string(), "r7".to_string()),
            ])
        );
        // They win over baremetal-operator's own keys, as in the config drive.
        let vars = config_drive_variables(&host(""), &keys);
        assert_eq!(vars["METADATA_NAME"], "custom");
        assert_eq!(vars["METADATA_RACK_ID"], "r7");
        assert!(metadata_secret_keys("- not\n- a map\n").is_empty());
        assert!(metadata_secret_keys(": : :").is_empty());
    }

    #[test]
    fn resolves_both_reference_forms() {
        let vars = config_drive_variables(&host(""), &BTreeMap::new());
        let r = |t: &str| resolve_variables("f", t, &vars, "ns/host-0");
        assert_eq!(r("$METADATA_NAME").unwrap(), "host-0");
        assert_eq!(r("${METADATA_NAME}").unwrap(), "host-0");
        assert_eq!(r("node-${METADATA_NAME}.lab").unwrap(), "node-host-0.lab");
        assert_eq!(r("$METADATA_NAME-x").unwrap(), "host-0-x");
        assert_eq!(r("static").unwrap(), "static");
        assert_eq!(r("a$").unwrap(), "a$");
        assert_eq!(r("$1").unwrap(), "$1");
        assert_eq!(
            r("$METADATA_RACK").unwrap_err(),
            ResolveError::UnknownVariable {
                field: "f",
                variable: "METADATA_RACK".into(),
                host: "ns/host-0".into()
            }
        );
        assert!(
            r("${METADATA_NAME")
                .unwrap_err()
                .to_string()
                .contains("unterminated")
        );
        assert!(matches!(r("${}"), Err(ResolveError::Malformed { .. })));
        assert!(matches!(r("${a-b}"), Err(ResolveError::Malformed { .. })));
    }

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

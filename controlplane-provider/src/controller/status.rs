//! The control plane's status as the CAPI v1beta2 control-plane contract reads it: replica
//! counters, `selector`, `initialization.controlPlaneInitialized`, and conditions whose reasons
//! say what the user can do. Pure: the inputs come from `dereference`, the clock from the caller.

use std::collections::BTreeMap;

use external_types::capi::Machine;
use manager::conditions::{self, Desired, Status};
use provider_api::bootstrap::api::{DISCOVERY_IMAGE_FAILED_REASON, OpenshiftAssistedConfig};
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;

use super::blocked::Blocked;
use super::dereference::WorkloadVersion;
use super::install::Install;
use super::machines::{self, Scaling};
use super::remediation;

pub mod unsupported;

pub const AVAILABLE: &str = "Available";
pub const KUBECONFIG_AVAILABLE: &str = "KubeconfigAvailable";
pub const MACHINES_READY: &str = "MachinesReady";
pub const MACHINES_UP_TO_DATE: &str = "MachinesUpToDate";
pub const SCALING_UP: &str = "ScalingUp";
pub const SCALING_DOWN: &str = "ScalingDown";
pub const PAUSED: &str = "Paused";
pub const DELETING: &str = "Deleting";
pub const KUBERNETES_VERSION_AVAILABLE: &str = "KubernetesVersionAvailable";
pub const REMEDIATING: &str = "Remediating";
/// On each control-plane Machine (CAPI's `MachineUpToDateCondition`).
pub const MACHINE_UP_TO_DATE: &str = "UpToDate";
/// On a control-plane Machine a MachineHealthCheck left to us (CAPI's
/// `MachineOwnerRemediatedCondition`).
pub const OWNER_REMEDIATED: &str = "OwnerRemediated";

pub struct StatusInputs<'a> {
    pub oacp: &'a OpenshiftAssistedControlPlane,
    pub cluster_name: &'a str,
    /// This control plane's Machines that are not being deleted.
    pub machines: &'a [Machine],
    pub configs: &'a BTreeMap<String, OpenshiftAssistedConfig>,
    pub install: &'a Install,
    pub kubeconfig_published: bool,
    pub scaling: &'a Scaling,
    pub blocked: Option<&'a Blocked>,
    pub paused: bool,
    /// `Some(message)` while the control plane is being deleted.
    pub deleting: Option<&'a str>,
    pub workload_version: &'a WorkloadVersion,
    pub control_plane_kubelets: &'a [String],
    /// `UpgradeCompleted` and `RollingOut` (see `upgrade::decide`); empty: kept as they are.
    pub upgrade: &'a [Desired],
    /// What becomes of Machines a MachineHealthCheck left to us.
    pub remediation: &'a remediation::Decision,
    /// `ImageMode` (see `image_mode::condition`); `None`: no image mode.
    pub image_mode: Option<Desired>,
}

/// The first control-plane config whose discovery image cannot be built (its
/// `DataSecretAvailable` False for that reason): its name and the bootstrap provider's message.
fn discovery_image_failure(
    configs: &BTreeMap<String, OpenshiftAssistedConfig>,
) -> Option<(String, String)> {
    configs.iter().find_map(|(name, config)| {
        let c = config.status.as_ref()?.conditions.iter().find(|c| {
            c.type_ == "DataSecretAvailable"
                && c.status == "False"
                && c.reason == DISCOVERY_IMAGE_FAILED_REASON
        })?;
        Some((name.clone(), c.message.clone()))
    })
}

/// The lowest of `versions` (`v1.30.4`, `v1.31.0+abc`), by their numbers; a version whose
/// numbers do not parse sorts first, so it is never hidden.
pub fn lowest_version(versions: &[String]) -> Option<&str> {
    versions
        .iter()
        .min_by_key(|v| version_numbers(v))
        .map(String::as_str)
}

/// `status.versions`: each version the control-plane Nodes' kubelets report, oldest first, with
/// how many report it.
pub fn versions(
    control_plane_kubelets: &[String],
) -> Vec<provider_api::controlplane::api::StatusVersion> {
    let mut out: Vec<provider_api::controlplane::api::StatusVersion> = Vec::new();
    let mut sorted = control_plane_kubelets.to_vec();
    sorted.sort_by_key(|v| version_numbers(v));
    for v in sorted {
        match out.last_mut() {
            Some(last) if last.version == v => {
                last.replicas = Some(last.replicas.unwrap_or(0) + 1);
            }
            _ => out.push(provider_api::controlplane::api::StatusVersion {
                version: v,
                replicas: Some(1),
            }),
        }
    }
    out
}

fn version_numbers(v: &str) -> Vec<u64> {
    v.trim_start_matches('v')
        .split(['+', '-'])
        .next()
        .unwrap_or_default()
        .split('.')
        .map(|n| n.parse().unwrap_or(0))
        .collect()
}

/// `status.version` and its condition: the lowest kubelet version of the control-plane Nodes
/// (it follows upgrades, as CAPI's control planes report their Machines' lowest version); while
/// no Node reports one, the version already recorded, else the one the cluster's API reported.
pub fn kubernetes_version(
    recorded: Option<&str>,
    read: &WorkloadVersion,
    control_plane_kubelets: &[String],
    kubeconfig_published: bool,
) -> (Option<String>, Desired) {
    if let Some(lowest) = lowest_version(control_plane_kubelets) {
        return (
            Some(lowest.to_string()),
            Desired::true_(
                KUBERNETES_VERSION_AVAILABLE,
                format!("the control-plane Nodes run Kubernetes {lowest} (the lowest)"),
            ),
        );
    }
    let known = recorded.filter(|v| !v.is_empty()).or(match read {
        WorkloadVersion::Read(v) => Some(v.as_str()),
        _ => None,
    });
    match (known, read) {
        (Some(v), _) => (
            Some(v.to_string()),
            Desired::true_(
                KUBERNETES_VERSION_AVAILABLE,
                format!("the cluster's API reports Kubernetes {v}"),
            ),
        ),
        (None, WorkloadVersion::Unreachable(why)) => (
            None,
            Desired::false_(
                KUBERNETES_VERSION_AVAILABLE,
                "WorkloadAPIUnreachable",
                format!(
                    "cannot read the Kubernetes version from the cluster's API: {why}; trying again in a minute"
                ),
            ),
        ),
        (None, _) => (
            None,
            Desired::false_(
                KUBERNETES_VERSION_AVAILABLE,
                "WaitingForKubeconfig",
                if kubeconfig_published {
                    "the Kubernetes version is read from the cluster's API on the next reconcile"
                } else {
                    "the Kubernetes version is read from the installed cluster's API once its admin kubeconfig exists"
                },
            ),
        ),
    }
}

/// The replica counters and selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub replicas: i32,
    pub ready: i32,
    pub available: i32,
    pub up_to_date: i32,
    pub selector: String,
}

pub fn counters(inputs: &StatusInputs) -> Counters {
    let count =
        |f: &dyn Fn(&Machine) -> bool| inputs.machines.iter().filter(|m| f(m)).count() as i32;
    let desired = &inputs.oacp.spec.openshift_assisted_config_spec;
    Counters {
        replicas: inputs.machines.len() as i32,
        ready: count(&|m| machine_condition(m, "Ready")),
        available: count(&|m| machine_condition(m, "Available")),
        up_to_date: count(&|m| {
            machines::up_to_date(
                desired,
                inputs
                    .configs
                    .get(&m.metadata.name.clone().unwrap_or_default()),
            )
        }),
        selector: machines::selector(inputs.oacp, inputs.cluster_name),
    }
}

fn machine_condition(machine: &Machine, type_: &str) -> bool {
    machine
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .is_some_and(|c| conditions::is_true(c, type_))
}

/// The control plane's conditions, one function each, in the order they are listed.
pub fn desired_conditions(inputs: &StatusInputs) -> Vec<Desired> {
    let (scaling_up, scaling_down) = scaling_conditions(inputs.scaling);
    let recorded = inputs
        .oacp
        .status
        .as_ref()
        .and_then(|s| s.version.as_deref());
    let (_, version) = kubernetes_version(
        recorded,
        inputs.workload_version,
        inputs.control_plane_kubelets,
        inputs.kubeconfig_published,
    );
    let mut out = vec![
        available(inputs),
        kubeconfig_available(inputs),
        machines_ready(&counters(inputs)),
        machines_up_to_date(inputs),
        scaling_up,
        scaling_down,
        paused(inputs.paused),
        deleting(inputs.deleting),
        version,
        remediating(inputs.machines, inputs.remediation),
    ];
    // Blocks nothing; present only while a field is set that takes no effect (the caller
    // merges with `conditions::merge_owned` so that it leaves once none is).
    out.extend(unsupported::fields_supported(inputs.oacp, inputs.install));
    out.extend(inputs.upgrade.iter().cloned());
    out.extend(inputs.image_mode.clone());
    out
}

/// The install's state in words, as the `Available` messages start. Not its percentage: each
/// change of this message is a status write here and on the Cluster, which mirrors it (the
/// AgentClusterInstall's `status.progress` and `capoa_install_percentage` carry the
/// percentage).
fn install_progress(install: &Install) -> String {
    if install.state.is_empty() {
        "waiting for the assisted installer to accept the cluster".to_string()
    } else if install.state_info.is_empty() {
        format!("install {}", install.state)
    } else {
        format!("install {}: {}", install.state, install.state_info)
    }
}

/// `Available`'s message once the control plane is up: the install's later states (its
/// finalizing messages follow the cluster version operator, `installed`, then `adding-hosts`)
/// are the AgentClusterInstall's to tell.
fn up_message(install: &Install) -> String {
    if install.state == "finalizing" {
        "OpenShift control plane is up; the install is finalizing".to_string()
    } else {
        "OpenShift control plane is up".to_string()
    }
}

/// `Available`: the first row that holds, in order: a blocked plan, a failed image-mode
/// rollout, the control plane up, then why the install waits or what it is doing.
fn available(inputs: &StatusInputs) -> Desired {
    let install = inputs.install;
    let progress = install_progress(install);
    let image_failure = discovery_image_failure(inputs.configs);
    let image_mode_failure =
        super::image_mode::install_failure(inputs.oacp, inputs.image_mode.as_ref());
    match inputs.blocked {
        Some(b) => Desired::false_(AVAILABLE, b.reason, b.message.clone()),
        // Image mode's first rollout is part of the install: its failure fails the install.
        None if image_mode_failure.is_some() => Desired::false_(
            AVAILABLE,
            super::image_mode::INSTALL_FAILED_REASON,
            format!(
                "the install failed in image mode: {}; the cluster's logs bundle \
                 (AgentClusterInstall status.debugInfo.logsURL) has each pool's MachineOSConfig, \
                 MachineOSBuilds and MachineConfigPool",
                image_mode_failure.unwrap_or_default()
            ),
        ),
        None if install.available() && inputs.kubeconfig_published => {
            Desired::true_(AVAILABLE, up_message(install))
        }
        None if install.available() => Desired::false_(
            AVAILABLE,
            "WaitingForKubeconfig",
            format!("{progress}; waiting for the admin kubeconfig"),
        ),
        // Before the validations: the install cannot start until the input is fixed.
        None if !install.started() && !install.spec_error.is_empty() => Desired::false_(
            AVAILABLE,
            "InstallInputError",
            format!(
                "{progress}; AgentClusterInstall {}: {}{}",
                inputs.oacp.metadata.name.as_deref().unwrap_or_default(),
                install.spec_error,
                unsupported::our_fields_behind(&install.spec_error)
            ),
        ),
        // No host can boot: the cause is the discovery image, not what the validations say
        // of the hosts that never registered.
        None if !install.started() && image_failure.is_some() => {
            let (config, message) = image_failure.unwrap_or_default();
            Desired::false_(
                AVAILABLE,
                DISCOVERY_IMAGE_FAILED_REASON,
                format!("{progress}; OpenshiftAssistedConfig {config}: {message}"),
            )
        }
        None if !install.started() && !install.failing_validations.is_empty() => Desired::false_(
            AVAILABLE,
            "InstallValidationsFailing",
            format!(
                "{progress}; {}{}",
                install.failing_validations,
                vip_hint(inputs.oacp, &install.failing_validations)
            ),
        ),
        // A running install goes on; a later input error is still worth knowing.
        None if !install.spec_error.is_empty() => Desired::false_(
            AVAILABLE,
            "ControlPlaneInstalling",
            format!(
                "{progress}; AgentClusterInstall {}: {}{}",
                inputs.oacp.metadata.name.as_deref().unwrap_or_default(),
                install.spec_error,
                unsupported::our_fields_behind(&install.spec_error)
            ),
        ),
        None => Desired::false_(AVAILABLE, "ControlPlaneInstalling", progress.clone()),
    }
}

/// `KubeconfigAvailable`: the admin kubeconfig's Secret is published.
fn kubeconfig_available(inputs: &StatusInputs) -> Desired {
    if inputs.kubeconfig_published {
        Desired::true_(
            KUBECONFIG_AVAILABLE,
            format!(
                "Secret {} holds the admin kubeconfig",
                super::kubeconfig::secret_name(inputs.cluster_name)
            ),
        )
    } else {
        Desired::false_(
            KUBECONFIG_AVAILABLE,
            "KubeconfigUnavailable",
            "the install has not produced the admin kubeconfig yet",
        )
    }
}

/// `MachinesReady`: every control-plane Machine is ready.
fn machines_ready(counters: &Counters) -> Desired {
    if counters.replicas == 0 {
        Desired::unknown(
            MACHINES_READY,
            "NoMachines",
            "this control plane has no Machines yet",
        )
    } else if counters.ready == counters.replicas {
        Desired::true_(
            MACHINES_READY,
            format!(
                "{} of {} machines are ready",
                counters.ready, counters.replicas
            ),
        )
    } else {
        Desired::false_(
            MACHINES_READY,
            "MachinesNotReady",
            format!(
                "{} of {} machines are ready",
                counters.ready, counters.replicas
            ),
        )
    }
}

/// `MachinesUpToDate`: every Machine's config is the spec's.
fn machines_up_to_date(inputs: &StatusInputs) -> Desired {
    let stale: Vec<String> = inputs
        .machines
        .iter()
        .filter_map(|m| m.metadata.name.clone())
        .filter(|n| {
            !machines::up_to_date(
                &inputs.oacp.spec.openshift_assisted_config_spec,
                inputs.configs.get(n),
            )
        })
        .collect();
    if stale.is_empty() {
        Desired::true_(MACHINES_UP_TO_DATE, "")
    } else {
        Desired::false_(
            MACHINES_UP_TO_DATE,
            "MachinesNotUpToDate",
            format!(
                "the config of {} differs from openshiftAssistedConfigSpec; configs are immutable, \
                 so these Machines keep the config they were installed with",
                stale.join(", ")
            ),
        )
    }
}

/// `ScalingUp` and `ScalingDown`, from the scaling decision.
fn scaling_conditions(scaling: &Scaling) -> (Desired, Desired) {
    match scaling {
        Scaling::Up(names) => (
            Desired::new(
                SCALING_UP,
                Status::True,
                "ScalingUp",
                format!("creating {}", names.join(", ")),
            ),
            not_scaling(SCALING_DOWN, "NotScalingDown"),
        ),
        Scaling::Down(names) => (
            not_scaling(SCALING_UP, "NotScalingUp"),
            Desired::new(
                SCALING_DOWN,
                Status::True,
                "ScalingDown",
                format!("deleting {}", names.join(", ")),
            ),
        ),
        Scaling::Paced {
            wanted,
            have,
            waiting_for,
        } => scaling_both_ways(
            *wanted,
            *have,
            Status::True,
            if wanted > have {
                "ScalingUp"
            } else {
                "ScalingDown"
            },
            format!("one Machine at a time: waiting because {waiting_for}"),
        ),
        Scaling::Frozen { wanted, have } => scaling_both_ways(
            *wanted,
            *have,
            Status::True,
            "WaitingForInstall",
            format!(
                "the install runs with {have} control-plane Machines (the assisted installer \
                 installs the masters it started with); the count changes once it is installed"
            ),
        ),
        Scaling::NotSupported { wanted, have, why } => scaling_both_ways(
            *wanted,
            *have,
            Status::False,
            "ScalingNotSupported",
            format!("{why}; the control plane stays at {have}"),
        ),
        Scaling::Steady => (
            not_scaling(SCALING_UP, "NotScalingUp"),
            not_scaling(SCALING_DOWN, "NotScalingDown"),
        ),
    }
}

/// `Paused`.
fn paused(paused: bool) -> Desired {
    if paused {
        Desired::true_(
            PAUSED,
            "the Cluster or this control plane is paused; nothing is reconciled",
        )
    } else {
        Desired::false_(PAUSED, "NotPaused", "")
    }
}

/// `Deleting`, with what the deletion waits for.
fn deleting(deleting: Option<&str>) -> Desired {
    match deleting {
        Some(message) => Desired::new(DELETING, Status::True, "Deleting", message),
        None => Desired::false_(DELETING, "NotDeleting", ""),
    }
}

/// The `UpToDate` condition CAPI leaves to the control-plane provider on its Machines (the
/// Cluster's `ControlPlaneMachinesUpToDate` aggregates it, as KubeadmControlPlane's Machines'):
/// for each Machine whose condition is missing or says something else, the conditions to write.
/// A Machine is up to date while its config equals `openshiftAssistedConfigSpec`; configs are
/// immutable, so a Machine that is not can only be replaced.
pub fn machine_up_to_date_conditions(
    oacp: &OpenshiftAssistedControlPlane,
    machines: &[Machine],
    configs: &BTreeMap<String, OpenshiftAssistedConfig>,
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<(
    String,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
)> {
    let desired_spec = &oacp.spec.openshift_assisted_config_spec;
    machines
        .iter()
        .filter_map(|machine| {
            let name = machine.metadata.name.clone()?;
            let config = configs.get(&name);
            let desired = if machines::up_to_date(desired_spec, config) {
                Desired::true_(MACHINE_UP_TO_DATE, "")
            } else if config.is_none() {
                Desired::false_(
                    MACHINE_UP_TO_DATE,
                    "NotUpToDate",
                    format!("* OpenshiftAssistedConfig {name} does not exist"),
                )
            } else {
                Desired::false_(
                    MACHINE_UP_TO_DATE,
                    "NotUpToDate",
                    format!(
                        "* OpenshiftAssistedConfig {name} differs from the control plane's \
                         spec.openshiftAssistedConfigSpec (configs are immutable: replace the \
                         Machine to apply the change)"
                    ),
                )
            };
            Some((name, machine_condition_change(machine, &desired, now)?))
        })
        .collect()
}

/// `desired` as the Machine's condition of its type, its transition time kept while its status
/// holds; `None` when the Machine already says exactly that.
fn machine_condition_change(
    machine: &Machine,
    desired: &Desired,
    now: k8s_openapi::jiff::Timestamp,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    let previous = machine
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let unchanged = conditions::find(previous, desired.type_).is_some_and(|c| {
        c.status == desired.status.as_str()
            && c.reason == desired.reason
            && c.message == desired.message
            && c.observed_generation == machine.metadata.generation
    });
    if unchanged {
        return None;
    }
    Some(
        conditions::merge(
            previous,
            std::slice::from_ref(desired),
            machine.metadata.generation,
            now,
        )
        .swap_remove(0),
    )
}

/// CAPI's `OwnerRemediated` on the Machine a remediation decision is about, as
/// KubeadmControlPlane writes it: False with `MachineDeleting` while it is replaced,
/// `CannotBeRemediated` when it never will be (the only master, the retry limit), and
/// `RemediationDeferred` with the reason while it waits. `None` when there is nothing to say or
/// it already says it.
pub fn owner_remediated_condition(
    machines: &[Machine],
    decision: &remediation::Decision,
    now: k8s_openapi::jiff::Timestamp,
) -> Option<(
    String,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
)> {
    let (name, reason, message) = match decision {
        remediation::Decision::Nothing => return None,
        remediation::Decision::Remediate(r) => (
            &r.machine,
            "MachineDeleting",
            "Machine is deleting".to_string(),
        ),
        remediation::Decision::Wait {
            machine,
            reason,
            message,
        } => {
            let never = [remediation::SINGLE_NODE, remediation::MAX_RETRY].contains(reason);
            let reason = if never {
                "CannotBeRemediated"
            } else {
                "RemediationDeferred"
            };
            (machine, reason, message.clone())
        }
    };
    let machine = machines
        .iter()
        .find(|m| m.metadata.name.as_ref() == Some(name))?;
    let desired = Desired::false_(OWNER_REMEDIATED, reason, message);
    Some((
        name.clone(),
        machine_condition_change(machine, &desired, now)?,
    ))
}

/// The core takes the machine network from the host network that holds the API VIP, as
/// assisted-service does, and says only that the machine network is undefined when no host
/// network holds it: name the VIPs the user set, which are the likely cause.
fn vip_hint(oacp: &OpenshiftAssistedControlPlane, failing: &str) -> String {
    let vips = oacp
        .spec
        .config
        .as_ref()
        .map(|c| c.api_vips.as_slice())
        .unwrap_or_default();
    if vips.is_empty() || !failing.contains("Machine Network CIDR is undefined") {
        return String::new();
    }
    format!(
        ". The machine network is the hosts' network that holds the API VIP: check that \
         spec.config.apiVIPs ({}) and ingressVIPs are addresses of the hosts' network",
        vips.join(", ")
    )
}

/// CAPI v1beta2's `Remediating`: True while a MachineHealthCheck has marked a control-plane
/// Machine unhealthy and left its remediation to us (`HealthCheckSucceeded` and
/// `OwnerRemediated` both False), as KubeadmControlPlane reports it: `Remediating` while one is
/// replaced, the waiting reason (and why) while the safety rules hold it back.
pub fn remediating(machines: &[Machine], decision: &remediation::Decision) -> Desired {
    let unhealthy: Vec<String> = machines
        .iter()
        .filter(|m| remediation::left_to_us(m))
        .map(|m| {
            let name = m.metadata.name.clone().unwrap_or_default();
            match machine_condition_message(m, "HealthCheckSucceeded") {
                Some(why) if !why.is_empty() => format!("{name} ({why})"),
                _ => name,
            }
        })
        .collect();
    if unhealthy.is_empty() {
        return Desired::false_(REMEDIATING, "NotRemediating", "");
    }
    let marked = format!(
        "MachineHealthCheck marked {} unhealthy",
        unhealthy.join(", ")
    );
    let (reason, message) = match decision {
        remediation::Decision::Wait {
            reason, message, ..
        } => (*reason, format!("{marked}; {message}")),
        remediation::Decision::Remediate(r) => (
            "Remediating",
            format!(
                "{marked}; replacing {}: its etcd member, etcd certificates and Node removed \
                 from the cluster, then the Machine deleted",
                r.machine
            ),
        ),
        remediation::Decision::Nothing => ("Remediating", marked),
    };
    Desired::new(REMEDIATING, Status::True, reason, message)
}

fn machine_condition_message(machine: &Machine, type_: &str) -> Option<String> {
    machine
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| conditions::find(c, type_))
        .map(|c| c.message.clone())
}

/// `ScalingUp` or `ScalingDown` (whichever way `wanted` lies from `have`) with this status,
/// reason and `detail`; the other one not scaling.
fn scaling_both_ways(
    wanted: i32,
    have: i32,
    status: Status,
    reason: &str,
    detail: String,
) -> (Desired, Desired) {
    let (way, type_) = if wanted > have {
        ("up", SCALING_UP)
    } else {
        ("down", SCALING_DOWN)
    };
    let this = Desired::new(
        type_,
        status,
        reason,
        format!("scaling {way} from {have} to {wanted} replicas: {detail}"),
    );
    if wanted > have {
        (this, not_scaling(SCALING_DOWN, "NotScalingDown"))
    } else {
        (not_scaling(SCALING_UP, "NotScalingUp"), this)
    }
}

fn not_scaling(type_: &'static str, reason: &'static str) -> Desired {
    Desired::false_(type_, reason, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oacp(replicas: i32) -> OpenshiftAssistedControlPlane {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {{name: cp, namespace: ns, uid: u-1}}
spec:
  distributionVersion: 4.20.0
  replicas: {replicas}
  machineTemplate:
    infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: t}}
  openshiftAssistedConfigSpec: {{sshAuthorizedKey: key}}
"#
        ))
        .unwrap()
    }

    fn machine(name: &str, ready: bool) -> Machine {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata: {{name: {name}, namespace: ns}}
spec:
  clusterName: c1
  bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfig, name: {name}}}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Machine, name: {name}}}
status:
  conditions:
  - {{type: Ready, status: "{}", reason: R, message: "", lastTransitionTime: "2026-01-01T00:00:00Z"}}
"#,
            if ready { "True" } else { "False" }
        ))
        .unwrap()
    }

    fn config(name: &str, key: &str) -> (String, OpenshiftAssistedConfig) {
        let c: OpenshiftAssistedConfig = serde_yaml::from_str(&format!(
            r#"
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata: {{name: {name}, namespace: ns}}
spec: {{sshAuthorizedKey: {key}}}
"#
        ))
        .unwrap();
        (name.to_string(), c)
    }

    fn find<'a>(c: &'a [Desired], t: &str) -> &'a Desired {
        c.iter().find(|d| d.type_ == t).unwrap()
    }

    struct Case {
        oacp: OpenshiftAssistedControlPlane,
        machines: Vec<Machine>,
        configs: BTreeMap<String, OpenshiftAssistedConfig>,
        install: Install,
        kubeconfig: bool,
        scaling: Scaling,
        blocked: Option<Blocked>,
    }

    impl Case {
        fn new() -> Case {
            Case {
                oacp: oacp(3),
                machines: vec![
                    machine("cp-0", true),
                    machine("cp-1", true),
                    machine("cp-2", false),
                ],
                configs: [
                    config("cp-0", "key"),
                    config("cp-1", "key"),
                    config("cp-2", "other"),
                ]
                .into_iter()
                .collect(),
                install: Install::default(),
                kubeconfig: false,
                scaling: Scaling::Steady,
                blocked: None,
            }
        }

        fn inputs(&self) -> StatusInputs<'_> {
            StatusInputs {
                oacp: &self.oacp,
                cluster_name: "c1",
                machines: &self.machines,
                configs: &self.configs,
                install: &self.install,
                kubeconfig_published: self.kubeconfig,
                scaling: &self.scaling,
                blocked: self.blocked.as_ref(),
                paused: false,
                deleting: None,
                workload_version: &WorkloadVersion::NotRead,
                control_plane_kubelets: &[],
                upgrade: &[],
                remediation: &remediation::Decision::Nothing,
                image_mode: None,
            }
        }
    }

    fn with_condition(mut m: Machine, type_: &str, status: &str, message: &str) -> Machine {
        let c: k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition =
            serde_json::from_value(serde_json::json!({
                "type": type_, "status": status, "reason": "R", "message": message,
                "lastTransitionTime": "2026-01-01T00:00:00Z"
            }))
            .unwrap();
        m.status
            .get_or_insert_with(Default::default)
            .conditions
            .get_or_insert_with(Vec::new)
            .push(c);
        m
    }

    #[test]
    fn remediating_names_the_machines_a_health_check_left_to_us() {
        let healthy = machine("cp-0", true);
        assert_eq!(
            remediating(
                std::slice::from_ref(&healthy),
                &remediation::Decision::Nothing
            )
            .reason,
            "NotRemediating"
        );
        // Marked unhealthy but already taken over (OwnerRemediated True): not ours to report.
        let taken = with_condition(
            with_condition(machine("cp-1", false), "HealthCheckSucceeded", "False", "x"),
            "OwnerRemediated",
            "True",
            "",
        );
        assert_eq!(
            remediating(&[taken], &remediation::Decision::Nothing).status,
            Status::False
        );
        let left = with_condition(
            with_condition(
                machine("cp-2", false),
                "HealthCheckSucceeded",
                "False",
                "Node cp-2 NotReady for 5m",
            ),
            "OwnerRemediated",
            "False",
            "waiting",
        );
        let both = [healthy, left];
        let waiting = remediation::Decision::Wait {
            machine: "cp-2".into(),
            reason: remediation::ETCD_QUORUM,
            message: "cp-2 waits: quorum".into(),
        };
        let d = remediating(&both, &waiting);
        assert_eq!(
            (d.status, d.reason.as_str()),
            (Status::True, "EtcdQuorumAtRisk")
        );
        assert!(d.message.ends_with("; cp-2 waits: quorum"), "{}", d.message);
        let replacing = remediation::Decision::Remediate(remediation::Removal {
            machine: "cp-2".into(),
            node: Some("cp-2".into()),
            delete_node: true,
            member: None,
            exec_node: None,
            retry_count: 0,
        });
        let d = remediating(&both, &replacing);
        assert_eq!((d.status, d.reason.as_str()), (Status::True, "Remediating"));
        assert!(
            d.message.contains("cp-2 (Node cp-2 NotReady for 5m)"),
            "{}",
            d.message
        );
        assert!(!d.message.contains("cp-0"));
    }

    #[test]
    fn owner_remediated_says_what_becomes_of_the_machine_as_kcp_does() {
        let now: k8s_openapi::jiff::Timestamp = "2026-11-28T10:00:00Z".parse().unwrap();
        let left = with_condition(machine("cp-2", false), "OwnerRemediated", "False", "");
        let machines = [machine("cp-0", true), left];
        let wait = |reason| remediation::Decision::Wait {
            machine: "cp-2".into(),
            reason,
            message: "why".into(),
        };
        let replacing = remediation::Decision::Remediate(remediation::Removal {
            machine: "cp-2".into(),
            node: None,
            delete_node: true,
            member: None,
            exec_node: None,
            retry_count: 0,
        });
        // (decision, reason, message)
        let rows = [
            (wait(remediation::ETCD_QUORUM), "RemediationDeferred", "why"),
            (wait(remediation::SINGLE_NODE), "CannotBeRemediated", "why"),
            (wait(remediation::MAX_RETRY), "CannotBeRemediated", "why"),
            (replacing, "MachineDeleting", "Machine is deleting"),
        ];
        for (decision, reason, message) in rows {
            let (name, c) = owner_remediated_condition(&machines, &decision, now).unwrap();
            assert_eq!(name, "cp-2");
            assert_eq!(
                (
                    c.type_.as_str(),
                    c.status.as_str(),
                    c.reason.as_str(),
                    c.message.as_str()
                ),
                (OWNER_REMEDIATED, "False", reason, message)
            );
            // Said already: nothing to write.
            let mut said = machines.clone();
            said[1].status.as_mut().unwrap().conditions = Some(vec![c]);
            assert!(owner_remediated_condition(&said, &decision, now).is_none());
        }
        assert!(
            owner_remediated_condition(&machines, &remediation::Decision::Nothing, now).is_none()
        );
    }

    #[test]
    fn the_kubernetes_version_comes_from_the_cluster_api_and_is_kept() {
        let (v, c) = kubernetes_version(None, &WorkloadVersion::NotRead, &[], false);
        assert_eq!((v, c.reason), (None, "WaitingForKubeconfig".to_string()));
        let (v, c) = kubernetes_version(
            None,
            &WorkloadVersion::Unreachable("connection refused".into()),
            &[],
            true,
        );
        assert_eq!(v, None);
        assert_eq!(c.reason, "WorkloadAPIUnreachable");
        assert!(c.message.contains("connection refused"), "{}", c.message);
        let (v, c) = kubernetes_version(None, &WorkloadVersion::Read("v1.33.4".into()), &[], true);
        assert_eq!(v.as_deref(), Some("v1.33.4"));
        assert_eq!(c.status, Status::True);
        assert!(c.message.contains("v1.33.4"));
        // Recorded once, kept: the dereference does not ask again.
        let (v, c) = kubernetes_version(Some("v1.33.4"), &WorkloadVersion::NotRead, &[], true);
        assert_eq!(v.as_deref(), Some("v1.33.4"));
        assert_eq!(c.status, Status::True);
        let (v, _) = kubernetes_version(Some(""), &WorkloadVersion::NotRead, &[], true);
        assert_eq!(v, None);
        // The control-plane Nodes' kubelets, once they report: the lowest, mid-upgrade too.
        let kubelets = ["v1.31.2".to_string(), "v1.30.10".into(), "v1.31.2".into()];
        let (v, c) =
            kubernetes_version(Some("v1.33.4"), &WorkloadVersion::NotRead, &kubelets, true);
        assert_eq!(v.as_deref(), Some("v1.30.10"));
        assert_eq!(c.status, Status::True);
        let listed: Vec<(String, Option<i32>)> = versions(&kubelets)
            .into_iter()
            .map(|v| (v.version, v.replicas))
            .collect();
        assert_eq!(
            listed,
            [
                ("v1.30.10".to_string(), Some(1)),
                ("v1.31.2".to_string(), Some(2))
            ]
        );
    }

    #[test]
    fn counters_count_ready_and_up_to_date_machines() {
        let case = Case::new();
        let c = counters(&case.inputs());
        assert_eq!(
            (c.replicas, c.ready, c.available, c.up_to_date),
            (3, 2, 0, 2)
        );
        assert!(
            c.selector
                .contains("cluster.x-k8s.io/control-plane-name=cp")
        );
        let conds = desired_conditions(&case.inputs());
        assert_eq!(
            find(&conds, MACHINES_READY).message,
            "2 of 3 machines are ready"
        );
        let stale = find(&conds, MACHINES_UP_TO_DATE);
        assert_eq!(stale.status, Status::False);
        assert!(stale.message.contains("cp-2"), "{}", stale.message);
    }

    #[test]
    fn a_failed_first_image_mode_rollout_fails_the_install_on_available() {
        let mut case = Case::new();
        case.install.state = "installed".into();
        case.kubeconfig = true;
        let mut inputs = case.inputs();
        let failed = Desired::false_(
            super::super::image_mode::IMAGE_MODE,
            "RolloutFailed",
            "worker: MachineOSBuild worker-pre-built failed: pull: unauthorized",
        );
        inputs.image_mode = Some(failed.clone());
        let conds = desired_conditions(&inputs);
        let available = find(&conds, AVAILABLE);
        assert_eq!(
            (available.status, available.reason.as_str()),
            (Status::False, "ImageModeInstallFailed")
        );
        assert!(
            available
                .message
                .contains("worker: MachineOSBuild worker-pre-built failed")
                && available.message.contains("logsURL"),
            "{}",
            available.message
        );
        // Once the pools rolled out, a later failure leaves Available alone.
        let mut rolled_out = case.oacp.clone();
        rolled_out.metadata.annotations = Some(BTreeMap::from([(
            super::super::image_mode::ROLLED_OUT_ANNOTATION.to_string(),
            "2026-11-28T20:00:00Z".to_string(),
        )]));
        inputs.oacp = &rolled_out;
        assert_eq!(
            find(&desired_conditions(&inputs), AVAILABLE).status,
            Status::True
        );
    }

    #[test]
    fn available_follows_install_state_and_kubeconfig() {
        // (state, kubeconfig published, Available status, reason)
        let rows = [
            ("", false, Status::False, "ControlPlaneInstalling"),
            ("installing", false, Status::False, "ControlPlaneInstalling"),
            ("finalizing", false, Status::False, "WaitingForKubeconfig"),
            ("finalizing", true, Status::True, "Available"),
            ("installed", true, Status::True, "Available"),
            ("adding-hosts", true, Status::True, "Available"),
        ];
        for (state, kubeconfig, status, reason) in rows {
            let mut case = Case::new();
            case.install.state = state.into();
            case.kubeconfig = kubeconfig;
            let conds = desired_conditions(&case.inputs());
            let available = find(&conds, AVAILABLE);
            assert_eq!(
                (available.status, available.reason.as_str()),
                (status, reason),
                "{state}"
            );
            assert_eq!(
                find(&conds, KUBECONFIG_AVAILABLE).status,
                Status::from(kubeconfig)
            );
        }
    }

    #[test]
    fn available_says_what_the_install_does_but_not_each_percent_of_it() {
        let message = |state: &str, percentage: i64, info: &str| {
            let mut case = Case::new();
            case.install.state = state.into();
            case.install.percentage = percentage;
            case.install.state_info = info.into();
            case.kubeconfig = true;
            find(&desired_conditions(&case.inputs()), AVAILABLE)
                .message
                .clone()
        };
        // Each change of the message is a status write (and one of the Cluster's): one
        // message for each row, whatever the percentage and, once up, the state info.
        let rows = [
            (
                ("installing", 10, "Installation in progress"),
                ("installing", 60, "Installation in progress"),
                "install installing: Installation in progress",
            ),
            (
                (
                    "finalizing",
                    90,
                    "Cluster version status: progressing, 10 of 700 done",
                ),
                (
                    "finalizing",
                    95,
                    "Cluster version status: progressing, 600 of 700 done",
                ),
                "OpenShift control plane is up; the install is finalizing",
            ),
            (
                ("installed", 100, "Cluster is installed"),
                ("adding-hosts", 100, "Cluster is ready to add hosts"),
                "OpenShift control plane is up",
            ),
        ];
        for ((s1, p1, i1), (s2, p2, i2), said) in rows {
            assert_eq!(message(s1, p1, i1), said);
            assert_eq!(message(s2, p2, i2), said);
        }
    }

    #[test]
    fn each_machine_gets_its_up_to_date_condition_once() {
        let case = Case::new();
        let now: k8s_openapi::jiff::Timestamp = "2026-02-01T00:00:00Z".parse().unwrap();
        let written = machine_up_to_date_conditions(&case.oacp, &case.machines, &case.configs, now);
        let by_name: BTreeMap<_, _> = written.iter().cloned().collect();
        assert_eq!(by_name.len(), 3);
        assert_eq!(
            (
                by_name["cp-0"].status.as_str(),
                by_name["cp-0"].reason.as_str()
            ),
            ("True", "UpToDate")
        );
        assert_eq!(
            (
                by_name["cp-2"].status.as_str(),
                by_name["cp-2"].reason.as_str()
            ),
            ("False", "NotUpToDate")
        );
        assert!(by_name["cp-2"].message.contains("replace the Machine"));

        // Written back onto the Machines, nothing is written again.
        let mut machines = case.machines.clone();
        for m in &mut machines {
            let c = by_name[m.metadata.name.as_deref().unwrap()].clone();
            m.status.get_or_insert_with(Default::default).conditions = Some(vec![c]);
        }
        let later: k8s_openapi::jiff::Timestamp = "2026-02-02T00:00:00Z".parse().unwrap();
        assert!(
            machine_up_to_date_conditions(&case.oacp, &machines, &case.configs, later).is_empty()
        );

        // A Machine whose config is gone is not up to date; its transition time moves.
        let mut configs = case.configs.clone();
        configs.remove("cp-0");
        let again = machine_up_to_date_conditions(&case.oacp, &machines, &configs, later);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].0, "cp-0");
        assert_eq!(again[0].1.status, "False");
        assert_eq!(again[0].1.last_transition_time.0, later);
    }

    #[test]
    fn failing_validations_before_the_install_show_on_available() {
        let failing = "The cluster's validations are failing: API virtual IP 10.9.0.5 does not \
                       belong to machine-network-cidr";
        // (state, failing validations, Available reason)
        let rows = [
            ("insufficient", failing, "InstallValidationsFailing"),
            ("insufficient", "", "ControlPlaneInstalling"),
            ("pending-for-input", failing, "InstallValidationsFailing"),
            // Once the install runs, a failing validation no longer holds it.
            ("installing", failing, "ControlPlaneInstalling"),
        ];
        for (state, validations, reason) in rows {
            let mut case = Case::new();
            case.install.state = state.into();
            case.install.state_info = "Cluster is not ready for install".into();
            case.install.failing_validations = validations.into();
            let conds = desired_conditions(&case.inputs());
            let available = find(&conds, AVAILABLE);
            assert_eq!(
                (available.status, available.reason.as_str()),
                (Status::False, reason),
                "{state}"
            );
            if reason == "InstallValidationsFailing" {
                assert!(
                    available.message.contains("10.9.0.5"),
                    "{}",
                    available.message
                );
                assert!(available.message.starts_with(&format!("install {state}")));
            }
        }
    }

    #[test]
    fn a_discovery_image_that_cannot_be_built_shows_on_available_with_its_cause() {
        let failed = "InfraEnv cp-1 cannot build the discovery image: Failed to create image: \
                      httpProxy \"ftp://x\" must be an http:// URL";
        let mut case = Case::new();
        case.install.state = "insufficient".into();
        // What the validations say of hosts that never booted is a symptom, not the cause.
        case.install.failing_validations =
            "The cluster must have exactly 3 dedicated control plane nodes.".into();
        let config = case.configs.get_mut("cp-1").unwrap();
        config.status = Some(
            serde_json::from_value(serde_json::json!({
                "conditions": [{
                    "type": "DataSecretAvailable", "status": "False",
                    "reason": "DiscoveryImageFailed", "message": failed,
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }]
            }))
            .unwrap(),
        );
        let conds = desired_conditions(&case.inputs());
        let available = find(&conds, AVAILABLE);
        assert_eq!(
            (available.status, available.reason.as_str()),
            (Status::False, "DiscoveryImageFailed")
        );
        assert!(
            available
                .message
                .contains("OpenshiftAssistedConfig cp-1: InfraEnv cp-1")
                && available.message.contains("ftp://x"),
            "{}",
            available.message
        );
        // Once the install runs, the hosts have booted: the image is no longer the story.
        case.install.state = "installing".into();
        let conds = desired_conditions(&case.inputs());
        assert_eq!(find(&conds, AVAILABLE).reason, "ControlPlaneInstalling");
    }

    #[test]
    fn an_aci_input_error_holds_the_install_and_shows_on_available() {
        let input_error = "The Spec could not be synced due to an input error: \
                           diskEncryption.tangServers must name at least one server for mode tang";
        // (state, failing validations, Available reason)
        let rows = [
            ("insufficient", "", "InstallInputError"),
            // The input error is the nearer cause: the install would not start without it.
            (
                "ready",
                "The cluster's validations are failing: x",
                "InstallInputError",
            ),
            ("", "", "InstallInputError"),
            // A running install goes on; the message still says it.
            ("installing", "", "ControlPlaneInstalling"),
        ];
        for (state, validations, reason) in rows {
            let mut case = Case::new();
            case.install.state = state.into();
            case.install.failing_validations = validations.into();
            case.install.spec_error = input_error.into();
            let conds = desired_conditions(&case.inputs());
            let available = find(&conds, AVAILABLE);
            assert_eq!(
                (available.status, available.reason.as_str()),
                (Status::False, reason),
                "{state}"
            );
            assert!(
                available.message.contains(&format!(
                    "AgentClusterInstall cp: {input_error} (from this control plane's \
                     spec.config.diskEncryption)"
                )),
                "{}",
                available.message
            );
        }
        // Once the control plane is up, Available says so.
        let mut case = Case::new();
        case.install.state = "installed".into();
        case.kubeconfig = true;
        case.install.spec_error = input_error.into();
        assert_eq!(
            find(&desired_conditions(&case.inputs()), AVAILABLE).status,
            Status::True
        );
    }

    #[test]
    fn fields_supported_is_there_only_while_a_field_takes_no_effect() {
        let mut case = Case::new();
        assert!(
            !desired_conditions(&case.inputs())
                .iter()
                .any(|c| c.type_ == conditions::FIELDS_SUPPORTED)
        );
        case.oacp
            .spec
            .openshift_assisted_config_spec
            .os_image_version = Some("4.16".into());
        let conds = desired_conditions(&case.inputs());
        let fields = find(&conds, conditions::FIELDS_SUPPORTED);
        assert_eq!(
            (fields.status, fields.reason.as_str()),
            (Status::False, "UnsupportedFields")
        );
        assert!(
            fields
                .message
                .contains("spec.openshiftAssistedConfigSpec.osImageVersion is not supported yet"),
            "{}",
            fields.message
        );
        // It blocks nothing.
        assert_eq!(find(&conds, AVAILABLE).reason, "ControlPlaneInstalling");
    }

    #[test]
    fn an_undefined_machine_network_names_the_vips() {
        let mut case = Case::new();
        case.oacp
            .spec
            .config
            .get_or_insert_with(Default::default)
            .api_vips = vec!["10.99.0.5".into()];
        case.install.state = "insufficient".into();
        case.install.failing_validations = "The cluster's validations are failing: The Machine \
            Network CIDR is undefined; setting the API or Ingress virtual IPs will set the Machine \
            Network CIDR"
            .into();
        let conds = desired_conditions(&case.inputs());
        let message = &find(&conds, AVAILABLE).message;
        assert!(
            message.contains("spec.config.apiVIPs (10.99.0.5)"),
            "{message}"
        );
        // Without VIPs (platform None) there is nothing to point at.
        case.oacp.spec.config = None;
        let conds = desired_conditions(&case.inputs());
        assert!(!find(&conds, AVAILABLE).message.contains("apiVIPs"));
    }

    #[test]
    fn a_blocking_input_error_shows_on_available() {
        let mut case = Case::new();
        case.blocked = Some(Blocked {
            reason: "InvalidDistributionVersion",
            message: "bad".into(),
        });
        case.install.state = "installed".into();
        case.kubeconfig = true;
        let conds = desired_conditions(&case.inputs());
        assert_eq!(find(&conds, AVAILABLE).reason, "InvalidDistributionVersion");
    }

    #[test]
    fn scaling_conditions_say_what_they_wait_for_or_why_not() {
        let mut case = Case::new();
        // (scaling, condition, status, reason, words of the message)
        let rows = [
            (
                Scaling::Frozen { wanted: 5, have: 3 },
                SCALING_UP,
                Status::True,
                "WaitingForInstall",
                "scaling up from 3 to 5 replicas: the install runs with 3",
            ),
            (
                Scaling::Paced {
                    wanted: 3,
                    have: 4,
                    waiting_for: "cp-4 is being deleted".into(),
                },
                SCALING_DOWN,
                Status::True,
                "ScalingDown",
                "scaling down from 4 to 3 replicas: one Machine at a time: waiting because cp-4",
            ),
            (
                Scaling::NotSupported {
                    wanted: 7,
                    have: 3,
                    why: "at most 5".into(),
                },
                SCALING_UP,
                Status::False,
                "ScalingNotSupported",
                "at most 5; the control plane stays at 3",
            ),
            (
                Scaling::Up(vec!["cp-3".into()]),
                SCALING_UP,
                Status::True,
                "ScalingUp",
                "creating cp-3",
            ),
        ];
        for (scaling, type_, status, reason, words) in rows {
            case.scaling = scaling;
            let conds = desired_conditions(&case.inputs());
            let c = find(&conds, type_);
            assert_eq!((c.status, c.reason.as_str()), (status, reason), "{c:?}");
            assert!(c.message.contains(words), "{}", c.message);
            let other = if type_ == SCALING_UP {
                SCALING_DOWN
            } else {
                SCALING_UP
            };
            assert_eq!(find(&conds, other).status, Status::False);
        }
    }

    #[test]
    fn install_started_only_after_the_pre_install_states() {
        for (state, started) in [
            ("", false),
            ("insufficient", false),
            ("ready", false),
            ("preparing-for-installation", true),
            ("installing", true),
            ("installed", true),
            ("adding-hosts", true),
        ] {
            let install = Install {
                state: state.into(),
                ..Default::default()
            };
            assert_eq!(install.started(), started, "{state}");
        }
    }
}

//! Control-plane Machines: how many, their names, their failure domains, and the three objects
//! each one is made of (Machine, OpenshiftAssistedConfig, infrastructure machine cloned from the
//! template). Pure: the controller reads the inputs and applies what comes out.
//!
//! Unlike KubeadmControlPlane, which adds one Machine at a time, every day-1 Machine is created
//! in one pass: the assisted installer needs every master at once. While the install runs the
//! count is frozen; a change is reported, never silently applied. Once installed, the control
//! plane changes one Machine at a time as KubeadmControlPlane does: a Machine remediation
//! removed is replaced, and `spec.replicas` is followed within what OpenShift supports
//! ([`size_supported`]), each new Machine a day-2 control-plane host, each removed one's etcd
//! member removed before it goes.

use std::collections::BTreeMap;

use external_types::capi::{Cluster, Machine};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{ApiResource, DynamicObject, ObjectMeta};
use provider_api::bootstrap::api::{OpenshiftAssistedConfig, OpenshiftAssistedConfigSpec};
use provider_api::controlplane::api::{
    ContractVersionedObjectReference, OpenshiftAssistedControlPlane,
};
use serde_json::{Value, json};

use super::labels::{CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, CONTROL_PLANE_NAME_LABEL};
use super::owner;
pub const CLONED_FROM_NAME: &str = "cluster.x-k8s.io/cloned-from-name";
pub const CLONED_FROM_GROUPKIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
/// Never copied from a control plane onto its configs: it holds the control plane's own
/// conversion data (CAPOA bug MGMT-23110).
pub const CONVERSION_DATA_ANNOTATION: &str = "cluster.x-k8s.io/conversion-data";
pub const BOOTSTRAP_GROUP: &str = "bootstrap.cluster.x-k8s.io";
pub const CONFIG_KIND: &str = "OpenshiftAssistedConfig";

/// Replicas when `spec.replicas` is unset: one, as CAPI's control planes default it.
pub fn desired_replicas(oacp: &OpenshiftAssistedControlPlane) -> i32 {
    oacp.spec.replicas.unwrap_or(1).max(0)
}

/// `<control plane>-<index>`: deterministic, so a restart re-applies the same objects instead
/// of creating new ones.
pub fn machine_name(oacp_name: &str, index: usize) -> String {
    format!("{oacp_name}-{index}")
}

/// What to do about the number of Machines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scaling {
    /// As many Machines as wanted.
    Steady,
    /// Create these Machines (before the install all missing ones at once, after it one).
    Up(Vec<String>),
    /// Delete these Machines (before the install all extra ones at once; after it one, its
    /// etcd member removed first).
    Down(Vec<String>),
    /// The count differs and is being changed one Machine at a time: `waiting_for` says what
    /// the next step waits for.
    Paced {
        wanted: i32,
        have: i32,
        waiting_for: String,
    },
    /// The count differs but the install is running: left as it is, and said so.
    Frozen { wanted: i32, have: i32 },
    /// The installed cluster cannot have `wanted` control-plane nodes; `why` says so.
    NotSupported { wanted: i32, have: i32, why: String },
}

/// Where the cluster's install is, for [`scaling`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallPhase {
    NotStarted,
    Running,
    Installed(Installed),
}

/// An installed cluster's control plane, for [`scaling`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Installed {
    /// The masters it was installed with: the count a remediated Machine is replaced up to
    /// while `spec.replicas` is one the cluster cannot have.
    pub masters: i32,
    /// Why `spec.replicas` cannot be had ([`size_supported`]), if so.
    pub refused: Option<String>,
    /// A live Machine with no Node yet: a scale-up waits for it to join; a scale-down removes
    /// it first.
    pub joining: Option<String>,
    /// Live Machines marked with [`DELETE_MACHINE_ANNOTATION`]: removed first.
    pub marked: Vec<String>,
}

/// Cluster API's mark for the Machine to remove first when scaling down.
pub const DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";

/// Whether an installed cluster of `installed_masters` masters on `version` can be scaled to
/// `wanted` control-plane nodes (OpenShift: etcd on 3 to 5 masters, 4 and 5 since 4.18; a
/// single-node cluster stays single-node). `Err` says why not.
pub fn size_supported(
    installed_masters: i32,
    wanted: i32,
    version: Option<(u64, u64)>,
) -> Result<(), SizeRefused> {
    if installed_masters <= 1 {
        return match wanted {
            1 => Ok(()),
            _ => Err(SizeRefused::SingleNode { wanted }),
        };
    }
    let (major, minor) = super::release::MANY_MASTERS_SINCE;
    let most = match version {
        Some(v) if v >= (major, minor) => 5,
        _ => 3,
    };
    match wanted {
        w if w < 3 => Err(SizeRefused::BelowQuorum { wanted: w }),
        w if w > most && most == 5 => Err(SizeRefused::AboveFive { wanted: w }),
        w if w > most => Err(SizeRefused::NeedsNewerRelease {
            version: version.map_or("of unknown version".to_string(), |(a, b)| {
                format!("{a}.{b}")
            }),
            wanted: w,
        }),
        _ => Ok(()),
    }
}

/// Why an installed cluster cannot have the control-plane size asked for (the Scaling
/// condition's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeRefused {
    #[error(
        "a single-node OpenShift cluster keeps its one control-plane node (OpenShift cannot add \
         control-plane nodes to it); set spec.replicas back to 1, or reinstall with {wanted}"
    )]
    SingleNode { wanted: i32 },
    #[error(
        "an installed highly available control plane keeps at least 3 control-plane nodes \
         (etcd quorum); spec.replicas {wanted} is not supported"
    )]
    BelowQuorum { wanted: i32 },
    #[error(
        "OpenShift supports at most 5 control-plane nodes; spec.replicas {wanted} is not supported"
    )]
    AboveFive { wanted: i32 },
    #[error(
        "OpenShift {version} supports 3 control-plane nodes; 4 and 5 need {}.{} or later \
         (spec.replicas {wanted})",
        super::release::MANY_MASTERS_SINCE.0,
        super::release::MANY_MASTERS_SINCE.1
    )]
    NeedsNewerRelease { version: String, wanted: i32 },
}

/// Decides the Machines to create or delete. `existing` are the names of this control plane's
/// Machines that are not being deleted, `taken` every name still in use (those being deleted
/// too), so a new Machine never takes the name of one that is still going.
pub fn scaling(
    oacp_name: &str,
    existing: &[String],
    taken: &[String],
    replicas: i32,
    phase: &InstallPhase,
) -> Scaling {
    let have = existing.len() as i32;
    if have == replicas {
        return Scaling::Steady;
    }
    match phase {
        InstallPhase::NotStarted if have < replicas => Scaling::Up(free_names(
            oacp_name,
            existing,
            taken,
            (replicas - have) as usize,
        )),
        InstallPhase::NotStarted => {
            let extra = (have - replicas) as usize;
            Scaling::Down(
                newest_first(oacp_name, existing)
                    .into_iter()
                    .take(extra)
                    .cloned()
                    .collect(),
            )
        }
        InstallPhase::Running => Scaling::Frozen {
            wanted: replicas,
            have,
        },
        InstallPhase::Installed(installed) => {
            installed_scaling(oacp_name, existing, taken, replicas, installed)
        }
    }
}

/// Scaling an installed cluster: one Machine at a time, as KubeadmControlPlane (each step waits
/// for the one before it). While spec.replicas is refused, a remediated Machine is still
/// replaced, up to the count the cluster was installed with.
fn installed_scaling(
    oacp_name: &str,
    existing: &[String],
    taken: &[String],
    replicas: i32,
    installed: &Installed,
) -> Scaling {
    let have = existing.len() as i32;
    let target = match &installed.refused {
        None => replicas,
        Some(_) if have < installed.masters => installed.masters,
        Some(why) => {
            return Scaling::NotSupported {
                wanted: replicas,
                have,
                why: why.clone(),
            };
        }
    };
    let paced = |waiting_for: String| Scaling::Paced {
        wanted: replicas,
        have,
        waiting_for,
    };
    if let Some(name) = taken.iter().find(|n| !existing.contains(n)) {
        return paced(format!("{name} is being deleted"));
    }
    if have < target {
        match &installed.joining {
            Some(name) => paced(format!("{name} has no Node yet")),
            None => Scaling::Up(free_names(oacp_name, existing, taken, 1)),
        }
    } else if have > target {
        // A Machine that never got its Node (no free host, say) goes first after the
        // marked ones: waiting for it would keep the control plane from scaling back.
        let pick = installed
            .marked
            .iter()
            .filter(|n| existing.contains(n))
            .min()
            .or(installed.joining.as_ref())
            .or_else(|| newest_first(oacp_name, existing).first().copied());
        Scaling::Down(pick.cloned().into_iter().collect())
    } else {
        Scaling::Steady
    }
}

/// The first `count` Machine names neither in use nor still going.
fn free_names(oacp_name: &str, existing: &[String], taken: &[String], count: usize) -> Vec<String> {
    (0..)
        .map(|i| machine_name(oacp_name, i))
        .filter(|n| !existing.contains(n) && !taken.contains(n))
        .take(count)
        .collect()
}

/// The newest names first: highest index, then the rest in reverse name order.
fn newest_first<'a>(oacp_name: &str, existing: &'a [String]) -> Vec<&'a String> {
    let mut by_age: Vec<&String> = existing.iter().collect();
    by_age.sort_by_key(|n| std::cmp::Reverse(index_of(oacp_name, n)));
    by_age
}

/// Whether an installed control plane is about to remove a Machine to scale down (nothing else
/// being deleted): the etcd member list is worth reading then.
pub fn scale_down_pending(installed: bool, machines: &[Machine], replicas: i32) -> bool {
    let live = machines
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .count() as i32;
    installed && replicas >= 3 && live > replicas && live == machines.len() as i32
}

fn index_of(oacp_name: &str, machine: &str) -> (usize, String) {
    let index = machine
        .strip_prefix(oacp_name)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|i| i.parse().ok())
        .unwrap_or(usize::MAX);
    (index, machine.to_string())
}

/// The Cluster's failure domains usable by control-plane Machines, sorted by name.
pub fn control_plane_failure_domains(cluster: &Cluster) -> Vec<String> {
    let mut names: Vec<String> = cluster
        .status
        .as_ref()
        .and_then(|s| s.failure_domains.as_ref())
        .into_iter()
        .flatten()
        .filter(|fd| fd.control_plane == Some(true))
        .map(|fd| fd.name.clone())
        .collect();
    names.sort();
    names
}

/// Spreads `count` new Machines over the failure domains, each going to the domain with the
/// fewest Machines so far (ties: first by name), as CAPI's `PickFewest` does.
pub fn spread(
    domains: &[String],
    existing: &[Option<String>],
    count: usize,
) -> Vec<Option<String>> {
    if domains.is_empty() {
        return vec![None; count];
    }
    let mut load: BTreeMap<&str, usize> = domains.iter().map(|d| (d.as_str(), 0)).collect();
    for domain in existing.iter().flatten() {
        if let Some(n) = load.get_mut(domain.as_str()) {
            *n += 1;
        }
    }
    (0..count)
        .map(|_| {
            let pick = domains
                .iter()
                .min_by_key(|d| load.get(d.as_str()).copied().unwrap_or(0))?;
            *load.entry(pick.as_str()).or_default() += 1;
            Some(pick.clone())
        })
        .collect()
}

/// Why a control-plane Machine cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("{kind} {name} has no spec.template.spec")]
    NoTemplateSpec { kind: String, name: String },
    #[error("machineTemplate.infrastructureRef kind {0} does not end in \"Template\"")]
    NotATemplate(String),
    #[error("the control plane has no uid yet")]
    NoUid,
    #[error("cannot build Machine {name}: {reason}")]
    Machine { name: String, reason: String },
}

/// The three objects of one control-plane Machine.
#[derive(Clone, Debug)]
pub struct ControlPlaneMachine {
    pub machine: Machine,
    pub config: OpenshiftAssistedConfig,
    pub infra: DynamicObject,
    pub infra_resource: ApiResource,
}

/// Everything a control-plane Machine is built from.
pub struct MachineInputs<'a> {
    pub oacp: &'a OpenshiftAssistedControlPlane,
    pub cluster_name: &'a str,
    /// The infrastructure template `machineTemplate.infrastructureRef` names.
    pub template: &'a DynamicObject,
    /// Its resource (group, version, kind) as resolved from the CRD's contract label.
    pub template_resource: &'a ApiResource,
}

/// The labels every object of a control-plane Machine carries: those of the install objects.
pub fn control_plane_labels(
    oacp: &OpenshiftAssistedControlPlane,
    cluster_name: &str,
) -> BTreeMap<String, String> {
    super::labels::labels(oacp, cluster_name)
}

/// The `control-plane-name` label value (CAPI's `MustFormatValue`).
pub fn control_plane_name_label(name: &str) -> String {
    manager::names::capi_label_value(name)
}

/// `status.selector`: selects this control plane's Machines (the scale subresource needs it).
pub fn selector(oacp: &OpenshiftAssistedControlPlane, cluster_name: &str) -> String {
    format!(
        "{CLUSTER_NAME_LABEL}={cluster_name},{CONTROL_PLANE_LABEL},{CONTROL_PLANE_NAME_LABEL}={}",
        control_plane_name_label(&oacp.name_any())
    )
}

/// The infrastructure template the control-plane Machines are cloned from (the machine
/// template's effective reference), or why there is none: only a control plane written
/// without the admission webhook names none.
pub fn infrastructure_reference(
    oacp: &OpenshiftAssistedControlPlane,
) -> Result<&ContractVersionedObjectReference, NoInfrastructureTemplate> {
    oacp.spec
        .machine_template
        .infrastructure_ref()
        .ok_or(NoInfrastructureTemplate)
}

/// The machine template names no infrastructure template (a control plane written without
/// the admission webhook).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the machine template names no infrastructure template: set \
     spec.machineTemplate.spec.infrastructureRef (or CAPOA's \
     spec.machineTemplate.infrastructureRef)"
)]
pub struct NoInfrastructureTemplate;

/// Builds the Machine, its config and its infrastructure machine.
pub fn control_plane_machine(
    inputs: &MachineInputs,
    name: &str,
    failure_domain: Option<String>,
) -> Result<ControlPlaneMachine, TemplateError> {
    let oacp = inputs.oacp;
    let namespace = oacp.namespace().unwrap_or_default();
    let owner = owner::reference(oacp, false).ok_or(TemplateError::NoUid)?;
    let controller_owner = owner::reference(oacp, true).ok_or(TemplateError::NoUid)?;
    let labels = control_plane_labels(oacp, inputs.cluster_name);
    let template_annotations = oacp
        .spec
        .machine_template
        .metadata
        .as_ref()
        .map(|m| m.annotations.clone())
        .unwrap_or_default();
    let parts = Parts {
        name,
        namespace: &namespace,
        labels: &labels,
        template_annotations: &template_annotations,
    };
    let (infra, infra_resource) = infrastructure_machine(inputs, &parts, owner.clone())?;
    let config = bootstrap_config(oacp, &parts, owner);
    let machine = machine(
        inputs,
        &parts,
        controller_owner,
        &infra_resource,
        failure_domain,
    )?;
    Ok(ControlPlaneMachine {
        machine,
        config,
        infra,
        infra_resource,
    })
}

/// What the three objects of one control-plane Machine share.
struct Parts<'a> {
    name: &'a str,
    namespace: &'a str,
    labels: &'a BTreeMap<String, String>,
    /// `spec.machineTemplate.metadata.annotations`.
    template_annotations: &'a BTreeMap<String, String>,
}

/// The infrastructure machine: the template's spec.template, as CAPI's clone does.
fn infrastructure_machine(
    inputs: &MachineInputs,
    parts: &Parts,
    owner: OwnerReference,
) -> Result<(DynamicObject, ApiResource), TemplateError> {
    let template_kind = &inputs.template_resource.kind;
    let infra_kind = template_kind
        .strip_suffix("Template")
        .filter(|k| !k.is_empty())
        .ok_or_else(|| TemplateError::NotATemplate(template_kind.clone()))?;
    let template_body = inputs
        .template
        .data
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let Some(infra_spec) = template_body.get("spec").cloned() else {
        return Err(TemplateError::NoTemplateSpec {
            kind: template_kind.clone(),
            name: inputs.template.name_any(),
        });
    };
    let mut infra_labels: BTreeMap<String, String> = template_body
        .pointer("/metadata/labels")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    infra_labels.extend(parts.labels.clone());
    let mut infra_annotations: BTreeMap<String, String> = template_body
        .pointer("/metadata/annotations")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    infra_annotations.extend(parts.template_annotations.clone());
    infra_annotations.insert(CLONED_FROM_NAME.into(), inputs.template.name_any());
    infra_annotations.insert(
        CLONED_FROM_GROUPKIND.into(),
        format!("{template_kind}.{}", inputs.template_resource.group),
    );
    let infra_resource = ApiResource {
        group: inputs.template_resource.group.clone(),
        version: inputs.template_resource.version.clone(),
        api_version: inputs.template_resource.api_version.clone(),
        kind: infra_kind.to_string(),
        plural: plural(infra_kind),
    };
    let mut infra = DynamicObject::new(parts.name, &infra_resource).within(parts.namespace);
    infra.metadata.labels = Some(infra_labels);
    infra.metadata.annotations = Some(infra_annotations);
    infra.metadata.owner_references = Some(vec![owner]);
    infra.data = json!({ "spec": infra_spec });
    Ok((infra, infra_resource))
}

/// The bootstrap config: the control plane's config spec; its annotations (ignition
/// overrides) follow.
fn bootstrap_config(
    oacp: &OpenshiftAssistedControlPlane,
    parts: &Parts,
    owner: OwnerReference,
) -> OpenshiftAssistedConfig {
    let mut config_annotations: BTreeMap<String, String> = oacp
        .annotations()
        .iter()
        .filter(|(k, _)| k.as_str() != CONVERSION_DATA_ANNOTATION)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    config_annotations.extend(parts.template_annotations.clone());
    OpenshiftAssistedConfig {
        metadata: ObjectMeta {
            name: Some(parts.name.to_string()),
            namespace: Some(parts.namespace.to_string()),
            labels: Some(parts.labels.clone()),
            annotations: Some(config_annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: oacp.spec.openshift_assisted_config_spec.clone(),
        status: None,
    }
}

/// The Machine: the bootstrap config and infrastructure machine of its name, the machine
/// template's deletion timeouts, readiness gates and taints, and our pre-terminate hook.
fn machine(
    inputs: &MachineInputs,
    parts: &Parts,
    controller_owner: OwnerReference,
    infra_resource: &ApiResource,
    failure_domain: Option<String>,
) -> Result<Machine, TemplateError> {
    let name = parts.name;
    let template = &inputs.oacp.spec.machine_template;
    let deletion = template.deletion().cloned().unwrap_or_default();
    let (readiness_gates, taints) = (template.readiness_gates(), template.taints());
    let mut annotations = parts.template_annotations.clone();
    annotations.insert(super::hooks::PRE_TERMINATE_HOOK.into(), String::new());
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": parts.namespace,
            "labels": parts.labels,
            "annotations": annotations,
            "ownerReferences": [controller_owner],
        },
        "spec": {
            "clusterName": inputs.cluster_name,
            "bootstrap": {"configRef": {
                "apiGroup": BOOTSTRAP_GROUP, "kind": CONFIG_KIND, "name": name,
            }},
            "infrastructureRef": {
                "apiGroup": infra_resource.group, "kind": infra_resource.kind, "name": name,
            },
            "failureDomain": failure_domain,
            "deletion": {
                "nodeDrainTimeoutSeconds": deletion.node_drain_timeout_seconds,
                "nodeVolumeDetachTimeoutSeconds": deletion.node_volume_detach_timeout_seconds,
                "nodeDeletionTimeoutSeconds": deletion.node_deletion_timeout_seconds,
            },
            "readinessGates": (!readiness_gates.is_empty()).then_some(readiness_gates),
            "taints": (!taints.is_empty()).then_some(taints),
        },
    }))
    .map_err(|e| TemplateError::Machine {
        name: name.to_string(),
        reason: e.to_string(),
    })
}

/// A kind's plural as CAPI's `CalculateCRDName` derives it (flect's rules for the kinds we meet).
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

/// Whether a Machine's config still matches what the control plane asks for. Config specs are
/// immutable, so a Machine whose config differs needs replacing to be up to date.
pub fn up_to_date(
    desired: &OpenshiftAssistedConfigSpec,
    config: Option<&OpenshiftAssistedConfig>,
) -> bool {
    config.is_some_and(|c| &c.spec == desired)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn oacp() -> OpenshiftAssistedControlPlane {
        serde_yaml::from_str(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata:
  name: cp
  namespace: ns
  uid: 11111111-2222-3333-4444-555555555555
  annotations:
    openshiftassistedconfig.cluster.x-k8s.io/ignition-override: '{"ignition":{"version":"3.1.0"}}'
    cluster.x-k8s.io/conversion-data: '{"spec":{}}'
spec:
  distributionVersion: 4.20.0
  replicas: 3
  machineTemplate:
    metadata:
      labels: {team: a}
      annotations: {note: b}
    infrastructureRef:
      apiGroup: infrastructure.cluster.x-k8s.io
      kind: Metal3MachineTemplate
      name: cp-template
    deletion: {nodeDeletionTimeoutSeconds: 10}
  openshiftAssistedConfigSpec:
    sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk
  config: {baseDomain: lab.home}
"#,
        )
        .unwrap()
    }

    fn template() -> (DynamicObject, ApiResource) {
        let resource = ApiResource {
            group: "infrastructure.cluster.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "infrastructure.cluster.x-k8s.io/v1beta2".into(),
            kind: "Metal3MachineTemplate".into(),
            plural: "metal3machinetemplates".into(),
        };
        let template: DynamicObject = serde_yaml::from_str(
            r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {name: cp-template, namespace: ns}
spec:
  template:
    metadata:
      labels: {from-template: "yes"}
    spec:
      image: {url: "http://x/y.qcow2", checksum: "http://x/y.sum", checksumType: sha256, diskFormat: qcow2}
      dataTemplate: {name: cp-data}
"#,
        )
        .unwrap();
        (template, resource)
    }

    #[test]
    fn scaling_rows() {
        use InstallPhase::*;
        let installed = || {
            Installed(super::Installed {
                masters: 3,
                ..Default::default()
            })
        };
        let with = |f: &dyn Fn(&mut super::Installed)| {
            let mut i = super::Installed {
                masters: 3,
                ..Default::default()
            };
            f(&mut i);
            Installed(i)
        };
        let refused = with(&|i| i.refused = Some("no".into()));
        let paced = |wanted, have, waiting_for: &str| Scaling::Paced {
            wanted,
            have,
            waiting_for: waiting_for.into(),
        };
        // (existing, taken besides them, replicas, phase, expected)
        type Row<'a> = (&'a [&'a str], &'a [&'a str], i32, InstallPhase, Scaling);
        let rows: Vec<Row> = vec![
            (
                &[],
                &[],
                3,
                NotStarted,
                Scaling::Up(names(&["cp-0", "cp-1", "cp-2"])),
            ),
            (
                &["cp-1"],
                &[],
                3,
                NotStarted,
                Scaling::Up(names(&["cp-0", "cp-2"])),
            ),
            (
                &["cp-0", "cp-1", "cp-2"],
                &[],
                3,
                NotStarted,
                Scaling::Steady,
            ),
            (&["cp-0", "cp-1", "cp-2"], &[], 3, Running, Scaling::Steady),
            (
                &["cp-0", "cp-1", "cp-2"],
                &[],
                1,
                NotStarted,
                Scaling::Down(names(&["cp-2", "cp-1"])),
            ),
            (
                &["cp-0", "other", "cp-1"],
                &[],
                2,
                NotStarted,
                Scaling::Down(names(&["other"])),
            ),
            (
                &["cp-0"],
                &[],
                3,
                Running,
                Scaling::Frozen { wanted: 3, have: 1 },
            ),
            (
                &["cp-0", "cp-1", "cp-2"],
                &[],
                1,
                Running,
                Scaling::Frozen { wanted: 1, have: 3 },
            ),
            // Installed: one Machine at a time, up or down.
            (
                &["cp-0", "cp-1", "cp-2"],
                &[],
                5,
                installed(),
                Scaling::Up(names(&["cp-3"])),
            ),
            (
                &["cp-0", "cp-1", "cp-2", "cp-3"],
                &[],
                5,
                with(&|i| i.joining = Some("cp-3".into())),
                paced(5, 4, "cp-3 has no Node yet"),
            ),
            (
                &["cp-0", "cp-1", "cp-2", "cp-3", "cp-4"],
                &[],
                3,
                installed(),
                Scaling::Down(names(&["cp-4"])),
            ),
            (
                &["cp-0", "cp-1", "cp-2", "cp-3"],
                &["cp-4"],
                3,
                installed(),
                paced(3, 4, "cp-4 is being deleted"),
            ),
            // One that never joined goes first when scaling back (it is not waited for).
            (
                &["cp-0", "cp-1", "cp-2", "cp-3"],
                &[],
                3,
                with(&|i| i.joining = Some("cp-3".into())),
                Scaling::Down(names(&["cp-3"])),
            ),
            // Cluster API's delete-machine mark goes first.
            (
                &["cp-0", "cp-1", "cp-2", "cp-3"],
                &[],
                3,
                with(&|i| i.marked = names(&["cp-1", "gone"])),
                Scaling::Down(names(&["cp-1"])),
            ),
            // A remediated Machine is replaced: one, under a free name, once the old is gone.
            (
                &["cp-0", "cp-2"],
                &[],
                3,
                installed(),
                Scaling::Up(names(&["cp-1"])),
            ),
            (
                &["cp-0", "cp-2"],
                &["cp-1"],
                3,
                installed(),
                paced(3, 2, "cp-1 is being deleted"),
            ),
            (
                &["cp-0"],
                &[],
                3,
                installed(),
                Scaling::Up(names(&["cp-1"])),
            ),
            // A size the cluster cannot have is refused; a remediated Machine is still
            // replaced up to the installed count.
            (
                &["cp-0", "cp-1", "cp-2"],
                &[],
                7,
                refused.clone(),
                Scaling::NotSupported {
                    wanted: 7,
                    have: 3,
                    why: "no".into(),
                },
            ),
            (
                &["cp-0", "cp-2"],
                &[],
                7,
                refused.clone(),
                Scaling::Up(names(&["cp-1"])),
            ),
        ];
        for (existing, taken, replicas, phase, expected) in rows {
            assert_eq!(
                scaling("cp", &names(existing), &names(taken), replicas, &phase),
                expected,
                "existing {existing:?}, taken {taken:?}, replicas {replicas}, {phase:?}"
            );
        }
    }

    #[test]
    fn supported_sizes_after_install() {
        let v = |minor| Some((4, minor));
        // (installed masters, wanted, version, supported, words of the refusal)
        type Row<'a> = (i32, i32, Option<(u64, u64)>, bool, &'a str);
        let rows: &[Row] = &[
            (3, 3, v(17), true, ""),
            (3, 5, v(18), true, ""),
            (3, 4, v(19), true, ""),
            (5, 3, v(18), true, ""),
            (3, 5, v(17), false, "4 and 5 need 4.18 or later"),
            (3, 4, None, false, "of unknown version"),
            (3, 6, v(20), false, "at most 5"),
            (3, 2, v(20), false, "at least 3"),
            (3, 1, v(20), false, "at least 3"),
            (1, 1, v(20), true, ""),
            (1, 3, v(20), false, "single-node"),
        ];
        for &(masters, wanted, version, ok, words) in rows {
            let got = size_supported(masters, wanted, version);
            assert_eq!(
                got.is_ok(),
                ok,
                "{masters} -> {wanted} on {version:?}: {got:?}"
            );
            if let Err(why) = got {
                assert!(why.to_string().contains(words), "{why}");
            }
        }
    }

    #[test]
    fn new_machines_go_to_the_emptiest_failure_domain() {
        let domains = names(&["a", "b", "c"]);
        assert_eq!(
            spread(&domains, &[], 3),
            vec![Some("a".into()), Some("b".into()), Some("c".into())]
        );
        assert_eq!(
            spread(
                &domains,
                &[Some("a".into()), Some("a".into()), Some("b".into())],
                2
            ),
            vec![Some("c".into()), Some("b".into())]
        );
        assert_eq!(spread(&[], &[], 2), vec![None, None]);
    }

    #[test]
    fn only_control_plane_failure_domains_count() {
        let cluster: Cluster = serde_yaml::from_str(
            r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c, namespace: ns}
spec: {}
status:
  failureDomains:
  - {name: z2, controlPlane: true}
  - {name: z1, controlPlane: true}
  - {name: w1, controlPlane: false}
  - {name: w2}
"#,
        )
        .unwrap();
        assert_eq!(
            control_plane_failure_domains(&cluster),
            names(&["z1", "z2"])
        );
    }

    #[test]
    fn machine_config_and_infra_machine_are_built_from_the_control_plane_and_template() {
        let oacp = oacp();
        let (template, resource) = template();
        let inputs = MachineInputs {
            oacp: &oacp,
            cluster_name: "c1",
            template: &template,
            template_resource: &resource,
        };
        let m = control_plane_machine(&inputs, "cp-0", Some("z1".into())).unwrap();

        let labels = m.machine.metadata.labels.clone().unwrap();
        assert_eq!(labels[CLUSTER_NAME_LABEL], "c1");
        assert_eq!(labels[CONTROL_PLANE_LABEL], "");
        assert_eq!(labels[CONTROL_PLANE_NAME_LABEL], "cp");
        assert_eq!(labels["team"], "a");
        let owner = &m.machine.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner.kind, "OpenshiftAssistedControlPlane");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(m.machine.spec.cluster_name, "c1");
        assert_eq!(m.machine.spec.failure_domain.as_deref(), Some("z1"));
        let config_ref = m.machine.spec.bootstrap.config_ref.as_ref().unwrap();
        assert_eq!(
            (
                config_ref.api_group.as_str(),
                config_ref.kind.as_str(),
                config_ref.name.as_str()
            ),
            (
                "bootstrap.cluster.x-k8s.io",
                "OpenshiftAssistedConfig",
                "cp-0"
            )
        );
        assert_eq!(m.machine.spec.infrastructure_ref.kind, "Metal3Machine");
        assert_eq!(m.machine.spec.infrastructure_ref.name, "cp-0");

        // The config: the control plane's spec; its annotations minus the conversion data.
        assert_eq!(m.config.spec, oacp.spec.openshift_assisted_config_spec);
        let annotations = m.config.metadata.annotations.clone().unwrap();
        assert!(
            annotations.contains_key("openshiftassistedconfig.cluster.x-k8s.io/ignition-override")
        );
        assert!(!annotations.contains_key(CONVERSION_DATA_ANNOTATION));
        let config_owner = &m.config.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            config_owner.controller, None,
            "CAPI makes the Machine its controller"
        );

        // The infrastructure machine: the template's spec, cloned-from annotations, labels.
        assert_eq!(m.infra_resource.kind, "Metal3Machine");
        assert_eq!(m.infra_resource.plural, "metal3machines");
        assert_eq!(m.infra.data["spec"]["dataTemplate"]["name"], "cp-data");
        let infra_annotations = m.infra.metadata.annotations.clone().unwrap();
        assert_eq!(infra_annotations[CLONED_FROM_NAME], "cp-template");
        assert_eq!(
            infra_annotations[CLONED_FROM_GROUPKIND],
            "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"
        );
        let infra_labels = m.infra.metadata.labels.clone().unwrap();
        assert_eq!(infra_labels["from-template"], "yes");
        assert_eq!(infra_labels[CONTROL_PLANE_NAME_LABEL], "cp");
    }

    #[test]
    fn the_v1beta2_template_spec_gives_the_machines_reference_timeouts_gates_and_taints() {
        let mut oacp = oacp();
        oacp.spec.machine_template = serde_yaml::from_str(
            r#"
deletion: {nodeDeletionTimeoutSeconds: 10}
spec:
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: cp-template}
  deletion: {nodeDrainTimeoutSeconds: 120}
  readinessGates: [{conditionType: NodeHealthy}, {conditionType: example.com/Maintenance, polarity: Negative}]
  taints: [{key: node-role.kubernetes.io/master, effect: NoSchedule, propagation: OnInitialization}]
"#,
        )
        .unwrap();
        let (template, resource) = template();
        let inputs = MachineInputs {
            oacp: &oacp,
            cluster_name: "c1",
            template: &template,
            template_resource: &resource,
        };
        let m = control_plane_machine(&inputs, "cp-0", None).unwrap();
        let spec = serde_json::to_value(&m.machine.spec).unwrap();
        assert_eq!(spec["deletion"], json!({"nodeDrainTimeoutSeconds": 120}));
        assert_eq!(
            spec["readinessGates"],
            json!([{"conditionType": "NodeHealthy"}, {"conditionType": "example.com/Maintenance", "polarity": "Negative"}])
        );
        assert_eq!(
            spec["taints"],
            json!([{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule", "propagation": "OnInitialization"}])
        );
        // The flat shape sets neither.
        let flat = self::oacp();
        let inputs = MachineInputs {
            oacp: &flat,
            ..inputs
        };
        let spec = serde_json::to_value(
            &control_plane_machine(&inputs, "cp-0", None)
                .unwrap()
                .machine
                .spec,
        )
        .unwrap();
        assert_eq!(spec.get("readinessGates"), None);
        assert_eq!(spec.get("taints"), None);
    }

    #[test]
    fn a_template_without_a_spec_or_a_non_template_kind_is_an_error() {
        let oacp = oacp();
        let (mut template, resource) = template();
        template.data = json!({"spec": {}});
        let inputs = MachineInputs {
            oacp: &oacp,
            cluster_name: "c1",
            template: &template,
            template_resource: &resource,
        };
        assert!(matches!(
            control_plane_machine(&inputs, "cp-0", None),
            Err(TemplateError::NoTemplateSpec { .. })
        ));
        let (template, mut resource) = self::template();
        resource.kind = "Metal3Machine".into();
        let inputs = MachineInputs {
            oacp: &oacp,
            cluster_name: "c1",
            template: &template,
            template_resource: &resource,
        };
        assert!(matches!(
            control_plane_machine(&inputs, "cp-0", None),
            Err(TemplateError::NotATemplate(_))
        ));
    }

    #[test]
    fn plurals_follow_capi() {
        assert_eq!(plural("Metal3MachineTemplate"), "metal3machinetemplates");
        assert_eq!(plural("Metal3Machine"), "metal3machines");
        assert_eq!(plural("DockerMachinePolicy"), "dockermachinepolicies");
        assert_eq!(plural("Gateway"), "gateways");
        assert_eq!(plural("Box"), "boxes");
    }

    #[test]
    fn long_control_plane_names_are_hashed_into_a_label_value() {
        let long = "x".repeat(70);
        let value = control_plane_name_label(&long);
        assert!(value.len() <= 63);
        assert_eq!(value, control_plane_name_label(&long));
        assert_eq!(control_plane_name_label("cp"), "cp");
    }

    #[test]
    fn selector_names_the_machines_labels() {
        assert_eq!(
            selector(&oacp(), "c1"),
            "cluster.x-k8s.io/cluster-name=c1,cluster.x-k8s.io/control-plane,cluster.x-k8s.io/control-plane-name=cp"
        );
    }

    #[test]
    fn the_controller_never_copies_this_conversion_data_onto_configs() {
        assert_eq!(
            crate::controller::machines::CONVERSION_DATA_ANNOTATION,
            provider_api::conversion::CONVERSION_DATA_ANNOTATION
        );
    }
}

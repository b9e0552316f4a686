//! `plan`: everything one reconcile writes, decided from [`Dereferenced`] and `now` alone.
//! No client, no clock: tested from fixtures.

use std::time::Duration;

use assisted_api::{AgentClusterInstall, ClusterDeployment, ClusterImageSet};
use external_types::capi::Machine;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use manager::conditions;
use provider_api::controlplane::api::{
    ControlPlaneInitialization, LastRemediationStatus, OpenshiftAssistedControlPlane,
    OpenshiftAssistedControlPlaneStatus,
};

use super::blocked::Blocked;
use super::context::{FINALIZER, RESYNC};
use super::dereference::{Dereferenced, PullSecret, Template, WorkloadVersion};
use super::install::Install;
use super::machines::{self, ControlPlaneMachine, MachineInputs, Scaling};
use super::release_lookup::Lookup;
use super::status::{self, StatusInputs};
use super::{
    hive, hooks, image_mode, install_config, kubeconfig, labels, owner, registry, release,
    remediation, upgrade,
};
use assisted_core::service::controllers::cluster::{
    RELEASE_ARCHITECTURE_ANNOTATION, RELEASE_VERSION_ANNOTATION, release_from_tag,
};

pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
/// How often a control plane blocked on invalid or missing input is looked at again.
pub const BLOCKED_RECHECK: Duration = Duration::from_secs(60);
/// How soon a held-back remediation looks again (the workload's etcd and Nodes are not watched).
const REMEDIATION_RECHECK: Duration = Duration::from_secs(20);

/// The install objects of one cluster.
#[derive(Clone, Debug)]
pub struct HiveObjects {
    pub image_set: ClusterImageSet,
    pub cluster_deployment: ClusterDeployment,
    pub agent_cluster_install: AgentClusterInstall,
    /// The installed cluster's mirror manifests from `config.imageRegistryRef`, written before
    /// the AgentClusterInstall that names them.
    pub registry_manifests: Option<k8s_openapi::api::core::v1::ConfigMap>,
    /// The MachineOSConfigs of `config.imageMode`, written before the AgentClusterInstall that
    /// names them.
    pub image_mode_manifests: Option<k8s_openapi::api::core::v1::ConfigMap>,
    /// `config.imageMode`'s push Secrets, for the installed cluster once it is installed.
    pub push_secrets: Vec<Secret>,
}

/// The step of a deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Delete these Machines and wait for every Machine to be gone.
    Machines(Vec<String>),
    /// Delete the AgentClusterInstall, ClusterDeployment (both named `name`) and image set.
    InstallObjects {
        name: String,
        image_set: Option<String>,
    },
    /// Nothing left but the image set (deleted again, in case an earlier step never ran):
    /// release the finalizer.
    Done { image_set: String },
}

pub use manager::controller::PlannedEvent;

#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub write_finalizer: bool,
    pub pull_secret: Option<Secret>,
    pub hive: Option<HiveObjects>,
    pub create: Vec<ControlPlaneMachine>,
    pub delete: Vec<String>,
    pub kubeconfig: Option<Secret>,
    /// The `UpToDate` condition of the control-plane Machines whose condition changes.
    pub machine_conditions: Vec<(
        String,
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
    )>,
    pub status: OpenshiftAssistedControlPlaneStatus,
    pub events: Vec<PlannedEvent>,
    /// `None`: wait for a change of a watched object.
    pub requeue: Option<Duration>,
    /// Set while the control plane is being deleted; nothing else is written then but status.
    pub cleanup: Option<Cleanup>,
    /// Ask the installed cluster's CVO for this update (its ClusterVersion's `desiredUpdate`).
    pub upgrade_request: Option<upgrade::DesiredUpdate>,
    /// Replace this unhealthy control-plane Machine.
    pub remediation: Option<remediation::Removal>,
    /// `OwnerRemediated` of the Machine a remediation is about (written under its own field
    /// manager: each manager's apply names every condition it owns).
    pub owner_remediated: Option<(
        String,
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
    )>,
    /// Remove this control-plane Machine of the installed cluster (scaling down).
    pub scale_down: Option<remediation::Removal>,
    /// The pre-terminate hooks of control-plane Machines: added, released, or released after
    /// the Machine's etcd member is cleaned up.
    pub hooks: hooks::Hooks,
    /// Annotate the control plane: image mode rolled out for the first time (its later
    /// failures are no longer install failures).
    pub image_mode_rolled_out: bool,
    /// The image-mode rollout as last read, for the cluster's logs bundle.
    pub image_mode_logs: Option<k8s_openapi::api::core::v1::ConfigMap>,
}

/// Whether reconciling is paused: the Cluster's `spec.paused`, or the annotation on the Cluster
/// or the control plane (CAPI's `annotations.IsPaused`).
pub fn paused(d: &Dereferenced) -> bool {
    let annotated =
        |a: &std::collections::BTreeMap<String, String>| a.contains_key(PAUSED_ANNOTATION);
    annotated(d.oacp.annotations())
        || d.cluster
            .as_ref()
            .is_some_and(|c| c.spec.paused == Some(true) || annotated(c.annotations()))
}

/// The plan, phase by phase: the objects (or the cleanup, or why it is blocked), the
/// kubeconfig, upgrades, remediation and the Machines' hooks and removals, image mode, then
/// status.
pub fn plan(d: &Dereferenced, now: Timestamp) -> Plan {
    let oacp = d.oacp.as_ref();
    let has_finalizer = oacp.finalizers().iter().any(|f| f == FINALIZER);
    let cluster_name = d.cluster.as_ref().map(|c| c.name_any()).unwrap_or_default();
    let install = install_of(d.aci.as_ref());
    let live: Vec<_> = d
        .machines
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect();

    let mut plan = Plan {
        write_finalizer: !has_finalizer,
        requeue: Some(RESYNC),
        ..Default::default()
    };
    let paused = paused(d);
    let Objects {
        blocked,
        mut scaling,
        deleting,
    } = plan_control_plane(&mut plan, d, &cluster_name, &install, &live, paused);
    let kubeconfig_published = plan_kubeconfig(&mut plan, d, &cluster_name, paused);
    let upgrade = plan_upgrade(&mut plan, d, &install, paused);

    let decision = remediation_decision(&plan, d, &install, paused, now);
    plan_remediation(&mut plan, oacp, &decision);
    if !paused {
        plan_hooks(&mut plan, d, install.installed());
    }
    if install.installed()
        && let Scaling::Down(names) = &scaling
    {
        scaling = plan_master_removal(&mut plan, d, names, &decision);
    }

    let image_mode_condition =
        image_mode::condition(oacp, install.installed(), &d.image_mode_rollout);
    plan_image_mode(&mut plan, oacp, image_mode_condition.as_ref());
    plan.image_mode_rolled_out &= !paused;
    plan_image_mode_logs(&mut plan, d, image_mode_condition.as_ref());
    let inputs = StatusInputs {
        oacp,
        cluster_name: &cluster_name,
        machines: &live,
        configs: &d.configs,
        install: &install,
        kubeconfig_published,
        scaling: &scaling,
        blocked: blocked.as_ref(),
        paused,
        deleting: deleting.as_deref(),
        workload_version: &d.workload_version,
        control_plane_kubelets: &d.control_plane_kubelets,
        upgrade: &upgrade.conditions,
        remediation: &decision,
        image_mode: image_mode_condition,
    };
    plan.status = status_of(oacp, &inputs, upgrade.running.as_deref(), now);
    if let remediation::Decision::Remediate(r) = &decision {
        plan.status.last_remediation = Some(LastRemediationStatus {
            machine: r.machine.clone(),
            time: now.to_string(),
            retry_count: r.retry_count,
        });
    }
    if plan.cleanup.is_none() && !paused {
        plan.machine_conditions =
            status::machine_up_to_date_conditions(oacp, &live, &d.configs, now);
        plan.owner_remediated = status::owner_remediated_condition(&d.machines, &decision, now);
    }
    // The workload API is not watched: an unanswered /version is asked again in a minute.
    if matches!(d.workload_version, WorkloadVersion::Unreachable(_))
        && plan.requeue.is_none_or(|r| r > BLOCKED_RECHECK)
    {
        plan.requeue = Some(BLOCKED_RECHECK);
    }
    plan
}

/// What the first phase decided, for the status.
struct Objects {
    blocked: Option<Blocked>,
    scaling: Scaling,
    /// What the deletion waits for, while the control plane is deleted.
    deleting: Option<String>,
}

/// The first phase: the cleanup of a deleted control plane, nothing while paused, a wait for
/// the Cluster, or the objects it asks for (or why they cannot be built).
fn plan_control_plane(
    plan: &mut Plan,
    d: &Dereferenced,
    cluster_name: &str,
    install: &Install,
    live: &[external_types::capi::Machine],
    paused: bool,
) -> Objects {
    let oacp = d.oacp.as_ref();
    let mut objects = Objects {
        blocked: None,
        scaling: Scaling::Steady,
        deleting: None,
    };

    if oacp.metadata.deletion_timestamp.is_some() {
        let (cleanup, message) = cleanup_step(d);
        plan.cleanup = Some(cleanup);
        objects.deleting = Some(message);
    } else if paused {
        plan.write_finalizer = false;
        plan.requeue = None;
    } else if d.cluster.is_none() {
        objects.blocked = Some(Blocked {
            reason: "WaitingForCluster",
            message: "waiting for a Cluster whose spec.controlPlaneRef names this control plane \
                      (CAPI then sets the owner reference)"
                .into(),
        });
    } else {
        match desired(d, cluster_name, install, live) {
            Ok(desired) => {
                (objects.scaling, objects.blocked) = plan_objects(plan, d, install, desired)
            }
            Err(b) => objects.blocked = plan_blocked(plan, oacp, b),
        }
    }
    objects
}

/// The objects of a control plane that can be built: the Hive objects, the pull secret, the
/// Machines to create (and before the install, to delete), with their events. Returns the
/// scaling decision and why Machines cannot be made, if so.
fn plan_objects(
    plan: &mut Plan,
    d: &Dereferenced,
    install: &Install,
    desired: Desired,
) -> (Scaling, Option<Blocked>) {
    let oacp = d.oacp.as_ref();
    if d.aci.is_none() {
        plan.events.push(PlannedEvent {
            warning: false,
            reason: "InstallObjectsCreated",
            note: format!(
                "Created ClusterDeployment and AgentClusterInstall {} and ClusterImageSet {}",
                oacp.name_any(),
                desired.hive.image_set.name_any()
            ),
        });
    }
    match &desired.scaling {
        Scaling::Up(names) => plan.events.push(PlannedEvent {
            warning: false,
            reason: "MachinesCreated",
            note: format!("Creating control-plane Machines {}", names.join(", ")),
        }),
        // An installed cluster's Machine goes after its etcd member: planned
        // below, once remediation has had its say.
        Scaling::Down(names) if !install.installed() => {
            plan.events.push(PlannedEvent {
                warning: false,
                reason: "MachinesDeleted",
                note: format!("Deleting control-plane Machines {}", names.join(", ")),
            });
            plan.delete = names.clone();
        }
        _ => {}
    }
    plan.pull_secret = desired.pull_secret;
    plan.hive = Some(desired.hive);
    plan.create = desired.create;
    (desired.scaling, desired.machines_blocked)
}

/// A blocked control plane: said once as a warning event, when it becomes blocked for this
/// reason (the condition keeps saying it), and looked at again in a minute.
fn plan_blocked(
    plan: &mut Plan,
    oacp: &OpenshiftAssistedControlPlane,
    b: Blocked,
) -> Option<Blocked> {
    // Said once, when the control plane becomes blocked for this reason; the
    // condition keeps saying it.
    let already = oacp.status.as_ref().is_some_and(|s| {
        conditions::find(&s.conditions, status::AVAILABLE)
            .is_some_and(|c| c.reason == b.reason && c.message == b.message)
    });
    if !already {
        plan.events.push(PlannedEvent {
            warning: true,
            reason: b.reason,
            note: b.message.clone(),
        });
    }
    // The pull secret and the template are not watched: look again now and then
    // (once a minute is no retry storm), besides on every change of the object.
    plan.requeue = Some(BLOCKED_RECHECK);
    Some(b)
}

/// The kubeconfig follows its source while the control plane lives. Whether it is published.
fn plan_kubeconfig(plan: &mut Plan, d: &Dereferenced, cluster_name: &str, paused: bool) -> bool {
    let oacp = d.oacp.as_ref();
    match (&d.admin_kubeconfig, plan.cleanup.is_none() && !paused) {
        (Some(kc), true) if !cluster_name.is_empty() => {
            plan.kubeconfig = kubeconfig::desired_secret(oacp, cluster_name, kc);
            plan.kubeconfig.is_some()
        }
        (Some(_), _) => true,
        (None, _) => false,
    }
}

/// Upgrades of the installed cluster (never while deleting or paused): the request, its
/// event, a change of its outcome said once as an event, and when to look again.
fn plan_upgrade(
    plan: &mut Plan,
    d: &Dereferenced,
    install: &Install,
    paused: bool,
) -> upgrade::Upgrade {
    let oacp = d.oacp.as_ref();
    let mut upgrade = match (&plan.cleanup, paused, release_image_of(d)) {
        (None, false, Ok(tag)) => {
            let release = release_to_use(d, &tag);
            upgrade::decide(&upgrade::UpgradeInputs {
                spec_version: &oacp.spec.distribution_version,
                release_image: release.as_deref().unwrap_or(&tag),
                release_problem: release
                    .as_ref()
                    .err()
                    .map(|b| (b.reason, b.message.as_str())),
                installed: install.installed(),
                cluster_version: &d.cluster_version,
            })
        }
        _ => upgrade::Upgrade::default(),
    };
    if let Some(message) = release_change_during_install(d) {
        upgrade.conditions = vec![conditions::Desired::false_(
            upgrade::UPGRADE_COMPLETED,
            "WaitingForInstall",
            message,
        )];
    }
    // A change of the upgrade's outcome is said once, as an event.
    let previous = |type_: &str| {
        oacp.status
            .as_ref()
            .and_then(|s| conditions::find(&s.conditions, type_))
            .map(|c| (c.status.clone(), c.reason.clone()))
    };
    for c in upgrade
        .conditions
        .iter()
        .filter(|c| c.type_ == upgrade::UPGRADE_COMPLETED)
    {
        let was = previous(upgrade::UPGRADE_COMPLETED);
        let failed = c.reason == upgrade::UPGRADE_FAILED;
        let completed = c.status == conditions::Status::True;
        let changed = was.as_ref().is_none_or(|(_, r)| r != &c.reason);
        let was_false = was.as_ref().is_some_and(|(s, _)| s == "False");
        if changed && (failed || (completed && was_false)) {
            plan.events.push(PlannedEvent {
                warning: failed,
                reason: if failed {
                    "UpgradeFailed"
                } else {
                    "UpgradeCompleted"
                },
                note: c.message.clone(),
            });
        }
    }
    plan.upgrade_request = upgrade.request.clone();
    plan.events.extend(upgrade.event.clone());
    if let Some(r) = upgrade.requeue
        && plan.requeue.is_none_or(|p| p > r)
    {
        plan.requeue = Some(r);
    }

    upgrade
}

/// Whether to remediate a control-plane Machine (never while deleting or paused, or without
/// a Cluster).
fn remediation_decision(
    plan: &Plan,
    d: &Dereferenced,
    install: &Install,
    paused: bool,
    now: Timestamp,
) -> remediation::Decision {
    let oacp = d.oacp.as_ref();
    match (&plan.cleanup, paused, &d.cluster) {
        (None, false, Some(_)) => remediation::decide(&remediation::Inputs {
            installed: install.installed(),
            replicas: machines::desired_replicas(oacp),
            machines: &d.machines,
            policy: remediation::Policy::of(oacp.spec.remediation.as_ref()),
            last: oacp
                .status
                .as_ref()
                .and_then(|s| s.last_remediation.as_ref()),
            members: &d.etcd_members,
            now,
        }),
        _ => remediation::Decision::Nothing,
    }
}

/// The image-mode rollout as last read, attached for the cluster's logs bundle.
fn plan_image_mode_logs(
    plan: &mut Plan,
    d: &Dereferenced,
    image_mode_condition: Option<&conditions::Desired>,
) {
    let oacp = d.oacp.as_ref();
    if let (image_mode::Rollout::Read(states), Some(c), Some(aci), Ok(owner)) = (
        &d.image_mode_rollout,
        image_mode_condition,
        d.aci.as_ref(),
        owner::controller_reference(oacp),
    ) {
        plan.image_mode_logs = Some(image_mode::logs_attachment(
            oacp,
            &aci.name_any(),
            owner,
            states,
            c,
        ));
    }
}

/// A remediation to carry out, or a wait said once as an event (the `Remediating` condition
/// keeps saying it); the workload's etcd is not watched, so a wait is looked at again soon.
fn plan_remediation(
    plan: &mut Plan,
    oacp: &OpenshiftAssistedControlPlane,
    decision: &remediation::Decision,
) {
    match decision {
        remediation::Decision::Nothing => {}
        remediation::Decision::Remediate(r) => {
            let member = r
                .member
                .as_ref()
                .map(|m| format!("etcd member {} ({:x}), ", m.name, m.id))
                .unwrap_or_default();
            plan.events.push(PlannedEvent {
                warning: false,
                reason: "MachineRemediated",
                note: format!(
                    "Replacing unhealthy control-plane Machine {}: removing its {member}etcd \
                     certificates and Node{}, then the Machine (retry {})",
                    r.machine,
                    r.node
                        .as_deref()
                        .map(|n| format!(" {n}"))
                        .unwrap_or_default(),
                    r.retry_count
                ),
            });
            plan.remediation = Some(r.clone());
        }
        remediation::Decision::Wait {
            reason, message, ..
        } => {
            let said = oacp.status.as_ref().is_some_and(|s| {
                conditions::find(&s.conditions, status::REMEDIATING)
                    .is_some_and(|c| c.reason == *reason)
            });
            if !said {
                plan.events.push(PlannedEvent {
                    warning: true,
                    reason: "RemediationWaiting",
                    note: message.clone(),
                });
            }
            if plan.requeue.is_none_or(|r| r > REMEDIATION_RECHECK) {
                plan.requeue = Some(REMEDIATION_RECHECK);
            }
        }
    }
}

/// The control-plane Machines' pre-terminate hooks ([`hooks`]); a Machine held at its hook is
/// said as a warning event and looked at again soon (the workload's etcd is not watched).
fn plan_hooks(plan: &mut Plan, d: &Dereferenced, installed: bool) {
    let decided = hooks::decide(
        installed,
        plan.cleanup.is_some(),
        &d.machines,
        &d.etcd_members,
    );
    if let Some((machine, why)) = &decided.waiting {
        plan.events.push(PlannedEvent {
            warning: true,
            reason: "EtcdMemberCleanupWaiting",
            note: format!(
                "Control-plane Machine {machine} is deleted; Cluster API keeps its host until its \
                 etcd member is removed: {why}"
            ),
        });
    }
    if let Some(r) = &decided.clean_up {
        plan.events.push(PlannedEvent {
            warning: false,
            reason: "EtcdMemberRemoved",
            note: format!(
                "Control-plane Machine {} is deleted: removing {}its etcd certificates before \
                 Cluster API deletes its host",
                r.machine,
                r.member
                    .as_ref()
                    .map(|m| format!("etcd member {} ({:x}) and ", m.name, m.id))
                    .unwrap_or_default()
            ),
        });
    }
    if (decided.waiting.is_some() || decided.clean_up.is_some())
        && plan.requeue.is_none_or(|r| r > REMEDIATION_RECHECK)
    {
        plan.requeue = Some(REMEDIATION_RECHECK);
    }
    plan.hooks = decided;
}

/// Scaling an installed control plane down: the Machine `names` holds goes as a remediated one
/// does (etcd member first, quorum kept), but keeps its Node for Cluster API to drain; one at a
/// time, and not while a remediation is under way. Returns the scaling to report.
fn plan_master_removal(
    plan: &mut Plan,
    d: &Dereferenced,
    names: &[String],
    remediation: &remediation::Decision,
) -> Scaling {
    let have = d
        .machines
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .count() as i32;
    let paced = |waiting_for: String| Scaling::Paced {
        wanted: machines::desired_replicas(&d.oacp),
        have,
        waiting_for,
    };
    let target = names.first().and_then(|name| {
        d.machines
            .iter()
            .find(|m| m.metadata.name.as_ref() == Some(name))
    });
    let Some(target) = target else {
        return Scaling::Steady;
    };
    match remediation {
        remediation::Decision::Nothing => {}
        remediation::Decision::Remediate(r) => {
            return paced(format!("unhealthy {} is being remediated", r.machine));
        }
        remediation::Decision::Wait { machine, .. } => {
            return paced(format!("unhealthy {machine} waits for its remediation"));
        }
    }
    match remediation::removal(target, &d.machines, &d.etcd_members) {
        Ok(removal) => {
            let member = removal
                .member
                .as_ref()
                .map(|m| format!("its etcd member {} ({:x}) and ", m.name, m.id))
                .unwrap_or_default();
            plan.events.push(PlannedEvent {
                warning: false,
                reason: "MachinesDeleted",
                note: format!(
                    "Scaling the control plane down: removing {member}etcd certificates, then \
                     control-plane Machine {}",
                    removal.machine
                ),
            });
            plan.scale_down = Some(removal);
            Scaling::Down(names.to_vec())
        }
        Err((_, message)) => {
            if plan.requeue.is_none_or(|r| r > REMEDIATION_RECHECK) {
                plan.requeue = Some(REMEDIATION_RECHECK);
            }
            paced(message)
        }
    }
}

/// What a healthy reconcile writes.
struct Desired {
    pull_secret: Option<Secret>,
    hive: HiveObjects,
    create: Vec<ControlPlaneMachine>,
    scaling: Scaling,
    /// Machines could not be built (the template), though the install objects could.
    machines_blocked: Option<Blocked>,
}

/// The objects a control plane asks for, phase by phase: the release, the install-config
/// override and the pull secret (each may block), the Hive objects, then the Machines.
fn desired(
    d: &Dereferenced,
    cluster_name: &str,
    install: &Install,
    live: &[external_types::capi::Machine],
) -> Result<Desired, Blocked> {
    let oacp = d.oacp.as_ref();
    let Some(cluster) = d.cluster.as_ref() else {
        return Err(Blocked {
            reason: "WaitingForCluster",
            message: "no owning Cluster".into(),
        });
    };
    let tag = release_image_of(d)?;
    // Before the install starts a release the registry denies blocks it; after, an upgrade
    // says so (see `upgrade`), and the image set keeps the tag.
    let release_image = match release_to_use(d, &tag) {
        Ok(image) => image,
        Err(blocked) if !install.started() => return Err(blocked),
        Err(_) => tag.clone(),
    };
    let install_config_override =
        install_config::install_config_override(oacp).map_err(|e| Blocked {
            reason: "InvalidInstallConfig",
            message: e.to_string(),
        })?;
    let (pull_secret_name, pull_secret) = pull_secret_to_use(d)?;
    let inputs = HiveBuild {
        cluster,
        install,
        pull_secret_name: &pull_secret_name,
        release_image: &release_image,
        install_config_override: install_config_override.as_deref(),
    };
    let mut hive = hive_objects(d, &inputs)?;
    keep_install_fixed(&mut hive, d, install, &tag, &release_image);
    let (create, scaling, machines_blocked) =
        machines_to_create(d, cluster, cluster_name, install, live);
    Ok(Desired {
        pull_secret,
        hive,
        create,
        scaling,
        machines_blocked,
    })
}

/// The pull secret the ClusterDeployment names, and the placeholder to create for OKD when
/// none is set; a missing one blocks.
fn pull_secret_to_use(d: &Dereferenced) -> Result<(String, Option<Secret>), Blocked> {
    let oacp = d.oacp.as_ref();
    let okd = release::is_okd(&oacp.spec.distribution_version);
    Ok(match &d.pull_secret {
        PullSecret::Present(name) => (name.clone(), None),
        PullSecret::Missing(name) => {
            return Err(Blocked {
                reason: "PullSecretNotFound",
                message: format!(
                    "Secret {name} (spec.config.pullSecretRef) does not exist in namespace {}; \
                     create it with key .dockerconfigjson",
                    oacp.namespace().unwrap_or_default()
                ),
            });
        }
        PullSecret::Unset if okd => {
            let secret = placeholder_pull_secret(oacp);
            (secret.name_any(), Some(secret))
        }
        PullSecret::Unset => {
            return Err(Blocked {
                reason: "PullSecretMissing",
                message: "spec.config.pullSecretRef is required for OpenShift (OCP) releases; \
                          only OKD installs without a pull secret"
                    .into(),
            });
        }
    })
}

/// What the Hive objects are built from, beside the dereferenced objects.
struct HiveBuild<'a> {
    cluster: &'a external_types::capi::Cluster,
    install: &'a Install,
    pull_secret_name: &'a str,
    release_image: &'a str,
    install_config_override: Option<&'a str>,
}

/// The Hive objects with the generated manifests they follow (mirrors, image mode) and the
/// push Secrets once installed.
fn hive_objects(d: &Dereferenced, b: &HiveBuild) -> Result<HiveObjects, Blocked> {
    let oacp = d.oacp.as_ref();
    let (cluster, install) = (b.cluster, b.install);
    let invalid = |e: hive::HiveError| Blocked {
        reason: "InvalidConfig",
        message: e.to_string(),
    };
    let registry = registry::desired(
        oacp,
        &d.image_registry,
        owner::controller_reference(oacp).map_err(|e| invalid(e.into()))?,
        labels::labels(oacp, &cluster.name_any()),
    )?;
    let image_mode = image_mode::desired(
        oacp,
        &d.image_mode_push_secrets,
        owner::controller_reference(oacp).map_err(|e| invalid(e.into()))?,
        labels::labels(oacp, &cluster.name_any()),
    )?;
    let generated_manifests: Vec<String> = [
        registry.as_ref().map(|r| r.manifests.name_any()),
        image_mode.as_ref().map(|m| m.manifests.name_any()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let inputs = hive::HiveInputs {
        oacp,
        cluster,
        worker_replicas: d.worker_replicas,
        pull_secret_name: b.pull_secret_name,
        release_image: b.release_image,
        install_config_override: b.install_config_override,
        generated_manifests: &generated_manifests,
    };
    let mut hive = HiveObjects {
        image_set: hive::cluster_image_set(&inputs).map_err(invalid)?,
        cluster_deployment: hive::cluster_deployment(&inputs).map_err(invalid)?,
        agent_cluster_install: hive::agent_cluster_install(&inputs).map_err(invalid)?,
        registry_manifests: None,
        image_mode_manifests: None,
        push_secrets: Vec::new(),
    };
    // The push Secrets reach the installed cluster after the install; the core counts them.
    if let Some(m) = image_mode {
        hive.agent_cluster_install
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(
                image_mode::POST_INSTALL_SECRETS_ANNOTATION.to_string(),
                m.post_install_secrets,
            );
        hive.image_mode_manifests = Some(m.manifests);
        if install.installed() {
            hive.push_secrets = m.push_secrets;
        }
    }
    // The core renders the mirrors into the install-config from the user's ConfigMap.
    if let Some(r) = registry {
        hive.agent_cluster_install.spec.mirror_registry_ref =
            Some(assisted_api::infraenv::NamespacedReference {
                name: r.mirror_config_map,
                namespace: oacp.namespace().unwrap_or_default(),
            });
        hive.registry_manifests = Some(r.manifests);
    }
    Ok(hive)
}

/// What the install started with stays: the digest's version and architecture, the release
/// while the install runs, and the count of masters once it started.
fn keep_install_fixed(
    hive: &mut HiveObjects,
    d: &Dereferenced,
    install: &Install,
    tag: &str,
    release_image: &str,
) {
    let oacp = d.oacp.as_ref();
    // A digest names no version: the core reads it (and the architecture) from annotations.
    if release_image != tag {
        hive.image_set.metadata.annotations = Some(
            [
                (
                    RELEASE_VERSION_ANNOTATION.to_string(),
                    release::parse_distribution_version(&oacp.spec.distribution_version)
                        .map(|v| v.to_string())
                        .unwrap_or_default(),
                ),
                (
                    RELEASE_ARCHITECTURE_ANNOTATION.to_string(),
                    release_from_tag(tag).1,
                ),
            ]
            .into(),
        );
    }
    // The release is fixed while the install runs: a new distributionVersion waits for it to
    // finish, then becomes an upgrade.
    if let Some(current) = &d.installing_image_set {
        hive.image_set
            .spec
            .release_image
            .clone_from(&current.spec.release_image);
        hive.image_set
            .metadata
            .annotations
            .clone_from(&current.metadata.annotations);
    }
    // The masters are fixed once the install started: a replica change is refused (see
    // `Scaling::Frozen`), so the install keeps the count it started with.
    if install.started()
        && let Some(current) = &d.aci
    {
        hive.agent_cluster_install
            .spec
            .provision_requirements
            .control_plane_agents = current.spec.provision_requirements.control_plane_agents;
    }
}

/// The scaling decision and the Machines it creates from the infrastructure template (spread
/// over the failure domains); a template that is missing or does not clone blocks scaling up.
fn machines_to_create(
    d: &Dereferenced,
    cluster: &external_types::capi::Cluster,
    cluster_name: &str,
    install: &Install,
    live: &[external_types::capi::Machine],
) -> (Vec<ControlPlaneMachine>, Scaling, Option<Blocked>) {
    let oacp = d.oacp.as_ref();
    let existing: Vec<String> = live
        .iter()
        .filter_map(|m| m.metadata.name.clone())
        .collect();
    let taken: Vec<String> = d
        .machines
        .iter()
        .filter_map(|m| m.metadata.name.clone())
        .collect();
    let phase = if install.installed() {
        machines::InstallPhase::Installed(installed_control_plane(d, live))
    } else if install.started() {
        machines::InstallPhase::Running
    } else {
        machines::InstallPhase::NotStarted
    };
    let scaling = machines::scaling(
        &oacp.name_any(),
        &existing,
        &taken,
        machines::desired_replicas(oacp),
        &phase,
    );
    match (&scaling, &d.template) {
        (Scaling::Up(names), Template::Found(template, resource)) => {
            let inputs = MachineInputs {
                oacp,
                cluster_name,
                template,
                template_resource: resource,
            };
            match build_machines(&inputs, cluster, install.installed(), live, &taken, names) {
                Ok(create) => (create, scaling, None),
                Err(e) => (
                    Vec::new(),
                    Scaling::Steady,
                    Some(Blocked {
                        reason: "InfrastructureTemplateCloningFailed",
                        message: e.to_string(),
                    }),
                ),
            }
        }
        (Scaling::Up(_), Template::NotFound(message) | Template::UnknownKind(message)) => (
            Vec::new(),
            Scaling::Steady,
            Some(Blocked {
                reason: "InfrastructureTemplateNotFound",
                message: message.clone(),
            }),
        ),
        _ => (Vec::new(), scaling, None),
    }
}
/// The new control-plane Machines, spread over the failure domains; a replacement carries
/// the annotation that says which Machine it replaces.
fn build_machines(
    inputs: &MachineInputs,
    cluster: &external_types::capi::Cluster,
    installed: bool,
    live: &[external_types::capi::Machine],
    taken: &[String],
    names: &[String],
) -> Result<Vec<ControlPlaneMachine>, machines::TemplateError> {
    let domains = machines::control_plane_failure_domains(cluster);
    let used: Vec<Option<String>> = live.iter().map(|m| m.spec.failure_domain.clone()).collect();
    let placed = machines::spread(&domains, &used, names.len());
    let replacing = replacement_annotation(inputs.oacp, taken, installed);
    names
        .iter()
        .zip(placed)
        .map(|(name, fd)| {
            let mut built = machines::control_plane_machine(inputs, name, fd)?;
            if let Some((key, value)) = &replacing {
                built
                    .machine
                    .metadata
                    .annotations
                    .get_or_insert_default()
                    .insert(key.clone(), value.clone());
            }
            Ok(built)
        })
        .collect()
}

/// The installed control plane as [`machines::scaling`] weighs it: the masters it was installed
/// with, whether `spec.replicas` is a size the cluster can have (on the release it runs), the
/// Machine still joining, and those Cluster API's delete-machine annotation marks.
fn installed_control_plane(d: &Dereferenced, live: &[Machine]) -> machines::Installed {
    let masters = d
        .aci
        .as_ref()
        .map_or(0, |a| a.spec.provision_requirements.control_plane_agents);
    let running = d
        .oacp
        .status
        .as_ref()
        .and_then(|s| s.distribution_version.as_deref())
        .unwrap_or(&d.oacp.spec.distribution_version);
    let version = release::parse_distribution_version(running)
        .ok()
        .map(|v| (v.major, v.minor));
    let name = |m: &Machine| m.metadata.name.clone();
    machines::Installed {
        masters,
        refused: machines::size_supported(masters, machines::desired_replicas(&d.oacp), version)
            .err()
            .map(|why| why.to_string()),
        joining: live
            .iter()
            .find(|m| remediation::node_of(m).is_none())
            .and_then(name),
        marked: live
            .iter()
            .filter(|m| {
                m.annotations()
                    .contains_key(machines::DELETE_MACHINE_ANNOTATION)
            })
            .filter_map(name)
            .collect(),
    }
}

/// A Machine made after install replaces the last remediated one (gone by now): it carries
/// [`remediation::REMEDIATION_FOR`], so its own failure soon after counts as a retry.
fn replacement_annotation(
    oacp: &OpenshiftAssistedControlPlane,
    taken: &[String],
    installed: bool,
) -> Option<(String, String)> {
    let last = oacp.status.as_ref()?.last_remediation.as_ref()?;
    if !installed || taken.contains(&last.machine) {
        return None;
    }
    let value = serde_json::to_string(&remediation::RemediationFor::of(last)).ok()?;
    Some((remediation::REMEDIATION_FOR.to_string(), value))
}

/// A `distributionVersion` changed while the day-1 install runs: said, never applied to it.
fn release_change_during_install(d: &Dereferenced) -> Option<String> {
    let current = d.installing_image_set.as_ref()?;
    let installing = image_set_version(current)?;
    let wanted = release::parse_distribution_version(&d.oacp.spec.distribution_version).ok()?;
    (installing != wanted.to_string()).then(|| {
        format!(
            "distributionVersion {wanted} changed while the install of {installing} ({}) runs: it \
             goes on with that release, and the upgrade is asked for once it is installed",
            current.spec.release_image
        )
    })
}

/// The release image `spec.distributionVersion` names (CAPOA's rules, see `release`): a tag.
fn release_image_of(d: &Dereferenced) -> Result<String, Blocked> {
    release::control_plane_release_image(&d.oacp, &d.architectures)
}

/// The release image to install or upgrade to: pinned by digest when its registry answered,
/// the tag when it could not be asked; a release the registry does not have, or will not give
/// with the pull secret, is a problem named with the registry's answer.
fn release_to_use(d: &Dereferenced, tag: &str) -> Result<String, Blocked> {
    let version = &d.oacp.spec.distribution_version;
    match &d.release_lookup {
        Some(Lookup::Pinned(image)) => Ok(image.clone()),
        Some(Lookup::NotFound(answer)) => Err(Blocked {
            reason: "ReleaseImageNotFound",
            message: format!(
                "the release image {tag} of distributionVersion {version} does not exist: {answer}; \
                 check the version (and cluster.x-k8s.io/release-image-repository-override)"
            ),
        }),
        Some(Lookup::Refused(answer)) => Err(Blocked {
            reason: "ReleaseImageAccessDenied",
            message: format!(
                "the registry refused the release image {tag} with the cluster's pull secret \
                 (spec.config.pullSecretRef): {answer}"
            ),
        }),
        Some(Lookup::Unreachable(_)) | None => Ok(tag.to_string()),
    }
}

/// The OpenShift version a ClusterImageSet installs: its annotation, else its image's tag.
fn image_set_version(set: &ClusterImageSet) -> Option<String> {
    set.annotations()
        .get(RELEASE_VERSION_ANNOTATION)
        .cloned()
        .or_else(|| release_from_tag(&set.spec.release_image).0)
}

/// OKD installs without a pull secret, but the assisted installer insists on one (CAPOA's
/// MGMT-18017): a placeholder, owned by this control plane and named after it (CAPOA's single
/// `placeholder-pull-secret` per namespace is shared by clusters that never agreed to share it),
/// used without writing it into the user's spec.
pub fn placeholder_pull_secret(oacp: &OpenshiftAssistedControlPlane) -> Secret {
    // base64("placeholder:secret")
    const AUTHS: &str = r#"{"auths":{"fake-pull-secret":{"auth":"cGxhY2Vob2xkZXI6c2VjcmV0"}}}"#;
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{}-placeholder-pull-secret", oacp.name_any())),
            namespace: oacp.namespace(),
            owner_references: owner::reference(oacp, true).map(|o| vec![o]),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(std::collections::BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            k8s_openapi::ByteString(AUTHS.as_bytes().to_vec()),
        )])),
        ..Default::default()
    }
}

fn install_of(aci: Option<&AgentClusterInstall>) -> Install {
    let Some(status) = aci.and_then(|a| a.status.as_ref()) else {
        return Install::default();
    };
    let message_while_false = |type_: &str, reason: Option<&str>| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .filter(|c| {
                c.status == "False" && reason.is_none_or(|r| c.reason.as_deref() == Some(r))
            })
            .and_then(|c| c.message.clone())
            .unwrap_or_default()
    };
    Install {
        state: status.debug_info.state.clone().unwrap_or_default(),
        state_info: status.debug_info.state_info.clone().unwrap_or_default(),
        percentage: status.progress.total_percentage,
        failing_validations: message_while_false("Validated", Some("ValidationsFailing")),
        spec_error: message_while_false("SpecSynced", Some("InputError")),
        unsupported_fields: message_while_false(conditions::FIELDS_SUPPORTED, None),
    }
}

/// The next deletion step and the message `Deleting` shows meanwhile.
fn cleanup_step(d: &Dereferenced) -> (Cleanup, String) {
    if !d.machines.is_empty() {
        let names: Vec<String> = d
            .machines
            .iter()
            .filter(|m| m.metadata.deletion_timestamp.is_none())
            .filter_map(|m| m.metadata.name.clone())
            .collect();
        let message = format!(
            "waiting for {} control-plane Machine(s) to be deleted",
            d.machines.len()
        );
        return (Cleanup::Machines(names), message);
    }
    if d.aci.is_some() || d.cluster_deployment_exists {
        let name = d.oacp.name_any();
        return (
            Cleanup::InstallObjects {
                name: name.clone(),
                image_set: Some(release::cluster_image_set_name(
                    &d.oacp.namespace().unwrap_or_default(),
                    &name,
                )),
            },
            format!(
                "waiting for AgentClusterInstall and ClusterDeployment {name} to be deleted \
                 (the assisted core deregisters the cluster first)"
            ),
        );
    }
    (
        Cleanup::Done {
            image_set: release::cluster_image_set_name(
                &d.oacp.namespace().unwrap_or_default(),
                &d.oacp.name_any(),
            ),
        },
        "removing the finalizer".into(),
    )
}

/// How often an installed cluster's image-mode rollout is read again while it is not done (the
/// installed cluster's objects are not watched).
const IMAGE_MODE_RECHECK: Duration = Duration::from_secs(15);

/// The image-mode rollout's outcome said once, as an event (a failure is a warning, as an
/// install failure); while it is not done, read again soon.
fn plan_image_mode(
    plan: &mut Plan,
    oacp: &OpenshiftAssistedControlPlane,
    c: Option<&conditions::Desired>,
) {
    let Some(c) = c else {
        return;
    };
    let was = oacp
        .status
        .as_ref()
        .and_then(|s| conditions::find(&s.conditions, image_mode::IMAGE_MODE))
        .map(|p| p.reason.clone());
    let changed = was.as_deref() != Some(c.reason.as_str());
    match c.reason.as_str() {
        "RolloutFailed" if changed => plan.events.push(PlannedEvent {
            warning: true,
            reason: "ImageModeRolloutFailed",
            note: c.message.clone(),
        }),
        "RolledOut" if changed => plan.events.push(PlannedEvent {
            warning: false,
            reason: "ImageModeRolledOut",
            note: c.message.clone(),
        }),
        _ => {}
    }
    plan.image_mode_rolled_out = c.reason == "RolledOut" && !image_mode::rolled_out_once(oacp);
    if matches!(
        c.reason.as_str(),
        "RollingOut" | "NotRead" | "WorkloadUnreachable" | "RolloutFailed"
    ) && plan.requeue.is_none_or(|r| r > IMAGE_MODE_RECHECK)
    {
        plan.requeue = Some(IMAGE_MODE_RECHECK);
    }
}

/// The status from `inputs`; `running` is the version the installed cluster's CVO completed
/// last, when it was read.
fn status_of(
    oacp: &OpenshiftAssistedControlPlane,
    inputs: &StatusInputs,
    running: Option<&str>,
    now: Timestamp,
) -> OpenshiftAssistedControlPlaneStatus {
    let previous = oacp.status.clone().unwrap_or_default();
    let counters = status::counters(inputs);
    let desired = status::desired_conditions(inputs);
    let initialized = inputs.kubeconfig_published
        || previous
            .initialization
            .as_ref()
            .and_then(|i| i.control_plane_initialized)
            == Some(true);
    let conditions = conditions::merge_owned(
        &previous.conditions,
        &desired,
        &[conditions::FIELDS_SUPPORTED],
        oacp.metadata.generation,
        now,
    );
    // Unchanged conditions keep their timestamps, so an unchanged status compares equal.
    OpenshiftAssistedControlPlaneStatus {
        conditions,
        initialization: Some(ControlPlaneInitialization {
            control_plane_initialized: Some(initialized),
        }),
        selector: (!inputs.cluster_name.is_empty()).then(|| counters.selector.clone()),
        replicas: Some(counters.replicas),
        ready_replicas: Some(counters.ready),
        available_replicas: Some(counters.available),
        up_to_date_replicas: Some(counters.up_to_date),
        version: status::kubernetes_version(
            previous.version.as_deref(),
            inputs.workload_version,
            inputs.control_plane_kubelets,
            inputs.kubeconfig_published,
        )
        .0,
        versions: status::versions(inputs.control_plane_kubelets),
        // What the cluster runs: its CVO's newest Completed version once read, else the
        // version installed.
        distribution_version: running
            .map(str::to_string)
            .or(previous.distribution_version.clone())
            .or_else(|| {
                inputs
                    .install
                    .available()
                    .then(|| oacp.spec.distribution_version.clone())
            }),
        last_remediation: previous.last_remediation.clone(),
        observed_generation: oacp.metadata.generation,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use external_types::capi::Cluster;
    use kube::api::{ApiResource, DynamicObject};

    use super::*;
    use crate::controller::dereference::{Dereferenced, PullSecret, Template};

    fn t0() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    fn oacp(extra_metadata: &str) -> OpenshiftAssistedControlPlane {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata:
  name: cp
  namespace: ns
  uid: 11111111-2222-3333-4444-555555555555
  generation: 2
  ownerReferences: [{{apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster, name: c1, uid: c-uid}}]
  {extra_metadata}
spec:
  distributionVersion: 4.20.0
  replicas: 3
  machineTemplate:
    infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: cp-template}}
  openshiftAssistedConfigSpec: {{sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVk}}
  config:
    apiVIPs: [192.168.111.5]
    ingressVIPs: [192.168.111.4]
    baseDomain: lab.home
    pullSecretRef: {{name: pull-secret}}
"#
        ))
        .unwrap()
    }

    fn cluster() -> Cluster {
        serde_yaml::from_str(
            r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c1, namespace: ns, uid: c-uid}
spec:
  clusterNetwork:
    pods: {cidrBlocks: ["10.128.0.0/14"]}
    services: {cidrBlocks: ["172.30.0.0/16"]}
"#,
        )
        .unwrap()
    }

    fn template() -> Template {
        let resource = ApiResource {
            group: "infrastructure.cluster.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "infrastructure.cluster.x-k8s.io/v1beta2".into(),
            kind: "Metal3MachineTemplate".into(),
            plural: "metal3machinetemplates".into(),
        };
        let object: DynamicObject = serde_yaml::from_str(
            r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {name: cp-template, namespace: ns}
spec: {template: {spec: {image: {url: "http://x/y.iso", checksum: "", diskFormat: live-iso}}}}
"#,
        )
        .unwrap();
        Template::Found(Box::new(object), resource)
    }

    fn dereferenced(oacp: OpenshiftAssistedControlPlane) -> Dereferenced {
        Dereferenced {
            oacp: Arc::new(oacp),
            cluster: Some(cluster()),
            worker_replicas: 2,
            machines: Vec::new(),
            configs: Default::default(),
            architectures: vec![None],
            template: template(),
            aci: None,
            cluster_deployment_exists: false,
            admin_kubeconfig: None,
            workload_version: WorkloadVersion::NotRead,
            cluster_version: crate::controller::upgrade::WorkloadClusterVersion::NotRead,
            control_plane_kubelets: Vec::new(),
            workload: None,
            installing_image_set: None,
            release_lookup: None,
            pull_secret: PullSecret::Present("pull-secret".into()),
            image_registry: crate::controller::registry::ImageRegistry::Unset,
            image_mode_push_secrets: Default::default(),
            image_mode_rollout: Default::default(),
            etcd_members: remediation::Members::NotRead,
        }
    }

    fn condition<'a>(
        plan: &'a Plan,
        type_: &str,
    ) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        plan.status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap()
    }

    fn aci_in(state: &str) -> AgentClusterInstall {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "extensions.hive.openshift.io/v1beta1",
            "kind": "AgentClusterInstall",
            "metadata": {"name": "cp", "namespace": "ns"},
            "spec": {"clusterDeploymentRef": {"name": "cp"}, "imageSetRef": {"name": "ns.cp"}, "provisionRequirements": {"controlPlaneAgents": 3}},
            "status": {"debugInfo": {"state": state}},
        }))
        .unwrap()
    }

    #[test]
    fn the_image_registry_reaches_the_aci_and_its_manifests() {
        use crate::controller::registry::ImageRegistry;
        let mut d = dereferenced(oacp(""));
        d.image_registry = ImageRegistry::Present {
            name: "mirrors".into(),
            data: [(
                "registries.conf".to_string(),
                "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"m.example.com/ocp\"\n".to_string(),
            )]
            .into(),
        };
        let hive = plan(&d, t0()).hive.expect("install objects");
        let aci = &hive.agent_cluster_install.spec;
        assert_eq!(
            aci.mirror_registry_ref
                .as_ref()
                .map(|r| (r.name.as_str(), r.namespace.as_str())),
            Some(("mirrors", "ns"))
        );
        let generated = hive
            .registry_manifests
            .as_ref()
            .expect("manifests ConfigMap");
        assert!(
            aci.manifests_config_map_refs
                .iter()
                .any(|r| Some(&r.name) == generated.metadata.name.as_ref()),
            "{:?}",
            aci.manifests_config_map_refs
        );

        // Missing: nothing is written, Available says why.
        d.image_registry = ImageRegistry::Missing("mirrors".into());
        let p = plan(&d, t0());
        assert!(p.hive.is_none());
        assert_eq!(
            condition(&p, "Available").reason,
            "ImageRegistryConfigNotFound"
        );
    }

    #[test]
    fn a_new_release_during_the_install_waits_for_it_then_becomes_an_upgrade() {
        let mut d = dereferenced(oacp(""));
        d.aci = Some(aci_in("installing"));
        let started_with = "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64";
        let mut image_set = plan(&d, t0()).hive.unwrap().image_set;
        image_set.spec.release_image = started_with.into();
        d.installing_image_set = Some(image_set);
        // spec says 4.20.0; the install began with 4.19.0.
        let p = plan(&d, t0());
        assert_eq!(
            p.hive.as_ref().unwrap().image_set.spec.release_image,
            started_with
        );
        let c = condition(&p, upgrade::UPGRADE_COMPLETED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "WaitingForInstall")
        );
        assert!(c.message.contains(started_with), "{}", c.message);
        assert!(p.upgrade_request.is_none());

        // Installed, the CVO running 4.19.0: the upgrade is asked for.
        d.aci = Some(aci_in("installed"));
        d.installing_image_set = None;
        d.cluster_version = upgrade::WorkloadClusterVersion::Read(Box::new(
            upgrade::ClusterVersion::from_object(&serde_json::json!({"status": {"history": [
                {"state": "Completed", "version": "4.19.0", "completionTime": "2026-01-01T00:00:00Z"}
            ]}})),
        ));
        let p = plan(&d, t0());
        assert_eq!(
            p.hive.as_ref().unwrap().image_set.spec.release_image,
            "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"
        );
        assert_eq!(
            p.upgrade_request.as_ref().map(|u| u.version.as_str()),
            Some("4.20.0")
        );
        assert_eq!(p.status.distribution_version.as_deref(), Some("4.19.0"));
        assert_eq!(p.requeue, Some(upgrade::UPGRADE_RECHECK));
        assert!(p.events.iter().any(|e| e.reason == "UpgradeRequested"));
    }

    #[test]
    fn the_registrys_answer_pins_or_blocks_the_release() {
        const PINNED: &str = "quay.io/openshift-release-dev/ocp-release@sha256:0123";
        let mut d = dereferenced(oacp(""));
        d.release_lookup = Some(Lookup::Pinned(PINNED.into()));
        let set = plan(&d, t0()).hive.unwrap().image_set;
        assert_eq!(set.spec.release_image, PINNED);
        let annotations = set.metadata.annotations.unwrap();
        assert_eq!(annotations[RELEASE_VERSION_ANNOTATION], "4.20.0");
        assert_eq!(annotations[RELEASE_ARCHITECTURE_ANNOTATION], "x86_64");

        // No answer: the tag, as before.
        d.release_lookup = Some(Lookup::Unreachable("dns error".into()));
        let set = plan(&d, t0()).hive.unwrap().image_set;
        assert!(set.spec.release_image.ends_with(":4.20.0-x86_64"));
        assert!(set.metadata.annotations.is_none());

        // Not there: nothing is written before the install, and Available says why.
        d.release_lookup = Some(Lookup::NotFound("registry answered 404".into()));
        let p = plan(&d, t0());
        assert!(p.hive.is_none());
        let c = condition(&p, status::AVAILABLE);
        assert_eq!(c.reason, "ReleaseImageNotFound");
        assert!(c.message.contains("registry answered 404"), "{}", c.message);

        // Installed: the upgrade is refused with the registry's answer, nothing asked.
        d.aci = Some(aci_in("installed"));
        d.cluster_version = upgrade::WorkloadClusterVersion::Read(Box::new(
            upgrade::ClusterVersion::from_object(&serde_json::json!({"status": {"history": [
                {"state": "Completed", "version": "4.19.0", "completionTime": "2026-01-01T00:00:00Z"}
            ]}})),
        ));
        d.release_lookup = Some(Lookup::Refused("registry answered 401".into()));
        let p = plan(&d, t0());
        assert!(p.hive.is_some(), "the installed cluster's objects are kept");
        assert!(p.upgrade_request.is_none());
        let c = condition(&p, upgrade::UPGRADE_COMPLETED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "ReleaseImageAccessDenied")
        );
        // Pinned: the CVO is asked for the digest.
        d.release_lookup = Some(Lookup::Pinned(PINNED.into()));
        let request = plan(&d, t0()).upgrade_request.unwrap();
        assert_eq!((request.image.as_str(), request.force), (PINNED, false));
    }

    #[test]
    fn a_new_control_plane_gets_its_finalizer_install_objects_and_all_masters_at_once() {
        let plan = plan(&dereferenced(oacp("")), t0());
        assert!(plan.write_finalizer);
        let hive = plan.hive.as_ref().unwrap();
        let requirements = &hive.agent_cluster_install.spec.provision_requirements;
        assert_eq!(
            (
                requirements.control_plane_agents,
                requirements.worker_agents
            ),
            (3, 2)
        );
        assert_eq!(
            hive.image_set.spec.release_image,
            "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"
        );
        let names: Vec<_> = plan.create.iter().map(|m| m.machine.name_any()).collect();
        assert_eq!(names, ["cp-0", "cp-1", "cp-2"]);
        assert_eq!(plan.status.replicas, Some(0));
        assert_eq!(condition(&plan, "ScalingUp").status, "True");
        assert_eq!(
            condition(&plan, "Available").reason,
            "ControlPlaneInstalling"
        );
        assert!(plan.status.selector.is_some());
        assert!(
            plan.events
                .iter()
                .any(|e| e.reason == "InstallObjectsCreated")
        );
    }

    #[test]
    fn invalid_or_missing_input_blocks_with_a_reason_and_writes_nothing_else() {
        // (what is wrong, expected reason)
        let mut unknown_version = dereferenced(oacp(""));
        Arc::make_mut(&mut unknown_version.oacp)
            .spec
            .distribution_version = "latest".into();
        let mut old_version = dereferenced(oacp(""));
        Arc::make_mut(&mut old_version.oacp)
            .spec
            .distribution_version = "4.12.0".into();
        let mut missing_secret = dereferenced(oacp(""));
        missing_secret.pull_secret = PullSecret::Missing("pull-secret".into());
        let mut no_secret = dereferenced(oacp(""));
        no_secret.pull_secret = PullSecret::Unset;
        let mut no_cluster = dereferenced(oacp(""));
        no_cluster.cluster = None;
        // Past the webhook (or without it): the API VIP alone would silently drop both.
        let mut api_vip_alone = dereferenced(oacp(""));
        if let Some(config) = Arc::make_mut(&mut api_vip_alone.oacp).spec.config.as_mut() {
            config.ingress_vips.clear();
        }
        let rows = [
            (unknown_version, "InvalidDistributionVersion"),
            (old_version, "InvalidDistributionVersion"),
            (missing_secret, "PullSecretNotFound"),
            (no_secret, "PullSecretMissing"),
            (no_cluster, "WaitingForCluster"),
            (api_vip_alone, "InvalidConfig"),
        ];
        for (d, reason) in rows {
            let plan = plan(&d, t0());
            assert_eq!(condition(&plan, "Available").reason, reason);
            assert!(plan.hive.is_none() && plan.create.is_empty(), "{reason}");
            assert!(
                plan.requeue.is_some(),
                "{reason}: looked at again without a retry storm"
            );
        }
    }

    #[test]
    fn a_control_plane_without_an_infrastructure_reference_is_blocked_not_a_panic() {
        let mut oacp = oacp("");
        oacp.spec.machine_template = Default::default();
        let message = machines::infrastructure_reference(&oacp)
            .unwrap_err()
            .to_string();
        let mut d = dereferenced(oacp);
        d.template = Template::NotFound(message.clone());
        let p = plan(&d, t0());
        assert!(p.create.is_empty());
        let c = condition(&p, "Available");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("False", "InfrastructureTemplateNotFound", message.as_str())
        );
        assert!(message.contains("spec.machineTemplate.spec.infrastructureRef"));
    }

    #[test]
    fn okd_without_a_pull_secret_gets_a_placeholder_owned_by_the_control_plane() {
        let mut d = dereferenced(oacp(""));
        Arc::make_mut(&mut d.oacp).spec.distribution_version = "4.19.0-okd-scos.ec.6".into();
        d.pull_secret = PullSecret::Unset;
        let plan = plan(&d, t0());
        let secret = plan.pull_secret.as_ref().unwrap();
        assert_eq!(secret.name_any(), "cp-placeholder-pull-secret");
        let hive = plan.hive.as_ref().unwrap();
        assert_eq!(
            hive.cluster_deployment
                .spec
                .pull_secret_ref
                .as_ref()
                .unwrap()
                .name,
            "cp-placeholder-pull-secret"
        );
        assert_eq!(
            hive.image_set.spec.release_image,
            "quay.io/okd/scos-release:4.19.0-okd-scos.ec.6"
        );
    }

    #[test]
    fn while_the_install_runs_the_master_count_waits_for_it() {
        let mut d = dereferenced(oacp(""));
        let first = plan(&d, t0());
        let mut aci = first.hive.unwrap().agent_cluster_install;
        aci.status =
            serde_json::from_value(serde_json::json!({"debugInfo": {"state": "installing"}}))
                .unwrap();
        d.aci = Some(aci);
        d.machines = first.create.iter().map(|m| m.machine.clone()).collect();
        Arc::make_mut(&mut d.oacp).spec.replicas = Some(5);
        let plan = plan(&d, t0());
        assert!(plan.create.is_empty());
        assert_eq!(condition(&plan, "ScalingUp").reason, "WaitingForInstall");
        let requirements = &plan
            .hive
            .unwrap()
            .agent_cluster_install
            .spec
            .provision_requirements;
        assert_eq!(requirements.control_plane_agents, 3);
    }

    /// An installed control plane on `version` asking for `replicas`, with these Machines each
    /// on its Node (of the same name).
    fn installed(version: &str, replicas: i32, machines: &[&str]) -> Dereferenced {
        let mut o = oacp("");
        o.spec.distribution_version = version.into();
        o.spec.replicas = Some(replicas);
        let mut d = dereferenced(o);
        d.aci = Some(aci_in("installed"));
        d.machines = machines
            .iter()
            .map(|name| {
                serde_json::from_value(serde_json::json!({
                    "apiVersion": "cluster.x-k8s.io/v1beta2",
                    "kind": "Machine",
                    "metadata": {"name": name, "namespace": "ns"},
                    "spec": {
                        "clusterName": "c1",
                        "bootstrap": {},
                        "infrastructureRef": {
                            "apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "Metal3Machine",
                            "name": name,
                        },
                    },
                    "status": {"nodeRef": {"name": name}},
                }))
                .unwrap()
            })
            .collect();
        d
    }

    #[test]
    fn an_installed_control_plane_scales_up_one_day2_master_at_a_time() {
        let d = installed("4.20.0", 5, &["cp-0", "cp-1", "cp-2"]);
        let plan = plan(&d, t0());
        let created: Vec<_> = plan.create.iter().map(|m| m.machine.name_any()).collect();
        assert_eq!(created, ["cp-3"]);
        assert_eq!(condition(&plan, "ScalingUp").status, "True");
        // The ACI keeps the masters it installed with: the new one is a day-2 host.
        let aci = plan.hive.unwrap().agent_cluster_install;
        assert_eq!(aci.spec.provision_requirements.control_plane_agents, 3);

        // The next waits for the new Machine's Node.
        let mut d = installed("4.20.0", 5, &["cp-0", "cp-1", "cp-2", "cp-3"]);
        d.machines[3].status = None;
        let plan = super::plan(&d, t0());
        assert!(plan.create.is_empty());
        let up = condition(&plan, "ScalingUp");
        assert_eq!(
            (up.status.as_str(), up.reason.as_str()),
            ("True", "ScalingUp")
        );
        assert!(
            up.message.contains("cp-3 has no Node yet"),
            "{}",
            up.message
        );
    }

    #[test]
    fn a_size_the_release_cannot_run_is_refused_with_the_release_named() {
        let d = installed("4.17.3", 5, &["cp-0", "cp-1", "cp-2"]);
        let plan = plan(&d, t0());
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        let up = condition(&plan, "ScalingUp");
        assert_eq!(
            (up.status.as_str(), up.reason.as_str()),
            ("False", "ScalingNotSupported")
        );
        assert!(
            up.message.contains("OpenShift 4.17 supports 3"),
            "{}",
            up.message
        );
        assert!(up.message.contains("4.18 or later"), "{}", up.message);

        let d = installed("4.20.0", 2, &["cp-0", "cp-1", "cp-2"]);
        let plan = super::plan(&d, t0());
        assert!(plan.delete.is_empty() && plan.scale_down.is_none());
        let down = condition(&plan, "ScalingDown");
        assert_eq!(down.reason, "ScalingNotSupported");
        assert!(down.message.contains("at least 3"), "{}", down.message);
    }

    #[test]
    fn an_installed_control_plane_scales_down_its_etcd_member_first() {
        let names = ["cp-0", "cp-1", "cp-2", "cp-3", "cp-4"];
        let mut d = installed("4.20.0", 3, &names);
        // Without the member list nothing goes.
        let plan = plan(&d, t0());
        assert!(plan.delete.is_empty() && plan.scale_down.is_none());
        let down = condition(&plan, "ScalingDown");
        assert_eq!(
            (down.status.as_str(), down.reason.as_str()),
            ("True", "ScalingDown")
        );
        assert!(
            down.message.contains("etcd member list"),
            "{}",
            down.message
        );

        d.etcd_members = remediation::Members::Read(
            names
                .iter()
                .zip(1u64..)
                .map(|(n, id)| remediation::Member {
                    id,
                    name: n.to_string(),
                })
                .collect(),
        );
        let plan = super::plan(&d, t0());
        // Not a plain delete: the member, its Secrets, then the Machine; Cluster API drains
        // the Node.
        assert!(plan.delete.is_empty());
        let removal = plan.scale_down.expect("a removal");
        assert_eq!(removal.machine, "cp-4");
        assert_eq!(removal.member.map(|m| m.id), Some(5));
        assert!(!removal.delete_node);
        assert!(removal.exec_node.is_some_and(|n| n != "cp-4"));
        assert!(plan.events.iter().any(|e| e.reason == "MachinesDeleted"));
        // Remediation keeps its own removal: none is planned twice.
        assert!(plan.remediation.is_none());
    }

    #[test]
    fn what_the_core_says_about_the_aci_shows_on_the_control_plane() {
        let mut d = dereferenced(oacp(""));
        Arc::make_mut(&mut d.oacp)
            .spec
            .config
            .get_or_insert_with(Default::default)
            .masters_schedulable = Some(true);
        let mut aci = plan(&d, t0()).hive.unwrap().agent_cluster_install;
        aci.status = serde_json::from_value(serde_json::json!({
            "debugInfo": {"state": "insufficient"},
            "conditions": [
                {"type": "SpecSynced", "status": "False", "reason": "InputError",
                 "message": "The Spec could not be synced due to an input error: \
                     spec.mastersSchedulable is not supported yet: control-plane nodes run \
                     workloads only in clusters without workers"},
                {"type": "FieldsSupported", "status": "False", "reason": "UnsupportedFields",
                 "message": "Some fields are set that are not supported yet and have no \
                     effect: ClusterDeployment spec.manageDNS is not supported yet"},
            ],
        }))
        .unwrap();
        d.aci = Some(aci.clone());
        let first = plan(&d, t0());
        let available = condition(&first, "Available");
        assert_eq!(available.reason, "InstallInputError");
        assert!(
            available
                .message
                .contains("spec.mastersSchedulable is not supported yet"),
            "{}",
            available.message
        );
        assert!(
            available
                .message
                .ends_with("(from this control plane's spec.config.mastersSchedulable)"),
            "{}",
            available.message
        );
        let fields = condition(&first, "FieldsSupported");
        assert_eq!(
            (fields.status.as_str(), fields.reason.as_str()),
            ("False", "UnsupportedFields")
        );
        assert!(
            fields.message.ends_with(
                "AgentClusterInstall cp: ClusterDeployment spec.manageDNS is not supported yet"
            ),
            "{}",
            fields.message
        );

        // The core reports nothing any more: FieldsSupported leaves, Available says installing.
        aci.status = serde_json::from_value(serde_json::json!({
            "debugInfo": {"state": "installing"},
            "conditions": [{"type": "SpecSynced", "status": "True", "reason": "SyncOK"}],
        }))
        .unwrap();
        d.aci = Some(aci);
        Arc::make_mut(&mut d.oacp).status = Some(first.status.clone());
        let later = plan(&d, t0());
        assert_eq!(
            condition(&later, "Available").reason,
            "ControlPlaneInstalling"
        );
        assert!(
            later
                .status
                .conditions
                .iter()
                .all(|c| c.type_ != "FieldsSupported"),
            "{:?}",
            later.status.conditions
        );
    }

    #[test]
    fn deletion_goes_machines_then_install_objects_then_finalizer() {
        let deleting = oacp(&format!(
            "deletionTimestamp: \"2027-01-01T00:00:00Z\"\n  finalizers: [{FINALIZER}]"
        ));
        let mut d = dereferenced(deleting);
        let machines: Vec<_> = plan(&dereferenced(oacp("")), t0())
            .create
            .iter()
            .map(|m| m.machine.clone())
            .collect();
        d.machines = machines;
        d.cluster_deployment_exists = true;
        let step = plan(&d, t0());
        assert_eq!(
            step.cleanup,
            Some(Cleanup::Machines(vec![
                "cp-0".into(),
                "cp-1".into(),
                "cp-2".into()
            ]))
        );
        assert_eq!(condition(&step, "Deleting").status, "True");
        d.machines.clear();
        assert!(matches!(
            plan(&d, t0()).cleanup,
            Some(Cleanup::InstallObjects { .. })
        ));
        d.cluster_deployment_exists = false;
        assert_eq!(
            plan(&d, t0()).cleanup,
            Some(Cleanup::Done {
                image_set: "ns.cp".into()
            })
        );
    }

    #[test]
    fn a_paused_cluster_writes_only_the_paused_condition() {
        let mut d = dereferenced(oacp(""));
        d.cluster.as_mut().unwrap().spec.paused = Some(true);
        let plan = plan(&d, t0());
        assert!(plan.hive.is_none() && plan.create.is_empty() && !plan.write_finalizer);
        assert_eq!(condition(&plan, "Paused").status, "True");
    }

    #[test]
    fn the_kubeconfig_is_published_and_the_control_plane_initialized() {
        let mut d = dereferenced(oacp(""));
        d.admin_kubeconfig = Some(b"apiVersion: v1".to_vec());
        let plan = plan(&d, t0());
        assert_eq!(
            plan.kubeconfig.as_ref().unwrap().name_any(),
            "c1-kubeconfig"
        );
        assert_eq!(
            plan.status
                .initialization
                .as_ref()
                .unwrap()
                .control_plane_initialized,
            Some(true)
        );
    }
}

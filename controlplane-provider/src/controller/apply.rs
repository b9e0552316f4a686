//! Writes a [`Plan`] in a fixed order, with server-side apply under this controller's field
//! manager: finalizer, pull secret, ClusterImageSet, ClusterDeployment, AgentClusterInstall,
//! Machines (infrastructure machine and config before the Machine that references them),
//! kubeconfig, then status. Deletion follows [`Plan::cleanup`].

use std::time::Duration;

use assisted_api::{AgentClusterInstall, ClusterDeployment, ClusterImageSet};
use external_types::capi::Machine;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use manager::pace::Turn;
use provider_api::bootstrap::api::OpenshiftAssistedConfig;
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;
use serde_json::json;

use super::context::{Context, FIELD_MANAGER, FINALIZER};
use super::plan::{Cleanup, Plan};
use manager::controller::{Applied, Error};

fn params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

/// Writes the plan in a fixed order: the control plane's own fields, the objects the install
/// reads (pull secret, Hive objects), the Machines, the kubeconfig, conditions on Machines, the
/// upgrade request, etcd removals and hooks, then status and events.
pub async fn apply(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    mut plan: Plan,
    workload: Option<&kube::Client>,
) -> Result<Action, Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let client = &ctx.client;

    if let Some(cleanup) = &plan.cleanup {
        ctx.applied.forget(&owner_prefix(oacp));
        set_hooks(client, &ns, &plan.hooks.release, false).await?;
        return delete(ctx, oacp, cleanup, &plan).await;
    }
    apply_control_plane_fields(ctx, oacp, &plan).await?;
    apply_install_inputs(ctx, oacp, &plan).await?;
    if let Some(hive) = &plan.hive {
        apply_hive(ctx, oacp, hive, workload).await?;
    }
    apply_machines(ctx, &ns, &plan).await?;
    if let Some(secret) = &plan.kubeconfig {
        apply_changed(
            ctx,
            oacp,
            Api::<Secret>::namespaced(client.clone(), &ns),
            secret,
            "kubeconfig Secret",
        )
        .await?;
    }
    for (machine, condition) in &plan.machine_conditions {
        write_machine_condition(ctx, &ns, machine, condition, FIELD_MANAGER).await?;
    }
    if let Some((machine, condition)) = &plan.owner_remediated {
        write_machine_condition(ctx, &ns, machine, condition, REMEDIATION_FIELD_MANAGER).await?;
    }
    if let (Some(update), Some(workload)) = (&plan.upgrade_request, workload) {
        request_upgrade(workload, update).await?;
    }
    remove_masters(oacp, &mut plan, client, &ns, workload).await;
    apply_hooks(&mut plan, client, &ns, workload).await?;
    let status_turn = write_status(ctx, oacp, &plan).await?;
    publish_events(ctx, oacp, &plan).await;
    tracing::debug!(namespace = %ns, name = %oacp.name_any(), "reconciled");
    Ok(action(plan.requeue, status_turn))
}

/// The control plane's own metadata: the finalizer, and when image mode rolled out the
/// annotation that says so.
async fn apply_control_plane_fields(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    plan: &Plan,
) -> Result<(), Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let name = oacp.name_any();
    let client = &ctx.client;
    if plan.write_finalizer {
        manager::controller::set_finalizer(&ctx.client, oacp, FIELD_MANAGER, FINALIZER, true)
            .await?;
    }
    if plan.image_mode_rolled_out {
        let patch = serde_json::json!({"metadata": {"annotations": {
            super::image_mode::ROLLED_OUT_ANNOTATION: k8s_openapi::jiff::Timestamp::now().to_string(),
        }}});
        Api::<OpenshiftAssistedControlPlane>::namespaced(client.clone(), &ns)
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| Error::Apply {
                what: "the image-mode rolled-out annotation".into(),
                source,
            })?;
    }
    Ok(())
}

/// The objects the install reads beside the Hive ones: the image-mode logs ConfigMap and the
/// placeholder pull secret.
async fn apply_install_inputs(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    plan: &Plan,
) -> Result<(), Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let client = &ctx.client;
    if let Some(cm) = &plan.image_mode_logs {
        apply_changed(
            ctx,
            oacp,
            Api::<ConfigMap>::namespaced(client.clone(), &ns),
            cm,
            "image mode logs ConfigMap",
        )
        .await?;
    }
    if let Some(secret) = &plan.pull_secret {
        apply_changed(
            ctx,
            oacp,
            Api::<Secret>::namespaced(client.clone(), &ns),
            secret,
            "placeholder pull secret",
        )
        .await?;
    }
    Ok(())
}

/// The ClusterImageSet, the generated manifests, the ClusterDeployment and the
/// AgentClusterInstall (each sent only when changed), then the push Secrets to the installed
/// cluster.
async fn apply_hive(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    hive: &super::plan::HiveObjects,
    workload: Option<&kube::Client>,
) -> Result<(), Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let client = &ctx.client;
    apply_changed(
        ctx,
        oacp,
        Api::<ClusterImageSet>::all(client.clone()),
        &hive.image_set,
        "ClusterImageSet",
    )
    .await?;
    if let Some(manifests) = &hive.registry_manifests {
        apply_changed(
            ctx,
            oacp,
            Api::<ConfigMap>::namespaced(client.clone(), &ns),
            manifests,
            "mirror manifests ConfigMap",
        )
        .await?;
    }
    if let Some(manifests) = &hive.image_mode_manifests {
        apply_changed(
            ctx,
            oacp,
            Api::<ConfigMap>::namespaced(client.clone(), &ns),
            manifests,
            "image mode manifests ConfigMap",
        )
        .await?;
    }
    // Without `spec.installed`, which the core sets once the cluster is installed.
    let cd_name = hive.cluster_deployment.name_any();
    let cd_body = super::hive::cluster_deployment_apply_body(&hive.cluster_deployment);
    let cd_key = applied_key(oacp, &hive.cluster_deployment);
    let cd_hash = Applied::hash(&cd_body);
    if !ctx.applied.is_current(&cd_key, cd_hash) {
        Api::<ClusterDeployment>::namespaced(client.clone(), &ns)
            .patch(&cd_name, &params(), &Patch::Apply(&cd_body))
            .await
            .map_err(|source| Error::Apply {
                what: format!("ClusterDeployment {cd_name}"),
                source,
            })?;
        ctx.applied.record(&cd_key, cd_hash);
    }
    // Sent before and still held by the cached AgentClusterInstall: not sent again.
    let aci = &hive.agent_cluster_install;
    let cached = ctx
        .caches
        .acis
        .get(&kube::runtime::reflector::ObjectRef::from_obj(aci));
    let key = applied_key(oacp, aci);
    let (skip, hash) = manager::controller::unchanged(&ctx.applied, &key, cached.as_deref(), aci);
    if !skip {
        apply_one(
            Api::<AgentClusterInstall>::namespaced(client.clone(), &ns),
            aci,
            "AgentClusterInstall",
        )
        .await?;
        ctx.applied.record(&key, hash);
    }
    if let Some(workload) = workload {
        copy_push_secrets(ctx, oacp, workload, &hive.push_secrets).await;
    }
    Ok(())
}

/// Each new control-plane Machine's infrastructure machine, bootstrap config and Machine (in
/// that order: CAPI finds the first two by the Machine), then the Machines to delete.
async fn apply_machines(ctx: &Context, ns: &str, plan: &Plan) -> Result<(), Error> {
    let client = &ctx.client;
    for m in &plan.create {
        let infra_api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), ns, &m.infra_resource);
        let infra_name = m.infra.name_any();
        infra_api
            .patch(&infra_name, &params(), &Patch::Apply(&m.infra))
            .await
            .map_err(|source| Error::Apply {
                what: format!("{} {infra_name}", m.infra_resource.kind),
                source,
            })?;
        apply_one(
            Api::<OpenshiftAssistedConfig>::namespaced(client.clone(), ns),
            &m.config,
            "OpenshiftAssistedConfig",
        )
        .await?;
        let machine = apply_one(
            Api::<Machine>::namespaced(client.clone(), ns),
            &m.machine,
            "Machine",
        )
        .await?;
        ctx.caches.created_machines.record(machine);
    }
    for machine in &plan.delete {
        manager::controller::delete(&Api::<Machine>::namespaced(client.clone(), ns), machine)
            .await?;
    }
    Ok(())
}

/// Asks the installed cluster's CVO for the update.
async fn request_upgrade(
    workload: &kube::Client,
    update: &super::upgrade::DesiredUpdate,
) -> Result<(), Error> {
    // A merge patch of the one field: the CVO and `oc adm upgrade` own the rest.
    Api::<DynamicObject>::all_with(
        workload.clone(),
        &super::dereference::cluster_version_resource(),
    )
    .patch(
        super::upgrade::CLUSTER_VERSION_NAME,
        &PatchParams::default(),
        &Patch::Merge(update.patch()),
    )
    .await
    .map_err(|source| Error::Apply {
        what: "the installed cluster's ClusterVersion version (spec.desiredUpdate)".into(),
        source,
    })?;
    Ok(())
}

/// The planned remediation and scale-down removals; a failure becomes the step's event and
/// condition, not an error (the next reconcile repeats the idempotent steps).
async fn remove_masters(
    oacp: &OpenshiftAssistedControlPlane,
    plan: &mut Plan,
    client: &kube::Client,
    ns: &str,
    workload: Option<&kube::Client>,
) {
    if let Some(r) = plan.remediation.clone()
        && let Err(message) = remove_master(client, ns, workload, &r).await
    {
        remediation_failed(oacp, plan, &r, message.to_string());
    }
    if let Some(r) = plan.scale_down.clone()
        && let Err(message) = remove_master(client, ns, workload, &r).await
    {
        scale_down_failed(plan, &r, message.to_string());
    }
}

/// Our pre-terminate hooks added and released; a deleted Machine's hook goes once its etcd
/// member is removed (a failure is a warning event, and the hook holds the host).
async fn apply_hooks(
    plan: &mut Plan,
    client: &kube::Client,
    ns: &str,
    workload: Option<&kube::Client>,
) -> Result<(), Error> {
    set_hooks(client, ns, &plan.hooks.add, true).await?;
    set_hooks(client, ns, &plan.hooks.release, false).await?;
    if let Some(r) = plan.hooks.clean_up.clone() {
        match remove_member(workload, &r).await {
            Ok(()) => set_hooks(client, ns, std::slice::from_ref(&r.machine), false).await?,
            Err(message) => {
                plan.events.retain(|e| e.reason != "EtcdMemberRemoved");
                plan.events.push(manager::controller::PlannedEvent {
                    warning: true,
                    reason: "EtcdMemberCleanupFailed",
                    note: format!(
                        "Removing the etcd member of deleted control-plane Machine {} failed \
                         (its host is kept until it is removed): {message}",
                        r.machine
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The plan's requeue, or sooner when a status write waits for its turn.
fn action(requeue: Option<std::time::Duration>, status: Turn) -> Action {
    let waits = match status {
        Turn::Now => None,
        Turn::After(wait) => Some(wait),
    };
    match (requeue, waits) {
        (Some(r), Some(w)) => Action::requeue(r.min(w)),
        (r, w) => r.or(w).map_or_else(Action::await_change, Action::requeue),
    }
}

/// Removes a control-plane Machine of the installed cluster as OpenShift documents replacing
/// an unhealthy etcd member: the member removed, its certificate Secrets (and a dead host's
/// Node) deleted, then the Machine (a replacement is made once it is gone). Every step is
/// idempotent, so a failed pass is simply repeated.
async fn remove_master(
    client: &kube::Client,
    ns: &str,
    workload: Option<&kube::Client>,
    r: &super::remediation::Removal,
) -> Result<(), RemoveError> {
    remove_member(workload, r).await?;
    manager::controller::delete(&Api::<Machine>::namespaced(client.clone(), ns), &r.machine)
        .await
        .map_err(RemoveError::Machine)
}

/// Why removing a control-plane Machine (or its etcd member) failed; the text goes into the
/// step's event and condition.
#[derive(Debug, thiserror::Error)]
enum RemoveError {
    #[error("no client of the installed cluster (its admin kubeconfig)")]
    NoWorkloadClient,
    #[error(transparent)]
    Etcd(#[from] super::etcd::EtcdError),
    #[error("{0}")]
    Machine(Error),
}

/// The etcd part of [`remove_master`]: the member, its certificate Secrets, and when asked the
/// Node, through the installed cluster's API.
async fn remove_member(
    workload: Option<&kube::Client>,
    r: &super::remediation::Removal,
) -> Result<(), RemoveError> {
    let workload = workload.ok_or(RemoveError::NoWorkloadClient)?;
    if let (Some(member), Some(exec_node)) = (&r.member, &r.exec_node) {
        super::etcd::member_remove(workload, exec_node, member.id).await?;
    }
    if let Some(node) = &r.node {
        super::etcd::delete_member_secrets(workload, node).await?;
        if r.delete_node {
            super::etcd::delete_node(workload, node).await?;
        }
    }
    Ok(())
}

/// Adds (`present`) or removes our pre-terminate hook on these Machines, by merge patch: the
/// annotation alone, whoever owns the rest. A Machine already gone is done.
async fn set_hooks(
    client: &kube::Client,
    ns: &str,
    machines: &[String],
    present: bool,
) -> Result<(), Error> {
    let api = Api::<Machine>::namespaced(client.clone(), ns);
    let value = present.then(String::new);
    let patch = json!({"metadata": {"annotations": {super::hooks::PRE_TERMINATE_HOOK: value}}});
    for name in machines {
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => {
                return Err(Error::Apply {
                    what: format!("the pre-terminate hook of Machine {name}"),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// A remediation step failed: `Remediating` says which and why, a warning event replaces the
/// planned one, nothing is recorded as remediated, and it is tried again soon.
fn remediation_failed(
    oacp: &OpenshiftAssistedControlPlane,
    plan: &mut Plan,
    r: &super::remediation::Removal,
    message: String,
) {
    let failure = StepFailure {
        condition: super::status::REMEDIATING,
        planned_event: "MachineRemediated",
        reason: "RemediationFailed",
        note: format!(
            "Replacing control-plane Machine {} failed: {message}",
            r.machine
        ),
    };
    failure.replace_plan(plan);
    plan.status.last_remediation = oacp
        .status
        .as_ref()
        .and_then(|s| s.last_remediation.clone());
}

/// Removing a Machine to scale down failed: `ScalingDown` says which step and why, a warning
/// event replaces the planned one, and it is tried again soon.
fn scale_down_failed(plan: &mut Plan, r: &super::remediation::Removal, message: String) {
    StepFailure {
        condition: super::status::SCALING_DOWN,
        planned_event: "MachinesDeleted",
        reason: "ScaleDownFailed",
        note: format!(
            "Removing control-plane Machine {} to scale down failed: {message}",
            r.machine
        ),
    }
    .replace_plan(plan);
}

/// A step of the workload-side work failed after the plan was made: its condition takes the
/// failure's reason and note, the warning event replaces the one planned for success, and the
/// control plane looks again in 20 s.
struct StepFailure {
    condition: &'static str,
    planned_event: &'static str,
    reason: &'static str,
    note: String,
}

impl StepFailure {
    fn replace_plan(self, plan: &mut Plan) {
        if let Some(c) = plan
            .status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == self.condition)
        {
            c.reason = self.reason.into();
            c.message.clone_from(&self.note);
        }
        plan.events.retain(|e| e.reason != self.planned_event);
        plan.events.push(manager::controller::PlannedEvent {
            warning: true,
            reason: self.reason,
            note: self.note,
        });
        plan.requeue = Some(Duration::from_secs(20));
    }
}

/// Deletion, one step per reconcile: Machines first (CAPI drains and deprovisions them), then
/// the install objects (the core releases their finalizers), then the cluster-scoped image set,
/// then our finalizer. Each wait is shown on the `Deleting` condition.
async fn delete(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    cleanup: &Cleanup,
    plan: &Plan,
) -> Result<Action, Error> {
    let ns = oacp.namespace().unwrap_or_default();
    let client = &ctx.client;
    match cleanup {
        Cleanup::Machines(names) => {
            for machine in names {
                manager::controller::delete(
                    &Api::<Machine>::namespaced(client.clone(), &ns),
                    machine,
                )
                .await?;
            }
        }
        Cleanup::InstallObjects { name, image_set } => {
            manager::controller::delete(
                &Api::<AgentClusterInstall>::namespaced(client.clone(), &ns),
                name,
            )
            .await?;
            manager::controller::delete(
                &Api::<ClusterDeployment>::namespaced(client.clone(), &ns),
                name,
            )
            .await?;
            if let Some(image_set) = image_set {
                manager::controller::delete(
                    &Api::<ClusterImageSet>::all(client.clone()),
                    image_set,
                )
                .await?;
            }
        }
        Cleanup::Done { image_set } => {
            manager::controller::delete(&Api::<ClusterImageSet>::all(client.clone()), image_set)
                .await?;
            manager::controller::set_finalizer(&ctx.client, oacp, FIELD_MANAGER, FINALIZER, false)
                .await?;
            return Ok(Action::await_change());
        }
    }
    write_status(ctx, oacp, plan).await?;
    Ok(Action::requeue(Duration::from_secs(2)))
}

/// Image mode's push Secrets into the installed cluster. A failure (its API down, the
/// namespace not there yet) is logged and tried again on the next reconcile; the rest of the
/// control plane's work goes on.
async fn copy_push_secrets(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    workload: &kube::Client,
    secrets: &[Secret],
) {
    for secret in secrets {
        let api = Api::<Secret>::namespaced(workload.clone(), super::image_mode::MCO_NAMESPACE);
        // Keyed apart from the management cluster's objects of the same name.
        let key = format!(
            "{}installed-cluster:{}",
            owner_prefix(oacp),
            secret.name_any()
        );
        let hash = Applied::hash(secret);
        if ctx.applied.is_current(&key, hash) {
            continue;
        }
        match apply_one(api, secret, "push Secret in the installed cluster").await {
            Ok(_) => ctx.applied.record(&key, hash),
            Err(e) => tracing::warn!(error = %e, "image mode: copying a push Secret"),
        }
    }
}

/// The key of what `oacp`'s reconcile applies, under [`owner_prefix`].
fn applied_key<K: Resource<DynamicType = ()>>(
    oacp: &OpenshiftAssistedControlPlane,
    object: &K,
) -> String {
    format!(
        "{}{}/{}/{}",
        owner_prefix(oacp),
        K::kind(&()),
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}

/// Every key of what one control plane applies starts with this.
fn owner_prefix(oacp: &OpenshiftAssistedControlPlane) -> String {
    format!(
        "{}/{}:",
        oacp.namespace().unwrap_or_default(),
        oacp.name_any()
    )
}

/// [`apply_one`], unless this very body was applied a short while ago (see [`Applied`]).
async fn apply_changed<K>(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    api: Api<K>,
    object: &K,
    what: &str,
) -> Result<(), Error>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let key = applied_key(oacp, object);
    let hash = Applied::hash(object);
    if ctx.applied.is_current(&key, hash) {
        return Ok(());
    }
    apply_one(api, object, what).await?;
    ctx.applied.record(&key, hash);
    Ok(())
}

/// Applies `object`; the object as the API server has it now.
async fn apply_one<K>(api: Api<K>, object: &K, what: &str) -> Result<K, Error>
where
    K: Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = object.name_any();
    api.patch(&name, &params(), &Patch::Apply(object))
        .await
        .map_err(|source| Error::Apply {
            what: format!("{what} {name}"),
            source,
        })
}

/// Writes the planned status unless it is already there, or it was written less than
/// [`super::context::STATUS_EVERY`] ago: then `Turn::After` says when to come back (only the newest
/// status goes then).
async fn write_status(
    ctx: &Context,
    oacp: &OpenshiftAssistedControlPlane,
    plan: &Plan,
) -> Result<Turn, Error> {
    if oacp.status.as_ref() == Some(&plan.status) {
        return Ok(Turn::Now);
    }
    // The cached object may not show the status written a moment ago yet: the same status
    // again is not written (only this manager writes it).
    let key = format!("{}status", owner_prefix(oacp));
    let hash = Applied::hash(&plan.status);
    if ctx.applied.is_current(&key, hash) {
        return Ok(Turn::Now);
    }
    let turn = ctx.status_pace.turn(&key, std::time::Instant::now());
    if turn != Turn::Now {
        return Ok(turn);
    }
    tracing::debug!(status = ?plan.status, "writing the control plane's status");
    let api: Api<OpenshiftAssistedControlPlane> =
        Api::namespaced(ctx.client.clone(), &oacp.namespace().unwrap_or_default());
    let patch = json!({
        "apiVersion": OpenshiftAssistedControlPlane::api_version(&()),
        "kind": OpenshiftAssistedControlPlane::kind(&()),
        "status": plan.status,
    });
    api.patch_status(&oacp.name_any(), &params(), &Patch::Apply(&patch))
        .await
        .map_err(Error::Status)?;
    ctx.applied.record(&key, hash);
    ctx.status_pace.wrote(&key, std::time::Instant::now());
    Ok(Turn::Now)
}

/// One condition on a Machine's status, by server-side apply: `status.conditions` is a map
/// keyed by type, so this field manager owns its entry and CAPI's conditions stay as they are.
/// The field manager of `OwnerRemediated`: a server-side apply names every condition its
/// manager owns, so the remediation's condition has a manager of its own beside `UpToDate`'s.
const REMEDIATION_FIELD_MANAGER: &str = "openshift-assisted-controlplane-remediation";

/// Applies one condition of a Machine's status under `manager`.
async fn write_machine_condition(
    ctx: &Context,
    ns: &str,
    machine: &str,
    condition: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
    manager: &str,
) -> Result<(), Error> {
    // The watch cache can lag this controller's own last write: the same condition (its
    // transition time aside) written a moment ago is not written again. Each write moves the
    // Machine's resourceVersion, and Cluster API patches Machines with an optimistic lock:
    // repeated writes made its patches fail with 409 Conflict by the thousand.
    let key = format!("Machine/{ns}/{machine}/{manager}/{}", condition.type_);
    let hash = Applied::hash(&(
        &condition.status,
        &condition.reason,
        &condition.message,
        condition.observed_generation,
    ));
    if ctx.applied.is_current(&key, hash) {
        return Ok(());
    }
    let patch = json!({
        "apiVersion": Machine::api_version(&()),
        "kind": Machine::kind(&()),
        "status": {"conditions": [condition]},
    });
    let api: Api<Machine> = Api::namespaced(ctx.client.clone(), ns);
    match api
        .patch_status(
            machine,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&patch),
        )
        .await
    {
        // Deleted meanwhile: nothing to say about it.
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Ok(_) => {
            ctx.applied.record(&key, hash);
            Ok(())
        }
        other => other.map(|_| ()).map_err(|source| Error::Apply {
            what: format!("Machine {machine} condition {}", condition.type_),
            source,
        }),
    }
}

async fn publish_events(ctx: &Context, oacp: &OpenshiftAssistedControlPlane, plan: &Plan) {
    let reference = oacp.object_ref(&());
    for event in &plan.events {
        manager::controller::publish(&ctx.recorder, &reference, event).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_waiting_for_its_turn_brings_the_next_reconcile_forward() {
        let s = Duration::from_secs;
        assert_eq!(action(None, Turn::Now), Action::await_change());
        assert_eq!(action(Some(s(30)), Turn::Now), Action::requeue(s(30)));
        assert_eq!(action(None, Turn::After(s(1))), Action::requeue(s(1)));
        assert_eq!(
            action(Some(s(30)), Turn::After(s(2))),
            Action::requeue(s(2))
        );
        assert_eq!(action(Some(s(1)), Turn::After(s(2))), Action::requeue(s(1)));
    }
}

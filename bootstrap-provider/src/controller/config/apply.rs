//! Writes a config [`Plan`] in a fixed order under the controller's field manager: finalizer,
//! InfraEnv, live ISO into the template and the Metal3Machine, data Secret, status, events.

use assisted_api::{Agent, InfraEnv};
use external_types::capm3::v1beta2::{Metal3Machine, Metal3MachineTemplate};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use provider_api::bootstrap::api::OpenshiftAssistedConfig;
use serde_json::json;

use super::plan::Plan;
use crate::controller::image::{live_iso_image, live_iso_template_image};
use crate::controller::labels::MACHINE_NAME_LABEL;
use crate::controller::{Context, Error, FIELD_MANAGER, FINALIZER, apply_params, publish};
use manager::names::readable_label_value;

pub async fn apply(
    ctx: &Context,
    config: &OpenshiftAssistedConfig,
    plan: Plan,
) -> Result<Action, Error> {
    let ns = config.namespace().unwrap_or_default();
    if let Some(machine) = &plan.delete_agents_of {
        delete_agents(ctx, config, &ns, machine).await?;
    }
    if let Some(present) = plan.finalizer {
        manager::controller::set_finalizer(&ctx.client, config, FIELD_MANAGER, FINALIZER, present)
            .await?;
        if !present {
            return Ok(Action::await_change());
        }
    }
    if let Some(infraenv) = &plan.infraenv {
        apply_infraenv(ctx, &ns, infraenv).await?;
    }
    write_images(ctx, config, &ns, &plan).await?;
    if let Some(secret) = &plan.data_secret {
        Api::<Secret>::namespaced(ctx.client.clone(), &ns)
            .patch(&secret.name_any(), &apply_params(), &Patch::Apply(secret))
            .await
            .map_err(|source| Error::Apply {
                what: format!("data Secret {}", secret.name_any()),
                source,
            })?;
        ctx.data_secrets
            .record(&super::super::data_secret_key(&ns, &secret.name_any()), 0);
    }
    if let Some(status) = &plan.status {
        let patch = json!({
            "apiVersion": OpenshiftAssistedConfig::api_version(&()),
            "kind": OpenshiftAssistedConfig::kind(&()),
            "status": status,
        });
        Api::<OpenshiftAssistedConfig>::namespaced(ctx.client.clone(), &ns)
            .patch_status(&config.name_any(), &apply_params(), &Patch::Apply(&patch))
            .await
            .map_err(Error::Status)?;
    }
    for event in &plan.events {
        publish(
            ctx,
            &config.object_ref(&()),
            event.warning,
            event.reason,
            event.note.clone(),
        )
        .await;
    }
    Ok(plan
        .requeue
        .map_or_else(Action::await_change, Action::requeue))
}

/// The Machine is going away (scale-down or cluster deletion): its Agent goes too, and with it
/// the core's host record. The BareMetalHost is CAPM3's to deprovision.
async fn delete_agents(
    ctx: &Context,
    config: &OpenshiftAssistedConfig,
    ns: &str,
    machine: &str,
) -> Result<(), Error> {
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), ns);
    let selector = format!("{MACHINE_NAME_LABEL}={}", readable_label_value(machine));
    for agent in agents
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(Error::Read)?
    {
        manager::controller::delete(&agents, &agent.name_any()).await?;
        publish(
            ctx,
            &config.object_ref(&()),
            false,
            "AgentDeleted",
            format!("Deleted Agent {} of Machine {machine}", agent.name_any()),
        )
        .await;
    }
    Ok(())
}

/// The template's InfraEnv; sent before and still held by the cached InfraEnv: not sent again.
async fn apply_infraenv(ctx: &Context, ns: &str, infraenv: &InfraEnv) -> Result<(), Error> {
    let key = format!("InfraEnv/{ns}/{}", infraenv.name_any());
    let cached = ctx
        .caches
        .infraenvs
        .get(&kube::runtime::reflector::ObjectRef::from_obj(infraenv));
    let (skip, hash) =
        manager::controller::unchanged(&ctx.applied, &key, cached.as_deref(), infraenv);
    if skip {
        return Ok(());
    }
    Api::<InfraEnv>::namespaced(ctx.client.clone(), ns)
        .patch(
            &infraenv.name_any(),
            &apply_params(),
            &Patch::Apply(infraenv),
        )
        .await
        .map_err(|source| Error::Apply {
            what: format!("InfraEnv {}", infraenv.name_any()),
            source,
        })?;
    ctx.applied.record(&key, hash);
    Ok(())
}

/// The live ISO into the Metal3MachineTemplate and the Metal3Machine (merge patches).
async fn write_images(
    ctx: &Context,
    config: &OpenshiftAssistedConfig,
    ns: &str,
    plan: &Plan,
) -> Result<(), Error> {
    if let Some((template, url)) = &plan.template_image {
        let patch =
            json!({"spec": {"template": {"spec": {"image": live_iso_template_image(url)}}}});
        // A refused template update is reported, not fatal: the Metal3Machines carry the image
        // that matters, and the data Secret waits for theirs.
        if let Err(e) = Api::<Metal3MachineTemplate>::namespaced(ctx.client.clone(), ns)
            .patch(template, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            publish(
                ctx,
                &config.object_ref(&()),
                true,
                "TemplateImageNotWritten",
                format!("Metal3MachineTemplate {template} refused the discovery ISO URL: {e}"),
            )
            .await;
        }
    }
    if let Some((m3m, url)) = &plan.metal3machine_image {
        let patch = json!({"spec": {"image": live_iso_image(url)}});
        Api::<Metal3Machine>::namespaced(ctx.client.clone(), ns)
            .patch(m3m, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| Error::Apply {
                what: format!("Metal3Machine {m3m} image"),
                source,
            })?;
    }
    Ok(())
}

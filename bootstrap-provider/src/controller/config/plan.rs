//! `plan`: what one reconcile of an OpenshiftAssistedConfig writes, from [`Dereferenced`] and
//! `now` alone: the template's InfraEnv, the live ISO into the template and the Metal3Machine,
//! the data Secret once the gate opens, and the status.

use std::time::Duration;

use assisted_api::InfraEnv;
use assisted_api::infraenv::ClusterReference;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use manager::conditions::{self, Desired};

use super::dereference::Dereferenced;
use crate::api::{BootstrapInitialization, OpenshiftAssistedConfigStatus};
use crate::controller::agent::{self, Hold};
use crate::controller::image::{self, Gate, GateInputs, ImageMode};
use crate::controller::infraenv::{self, InfraEnvInputs};
use crate::controller::{FINALIZER, PAUSED_ANNOTATION, PlannedEvent};

pub const READY: &str = "Ready";
pub const DATA_SECRET_AVAILABLE: &str = "DataSecretAvailable";
pub const PAUSED: &str = "Paused";
/// A config waiting on something that changes on its own (an image being built, a host being
/// provisioned) is looked at again this often even if no watch fires.
const WAIT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// `Some(true)`: add our finalizer; `Some(false)`: release it.
    pub finalizer: Option<bool>,
    pub infraenv: Option<InfraEnv>,
    /// `(Metal3MachineTemplate name, ISO URL)` to write as its live-iso image.
    pub template_image: Option<(String, String)>,
    /// `(Metal3Machine name, ISO URL)` to write as its live-iso image.
    pub metal3machine_image: Option<(String, String)>,
    pub data_secret: Option<Secret>,
    /// On deletion: delete the Agents labelled with this Machine's name.
    pub delete_agents_of: Option<String>,
    pub status: Option<OpenshiftAssistedConfigStatus>,
    pub events: Vec<PlannedEvent>,
    pub requeue: Option<Duration>,
}

pub fn plan(d: &Dereferenced, now: Timestamp) -> Plan {
    let config = d.config.as_ref();
    let has_finalizer = config.finalizers().iter().any(|f| f == FINALIZER);
    let mut plan = Plan::default();

    if config.metadata.deletion_timestamp.is_some() {
        if has_finalizer {
            let machine = config
                .owner_references()
                .iter()
                .find(|o| o.kind == "Machine")
                .map(|o| o.name.clone())
                .unwrap_or_else(|| config.name_any());
            plan.delete_agents_of = Some(machine);
            plan.finalizer = Some(false);
        }
        return plan;
    }
    if !has_finalizer {
        plan.finalizer = Some(true);
    }

    let paused = config.annotations().contains_key(PAUSED_ANNOTATION)
        || d.cluster.as_ref().is_some_and(|c| {
            c.spec.paused == Some(true) || c.annotations().contains_key(PAUSED_ANNOTATION)
        });
    let (data_available, infraenv_problem) = if paused {
        (
            Desired::false_(DATA_SECRET_AVAILABLE, "Paused", "reconciling is paused"),
            None,
        )
    } else {
        decide(d, &mut plan)
    };
    if let Some(problem) = &infraenv_problem {
        plan.events.push(PlannedEvent {
            warning: true,
            reason: problem.reason,
            note: problem.message.clone(),
        });
    }

    let created = d.data_secret_exists || plan.data_secret.is_some();
    let ready = if created {
        Desired::true_(READY, "the bootstrap data Secret is available")
    } else {
        Desired::false_(
            READY,
            data_available.reason.clone(),
            data_available.message.clone(),
        )
    };
    let paused_condition = if paused {
        Desired::true_(
            PAUSED,
            "the Cluster or this config is paused; nothing is reconciled",
        )
    } else {
        Desired::false_(PAUSED, "NotPaused", "")
    };
    let previous = config.status.clone().unwrap_or_default();
    let status = OpenshiftAssistedConfigStatus {
        conditions: conditions::merge(
            &previous.conditions,
            &[ready, data_available, paused_condition],
            config.metadata.generation,
            now,
        ),
        initialization: Some(BootstrapInitialization {
            data_secret_created: Some(created),
        }),
        data_secret_name: created.then(|| image::data_secret_name(&config.name_any())),
        observed_generation: config.metadata.generation,
        v1beta1_conditions: previous.v1beta1_conditions.clone(),
    };
    if Some(&status) != config.status.as_ref() {
        plan.status = Some(status);
    }
    if !created && !paused {
        plan.requeue = Some(WAIT);
    }
    plan
}

/// A problem shown on `DataSecretAvailable` and as a Warning event.
struct Problem {
    reason: &'static str,
    message: String,
}

/// Fills the writes of a live config; returns its `DataSecretAvailable` condition.
fn decide(d: &Dereferenced, plan: &mut Plan) -> (Desired, Option<Problem>) {
    let config = d.config.as_ref();
    let waiting = |reason: &str, message: String| {
        (
            Desired::false_(DATA_SECRET_AVAILABLE, reason.to_string(), message),
            None,
        )
    };
    let Some(machine) = &d.machine else {
        return waiting(
            "WaitingForMachine",
            "waiting for a Machine to own this config (spec.bootstrap.configRef)".into(),
        );
    };
    let Some(cluster) = &d.cluster else {
        return waiting(
            "WaitingForCluster",
            format!("Cluster {} does not exist", machine.spec.cluster_name),
        );
    };
    let cluster_name = cluster.name_any();
    let (Some(m3m), Some(template_ref)) = (&d.metal3machine, &d.template_ref) else {
        return waiting(
            "WaitingForMetal3Machine",
            format!(
                "waiting for Machine {}'s Metal3Machine, cloned from a Metal3MachineTemplate \
                 (annotation cluster.x-k8s.io/cloned-from-name)",
                machine.name_any()
            ),
        );
    };
    let Some(template) = &d.template else {
        return waiting(
            "WaitingForMetal3MachineTemplate",
            format!("Metal3MachineTemplate {} does not exist", template_ref.name),
        );
    };
    let mode = image::image_mode(template);
    let cd = match d.cluster_deployments.as_slice() {
        [cd] => Some(cd),
        [] => None,
        many => {
            let problem = Problem {
                reason: "SeveralClusterDeployments",
                message: format!(
                    "{} ClusterDeployments carry the label cluster.x-k8s.io/cluster-name={cluster_name}; \
                     only one may",
                    many.len()
                ),
            };
            return (
                Desired::false_(
                    DATA_SECRET_AVAILABLE,
                    problem.reason,
                    problem.message.clone(),
                ),
                Some(problem),
            );
        }
    };

    // The template's InfraEnv, built from every config that uses the template.
    let mut configs: Vec<&crate::api::OpenshiftAssistedConfig> =
        d.template_configs.iter().collect();
    if !configs.iter().any(|c| c.name_any() == config.name_any()) {
        configs.push(config);
    }
    if let Some(cd) = cd {
        let cd_ref = ClusterReference {
            name: cd.name_any(),
            namespace: cd.namespace().unwrap_or_default(),
        };
        // A config without a pull secret uses the cluster's (the control plane's, or its
        // OKD placeholder): both halves of the install then agree.
        let cluster_pull_secret = cd
            .spec
            .pull_secret_ref
            .as_ref()
            .map(|r| r.name.clone())
            .unwrap_or_default();
        let inputs = InfraEnvInputs {
            template: template_ref,
            template_uid: template.metadata.uid.as_deref().unwrap_or_default(),
            cluster_name: &cluster_name,
            cluster_deployment: &cd_ref,
            configs: &configs,
            placeholder_pull_secret: &cluster_pull_secret,
        };
        match infraenv::desired_infraenv(&inputs) {
            Ok(desired) => plan.infraenv = Some(desired),
            Err(e) => {
                let problem = Problem {
                    reason: e.reason(),
                    message: e.to_string(),
                };
                return (
                    Desired::false_(
                        DATA_SECRET_AVAILABLE,
                        problem.reason,
                        problem.message.clone(),
                    ),
                    Some(problem),
                );
            }
        }
    }

    // The live ISO into the template and this Metal3Machine.
    let iso_url = d
        .infraenv
        .as_ref()
        .and_then(|ie| ie.status.as_ref())
        .and_then(|s| s.iso_download_url.clone())
        .filter(|u| !u.is_empty());
    if let (ImageMode::LiveIso, Some(url)) = (mode, &iso_url) {
        if image::template_needs_image(template, url) {
            plan.template_image = Some((template.name_any(), url.clone()));
        }
        if image::metal3machine_needs_image(mode, m3m, url) {
            plan.metal3machine_image = Some((m3m.name_any(), url.clone()));
        }
    }

    // The data Secret, once nothing is missing.
    let control_plane = machine
        .labels()
        .contains_key("cluster.x-k8s.io/control-plane");
    let state = d
        .aci
        .as_ref()
        .and_then(|a| a.status.as_ref())
        .and_then(|s| s.debug_info.state.clone())
        .unwrap_or_default();
    let hold: Hold = agent::hold(control_plane, &state, false);
    let infrastructure_provisioned = cluster
        .status
        .as_ref()
        .and_then(|s| s.initialization.as_ref())
        .and_then(|i| i.infrastructure_provisioned)
        == Some(true);
    // Written this reconcile: the Metal3Machine carries the URL before the Secret is created.
    let mut m3m_after = m3m.clone();
    if let Some((_, url)) = &plan.metal3machine_image {
        m3m_after.spec.image = Some(image::live_iso_image(url));
    }
    let gate = if d.data_secret_exists {
        Gate::Ready
    } else {
        image::data_secret_gate(&GateInputs {
            cluster_name: &cluster_name,
            infrastructure_provisioned,
            cluster_deployment_found: cd.is_some(),
            hold: &hold,
            mode,
            infraenv_name: &infraenv::infraenv_name(&template_ref.name),
            iso_url: iso_url.as_deref(),
            discovery_ignition_available: false,
            metal3machine: &m3m_after,
        })
    };
    if gate.is_ready() && !d.data_secret_exists {
        if mode == ImageMode::DiskImage {
            // CAPOA's raw-image flow needs the discovery ignition as user data: not built yet.
            let problem = Problem {
                reason: "DiskImageNotSupported",
                message: format!(
                    "Metal3MachineTemplate {} boots a disk image; only the live-ISO flow is \
                     supported so far: remove spec.template.spec.image or set diskFormat live-iso",
                    template.name_any()
                ),
            };
            return (
                Desired::false_(
                    DATA_SECRET_AVAILABLE,
                    problem.reason,
                    problem.message.clone(),
                ),
                Some(problem),
            );
        }
        plan.data_secret = Some(image::desired_data_secret(&image::DataSecretInputs {
            config_name: &config.name_any(),
            config_namespace: &config.namespace().unwrap_or_default(),
            config_uid: config.metadata.uid.as_deref().unwrap_or_default(),
            cluster_name: &cluster_name,
            value: image::EMPTY_IGNITION,
        }));
        plan.events.push(PlannedEvent {
            warning: false,
            reason: "DataSecretCreated",
            note: format!(
                "Metal3Machine {} carries the discovery ISO; bootstrap data Secret {} created",
                m3m.name_any(),
                image::data_secret_name(&config.name_any())
            ),
        });
    }
    let condition = if gate.is_ready() {
        Desired::true_(DATA_SECRET_AVAILABLE, gate.message())
    } else {
        Desired::false_(DATA_SECRET_AVAILABLE, gate.reason(), gate.message())
    };
    (condition, None)
}

//! `plan`: what one reconcile of an OpenshiftAssistedConfig writes, from [`Dereferenced`] and
//! `now` alone: the template's InfraEnv, the live ISO into the template and the Metal3Machine,
//! the data Secret once the gate opens, and the status.

use std::time::Duration;

use assisted_api::infraenv::ClusterReference;
use assisted_api::{ClusterDeployment, InfraEnv};
use external_types::capi::{Cluster, Machine};
use external_types::capm3::v1beta2::{Metal3Machine, Metal3MachineTemplate};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use manager::conditions::Desired;
use provider_api::bootstrap::api::{OpenshiftAssistedConfig, OpenshiftAssistedConfigStatus};

use super::dereference::Dereferenced;
use super::status::{self, DATA_SECRET_AVAILABLE, StatusInputs};
use crate::controller::hold::{self, Hold};
use crate::controller::image::{self, Gate, GateInputs, ImageMode};
use crate::controller::infraenv::{self, InfraEnvInputs};
use crate::controller::matching::{self, MachineInput};
use crate::controller::template::TemplateRef;
use crate::controller::{FINALIZER, PAUSED_ANNOTATION, PlannedEvent};

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
    if config.metadata.deletion_timestamp.is_some() {
        return plan_deletion(d, has_finalizer);
    }
    let mut plan = Plan::default();
    let paused = is_paused(d);
    if !has_finalizer && !paused {
        plan.finalizer = Some(true);
    }
    let (data_available, infraenv_problem) = if paused {
        (status::paused_data_available(), None)
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
    let host_problem = host_problem(d);
    if let Some(problem) = &host_problem
        && !status::ready_says(config, problem)
    {
        plan.events.push(PlannedEvent {
            warning: true,
            reason: problem.reason,
            note: problem.message.clone(),
        });
    }
    let status = status::desired_status(
        StatusInputs {
            config,
            infraenv: d.infraenv.as_ref(),
            data_available,
            host_problem: host_problem.as_ref(),
            created,
            paused,
        },
        now,
    );
    if Some(&status) != config.status.as_ref() {
        plan.status = Some(status);
    }
    if !created && !paused {
        plan.requeue = Some(WAIT);
    }
    plan
}

/// A config being deleted: its Machine's Agents go, then our finalizer.
fn plan_deletion(d: &Dereferenced, has_finalizer: bool) -> Plan {
    let config = d.config.as_ref();
    let mut plan = Plan::default();
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
    plan
}

/// The config, or its Cluster, is paused.
fn is_paused(d: &Dereferenced) -> bool {
    d.config.annotations().contains_key(PAUSED_ANNOTATION)
        || d.cluster.as_ref().is_some_and(|c| {
            c.spec.paused == Some(true) || c.annotations().contains_key(PAUSED_ANNOTATION)
        })
}

/// The boot-MAC problem of this config's Machine's BareMetalHost, as the Agent controller's
/// matching sees the cluster's Machines; None without one (or before the host is claimed).
fn host_problem(d: &Dereferenced) -> Option<matching::HostProblem> {
    let machine = d.machine.as_ref()?;
    let inputs: Vec<MachineInput> = d
        .cluster_machines
        .iter()
        .map(|m| MachineInput::from_objects(&m.machine, m.metal3machine.as_ref(), m.host.as_ref()))
        .collect();
    matching::host_problem(&machine.name_any(), &matching::machine_problems(&inputs))
}

/// A problem shown on `DataSecretAvailable` and as a Warning event.
struct Problem {
    reason: &'static str,
    message: String,
}

/// A live config's `DataSecretAvailable` condition, and the problem to warn about, if any.
type Outcome = (Desired, Option<Problem>);

/// Waiting for something that comes on its own: no event.
fn waiting(reason: &str, message: String) -> Outcome {
    (
        Desired::false_(DATA_SECRET_AVAILABLE, reason.to_string(), message),
        None,
    )
}

/// Stopped by a problem the user must fix: also a Warning event.
fn blocked(problem: Problem) -> Outcome {
    (
        Desired::false_(
            DATA_SECRET_AVAILABLE,
            problem.reason,
            problem.message.clone(),
        ),
        Some(problem),
    )
}

/// The objects a live config's writes are built from, once all of them are there.
struct Found<'a> {
    config: &'a OpenshiftAssistedConfig,
    machine: &'a Machine,
    cluster: &'a Cluster,
    cluster_name: String,
    m3m: &'a Metal3Machine,
    template_ref: &'a TemplateRef,
    template: &'a Metal3MachineTemplate,
    mode: ImageMode,
    /// The cluster's one ClusterDeployment; None while there is none.
    cd: Option<&'a ClusterDeployment>,
}

/// Fills the writes of a live config; returns its `DataSecretAvailable` condition.
fn decide(d: &Dereferenced, plan: &mut Plan) -> Outcome {
    let found = match find(d) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if let Some(cd) = found.cd {
        match desired_infraenv(d, &found, cd) {
            Ok(desired) => plan.infraenv = Some(desired),
            Err(problem) => return blocked(problem),
        }
    }
    let iso_url = d
        .infraenv
        .as_ref()
        .and_then(|ie| ie.status.as_ref())
        .and_then(|s| s.iso_download_url.clone())
        .filter(|u| !u.is_empty());
    plan_live_iso(&found, iso_url.as_deref(), plan);
    let gate = data_secret_gate(d, &found, iso_url.as_deref(), plan);
    // Disk image: the discovery ignition with the units that name the host (see `user_data`).
    let disk_image_user_data = match (found.mode, &d.discovery_ignition) {
        (ImageMode::DiskImage, Some(Ok(ignition))) if !d.data_secret_exists => Some(
            crate::controller::user_data::disk_image_user_data(ignition, &found.config.spec),
        ),
        _ => None,
    };
    let disk_image_user_data = match disk_image_user_data.transpose() {
        Ok(user_data) => user_data,
        Err(e) => {
            return waiting(
                "InvalidUserData",
                format!("cannot build the disk-image user data: {e}"),
            );
        }
    };
    if gate.is_ready() && !d.data_secret_exists {
        plan_data_secret(&found, disk_image_user_data.as_deref(), plan);
    }
    if let (false, Some(Err(reason))) = (gate.is_ready(), &d.discovery_ignition) {
        return waiting(
            "DiscoveryIgnitionUnavailable",
            format!("cannot read the discovery ignition: {reason}"),
        );
    }
    let condition = if gate.is_ready() {
        Desired::true_(DATA_SECRET_AVAILABLE, gate.message())
    } else {
        Desired::false_(DATA_SECRET_AVAILABLE, gate.reason(), gate.message())
    };
    (condition, None)
}

/// The Machine, Cluster, Metal3Machine, template and ClusterDeployment, in the order a new
/// config waits for them; the first one missing is the condition.
fn find(d: &Dereferenced) -> Result<Found<'_>, Outcome> {
    let Some(machine) = &d.machine else {
        return Err(waiting(
            "WaitingForMachine",
            "waiting for a Machine to own this config (spec.bootstrap.configRef)".into(),
        ));
    };
    let Some(cluster) = &d.cluster else {
        return Err(waiting(
            "WaitingForCluster",
            format!("Cluster {} does not exist", machine.spec.cluster_name),
        ));
    };
    let cluster_name = cluster.name_any();
    let (Some(m3m), Some(template_ref)) = (&d.metal3machine, &d.template_ref) else {
        return Err(waiting(
            "WaitingForMetal3Machine",
            format!(
                "waiting for Machine {}'s Metal3Machine, cloned from a Metal3MachineTemplate \
                 (annotation cluster.x-k8s.io/cloned-from-name)",
                machine.name_any()
            ),
        ));
    };
    let Some(template) = &d.template else {
        return Err(waiting(
            "WaitingForMetal3MachineTemplate",
            format!("Metal3MachineTemplate {} does not exist", template_ref.name),
        ));
    };
    let cd = match d.cluster_deployments.as_slice() {
        [cd] => Some(cd),
        [] => None,
        many => {
            return Err(blocked(Problem {
                reason: "SeveralClusterDeployments",
                message: format!(
                    "{} ClusterDeployments carry the label cluster.x-k8s.io/cluster-name={cluster_name}; \
                     only one may",
                    many.len()
                ),
            }));
        }
    };
    Ok(Found {
        config: d.config.as_ref(),
        machine,
        cluster,
        cluster_name,
        m3m,
        template_ref,
        template,
        mode: image::image_mode(template),
        cd,
    })
}

/// The template's InfraEnv, built from every config that uses the template.
fn desired_infraenv(
    d: &Dereferenced,
    found: &Found<'_>,
    cd: &ClusterDeployment,
) -> Result<InfraEnv, Problem> {
    let mut configs: Vec<&OpenshiftAssistedConfig> = d.template_configs.iter().collect();
    if !configs
        .iter()
        .any(|c| c.name_any() == found.config.name_any())
    {
        configs.push(found.config);
    }
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
        template: found.template_ref,
        template_uid: found.template.metadata.uid.as_deref().unwrap_or_default(),
        cluster_name: &found.cluster_name,
        cluster_deployment: &cd_ref,
        configs: &configs,
        placeholder_pull_secret: &cluster_pull_secret,
        mirror_registry_ref: d
            .aci
            .as_ref()
            .and_then(|a| a.spec.mirror_registry_ref.as_ref()),
    };
    infraenv::desired_infraenv(&inputs).map_err(|e| Problem {
        reason: e.reason(),
        message: e.to_string(),
    })
}

/// The live ISO into the template and this Metal3Machine.
fn plan_live_iso(found: &Found<'_>, iso_url: Option<&str>, plan: &mut Plan) {
    let (ImageMode::LiveIso, Some(url)) = (found.mode, iso_url) else {
        return;
    };
    if image::template_needs_image(found.template, url) {
        plan.template_image = Some((found.template.name_any(), url.to_string()));
    }
    if image::metal3machine_needs_image(found.mode, found.m3m, url) {
        plan.metal3machine_image = Some((found.m3m.name_any(), url.to_string()));
    }
}

/// Whether the data Secret may be written now: nothing missing, the worker not held.
fn data_secret_gate(
    d: &Dereferenced,
    found: &Found<'_>,
    iso_url: Option<&str>,
    plan: &Plan,
) -> Gate {
    if d.data_secret_exists {
        return Gate::Ready;
    }
    let machine = found.machine;
    let control_plane = machine
        .labels()
        .contains_key("cluster.x-k8s.io/control-plane");
    let state = hold::install_state(d.aci.as_ref());
    let late = hold::created_after_install_started(
        machine.metadata.creation_timestamp.as_ref().map(|t| t.0),
        d.aci.as_ref().and_then(hold::install_started_at),
    );
    let hold: Hold = hold::hold(control_plane, &state, late);
    let infrastructure_provisioned = found
        .cluster
        .status
        .as_ref()
        .and_then(|s| s.initialization.as_ref())
        .and_then(|i| i.infrastructure_provisioned)
        == Some(true);
    // Written this reconcile: the Metal3Machine carries the URL before the Secret is created.
    let mut m3m_after = found.m3m.clone();
    if let Some((_, url)) = &plan.metal3machine_image {
        m3m_after.spec.image = Some(image::live_iso_image(url));
    }
    image::data_secret_gate(&GateInputs {
        cluster_name: &found.cluster_name,
        infrastructure_provisioned,
        cluster_deployment_found: found.cd.is_some(),
        hold: &hold,
        mode: found.mode,
        infraenv_name: &infraenv::infraenv_name(&found.template_ref.name),
        iso_url,
        image_error: d.infraenv.as_ref().and_then(image::image_creation_error),
        discovery_ignition_available: matches!(d.discovery_ignition, Some(Ok(_))),
        metal3machine: &m3m_after,
    })
}

/// The data Secret and its event. Live ISO: the ISO carries the discovery ignition, the user
/// data is empty. Disk image: the user data is the discovery ignition (CAPOA's raw-image flow).
fn plan_data_secret(found: &Found<'_>, disk_image_user_data: Option<&str>, plan: &mut Plan) {
    let config = found.config;
    plan.data_secret = Some(image::desired_data_secret(&image::DataSecretInputs {
        config_name: &config.name_any(),
        config_namespace: &config.namespace().unwrap_or_default(),
        config_uid: config.metadata.uid.as_deref().unwrap_or_default(),
        cluster_name: &found.cluster_name,
        value: disk_image_user_data.unwrap_or(image::EMPTY_IGNITION),
    }));
    plan.events.push(PlannedEvent {
        warning: false,
        reason: "DataSecretCreated",
        note: match found.mode {
            ImageMode::LiveIso => format!(
                "Metal3Machine {} carries the discovery ISO; bootstrap data Secret {} created",
                found.m3m.name_any(),
                image::data_secret_name(&config.name_any())
            ),
            ImageMode::DiskImage => format!(
                "bootstrap data Secret {} created with the discovery ignition of InfraEnv {} \
                 (disk-image flow)",
                image::data_secret_name(&config.name_any()),
                infraenv::infraenv_name(&found.template_ref.name)
            ),
        },
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use assisted_api::{AgentClusterInstall, ClusterDeployment};
    use external_types::capi::{Cluster, Machine};
    use external_types::capm3::v1beta2::{Metal3Machine, Metal3MachineTemplate};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    use super::*;
    use crate::controller::config::dereference::MachineHost;
    use crate::controller::config::status::{PAUSED, READY};
    use crate::controller::discovery::FetchError;
    use crate::controller::template::TemplateRef;
    use manager::conditions;
    use provider_api::bootstrap::api::OpenshiftAssistedConfig;

    const ISO: &str = "https://assisted.example/byapikey/t/4.20/x86_64/full.iso?rev=1";
    const PLACEHOLDER_IMAGE: &str =
        "{image: {url: 'http://placeholder.invalid/x.iso', checksum: '', diskFormat: live-iso}}";

    fn t0() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    /// A config named `name`, owned by Machine `name` unless `owned` is false.
    fn config(
        name: &str,
        owned: bool,
        extra_metadata: &str,
        spec: &str,
    ) -> OpenshiftAssistedConfig {
        let owner = if owned {
            format!(
                "ownerReferences: [{{apiVersion: cluster.x-k8s.io/v1beta2, kind: Machine, name: {name}, uid: m-uid, controller: true}}]"
            )
        } else {
            String::new()
        };
        serde_yaml::from_str(&format!(
            r#"
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata:
  name: {name}
  namespace: ns
  uid: uid-{name}
  generation: 1
  labels: {{cluster.x-k8s.io/cluster-name: c1}}
  {owner}
  {extra_metadata}
spec: {spec}
"#
        ))
        .unwrap()
    }

    fn with_finalizer() -> String {
        format!("finalizers: [{FINALIZER}]")
    }

    fn machine(name: &str, control_plane: bool) -> Machine {
        let cp = if control_plane {
            ", cluster.x-k8s.io/control-plane: ''"
        } else {
            ""
        };
        serde_yaml::from_str(&format!(
            r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: {name}
  namespace: ns
  labels: {{cluster.x-k8s.io/cluster-name: c1{cp}}}
spec:
  clusterName: c1
  bootstrap: {{configRef: {{apiGroup: bootstrap.cluster.x-k8s.io, kind: OpenshiftAssistedConfig, name: {name}}}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3Machine, name: {name}}}
"#
        ))
        .unwrap()
    }

    fn cluster(spec: &str, infrastructure_provisioned: bool) -> Cluster {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: c1, namespace: ns, uid: c-uid}}
spec: {spec}
status: {{initialization: {{infrastructureProvisioned: {infrastructure_provisioned}}}}}
"#
        ))
        .unwrap()
    }

    fn metal3machine(name: &str, annotations: &str, spec: &str) -> Metal3Machine {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata:
  name: {name}
  namespace: ns
  annotations:
    cluster.x-k8s.io/cloned-from-name: workers
    cluster.x-k8s.io/cloned-from-groupkind: Metal3MachineTemplate.infrastructure.cluster.x-k8s.io
    {annotations}
spec: {spec}
"#
        ))
        .unwrap()
    }

    fn template(spec: &str) -> Metal3MachineTemplate {
        serde_yaml::from_str(&format!(
            r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {{name: workers, namespace: ns, uid: t-uid}}
spec: {{template: {{spec: {spec}}}}}
"#
        ))
        .unwrap()
    }

    fn cluster_deployment() -> ClusterDeployment {
        serde_yaml::from_str(
            r#"
apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata: {name: cp, namespace: ns, labels: {cluster.x-k8s.io/cluster-name: c1}}
spec:
  clusterName: c1
  baseDomain: lab.home
  platform: {agentBareMetal: {}}
  pullSecretRef: {name: pull-secret}
  clusterInstallRef: {group: extensions.hive.openshift.io, version: v1beta1, kind: AgentClusterInstall, name: cp}
"#,
        )
        .unwrap()
    }

    fn aci(state: &str) -> AgentClusterInstall {
        crate::controller::test_fixtures::aci(3, state, "[]")
    }

    fn infraenv(iso_url: Option<&str>) -> InfraEnv {
        let status = iso_url.map_or_else(String::new, |u| {
            format!("status: {{isoDownloadURL: '{u}'}}")
        });
        serde_yaml::from_str(&format!(
            r#"
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {{name: workers, namespace: ns}}
spec: {{pullSecretRef: {{name: pull-secret}}}}
{status}
"#
        ))
        .unwrap()
    }

    /// Worker `w-0` of template `workers`, everything in place: the cluster's infrastructure is
    /// provisioned, its ClusterDeployment and (pre-install) ACI exist, the InfraEnv has its ISO,
    /// the Metal3Machine has no image yet and no data Secret exists.
    fn dereferenced() -> Dereferenced {
        let config = config(
            "w-0",
            true,
            &with_finalizer(),
            "{sshAuthorizedKey: ssh-ed25519 AAAA}",
        );
        Dereferenced {
            config: Arc::new(config.clone()),
            machine: Some(machine("w-0", false)),
            cluster: Some(cluster("{}", true)),
            metal3machine: Some(metal3machine("w-0", "", "{}")),
            template_ref: Some(TemplateRef {
                namespace: "ns".into(),
                name: "workers".into(),
            }),
            template: Some(template(PLACEHOLDER_IMAGE)),
            template_configs: vec![config],
            cluster_deployments: vec![cluster_deployment()],
            aci: Some(aci("insufficient")),
            infraenv: Some(infraenv(Some(ISO))),
            data_secret_exists: false,
            discovery_ignition: None,
            cluster_machines: Vec::new(),
        }
    }

    fn condition<'a>(plan: &'a Plan, type_: &str) -> &'a Condition {
        plan.status
            .as_ref()
            .expect("status written")
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} condition"))
    }

    fn reason(plan: &Plan) -> &str {
        &condition(plan, DATA_SECRET_AVAILABLE).reason
    }

    fn writes_nothing_but_status(plan: &Plan, why: &str) {
        assert!(plan.infraenv.is_none(), "{why}: no InfraEnv");
        assert!(plan.template_image.is_none(), "{why}: no template image");
        assert!(
            plan.metal3machine_image.is_none(),
            "{why}: no Metal3Machine image"
        );
        assert!(plan.data_secret.is_none(), "{why}: no data Secret");
        assert!(plan.delete_agents_of.is_none(), "{why}: no Agent deleted");
    }

    #[test]
    fn a_config_without_a_machine_waits_for_it_and_gets_its_finalizer() {
        let mut d = dereferenced();
        d.config = Arc::new(config("w-0", false, "", "{}"));
        d.machine = None;
        d.cluster = None;
        let plan = plan(&d, t0());
        assert_eq!(plan.finalizer, Some(true));
        assert_eq!(reason(&plan), "WaitingForMachine");
        assert_eq!(condition(&plan, DATA_SECRET_AVAILABLE).status, "False");
        assert_eq!(condition(&plan, READY).status, "False");
        assert_eq!(condition(&plan, READY).reason, "WaitingForMachine");
        writes_nothing_but_status(&plan, "no Machine");
        assert!(plan.events.is_empty());
        assert_eq!(plan.requeue, Some(WAIT));
        let status = plan.status.as_ref().unwrap();
        assert_eq!(status.data_secret_name, None);
        assert_eq!(
            status.initialization.as_ref().unwrap().data_secret_created,
            Some(false)
        );
    }

    #[test]
    fn happy_path_plans_the_infraenv_the_iso_and_the_data_secret() {
        let d = dereferenced();
        let plan = plan(&d, t0());
        assert_eq!(plan.finalizer, None, "the finalizer is already there");

        let ie = plan.infraenv.as_ref().expect("InfraEnv planned");
        assert_eq!(ie.name_any(), "workers");
        let cluster_ref = ie.spec.cluster_ref.as_ref().unwrap();
        assert_eq!(
            (cluster_ref.name.as_str(), cluster_ref.namespace.as_str()),
            ("cp", "ns")
        );
        assert_eq!(
            ie.spec.ssh_authorized_key.as_deref(),
            Some("ssh-ed25519 AAAA")
        );
        // No pullSecretRef in the config: the ClusterDeployment's is used.
        assert_eq!(ie.spec.pull_secret_ref.name, "pull-secret");

        assert_eq!(plan.template_image, Some(("workers".into(), ISO.into())));
        assert_eq!(plan.metal3machine_image, Some(("w-0".into(), ISO.into())));

        // The Metal3Machine gets the URL in this same plan, so the Secret may be written.
        let secret = plan.data_secret.as_ref().expect("data Secret planned");
        assert_eq!(secret.name_any(), "w-0");
        assert_eq!(secret.type_.as_deref(), Some(image::DATA_SECRET_TYPE));
        assert_eq!(
            secret.data.as_ref().unwrap()["value"].0,
            image::EMPTY_IGNITION.as_bytes()
        );
        let owner = &secret.owner_references()[0];
        assert_eq!(
            (owner.name.as_str(), owner.uid.as_str()),
            ("w-0", "uid-w-0")
        );

        let status = plan.status.as_ref().unwrap();
        assert_eq!(status.data_secret_name.as_deref(), Some("w-0"));
        assert_eq!(
            status.initialization.as_ref().unwrap().data_secret_created,
            Some(true)
        );
        assert_eq!(status.observed_generation, Some(1));
        assert_eq!(condition(&plan, READY).status, "True");
        assert_eq!(condition(&plan, DATA_SECRET_AVAILABLE).status, "True");
        assert_eq!(reason(&plan), image::DATA_SECRET_AVAILABLE_REASON);
        assert_eq!(condition(&plan, PAUSED).status, "False");
        assert_eq!(plan.requeue, None);
        let events: Vec<_> = plan.events.iter().map(|e| (e.warning, e.reason)).collect();
        assert_eq!(events, [(false, "DataSecretCreated")]);
    }

    #[test]
    fn images_already_in_place_are_not_rewritten_and_the_secret_follows() {
        let mut d = dereferenced();
        let current = format!("{{image: {{url: '{ISO}', checksum: '', diskFormat: live-iso}}}}");
        d.template = Some(template(&current));
        d.metal3machine = Some(metal3machine("w-0", "", &current));
        let plan = plan(&d, t0());
        assert!(plan.infraenv.is_some());
        assert_eq!(plan.template_image, None);
        assert_eq!(plan.metal3machine_image, None);
        assert!(
            plan.data_secret.is_some(),
            "the Metal3Machine carries the URL"
        );
    }

    #[test]
    fn a_metal3machine_handed_to_a_host_keeps_its_image_and_gets_its_secret() {
        let mut d = dereferenced();
        d.metal3machine = Some(metal3machine(
            "w-0",
            "metal3.io/BareMetalHost: ns/host-0",
            PLACEHOLDER_IMAGE,
        ));
        let plan = plan(&d, t0());
        assert_eq!(plan.metal3machine_image, None, "CAPM3 would not pass it on");
        assert!(plan.data_secret.is_some());
    }

    #[test]
    fn no_iso_url_yet_waits_for_the_infraenv_image_without_a_secret() {
        for ie in [None, Some(infraenv(None)), Some(infraenv(Some("")))] {
            let mut d = dereferenced();
            d.infraenv = ie;
            let plan = plan(&d, t0());
            assert!(plan.infraenv.is_some(), "the InfraEnv is still applied");
            assert_eq!(reason(&plan), "WaitingForInfraEnvImage");
            assert_eq!(plan.template_image, None);
            assert_eq!(plan.metal3machine_image, None);
            assert!(plan.data_secret.is_none());
            assert_eq!(condition(&plan, READY).reason, "WaitingForInfraEnvImage");
            assert_eq!(plan.status.as_ref().unwrap().data_secret_name, None);
            assert_eq!(plan.requeue, Some(WAIT));
            assert!(plan.events.is_empty());
        }
    }

    #[test]
    fn unprovisioned_cluster_infrastructure_blocks_the_secret_not_the_iso() {
        let mut d = dereferenced();
        d.cluster = Some(cluster("{}", false));
        let plan = plan(&d, t0());
        assert_eq!(reason(&plan), "WaitingForClusterInfrastructure");
        assert!(plan.data_secret.is_none());
        assert!(plan.infraenv.is_some());
        assert!(
            plan.metal3machine_image.is_some(),
            "the image goes in ahead"
        );
        assert_eq!(plan.requeue, Some(WAIT));
    }

    #[test]
    fn without_a_cluster_deployment_no_infraenv_and_no_secret() {
        let mut d = dereferenced();
        d.cluster_deployments.clear();
        d.aci = None;
        let plan = plan(&d, t0());
        assert_eq!(reason(&plan), "WaitingForClusterDeployment");
        assert!(plan.infraenv.is_none());
        assert!(plan.data_secret.is_none());

        let mut d = dereferenced();
        d.cluster_deployments.push(cluster_deployment());
        let plan = super::plan(&d, t0());
        assert_eq!(reason(&plan), "SeveralClusterDeployments");
        assert!(plan.infraenv.is_none() && plan.data_secret.is_none());
        assert!(
            plan.events
                .iter()
                .any(|e| e.warning && e.reason == "SeveralClusterDeployments")
        );
    }

    #[test]
    fn a_worker_waits_while_day1_installs() {
        let mut d = dereferenced();
        d.aci = Some(aci("installing"));
        let plan = plan(&d, t0());
        assert_eq!(reason(&plan), "WaitingForInstallComplete");
        assert!(
            condition(&plan, DATA_SECRET_AVAILABLE)
                .message
                .contains("adding-hosts")
        );
        assert!(plan.data_secret.is_none());
        assert!(
            plan.metal3machine_image.is_some(),
            "the image is still written"
        );
        assert_eq!(plan.requeue, Some(WAIT));

        // Day-2: the cluster accepts new hosts.
        d.aci = Some(aci("adding-hosts"));
        assert!(super::plan(&d, t0()).data_secret.is_some());
    }

    #[test]
    fn a_worker_created_after_the_install_started_waits_even_in_a_pre_install_state() {
        // The install started at t0 (RequirementsMet True since) and the cluster is back in
        // `ready`, retrying a failed preparation.
        let mut d = dereferenced();
        let mut started = aci("ready");
        started.status.as_mut().unwrap().conditions.push(
            serde_yaml::from_str(&format!(
                "{{type: RequirementsMet, status: 'True', reason: ClusterIsReady, \
                  lastTransitionTime: '{}'}}",
                t0()
            ))
            .unwrap(),
        );
        d.aci = Some(started);
        let created = |d: &mut Dereferenced, second: i64| {
            let at = Timestamp::from_second(t0().as_second() + second).unwrap();
            d.machine.as_mut().unwrap().metadata.creation_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at));
        };
        created(&mut d, 60);
        let plan = plan(&d, t0());
        assert_eq!(reason(&plan), "WaitingForInstallComplete");
        let message = &condition(&plan, DATA_SECRET_AVAILABLE).message;
        assert!(
            message.contains("created after the day-1 install started"),
            "{message}"
        );
        assert!(plan.data_secret.is_none());

        // Created before the start: a day-1 worker.
        created(&mut d, -60);
        assert!(super::plan(&d, t0()).data_secret.is_some());
    }

    #[test]
    fn a_control_plane_machine_is_never_held() {
        let mut d = dereferenced();
        d.machine = Some(machine("w-0", true));
        for state in ["installing", "installed", "error", "ready", ""] {
            d.aci = Some(aci(state));
            let plan = plan(&d, t0());
            assert!(plan.data_secret.is_some(), "{state}");
            assert_eq!(
                reason(&plan),
                image::DATA_SECRET_AVAILABLE_REASON,
                "{state}"
            );
        }
    }

    #[test]
    fn configs_of_one_template_disagreeing_on_the_ssh_key_get_no_infraenv() {
        let mut d = dereferenced();
        d.template_configs.push(config(
            "w-1",
            true,
            &with_finalizer(),
            "{sshAuthorizedKey: ssh-ed25519 BBBB}",
        ));
        let plan = plan(&d, t0());
        assert_eq!(reason(&plan), "InfraEnvConfigConflict");
        let message = &condition(&plan, DATA_SECRET_AVAILABLE).message;
        assert!(message.contains("sshAuthorizedKey"), "{message}");
        assert!(message.contains("[w-0] vs [w-1]"), "{message}");
        writes_nothing_but_status(&plan, "conflict");
        assert_eq!(plan.events.len(), 1);
        assert!(plan.events[0].warning);
        assert_eq!(plan.events[0].reason, "InfraEnvConfigConflict");
        assert_eq!(&plan.events[0].note, message);
        assert_eq!(condition(&plan, READY).reason, "InfraEnvConfigConflict");
    }

    const QCOW: &str = "{image: {url: 'http://rhcos/x.qcow2', checksum: 'http://rhcos/x.sha256', checksumType: sha256, diskFormat: qcow2}}";

    const DISCOVERY_IGNITION: &str = r#"{"ignition":{"version":"3.1.0"},"systemd":{"units":[]}}"#;

    /// Worker `w-0` of a template that boots a qcow2 disk image.
    fn disk_image() -> Dereferenced {
        let mut d = dereferenced();
        d.template = Some(template(QCOW));
        d.metal3machine = Some(metal3machine("w-0", "", QCOW));
        d
    }

    #[test]
    fn a_disk_image_template_keeps_its_image_and_waits_for_the_discovery_ignition() {
        let d = disk_image();
        let plan = plan(&d, t0());
        assert!(plan.infraenv.is_some());
        assert_eq!(plan.template_image, None, "the user's image is kept");
        assert_eq!(plan.metal3machine_image, None);
        assert!(plan.data_secret.is_none());
        assert_eq!(reason(&plan), "WaitingForInfraEnvImage");
        assert!(
            condition(&plan, DATA_SECRET_AVAILABLE)
                .message
                .contains("discovery ignition")
        );
        assert_eq!(condition(&plan, READY).status, "False");
        assert_eq!(plan.requeue, Some(WAIT));
    }

    #[test]
    fn a_disk_image_machines_user_data_is_the_discovery_ignition() {
        let mut d = disk_image();
        d.discovery_ignition = Some(Ok(DISCOVERY_IGNITION.into()));
        let plan = plan(&d, t0());
        assert_eq!(plan.template_image, None);
        assert_eq!(plan.metal3machine_image, None);
        let secret = plan.data_secret.as_ref().expect("data Secret planned");
        assert_eq!(
            secret.data.as_ref().unwrap()["value"].0,
            DISCOVERY_IGNITION.as_bytes()
        );
        assert_eq!(reason(&plan), image::DATA_SECRET_AVAILABLE_REASON);
        assert_eq!(condition(&plan, READY).status, "True");
        let created = plan
            .events
            .iter()
            .find(|e| e.reason == "DataSecretCreated")
            .unwrap();
        assert!(created.note.contains("disk-image flow"), "{}", created.note);
    }

    #[test]
    fn a_disk_image_machine_with_a_node_name_gets_the_hostname_units() {
        let mut d = disk_image();
        d.discovery_ignition = Some(Ok(DISCOVERY_IGNITION.into()));
        let mut config = (*d.config).clone();
        config.spec.node_registration =
            Some(serde_yaml::from_str("{name: $METADATA_NAME}").unwrap());
        d.config = Arc::new(config.clone());
        let plan = plan(&d, t0());
        let secret = plan.data_secret.as_ref().expect("data Secret planned");
        let value: serde_json::Value =
            serde_json::from_slice(&secret.data.as_ref().unwrap()["value"].0).unwrap();
        let units: Vec<&str> = value["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|u| u["name"].as_str())
            .collect();
        assert_eq!(
            units,
            [
                crate::controller::user_data::CONFIG_DRIVE_UNIT,
                crate::controller::user_data::HOSTNAME_UNIT
            ]
        );

        // A name the host's shell could not expand: said on the condition, no Secret.
        config.spec.node_registration =
            Some(serde_yaml::from_str("{name: '${METADATA_NAME'}").unwrap());
        d.config = Arc::new(config);
        let refused = super::plan(&d, t0());
        assert!(refused.data_secret.is_none());
        assert_eq!(reason(&refused), "InvalidUserData");
        assert!(
            condition(&refused, DATA_SECRET_AVAILABLE)
                .message
                .contains("nodeRegistration.name"),
        );
    }

    #[test]
    fn a_disk_image_worker_is_held_like_any_other() {
        let mut d = disk_image();
        d.discovery_ignition = Some(Ok(DISCOVERY_IGNITION.into()));
        d.aci = Some(aci("installing"));
        let plan = plan(&d, t0());
        assert!(plan.data_secret.is_none());
        assert_eq!(reason(&plan), "WaitingForInstallComplete");
    }

    #[test]
    fn an_unreadable_discovery_ignition_is_shown_with_its_cause() {
        let mut d = disk_image();
        d.discovery_ignition = Some(Err(FetchError::Connect {
            host: "assisted.example".into(),
            reason: "timed out".into(),
        }));
        let plan = plan(&d, t0());
        assert!(plan.data_secret.is_none());
        assert_eq!(reason(&plan), "DiscoveryIgnitionUnavailable");
        assert!(
            condition(&plan, DATA_SECRET_AVAILABLE)
                .message
                .contains("timed out")
        );
        assert_eq!(plan.requeue, Some(WAIT));
    }

    #[test]
    fn a_paused_cluster_writes_nothing_but_its_paused_status() {
        for (cluster_spec, config_meta) in [
            ("{paused: true}", with_finalizer()),
            (
                "{}",
                format!(
                    "{}\n  annotations: {{cluster.x-k8s.io/paused: ''}}",
                    with_finalizer()
                ),
            ),
        ] {
            let mut d = dereferenced();
            d.cluster = Some(cluster(cluster_spec, true));
            let paused = config(
                "w-0",
                true,
                &config_meta,
                "{sshAuthorizedKey: ssh-ed25519 AAAA}",
            );
            d.template_configs = vec![paused.clone()];
            d.config = Arc::new(paused);
            let plan = plan(&d, t0());
            assert_eq!(condition(&plan, PAUSED).status, "True", "{cluster_spec}");
            assert_eq!(condition(&plan, PAUSED).reason, PAUSED);
            assert_eq!(reason(&plan), "Paused");
            assert_eq!(condition(&plan, READY).status, "False");
            assert_eq!(plan.finalizer, None);
            writes_nothing_but_status(&plan, cluster_spec);
            assert!(plan.events.is_empty());
            assert_eq!(plan.requeue, None, "a paused config waits for a change");
        }
    }

    #[test]
    fn deletion_deletes_the_machines_agents_and_releases_the_finalizer() {
        let mut d = dereferenced();
        d.config = Arc::new(config(
            "w-0",
            true,
            &format!(
                "{}\n  deletionTimestamp: '2027-01-01T00:00:00Z'",
                with_finalizer()
            ),
            "{}",
        ));
        let plan = plan(&d, t0());
        assert_eq!(plan.delete_agents_of.as_deref(), Some("w-0"));
        assert_eq!(plan.finalizer, Some(false));
        assert!(plan.infraenv.is_none() && plan.data_secret.is_none());
        assert!(plan.status.is_none());

        // Not ours to clean up without our finalizer.
        d.config = Arc::new(config(
            "w-0",
            true,
            "deletionTimestamp: '2027-01-01T00:00:00Z'\n  finalizers: [other]",
            "{}",
        ));
        let plan = super::plan(&d, t0());
        assert_eq!(plan.delete_agents_of, None);
        assert_eq!(plan.finalizer, None);
    }

    #[test]
    fn status_is_not_rewritten_when_nothing_changed() {
        let mut d = dereferenced();
        let first = plan(&d, t0());
        let mut config = (*d.config).clone();
        config.status = first.status.clone();
        d.config = Arc::new(config);
        d.data_secret_exists = true;
        d.template = Some(template(&format!(
            "{{image: {{url: '{ISO}', checksum: '', diskFormat: live-iso}}}}"
        )));
        d.metal3machine = Some(metal3machine(
            "w-0",
            "",
            &format!("{{image: {{url: '{ISO}', checksum: '', diskFormat: live-iso}}}}"),
        ));
        let later = t0().checked_add(jiff_seconds(60)).unwrap();
        let second = plan(&d, later);
        assert!(second.status.is_none(), "{:?}", second.status);
        assert!(
            second.data_secret.is_none(),
            "an existing Secret is not rewritten"
        );
        assert!(second.events.is_empty());
        assert!(
            second.infraenv.is_some(),
            "the InfraEnv is re-applied every time"
        );

        // Still waiting, fed its own status: no write either.
        let mut d = dereferenced();
        d.infraenv = Some(infraenv(None));
        let first = plan(&d, t0());
        let mut config = (*d.config).clone();
        config.status = first.status.clone();
        d.config = Arc::new(config);
        assert!(plan(&d, later).status.is_none());
    }

    #[test]
    fn a_field_without_effect_shows_on_fields_supported_and_blocks_nothing() {
        let mut d = dereferenced();
        let spec = "{sshAuthorizedKey: ssh-ed25519 AAAA, osImageVersion: '4.18'}";
        let with_version = config("w-0", true, &with_finalizer(), spec);
        d.template_configs = vec![with_version.clone()];
        d.config = Arc::new(with_version);
        let first = plan(&d, t0());
        let c = condition(&first, conditions::FIELDS_SUPPORTED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "UnsupportedFields")
        );
        assert!(
            c.message
                .contains("spec.osImageVersion is not supported yet"),
            "{}",
            c.message
        );
        assert!(first.data_secret.is_some(), "the Secret is not held back");
        assert_eq!(condition(&first, READY).status, "True");

        // Once the field is gone (a new config: the spec is immutable), so is the condition.
        let mut without = config(
            "w-0",
            true,
            &with_finalizer(),
            "{sshAuthorizedKey: ssh-ed25519 AAAA}",
        );
        without.status = first.status.clone();
        d.template_configs = vec![without.clone()];
        d.config = Arc::new(without);
        let later = plan(&d, t0());
        let status = later.status.as_ref().expect("status changes");
        assert!(
            conditions::find(&status.conditions, conditions::FIELDS_SUPPORTED).is_none(),
            "{:?}",
            status.conditions
        );
    }

    // -- BareMetalHost problems ------------------------------------------------------------

    /// Machine `name` (worker), its Metal3Machine claiming BareMetalHost `host-<name>`, and
    /// that host with `boot_mac`.
    fn claimed(name: &str, boot_mac: Option<&str>) -> MachineHost {
        let mac = boot_mac.map_or_else(String::new, |m| format!("bootMACAddress: '{m}'"));
        MachineHost {
            machine: machine(name, false),
            metal3machine: Some(metal3machine(
                name,
                &format!("metal3.io/BareMetalHost: ns/host-{name}"),
                "{}",
            )),
            host: Some(
                serde_yaml::from_str(&format!(
                    "apiVersion: metal3.io/v1alpha1\nkind: BareMetalHost\n\
                     metadata: {{name: host-{name}, namespace: ns, uid: u-{name}}}\n\
                     spec: {{online: true, {mac}}}"
                ))
                .unwrap(),
            ),
        }
    }

    /// Worker w-0 with its data Secret, its host claimed; `others` are the cluster's other
    /// Machines.
    fn with_host(boot_mac: Option<&str>, others: Vec<MachineHost>) -> Dereferenced {
        let mut d = dereferenced();
        d.data_secret_exists = true;
        d.metal3machine = Some(metal3machine(
            "w-0",
            "metal3.io/BareMetalHost: ns/host-w-0",
            "{}",
        ));
        d.cluster_machines = vec![claimed("w-0", boot_mac)];
        d.cluster_machines.extend(others);
        d
    }

    /// `d` with the status `plan` wrote.
    fn after(mut d: Dereferenced, plan: &Plan) -> Dereferenced {
        let mut config = (*d.config).clone();
        config.status = plan.status.clone().or(config.status);
        d.config = Arc::new(config);
        d
    }

    #[test]
    fn a_host_without_a_boot_mac_shows_on_ready_with_one_warning() {
        let d = with_host(None, vec![]);
        let first = plan(&d, t0());
        let ready = condition(&first, READY);
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", matching::BAREMETALHOST_WITHOUT_BOOT_MAC)
        );
        assert!(ready.message.contains("BareMetalHost ns/host-w-0"));
        assert!(ready.message.contains("bootMACAddress"));
        // The Secret exists and stays: the gate is not the host's business.
        assert_eq!(condition(&first, DATA_SECRET_AVAILABLE).status, "True");
        let status = first.status.as_ref().unwrap();
        assert_eq!(status.data_secret_name.as_deref(), Some("w-0"));
        assert_eq!(first.requeue, None, "waits for the host to change");
        let events: Vec<_> = first
            .events
            .iter()
            .map(|e| (e.warning, e.reason, e.note.as_str()))
            .collect();
        assert_eq!(
            events,
            [(
                true,
                matching::BAREMETALHOST_WITHOUT_BOOT_MAC,
                ready.message.as_str()
            )]
        );

        // Said already: no second event, no status write.
        let d = after(d, &first);
        let again = plan(&d, t0());
        assert!(again.events.is_empty());
        assert!(again.status.is_none());

        // Fixed: Ready again, silently.
        let mut d = d;
        d.cluster_machines = vec![claimed("w-0", Some("52:54:00:00:01:00"))];
        let fixed = plan(&d, t0());
        assert_eq!(condition(&fixed, READY).status, "True");
        assert!(fixed.events.is_empty());
    }

    #[test]
    fn a_malformed_or_shared_boot_mac_shows_on_each_machine_concerned() {
        let d = with_host(Some("mac 52:54:00:aa:bb:cc"), vec![]);
        assert_eq!(
            condition(&plan(&d, t0()), READY).reason,
            matching::INVALID_BOOT_MAC
        );

        let d = with_host(
            Some("52:54:00:00:01:00"),
            vec![claimed("w-1", Some("52:54:00:00:01:00"))],
        );
        let plan = plan(&d, t0());
        let ready = condition(&plan, READY);
        assert_eq!(ready.reason, matching::DUPLICATE_BOOT_MAC);
        assert!(
            ready.message.contains("ns/host-w-0") && ready.message.contains("ns/host-w-1"),
            "{}",
            ready.message
        );
        assert_eq!(plan.events.len(), 1);
    }

    #[test]
    fn another_machines_host_problem_is_not_this_configs() {
        let d = with_host(
            Some("52:54:00:00:01:00"),
            vec![
                claimed("w-1", None),
                MachineHost {
                    machine: machine("w-2", false),
                    metal3machine: None,
                    host: None,
                },
            ],
        );
        let plan = plan(&d, t0());
        assert_eq!(condition(&plan, READY).status, "True");
        assert!(plan.events.is_empty());
    }

    #[test]
    fn a_host_problem_does_not_hold_back_the_data_secret() {
        // A claimed host before the Secret exists (it was deleted, say): the Secret is still
        // created when the gate opens, and Ready shows the host's problem.
        let mut d = with_host(None, vec![]);
        d.data_secret_exists = false;
        let plan = plan(&d, t0());
        assert!(plan.data_secret.is_some());
        assert_eq!(condition(&plan, DATA_SECRET_AVAILABLE).status, "True");
        assert_eq!(
            condition(&plan, READY).reason,
            matching::BAREMETALHOST_WITHOUT_BOOT_MAC
        );
        let reasons: Vec<_> = plan.events.iter().map(|e| e.reason).collect();
        assert_eq!(
            reasons,
            [
                "DataSecretCreated",
                matching::BAREMETALHOST_WITHOUT_BOOT_MAC
            ]
        );
    }

    fn jiff_seconds(s: i64) -> k8s_openapi::jiff::SignedDuration {
        k8s_openapi::jiff::SignedDuration::from_secs(s)
    }
}

//! The live ISO into Metal3, and when a Machine's bootstrap data Secret may exist. Pure: no
//! client, no clock.
//!
//! CAPM3 hands a Metal3Machine's image to a BareMetalHost once, when it claims the host, and it
//! claims a host only once the Machine has bootstrap data. So the data Secret is the gate: it is
//! created only when the Metal3Machine carries the InfraEnv's current ISO URL, and no host can be
//! provisioned with a missing or stale image.

use std::collections::BTreeMap;

use external_types::capm3::v1beta2::Metal3Machine;
use external_types::capm3::v1beta2::Metal3MachineTemplate;
use external_types::capm3::v1beta2::metal3machine::{
    Metal3MachineImage, Metal3MachineImageDiskFormat,
};
use external_types::capm3::v1beta2::metal3machinetemplate::{
    Metal3MachineTemplateTemplateSpecImage, Metal3MachineTemplateTemplateSpecImageDiskFormat,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use provider_api::bootstrap::api::DISCOVERY_IMAGE_FAILED_REASON;

use super::hold::{Hold, HoldReason};
use manager::names::readable_label_value;

use super::labels::CLUSTER_NAME_LABEL;
use super::matching::BAREMETALHOST_ANNOTATION;

/// The Secret type Cluster API's bootstrap contract uses.
pub const DATA_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";
pub const CONFIG_API_VERSION: &str = "bootstrap.cluster.x-k8s.io/v1alpha2";
pub const CONFIG_KIND: &str = "OpenshiftAssistedConfig";
/// A valid Ignition 3.1 config that does nothing: in live-ISO mode the host boots the discovery
/// ISO, which carries everything, and baremetal-operator still wants user data to write.
pub const EMPTY_IGNITION: &str = r#"{"ignition":{"version":"3.1.0"}}"#;
/// Condition reason when the data Secret exists (CAPOA: a True condition's reason is its type).
pub const DATA_SECRET_AVAILABLE_REASON: &str = "DataSecretAvailable";

/// The live-ISO image of a Metal3Machine. The checksum is written empty rather than left out:
/// CAPM3 v1.13's CRD requires the key, v1.14's accepts it empty for live-iso.
pub fn live_iso_image(url: &str) -> Metal3MachineImage {
    Metal3MachineImage {
        url: url.to_string(),
        checksum: String::new(),
        checksum_type: None,
        disk_format: Some(Metal3MachineImageDiskFormat::LiveIso),
    }
}

/// The same image in a Metal3MachineTemplate's shape.
pub fn live_iso_template_image(url: &str) -> Metal3MachineTemplateTemplateSpecImage {
    Metal3MachineTemplateTemplateSpecImage {
        url: url.to_string(),
        checksum: String::new(),
        checksum_type: None,
        disk_format: Some(Metal3MachineTemplateTemplateSpecImageDiskFormat::LiveIso),
    }
}

/// How a template's hosts boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageMode {
    /// The InfraEnv's discovery ISO, written into the template and its Metal3Machines.
    LiveIso,
    /// The user's disk image (CAPOA's raw-image flow: a qcow2/raw RHCOS with the discovery
    /// ignition as user data), or a custom deploy: left as the user wrote it.
    DiskImage,
}

/// The mode follows from the template: no image, or a live-iso image, means live ISO (ours to
/// write); any other image, or a customDeploy, is the user's and is kept. An image without a
/// diskFormat is a disk image: Ironic then detects qcow2/raw from the file.
pub fn image_mode(template: &Metal3MachineTemplate) -> ImageMode {
    let spec = &template.spec.template.spec;
    match &spec.image {
        Some(image)
            if image.disk_format
                == Some(Metal3MachineTemplateTemplateSpecImageDiskFormat::LiveIso) =>
        {
            ImageMode::LiveIso
        }
        Some(_) => ImageMode::DiskImage,
        None if spec
            .custom_deploy
            .as_ref()
            .is_some_and(|c| !c.method.is_empty()) =>
        {
            ImageMode::DiskImage
        }
        None => ImageMode::LiveIso,
    }
}

/// The label Cluster API's topology puts on the objects it owns (a ClusterClass cluster's
/// templates).
pub const TOPOLOGY_OWNED_LABEL: &str = "topology.cluster.x-k8s.io/owned";

/// The template needs the ISO written: live-ISO mode and its image is not that ISO yet. Never a
/// template Cluster API's topology owns: topology sees any change as drift from its ClusterClass
/// and rotates the template (a new name, a new InfraEnv, the old ISO URL gone from under the
/// booting hosts); the Metal3Machines carry the image that matters.
pub fn template_needs_image(template: &Metal3MachineTemplate, iso_url: &str) -> bool {
    !iso_url.is_empty()
        && !template
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(TOPOLOGY_OWNED_LABEL))
        && image_mode(template) == ImageMode::LiveIso
        && template.spec.template.spec.image.as_ref() != Some(&live_iso_template_image(iso_url))
}

/// The Metal3Machine has handed its image to a host: CAPM3 writes the image into the host when
/// it claims it (and annotates the Metal3Machine), and never again, so changing the
/// Metal3Machine's image afterwards has no effect on that host.
pub fn metal3machine_handed_over(m3m: &Metal3Machine) -> bool {
    m3m.annotations().contains_key(BAREMETALHOST_ANNOTATION)
        || m3m
            .status
            .as_ref()
            .and_then(|s| s.initialization.as_ref())
            .and_then(|i| i.provisioned)
            .unwrap_or(false)
}

/// The Metal3Machine carries `iso_url` as its live-iso image.
pub fn metal3machine_has_image(m3m: &Metal3Machine, iso_url: &str) -> bool {
    m3m.spec.image.as_ref().is_some_and(|i| {
        i.url == iso_url && i.disk_format == Some(Metal3MachineImageDiskFormat::LiveIso)
    })
}

/// The Metal3Machine should get `iso_url` written: live-ISO mode, not yet handed to a host, and
/// not already carrying it. Also true when the ISO was regenerated after an earlier write.
pub fn metal3machine_needs_image(mode: ImageMode, m3m: &Metal3Machine, iso_url: &str) -> bool {
    mode == ImageMode::LiveIso
        && !iso_url.is_empty()
        && !metal3machine_handed_over(m3m)
        && !metal3machine_has_image(m3m, iso_url)
}

/// The message of `ImageCreated` when it is False: why the InfraEnv has no image.
pub fn image_creation_error(ie: &assisted_api::infraenv::InfraEnv) -> Option<&str> {
    ie.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "ImageCreated" && c.status == "False")
        .map(|c| c.message.as_deref().unwrap_or("ImageCreated is False"))
}

/// Why a Machine's data Secret waits, or that it may be created. One variant per reason; the
/// condition `DataSecretAvailable` takes [`Gate::reason`] and [`Gate::message`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    WaitingForClusterInfrastructure {
        cluster: String,
    },
    WaitingForClusterDeployment {
        cluster: String,
    },
    /// A worker held by the day-1/day-2 rule.
    WaitingForInstallComplete(HoldReason),
    WaitingForInfraEnvImage {
        infraenv: String,
        mode: ImageMode,
    },
    /// The InfraEnv says its image cannot be built (`ImageCreated` False): nothing will boot
    /// until the input is fixed, so the cause is shown here, where the user looks.
    DiscoveryImageFailed {
        infraenv: String,
        message: String,
    },
    WaitingForMetal3MachineImage {
        metal3machine: String,
        current: Option<String>,
        want: String,
    },
    Ready,
}

impl Gate {
    pub fn is_ready(&self) -> bool {
        matches!(self, Gate::Ready)
    }

    /// CamelCase condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Gate::WaitingForClusterInfrastructure { .. } => "WaitingForClusterInfrastructure",
            Gate::WaitingForClusterDeployment { .. } => "WaitingForClusterDeployment",
            // CAPOA's reason for the same wait, so existing habits and alerts keep working.
            Gate::WaitingForInstallComplete(_) => "WaitingForInstallComplete",
            Gate::WaitingForInfraEnvImage { .. } => "WaitingForInfraEnvImage",
            Gate::DiscoveryImageFailed { .. } => DISCOVERY_IMAGE_FAILED_REASON,
            Gate::WaitingForMetal3MachineImage { .. } => "WaitingForMetal3MachineImage",
            Gate::Ready => DATA_SECRET_AVAILABLE_REASON,
        }
    }

    /// What the user can check or do.
    pub fn message(&self) -> String {
        match self {
            Gate::WaitingForClusterInfrastructure { cluster } => format!(
                "waiting for Cluster {cluster}'s infrastructure to be provisioned (status.initialization.infrastructureProvisioned); check its Metal3Cluster"
            ),
            Gate::WaitingForClusterDeployment { cluster } => format!(
                "waiting for the ClusterDeployment of Cluster {cluster} (label cluster.x-k8s.io/cluster-name={cluster}); the control plane provider creates it, check the OpenshiftAssistedControlPlane's conditions"
            ),
            Gate::WaitingForInstallComplete(reason) => reason.to_string(),
            Gate::WaitingForInfraEnvImage {
                infraenv,
                mode: ImageMode::LiveIso,
            } => format!(
                "waiting for InfraEnv {infraenv} to have a discovery image (status.isoDownloadURL); check the InfraEnv's ImageCreated condition"
            ),
            Gate::WaitingForInfraEnvImage {
                infraenv,
                mode: ImageMode::DiskImage,
            } => format!(
                "waiting for InfraEnv {infraenv}'s discovery ignition; check the InfraEnv's ImageCreated condition"
            ),
            Gate::DiscoveryImageFailed { infraenv, message } => format!(
                "InfraEnv {infraenv} cannot build the discovery image: {message}; fix the \
                 config's fields (from the OpenshiftAssistedConfigTemplate, or for control-plane \
                 Machines the control plane's spec.openshiftAssistedConfigSpec) or what they name \
                 (pull secret, proxy, ignition override, NMStateConfigs)"
            ),
            Gate::WaitingForMetal3MachineImage {
                metal3machine,
                current,
                want,
            } => format!(
                "waiting for Metal3Machine {metal3machine} to carry the current discovery image {want} (it has {}); the image is written by this controller, so this clears on its own unless a webhook refuses the change",
                current.as_deref().unwrap_or("none")
            ),
            Gate::Ready => "the bootstrap data Secret is available".to_string(),
        }
    }
}

/// Everything the data-Secret gate depends on.
#[derive(Clone, Debug)]
pub struct GateInputs<'a> {
    pub cluster_name: &'a str,
    /// `Cluster.status.initialization.infrastructureProvisioned`.
    pub infrastructure_provisioned: bool,
    /// The cluster's ClusterDeployment exists.
    pub cluster_deployment_found: bool,
    /// From [`super::hold::hold`] for this Machine.
    pub hold: &'a Hold,
    pub mode: ImageMode,
    pub infraenv_name: &'a str,
    /// `InfraEnv.status.isoDownloadURL` (live-ISO mode).
    pub iso_url: Option<&'a str>,
    /// The InfraEnv's `ImageCreated` message while that condition is False.
    pub image_error: Option<&'a str>,
    /// The InfraEnv's discovery ignition could be read (disk-image mode, where it is the data).
    pub discovery_ignition_available: bool,
    pub metal3machine: &'a Metal3Machine,
}

/// Whether the Machine's data Secret may be created now, checked in the order a user would fix
/// things. Evaluated until the Secret exists; an existing Secret is never taken back.
pub fn data_secret_gate(inputs: &GateInputs<'_>) -> Gate {
    if !inputs.infrastructure_provisioned {
        return Gate::WaitingForClusterInfrastructure {
            cluster: inputs.cluster_name.to_string(),
        };
    }
    if !inputs.cluster_deployment_found {
        return Gate::WaitingForClusterDeployment {
            cluster: inputs.cluster_name.to_string(),
        };
    }
    // Before the hold: a held worker's image is built meanwhile, and should not fail unseen.
    if let Some(message) = inputs.image_error {
        return Gate::DiscoveryImageFailed {
            infraenv: inputs.infraenv_name.to_string(),
            message: message.to_string(),
        };
    }
    if let Hold::Held(reason) = inputs.hold {
        return Gate::WaitingForInstallComplete(reason.clone());
    }
    match inputs.mode {
        ImageMode::DiskImage => {
            if !inputs.discovery_ignition_available {
                return Gate::WaitingForInfraEnvImage {
                    infraenv: inputs.infraenv_name.to_string(),
                    mode: ImageMode::DiskImage,
                };
            }
        }
        ImageMode::LiveIso => {
            let Some(url) = inputs.iso_url.filter(|u| !u.is_empty()) else {
                return Gate::WaitingForInfraEnvImage {
                    infraenv: inputs.infraenv_name.to_string(),
                    mode: ImageMode::LiveIso,
                };
            };
            let m3m = inputs.metal3machine;
            // Already handed to a host: the image question is settled (an older ISO of the same
            // InfraEnv still registers), and withholding data would only stall CAPM3.
            if !metal3machine_handed_over(m3m) && !metal3machine_has_image(m3m, url) {
                return Gate::WaitingForMetal3MachineImage {
                    metal3machine: m3m.name_any(),
                    current: m3m.spec.image.as_ref().map(|i| i.url.clone()),
                    want: url.to_string(),
                };
            }
        }
    }
    Gate::Ready
}

/// The data Secret's name: the config's, as CAPOA and CAPI's kubeadm provider name it, so
/// `clusterctl move` can rebuild the reference.
pub fn data_secret_name(config_name: &str) -> String {
    config_name.to_string()
}

/// What the data Secret is built from.
#[derive(Clone, Debug)]
pub struct DataSecretInputs<'a> {
    pub config_name: &'a str,
    pub config_namespace: &'a str,
    pub config_uid: &'a str,
    pub cluster_name: &'a str,
    /// The Ignition: [`EMPTY_IGNITION`] in live-ISO mode, the discovery ignition (with the
    /// per-machine units) in disk-image mode.
    pub value: &'a str,
}

/// The bootstrap data Secret, per CAPI's bootstrap contract: type `cluster.x-k8s.io/secret`,
/// the cluster-name label, a controller reference to the config, keys `value` and `format`.
pub fn desired_data_secret(inputs: &DataSecretInputs<'_>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(data_secret_name(inputs.config_name)),
            namespace: Some(inputs.config_namespace.to_string()),
            labels: Some(BTreeMap::from([(
                CLUSTER_NAME_LABEL.to_string(),
                readable_label_value(inputs.cluster_name),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: CONFIG_API_VERSION.to_string(),
                kind: CONFIG_KIND.to_string(),
                name: inputs.config_name.to_string(),
                uid: inputs.config_uid.to_string(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        type_: Some(DATA_SECRET_TYPE.to_string()),
        data: Some(BTreeMap::from([
            (
                "value".to_string(),
                ByteString(inputs.value.as_bytes().to_vec()),
            ),
            ("format".to_string(), ByteString(b"ignition".to_vec())),
        ])),
        ..Secret::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISO: &str = "https://assisted.example/images/ie1/discovery.iso?rev=2";

    fn template(spec: &str) -> Metal3MachineTemplate {
        serde_yaml::from_str(&format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: Metal3MachineTemplate\nmetadata: {{name: workers, namespace: ns}}\nspec:\n  template:\n    spec: {spec}\n"
        ))
        .unwrap()
    }

    fn m3m(annotations: &str, spec: &str, status: &str) -> Metal3Machine {
        serde_yaml::from_str(&format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: Metal3Machine\nmetadata: {{name: w-0, namespace: ns, annotations: {annotations}}}\nspec: {spec}\nstatus: {status}\n"
        ))
        .unwrap()
    }

    #[test]
    fn live_iso_images_have_the_capm3_shape() {
        let json = serde_json::to_value(live_iso_image(ISO)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"url": ISO, "checksum": "", "diskFormat": "live-iso"})
        );
        let json = serde_json::to_value(live_iso_template_image(ISO)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"url": ISO, "checksum": "", "diskFormat": "live-iso"})
        );
    }

    #[test]
    fn image_mode_follows_the_template() {
        let cases = [
            ("{}", ImageMode::LiveIso),
            (
                "{image: {url: 'http://old/x.iso', checksum: '', diskFormat: live-iso}}",
                ImageMode::LiveIso,
            ),
            (
                "{image: {url: 'http://rhcos/x.qcow2', checksum: 'http://rhcos/x.sha256', checksumType: sha256, diskFormat: qcow2}}",
                ImageMode::DiskImage,
            ),
            (
                "{image: {url: 'http://rhcos/x.raw', checksum: abc, diskFormat: raw}}",
                ImageMode::DiskImage,
            ),
            (
                "{image: {url: 'http://rhcos/x', checksum: abc}}",
                ImageMode::DiskImage,
            ),
            (
                "{customDeploy: {method: install_coreos}}",
                ImageMode::DiskImage,
            ),
        ];
        for (spec, mode) in cases {
            assert_eq!(image_mode(&template(spec)), mode, "{spec}");
        }
    }

    #[test]
    fn template_image_is_written_once_per_url() {
        assert!(template_needs_image(&template("{}"), ISO));
        assert!(!template_needs_image(&template("{}"), ""));
        // A ClusterClass cluster's template belongs to Cluster API's topology.
        let mut owned = template("{}");
        owned.metadata.labels = Some([(TOPOLOGY_OWNED_LABEL.to_string(), String::new())].into());
        assert!(!template_needs_image(&owned, ISO));
        let current = format!("{{image: {{url: '{ISO}', checksum: '', diskFormat: live-iso}}}}");
        assert!(!template_needs_image(&template(&current), ISO));
        // Regenerated image: the template follows.
        assert!(template_needs_image(
            &template(&current),
            "https://assisted.example/new.iso"
        ));
        let qcow = "{image: {url: 'http://rhcos/x.qcow2', checksum: c, diskFormat: qcow2}}";
        assert!(!template_needs_image(&template(qcow), ISO));
    }

    #[test]
    fn metal3machine_image_rows() {
        let with_iso = format!("{{image: {{url: '{ISO}', checksum: '', diskFormat: live-iso}}}}");
        let old = "{image: {url: 'http://old.iso', checksum: '', diskFormat: live-iso}}";
        let claimed = "{metal3.io/BareMetalHost: ns/host-0}";
        let provisioned = "{initialization: {provisioned: true}}";
        let cases: &[(&str, ImageMode, &str, &str, &str, bool)] = &[
            ("no image yet", ImageMode::LiveIso, "{}", "{}", "{}", true),
            ("stale image", ImageMode::LiveIso, "{}", old, "{}", true),
            (
                "current image",
                ImageMode::LiveIso,
                "{}",
                &with_iso,
                "{}",
                false,
            ),
            (
                "claimed host",
                ImageMode::LiveIso,
                claimed,
                old,
                "{}",
                false,
            ),
            (
                "provisioned",
                ImageMode::LiveIso,
                "{}",
                old,
                provisioned,
                false,
            ),
            (
                "disk-image mode",
                ImageMode::DiskImage,
                "{}",
                "{}",
                "{}",
                false,
            ),
        ];
        for (name, mode, annotations, spec, status, want) in cases {
            let m = m3m(annotations, spec, status);
            assert_eq!(metal3machine_needs_image(*mode, &m, ISO), *want, "{name}");
        }
        assert!(!metal3machine_needs_image(
            ImageMode::LiveIso,
            &m3m("{}", "{}", "{}"),
            ""
        ));
    }

    struct GateCase {
        infra: bool,
        cd: bool,
        hold: Hold,
        mode: ImageMode,
        iso: Option<&'static str>,
        image_error: Option<&'static str>,
        ignition: bool,
        m3m: Metal3Machine,
    }

    impl GateCase {
        fn ready_live_iso() -> Self {
            GateCase {
                infra: true,
                cd: true,
                hold: Hold::Proceed,
                mode: ImageMode::LiveIso,
                iso: Some(ISO),
                image_error: None,
                ignition: false,
                m3m: m3m(
                    "{}",
                    &format!("{{image: {{url: '{ISO}', checksum: '', diskFormat: live-iso}}}}"),
                    "{}",
                ),
            }
        }

        fn gate(&self) -> Gate {
            data_secret_gate(&GateInputs {
                cluster_name: "c1",
                infrastructure_provisioned: self.infra,
                cluster_deployment_found: self.cd,
                hold: &self.hold,
                mode: self.mode,
                infraenv_name: "workers",
                iso_url: self.iso,
                image_error: self.image_error,
                discovery_ignition_available: self.ignition,
                metal3machine: &self.m3m,
            })
        }
    }

    #[test]
    fn gate_rows() {
        let held = HoldReason::InstallInProgress {
            state: "installing".into(),
        };
        type Tweak = Box<dyn Fn(&mut GateCase)>;
        let rows: Vec<(&str, Tweak, Gate)> = vec![
            ("ready", Box::new(|_| {}), Gate::Ready),
            (
                "infrastructure first",
                Box::new(|c| {
                    c.infra = false;
                    c.cd = false;
                }),
                Gate::WaitingForClusterInfrastructure {
                    cluster: "c1".into(),
                },
            ),
            (
                "no cluster deployment",
                Box::new(|c| c.cd = false),
                Gate::WaitingForClusterDeployment {
                    cluster: "c1".into(),
                },
            ),
            (
                "worker held",
                Box::new({
                    let held = held.clone();
                    move |c| {
                        c.hold = Hold::Held(held.clone());
                        c.iso = None;
                    }
                }),
                Gate::WaitingForInstallComplete(held.clone()),
            ),
            (
                "the image cannot be built, even for a held worker",
                Box::new({
                    let held = held.clone();
                    move |c| {
                        c.hold = Hold::Held(held.clone());
                        c.iso = None;
                        c.image_error = Some(
                            "Failed to create image: pull secret p has no .dockerconfigjson key",
                        );
                    }
                }),
                Gate::DiscoveryImageFailed {
                    infraenv: "workers".into(),
                    message: "Failed to create image: pull secret p has no .dockerconfigjson key"
                        .into(),
                },
            ),
            (
                "no iso yet",
                Box::new(|c| c.iso = Some("")),
                Gate::WaitingForInfraEnvImage {
                    infraenv: "workers".into(),
                    mode: ImageMode::LiveIso,
                },
            ),
            (
                "stale metal3machine image",
                Box::new(|c| {
                    c.m3m = m3m(
                        "{}",
                        "{image: {url: 'http://old.iso', checksum: '', diskFormat: live-iso}}",
                        "{}",
                    )
                }),
                Gate::WaitingForMetal3MachineImage {
                    metal3machine: "w-0".into(),
                    current: Some("http://old.iso".into()),
                    want: ISO.into(),
                },
            ),
            (
                "no metal3machine image",
                Box::new(|c| c.m3m = m3m("{}", "{}", "{}")),
                Gate::WaitingForMetal3MachineImage {
                    metal3machine: "w-0".into(),
                    current: None,
                    want: ISO.into(),
                },
            ),
            (
                "already handed to a host",
                Box::new(|c| {
                    c.m3m = m3m(
                        "{metal3.io/BareMetalHost: ns/host-0}",
                        "{image: {url: 'http://old.iso', checksum: '', diskFormat: live-iso}}",
                        "{}",
                    )
                }),
                Gate::Ready,
            ),
            (
                "disk image waits for the discovery ignition",
                Box::new(|c| {
                    c.mode = ImageMode::DiskImage;
                    c.iso = None;
                }),
                Gate::WaitingForInfraEnvImage {
                    infraenv: "workers".into(),
                    mode: ImageMode::DiskImage,
                },
            ),
            (
                "disk image ready without an iso",
                Box::new(|c| {
                    c.mode = ImageMode::DiskImage;
                    c.iso = None;
                    c.ignition = true;
                    c.m3m = m3m(
                        "{}",
                        "{image: {url: 'http://x.qcow2', checksum: c, diskFormat: qcow2}}",
                        "{}",
                    );
                }),
                Gate::Ready,
            ),
        ];
        for (name, tweak, want) in rows {
            let mut c = GateCase::ready_live_iso();
            tweak(&mut c);
            assert_eq!(c.gate(), want, "{name}");
        }
    }

    #[test]
    fn every_gate_has_a_reason_and_an_actionable_message() {
        let gates = [
            Gate::WaitingForClusterInfrastructure {
                cluster: "c1".into(),
            },
            Gate::WaitingForClusterDeployment {
                cluster: "c1".into(),
            },
            Gate::WaitingForInstallComplete(HoldReason::LateForDay1 {
                state: "ready".into(),
            }),
            Gate::WaitingForInfraEnvImage {
                infraenv: "workers".into(),
                mode: ImageMode::LiveIso,
            },
            Gate::WaitingForInfraEnvImage {
                infraenv: "workers".into(),
                mode: ImageMode::DiskImage,
            },
            Gate::WaitingForMetal3MachineImage {
                metal3machine: "w-0".into(),
                current: None,
                want: ISO.into(),
            },
            Gate::Ready,
        ];
        let mut reasons = Vec::new();
        for g in &gates {
            let reason = g.reason();
            assert!(
                reason
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_uppercase())
                    && reason.chars().all(|c| c.is_ascii_alphanumeric()),
                "{reason}"
            );
            assert!(!g.message().is_empty());
            reasons.push(reason);
        }
        reasons.dedup();
        assert_eq!(reasons.len(), 6, "one reason per variant");
        assert!(gates[0].message().contains("Metal3Cluster"));
        assert!(gates[2].message().contains("adding-hosts"));
        assert!(gates[5].message().contains(ISO));
        assert!(Gate::Ready.is_ready());
    }

    #[test]
    fn data_secret_follows_the_bootstrap_contract() {
        let s = desired_data_secret(&DataSecretInputs {
            config_name: "w-0-abcde",
            config_namespace: "ns",
            config_uid: "uid-1",
            cluster_name: "c1",
            value: EMPTY_IGNITION,
        });
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "w-0-abcde",
                    "namespace": "ns",
                    "labels": {"cluster.x-k8s.io/cluster-name": "c1"},
                    "ownerReferences": [{
                        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2",
                        "kind": "OpenshiftAssistedConfig",
                        "name": "w-0-abcde",
                        "uid": "uid-1",
                        "controller": true,
                        "blockOwnerDeletion": true
                    }]
                },
                "type": "cluster.x-k8s.io/secret",
                "data": {
                    "value": "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy4xLjAifX0=",
                    "format": "aWduaXRpb24="
                }
            })
        );
        assert_eq!(data_secret_name("w-0-abcde"), "w-0-abcde");
        // The empty config is valid Ignition 3.1.
        let v: serde_json::Value = serde_json::from_str(EMPTY_IGNITION).unwrap();
        assert_eq!(v["ignition"]["version"], "3.1.0");
    }
}

//! Lossless conversion of OpenshiftAssistedControlPlane between v1alpha2 (CAPOA's previous
//! version, a spoke) and v1alpha3 (the hub, [`crate::controlplane::api`], stored and reconciled),
//! with the generic engine ([`crate::conversion`]) and the bootstrap kinds' shared pieces
//! ([`crate::bootstrap::conversion`]): plain field mapping here, what a version cannot express
//! kept in the `cluster.x-k8s.io/conversion-data` annotation.

use assisted_api::common::LocalObjectReference as HubLocalObjectReference;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::bootstrap::conversion::{
    condition_from_v1beta1, condition_to_v1beta1, config_spec_from_hub, config_spec_to_hub,
    local_ref_from_hub, local_ref_to_hub, proxy_from_hub, proxy_to_hub, restore_config_spec,
};
use crate::controlplane::api;
use crate::controlplane::v1alpha2::{self, GoDuration};
use crate::conversion::{ConversionError, Spoke, convert_served, restore_unchanged_items, served};

/// The version put back on an infrastructure reference, which v1alpha3 names by group only
/// (CAPOA does the same; Metal3's templates serve it). The exact one written through v1alpha2
/// comes back from the conversion data.
pub const INFRASTRUCTURE_REF_VERSION: &str = "v1beta1";

/// The condition whose status True makes v1alpha2's `ready`.
pub const AVAILABLE_CONDITION: &str = "Available";

/// The conversion webhook's entry point for the control-plane kind: OpenshiftAssistedControlPlane
/// between v1alpha2 and v1alpha3.
pub fn convert(object: Value, desired_api_version: &str) -> Result<Value, ConversionError> {
    convert_served(
        object,
        desired_api_version,
        &[served::<v1alpha2::OpenshiftAssistedControlPlane>()],
    )
}

/// Replicas when `spec.replicas` is unset, as the controller counts them
/// (`controlplane_provider::controller::machines::desired_replicas`).
fn desired_replicas(replicas: Option<i32>) -> i32 {
    replicas.unwrap_or(1).max(0)
}

impl Spoke for v1alpha2::OpenshiftAssistedControlPlane {
    type Hub = api::OpenshiftAssistedControlPlane;

    fn to_hub_fields(&self) -> Self::Hub {
        let desired = desired_replicas(self.spec.replicas);
        api::OpenshiftAssistedControlPlane {
            metadata: ObjectMeta::default(),
            spec: spec_to_hub(&self.spec),
            status: self.status.as_ref().map(|s| status_to_hub(s, desired)),
        }
    }

    fn from_hub_fields(hub: &Self::Hub) -> Self {
        let desired = desired_replicas(hub.spec.replicas);
        v1alpha2::OpenshiftAssistedControlPlane {
            metadata: ObjectMeta::default(),
            spec: spec_from_hub(&hub.spec),
            status: hub.status.as_ref().map(|s| status_from_hub(s, desired)),
        }
    }

    fn restore_hub(hub: &mut Self::Hub, snapshot: &Self::Hub) {
        hub.spec.version = snapshot.spec.version.clone();
        hub.spec.remediation = snapshot.spec.remediation.clone();
        if let (Some(config), Some(old)) = (hub.spec.config.as_mut(), snapshot.spec.config.as_ref())
        {
            config.image_mode = old.image_mode.clone();
        }
        restore_machine_template(
            &mut hub.spec.machine_template,
            &snapshot.spec.machine_template,
        );
        restore_config_spec(
            &mut hub.spec.openshift_assisted_config_spec,
            &snapshot.spec.openshift_assisted_config_spec,
        );
        if let (Some(status), Some(old)) = (hub.status.as_mut(), snapshot.status.as_ref()) {
            status.observed_generation = old.observed_generation;
            status.last_remediation = old.last_remediation.clone();
            restore_unchanged_items(
                &mut status.conditions,
                &old.conditions,
                condition_to_v1beta1,
            );
        }
    }

    fn restore_spoke(&mut self, snapshot: &Self) {
        let template = &mut self.spec.machine_template;
        let old = &snapshot.spec.machine_template;
        if reference_to_hub(&old.infrastructure_ref)
            == reference_to_hub(&template.infrastructure_ref)
        {
            template.infrastructure_ref = old.infrastructure_ref.clone();
        }
        for (current, previous) in [
            (&mut template.node_drain_timeout, &old.node_drain_timeout),
            (
                &mut template.node_volume_detach_timeout,
                &old.node_volume_detach_timeout,
            ),
            (
                &mut template.node_deletion_timeout,
                &old.node_deletion_timeout,
            ),
        ] {
            if let (Some(now), Some(then)) = (current.as_mut(), previous.as_ref())
                && now.seconds() == then.seconds()
            {
                *now = then.clone();
            }
        }
        if template.metadata.is_none() && old.metadata == Some(Default::default()) {
            template.metadata = old.metadata.clone();
        }
        if let (Some(status), Some(old)) = (self.status.as_mut(), snapshot.status.as_ref()) {
            status.cluster_deployment_ref = old.cluster_deployment_ref.clone();
            status.failure_reason = old.failure_reason.clone();
            status.failure_message = old.failure_message.clone();
            restore_unchanged_items(
                &mut status.conditions,
                &old.conditions,
                condition_from_v1beta1,
            );
        }
    }
}

fn spec_to_hub(
    spec: &v1alpha2::OpenshiftAssistedControlPlaneSpec,
) -> api::OpenshiftAssistedControlPlaneSpec {
    let v1alpha2::OpenshiftAssistedControlPlaneSpec {
        config,
        machine_template,
        openshift_assisted_config_spec,
        replicas,
        distribution_version,
    } = spec;
    let v1alpha2::OpenshiftAssistedControlPlaneMachineTemplate {
        metadata,
        infrastructure_ref,
        node_drain_timeout,
        node_volume_detach_timeout,
        node_deletion_timeout,
    } = machine_template;
    let deletion = api::MachineDeletionSpec {
        node_drain_timeout_seconds: node_drain_timeout.as_ref().map(GoDuration::seconds),
        node_volume_detach_timeout_seconds: node_volume_detach_timeout
            .as_ref()
            .map(GoDuration::seconds),
        node_deletion_timeout_seconds: node_deletion_timeout.as_ref().map(GoDuration::seconds),
    };
    api::OpenshiftAssistedControlPlaneSpec {
        distribution_version: distribution_version.clone(),
        // Only v1alpha3 has it (the v1beta2 contract's field); kept in the conversion data.
        version: None,
        replicas: *replicas,
        machine_template: api::OpenshiftAssistedControlPlaneMachineTemplate {
            // v1alpha3 wants at least one of labels and annotations.
            metadata: metadata
                .as_ref()
                .filter(|m| !m.labels.is_empty() || !m.annotations.is_empty())
                .map(|m| api::MachineTemplateMetadata {
                    labels: m.labels.clone(),
                    annotations: m.annotations.clone(),
                }),
            // An empty reference (only ever written without admission) is none.
            infrastructure_ref: Some(reference_to_hub(infrastructure_ref))
                .filter(|r| *r != api::ContractVersionedObjectReference::default()),
            deletion: (deletion != api::MachineDeletionSpec::default()).then_some(deletion),
            spec: None,
        },
        openshift_assisted_config_spec: config_spec_to_hub(openshift_assisted_config_spec),
        config: config.as_ref().map(config_to_hub),
        // Only v1alpha3 has it; kept in the conversion data.
        remediation: None,
    }
}

fn spec_from_hub(
    spec: &api::OpenshiftAssistedControlPlaneSpec,
) -> v1alpha2::OpenshiftAssistedControlPlaneSpec {
    let api::OpenshiftAssistedControlPlaneSpec {
        distribution_version,
        version: _,
        replicas,
        machine_template,
        openshift_assisted_config_spec,
        config,
        remediation: _,
    } = spec;
    // v1alpha2 has the flat shape only: the effective values (`spec` wins) go there.
    let metadata = &machine_template.metadata;
    let infrastructure_ref = machine_template
        .infrastructure_ref()
        .cloned()
        .unwrap_or_default();
    let deletion = machine_template.deletion().cloned().unwrap_or_default();
    v1alpha2::OpenshiftAssistedControlPlaneSpec {
        config: config.as_ref().map(config_from_hub),
        machine_template: v1alpha2::OpenshiftAssistedControlPlaneMachineTemplate {
            metadata: metadata
                .as_ref()
                .map(|m| crate::bootstrap::api::ObjectMetaTemplate {
                    labels: m.labels.clone(),
                    annotations: m.annotations.clone(),
                }),
            infrastructure_ref: reference_from_hub(&infrastructure_ref),
            node_drain_timeout: deletion
                .node_drain_timeout_seconds
                .map(GoDuration::from_seconds),
            node_volume_detach_timeout: deletion
                .node_volume_detach_timeout_seconds
                .map(GoDuration::from_seconds),
            node_deletion_timeout: deletion
                .node_deletion_timeout_seconds
                .map(GoDuration::from_seconds),
        },
        openshift_assisted_config_spec: config_spec_from_hub(openshift_assisted_config_spec),
        replicas: *replicas,
        distribution_version: distribution_version.clone(),
    }
}

/// Puts back what v1alpha2 cannot express of the hub's machine template: Cluster API v1beta2's
/// `spec` (readiness gates, taints) and which shape held the reference and the timeouts. A
/// value unchanged through v1alpha2 comes back exactly as the hub had it; a value written
/// through v1alpha2 goes where the hub had it (`spec`, the flat field, or both).
fn restore_machine_template(
    template: &mut api::OpenshiftAssistedControlPlaneMachineTemplate,
    old: &api::OpenshiftAssistedControlPlaneMachineTemplate,
) {
    // Already the snapshot's (the engine keeps an unchanged spec whole), or nothing to restore.
    let Some(old_spec) = old.spec.as_ref().filter(|_| template != old) else {
        return;
    };
    let mut spec = old_spec.clone();
    restore_placement(
        old.infrastructure_ref(),
        &old.infrastructure_ref,
        &mut template.infrastructure_ref,
        &mut spec.infrastructure_ref,
    );
    restore_placement(
        old.deletion(),
        &old.deletion,
        &mut template.deletion,
        &mut spec.deletion,
    );
    template.spec = Some(spec);
}

/// One value v1alpha2 holds flat only (the reference or the timeouts), back in the hub's shape:
/// `flat` is what v1alpha2 wrote, `nested` starts as the hub's `spec` value. Unchanged (equal to
/// the hub's effective value), the flat field comes back as the hub had it; changed, it goes
/// into `spec` when the hub had it there, and stays flat only if the hub had it flat too.
fn restore_placement<T: Clone + PartialEq>(
    old_effective: Option<&T>,
    old_flat: &Option<T>,
    flat: &mut Option<T>,
    nested: &mut Option<T>,
) {
    if old_effective == flat.as_ref() {
        *flat = old_flat.clone();
    } else if nested.is_some() {
        *nested = flat.clone();
        if old_flat.is_none() {
            *flat = None;
        }
    }
}

/// The API group of an `apiVersion`: `g/v` gives `g`; a string with a dot and no slash is taken
/// as a group written without its version; anything else (`v1`) is the core group, `""`.
pub fn api_group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None if api_version.contains('.') => api_version,
        None => "",
    }
}

/// A v1alpha2 `corev1.ObjectReference` as v1alpha3's contract-versioned reference: the group of
/// its apiVersion, its kind and name (namespace, uid and the rest have no place).
pub fn reference_to_hub(reference: &ObjectReference) -> api::ContractVersionedObjectReference {
    api::ContractVersionedObjectReference {
        api_group: api_group_of(reference.api_version.as_deref().unwrap_or_default()).to_string(),
        kind: reference.kind.clone().unwrap_or_default(),
        name: reference.name.clone().unwrap_or_default(),
    }
}

/// A contract-versioned reference as an ObjectReference: the group with
/// [`INFRASTRUCTURE_REF_VERSION`].
pub fn reference_from_hub(reference: &api::ContractVersionedObjectReference) -> ObjectReference {
    let non_empty = |s: &String| Some(s.clone()).filter(|s| !s.is_empty());
    ObjectReference {
        api_version: non_empty(&reference.api_group)
            .map(|group| format!("{group}/{INFRASTRUCTURE_REF_VERSION}")),
        kind: non_empty(&reference.kind),
        name: non_empty(&reference.name),
        ..Default::default()
    }
}

fn config_to_hub(
    config: &v1alpha2::OpenshiftAssistedControlPlaneConfigSpec,
) -> api::OpenshiftAssistedControlPlaneConfigSpec {
    let v1alpha2::OpenshiftAssistedControlPlaneConfigSpec {
        api_vips,
        ingress_vips,
        manifests_config_map_refs,
        disk_encryption,
        proxy,
        masters_schedulable,
        ssh_authorized_key,
        cluster_name,
        base_domain,
        pull_secret_ref,
        image_registry_ref,
        capabilities,
    } = config;
    api::OpenshiftAssistedControlPlaneConfigSpec {
        api_vips: api_vips.clone(),
        ingress_vips: ingress_vips.clone(),
        manifests_config_map_refs: manifests_config_map_refs
            .iter()
            .map(|r| HubLocalObjectReference {
                name: r.name.clone(),
            })
            .collect(),
        disk_encryption: disk_encryption.clone(),
        proxy: proxy.as_ref().map(proxy_to_hub),
        masters_schedulable: *masters_schedulable,
        ssh_authorized_key: ssh_authorized_key.clone(),
        cluster_name: cluster_name.clone(),
        base_domain: base_domain.clone(),
        pull_secret_ref: pull_secret_ref.as_ref().map(local_ref_to_hub),
        image_registry_ref: image_registry_ref.as_ref().map(local_ref_to_hub),
        capabilities: capabilities.as_ref().map(|c| api::Capabilities {
            baseline_capability: c.baseline_capability.clone(),
            additional_enabled_capabilities: c.additional_enabled_capabilities.clone(),
        }),
        image_mode: None,
    }
}

fn config_from_hub(
    config: &api::OpenshiftAssistedControlPlaneConfigSpec,
) -> v1alpha2::OpenshiftAssistedControlPlaneConfigSpec {
    let api::OpenshiftAssistedControlPlaneConfigSpec {
        api_vips,
        ingress_vips,
        manifests_config_map_refs,
        disk_encryption,
        proxy,
        masters_schedulable,
        ssh_authorized_key,
        cluster_name,
        base_domain,
        pull_secret_ref,
        image_registry_ref,
        capabilities,
        // v1alpha2 has no image mode: kept in the conversion data (`restore_hub`).
        image_mode: _,
    } = config;
    v1alpha2::OpenshiftAssistedControlPlaneConfigSpec {
        api_vips: api_vips.clone(),
        ingress_vips: ingress_vips.clone(),
        manifests_config_map_refs: manifests_config_map_refs
            .iter()
            .map(|r| v1alpha2::ManifestsConfigMapReference {
                name: r.name.clone(),
            })
            .collect(),
        disk_encryption: disk_encryption.clone(),
        proxy: proxy.as_ref().map(proxy_from_hub),
        masters_schedulable: *masters_schedulable,
        ssh_authorized_key: ssh_authorized_key.clone(),
        cluster_name: cluster_name.clone(),
        base_domain: base_domain.clone(),
        pull_secret_ref: pull_secret_ref.as_ref().map(local_ref_from_hub),
        image_registry_ref: image_registry_ref.as_ref().map(local_ref_from_hub),
        capabilities: capabilities.as_ref().map(|c| v1alpha2::Capabilities {
            baseline_capability: c.baseline_capability.clone(),
            additional_enabled_capabilities: c.additional_enabled_capabilities.clone(),
        }),
    }
}

/// v1alpha2's status in v1alpha3: counters as they are (`updatedReplicas` is
/// `upToDateReplicas`), available = desired − unavailable, `initialized` as the initialization
/// flag, conditions in metav1 shape.
fn status_to_hub(
    status: &v1alpha2::OpenshiftAssistedControlPlaneStatus,
    desired: i32,
) -> api::OpenshiftAssistedControlPlaneStatus {
    let v1alpha2::OpenshiftAssistedControlPlaneStatus {
        cluster_deployment_ref: _,
        selector,
        replicas,
        version,
        distribution_version,
        updated_replicas,
        ready_replicas,
        unavailable_replicas,
        initialized,
        ready: _,
        failure_reason: _,
        failure_message: _,
        conditions,
    } = status;
    api::OpenshiftAssistedControlPlaneStatus {
        conditions: conditions.iter().map(condition_from_v1beta1).collect(),
        initialization: Some(api::ControlPlaneInitialization {
            control_plane_initialized: Some(*initialized),
        }),
        selector: selector.clone(),
        replicas: Some(*replicas),
        ready_replicas: Some(*ready_replicas),
        available_replicas: Some(desired.saturating_sub(*unavailable_replicas).max(0)),
        up_to_date_replicas: Some(*updated_replicas),
        version: version.clone(),
        // Written by the controller from the cluster's Nodes; v1alpha2 has no such list.
        versions: Vec::new(),
        distribution_version: distribution_version.clone(),
        // Only v1alpha3 has it; kept in the conversion data.
        last_remediation: None,
        observed_generation: None,
    }
}

/// v1alpha3's status in v1alpha2: unavailable = max(0, desired − available), `ready` when the
/// Available condition is True, conditions in v1beta1 shape.
fn status_from_hub(
    status: &api::OpenshiftAssistedControlPlaneStatus,
    desired: i32,
) -> v1alpha2::OpenshiftAssistedControlPlaneStatus {
    let api::OpenshiftAssistedControlPlaneStatus {
        conditions,
        initialization,
        selector,
        replicas,
        ready_replicas,
        available_replicas,
        up_to_date_replicas,
        version,
        versions: _,
        distribution_version,
        last_remediation: _,
        observed_generation: _,
    } = status;
    v1alpha2::OpenshiftAssistedControlPlaneStatus {
        cluster_deployment_ref: None,
        selector: selector.clone(),
        replicas: replicas.unwrap_or(0),
        version: version.clone(),
        distribution_version: distribution_version.clone(),
        updated_replicas: up_to_date_replicas.unwrap_or(0),
        ready_replicas: ready_replicas.unwrap_or(0),
        unavailable_replicas: desired
            .saturating_sub(available_replicas.unwrap_or(0))
            .max(0),
        initialized: initialization
            .as_ref()
            .and_then(|i| i.control_plane_initialized)
            .unwrap_or(false),
        ready: conditions
            .iter()
            .any(|c| c.type_ == AVAILABLE_CONDITION && c.status == "True"),
        failure_reason: None,
        failure_message: None,
        conditions: conditions.iter().map(condition_to_v1beta1).collect(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use kube::Resource;
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::bootstrap::api::{ObjectMetaTemplate, V1Beta1Condition};
    use crate::bootstrap::v1alpha1;
    use crate::conversion::{CONVERSION_DATA_ANNOTATION, Spoke};
    use crate::testing::{
        json, map, metav1_condition_strategy, one_of, some_text, text, time,
        v1beta1_condition_strategy,
    };

    fn annotation<K: Resource>(object: &K) -> Option<&String> {
        object
            .meta()
            .annotations
            .as_ref()?
            .get(CONVERSION_DATA_ANNOTATION)
    }

    fn duration(text: &str) -> GoDuration {
        GoDuration::parse(text).unwrap()
    }

    fn reference(api_version: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some(api_version.into()),
            kind: Some("Metal3MachineTemplate".into()),
            name: Some("test-multinode-controlplane".into()),
            ..Default::default()
        }
    }

    fn spoke() -> v1alpha2::OpenshiftAssistedControlPlane {
        v1alpha2::OpenshiftAssistedControlPlane {
            metadata: ObjectMeta {
                name: Some("test-multinode".into()),
                namespace: Some("test-capi".into()),
                uid: Some("u-1".into()),
                resource_version: Some("12".into()),
                ..Default::default()
            },
            spec: v1alpha2::OpenshiftAssistedControlPlaneSpec {
                config: Some(v1alpha2::OpenshiftAssistedControlPlaneConfigSpec {
                    base_domain: "lab.home".into(),
                    ..Default::default()
                }),
                machine_template: v1alpha2::OpenshiftAssistedControlPlaneMachineTemplate {
                    infrastructure_ref: reference("infrastructure.cluster.x-k8s.io/v1beta1"),
                    ..Default::default()
                },
                openshift_assisted_config_spec: Default::default(),
                replicas: Some(3),
                distribution_version: "4.20.0".into(),
            },
            status: None,
        }
    }

    fn hub() -> api::OpenshiftAssistedControlPlane {
        spoke().to_hub()
    }

    fn metav1(type_: &str, status: &str, reason: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            last_transition_time: time(1_700_000_000),
            observed_generation: Some(2),
        }
    }

    fn v1beta1(
        type_: &str,
        status: &str,
        severity: Option<&str>,
        reason: Option<&str>,
    ) -> V1Beta1Condition {
        V1Beta1Condition {
            type_: type_.into(),
            status: status.into(),
            severity: severity.map(Into::into),
            last_transition_time: time(1_700_000_000),
            reason: reason.map(Into::into),
            message: None,
        }
    }

    #[test]
    fn go_durations_parse_to_truncated_seconds() {
        for (text, seconds) in [
            ("10s", 10),
            ("1m30s", 90),
            ("0s", 0),
            ("0", 0),
            ("1h", 3600),
            ("1.5h", 5400),
            ("2m0.9s", 120),
            ("500ms", 0),
            ("1500ms", 1),
            ("1h0m0s", 3600),
            ("-1m30s", -90),
            ("+5s", 5),
            ("3\u{b5}s", 0),
            ("1s1s", 2),
            ("1000000h", i32::MAX),
        ] {
            assert_eq!(duration(text).seconds(), seconds, "{text}");
            assert_eq!(duration(text).as_str(), text);
        }
        for text in ["", "10", "1x", "s", ".s", "-", "1m30", "3000000h", "1.5.5s"] {
            assert!(GoDuration::parse(text).is_err(), "{text:?} parsed");
        }
        assert_eq!(
            GoDuration::parse("10").unwrap_err().to_string(),
            "invalid duration \"10\": a unit is missing"
        );
    }

    #[test]
    fn seconds_print_as_go_prints_durations() {
        for (seconds, text) in [
            (0, "0s"),
            (10, "10s"),
            (90, "1m30s"),
            (60, "1m0s"),
            (3600, "1h0m0s"),
            (3661, "1h1m1s"),
            (-90, "-1m30s"),
        ] {
            let d = GoDuration::from_seconds(seconds);
            assert_eq!(d.as_str(), text);
            assert_eq!(duration(text).seconds(), seconds);
        }
    }

    #[test]
    fn timeouts_become_deletion_seconds_and_back() {
        let mut original = spoke();
        let template = &mut original.spec.machine_template;
        template.node_drain_timeout = Some(duration("1m30s"));
        template.node_volume_detach_timeout = Some(duration("0s"));
        template.node_deletion_timeout = Some(duration("10s"));
        let hub = original.to_hub();
        assert_eq!(
            hub.spec.machine_template.deletion,
            Some(api::MachineDeletionSpec {
                node_drain_timeout_seconds: Some(90),
                node_volume_detach_timeout_seconds: Some(0),
                node_deletion_timeout_seconds: Some(10),
            })
        );
        // Written as Go prints them: nothing to keep.
        assert_eq!(annotation(&hub), None);
        assert_eq!(
            v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub),
            original
        );

        // Other spellings come back from the conversion data.
        let mut original = spoke();
        original.spec.machine_template.node_drain_timeout = Some(duration("90s"));
        original.spec.machine_template.node_deletion_timeout = Some(duration("1h"));
        let hub = original.to_hub();
        let deletion = hub.spec.machine_template.deletion.clone().unwrap();
        assert_eq!(deletion.node_drain_timeout_seconds, Some(90));
        assert_eq!(deletion.node_deletion_timeout_seconds, Some(3600));
        assert!(annotation(&hub).is_some());
        assert_eq!(
            v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub),
            original
        );
        // Without it, Go's spelling.
        let mut bare = hub.clone();
        bare.metadata.annotations = None;
        let read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&bare);
        let template = read.spec.machine_template;
        assert_eq!(template.node_drain_timeout.unwrap().as_str(), "1m30s");
        assert_eq!(template.node_deletion_timeout.unwrap().as_str(), "1h0m0s");
        assert_eq!(template.node_volume_detach_timeout, None);
        // No timeouts: no deletion section.
        assert_eq!(spoke().to_hub().spec.machine_template.deletion, None);
    }

    #[test]
    fn a_timeout_the_hub_did_not_change_keeps_its_spelling_after_other_edits() {
        let mut original = spoke();
        original.spec.machine_template.node_drain_timeout = Some(duration("90s"));
        let mut hub = original.to_hub();
        hub.spec.distribution_version = "4.20.1".into();
        let read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub);
        assert_eq!(read.spec.distribution_version, "4.20.1");
        assert_eq!(
            read.spec
                .machine_template
                .node_drain_timeout
                .unwrap()
                .as_str(),
            "90s"
        );
    }

    #[test]
    fn an_object_reference_becomes_a_group_and_comes_back_with_a_version() {
        assert_eq!(
            api_group_of("infrastructure.cluster.x-k8s.io/v1beta1"),
            "infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(
            api_group_of("infrastructure.cluster.x-k8s.io"),
            "infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(api_group_of("v1"), "");
        assert_eq!(api_group_of(""), "");

        let hub = hub();
        let group_ref = hub.spec.machine_template.infrastructure_ref().unwrap();
        assert_eq!(
            (
                group_ref.api_group.as_str(),
                group_ref.kind.as_str(),
                group_ref.name.as_str()
            ),
            (
                "infrastructure.cluster.x-k8s.io",
                "Metal3MachineTemplate",
                "test-multinode-controlplane"
            )
        );
        let back = reference_from_hub(group_ref);
        assert_eq!(back, reference("infrastructure.cluster.x-k8s.io/v1beta1"));

        // Another version, no version, or fields v1alpha3 has no place for: kept as written.
        for written in [
            reference("infrastructure.cluster.x-k8s.io/v1beta2"),
            reference("infrastructure.cluster.x-k8s.io"),
            ObjectReference {
                namespace: Some("test-capi".into()),
                uid: Some("u-2".into()),
                ..reference("infrastructure.cluster.x-k8s.io/v1beta1")
            },
        ] {
            let mut original = spoke();
            original.spec.machine_template.infrastructure_ref = written.clone();
            let hub = original.to_hub();
            assert_eq!(
                hub.spec
                    .machine_template
                    .infrastructure_ref()
                    .unwrap()
                    .api_group,
                "infrastructure.cluster.x-k8s.io"
            );
            assert!(annotation(&hub).is_some(), "{written:?}");
            assert_eq!(
                v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub),
                original
            );
        }
    }

    #[test]
    fn conditions_map_between_v1beta1_and_metav1() {
        let mut original = spoke();
        original.status = Some(v1alpha2::OpenshiftAssistedControlPlaneStatus {
            conditions: vec![
                v1beta1("Available", "False", Some("Warning"), None),
                v1beta1("MachinesCreated", "True", None, Some("Created")),
            ],
            ..Default::default()
        });
        let hub = original.to_hub();
        let conditions = hub.status.clone().unwrap().conditions;
        assert_eq!(conditions[0].reason, "Unknown", "metav1 needs a reason");
        assert_eq!(conditions[0].status, "False");
        assert_eq!(conditions[1].reason, "Created");
        // Severity and the missing reason come back from the conversion data only.
        assert_eq!(
            v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub),
            original
        );
        let mut bare = hub.clone();
        bare.metadata.annotations = None;
        let read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&bare);
        let read = read.status.unwrap().conditions;
        assert_eq!(read[0].severity.as_deref(), Some("Info"));
        assert_eq!(read[0].reason.as_deref(), Some("Unknown"));
        assert_eq!(read[1].severity, None);
    }

    #[test]
    fn ready_initialized_and_the_replica_counters_follow_the_hub_status() {
        let mut hub = hub();
        hub.status = Some(api::OpenshiftAssistedControlPlaneStatus {
            conditions: vec![metav1("Available", "True", "Installed")],
            initialization: Some(api::ControlPlaneInitialization {
                control_plane_initialized: Some(true),
            }),
            selector: Some("cluster.x-k8s.io/control-plane".into()),
            replicas: Some(3),
            ready_replicas: Some(2),
            available_replicas: Some(1),
            up_to_date_replicas: Some(3),
            version: Some("v1.33.2".into()),
            versions: vec![api::StatusVersion {
                version: "v1.33.2".into(),
                replicas: Some(3),
            }],
            distribution_version: Some("4.20.0".into()),
            last_remediation: None,
            observed_generation: Some(2),
        });
        let read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub);
        let status = read.status.clone().unwrap();
        assert!(status.ready);
        assert!(status.initialized);
        assert_eq!(status.replicas, 3);
        assert_eq!(status.ready_replicas, 2);
        assert_eq!(status.updated_replicas, 3);
        assert_eq!(status.unavailable_replicas, 2, "3 desired, 1 available");
        assert_eq!(status.version.as_deref(), Some("v1.33.2"));
        assert_eq!(json(&read.to_hub()), json(&hub));

        let mut status = hub.status.clone().unwrap();
        status.conditions = vec![metav1("Available", "False", "Installing")];
        status.initialization = None;
        status.available_replicas = Some(5);
        hub.status = Some(status.clone());
        let read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub)
            .status
            .unwrap();
        assert!(!read.ready && !read.initialized);
        assert_eq!(read.unavailable_replicas, 0, "never negative");
        status.available_replicas = None;
        hub.status = Some(status);
        let read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub)
            .status
            .unwrap();
        assert_eq!(read.unavailable_replicas, 3, "none known available");
    }

    #[test]
    fn v1alpha2_status_becomes_the_v1beta2_contract() {
        let mut original = spoke();
        original.status = Some(v1alpha2::OpenshiftAssistedControlPlaneStatus {
            replicas: 3,
            updated_replicas: 2,
            ready_replicas: 1,
            unavailable_replicas: 1,
            initialized: true,
            ready: false,
            ..Default::default()
        });
        let status = original.to_hub().status.unwrap();
        assert_eq!(status.up_to_date_replicas, Some(2));
        assert_eq!(status.available_replicas, Some(2));
        assert_eq!(
            status.initialization.unwrap().control_plane_initialized,
            Some(true)
        );
    }

    #[test]
    fn v1alpha3_only_fields_survive_an_edit_through_v1alpha2() {
        let mut hub = hub();
        hub.spec
            .openshift_assisted_config_spec
            .pre_bootstrap_commands = vec!["echo pre".into()];
        hub.spec.version = Some("v1.33.0".into());
        hub.status = Some(api::OpenshiftAssistedControlPlaneStatus {
            conditions: vec![metav1("Available", "True", "Installed")],
            observed_generation: Some(7),
            ..Default::default()
        });
        let mut read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub);
        assert!(annotation(&read).is_some());
        read.spec.replicas = Some(5);
        let written = read.to_hub();
        assert_eq!(written.spec.replicas, Some(5));
        assert_eq!(written.spec.version.as_deref(), Some("v1.33.0"));
        assert_eq!(
            written
                .spec
                .openshift_assisted_config_spec
                .pre_bootstrap_commands,
            vec!["echo pre".to_string()]
        );
        let status = written.status.unwrap();
        assert_eq!(status.observed_generation, Some(7));
        assert_eq!(status.conditions[0].observed_generation, Some(2));
    }

    #[test]
    fn convert_handles_only_the_control_plane() {
        let err = convert(
            json!({"apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1", "kind": "OpenshiftAssistedConfig"}),
            "bootstrap.cluster.x-k8s.io/v1alpha2",
        )
        .unwrap_err();
        assert!(matches!(err, ConversionError::UnknownKind { .. }), "{err}");
        let err = convert(
            json!({
                "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha2",
                "kind": "OpenshiftAssistedControlPlane",
                "metadata": {"name": "cp"},
                "spec": {
                    "distributionVersion": "4.20.0",
                    "machineTemplate": {"infrastructureRef": {"name": "x"}, "nodeDrainTimeout": "10"}
                }
            }),
            "controlplane.cluster.x-k8s.io/v1alpha3",
        )
        .unwrap_err();
        assert!(err.to_string().contains("invalid duration \"10\""), "{err}");
        let object = json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1alpha2", "kind": "OpenshiftAssistedControlPlane", "spec": 1});
        assert_eq!(
            convert(object.clone(), "controlplane.cluster.x-k8s.io/v1alpha2").unwrap(),
            object
        );
    }

    // ---- property tests ----

    fn metadata_strategy() -> impl Strategy<Value = ObjectMeta> {
        (
            some_text(),
            prop::option::of(some_text()),
            prop::option::of(0i64..100),
            prop::option::of(prop::collection::btree_map(some_text(), text(), 1..3)),
        )
            .prop_map(|(name, uid, generation, annotations)| ObjectMeta {
                name: Some(name),
                namespace: Some("test-capi".into()),
                uid,
                generation,
                annotations,
                ..Default::default()
            })
    }

    fn duration_strategy() -> impl Strategy<Value = GoDuration> {
        prop_oneof![
            (0i32..100_000).prop_map(GoDuration::from_seconds),
            prop::sample::select(vec!["0", "90s", "1h", "1.5m", "250ms", "2h30m", "-5s"])
                .prop_map(duration),
        ]
    }

    fn reference_strategy() -> impl Strategy<Value = ObjectReference> {
        (
            prop::option::of(prop::sample::select(vec![
                "infrastructure.cluster.x-k8s.io/v1beta1",
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "infrastructure.cluster.x-k8s.io",
                "v1",
            ])),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(some_text()),
            prop::option::of(some_text()),
        )
            .prop_map(
                |(api_version, kind, name, namespace, uid)| ObjectReference {
                    api_version: api_version.map(Into::into),
                    kind,
                    name,
                    namespace,
                    uid,
                    ..Default::default()
                },
            )
    }

    fn bootstrap_spec_strategy() -> impl Strategy<Value = v1alpha1::OpenshiftAssistedConfigSpec> {
        (
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of((
                prop::option::of(text()),
                prop::collection::vec(some_text(), 0..2),
            )),
        )
            .prop_map(|(pull_secret, ssh, registration)| {
                v1alpha1::OpenshiftAssistedConfigSpec {
                    pull_secret_ref: pull_secret
                        .map(|name| v1alpha1::LocalObjectReference { name }),
                    ssh_authorized_key: ssh,
                    node_registration: registration.map(|(name, kubelet_extra_labels)| {
                        v1alpha1::NodeRegistrationOptions {
                            name,
                            kubelet_extra_labels,
                        }
                    }),
                    ..Default::default()
                }
            })
    }

    fn config_strategy() -> impl Strategy<Value = v1alpha2::OpenshiftAssistedControlPlaneConfigSpec>
    {
        (
            prop::collection::vec(some_text(), 0..3),
            prop::collection::vec(some_text(), 0..2),
            prop::option::of(any::<bool>()),
            prop::option::of(text()),
            text(),
            prop::option::of(text()),
            prop::option::of((
                prop::option::of(text()),
                prop::collection::vec(some_text(), 0..2),
            )),
        )
            .prop_map(
                |(
                    vips,
                    manifests,
                    schedulable,
                    cluster_name,
                    base_domain,
                    registry,
                    capabilities,
                )| {
                    v1alpha2::OpenshiftAssistedControlPlaneConfigSpec {
                        api_vips: vips.clone(),
                        ingress_vips: vips,
                        manifests_config_map_refs: manifests
                            .into_iter()
                            .map(|name| v1alpha2::ManifestsConfigMapReference { name })
                            .collect(),
                        proxy: schedulable.map(|_| v1alpha1::Proxy {
                            no_proxy: Some(".cluster.local".into()),
                            ..Default::default()
                        }),
                        masters_schedulable: schedulable,
                        cluster_name,
                        base_domain,
                        image_registry_ref: registry
                            .map(|name| v1alpha1::LocalObjectReference { name }),
                        capabilities: capabilities.map(
                            |(baseline_capability, additional_enabled_capabilities)| {
                                v1alpha2::Capabilities {
                                    baseline_capability,
                                    additional_enabled_capabilities,
                                }
                            },
                        ),
                        ..Default::default()
                    }
                },
            )
    }

    fn spoke_spec_strategy() -> impl Strategy<Value = v1alpha2::OpenshiftAssistedControlPlaneSpec> {
        (
            prop::option::of(config_strategy()),
            prop::option::of(
                (map(), map()).prop_map(|(labels, annotations)| ObjectMetaTemplate {
                    labels,
                    annotations,
                }),
            ),
            reference_strategy(),
            (
                prop::option::of(duration_strategy()),
                prop::option::of(duration_strategy()),
                prop::option::of(duration_strategy()),
            ),
            bootstrap_spec_strategy(),
            prop::option::of(0i32..6),
            some_text(),
        )
            .prop_map(
                |(
                    config,
                    metadata,
                    infrastructure_ref,
                    (drain, detach, deletion),
                    bootstrap,
                    replicas,
                    version,
                )| {
                    v1alpha2::OpenshiftAssistedControlPlaneSpec {
                        config,
                        machine_template: v1alpha2::OpenshiftAssistedControlPlaneMachineTemplate {
                            metadata,
                            infrastructure_ref,
                            node_drain_timeout: drain,
                            node_volume_detach_timeout: detach,
                            node_deletion_timeout: deletion,
                        },
                        openshift_assisted_config_spec: bootstrap,
                        replicas,
                        distribution_version: version,
                    }
                },
            )
    }

    fn spoke_status_strategy()
    -> impl Strategy<Value = v1alpha2::OpenshiftAssistedControlPlaneStatus> {
        (
            (
                prop::option::of(reference_strategy()),
                prop::option::of(some_text()),
                0i32..6,
                prop::option::of(some_text()),
                prop::option::of(text()),
            ),
            (0i32..6, 0i32..6, 0i32..6, any::<bool>(), any::<bool>()),
            (prop::option::of(text()), prop::option::of(text())),
            prop::collection::vec(
                v1beta1_condition_strategy(one_of(&[
                    "Available",
                    "MachinesCreated",
                    "KubeconfigAvailable",
                ])),
                0..3,
            ),
        )
            .prop_map(
                |(
                    (cluster_deployment_ref, selector, replicas, version, distribution_version),
                    (updated_replicas, ready_replicas, unavailable_replicas, initialized, ready),
                    (failure_reason, failure_message),
                    conditions,
                )| v1alpha2::OpenshiftAssistedControlPlaneStatus {
                    cluster_deployment_ref,
                    selector,
                    replicas,
                    version,
                    distribution_version,
                    updated_replicas,
                    ready_replicas,
                    unavailable_replicas,
                    initialized,
                    ready,
                    failure_reason,
                    failure_message,
                    conditions,
                },
            )
    }

    fn hub_status_strategy() -> impl Strategy<Value = api::OpenshiftAssistedControlPlaneStatus> {
        (
            prop::collection::vec(
                metav1_condition_strategy(one_of(&["Available", "MachinesReady", "Paused"])),
                0..3,
            ),
            prop::option::of(prop::option::of(any::<bool>())),
            prop::option::of(some_text()),
            (
                prop::option::of(0i32..6),
                prop::option::of(0i32..6),
                prop::option::of(0i32..8),
                prop::option::of(0i32..6),
            ),
            (
                prop::option::of(some_text()),
                prop::option::of(some_text()),
                prop::option::of(1i64..50),
            ),
        )
            .prop_map(
                |(
                    conditions,
                    initialized,
                    selector,
                    (replicas, ready_replicas, available_replicas, up_to_date_replicas),
                    (version, distribution_version, observed_generation),
                )| api::OpenshiftAssistedControlPlaneStatus {
                    conditions,
                    initialization: initialized.map(|control_plane_initialized| {
                        api::ControlPlaneInitialization {
                            control_plane_initialized,
                        }
                    }),
                    selector,
                    replicas,
                    ready_replicas,
                    available_replicas,
                    up_to_date_replicas,
                    version,
                    versions: Vec::new(),
                    distribution_version,
                    // v1alpha3 only: the round trip keeps it in the conversion data.
                    last_remediation: replicas.map(|r| api::LastRemediationStatus {
                        machine: "cp-0".into(),
                        time: "2026-11-28T10:00:00Z".into(),
                        retry_count: r.max(0),
                    }),
                    observed_generation,
                },
            )
    }

    /// Where a hub's machine template holds its reference and timeouts, and its v1beta2-only
    /// readiness gates and taints.
    #[derive(Debug, Clone)]
    struct TemplateShape {
        /// 0: flat only; 1: `spec` only; 2: both, equal; 3: flat, with a `spec` of gates and
        /// taints only.
        place: u8,
        gates: Vec<api::MachineReadinessGate>,
        taints: Vec<api::MachineTaint>,
    }

    impl TemplateShape {
        fn apply(&self, template: &mut api::OpenshiftAssistedControlPlaneMachineTemplate) {
            let mut spec = api::ControlPlaneMachineTemplateSpec {
                readiness_gates: self.gates.clone(),
                taints: self.taints.clone(),
                ..Default::default()
            };
            match self.place {
                1 => {
                    spec.infrastructure_ref = template.infrastructure_ref.take();
                    spec.deletion = template.deletion.take();
                }
                2 => {
                    spec.infrastructure_ref = template.infrastructure_ref.clone();
                    spec.deletion = template.deletion.clone();
                }
                3 => {}
                _ => return,
            }
            template.spec = Some(spec);
        }
    }

    fn template_shape_strategy() -> impl Strategy<Value = TemplateShape> {
        (
            0u8..4,
            prop::collection::vec(
                (
                    some_text(),
                    prop::option::of(prop::sample::select(vec!["Positive", "Negative"])),
                )
                    .prop_map(|(condition_type, polarity)| {
                        api::MachineReadinessGate {
                            condition_type,
                            polarity: polarity.map(Into::into),
                        }
                    }),
                0..3,
            ),
            prop::collection::vec(
                (
                    some_text(),
                    prop::option::of(some_text()),
                    prop::sample::select(vec!["NoSchedule", "PreferNoSchedule", "NoExecute"]),
                    prop::sample::select(vec!["Always", "OnInitialization"]),
                )
                    .prop_map(|(key, value, effect, propagation)| {
                        api::MachineTaint {
                            key,
                            value,
                            effect: effect.into(),
                            propagation: propagation.into(),
                        }
                    }),
                0..3,
            ),
        )
            .prop_map(|(place, gates, taints)| TemplateShape {
                place,
                gates,
                taints,
            })
    }

    fn image_mode_strategy() -> impl Strategy<Value = api::ImageModeSpec> {
        (
            prop::option::of(prop::sample::select(vec!["rhel-9", "rhel-10"])),
            prop::collection::vec(
                (
                    prop::sample::select(vec!["master", "worker"]),
                    some_text(),
                    prop::option::of(some_text()),
                    some_text(),
                    some_text(),
                )
                    .prop_map(|(pool, image, containerfile, push_spec, secret)| {
                        api::ImageModePool {
                            pool: pool.into(),
                            image,
                            containerfile,
                            rendered_image_push_spec: push_spec,
                            rendered_image_push_secret_ref: HubLocalObjectReference {
                                name: secret,
                            },
                        }
                    }),
                0..3,
            ),
        )
            .prop_map(|(stream, pools)| api::ImageModeSpec {
                os_image_stream: stream.map(Into::into),
                pools,
            })
    }

    fn hub_spec_strategy() -> impl Strategy<Value = api::OpenshiftAssistedControlPlaneSpec> {
        (
            spoke_spec_strategy(),
            prop::option::of((
                prop::option::of(0i32..4000),
                prop::option::of(0i32..4000),
                prop::option::of(0i32..4000),
            )),
            prop::collection::vec(some_text(), 0..2),
            prop::option::of(some_text()),
            template_shape_strategy(),
            prop::option::of(some_text()),
            prop::option::of(image_mode_strategy()),
        )
            .prop_map(
                |(spec, deletion, commands, provider_id, shape, version, image_mode)| {
                    let mut hub = spec_to_hub(&spec);
                    hub.version = version;
                    if let Some(config) = hub.config.as_mut() {
                        config.image_mode = image_mode;
                    }
                    hub.machine_template.deletion =
                        deletion.map(|(drain, detach, deletion)| api::MachineDeletionSpec {
                            node_drain_timeout_seconds: drain,
                            node_volume_detach_timeout_seconds: detach,
                            node_deletion_timeout_seconds: deletion,
                        });
                    shape.apply(&mut hub.machine_template);
                    let bootstrap = &mut hub.openshift_assisted_config_spec;
                    bootstrap.post_bootstrap_commands = commands;
                    if let Some(registration) = bootstrap.node_registration.as_mut() {
                        registration.provider_id = provider_id;
                    }
                    hub
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn any_v1alpha2_control_plane_round_trips_through_the_hub(
            metadata in metadata_strategy(),
            spec in spoke_spec_strategy(),
            status in prop::option::of(spoke_status_strategy()),
        ) {
            let spoke = v1alpha2::OpenshiftAssistedControlPlane { metadata, spec, status };
            let hub = spoke.to_hub();
            prop_assert_eq!(v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub), spoke);
        }

        #[test]
        fn any_v1alpha3_control_plane_round_trips_through_v1alpha2(
            metadata in metadata_strategy(),
            spec in hub_spec_strategy(),
            status in prop::option::of(hub_status_strategy()),
        ) {
            let hub = api::OpenshiftAssistedControlPlane { metadata, spec, status };
            let spoke = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub);
            prop_assert_eq!(json(&spoke.to_hub()), json(&hub));
        }

        #[test]
        fn a_reference_edited_through_v1alpha2_lands_in_the_hubs_shape_and_is_admitted(
            metadata in metadata_strategy(),
            spec in hub_spec_strategy(),
            name in some_text(),
        ) {
            let hub = api::OpenshiftAssistedControlPlane { metadata, spec, status: None };
            let mut read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub);
            read.spec.machine_template.infrastructure_ref = ObjectReference {
                name: Some(format!("edited-{name}")),
                ..reference("infrastructure.cluster.x-k8s.io/v1beta1")
            };
            let written = read.to_hub();
            let (before, after) = (&hub.spec.machine_template, &written.spec.machine_template);
            prop_assert_eq!(
                after.infrastructure_ref().map(|r| r.name.clone()),
                Some(format!("edited-{name}"))
            );
            // Each shape that held the reference holds the new one; the other stays unset.
            prop_assert_eq!(after.infrastructure_ref.is_some(), before.infrastructure_ref.is_some() || before.infrastructure_ref().is_none());
            let nested = |t: &api::OpenshiftAssistedControlPlaneMachineTemplate| {
                t.spec.as_ref().map(|s| (s.infrastructure_ref.is_some(), s.readiness_gates.clone(), s.taints.clone()))
            };
            prop_assert_eq!(nested(after), nested(before));
            if let (Some(flat), Some(inner)) = (
                after.infrastructure_ref.as_ref(),
                after.spec.as_ref().and_then(|s| s.infrastructure_ref.as_ref()),
            ) {
                prop_assert_eq!(flat, inner);
            }
        }

        #[test]
        fn a_v1alpha2_control_plane_keeps_its_spec_when_the_hub_status_changes(
            metadata in metadata_strategy(),
            spec in spoke_spec_strategy(),
            status in prop::option::of(spoke_status_strategy()),
            new_status in prop::option::of(hub_status_strategy()),
        ) {
            let spoke = v1alpha2::OpenshiftAssistedControlPlane { metadata, spec, status };
            let mut hub = spoke.to_hub();
            hub.status = new_status;
            let read = v1alpha2::OpenshiftAssistedControlPlane::from_hub(&hub);
            prop_assert_eq!(&read.spec, &spoke.spec);
            let written = read.to_hub();
            prop_assert_eq!(&written.spec, &hub.spec);
            prop_assert_eq!(&written.status, &hub.status);
        }
    }
}

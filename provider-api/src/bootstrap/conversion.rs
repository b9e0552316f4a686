//! Lossless conversion between the served versions of the bootstrap kinds: v1alpha1 (CAPOA's
//! first version, a spoke) and v1alpha2 (the hub, [`crate::bootstrap::api`], the one stored and
//! reconciled), with the generic engine ([`crate::conversion`]). The shared pieces at the end
//! (conditions, proxy, references, the config spec) serve the control plane's conversion too.

use assisted_api::common::{LocalObjectReference as HubLocalObjectReference, Proxy as HubProxy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use serde_json::Value;

use crate::bootstrap::{api, v1alpha1};
use crate::conversion::{ConversionError, Spoke, convert_served, served};

/// The conversion webhook's entry point for the bootstrap kinds: OpenshiftAssistedConfig and
/// OpenshiftAssistedConfigTemplate between v1alpha1 and v1alpha2.
pub fn convert(object: Value, desired_api_version: &str) -> Result<Value, ConversionError> {
    convert_served(
        object,
        desired_api_version,
        &[
            served::<v1alpha1::OpenshiftAssistedConfig>(),
            served::<v1alpha1::OpenshiftAssistedConfigTemplate>(),
        ],
    )
}

// ---- OpenshiftAssistedConfig ----

impl Spoke for v1alpha1::OpenshiftAssistedConfig {
    type Hub = api::OpenshiftAssistedConfig;

    fn to_hub_fields(&self) -> Self::Hub {
        api::OpenshiftAssistedConfig {
            metadata: ObjectMeta::default(),
            spec: config_spec_to_hub(&self.spec),
            status: self.status.as_ref().map(config_status_to_hub),
        }
    }

    fn from_hub_fields(hub: &Self::Hub) -> Self {
        v1alpha1::OpenshiftAssistedConfig {
            metadata: ObjectMeta::default(),
            spec: config_spec_from_hub(&hub.spec),
            status: hub.status.as_ref().map(config_status_from_hub),
        }
    }

    fn restore_hub(hub: &mut Self::Hub, snapshot: &Self::Hub) {
        restore_config_spec(&mut hub.spec, &snapshot.spec);
        if let (Some(status), Some(old)) = (hub.status.as_mut(), snapshot.status.as_ref()) {
            // v1alpha1 shows the v1beta1 conditions when there are any; the metav1 ones are then
            // invisible to it and come back from the hub last read.
            if !status.v1beta1_conditions.is_empty() {
                status.conditions = old.conditions.clone();
            }
        }
    }

    fn restore_spoke(&mut self, snapshot: &Self) {
        if let (Some(status), Some(old)) = (self.status.as_mut(), snapshot.status.as_ref()) {
            status.infra_env_ref = old.infra_env_ref.clone();
            status.agent_ref = old.agent_ref.clone();
            status.failure_reason = old.failure_reason.clone();
            status.failure_message = old.failure_message.clone();
        }
    }
}

/// The v1alpha1 config spec in v1alpha2: the same fields; v1alpha2's commands, sentinel
/// directory, kubeconfig path and provider ID stay unset.
pub fn config_spec_to_hub(
    spec: &v1alpha1::OpenshiftAssistedConfigSpec,
) -> api::OpenshiftAssistedConfigSpec {
    let v1alpha1::OpenshiftAssistedConfigSpec {
        proxy,
        pull_secret_ref,
        additional_ntp_sources,
        ssh_authorized_key,
        nm_state_config_label_selector,
        cpu_architecture,
        kernel_arguments,
        additional_trust_bundle,
        os_image_version,
        node_registration,
    } = spec;
    api::OpenshiftAssistedConfigSpec {
        proxy: proxy.as_ref().map(proxy_to_hub),
        pull_secret_ref: pull_secret_ref.as_ref().map(local_ref_to_hub),
        additional_ntp_sources: additional_ntp_sources.clone(),
        ssh_authorized_key: ssh_authorized_key.clone(),
        nm_state_config_label_selector: nm_state_config_label_selector.clone(),
        cpu_architecture: cpu_architecture.clone(),
        kernel_arguments: kernel_arguments
            .iter()
            .map(|k| api::KernelArgument {
                operation: k.operation,
                value: k.value.clone(),
            })
            .collect(),
        additional_trust_bundle: additional_trust_bundle.clone(),
        os_image_version: os_image_version.clone(),
        pre_bootstrap_commands: Vec::new(),
        post_bootstrap_commands: Vec::new(),
        bootstrap_command_sentinel_dir: None,
        post_bootstrap_kubeconfig_path: None,
        node_registration: node_registration
            .as_ref()
            .map(|n| api::NodeRegistrationOptions {
                name: n.name.clone(),
                kubelet_extra_labels: n.kubelet_extra_labels.clone(),
                provider_id: None,
            }),
    }
}

/// The v1alpha2 config spec in v1alpha1: what v1alpha1 has of it.
pub fn config_spec_from_hub(
    spec: &api::OpenshiftAssistedConfigSpec,
) -> v1alpha1::OpenshiftAssistedConfigSpec {
    let api::OpenshiftAssistedConfigSpec {
        proxy,
        pull_secret_ref,
        additional_ntp_sources,
        ssh_authorized_key,
        nm_state_config_label_selector,
        cpu_architecture,
        kernel_arguments,
        additional_trust_bundle,
        os_image_version,
        pre_bootstrap_commands: _,
        post_bootstrap_commands: _,
        bootstrap_command_sentinel_dir: _,
        post_bootstrap_kubeconfig_path: _,
        node_registration,
    } = spec;
    v1alpha1::OpenshiftAssistedConfigSpec {
        proxy: proxy.as_ref().map(proxy_from_hub),
        pull_secret_ref: pull_secret_ref.as_ref().map(local_ref_from_hub),
        additional_ntp_sources: additional_ntp_sources.clone(),
        ssh_authorized_key: ssh_authorized_key.clone(),
        nm_state_config_label_selector: nm_state_config_label_selector.clone(),
        cpu_architecture: cpu_architecture.clone(),
        kernel_arguments: kernel_arguments
            .iter()
            .map(|k| v1alpha1::KernelArgument {
                operation: k.operation,
                value: k.value.clone(),
            })
            .collect(),
        additional_trust_bundle: additional_trust_bundle.clone(),
        os_image_version: os_image_version.clone(),
        node_registration: node_registration
            .as_ref()
            .map(|n| v1alpha1::NodeRegistrationOptions {
                name: n.name.clone(),
                kubelet_extra_labels: n.kubelet_extra_labels.clone(),
            }),
    }
}

/// Puts v1alpha2's own config fields back from the hub last read (Cluster API restores
/// hub-only fields unconditionally). The provider ID only goes into an existing node
/// registration, so v1alpha1's view stays the same.
pub fn restore_config_spec(
    spec: &mut api::OpenshiftAssistedConfigSpec,
    snapshot: &api::OpenshiftAssistedConfigSpec,
) {
    spec.pre_bootstrap_commands = snapshot.pre_bootstrap_commands.clone();
    spec.post_bootstrap_commands = snapshot.post_bootstrap_commands.clone();
    spec.bootstrap_command_sentinel_dir = snapshot.bootstrap_command_sentinel_dir.clone();
    spec.post_bootstrap_kubeconfig_path = snapshot.post_bootstrap_kubeconfig_path.clone();
    if let (Some(registration), Some(old)) = (
        spec.node_registration.as_mut(),
        snapshot.node_registration.as_ref(),
    ) {
        registration.provider_id = old.provider_id.clone();
    }
}

/// v1alpha1's status in v1alpha2: `ready` or a data Secret name means the data Secret was
/// created; the v1beta1 conditions are kept as such.
fn config_status_to_hub(
    status: &v1alpha1::OpenshiftAssistedConfigStatus,
) -> api::OpenshiftAssistedConfigStatus {
    let v1alpha1::OpenshiftAssistedConfigStatus {
        infra_env_ref: _,
        agent_ref: _,
        ready,
        data_secret_name,
        failure_reason: _,
        failure_message: _,
        observed_generation,
        conditions,
    } = status;
    let data_secret_name = data_secret_name.clone().filter(|name| !name.is_empty());
    api::OpenshiftAssistedConfigStatus {
        conditions: Vec::new(),
        initialization: Some(api::BootstrapInitialization {
            data_secret_created: Some(*ready || data_secret_name.is_some()),
        }),
        data_secret_name,
        observed_generation: *observed_generation,
        v1beta1_conditions: conditions.clone(),
    }
}

/// v1alpha2's status in v1alpha1: `ready` once the data Secret was created; the v1beta1
/// conditions, or the conditions in v1beta1 shape when there are none.
fn config_status_from_hub(
    status: &api::OpenshiftAssistedConfigStatus,
) -> v1alpha1::OpenshiftAssistedConfigStatus {
    let api::OpenshiftAssistedConfigStatus {
        conditions,
        initialization,
        data_secret_name,
        observed_generation,
        v1beta1_conditions,
    } = status;
    v1alpha1::OpenshiftAssistedConfigStatus {
        infra_env_ref: None,
        agent_ref: None,
        ready: initialization
            .as_ref()
            .and_then(|i| i.data_secret_created)
            .unwrap_or(false),
        data_secret_name: data_secret_name.clone(),
        failure_reason: None,
        failure_message: None,
        observed_generation: *observed_generation,
        conditions: if v1beta1_conditions.is_empty() {
            conditions.iter().map(condition_to_v1beta1).collect()
        } else {
            v1beta1_conditions.clone()
        },
    }
}

// ---- OpenshiftAssistedConfigTemplate ----

impl Spoke for v1alpha1::OpenshiftAssistedConfigTemplate {
    type Hub = api::OpenshiftAssistedConfigTemplate;

    fn to_hub_fields(&self) -> Self::Hub {
        api::OpenshiftAssistedConfigTemplate {
            metadata: ObjectMeta::default(),
            spec: api::OpenshiftAssistedConfigTemplateSpec {
                template: api::OpenshiftAssistedConfigTemplateResource {
                    metadata: self.spec.template.metadata.clone(),
                    spec: config_spec_to_hub(&self.spec.template.spec),
                },
            },
        }
    }

    fn from_hub_fields(hub: &Self::Hub) -> Self {
        v1alpha1::OpenshiftAssistedConfigTemplate {
            metadata: ObjectMeta::default(),
            spec: v1alpha1::OpenshiftAssistedConfigTemplateSpec {
                template: v1alpha1::OpenshiftAssistedConfigTemplateResource {
                    metadata: hub.spec.template.metadata.clone(),
                    spec: config_spec_from_hub(&hub.spec.template.spec),
                },
            },
        }
    }

    fn restore_hub(hub: &mut Self::Hub, snapshot: &Self::Hub) {
        restore_config_spec(&mut hub.spec.template.spec, &snapshot.spec.template.spec);
    }
}

// ---- shared pieces ----

/// A metav1 condition in the Cluster API v1beta1 shape. A False condition gets severity Info
/// (v1beta1 sets a severity only on False ones; the real one is in the conversion data).
pub fn condition_to_v1beta1(condition: &Condition) -> api::V1Beta1Condition {
    api::V1Beta1Condition {
        type_: condition.type_.clone(),
        status: condition.status.clone(),
        severity: (condition.status == "False").then(|| "Info".to_string()),
        last_transition_time: condition.last_transition_time.clone(),
        reason: Some(condition.reason.clone()).filter(|r| !r.is_empty()),
        message: Some(condition.message.clone()).filter(|m| !m.is_empty()),
    }
}

/// A Cluster API v1beta1 condition as a metav1 one: metav1 requires a reason, so an empty one
/// becomes `Unknown`; the severity has no place.
pub fn condition_from_v1beta1(condition: &api::V1Beta1Condition) -> Condition {
    Condition {
        type_: condition.type_.clone(),
        status: condition.status.clone(),
        last_transition_time: condition.last_transition_time.clone(),
        reason: condition
            .reason
            .clone()
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "Unknown".to_string()),
        message: condition.message.clone().unwrap_or_default(),
        observed_generation: None,
    }
}

pub fn proxy_to_hub(proxy: &v1alpha1::Proxy) -> HubProxy {
    HubProxy {
        http_proxy: proxy.http_proxy.clone(),
        https_proxy: proxy.https_proxy.clone(),
        no_proxy: proxy.no_proxy.clone(),
    }
}

pub fn proxy_from_hub(proxy: &HubProxy) -> v1alpha1::Proxy {
    v1alpha1::Proxy {
        http_proxy: proxy.http_proxy.clone(),
        https_proxy: proxy.https_proxy.clone(),
        no_proxy: proxy.no_proxy.clone(),
    }
}

pub fn local_ref_to_hub(reference: &v1alpha1::LocalObjectReference) -> HubLocalObjectReference {
    HubLocalObjectReference {
        name: reference.name.clone(),
    }
}

pub fn local_ref_from_hub(reference: &HubLocalObjectReference) -> v1alpha1::LocalObjectReference {
    v1alpha1::LocalObjectReference {
        name: reference.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::bootstrap::api::{KernelArgumentOperation, ObjectMetaTemplate, V1Beta1Condition};
    use crate::conversion::{CONVERSION_DATA_ANNOTATION, take_conversion_data};
    use crate::testing::{
        json, map, metav1_condition_strategy, some_text, text, time, v1beta1_condition_strategy,
    };

    fn meta() -> ObjectMeta {
        ObjectMeta {
            name: Some("worker-0".into()),
            namespace: Some("test-capi".into()),
            uid: Some("6d1d8d6e-0d3a-4b0e-9c57-000000000001".into()),
            resource_version: Some("4242".into()),
            generation: Some(3),
            labels: Some(BTreeMap::from([(
                "cluster.x-k8s.io/cluster-name".into(),
                "test-multinode".into(),
            )])),
            annotations: Some(BTreeMap::from([(
                crate::bootstrap::api::IGNITION_OVERRIDE_ANNOTATION.into(),
                "{}".into(),
            )])),
            ..Default::default()
        }
    }

    fn spoke(
        status: Option<v1alpha1::OpenshiftAssistedConfigStatus>,
    ) -> v1alpha1::OpenshiftAssistedConfig {
        v1alpha1::OpenshiftAssistedConfig {
            metadata: meta(),
            spec: v1alpha1::OpenshiftAssistedConfigSpec {
                cpu_architecture: Some("x86_64".into()),
                node_registration: Some(v1alpha1::NodeRegistrationOptions {
                    name: Some("$METADATA_NAME".into()),
                    kubelet_extra_labels: vec!["metal3.io/uuid=$METADATA_UUID".into()],
                }),
                ..Default::default()
            },
            status,
        }
    }

    fn hub_status() -> api::OpenshiftAssistedConfigStatus {
        api::OpenshiftAssistedConfigStatus::default()
    }

    fn metav1(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: time(1_700_000_000),
            observed_generation: Some(3),
        }
    }

    fn v1beta1(type_: &str, status: &str, reason: Option<&str>) -> V1Beta1Condition {
        V1Beta1Condition {
            type_: type_.into(),
            status: status.into(),
            severity: (status == "False").then(|| "Warning".into()),
            last_transition_time: time(1_700_000_000),
            reason: reason.map(Into::into),
            message: None,
        }
    }

    fn annotation(meta: &ObjectMeta) -> Option<&String> {
        meta.annotations.as_ref()?.get(CONVERSION_DATA_ANNOTATION)
    }

    #[test]
    fn a_data_secret_name_marks_the_data_secret_created() {
        let status = v1alpha1::OpenshiftAssistedConfigStatus {
            data_secret_name: Some("worker-0".into()),
            ..Default::default()
        };
        let hub = spoke(Some(status)).to_hub();
        let status = hub.status.unwrap();
        assert_eq!(status.data_secret_name.as_deref(), Some("worker-0"));
        assert_eq!(
            status.initialization.unwrap().data_secret_created,
            Some(true)
        );
    }

    #[test]
    fn ready_alone_marks_the_data_secret_created() {
        let status = v1alpha1::OpenshiftAssistedConfigStatus {
            ready: true,
            ..Default::default()
        };
        let hub = spoke(Some(status)).to_hub();
        let status = hub.status.unwrap();
        assert_eq!(status.data_secret_name, None);
        assert_eq!(
            status.initialization.unwrap().data_secret_created,
            Some(true)
        );
        let status = v1alpha1::OpenshiftAssistedConfigStatus::default();
        let hub = spoke(Some(status)).to_hub();
        assert_eq!(
            hub.status
                .unwrap()
                .initialization
                .unwrap()
                .data_secret_created,
            Some(false)
        );
    }

    #[test]
    fn data_secret_created_reads_back_as_ready_with_the_secret_name() {
        let hub = api::OpenshiftAssistedConfig {
            metadata: meta(),
            spec: Default::default(),
            status: Some(api::OpenshiftAssistedConfigStatus {
                initialization: Some(api::BootstrapInitialization {
                    data_secret_created: Some(true),
                }),
                data_secret_name: Some("worker-0".into()),
                observed_generation: Some(3),
                ..hub_status()
            }),
        };
        let spoke = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
        let status = spoke.status.clone().unwrap();
        assert!(status.ready);
        assert_eq!(status.data_secret_name.as_deref(), Some("worker-0"));
        assert_eq!(status.observed_generation, Some(3));
        // Nothing of the hub is lost, so no conversion data.
        assert_eq!(annotation(&spoke.metadata), None);
        assert_eq!(json(&spoke.to_hub()), json(&hub));

        let not_created = api::OpenshiftAssistedConfig {
            status: Some(api::OpenshiftAssistedConfigStatus {
                initialization: Some(api::BootstrapInitialization {
                    data_secret_created: Some(false),
                }),
                ..hub_status()
            }),
            ..hub
        };
        let spoke = v1alpha1::OpenshiftAssistedConfig::from_hub(&not_created);
        assert!(!spoke.status.unwrap().ready);
    }

    #[test]
    fn an_empty_data_secret_name_is_no_secret_and_comes_back_from_the_conversion_data() {
        let original = spoke(Some(v1alpha1::OpenshiftAssistedConfigStatus {
            data_secret_name: Some(String::new()),
            ..Default::default()
        }));
        let hub = original.to_hub();
        let status = hub.status.clone().unwrap();
        assert_eq!(status.data_secret_name, None);
        assert_eq!(
            status.initialization.unwrap().data_secret_created,
            Some(false)
        );
        assert!(annotation(&hub.metadata).is_some());
        assert_eq!(v1alpha1::OpenshiftAssistedConfig::from_hub(&hub), original);
    }

    #[test]
    fn metav1_conditions_show_in_v1beta1_shape_when_there_are_no_v1beta1_ones() {
        let hub = api::OpenshiftAssistedConfig {
            metadata: meta(),
            spec: Default::default(),
            status: Some(api::OpenshiftAssistedConfigStatus {
                conditions: vec![
                    metav1("Ready", "True", "Ready", ""),
                    metav1(
                        "DataSecretAvailable",
                        "False",
                        "WaitingForInstall",
                        "waiting",
                    ),
                ],
                ..hub_status()
            }),
        };
        let spoke = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
        let conditions = spoke.status.clone().unwrap().conditions;
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[0].type_, "Ready");
        assert_eq!(conditions[0].severity, None);
        assert_eq!(conditions[0].reason.as_deref(), Some("Ready"));
        assert_eq!(conditions[0].message, None);
        assert_eq!(conditions[1].severity.as_deref(), Some("Info"));
        assert_eq!(conditions[1].message.as_deref(), Some("waiting"));
        // The metav1 originals (observedGeneration) come back.
        assert_eq!(json(&spoke.to_hub()), json(&hub));
    }

    #[test]
    fn v1beta1_conditions_map_to_the_hub_v1beta1_conditions_unchanged() {
        let conditions = vec![
            v1beta1("Ready", "False", Some("WaitingForInstall")),
            v1beta1("DataSecretAvailable", "Unknown", None),
        ];
        let original = spoke(Some(v1alpha1::OpenshiftAssistedConfigStatus {
            conditions: conditions.clone(),
            ..Default::default()
        }));
        let hub = original.to_hub();
        assert_eq!(hub.status.clone().unwrap().v1beta1_conditions, conditions);
        assert_eq!(v1alpha1::OpenshiftAssistedConfig::from_hub(&hub), original);
    }

    #[test]
    fn a_condition_with_an_empty_reason_is_unknown_in_metav1_and_keeps_no_severity() {
        let mut condition = v1beta1("Ready", "False", None);
        let converted = condition_from_v1beta1(&condition);
        assert_eq!(converted.reason, "Unknown");
        assert_eq!(converted.message, "");
        condition.reason = Some(String::new());
        assert_eq!(condition_from_v1beta1(&condition).reason, "Unknown");
        condition.reason = Some("Installing".into());
        condition.message = Some("50%".into());
        let converted = condition_from_v1beta1(&condition);
        assert_eq!(
            (converted.reason.as_str(), converted.message.as_str()),
            ("Installing", "50%")
        );
        let back = condition_to_v1beta1(&converted);
        assert_eq!(back.severity.as_deref(), Some("Info"));
        assert_eq!(back.reason.as_deref(), Some("Installing"));
    }

    #[test]
    fn v1alpha2_only_spec_fields_survive_a_v1alpha1_round_trip() {
        let hub = api::OpenshiftAssistedConfig {
            metadata: meta(),
            spec: api::OpenshiftAssistedConfigSpec {
                pre_bootstrap_commands: vec!["echo pre".into()],
                post_bootstrap_commands: vec!["echo post".into()],
                bootstrap_command_sentinel_dir: Some("/var/lib/capoa".into()),
                post_bootstrap_kubeconfig_path: Some("/var/lib/kubelet/kubeconfig".into()),
                node_registration: Some(api::NodeRegistrationOptions {
                    name: Some("$METADATA_NAME".into()),
                    kubelet_extra_labels: vec![],
                    provider_id: Some("metal3://$METADATA_UUID".into()),
                }),
                ..Default::default()
            },
            status: None,
        };
        let spoke = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
        let data = annotation(&spoke.metadata).expect("conversion data");
        assert!(data.contains("echo pre") && data.contains("metal3://"));
        // The other annotations stay as they were.
        assert_eq!(
            spoke.metadata.annotations.as_ref().unwrap()
                [crate::bootstrap::api::IGNITION_OVERRIDE_ANNOTATION],
            "{}"
        );
        assert_eq!(json(&spoke.to_hub()), json(&hub));
    }

    #[test]
    fn v1alpha1_only_status_fields_survive_a_hub_round_trip() {
        let original = spoke(Some(v1alpha1::OpenshiftAssistedConfigStatus {
            infra_env_ref: Some(ObjectReference {
                api_version: Some("agent-install.openshift.io/v1beta1".into()),
                kind: Some("InfraEnv".into()),
                name: Some("test-multinode".into()),
                namespace: Some("test-capi".into()),
                ..Default::default()
            }),
            agent_ref: Some(v1alpha1::LocalObjectReference {
                name: "4b3e2e1c".into(),
            }),
            ready: true,
            data_secret_name: Some("worker-0".into()),
            failure_reason: Some("InvalidConfig".into()),
            failure_message: Some("no pull secret".into()),
            observed_generation: Some(3),
            conditions: vec![],
        }));
        let hub = original.to_hub();
        assert!(annotation(&hub.metadata).is_some());
        let back = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
        assert_eq!(back, original);
    }

    #[test]
    fn v1alpha1_only_status_fields_outlive_a_status_update_on_the_hub() {
        let original = spoke(Some(v1alpha1::OpenshiftAssistedConfigStatus {
            agent_ref: Some(v1alpha1::LocalObjectReference {
                name: "4b3e2e1c".into(),
            }),
            ..Default::default()
        }));
        let mut hub = original.to_hub();
        // The controller rewrites the status on the hub; the annotation is left as it was.
        hub.status = Some(api::OpenshiftAssistedConfigStatus {
            conditions: vec![metav1("Ready", "True", "Ready", "")],
            initialization: Some(api::BootstrapInitialization {
                data_secret_created: Some(true),
            }),
            data_secret_name: Some("worker-0".into()),
            observed_generation: Some(4),
            v1beta1_conditions: vec![],
        });
        let read = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
        let status = read.status.clone().unwrap();
        assert!(status.ready, "the new status shows");
        assert_eq!(status.observed_generation, Some(4));
        assert_eq!(status.agent_ref, original.status.unwrap().agent_ref);
        assert_eq!(read.spec, original.spec);
        // Written back unchanged, it is the hub again (its conversion data refreshed).
        let written = read.to_hub();
        assert_eq!(written.spec, hub.spec);
        assert_eq!(written.status, hub.status);
    }

    #[test]
    fn v1alpha2_only_template_fields_survive_an_edit_through_v1alpha1() {
        let hub = api::OpenshiftAssistedConfigTemplate {
            metadata: meta(),
            spec: api::OpenshiftAssistedConfigTemplateSpec {
                template: api::OpenshiftAssistedConfigTemplateResource {
                    metadata: Some(ObjectMetaTemplate {
                        labels: BTreeMap::from([("role".into(), "worker".into())]),
                        annotations: BTreeMap::new(),
                    }),
                    spec: api::OpenshiftAssistedConfigSpec {
                        ssh_authorized_key: Some("ssh-ed25519 AAAA old".into()),
                        pre_bootstrap_commands: vec!["echo pre".into()],
                        ..Default::default()
                    },
                },
            },
        };
        let mut read = v1alpha1::OpenshiftAssistedConfigTemplate::from_hub(&hub);
        assert_eq!(read.spec.template.metadata, hub.spec.template.metadata);
        read.spec.template.spec.ssh_authorized_key = Some("ssh-ed25519 AAAA new".into());
        let written = read.to_hub();
        let spec = &written.spec.template.spec;
        assert_eq!(
            spec.ssh_authorized_key.as_deref(),
            Some("ssh-ed25519 AAAA new")
        );
        assert_eq!(spec.pre_bootstrap_commands, vec!["echo pre".to_string()]);
        // Read again through v1alpha1, it is what was written.
        let mut expected = read.clone();
        expected
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .remove(CONVERSION_DATA_ANNOTATION);
        let mut again = v1alpha1::OpenshiftAssistedConfigTemplate::from_hub(&written);
        again
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .remove(CONVERSION_DATA_ANNOTATION);
        assert_eq!(again, expected);
    }

    #[test]
    fn conversion_data_of_another_kind_is_dropped_not_applied() {
        // MGMT-23110: a control plane's conversion data copied onto its config.
        let mut original = spoke(None);
        original.metadata.annotations.as_mut().unwrap().insert(
            CONVERSION_DATA_ANNOTATION.into(),
            json!({
                "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
                "kind": "OpenshiftAssistedControlPlane",
                "spec": {"distributionVersion": "4.20.0"}
            })
            .to_string(),
        );
        let hub = original.to_hub();
        assert_eq!(annotation(&hub.metadata), None);
        assert_eq!(hub.spec, config_spec_to_hub(&original.spec));
        // Garbage is dropped the same way.
        original
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(CONVERSION_DATA_ANNOTATION.into(), "{not json".into());
        assert_eq!(annotation(&original.to_hub().metadata), None);
    }

    #[test]
    fn metadata_is_kept_apart_from_the_conversion_data() {
        let original = spoke(None);
        let hub = original.to_hub();
        assert_eq!(hub.metadata, original.metadata);
        let mut hub = hub;
        hub.spec.pre_bootstrap_commands = vec!["true".into()];
        let read = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
        let mut annotations = read.metadata.annotations.clone().unwrap();
        assert!(annotations.remove(CONVERSION_DATA_ANNOTATION).is_some());
        assert_eq!(Some(annotations), original.metadata.annotations);
        assert_eq!(
            ObjectMeta {
                annotations: None,
                ..read.metadata
            },
            ObjectMeta {
                annotations: None,
                ..original.metadata
            }
        );
        // An object without annotations gets none back.
        let mut bare = hub.clone();
        bare.metadata.annotations = None;
        let read = v1alpha1::OpenshiftAssistedConfig::from_hub(&bare);
        assert_eq!(json(&read.to_hub()), json(&bare));
    }

    #[test]
    fn convert_turns_v1alpha1_json_into_v1alpha2_and_back() {
        let object = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1",
            "kind": "OpenshiftAssistedConfig",
            "metadata": {"name": "worker-0", "namespace": "test-capi", "uid": "u-1", "resourceVersion": "7"},
            "spec": {
                "cpuArchitecture": "x86_64",
                "nmStateConfigLabelSelector": {},
                "nodeRegistration": {},
                "pullSecretRef": {"name": "pull-secret"}
            },
            "status": {"ready": true, "dataSecretName": "worker-0"}
        });
        let hub = convert(object.clone(), "bootstrap.cluster.x-k8s.io/v1alpha2").unwrap();
        assert_eq!(hub["apiVersion"], "bootstrap.cluster.x-k8s.io/v1alpha2");
        assert_eq!(hub["metadata"]["uid"], "u-1");
        assert_eq!(hub["metadata"]["resourceVersion"], "7");
        assert_eq!(hub["spec"]["pullSecretRef"]["name"], "pull-secret");
        assert_eq!(hub["status"]["initialization"]["dataSecretCreated"], true);
        let back = convert(hub, "bootstrap.cluster.x-k8s.io/v1alpha1").unwrap();
        assert_eq!(back, object);
    }

    #[test]
    fn convert_returns_the_same_version_unchanged() {
        // Even fields no type knows: the apiserver asked for nothing to change.
        let object = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2",
            "kind": "OpenshiftAssistedConfigTemplate",
            "metadata": {"name": "t"},
            "spec": {"template": {"spec": {}}, "unknown": 1}
        });
        assert_eq!(
            convert(object.clone(), "bootstrap.cluster.x-k8s.io/v1alpha2").unwrap(),
            object
        );
    }

    #[test]
    fn convert_rejects_unknown_kinds_versions_and_unparseable_objects() {
        let err = convert(
            json!({"apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1", "kind": "KubeadmConfig"}),
            "bootstrap.cluster.x-k8s.io/v1alpha2",
        )
        .unwrap_err();
        assert!(matches!(err, ConversionError::UnknownKind { .. }), "{err}");
        assert!(err.to_string().contains("KubeadmConfig"), "{err}");

        let err = convert(
            json!({"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "OpenshiftAssistedConfig"}),
            "bootstrap.cluster.x-k8s.io/v1alpha2",
        )
        .unwrap_err();
        assert!(
            matches!(err, ConversionError::UnknownVersion { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("v1beta1"), "{err}");

        let object = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1",
            "kind": "OpenshiftAssistedConfig",
            "metadata": {"name": "w"},
            "spec": {}
        });
        let err = convert(object, "bootstrap.cluster.x-k8s.io/v9").unwrap_err();
        assert!(err.to_string().contains("v9"), "{err}");

        let err = convert(json!({"kind": "OpenshiftAssistedConfig"}), "x").unwrap_err();
        assert_eq!(err.to_string(), "the object has no apiVersion");

        let err = convert(
            json!({
                "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1",
                "kind": "OpenshiftAssistedConfig",
                "metadata": {"name": "w"},
                "spec": {"additionalNTPSources": "pool.ntp.org"}
            }),
            "bootstrap.cluster.x-k8s.io/v1alpha2",
        )
        .unwrap_err();
        assert!(
            matches!(err, ConversionError::InvalidObject { .. }),
            "{err}"
        );
        assert!(
            err.to_string().starts_with(
                "invalid OpenshiftAssistedConfig bootstrap.cluster.x-k8s.io/v1alpha1: "
            ),
            "{err}"
        );
    }

    // ---- property tests ----

    /// Any condition type (the bootstrap kinds' own are not special to the conversion).
    const CONDITION_TYPE: &str = "[A-Z][a-z]{0,6}";

    fn texts() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(some_text(), 0..3)
    }

    fn metadata_strategy() -> impl Strategy<Value = ObjectMeta> {
        (
            some_text(),
            prop::option::of(some_text()),
            prop::option::of(some_text()),
            prop::option::of(0i64..100),
            prop::option::of(prop::collection::btree_map(some_text(), text(), 1..3)),
            prop::option::of(prop::collection::btree_map(some_text(), text(), 1..3)),
        )
            .prop_map(
                |(name, uid, resource_version, generation, labels, annotations)| ObjectMeta {
                    name: Some(name),
                    namespace: Some("test-capi".into()),
                    uid,
                    resource_version,
                    generation,
                    labels,
                    annotations,
                    ..Default::default()
                },
            )
    }

    fn label_selector() -> impl Strategy<Value = LabelSelector> {
        (
            prop::option::of(map()),
            prop::option::of(prop::collection::vec(
                (
                    some_text(),
                    prop::sample::select(vec!["In", "NotIn", "Exists"]),
                    prop::option::of(texts()),
                ),
                0..2,
            )),
        )
            .prop_map(|(match_labels, expressions)| LabelSelector {
                match_labels,
                match_expressions: expressions.map(|e| {
                    e.into_iter()
                        .map(|(key, operator, values)| LabelSelectorRequirement {
                            key,
                            operator: operator.into(),
                            values,
                        })
                        .collect()
                }),
            })
    }

    fn kernel_arguments() -> impl Strategy<Value = Vec<(Option<KernelArgumentOperation>, String)>> {
        prop::collection::vec(
            (
                prop::option::of(prop::sample::select(vec![
                    KernelArgumentOperation::Append,
                    KernelArgumentOperation::Replace,
                    KernelArgumentOperation::Delete,
                ])),
                text(),
            ),
            0..2,
        )
    }

    fn proxy() -> impl Strategy<Value = v1alpha1::Proxy> {
        (
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
        )
            .prop_map(|(http_proxy, https_proxy, no_proxy)| v1alpha1::Proxy {
                http_proxy,
                https_proxy,
                no_proxy,
            })
    }

    fn spoke_spec_strategy() -> impl Strategy<Value = v1alpha1::OpenshiftAssistedConfigSpec> {
        (
            (
                prop::option::of(proxy()),
                prop::option::of(text()),
                texts(),
                prop::option::of(text()),
                prop::option::of(label_selector()),
            ),
            (
                prop::option::of(text()),
                kernel_arguments(),
                prop::option::of(text()),
                prop::option::of(text()),
                prop::option::of((prop::option::of(text()), texts())),
            ),
        )
            .prop_map(
                |(
                    (proxy, pull_secret, ntp, ssh, selector),
                    (cpu, kernel_arguments, bundle, os_image, registration),
                )| v1alpha1::OpenshiftAssistedConfigSpec {
                    proxy,
                    pull_secret_ref: pull_secret
                        .map(|name| v1alpha1::LocalObjectReference { name }),
                    additional_ntp_sources: ntp,
                    ssh_authorized_key: ssh,
                    nm_state_config_label_selector: selector,
                    cpu_architecture: cpu,
                    kernel_arguments: kernel_arguments
                        .into_iter()
                        .map(|(operation, value)| v1alpha1::KernelArgument { operation, value })
                        .collect(),
                    additional_trust_bundle: bundle,
                    os_image_version: os_image,
                    node_registration: registration.map(|(name, kubelet_extra_labels)| {
                        v1alpha1::NodeRegistrationOptions {
                            name,
                            kubelet_extra_labels,
                        }
                    }),
                },
            )
    }

    fn hub_spec_strategy() -> impl Strategy<Value = api::OpenshiftAssistedConfigSpec> {
        (
            spoke_spec_strategy(),
            texts(),
            texts(),
            prop::option::of("/[a-z]{1,6}"),
            prop::option::of("/[a-z]{1,6}"),
            prop::option::of(text()),
        )
            .prop_map(|(spec, pre, post, sentinel, kubeconfig, provider_id)| {
                let mut hub = config_spec_to_hub(&spec);
                hub.pre_bootstrap_commands = pre;
                hub.post_bootstrap_commands = post;
                hub.bootstrap_command_sentinel_dir = sentinel;
                hub.post_bootstrap_kubeconfig_path = kubeconfig;
                if let Some(registration) = hub.node_registration.as_mut() {
                    registration.provider_id = provider_id;
                }
                hub
            })
    }

    fn spoke_status_strategy() -> impl Strategy<Value = v1alpha1::OpenshiftAssistedConfigStatus> {
        (
            prop::option::of((prop::option::of(some_text()), prop::option::of(some_text()))),
            prop::option::of(some_text()),
            any::<bool>(),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(0i64..100),
            prop::collection::vec(v1beta1_condition_strategy(CONDITION_TYPE), 0..3),
        )
            .prop_map(
                |(infra_env, agent, ready, secret, reason, message, generation, conditions)| {
                    v1alpha1::OpenshiftAssistedConfigStatus {
                        infra_env_ref: infra_env.map(|(kind, name)| ObjectReference {
                            kind,
                            name,
                            ..Default::default()
                        }),
                        agent_ref: agent.map(|name| v1alpha1::LocalObjectReference { name }),
                        ready,
                        data_secret_name: secret,
                        failure_reason: reason,
                        failure_message: message,
                        observed_generation: generation,
                        conditions,
                    }
                },
            )
    }

    fn hub_status_strategy() -> impl Strategy<Value = api::OpenshiftAssistedConfigStatus> {
        (
            prop::collection::vec(metav1_condition_strategy(CONDITION_TYPE), 0..3),
            prop::option::of(prop::option::of(any::<bool>())),
            prop::option::of(some_text()),
            prop::option::of(1i64..100),
            prop::collection::vec(v1beta1_condition_strategy(CONDITION_TYPE), 0..2),
        )
            .prop_map(|(conditions, created, secret, generation, v1beta1)| {
                api::OpenshiftAssistedConfigStatus {
                    conditions,
                    initialization: created.map(|data_secret_created| {
                        api::BootstrapInitialization {
                            data_secret_created,
                        }
                    }),
                    data_secret_name: secret,
                    observed_generation: generation,
                    v1beta1_conditions: v1beta1,
                }
            })
    }

    fn template_metadata() -> impl Strategy<Value = Option<ObjectMetaTemplate>> {
        prop::option::of(
            (map(), map()).prop_map(|(labels, annotations)| ObjectMetaTemplate {
                labels,
                annotations,
            }),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn any_v1alpha1_config_round_trips_through_the_hub(
            metadata in metadata_strategy(),
            spec in spoke_spec_strategy(),
            status in prop::option::of(spoke_status_strategy()),
        ) {
            let spoke = v1alpha1::OpenshiftAssistedConfig { metadata, spec, status };
            let hub = spoke.to_hub();
            prop_assert_eq!(v1alpha1::OpenshiftAssistedConfig::from_hub(&hub), spoke);
        }

        #[test]
        fn any_v1alpha2_config_round_trips_through_v1alpha1(
            metadata in metadata_strategy(),
            spec in hub_spec_strategy(),
            status in prop::option::of(hub_status_strategy()),
        ) {
            let hub = api::OpenshiftAssistedConfig { metadata, spec, status };
            let spoke = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
            prop_assert_eq!(json(&spoke.to_hub()), json(&hub));
        }

        #[test]
        fn any_v1alpha1_template_round_trips_through_the_hub(
            metadata in metadata_strategy(),
            template_metadata in template_metadata(),
            spec in spoke_spec_strategy(),
        ) {
            let spoke = v1alpha1::OpenshiftAssistedConfigTemplate {
                metadata,
                spec: v1alpha1::OpenshiftAssistedConfigTemplateSpec {
                    template: v1alpha1::OpenshiftAssistedConfigTemplateResource { metadata: template_metadata, spec },
                },
            };
            let hub = spoke.to_hub();
            prop_assert_eq!(v1alpha1::OpenshiftAssistedConfigTemplate::from_hub(&hub), spoke);
        }

        #[test]
        fn any_v1alpha2_template_round_trips_through_v1alpha1(
            metadata in metadata_strategy(),
            template_metadata in template_metadata(),
            spec in hub_spec_strategy(),
        ) {
            let hub = api::OpenshiftAssistedConfigTemplate {
                metadata,
                spec: api::OpenshiftAssistedConfigTemplateSpec {
                    template: api::OpenshiftAssistedConfigTemplateResource { metadata: template_metadata, spec },
                },
            };
            let spoke = v1alpha1::OpenshiftAssistedConfigTemplate::from_hub(&hub);
            prop_assert_eq!(json(&spoke.to_hub()), json(&hub));
        }

        #[test]
        fn a_v1alpha1_config_keeps_its_spec_when_the_hub_status_changes(
            metadata in metadata_strategy(),
            spec in spoke_spec_strategy(),
            status in prop::option::of(spoke_status_strategy()),
            new_status in prop::option::of(hub_status_strategy()),
        ) {
            let spoke = v1alpha1::OpenshiftAssistedConfig { metadata, spec, status };
            let mut hub = spoke.to_hub();
            hub.status = new_status;
            let read = v1alpha1::OpenshiftAssistedConfig::from_hub(&hub);
            prop_assert_eq!(&read.spec, &spoke.spec);
            // Written back as read, the hub is unchanged but for its conversion data.
            let mut written = read.to_hub();
            prop_assert_eq!(&written.spec, &hub.spec);
            prop_assert_eq!(&written.status, &hub.status);
            for object in [&mut written.metadata, &mut hub.metadata] {
                take_conversion_data(object);
            }
            prop_assert_eq!(written.metadata, hub.metadata);
        }
    }
}

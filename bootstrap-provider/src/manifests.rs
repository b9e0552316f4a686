//! The bootstrap provider's release: its CRDs, its one RBAC rule list, its Deployment.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::core::crd::merge_crds;
use manager::manifests::{
    EVENTS, ProviderManifest, READ, READ_WRITE, READ_WRITE_DELETE, Resources, Rule, UPDATE,
    ValidatingWebhook, Variable, WRITE_STATUS, common_args, with_webhook_conversion,
};
use provider_api::bootstrap::api::{OpenshiftAssistedConfig, OpenshiftAssistedConfigTemplate};
use provider_api::bootstrap::v1alpha1;

pub const NAME: &str = "bootstrap-provider";
/// Same Lease name as CAPOA's bootstrap manager, so the two never run at once by accident.
pub const LEASE_NAME: &str = "08dff33b.cluster.x-k8s.io";

/// Namespace of the bootstrap manager (and of its webhook Service).
pub const NAMESPACE: &str = "capoa-bootstrap-system";
/// The Service in front of the manager's webhook server (`<name prefix>webhook-service`).
pub const WEBHOOK_SERVICE_NAME: &str = "capoa-bootstrap-webhook-service";

/// One CRD per kind with every served version: v1alpha2 (the hub, stored) and v1alpha1
/// (deprecated, converted by the webhook at [`WEBHOOK_SERVICE_NAME`]).
pub fn crds() -> Vec<CustomResourceDefinition> {
    [
        (
            OpenshiftAssistedConfig::crd(),
            v1alpha1::OpenshiftAssistedConfig::crd(),
        ),
        (
            OpenshiftAssistedConfigTemplate::crd(),
            v1alpha1::OpenshiftAssistedConfigTemplate::crd(),
        ),
    ]
    .into_iter()
    .map(|(hub, spoke)| {
        with_webhook_conversion(
            merge_crds(vec![hub, spoke], "v1alpha2").expect("the bootstrap CRD versions merge"),
            &[("cluster.x-k8s.io/v1beta1", "v1alpha1")],
            NAMESPACE,
            WEBHOOK_SERVICE_NAME,
        )
    })
    .collect()
}

/// Everything the bootstrap manager may do; the ClusterRole is generated from this list only.
pub const RBAC_RULES: &[Rule] = &[
    Rule {
        group: "bootstrap.cluster.x-k8s.io",
        resources: &[
            "openshiftassistedconfigs",
            "openshiftassistedconfigtemplates",
        ],
        verbs: READ_WRITE,
    },
    Rule {
        group: "bootstrap.cluster.x-k8s.io",
        resources: &["openshiftassistedconfigs/status"],
        verbs: WRITE_STATUS,
    },
    Rule {
        group: "bootstrap.cluster.x-k8s.io",
        resources: &["openshiftassistedconfigs/finalizers"],
        verbs: UPDATE,
    },
    Rule {
        group: "cluster.x-k8s.io",
        resources: &["clusters", "machines", "machinesets", "machinedeployments"],
        verbs: READ,
    },
    Rule {
        group: "infrastructure.cluster.x-k8s.io",
        resources: &["metal3machines", "metal3machinetemplates"],
        verbs: READ_WRITE,
    },
    Rule {
        group: "infrastructure.cluster.x-k8s.io",
        resources: &["metal3clusters"],
        verbs: READ,
    },
    Rule {
        group: "metal3.io",
        resources: &["baremetalhosts"],
        verbs: READ,
    },
    Rule {
        group: "agent-install.openshift.io",
        resources: &["infraenvs"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "agent-install.openshift.io",
        resources: &["agents"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "extensions.hive.openshift.io",
        resources: &["agentclusterinstalls"],
        verbs: READ,
    },
    Rule {
        group: "hive.openshift.io",
        resources: &["clusterdeployments"],
        verbs: READ,
    },
    Rule {
        group: "",
        resources: &["secrets"],
        verbs: READ_WRITE,
    },
    Rule {
        group: "events.k8s.io",
        resources: &["events"],
        verbs: EVENTS,
    },
    Rule {
        group: "apiextensions.k8s.io",
        resources: &["customresourcedefinitions"],
        verbs: READ,
    },
];

pub fn provider_manifest() -> ProviderManifest {
    ProviderManifest {
        short_name: "bootstrap",
        provider_label: "bootstrap-openshift-assisted",
        components_file: "bootstrap-components.yaml",
        namespace: "capoa-bootstrap-system",
        name_prefix: "capoa-bootstrap-",
        image: Variable {
            name: "OPENSHIFT_ASSISTED_BOOTSTRAP_IMAGE",
            default: "ghcr.io/openshift-assisted/capoa-rs/bootstrap-provider:v0.1.0",
        },
        args: common_args(),
        crds: crds(),
        rules: RBAC_RULES,
        extra_service: None,
        // Measured (docs/benchmarks.md, "Our managers as pods"): as a pod through 10 × 3+2
        // (60 hosts), 34m CPU on average, 61m at most over 10 s, 36.8 MiB peak RSS (idle 13.8);
        // 41.6 MiB peak at 20 × 3+2. Requests cover that load; the limits are three times the
        // largest peak, for bursts (a mass scale-down) and growth.
        resources: Resources {
            cpu_request: "50m",
            memory_request: "48Mi",
            cpu_limit: "500m",
            memory_limit: "128Mi",
        },
        data_volume: None,
        extra_service_leader_label: None,
        webhooks: true,
        validating_webhooks: &[
            ValidatingWebhook {
                name: "validation.openshiftassistedconfig.bootstrap.cluster.x-k8s.io",
                path: crate::admission::VALIDATE_CONFIG_PATH,
                group: "bootstrap.cluster.x-k8s.io",
                version: "v1alpha2",
                resource: "openshiftassistedconfigs",
            },
            ValidatingWebhook {
                name: "validation.openshiftassistedconfigtemplate.bootstrap.cluster.x-k8s.io",
                path: crate::admission::VALIDATE_TEMPLATE_PATH,
                group: "bootstrap.cluster.x-k8s.io",
                version: "v1alpha2",
                resource: "openshiftassistedconfigtemplates",
            },
        ],
        mutating_webhooks: &[],
        namespace_rules: &[],
        extra_objects: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::{Value, json};

    use super::*;

    fn json<T: Serialize>(object: &T) -> Value {
        serde_json::to_value(object).unwrap()
    }

    #[test]
    fn crds_serve_both_versions_and_convert_through_the_webhook() {
        let crds = crate::manifests::crds();
        assert_eq!(crds.len(), 2);
        for crd in &crds {
            let versions: Vec<_> = crd
                .spec
                .versions
                .iter()
                .map(|v| {
                    (
                        v.name.as_str(),
                        v.served,
                        v.storage,
                        v.deprecated,
                        v.deprecation_warning.as_deref(),
                    )
                })
                .collect();
            assert_eq!(
                versions,
                vec![
                    ("v1alpha2", true, true, None, None),
                    (
                        "v1alpha1",
                        true,
                        false,
                        Some(true),
                        Some(v1alpha1::DEPRECATION_WARNING)
                    ),
                ],
                "{:?}",
                crd.metadata.name
            );
            let labels = crd.metadata.labels.clone().unwrap();
            assert_eq!(labels["cluster.x-k8s.io/v1beta1"], "v1alpha1");
            assert_eq!(labels["cluster.x-k8s.io/v1beta2"], "v1alpha2");
            let conversion = json(crd.spec.conversion.as_ref().unwrap());
            assert_eq!(
                conversion,
                json!({
                    "strategy": "Webhook",
                    "webhook": {
                        "conversionReviewVersions": ["v1"],
                        "clientConfig": {"service": {
                            "namespace": "capoa-bootstrap-system",
                            "name": "capoa-bootstrap-webhook-service",
                            "path": "/convert",
                            "port": 443
                        }}
                    }
                })
            );
        }
        // v1alpha1 has CAPOA's short names and status subresource on the config.
        assert_eq!(
            crds[0].spec.names.short_names,
            Some(vec!["oac".to_string(), "oacs".to_string()])
        );
        assert!(
            crds[0].spec.versions[1]
                .subresources
                .as_ref()
                .unwrap()
                .status
                .is_some()
        );
    }

    #[test]
    fn the_v1alpha1_schema_accepts_what_capoa_wrote() {
        // Go's zero values included: empty structs, `ready: false`.
        let object = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1",
            "kind": "OpenshiftAssistedConfig",
            "metadata": {"name": "worker-0", "namespace": "test-capi"},
            "spec": {
                "cpuArchitecture": "x86_64",
                "nmStateConfigLabelSelector": {"matchLabels": {"a": "b"}},
                "nodeRegistration": {"name": "$METADATA_NAME", "kubeletExtraLabels": ["metal3.io/uuid=$METADATA_UUID"]},
                "kernelArguments": [{"operation": "append", "value": "console=ttyS0"}],
                "proxy": {"httpProxy": "http://proxy:3128"},
                "pullSecretRef": {"name": "pull-secret"},
                "sshAuthorizedKey": "ssh-ed25519 AAAA"
            },
            "status": {
                "ready": false,
                "infraEnvRef": {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv", "name": "x"},
                "agentRef": {"name": "a"},
                "conditions": [{"type": "Ready", "status": "False", "severity": "Info", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "Waiting"}]
            }
        });
        manager::manifests::validate_object(&crate::manifests::crds(), &object).unwrap();
        let template = json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1",
            "kind": "OpenshiftAssistedConfigTemplate",
            "metadata": {"name": "workers", "namespace": "test-capi"},
            "spec": {"template": {"metadata": {}, "spec": {"nodeRegistration": {}}}}
        });
        manager::manifests::validate_object(&crate::manifests::crds(), &template).unwrap();
    }
}

//! The bootstrap provider's release: its CRDs, its one RBAC rule list, its Deployment.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use kube::CustomResourceExt;
use kube::core::crd::merge_crds;
use manager::manifests::{
    EVENTS, ProviderManifest, READ, READ_WRITE, READ_WRITE_DELETE, Resources, Rule, UPDATE,
    ValidatingWebhook, Variable, WRITE_STATUS,
};

use crate::api::{OpenshiftAssistedConfig, OpenshiftAssistedConfigTemplate};

pub const NAME: &str = "bootstrap-provider";
/// Same Lease name as CAPOA's bootstrap manager, so the two never run at once by accident.
pub const LEASE_NAME: &str = "08dff33b.cluster.x-k8s.io";

/// Namespace of the bootstrap manager (and of its webhook Service).
pub const NAMESPACE: &str = "capoa-bootstrap-system";
/// The Service in front of the manager's webhook server (`<name prefix>webhook-service`).
pub const WEBHOOK_SERVICE_NAME: &str = "capoa-bootstrap-webhook-service";
/// Port of the webhook Service (the apiserver's default).
pub const WEBHOOK_SERVICE_PORT: i32 = 443;
/// Path of the CRD conversion endpoint on the webhook server.
pub const CONVERSION_PATH: &str = "/convert";

/// One CRD per kind with every served version: v1alpha2 (the hub, stored) and v1alpha1
/// (deprecated, converted by the webhook at [`WEBHOOK_SERVICE_NAME`]).
pub fn crds() -> Vec<CustomResourceDefinition> {
    [
        (
            OpenshiftAssistedConfig::crd(),
            crate::v1alpha1::OpenshiftAssistedConfig::crd(),
        ),
        (
            OpenshiftAssistedConfigTemplate::crd(),
            crate::v1alpha1::OpenshiftAssistedConfigTemplate::crd(),
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

/// A merged CRD as served: the extra contract labels, and conversion through the webhook Service
/// (`/convert`, ConversionReview v1). The hub stays the first version (`merge_crds` puts the
/// stored one first; the api-conformance tests read the schema of `versions[0]`).
pub fn with_webhook_conversion(
    mut crd: CustomResourceDefinition,
    labels: &[(&str, &str)],
    namespace: &str,
    service: &str,
) -> CustomResourceDefinition {
    let crd_labels = crd.metadata.labels.get_or_insert_default();
    for (key, value) in labels {
        crd_labels.insert((*key).to_string(), (*value).to_string());
    }
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: namespace.to_string(),
                    name: service.to_string(),
                    path: Some(CONVERSION_PATH.to_string()),
                    port: Some(WEBHOOK_SERVICE_PORT),
                }),
                ..Default::default()
            }),
            conversion_review_versions: vec!["v1".into()],
        }),
    });
    crd
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
        args: vec![
            "--leader-elect".into(),
            "--metrics-bind-address=:8080".into(),
            "--health-probe-bind-address=:8081".into(),
            format!(
                "--log-format={}",
                Variable {
                    name: "OPENSHIFT_ASSISTED_LOG_FORMAT",
                    default: "json"
                }
                .reference()
            ),
            format!(
                "--log-level={}",
                Variable {
                    name: "OPENSHIFT_ASSISTED_LOG_LEVEL",
                    default: "info"
                }
                .reference()
            ),
        ],
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

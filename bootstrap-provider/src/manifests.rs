//! The bootstrap provider's release: its CRDs, its one RBAC rule list, its Deployment.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use manager::manifests::{
    EVENTS, ProviderManifest, READ, READ_WRITE, READ_WRITE_DELETE, Rule, UPDATE, Variable,
    WRITE_STATUS,
};

use crate::api::{OpenshiftAssistedConfig, OpenshiftAssistedConfigTemplate};

pub const NAME: &str = "bootstrap-provider";
/// Same Lease name as CAPOA's bootstrap manager, so the two never run at once by accident.
pub const LEASE_NAME: &str = "08dff33b.cluster.x-k8s.io";

pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        OpenshiftAssistedConfig::crd(),
        OpenshiftAssistedConfigTemplate::crd(),
    ]
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
        memory_limit: "128Mi",
        data_volume: None,
        webhooks: true,
    }
}

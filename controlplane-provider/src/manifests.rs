//! The control-plane provider's release: its CRD plus the assisted CRDs of the embedded core, its
//! one RBAC rule list, its Deployment and the Services of the agent API and images.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::core::crd::merge_crds;
use manager::manifests::{
    DataVolume, EVENTS, MutatingWebhook, ProviderManifest, READ, READ_WRITE, READ_WRITE_DELETE,
    Resources, Rule, ServicePort, UPDATE, ValidatingWebhook, Variable, WRITE_STATUS, common_args,
    required_variable, with_webhook_conversion,
};
use provider_api::controlplane::api::{
    OpenshiftAssistedControlPlane, OpenshiftAssistedControlPlaneTemplate,
};
use provider_api::controlplane::v1alpha2;

/// The clusterctl variable with the agent API's URL as the site's hosts reach it.
pub const AGENT_API_URL_VARIABLE: &str = "OPENSHIFT_ASSISTED_CORE_AGENT_API_URL";
/// The clusterctl variable with the image server's URL as the site's BMCs reach it.
pub const IMAGES_URL_VARIABLE: &str = "OPENSHIFT_ASSISTED_CORE_IMAGES_URL";

pub const NAME: &str = "controlplane-provider";
/// Same Lease name as CAPOA's control-plane manager, so the two never run at once by accident.
pub const LEASE_NAME: &str = "09dff44b.cluster.x-k8s.io";
/// Port of the discovery agent's REST API (`/api/assisted-install/v2`).
pub const AGENT_API_PORT: u16 = 8090;
/// Port of the discovery image downloads.
pub const IMAGES_PORT: u16 = 8091;

/// Namespace of the control-plane manager (and of its webhook Service).
pub const NAMESPACE: &str = "capoa-controlplane-system";
/// The Service in front of the manager's webhook server (`<name prefix>webhook-service`).
pub const WEBHOOK_SERVICE_NAME: &str = "capoa-controlplane-webhook-service";

/// This manager's CRDs: OpenshiftAssistedControlPlane (v1alpha3 stored, v1alpha2 deprecated and
/// converted by the webhook at [`WEBHOOK_SERVICE_NAME`]), its template for ClusterClasses
/// (v1alpha3 only) and the CRDs of the embedded assisted-core.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let control_plane = merge_crds(
        vec![
            OpenshiftAssistedControlPlane::crd(),
            v1alpha2::OpenshiftAssistedControlPlane::crd(),
        ],
        "v1alpha3",
    )
    .expect("the control-plane CRD versions merge");
    let mut crds = vec![with_webhook_conversion(
        control_plane,
        &[("cluster.x-k8s.io/v1beta1", "v1alpha2")],
        NAMESPACE,
        WEBHOOK_SERVICE_NAME,
    )];
    crds.push(OpenshiftAssistedControlPlaneTemplate::crd());
    crds.extend(assisted_api::crds());
    crds
}

/// Everything the control-plane manager (with the embedded core) may do; the ClusterRole is
/// generated from this list only.
pub const RBAC_RULES: &[Rule] = &[
    Rule {
        group: "controlplane.cluster.x-k8s.io",
        resources: &["openshiftassistedcontrolplanes"],
        verbs: READ_WRITE,
    },
    Rule {
        group: "controlplane.cluster.x-k8s.io",
        resources: &["openshiftassistedcontrolplanes/status"],
        verbs: WRITE_STATUS,
    },
    Rule {
        group: "controlplane.cluster.x-k8s.io",
        resources: &["openshiftassistedcontrolplanes/finalizers"],
        verbs: UPDATE,
    },
    Rule {
        group: "bootstrap.cluster.x-k8s.io",
        resources: &["openshiftassistedconfigs"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "cluster.x-k8s.io",
        resources: &["clusters", "machinedeployments", "machinesets"],
        verbs: READ,
    },
    Rule {
        group: "cluster.x-k8s.io",
        resources: &["machines"],
        verbs: READ_WRITE_DELETE,
    },
    // The UpToDate condition CAPI leaves to the control-plane provider.
    Rule {
        group: "cluster.x-k8s.io",
        resources: &["machines/status"],
        verbs: WRITE_STATUS,
    },
    Rule {
        group: "infrastructure.cluster.x-k8s.io",
        resources: &["metal3machinetemplates", "metal3clusters"],
        verbs: READ,
    },
    Rule {
        group: "infrastructure.cluster.x-k8s.io",
        resources: &["metal3machines"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "metal3.io",
        resources: &["baremetalhosts", "preprovisioningimages"],
        verbs: READ_WRITE,
    },
    Rule {
        group: "metal3.io",
        resources: &["preprovisioningimages/status"],
        verbs: WRITE_STATUS,
    },
    Rule {
        group: "hive.openshift.io",
        resources: &["clusterdeployments", "clusterimagesets"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "hive.openshift.io",
        resources: &["clusterdeployments/status"],
        verbs: WRITE_STATUS,
    },
    Rule {
        group: "hive.openshift.io",
        resources: &["clusterdeployments/finalizers"],
        verbs: UPDATE,
    },
    Rule {
        group: "extensions.hive.openshift.io",
        resources: &["agentclusterinstalls"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "extensions.hive.openshift.io",
        resources: &["agentclusterinstalls/status"],
        verbs: WRITE_STATUS,
    },
    Rule {
        group: "extensions.hive.openshift.io",
        resources: &["agentclusterinstalls/finalizers"],
        verbs: UPDATE,
    },
    Rule {
        group: "agent-install.openshift.io",
        resources: &["infraenvs", "agents", "nmstateconfigs"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "agent-install.openshift.io",
        resources: &["infraenvs/status", "agents/status"],
        verbs: WRITE_STATUS,
    },
    Rule {
        group: "agent-install.openshift.io",
        resources: &["infraenvs/finalizers", "agents/finalizers"],
        verbs: UPDATE,
    },
    Rule {
        group: "",
        resources: &["secrets"],
        verbs: READ_WRITE_DELETE,
    },
    Rule {
        group: "",
        resources: &["configmaps"],
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

/// The manager's arguments: every manager's own (`common_args`), then the embedded core's, each
/// setting a clusterctl variable with its default, or one clusterctl requires.
fn args() -> Vec<String> {
    let core = [
        flag("--assisted-core", "OPENSHIFT_ASSISTED_CORE", "embedded"),
        // What hosts and BMCs reach: an address routable from the bare-metal network (a
        // LoadBalancer, NodePort or Route in front of the assisted-core Service). No default:
        // the cluster's own Service address is one no host can reach, so clusterctl refuses
        // to install until they are given.
        format!(
            "--agent-api-url={}",
            required_variable(AGENT_API_URL_VARIABLE)
        ),
        format!("--images-url={}", required_variable(IMAGES_URL_VARIABLE)),
        // An https URL is served with a certificate cert-manager issues for its host; by
        // default from the core's own CA (below), or from the site's issuer.
        flag(
            "--tls-issuer",
            "OPENSHIFT_ASSISTED_CORE_TLS_ISSUER",
            CORE_CA_ISSUER,
        ),
        flag(
            "--tls-issuer-kind",
            "OPENSHIFT_ASSISTED_CORE_TLS_ISSUER_KIND",
            "Issuer",
        ),
        format!("--tls-secret={CORE_TLS_SECRET}"),
        flag(
            "--install-backend",
            "OPENSHIFT_ASSISTED_CORE_INSTALL_BACKEND",
            "openshift-install",
        ),
        flag("--os-images", "OPENSHIFT_ASSISTED_CORE_OS_IMAGES", "[]"),
        flag(
            "--installer-image",
            "OPENSHIFT_ASSISTED_CORE_INSTALLER_IMAGE",
            "quay.io/edge-infrastructure/assisted-installer:latest",
        ),
        flag(
            "--controller-image",
            "OPENSHIFT_ASSISTED_CORE_CONTROLLER_IMAGE",
            "quay.io/edge-infrastructure/assisted-installer-controller:latest",
        ),
    ];
    common_args().into_iter().chain(core).collect()
}

/// `--flag=${NAME:=default}`: a setting clusterctl fills in from the variable.
fn flag(flag: &str, name: &'static str, default: &'static str) -> String {
    format!("{flag}={}", Variable { name, default }.reference())
}

pub fn provider_manifest() -> ProviderManifest {
    ProviderManifest {
        short_name: "controlplane",
        provider_label: "control-plane-openshift-assisted",
        components_file: "control-plane-components.yaml",
        namespace: "capoa-controlplane-system",
        name_prefix: "capoa-controlplane-",
        image: Variable {
            name: "OPENSHIFT_ASSISTED_CONTROLPLANE_IMAGE",
            default: "ghcr.io/openshift-assisted/capoa-rs/controlplane-provider:v0.1.0",
        },
        args: args(),
        crds: crds(),
        rules: RBAC_RULES,
        extra_service: Some((
            "assisted-core",
            &[
                ServicePort {
                    name: "agent-api",
                    port: AGENT_API_PORT,
                },
                ServicePort {
                    name: "images",
                    port: IMAGES_PORT,
                },
            ],
        )),
        extra_service_leader_label: Some(crate::serving::SERVING_LABEL),
        // Measured (docs/benchmarks.md, "Our managers as pods"): as a pod through 10 × 3+2
        // (60 hosts), 66m CPU on average, 176m at most over 10 s, 38.9 MiB peak RSS (idle
        // 18.7); 55.3 MiB peak at 20 × 3+2. Requests cover that load; the limits add up to two
        // openshift-install children (MAX_CONCURRENT_INSTALLERS) at about 160 MiB and one CPU
        // second each ("The real openshift-install"): 55 + 2 × 160 = 375 MiB, plus a third.
        resources: Resources {
            cpu_request: "100m",
            memory_request: "64Mi",
            cpu_limit: "1",
            memory_limit: "512Mi",
        },
        // The core's file store (install artifacts, each cluster's state snapshot, uploaded
        // logs) and its caches (OS images, installers): a pod replaced mid-install must find
        // them again.
        data_volume: Some(DataVolume {
            name: "file-store",
            mount_path: "/var/lib/assisted-core",
            size: Variable {
                name: "OPENSHIFT_ASSISTED_CORE_STORAGE_SIZE",
                default: "20Gi",
            },
        }),
        webhooks: true,
        validating_webhooks: &[ValidatingWebhook {
            name: "validation.openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io",
            path: crate::admission::VALIDATE_PATH,
            group: "controlplane.cluster.x-k8s.io",
            version: "v1alpha3",
            resource: "openshiftassistedcontrolplanes",
        }],
        // Fills CAPOA's flat machine template from Cluster API v1beta2's and back.
        mutating_webhooks: &[MutatingWebhook {
            name: "default.openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io",
            path: crate::admission::MUTATE_PATH,
            group: "controlplane.cluster.x-k8s.io",
            version: "v1alpha3",
            resource: "openshiftassistedcontrolplanes",
        }],
        // The core writes the Certificate of its https listeners (`assisted_core::service::tls`).
        namespace_rules: &[Rule {
            group: "cert-manager.io",
            resources: &["certificates"],
            verbs: &["get", "create", "patch"],
        }],
        extra_objects: core_ca(),
    }
}

/// The Issuer of the core's serving certificate unless the site names its own.
pub const CORE_CA_ISSUER: &str = "capoa-controlplane-assisted-core-ca-issuer";
/// The Certificate (and Secret) the core serves its https listeners with.
pub const CORE_TLS_SECRET: &str = "capoa-controlplane-assisted-core-tls";
/// The Secret of the core's own CA.
pub const CORE_CA_SECRET: &str = "capoa-controlplane-assisted-core-ca";

/// The core's own CA: a self-signed CA certificate (cert-manager, ten years: every discovery
/// image carries it, and a new CA means new images) and the Issuer that signs the serving
/// certificate with it.
fn core_ca() -> Vec<serde_json::Value> {
    let labels =
        serde_json::json!({ "cluster.x-k8s.io/provider": "control-plane-openshift-assisted" });
    vec![
        serde_json::json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": { "name": CORE_CA_SECRET, "namespace": NAMESPACE, "labels": labels },
            "spec": {
                "isCA": true,
                "commonName": "assisted-core CA",
                "duration": "87600h",
                "secretName": CORE_CA_SECRET,
                "privateKey": { "algorithm": "ECDSA", "size": 256 },
                "issuerRef": { "kind": "Issuer", "name": "capoa-controlplane-selfsigned-issuer" }
            }
        }),
        serde_json::json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Issuer",
            "metadata": { "name": CORE_CA_ISSUER, "namespace": NAMESPACE, "labels": labels },
            "spec": { "ca": { "secretName": CORE_CA_SECRET } }
        }),
    ]
}

#[cfg(test)]
mod tests {
    use provider_api::controlplane::api;
    use provider_api::controlplane::conversion::convert;
    use serde::Serialize;
    use serde_json::{Value, json};

    use super::*;

    fn json<T: Serialize>(object: &T) -> Value {
        serde_json::to_value(object).unwrap()
    }

    const MULTINODE_V1ALPHA2: &str = r#"
apiVersion: controlplane.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedControlPlane
metadata:
  name: test-multinode
  namespace: test-capi
  labels:
    cluster.x-k8s.io/cluster-name: test-multinode
spec:
  openshiftAssistedConfigSpec:
    pullSecretRef:
      name: pull-secret
    sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@example
    nodeRegistration:
      name: $METADATA_NAME
      kubeletExtraLabels:
      - metal3.io/uuid=$METADATA_UUID
  distributionVersion: 4.20.0
  config:
    apiVIPs:
    - 192.168.222.40
    ingressVIPs:
    - 192.168.222.41
    baseDomain: lab.home
    pullSecretRef:
      name: pull-secret
    sshAuthorizedKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@example
  machineTemplate:
    infrastructureRef:
      apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
      kind: Metal3MachineTemplate
      name: test-multinode-controlplane
    nodeDrainTimeout: 1m30s
  replicas: 3
"#;

    #[test]
    fn capoas_v1alpha2_multinode_control_plane_converts_to_a_v1alpha3_the_controller_accepts() {
        let crds = crate::manifests::crds();
        let object: Value = serde_yaml::from_str(MULTINODE_V1ALPHA2).unwrap();
        manager::manifests::validate_object(&crds, &object).expect("v1alpha2 accepts it");

        let converted = convert(object.clone(), "controlplane.cluster.x-k8s.io/v1alpha3").unwrap();
        manager::manifests::validate_object(&crds, &converted)
            .expect("v1alpha3 accepts the result");
        let oacp: api::OpenshiftAssistedControlPlane =
            serde_json::from_value(converted.clone()).unwrap();
        assert_eq!(
            oacp.metadata.annotations, None,
            "everything maps: no conversion data"
        );
        assert_eq!(crate::controller::machines::desired_replicas(&oacp), 3);
        assert_eq!(oacp.spec.distribution_version, "4.20.0");
        let reference = oacp.spec.machine_template.infrastructure_ref().unwrap();
        assert_eq!(reference.api_group, "infrastructure.cluster.x-k8s.io");
        assert_eq!(reference.kind, "Metal3MachineTemplate");
        assert_eq!(reference.name, "test-multinode-controlplane");
        assert_eq!(
            oacp.spec
                .machine_template
                .deletion()
                .unwrap()
                .node_drain_timeout_seconds,
            Some(90)
        );
        let config = oacp.spec.config.as_ref().unwrap();
        assert_eq!(config.api_vips, vec!["192.168.222.40".to_string()]);
        assert_eq!(config.base_domain, "lab.home");
        let bootstrap = &oacp.spec.openshift_assisted_config_spec;
        assert_eq!(
            bootstrap.pull_secret_ref.as_ref().unwrap().name,
            "pull-secret"
        );
        let registration = bootstrap.node_registration.as_ref().unwrap();
        assert_eq!(registration.name.as_deref(), Some("$METADATA_NAME"));
        assert_eq!(
            registration.kubelet_extra_labels,
            vec!["metal3.io/uuid=$METADATA_UUID".to_string()]
        );

        // Read back through v1alpha2, it is what was applied.
        let back = convert(converted, "controlplane.cluster.x-k8s.io/v1alpha2").unwrap();
        assert_eq!(back, object);
    }

    #[test]
    fn the_crd_serves_v1alpha2_deprecated_with_capoas_columns() {
        let crd = &crate::manifests::crds()[0];
        assert_eq!(crd.spec.names.kind, "OpenshiftAssistedControlPlane");
        let labels = crd.metadata.labels.clone().unwrap();
        assert_eq!(labels["cluster.x-k8s.io/v1beta1"], "v1alpha2");
        assert_eq!(labels["cluster.x-k8s.io/v1beta2"], "v1alpha3");
        let [hub, old] = &crd.spec.versions[..] else {
            panic!("two versions: {:?}", crd.spec.versions.len())
        };
        assert_eq!(
            (old.name.as_str(), old.served, old.storage),
            ("v1alpha2", true, false)
        );
        assert_eq!(old.deprecated, Some(true));
        assert_eq!(
            old.deprecation_warning.as_deref(),
            Some(v1alpha2::DEPRECATION_WARNING)
        );
        assert_eq!(
            (hub.name.as_str(), hub.served, hub.storage),
            ("v1alpha3", true, true)
        );
        let columns: Vec<_> = old
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.as_str(), c.json_path.as_str()))
            .collect();
        assert!(columns.contains(&("API Server Available", ".status.ready")));
        assert!(columns.contains(&("Unavailable", ".status.unavailableReplicas")));
        let scale = old.subresources.as_ref().unwrap().scale.as_ref().unwrap();
        assert_eq!(
            scale.label_selector_path.as_deref(),
            Some(".status.selector")
        );
        let conversion = json(crd.spec.conversion.as_ref().unwrap());
        assert_eq!(conversion["strategy"], "Webhook");
        assert_eq!(
            conversion["webhook"]["clientConfig"]["service"],
            json!({"namespace": "capoa-controlplane-system", "name": "capoa-controlplane-webhook-service", "path": "/convert", "port": 443})
        );
        assert_eq!(
            conversion["webhook"]["conversionReviewVersions"],
            json!(["v1"])
        );
    }
}

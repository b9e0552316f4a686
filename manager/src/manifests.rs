//! Everything under `config/` is generated from Rust: CRDs from the typed APIs, RBAC from one rule
//! list per manager, and the Deployment, Services and clusterctl release files from one
//! [`ProviderManifest`] per provider. Both manager binaries write their part through
//! [`write_config`]; the drift test compares [`ProviderManifest::files`] with the committed tree.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use serde_json::{Value, json};

/// Cluster API contract of both providers (clusterctl `metadata.yaml` and CRD labels).
pub const CONTRACT: &str = "v1beta2";

/// One RBAC rule: API group, resources and verbs. Each manager has one list of these; the
/// ClusterRole in `config/` is generated from it, so nothing else grants permissions.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub group: &'static str,
    pub resources: &'static [&'static str],
    pub verbs: &'static [&'static str],
}

pub const READ: &[&str] = &["get", "list", "watch"];
pub const READ_WRITE: &[&str] = &["get", "list", "watch", "create", "update", "patch"];
pub const READ_WRITE_DELETE: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];
pub const WRITE_STATUS: &[&str] = &["get", "update", "patch"];
pub const UPDATE: &[&str] = &["update"];
pub const EVENTS: &[&str] = &["create", "patch"];

/// A Service port of a manager container.
#[derive(Clone, Copy, Debug)]
pub struct ServicePort {
    pub name: &'static str,
    pub port: u16,
}

/// A clusterctl variable with its default, written as `${NAME:=default}`.
#[derive(Clone, Copy, Debug)]
pub struct Variable {
    pub name: &'static str,
    pub default: &'static str,
}

impl Variable {
    pub fn reference(&self) -> String {
        format!("${{{}:={}}}", self.name, self.default)
    }
}

/// A clusterctl variable without a default, written as `${NAME}`: `clusterctl init` refuses to
/// install the provider until it is set ("value for variables [NAME] is not set").
pub fn required_variable(name: &str) -> String {
    format!("${{{name}}}")
}

/// The arguments every manager's Deployment starts with: leader election, the metrics (8080) and
/// health (8081) ports the manifests expose, and the log format and level as clusterctl
/// variables a user sets at `clusterctl init`.
pub fn common_args() -> Vec<String> {
    let log_format = Variable {
        name: "OPENSHIFT_ASSISTED_LOG_FORMAT",
        default: "json",
    };
    let log_level = Variable {
        name: "OPENSHIFT_ASSISTED_LOG_LEVEL",
        default: "info",
    };
    vec![
        "--leader-elect".into(),
        "--metrics-bind-address=:8080".into(),
        "--health-probe-bind-address=:8081".into(),
        format!("--log-format={}", log_format.reference()),
        format!("--log-level={}", log_level.reference()),
    ]
}

/// What a provider's release is made of.
pub struct ProviderManifest {
    /// Short name used in file names, e.g. `bootstrap`.
    pub short_name: &'static str,
    /// clusterctl provider label value, e.g. `bootstrap-openshift-assisted`.
    pub provider_label: &'static str,
    /// Release file name, e.g. `bootstrap-components.yaml`.
    pub components_file: &'static str,
    /// Namespace of the manager, e.g. `capoa-bootstrap-system`.
    pub namespace: &'static str,
    /// Prefix of every namespaced object name, e.g. `capoa-bootstrap-`.
    pub name_prefix: &'static str,
    pub image: Variable,
    /// Manager arguments; they may reference variables.
    pub args: Vec<String>,
    pub crds: Vec<CustomResourceDefinition>,
    pub rules: &'static [Rule],
    /// Ports besides metrics (8080) and health (8081), exposed by an extra Service.
    pub extra_service: Option<(&'static str, &'static [ServicePort])>,
    /// Only the leader serves the extra Service's ports: it labels its own pod
    /// `<label>: "true"` (and takes the label off any other), and the extra Service selects it.
    /// The leader-election Role then also allows reading and patching the namespace's pods.
    pub extra_service_leader_label: Option<&'static str>,
    /// The manager container's requests and limits.
    pub resources: Resources,
    /// State the manager keeps in files and must not lose with its pod: a PersistentVolumeClaim
    /// mounted there.
    pub data_volume: Option<DataVolume>,
    /// The manager serves webhooks (CRD conversion): the components then carry the webhook
    /// Service, a cert-manager Issuer and Certificate mounted into the manager, and point every
    /// CRD with a `Webhook` conversion at that Service with cert-manager's CA injection.
    pub webhooks: bool,
    /// Validating admission webhooks the manager serves (a ValidatingWebhookConfiguration).
    pub validating_webhooks: &'static [ValidatingWebhook],
    /// Mutating (defaulting) admission webhooks the manager serves (a
    /// MutatingWebhookConfiguration).
    pub mutating_webhooks: &'static [MutatingWebhook],
    /// What the manager may do in its own namespace only (added to the leader-election Role).
    pub namespace_rules: &'static [Rule],
    /// Further objects of the release (in the manager's namespace), written after the rest.
    pub extra_objects: Vec<Value>,
}

/// A manager's persistent state: a PersistentVolumeClaim `<prefix><name>` (ReadWriteOnce, the
/// cluster's default StorageClass, `size` requested) mounted at `mount_path`. The Deployment
/// then recreates its pod instead of rolling (two pods never write the state at once), and the
/// pod's `fsGroup` lets the non-root manager write the volume.
#[derive(Debug, Clone, Copy)]
pub struct DataVolume {
    pub name: &'static str,
    pub mount_path: &'static str,
    pub size: Variable,
}

/// A container's requests and limits (Kubernetes quantities). Each provider sets them from the
/// lab's measurements of its manager running as a pod (docs/benchmarks.md, "Our managers as
/// pods").
#[derive(Debug, Clone, Copy)]
pub struct Resources {
    pub cpu_request: &'static str,
    pub memory_request: &'static str,
    pub cpu_limit: &'static str,
    pub memory_limit: &'static str,
}

/// The numeric user (and group) our images and Deployments run as.
pub const NONROOT_USER: u32 = 65532;

/// One validating admission webhook of a provider.
#[derive(Debug, Clone, Copy)]
pub struct ValidatingWebhook {
    /// The webhook's name, e.g. `validation.openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io`.
    pub name: &'static str,
    /// Where the manager serves it.
    pub path: &'static str,
    pub group: &'static str,
    /// The version the webhook reads; requests in other served versions are converted to it
    /// (`matchPolicy: Equivalent`).
    pub version: &'static str,
    pub resource: &'static str,
}

/// One mutating admission webhook of a provider: the same fields (its name, e.g.
/// `default.openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io`).
pub type MutatingWebhook = ValidatingWebhook;

pub const METRICS_PORT: u16 = 8080;
pub const HEALTH_PORT: u16 = 8081;
pub const WEBHOOK_PORT: u16 = 9443;
/// Where the manager reads the webhook certificate (`--webhook-cert-dir`'s default).
pub const WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// The annotation cert-manager's CA injector fills `caBundle` from.
pub const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";
/// Port of the webhook Service (the apiserver's default).
pub const WEBHOOK_SERVICE_PORT: i32 = 443;
/// Path of the CRD conversion endpoint on the webhook server.
pub const CONVERSION_PATH: &str = "/convert";

impl ProviderManifest {
    fn labels(&self) -> Value {
        json!({ "cluster.x-k8s.io/provider": self.provider_label })
    }

    fn meta(&self, name: &str) -> Value {
        json!({ "name": format!("{}{}", self.name_prefix, name), "namespace": self.namespace, "labels": self.labels() })
    }

    fn selector_labels(&self) -> Value {
        json!({ "cluster.x-k8s.io/provider": self.provider_label, "control-plane": "controller-manager" })
    }

    /// The Service in front of the webhook server.
    pub fn webhook_service_name(&self) -> String {
        format!("{}webhook-service", self.name_prefix)
    }

    fn serving_certificate_name(&self) -> String {
        format!("{}serving-cert", self.name_prefix)
    }

    fn webhook_secret_name(&self) -> String {
        format!("{}webhook-service-cert", self.name_prefix)
    }

    /// The self-signed Issuer and the Certificate of the webhook Service (cert-manager, which
    /// clusterctl installs).
    pub fn webhook_certificates(&self) -> Vec<Value> {
        let service = self.webhook_service_name();
        let ns = self.namespace;
        vec![
            json!({
                "apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                "metadata": self.meta("selfsigned-issuer"),
                "spec": { "selfSigned": {} }
            }),
            json!({
                "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                "metadata": self.meta("serving-cert"),
                "spec": {
                    "dnsNames": [format!("{service}.{ns}.svc"), format!("{service}.{ns}.svc.cluster.local")],
                    "issuerRef": { "kind": "Issuer", "name": format!("{}selfsigned-issuer", self.name_prefix) },
                    "secretName": self.webhook_secret_name()
                }
            }),
        ]
    }

    /// The ValidatingWebhookConfiguration of [`ProviderManifest::validating_webhooks`], pointed
    /// at the webhook Service with cert-manager's CA injection.
    pub fn validating_webhook_configuration(&self) -> Option<Value> {
        self.webhook_configuration(
            "ValidatingWebhookConfiguration",
            "validating-webhook-configuration",
            self.validating_webhooks,
            json!({ "failurePolicy": "Fail" }),
        )
    }

    /// The MutatingWebhookConfiguration of [`ProviderManifest::mutating_webhooks`], pointed at
    /// the webhook Service with cert-manager's CA injection. `failurePolicy: Fail`, as CAPI's
    /// defaulting webhooks: an object written while the manager is away would miss its
    /// defaults (the writer retries, as with the validating webhook); it is not called again
    /// after other mutations (`reinvocationPolicy: Never`).
    pub fn mutating_webhook_configuration(&self) -> Option<Value> {
        self.webhook_configuration(
            "MutatingWebhookConfiguration",
            "mutating-webhook-configuration",
            self.mutating_webhooks,
            json!({ "failurePolicy": "Fail", "reinvocationPolicy": "Never" }),
        )
    }

    fn webhook_configuration(
        &self,
        kind: &str,
        name: &str,
        webhooks: &[ValidatingWebhook],
        policy: Value,
    ) -> Option<Value> {
        if webhooks.is_empty() {
            return None;
        }
        let hooks: Vec<Value> = webhooks
            .iter()
            .map(|w| {
                let mut hook = json!({
                    "name": w.name,
                    "admissionReviewVersions": ["v1"],
                    "clientConfig": { "service": { "namespace": self.namespace, "name": self.webhook_service_name(), "path": w.path, "port": 443 } },
                    "matchPolicy": "Equivalent",
                    "sideEffects": "None",
                    "rules": [{ "apiGroups": [w.group], "apiVersions": [w.version], "operations": ["CREATE", "UPDATE"], "resources": [w.resource] }]
                });
                if let (Some(hook), Some(policy)) = (hook.as_object_mut(), policy.as_object()) {
                    hook.extend(policy.clone());
                }
                hook
            })
            .collect();
        let mut meta =
            json!({ "name": format!("{}{name}", self.name_prefix), "labels": self.labels() });
        meta["annotations"][INJECT_CA_FROM] = json!(format!(
            "{}/{}",
            self.namespace,
            self.serving_certificate_name()
        ));
        Some(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": meta,
            "webhooks": hooks
        }))
    }

    /// A CRD as released: the provider label, and a `Webhook` conversion pointed at this
    /// provider's webhook Service with the CA injected by cert-manager.
    pub fn released_crd(&self, crd: &CustomResourceDefinition) -> Result<Value, ManifestError> {
        let mut crd =
            serde_json::to_value(crd).map_err(|e| ManifestError::Serialize(e.to_string()))?;
        crd["metadata"]["labels"]["cluster.x-k8s.io/provider"] = json!(self.provider_label);
        let webhook_conversion = crd
            .pointer("/spec/conversion/strategy")
            .and_then(Value::as_str)
            == Some("Webhook");
        if self.webhooks && webhook_conversion {
            crd["metadata"]["annotations"][INJECT_CA_FROM] = json!(format!(
                "{}/{}",
                self.namespace,
                self.serving_certificate_name()
            ));
            crd["spec"]["conversion"]["webhook"]["clientConfig"] = json!({
                "service": { "namespace": self.namespace, "name": self.webhook_service_name(), "path": "/convert", "port": 443 }
            });
        }
        Ok(crd)
    }

    pub fn service_account_name(&self) -> String {
        format!("{}controller-manager", self.name_prefix)
    }

    fn namespace_object(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": { "name": self.namespace, "labels": self.labels() }
        })
    }

    /// ServiceAccount, the ClusterRole generated from `rules`, and the leader-election Role.
    pub fn rbac(&self) -> Vec<Value> {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|rule| json!({ "apiGroups": [rule.group], "resources": rule.resources, "verbs": rule.verbs }))
            .collect();
        let subject = json!([{ "kind": "ServiceAccount", "name": self.service_account_name(), "namespace": self.namespace }]);
        let mut leader_rules = vec![
            json!({ "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch", "create", "update", "patch"] }),
        ];
        if self.extra_service_leader_label.is_some() {
            leader_rules
                .push(json!({ "apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "patch"] }));
        }
        leader_rules.extend(
            self.namespace_rules
                .iter()
                .map(|rule| json!({ "apiGroups": [rule.group], "resources": rule.resources, "verbs": rule.verbs })),
        );
        vec![
            json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": self.meta("controller-manager") }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": { "name": format!("{}manager-role", self.name_prefix), "labels": self.labels() },
                "rules": rules
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": format!("{}manager-rolebinding", self.name_prefix), "labels": self.labels() },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{}manager-role", self.name_prefix) },
                "subjects": subject
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": self.meta("leader-election-role"),
                "rules": leader_rules
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": self.meta("leader-election-rolebinding"),
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("{}leader-election-role", self.name_prefix) },
                "subjects": subject
            }),
        ]
    }

    /// The manager Deployment and its Services.
    pub fn manager(&self) -> Vec<Value> {
        let mut objects = vec![self.deployment()];
        objects.extend(self.data_volume_claim());
        objects.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": self.meta("metrics-service"),
            "spec": {
                "selector": self.selector_labels(),
                "ports": [{ "name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP" }]
            }
        }));
        if self.webhooks {
            objects.extend(self.webhook_objects());
        }
        objects.extend(self.extra_service_object());
        objects.extend(self.extra_objects.iter().cloned());
        objects
    }

    /// The container's ports: metrics, health, the extra Service's, then the webhook's.
    fn container_ports(&self) -> Vec<Value> {
        let mut ports = vec![
            json!({ "name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP" }),
            json!({ "name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP" }),
        ];
        if let Some((_, extra)) = self.extra_service {
            ports.extend(
                extra
                    .iter()
                    .map(|p| json!({ "name": p.name, "containerPort": p.port, "protocol": "TCP" })),
            );
        }
        if self.webhooks {
            ports.push(
                json!({ "name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP" }),
            );
        }
        ports
    }

    /// The pod's volumes and the container's mounts of them: `/tmp` (the root filesystem is
    /// read-only), the data volume, the webhook certificate.
    fn volumes_and_mounts(&self) -> (Vec<Value>, Vec<Value>) {
        let mut volumes = vec![json!({ "name": "tmp", "emptyDir": {} })];
        let mut mounts = vec![json!({ "name": "tmp", "mountPath": "/tmp" })];
        if let Some(data) = self.data_volume {
            volumes.push(json!({ "name": data.name, "persistentVolumeClaim": { "claimName": format!("{}{}", self.name_prefix, data.name) } }));
            mounts.push(json!({ "name": data.name, "mountPath": data.mount_path }));
        }
        if self.webhooks {
            volumes.push(json!({ "name": "webhook-cert", "secret": { "secretName": self.webhook_secret_name() } }));
            mounts.push(
                json!({ "name": "webhook-cert", "mountPath": WEBHOOK_CERT_DIR, "readOnly": true }),
            );
        }
        (volumes, mounts)
    }

    /// The pod security context and the rollout strategy: a data volume (ReadWriteOnce) needs
    /// its group set and the old pod gone before the new one starts.
    fn pod_security_and_strategy(&self) -> (Value, Value) {
        let mut pod_security =
            json!({ "runAsNonRoot": true, "seccompProfile": { "type": "RuntimeDefault" } });
        let mut strategy = json!({ "type": "RollingUpdate" });
        if self.data_volume.is_some() {
            pod_security["fsGroup"] = json!(NONROOT_USER);
            pod_security["fsGroupChangePolicy"] = json!("OnRootMismatch");
            strategy = json!({ "type": "Recreate" });
        }
        (pod_security, strategy)
    }

    /// The manager Deployment: one replica, non-root, read-only root, probes on `health`.
    fn deployment(&self) -> Value {
        let ports = self.container_ports();
        let (volumes, mounts) = self.volumes_and_mounts();
        let (pod_security, strategy) = self.pod_security_and_strategy();
        let probe = |path: &str| json!({ "httpGet": { "path": path, "port": "health" }, "initialDelaySeconds": 5, "periodSeconds": 10 });
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": self.meta("controller-manager"),
            "spec": {
                "replicas": 1,
                "strategy": strategy,
                "selector": { "matchLabels": self.selector_labels() },
                "template": {
                    "metadata": { "labels": self.selector_labels() },
                    "spec": {
                        "serviceAccountName": self.service_account_name(),
                        "terminationGracePeriodSeconds": 10,
                        "securityContext": pod_security,
                        "containers": [{
                            "name": "manager",
                            "image": self.image.reference(),
                            "imagePullPolicy": "IfNotPresent",
                            "args": self.args,
                            "env": [
                                { "name": "POD_NAMESPACE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                                { "name": "POD_NAME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } }
                            ],
                            "ports": ports,
                            "livenessProbe": probe("/healthz"),
                            "readinessProbe": probe("/readyz"),
                            "resources": {
                                "requests": { "cpu": self.resources.cpu_request, "memory": self.resources.memory_request },
                                "limits": { "cpu": self.resources.cpu_limit, "memory": self.resources.memory_limit }
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": false,
                                "readOnlyRootFilesystem": true,
                                "runAsNonRoot": true,
                                "runAsUser": NONROOT_USER,
                                "capabilities": { "drop": ["ALL"] }
                            },
                            "volumeMounts": mounts
                        }],
                        "volumes": volumes
                    }
                }
            }
        })
    }

    /// The PersistentVolumeClaim of the data volume, if the manager has one.
    fn data_volume_claim(&self) -> Option<Value> {
        self.data_volume.map(|data| {
            json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": self.meta(data.name),
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": { "requests": { "storage": data.size.reference() } }
                }
            })
        })
    }

    /// The webhook Service, its certificate and the admission webhook configurations.
    fn webhook_objects(&self) -> Vec<Value> {
        let mut objects = vec![json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": self.meta("webhook-service"),
            "spec": {
                "selector": self.selector_labels(),
                "ports": [{ "name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP" }]
            }
        })];
        objects.extend(self.webhook_certificates());
        objects.extend(self.validating_webhook_configuration());
        objects.extend(self.mutating_webhook_configuration());
        objects
    }

    /// The extra Service (e.g. an API the manager serves), selecting only the leader when asked.
    fn extra_service_object(&self) -> Option<Value> {
        let (name, extra) = self.extra_service?;
        let mut selector = self.selector_labels();
        if let Some(label) = self.extra_service_leader_label {
            selector[label] = json!("true");
        }
        Some(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": self.meta(name),
            "spec": {
                "selector": selector,
                "ports": extra.iter().map(|p| json!({ "name": p.name, "port": p.port, "targetPort": p.name, "protocol": "TCP" })).collect::<Vec<_>>()
            }
        }))
    }

    /// The clusterctl components file: one Namespace, the CRDs, RBAC, Services and Deployment.
    pub fn components(&self) -> Result<String, ManifestError> {
        let mut objects = vec![self.namespace_object()];
        for crd in &self.crds {
            objects.push(self.released_crd(crd)?);
        }
        objects.extend(self.rbac());
        objects.extend(self.manager());
        to_multi_doc_yaml(&objects)
    }

    /// Every file this provider owns under `config/`, keyed by path relative to `config/`.
    pub fn files(&self) -> Result<BTreeMap<PathBuf, String>, ManifestError> {
        let mut files = BTreeMap::new();
        for crd in &self.crds {
            files.insert(
                PathBuf::from("crd").join(crd_file_name(crd)),
                to_yaml_doc(crd)?,
            );
        }
        files.insert(
            PathBuf::from("rbac").join(format!("{}.yaml", self.short_name)),
            to_multi_doc_yaml(&self.rbac())?,
        );
        files.insert(
            PathBuf::from("manager").join(format!("{}.yaml", self.short_name)),
            to_multi_doc_yaml(&self.manager())?,
        );
        files.insert(
            PathBuf::from("release").join(self.components_file),
            self.components()?,
        );
        files.insert(
            PathBuf::from("release").join("metadata.yaml"),
            clusterctl_metadata(),
        );
        Ok(files)
    }
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

/// `<group>_<plural>.yaml`, the controller-gen convention.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// clusterctl's `metadata.yaml`: release series 0.1 follows the v1beta2 contract.
pub fn clusterctl_metadata() -> String {
    let mut out = String::new();
    out.push_str(GENERATED_HEADER);
    let _ = write!(
        out,
        "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: 0\n  minor: 1\n  contract: {CONTRACT}\n"
    );
    out
}

const GENERATED_HEADER: &str =
    "# Generated by `make generate` from the Rust types and manifests. Do not edit.\n";

fn to_yaml<T: serde::Serialize>(value: &T) -> Result<String, ManifestError> {
    serde_yaml::to_string(value).map_err(|e| ManifestError::Serialize(e.to_string()))
}

fn to_yaml_doc<T: serde::Serialize>(value: &T) -> Result<String, ManifestError> {
    Ok(format!("{GENERATED_HEADER}{}", to_yaml(value)?))
}

fn to_multi_doc_yaml(objects: &[Value]) -> Result<String, ManifestError> {
    let mut out = String::from(GENERATED_HEADER);
    for (index, object) in objects.iter().enumerate() {
        if index > 0 {
            out.push_str("---\n");
        }
        out.push_str(&to_yaml(object)?);
    }
    Ok(out)
}

/// Prints CRDs as one multi-document YAML stream (the `crd` subcommand), optionally only the
/// given kinds. An unknown kind is an error that lists the known ones.
pub fn crds_yaml(
    crds: &[CustomResourceDefinition],
    kinds: &[String],
) -> Result<String, ManifestError> {
    let selected: Vec<&CustomResourceDefinition> = if kinds.is_empty() {
        crds.iter().collect()
    } else {
        let mut selected = Vec::new();
        for kind in kinds {
            let crd = crds
                .iter()
                .find(|crd| {
                    crd.spec.names.kind.eq_ignore_ascii_case(kind) || crd.spec.names.plural == *kind
                })
                .ok_or_else(|| ManifestError::UnknownKind {
                    kind: kind.clone(),
                    known: crds
                        .iter()
                        .map(|crd| crd.spec.names.kind.clone())
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
            selected.push(crd);
        }
        selected
    };
    let values = selected
        .into_iter()
        .map(|crd| serde_json::to_value(crd).map_err(|e| ManifestError::Serialize(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    to_multi_doc_yaml(&values)
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("unknown kind {kind:?}; this manager serves: {known}")]
    UnknownKind { kind: String, known: String },
    #[error("cannot serialize manifests: {0}")]
    Serialize(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

/// Writes `files` under `dir`, creating folders; returns the paths written.
pub fn write_config(
    dir: &Path,
    files: &BTreeMap<PathBuf, String>,
) -> Result<Vec<PathBuf>, ManifestError> {
    let mut written = Vec::new();
    for (relative, content) in files {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| ManifestError::Write {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&path, content).map_err(|source| ManifestError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// Validates every document of a YAML stream against the CRD it names (by apiVersion and kind)
/// and returns one line per problem, each naming the document and the field. Documents of kinds
/// the given CRDs do not define are reported as unknown.
pub fn validate_manifests(
    crds: &[CustomResourceDefinition],
    yaml: &str,
) -> Result<usize, ManifestError> {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (index, document) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let value = match <Value as serde::Deserialize>::deserialize(document) {
            Ok(Value::Null) => continue,
            Ok(value) => value,
            Err(e) => {
                // The YAML stream cannot be resynchronised after a syntax error: stop here.
                problems.push(format!("document {}: invalid YAML: {e}", index + 1));
                break;
            }
        };
        checked += 1;
        let label = document_label(index, &value);
        match validate_object(crds, &value) {
            Ok(()) => {}
            Err(errors) => problems.extend(errors.into_iter().map(|e| format!("{label}: {e}"))),
        }
    }
    if problems.is_empty() {
        Ok(checked)
    } else {
        Err(ManifestError::Invalid(problems.join("\n")))
    }
}

fn document_label(index: usize, value: &Value) -> String {
    let kind = value["kind"].as_str().unwrap_or("<no kind>");
    let name = value["metadata"]["name"].as_str().unwrap_or("<no name>");
    format!("document {} ({kind} {name})", index + 1)
}

/// Validates one object against the schema of its CRD version. Errors name the field path.
pub fn validate_object(
    crds: &[CustomResourceDefinition],
    object: &Value,
) -> Result<(), Vec<String>> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let crd = crds
        .iter()
        .find(|crd| crd.spec.group == group && crd.spec.names.kind == kind)
        .ok_or_else(|| vec![format!("unknown kind {kind:?} in {api_version:?}")])?;
    let schema = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .ok_or_else(|| {
            vec![format!(
                "{kind} has no version {version:?} (served: {})",
                served_versions(crd)
            )]
        })?;
    let schema = serde_json::to_value(schema).map_err(|e| vec![e.to_string()])?;
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| vec![format!("schema of {kind} is not valid JSON schema: {e}")])?;
    // The apiserver drops nulls before validation; do the same so `field: ~` is not an error.
    let object = without_nulls(object);
    let errors: Vec<String> = validator
        .iter_errors(&object)
        .map(|error| {
            let path = error.instance_path().to_string();
            let field = if path.is_empty() {
                "<root>".to_string()
            } else {
                path.trim_start_matches('/').replace('/', ".")
            };
            format!("{field}: {error}")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn served_versions(crd: &CustomResourceDefinition) -> String {
    crd.spec
        .versions
        .iter()
        .map(|v| v.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

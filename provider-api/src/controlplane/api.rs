//! `controlplane.cluster.x-k8s.io/v1alpha3` OpenshiftAssistedControlPlane, wire-compatible with
//! CAPOA's hub version (same JSON names, types, defaults, printer columns and short names).
// Each `printcolumn(...)` repeats keys such as `type_`; clippy reads that as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use assisted_api::agentclusterinstall::DiskEncryption;
use assisted_api::common::{LocalObjectReference, Proxy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bootstrap::api::OpenshiftAssistedConfigSpec;

/// Annotation with JSON merged into the generated install-config.
pub const INSTALL_CONFIG_OVERRIDE_ANNOTATION: &str =
    "controlplane.cluster.x-k8s.io/install-config-override";
/// Annotation with a release image repository used instead of the default one.
pub const RELEASE_IMAGE_REPOSITORY_OVERRIDE_ANNOTATION: &str =
    "cluster.x-k8s.io/release-image-repository-override";

/// An OpenShift control plane installed on bare metal through the assisted installer.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "controlplane.cluster.x-k8s.io",
    version = "v1alpha3",
    kind = "OpenshiftAssistedControlPlane",
    plural = "openshiftassistedcontrolplanes",
    shortname = "oacp",
    shortname = "oacps",
    category = "cluster-api",
    namespaced,
    status = "OpenshiftAssistedControlPlaneStatus",
    label("cluster.x-k8s.io/v1beta2", "v1alpha3"),
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",
        description = "Cluster"
    ),
    printcolumn(
        name = "Initialized",
        type_ = "boolean",
        json_path = ".status.initialization.controlPlaneInitialized",
        description = "This denotes whether or not the control plane has the uploaded openshift-assisted-config configmap"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "Total number of machines desired by this control plane",
        priority = 10
    ),
    printcolumn(
        name = "Replicas",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "Total number of non-terminated machines targeted by this control plane"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "Total number of fully running and ready control plane machines"
    ),
    printcolumn(
        name = "Up-To-Date",
        type_ = "integer",
        json_path = ".status.upToDateReplicas",
        description = "Total number of non-terminated machines targeted by this control plane that have the desired template spec"
    ),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas",
        description = "Total number of available control plane machines"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of OpenshiftAssistedControlPlane"
    ),
    printcolumn(
        name = "Distribution Version",
        type_ = "string",
        json_path = ".spec.distributionVersion",
        description = "OpenShift version of the control plane"
    ),
    printcolumn(
        name = "Running Version",
        type_ = "string",
        json_path = ".status.distributionVersion",
        description = "OpenShift version the cluster runs (its cluster-version operator's newest completed version)"
    ),
    printcolumn(
        name = "Upgrade",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"UpgradeCompleted\")].message",
        description = "Upgrade progress or result, from the cluster-version operator",
        priority = 10
    ),
    printcolumn(
        name = "Install",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].message",
        description = "Install progress (the AgentClusterInstall's state and percentage) or why the control plane waits",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneSpec {
    /// The OpenShift or OKD version to install and keep, without architecture suffix
    /// (e.g. `4.20.0` or `4.19.0-okd-scos.ec.6`). Changing it upgrades the cluster.
    #[schemars(length(min = 1, max = 256))]
    pub distribution_version: String,
    /// The Kubernetes version of the release, as Cluster API's control-plane contract names it
    /// (e.g. `v1.30.3`): Cluster API's topology sets it from `Cluster.spec.topology.version` and
    /// compares it with `status.versions`. The release installed and upgraded to is
    /// `distributionVersion`; this field only tells Cluster API which Kubernetes that is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub version: Option<String>,
    /// Number of control-plane machines: 1 (single node) or 3 to 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    pub machine_template: OpenshiftAssistedControlPlaneMachineTemplate,
    /// The OpenshiftAssistedConfig spec of every control-plane Machine.
    #[serde(default)]
    pub openshift_assisted_config_spec: OpenshiftAssistedConfigSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<OpenshiftAssistedControlPlaneConfigSpec>,
    /// How a control-plane Machine a MachineHealthCheck marked unhealthy is replaced (Cluster
    /// API v1beta2's control-plane shape, as KubeadmControlPlane has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<ControlPlaneRemediationSpec>,
}

/// Limits on replacing unhealthy control-plane Machines: a replacement that fails again soon
/// after counts as a retry of the same remediation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ControlPlaneRemediationSpec {
    /// How many times in a row a Machine's replacements may be remediated again; unset: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_retry: Option<i32>,
    /// Seconds to wait after a remediation before remediating its replacement (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_period_seconds: Option<i32>,
    /// Seconds a replacement must stay healthy for its next failure to count as a new
    /// remediation rather than a retry (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_healthy_period_seconds: Option<i32>,
}

/// The last control-plane Machine this control plane remediated.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastRemediationStatus {
    /// The remediated Machine.
    #[schemars(length(min = 1, max = 253))]
    pub machine: String,
    /// When its remediation started (RFC 3339).
    #[schemars(length(min = 1, max = 64))]
    pub time: String,
    /// How many retries of the same remediation came before it.
    #[schemars(range(min = 0))]
    pub retry_count: i32,
}

/// The control-plane Machines' template, in either shape: CAPOA's flat one (`infrastructureRef`
/// and `deletion` here) or Cluster API v1beta2's (the same under `spec`, with `readinessGates`
/// and `taints`). Where both are set, `spec` wins; one infrastructure reference is required,
/// and both shapes set to different values are refused.
// The controller reads the effective values through `infrastructure_ref()` and `deletion()`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneMachineTemplate {
    /// Labels and annotations of the control-plane Machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MachineTemplateMetadata>,
    /// The infrastructure template cloned for each control-plane Machine (CAPOA's place;
    /// `spec.infrastructureRef` is Cluster API v1beta2's and wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractVersionedObjectReference>,
    /// Deletion timeouts of the control-plane Machines (CAPOA's place; `spec.deletion` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"nodeDeletionTimeoutSeconds": 10}))]
    pub deletion: Option<MachineDeletionSpec>,
    /// The control-plane Machines' spec, as Cluster API v1beta2's control-plane contract
    /// places it (`spec.machineTemplate.spec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ControlPlaneMachineTemplateSpec>,
}

/// The flat `deletion` the schema defaults when it is unset: it yields to `spec.deletion`.
pub fn default_deletion() -> MachineDeletionSpec {
    MachineDeletionSpec {
        node_deletion_timeout_seconds: Some(10),
        ..Default::default()
    }
}

impl OpenshiftAssistedControlPlaneMachineTemplate {
    /// The effective infrastructure template reference: `spec.infrastructureRef`, else the flat
    /// one; `None` only when neither is set (admission refuses that).
    pub fn infrastructure_ref(&self) -> Option<&ContractVersionedObjectReference> {
        self.spec
            .as_ref()
            .and_then(|s| s.infrastructure_ref.as_ref())
            .or(self.infrastructure_ref.as_ref())
    }

    /// The effective deletion timeouts: `spec.deletion`, else the flat one.
    pub fn deletion(&self) -> Option<&MachineDeletionSpec> {
        self.spec
            .as_ref()
            .and_then(|s| s.deletion.as_ref())
            .or(self.deletion.as_ref())
    }

    /// The readiness gates of the control-plane Machines (`spec.readinessGates`).
    pub fn readiness_gates(&self) -> &[MachineReadinessGate] {
        self.spec.as_ref().map_or(&[], |s| &s.readiness_gates)
    }

    /// The taints of the control-plane Machines (`spec.taints`).
    pub fn taints(&self) -> &[MachineTaint] {
        self.spec.as_ref().map_or(&[], |s| &s.taints)
    }
}

/// `spec.machineTemplate.spec`: Cluster API v1beta2's `ControlPlaneMachineTemplateSpec`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneMachineTemplateSpec {
    /// The infrastructure template cloned for each control-plane Machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractVersionedObjectReference>,
    /// Deletion timeouts of the control-plane Machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion: Option<MachineDeletionSpec>,
    /// Conditions added to each control-plane Machine's Ready condition (the Machines'
    /// `spec.readinessGates`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 32),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["conditionType"])
    )]
    pub readiness_gates: Vec<MachineReadinessGate>,
    /// Node taints Cluster API manages on the control-plane Machines' Nodes (the Machines'
    /// `spec.taints`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key", "effect"])
    )]
    pub taints: Vec<MachineTaint>,
}

/// Cluster API v1beta2's `MachineReadinessGate`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineReadinessGate {
    /// A condition type of the Machine's conditions; missing counts as Unknown.
    #[schemars(
        length(min = 1, max = 316),
        regex(
            pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
        )
    )]
    pub condition_type: String,
    /// `Positive` (the default: True is normal) or `Negative` (False is normal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Positive", "Negative"]))]
    pub polarity: Option<String>,
}

/// Cluster API v1beta2's `MachineTaint`: a Node taint with how Cluster API propagates it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineTaint {
    #[schemars(
        length(min = 1, max = 317),
        regex(
            pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
        )
    )]
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
    )]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    #[schemars(extend("enum" = ["NoSchedule", "PreferNoSchedule", "NoExecute"]))]
    pub effect: String,
    /// `Always` (kept on the Node) or `OnInitialization` (set once).
    #[schemars(extend("enum" = ["Always", "OnInitialization"]))]
    pub propagation: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineTemplateMetadata {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A reference to an object whose API version Cluster API resolves from the CRD contract label.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContractVersionedObjectReference {
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub api_group: String,
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-zA-Z][a-zA-Z0-9]*$"))]
    pub kind: String,
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeletionSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_drain_timeout_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_volume_detach_timeout_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_deletion_timeout_seconds: Option<i32>,
}

/// Cluster-wide install settings (they become the ClusterDeployment and AgentClusterInstall).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneConfigSpec {
    /// Virtual IPs of the cluster API (one per IP family). Empty: platform None.
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "apiVIPs")]
    #[schemars(length(max = 2))]
    pub api_vips: Vec<String>,
    /// Virtual IPs of the cluster ingress (one per IP family).
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "ingressVIPs")]
    #[schemars(length(max = 2))]
    pub ingress_vips: Vec<String>,
    /// ConfigMaps of extra manifests for the installer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests_config_map_refs: Vec<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_encryption: Option<DiskEncryption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    /// Whether control-plane nodes also run workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masters_schedulable: Option<bool>,
    /// SSH public key of the installed nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_authorized_key: Option<String>,
    /// OpenShift cluster name; defaults to the Cluster API Cluster's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// Base domain of the cluster (`<clusterName>.<baseDomain>`).
    #[schemars(length(min = 1, max = 253))]
    pub base_domain: String,
    /// Secret (key `.dockerconfigjson`) with the pull secret. Unset: a placeholder is used (OKD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
    /// ConfigMap with mirror registry configuration (`registries.conf`, optional `ca-bundle.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_registry_ref: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    /// Image mode at install (on-cluster layering from day 1, OpenShift 4.21 and later): pools
    /// installed on a pre-built OS image. Not in CAPOA (v1alpha3 only; v1alpha2 keeps it in
    /// the conversion-data annotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_mode: Option<ImageModeSpec>,
}

/// Image mode at install: one MachineOSConfig per pool among the install's manifests, and the
/// install-config's OS image stream.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageModeSpec {
    /// The install-config's `osImageStream`: `rhel-9`, `rhel-10` or `centos-10` (OpenShift
    /// 4.22 and later; another stream than `rhel-9` before 4.23 needs the TechPreviewNoUpgrade
    /// feature set in the install-config overrides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub os_image_stream: Option<String>,
    /// The pools installed on a pre-built image, one entry per pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 3),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["pool"])
    )]
    pub pools: Vec<ImageModePool>,
}

/// One MachineConfigPool in image mode: what its MachineOSConfig says.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageModePool {
    /// The MachineConfigPool: `master`, `worker` or `arbiter`.
    #[schemars(regex(pattern = r"^(master|worker|arbiter)$"))]
    pub pool: String,
    /// The pre-built OS image the pool's nodes install on, fully qualified and pinned by
    /// digest (`registry/repository@sha256:<64 hex>`); the pull secret must have credentials
    /// for its registry.
    #[schemars(length(min = 1, max = 512))]
    pub image: String,
    /// The Containerfile the machine-config operator layers onto the pool's configuration when
    /// it builds the pool's next image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containerfile: Option<String>,
    /// Where the machine-config operator pushes the images it builds, with a tag
    /// (`registry/repository:tag`).
    #[schemars(length(min = 1, max = 512))]
    pub rendered_image_push_spec: String,
    /// A Secret of this namespace (`.dockerconfigjson`) with push credentials for
    /// `renderedImagePushSpec`; copied into the installed cluster's
    /// `openshift-machine-config-operator` namespace once its API answers.
    pub rendered_image_push_secret_ref: LocalObjectReference,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// None, vCurrent or v4.x.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(None|vCurrent|v4\.[0-9]+)$"))]
    pub baseline_capability: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_enabled_capabilities: Vec<String>,
}

/// Observed state, per the Cluster API v1beta2 control-plane contract.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization: Option<ControlPlaneInitialization>,
    /// Label selector of the control-plane Machines (for the scale subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_to_date_replicas: Option<i32>,
    /// Kubernetes version of the control plane: the lowest its Nodes run (deprecated by
    /// `versions` in Cluster API's v1beta2 contract; both are written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub version: Option<String>,
    /// The Kubernetes versions the control-plane Nodes run, oldest first, with how many run
    /// each (Cluster API v1.14's `status.versions`); two entries while an upgrade moves them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["version"]))]
    pub versions: Vec<StatusVersion>,
    /// The OpenShift version actually running (from ClusterVersion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution_version: Option<String>,
    /// The last remediation of a control-plane Machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_remediation: Option<LastRemediationStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
}

/// One Kubernetes version of the control plane and how many of its Nodes run it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusVersion {
    #[schemars(length(min = 1, max = 256))]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ControlPlaneInitialization {
    /// True once the cluster API is reachable and the kubeconfig Secret is published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_initialized: Option<bool>,
}

/// The control plane of a ClusterClass: Cluster API's topology makes one
/// OpenshiftAssistedControlPlane per Cluster from `spec.template`, filling in `replicas`,
/// `version` and `machineTemplate.spec.infrastructureRef` itself.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "controlplane.cluster.x-k8s.io",
    version = "v1alpha3",
    kind = "OpenshiftAssistedControlPlaneTemplate",
    plural = "openshiftassistedcontrolplanetemplates",
    shortname = "oacpt",
    category = "cluster-api",
    namespaced,
    label("cluster.x-k8s.io/v1beta2", "v1alpha3"),
    printcolumn(
        name = "Distribution Version",
        type_ = "string",
        json_path = ".spec.template.spec.distributionVersion",
        description = "OpenShift version of the control planes made from this template"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of OpenshiftAssistedControlPlaneTemplate"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneTemplateSpec {
    pub template: OpenshiftAssistedControlPlaneTemplateResource,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneTemplateResource {
    /// Labels and annotations of the control planes made from this template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MachineTemplateMetadata>,
    pub spec: OpenshiftAssistedControlPlaneTemplateResourceSpec,
}

/// The control plane's spec without what the topology owns (`replicas`, `version`, the
/// infrastructure template reference).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenshiftAssistedControlPlaneTemplateResourceSpec {
    /// The OpenShift or OKD version to install and keep (usually set per Cluster by a
    /// ClusterClass variable and patch).
    #[schemars(length(min = 1, max = 256))]
    pub distribution_version: String,
    /// Metadata, deletion timeouts, readiness gates and taints of the control-plane Machines;
    /// the topology adds the infrastructure template reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_template: Option<OpenshiftAssistedControlPlaneMachineTemplate>,
    /// The OpenshiftAssistedConfig spec of every control-plane Machine.
    #[serde(default)]
    pub openshift_assisted_config_spec: OpenshiftAssistedConfigSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<OpenshiftAssistedControlPlaneConfigSpec>,
    /// How unhealthy control-plane Machines are replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<ControlPlaneRemediationSpec>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(yaml: &str) -> OpenshiftAssistedControlPlaneMachineTemplate {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn the_effective_reference_and_timeouts_come_from_spec_then_the_flat_fields() {
        let flat = template(
            "{infrastructureRef: {apiGroup: g, kind: K, name: flat}, \
             deletion: {nodeDrainTimeoutSeconds: 5}}",
        );
        assert_eq!(flat.infrastructure_ref().unwrap().name, "flat");
        assert_eq!(flat.deletion().unwrap().node_drain_timeout_seconds, Some(5));
        let nested = template(
            "{spec: {infrastructureRef: {apiGroup: g, kind: K, name: nested}, \
             deletion: {nodeDrainTimeoutSeconds: 7}, readinessGates: [{conditionType: A}], \
             taints: [{key: k, effect: NoSchedule, propagation: Always}]}}",
        );
        assert_eq!(nested.infrastructure_ref().unwrap().name, "nested");
        assert_eq!(
            nested.deletion().unwrap().node_drain_timeout_seconds,
            Some(7)
        );
        assert_eq!(nested.readiness_gates()[0].condition_type, "A");
        assert_eq!(nested.taints()[0].effect, "NoSchedule");
        let both = template(
            "{infrastructureRef: {apiGroup: g, kind: K, name: flat}, deletion: \
             {nodeDeletionTimeoutSeconds: 10}, spec: {infrastructureRef: {apiGroup: g, kind: K, \
             name: nested}, deletion: {nodeDrainTimeoutSeconds: 7}}}",
        );
        assert_eq!(both.infrastructure_ref().unwrap().name, "nested");
        assert_eq!(both.deletion().unwrap().node_drain_timeout_seconds, Some(7));
        // Spec without a reference: the flat one still counts.
        let gates_only = template(
            "{infrastructureRef: {apiGroup: g, kind: K, name: flat}, \
             spec: {readinessGates: [{conditionType: A, polarity: Negative}]}}",
        );
        assert_eq!(gates_only.infrastructure_ref().unwrap().name, "flat");
        let none = template("{}");
        assert_eq!(none.infrastructure_ref(), None);
        assert_eq!(none.deletion(), None);
        assert!(none.readiness_gates().is_empty() && none.taints().is_empty());
    }

    #[test]
    fn the_schema_has_both_shapes_and_neither_reference_is_required() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(OpenshiftAssistedControlPlane::crd()).unwrap();
        let template = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["machineTemplate"];
        assert_eq!(template["required"], serde_json::Value::Null, "{template}");
        let spec = &template["properties"]["spec"]["properties"];
        for field in ["infrastructureRef", "deletion", "readinessGates", "taints"] {
            assert!(spec.get(field).is_some(), "{field}: {spec}");
        }
        assert_eq!(
            spec["readinessGates"]["x-kubernetes-list-map-keys"],
            serde_json::json!(["conditionType"])
        );
        assert_eq!(
            spec["taints"]["x-kubernetes-list-map-keys"],
            serde_json::json!(["key", "effect"])
        );
    }
}

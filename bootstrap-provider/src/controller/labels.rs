//! The labels and annotations this provider writes and selects by, in one place: every
//! controller file reads them from here.

/// On Machines, configs, InfraEnvs and Agents: the Cluster they belong to (CAPI's label).
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// On the InfraEnv (and, through `agentLabels`, on every Agent booted from it): the template's
/// name, in label-value form (see [`manager::names::readable_label_value`]).
pub const TEMPLATE_LABEL: &str = "bootstrap.cluster.x-k8s.io/metal3-machine-template";
/// On the Agent: the Machine it belongs to, in label-value form (hashed when longer than 63).
pub const MACHINE_NAME_LABEL: &str = "bootstrap.cluster.x-k8s.io/machine-name";
/// On the Agent: `<namespace>/<name>` of the Machine, in full.
pub const MACHINE_ANNOTATION: &str = "bootstrap.cluster.x-k8s.io/machine";
/// On the Agent: `<namespace>/<name>` of the BareMetalHost it runs on.
pub const BAREMETALHOST_ANNOTATION: &str = "bootstrap.cluster.x-k8s.io/baremetalhost";
/// The node label CAPM3 finds the Node by to set its providerID (value: the BareMetalHost UID).
pub const METAL3_UUID_LABEL: &str = "metal3.io/uuid";

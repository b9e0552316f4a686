//! The desired InfraEnv of one Metal3MachineTemplate in use. Pure: no client, no clock.
//!
//! Unlike CAPOA's config controller, which makes one InfraEnv per Machine (and so one discovery
//! image per host), every Machine cloned from a template shares one InfraEnv and one image. The
//! InfraEnv is built from the specs of all the OpenshiftAssistedConfigs whose Machines use the
//! template; where they disagree on a field the InfraEnv carries, the result is an error naming
//! the field and the configs, never a silent pick.

use std::collections::BTreeMap;

use assisted_api::common::{LabelSelector, LocalObjectReference, Proxy};
use assisted_api::infraenv::{
    ClusterReference, CpuArchitecture, ImageType, InfraEnv, InfraEnvSpec, KernelArgument,
    KernelArgumentOperation,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use manager::names::readable_label_value;
use manager::runtime::WATCH_FILTER_LABEL;
use provider_api::bootstrap::api::{
    DISCOVERY_IGNITION_OVERRIDE_ANNOTATION, KernelArgumentOperation as ConfigKargOp,
    OpenshiftAssistedConfig, OpenshiftAssistedConfigSpec,
};

use super::labels::{CLUSTER_NAME_LABEL, TEMPLATE_LABEL};
use super::template::{
    METAL3_MACHINE_TEMPLATE_API_VERSION, METAL3_MACHINE_TEMPLATE_KIND, TemplateRef,
};

/// The InfraEnv of a template: the template's name, which is unique among the namespace's
/// Metal3MachineTemplates and already a DNS-1123 subdomain. Shortened with a hash only when it
/// could not be a label value: assisted-core labels every Agent with its InfraEnv's name.
pub fn infraenv_name(template_name: &str) -> String {
    readable_label_value(template_name)
}

/// Everything the desired InfraEnv depends on.
#[derive(Clone, Debug)]
pub struct InfraEnvInputs<'a> {
    pub template: &'a TemplateRef,
    /// The template's `metadata.uid`, for the owner reference.
    pub template_uid: &'a str,
    pub cluster_name: &'a str,
    /// The cluster's ClusterDeployment (name and namespace).
    pub cluster_deployment: &'a ClusterReference,
    /// Every OpenshiftAssistedConfig whose Machine uses the template (any order).
    pub configs: &'a [&'a OpenshiftAssistedConfig],
    /// The Secret used when a config names no pull secret (assisted-core insists on one).
    pub placeholder_pull_secret: &'a str,
    /// The cluster's mirror registry ConfigMap (its AgentClusterInstall's `mirrorRegistryRef`,
    /// from the control plane's `imageRegistryRef`): the discovery image pulls through it too.
    pub mirror_registry_ref: Option<&'a assisted_api::infraenv::NamespacedReference>,
}

/// Why no InfraEnv can be built. The controller reports it as a condition and waits for a change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InfraEnvError {
    #[error("no OpenshiftAssistedConfig uses Metal3MachineTemplate {template}")]
    NoConfigs { template: String },
    #[error(
        "the OpenshiftAssistedConfigs of Metal3MachineTemplate {template} disagree on {}: one InfraEnv serves them all, so give them the same value",
        describe_conflicts(.fields)
    )]
    Conflict {
        template: String,
        fields: Vec<FieldConflict>,
    },
    #[error(
        "annotation {annotation} of OpenshiftAssistedConfig {config} is not a JSON object: {detail}"
    )]
    InvalidAnnotation {
        config: String,
        annotation: &'static str,
        detail: String,
    },
    #[error(
        "cpuArchitecture {value:?} of OpenshiftAssistedConfig {config} is not one of x86_64, aarch64, arm64, ppc64le, s390x"
    )]
    InvalidCpuArchitecture { config: String, value: String },
}

impl InfraEnvError {
    /// The condition reason (CamelCase).
    pub fn reason(&self) -> &'static str {
        match self {
            InfraEnvError::NoConfigs { .. } => "InfraEnvWithoutConfig",
            InfraEnvError::Conflict { .. } => "InfraEnvConfigConflict",
            InfraEnvError::InvalidAnnotation { .. } => "InvalidDiscoveryIgnitionOverride",
            InfraEnvError::InvalidCpuArchitecture { .. } => "InvalidCpuArchitecture",
        }
    }
}

/// One InfraEnv field the configs disagree on: the configs grouped by the value they give it
/// (values are not shown: they can be long, such as a CA bundle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldConflict {
    /// The field's JSON name in the OpenshiftAssistedConfig spec (or the annotation name).
    pub field: &'static str,
    /// Config names, one group per distinct value, each group sorted, groups ordered by their
    /// first name.
    pub groups: Vec<Vec<String>>,
}

fn describe_conflicts(fields: &[FieldConflict]) -> String {
    fields
        .iter()
        .map(|f| {
            let groups: Vec<String> = f
                .groups
                .iter()
                .map(|g| format!("[{}]", g.join(", ")))
                .collect();
            format!("{} ({})", f.field, groups.join(" vs "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The InfraEnv-relevant part of one config, normalised so that spellings of the same intent
/// compare equal (unset vs empty, unset cpuArchitecture vs its default).
#[derive(Clone, Debug, PartialEq)]
struct Projection {
    pull_secret: String,
    ssh_authorized_key: Option<String>,
    proxy: Option<Proxy>,
    ntp_sources: Vec<String>,
    trust_bundle: Option<String>,
    nmstate_selector: Option<LabelSelector>,
    cpu_architecture: CpuArchitecture,
    os_image_version: Option<String>,
    discovery_kernel_arguments: Vec<String>,
    ignition_override: Option<serde_json::Value>,
    /// The config's `cluster.x-k8s.io/watch-filter` label: the shard whose managers serve it.
    shard: Option<String>,
}

fn non_empty(s: &Option<String>) -> Option<String> {
    s.as_ref().filter(|s| !s.trim().is_empty()).cloned()
}

fn cpu_architecture(config: &str, value: Option<&str>) -> Result<CpuArchitecture, InfraEnvError> {
    Ok(match value.unwrap_or("") {
        // CAPOA's CRD defaults the field to x86_64; an object written without the default
        // (e.g. before the CRD had it) means the same.
        "" | "x86_64" => CpuArchitecture::X86_64,
        "aarch64" => CpuArchitecture::Aarch64,
        "arm64" => CpuArchitecture::Arm64,
        "ppc64le" => CpuArchitecture::Ppc64le,
        "s390x" => CpuArchitecture::S390x,
        other => {
            return Err(InfraEnvError::InvalidCpuArchitecture {
                config: config.to_string(),
                value: other.to_string(),
            });
        }
    })
}

/// The discovery-ignition override, only when it is a JSON object (the core merges it into the
/// discovery ignition; anything else would break the image). Unlike CAPOA, which silently drops
/// invalid JSON, a bad annotation is an error the user sees.
fn ignition_override(
    config: &OpenshiftAssistedConfig,
) -> Result<Option<serde_json::Value>, InfraEnvError> {
    let Some(raw) = config
        .annotations()
        .get(DISCOVERY_IGNITION_OVERRIDE_ANNOTATION)
        .filter(|raw| !raw.trim().is_empty())
    else {
        return Ok(None);
    };
    let invalid = |detail: String| InfraEnvError::InvalidAnnotation {
        config: config.name_any(),
        annotation: DISCOVERY_IGNITION_OVERRIDE_ANNOTATION,
        detail,
    };
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(Some(v)),
        Ok(_) => Err(invalid("not an object".to_string())),
        Err(e) => Err(invalid(e.to_string())),
    }
}

/// Kernel arguments of the discovery boot: the config's `append` operations.
///
/// CAPOA passes `kernelArguments` only to the Agent (`installerArgs`), so discovery boots
/// without them, yet some are needed to boot at all (a serial console, `rd.net.timeout.carrier`
/// for static networking, a NIC driver quirk). We pass the appends to the InfraEnv too, and
/// keep every operation in the Agent's installer arguments (see `agents/desired.rs`), so the
/// installed OS gets them. assisted-core puts the InfraEnv's arguments into its iPXE script
/// only, not into the ISO Metal3 boots, so the live ISO boots without them for now; the
/// config's `FieldsSupported` condition says so (`unsupported.rs`). `replace`/`delete` edit the
/// installed OS's default kernel command line and have no meaning for discovery, so they stay
/// install-only.
fn discovery_kernel_arguments(spec: &OpenshiftAssistedConfigSpec) -> Vec<String> {
    spec.kernel_arguments
        .iter()
        .filter(|k| matches!(k.operation, None | Some(ConfigKargOp::Append)))
        .filter(|k| !k.value.is_empty())
        .map(|k| k.value.clone())
        .collect()
}

fn project(
    config: &OpenshiftAssistedConfig,
    placeholder_pull_secret: &str,
) -> Result<Projection, InfraEnvError> {
    let spec = &config.spec;
    let mut ntp_sources = spec.additional_ntp_sources.clone();
    // A set of servers: order and repeats carry no meaning, so they are no conflict.
    ntp_sources.sort();
    ntp_sources.dedup();
    Ok(Projection {
        pull_secret: spec
            .pull_secret_ref
            .as_ref()
            .map(|r| r.name.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| placeholder_pull_secret.to_string()),
        ssh_authorized_key: non_empty(&spec.ssh_authorized_key),
        proxy: spec.proxy.clone().filter(|p| *p != Proxy::default()),
        ntp_sources,
        trust_bundle: non_empty(&spec.additional_trust_bundle),
        nmstate_selector: spec.nm_state_config_label_selector.clone(),
        cpu_architecture: cpu_architecture(&config.name_any(), spec.cpu_architecture.as_deref())?,
        os_image_version: non_empty(&spec.os_image_version),
        discovery_kernel_arguments: discovery_kernel_arguments(spec),
        ignition_override: ignition_override(config)?,
        shard: config.labels().get(WATCH_FILTER_LABEL).cloned(),
    })
}

/// The configs grouped by the value `field` has in each; None when they all agree.
fn conflict<T: PartialEq>(
    field: &'static str,
    projections: &[(String, Projection)],
    get: impl Fn(&Projection) -> &T,
) -> Option<FieldConflict> {
    let mut groups: Vec<(&T, Vec<String>)> = Vec::new();
    for (name, p) in projections {
        let value = get(p);
        match groups.iter_mut().find(|(v, _)| *v == value) {
            Some((_, names)) => names.push(name.clone()),
            None => groups.push((value, vec![name.clone()])),
        }
    }
    (groups.len() > 1).then(|| FieldConflict {
        field,
        groups: groups.into_iter().map(|(_, names)| names).collect(),
    })
}

/// The InfraEnv for `inputs.template`, or why there can be none.
///
/// Per-machine settings (`nodeRegistration`, pre/post bootstrap commands, `replace`/`delete`
/// kernel arguments, the install-time `ignition-override` annotation) do not reach the
/// InfraEnv, so configs may differ on them freely.
pub fn desired_infraenv(inputs: &InfraEnvInputs<'_>) -> Result<InfraEnv, InfraEnvError> {
    let template = inputs.template;
    // Sorted by name: the error lists and the chosen values do not depend on list order.
    let mut configs: Vec<&OpenshiftAssistedConfig> = inputs.configs.to_vec();
    configs.sort_by_key(|c| c.name_any());
    configs.dedup_by_key(|c| c.name_any());
    let mut projections = Vec::with_capacity(configs.len());
    for config in &configs {
        projections.push((
            config.name_any(),
            project(config, inputs.placeholder_pull_secret)?,
        ));
    }
    let Some((_, first)) = projections.first() else {
        return Err(InfraEnvError::NoConfigs {
            template: template.name.clone(),
        });
    };

    let fields = conflicts(&projections);
    if !fields.is_empty() {
        return Err(InfraEnvError::Conflict {
            template: template.name.clone(),
            fields,
        });
    }

    let mut labels = BTreeMap::from([
        (
            CLUSTER_NAME_LABEL.to_string(),
            readable_label_value(inputs.cluster_name),
        ),
        (
            TEMPLATE_LABEL.to_string(),
            readable_label_value(&template.name),
        ),
    ]);
    // The shard goes with the InfraEnv and, as an agent label, with every Agent: the shard's
    // managers and core watch only their own.
    if let Some(shard) = &first.shard {
        labels.insert(WATCH_FILTER_LABEL.to_string(), shard.clone());
    }
    let spec = infraenv_spec(inputs, first, labels.clone());
    Ok(InfraEnv {
        metadata: ObjectMeta {
            name: Some(infraenv_name(&template.name)),
            namespace: Some(template.namespace.clone()),
            labels: Some(labels),
            // Not a controller reference: the template does not reconcile it; the reference
            // only makes the InfraEnv (and through it its Agents) go with the template, and
            // chains it to the Cluster for `clusterctl move`.
            owner_references: Some(vec![OwnerReference {
                api_version: METAL3_MACHINE_TEMPLATE_API_VERSION.to_string(),
                kind: METAL3_MACHINE_TEMPLATE_KIND.to_string(),
                name: template.name.clone(),
                uid: inputs.template_uid.to_string(),
                controller: None,
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    })
}

/// The fields the template's configs disagree on (the InfraEnv carries one value of each).
fn conflicts(projections: &[(String, Projection)]) -> Vec<FieldConflict> {
    [
        conflict("pullSecretRef", projections, |p| &p.pull_secret),
        conflict("sshAuthorizedKey", projections, |p| &p.ssh_authorized_key),
        conflict("proxy", projections, |p| &p.proxy),
        conflict("additionalNTPSources", projections, |p| &p.ntp_sources),
        conflict("additionalTrustBundle", projections, |p| &p.trust_bundle),
        conflict("nmStateConfigLabelSelector", projections, |p| {
            &p.nmstate_selector
        }),
        conflict("cpuArchitecture", projections, |p| &p.cpu_architecture),
        conflict("osImageVersion", projections, |p| &p.os_image_version),
        conflict("kernelArguments", projections, |p| {
            &p.discovery_kernel_arguments
        }),
        conflict(DISCOVERY_IGNITION_OVERRIDE_ANNOTATION, projections, |p| {
            &p.ignition_override
        }),
        conflict(WATCH_FILTER_LABEL, projections, |p| &p.shard),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The InfraEnv's spec from the configs' shared values.
fn infraenv_spec(
    inputs: &InfraEnvInputs<'_>,
    first: &Projection,
    labels: BTreeMap<String, String>,
) -> InfraEnvSpec {
    InfraEnvSpec {
        proxy: first.proxy.clone(),
        additional_ntp_sources: first.ntp_sources.clone(),
        ssh_authorized_key: first.ssh_authorized_key.clone(),
        pull_secret_ref: LocalObjectReference {
            name: first.pull_secret.clone(),
        },
        // Agents carry the cluster and template from registration, so the Agent controller can
        // watch its own Agents by label and ignore foreign ones without a lookup.
        agent_labels: labels,
        nm_state_config_label_selector: first.nmstate_selector.clone(),
        cluster_ref: Some(inputs.cluster_deployment.clone()),
        ignition_config_override: first.ignition_override.as_ref().map(|v| v.to_string()),
        cpu_architecture: Some(first.cpu_architecture),
        kernel_arguments: first
            .discovery_kernel_arguments
            .iter()
            .map(|value| KernelArgument {
                operation: Some(KernelArgumentOperation::Append),
                value: value.clone(),
            })
            .collect(),
        additional_trust_bundle: first.trust_bundle.clone(),
        os_image_version: first.os_image_version.clone(),
        mirror_registry_ref: inputs.mirror_registry_ref.cloned(),
        // As CAPOA: the full ISO carries the static network configuration in its ignition,
        // and Metal3 boots an ISO over virtual media, with no iPXE chain to fetch a rootfs.
        image_type: Some(ImageType::FullIso),
        ..InfraEnvSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> OpenshiftAssistedConfig {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn named(name: &str, spec: &str) -> OpenshiftAssistedConfig {
        config(&format!(
            "apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2\nkind: OpenshiftAssistedConfig\nmetadata: {{name: {name}, namespace: ns}}\nspec: {spec}\n"
        ))
    }

    fn template() -> TemplateRef {
        TemplateRef {
            namespace: "ns".into(),
            name: "workers".into(),
        }
    }

    fn cd() -> ClusterReference {
        ClusterReference {
            name: "c1".into(),
            namespace: "ns".into(),
        }
    }

    fn build(configs: &[&OpenshiftAssistedConfig]) -> Result<InfraEnv, InfraEnvError> {
        let t = template();
        let cd = cd();
        desired_infraenv(&InfraEnvInputs {
            template: &t,
            template_uid: "uid-t",
            cluster_name: "c1",
            cluster_deployment: &cd,
            configs,
            placeholder_pull_secret: "placeholder-pull-secret",
            mirror_registry_ref: None,
        })
    }

    const FULL: &str = r#"
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata:
  name: worker-0
  namespace: ns
  annotations:
    openshiftassistedconfig.cluster.x-k8s.io/discovery-ignition-override: '{"ignition": {"version": "3.1.0"}, "storage": {"files": []}}'
spec:
  pullSecretRef: {name: pull-secret}
  sshAuthorizedKey: ssh-ed25519 AAAA user@host
  proxy: {httpProxy: "http://proxy:3128", noProxy: ".lab"}
  additionalNTPSources: [ntp2.lab, ntp1.lab]
  additionalTrustBundle: "-----BEGIN CERTIFICATE-----"
  nmStateConfigLabelSelector:
    matchLabels: {cluster: c1}
  cpuArchitecture: aarch64
  osImageVersion: "4.20"
  kernelArguments:
  - {operation: append, value: console=ttyS0}
  - {operation: delete, value: quiet}
  nodeRegistration:
    name: $METADATA_NAME
  preBootstrapCommands: [echo hi]
"#;

    #[test]
    fn every_infraenv_field_comes_from_the_config() {
        let c = config(FULL);
        let ie = build(&[&c]).unwrap();
        let json = serde_json::to_value(&ie).unwrap();
        let expected = serde_json::json!({
            "apiVersion": "agent-install.openshift.io/v1beta1",
            "kind": "InfraEnv",
            "metadata": {
                "name": "workers",
                "namespace": "ns",
                "labels": {
                    "cluster.x-k8s.io/cluster-name": "c1",
                    "bootstrap.cluster.x-k8s.io/metal3-machine-template": "workers"
                },
                "ownerReferences": [{
                    "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                    "kind": "Metal3MachineTemplate",
                    "name": "workers",
                    "uid": "uid-t"
                }]
            },
            "spec": {
                "proxy": {"httpProxy": "http://proxy:3128", "noProxy": ".lab"},
                "additionalNTPSources": ["ntp1.lab", "ntp2.lab"],
                "sshAuthorizedKey": "ssh-ed25519 AAAA user@host",
                "pullSecretRef": {"name": "pull-secret"},
                "agentLabels": {
                    "cluster.x-k8s.io/cluster-name": "c1",
                    "bootstrap.cluster.x-k8s.io/metal3-machine-template": "workers"
                },
                "nmStateConfigLabelSelector": {"matchLabels": {"cluster": "c1"}},
                "clusterRef": {"name": "c1", "namespace": "ns"},
                "ignitionConfigOverride": "{\"ignition\":{\"version\":\"3.1.0\"},\"storage\":{\"files\":[]}}",
                "cpuArchitecture": "aarch64",
                "kernelArguments": [{"operation": "append", "value": "console=ttyS0"}],
                "additionalTrustBundle": "-----BEGIN CERTIFICATE-----",
                "osImageVersion": "4.20",
                "imageType": "full-iso"
            }
        });
        assert_eq!(json, expected);
    }

    fn in_shard(name: &str, shard: &str) -> OpenshiftAssistedConfig {
        config(&format!(
            "metadata: {{name: {name}, namespace: ns, labels: {{cluster.x-k8s.io/watch-filter: {shard}}}}}\nspec: {{}}"
        ))
    }

    #[test]
    fn the_shard_goes_with_the_infraenv_and_its_agents() {
        let ie = build(&[&in_shard("w0", "east"), &in_shard("w1", "east")]).unwrap();
        let shard = |labels: &BTreeMap<String, String>| labels.get(WATCH_FILTER_LABEL).cloned();
        assert_eq!(shard(ie.labels()).as_deref(), Some("east"));
        assert_eq!(shard(&ie.spec.agent_labels).as_deref(), Some("east"));
        // Unsharded configs: no label at all.
        let ie = build(&[&named("w0", "{}")]).unwrap();
        assert_eq!(shard(ie.labels()), None);
    }

    #[test]
    fn configs_of_one_template_in_two_shards_are_a_conflict() {
        let err = build(&[&in_shard("w0", "east"), &in_shard("w1", "west")]).unwrap_err();
        let InfraEnvError::Conflict { fields, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(fields[0].field, WATCH_FILTER_LABEL);
    }

    #[test]
    fn defaults_placeholder_pull_secret_and_x86() {
        let c = named("w0", "{}");
        let ie = build(&[&c]).unwrap();
        assert_eq!(ie.spec.pull_secret_ref.name, "placeholder-pull-secret");
        assert_eq!(ie.spec.cpu_architecture, Some(CpuArchitecture::X86_64));
        assert_eq!(ie.spec.ignition_config_override, None);
        assert!(ie.spec.kernel_arguments.is_empty());
        assert_eq!(ie.spec.image_type, Some(ImageType::FullIso));
    }

    #[test]
    fn per_machine_fields_are_no_conflict() {
        let a = named(
            "w0",
            "{nodeRegistration: {name: a}, preBootstrapCommands: [a], kernelArguments: [{operation: delete, value: quiet}]}",
        );
        let b = named(
            "w1",
            "{nodeRegistration: {kubeletExtraLabels: [x=y]}, postBootstrapCommands: [b], kernelArguments: [{operation: replace, value: a=b}]}",
        );
        assert!(build(&[&a, &b]).is_ok());
    }

    #[test]
    fn equal_intent_spelled_differently_is_no_conflict() {
        let a = named(
            "w0",
            "{cpuArchitecture: x86_64, additionalNTPSources: [b, a, a], sshAuthorizedKey: ''}",
        );
        let b = named("w1", "{additionalNTPSources: [a, b]}");
        let c = config(
            "metadata: {name: w2, namespace: ns, annotations: {openshiftassistedconfig.cluster.x-k8s.io/discovery-ignition-override: ''}}\nspec: {additionalNTPSources: [a, b]}",
        );
        assert!(build(&[&a, &b, &c]).is_ok());
    }

    #[test]
    fn disagreement_names_the_field_and_the_configs() {
        let a = named("w0", "{sshAuthorizedKey: k1, pullSecretRef: {name: ps}}");
        let b = named("w1", "{sshAuthorizedKey: k2, pullSecretRef: {name: ps}}");
        let c = named("w2", "{sshAuthorizedKey: k1}");
        let err = build(&[&c, &b, &a]).unwrap_err();
        let InfraEnvError::Conflict { template, fields } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(template, "workers");
        assert_eq!(
            fields,
            &vec![
                FieldConflict {
                    field: "pullSecretRef",
                    groups: vec![vec!["w0".into(), "w1".into()], vec!["w2".into()]],
                },
                FieldConflict {
                    field: "sshAuthorizedKey",
                    groups: vec![vec!["w0".into(), "w2".into()], vec!["w1".into()]],
                },
            ]
        );
        assert_eq!(err.reason(), "InfraEnvConfigConflict");
        assert_eq!(
            err.to_string(),
            "the OpenshiftAssistedConfigs of Metal3MachineTemplate workers disagree on \
             pullSecretRef ([w0, w1] vs [w2]); sshAuthorizedKey ([w0, w2] vs [w1]): one InfraEnv \
             serves them all, so give them the same value"
        );
    }

    #[test]
    fn every_infraenv_field_is_checked_for_conflicts() {
        let cases = [
            ("proxy", "{proxy: {httpProxy: 'http://p'}}"),
            ("additionalNTPSources", "{additionalNTPSources: [x]}"),
            ("additionalTrustBundle", "{additionalTrustBundle: pem}"),
            (
                "nmStateConfigLabelSelector",
                "{nmStateConfigLabelSelector: {matchLabels: {a: b}}}",
            ),
            ("cpuArchitecture", "{cpuArchitecture: s390x}"),
            ("osImageVersion", "{osImageVersion: '4.19'}"),
            (
                "kernelArguments",
                "{kernelArguments: [{operation: append, value: nomodeset}]}",
            ),
        ];
        let base = named("a", "{}");
        for (field, spec) in cases {
            let other = named("b", spec);
            match build(&[&base, &other]) {
                Err(InfraEnvError::Conflict { fields, .. }) => {
                    assert_eq!(fields.len(), 1, "{field}");
                    assert_eq!(fields[0].field, field);
                }
                other => panic!("{field}: {other:?}"),
            }
        }
        let with_override = config(
            "metadata: {name: b, namespace: ns, annotations: {openshiftassistedconfig.cluster.x-k8s.io/discovery-ignition-override: '{}'}}\nspec: {}",
        );
        let Err(InfraEnvError::Conflict { fields, .. }) = build(&[&base, &with_override]) else {
            panic!("override difference must conflict")
        };
        assert_eq!(fields[0].field, DISCOVERY_IGNITION_OVERRIDE_ANNOTATION);
    }

    #[test]
    fn invalid_discovery_override_is_an_error_naming_the_annotation() {
        for bad in ["{not json", "[1, 2]"] {
            let c = config(&format!(
                "metadata: {{name: w0, namespace: ns, annotations: {{openshiftassistedconfig.cluster.x-k8s.io/discovery-ignition-override: '{bad}'}}}}\nspec: {{}}"
            ));
            let err = build(&[&c]).unwrap_err();
            assert!(
                matches!(&err, InfraEnvError::InvalidAnnotation { config, annotation, .. }
                    if config == "w0" && *annotation == DISCOVERY_IGNITION_OVERRIDE_ANNOTATION),
                "{err:?}"
            );
            assert!(
                err.to_string()
                    .contains(DISCOVERY_IGNITION_OVERRIDE_ANNOTATION)
            );
            assert_eq!(err.reason(), "InvalidDiscoveryIgnitionOverride");
        }
    }

    #[test]
    fn unknown_cpu_architecture_is_an_error() {
        let c = named("w0", "{cpuArchitecture: sparc}");
        let err = build(&[&c]).unwrap_err();
        assert!(matches!(err, InfraEnvError::InvalidCpuArchitecture { .. }));
    }

    #[test]
    fn no_configs_is_an_error() {
        assert!(matches!(build(&[]), Err(InfraEnvError::NoConfigs { .. })));
    }

    #[test]
    fn result_does_not_depend_on_config_order() {
        let a = named("a", "{sshAuthorizedKey: k}");
        let b = named("b", "{sshAuthorizedKey: k}");
        let json = |ie: InfraEnv| serde_json::to_value(ie).unwrap();
        assert_eq!(
            json(build(&[&a, &b]).unwrap()),
            json(build(&[&b, &a]).unwrap())
        );
    }

    #[test]
    fn names_are_deterministic_label_values() {
        assert_eq!(infraenv_name("workers"), "workers");
        let long = format!("{}.example", "a".repeat(300));
        let name = infraenv_name(&long);
        assert_eq!(name, infraenv_name(&long));
        assert!(name.len() <= 63, "{name}");
        assert!(manager::names::is_label_value(&name), "{name}");
        assert_ne!(
            name,
            infraenv_name(&format!("{}.example2", "a".repeat(300)))
        );
    }
}

//! CAPOA's older API versions through the real kube-apiserver: our CRDs convert by webhook, and
//! the managers' webhook server (HTTPS, ConversionReview v1) answers on loopback, as it does
//! behind its Service in a cluster. Objects written as `controlplane.cluster.x-k8s.io/v1alpha2`
//! and `bootstrap.cluster.x-k8s.io/v1alpha1` are stored as the hubs and read back either way.

#[path = "common/webhooks.rs"]
mod webhooks;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;
use testbed::Testbed;

const NS: &str = "default";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

#[tokio::test]
async fn capoa_older_versions_are_converted_and_control_planes_validated_by_our_webhooks() {
    if testbed::skip() {
        return;
    }
    let tb = Testbed::builder()
        .our_crds()
        .start()
        .await
        .expect("testbed");
    let _webhooks = webhooks::serve(&tb).await;

    // CAPOA's v1alpha2 shape: an ObjectReference and Go durations in the machine template, a
    // v1alpha1 config spec inside.
    tb.apply_yaml(
        r#"apiVersion: controlplane.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedControlPlane
metadata: {name: multinode, namespace: default}
spec:
  distributionVersion: 4.19.0
  replicas: 3
  openshiftAssistedConfigSpec:
    pullSecretRef: {name: pull-secret}
    nodeRegistration:
      kubeletExtraLabels: ["metal3.io/uuid=$METADATA_UUID"]
  config:
    apiVIPs: [192.168.222.40]
    ingressVIPs: [192.168.222.41]
    baseDomain: lab.home
    pullSecretRef: {name: pull-secret}
  machineTemplate:
    infrastructureRef:
      apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
      kind: Metal3MachineTemplate
      name: multinode-controlplane
    nodeDrainTimeout: 1m30s
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1
kind: OpenshiftAssistedConfigTemplate
metadata: {name: multinode-workers, namespace: default}
spec:
  template:
    spec:
      pullSecretRef: {name: pull-secret}
      cpuArchitecture: x86_64
"#,
    )
    .await
    .expect("CAPOA's older versions are accepted");

    // Read as the hub the controller uses.
    let hub = Api::<OpenshiftAssistedControlPlane>::namespaced(tb.client.clone(), NS)
        .get("multinode")
        .await
        .expect("read as v1alpha3");
    let reference = hub.spec.machine_template.infrastructure_ref().unwrap();
    assert_eq!(reference.api_group, "infrastructure.cluster.x-k8s.io");
    assert_eq!(reference.kind, "Metal3MachineTemplate");
    let drain = serde_json::to_value(&hub.spec.machine_template).unwrap();
    assert_eq!(drain["deletion"]["nodeDrainTimeoutSeconds"], 90, "{drain}");
    // The defaulting webhook filled Cluster API v1beta2's shape from CAPOA's flat one.
    assert_eq!(
        drain["spec"]["infrastructureRef"], drain["infrastructureRef"],
        "{drain}"
    );
    assert_eq!(drain["spec"]["deletion"], drain["deletion"], "{drain}");
    let template =
        Api::<provider_api::bootstrap::api::OpenshiftAssistedConfigTemplate>::namespaced(
            tb.client.clone(),
            NS,
        )
        .get("multinode-workers")
        .await
        .expect("read the template as v1alpha2");
    assert_eq!(
        template.spec.template.spec.cpu_architecture.as_deref(),
        Some("x86_64")
    );

    // And back in the version it was written in, spelled as written.
    let old = Api::<DynamicObject>::namespaced_with(
        tb.client.clone(),
        NS,
        &resource(
            "controlplane.cluster.x-k8s.io",
            "v1alpha2",
            "OpenshiftAssistedControlPlane",
            "openshiftassistedcontrolplanes",
        ),
    )
    .get("multinode")
    .await
    .expect("read as v1alpha2");
    let spec = &old.data["spec"];
    assert_eq!(
        spec["machineTemplate"]["infrastructureRef"]["apiVersion"],
        "infrastructure.cluster.x-k8s.io/v1beta1"
    );
    assert_eq!(spec["machineTemplate"]["nodeDrainTimeout"], "1m30s");
    assert_eq!(spec["replicas"], 3);

    // A hub object reads in the old version too.
    tb.apply_yaml(
        r#"apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata: {name: new-style, namespace: default}
spec:
  preBootstrapCommands: ["echo hi"]
"#,
    )
    .await
    .expect("apply a hub config");
    let as_v1alpha1 = Api::<DynamicObject>::namespaced_with(
        tb.client.clone(),
        NS,
        &resource(
            "bootstrap.cluster.x-k8s.io",
            "v1alpha1",
            "OpenshiftAssistedConfig",
            "openshiftassistedconfigs",
        ),
    )
    .get("new-style")
    .await
    .expect("read a v1alpha2 config as v1alpha1");
    assert!(
        as_v1alpha1.data["spec"]
            .get("preBootstrapCommands")
            .is_none(),
        "v1alpha1 has no preBootstrapCommands: {}",
        as_v1alpha1.data["spec"]
    );

    // Bad input: a duration Go cannot parse is refused with the converter's message.
    let err = Api::<DynamicObject>::namespaced_with(
        tb.client.clone(),
        NS,
        &resource(
            "controlplane.cluster.x-k8s.io",
            "v1alpha2",
            "OpenshiftAssistedControlPlane",
            "openshiftassistedcontrolplanes",
        ),
    )
    .patch(
        "bad-duration",
        &PatchParams::apply("conversion-test"),
        &Patch::Apply(serde_json::json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha2",
            "kind": "OpenshiftAssistedControlPlane",
            "metadata": {"name": "bad-duration", "namespace": NS},
            "spec": {
                "distributionVersion": "4.19.0",
                "machineTemplate": {
                    "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate", "name": "x"},
                    "nodeDrainTimeout": "banana"
                }
            }
        })),
    )
    .await
    .expect_err("an unparseable duration is refused");
    let message = err.to_string();
    assert!(message.contains("banana"), "{message}");

    // Admission: what the assisted installer would refuse is refused when written, in either
    // version (a v1alpha2 request is converted and validated as v1alpha3).
    let err = tb
        .apply_yaml(
            r#"apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: two-masters, namespace: default}
spec:
  distributionVersion: 4.19.0
  replicas: 2
  config: {baseDomain: lab.home, apiVIPs: [not-an-ip], ingressVIPs: [192.168.222.41]}
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: x}
"#,
        )
        .await
        .expect_err("two masters and a VIP that is not an address are refused");
    let message = format!("{err:#}");
    assert!(
        message.contains("spec.replicas: 2 control-plane nodes"),
        "{message}"
    );
    assert!(message.contains("spec.config.apiVIPs[0]"), "{message}");
    let err = tb
        .apply_yaml(
            r#"apiVersion: controlplane.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedControlPlane
metadata: {name: too-old, namespace: default}
spec:
  distributionVersion: 4.12.0
  replicas: 3
  machineTemplate:
    infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: Metal3MachineTemplate, name: x}
"#,
        )
        .await
        .expect_err("a release the assisted installer does not install is refused");
    assert!(
        format!("{err:#}").contains("spec.distributionVersion"),
        "{err:#}"
    );
    // A config template whose labels or install-time ignition override would only fail once a
    // host booted is refused when written, in CAPOA's v1alpha1 too (converted, then validated).
    let err = tb
        .apply_yaml(
            r#"apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1
kind: OpenshiftAssistedConfigTemplate
metadata: {name: bad-labels, namespace: default}
spec:
  template:
    metadata:
      annotations:
        openshiftassistedconfig.cluster.x-k8s.io/ignition-override: '{"ignition": {"version": "2.2.0"}}'
    spec:
      nodeRegistration: {kubeletExtraLabels: ["rack", "zone=a b"]}
"#,
        )
        .await
        .expect_err("malformed kubeletExtraLabels and an Ignition 2 override are refused");
    let message = format!("{err:#}");
    for part in [
        "kubeletExtraLabels[0]: \"rack\" is not key=value",
        "kubeletExtraLabels[1]",
        "ignition-override",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    tb.apply_yaml(
        r#"apiVersion: bootstrap.cluster.x-k8s.io/v1alpha2
kind: OpenshiftAssistedConfig
metadata: {name: good-labels, namespace: default}
spec:
  nodeRegistration: {kubeletExtraLabels: ["metal3.io/uuid=$METADATA_UUID", "rack=r1"]}
"#,
    )
    .await
    .expect("labels with per-host variables are admitted");

    // Changing the template kind of an existing control plane is refused; its name may change.
    let hubs = Api::<OpenshiftAssistedControlPlane>::namespaced(tb.client.clone(), NS);
    let err = hubs
        .patch(
            "multinode",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"machineTemplate": {"infrastructureRef": {"kind": "OtherMachineTemplate"}}}})),
        )
        .await
        .expect_err("the infrastructure kind cannot change");
    hubs.patch(
        "multinode",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"machineTemplate": {"infrastructureRef": {"name": "multinode-controlplane-v2"}}}})),
    )
    .await
    .expect("the template name may change");
    assert!(
        format!("{err:#}").contains("the kind cannot change"),
        "{err:#}"
    );
    // The rename written in CAPOA's shape reaches Cluster API v1beta2's.
    let renamed = hubs.get("multinode").await.expect("read the renamed one");
    let template = &renamed.spec.machine_template;
    let nested = template
        .spec
        .as_ref()
        .and_then(|s| s.infrastructure_ref.as_ref());
    assert_eq!(
        nested.map(|r| r.name.as_str()),
        Some("multinode-controlplane-v2")
    );
    assert_eq!(template.infrastructure_ref.as_ref(), nested);

    // Cluster API v1beta2's shape alone (what its topology controller writes) is accepted, read
    // back with CAPOA's flat shape filled in, and reads in v1alpha2 with the reference.
    tb.apply_yaml(
        r#"apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: v1beta2-shape, namespace: default}
spec:
  distributionVersion: 4.19.0
  replicas: 3
  config: {baseDomain: lab.home, apiVIPs: [192.168.222.40], ingressVIPs: [192.168.222.41]}
  machineTemplate:
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: cp}
      deletion: {nodeDrainTimeoutSeconds: 30}
      readinessGates: [{conditionType: example.com/Ready}]
      taints: [{key: example.com/cp, effect: NoSchedule, propagation: OnInitialization}]
"#,
    )
    .await
    .expect("the v1beta2 machine template shape is accepted");
    let read = hubs.get("v1beta2-shape").await.expect("read it back");
    let template = &read.spec.machine_template;
    let spec = template.spec.clone().expect("spec kept");
    assert_eq!(
        spec.infrastructure_ref.as_ref().map(|r| r.name.as_str()),
        Some("cp")
    );
    assert_eq!(spec.readiness_gates[0].condition_type, "example.com/Ready");
    assert_eq!(spec.taints[0].propagation, "OnInitialization");
    assert_eq!(
        template.infrastructure_ref, spec.infrastructure_ref,
        "flat filled in"
    );
    assert_eq!(
        template.deletion, spec.deletion,
        "the schema's default yielded to spec"
    );
    let as_v1alpha2 = Api::<DynamicObject>::namespaced_with(
        tb.client.clone(),
        NS,
        &resource(
            "controlplane.cluster.x-k8s.io",
            "v1alpha2",
            "OpenshiftAssistedControlPlane",
            "openshiftassistedcontrolplanes",
        ),
    );
    let old = as_v1alpha2
        .get("v1beta2-shape")
        .await
        .expect("read as v1alpha2");
    let flat = &old.data["spec"]["machineTemplate"];
    assert_eq!(flat["infrastructureRef"]["name"], "cp", "{flat}");
    assert_eq!(flat["nodeDrainTimeout"], "30s", "{flat}");
    // An edit through v1alpha2 keeps the v1beta2-only fields and moves both references.
    as_v1alpha2
        .patch(
            "v1beta2-shape",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"machineTemplate": {"infrastructureRef": {"name": "cp-v2"}}}})),
        )
        .await
        .expect("rename through v1alpha2");
    let read = hubs.get("v1beta2-shape").await.expect("read it back");
    let template = &read.spec.machine_template;
    let spec = template.spec.clone().expect("spec kept");
    assert_eq!(
        spec.infrastructure_ref.as_ref().map(|r| r.name.as_str()),
        Some("cp-v2")
    );
    assert_eq!(template.infrastructure_ref, spec.infrastructure_ref);
    assert_eq!(spec.readiness_gates.len(), 1);
    assert_eq!(spec.taints.len(), 1);

    // Two shapes naming different templates are refused.
    let err = tb
        .apply_yaml(
            r#"apiVersion: controlplane.cluster.x-k8s.io/v1alpha3
kind: OpenshiftAssistedControlPlane
metadata: {name: two-templates, namespace: default}
spec:
  distributionVersion: 4.19.0
  replicas: 3
  config: {baseDomain: lab.home, apiVIPs: [192.168.222.40], ingressVIPs: [192.168.222.41]}
  machineTemplate:
    infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: a}
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: Metal3MachineTemplate, name: b}
"#,
        )
        .await
        .expect_err("two different templates are refused");
    assert!(
        format!("{err:#}").contains("differs from spec.machineTemplate.spec.infrastructureRef"),
        "{err:#}"
    );
}

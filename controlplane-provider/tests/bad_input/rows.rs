//! The bad inputs, as rows: objects a user could write, each with one mistake, and [`review`],
//! the answer of the admission function that serves a row's kind. Shared by
//! `controlplane-provider/tests/bad_input.rs` (the admission functions, and docs/bad-input.md)
//! and `tests/agent-sim/tests/bad_input.rs` (the real kube-apiserver with our webhooks), which
//! includes this file with `#[path]`.

use serde_json::{Value, json};

/// One input: what the user did, the object (and the stored one for an update).
pub struct Row {
    pub what: &'static str,
    pub object: Value,
    pub old: Option<Value>,
}

pub fn control_plane(patch: Value) -> Value {
    let mut spec = json!({
        "distributionVersion": "4.19.0",
        "replicas": 3,
        "machineTemplate": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "cp"}},
        "openshiftAssistedConfigSpec": {},
        "config": {"baseDomain": "example.com", "apiVIPs": ["192.168.1.5"], "ingressVIPs": ["192.168.1.4"]},
    });
    if let Some(patch) = patch.get("spec") {
        merge(&mut spec, patch);
    }
    let mut object = json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
        "kind": "OpenshiftAssistedControlPlane",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": spec,
    });
    if let Some(meta) = patch.get("metadata") {
        merge(&mut object["metadata"], meta);
    }
    object
}

pub fn config(patch: Value) -> Value {
    let mut object = json!({
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2",
        "kind": "OpenshiftAssistedConfigTemplate",
        "metadata": {"name": "workers", "namespace": "ns"},
        "spec": {"template": {"spec": {}}},
    });
    merge(&mut object["spec"]["template"], &patch);
    object
}

/// JSON merge patch (RFC 7386) of `patch` into `target`.
pub fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

pub fn rows() -> Vec<Row> {
    let cp = |what, patch| Row {
        what,
        object: control_plane(patch),
        old: None,
    };
    let update = |what, old, new| Row {
        what,
        object: control_plane(new),
        old: Some(control_plane(old)),
    };
    let tpl = |what, patch| Row {
        what,
        object: config(patch),
        old: None,
    };
    let override_annotation = provider_api::controlplane::api::INSTALL_CONFIG_OVERRIDE_ANNOTATION;
    let ignition_override = provider_api::bootstrap::api::IGNITION_OVERRIDE_ANNOTATION;
    vec![
        cp(
            "an unparsable release",
            json!({"spec": {"distributionVersion": "latest"}}),
        ),
        cp(
            "a release the assisted installer does not install",
            json!({"spec": {"distributionVersion": "4.12.0"}}),
        ),
        cp(
            "an OpenShift version where the Kubernetes version goes",
            json!({"spec": {"version": "4.19.0"}}),
        ),
        cp("two control-plane nodes", json!({"spec": {"replicas": 2}})),
        cp(
            "five control-plane nodes before 4.18",
            json!({"spec": {"distributionVersion": "4.17.3", "replicas": 5}}),
        ),
        cp(
            "a VIP that is not an address",
            json!({"spec": {"config": {"apiVIPs": ["api.example.com"]}}}),
        ),
        cp(
            "the same VIP for API and ingress",
            json!({"spec": {"config": {"ingressVIPs": ["192.168.1.5"]}}}),
        ),
        cp(
            "an IPv4 API VIP with an IPv6 ingress VIP",
            json!({"spec": {"config": {"ingressVIPs": ["fd00::4"]}}}),
        ),
        cp(
            "an API VIP without an ingress VIP",
            json!({"spec": {"config": {"ingressVIPs": null}}}),
        ),
        cp(
            "VIPs on a single-node cluster",
            json!({"spec": {"replicas": 1}}),
        ),
        cp(
            "a base domain that is not a DNS subdomain",
            json!({"spec": {"config": {"baseDomain": "bad_domain!.example"}}}),
        ),
        cp(
            "a cluster name that is not a DNS label",
            json!({"spec": {"config": {"clusterName": "Bad_Name!"}}}),
        ),
        cp(
            "an SSH key that is not an OpenSSH public key",
            json!({"spec": {"config": {"sshAuthorizedKey": "not a key"}}}),
        ),
        cp(
            "a cluster proxy that is not a URL",
            json!({"spec": {"config": {"proxy": {"httpProxy": "not a url"}}}}),
        ),
        cp(
            "an https proxy of another scheme",
            json!({"spec": {"config": {"proxy": {"httpsProxy": "ftp://proxy.example.com"}}}}),
        ),
        cp(
            "an install-config override of the pull secret",
            json!({"metadata": {"annotations": {override_annotation: "{\"pullSecret\": \"{}\"}"}}}),
        ),
        cp(
            "an install-config override of another platform",
            json!({"metadata": {"annotations": {override_annotation: "{\"platform\": {\"aws\": {}}}"}}}),
        ),
        cp(
            "a control-plane node label that is not key=value",
            json!({"spec": {"openshiftAssistedConfigSpec": {"nodeRegistration": {"kubeletExtraLabels": ["infra"]}}}}),
        ),
        cp(
            "no infrastructure template in either machine-template shape",
            json!({"spec": {"machineTemplate": {"infrastructureRef": null}}}),
        ),
        cp(
            "different infrastructure templates in the two machine-template shapes",
            json!({"spec": {"machineTemplate": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "cp-other"}}}}}),
        ),
        cp(
            "different deletion timeouts in the two machine-template shapes",
            json!({"spec": {"machineTemplate": {"deletion": {"nodeDrainTimeoutSeconds": 60}, "spec": {"deletion": {"nodeDrainTimeoutSeconds": 30}}}}}),
        ),
        update(
            "a downgrade",
            json!({"spec": {"distributionVersion": "4.19.2"}}),
            json!({"spec": {"distributionVersion": "4.18.0"}}),
        ),
        update(
            "a new base domain for an existing cluster",
            json!({}),
            json!({"spec": {"config": {"baseDomain": "other.example.com"}}}),
        ),
        update(
            "a new cluster name for an existing cluster",
            json!({}),
            json!({"spec": {"config": {"clusterName": "renamed"}}}),
        ),
        update(
            "another kind of machine template",
            json!({}),
            json!({"spec": {"machineTemplate": {"infrastructureRef": {"kind": "OtherMachineTemplate"}}}}),
        ),
        update(
            "another kind of machine template, in Cluster API v1beta2's shape",
            json!({}),
            json!({"spec": {"machineTemplate": {"infrastructureRef": null, "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OtherMachineTemplate", "name": "cp"}}}}}),
        ),
        tpl(
            "a node label that is not key=value",
            json!({"spec": {"nodeRegistration": {"kubeletExtraLabels": ["rack"]}}}),
        ),
        tpl(
            "a node label whose key is not a label key",
            json!({"spec": {"nodeRegistration": {"kubeletExtraLabels": ["Bad Key=v"]}}}),
        ),
        tpl(
            "a node label whose value is not a label value",
            json!({"spec": {"nodeRegistration": {"kubeletExtraLabels": ["zone=a b"]}}}),
        ),
        tpl(
            "an install-time ignition override that is not JSON",
            json!({"metadata": {"annotations": {ignition_override: "not json"}}}),
        ),
        tpl(
            "an install-time ignition override of Ignition 2",
            json!({"metadata": {"annotations": {ignition_override: "{\"ignition\": {\"version\": \"2.2.0\"}}"}}}),
        ),
    ]
}

/// The answer of the webhook that serves `row`'s kind.
pub fn review(row: &Row) -> Result<Vec<String>, manager::webhook::Refusal> {
    let request = json!({"uid": "u", "object": row.object, "oldObject": row.old.clone().unwrap_or(Value::Null)});
    match row.object["kind"].as_str() {
        Some("OpenshiftAssistedControlPlane") => controlplane_provider::admission::review(&request),
        _ => provider_api::bootstrap::validation::review(&request),
    }
}

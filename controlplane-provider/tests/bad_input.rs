//! Bad input stopped at the door, as a table: every row is an object a user could write, run
//! through the very admission functions the two webhooks serve; each must be refused, and the
//! message it gets is what `docs/bad-input.md` shows. The file is generated from these rows
//! (`make generate`, or `CAPOA_UPDATE_DOCS=1 cargo test -p controlplane-provider --test
//! bad_input`), and this test fails when it no longer matches.

use serde_json::{Value, json};

/// One input: what the user did, the object (and the stored one for an update).
struct Row {
    what: &'static str,
    object: Value,
    old: Option<Value>,
}

const DOC: &str = "docs/bad-input.md";

fn control_plane(patch: Value) -> Value {
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

fn config(patch: Value) -> Value {
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
fn merge(target: &mut Value, patch: &Value) {
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

fn rows() -> Vec<Row> {
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
    let override_annotation = controlplane_provider::api::INSTALL_CONFIG_OVERRIDE_ANNOTATION;
    let ignition_override = bootstrap_provider::api::IGNITION_OVERRIDE_ANNOTATION;
    vec![
        cp(
            "an unparsable release",
            json!({"spec": {"distributionVersion": "latest"}}),
        ),
        cp(
            "a release the assisted installer does not install",
            json!({"spec": {"distributionVersion": "4.12.0"}}),
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
fn review(row: &Row) -> Result<Vec<String>, String> {
    let request = json!({"uid": "u", "object": row.object, "oldObject": row.old.clone().unwrap_or(Value::Null)});
    match row.object["kind"].as_str() {
        Some("OpenshiftAssistedControlPlane") => controlplane_provider::admission::review(&request),
        _ => bootstrap_provider::admission::review(&request),
    }
}

fn table() -> String {
    let mut out = String::from(
        "# Bad input: what each gets at admission\n\n\
         Generated from `controlplane-provider/tests/bad_input.rs` (`make generate`): each row is\n\
         an object written with that one mistake, run through the admission function the\n\
         control-plane or bootstrap webhook serves; the message is exactly what `kubectl apply`\n\
         shows (after `admission webhook \"…\" denied the request:`). Nothing is stored: the\n\
         object is refused as a whole. What only the controllers can know (a release that does\n\
         not exist, a pull secret of the wrong shape, a discovery image that cannot be built) is a\n\
         condition instead: see docs/controlplane-provider.md, docs/bootstrap-provider.md and\n\
         docs/assisted-core.md (\"Bad input\").\n\n\
         | Input | Kind | Refused with |\n| --- | --- | --- |\n",
    );
    for row in rows() {
        let kind = row.object["kind"].as_str().unwrap_or_default();
        let kind = if row.old.is_some() {
            format!("{kind} (update)")
        } else {
            kind.to_string()
        };
        let message = review(&row).expect_err(row.what);
        out.push_str(&format!(
            "| {} | {kind} | {} |\n",
            row.what,
            message.replace('|', "\\|")
        ));
    }
    out
}

#[test]
fn every_bad_input_is_refused_and_the_doc_says_how() {
    let generated = table();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(DOC);
    if std::env::var_os("CAPOA_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).expect("write the doc");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{DOC} is out of date: run `make generate` (CAPOA_UPDATE_DOCS=1 cargo test -p \
         controlplane-provider --test bad_input)"
    );
}

#[test]
fn the_rows_pass_once_their_mistake_is_taken_out() {
    // The base objects are fine: each row is refused for its own mistake only.
    for object in [control_plane(json!({})), config(json!({}))] {
        let row = Row {
            what: "the base object",
            object,
            old: None,
        };
        assert_eq!(review(&row), Ok(Vec::new()));
    }
}

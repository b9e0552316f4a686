//! Helpers of the API conformance tests: every CRD of the project, example manifests, and a
//! check that typed round-trips keep every field a user wrote.

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every CRD the two providers ship (the control plane's list includes the assisted CRDs).
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    let mut crds = bootstrap_provider::manifests::crds();
    crds.extend(controlplane_provider::manifests::crds());
    crds
}

/// The documents of a multi-document YAML file under `docs/examples/`.
pub fn example(name: &str) -> Vec<Value> {
    let path = repo_root().join("docs/examples").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_documents(&text)
}

pub fn parse_documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|document| <Value as serde::Deserialize>::deserialize(document).expect("valid YAML"))
        .filter(|value| !value.is_null())
        .collect()
}

/// True when the object is of a kind one of our CRDs defines.
pub fn is_ours(object: &Value) -> bool {
    let kind = object["kind"].as_str().unwrap_or_default();
    let group = object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .rsplit_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default();
    all_crds()
        .iter()
        .any(|crd| crd.spec.group == group && crd.spec.names.kind == kind)
}

/// Deserializes into `T` and serializes back; returns the result.
pub fn round_trip<T: DeserializeOwned + serde::Serialize>(object: &Value) -> Value {
    let typed: T = serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("does not deserialize: {e}\n{object:#}"));
    serde_json::to_value(&typed).expect("serializes")
}

/// Paths of `input` that `output` lacks or changes (empty when every written field survived).
pub fn lost_fields(input: &Value, output: &Value, path: &str) -> Vec<String> {
    match (input, output) {
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            // Upstream omits `false` (Go `omitempty`), so an explicit false may disappear.
            .filter(|(_, value)| !value.is_null() && **value != Value::Bool(false))
            .flat_map(|(key, value)| match b.get(key) {
                Some(other) => lost_fields(value, other, &format!("{path}.{key}")),
                None => vec![format!("{path}.{key}")],
            })
            .collect(),
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .flat_map(|(i, (x, y))| lost_fields(x, y, &format!("{path}[{i}]")))
            .collect(),
        (a, b) if a == b => vec![],
        _ => vec![format!("{path} ({input} became {output})")],
    }
}

/// The `openAPIV3Schema` of a kind's only version.
pub fn schema_of(kind: &str) -> Value {
    let crd = all_crds()
        .into_iter()
        .find(|crd| crd.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"));
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("schema");
    serde_json::to_value(schema).expect("schema serializes")
}

/// Whether a dotted field path (`spec.config.apiVIPs`, `[]` for list items) exists in a schema.
pub fn schema_has_path(schema: &Value, path: &str) -> bool {
    let mut node = schema;
    for segment in path.split('.') {
        let (name, is_list) = match segment.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (segment, false),
        };
        match node["properties"].get(name) {
            Some(next) => node = next,
            None => return false,
        }
        if is_list {
            node = &node["items"];
        }
    }
    true
}

//! The `spec` fields a CRD lets a user set, as paths (`spec.config.apiVIPs[]`), walked from its
//! generated OpenAPI schema: what each crate's completeness test holds against its table of
//! fields acted on and fields reported as not supported yet (DESIGN §2: nothing set is ignored
//! in silence).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// Every leaf path under `spec` of the CRD's first (hub) version: objects recurse into their
/// properties, lists into their items (`name[]`); a free-form object (preserve-unknown-fields)
/// is a leaf of its own too.
pub fn spec_leaves(crd: &CustomResourceDefinition) -> Vec<String> {
    let schema = crd
        .spec
        .versions
        .first()
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_default();
    let mut out = Vec::new();
    leaves(&schema["properties"]["spec"], "spec", &mut out);
    out
}

fn leaves(node: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(props) = node.get("properties").and_then(Value::as_object)
        && !props.is_empty()
    {
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            out.push(path.to_string());
        }
        for (name, child) in props {
            leaves(child, &format!("{path}.{name}"), out);
        }
        return;
    }
    if let Some(items) = node.get("items")
        && items.get("properties").is_some()
    {
        leaves(items, &format!("{path}[]"), out);
        return;
    }
    out.push(path.to_string());
}

/// Whether a table entry for `prefix` covers the leaf path `leaf` (itself, or a field or list
/// item below it).
pub fn covers(prefix: &str, leaf: &str) -> bool {
    leaf == prefix
        || leaf
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_nested_list_and_free_form_fields() {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "things.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "Thing", "plural": "things"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                    "openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "name": {"type": "string"},
                            "vips": {"type": "array", "items": {"type": "string"}},
                            "pools": {"type": "array", "items": {"type": "object", "properties": {
                                "size": {"type": "integer"}}}},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                "properties": {"known": {"type": "string"}}},
                        }},
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                    }}
                }}],
            },
        }))
        .unwrap();
        let mut got = spec_leaves(&crd);
        got.sort();
        assert_eq!(
            got,
            [
                "spec.extra",
                "spec.extra.known",
                "spec.name",
                "spec.pools[].size",
                "spec.vips"
            ]
        );
        assert!(covers("spec.pools", "spec.pools[].size"));
        assert!(covers("spec.name", "spec.name"));
        assert!(!covers("spec.name", "spec.names"));
    }
}

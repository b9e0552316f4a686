//! Fields a user can set that a controller does not act on yet (DESIGN §2: nothing set is
//! ignored in silence): the [`Row`] each controller's table of them is made of, and the `spec`
//! paths a CRD lets a user set (`spec.config.apiVIPs[]`), walked from its generated OpenAPI
//! schema, which each crate's completeness test holds against its tables ([`Coverage`] entries
//! in the providers').

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// One spec field a controller does not act on (or not for some values or places).
pub struct Row<S> {
    /// The field path as users write it, e.g. `spec.mirrorRegistryRef`.
    pub field: &'static str,
    /// Whether the field is set to something that is ignored.
    pub is_set: fn(&S) -> bool,
    /// What the user should know beyond "not supported yet"; empty when nothing.
    pub note: &'static str,
}

impl<S> Row<S> {
    /// `<field> is not supported yet[: note]`.
    pub fn message(&self) -> String {
        self.message_for(self.field)
    }

    /// [`Row::message`] with the field's leading `spec.` replaced by `parent`: how an object
    /// that embeds this spec names the field (`spec.openshiftAssistedConfigSpec.` on a control
    /// plane).
    pub fn message_under(&self, parent: &str) -> String {
        let field = format!(
            "{parent}{}",
            self.field.strip_prefix("spec.").unwrap_or(self.field)
        );
        self.message_for(&field)
    }

    fn message_for(&self, field: &str) -> String {
        if self.note.is_empty() {
            format!("{field} is not supported yet")
        } else {
            format!("{field} is not supported yet: {}", self.note)
        }
    }
}

/// The rows whose field is set in `spec`, in row order.
pub fn set_rows<'a, S>(rows: &'a [Row<S>], spec: &'a S) -> impl Iterator<Item = &'a Row<S>> {
    rows.iter().filter(move |row| (row.is_set)(spec))
}

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

/// What a provider's controller does with a field; one entry per field path prefix in the
/// providers' completeness tables (the longest prefix covering a schema leaf decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Acted on; where, in short.
    Acted(&'static str),
    /// Acted on, except for the values or places its row reports.
    Partly(&'static str),
    /// Not acted on; its row reports it.
    Unsupported,
    /// Copied into an assisted CR whose core conditions (SpecSynced, FieldsSupported) are
    /// mirrored onto ours; where, in short.
    Forwarded(&'static str),
}

impl Coverage {
    /// Whether the field needs a row.
    pub fn needs_row(self) -> bool {
        matches!(self, Coverage::Partly(_) | Coverage::Unsupported)
    }
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
        let rows = [
            Row::<u32> {
                field: "spec.a",
                is_set: |v| *v > 1,
                note: "",
            },
            Row::<u32> {
                field: "spec.b",
                is_set: |v| *v > 2,
                note: "why",
            },
        ];
        let set: Vec<String> = set_rows(&rows, &3).map(Row::message).collect();
        assert_eq!(
            set,
            [
                "spec.a is not supported yet",
                "spec.b is not supported yet: why"
            ]
        );
        assert_eq!(
            rows[1].message_under("spec.embedded."),
            "spec.embedded.b is not supported yet: why"
        );
        assert_eq!(set_rows(&rows, &1).count(), 0);
        assert!(covers("spec.name", "spec.name"));
        assert!(!covers("spec.name", "spec.names"));
    }
}

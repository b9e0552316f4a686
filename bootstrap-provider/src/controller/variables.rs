//! The `$METADATA_*` variables of a host's Metal3 config drive, and the resolution of config
//! values that refer to them (`nodeRegistration` in the desired Agent, the user-data scripts).
//! Pure: no client, no clock.

use std::collections::BTreeMap;

use external_types::metal3_io::BareMetalHost;
use kube::ResourceExt;

/// The `METADATA_*` variables a host would read from its Metal3 config drive: baremetal-operator
/// writes `uuid`, `metal3-namespace`, `metal3-name`, `local-hostname`, `local_hostname` and
/// `name` into `meta_data.json`, then the rendered Metal3Data keys (`extra`, which win), and
/// CAPOA's `configdrive_metadata` script exports each key as `METADATA_<KEY>` with the key
/// upper-cased and `-` turned into `_`.
pub fn config_drive_variables(
    host: &BareMetalHost,
    extra: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let name = host.name_any();
    let mut meta: BTreeMap<String, String> = BTreeMap::from([
        ("uuid".into(), host.uid().unwrap_or_default()),
        (
            "metal3-namespace".into(),
            host.namespace().unwrap_or_default(),
        ),
        ("metal3-name".into(), name.clone()),
        ("local-hostname".into(), name.clone()),
        ("local_hostname".into(), name.clone()),
        ("name".into(), name),
    ]);
    meta.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    meta.into_iter()
        .map(|(k, v)| {
            (
                format!("METADATA_{}", k.to_uppercase().replace('-', "_")),
                v,
            )
        })
        .collect()
}

/// The keys of a BareMetalHost's `metaData` Secret (key `metaData`, a YAML map: CAPM3 renders it
/// from the Metal3DataTemplate), which baremetal-operator writes into the config drive's
/// `meta_data.json` over its own keys. Scalars become their text, as the host's config-drive
/// script prints them; nested values are left out, as it leaves them out. Not a YAML map: none.
pub fn metadata_secret_keys(yaml: &str) -> BTreeMap<String, String> {
    let Ok(serde_yaml::Value::Mapping(map)) = serde_yaml::from_str::<serde_yaml::Value>(yaml)
    else {
        return BTreeMap::new();
    };
    let text = |v: &serde_yaml::Value| match v {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    map.iter()
        .filter_map(|(k, v)| Some((text(k)?, text(v)?)))
        .collect()
}

/// Why a config value could not be resolved against the host's config drive.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "{field} refers to ${variable}, which the config drive of BareMetalHost {host} does not define"
    )]
    UnknownVariable {
        field: &'static str,
        variable: String,
        host: String,
    },
    #[error("{field} has an unterminated or empty ${{...}} reference: {text:?}")]
    Malformed { field: &'static str, text: String },
}

/// A piece of a config value: text as written, or a `$NAME` / `${NAME}` reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// Splits `text` at its `$NAME` and `${NAME}` references (NAME = `[A-Za-z_][A-Za-z0-9_]*`), as
/// the host's shell reads them; a `$` not followed by a name is text, as the shell keeps it.
pub fn variable_segments<'a>(
    field: &'static str,
    text: &'a str,
) -> Result<Vec<Segment<'a>>, ResolveError> {
    let malformed = || ResolveError::Malformed {
        field,
        text: text.to_string(),
    };
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_rest = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        if pos > 0 {
            out.push(Segment::Text(&rest[..pos]));
        }
        let after = &rest[pos + 1..];
        if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or_else(malformed)?;
            let name = &braced[..end];
            if name.is_empty() || !name.starts_with(is_start) || !name.chars().all(is_rest) {
                return Err(malformed());
            }
            out.push(Segment::Variable(name));
            rest = &braced[end + 1..];
        } else if after.starts_with(is_start) {
            let end = after.find(|c: char| !is_rest(c)).unwrap_or(after.len());
            out.push(Segment::Variable(&after[..end]));
            rest = &after[end..];
        } else {
            out.push(Segment::Text("$"));
            rest = after;
        }
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest));
    }
    Ok(out)
}

/// Expands `$NAME` and `${NAME}` (see [`variable_segments`]) from `vars`, as the host's shell
/// would after reading its config drive.
pub fn resolve_variables(
    field: &'static str,
    text: &str,
    vars: &BTreeMap<String, String>,
    host: &str,
) -> Result<String, ResolveError> {
    let mut out = String::with_capacity(text.len());
    for segment in variable_segments(field, text)? {
        match segment {
            Segment::Text(t) => out.push_str(t),
            Segment::Variable(name) => {
                let value = vars
                    .get(name)
                    .ok_or_else(|| ResolveError::UnknownVariable {
                        field,
                        variable: name.to_string(),
                        host: host.to_string(),
                    })?;
                out.push_str(value);
            }
        }
    }
    Ok(out)
}

/// One pair of surrounding quotes, as the shell would remove them (CAPOA's OKD example writes
/// `metal3.io/uuid="${METADATA_UUID}"`).
pub(crate) fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::test_fixtures::host;
    #[test]
    fn config_drive_variables_as_the_host_sees_them() {
        let extra = BTreeMap::from([("rack-id".to_string(), "r7".to_string())]);
        let vars = config_drive_variables(&host(""), &extra);
        assert_eq!(vars["METADATA_NAME"], "host-0");
        assert_eq!(vars["METADATA_LOCAL_HOSTNAME"], "host-0");
        assert_eq!(
            vars["METADATA_UUID"],
            "0b1c2d3e-aaaa-bbbb-cccc-000000000000"
        );
        assert_eq!(vars["METADATA_METAL3_NAMESPACE"], "ns");
        assert_eq!(vars["METADATA_METAL3_NAME"], "host-0");
        assert_eq!(vars["METADATA_RACK_ID"], "r7");
    }

    #[test]
    fn metal3data_keys_are_read_as_the_config_drive_carries_them() {
        let keys = metadata_secret_keys(
            "rack-id: r7\nindex: 3\nenabled: true\nnested: {a: b}\nlist: [1]\nname: custom\n",
        );
        assert_eq!(
            keys,
            BTreeMap::from([
                ("enabled".to_string(), "true".to_string()),
                ("index".to_string(), "3".to_string()),
                ("name".to_string(), "custom".to_string()),
                ("rack-id".to_string(), "r7".to_string()),
            ])
        );
        // They win over baremetal-operator's own keys, as in the config drive.
        let vars = config_drive_variables(&host(""), &keys);
        assert_eq!(vars["METADATA_NAME"], "custom");
        assert_eq!(vars["METADATA_RACK_ID"], "r7");
        assert!(metadata_secret_keys("- not\n- a map\n").is_empty());
        assert!(metadata_secret_keys(": : :").is_empty());
    }

    #[test]
    fn resolves_both_reference_forms() {
        let vars = config_drive_variables(&host(""), &BTreeMap::new());
        let r = |t: &str| resolve_variables("f", t, &vars, "ns/host-0");
        assert_eq!(r("$METADATA_NAME").unwrap(), "host-0");
        assert_eq!(r("${METADATA_NAME}").unwrap(), "host-0");
        assert_eq!(r("node-${METADATA_NAME}.lab").unwrap(), "node-host-0.lab");
        assert_eq!(r("$METADATA_NAME-x").unwrap(), "host-0-x");
        assert_eq!(r("static").unwrap(), "static");
        assert_eq!(r("a$").unwrap(), "a$");
        assert_eq!(r("$1").unwrap(), "$1");
        assert_eq!(
            r("$METADATA_RACK").unwrap_err(),
            ResolveError::UnknownVariable {
                field: "f",
                variable: "METADATA_RACK".into(),
                host: "ns/host-0".into()
            }
        );
        assert!(
            r("${METADATA_NAME")
                .unwrap_err()
                .to_string()
                .contains("unterminated")
        );
        assert!(matches!(r("${}"), Err(ResolveError::Malformed { .. })));
        assert!(matches!(r("${a-b}"), Err(ResolveError::Malformed { .. })));
    }
}

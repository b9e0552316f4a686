//! Ignition helpers (pure): pointer configs, per-host files and config merging.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::error::InstallError;
use crate::domain::HostRole;

/// Ignition spec version of every config we write (3.2 is read by all supported RHCOS).
pub const IGNITION_VERSION: &str = "3.2.0";

/// Machine Config Server ports: TLS on api-int, plain HTTP on api (day-2 without a CA).
const MCS_TLS_PORT: u16 = 22623;
const MCS_INSECURE_PORT: u16 = 22624;

/// `data:` URL carrying `bytes` (base64, so any content is safe).
pub fn data_url(bytes: &[u8]) -> String {
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        STANDARD.encode(bytes)
    )
}

/// An Ignition file entry with the given mode (decimal, as Ignition wants it).
pub(crate) fn file_entry(path: &str, contents: &[u8], mode: u32) -> Value {
    json!({
        "path": path,
        "mode": mode,
        "overwrite": true,
        "contents": { "source": data_url(contents) },
    })
}

/// A pointer config: merge `source`, optionally trusting `ca_pem` and sending `headers`.
pub fn pointer_ignition(source: &str, ca_pem: Option<&str>, headers: &[(&str, String)]) -> Value {
    let mut merge = Map::new();
    merge.insert("source".into(), json!(source));
    if !headers.is_empty() {
        let list: Vec<Value> = headers
            .iter()
            .map(|(n, v)| json!({ "name": n, "value": v }))
            .collect();
        merge.insert("httpHeaders".into(), Value::Array(list));
    }
    let mut ignition = Map::new();
    ignition.insert("version".into(), json!(IGNITION_VERSION));
    ignition.insert("config".into(), json!({ "merge": [merge] }));
    if let Some(ca) = ca_pem.filter(|c| !c.trim().is_empty()) {
        ignition.insert(
            "security".into(),
            json!({ "tls": { "certificateAuthorities": [{ "source": data_url(ca.as_bytes()) }] } }),
        );
    }
    json!({ "ignition": ignition })
}

/// File name of a host's ignition in the file store: `<role>-<host id>.ign`.
pub fn host_ignition_file_name(role: HostRole, host_id: &str) -> String {
    let role = match role {
        HostRole::Bootstrap => HostRole::Master,
        r => r,
    };
    format!("{}-{host_id}.ign", role.as_str())
}

/// Per-host ignition: `base` (master.ign / worker.ign / arbiter.ign) plus `/etc/hostname`,
/// then the host's ignition override merged on top.
pub fn host_ignition(
    base: &[u8],
    hostname: &str,
    role: HostRole,
    overrides: Option<&str>,
) -> Result<Vec<u8>, InstallError> {
    if role == HostRole::AutoAssign {
        return Err(InstallError::InvalidInput(format!(
            "host {hostname:?} has no role assigned"
        )));
    }
    if hostname.trim().is_empty() {
        return Err(InstallError::InvalidInput(format!(
            "{} host has an empty hostname",
            role.as_str()
        )));
    }
    let mut doc: Value =
        serde_json::from_slice(base).map_err(|e| InstallError::json("base ignition", e))?;
    check_ignition(&doc, "base ignition")?;
    set_file(
        &mut doc,
        file_entry("/etc/hostname", format!("{hostname}\n").as_bytes(), 0o644),
    );
    if let Some(o) = overrides.filter(|o| !o.trim().is_empty()) {
        let what = format!("ignition override of host {hostname:?}");
        merge_ignition(&mut doc, &parse_ignition_override(o, &what)?);
    }
    Ok(doc.to_string().into_bytes())
}

/// A day-2 host's pointer ignition with its override merged on top, as a day-1 host's.
pub fn with_ignition_override(
    ignition: &[u8],
    overrides: &str,
    hostname: &str,
) -> Result<Vec<u8>, InstallError> {
    let mut doc: Value =
        serde_json::from_slice(ignition).map_err(|e| InstallError::json("ignition", e))?;
    let what = format!("ignition override of host {hostname:?}");
    merge_ignition(&mut doc, &parse_ignition_override(overrides, &what)?);
    Ok(doc.to_string().into_bytes())
}

/// A host's ignition override (the Agent's `ignitionConfigOverrides`): a JSON object whose
/// `ignition.version` is 3.x, as the files it is merged into. `what` names it in errors.
pub fn parse_ignition_override(text: &str, what: &str) -> Result<Value, InstallError> {
    let overlay: Value = serde_json::from_str(text).map_err(|e| InstallError::json(what, e))?;
    check_ignition(&overlay, what)?;
    Ok(overlay)
}

/// Day-2 pointer ignition (see module docs of the install flow): insecure MCS port on `api`
/// without a CA, TLS on `api-int` with one; a custom URL replaces scheme, host and port.
pub fn day2_pointer_ignition(
    cluster_name: &str,
    base_domain: &str,
    pool: &str,
    ca_pem: Option<&str>,
    custom_url: Option<&str>,
    token: Option<&str>,
    hostname: &str,
) -> Vec<u8> {
    let ca = ca_pem.filter(|c| !c.trim().is_empty());
    let source = match custom_url.map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => custom_source(url, pool),
        None if ca.is_some() => {
            format!("https://api-int.{cluster_name}.{base_domain}:{MCS_TLS_PORT}/config/{pool}")
        }
        None => {
            format!("http://api.{cluster_name}.{base_domain}:{MCS_INSECURE_PORT}/config/{pool}")
        }
    };
    let headers: Vec<(&str, String)> = token
        .filter(|t| !t.is_empty())
        .map(|t| ("Authorization", format!("Bearer {t}")))
        .into_iter()
        .collect();
    let mut doc = pointer_ignition(&source, ca, &headers);
    if !hostname.trim().is_empty() {
        set_file(
            &mut doc,
            file_entry("/etc/hostname", format!("{hostname}\n").as_bytes(), 0o644),
        );
    }
    doc.to_string().into_bytes()
}

/// A bare `scheme://host[:port]` gets the standard `/config/<pool>` path; a URL that already
/// has a path (e.g. `.../config`) only gets the pool appended.
fn custom_source(url: &str, pool: &str) -> String {
    let url = url.trim_end_matches('/');
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    if after_scheme.contains('/') {
        format!("{url}/{pool}")
    } else {
        format!("{url}/config/{pool}")
    }
}

/// Requires an object whose `ignition.version` is a 3.x spec.
fn check_ignition(doc: &Value, what: &str) -> Result<(), InstallError> {
    let version = doc
        .get("ignition")
        .and_then(|i| i.get("version"))
        .and_then(Value::as_str)
        .ok_or_else(|| InstallError::json(what, "missing ignition.version"))?;
    if !version.starts_with("3.") {
        return Err(InstallError::json(
            what,
            format!("unsupported ignition version {version:?} (need 3.x)"),
        ));
    }
    Ok(())
}

/// Adds or replaces a `storage.files` entry by path.
fn set_file(doc: &mut Value, file: Value) {
    merge_ignition(doc, &json!({ "storage": { "files": [file] } }));
}

/// Merges `overlay` into `base` the way Ignition merges a child config: objects recursively,
/// list entries identified by `path` / `name` / `device` / `source` replace the parent's
/// entry with the same identity (others are appended), scalars replace. The higher of the
/// two spec versions is kept.
pub fn merge_ignition(base: &mut Value, overlay: &Value) {
    let base_version = version_of(base);
    merge_value(base, overlay);
    if let (Some(bv), Some(v)) = (base_version, base.pointer_mut("/ignition/version")) {
        let ov = v.as_str().map(str::to_string).unwrap_or_default();
        if parse_version(&bv) > parse_version(&ov) {
            *v = json!(bv);
        }
    }
}

fn version_of(doc: &Value) -> Option<String> {
    doc.pointer("/ignition/version")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn parse_version(v: &str) -> Vec<u32> {
    v.split(['.', '-'])
        .map_while(|p| p.parse::<u32>().ok())
        .collect()
}

fn merge_value(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) => merge_value(existing, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(b), Value::Array(o)) => {
            for item in o {
                match identity(item).and_then(|id| b.iter().position(|x| identity(x) == Some(id))) {
                    Some(pos) => merge_value(&mut b[pos], item),
                    None if !b.contains(item) => b.push(item.clone()),
                    None => {}
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The key Ignition uses to identify a list entry.
fn identity(v: &Value) -> Option<(&'static str, &str)> {
    ["path", "name", "device", "source"]
        .into_iter()
        .find_map(|k| v.get(k).and_then(Value::as_str).map(|s| (k, s)))
}

/// Decodes a `data:` URL: base64 (as [`data_url`] writes) or percent-encoded (as the
/// installer and upstream write short files, e.g. `data:,` for an empty one).
pub fn decode_data_url(url: &str) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if meta.split(';').any(|m| m.eq_ignore_ascii_case("base64")) {
        return STANDARD.decode(data.trim()).ok();
    }
    let bytes = data.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> Value {
        serde_json::from_slice(b).unwrap()
    }

    fn file<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
        doc["storage"]["files"]
            .as_array()?
            .iter()
            .find(|f| f["path"] == path)
    }

    fn file_text(doc: &Value, path: &str) -> String {
        let src = file(doc, path).unwrap()["contents"]["source"]
            .as_str()
            .unwrap();
        String::from_utf8(decode_data_url(src).unwrap()).unwrap()
    }

    const BASE: &str = r#"{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int.c.example.com:22623/config/worker"}]}},
        "storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,hi"}}]}}"#;

    #[test]
    fn host_ignition_sets_hostname_and_merges_override() {
        let over = r#"{"ignition":{"version":"3.1.0"},
            "storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,bye"}},
                                {"path":"/etc/extra","contents":{"source":"data:,x"}}]},
            "systemd":{"units":[{"name":"x.service","enabled":true}]}}"#;
        let out =
            parse(&host_ignition(BASE.as_bytes(), "node-1", HostRole::Worker, Some(over)).unwrap());
        assert_eq!(out["ignition"]["version"], "3.2.0");
        assert_eq!(file_text(&out, "/etc/hostname"), "node-1\n");
        assert_eq!(
            file(&out, "/etc/motd").unwrap()["contents"]["source"],
            "data:,bye"
        );
        assert!(file(&out, "/etc/extra").is_some());
        assert_eq!(out["storage"]["files"].as_array().unwrap().len(), 3);
        assert_eq!(out["systemd"]["units"][0]["name"], "x.service");
        assert_eq!(
            out["ignition"]["config"]["merge"][0]["source"],
            "https://api-int.c.example.com:22623/config/worker"
        );
    }

    #[test]
    fn host_ignition_override_can_replace_hostname_and_raise_version() {
        let over = format!(
            r#"{{"ignition":{{"version":"3.4.0"}},"storage":{{"files":[{}]}}}}"#,
            file_entry("/etc/hostname", b"custom\n", 420)
        );
        let out =
            parse(&host_ignition(BASE.as_bytes(), "n", HostRole::Master, Some(&over)).unwrap());
        assert_eq!(file_text(&out, "/etc/hostname"), "custom\n");
        assert_eq!(out["ignition"]["version"], "3.4.0");
    }

    #[test]
    fn host_ignition_errors() {
        let err = host_ignition(BASE.as_bytes(), "n", HostRole::Worker, Some("{oops"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ignition override of host \"n\""), "{err}");
        let err = host_ignition(
            BASE.as_bytes(),
            "n",
            HostRole::Worker,
            Some(r#"{"ignition":{"version":"2.2.0"}}"#),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("2.2.0"), "{err}");
        assert!(host_ignition(b"not json", "n", HostRole::Worker, None).is_err());
        assert!(host_ignition(BASE.as_bytes(), "", HostRole::Worker, None).is_err());
        assert!(host_ignition(BASE.as_bytes(), "n", HostRole::AutoAssign, None).is_err());
    }

    #[test]
    fn day2_pointer_takes_the_host_override() {
        let pointer = day2_pointer_ignition("c", "example.com", "worker", None, None, None, "w-3");
        let over = format!(
            r#"{{"ignition":{{"version":"3.1.0"}},"storage":{{"files":[{}]}},"systemd":{{"units":[{{"name":"pre.service","enabled":true}}]}}}}"#,
            file_entry("/usr/local/bin/pre.sh", b"echo hi\n", 0o700)
        );
        let out = parse(&with_ignition_override(&pointer, &over, "w-3").unwrap());
        assert_eq!(file_text(&out, "/etc/hostname"), "w-3\n");
        assert_eq!(file_text(&out, "/usr/local/bin/pre.sh"), "echo hi\n");
        assert_eq!(out["systemd"]["units"][0]["name"], "pre.service");
        assert!(
            out["ignition"]["config"]["merge"][0]["source"]
                .as_str()
                .unwrap()
                .ends_with("/config/worker")
        );
        let err = with_ignition_override(&pointer, "{}", "w-3").unwrap_err();
        assert!(err.to_string().contains("w-3"), "{err}");
    }

    #[test]
    fn day2_insecure_without_ca() {
        let out = parse(&day2_pointer_ignition(
            "c",
            "example.com",
            "worker",
            None,
            None,
            None,
            "w5",
        ));
        assert_eq!(out["ignition"]["version"], IGNITION_VERSION);
        assert_eq!(
            out["ignition"]["config"]["merge"][0]["source"],
            "http://api.c.example.com:22624/config/worker"
        );
        assert!(out["ignition"].get("security").is_none());
        assert!(
            out["ignition"]["config"]["merge"][0]
                .get("httpHeaders")
                .is_none()
        );
        assert_eq!(file_text(&out, "/etc/hostname"), "w5\n");
    }

    #[test]
    fn day2_with_ca_and_token() {
        let ca = "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n";
        let out = parse(&day2_pointer_ignition(
            "c",
            "example.com",
            "infra",
            Some(ca),
            None,
            Some("tok"),
            "w5",
        ));
        let merge = &out["ignition"]["config"]["merge"][0];
        assert_eq!(
            merge["source"],
            "https://api-int.c.example.com:22623/config/infra"
        );
        assert_eq!(merge["httpHeaders"][0]["name"], "Authorization");
        assert_eq!(merge["httpHeaders"][0]["value"], "Bearer tok");
        let ca_src = out["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
            .as_str()
            .unwrap();
        assert_eq!(decode_data_url(ca_src).unwrap(), ca.as_bytes());
    }

    #[test]
    fn day2_custom_url_replaces_host() {
        let src = |u: &str| {
            let out = parse(&day2_pointer_ignition(
                "c",
                "d",
                "worker",
                None,
                Some(u),
                None,
                "h",
            ));
            out["ignition"]["config"]["merge"][0]["source"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            src("https://mcs.lab:22623"),
            "https://mcs.lab:22623/config/worker"
        );
        assert_eq!(
            src("https://mcs.lab:22623/"),
            "https://mcs.lab:22623/config/worker"
        );
        assert_eq!(
            src("https://mcs.lab/config/"),
            "https://mcs.lab/config/worker"
        );
    }

    #[test]
    fn file_names() {
        assert_eq!(
            host_ignition_file_name(HostRole::Bootstrap, "h1"),
            "master-h1.ign"
        );
        assert_eq!(
            host_ignition_file_name(HostRole::Worker, "h2"),
            "worker-h2.ign"
        );
    }
}

//! The check that no secret of the run shows where it must not: at the end of every run the lab
//! reads each cluster's pull secret, kubeadmin password and admin kubeconfigs from the
//! management cluster and looks for them in our managers' logs, the management cluster's Events,
//! the status of our kinds and the assisted kinds, and our managers' `/metrics`. A hit fails the
//! run, naming the secret and the place, never the value (docs/lab.md "Secrets").
//!
//! [`find`] is the search and the `*_values` functions take the values out of a Secret, all pure;
//! [`check`] does the reading.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Context, Result};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use serde_json::Value;
use testbed::process::http_get_at;

use crate::managers::Managers;

/// Values shorter than this are not looked for: short common strings would make false alarms.
pub const MIN_LEN: usize = 16;

/// What a value is, to tell whether each cluster had all three to look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    PullSecret,
    Password,
    ClientKey,
}

impl Kind {
    fn describe(self) -> &'static str {
        match self {
            Kind::PullSecret => "pull secret",
            Kind::Password => "kubeadmin password",
            Kind::ClientKey => "admin kubeconfig client key",
        }
    }
}

/// A value to look for and where it came from; only `what` is ever printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretValue {
    pub kind: Kind,
    /// The namespace of its Secret.
    pub namespace: String,
    /// E.g. `Secret lab/pull-secret .dockerconfigjson: quay.io auth`.
    pub what: String,
    pub value: String,
}

/// A secret found somewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// The secret's `what`.
    pub secret: String,
    /// How it appeared: `as is`, `base64` or `JSON-escaped`.
    pub form: &'static str,
    /// The place's name (a log file, an Event, an object's status, a `/metrics`).
    pub place: String,
    /// The line of its first appearance there, from 1.
    pub line: usize,
}

impl Leak {
    pub fn describe(&self) -> String {
        format!(
            "{} ({}) in {}, line {}",
            self.secret, self.form, self.place, self.line
        )
    }
}

/// The forms a value is looked for in: as is, in base64 (without its padding, which depends on
/// what follows), and escaped inside a JSON string (a log line quoting it).
fn forms(value: &str) -> Vec<(&'static str, String)> {
    let mut out = vec![("as is", value.to_string())];
    let b64 = base64(value.as_bytes());
    out.push(("base64", b64.trim_end_matches('=').to_string()));
    let escaped = serde_json::to_string(value).unwrap_or_default();
    let escaped = escaped
        .strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or_default();
    if escaped != value {
        out.push(("JSON-escaped", escaped.to_string()));
    }
    out
}

/// Every appearance of a secret in a place: at most one per secret and place, the first.
/// Values shorter than [`MIN_LEN`] are ignored.
pub fn find(secrets: &[SecretValue], places: &[(String, String)]) -> Vec<Leak> {
    // Every form of every value, indexed by its first MIN_LEN bytes: each text is read once,
    // however many values there are (hundreds with `--clusters`).
    let mut patterns: Vec<(usize, &'static str, String)> = Vec::new();
    for (i, s) in secrets.iter().enumerate() {
        if s.value.chars().count() < MIN_LEN {
            continue;
        }
        for (form, text) in forms(&s.value) {
            patterns.push((i, form, text));
        }
    }
    let mut by_prefix: HashMap<&[u8], Vec<usize>> = HashMap::new();
    for (p, (_, _, text)) in patterns.iter().enumerate() {
        if let Some(prefix) = text.as_bytes().get(..MIN_LEN) {
            by_prefix.entry(prefix).or_default().push(p);
        }
    }
    let mut leaks = Vec::new();
    for (place, text) in places {
        let bytes = text.as_bytes();
        let mut found = BTreeSet::new();
        for start in 0..bytes.len().saturating_sub(MIN_LEN - 1) {
            let Some(candidates) = by_prefix.get(&bytes[start..start + MIN_LEN]) else {
                continue;
            };
            for &p in candidates {
                let (i, form, pattern) = &patterns[p];
                if !found.contains(i) && bytes[start..].starts_with(pattern.as_bytes()) {
                    found.insert(*i);
                    leaks.push(Leak {
                        secret: secrets[*i].what.clone(),
                        form,
                        place: place.clone(),
                        line: 1 + bytes[..start].iter().filter(|b| **b == b'\n').count(),
                    });
                }
            }
        }
    }
    leaks
}

/// Standard base64 (what Secrets and kubeconfigs use), through `ByteString`'s serde.
fn base64(bytes: &[u8]) -> String {
    match serde_json::to_value(ByteString(bytes.to_vec())) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

fn unbase64(text: &str) -> Option<Vec<u8>> {
    serde_json::from_value::<ByteString>(Value::String(text.to_string()))
        .ok()
        .map(|b| b.0)
}

/// The values of a pull secret (`.dockerconfigjson` or `.dockercfg`): the whole of it, and
/// each registry's `auth` (with the password inside it), `password` and tokens; (what, value).
pub fn pull_secret_values(json: &str) -> Vec<(String, String)> {
    let mut out = vec![(String::new(), json.to_string())];
    let Ok(doc) = serde_json::from_str::<Value>(json) else {
        return out;
    };
    // `.dockercfg` has the registries at the top, `.dockerconfigjson` under `auths`.
    let registries = doc.get("auths").unwrap_or(&doc);
    let Some(registries) = registries.as_object() else {
        return out;
    };
    for (registry, entry) in registries {
        for field in ["auth", "password", "identitytoken", "registrytoken"] {
            let Some(value) = entry.get(field).and_then(Value::as_str) else {
                continue;
            };
            out.push((format!("{registry} {field}"), value.to_string()));
            // `auth` is base64 of `user:password`.
            if field == "auth"
                && let Some(decoded) = unbase64(value)
                && let Ok(decoded) = String::from_utf8(decoded)
                && let Some((_, password)) = decoded.split_once(':')
            {
                out.push((
                    format!("{registry} password in its auth"),
                    password.to_string(),
                ));
            }
        }
    }
    out
}

/// The private parts of a kubeconfig (YAML as the core writes it): each `client-key-data`, the
/// lines of the PEM key it holds, and each `token`; (what, value).
pub fn kubeconfig_values(kubeconfig: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in kubeconfig.lines() {
        let line = line.trim_start();
        let line = line.strip_prefix("- ").unwrap_or(line).trim_start();
        for key in ["client-key-data", "token"] {
            let Some(value) = field_value(line, key) else {
                continue;
            };
            out.push((key.to_string(), value.to_string()));
            if key == "client-key-data"
                && let Some(pem) = unbase64(value)
            {
                let pem = String::from_utf8_lossy(&pem);
                for (i, l) in pem.lines().enumerate() {
                    let l = l.trim();
                    if !l.is_empty() && !l.starts_with("-----") {
                        out.push((format!("client key PEM line {}", i + 1), l.to_string()));
                    }
                }
            }
        }
    }
    out
}

/// The value of `key: value` (the key possibly quoted) on one line, unquoted.
fn field_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let quoted = format!("\"{key}\"");
    let rest = line
        .strip_prefix(quoted.as_str())
        .or_else(|| line.strip_prefix(key))?;
    let value = rest.trim_start().strip_prefix(':')?;
    let value = value.trim().trim_end_matches(',').trim_matches(['"', '\'']);
    (!value.is_empty()).then_some(value)
}

/// The values of one Secret, by its keys: a pull secret's, a kubeadmin `password`, a
/// kubeconfig's (`kubeconfig` in the core's Secret, `value` in `<cluster>-kubeconfig`). Values
/// shorter than [`MIN_LEN`] are left out.
pub fn secret_values(ns: &str, name: &str, data: &BTreeMap<String, Vec<u8>>) -> Vec<SecretValue> {
    let mut out = Vec::new();
    for (key, bytes) in data {
        let text = String::from_utf8_lossy(bytes);
        let (kind, values) = match key.as_str() {
            ".dockerconfigjson" | ".dockercfg" => (Kind::PullSecret, pull_secret_values(&text)),
            "password" => (Kind::Password, vec![(String::new(), text.to_string())]),
            "kubeconfig" | "value" => (Kind::ClientKey, kubeconfig_values(&text)),
            _ => continue,
        };
        for (part, value) in values {
            if value.chars().count() < MIN_LEN {
                continue;
            }
            let what = if part.is_empty() {
                format!("Secret {ns}/{name} {key}")
            } else {
                format!("Secret {ns}/{name} {key}: {part}")
            };
            out.push(SecretValue {
                kind,
                namespace: ns.to_string(),
                what,
                value,
            });
        }
    }
    out
}

/// The names of the Secrets an object refers to as its pull secret or admin credentials, found
/// anywhere in it (`spec.pullSecretRef`, `spec.config.pullSecretRef`,
/// `spec.clusterMetadata.adminKubeconfigSecretRef`, ...).
pub fn secret_refs(object: &Value) -> Vec<String> {
    const REFS: [&str; 3] = [
        "pullSecretRef",
        "adminKubeconfigSecretRef",
        "adminPasswordSecretRef",
    ];
    let mut out = Vec::new();
    match object {
        Value::Object(map) => {
            for (k, v) in map {
                if REFS.contains(&k.as_str()) {
                    if let Some(name) = v.get("name").and_then(Value::as_str)
                        && !name.is_empty()
                    {
                        out.push(name.to_string());
                    }
                } else {
                    out.extend(secret_refs(v));
                }
            }
        }
        Value::Array(items) => out.extend(items.iter().flat_map(secret_refs)),
        _ => {}
    }
    out
}

/// Keeps the first of values that are equal (the same key in `<cd>-admin-kubeconfig` and
/// `<cluster>-kubeconfig`, one pull secret in every namespace).
pub fn distinct(values: Vec<SecretValue>) -> Vec<SecretValue> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .filter(|v| seen.insert(v.value.clone()))
        .collect()
}

/// Clusters (namespace, name) with a kind of secret to look for that none of `values` is.
pub fn missing(
    values: &[SecretValue],
    clusters: &[(String, String)],
    installed: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    // A cluster the run did not install (its input refused) has only its pull secret.
    let kinds: &[Kind] = if installed {
        &[Kind::PullSecret, Kind::Password, Kind::ClientKey]
    } else {
        &[Kind::PullSecret]
    };
    for (ns, name) in clusters {
        for &kind in kinds {
            if !values.iter().any(|v| v.kind == kind && v.namespace == *ns) {
                out.push(format!(
                    "cluster {name}: no {} found to look for",
                    kind.describe()
                ));
            }
        }
    }
    out
}

/// The kinds whose status is searched: ours and the assisted ones, listed in all namespaces.
pub const KINDS: [(&str, &str); 6] = [
    (
        "OpenshiftAssistedControlPlane",
        "/apis/controlplane.cluster.x-k8s.io/v1alpha3/openshiftassistedcontrolplanes",
    ),
    (
        "OpenshiftAssistedConfig",
        "/apis/bootstrap.cluster.x-k8s.io/v1alpha2/openshiftassistedconfigs",
    ),
    (
        "AgentClusterInstall",
        "/apis/extensions.hive.openshift.io/v1beta1/agentclusterinstalls",
    ),
    (
        "ClusterDeployment",
        "/apis/hive.openshift.io/v1/clusterdeployments",
    ),
    (
        "InfraEnv",
        "/apis/agent-install.openshift.io/v1beta1/infraenvs",
    ),
    ("Agent", "/apis/agent-install.openshift.io/v1beta1/agents"),
];

/// What the check looked at and found.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// Distinct values looked for.
    pub values: usize,
    /// The Secrets they came from, `namespace/name`.
    pub secrets: Vec<String>,
    /// Places searched, by sort: our managers' log files, Events, objects with a status, our
    /// managers' `/metrics`.
    pub logs: usize,
    pub events: usize,
    pub statuses: usize,
    pub metrics: usize,
    pub leaks: Vec<Leak>,
    /// Clusters a kind of secret could not be found for (the check would be empty for it).
    pub missing: Vec<String>,
}

impl Checked {
    pub fn places(&self) -> usize {
        self.logs + self.events + self.statuses + self.metrics
    }

    /// The report's line.
    pub fn line(&self) -> String {
        let found = if self.leaks.is_empty() {
            "none found".to_string()
        } else {
            format!("FOUND {} (below)", self.leaks.len())
        };
        format!(
            "Secrets: {} values of {} Secrets (pull secrets, kubeadmin passwords, admin kubeconfigs' client keys) looked for, as is, in base64 and JSON-escaped, in {} places ({} manager logs, {} Events, {} statuses, {} /metrics): {found}",
            self.values,
            self.secrets.len(),
            self.places(),
            self.logs,
            self.events,
            self.statuses,
            self.metrics
        )
    }

    /// Why the run fails: a leak (the first five), or a cluster without a value to look for.
    pub fn problem(&self) -> Option<String> {
        if !self.leaks.is_empty() {
            let mut shown: Vec<String> = self.leaks.iter().take(5).map(Leak::describe).collect();
            if self.leaks.len() > 5 {
                shown.push(format!("and {} more", self.leaks.len() - 5));
            }
            return Some(format!(
                "secrets: found where they must not be: {}",
                shown.join("; ")
            ));
        }
        if !self.missing.is_empty() {
            return Some(format!("secrets: {}", self.missing.join("; ")));
        }
        None
    }
}

/// Reads the secrets of the run and the places, and searches. `clusters`: each cluster's
/// namespace and Cluster name.
pub async fn check(
    client: &Client,
    managers: &Managers,
    clusters: &[(String, String)],
    installed: bool,
) -> Result<Checked> {
    let mut checked = Checked::default();
    let mut places: Vec<(String, String)> = Vec::new();

    for log in managers.logs() {
        let bytes = match std::fs::read(&log) {
            Ok(b) => b,
            // kubelet removes a deleted pod's logs (`--kill-leaders`) when it likes.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", log.display())),
        };
        places.push((
            format!("log {}", log.display()),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
        checked.logs += 1;
    }

    let events = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing Events")?;
    for e in events.items {
        let name = format!(
            "Event {}/{}",
            e.namespace().unwrap_or_default(),
            e.name_any()
        );
        places.push((name, serde_json::to_string(&e)?));
        checked.events += 1;
    }

    // The Secrets to read, (namespace, name): those the objects name, the names the core
    // falls back to, and each cluster's `<cluster>-kubeconfig`.
    let mut wanted: BTreeSet<(String, String)> = clusters
        .iter()
        .map(|(ns, name)| (ns.clone(), format!("{name}-kubeconfig")))
        .collect();
    for (kind, path) in KINDS {
        let req = http::Request::get(path).body(Vec::new())?;
        let list: Value = client
            .request(req)
            .await
            .with_context(|| format!("listing {kind}s"))?;
        for item in list["items"].as_array().into_iter().flatten() {
            let ns = item
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = item
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for r in secret_refs(item) {
                wanted.insert((ns.to_string(), r));
            }
            if kind == "ClusterDeployment" {
                for suffix in ["admin-kubeconfig", "admin-password"] {
                    wanted.insert((ns.to_string(), format!("{name}-{suffix}")));
                }
            }
            if let Some(status) = item.get("status") {
                places.push((
                    format!("{kind} {ns}/{name} status"),
                    serde_json::to_string(status)?,
                ));
                checked.statuses += 1;
            }
        }
    }

    for (name, addr) in managers.names().into_iter().zip(&managers.metrics) {
        // A manager that does not answer has nothing to show.
        if let Ok((200, text)) = http_get_at(*addr, "/metrics") {
            places.push((format!("{name} /metrics"), text));
            checked.metrics += 1;
        }
    }

    let mut values = Vec::new();
    for (ns, name) in &wanted {
        let Some(secret) = Api::<Secret>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
            .with_context(|| format!("reading Secret {ns}/{name}"))?
        else {
            continue;
        };
        let data: BTreeMap<String, Vec<u8>> = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let found = secret_values(ns, name, &data);
        if !found.is_empty() {
            checked.secrets.push(format!("{ns}/{name}"));
        }
        values.extend(found);
    }
    checked.missing = missing(&values, clusters, installed);
    let values = distinct(values);
    checked.values = values.len();
    checked.leaks = find(&values, &places);
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(what: &str, value: &str) -> SecretValue {
        SecretValue {
            kind: Kind::Password,
            namespace: "lab".into(),
            what: what.into(),
            value: value.into(),
        }
    }

    fn place(name: &str, text: &str) -> (String, String) {
        (name.into(), text.into())
    }

    const PASSWORD: &str = "abcde-fghij-klmno-pqrst";

    #[test]
    fn a_leak_is_found_and_named_without_its_value() {
        let secrets = [secret("Secret lab/bm-admin-password password", PASSWORD)];
        let places = [
            place("log a.log", "started\nreconciled\n"),
            place(
                "log b.log",
                &format!("started\nreconciled\nlogin with {PASSWORD} ok\n{PASSWORD}\n"),
            ),
        ];
        let leaks = find(&secrets, &places);
        assert_eq!(
            leaks,
            [Leak {
                secret: "Secret lab/bm-admin-password password".into(),
                form: "as is",
                place: "log b.log".into(),
                line: 3,
            }]
        );
        let text = leaks[0].describe();
        assert_eq!(
            text,
            "Secret lab/bm-admin-password password (as is) in log b.log, line 3"
        );
        assert!(!text.contains(PASSWORD));
        let checked = Checked {
            values: 1,
            leaks,
            ..Default::default()
        };
        let problem = checked.problem().expect("a leak fails the run");
        assert!(problem.contains("log b.log"), "{problem}");
        assert!(!problem.contains(PASSWORD), "{problem}");
        assert!(!checked.line().contains(PASSWORD));
    }

    #[test]
    fn short_values_are_not_looked_for() {
        let secrets = [
            secret("short", "dXNlcjpwYXNz"),
            secret("fifteen", "abcdefghijklmno"),
        ];
        let places = [place("log", "auth dXNlcjpwYXNz abcdefghijklmno")];
        assert!(find(&secrets, &places).is_empty());
        // Sixteen is enough.
        let secrets = [secret("sixteen", "abcdefghijklmnop")];
        let places = [place("log", "xabcdefghijklmnopx")];
        assert_eq!(find(&secrets, &places).len(), 1);
    }

    #[test]
    fn base64_and_json_escaped_forms_are_found() {
        let json = r#"{"auths":{"quay.io":{"auth":"bGFiOmEtcGxhY2Vob2xkZXI="}}}"#;
        let secrets = [secret("pw", PASSWORD), secret("pull", json)];
        let b64 = base64(PASSWORD.as_bytes());
        assert_eq!(b64, "YWJjZGUtZmdoaWota2xtbm8tcHFyc3Q=");
        let places = [
            place("in base64", &format!("data: {b64}")),
            // Unpadded and inside a longer run of base64.
            place("in base64, unpadded", "x YWJjZGUtZmdoaWota2xtbm8tcHFyc3Q\n"),
            place(
                "quoted in a JSON log line",
                &serde_json::json!({"msg": format!("pull secret {json}")}).to_string(),
            ),
            place("raw", json),
        ];
        let leaks = find(&secrets, &places);
        let got: Vec<(&str, &str, &str)> = leaks
            .iter()
            .map(|l| (l.secret.as_str(), l.form, l.place.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("pw", "base64", "in base64"),
                ("pw", "base64", "in base64, unpadded"),
                ("pull", "JSON-escaped", "quoted in a JSON log line"),
                ("pull", "as is", "raw"),
            ]
        );
    }

    #[test]
    fn one_leak_per_secret_and_place() {
        let secrets = [secret("a", PASSWORD), secret("b", "0123456789abcdefXYZ")];
        let b64 = base64(PASSWORD.as_bytes());
        let places = [place(
            "log",
            &format!("{b64}\n{PASSWORD}\n{PASSWORD}\n0123456789abcdefXYZ\n"),
        )];
        let leaks = find(&secrets, &places);
        assert_eq!(leaks.len(), 2);
        assert_eq!((leaks[0].form, leaks[0].line), ("base64", 1));
        assert_eq!((leaks[1].secret.as_str(), leaks[1].line), ("b", 4));
    }

    #[test]
    fn a_pull_secret_gives_the_whole_and_each_registry_token() {
        let auth = base64(b"lab:a-placeholder-not-a-real-pull-secret");
        let json = format!(
            r#"{{"auths":{{"quay.io":{{"auth":"{auth}"}},"r.example.com":{{"auth":"c2hvcnQ6cHc=","identitytoken":"tok-0123456789abcdef"}}}}}}"#
        );
        let data = BTreeMap::from([(".dockerconfigjson".to_string(), json.clone().into_bytes())]);
        let values = secret_values("lab", "pull-secret", &data);
        let got: Vec<(&str, &str)> = values
            .iter()
            .map(|v| (v.what.as_str(), v.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("Secret lab/pull-secret .dockerconfigjson", json.as_str()),
                (
                    "Secret lab/pull-secret .dockerconfigjson: quay.io auth",
                    auth.as_str()
                ),
                (
                    "Secret lab/pull-secret .dockerconfigjson: quay.io password in its auth",
                    "a-placeholder-not-a-real-pull-secret"
                ),
                // `c2hvcnQ6cHc=` (short:pw) is too short to look for.
                (
                    "Secret lab/pull-secret .dockerconfigjson: r.example.com identitytoken",
                    "tok-0123456789abcdef"
                ),
            ]
        );
        assert!(values.iter().all(|v| v.kind == Kind::PullSecret));
    }

    #[test]
    fn the_lab_placeholder_pull_secret_has_a_token_long_enough_to_look_for() {
        let yaml = crate::manifests::pull_secret_yaml("lab", "pull-secret");
        let json = yaml
            .lines()
            .find_map(|l| l.trim().strip_prefix(".dockerconfigjson: '"))
            .and_then(|l| l.strip_suffix('\''))
            .expect("the placeholder's .dockerconfigjson");
        let values = pull_secret_values(json);
        assert_eq!(values.len(), 3, "{values:?}");
        assert!(values.iter().all(|(_, v)| v.len() >= MIN_LEN));
    }

    /// A kubeconfig as the core's lab backend writes it (serde_yaml of its JSON).
    fn kubeconfig(key_pem: &str) -> String {
        format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://10.244.0.1:6443\n  name: bm\nusers:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
            base64(b"-----BEGIN CERTIFICATE-----\nQ0FDQUNBQ0FDQUNBQ0FDQUNBQ0FDQUNB\n-----END CERTIFICATE-----\n"),
            base64(b"-----BEGIN CERTIFICATE-----\nY2VydGNlcnRjZXJ0Y2VydGNlcnRjZXJ0\n-----END CERTIFICATE-----\n"),
            base64(key_pem.as_bytes())
        )
    }

    const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgkKeyLine1kKeyLine1\nhRANCAAR0aGlzIGlzIG5vdCBhIHJlYWwga2V5IGJ1dCBsb29rcyBsaWtlIG9uZQ\nQ9Xy\n-----END PRIVATE KEY-----\n";

    #[test]
    fn a_kubeconfig_gives_its_client_key_and_the_key_lines() {
        let kc = kubeconfig(KEY_PEM);
        let data = BTreeMap::from([("kubeconfig".to_string(), kc.into_bytes())]);
        let values = secret_values("lab", "bm-cp-admin-kubeconfig", &data);
        let got: Vec<(&str, &str)> = values
            .iter()
            .map(|v| (v.what.as_str(), v.value.as_str()))
            .collect();
        let key_data = base64(KEY_PEM.as_bytes());
        assert_eq!(
            got,
            [
                (
                    "Secret lab/bm-cp-admin-kubeconfig kubeconfig: client-key-data",
                    key_data.as_str()
                ),
                (
                    "Secret lab/bm-cp-admin-kubeconfig kubeconfig: client key PEM line 2",
                    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgkKeyLine1kKeyLine1"
                ),
                (
                    "Secret lab/bm-cp-admin-kubeconfig kubeconfig: client key PEM line 3",
                    "hRANCAAR0aGlzIGlzIG5vdCBhIHJlYWwga2V5IGJ1dCBsb29rcyBsaWtlIG9uZQ"
                ),
                // `Q9Xy` is too short.
            ]
        );
        assert!(values.iter().all(|v| v.kind == Kind::ClientKey));
        // The certificates are not secret.
        assert!(!got.iter().any(|(w, _)| w.contains("certificate")));
        // A key line printed alone is found.
        let leaks = find(
            &values,
            &[place(
                "log",
                "key hRANCAAR0aGlzIGlzIG5vdCBhIHJlYWwga2V5IGJ1dCBsb29rcyBsaWtlIG9uZQ",
            )],
        );
        assert_eq!(leaks.len(), 1);
        assert!(leaks[0].secret.ends_with("PEM line 3"));
    }

    #[test]
    fn kubeconfig_fields_quoted_or_not() {
        assert_eq!(
            kubeconfig_values("  token: \"abcdefghijklmnopqrstuvwx\"\n  tokenFile: /x\n"),
            [("token".to_string(), "abcdefghijklmnopqrstuvwx".to_string())]
        );
        assert_eq!(
            field_value(r#""client-key-data": "QUJD","#, "client-key-data"),
            Some("QUJD")
        );
        assert_eq!(field_value("client-key-data:", "client-key-data"), None);
    }

    #[test]
    fn a_password_secret_gives_its_password_not_its_username() {
        let data = BTreeMap::from([
            ("username".to_string(), b"kubeadmin".to_vec()),
            ("password".to_string(), PASSWORD.as_bytes().to_vec()),
        ]);
        let values = secret_values("lab", "bm-cp-admin-password", &data);
        assert_eq!(values.len(), 1);
        assert_eq!(values[0].what, "Secret lab/bm-cp-admin-password password");
        assert_eq!(values[0].kind, Kind::Password);
    }

    #[test]
    fn secret_refs_anywhere_in_an_object() {
        let oacp = serde_json::json!({
            "metadata": {"name": "bm-cp", "namespace": "lab"},
            "spec": {"config": {"pullSecretRef": {"name": "pull-secret"}, "sshAuthorizedKey": "x"}},
        });
        assert_eq!(secret_refs(&oacp), ["pull-secret"]);
        let aci = serde_json::json!({"spec": {"clusterMetadata": {
            "adminKubeconfigSecretRef": {"name": "bm-cp-admin-kubeconfig"},
            "adminPasswordSecretRef": {"name": "bm-cp-admin-password"},
        }}, "status": {"conditions": [{"pullSecretRef": {"name": "in-a-list"}}]}});
        assert_eq!(
            secret_refs(&aci),
            [
                "bm-cp-admin-kubeconfig",
                "bm-cp-admin-password",
                "in-a-list"
            ]
        );
        assert!(secret_refs(&serde_json::json!({"spec": {"pullSecretRef": {}}})).is_empty());
    }

    #[test]
    fn each_cluster_needs_all_three_kinds() {
        let v = |kind, ns: &str, value: &str| SecretValue {
            kind,
            namespace: ns.into(),
            what: "w".into(),
            value: value.into(),
        };
        let values = vec![
            v(Kind::PullSecret, "lab-01", "same pull secret value"),
            v(Kind::PullSecret, "lab-02", "same pull secret value"),
            v(Kind::Password, "lab-01", "password of lab-01"),
            v(Kind::ClientKey, "lab-01", "key of lab-01 0123"),
            v(Kind::ClientKey, "lab-02", "key of lab-02 0123"),
        ];
        let clusters = [
            ("lab-01".to_string(), "sno-01".to_string()),
            ("lab-02".to_string(), "sno-02".to_string()),
        ];
        assert_eq!(
            missing(&values, &clusters, true),
            ["cluster sno-02: no kubeadmin password found to look for"]
        );
        // Not installed (its input refused): only the pull secret is looked for.
        assert!(missing(&values, &clusters, false).is_empty());
        // The shared pull secret is looked for once.
        assert_eq!(distinct(values).len(), 4);
    }

    #[test]
    fn base64_round_trips() {
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(unbase64("dXNlcjpwYXNz").as_deref(), Some(&b"user:pass"[..]));
        assert_eq!(unbase64("not base64!"), None);
    }

    #[test]
    fn the_line_counts_the_places() {
        let c = Checked {
            values: 7,
            secrets: vec!["lab/pull-secret".into(), "lab/bm-cp-admin-password".into()],
            logs: 2,
            events: 10,
            statuses: 5,
            metrics: 2,
            ..Default::default()
        };
        assert_eq!(c.places(), 19);
        assert!(
            c.line().starts_with("Secrets: 7 values of 2 Secrets"),
            "{}",
            c.line()
        );
        assert!(c.line().ends_with(
            "in 19 places (2 manager logs, 10 Events, 5 statuses, 2 /metrics): none found"
        ));
        assert_eq!(c.problem(), None);
    }
}

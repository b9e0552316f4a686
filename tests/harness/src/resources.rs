//! Loading YAML manifests, installing CRDs and applying arbitrary objects.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::pinned_kind;
use kube::{Client, ResourceExt};
use serde_json::Value;

/// Field manager of everything the harness applies.
pub const FIELD_MANAGER: &str = "capoa-testbed";

/// Every non-empty document of a multi-document YAML string.
pub fn parse_yaml(yaml: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let v: Value = serde::Deserialize::deserialize(doc).context("parsing YAML")?;
        match v {
            Value::Null => {}
            Value::Object(ref m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                if let Some(items) = m.get("items").and_then(Value::as_array) {
                    out.extend(items.iter().cloned());
                }
            }
            v => out.push(v),
        }
    }
    Ok(out)
}

/// The documents of a YAML file, or of every `*.yaml`/`*.yml` in a directory (sorted by name).
pub fn load_yaml_path(path: &Path) -> Result<Vec<Value>> {
    let mut files = Vec::new();
    if path.is_dir() {
        for e in std::fs::read_dir(path).with_context(|| format!("listing {}", path.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_owned());
    }
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        out.extend(parse_yaml(&text).with_context(|| format!("in {}", f.display()))?);
    }
    Ok(out)
}

pub fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

pub fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Re-points the webhooks of an installed CRD or webhook configuration (named as `doc` names
/// it) at `https://127.0.0.1:<port>`, trusting `ca_pem`: the installed object is read, its
/// client configs rewritten, and written back whole, so its other fields stay as installed.
pub async fn repoint_existing(client: &Client, doc: &Value, port: u16, ca_pem: &str) -> Result<()> {
    let kind = kind_of(doc);
    let name = name_of(doc);
    let (group, version) = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split_once('/'))
        .with_context(|| format!("{kind} {name} has no group/version"))?;
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("discovering {kind}"))?;
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let installed = api
        .get(name)
        .await
        .with_context(|| format!("reading installed {kind} {name}"))?;
    let pointed = crate::capi::point_webhooks_at(serde_json::to_value(&installed)?, port, ca_pem);
    let object: DynamicObject = serde_json::from_value(pointed)?;
    api.replace(name, &Default::default(), &object)
        .await
        .with_context(|| format!("re-pointing {kind} {name} at port {port}"))?;
    Ok(())
}

/// Applies the CRDs among `docs` and waits until all are Established.
pub async fn install_crds(client: &Client, docs: Vec<Value>) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for doc in docs {
        if kind_of(&doc) != "CustomResourceDefinition" {
            continue;
        }
        let name = name_of(&doc).to_owned();
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&doc),
        )
        .await
        .with_context(|| format!("applying CRD {name}"))?;
        names.push(name);
    }
    wait_established(client, &names, Duration::from_secs(60)).await
}

/// Waits until every named CRD has condition Established=True.
pub async fn wait_established(client: &Client, names: &[String], timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let start = Instant::now();
    for name in names {
        loop {
            let crd = api
                .get(name)
                .await
                .with_context(|| format!("reading CRD {name}"))?;
            let established = crd
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
            if established {
                break;
            }
            if start.elapsed() > timeout {
                bail!(
                    "CRD {name} not Established after {timeout:?}: {:?}",
                    crd.status
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// The API for `obj`'s kind (through discovery), namespaced by the object's namespace if it has one.
pub async fn api_for(client: &Client, obj: &Value) -> Result<Api<DynamicObject>> {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .context("object without apiVersion")?;
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind_of(obj));
    let (ar, caps) = pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("discovering {api_version} {}", kind_of(obj)))?;
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str);
    Ok(match (caps.scope, ns) {
        (kube::discovery::Scope::Namespaced, Some(ns)) => {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        (kube::discovery::Scope::Namespaced, None) => {
            Api::default_namespaced_with(client.clone(), &ar)
        }
        (kube::discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &ar),
    })
}

/// Server-side applies one object (forcing conflicts).
pub async fn apply(client: &Client, obj: &Value) -> Result<DynamicObject> {
    let api = api_for(client, obj).await?;
    let name = name_of(obj);
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .with_context(|| format!("applying {} {name}", kind_of(obj)))
}

/// Applies objects in order; CRDs are waited for before the objects after them.
pub async fn apply_all(client: &Client, objs: Vec<Value>) -> Result<Vec<DynamicObject>> {
    let mut out = Vec::new();
    for obj in objs {
        let applied = apply(client, &obj).await?;
        if kind_of(&obj) == "CustomResourceDefinition" {
            wait_established(client, &[applied.name_any()], Duration::from_secs(60)).await?;
        }
        out.push(applied);
    }
    Ok(out)
}

/// Waits until Deployment `ns/name` has all its replicas updated and available.
pub async fn wait_deployment_available(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Result<()> {
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client.clone(), ns);
    let start = Instant::now();
    loop {
        if let Some(d) = api.get_opt(name).await? {
            let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            let status = d.status.clone().unwrap_or_default();
            if status.observed_generation == d.metadata.generation
                && status.updated_replicas == Some(want)
                && status.available_replicas == Some(want)
            {
                return Ok(());
            }
        }
        if start.elapsed() > timeout {
            bail!("Deployment {ns}/{name} not available after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until Secret `ns/name` holds a non-empty `key` (cert-manager writing a certificate, a
/// controller publishing one); returns it as text.
pub async fn wait_secret_key(
    client: &Client,
    ns: &str,
    name: &str,
    key: &str,
    timeout: Duration,
) -> Result<String> {
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), ns);
    let start = Instant::now();
    loop {
        let value = secrets
            .get_opt(name)
            .await
            .with_context(|| format!("reading Secret {ns}/{name}"))?
            .and_then(|s| s.data?.get(key).map(|b| b.0.clone()))
            .filter(|b| !b.is_empty());
        if let Some(v) = value {
            return String::from_utf8(v).with_context(|| format!("{ns}/{name} {key} is not text"));
        }
        if start.elapsed() > timeout {
            bail!(
                "Secret {ns}/{name} has no {key} after {}s",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

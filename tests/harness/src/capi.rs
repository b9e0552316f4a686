//! The Cluster API core manager, with its webhooks served on loopback.
//!
//! The CRDs and webhook configurations come from CAPI's own `core-components.yaml` (rendered by
//! build.sh with kustomize, as a release has it). Their `clientConfig.service` references, which
//! point at the in-cluster `capi-webhook-service`, are rewritten to
//! `https://127.0.0.1:<port><path>` with the testbed CA as `caBundle`, and the manager serves its
//! webhooks there with a certificate from that CA: the same thing cert-manager's CA injector does
//! in a real cluster.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};

use crate::Testbed;
use crate::process::{free_port, http_get, wait_until};
use crate::resources::{self, kind_of};

const INJECT_CA: &str = "cert-manager.io/inject-ca-from";

/// Rewrites the webhook client configs in a CRD or a (Mutating|Validating)WebhookConfiguration to
/// reach `https://127.0.0.1:<port>` and trust `ca_pem`. Other objects are returned unchanged.
pub fn point_webhooks_at(mut obj: Value, port: u16, ca_pem: &str) -> Value {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let rewrite = |cc: &mut Value| {
        let path = cc
            .pointer("/service/path")
            .and_then(Value::as_str)
            .unwrap_or("/")
            .to_owned();
        *cc = json!({ "url": format!("https://127.0.0.1:{port}{path}"), "caBundle": ca });
    };
    if let Some(a) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(INJECT_CA);
    }
    match kind_of(&obj) {
        "CustomResourceDefinition" => {
            if let Some(cc) = obj.pointer_mut("/spec/conversion/webhook/clientConfig") {
                rewrite(cc);
            }
        }
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
            if let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) {
                for h in hooks {
                    if let Some(cc) = h.get_mut("clientConfig") {
                        rewrite(cc);
                    }
                }
            }
        }
        _ => {}
    }
    obj
}

pub(crate) async fn start(tb: &mut Testbed) -> Result<()> {
    let components = tb.cache.manifests().join("capi/core-components.yaml");
    let docs = resources::load_yaml_path(&components)?;
    let webhook_port = free_port()?;
    let health_port = free_port()?;
    let diagnostics_port = free_port()?;

    let wanted = [
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ];
    let patched: Vec<Value> = docs
        .into_iter()
        .filter(|d| wanted.contains(&kind_of(d)))
        .map(|d| point_webhooks_at(d, webhook_port, tb.ca_pem()))
        .collect();
    if !patched
        .iter()
        .any(|d| kind_of(d) == "CustomResourceDefinition")
    {
        bail!("no CRDs in {}", components.display());
    }
    let (crds, hooks): (Vec<Value>, Vec<Value>) = patched
        .into_iter()
        .partition(|d| kind_of(d) == "CustomResourceDefinition");
    install_or_repoint_crds(tb, crds, webhook_port).await?;

    let cert_dir = tb.dir.join("capi-webhook");
    std::fs::create_dir_all(&cert_dir)?;
    let serving = tb.serving_cert("capi-webhook")?;
    std::fs::write(cert_dir.join("tls.crt"), &serving.cert_pem)?;
    std::fs::write(cert_dir.join("tls.key"), &serving.key_pem)?;

    let args = vec![
        "--leader-elect=false".to_owned(),
        format!("--webhook-port={webhook_port}"),
        format!("--webhook-cert-dir={}", cert_dir.display()),
        format!("--health-addr=127.0.0.1:{health_port}"),
        format!("--diagnostics-address=127.0.0.1:{diagnostics_port}"),
        "--insecure-diagnostics=true".to_owned(),
        // ClusterClass support, as `CLUSTER_TOPOLOGY=true clusterctl init` turns it on.
        "--feature-gates=ClusterTopology=true".to_owned(),
        "--v=2".to_owned(),
    ];
    let kubeconfig = tb.kubeconfig.display().to_string();
    let bin = tb.cache.bin("capi-manager");
    let manager = tb.spawn(
        "capi-manager",
        &bin,
        &args,
        &[
            ("KUBECONFIG", &kubeconfig),
            ("POD_NAMESPACE", "capi-system"),
        ],
    )?;
    wait_until(
        "capi-manager",
        manager,
        Duration::from_secs(90),
        async || Ok(http_get(health_port, "/readyz")?.0 == 200),
    )
    .await?;
    // Register the webhooks only once the manager serves them.
    apply_or_repoint_hooks(tb, hooks, webhook_port).await
}

/// Installs the CRDs, or, when `clusterctl init` installed them, re-points the installed ones
/// at loopback (replacing their `clientConfig.service`, which an apply would keep).
pub(crate) async fn install_or_repoint_crds(
    tb: &Testbed,
    crds: Vec<Value>,
    port: u16,
) -> Result<()> {
    if !tb.installed_by_clusterctl {
        return resources::install_crds(&tb.client, crds).await;
    }
    let names: Vec<String> = crds
        .iter()
        .map(|d| resources::name_of(d).to_owned())
        .collect();
    for doc in &crds {
        resources::repoint_existing(&tb.client, doc, port, tb.ca_pem()).await?;
    }
    resources::wait_established(&tb.client, &names, Duration::from_secs(60)).await
}

/// Applies the webhook configurations, or re-points those `clusterctl init` installed.
pub(crate) async fn apply_or_repoint_hooks(
    tb: &Testbed,
    hooks: Vec<Value>,
    port: u16,
) -> Result<()> {
    for h in hooks {
        if tb.installed_by_clusterctl {
            resources::repoint_existing(&tb.client, &h, port, tb.ca_pem()).await?;
        } else {
            resources::apply(&tb.client, &h)
                .await
                .with_context(|| format!("applying {} {}", kind_of(&h), resources::name_of(&h)))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_service_references_become_loopback_urls() {
        let crd = json!({
            "kind": "CustomResourceDefinition",
            "metadata": { "name": "x", "annotations": { INJECT_CA: "capi-system/capi-serving-cert" } },
            "spec": { "conversion": { "strategy": "Webhook", "webhook": {
                "clientConfig": { "service": { "name": "capi-webhook-service", "namespace": "capi-system", "path": "/convert" } },
                "conversionReviewVersions": ["v1"],
            } } },
        });
        let crd = point_webhooks_at(crd, 9443, "PEM");
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"],
            json!({ "url": "https://127.0.0.1:9443/convert", "caBundle": "UEVN" })
        );
        assert!(crd["metadata"]["annotations"].get(INJECT_CA).is_none());

        let hooks = json!({
            "kind": "ValidatingWebhookConfiguration",
            "webhooks": [{ "name": "a", "clientConfig": { "service": { "name": "s", "namespace": "n", "path": "/validate-a" } } }],
        });
        let hooks = point_webhooks_at(hooks, 1, "PEM");
        assert_eq!(
            hooks["webhooks"][0]["clientConfig"]["url"],
            "https://127.0.0.1:1/validate-a"
        );
    }
}

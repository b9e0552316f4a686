//! Metal3: baremetal-operator with its fixture provisioner (no Ironic) and the CAPM3 manager.
//!
//! The CRDs are upstream's: BMO's `config/base/crds/bases` and CAPM3's rendered
//! `infrastructure-components.yaml` (collected by build.sh). CAPM3's conversion and admission
//! webhooks are pointed at loopback like CAPI's ([`crate::capi::point_webhooks_at`]). BMO runs
//! without its webhooks (`-webhook-port=0`).

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::Testbed;
use crate::capi::point_webhooks_at;
use crate::process::{free_port, http_get, wait_until};
use crate::resources::{self, kind_of};

pub(crate) async fn start(tb: &mut Testbed) -> Result<()> {
    start_bmo(tb).await?;
    start_capm3(tb).await
}

/// Installs BMO's CRDs and starts baremetal-operator (fixture provisioner) as a process.
pub(crate) async fn start_bmo(tb: &mut Testbed) -> Result<()> {
    let manifests = tb.cache.manifests();
    let bmo_crds = resources::load_yaml_path(&manifests.join("bmo/crd"))?;
    resources::install_crds(&tb.client, bmo_crds).await?;
    let kubeconfig = tb.kubeconfig.display().to_string();
    let bmo_health = free_port()?;
    let args = vec![
        "-test-mode".to_owned(),
        "-webhook-port=0".to_owned(),
        "-metrics-addr=0".to_owned(),
        format!("-health-addr=127.0.0.1:{bmo_health}"),
    ];
    let bin = tb.cache.bin("baremetal-operator");
    let bmo = tb.spawn(
        "baremetal-operator",
        &bin,
        &args,
        &[
            ("KUBECONFIG", &kubeconfig),
            ("POD_NAMESPACE", "baremetal-operator-system"),
        ],
    )?;
    wait_until(
        "baremetal-operator",
        bmo,
        Duration::from_secs(60),
        async || Ok(http_get(bmo_health, "/readyz")?.0 == 200),
    )
    .await
}

/// The namespace and Deployment of baremetal-operator's rendered manifests.
pub const BMO_DEPLOYMENT: (&str, &str) = (
    "baremetal-operator-system",
    "baremetal-operator-controller-manager",
);

/// baremetal-operator as the pod its own manifests describe (`config/default`, rendered by
/// build.sh: its CRDs, RBAC, webhooks and cert-manager certificate), with `--test-mode` added:
/// the fixture provisioner, as [`start_bmo`] runs it. Waits until the Deployment is Available.
/// Needs a node and cert-manager ([`crate::TestbedBuilder::node`] with `clusterctl_init`).
pub(crate) async fn start_bmo_pod(tb: &mut Testbed) -> Result<()> {
    let path = tb.cache.manifests().join("bmo/baremetal-operator.yaml");
    let (crds, mut rest): (Vec<Value>, Vec<Value>) = resources::load_yaml_path(&path)?
        .into_iter()
        .partition(|d| kind_of(d) == "CustomResourceDefinition");
    resources::install_crds(&tb.client, crds).await?;
    let mut patched = false;
    for d in rest.iter_mut().filter(|d| kind_of(d) == "Deployment") {
        if let Some(args) = d
            .pointer_mut("/spec/template/spec/containers/0/args")
            .and_then(Value::as_array_mut)
        {
            args.push(Value::from("--test-mode"));
            patched = true;
        }
    }
    if !patched {
        bail!("no Deployment with args in {}", path.display());
    }
    resources::apply_all(&tb.client, rest).await?;
    let (ns, name) = BMO_DEPLOYMENT;
    resources::wait_deployment_available(&tb.client, ns, name, Duration::from_secs(180)).await
}

/// Starts the CAPM3 manager as a process, its webhooks on loopback.
async fn start_capm3(tb: &mut Testbed) -> Result<()> {
    let manifests = tb.cache.manifests();
    let components = manifests.join("capm3/infrastructure-components.yaml");
    let webhook_port = free_port()?;
    let wanted = [
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ];
    let patched: Vec<Value> = resources::load_yaml_path(&components)?
        .into_iter()
        .filter(|d| wanted.contains(&kind_of(d)))
        .map(|d| point_webhooks_at(d, webhook_port, tb.ca_pem()))
        .collect();
    let (crds, hooks): (Vec<Value>, Vec<Value>) = patched
        .into_iter()
        .partition(|d| kind_of(d) == "CustomResourceDefinition");
    if crds.is_empty() {
        bail!("no CRDs in {}", components.display());
    }
    crate::capi::install_or_repoint_crds(tb, crds, webhook_port).await?;

    let kubeconfig = tb.kubeconfig.display().to_string();
    let cert_dir = tb.dir.join("capm3-webhook");
    std::fs::create_dir_all(&cert_dir)?;
    let serving = tb.serving_cert("capm3-webhook")?;
    std::fs::write(cert_dir.join("tls.crt"), &serving.cert_pem)?;
    std::fs::write(cert_dir.join("tls.key"), &serving.key_pem)?;
    let health = free_port()?;
    let args = vec![
        "--leader-elect=false".to_owned(),
        format!("--webhook-port={webhook_port}"),
        format!("--webhook-cert-dir={}", cert_dir.display()),
        format!("--health-addr=127.0.0.1:{health}"),
        format!("--diagnostics-address=127.0.0.1:{}", free_port()?),
        "--insecure-diagnostics=true".to_owned(),
        "--v=2".to_owned(),
    ];
    let bin = tb.cache.bin("capm3-manager");
    let capm3 = tb.spawn(
        "capm3-manager",
        &bin,
        &args,
        &[
            ("KUBECONFIG", &kubeconfig),
            ("POD_NAMESPACE", "capm3-system"),
        ],
    )?;
    wait_until(
        "capm3-manager",
        capm3,
        Duration::from_secs(90),
        async || Ok(http_get(health, "/readyz")?.0 == 200),
    )
    .await?;
    crate::capi::apply_or_repoint_hooks(tb, hooks, webhook_port).await
}

//! Both managers' webhook servers on loopback, for the tests that send objects through the real
//! kube-apiserver (`conversion.rs`, `bad_input.rs`; included with `#[path]`): each manager's
//! conversion, validation and defaulting routers over TLS with a certificate of the testbed CA,
//! our CRDs' conversion pointed at them, and each manager's Validating- and
//! MutatingWebhookConfiguration installed as its release installs them and pointed at its
//! server, as the webhook Service and cert-manager's CA injector do in a cluster.

use std::sync::Arc;

use manager::webhook::{
    Converter, conversion_router, mutation_router, serve_tls, validation_router,
};
use testbed::Testbed;
use tokio::sync::watch;

/// The webhook servers; they stop when this is dropped.
pub struct Webhooks {
    _stop: watch::Sender<bool>,
}

/// Starts both managers' webhook servers and points the testbed's CRDs and the releases'
/// ValidatingWebhookConfigurations at them.
pub async fn serve(tb: &Testbed) -> Webhooks {
    let (stop, stopped) = watch::channel(false);
    let controlplane_port = serve_conversion(
        tb,
        "controlplane",
        Arc::new(|o, v| {
            provider_api::controlplane::conversion::convert(o, v)
                .map_err(|e| manager::webhook::Refusal::because(e.to_string()))
        }),
        &["openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io"],
        stopped.clone(),
    )
    .await;
    let bootstrap_port = serve_conversion(
        tb,
        "bootstrap",
        Arc::new(|o, v| {
            provider_api::bootstrap::conversion::convert(o, v)
                .map_err(|e| manager::webhook::Refusal::because(e.to_string()))
        }),
        &[
            "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io",
            "openshiftassistedconfigtemplates.bootstrap.cluster.x-k8s.io",
        ],
        stopped,
    )
    .await;

    // Each manager's validating webhook, as its release installs it, on that manager's server.
    for (manifest, port) in [
        (
            controlplane_provider::manifests::provider_manifest(),
            controlplane_port,
        ),
        (
            bootstrap_provider::manifests::provider_manifest(),
            bootstrap_port,
        ),
    ] {
        let config = manifest
            .validating_webhook_configuration()
            .expect("the manager validates");
        tb.apply_yaml(&config.to_string())
            .await
            .expect("install the ValidatingWebhookConfiguration");
        tb.point_validating_webhooks(config["metadata"]["name"].as_str().unwrap(), port)
            .await
            .expect("point it at the webhook server");
        if let Some(config) = manifest.mutating_webhook_configuration() {
            tb.apply_yaml(&config.to_string())
                .await
                .expect("install the MutatingWebhookConfiguration");
            testbed::resources::repoint_existing(&tb.client, &config, port, tb.ca_pem())
                .await
                .expect("point it at the webhook server");
        }
    }
    Webhooks { _stop: stop }
}

/// Serves `convert` (and the manager's validation) on a loopback port with a certificate of the
/// testbed CA and points `crds` at it.
async fn serve_conversion(
    tb: &Testbed,
    name: &str,
    convert: Converter,
    crds: &[&str],
    stop: watch::Receiver<bool>,
) -> u16 {
    let dir = tb.dir.join(format!("{name}-webhook"));
    tb.write_serving_cert(name, &dir)
        .expect("serving certificate");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let port = listener.local_addr().unwrap().port();
    let mut router = conversion_router(convert);
    if name == "controlplane" {
        router = router
            .merge(validation_router(
                controlplane_provider::admission::VALIDATE_PATH,
                controlplane_provider::admission::review,
            ))
            .merge(mutation_router(
                controlplane_provider::admission::MUTATE_PATH,
                controlplane_provider::admission::default_patch,
            ));
    } else {
        for path in [
            bootstrap_provider::admission::VALIDATE_CONFIG_PATH,
            bootstrap_provider::admission::VALIDATE_TEMPLATE_PATH,
        ] {
            router = router.merge(validation_router(
                path,
                provider_api::bootstrap::validation::review,
            ));
        }
    }
    tokio::spawn(serve_tls(listener, dir, router, stop));
    for crd in crds {
        tb.point_conversion_webhook(crd, port)
            .await
            .expect("point the CRD at the webhook");
    }
    port
}

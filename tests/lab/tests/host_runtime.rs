//! A simulated host's container runtime against the test bed's real registry behind its https
//! front: it pulls through the mirrors of its registries.conf with the CA and the pull
//! secret's credentials, and fails as podman would without them.

use std::sync::{Arc, Mutex};

use agent_sim::ContainerRuntime;
use base64::Engine;
use lab::mirror::{HostRuntime, registries_conf};
use testbed::registry::{Gate, Registry, push_small_image};

fn secret(host: &str, password: &str) -> String {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("mirror:{password}"));
    serde_json::json!({"auths": {host: {"auth": auth}}}).to_string()
}

#[tokio::test]
async fn a_host_pulls_through_its_mirror_or_says_why_not() {
    if testbed::skip() {
        return;
    }
    let registry = Registry::start().expect("the test bed's registry");
    let pushed = push_small_image(&format!(
        "{}/edge-infrastructure/assisted-installer:latest",
        registry.host
    ))
    .expect("push");
    let digest = pushed.split_once('@').unwrap().1.to_string();
    let gate = Gate::start(&registry, "mirror", "s3cret")
        .await
        .expect("gate");
    let conf = registries_conf(&gate.host);
    let image = format!("quay.io/edge-infrastructure/assisted-installer@{digest}");
    let log = Arc::new(Mutex::new(Vec::new()));
    let runtime = |ca: &str, password: &str| {
        HostRuntime::new(
            "master-0",
            Some(&conf),
            Some(ca),
            Some(&secret(&gate.host, password)),
            log.clone(),
        )
        .unwrap()
    };

    let pulled = runtime(&gate.ca_pem, "s3cret").pull(&image).await.unwrap();
    assert_eq!(
        pulled.from,
        format!(
            "{}/edge-infrastructure/assisted-installer@{digest}",
            gate.host
        )
    );
    assert!(pulled.size_bytes > 0.0);
    assert_eq!(log.lock().unwrap().len(), 1, "the pull is kept");

    // A wrong password: the mirror refuses, then quay.io is not reachable from the test bed.
    let e = runtime(&gate.ca_pem, "wrong")
        .pull(&image)
        .await
        .unwrap_err();
    assert!(e.contains(&gate.host) && e.contains("quay.io"), "{e}");
    // A CA the mirror does not chain to: the TLS error names the certificate.
    let other = testbed::certs::Ca::new("not the mirror's")
        .unwrap()
        .cert_pem;
    let e = runtime(&other, "s3cret").pull(&image).await.unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    // An image the mirror does not have.
    let missing = format!(
        "quay.io/edge-infrastructure/assisted-installer@sha256:{}",
        "0".repeat(64)
    );
    let e = runtime(&gate.ca_pem, "s3cret")
        .pull(&missing)
        .await
        .unwrap_err();
    assert!(e.contains(&gate.host), "{e}");
}

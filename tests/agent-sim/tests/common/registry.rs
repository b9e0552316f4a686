//! The test bed's real OCI registry (`testbed::registry`) for the tests that read images from
//! one, failing the test when it cannot run: included with `#[path]` by the tests that need it.
#![allow(dead_code, unused_imports)]

pub use testbed::registry::{Gate, Registry, cache};

pub fn start_registry() -> Registry {
    Registry::start().expect("start the test bed's registry")
}

/// Runs crane, giving back its stdout (a pushed image's pull spec by digest).
pub fn crane_run(args: &[&str]) -> String {
    testbed::registry::crane_run(args).expect("crane")
}

/// Pushes a one-layer image (a small file) as `reference`; gives back its pull spec by digest.
pub fn push_small_image(reference: &str) -> String {
    testbed::registry::push_small_image(reference).expect("push an image")
}

pub async fn start_gate(registry: &Registry, user: &str, password: &str) -> Gate {
    Gate::start(registry, user, password)
        .await
        .expect("start the registry's TLS front")
}

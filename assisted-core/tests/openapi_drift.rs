//! The committed `openapi.yaml` must match what the code generates.

use std::path::Path;

const REGENERATE: &str = "UPDATE_OPENAPI=1 cargo test -p assisted-core --test openapi_drift";

#[test]
fn committed_openapi_matches_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.yaml");
    let generated = assisted_core::service::http::openapi_yaml();
    assert!(generated.contains("/infra-envs/{infra_env_id}/hosts"));
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).expect("write openapi.yaml");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "assisted-core/openapi.yaml is out of date (first difference at line {}); \
             regenerate it with `{REGENERATE}` and commit it",
            first + 1
        );
    }
}

/// Every step type and host stage the core sends or accepts is one of the enum values the
/// document declares (upstream's), so a client validating against it never rejects ours.
#[test]
fn declared_enums_cover_the_domain() {
    use assisted_core::domain::{HostStage, StepType};
    let doc: serde_json::Value =
        serde_yaml::from_str(&assisted_core::service::http::openapi_yaml()).expect("YAML");
    let values = |name: &str| -> Vec<String> {
        doc["components"]["schemas"][name]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} has no enum"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let step_types = values("StepType");
    for t in StepType::ALL {
        assert!(step_types.contains(&t.as_str().to_string()), "{t:?}");
    }
    let stages = values("HostStage");
    for s in HostStage::ALL {
        assert!(stages.contains(&s.as_str().to_string()), "{s:?}");
    }
}

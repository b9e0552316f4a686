use super::*;
use crate::api::agent::{AgentSpec, HostRole as SpecRole};
use crate::domain::HostRole;

#[test]
fn spec_maps_roles_and_disks() {
    let (s, e) = host_spec(&AgentSpec {
        role: SpecRole::Master,
        approved: true,
        installation_disk_path: Some("/dev/sda".into()),
        hostname: Some(String::new()),
        ..Default::default()
    });
    assert!(e.is_none());
    assert_eq!(s.role, HostRole::Master);
    assert!(s.approved);
    assert_eq!(s.installation_disk_id.as_deref(), Some("/dev/sda"));
    assert_eq!(s.hostname, None);
    let (s, _) = host_spec(&AgentSpec::default());
    assert_eq!(s.role, HostRole::AutoAssign);
}

#[test]
fn bad_installer_args_are_an_input_error() {
    let (_, e) = host_spec(&AgentSpec {
        installer_args: Some("--append-karg foo".into()),
        ..Default::default()
    });
    assert!(e.unwrap().contains("installerArgs"));
    let (_, e) = host_spec(&AgentSpec {
        installer_args: Some(r#"["--append-karg","foo"]"#.into()),
        ..Default::default()
    });
    assert!(e.is_none());
}

#[test]
fn ignition_overrides_and_node_labels_reach_the_host() {
    let ov = r#"{"ignition":{"version":"3.1.0"},"storage":{"files":[]}}"#;
    let (s, e) = host_spec(&AgentSpec {
        ignition_config_overrides: Some(ov.into()),
        node_labels: [("metal3.io/uuid".to_string(), "u1".to_string())].into(),
        ..Default::default()
    });
    assert!(e.is_none());
    assert_eq!(s.ignition_config_overrides.as_deref(), Some(ov));
    assert_eq!(s.node_labels["metal3.io/uuid"], "u1");
}

#[test]
fn an_override_the_install_would_refuse_is_an_input_error_and_dropped() {
    for bad in [
        "{oops",
        "[1]",
        r#"{"storage":{}}"#,
        r#"{"ignition":{"version":"2.2.0"}}"#,
    ] {
        let (s, e) = host_spec(&AgentSpec {
            ignition_config_overrides: Some(bad.into()),
            ..Default::default()
        });
        let e = e.unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(e.contains("ignitionConfigOverrides"), "{e}");
        assert_eq!(s.ignition_config_overrides, None);
    }
}

#[test]
fn binding_problems_are_reported_not_ignored() {
    let a = Some(("ns", "a"));
    let b = Some(("ns", "b"));
    assert_eq!(binding_error(a, a, true), None);
    assert_eq!(binding_error(None, None, true), None);
    let e = binding_error(b, a, false).unwrap();
    assert!(e.contains("name b in namespace ns: not found"), "{e}");
    let e = binding_error(b, a, true).unwrap();
    assert!(
        e.contains("bound to ClusterDeployment ns/a") && e.contains("not supported"),
        "{e}"
    );
    let e = binding_error(b, None, true).unwrap();
    assert!(e.contains("ns/b") && e.contains("clusterRef"), "{e}");
    let e = binding_error(b, None, false).unwrap();
    assert!(e.contains("not found"), "{e}");
    let e = binding_error(None, a, true).unwrap();
    assert!(e.contains("unbinding"), "{e}");
}

#[test]
fn plan_keeps_the_approval_while_the_binding_is_wrong() {
    let spec = AgentSpec {
        approved: true,
        ..Default::default()
    };
    let bound = Some(("ns".to_string(), "c1".to_string()));
    let read = Dereferenced {
        wanted: bound.clone(),
        bound: bound.clone(),
        approved_now: false,
        wanted_exists: true,
    };
    let p = plan(&spec, &read);
    assert!(p.spec.approved);
    assert_eq!((p.spec_error, p.recheck), (None, None));

    let moved = Dereferenced {
        wanted: Some(("ns".into(), "c2".into())),
        ..read.clone()
    };
    let p = plan(&spec, &moved);
    assert!(!p.spec.approved);
    assert!(p.spec_error.unwrap().contains("moving it to ns/c2"));

    let missing = Dereferenced {
        wanted_exists: false,
        ..moved
    };
    let p = plan(&spec, &missing);
    assert!(p.spec_error.unwrap().contains("not found"));
    assert_eq!(p.recheck, Some(std::time::Duration::from_secs(60)));
}

#[test]
fn plan_reports_fields_the_core_ignores_on_spec_synced() {
    let spec = AgentSpec {
        approved: true,
        ignition_endpoint_token_reference: Some(Default::default()),
        ..Default::default()
    };
    let bound = Some(("ns".to_string(), "c1".to_string()));
    let read = Dereferenced {
        wanted: bound.clone(),
        bound,
        approved_now: false,
        wanted_exists: true,
    };
    let p = plan(&spec, &read);
    assert_eq!(
        p.spec_error.as_deref(),
        Some("spec.ignitionEndpointTokenReference is not supported yet")
    );
    // The rest of the spec still applies.
    assert!(p.spec.approved);
}

use std::collections::BTreeMap;

use super::*;
use crate::api::infraenv::InfraEnvStatus;
use crate::service::auth::{Claims, Keys};
use crate::service::tls::AgentTrust;
use crate::service::urls::ServiceUrls;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

#[test]
fn urls_carry_token_and_revision() {
    let u = ServiceUrls {
        agent_api: "http://10.0.0.1:8090".into(),
        images: "http://10.0.0.1:8091".into(),
    };
    let rev = |rev, ipxe_boot_order| ImageRevision {
        version: "4.17",
        arch: "x86_64",
        image_type: "minimal",
        rev,
        ipxe_boot_order,
    };
    let a = image_urls(&u, "ie1", "tok", &rev("abc", false));
    assert_eq!(
        a.iso,
        "http://10.0.0.1:8091/byapikey/tok/4.17/x86_64/minimal.iso?rev=abc"
    );
    assert!(
        a.boot
            .ipxe_script
            .contains("file_name=ipxe-script&api_key=tok")
    );
    assert!(
        a.boot
            .discovery_ignition_url
            .contains("infra-envs/ie1/downloads/files?file_name=discovery.ign")
    );
    let b = image_urls(&u, "ie1", "tok", &rev("abd", true));
    assert_ne!(a.iso, b.iso);
    assert!(
        b.boot
            .ipxe_script
            .ends_with("&ipxe_script_type=boot-order-control")
    );
}

#[test]
fn the_current_token_is_reused_only_for_the_same_infra_env() {
    let keys = Keys::generate().unwrap();
    let token = keys.sign(&Claims::infra_env("ie1"));
    let mut ie = InfraEnv::new("a", Default::default());
    ie.status = Some(InfraEnvStatus {
        iso_download_url: Some(format!(
            "http://x/byapikey/{token}/4.17/x86_64/full.iso?rev=1"
        )),
        ..Default::default()
    });
    assert_eq!(current_token(&ie, &keys, "ie1"), Some(token));
    assert_eq!(current_token(&ie, &keys, "ie2"), None);
    let other = Keys::generate().unwrap();
    assert_eq!(current_token(&ie, &other, "ie1"), None);
}

#[test]
fn revision_changes_with_any_part() {
    let a = content_rev(&[b"x", b"y"]);
    assert_eq!(a, content_rev(&[b"x", b"y"]));
    assert_ne!(a, content_rev(&[b"xy", b""]));
    assert_eq!(a.len(), 12);
}

fn decide_fixture() -> (InfraEnv, Dereferenced, ImageSettings) {
    let mut ie = InfraEnv::new("ie", Default::default());
    ie.metadata.namespace = Some("ns".into());
    ie.metadata.uid = Some("ie-uid".into());
    ie.spec.pull_secret_ref.name = "pull".into();
    let pull = Secret {
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".into(),
            k8s_openapi::ByteString(b"{\"auths\":{}}".to_vec()),
        )])),
        ..Default::default()
    };
    let read = Dereferenced {
        pull_secret: Some(pull),
        cluster: Some(BoundCluster::Registered {
            id: "cd-uid".into(),
            name: "c1".into(),
            version: "4.17.3".into(),
        }),
        nmstate_configs: Vec::new(),
        token: "tok".into(),
        agent_trust: AgentTrust::Plain,
        mirror_registry: None,
    };
    let settings = ImageSettings {
        urls: ServiceUrls {
            agent_api: "http://core:8090".into(),
            images: "http://core:8091".into(),
        },
        agent_image: "quay.io/edge-infrastructure/assisted-installer-agent:latest".into(),
        os_images: vec![crate::service::images::OsImage {
            openshift_version: "4.17".into(),
            cpu_architecture: "x86_64".into(),
            url: "file:///base.iso".into(),
            version: "417.94.202410090854-0".into(),
        }],
        serving: None,
    };
    (ie, read, settings)
}

#[test]
fn no_base_iso_no_url_but_a_condition_saying_what_to_configure() {
    let (ie, read, mut settings) = decide_fixture();
    settings.os_images.clear();
    let Err(Problem::Error(why)) = decide(&ie, &read, &settings) else {
        panic!("an image without a base ISO")
    };
    assert!(
        why.contains("no base OS image for OpenShift 4.17.3 on x86_64")
            && why.contains("--os-images"),
        "{why}"
    );
    let (status, _) = status(&ie, &decide(&ie, &read, &settings), Timestamp::UNIX_EPOCH);
    assert!(status.iso_download_url.is_none());
    // Another architecture has none either.
    let (mut arm, read, settings) = decide_fixture();
    arm.spec.cpu_architecture = Some(serde_json::from_value(serde_json::json!("arm64")).unwrap());
    assert!(decide(&arm, &read, &settings).is_err());
}

#[test]
fn an_https_agent_api_waits_for_its_certificate_then_the_image_carries_the_ca() {
    let (ie, mut read, mut settings) = decide_fixture();
    settings.urls.agent_api = "https://10.244.0.1:30890".into();
    read.agent_trust = AgentTrust::Pending;
    assert_eq!(
        decide(&ie, &read, &settings).unwrap_err(),
        Problem::CertificatePending
    );
    let (status, event) = status(&ie, &decide(&ie, &read, &settings), Timestamp::UNIX_EPOCH);
    let cond = &status.conditions[0];
    assert_eq!(
        (
            cond.type_.as_str(),
            cond.status.as_str(),
            cond.reason.as_deref()
        ),
        ("ImageCreated", "Unknown", Some("ServingCertificatePending"))
    );
    assert!(status.iso_download_url.is_none() && event.is_none());

    read.agent_trust = AgentTrust::Verify(Some("-----BEGIN CERTIFICATE-----\nCA\n".into()));
    let (rec, urls) = decide(&ie, &read, &settings).unwrap();
    let boot = crate::service::images::parse_discovery_ignition(&rec.discovery_ignition).unwrap();
    assert_eq!(boot.service_url, "https://10.244.0.1:30890");
    assert!(boot.cacert_path.is_some());
    assert!(!boot.insecure);
    // Another CA is another image.
    read.agent_trust = AgentTrust::Verify(Some("other".into()));
    assert_ne!(decide(&ie, &read, &settings).unwrap().1.iso, urls.iso);
}

#[test]
fn the_mirror_config_map_reaches_the_discovery_ignition_or_names_its_error() {
    let (ie, mut read, settings) = decide_fixture();
    let before = decide(&ie, &read, &settings).unwrap().1.iso;
    let cm = ConfigMap {
        data: Some(BTreeMap::from([(
            "registries.conf".to_string(),
            "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"mirror.example.com/ocp\"\n".to_string(),
        )])),
        ..ConfigMap::default()
    };
    read.mirror_registry = Some(("mirrors".into(), Some(cm)));
    let (rec, urls) = decide(&ie, &read, &settings).unwrap();
    let ign = rec.discovery_ignition.to_string();
    assert!(ign.contains("/etc/containers/registries.conf"), "{ign}");
    // A new image: its URL moves.
    assert_ne!(urls.iso, before);

    read.mirror_registry = Some(("mirrors".into(), None));
    let Err(Problem::Error(why)) = decide(&ie, &read, &settings) else {
        panic!("a missing ConfigMap is an error");
    };
    assert_eq!(
        why,
        "mirror registry ConfigMap mirrors (spec.mirrorRegistryRef) not found"
    );
}

#[test]
fn decide_builds_the_record_with_the_given_token() {
    let (ie, read, settings) = decide_fixture();
    let (rec, urls) = decide(&ie, &read, &settings).unwrap();
    assert_eq!(rec.token, "tok");
    assert_eq!(rec.cluster_id.as_deref(), Some("cd-uid"));
    assert_eq!(rec.openshift_version, "4.17.3");
    assert!(
        urls.iso
            .contains("/byapikey/tok/4.17.3/x86_64/minimal.iso?rev=")
    );
    // Same inputs, same URL: nothing moves between reconciles.
    assert_eq!(decide(&ie, &read, &settings).unwrap().1, urls);
}

#[test]
fn the_record_carries_the_ntp_sources_and_kernel_arguments_the_image_gets() {
    let (mut ie, read, settings) = decide_fixture();
    ie.spec.additional_ntp_sources = vec!["clock.example.com, 10.0.0.1".into()];
    ie.spec.ntp_sources = vec!["pool.ntp.org".into()];
    ie.spec.kernel_arguments = serde_json::from_value(serde_json::json!([
        {"operation": "append", "value": "console=ttyS0"},
        {"value": "rd.neednet=1"},
    ]))
    .unwrap();
    let (rec, _) = decide(&ie, &read, &settings).unwrap();
    assert_eq!(
        rec.ntp_sources,
        ["clock.example.com", "10.0.0.1", "pool.ntp.org"]
    );
    assert_eq!(rec.kernel_arguments, ["console=ttyS0", "rd.neednet=1"]);
}

#[test]
fn decide_names_what_is_missing() {
    let (ie, mut read, settings) = decide_fixture();
    read.pull_secret = None;
    assert!(matches!(
        decide(&ie, &read, &settings),
        Err(Problem::Error(e)) if e.contains("pull secret pull")
    ));
    let (ie, mut read, settings) = decide_fixture();
    read.cluster = Some(BoundCluster::Unregistered {
        namespace: "ns".into(),
        name: "c1".into(),
    });
    assert_eq!(
        decide(&ie, &read, &settings).unwrap_err(),
        Problem::MissingCluster("ClusterDeployment ns/c1 is not registered yet".into())
    );
}

#[test]
fn status_announces_a_new_url_and_a_first_error_once() {
    let (mut ie, read, settings) = decide_fixture();
    let now = Timestamp::from_second(1_000).unwrap();
    let outcome = decide(&ie, &read, &settings);
    let (st, event) = status(&ie, &outcome, now);
    assert_eq!(event.unwrap().reason, "ImageCreated");
    assert_eq!(st.created_time, Some(Time(now)));
    ie.status = Some(st.clone());
    let later = Timestamp::from_second(2_000).unwrap();
    let (again, event) = status(&ie, &outcome, later);
    assert_eq!(event, None);
    assert_eq!(again.created_time, Some(Time(now)));

    let failed = Err(Problem::Error("bad proxy".into()));
    let (st, event) = status(&ie, &failed, later);
    assert!(event.unwrap().warning);
    ie.status = Some(st);
    assert_eq!(status(&ie, &failed, later).1, None);
}

#[test]
fn a_field_not_supported_yet_gets_its_own_condition_and_the_image_stays() {
    let (mut ie, read, settings) = decide_fixture();
    let now = Timestamp::from_second(1_000).unwrap();
    let outcome = decide(&ie, &read, &settings);
    let (st, _) = status(&ie, &outcome, now);
    assert_eq!(
        st.conditions.len(),
        1,
        "only ImageCreated when nothing is unsupported"
    );

    ie.spec.approved_mac_address_config_map_label_selector = Some(Default::default());
    let outcome = decide(&ie, &read, &settings);
    let (st, _) = status(&ie, &outcome, now);
    let types: Vec<&str> = st.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["ImageCreated", "FieldsSupported"]);
    assert_eq!(
        st.conditions[0].reason.as_deref(),
        Some("InfraEnvAvailable")
    );
    let c = &st.conditions[1];
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("False", Some("UnsupportedFields"))
    );
    assert!(
        c.message
            .as_deref()
            .unwrap_or_default()
            .contains("spec.approvedMACAddressConfigMapLabelSelector is not supported yet"),
        "{c:?}"
    );
    assert!(st.iso_download_url.is_some());
}

#[test]
fn new_agents_carry_their_infraenvs_shard() {
    let mut ie = InfraEnv::new("ie", Default::default());
    ie.spec.agent_labels = BTreeMap::from([("team".to_string(), "edge".to_string())]);
    assert_eq!(plan::agent_labels(&ie), ie.spec.agent_labels);
    ie.metadata.labels = Some(BTreeMap::from([(
        "cluster.x-k8s.io/watch-filter".to_string(),
        "east".to_string(),
    )]));
    let labels = plan::agent_labels(&ie);
    assert_eq!(labels["cluster.x-k8s.io/watch-filter"], "east");
    assert_eq!(labels["team"], "edge");
}

#[test]
fn a_status_written_a_moment_ago_stands_while_the_cache_lags() {
    let (ie, read, settings) = decide_fixture();
    let outcome = decide(&ie, &read, &settings);
    let first = Timestamp::from_second(1_000).unwrap();
    let (written, event) = status(&ie, &outcome, first);
    assert!(event.is_some(), "the image's first URL is announced");

    // The next reconcile, before the watch shows the write: the cached InfraEnv has no status.
    let later = Timestamp::from_second(1_003).unwrap();
    let lagging = super::as_written(&ie, Some(written.clone()));
    let (again, event) = status(&lagging, &outcome, later);
    assert_eq!(event, None, "said once");
    assert_eq!(
        again, written,
        "nothing to write: the same status, the same createdTime"
    );
    assert_eq!(lagging.status.as_ref(), Some(&again));

    // Without the memory the core decided from the cache: a second write and event.
    let (from_cache, event) = status(&ie, &outcome, later);
    assert!(event.is_some());
    assert_ne!(from_cache.created_time, written.created_time);
}

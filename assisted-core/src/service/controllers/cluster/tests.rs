use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use super::*;
use crate::api::agentclusterinstall::{AgentClusterInstallSpec, ProvisionRequirements};
use crate::api::agentclusterinstall::{
    DiskEncryptionEnableOn, DiskEncryptionMode, INSTALL_CONFIG_OVERRIDES_ANNOTATION,
    LoadBalancerType, NetworkType, PlatformType as AciPlatform,
};
use crate::api::hive::ClusterDeploymentSpec;
use crate::api::hive::ClusterImageSet;
use crate::domain::{ClusterSnapshot, ClusterStatus, PlatformType};
use crate::service::store::{ClusterRecord, ClusterSettings};

/// The input error `cluster_config` answers, as the condition shows it.
fn config_error(cd: &ClusterDeployment, aci: &AgentClusterInstall, v: (String, String)) -> String {
    cluster_config(cd, aci, v).unwrap_err().to_string()
}

#[test]
fn versions_come_from_release_tags() {
    assert_eq!(
        release_from_tag("quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"),
        (Some("4.17.3".into()), "x86_64".into())
    );
    assert_eq!(
        release_from_tag("quay.io/okd/scos-release:4.18.0-okd-scos.9"),
        (Some("4.18.0-okd-scos.9".into()), "x86_64".into())
    );
    assert_eq!(
        release_from_tag("registry:5000/ocp-release:4.16.0-aarch64").1,
        "aarch64"
    );
    assert_eq!(release_from_tag("quay.io/x/y@sha256:abc").0, None);
    assert_eq!(release_from_tag("registry:5000/ocp-release").0, None);
}

#[test]
fn a_release_pinned_by_digest_takes_version_and_architecture_from_annotations() {
    let mut cis = ClusterImageSet::new(
        "ns.c1",
        crate::api::hive::ClusterImageSetSpec {
            release_image: "quay.io/openshift-release-dev/ocp-release@sha256:abc".into(),
        },
    );
    assert!(TagReleaseInfo.version(&cis).is_err());
    cis.metadata.annotations = Some(
        [
            (RELEASE_VERSION_ANNOTATION.to_string(), "4.17.3".to_string()),
            (
                RELEASE_ARCHITECTURE_ANNOTATION.to_string(),
                "aarch64".to_string(),
            ),
        ]
        .into(),
    );
    assert_eq!(
        TagReleaseInfo.version(&cis),
        Ok(("4.17.3".into(), "aarch64".into()))
    );
}

fn cd() -> ClusterDeployment {
    ClusterDeployment::new(
        "c1",
        ClusterDeploymentSpec {
            cluster_name: "c1".into(),
            base_domain: "example.com".into(),
            ..Default::default()
        },
    )
}

fn aci(cp: i32, workers: i32) -> AgentClusterInstall {
    AgentClusterInstall::new(
        "c1",
        AgentClusterInstallSpec {
            provision_requirements: ProvisionRequirements {
                control_plane_agents: cp,
                worker_agents: workers,
                arbiter_agents: 0,
            },
            api_vips: vec!["192.168.111.5".into()],
            ingress_vips: vec!["192.168.111.4".into()],
            ..Default::default()
        },
    )
}

#[test]
fn config_maps_counts_vips_and_platform() {
    let c = cluster_config(&cd(), &aci(3, 2), ("4.17.3".into(), "x86_64".into())).unwrap();
    assert_eq!((c.control_plane_count, c.worker_count), (3, 2));
    assert_eq!(c.platform, PlatformType::BareMetal);
    assert_eq!(c.api_vips, vec!["192.168.111.5".to_string()]);
    let sno = cluster_config(&cd(), &aci(1, 0), ("4.17.3".into(), "x86_64".into())).unwrap();
    assert_eq!(sno.platform, PlatformType::None);
    assert!(sno.user_managed_networking);
}

#[test]
fn manifests_come_from_config_map_keys() {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("m".into());
    cm.data = Some(BTreeMap::from([("50-a.yaml".into(), "kind: X".into())]));
    assert_eq!(
        manifests_of(&cm).unwrap(),
        vec![("50-a.yaml".to_string(), b"kind: X".to_vec())]
    );
    cm.data = Some(BTreeMap::from([("../a.yaml".into(), "x".into())]));
    assert!(
        manifests_of(&cm)
            .unwrap_err()
            .to_string()
            .contains("../a.yaml")
    );
}

#[test]
fn config_rejects_bad_counts_and_missing_vips() {
    let e = config_error(&cd(), &aci(2, 0), ("4.17".into(), "x86_64".into()));
    assert!(e.contains("controlPlaneAgents"), "{e}");
    let mut a = aci(3, 0);
    a.spec.api_vips.clear();
    let e = config_error(&cd(), &a, ("4.17".into(), "x86_64".into()));
    assert!(e.contains("apiVIPs"), "{e}");
}

#[test]
fn config_refuses_names_and_keys_the_installer_would() {
    let v = || ("4.17.3".to_string(), "x86_64".to_string());
    let mut bad = cd();
    bad.spec.cluster_name = "Bad_Name!".into();
    let e = config_error(&bad, &aci(3, 2), v());
    assert!(e.starts_with("ClusterDeployment spec.clusterName"), "{e}");
    let mut bad = cd();
    bad.spec.base_domain = "bad_domain!.example".into();
    let e = config_error(&bad, &aci(3, 2), v());
    assert!(e.starts_with("ClusterDeployment spec.baseDomain"), "{e}");
    let mut a = aci(3, 2);
    a.spec.ssh_public_key = Some("not a key".into());
    let e = config_error(&cd(), &a, v());
    assert!(e.starts_with("spec.sshPublicKey"), "{e}");
}

#[test]
fn config_refuses_what_the_release_cannot_install() {
    let v = |s: &str| (s.to_string(), "x86_64".to_string());
    let mut sdn = aci(3, 2);
    sdn.spec.networking.network_type = Some(NetworkType::OpenShiftSDN);
    let e = config_error(&cd(), &sdn, v("4.17.3"));
    assert!(
        e.contains("networkType") && e.contains("OVNKubernetes"),
        "{e}"
    );
    assert!(cluster_config(&cd(), &sdn, v("4.14.2")).is_ok());
    let e = config_error(&cd(), &aci(5, 0), v("4.17.3"));
    assert!(e.contains("4.18"), "{e}");
    assert!(cluster_config(&cd(), &aci(5, 0), v("4.18.1")).is_ok());
    let mut tna = aci(2, 0);
    tna.spec.provision_requirements.arbiter_agents = 1;
    let e = config_error(&cd(), &tna, v("4.18.1"));
    assert!(e.contains("arbiter"), "{e}");
}

#[test]
fn config_rejects_networks_that_do_not_parse_and_bad_overrides() {
    let version = || ("4.17".to_string(), "x86_64".to_string());
    for bad in ["300.1.1.0/24", "banana", "10.0.0.0/33", "10.0.0.0"] {
        let mut a = aci(3, 2);
        a.spec.networking.service_network = vec![bad.into()];
        let e = config_error(&cd(), &a, version());
        assert!(e.contains("serviceNetwork") && e.contains(bad), "{e}");
    }
    let mut a = aci(3, 2);
    a.spec.api_vips = vec!["not-an-ip".into()];
    assert!(config_error(&cd(), &a, version()).contains("apiVIPs"));
    let mut a = aci(3, 2);
    a.metadata.annotations = Some(BTreeMap::from([(
        INSTALL_CONFIG_OVERRIDES_ANNOTATION.to_string(),
        "{not json".to_string(),
    )]));
    assert!(config_error(&cd(), &a, version()).contains(INSTALL_CONFIG_OVERRIDES_ANNOTATION));
    assert!(cluster_config(&cd(), &aci(3, 2), version()).is_ok());
}

fn plan_fixture() -> (ClusterDeployment, Dereferenced) {
    let mut cd = cd();
    cd.metadata.namespace = Some("ns".into());
    cd.metadata.uid = Some("cd-uid".into());
    cd.spec.cluster_install_ref = Some(crate::api::hive::ClusterInstallLocalReference {
        group: "extensions.hive.openshift.io".into(),
        version: "v1beta1".into(),
        kind: "AgentClusterInstall".into(),
        name: "c1".into(),
    });
    cd.spec.pull_secret_ref = Some(crate::api::common::LocalObjectReference {
        name: "pull".into(),
    });
    let mut aci = aci(3, 2);
    aci.spec.image_set_ref = Some(crate::api::agentclusterinstall::ClusterImageSetReference {
        name: "4.17".into(),
    });
    let pull = Secret {
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".into(),
            ByteString(b"{\"auths\":{}}".to_vec()),
        )])),
        ..Default::default()
    };
    let cis = ClusterImageSet::new(
        "4.17",
        crate::api::hive::ClusterImageSetSpec {
            release_image: "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64".into(),
        },
    );
    let read = Dereferenced {
        aci: Some(aci),
        pull_secret: Some(pull),
        image_set: Some(cis),
        ..Default::default()
    };
    (cd, read)
}

fn sync_plan(plan: Plan) -> SyncPlan {
    match plan {
        Plan::Sync(s) => *s,
        other => panic!("expected a sync plan, got {other:?}"),
    }
}

#[test]
fn a_pull_secret_of_the_wrong_shape_is_an_input_error() {
    let (cd, mut read) = plan_fixture();
    read.pull_secret.as_mut().unwrap().data = Some(BTreeMap::from([(
        ".dockerconfigjson".into(),
        ByteString(br#"{"auths":"nope"}"#.to_vec()),
    )]));
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    let e = p.spec_error.expect("an input error");
    assert!(e.starts_with("pull secret pull: "), "{e}");
}

#[test]
fn plan_waits_for_the_aci_and_deregisters_when_it_goes() {
    let (cd, mut read) = plan_fixture();
    assert_eq!(
        plan(&cd, &Dereferenced::default(), &TagReleaseInfo),
        Plan::WaitForAci
    );
    let aci = read.aci.as_mut().unwrap();
    aci.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        Timestamp::UNIX_EPOCH,
    ));
    aci.metadata.finalizers = Some(vec![ACI_FINALIZER.into()]);
    assert_eq!(
        plan(&cd, &read, &TagReleaseInfo),
        Plan::Deregister {
            release_finalizer: true
        }
    );
    read.aci.as_mut().unwrap().metadata.finalizers = Some(vec!["someone-else".into()]);
    assert_eq!(
        plan(&cd, &read, &TagReleaseInfo),
        Plan::Deregister {
            release_finalizer: false
        }
    );
}

#[test]
fn the_mirror_registry_config_map_reaches_the_settings_or_names_its_error() {
    let (cd, mut read) = plan_fixture();
    let cm = |conf: &str| ConfigMap {
        data: Some(BTreeMap::from([(
            "registries.conf".to_string(),
            conf.to_string(),
        )])),
        ..ConfigMap::default()
    };
    let good = "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"mirror.example.com/ocp\"\n";
    read.mirror_registry = Some(("mirrors".into(), Some(cm(good))));
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(p.spec_error, None);
    let mirrors = p.settings.mirrors.expect("parsed");
    assert_eq!(
        crate::domain::mirrors::image_digest_sources(&mirrors)[0].mirrors,
        ["mirror.example.com/ocp"]
    );

    // Missing, or malformed: an input error naming the ConfigMap (and the line), no mirrors.
    read.mirror_registry = Some(("mirrors".into(), None));
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(
        p.spec_error.as_deref(),
        Some("mirror registry ConfigMap mirrors (spec.mirrorRegistryRef) not found")
    );
    read.mirror_registry = Some(("mirrors".into(), Some(cm("[[registry]]\nlocation = \n"))));
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    let e = p.spec_error.unwrap();
    assert!(
        e.starts_with("mirror registry ConfigMap mirrors (spec.mirrorRegistryRef): ")
            && e.contains("line 2"),
        "{e}"
    );
    assert_eq!(p.settings.mirrors, None);
}

#[test]
fn plan_registers_the_cluster_and_names_input_errors() {
    let (cd, mut read) = plan_fixture();
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert!(p.add_aci_finalizer);
    assert_eq!(p.spec_error, None);
    assert_eq!(p.config.unwrap().openshift_version, "4.17.3");
    assert_eq!(p.settings.pull_secret, "{\"auths\":{}}");
    assert_eq!(p.credentials, None);
    assert_eq!(p.recheck, Duration::from_secs(10));

    read.pull_secret = None;
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(p.spec_error.as_deref(), Some("pull secret pull not found"));
    assert_eq!(p.config, None);

    let (cd, mut read) = plan_fixture();
    read.image_set = None;
    read.manifests = vec![("extra".into(), None)];
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(
        p.spec_error.as_deref(),
        Some("ClusterImageSet 4.17 not found")
    );

    let (cd, mut read) = plan_fixture();
    read.manifests = vec![("extra".into(), None)];
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(
        p.spec_error.as_deref(),
        Some("manifests ConfigMap extra not found")
    );
}

#[test]
fn disk_encryption_reaches_the_snapshot_or_is_an_input_error() {
    use crate::api::agentclusterinstall::DiskEncryption as AciEncryption;
    let version = || ("4.17".to_string(), "x86_64".to_string());
    let mut a = aci(3, 2);
    assert_eq!(
        cluster_config(&cd(), &a, version())
            .unwrap()
            .disk_encryption,
        None
    );
    a.spec.disk_encryption = Some(AciEncryption {
        enable_on: Some(DiskEncryptionEnableOn::MastersWorkers),
        mode: None,
        tang_servers: None,
    });
    let c = cluster_config(&cd(), &a, version()).unwrap();
    let enc = c.disk_encryption.clone().unwrap();
    assert_eq!(
        (enc.enable_on.as_str(), enc.mode.as_str()),
        ("masters,workers", "tpmv2")
    );
    let mut snap = ClusterSnapshot::new("c", "c", Timestamp::UNIX_EPOCH);
    c.apply(&mut snap);
    assert_eq!(snap.disk_encryption, Some(enc));

    // enableOn none is off.
    a.spec.disk_encryption.as_mut().unwrap().enable_on = Some(DiskEncryptionEnableOn::None);
    assert_eq!(
        cluster_config(&cd(), &a, version())
            .unwrap()
            .disk_encryption,
        None
    );

    // Tang needs servers.
    a.spec.disk_encryption = Some(AciEncryption {
        enable_on: Some(DiskEncryptionEnableOn::All),
        mode: Some(DiskEncryptionMode::Tang),
        tang_servers: Some("not json".into()),
    });
    let e = config_error(&cd(), &a, version());
    assert!(e.contains("tangServers"), "{e}");
    a.spec.disk_encryption.as_mut().unwrap().tang_servers =
        Some(r#"[{"url":"http://tang:7500","thumbprint":"t"}]"#.into());
    let enc = cluster_config(&cd(), &a, version())
        .unwrap()
        .disk_encryption
        .unwrap();
    assert_eq!((enc.enable_on.as_str(), enc.mode.as_str()), ("all", "tang"));
}

#[test]
fn ignition_endpoint_url_and_ca_reach_the_snapshot() {
    use crate::api::agentclusterinstall::IgnitionEndpoint as AciEndpoint;
    use crate::api::infraenv::NamespacedReference;
    let (cd, mut read) = plan_fixture();
    let aci = read.aci.as_mut().unwrap();
    aci.metadata.namespace = Some("ns".into());
    aci.spec.ignition_endpoint = Some(AciEndpoint {
        url: Some("https://ign.example.com:22623".into()),
        ca_certificate_reference: Some(NamespacedReference {
            name: "ign-ca".into(),
            namespace: String::new(),
        }),
    });
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(
        p.spec_error.as_deref(),
        Some("ignitionEndpoint.caCertificateReference: Secret ns/ign-ca not found")
    );
    assert_eq!(p.config, None);

    read.ignition_ca = Some(Secret {
        data: Some(BTreeMap::from([(
            "tls.crt".into(),
            ByteString(b"-----BEGIN CERTIFICATE-----".to_vec()),
        )])),
        ..Default::default()
    });
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(p.spec_error, None);
    let mut snap = ClusterSnapshot::new("c", "c1", Timestamp::UNIX_EPOCH);
    snap.base_domain = "example.com".into();
    p.config.unwrap().apply(&mut snap);
    assert_eq!(
        snap.ignition_endpoint.ca_certificate.as_deref(),
        Some("-----BEGIN CERTIFICATE-----")
    );
    // The release is known before the payload is read (the image availability check).
    assert_eq!(
        snap.release.release_image,
        "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"
    );
    // The day-2 pointer ignition and the connectivity check use the custom endpoint.
    assert_eq!(
        crate::domain::day2_ignition_url(&snap, "worker"),
        "https://ign.example.com:22623/config/worker"
    );

    read.ignition_ca.as_mut().unwrap().data = Some(BTreeMap::new());
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert!(p.spec_error.unwrap().contains("has no tls.crt key"));
}

#[test]
fn plan_reports_unsupported_fields_without_unconfiguring_the_cluster() {
    let (mut cd, mut read) = plan_fixture();
    read.aci.as_mut().unwrap().spec.platform_type =
        Some(crate::api::agentclusterinstall::PlatformType::VSphere);
    cd.spec.manage_dns = true;
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert!(
        p.spec_error
            .as_deref()
            .unwrap()
            .starts_with("spec.platformType is not supported yet"),
        "{:?}",
        p.spec_error
    );
    // The spec still applies: validations go on, only the install waits.
    assert!(p.config.is_some());
    assert_eq!(
        p.settings.unsupported_fields,
        vec!["ClusterDeployment spec.manageDNS is not supported yet".to_string()]
    );
    // A real input error comes first.
    read.pull_secret = None;
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(p.spec_error.as_deref(), Some("pull secret pull not found"));
}

#[test]
fn load_balancer_and_external_platform_reach_the_settings() {
    use crate::api::agentclusterinstall::{ExternalPlatformSpec, LoadBalancer};
    let (cd, mut read) = plan_fixture();
    let aci = read.aci.as_mut().unwrap();
    aci.spec.load_balancer = Some(LoadBalancer {
        type_: LoadBalancerType::UserManaged,
    });
    aci.spec.platform_type = Some(AciPlatform::External);
    aci.spec.external = Some(ExternalPlatformSpec {
        platform_name: Some("oci".into()),
        cloud_controller_manager: Some("External".into()),
    });
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    assert_eq!(p.spec_error, None);
    assert!(p.settings.user_managed_load_balancer);
    assert_eq!(
        p.settings
            .external_platform
            .cloud_controller_manager
            .as_deref(),
        Some("External")
    );
    assert_eq!(p.config.unwrap().platform, PlatformType::External);
}

fn record(status: ClusterStatus) -> RecordFacts {
    let mut snap = ClusterSnapshot::new("cd-uid", "c1", Timestamp::UNIX_EPOCH);
    snap.status = status;
    snap.base_domain = "example.com".into();
    RecordFacts::of(&ClusterRecord::new(snap, ClusterSettings::default()))
}

#[test]
fn name_and_domain_are_fixed_once_the_install_started() {
    let (mut cd, mut read) = plan_fixture();
    cd.spec.base_domain = "other.example.com".into();
    read.record = Some(record(ClusterStatus::Ready));
    assert_eq!(
        sync_plan(plan(&cd, &read, &TagReleaseInfo)).spec_error,
        None
    );
    read.record = Some(record(ClusterStatus::Installed));
    let p = sync_plan(plan(&cd, &read, &TagReleaseInfo));
    let e = p.spec_error.expect("refused");
    assert!(
        e.starts_with("ClusterDeployment spec.baseDomain cannot change"),
        "{e}"
    );
    assert!(p.config.is_none(), "the record keeps the installed names");
}

#[test]
fn credentials_follow_the_install() {
    let (cd, read) = plan_fixture();
    let aci = read.aci.unwrap();
    let files = ClusterFiles {
        kubeconfig: Some(b"final".to_vec()),
        kubeconfig_noingress: Some(b"early".to_vec()),
        metadata: Some(br#"{"clusterID":"ocp-id"}"#.to_vec()),
        kubeadmin_password: Some(b"pw".to_vec()),
    };
    // Nothing before the install, nor without a kubeconfig.
    assert_eq!(
        credentials(&cd, &aci, &record(ClusterStatus::Ready), &files),
        None
    );
    assert_eq!(
        credentials(
            &cd,
            &aci,
            &record(ClusterStatus::Installing),
            &ClusterFiles::default()
        ),
        None
    );

    let c = credentials(&cd, &aci, &record(ClusterStatus::Installing), &files).unwrap();
    assert_eq!(c.secrets.len(), 1);
    let kc = &c.secrets[0];
    assert_eq!(kc.metadata.name.as_deref(), Some("c1-admin-kubeconfig"));
    assert_eq!(kc.data.as_ref().unwrap()["kubeconfig"].0, b"early");
    assert_eq!(
        c.aci_cluster_metadata.as_ref().unwrap()["clusterID"],
        "ocp-id"
    );
    assert_eq!(
        (c.mark_installed.is_some(), c.day2, c.event.is_some()),
        (false, false, false)
    );

    let mut installed = record(ClusterStatus::Installed);
    installed.kubeconfig_uploaded = true;
    let c = credentials(&cd, &aci, &installed, &files).unwrap();
    assert_eq!(c.secrets.len(), 2);
    assert_eq!(
        c.secrets[0].data.as_ref().unwrap()["kubeconfig"].0,
        b"final"
    );
    assert_eq!(c.secrets[1].data.as_ref().unwrap()["password"].0, b"pw");
    let meta = c.mark_installed.unwrap();
    assert_eq!(meta["adminPasswordSecretRef"]["name"], "c1-admin-password");
    assert_eq!(c.event.unwrap().1.reason, "InstallationCompleted");
    assert!(c.day2);

    // A password Secret name the user chose is honoured.
    let mut named = cd.clone();
    named.spec.cluster_metadata = Some(crate::api::hive::ClusterMetadata {
        admin_password_secret_ref: Some(crate::api::common::LocalObjectReference {
            name: "my-password".into(),
        }),
        ..Default::default()
    });
    let c = credentials(&named, &aci, &installed, &files).unwrap();
    assert_eq!(c.secrets[1].metadata.name.as_deref(), Some("my-password"));

    // Marked installed already: no second mark, no second event.
    let mut done = cd.clone();
    done.spec.installed = true;
    let c = credentials(&done, &aci, &installed, &files).unwrap();
    assert_eq!((c.mark_installed, c.event), (None, None));
}

//! assisted-core's install step with the real `openshift-install` (4.17, built from its Go
//! module by `tests/openshift-install/build.sh`, which `make test` runs), taken as the core
//! takes it by default: from the cluster's release payload, here in the test bed's real OCI
//! registry (`crane registry serve`), laid out as a real payload. The install-config,
//! manifests and environment the core gives it, and what the core does to its output, on a
//! single-node cluster and on a 3+2 baremetal cluster with VIPs, a proxy, NTP sources, a trust
//! bundle, a mirror registry with its CA, user manifests (one multi-document, one patch) and
//! install-config overrides.
//! The installer failing fails the test, and so does any warning it prints but the two it
//! prints by design (the release-image override the core always sets, and masters made
//! schedulable in a cluster without workers): an unknown field is only a warning to it, and the
//! field is dropped.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agent_sim::HostProfile;
use agent_sim::profile::inventory_json;
use assisted_core::domain as dom;
use assisted_core::service::controllers::prepare::{
    InfraEnvInputs, generate_request, install_config_input,
};
use assisted_core::service::install::{
    ASSISTED_BOOTSTRAP_MARKER, BMH_STATUS_ANNOTATION, InstallArtifacts, InstallBackend,
    NM_RESOLV_UNMANAGED, OpenshiftInstallBackend, decode_data_url, generate_lab_pki,
    render_install_config_yaml,
};
use assisted_core::service::store::{ClusterRecord, ClusterSettings};
use serde_json::Value;

#[path = "common/registry.rs"]
mod registry;

use registry::{Registry, cache, crane_run, start_gate, start_registry};

const VERSION: &str = "v1.4.17";
const NET: &str = "192.168.111.0/24";
const RELEASE: &str = "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64";
const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOUoReQnS9x00eaicYi7jg0QQ9/1km0QlAyEpAiv3TR9 lab";
/// What the installer warns about on every such run, by design.
const EXPECTED_WARNINGS: &[&str] = &[
    "Making control-plane schedulable by setting MastersSchedulable to true for Scheduler cluster settings",
];

/// The installer build.sh built, which the payload's installer image carries.
fn installer() -> PathBuf {
    let bin = cache(&format!(
        "openshift-install-{VERSION}/bin/openshift-install"
    ));
    assert!(
        bin.exists(),
        "openshift-install {VERSION} is not built: run `bash tests/openshift-install/build.sh` \
         (make test does)"
    );
    bin
}

/// A release payload in the registry, laid out as a real one: the installer image (the real
/// binary at `usr/bin/openshift-install`, built by payload.sh) and a release image whose
/// `release-manifests/` hold `image-references` (an ImageStream naming every component by
/// digest) and `release-metadata`. Gives back the release image's pull spec by tag.
fn push_release(reg: &Registry, version: &str) -> String {
    let image = cache(&format!("openshift-install-{VERSION}/installer-image.tar"));
    assert!(
        image.exists(),
        "run `bash tests/openshift-install/payload.sh` (make test does)"
    );
    let installer = crane_run(&[
        "push",
        image.to_str().unwrap(),
        &format!("{}/ocp/installer:{version}", reg.host),
    ]);
    let component = |n: u8| {
        format!(
            "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
            format!("{n:02x}").repeat(32)
        )
    };
    let tag = |name: &str, from: &str| serde_json::json!({ "name": name, "from": { "kind": "DockerImage", "name": from } });
    let references = serde_json::json!({
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {
            "name": version,
            "annotations": { "io.openshift.build.versions": "kubernetes=1.30.5,kubectl=1.30.5" },
        },
        "spec": { "tags": [
            tag("installer", &installer),
            tag("machine-config-operator", &component(1)),
            tag("must-gather", &component(2)),
            tag("rhel-coreos", &component(3)),
        ]},
    });
    let metadata = serde_json::json!({
        "kind": "cincinnati-metadata-v0", "version": version, "previous": [], "metadata": {},
    });
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("root/release-manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("image-references"), references.to_string()).unwrap();
    std::fs::write(manifests.join("release-metadata"), metadata.to_string()).unwrap();
    let layer = dir.path().join("layer.tar");
    let status = std::process::Command::new("tar")
        .arg("-C")
        .arg(dir.path().join("root"))
        .arg("-cf")
        .arg(&layer)
        .arg("release-manifests")
        .status()
        .expect("run tar");
    assert!(status.success());
    let release = format!("{}/ocp/release:{version}-x86_64", reg.host);
    crane_run(&[
        "append",
        "--oci-empty-base",
        "-f",
        layer.to_str().unwrap(),
        "-t",
        &release,
    ]);
    release
}

/// A cluster ready to install: hosts with the inventories the simulator reports, roles fixed,
/// the first master the bootstrap host, each host having synced with a lab NTP server.
fn cluster(masters: u32, workers: u32) -> ClusterRecord {
    let now = jiff::Timestamp::now();
    let sno = masters == 1;
    let name = if sno { "sno" } else { "lab" };
    let mut c = dom::ClusterSnapshot::new("0e5b6f1c-8c1d-4c59-9d3e-2b1f6d3c1a01", name, now);
    c.base_domain = "example.com".into();
    c.openshift_version = "4.17.3".into();
    c.cpu_architecture = "x86_64".into();
    c.control_plane_count = masters;
    c.worker_count = workers;
    c.platform = if sno {
        dom::PlatformType::None
    } else {
        dom::PlatformType::BareMetal
    };
    c.user_managed_networking = sno;
    c.machine_networks = vec![NET.into()];
    c.cluster_networks = vec![dom::ClusterNetwork {
        cidr: "10.128.0.0/14".into(),
        host_prefix: 23,
    }];
    c.service_networks = vec!["172.30.0.0/16".into()];
    if !sno {
        c.api_vips = vec!["192.168.111.5".into()];
        c.ingress_vips = vec!["192.168.111.4".into()];
        c.schedulable_masters = true;
    }
    c.network_type = Some("OVNKubernetes".into());
    c.additional_ntp_source = "clock.lab.example.com".into();
    let profiles: Vec<(HostProfile, dom::HostRole)> = (0..masters)
        .map(|i| {
            let p = if sno {
                HostProfile::sno_like(i, NET)
            } else {
                HostProfile::master_like(i, NET)
            };
            (p.unwrap(), dom::HostRole::Master)
        })
        .chain((0..workers).map(|i| {
            (
                HostProfile::worker_like(i, NET).unwrap(),
                dom::HostRole::Worker,
            )
        }))
        .collect();
    for (i, (p, role)) in profiles.iter().enumerate() {
        let mut h = dom::HostSnapshot::new_registered(
            &p.uuid,
            "7c0e2a57-0d2b-4b0e-9d55-6a1c1f1f0b02",
            Some(&c),
            now,
        );
        h.role = *role;
        h.bootstrap = i == 0;
        h.requested_hostname = Some(p.hostname.clone());
        h.inventory = Some(serde_json::from_value(inventory_json(p)).expect("inventory"));
        h.ntp_sources = vec![
            serde_json::from_value(serde_json::json!({
                "source_name": "10.0.0.123", "source_state": "synced"
            }))
            .unwrap(),
        ];
        c.hosts.push(h);
    }
    let multi_doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: default}\ndata: {a: '1'}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: default}\ndata: {b: '2'}\n";
    let ingress_patch = "- op: add\n  path: /spec/appsDomain\n  value: apps.lab-alt.example.com\n";
    ClusterRecord::new(
        c,
        ClusterSettings {
            pull_secret: r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}"#.into(),
            ssh_public_key: SSH_KEY.into(),
            release_image: RELEASE.into(),
            proxy: (!sno).then(|| dom::Proxy {
                http_proxy: Some("http://proxy.lab.example.com:3128".into()),
                https_proxy: Some("http://proxy.lab.example.com:3128".into()),
                no_proxy: Some(".internal.example.com".into()),
            }),
            install_config_overrides: (!sno)
                .then(|| r#"{"capabilities":{"baselineCapabilitySet":"vCurrent"}}"#.into()),
            manifests: if sno {
                Vec::new()
            } else {
                vec![
                    ("50-config-maps.yaml".into(), multi_doc.as_bytes().to_vec()),
                    (
                        "cluster-ingress-02-config.yml.patch_apps_domain".into(),
                        ingress_patch.as_bytes().to_vec(),
                    ),
                ]
            },
            ..Default::default()
        },
    )
}

/// The core's install step for `rec`, its installer taken from the release payload (the
/// installers cached under `dir/installers`).
async fn generate_from_payload(
    rec: &ClusterRecord,
    ie: &InfraEnvInputs,
    dir: &std::path::Path,
    api_url: &str,
) -> Result<InstallArtifacts, String> {
    let yaml = render_install_config_yaml(&install_config_input(rec, ie)).expect("install-config");
    let req = generate_request(rec, ie, yaml, api_url).expect("request");
    let backend = OpenshiftInstallBackend::from_release_payloads(dir.join("installers"))
        .expect("registry client");
    backend
        .generate(&req, &dir.join("run"))
        .await
        .map_err(|e| e.to_string())
}

/// The binary extracted from the payload under `dir/installers` is the one the test bed built.
fn assert_test_bed_installer(dir: &std::path::Path) {
    let extracted = std::fs::read_dir(dir.join("installers"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("openshift-install"))
        .find(|p| p.exists())
        .expect("an extracted installer");
    assert_eq!(
        std::fs::metadata(&extracted).unwrap().len(),
        std::fs::metadata(installer()).unwrap().len()
    );
}

/// The core's install step on the real installer, which the core takes from the cluster's
/// release payload in the test bed's registry, as it does by default.
async fn install(rec: &mut ClusterRecord, ie: &InfraEnvInputs) -> InstallArtifacts {
    let registry = start_registry();
    rec.settings.release_image = push_release(&registry, "4.17.3");
    let work = tempfile::tempdir().unwrap();
    let art = generate_from_payload(rec, ie, work.path(), "https://api.lab.example.com:6443")
        .await
        .unwrap_or_else(|e| panic!("openshift-install failed: {e}"));
    assert_test_bed_installer(work.path());
    // The payload's component images reach the hosts' install step.
    let release = art
        .release
        .clone()
        .expect("release metadata from the payload");
    assert_eq!(release.release_image, rec.settings.release_image);
    assert!(release.mco_image.ends_with(&"01".repeat(32)), "{release:?}");
    assert!(
        release.must_gather_image.ends_with(&"02".repeat(32)),
        "{release:?}"
    );
    assert!(
        release.coreos_image.ends_with(&"03".repeat(32)),
        "{release:?}"
    );
    let unexpected: Vec<&String> = art
        .warnings
        .iter()
        .filter(|w| !EXPECTED_WARNINGS.contains(&w.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "openshift-install warned: {unexpected:#?}"
    );
    art
}

/// The files of an ignition config, path → decoded contents.
fn files(ign: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let doc: Value = serde_json::from_slice(ign).expect("ignition JSON");
    doc["storage"]["files"]
        .as_array()
        .expect("storage.files")
        .iter()
        .map(|f| {
            let path = f["path"].as_str().unwrap().to_string();
            let source = f["contents"]["source"].as_str().unwrap_or("data:,");
            (path, decode(source))
        })
        .collect()
}

fn decode(source: &str) -> Vec<u8> {
    let meta = source.split(',').next().unwrap_or_default();
    assert!(!meta.contains("gzip"), "compressed file: {meta}");
    decode_data_url(source).unwrap_or_else(|| panic!("not a data URL: {source:.80}"))
}

fn text(files: &BTreeMap<String, Vec<u8>>, path: &str) -> String {
    let bytes = files.get(path).unwrap_or_else(|| {
        panic!(
            "{path} missing; have {:#?}",
            files.keys().collect::<Vec<_>>()
        )
    });
    String::from_utf8(bytes.clone()).unwrap()
}

/// The pointer config's CA (a PEM certificate) and merge source.
fn pointer(ign: &[u8]) -> (String, String) {
    let doc: Value = serde_json::from_slice(ign).unwrap();
    let ca = doc["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
        .as_str()
        .expect("pointer carries the cluster CA");
    (
        String::from_utf8(decode(ca)).unwrap(),
        doc["ignition"]["config"]["merge"][0]["source"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// The host's address in the machine network, without prefix.
fn machine_ip(host: &dom::HostSnapshot) -> String {
    host.inventory
        .as_ref()
        .expect("inventory")
        .interfaces
        .iter()
        .flat_map(|n| n.ipv4_addresses.iter())
        .find(|a| a.starts_with("192.168.111."))
        .map(|a| a.split('/').next().unwrap().to_string())
        .expect("an address in the machine network")
}

const PAUSED_ANNOTATION: &str = "baremetalhost.metal3.io/paused";

/// The BareMetalHost manifests as the real baremetal-operator reads them (the test bed's, with
/// its fixture provisioner): the apiserver takes them under BMO's CRD schema, and BMO restores
/// each host's status from the annotation — hardware included — then drops the annotation, as it
/// does when the bootstrap host hands the hosts over.
async fn bmo_reads_the_hosts(boot: &BTreeMap<String, Vec<u8>>) {
    use kube::api::{Api, DynamicObject};
    if testbed::skip() {
        return;
    }
    let tb = testbed::Testbed::builder()
        .metal3()
        .start()
        .await
        .expect("testbed");
    tb.apply_yaml("apiVersion: v1\nkind: Namespace\nmetadata: {name: openshift-machine-api}\n")
        .await
        .expect("namespace");
    let mut names = Vec::new();
    for (path, body) in boot {
        if path.contains("openshift-cluster-api_hosts") {
            let yaml = String::from_utf8(body.clone()).unwrap();
            let applied = tb
                .apply_yaml(&yaml)
                .await
                .unwrap_or_else(|e| panic!("{path} refused by the apiserver: {e:#}"));
            names.extend(applied.iter().map(|o| o.metadata.name.clone().unwrap()));
        }
    }
    let gvk = kube::api::GroupVersionKind::gvk("metal3.io", "v1alpha1", "BareMetalHost");
    let resource = kube::api::ApiResource::from_gvk(&gvk);
    let hosts: Api<DynamicObject> =
        Api::namespaced_with(tb.client.clone(), "openshift-machine-api", &resource);
    // The installer pauses the workers' hosts until the cluster's own control plane runs; its
    // operator then unpauses them, as here.
    for name in &names {
        let h = hosts.get(name).await.expect("BareMetalHost");
        let paused = h
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(PAUSED_ANNOTATION));
        assert_eq!(paused, name.starts_with("worker-"), "{name}");
        if paused {
            hosts
                .patch(
                    name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(serde_json::json!({
                        "metadata": { "annotations": { PAUSED_ANNOTATION: null } }
                    })),
                )
                .await
                .expect("unpause");
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for name in &names {
        loop {
            let h = hosts.get(name).await.expect("BareMetalHost");
            let restored = h.data["status"]["hardware"]["hostname"] == name.as_str();
            let annotation_gone = !h
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(BMH_STATUS_ANNOTATION));
            if restored && annotation_gone {
                assert!(
                    h.data["status"]["hardware"]["ramMebibytes"]
                        .as_u64()
                        .unwrap()
                        >= 8192,
                    "{name}: {}",
                    h.data["status"]
                );
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "baremetal-operator did not restore {name}'s status from the annotation: {}",
                serde_json::to_string(&h.data["status"]).unwrap()
            );
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }
}

fn chrony_of(files: &BTreeMap<String, Vec<u8>>, pool: &str) -> String {
    let mc = text(
        files,
        &format!("/opt/openshift/openshift/50-{pool}s-chrony-configuration.yaml"),
    );
    assisted_core::service::install::chrony_conf_of_manifest(mc.as_bytes())
        .expect("chrony MachineConfig")
}

#[tokio::test]
async fn three_masters_two_workers_with_the_real_installer() {
    let mut rec = cluster(3, 2);
    let ca = generate_lab_pki("trust", jiff::Timestamp::now())
        .unwrap()
        .ca_cert_pem;
    let ie = InfraEnvInputs {
        trust_bundles: vec![ca.clone()],
        ntp_sources: vec!["ntp.infraenv.example.com".into()],
    };
    // A mirror registry (the ACI's mirrorRegistryRef, as the core parses it), with its CA.
    let mirror_ca = generate_lab_pki("mirror", jiff::Timestamp::now())
        .unwrap()
        .ca_cert_pem;
    let registries_conf = "[[registry]]\nlocation = \"quay.io/openshift-release-dev/ocp-release\"\n\n[[registry.mirror]]\nlocation = \"mirror.lab.example.com:5000/ocp/release\"\n\n[[registry]]\nlocation = \"quay.io/openshift-release-dev/ocp-v4.0-art-dev\"\n\n[[registry.mirror]]\nlocation = \"mirror.lab.example.com:5000/ocp/release\"\n";
    let mirrors = dom::mirrors::parse(&BTreeMap::from([
        ("registries.conf".to_string(), registries_conf.to_string()),
        ("ca-bundle.crt".to_string(), mirror_ca.clone()),
    ]))
    .unwrap();
    // And the cluster's mirror manifests the control plane adds to the ACI's manifests.
    for (file, object) in dom::mirrors::cluster_manifests(&mirrors) {
        rec.settings
            .manifests
            .push((file, object.to_string().into_bytes()));
    }
    rec.settings.mirrors = Some(mirrors);
    let art = install(&mut rec, &ie).await;
    let boot = files(&art.bootstrap_ign);

    // NTP: every pool's chrony.conf has the cluster's source, then what the hosts synced with.
    for pool in ["master", "worker"] {
        let conf = chrony_of(&boot, pool);
        assert!(
            conf.ends_with("server clock.lab.example.com iburst\nserver 10.0.0.123 iburst\nserver ntp.infraenv.example.com iburst\n"),
            "{pool}: {conf}"
        );
    }
    // The bootstrap host becomes the third master.
    assert!(boot.contains_key(ASSISTED_BOOTSTRAP_MARKER));
    assert!(text(&boot, NM_RESOLV_UNMANAGED).contains("rc-manager=unmanaged"));
    assert!(!boot.contains_key("/etc/NetworkManager/system-connections/nmconnection"));
    // The bootstrap kubelet listens on the bootstrap host's machine-network address.
    let bootstrap_ip = machine_ip(&rec.snapshot.hosts[0]);
    assert!(
        text(&boot, "/usr/local/bin/kubelet.sh").contains(&format!("--node-ip=\"{bootstrap_ip}\"")),
        "kubelet.sh without --node-ip={bootstrap_ip}"
    );
    // Every host an externally provisioned BareMetalHost with its hardware.
    let bmhs: Vec<&String> = boot
        .keys()
        .filter(|p| p.contains("openshift-cluster-api_hosts"))
        .collect();
    assert_eq!(bmhs.len(), 5, "{bmhs:?}");
    let mut hostnames = Vec::new();
    for path in bmhs {
        let bmh: Value = serde_yaml::from_str(&text(&boot, path)).unwrap();
        assert_eq!(bmh["spec"]["externallyProvisioned"], true, "{path}");
        assert!(bmh.get("status").is_none(), "{path}");
        let status: Value = serde_json::from_str(
            bmh["metadata"]["annotations"][BMH_STATUS_ANNOTATION]
                .as_str()
                .expect("status annotation"),
        )
        .unwrap();
        assert_eq!(status["poweredOn"], true);
        assert_eq!(status["hardware"]["hostname"], bmh["metadata"]["name"]);
        assert!(status["hardware"]["ramMebibytes"].as_u64().unwrap() >= 8192);
        hostnames.push(bmh["metadata"]["name"].as_str().unwrap().to_string());
    }
    hostnames.sort();
    bmo_reads_the_hosts(&boot).await;
    let mut expected: Vec<String> = rec
        .snapshot
        .hosts
        .iter()
        .map(|h| h.hostname().to_string())
        .collect();
    expected.sort();
    assert_eq!(hostnames, expected);
    // User manifests: the multi-document file one object per file, the patch applied.
    let config_maps: Vec<&String> = boot
        .keys()
        .filter(|p| p.starts_with("/opt/openshift/openshift/50-config-maps-"))
        .collect();
    assert_eq!(config_maps.len(), 2, "{config_maps:?}");
    let ingress = text(
        &boot,
        "/opt/openshift/manifests/cluster-ingress-02-config.yml",
    );
    assert!(
        ingress.contains("appsDomain: apps.lab-alt.example.com"),
        "{ingress}"
    );
    let patches: Vec<&String> = boot.keys().filter(|p| p.contains(".patch_")).collect();
    assert!(patches.is_empty(), "{patches:?}");
    // mastersSchedulable (ACI spec.mastersSchedulable) reaches the Scheduler.
    let scheduler = text(
        &boot,
        "/opt/openshift/manifests/cluster-scheduler-02-config.yml",
    );
    assert!(
        scheduler.contains("mastersSchedulable: true"),
        "{scheduler}"
    );
    // Proxy and trust bundle.
    let proxy = text(
        &boot,
        "/opt/openshift/manifests/cluster-proxy-01-config.yaml",
    );
    assert!(
        proxy.contains("httpProxy: http://proxy.lab.example.com:3128"),
        "{proxy}"
    );
    assert!(proxy.contains(".internal.example.com"), "{proxy}");
    let bundle = text(&boot, "/opt/openshift/manifests/user-ca-bundle-config.yaml");
    let first_line = ca.lines().nth(1).unwrap();
    assert!(
        bundle.contains(first_line),
        "trust bundle missing: {bundle}"
    );
    // Pointers carry the cluster CA.
    let (master_ca, master_src) = pointer(&art.master_ign);
    assert!(master_ca.starts_with("-----BEGIN CERTIFICATE-----"));
    // On baremetal the installer points them at the API VIP.
    assert_eq!(master_src, "https://192.168.111.5:22623/config/master");
    assert_eq!(pointer(&art.worker_ign).0, master_ca);
    // The mirrors: the bootstrap host pulls the release through them, trusting their CA (in
    // the cluster's trust bundle beside the InfraEnv's), and the cluster gets them as an
    // ImageDigestMirrorSet.
    let registries = text(&boot, "/etc/containers/registries.conf");
    assert!(
        registries.contains("mirror.lab.example.com:5000/ocp/release"),
        "{registries}"
    );
    assert!(
        bundle.contains(mirror_ca.lines().nth(1).unwrap()),
        "mirror CA missing: {bundle}"
    );
    let mirror_sets: Vec<&String> = boot
        .keys()
        .filter(|p| p.contains("image-digest-mirror") && !p.contains("/openshift/openshift/"))
        .collect();
    assert_eq!(
        mirror_sets.len(),
        1,
        "{:?}",
        boot.keys().collect::<Vec<_>>()
    );
    // The control plane's mirror manifests (CAPOA's) among the user's manifests, as given.
    for file in [
        "image-digest-mirror-set.json",
        "additional-registry-certificate.json",
        "image-config.json",
    ] {
        assert!(
            boot.contains_key(&format!("/opt/openshift/openshift/{file}")),
            "{file} not in {:?}",
            boot.keys()
                .filter(|p| p.contains("/openshift/openshift/"))
                .collect::<Vec<_>>()
        );
    }
    // install-config as the installer read it: overrides applied, nothing dropped.
    let cfg: Value = serde_yaml::from_slice(&art.install_config_yaml).unwrap();
    assert_eq!(
        cfg["imageDigestSources"][0],
        serde_json::json!({"source": "quay.io/openshift-release-dev/ocp-release",
                           "mirrors": ["mirror.lab.example.com:5000/ocp/release"]})
    );
    assert_eq!(cfg["capabilities"]["baselineCapabilitySet"], "vCurrent");
    assert!(
        cfg["platform"]["baremetal"]
            .get("additionalNTPServers")
            .is_none()
    );
}

/// A site that reaches the release only through its mirror: the ACI's mirror configuration
/// maps the release's source to the test bed's registry, and the core reads the payload and
/// extracts the installer there, as the hosts' registries.conf would pull it (quay.io, the
/// source, is not reachable from the test bed; were it, the installer would not be the test
/// bed's).
#[tokio::test]
async fn the_release_is_read_through_its_mirror() {
    let registry = start_registry();
    let mirrored = push_release(&registry, "4.17.3");
    assert!(
        mirrored.ends_with("/ocp/release:4.17.3-x86_64"),
        "{mirrored}"
    );
    let mut rec = cluster(1, 0);
    rec.settings.release_image = RELEASE.into();
    let registries_conf = format!(
        "[[registry]]\nlocation = \"quay.io/openshift-release-dev/ocp-release\"\n\n\
         [[registry.mirror]]\nlocation = \"{}/ocp/release\"\n",
        registry.host
    );
    rec.settings.mirrors = Some(
        dom::mirrors::parse(&BTreeMap::from([(
            "registries.conf".to_string(),
            registries_conf,
        )]))
        .unwrap(),
    );
    let ie = InfraEnvInputs::default();
    let api = "https://api.sno.example.com:6443";
    let work = tempfile::tempdir().unwrap();
    let art = generate_from_payload(&rec, &ie, work.path(), api)
        .await
        .unwrap_or_else(|e| panic!("the release through its mirror: {e}"));
    assert_test_bed_installer(work.path());
    // The cluster is told the release by its source name; the mirrors resolve it.
    let release = art.release.expect("release metadata from the payload");
    assert_eq!(release.release_image, RELEASE);
    assert!(release.mco_image.ends_with(&"01".repeat(32)), "{release:?}");

    // A digest-only mirror does not serve a tag: the release is asked of its source, which the
    // test bed cannot reach, and the error says so.
    let digest_only = format!(
        "[[registry]]\nlocation = \"quay.io/openshift-release-dev/ocp-release\"\n\n\
         [[registry.mirror]]\nlocation = \"{}/ocp/release\"\npull-from-mirror = \"digest-only\"\n",
        registry.host
    );
    rec.settings.mirrors = Some(
        dom::mirrors::parse(&BTreeMap::from([(
            "registries.conf".to_string(),
            digest_only,
        )]))
        .unwrap(),
    );
    let other = tempfile::tempdir().unwrap();
    let error = generate_from_payload(&rec, &ie, other.path(), api)
        .await
        .expect_err("a tag through a digest-only mirror");
    assert!(error.contains("quay.io"), "{error}");
}

/// The control plane pins a release tag through the mirrors of `imageRegistryRef` that serve
/// tags: the digest the test bed's registry has under the mirror path, written with the
/// source's name (which the mirrors then serve by digest). A tag the mirror does not have is
/// said with the mirror's answer.
#[tokio::test]
async fn the_control_plane_pins_the_release_through_its_mirror() {
    use controlplane_provider::controller::release_lookup::{Lookup, Resolver};
    let registry = start_registry();
    let mirrored = push_release(&registry, "4.17.3");
    let digest = crane_run(&["digest", &mirrored]);
    let registries_conf = format!(
        "[[registry]]\nlocation = \"quay.io/openshift-release-dev/ocp-release\"\n\n\
         [[registry.mirror]]\nlocation = \"{}/ocp/release\"\n",
        registry.host
    );
    let mirrors = dom::mirrors::parse(&BTreeMap::from([(
        "registries.conf".to_string(),
        registries_conf,
    )]))
    .unwrap();
    let resolver = Resolver::new();
    let pinned = resolver.resolve(RELEASE, None, Some(&mirrors)).await;
    assert_eq!(
        pinned,
        Lookup::Pinned(format!(
            "quay.io/openshift-release-dev/ocp-release@{}",
            digest.trim()
        ))
    );
    let missing = resolver
        .resolve(
            "quay.io/openshift-release-dev/ocp-release:4.99.0-x86_64",
            None,
            Some(&mirrors),
        )
        .await;
    let Lookup::NotFound(why) = missing else {
        panic!("a tag the mirror lacks: {missing:?}");
    };
    assert!(why.contains(&registry.host), "{why}");
}

/// A site's mirror as it usually is: https with a private CA and Basic auth (the test bed's
/// registry behind [`registry::Gate`]). The control plane pins the release through it with the
/// pull secret's credentials and the ConfigMap's CA, and the core reads the payload and the
/// installer through it; a wrong password is a refusal, a CA the mirror does not chain to is no
/// answer (the TLS error said), each naming the mirror.
#[tokio::test]
async fn a_tls_mirror_with_credentials_serves_the_release() {
    use base64::Engine;
    use controlplane_provider::controller::release_lookup::{Lookup, Resolver};
    let registry = start_registry();
    let mirrored = push_release(&registry, "4.17.3");
    let digest = crane_run(&["digest", &mirrored]);
    let gate = start_gate(&registry, "mirror", "s3cret").await;
    let conf = format!(
        "[[registry]]\nlocation = \"quay.io/openshift-release-dev/ocp-release\"\n\n\
         [[registry.mirror]]\nlocation = \"{}/ocp/release\"\n",
        gate.host
    );
    let mirrors_with = |ca: &str| {
        dom::mirrors::parse(&BTreeMap::from([
            ("registries.conf".to_string(), conf.clone()),
            ("ca-bundle.crt".to_string(), ca.to_string()),
        ]))
        .unwrap()
    };
    let mirrors = mirrors_with(&gate.ca_pem);
    let secret = |password: &str| {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("mirror:{password}"));
        serde_json::json!({"auths": {gate.host.clone(): {"auth": auth}}}).to_string()
    };

    let resolver = Resolver::new();
    assert_eq!(
        resolver
            .resolve(RELEASE, Some(&secret("s3cret")), Some(&mirrors))
            .await,
        Lookup::Pinned(format!(
            "quay.io/openshift-release-dev/ocp-release@{digest}"
        ))
    );
    let refused = resolver
        .resolve(RELEASE, Some(&secret("wrong")), Some(&mirrors))
        .await;
    assert!(
        matches!(&refused, Lookup::Refused(why) if why.contains(&gate.host)),
        "{refused:?}"
    );
    let other_ca = testbed::certs::Ca::new("not the mirror's")
        .unwrap()
        .cert_pem;
    let untrusted = resolver
        .resolve(
            RELEASE,
            Some(&secret("s3cret")),
            Some(&mirrors_with(&other_ca)),
        )
        .await;
    assert!(
        matches!(&untrusted, Lookup::Unreachable(why) if why.contains(&gate.host) && why.to_lowercase().contains("certificate")),
        "{untrusted:?}"
    );

    // The core's install step reads the payload and extracts the installer through it.
    let mut rec = cluster(1, 0);
    rec.settings.release_image = RELEASE.into();
    rec.settings.pull_secret = secret("s3cret");
    rec.settings.mirrors = Some(mirrors);
    let work = tempfile::tempdir().unwrap();
    generate_from_payload(
        &rec,
        &InfraEnvInputs::default(),
        work.path(),
        "https://api.sno.example.com:6443",
    )
    .await
    .unwrap_or_else(|e| panic!("the release through the TLS mirror: {e}"));
    assert_test_bed_installer(work.path());
}

#[tokio::test]
async fn single_node_with_the_real_installer() {
    let mut rec = cluster(1, 0);
    let art = install(&mut rec, &InfraEnvInputs::default()).await;
    let boot = files(&art.bootstrap_ign);
    assert!(boot.contains_key("/usr/local/bin/bootstrap-in-place.sh"));
    assert!(!boot.contains_key(ASSISTED_BOOTSTRAP_MARKER));
    assert!(chrony_of(&boot, "master").contains("server clock.lab.example.com iburst"));
    let ip = machine_ip(&rec.snapshot.hosts[0]);
    assert!(text(&boot, "/usr/local/bin/kubelet.sh").contains(&format!("--node-ip=\"{ip}\"")));
    // A later host of either pool can join: both pointers carry the cluster CA.
    let (ca, src) = pointer(&art.master_ign);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(src, "https://api-int.sno.example.com:22623/config/master");
    assert_eq!(pointer(&art.worker_ign).0, ca);
    let meta: Value = serde_json::from_slice(&art.metadata_json).unwrap();
    assert_eq!(meta["clusterName"], "sno");
}

//! Bad input only the controllers can know, as a table on the testbed: each row is a
//! single-node cluster in a namespace of its own with one mistake that admission lets through
//! (checked here with the control-plane webhook's own admission function), applied all at once
//! with the control-plane and bootstrap providers, the embedded assisted core and the real
//! Cluster API running. Each must be named by the control plane's `Available` condition (False,
//! with the row's reason) within seconds, no install may start, and nobody retries in a loop.
//! The reasons and messages are the second section of docs/bad-input.md ("What the
//! controllers say"), written with `CAPOA_UPDATE_DOCS=1` (`make generate`) and checked
//! otherwise; the first section is `controlplane-provider/tests/bad_input.rs`'s.

use std::time::{Duration, Instant};

use assisted_core::api::agentclusterinstall::{AgentClusterInstall, PRE_INSTALL_STATES};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use provider_api::controlplane::api::OpenshiftAssistedControlPlane;
use serde_json::{Value, json};

mod common;
#[path = "../../../controlplane-provider/tests/bad_input/doc.rs"]
mod doc;
#[path = "common/registry.rs"]
mod registry;

use common::{Run, init_logs, start_providers, start_test_core, state, testbed_with_capi};

/// Every row's cluster (and control plane) is named so; its namespace is the row's `ns`.
const CLUSTER: &str = "sno";
/// A valid `.dockerconfigjson`.
const AUTHS: &str = r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}"#;
/// The test bed's registry (`crane registry serve`), standing in for quay.io: it holds
/// `ocp/release:4.17.3-x86_64` only.
static REGISTRY: std::sync::OnceLock<registry::Registry> = std::sync::OnceLock::new();

fn registry_host() -> &'static str {
    &REGISTRY.get_or_init(registry::start_registry).host
}

/// The control plane's releases come from the test bed's registry.
fn from_test_registry(control_plane: &mut Value) {
    control_plane["metadata"]["annotations"] = json!({
        provider_api::controlplane::api::RELEASE_IMAGE_REPOSITORY_OVERRIDE_ANNOTATION:
            format!("{}/ocp/release", registry_host()),
    });
}

/// A cluster without mistake whose release the test bed's registry has.
const PINNED_NS: &str = "release-in-the-registry";
/// How long a row may take to show its reason, from the apply.
const ROW_TIMEOUT: Duration = Duration::from_secs(60);

/// One row's objects: a valid single-node cluster on Metal3 until the row's mistake changes it.
struct Objects {
    pull_secret: Value,
    control_plane: Value,
    /// More objects the mistake needs (a ConfigMap).
    extra: Vec<Value>,
}

impl Objects {
    fn new(ns: &str) -> Objects {
        Objects {
            pull_secret: json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "pull-secret", "namespace": ns},
                "type": "kubernetes.io/dockerconfigjson",
                "stringData": {".dockerconfigjson": AUTHS},
            }),
            control_plane: json!({
                "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3",
                "kind": "OpenshiftAssistedControlPlane",
                "metadata": {"name": CLUSTER, "namespace": ns},
                "spec": {
                    "distributionVersion": "4.17.3",
                    "replicas": 1,
                    "config": {
                        "baseDomain": "lab.example.com",
                        "pullSecretRef": {"name": "pull-secret"},
                    },
                    "machineTemplate": {"infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "Metal3MachineTemplate",
                        "name": CLUSTER,
                    }},
                },
            }),
            extra: Vec::new(),
        }
    }

    /// Everything to apply, as YAML (each object as JSON), the namespace first.
    fn yaml(&self, ns: &str) -> String {
        let objects = [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            self.pull_secret.clone(),
            json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                "metadata": {"name": CLUSTER, "namespace": ns},
                "spec": {
                    "clusterNetwork": {
                        "pods": {"cidrBlocks": ["10.128.0.0/14"]},
                        "services": {"cidrBlocks": ["172.30.0.0/16"]},
                    },
                    "controlPlaneRef": {
                        "apiGroup": "controlplane.cluster.x-k8s.io",
                        "kind": "OpenshiftAssistedControlPlane",
                        "name": CLUSTER,
                    },
                    "infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "Metal3Cluster",
                        "name": CLUSTER,
                    },
                },
            }),
            json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Cluster",
                "metadata": {"name": CLUSTER, "namespace": ns},
                "spec": {"controlPlaneEndpoint": {
                    "host": format!("api.{CLUSTER}.lab.example.com"),
                    "port": 6443,
                }},
            }),
            json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                "kind": "Metal3MachineTemplate",
                "metadata": {"name": CLUSTER, "namespace": ns},
                "spec": {"template": {"spec": {"image": {
                    "url": "http://images.example.com/live.iso",
                    "checksum": "",
                    "diskFormat": "live-iso",
                }}}},
            }),
            self.control_plane.clone(),
        ];
        objects
            .iter()
            .chain(&self.extra)
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n---\n")
    }
}

/// One input: what the user did, the namespace it is made in, the `Available` reason it must
/// get, whether the install objects (ClusterDeployment, AgentClusterInstall) are written (the
/// mistake is found past them, by the core or at the Machines), and the mistake itself.
struct Row {
    what: &'static str,
    ns: &'static str,
    reason: &'static str,
    install_objects: bool,
    mistake: fn(&mut Objects),
    /// Set when the condition does not name the mistake: what is wrong with it (the doc says so).
    not_named: Option<&'static str>,
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            what: "a pull Secret that does not exist",
            ns: "missing-pull-secret",
            reason: "PullSecretNotFound",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["config"]["pullSecretRef"]["name"] = json!("missing")
            },
        },
        Row {
            what: "a pull Secret without the `.dockerconfigjson` key",
            ns: "pull-secret-without-key",
            reason: "InstallInputError",
            install_objects: true,
            not_named: None,
            mistake: |o| {
                // An Opaque Secret: the apiserver requires the key of a dockerconfigjson one.
                o.pull_secret["type"] = json!("Opaque");
                o.pull_secret["stringData"] = json!({"config.json": AUTHS});
            },
        },
        Row {
            what: "a pull secret of the wrong shape (`{\"auths\":\"nope\"}`)",
            ns: "pull-secret-wrong-shape",
            reason: "InstallInputError",
            install_objects: true,
            not_named: None,
            mistake: |o| {
                o.pull_secret["stringData"][".dockerconfigjson"] = json!(r#"{"auths":"nope"}"#);
            },
        },
        Row {
            what: "no `spec.config.pullSecretRef` on an OpenShift (OCP) release",
            ns: "no-pull-secret-ref",
            reason: "PullSecretMissing",
            install_objects: false,
            not_named: None,
            mistake: |o| remove(&mut o.control_plane["spec"]["config"], "pullSecretRef"),
        },
        Row {
            what: "no `spec.config` on an OKD release (no base domain)",
            ns: "okd-without-config",
            reason: "InvalidConfig",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["distributionVersion"] = json!("4.19.0-okd-scos.ec.6");
                remove(&mut o.control_plane["spec"], "config");
            },
        },
        Row {
            what: "an install-config override that is not JSON",
            ns: "override-not-json",
            reason: "InvalidInstallConfig",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["metadata"]["annotations"] = json!({
                    "controlplane.cluster.x-k8s.io/install-config-override":
                        "networking: {networkType: OVNKubernetes}",
                });
            },
        },
        Row {
            what: "a release image repository override with a tag",
            ns: "release-repository-with-tag",
            reason: "InvalidReleaseRepository",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["metadata"]["annotations"] = json!({
                    "cluster.x-k8s.io/release-image-repository-override":
                        "registry.example.com/ocp/release:4.17.3",
                });
            },
        },
        Row {
            what: "a CPU architecture with no release image (`x86-64`)",
            ns: "unknown-architecture",
            reason: "InvalidArchitecture",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["openshiftAssistedConfigSpec"]["cpuArchitecture"] =
                    json!("x86-64");
            },
        },
        Row {
            what: "`machineTemplate.infrastructureRef` naming a template that does not exist",
            ns: "missing-template",
            reason: "InfrastructureTemplateNotFound",
            install_objects: true,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["machineTemplate"]["infrastructureRef"]["name"] =
                    json!("missing");
            },
        },
        Row {
            what: "`machineTemplate.infrastructureRef` of a kind no CRD serves (a typo)",
            ns: "template-kind-not-installed",
            reason: "InfrastructureTemplateNotFound",
            install_objects: true,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["machineTemplate"]["infrastructureRef"]["kind"] =
                    json!("Metal3MachineTemplat");
            },
        },
        Row {
            what: "Tang disk encryption whose `tangServers` is not a JSON list",
            ns: "tang-servers-not-json",
            reason: "InstallInputError",
            install_objects: true,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["config"]["diskEncryption"] = json!({
                    "enableOn": "all",
                    "mode": "tang",
                    "tangServers": "http://tang.example.com:7500",
                });
            },
        },
        Row {
            what: "a manifests ConfigMap that does not exist",
            ns: "missing-manifests",
            reason: "InstallInputError",
            install_objects: true,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["config"]["manifestsConfigMapRefs"] =
                    json!([{"name": "extra-manifests"}]);
            },
        },
        Row {
            what: "a release that does not exist (`4.17.99`; the releases come from the test \
                   bed's registry through `cluster.x-k8s.io/release-image-repository-override`)",
            ns: "release-does-not-exist",
            reason: "ReleaseImageNotFound",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                from_test_registry(&mut o.control_plane);
                o.control_plane["spec"]["distributionVersion"] = json!("4.17.99");
            },
        },
        Row {
            what: "`spec.config.imageRegistryRef` naming a ConfigMap that does not exist",
            ns: "missing-mirror-config",
            reason: "ImageRegistryConfigNotFound",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["config"]["imageRegistryRef"] = json!({"name": "mirrors"});
            },
        },
        Row {
            what: "image mode (`spec.config.imageMode`) with a push Secret that does not exist",
            ns: "missing-push-secret",
            reason: "ImageModePushSecretNotFound",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["config"]["imageMode"] = json!({"pools": [{
                    "pool": "worker",
                    "image": format!("registry.example.com/os/worker@sha256:{}", "1".repeat(64)),
                    "renderedImagePushSpec": "registry.example.com/os/worker:latest",
                    "renderedImagePushSecretRef": {"name": "push-secret"},
                }]});
            },
        },
        Row {
            what: "a mirror `registries.conf` that is not TOML (line 2: a key with no value)",
            ns: "mirror-config-not-toml",
            reason: "InvalidImageRegistryConfig",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["config"]["imageRegistryRef"] = json!({"name": "mirrors"});
                o.extra.push(json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "mirrors", "namespace": "mirror-config-not-toml"},
                    "data": {"registries.conf": "[[registry]]\nlocation =\n"},
                }));
            },
        },
        Row {
            what: "a mirror registry without a mirror",
            ns: "mirror-config-without-mirror",
            reason: "InvalidImageRegistryConfig",
            install_objects: false,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["config"]["imageRegistryRef"] = json!({"name": "mirrors"});
                o.extra.push(json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "mirrors", "namespace": "mirror-config-without-mirror"},
                    "data": {"registries.conf":
                        "[[registry]]\nlocation = \"quay.io/openshift-release-dev/ocp-release\"\n"},
                }));
            },
        },
        Row {
            what: "a discovery-image pull Secret that does not exist \
                   (`openshiftAssistedConfigSpec.pullSecretRef`)",
            ns: "missing-discovery-pull-secret",
            reason: "DiscoveryImageFailed",
            install_objects: true,
            not_named: None,
            mistake: |o| {
                o.control_plane["spec"]["openshiftAssistedConfigSpec"]["pullSecretRef"] =
                    json!({"name": "discovery-pull-secret"});
            },
        },
    ]
}

fn remove(object: &mut Value, key: &str) {
    if let Some(o) = object.as_object_mut() {
        o.remove(key);
    }
}

fn objects(row: &Row) -> Objects {
    let mut objects = Objects::new(row.ns);
    (row.mistake)(&mut objects);
    objects
}

/// The control plane's `Available` condition: (status, reason, message).
async fn available(client: &Client, ns: &str) -> Option<(String, String, String)> {
    let oacp = Api::<OpenshiftAssistedControlPlane>::namespaced(client.clone(), ns)
        .get_opt(CLUSTER)
        .await
        .ok()??;
    let c = oacp
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Available")?;
    Some((c.status, c.reason, c.message))
}

/// What varies between runs, made constant for the doc: UUIDs and loopback ports.
fn normalise(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while !rest.is_empty() {
        if is_uuid(rest) {
            out.push_str("<uid>");
            rest = &rest[36..];
        } else if let Some(after) = rest.strip_prefix("127.0.0.1:") {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            out.push_str("127.0.0.1:<port>");
            rest = &after[digits..];
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 36
        && b[..36].iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn section(found: &[(&Row, String)]) -> String {
    let mut out = String::from(
        "## What the controllers say\n\n\
         Generated from `tests/agent-sim/tests/bad_input_controllers.rs` on the testbed\n\
         (`make generate`; docs/testing.md): each row is a single-node cluster (Cluster,\n\
         Metal3Cluster, Metal3MachineTemplate, OpenshiftAssistedControlPlane `sno` and its pull\n\
         Secret) with that one mistake, in a namespace of its own named after it; admission lets\n\
         each through (the test checks it with the control-plane webhook's admission function).\n\
         All are applied at once, with the control-plane and bootstrap providers, the assisted\n\
         core and the real Cluster API running, and each control plane's `Available` condition\n\
         must be False with the reason shown within a minute (they take seconds); the message is\n\
         exactly its message (what `kubectl get openshiftassistedcontrolplane -o wide` shows as\n\
         Install). No install starts, and nobody retries in a loop (a blocked control plane is\n\
         looked at again once a minute). VIPs outside every host's network show once the hosts\n\
         register (`InstallValidationsFailing`, naming the VIPs:\n\
         `controlplane::vips_outside_the_hosts_network_are_named_on_available`). A row marked\n\
         **not named** is a mistake no controller names yet: the table shows what the user sees\n\
         instead.\n\n\
         | Input | Condition on the control plane | Message |\n| --- | --- | --- |\n",
    );
    for (row, message) in found {
        let condition = match row.not_named {
            None => format!("`Available` False/`{}`", row.reason),
            Some(why) => format!("`Available` False/`{}` (**not named**: {why})", row.reason),
        };
        out.push_str(&format!(
            "| {} | {condition} | {} |\n",
            row.what,
            message.replace('|', "\\|")
        ));
    }
    out
}

#[test]
fn messages_are_normalised() {
    assert_eq!(
        normalise("cluster 0b4c5a52-6d2e-4f4e-9b0e-1c2d3e4f5a6b at 127.0.0.1:43121/x é"),
        "cluster <uid> at 127.0.0.1:<port>/x é"
    );
}

#[tokio::test]
async fn bad_input_only_the_controllers_know_is_named_on_available() {
    if testbed::skip() {
        return;
    }
    init_logs();
    let rows = rows();
    // Admission lets every row through: only the controllers can tell.
    for row in &rows {
        let oacp: OpenshiftAssistedControlPlane =
            serde_json::from_value(objects(row).control_plane).expect(row.what);
        let problems = controlplane_provider::admission::problems(&oacp, None);
        assert!(
            problems.is_empty(),
            "{}: admission refuses it: {problems:?}",
            row.what
        );
    }

    // The registry holds 4.17.3; a control plane naming it gets its release pinned by digest.
    let pinned_release =
        registry::push_small_image(&format!("{}/ocp/release:4.17.3-x86_64", registry_host()));
    let tb = testbed_with_capi().await;
    let client = tb.client.clone();
    let (core, _dir) = start_test_core(&client).await;
    let providers = start_providers(&client, Run::Both);
    let started = Instant::now();
    for row in &rows {
        tb.apply_yaml(&objects(row).yaml(row.ns))
            .await
            .unwrap_or_else(|e| panic!("{}: apply: {e:#}", row.what));
    }
    // No infrastructure provider runs: the Metal3Clusters are provisioned by hand, so that the
    // bootstrap provider gets as far as the discovery image.
    let metal3_clusters = ApiResource {
        group: "infrastructure.cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "infrastructure.cluster.x-k8s.io/v1beta2".into(),
        kind: "Metal3Cluster".into(),
        plural: "metal3clusters".into(),
    };
    for row in &rows {
        Api::<DynamicObject>::namespaced_with(client.clone(), row.ns, &metal3_clusters)
            .patch_status(
                CLUSTER,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"initialization": {"provisioned": true}}})),
            )
            .await
            .unwrap_or_else(|e| panic!("{}: provision the Metal3Cluster: {e}", row.what));
    }
    let mut pinned = Objects::new(PINNED_NS);
    from_test_registry(&mut pinned.control_plane);
    tb.apply_yaml(&pinned.yaml(PINNED_NS))
        .await
        .expect("apply the cluster whose release is in the registry");
    eprintln!("{} rows applied in {:?}", rows.len(), started.elapsed());

    // Every row's reason, all rows polled together until each has it or time is up.
    let mut named: Vec<Option<Duration>> = vec![None; rows.len()];
    let mut last: Vec<Option<(String, String, String)>> = vec![None; rows.len()];
    let deadline = Instant::now() + ROW_TIMEOUT;
    while named.iter().any(Option::is_none) && Instant::now() < deadline {
        for (i, row) in rows.iter().enumerate() {
            if named[i].is_some() {
                continue;
            }
            let seen = available(&client, row.ns).await;
            if seen
                .as_ref()
                .is_some_and(|(s, r, _)| s == "False" && r == row.reason)
            {
                named[i] = Some(started.elapsed());
            }
            last[i] = seen;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut mismatches = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        match named[i] {
            Some(after) => eprintln!("{}: {} after {after:?}", row.ns, row.reason),
            None => mismatches.push(format!(
                "{} ({}): wanted Available False/{} within {ROW_TIMEOUT:?} of the apply, got {:?}",
                row.what, row.ns, row.reason, last[i]
            )),
        }
    }

    // Settled: the reasons stay, the messages are final, no install started, nothing half-done.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut found = Vec::new();
    for row in &rows {
        match available(&client, row.ns).await {
            Some((status, reason, message)) if status == "False" && reason == row.reason => {
                found.push((row, normalise(&message)))
            }
            other => mismatches.push(format!(
                "{} ({}): Available False/{} did not stay: {other:?}",
                row.what, row.ns, row.reason
            )),
        }
        let aci = Api::<AgentClusterInstall>::namespaced(client.clone(), row.ns)
            .get_opt(CLUSTER)
            .await
            .expect("read the AgentClusterInstall");
        if aci.is_some() != row.install_objects {
            mismatches.push(format!(
                "{} ({}): AgentClusterInstall {}, wanted {}",
                row.what,
                row.ns,
                if aci.is_some() {
                    "written"
                } else {
                    "not written"
                },
                if row.install_objects {
                    "written"
                } else {
                    "none"
                },
            ));
        }
        if let Some(aci) = aci
            && !PRE_INSTALL_STATES.contains(&state(&aci).as_str())
        {
            mismatches.push(format!(
                "{} ({}): the install started (state {})",
                row.what,
                row.ns,
                state(&aci)
            ));
        }
    }
    for (row, message) in &found {
        eprintln!("{} | {} | {message}", row.ns, row.reason);
    }
    // The release the registry has: the ClusterImageSet names it by digest, with the version
    // and architecture the tag said.
    let image_set = Api::<assisted_core::api::hive::ClusterImageSet>::all(client.clone())
        .get_opt(&format!("{PINNED_NS}.{CLUSTER}"))
        .await
        .expect("read the ClusterImageSet");
    let pinned_as = image_set.as_ref().map(|s| {
        (
            s.spec.release_image.clone(),
            s.metadata.annotations.clone().unwrap_or_default(),
        )
    });
    match pinned_as {
        Some((image, annotations))
            if image == pinned_release
                && annotations.get("assisted-core.openshift.io/openshift-version")
                    == Some(&"4.17.3".to_string())
                && annotations.get("assisted-core.openshift.io/cpu-architecture")
                    == Some(&"x86_64".to_string()) =>
        {
            eprintln!("{PINNED_NS}: ClusterImageSet pinned to {image}")
        }
        other => mismatches.push(format!(
            "the release in the registry: wanted the ClusterImageSet pinned to {pinned_release} \
             with version and architecture annotations, got {other:?}"
        )),
    }

    // Steady state: blocked control planes are looked at once a minute and waiting configs
    // every 30 s, so each at most once in 15 s; a retry loop would be hundreds.
    let before = providers.total_reconciles();
    tokio::time::sleep(Duration::from_secs(15)).await;
    let during = providers.total_reconciles() - before;
    eprintln!(
        "reconciles in 15 s of steady state with {} blocked control planes: {during}",
        rows.len()
    );
    providers.print_reconciles();
    let bound = 2 * rows.len() as u64;
    if during > bound {
        mismatches.push(format!(
            "{during} reconciles in 15 s of steady state (at most {bound}): a retry loop"
        ));
    }
    providers.stop().await;
    core.kill().await;

    assert!(
        mismatches.is_empty(),
        "{} problems with {} rows:\n{}",
        mismatches.len(),
        rows.len(),
        mismatches.join("\n")
    );
    doc::CONTROLLERS.write_or_check(
        &doc::path(env!("CARGO_MANIFEST_DIR"), 2),
        &section(&found),
        "CAPOA_UPDATE_DOCS=1 cargo test -p agent-sim --test bad_input_controllers",
    );
}

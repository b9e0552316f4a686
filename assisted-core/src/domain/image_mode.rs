//! Image mode at install time (on-cluster layering, "OCL day 1"), pure: the MachineOSConfig
//! manifests a cluster is installed with, read from its custom manifests and checked before the
//! install starts. The bootstrap machine-config-operator refuses a bad one only mid-install (the
//! bootstrap node then never finishes); here the same rules, and what the site needs beyond
//! them (the image's pull credentials, the push Secret), hold the install with a validation
//! failure that names the manifest, the pool and the field.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::release_support::{os_image_stream_support, pre_built_images_supported};

/// On a MachineOSConfig: the image its pool's nodes boot at install (digest-pinned).
pub const PRE_BUILT_IMAGE_ANNOTATION: &str = "machineconfiguration.openshift.io/pre-built-image";
/// Where the MachineOSConfigs' push Secrets live in the installed cluster.
pub const MCO_NAMESPACE: &str = "openshift-machine-config-operator";
/// On an AgentClusterInstall: Secrets (`namespace/name`, comma-separated) its control plane puts
/// into the installed cluster once its API answers (image mode's push Secrets, kept out of the
/// manifests' ConfigMaps); they count as present.
pub const POST_INSTALL_SECRETS_ANNOTATION: &str = "assisted-core.openshift.io/post-install-secrets";
/// The pools every cluster has; others must come as MachineConfigPool manifests.
const BUILT_IN_POOLS: &[&str] = &["master", "worker", "arbiter"];

/// One pool installed on a pre-built image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolImage {
    pub pool: String,
    pub image: String,
}

/// What the cluster's manifests ask of image mode, and what is wrong with it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageMode {
    /// The pools installed on a pre-built image, in the manifests' order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolImage>,
    /// `osImageStream` of the install-config (overrides), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_image_stream: Option<String>,
    /// Each problem names the manifest, the pool and the field; any one holds the install.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl ImageMode {
    /// No MachineOSConfig, no stream and nothing wrong: the cluster installs as any other.
    pub fn is_off(&self) -> bool {
        *self == ImageMode::default()
    }
}

/// What the check reads besides the manifests.
pub struct Inputs<'a> {
    /// The custom manifests: file name and content (YAML or JSON, one or more documents).
    pub manifests: &'a [(String, Vec<u8>)],
    pub openshift_version: &'a str,
    /// The registries (`auths` keys) the pull secret has credentials for.
    pub pull_secret_registries: &'a [String],
    /// The install-config overrides (JSON), where `osImageStream` is set.
    pub install_config_overrides: Option<&'a str>,
    /// [`POST_INSTALL_SECRETS_ANNOTATION`]'s value, when set.
    pub post_install_secrets: Option<&'a str>,
}

/// A MachineOSConfig as found in a manifest, with the fields the check reads.
#[derive(Debug, Clone, PartialEq)]
struct MachineOsConfig {
    file: String,
    name: String,
    pool: String,
    pre_built_image: Option<String>,
    push_secret: String,
    push_spec: String,
}

/// Every document of every manifest, parsed (a file that does not parse was refused before).
fn documents(manifests: &[(String, Vec<u8>)]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (file, bytes) in manifests {
        let text = String::from_utf8_lossy(bytes);
        for doc in serde_yaml::Deserializer::from_str(&text) {
            if let Ok(value) = Value::deserialize(doc)
                && value.is_object()
            {
                out.push((file.clone(), value));
            }
        }
    }
    out
}

fn text(value: &Value, path: &[&str]) -> String {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn is_kind(doc: &Value, group: &str, kind: &str) -> bool {
    text(doc, &["kind"]) == kind
        && (group.is_empty() && text(doc, &["apiVersion"]) == "v1"
            || !group.is_empty() && text(doc, &["apiVersion"]).starts_with(&format!("{group}/")))
}

fn machine_os_config(file: &str, doc: &Value) -> MachineOsConfig {
    MachineOsConfig {
        file: file.to_string(),
        name: text(doc, &["metadata", "name"]),
        pool: text(doc, &["spec", "machineConfigPool", "name"]),
        pre_built_image: doc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(PRE_BUILT_IMAGE_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_string),
        push_secret: text(doc, &["spec", "renderedImagePushSecret", "name"]),
        push_spec: text(doc, &["spec", "renderedImagePushSpec"]),
    }
}

/// `registry/repo[:tag]@sha256:<64 hex>`, fully qualified: the only form the bootstrap MCO
/// accepts for a pre-built image.
pub fn is_digest_pinned(image: &str) -> bool {
    image.split_once("@sha256:").is_some_and(|(repo, hex)| {
        !repo.is_empty()
            && registry_of(repo) != "docker.io"
            && hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

/// The registry host of an image reference, as a container runtime reads it: the first path
/// component when it looks like a host (a dot, a port or `localhost`), else Docker Hub.
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            first
        }
        _ => "docker.io",
    }
}

/// Whether the pull secret has credentials for `image`: an `auths` key that is its registry,
/// or a prefix of its repository (`registry/namespace`), as the runtime matches them.
fn has_credentials(image: &str, registries: &[String]) -> bool {
    let registry = registry_of(image);
    let repository = image.split(['@', ' ']).next().unwrap_or(image);
    registries.iter().any(|key| {
        let key = key.trim_end_matches('/');
        key == registry
            || (registry == "docker.io" && key.contains("docker.io"))
            || repository.starts_with(&format!("{key}/"))
    })
}

/// A push spec is a fully qualified image reference with a tag (`registry/repo:tag`), no
/// digest, as the MachineOSConfig API validates it: where the MCO pushes the images it builds
/// later for the pool.
fn is_push_spec(spec: &str) -> bool {
    let last = spec.rsplit('/').next().unwrap_or("");
    registry_of(spec) != "docker.io"
        && !spec.contains('@')
        && last.contains(':')
        && !last.ends_with(':')
}

/// Reads the MachineOSConfigs among the manifests and checks them against the release, the pull
/// secret and the other manifests.
pub fn check(inputs: &Inputs) -> ImageMode {
    let found = Found::read(inputs);
    let overrides = inputs
        .install_config_overrides
        .and_then(|o| serde_json::from_str::<Value>(o).ok())
        .unwrap_or_default();
    let os_image_stream = overrides
        .get("osImageStream")
        .and_then(Value::as_str)
        .map(str::to_string);
    let feature_set = overrides.get("featureSet").and_then(Value::as_str);

    let mut out = ImageMode {
        os_image_stream: os_image_stream.clone(),
        ..Default::default()
    };
    let version = inputs.openshift_version;
    if let Some(stream) = &os_image_stream
        && let Err(why) = os_image_stream_support(version, stream, feature_set)
    {
        out.problems
            .push(format!("install-config osImageStream {stream:?}: {why}"));
    }
    if !found.moscs.is_empty() && !pre_built_images_supported(version) {
        out.problems.push(format!(
            "image mode at install (MachineOSConfig manifests) needs OpenShift 4.21 or later, the first release whose bootstrap machine-config-operator installs pools on a pre-built image; this cluster installs {version}"
        ));
    }
    let mut seen_pools = BTreeSet::new();
    for m in &found.moscs {
        check_machine_os_config(m, &found, &mut seen_pools, inputs, &mut out);
    }
    out
}

/// What the manifests (and the Secrets delivered after the install) hold for image mode.
struct Found {
    /// Names of the Secrets in the MCO namespace.
    push_secrets: BTreeSet<String>,
    /// The built-in pools and the MachineConfigPools among the manifests.
    pools: BTreeSet<String>,
    moscs: Vec<MachineOsConfig>,
}

impl Found {
    fn read(inputs: &Inputs) -> Found {
        let docs = documents(inputs.manifests);
        let push_secrets = docs
            .iter()
            .filter(|(_, d)| is_kind(d, "", "Secret"))
            .filter(|(_, d)| text(d, &["metadata", "namespace"]) == MCO_NAMESPACE)
            .map(|(_, d)| text(d, &["metadata", "name"]))
            .chain(
                inputs
                    .post_install_secrets
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|s| s.trim().strip_prefix(&format!("{MCO_NAMESPACE}/")))
                    .map(str::to_string),
            )
            .collect();
        let pools = docs
            .iter()
            .filter(|(_, d)| is_kind(d, "machineconfiguration.openshift.io", "MachineConfigPool"))
            .map(|(_, d)| text(d, &["metadata", "name"]))
            .chain(BUILT_IN_POOLS.iter().map(|p| p.to_string()))
            .collect();
        let moscs = docs
            .iter()
            .filter(|(_, d)| is_kind(d, "machineconfiguration.openshift.io", "MachineOSConfig"))
            .map(|(file, d)| machine_os_config(file, d))
            .collect();
        Found {
            push_secrets,
            pools,
            moscs,
        }
    }
}

/// One MachineOSConfig: the pool it claims, its pre-built image, where its later builds go.
fn check_machine_os_config(
    m: &MachineOsConfig,
    found: &Found,
    seen_pools: &mut BTreeSet<String>,
    inputs: &Inputs,
    out: &mut ImageMode,
) {
    let at = format!("MachineOSConfig {} ({})", m.name, m.file);
    let pool = match pool_problem(m, &found.pools, seen_pools) {
        Some(problem) => {
            out.problems.push(format!("{at}: {problem}"));
            None
        }
        None => Some(m.pool.as_str()),
    };
    let named = |field: &str| match pool {
        Some(p) => format!("{at}: pool {p}: {field}"),
        None => format!("{at}: {field}"),
    };
    match image_problem(m, inputs.pull_secret_registries) {
        Some(problem) => out.problems.push(named(&problem)),
        None => {
            if let (Some(p), Some(image)) = (pool, &m.pre_built_image) {
                out.pools.push(PoolImage {
                    pool: p.to_string(),
                    image: image.clone(),
                });
            }
        }
    }
    if let Some(problem) = push_problem(m, &found.push_secrets) {
        out.problems.push(named(&problem));
    }
    if let Some(problem) = push_spec_problem(m) {
        out.problems.push(named(&problem));
    }
}

/// Why the MachineOSConfig cannot claim its pool, if it cannot; a pool it can claim is marked
/// seen (one MachineOSConfig per pool).
fn pool_problem(
    m: &MachineOsConfig,
    pools: &BTreeSet<String>,
    seen_pools: &mut BTreeSet<String>,
) -> Option<String> {
    if m.pool.is_empty() {
        Some("spec.machineConfigPool.name is required".to_string())
    } else if m.name != m.pool {
        Some(format!(
            "pool {}: metadata.name must be the pool's name (spec.machineConfigPool.name), as the MachineOSConfig API requires",
            m.pool
        ))
    } else if !pools.contains(&m.pool) {
        Some(format!(
            "pool {}: spec.machineConfigPool.name names no pool (master, worker, arbiter or a MachineConfigPool among the manifests)",
            m.pool
        ))
    } else if !seen_pools.insert(m.pool.clone()) {
        Some(format!(
            "pool {}: another MachineOSConfig already configures this pool",
            m.pool
        ))
    } else {
        None
    }
}

/// Why the pre-built image annotation cannot be booted, if it cannot.
fn image_problem(m: &MachineOsConfig, pull_secret_registries: &[String]) -> Option<String> {
    match &m.pre_built_image {
        None => Some(format!(
            "metadata.annotations[{PRE_BUILT_IMAGE_ANNOTATION}] is required at install time (the image the pool's nodes boot)"
        )),
        Some(image) if !is_digest_pinned(image) => Some(format!(
            "metadata.annotations[{PRE_BUILT_IMAGE_ANNOTATION}] {image:?} is not a fully qualified image pinned by digest (registry/repository@sha256:<64 hex digits>)"
        )),
        Some(image) if !has_credentials(image, pull_secret_registries) => Some(format!(
            "metadata.annotations[{PRE_BUILT_IMAGE_ANNOTATION}]: the pull secret has no credentials for {} (the nodes pull {image} with it)",
            registry_of(image)
        )),
        Some(_) => None,
    }
}

/// Why the push Secret is missing, if it is.
fn push_problem(m: &MachineOsConfig, push_secrets: &BTreeSet<String>) -> Option<String> {
    if m.push_secret.is_empty() {
        Some("spec.renderedImagePushSecret.name is required".to_string())
    } else if !push_secrets.contains(&m.push_secret) {
        Some(format!(
            "spec.renderedImagePushSecret.name: Secret {MCO_NAMESPACE}/{} is not among the manifests (nor delivered after the install)",
            m.push_secret
        ))
    } else {
        None
    }
}

/// Why the push spec is not where the MCO can push its builds, if it is not.
fn push_spec_problem(m: &MachineOsConfig) -> Option<String> {
    if m.push_spec.is_empty() {
        Some("spec.renderedImagePushSpec is required".to_string())
    } else if !is_push_spec(&m.push_spec) {
        Some(format!(
            "spec.renderedImagePushSpec {:?} is not a fully qualified image reference with a tag (registry/repository:tag)",
            m.push_spec
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn mosc(pool: &str, image: Option<&str>) -> String {
        let annotation = image
            .map(|i| format!("  annotations:\n    {PRE_BUILT_IMAGE_ANNOTATION}: {i}\n"))
            .unwrap_or_default();
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1
kind: MachineOSConfig
metadata:
  name: {pool}
{annotation}spec:
  machineConfigPool:
    name: {pool}
  imageBuilder:
    imageBuilderType: Job
  containerFile:
  - containerfileArch: NoArch
    content: |
      FROM configs AS final
      RUN dnf install -y tmux
  renderedImagePushSecret:
    name: push-secret
  renderedImagePushSpec: registry.example.com/os/{pool}:latest
"
        )
    }

    const PUSH_SECRET: &str = "apiVersion: v1
kind: Secret
metadata:
  name: push-secret
  namespace: openshift-machine-config-operator
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: e30=
";

    fn image(pool: &str) -> String {
        format!("registry.example.com/os/{pool}@sha256:{DIGEST}")
    }

    fn run(version: &str, files: &[(&str, String)], registries: &[&str]) -> ImageMode {
        let manifests: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(n, c)| (n.to_string(), c.clone().into_bytes()))
            .collect();
        let registries: Vec<String> = registries.iter().map(|r| r.to_string()).collect();
        check(&Inputs {
            manifests: &manifests,
            openshift_version: version,
            pull_secret_registries: &registries,
            install_config_overrides: None,
            post_install_secrets: None,
        })
    }

    fn both_pools() -> Vec<(&'static str, String)> {
        vec![
            ("mosc-master.yaml", mosc("master", Some(&image("master")))),
            ("mosc-worker.yaml", mosc("worker", Some(&image("worker")))),
            ("push-secret.yaml", PUSH_SECRET.to_string()),
        ]
    }

    #[test]
    fn both_pools_on_pinned_images_pass_and_are_listed() {
        let got = run("4.21.0", &both_pools(), &["registry.example.com"]);
        assert_eq!(got.problems, Vec::<String>::new());
        assert_eq!(
            got.pools,
            vec![
                PoolImage {
                    pool: "master".into(),
                    image: image("master")
                },
                PoolImage {
                    pool: "worker".into(),
                    image: image("worker")
                },
            ]
        );
    }

    #[test]
    fn no_machine_os_config_is_no_image_mode_and_no_problem() {
        let got = run("4.17.3", &[("cm.yaml", PUSH_SECRET.to_string())], &[]);
        assert_eq!(got, ImageMode::default());
    }

    #[test]
    fn a_tag_instead_of_a_digest_names_the_pool_and_the_annotation() {
        let mut files = both_pools();
        files[1].1 = mosc("worker", Some("registry.example.com/os/worker:latest"));
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert_eq!(got.problems.len(), 1, "{:?}", got.problems);
        let p = &got.problems[0];
        assert!(
            p.contains("pool worker") && p.contains(PRE_BUILT_IMAGE_ANNOTATION),
            "{p}"
        );
        assert!(
            p.contains("not a fully qualified image pinned by digest"),
            "{p}"
        );
        assert_eq!(got.pools.len(), 1);
    }

    #[test]
    fn a_missing_annotation_is_refused() {
        let mut files = both_pools();
        files[0].1 = mosc("master", None);
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert!(
            got.problems[0].contains("pool master")
                && got.problems[0].contains("is required at install time")
        );
    }

    #[test]
    fn a_pool_that_does_not_exist_is_refused_unless_its_pool_is_a_manifest() {
        let files = vec![
            ("mosc.yaml", mosc("infra", Some(&image("infra")))),
            ("push-secret.yaml", PUSH_SECRET.to_string()),
        ];
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert!(
            got.problems[0].contains("pool infra: spec.machineConfigPool.name names no pool"),
            "{:?}",
            got.problems
        );
        let mut with_pool = files.clone();
        with_pool.push((
            "pool.yaml",
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: infra\n".into(),
        ));
        assert_eq!(
            run("4.21.0", &with_pool, &["registry.example.com"]).problems,
            Vec::<String>::new()
        );
    }

    #[test]
    fn two_configs_for_one_pool_are_refused() {
        let mut files = both_pools();
        files[1].1 = mosc("master", Some(&image("master")))
            .replace("name: master\nspec", "name: master-2\nspec");
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert!(
            got.problems
                .iter()
                .any(|p| p.contains("another MachineOSConfig already configures this pool")),
            "{:?}",
            got.problems
        );
    }

    #[test]
    fn the_pull_secret_must_hold_the_image_registry() {
        let got = run("4.21.0", &both_pools(), &["quay.io"]);
        assert_eq!(got.problems.len(), 2);
        assert!(
            got.problems[0].contains("no credentials for registry.example.com"),
            "{:?}",
            got.problems
        );
        // A repository-scoped key counts.
        assert_eq!(
            run("4.21.0", &both_pools(), &["registry.example.com/os"]).problems,
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_push_secret_must_be_among_the_manifests() {
        let files: Vec<_> = both_pools().into_iter().take(2).collect();
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert_eq!(got.problems.len(), 2);
        assert!(got.problems[0].contains("spec.renderedImagePushSecret.name: Secret openshift-machine-config-operator/push-secret is not among the manifests"), "{:?}", got.problems);
        // One the control plane puts into the installed cluster counts.
        let manifests: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(n, c)| (n.to_string(), c.clone().into_bytes()))
            .collect();
        let registries = vec!["registry.example.com".to_string()];
        let delivered = |annotation: &str| {
            check(&Inputs {
                manifests: &manifests,
                openshift_version: "4.21.0",
                pull_secret_registries: &registries,
                install_config_overrides: None,
                post_install_secrets: Some(annotation),
            })
            .problems
        };
        assert_eq!(
            delivered("openshift-machine-config-operator/push-secret"),
            Vec::<String>::new()
        );
        // In another namespace it is not the MCO's.
        assert_eq!(delivered("default/push-secret").len(), 2);
    }

    #[test]
    fn a_push_spec_without_a_tag_is_refused_and_a_containerfile_is_optional() {
        let mut files = both_pools();
        files[0].1 = files[0]
            .1
            .replace("registry.example.com/os/master:latest", "registry.example.com/os/master")
            .replace("  containerFile:\n  - containerfileArch: NoArch\n    content: |\n      FROM configs AS final\n      RUN dnf install -y tmux\n", "");
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert_eq!(got.problems.len(), 1, "{:?}", got.problems);
        assert!(got.problems[0].contains("pool master: spec.renderedImagePushSpec"));
    }

    #[test]
    fn the_config_is_named_after_its_pool() {
        let mut files = both_pools();
        files[0].1 = files[0].1.replacen("name: master", "name: masters", 1);
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert_eq!(got.problems.len(), 1, "{:?}", got.problems);
        assert!(got.problems[0].contains("metadata.name must be the pool's name"));
    }

    #[test]
    fn releases_before_the_bootstrap_mco_reads_pre_built_images_are_refused() {
        let got = run("4.20.5", &both_pools(), &["registry.example.com"]);
        assert_eq!(got.problems.len(), 1);
        assert!(
            got.problems[0].contains("needs OpenShift 4.21 or later")
                && got.problems[0].contains("4.20.5")
        );
    }

    #[test]
    fn os_image_stream_is_checked_against_the_release() {
        let check_with = |version: &str, overrides: &str| {
            check(&Inputs {
                manifests: &[],
                openshift_version: version,
                pull_secret_registries: &[],
                install_config_overrides: Some(overrides),
                post_install_secrets: None,
            })
        };
        let check_stream = |version: &str, stream: &str| {
            check_with(version, &format!(r#"{{"osImageStream":"{stream}"}}"#))
        };
        let ok = check_stream("4.22.0", "rhel-9");
        assert_eq!(
            (ok.os_image_stream.as_deref(), ok.problems.len()),
            (Some("rhel-9"), 0)
        );
        assert!(
            check_stream("4.22.0", "rhel-8").problems[0]
                .contains("osImageStream \"rhel-8\": unknown stream")
        );
        assert!(
            check_stream("4.21.3", "rhel-9").problems[0]
                .contains("has no osImageStream (from 4.22)")
        );
        // Another stream than rhel-9 before 4.23 needs the OSStreams gate (TechPreviewNoUpgrade).
        assert!(
            check_stream("4.22.1", "rhel-10").problems[0]
                .contains("featureSet: TechPreviewNoUpgrade")
        );
        let preview = check_with(
            "4.22.1",
            r#"{"osImageStream":"rhel-10","featureSet":"TechPreviewNoUpgrade"}"#,
        );
        assert_eq!(preview.problems, Vec::<String>::new());
        assert_eq!(
            check_stream("4.23.0", "rhel-10").problems,
            Vec::<String>::new()
        );
    }

    #[test]
    fn several_documents_in_one_file_are_read() {
        let files = vec![(
            "all.yaml",
            format!(
                "{}---\n{}---\n{PUSH_SECRET}",
                mosc("master", Some(&image("master"))),
                mosc("worker", Some(&image("worker")))
            ),
        )];
        let got = run("4.21.0", &files, &["registry.example.com"]);
        assert_eq!(
            (got.pools.len(), got.problems.len()),
            (2, 0),
            "{:?}",
            got.problems
        );
    }

    #[test]
    fn image_references() {
        assert!(is_digest_pinned(&image("m")));
        assert!(!is_digest_pinned("registry.example.com/os:latest"));
        assert!(!is_digest_pinned("registry.example.com/os@sha256:abc"));
        assert!(
            !is_digest_pinned(&format!("os@sha256:{DIGEST}")),
            "not fully qualified"
        );
        assert!(is_digest_pinned(&format!(
            "registry.example.com/os:4.21@sha256:{DIGEST}"
        )));
        assert_eq!(
            registry_of("registry.example.com:5000/os@sha256:x"),
            "registry.example.com:5000"
        );
        assert_eq!(registry_of("library/fedora:40"), "docker.io");
        assert!(is_push_spec("registry.example.com/os/master:latest"));
        assert!(!is_push_spec("registry.example.com:5000/os/master"));
        assert!(!is_push_spec("os/master:latest"));
    }
}

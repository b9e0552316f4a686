//! The mirror-registry ConfigMap: what CAPOA's `spec.config.imageRegistryRef` and
//! assisted-service's `mirrorRegistryRef` (AgentClusterInstall, InfraEnv) both name.
//!
//! Its data holds `registries.conf` (required; containers-registries.conf(5), v2 format) and
//! optionally `ca-bundle.crt` (PEM certificates of the mirrors). [`parse`] checks it once, where
//! the user wrote it, and the renderers turn the result into what each consumer needs:
//! - [`image_digest_sources`]: install-config `imageDigestSources` (the same list serves the
//!   deprecated `imageContentSources` of releases before 4.14);
//! - [`cluster_manifests`]: the objects CAPOA puts on the installed cluster (mirror sets, the
//!   CA ConfigMap and the `Image` config);
//! - [`discovery_files`]: the files assisted-service writes into the discovery ignition.
//!
//! Pure: no I/O, no clock.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use thiserror::Error;

/// ConfigMap key of the containers-registries.conf(5) TOML (required).
pub const REGISTRIES_CONF_KEY: &str = "registries.conf";
/// ConfigMap key of the mirrors' PEM CA bundle (optional); also the key of the CA ConfigMap
/// put on the cluster.
pub const CA_BUNDLE_KEY: &str = "ca-bundle.crt";

/// The ConfigMap CAPOA fills with [`cluster_manifests`] in the control plane's namespace and
/// lists in the AgentClusterInstall's `manifestsConfigMapRefs` (one per namespace upstream).
pub const SPOKE_MANIFESTS_CONFIG_MAP: &str = "additional-registry-config";
/// Name of both mirror sets on the cluster.
pub const MIRROR_SET_NAME: &str = "additional-registry";
/// The cluster's CA ConfigMap, in [`CA_CONFIG_MAP_NAMESPACE`], that `Image/cluster` names.
pub const CA_CONFIG_MAP_NAME: &str = "additional-registry-certificate";
pub const CA_CONFIG_MAP_NAMESPACE: &str = "openshift-config";

/// [`cluster_manifests`] file names: the data keys of CAPOA's manifests ConfigMap.
pub const DIGEST_MIRROR_SET_FILE: &str = "image-digest-mirror-set.json";
pub const TAG_MIRROR_SET_FILE: &str = "image-tag-mirror-set.json";
pub const CA_CONFIG_MAP_FILE: &str = "additional-registry-certificate.json";
pub const IMAGE_CONFIG_FILE: &str = "image-config.json";

/// Discovery-host paths, as assisted-service's discovery ignition writes them.
pub const DISCOVERY_REGISTRIES_CONF_PATH: &str = "/etc/containers/registries.conf";
pub const DISCOVERY_CA_PATH: &str = "/etc/pki/ca-trust/source/anchors/domain.crt";
/// rw-r--r--: upstream's mode for both files (420).
pub const DISCOVERY_FILE_MODE: u32 = 0o644;

const CONFIG_API_VERSION: &str = "config.openshift.io/v1";

/// A checked mirror-registry ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorConfig {
    /// Each `[[registry]]`, in file order.
    pub registries: Vec<Registry>,
    /// `ca-bundle.crt` as given; `None` when absent, empty or only whitespace.
    pub ca_bundle: Option<String>,
    /// `registries.conf` as given: the discovery host gets it verbatim.
    pub registries_conf: String,
}

/// One `[[registry]]`: a source and where to pull it from instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// The source, e.g. `quay.io/openshift-release-dev/ocp-release` (trailing `/` dropped,
    /// as containers/image does).
    pub location: String,
    /// `insecure` of the source itself; kept for callers, not rendered (as in CAPOA, only
    /// insecure mirrors reach `Image.spec.registrySources`).
    pub insecure: bool,
    /// Never empty.
    pub mirrors: Vec<Mirror>,
}

/// One `[[registry.mirror]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    pub location: String,
    pub insecure: bool,
    /// `pull-from-mirror`, with the registry's `mirror-by-digest-only` folded in.
    pub pull_from_mirror: PullFrom,
}

/// Which pulls may use a mirror (containers-registries.conf(5) `pull-from-mirror`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullFrom {
    /// `"all"`, and the default when unset: digest and tag pulls.
    All,
    /// `"digest-only"`, or unset under a registry with `mirror-by-digest-only = true`.
    DigestOnly,
    /// `"tag-only"`.
    TagOnly,
}

impl PullFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            PullFrom::All => "all",
            PullFrom::DigestOnly => "digest-only",
            PullFrom::TagOnly => "tag-only",
        }
    }

    fn parse(value: &str) -> Option<PullFrom> {
        match value {
            "all" => Some(PullFrom::All),
            "digest-only" => Some(PullFrom::DigestOnly),
            "tag-only" => Some(PullFrom::TagOnly),
            _ => None,
        }
    }

    /// Digest-mirror material: an ImageDigestMirrorSet entry / install-config
    /// `imageDigestSources`. CAPOA files `all` (and unset) there too: OpenShift has no
    /// "both" set, and the release payload is pulled by digest.
    pub fn by_digest(self) -> bool {
        matches!(self, PullFrom::All | PullFrom::DigestOnly)
    }
}

/// 1-based place in `registries.conf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextPosition {
    pub line: usize,
    pub column: usize,
}

/// What is wrong with a mirror-registry ConfigMap; each message names the data key.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MirrorConfigError {
    #[error(
        "the ConfigMap has no `{key}` key: it must hold the mirrors as \
         containers-registries.conf(5) TOML"
    )]
    MissingKey { key: &'static str },
    #[error("registries.conf{}: {message}", at_suffix(.at))]
    Toml {
        at: Option<TextPosition>,
        message: String,
    },
    #[error(
        "registries.conf: no [[registry]] table: give each source as [[registry]] with \
         `location` and at least one [[registry.mirror]] (v2 format)"
    )]
    NoRegistry,
    /// `index` counts `[[registry]]` tables from 1.
    #[error("registries.conf: [[registry]] number {index} has no `location`")]
    RegistryWithoutLocation { index: usize },
    #[error("registries.conf: [[registry]] {location} has no [[registry.mirror]]")]
    RegistryWithoutMirror { location: String },
    #[error("registries.conf: a [[registry.mirror]] of {registry} has no `location`")]
    MirrorWithoutLocation { registry: String },
    #[error(
        "registries.conf: location {location:?} has a URI scheme: write \
         host[:port][/path] only"
    )]
    LocationWithScheme { location: String },
    #[error(
        "registries.conf: mirror {mirror} of {registry} has pull-from-mirror = \
         {value:?}; use \"digest-only\", \"tag-only\" or \"all\""
    )]
    BadPullFromMirror {
        registry: String,
        mirror: String,
        value: String,
    },
    /// containers/image refuses the file (every pull on the discovery host would fail).
    #[error(
        "registries.conf: [[registry]] {registry} sets mirror-by-digest-only, so its \
         mirror {mirror} cannot also set pull-from-mirror"
    )]
    PullFromWithDigestOnly { registry: String, mirror: String },
    #[error("ca-bundle.crt: not PEM certificates ({detail})")]
    CaNotPem { detail: String },
}

fn at_suffix(at: &Option<TextPosition>) -> String {
    at.map(|p| format!(" line {}, column {}", p.line, p.column))
        .unwrap_or_default()
}

// The TOML as containers-registries.conf(5) spells it. Other keys (prefix, blocked,
// unqualified-search-registries, aliases, ...) are accepted and ignored; a wrong type is a
// TOML error with its line.
#[derive(Deserialize)]
struct RawConf {
    registry: Option<Vec<RawRegistry>>,
}

#[derive(Deserialize)]
struct RawRegistry {
    location: Option<String>,
    insecure: Option<bool>,
    #[serde(rename = "mirror-by-digest-only")]
    mirror_by_digest_only: Option<bool>,
    mirror: Option<Vec<RawMirror>>,
}

#[derive(Deserialize)]
struct RawMirror {
    location: Option<String>,
    insecure: Option<bool>,
    #[serde(rename = "pull-from-mirror")]
    pull_from_mirror: Option<String>,
}

/// Checks a mirror-registry ConfigMap's `data`.
///
/// Stricter than upstream where upstream would fail later or silently: every `[[registry]]`
/// needs a `location` and a mirror (CAPOA's rule; assisted-service skips such entries), and
/// what containers/image refuses on the host (unknown `pull-from-mirror`, `pull-from-mirror`
/// under `mirror-by-digest-only`, a mirror without location, a URI scheme) is refused here.
pub fn parse(data: &BTreeMap<String, String>) -> Result<MirrorConfig, MirrorConfigError> {
    let conf = data
        .get(REGISTRIES_CONF_KEY)
        .ok_or(MirrorConfigError::MissingKey {
            key: REGISTRIES_CONF_KEY,
        })?;
    let raw: RawConf = toml::from_str(conf).map_err(|e| MirrorConfigError::Toml {
        at: e.span().map(|s| position(conf, s.start)),
        message: e.message().trim().to_string(),
    })?;
    let raw_registries = raw.registry.unwrap_or_default();
    if raw_registries.is_empty() {
        return Err(MirrorConfigError::NoRegistry);
    }
    let registries = raw_registries
        .into_iter()
        .enumerate()
        .map(|(i, r)| registry(i + 1, r))
        .collect::<Result<Vec<_>, _>>()?;

    let ca_bundle = data
        .get(CA_BUNDLE_KEY)
        .filter(|ca| !ca.trim().is_empty())
        .cloned();
    if let Some(ca) = &ca_bundle
        && let Some(detail) = pem_certificates_problem(ca)
    {
        return Err(MirrorConfigError::CaNotPem { detail });
    }

    Ok(MirrorConfig {
        registries,
        ca_bundle,
        registries_conf: conf.clone(),
    })
}

fn registry(index: usize, raw: RawRegistry) -> Result<Registry, MirrorConfigError> {
    let location = clean_location(raw.location.as_deref())?
        .ok_or(MirrorConfigError::RegistryWithoutLocation { index })?;
    let raw_mirrors = raw.mirror.unwrap_or_default();
    if raw_mirrors.is_empty() {
        return Err(MirrorConfigError::RegistryWithoutMirror { location });
    }
    let by_digest_only = raw.mirror_by_digest_only.unwrap_or(false);
    let mut mirrors = Vec::with_capacity(raw_mirrors.len());
    for m in raw_mirrors {
        let mirror = clean_location(m.location.as_deref())?.ok_or_else(|| {
            MirrorConfigError::MirrorWithoutLocation {
                registry: location.clone(),
            }
        })?;
        let pull_from_mirror = match (m.pull_from_mirror, by_digest_only) {
            (None, false) => PullFrom::All,
            (None, true) => PullFrom::DigestOnly,
            (Some(_), true) => {
                return Err(MirrorConfigError::PullFromWithDigestOnly {
                    registry: location,
                    mirror,
                });
            }
            (Some(value), false) => {
                PullFrom::parse(&value).ok_or_else(|| MirrorConfigError::BadPullFromMirror {
                    registry: location.clone(),
                    mirror: mirror.clone(),
                    value,
                })?
            }
        };
        mirrors.push(Mirror {
            location: mirror,
            insecure: m.insecure.unwrap_or(false),
            pull_from_mirror,
        });
    }
    Ok(Registry {
        location,
        insecure: raw.insecure.unwrap_or(false),
        mirrors,
    })
}

/// `None` when unset or blank; the trailing `/` goes, as containers/image drops it, so the
/// mirror sets name the same source the host matches.
fn clean_location(raw: Option<&str>) -> Result<Option<String>, MirrorConfigError> {
    let Some(l) = raw.map(|l| l.trim().trim_end_matches('/')) else {
        return Ok(None);
    };
    if l.is_empty() {
        return Ok(None);
    }
    if l.contains("://") {
        return Err(MirrorConfigError::LocationWithScheme {
            location: l.to_string(),
        });
    }
    Ok(Some(l.to_string()))
}

/// 1-based line and column (in characters) of a byte offset.
fn position(text: &str, offset: usize) -> TextPosition {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    TextPosition {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

/// `None` when the text holds at least one PEM `CERTIFICATE` block and every block is a
/// certificate whose base64 body decodes to DER (a SEQUENCE); else what is wrong, with the
/// line. Text between blocks is allowed (RFC 7468 explanatory text).
fn pem_certificates_problem(pem: &str) -> Option<String> {
    const BEGIN: &str = "-----BEGIN ";
    const END: &str = "-----END ";
    const DASHES: &str = "-----";
    // (label, line of BEGIN, base64 so far) of the open block.
    let mut open: Option<(&str, usize, String)> = None;
    let mut certificates = 0;
    for (i, line) in pem.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if let Some(label) = line.strip_prefix(BEGIN) {
            // Go's PEM decoder (the cluster's and the host's) wants the base64 on lines of its
            // own, so a one-line block is refused here as it would be there.
            let Some(label) = label.strip_suffix(DASHES).filter(|l| !l.contains(DASHES)) else {
                return Some(format!(
                    "line {n}: the BEGIN line must hold only -----BEGIN <label>-----"
                ));
            };
            if let Some((_, begun, _)) = &open {
                return Some(format!(
                    "line {n}: BEGIN inside the block begun on line {begun}"
                ));
            }
            if label != "CERTIFICATE" {
                return Some(format!(
                    "line {n}: a {label} block; only CERTIFICATE blocks belong here"
                ));
            }
            open = Some((label, n, String::new()));
        } else if let Some(label) = line.strip_prefix(END) {
            let Some((open_label, begun, body)) = open.take() else {
                return Some(format!("line {n}: END without BEGIN"));
            };
            if label.strip_suffix(DASHES) != Some(open_label) {
                return Some(format!(
                    "line {n}: does not end the {open_label} begun on line {begun}"
                ));
            }
            let der = base64::engine::general_purpose::STANDARD.decode(&body);
            if !matches!(der.as_deref(), Ok([0x30, _, ..])) {
                return Some(format!(
                    "the certificate begun on line {begun} is not base64-encoded DER"
                ));
            }
            certificates += 1;
        } else if let Some((_, _, body)) = &mut open {
            body.push_str(line);
        }
    }
    if let Some((label, begun, _)) = open {
        return Some(format!("line {begun}: BEGIN {label} has no END"));
    }
    (certificates == 0).then(|| "no -----BEGIN CERTIFICATE----- block".to_string())
}

/// One install-config `imageDigestSources` (or `imageContentSources`) entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageDigestSource {
    pub source: String,
    pub mirrors: Vec<String>,
}

/// install-config `imageDigestSources`: per registry, in order, its mirrors usable by digest
/// ([`PullFrom::by_digest`]); a registry with none (tag-only mirrors) is left out. Equals
/// CAPOA's ImageDigestMirrorSet entries. (assisted-service drops `"all"` mirrors here, which
/// containers-registries.conf(5) says serve digest pulls too; they are kept.)
pub fn image_digest_sources(c: &MirrorConfig) -> Vec<ImageDigestSource> {
    mirror_entries(c, PullFrom::by_digest)
}

/// Tag mirrors: `tag-only` ones only, as CAPOA files them (see [`PullFrom::by_digest`]).
fn image_tag_sources(c: &MirrorConfig) -> Vec<ImageDigestSource> {
    mirror_entries(c, |p| p == PullFrom::TagOnly)
}

fn mirror_entries(c: &MirrorConfig, keep: impl Fn(PullFrom) -> bool) -> Vec<ImageDigestSource> {
    c.registries
        .iter()
        .filter_map(|r| {
            let mirrors: Vec<String> = r
                .mirrors
                .iter()
                .filter(|m| keep(m.pull_from_mirror))
                .map(|m| m.location.clone())
                .collect();
            (!mirrors.is_empty()).then(|| ImageDigestSource {
                source: r.location.clone(),
                mirrors,
            })
        })
        .collect()
}

/// Where containers/image pulls `image` from under this configuration, in the order it tries
/// them (containers-registries.conf(5)): the mirrors of the `[[registry]]` whose location is
/// the longest prefix of the image's name (ending at a `/` or the name's end) that serve this
/// kind of pull ([`PullFrom`]: by digest for `name@sha256:...`, by tag otherwise), each with
/// the rest of the name kept, then the image itself. Wildcard locations (`*.example.com`) and
/// `blocked` sources are not read by [`parse`], so they never apply here.
pub fn pull_sources(image: &str, c: &MirrorConfig) -> Vec<String> {
    let (name, suffix) = split_reference(image);
    let by_digest = suffix.starts_with('@');
    let matches = |location: &str| {
        name.strip_prefix(location)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    let registry = c
        .registries
        .iter()
        .filter(|r| matches(&r.location))
        .max_by_key(|r| r.location.len());
    let mut out: Vec<String> = registry
        .into_iter()
        .flat_map(|r| {
            let rest = &name[r.location.len()..];
            r.mirrors
                .iter()
                .filter(|m| match m.pull_from_mirror {
                    PullFrom::All => true,
                    PullFrom::DigestOnly => by_digest,
                    PullFrom::TagOnly => !by_digest,
                })
                .map(move |m| format!("{}{rest}{suffix}", m.location))
        })
        .collect();
    out.push(image.to_string());
    out
}

/// `name` and what follows it (`@sha256:...`, `:tag`, or nothing) of an image reference.
fn split_reference(image: &str) -> (&str, &str) {
    if let Some(at) = image.find('@') {
        return image.split_at(at);
    }
    // A tag's `:` comes after the last `/` (an earlier one is a registry's port).
    let last_slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[last_slash..].rfind(':') {
        Some(colon) => image.split_at(last_slash + colon),
        None => (image, ""),
    }
}

/// Insecure mirror locations, in file order, each once.
fn insecure_mirrors(c: &MirrorConfig) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in c.registries.iter().flat_map(|r| &r.mirrors) {
        if m.insecure && !out.contains(&m.location) {
            out.push(m.location.clone());
        }
    }
    out
}

/// A mirror set (digest or tag) named [`MIRROR_SET_NAME`] with `sources` under `spec.<field>`,
/// when there is any.
fn mirror_set(
    file: &str,
    kind: &str,
    field: &str,
    sources: Vec<ImageDigestSource>,
) -> Option<(String, Value)> {
    if sources.is_empty() {
        return None;
    }
    let entries = serde_json::to_value(sources).unwrap_or_default();
    Some((
        file.to_string(),
        json!({
            "apiVersion": CONFIG_API_VERSION,
            "kind": kind,
            "metadata": {"name": MIRROR_SET_NAME},
            "spec": {field: entries},
        }),
    ))
}

/// The manifests CAPOA puts on the installed cluster, as `(file name, object)`, each only
/// when it has content:
/// - ImageDigestMirrorSet `additional-registry`: the digest mirrors;
/// - ImageTagMirrorSet `additional-registry`: the `tag-only` mirrors;
/// - ConfigMap `openshift-config/additional-registry-certificate`: the CA bundle;
/// - `Image` `cluster`: `additionalTrustedCA` (with a CA) and
///   `registrySources.insecureRegistries` (with insecure mirrors).
pub fn cluster_manifests(c: &MirrorConfig) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    out.extend(mirror_set(
        DIGEST_MIRROR_SET_FILE,
        "ImageDigestMirrorSet",
        "imageDigestMirrors",
        image_digest_sources(c),
    ));
    out.extend(mirror_set(
        TAG_MIRROR_SET_FILE,
        "ImageTagMirrorSet",
        "imageTagMirrors",
        image_tag_sources(c),
    ));
    if let Some(ca) = &c.ca_bundle {
        out.push((
            CA_CONFIG_MAP_FILE.to_string(),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": CA_CONFIG_MAP_NAME, "namespace": CA_CONFIG_MAP_NAMESPACE},
                "data": {CA_BUNDLE_KEY: ca},
            }),
        ));
    }
    let insecure = insecure_mirrors(c);
    if c.ca_bundle.is_some() || !insecure.is_empty() {
        let mut spec = serde_json::Map::new();
        if c.ca_bundle.is_some() {
            spec.insert(
                "additionalTrustedCA".into(),
                json!({"name": CA_CONFIG_MAP_NAME}),
            );
        }
        if !insecure.is_empty() {
            spec.insert(
                "registrySources".into(),
                json!({"insecureRegistries": insecure}),
            );
        }
        out.push((
            IMAGE_CONFIG_FILE.to_string(),
            json!({
                "apiVersion": CONFIG_API_VERSION,
                "kind": "Image",
                "metadata": {"name": "cluster"},
                "spec": spec,
            }),
        ));
    }
    out
}

/// The discovery image's files, `(path, contents, mode)`: `registries.conf` verbatim (the
/// host's podman reads it as is, tag mirrors included) and, with a CA, the CA as a trust
/// anchor. Upstream writes an empty `domain.crt` without a CA; leaving it out is the same
/// trust. Upstream's `/etc/containers/policy.json` comes from a service-wide setting
/// (`ForceInsecurePolicy`), not from this ConfigMap, so it is not here.
pub fn discovery_files(c: &MirrorConfig) -> Vec<(String, String, u32)> {
    let mut files = vec![(
        DISCOVERY_REGISTRIES_CONF_PATH.to_string(),
        c.registries_conf.clone(),
        DISCOVERY_FILE_MODE,
    )];
    if let Some(ca) = &c.ca_bundle {
        files.push((
            DISCOVERY_CA_PATH.to_string(),
            ca.clone(),
            DISCOVERY_FILE_MODE,
        ));
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pulls_go_to_the_mirrors_that_serve_them_then_the_source() {
        let conf = r#"
[[registry]]
location = "quay.io/openshift-release-dev/ocp-release"
[[registry.mirror]]
location = "mirror.example:5000/ocp4/release"
[[registry.mirror]]
location = "tags.example/ocp4/release"
pull-from-mirror = "tag-only"

[[registry]]
location = "quay.io/openshift-release-dev"
mirror-by-digest-only = true
[[registry.mirror]]
location = "mirror.example:5000/dev"

[[registry]]
location = "registry.example:5000/team"
[[registry.mirror]]
location = "local:5000/team"
pull-from-mirror = "digest-only"
"#;
        let c = parse(&BTreeMap::from([(
            REGISTRIES_CONF_KEY.to_string(),
            conf.to_string(),
        )]))
        .unwrap();
        let digest = "@sha256:0123";
        // (image, where it is pulled from, in order)
        let rows: Vec<(String, Vec<String>)> = vec![
            // The longest location wins; `all` and digest mirrors for a digest.
            (
                format!("quay.io/openshift-release-dev/ocp-release{digest}"),
                vec![
                    format!("mirror.example:5000/ocp4/release{digest}"),
                    format!("quay.io/openshift-release-dev/ocp-release{digest}"),
                ],
            ),
            // A tag: `all` and tag-only mirrors.
            (
                "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64".into(),
                vec![
                    "mirror.example:5000/ocp4/release:4.19.0-x86_64".into(),
                    "tags.example/ocp4/release:4.19.0-x86_64".into(),
                    "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64".into(),
                ],
            ),
            // The shorter location, the rest of the name kept.
            (
                format!("quay.io/openshift-release-dev/ocp-v4.0-art-dev{digest}"),
                vec![
                    format!("mirror.example:5000/dev/ocp-v4.0-art-dev{digest}"),
                    format!("quay.io/openshift-release-dev/ocp-v4.0-art-dev{digest}"),
                ],
            ),
            // mirror-by-digest-only: no mirror for a tag.
            (
                "quay.io/openshift-release-dev/other:1".into(),
                vec!["quay.io/openshift-release-dev/other:1".into()],
            ),
            // A prefix that stops inside a path segment is no match.
            (
                format!("quay.io/openshift-release-devx/a{digest}"),
                vec![format!("quay.io/openshift-release-devx/a{digest}")],
            ),
            // A registry with a port, and a name without a tag.
            (
                format!("registry.example:5000/team/app{digest}"),
                vec![
                    format!("local:5000/team/app{digest}"),
                    format!("registry.example:5000/team/app{digest}"),
                ],
            ),
            (
                "registry.example:5000/team/app".into(),
                vec!["registry.example:5000/team/app".into()],
            ),
        ];
        for (image, expected) in rows {
            assert_eq!(pull_sources(&image, &c), expected, "{image}");
        }
    }

    // A real self-signed P-256 certificate (CN=mirror.example), made for these tests.
    const CA: &str = "-----BEGIN CERTIFICATE-----
MIIBijCCAS+gAwIBAgIUAaMwULJ5vYtgBAWDvqlOfgNtEAowCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwObWlycm9yLmV4YW1wbGUwIBcNMjYxMTI4MDQwNjQwWhgPMjEy
NjExMDQwNDA2NDBaMBkxFzAVBgNVBAMMDm1pcnJvci5leGFtcGxlMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEK7QCKoGeRebe0jwNT0YYUh3/kQC7Zz1q5Qi/Qwr7
hheQaZewy/h/57+U7a0wvxrUmiKQhQ4bUel2fKeEfXrxsqNTMFEwHQYDVR0OBBYE
FOU6dTJddusEoIQfz3gGGzhRxhLDMB8GA1UdIwQYMBaAFOU6dTJddusEoIQfz3gG
GzhRxhLDMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAOV5LMrV
z5CEMEP+kv8uzuui7PD6SZMgdczVyscTZF6NAiEA0GuRHhFTl7lLSDGbxQ9VnUxE
GSKH9RUs+dOaQjuxHK8=
-----END CERTIFICATE-----
";

    // The shape of upstream's documentation example: two release repositories mirrored by
    // digest into one local registry.
    const UPSTREAM_STYLE: &str = r#"unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]

[[registry]]
  prefix = ""
  location = "quay.io/openshift-release-dev/ocp-release"
  mirror-by-digest-only = true

  [[registry.mirror]]
    location = "mirror.example:5000/ocp4/openshift4"

[[registry]]
  prefix = ""
  location = "quay.io/openshift-release-dev/ocp-v4.0-art-dev"
  mirror-by-digest-only = true

  [[registry.mirror]]
    location = "mirror.example:5000/ocp4/openshift4"
"#;

    fn data(conf: Option<&str>, ca: Option<&str>) -> BTreeMap<String, String> {
        let mut d = BTreeMap::new();
        if let Some(conf) = conf {
            d.insert(REGISTRIES_CONF_KEY.to_string(), conf.to_string());
        }
        if let Some(ca) = ca {
            d.insert(CA_BUNDLE_KEY.to_string(), ca.to_string());
        }
        d
    }

    fn mirror(location: &str, insecure: bool, pull_from_mirror: PullFrom) -> Mirror {
        Mirror {
            location: location.into(),
            insecure,
            pull_from_mirror,
        }
    }

    fn registry(location: &str, mirrors: Vec<Mirror>) -> Registry {
        Registry {
            location: location.into(),
            insecure: false,
            mirrors,
        }
    }

    /// One registry, one mirror, with the given mirror lines.
    fn single(mirror_lines: &str) -> String {
        format!(
            "[[registry]]\nlocation = \"quay.io/example\"\n\n[[registry.mirror]]\n\
             location = \"mirror.example:5000/example\"\n{mirror_lines}"
        )
    }

    #[test]
    fn good_configmaps_parse_to_exact_registries() {
        use PullFrom::*;
        let release = "quay.io/openshift-release-dev/ocp-release";
        let art = "quay.io/openshift-release-dev/ocp-v4.0-art-dev";
        let local = "mirror.example:5000/ocp4/openshift4";
        let m = "mirror.example:5000/example";
        let rows: Vec<(&str, String, Option<&str>, Vec<Registry>)> = vec![
            (
                "upstream-style, mirror-by-digest-only → digest-only",
                UPSTREAM_STYLE.into(),
                None,
                vec![
                    registry(release, vec![mirror(local, false, DigestOnly)]),
                    registry(art, vec![mirror(local, false, DigestOnly)]),
                ],
            ),
            (
                "unset pull-from-mirror is all",
                single(""),
                None,
                vec![registry("quay.io/example", vec![mirror(m, false, All)])],
            ),
            (
                "tag-only",
                single("pull-from-mirror = \"tag-only\"\n"),
                None,
                vec![registry("quay.io/example", vec![mirror(m, false, TagOnly)])],
            ),
            (
                "explicit all",
                single("pull-from-mirror = \"all\"\n"),
                None,
                vec![registry("quay.io/example", vec![mirror(m, false, All)])],
            ),
            (
                "explicit digest-only",
                single("pull-from-mirror = \"digest-only\"\n"),
                None,
                vec![registry(
                    "quay.io/example",
                    vec![mirror(m, false, DigestOnly)],
                )],
            ),
            (
                "insecure mirror",
                single("insecure = true\n"),
                None,
                vec![registry("quay.io/example", vec![mirror(m, true, All)])],
            ),
            (
                "insecure source, trailing slashes dropped",
                "[[registry]]\nlocation = \"quay.io/example/\"\ninsecure = true\n\
                 [[registry.mirror]]\nlocation = \"mirror.example:5000/example/\"\n"
                    .into(),
                None,
                vec![Registry {
                    insecure: true,
                    ..registry("quay.io/example", vec![mirror(m, false, All)])
                }],
            ),
            (
                "CA fine",
                single(""),
                Some(CA),
                vec![registry("quay.io/example", vec![mirror(m, false, All)])],
            ),
            (
                "blank CA is no CA",
                single(""),
                Some(" \n\t\n"),
                vec![registry("quay.io/example", vec![mirror(m, false, All)])],
            ),
        ];
        for (name, conf, ca, want) in rows {
            let got = parse(&data(Some(&conf), ca)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(got.registries, want, "{name}");
            assert_eq!(got.registries_conf, conf, "{name}");
            let want_ca = ca.filter(|c| !c.trim().is_empty()).map(str::to_string);
            assert_eq!(got.ca_bundle, want_ca, "{name}");
        }
    }

    #[test]
    fn bad_configmaps_are_refused_with_the_key_and_the_place() {
        let rows: Vec<(&str, BTreeMap<String, String>, &str)> = vec![
            (
                "missing registries.conf",
                data(None, Some(CA)),
                "the ConfigMap has no `registries.conf` key: it must hold the mirrors as \
                 containers-registries.conf(5) TOML",
            ),
            (
                "TOML syntax error on line 3",
                data(
                    Some("[[registry]]\nlocation = \"quay.io/example\"\nmirror location\n"),
                    None,
                ),
                "registries.conf line 3, column 8: key with no value, expected `=`",
            ),
            (
                "wrong value type is a TOML error with its line",
                data(
                    Some(
                        "[[registry]]\nlocation = \"quay.io/example\"\n[[registry.mirror]]\n\
                         location = \"mirror.example\"\ninsecure = \"yes\"\n",
                    ),
                    None,
                ),
                "registries.conf line 5, column 12: invalid type: string \"yes\", expected a \
                 boolean",
            ),
            (
                "empty registries.conf",
                data(Some(""), None),
                "registries.conf: no [[registry]] table: give each source as [[registry]] with \
                 `location` and at least one [[registry.mirror]] (v2 format)",
            ),
            (
                "v1 format has no [[registry]]",
                data(
                    Some("[registries.search]\nregistries = [\"quay.io\"]\n"),
                    None,
                ),
                "registries.conf: no [[registry]] table: give each source as [[registry]] with \
                 `location` and at least one [[registry.mirror]] (v2 format)",
            ),
            (
                "registry without location",
                data(
                    Some(&format!(
                        "{}\n[[registry]]\nprefix = \"x\"\n[[registry.mirror]]\nlocation = \"m\"\n",
                        single("")
                    )),
                    None,
                ),
                "registries.conf: [[registry]] number 2 has no `location`",
            ),
            (
                "registry without mirror",
                data(Some("[[registry]]\nlocation = \"quay.io/ocp\"\n"), None),
                "registries.conf: [[registry]] quay.io/ocp has no [[registry.mirror]]",
            ),
            (
                "mirror without location",
                data(
                    Some(
                        "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\ninsecure = true\n",
                    ),
                    None,
                ),
                "registries.conf: a [[registry.mirror]] of quay.io/ocp has no `location`",
            ),
            (
                "mirror with empty location",
                data(
                    Some(
                        "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"\"\n",
                    ),
                    None,
                ),
                "registries.conf: a [[registry.mirror]] of quay.io/ocp has no `location`",
            ),
            (
                "URI scheme",
                data(
                    Some(
                        "[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"https://m.example\"\n",
                    ),
                    None,
                ),
                "registries.conf: location \"https://m.example\" has a URI scheme: write \
                 host[:port][/path] only",
            ),
            (
                "unknown pull-from-mirror",
                data(Some(&single("pull-from-mirror = \"tags\"\n")), None),
                "registries.conf: mirror mirror.example:5000/example of quay.io/example has \
                 pull-from-mirror = \"tags\"; use \"digest-only\", \"tag-only\" or \"all\"",
            ),
            (
                "pull-from-mirror under mirror-by-digest-only",
                data(
                    Some(
                        "[[registry]]\nlocation = \"quay.io/ocp\"\nmirror-by-digest-only = true\n\
                         [[registry.mirror]]\nlocation = \"m.example\"\npull-from-mirror = \"all\"\n",
                    ),
                    None,
                ),
                "registries.conf: [[registry]] quay.io/ocp sets mirror-by-digest-only, so its \
                 mirror m.example cannot also set pull-from-mirror",
            ),
            (
                "CA not PEM",
                data(Some(&single("")), Some("certificate contents\n")),
                "ca-bundle.crt: not PEM certificates (no -----BEGIN CERTIFICATE----- block)",
            ),
            (
                "CA block without END",
                data(
                    Some(&single("")),
                    Some("-----BEGIN CERTIFICATE-----\nMIIB\n"),
                ),
                "ca-bundle.crt: not PEM certificates (line 1: BEGIN CERTIFICATE has no END)",
            ),
            (
                "CA body not base64 DER",
                data(
                    Some(&single("")),
                    Some(&format!(
                        "{CA}-----BEGIN CERTIFICATE-----\ncertificate contents\n-----END CERTIFICATE-----\n"
                    )),
                ),
                "ca-bundle.crt: not PEM certificates (the certificate begun on line 12 is not \
                 base64-encoded DER)",
            ),
            (
                "CA with a private key",
                data(
                    Some(&single("")),
                    Some("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"),
                ),
                "ca-bundle.crt: not PEM certificates (line 1: a PRIVATE KEY block; only \
                 CERTIFICATE blocks belong here)",
            ),
        ];
        for (name, input, want) in rows {
            let got = parse(&input).expect_err(name);
            assert_eq!(got.to_string(), want, "{name}");
        }
    }

    #[test]
    fn toml_errors_carry_line_and_column() {
        let e = parse(&data(
            Some("[[registry]]\nlocation = \"quay.io/example\"\nmirror location\n"),
            None,
        ))
        .unwrap_err();
        let MirrorConfigError::Toml { at, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(at, Some(TextPosition { line: 3, column: 8 }));
        assert_eq!(position("ab\nçd\n", 6), TextPosition { line: 2, column: 3 });
        assert_eq!(position("", 0), TextPosition { line: 1, column: 1 });
    }

    #[test]
    fn pem_check_accepts_bundles_with_text_between_certificates() {
        assert_eq!(pem_certificates_problem(CA), None);
        let bundle = format!("# mirror CA\n{CA}\nsubject=CN=mirror.example\n{CA}");
        assert_eq!(pem_certificates_problem(&bundle), None);
        // Indented, as YAML block scalars sometimes leave it.
        let indented: String = CA.lines().map(|l| format!("    {l}\n")).collect();
        assert_eq!(pem_certificates_problem(&indented), None);
        assert_eq!(
            pem_certificates_problem("-----END CERTIFICATE-----\n"),
            Some("line 1: END without BEGIN".into())
        );
        assert_eq!(
            pem_certificates_problem(
                "-----BEGIN CERTIFICATE-----\nMAA=\n-----BEGIN CERTIFICATE-----\n"
            ),
            Some("line 3: BEGIN inside the block begun on line 1".into())
        );
        let one_line: String = CA.lines().collect();
        assert_eq!(
            pem_certificates_problem(&one_line),
            Some("line 1: the BEGIN line must hold only -----BEGIN <label>-----".into())
        );
    }

    /// Every kind of mirror, an insecure mirror listed twice, and a CA.
    const FIXTURE: &str = r#"[[registry]]
location = "quay.io/openshift-release-dev/ocp-release"

[[registry.mirror]]
location = "mirror.example:5000/ocp4/release"

[[registry.mirror]]
location = "lab.example:8443/ocp4/release"
insecure = true
pull-from-mirror = "digest-only"

[[registry]]
location = "quay.io/openshift-release-dev/ocp-v4.0-art-dev"

[[registry.mirror]]
location = "mirror.example:5000/ocp4/art"
pull-from-mirror = "all"

[[registry.mirror]]
location = "tags.example/ocp4/art"
pull-from-mirror = "tag-only"

[[registry]]
location = "registry.redhat.io/ubi9"

[[registry.mirror]]
location = "lab.example:8443/ocp4/release"
insecure = true
pull-from-mirror = "tag-only"
"#;

    fn fixture() -> MirrorConfig {
        parse(&data(Some(FIXTURE), Some(CA))).unwrap()
    }

    #[test]
    fn image_digest_sources_keep_digest_mirrors_in_order() {
        let got = serde_json::to_value(image_digest_sources(&fixture())).unwrap();
        assert_eq!(
            got,
            json!([
                {
                    "source": "quay.io/openshift-release-dev/ocp-release",
                    "mirrors": ["mirror.example:5000/ocp4/release", "lab.example:8443/ocp4/release"],
                },
                {
                    "source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
                    "mirrors": ["mirror.example:5000/ocp4/art"],
                },
            ])
        );
        let tag_only = parse(&data(
            Some(&single("pull-from-mirror = \"tag-only\"")),
            None,
        ));
        assert!(image_digest_sources(&tag_only.unwrap()).is_empty());
    }

    #[test]
    fn cluster_manifests_are_capoas_four_objects() {
        let got = cluster_manifests(&fixture());
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "image-digest-mirror-set.json",
                "image-tag-mirror-set.json",
                "additional-registry-certificate.json",
                "image-config.json",
            ]
        );
        assert_eq!(
            got[0].1,
            json!({
                "apiVersion": "config.openshift.io/v1",
                "kind": "ImageDigestMirrorSet",
                "metadata": {"name": "additional-registry"},
                "spec": {"imageDigestMirrors": [
                    {
                        "source": "quay.io/openshift-release-dev/ocp-release",
                        "mirrors": [
                            "mirror.example:5000/ocp4/release",
                            "lab.example:8443/ocp4/release",
                        ],
                    },
                    {
                        "source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
                        "mirrors": ["mirror.example:5000/ocp4/art"],
                    },
                ]},
            })
        );
        assert_eq!(
            got[1].1,
            json!({
                "apiVersion": "config.openshift.io/v1",
                "kind": "ImageTagMirrorSet",
                "metadata": {"name": "additional-registry"},
                "spec": {"imageTagMirrors": [
                    {
                        "source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
                        "mirrors": ["tags.example/ocp4/art"],
                    },
                    {
                        "source": "registry.redhat.io/ubi9",
                        "mirrors": ["lab.example:8443/ocp4/release"],
                    },
                ]},
            })
        );
        assert_eq!(
            got[2].1,
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "additional-registry-certificate",
                    "namespace": "openshift-config",
                },
                "data": {"ca-bundle.crt": CA},
            })
        );
        assert_eq!(
            got[3].1,
            json!({
                "apiVersion": "config.openshift.io/v1",
                "kind": "Image",
                "metadata": {"name": "cluster"},
                "spec": {
                    "additionalTrustedCA": {"name": "additional-registry-certificate"},
                    "registrySources": {"insecureRegistries": ["lab.example:8443/ocp4/release"]},
                },
            })
        );
    }

    #[test]
    fn cluster_manifests_leave_out_what_has_no_content() {
        // Digest mirrors only, no CA, nothing insecure: the IDMS alone.
        let plain = parse(&data(Some(&single("")), Some(""))).unwrap();
        let got = cluster_manifests(&plain);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "image-digest-mirror-set.json");

        // Tag-only and insecure, no CA: ITMS and an Image without additionalTrustedCA.
        let tag = parse(&data(
            Some(&single(
                "insecure = true\npull-from-mirror = \"tag-only\"\n",
            )),
            None,
        ))
        .unwrap();
        let got = cluster_manifests(&tag);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["image-tag-mirror-set.json", "image-config.json"]);
        assert_eq!(
            got[1].1["spec"],
            json!({"registrySources": {"insecureRegistries": ["mirror.example:5000/example"]}})
        );

        // A CA, nothing insecure: Image with additionalTrustedCA only.
        let ca = parse(&data(Some(&single("")), Some(CA))).unwrap();
        let got = cluster_manifests(&ca);
        assert_eq!(
            got[2].1["spec"],
            json!({"additionalTrustedCA": {"name": "additional-registry-certificate"}})
        );
    }

    #[test]
    fn discovery_files_are_upstreams_paths_and_modes() {
        assert_eq!(
            discovery_files(&fixture()),
            [
                (
                    "/etc/containers/registries.conf".to_string(),
                    FIXTURE.to_string(),
                    0o644
                ),
                (
                    "/etc/pki/ca-trust/source/anchors/domain.crt".to_string(),
                    CA.to_string(),
                    0o644
                ),
            ]
        );
        let no_ca = parse(&data(Some(UPSTREAM_STYLE), None)).unwrap();
        assert_eq!(
            discovery_files(&no_ca),
            [(
                "/etc/containers/registries.conf".to_string(),
                UPSTREAM_STYLE.to_string(),
                420
            )]
        );
    }
}

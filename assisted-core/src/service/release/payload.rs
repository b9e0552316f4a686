//! What a release image tells: its version and component images, and its installer binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::auth::{Credentials, PullSecret};
use super::layer::{self, Lookup};
use super::reference::ImageRef;
use super::registry::{Layer, RegistryClient, ResolvedImage, host_platform, normalize_arch};
use super::{ReleaseError, Scratch};

pub const RELEASE_METADATA: &str = "release-manifests/release-metadata";
pub const IMAGE_REFERENCES: &str = "release-manifests/image-references";
pub const INSTALLER_PATH: &str = "usr/bin/openshift-install";
/// The image config label release images carry their version in.
const VERSION_LABEL: &str = "io.openshift.release";
/// The ImageStream annotation listing component versions (`kubernetes=1.30.4,...`).
const BUILD_VERSIONS: &str = "io.openshift.build.versions";

/// What the core learns from a release image.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReleasePayload {
    /// The OpenShift version, e.g. `4.17.3`.
    pub version: String,
    /// The release image's digest (the manifest list's for a multi-arch release).
    pub digest: String,
    /// Component tag → pull spec, from `release-manifests/image-references`.
    pub images: BTreeMap<String, String>,
    /// Component → version (`kubernetes` → `1.30.4`), from the build-versions annotation.
    #[serde(default)]
    pub component_versions: BTreeMap<String, String>,
    /// The architecture of the release image read (`amd64`, ...), when its config says.
    #[serde(default)]
    pub architecture: Option<String>,
}

impl ReleasePayload {
    /// The pull spec of component `tag`.
    pub fn image(&self, tag: &str) -> Option<&str> {
        self.images.get(tag).map(String::as_str)
    }

    pub fn installer_image(&self) -> Option<&str> {
        self.image("installer")
    }

    pub fn mco_image(&self) -> Option<&str> {
        self.image("machine-config-operator")
    }

    pub fn must_gather_image(&self) -> Option<&str> {
        self.image("must-gather")
    }

    /// RHCOS for OCP, else the stream CoreOS image of OKD-style payloads.
    pub fn coreos_image(&self) -> Option<&str> {
        self.image("rhel-coreos")
            .or_else(|| self.image("stream-coreos"))
    }

    /// The Kubernetes version the release is built on (`1.30.4`).
    pub fn kubernetes_version(&self) -> Option<&str> {
        self.component_versions
            .get("kubernetes")
            .map(String::as_str)
    }
}

/// Reads the version and component images of `release`, as `oc adm release info` does.
/// Blobs are downloaded under the system temp directory.
pub async fn read_payload(
    client: &RegistryClient,
    release: &ImageRef,
    secret: &PullSecret,
) -> Result<ReleasePayload, ReleaseError> {
    read_payload_in(client, release, secret, &std::env::temp_dir()).await
}

/// [`read_payload`] downloading blobs under `scratch_base`.
pub async fn read_payload_in(
    client: &RegistryClient,
    release: &ImageRef,
    secret: &PullSecret,
    scratch_base: &Path,
) -> Result<ReleasePayload, ReleaseError> {
    let creds = secret.credentials_for(&release.registry);
    let (os, arch) = host_platform();
    let image = client.resolve_image(release, creds, os, arch).await?;
    let scratch = Scratch::new(scratch_base, ".release").await?;
    let wanted = [RELEASE_METADATA, IMAGE_REFERENCES];
    // None: not seen yet; Some(None): deleted by a whiteout; Some(Some(bytes)): found.
    let mut found: [Option<Option<Vec<u8>>>; 2] = [None, None];
    // Later layers override earlier ones, and the manifests are usually in the last.
    for layer in image.layers.iter().rev() {
        if found.iter().all(Option::is_some) {
            break;
        }
        let lookups = read_layer_files(client, release, creds, layer, &scratch, &wanted).await?;
        for (slot, lookup) in found.iter_mut().zip(lookups) {
            if slot.is_none() {
                match lookup {
                    Lookup::Found(bytes) => *slot = Some(Some(bytes)),
                    Lookup::Deleted => *slot = Some(None),
                    Lookup::Absent => {}
                }
            }
        }
    }
    let [metadata, references] = found.map(Option::flatten);
    build_payload(
        &release.to_string(),
        &image,
        metadata.as_deref(),
        references.as_deref(),
    )
}

/// Downloads one layer into `scratch` and reads `wanted` from it.
async fn read_layer_files(
    client: &RegistryClient,
    image: &ImageRef,
    creds: Option<&Credentials>,
    layer: &Layer,
    scratch: &Scratch,
    wanted: &[&'static str],
) -> Result<Vec<Lookup<Vec<u8>>>, ReleaseError> {
    let blob = scratch.blob_path(&layer.digest);
    client
        .blob_to_file(image, &layer.digest, creds, &blob)
        .await?;
    let (path, media_type, wanted_owned) =
        (blob.clone(), layer.media_type.clone(), wanted.to_vec());
    let result =
        tokio::task::spawn_blocking(move || layer::read_files(&path, &media_type, &wanted_owned))
            .await;
    let _ = tokio::fs::remove_file(&blob).await;
    flatten_task(result)?.map_err(|source| ReleaseError::Layer {
        image: image.to_string(),
        layer: layer.digest.clone(),
        source,
    })
}

fn flatten_task<T>(r: Result<T, tokio::task::JoinError>) -> Result<T, ReleaseError> {
    r.map_err(|e| ReleaseError::Task(format!("reading a layer: {e}")))
}

/// The payload from the two release files (pure, so it is tested without a registry).
fn build_payload(
    release: &str,
    image: &ResolvedImage,
    metadata: Option<&[u8]>,
    references: Option<&[u8]>,
) -> Result<ReleasePayload, ReleaseError> {
    let references = references.ok_or_else(|| ReleaseError::NotARelease {
        release: release.to_string(),
        reason: format!("it has no {IMAGE_REFERENCES}"),
    })?;
    let malformed = |file: &str, reason: String| ReleaseError::Malformed {
        release: release.to_string(),
        file: file.to_string(),
        reason,
    };
    let stream: ImageStream = serde_json::from_slice(references)
        .map_err(|e| malformed(IMAGE_REFERENCES, e.to_string()))?;
    let version = match metadata {
        Some(bytes) => {
            let m: ReleaseMetadata = serde_json::from_slice(bytes)
                .map_err(|e| malformed(RELEASE_METADATA, e.to_string()))?;
            Some(m.version).filter(|v| !v.is_empty())
        }
        None => None,
    };
    let version = version
        .or_else(|| image.label(VERSION_LABEL).map(str::to_string))
        .ok_or_else(|| ReleaseError::NotARelease {
            release: release.to_string(),
            reason: format!("no version in {RELEASE_METADATA} nor a {VERSION_LABEL} label"),
        })?;
    Ok(ReleasePayload {
        version,
        digest: image.digest.clone(),
        images: stream.images(),
        component_versions: stream.component_versions(),
        architecture: image
            .architecture()
            .filter(|a| !a.is_empty())
            .map(str::to_string),
    })
}

#[derive(serde::Deserialize)]
struct ReleaseMetadata {
    #[serde(default)]
    version: String,
}

/// The parts of the `image-references` ImageStream we use.
#[derive(serde::Deserialize, Default)]
struct ImageStream {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: ImageStreamSpec,
}

#[derive(serde::Deserialize, Default)]
struct ObjectMeta {
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(serde::Deserialize, Default)]
struct ImageStreamSpec {
    #[serde(default)]
    tags: Vec<TagReference>,
}

#[derive(serde::Deserialize)]
struct TagReference {
    name: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    from: Option<ObjectReference>,
}

#[derive(serde::Deserialize)]
struct ObjectReference {
    #[serde(default)]
    name: String,
}

impl ImageStream {
    fn images(&self) -> BTreeMap<String, String> {
        self.spec
            .tags
            .iter()
            .filter_map(|t| {
                let from = t.from.as_ref().filter(|f| !f.name.is_empty())?;
                Some((t.name.clone(), from.name.clone()))
            })
            .collect()
    }

    /// The stream's build-versions annotation; the tags' own annotations fill in what it
    /// lacks (the stream-level one is the release's summary and wins).
    fn component_versions(&self) -> BTreeMap<String, String> {
        let mut versions = BTreeMap::new();
        for tag in &self.spec.tags {
            if let Some(v) = tag.annotations.get(BUILD_VERSIONS) {
                versions.extend(parse_build_versions(v));
            }
        }
        if let Some(v) = self.metadata.annotations.get(BUILD_VERSIONS) {
            versions.extend(parse_build_versions(v));
        }
        versions
    }
}

/// `kubernetes=1.30.4,kubectl=1.30.4` → pairs; malformed items are skipped.
fn parse_build_versions(s: &str) -> impl Iterator<Item = (String, String)> + '_ {
    s.split(',').filter_map(|item| {
        let (k, v) = item.split_once('=')?;
        let (k, v) = (k.trim(), v.trim());
        (!k.is_empty() && !v.is_empty()).then(|| (k.to_string(), v.to_string()))
    })
}

/// Writes the release's installer to `<dest_dir>/openshift-install` (0755, atomically),
/// as `oc adm release extract --command=openshift-install` does.
pub async fn extract_installer(
    client: &RegistryClient,
    payload: &ReleasePayload,
    release: &ImageRef,
    secret: &PullSecret,
    dest_dir: &Path,
) -> Result<PathBuf, ReleaseError> {
    let spec = payload
        .installer_image()
        .ok_or_else(|| ReleaseError::MissingImage {
            release: release.to_string(),
            tag: "installer".into(),
        })?;
    let wanted = ImageRef::parse(spec)?;
    let (image_ref, image) = resolve_component(client, &wanted, release, secret).await?;
    check_architecture(&image_ref, &image)?;
    tokio::fs::create_dir_all(dest_dir)
        .await
        .map_err(ReleaseError::io(format!("creating {}", dest_dir.display())))?;
    let scratch = Scratch::new(dest_dir, ".extract").await?;
    let creds = secret.credentials_for(&image_ref.registry);
    let staged = scratch.dir.join("openshift-install");
    for layer in image.layers.iter().rev() {
        match extract_from_layer(client, &image_ref, creds, layer, &scratch, &staged).await? {
            Lookup::Found(()) => {
                let dest = dest_dir.join("openshift-install");
                tokio::fs::rename(&staged, &dest)
                    .await
                    .map_err(ReleaseError::io(format!(
                        "moving {} into place",
                        dest.display()
                    )))?;
                return Ok(dest);
            }
            // Deleted in this layer: what lower layers have is not in the image.
            Lookup::Deleted => break,
            Lookup::Absent => {}
        }
    }
    Err(ReleaseError::MissingFile {
        image: image_ref.to_string(),
        path: INSTALLER_PATH.into(),
    })
}

/// Downloads one layer into `scratch` and extracts the installer from it to `staged`.
async fn extract_from_layer(
    client: &RegistryClient,
    image: &ImageRef,
    creds: Option<&Credentials>,
    layer: &Layer,
    scratch: &Scratch,
    staged: &Path,
) -> Result<Lookup<()>, ReleaseError> {
    let blob = scratch.blob_path(&layer.digest);
    client
        .blob_to_file(image, &layer.digest, creds, &blob)
        .await?;
    let (path, media_type, dest) = (blob.clone(), layer.media_type.clone(), staged.to_path_buf());
    let result = tokio::task::spawn_blocking(move || {
        layer::extract_lookup(&path, &media_type, INSTALLER_PATH, &dest)
    })
    .await;
    let _ = tokio::fs::remove_file(&blob).await;
    let lookup = flatten_task(result)?.map_err(|source| ReleaseError::Layer {
        image: image.to_string(),
        layer: layer.digest.clone(),
        source,
    })?;
    if !matches!(lookup, Lookup::Found(())) {
        // A whiteout-only layer leaves no file, but an aborted write might.
        let _ = tokio::fs::remove_file(staged).await;
    }
    Ok(lookup)
}

/// Resolves component image `wanted`; when its own registry cannot serve it, the same
/// digest in the release's repository (how `oc adm release mirror` lays out a mirror).
async fn resolve_component(
    client: &RegistryClient,
    wanted: &ImageRef,
    release: &ImageRef,
    secret: &PullSecret,
) -> Result<(ImageRef, ResolvedImage), ReleaseError> {
    let (os, arch) = host_platform();
    let creds = secret.credentials_for(&wanted.registry);
    let error = match client.resolve_image(wanted, creds, os, arch).await {
        Ok(image) => return Ok((wanted.clone(), image)),
        Err(e) => e,
    };
    let Some(digest) = wanted.digest.as_deref() else {
        return Err(error.into());
    };
    let mirror = release.with_digest(digest);
    let same_repo = mirror.registry == wanted.registry && mirror.repository == wanted.repository;
    if same_repo || !error.is_unavailable() {
        return Err(error.into());
    }
    tracing::info!(image = %wanted, %mirror, %error, "component image not readable; trying the release repository");
    let mirror_creds = secret.credentials_for(&mirror.registry);
    match client.resolve_image(&mirror, mirror_creds, os, arch).await {
        Ok(image) => Ok((mirror, image)),
        Err(mirror_error) => Err(ReleaseError::Unavailable {
            image: wanted.to_string(),
            error: Box::new(error),
            mirror: mirror.to_string(),
            mirror_error: Box::new(mirror_error),
        }),
    }
}

/// An installer built for another architecture would only fail at exec.
fn check_architecture(image_ref: &ImageRef, image: &ResolvedImage) -> Result<(), ReleaseError> {
    let (_, host) = host_platform();
    // Images built without a platform (e.g. by `crane append`) have an empty one.
    match image.architecture().filter(|a| !a.is_empty()) {
        Some(found) if normalize_arch(found) != host => Err(ReleaseError::Architecture {
            image: image_ref.to_string(),
            found: found.to_string(),
            host: host.to_string(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(config: serde_json::Value) -> ResolvedImage {
        ResolvedImage {
            digest: "sha256:top".into(),
            manifest_digest: "sha256:m".into(),
            config,
            layers: vec![],
        }
    }

    fn references() -> Vec<u8> {
        serde_json::json!({
            "kind": "ImageStream",
            "apiVersion": "image.openshift.io/v1",
            "metadata": {
                "name": "4.17.3",
                "annotations": {
                    "io.openshift.build.versions": "kubernetes=1.30.4, kubectl=1.30.5,bogus,=x"
                }
            },
            "spec": {"tags": [
                {"name": "installer", "from": {"kind": "DockerImage", "name": "quay.io/o/art@sha256:1"}},
                {"name": "machine-config-operator", "from": {"kind": "DockerImage", "name": "quay.io/o/art@sha256:2"}},
                {"name": "must-gather", "from": {"kind": "DockerImage", "name": "quay.io/o/art@sha256:3"}},
                {"name": "stream-coreos", "from": {"kind": "DockerImage", "name": "quay.io/o/art@sha256:4"}},
                {"name": "hyperkube",
                 "annotations": {"io.openshift.build.versions": "kubernetes=0.0.1,kubernetes-tests=1.30.4"},
                 "from": {"kind": "DockerImage", "name": "quay.io/o/art@sha256:5"}},
                {"name": "no-from"}
            ]}
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn payload_from_release_files() {
        let p = build_payload(
            "r",
            &image(serde_json::json!({"architecture": "amd64"})),
            Some(br#"{"kind":"cincinnati-metadata-v0","version":"4.17.3","previous":["4.17.2"]}"#),
            Some(&references()),
        )
        .unwrap();
        assert_eq!(p.version, "4.17.3");
        assert_eq!(p.digest, "sha256:top");
        assert_eq!(p.architecture.as_deref(), Some("amd64"));
        assert_eq!(p.installer_image(), Some("quay.io/o/art@sha256:1"));
        assert_eq!(p.mco_image(), Some("quay.io/o/art@sha256:2"));
        assert_eq!(p.must_gather_image(), Some("quay.io/o/art@sha256:3"));
        assert_eq!(p.coreos_image(), Some("quay.io/o/art@sha256:4"));
        assert_eq!(p.images.len(), 5);
        // The stream annotation wins over a tag's; tags fill in the rest.
        assert_eq!(p.kubernetes_version(), Some("1.30.4"));
        assert_eq!(p.component_versions["kubectl"], "1.30.5");
        assert_eq!(p.component_versions["kubernetes-tests"], "1.30.4");
        assert_eq!(p.component_versions.len(), 3);
        // rhel-coreos is preferred over stream-coreos.
        let mut q = p.clone();
        q.images
            .insert("rhel-coreos".into(), "quay.io/o/art@sha256:9".into());
        assert_eq!(q.coreos_image(), Some("quay.io/o/art@sha256:9"));
        // The serialized form (the cache's payload.json) reads back.
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<ReleasePayload>(&json).unwrap(), p);
    }

    #[test]
    fn version_falls_back_to_the_label() {
        let labelled =
            image(serde_json::json!({"config": {"Labels": {"io.openshift.release": "4.16.9"}}}));
        let p = build_payload("r", &labelled, None, Some(&references())).unwrap();
        assert_eq!(p.version, "4.16.9");
        assert_eq!(p.architecture, None);
        let p = build_payload(
            "r",
            &labelled,
            Some(br#"{"version":""}"#),
            Some(&references()),
        )
        .unwrap();
        assert_eq!(p.version, "4.16.9");
        let e = build_payload(
            "quay.io/x/y:1",
            &image(serde_json::json!({})),
            None,
            Some(&references()),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("quay.io/x/y:1 is not a release image: no version"),
            "{e}"
        );
    }

    #[test]
    fn missing_and_malformed_files() {
        let img = image(serde_json::json!({}));
        let e = build_payload("quay.io/x/y:1", &img, None, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "release quay.io/x/y:1 is not a release image: it has no release-manifests/image-references"
        );
        let e = build_payload("r", &img, None, Some(b"{not json")).unwrap_err();
        assert!(
            e.to_string()
                .contains("release r: release-manifests/image-references is malformed"),
            "{e}"
        );
        let e = build_payload("r", &img, Some(b"\"4.1\""), Some(&references())).unwrap_err();
        assert!(
            e.to_string().contains("release-metadata is malformed"),
            "{e}"
        );
        let empty = build_payload("r", &img, Some(br#"{"version":"4.1"}"#), Some(b"{}")).unwrap();
        assert_eq!(empty.installer_image(), None);
        assert_eq!(empty.kubernetes_version(), None);
    }

    #[test]
    fn installer_architecture_must_match_the_host() {
        let r = ImageRef::parse(
            "quay.io/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        )
        .unwrap();
        let (_, host) = host_platform();
        let other = if host == "amd64" { "arm64" } else { "amd64" };
        let e =
            check_architecture(&r, &image(serde_json::json!({"architecture": other}))).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("is for {other} but this host runs {host}")),
            "{e}"
        );
        assert!(check_architecture(&r, &image(serde_json::json!({"architecture": host}))).is_ok());
        assert!(check_architecture(&r, &image(serde_json::json!({}))).is_ok());
        assert!(check_architecture(&r, &image(serde_json::json!({"architecture": ""}))).is_ok());
    }
}

//! A release image's OpenShift version and architecture, from its ClusterImageSet (pure).

use kube::ResourceExt;

use crate::api::hive::ClusterImageSet;

/// Explicit OpenShift version of a ClusterImageSet whose image tag does not carry one.
pub const RELEASE_VERSION_ANNOTATION: &str = "assisted-core.openshift.io/openshift-version";
/// Explicit architecture of a ClusterImageSet whose image is pinned by digest (no tag).
pub const RELEASE_ARCHITECTURE_ANNOTATION: &str = "assisted-core.openshift.io/cpu-architecture";

/// Why a release's version is not known: an input error the user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseInfoError {
    #[error(
        "cannot tell the OpenShift version of release image {image:?}: use a tag like :4.17.3-x86_64 or set the {RELEASE_VERSION_ANNOTATION} annotation"
    )]
    UnknownVersion { image: String },
}

/// Learns a release image's OpenShift version and architecture. The real lookup
/// (`oc adm release info`) can replace the tag parser behind this trait.
pub trait ReleaseInfoSource: Send + Sync {
    fn version(&self, image_set: &ClusterImageSet) -> Result<(String, String), ReleaseInfoError>;
}

/// Reads the version from the annotation, else from the image tag (`...:4.17.3-x86_64`).
pub struct TagReleaseInfo;

impl ReleaseInfoSource for TagReleaseInfo {
    fn version(&self, cis: &ClusterImageSet) -> Result<(String, String), ReleaseInfoError> {
        let image = &cis.spec.release_image;
        let (tag_version, tag_arch) = release_from_tag(image);
        let arch = cis
            .annotations()
            .get(RELEASE_ARCHITECTURE_ANNOTATION)
            .cloned()
            .unwrap_or(tag_arch);
        let version = cis
            .annotations()
            .get(RELEASE_VERSION_ANNOTATION)
            .cloned()
            .or(tag_version)
            .ok_or_else(|| ReleaseInfoError::UnknownVersion {
                image: image.clone(),
            })?;
        Ok((version, arch))
    }
}

/// `quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64` → ("4.17.3", "x86_64").
pub fn release_from_tag(image: &str) -> (Option<String>, String) {
    let name = image.split('@').next().unwrap_or(image);
    let Some((_, tag)) = name
        .rsplit_once(':')
        .filter(|(repo, _)| !repo.ends_with('/') && !repo.is_empty())
    else {
        return (None, "x86_64".into());
    };
    if tag.contains('/') || !tag.starts_with(|c: char| c.is_ascii_digit()) {
        return (None, "x86_64".into());
    }
    for arch in ["x86_64", "aarch64", "arm64", "ppc64le", "s390x", "multi"] {
        if let Some(v) = tag.strip_suffix(&format!("-{arch}")) {
            return (Some(v.to_string()), arch.to_string());
        }
    }
    (Some(tag.to_string()), "x86_64".into())
}

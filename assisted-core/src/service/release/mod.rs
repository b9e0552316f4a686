//! OpenShift release payloads read straight from an OCI registry: what
//! `oc adm release info` shows (version, component images) and what
//! `oc adm release extract --command=openshift-install` writes (the installer binary).
//!
//! [`reference`] parses pull specs, [`auth`] reads pull secrets and registry challenges,
//! [`registry`] speaks the distribution API, [`layer`] reads files out of layer blobs,
//! [`payload`] puts these together, and [`cache`] keeps extracted installers on disk.

pub mod auth;
pub mod cache;
pub mod layer;
pub mod payload;
pub mod reference;
pub mod registry;

#[cfg(test)]
mod fake_registry;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use auth::{AuthError, Credentials, PullSecret};
pub use cache::InstallerCache;
pub use layer::LayerError;
pub use payload::{ReleasePayload, extract_installer, read_payload};
pub use reference::{ImageRef, ReferenceError};
pub use registry::{RegistryClient, RegistryError, ResolvedImage};

/// Why a release payload could not be read or its installer extracted.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("release {release} is not a release image: {reason}")]
    NotARelease { release: String, reason: String },
    #[error("release {release} has no {tag} image in release-manifests/image-references")]
    MissingImage { release: String, tag: String },
    #[error("image {image} has no {path}")]
    MissingFile { image: String, path: String },
    #[error("release {release}: {file} is malformed: {reason}")]
    Malformed {
        release: String,
        file: String,
        reason: String,
    },
    #[error("reading layer {layer} of {image}: {source}")]
    Layer {
        image: String,
        layer: String,
        #[source]
        source: LayerError,
    },
    /// A component image is readable neither where the release says nor in the release's
    /// own repository (where `oc adm release mirror` puts it).
    #[error("image {image} cannot be read ({error}); nor can its copy {mirror} ({mirror_error})")]
    Unavailable {
        image: String,
        error: Box<RegistryError>,
        mirror: String,
        mirror_error: Box<RegistryError>,
    },
    #[error("the installer image {image} is for {found} but this host runs {host}")]
    Architecture {
        image: String,
        found: String,
        host: String,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A blocking task died (panicked or was cancelled at shutdown).
    #[error("{0}")]
    Task(String),
}

impl ReleaseError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

static SCRATCH_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A directory for downloaded blobs, removed (with whatever is left in it) when dropped.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A fresh directory under `base` (created if missing).
    async fn new(base: &Path, prefix: &str) -> Result<Self, ReleaseError> {
        let dir = base.join(unique_name(prefix));
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(ReleaseError::io(format!("creating {}", dir.display())))?;
        Ok(Self { dir })
    }

    /// A path inside the directory for `digest`'s blob.
    fn blob_path(&self, digest: &str) -> PathBuf {
        self.dir.join(digest.replace(':', "-"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Blocking, but it only unlinks a few files.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `<prefix>-<pid>-<n>`: unique among the directories this process has open.
fn unique_name(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        SCRATCH_COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

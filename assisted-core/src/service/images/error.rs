//! The error type of the images module.

use std::path::PathBuf;

/// Why a discovery image, ignition or OS image could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The infra-env's `ignitionConfigOverride` cannot be merged.
    #[error("invalid ignition config override: {0}")]
    InvalidOverride(String),
    /// An input field cannot be rendered safely (newline in a unit value, bad MAC, ...).
    #[error("invalid {field}: {reason}")]
    InvalidInput { field: &'static str, reason: String },
    /// The rendered ignition does not look like a discovery ignition.
    #[error("not a discovery ignition: {0}")]
    NotDiscoveryIgnition(String),
    /// The ignition does not fit into the ISO's embed area.
    #[error("embedded ignition is {size} bytes but the ISO embed area holds only {area} bytes")]
    EmbedTooLarge { size: u64, area: u64 },
    /// The base ISO has no (or a corrupt) Ignition embed area.
    #[error("{path}: no usable Ignition embed area: {reason}")]
    NoEmbedArea { path: PathBuf, reason: String },
    /// The kernel arguments do not fit into the ISO's karg areas.
    #[error("kernel arguments are {size} bytes but the ISO's karg areas hold only {area} bytes")]
    KargsTooLarge { size: u64, area: u64 },
    /// Kernel arguments were asked for but the base ISO has no karg areas (`kargs.json`).
    #[error(
        "the base ISO has no kernel-argument areas (no /coreos/kargs.json; built before 2021-09?): cannot add {0:?}"
    )]
    NoKargAreas(Vec<String>),
    /// The embed area content is not a cpio archive we can read.
    #[error("malformed embed area: {0}")]
    MalformedEmbed(String),
    /// The base ISO's ISO 9660 structures cannot be parsed.
    #[error("malformed ISO 9660 image: {0}")]
    MalformedIso(String),
    /// The base ISO has no file at this path.
    #[error("{0} not found in the ISO")]
    NotInIso(String),
    /// A local file operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Downloading an OS image failed.
    #[error("downloading {url}: {reason}")]
    Download { url: String, reason: String },
}

impl ImageError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }

    pub(crate) fn input(field: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            field,
            reason: reason.into(),
        }
    }
}

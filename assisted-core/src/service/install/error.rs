//! Errors of the install backends.

use std::path::PathBuf;

/// Everything that can go wrong while building install inputs or generating artifacts.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A user-supplied JSON document (overrides, ignition) did not parse or has the wrong shape.
    #[error("invalid {what}: {reason}")]
    InvalidJson { what: String, reason: String },
    /// The installer could not be had from the release payload (registry answer included).
    #[error("installer of release {release}: {reason}")]
    Release { release: String, reason: String },
    /// The install-config input is inconsistent (missing name, no hosts, ...).
    #[error("invalid install-config input: {0}")]
    InvalidInput(String),
    #[error("YAML {context}: {source}")]
    Yaml {
        context: String,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("{context} ({path}): {source}")]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The installer binary could not be started.
    #[error("cannot run {binary} {args}: {source}")]
    Spawn {
        binary: PathBuf,
        args: String,
        #[source]
        source: std::io::Error,
    },
    /// The installer exited non-zero; `stderr_tail` is the end of its stderr.
    #[error("{binary} {args} failed ({status}): {stderr_tail}")]
    CommandFailed {
        binary: PathBuf,
        args: String,
        status: String,
        stderr_tail: String,
    },
    /// The installer succeeded but did not write an expected file.
    #[error("installer output {file} missing in {dir}")]
    MissingOutput { file: String, dir: PathBuf },
    /// An installer output exists but is not what we expect.
    #[error("installer output {file} is invalid: {reason}")]
    BadOutput { file: String, reason: String },
    #[error("certificate generation failed: {0}")]
    Pki(String),
    #[error("system random source failed")]
    Random,
    /// A file store key that could escape the store root or is otherwise unusable.
    #[error("invalid file store key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },
}

impl InstallError {
    pub(crate) fn io(
        context: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        InstallError::Io {
            context,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn json(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        InstallError::InvalidJson {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}

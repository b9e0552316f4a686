//! The store's errors: what a caller asked for that the state does not allow. The HTTP layer
//! maps them to status codes (`From<StoreError> for ApiError` in `service::error`).

use crate::domain::HostEventError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// No such host, cluster or infra-env (or not visible through the caller's infra-env).
    #[error("{0}")]
    NotFound(String),
    /// The request is well formed but the record's state refuses it.
    #[error("{0}")]
    Conflict(String),
    /// The request itself is malformed (an unknown stage, a host id that is not a UUID).
    #[error("{0}")]
    Invalid(String),
}

impl From<HostEventError> for StoreError {
    fn from(e: HostEventError) -> StoreError {
        match e {
            HostEventError::RegistrationRefused(m) => StoreError::Conflict(m),
            HostEventError::StageBackwards { .. } => StoreError::Invalid(e.to_string()),
            other => StoreError::Conflict(other.to_string()),
        }
    }
}

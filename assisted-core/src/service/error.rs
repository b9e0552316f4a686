//! The REST error type: an HTTP status plus the upstream JSON error body.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An error answered to an agent or user; never a panic, always a JSON body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {reason}")]
pub struct ApiError {
    pub status: StatusCode,
    pub reason: String,
}

/// Upstream's `error` model (`{code, href, id, kind, reason}`).
#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    code: String,
    href: &'a str,
    id: u16,
    kind: &'a str,
    reason: &'a str,
}

impl ApiError {
    pub fn new(status: StatusCode, reason: impl Into<String>) -> ApiError {
        ApiError {
            status,
            reason: reason.into(),
        }
    }
    pub fn bad_request(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, reason)
    }
    pub fn not_found(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, reason)
    }
    pub fn conflict(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, reason)
    }
    pub fn unauthorized(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, reason)
    }
    pub fn forbidden(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, reason)
    }
    pub fn internal(reason: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, reason)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            code: self.status.as_u16().to_string(),
            href: "",
            id: self.status.as_u16(),
            kind: "Error",
            reason: &self.reason,
        };
        (self.status, Json(body)).into_response()
    }
}

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

impl From<crate::service::store::StoreError> for ApiError {
    fn from(e: crate::service::store::StoreError) -> ApiError {
        use crate::service::store::StoreError;
        match e {
            StoreError::NotFound(m) => ApiError::not_found(m),
            StoreError::Conflict(m) => ApiError::conflict(m),
            StoreError::Invalid(m) => ApiError::bad_request(m),
        }
    }
}

/// Upstream's `infra_error` model (`{code, message}`, code 401 or 403): what its server answers
/// for authentication and authorization failures, and what its client decodes for them.
#[derive(Debug, Serialize)]
struct InfraErrorBody<'a> {
    code: u16,
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if matches!(
            self.status,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            let body = InfraErrorBody {
                code: self.status.as_u16(),
                message: &self.reason,
            };
            return (self.status, Json(body)).into_response();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(e: ApiError) -> serde_json::Value {
        let response = e.into_response();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn auth_failures_are_infra_errors_and_the_rest_upstream_errors() {
        assert_eq!(
            body(ApiError::unauthorized("no token")).await,
            serde_json::json!({"code": 401, "message": "no token"})
        );
        assert_eq!(
            body(ApiError::forbidden("other infra-env")).await,
            serde_json::json!({"code": 403, "message": "other infra-env"})
        );
        let e = body(ApiError::not_found("no such host")).await;
        assert_eq!(e["code"], "404");
        assert_eq!(e["id"], 404);
        assert_eq!(e["kind"], "Error");
        assert_eq!(e["reason"], "no such host");
    }
}

//! Typed HTTP errors. Each becomes a status and an `ErrorMessage` JSON body
//! with a stable code; internals are logged, never sent.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use shared::protocol::{ErrorCode, ErrorMessage};

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("a valid token is required (Authorization: Bearer <token>)")]
    Unauthorized,
    #[error("too many failed attempts; retry later")]
    RateLimited,
    #[error("this Origin may not connect; start the agent with --allow-origin to allow it")]
    ForbiddenOrigin,
    #[error("unexpected Host header; start the agent with --allow-host to allow this name")]
    ForbiddenHost,
    #[error("the agent serves its maximum number of connections")]
    TooManyConnections,
    #[error("the agent is shutting down")]
    ShuttingDown,
    #[error("not found")]
    NotFound,
    #[error("no GPU reading could be taken in time")]
    BackendUnavailable,
    #[error("this agent has no fleet view; start it with --prometheus URL")]
    FleetNotConfigured,
    #[error("the fleet's Prometheus did not answer in time or as expected; see the agent's log")]
    PrometheusUnavailable,
}

impl ApiError {
    fn status_and_code(self) -> (StatusCode, ErrorCode) {
        match self {
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            ApiError::RateLimited => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::RateLimited),
            ApiError::ForbiddenOrigin => (StatusCode::FORBIDDEN, ErrorCode::ForbiddenOrigin),
            ApiError::ForbiddenHost => (StatusCode::FORBIDDEN, ErrorCode::ForbiddenHost),
            ApiError::TooManyConnections => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::TooManyConnections),
            ApiError::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::ShuttingDown),
            ApiError::NotFound => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            ApiError::BackendUnavailable => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::BackendUnavailable),
            ApiError::FleetNotConfigured => (StatusCode::NOT_FOUND, ErrorCode::FleetNotConfigured),
            ApiError::PrometheusUnavailable => (StatusCode::BAD_GATEWAY, ErrorCode::PrometheusUnavailable),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let mut response = (status, Json(ErrorMessage::new(code, self.to_string()))).into_response();
        let headers = response.headers_mut();
        match self {
            ApiError::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::RateLimited => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
            }
            _ => {}
        }
        response
    }
}

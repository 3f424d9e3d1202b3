//! The JSON API (`/api/health`, `/api/snapshot`), the bearer-token check the
//! HTTP routes share, and the guard every request passes (Host check,
//! security headers).

use std::time::Duration;

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use shared::protocol::{Health, PROTOCOL_VERSION, Snapshot};

use super::{ApiError, AppState, PeerAddr, auth};
use crate::telemetry::sampler::Published;

/// A reading this young is served as is; an older one triggers a new reading.
const FRESH_ENOUGH: Duration = Duration::from_secs(2);
/// How long an HTTP request waits for a new reading.
const READING_TIMEOUT: Duration = Duration::from_secs(5);

/// Every request: refuse a foreign `Host` (DNS rebinding), then add headers
/// that keep the page out of frames and content types unsniffed.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    // Browsers always send Host; a client without one is not a browser.
    if let Some(host) = host
        && !auth::host_allowed(host, &state.config().allowed_hosts)
    {
        tracing::info!(host, "refused a request with a foreign Host header");
        return ApiError::ForbiddenHost.into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// `Authorization: Bearer <token>`. Failures are rate limited per address
/// like the WebSocket handshake; the right token always passes.
pub fn check_bearer(state: &AppState, peer: PeerAddr, headers: &HeaderMap) -> Result<(), ApiError> {
    let ip = peer.0.ip();
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .unwrap_or_default();
    auth::check_token(&state.config().token, state.limiter(), ip, presented).map_err(|refusal| {
        tracing::info!(%ip, "refused an HTTP request without a valid token");
        match refusal {
            auth::Refusal::WrongToken => ApiError::Unauthorized,
            auth::Refusal::RateLimited => ApiError::RateLimited,
        }
    })
}

/// A fresh reading for an HTTP answer.
pub async fn reading(state: &AppState) -> Result<std::sync::Arc<Published>, ApiError> {
    state.sampler().fresh(FRESH_ENOUGH, READING_TIMEOUT).await.ok_or(ApiError::BackendUnavailable)
}

/// `GET /api/health`: no token, and nothing a stranger could use.
pub async fn health(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
        protocol_version: PROTOCOL_VERSION,
        simulated: state.sampler().host().simulated,
    })
}

/// `GET /api/snapshot`: the host and a fresh sample, with the bearer token.
pub async fn snapshot(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<PeerAddr>,
    headers: HeaderMap,
) -> Result<Json<Snapshot>, ApiError> {
    check_bearer(&state, peer, &headers)?;
    let published = reading(&state).await?;
    Ok(Json(Snapshot {
        protocol_version: PROTOCOL_VERSION,
        host: (**state.sampler().host()).clone(),
        sample: published.sample.clone(),
    }))
}

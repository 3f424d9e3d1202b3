//! `GET /api/fleet`: the fleet as the agent's Prometheus knows it
//! ([`crate::fleet::Relay`]), with the bearer token. A page from another
//! allowed origin (`--allow-origin`) may read it: the answer and its
//! preflight carry CORS headers for that origin only.

use axum::Json;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{ApiError, AppState, PeerAddr, auth, http};

pub async fn fleet(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<PeerAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if !cross_origin_allowed(&state, &headers) {
        return Err(ApiError::ForbiddenOrigin);
    }
    http::check_bearer(&state, peer, &headers)?;
    let Some(relay) = state.fleet() else { return Err(ApiError::FleetNotConfigured) };
    let snapshot = relay.snapshot().await.map_err(|e| {
        tracing::warn!("fleet view: {e}");
        ApiError::PrometheusUnavailable
    })?;
    let mut response = Json(&*snapshot).into_response();
    allow_origin(&headers, response.headers_mut());
    Ok(response)
}

/// The CORS preflight a cross-origin `fetch` with `Authorization` sends.
pub async fn preflight(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if headers.get(header::ORIGIN).is_none() || !cross_origin_allowed(&state, &headers) {
        return ApiError::ForbiddenOrigin.into_response();
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    allow_origin(&headers, out);
    out.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET"));
    out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("authorization"));
    out.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    response
}

fn cross_origin_allowed(state: &AppState, headers: &HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let config = state.config();
    auth::origin_allowed(text(header::ORIGIN), text(header::HOST), config.tls, &config.allowed_origins)
}

fn allow_origin(request: &HeaderMap, out: &mut HeaderMap) {
    if let Some(origin) = request.get(header::ORIGIN) {
        out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        out.insert(header::VARY, HeaderValue::from_static("Origin"));
    }
}

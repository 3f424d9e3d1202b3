//! `headroom serve`'s server: the page, the WebSocket stream, the JSON API and
//! Prometheus metrics, on one port.
//!
//! [`router`] builds the whole app from an [`AppState`]; [`serve`] runs it on
//! any listener (plain TCP or [`tls::TlsListener`]) until `shutdown`, then
//! closes every WebSocket with a close frame. Tests build the real thing on
//! port 0.
//!
//! **Architecture Invariant:** handlers never call a backend; they read the
//! sampler's latest published sample. Every request passes the `Host` check;
//! every WebSocket passes the `Origin` check and the token handshake.

pub mod auth;
mod error;
mod fleet;
mod http;
mod metrics;
mod probe;
pub mod tls;
pub mod web;
mod ws;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::middleware;
use axum::routing::get;
use axum::serve::{IncomingStream, Listener};
use shared::protocol::MAX_CLIENT_MESSAGE_BYTES;
use tokio::sync::{Semaphore, watch};

use crate::probe::ProbeConfig;
use crate::telemetry::sampler::Sampler;
pub use auth::Token;
pub use error::ApiError;
pub use metrics::{DCGM_NAMES, Dcgm};

/// Everything an operator can tune, with safe defaults.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub token: Token,
    /// Extra origins allowed to open the WebSocket (`--allow-origin`),
    /// normalized (`https://host[:port]`). The agent's own origin always is.
    pub allowed_origins: Vec<String>,
    /// Extra host names allowed in `Host` (`--allow-host`). IP literals,
    /// `localhost` and this machine's name always are.
    pub allowed_hosts: Vec<String>,
    /// Served over TLS (the page's own origin is then `https://`).
    pub tls: bool,
    pub max_connections: u32,
    pub max_message_bytes: usize,
    /// A client must say hello within this.
    pub handshake_timeout: Duration,
    /// Close a WebSocket that sent nothing (not even a pong to our pings) for
    /// this long. `None` disables pings and the timeout.
    pub idle_timeout: Option<Duration>,
    /// How long shutdown waits for WebSockets to close.
    pub shutdown_grace: Duration,
    /// Failed token attempts allowed at once per address, then one per refill.
    pub auth_failure_burst: u32,
    pub auth_failure_refill: Duration,
    /// Serve `/metrics` without the token (for scrapers on a trusted network).
    pub public_metrics: bool,
    pub web: web::WebRoot,
    /// Probe allocations: on, plan-only, 1 GiB margin by default.
    pub probes: ProbeConfig,
    /// `/metrics` also carries the dcgm-exporter-compatible series.
    pub dcgm_metrics: Dcgm,
    /// The fleet's Prometheus, relayed on `/api/fleet` (`--prometheus`).
    pub prometheus: Option<crate::fleet::PrometheusUrl>,
}

impl ServerConfig {
    pub fn new(token: Token) -> Self {
        Self {
            token,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            tls: false,
            max_connections: 256,
            max_message_bytes: MAX_CLIENT_MESSAGE_BYTES as usize,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(90)),
            shutdown_grace: Duration::from_secs(5),
            auth_failure_burst: 10,
            auth_failure_refill: Duration::from_secs(2),
            public_metrics: false,
            web: web::WebRoot::detect(None),
            probes: ProbeConfig::default(),
            dcgm_metrics: Dcgm::On,
            prometheus: None,
        }
    }
}

/// Shared by every handler; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    config: ServerConfig,
    sampler: Sampler,
    limiter: auth::FailureLimiter,
    probes: probe::ProbeService,
    fleet: Option<crate::fleet::Relay>,
    /// One permit per WebSocket; also how shutdown knows they are all gone.
    connections: Arc<Semaphore>,
    shutdown: watch::Sender<bool>,
}

impl AppState {
    pub fn new(mut config: ServerConfig, sampler: Sampler) -> Self {
        config.allowed_hosts.push(sampler.host().hostname.clone());
        let limiter =
            auth::FailureLimiter::new(config.auth_failure_burst, config.auth_failure_refill, auth::MAX_TRACKED);
        let connections = Arc::new(Semaphore::new(config.max_connections as usize));
        let (shutdown, _) = watch::channel(false);
        let probes = probe::ProbeService::new(config.probes.clone());
        let fleet = config.prometheus.clone().map(crate::fleet::Relay::new);
        Self(Arc::new(Inner { config, sampler, limiter, probes, fleet, connections, shutdown }))
    }

    pub fn config(&self) -> &ServerConfig {
        &self.0.config
    }

    pub fn sampler(&self) -> &Sampler {
        &self.0.sampler
    }

    fn limiter(&self) -> &auth::FailureLimiter {
        &self.0.limiter
    }

    fn probes(&self) -> &probe::ProbeService {
        &self.0.probes
    }

    fn fleet(&self) -> Option<&crate::fleet::Relay> {
        self.0.fleet.as_ref()
    }

    fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.0.shutdown.subscribe()
    }

    fn is_shutting_down(&self) -> bool {
        *self.0.shutdown.borrow()
    }

    /// Tells every WebSocket to close.
    pub fn begin_shutdown(&self) {
        self.0.shutdown.send_replace(true);
    }

    /// Waits (up to the grace period) for every WebSocket to close, then stops
    /// the sampler.
    async fn drain(&self) {
        let max = self.0.config.max_connections;
        let grace = self.0.config.shutdown_grace;
        match tokio::time::timeout(grace, self.0.connections.acquire_many(max)).await {
            Ok(_) => tracing::info!("all connections closed"),
            Err(_) => {
                let open = max as usize - self.0.connections.available_permits();
                tracing::warn!("{open} WebSocket(s) still open after {grace:?}; dropping them");
            }
        }
        self.0.sampler.stop();
    }
}

/// The peer's address, for rate limiting, from any listener we serve on.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

/// A listener [`serve`] accepts: plain TCP, [`tls::TlsListener`], or a test's
/// in-memory listener. (A marker rather than a blanket impl, which would
/// collide with axum's own `Connected` impls.)
pub trait PeerListener: Listener<Addr = SocketAddr> {}

impl PeerListener for tokio::net::TcpListener {}
impl PeerListener for tls::TlsListener {}

impl<L: PeerListener> Connected<IncomingStream<'_, L>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, L>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

/// The whole app.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(web::index))
        .route("/ws", get(ws::upgrade))
        .route("/api/health", get(http::health))
        .route("/api/snapshot", get(http::snapshot))
        .route("/metrics", get(metrics::metrics))
        .route("/api/fleet", get(fleet::fleet).options(fleet::preflight))
        .fallback(web::asset)
        .layer(middleware::from_fn_with_state(state.clone(), http::guard))
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` completes, then closes every
/// WebSocket with a close frame (waiting up to the grace period) and stops
/// sampling.
pub async fn serve<L>(
    listener: L,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: PeerListener,
{
    let app = router(state.clone()).into_make_service_with_connect_info::<PeerAddr>();
    let on_shutdown = state.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: closing connections");
            on_shutdown.begin_shutdown();
        })
        .await?;
    state.drain().await;
    Ok(())
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

//! The fleet relay (`headroom serve --prometheus URL`): the page asks "where
//! in my fleet does this plan fit now?" of the team's own Prometheus, which
//! sends no CORS headers, so the agent asks for it.
//!
//! The relay is read-only and narrow: a fixed set of instant queries
//! ([`QUERIES`]), nothing of the client's reaches Prometheus, each answer is
//! bounded in size and the whole round in time, and a round younger than
//! [`REUSE_FOR`] is served again rather than asked anew (several tabs polling
//! cost Prometheus one round).

mod join;
mod prometheus;

use std::sync::Arc;
use std::time::Duration;

use shared::protocol::FleetSnapshot;
use tokio::sync::Mutex;
use tokio::time::Instant;

pub use join::{QUERIES, Series, join};
pub use prometheus::{PrometheusUrl, QueryError, UrlError};

/// One round of queries, at most (Prometheus answers these in milliseconds;
/// a slower one is unhealthy, and the page polls again anyway).
const ROUND_TIMEOUT: Duration = Duration::from_secs(5);
/// A round this young is served again. The page polls every 5 s.
const REUSE_FOR: Duration = Duration::from_secs(2);

/// Asks one Prometheus the fixed fleet queries.
#[derive(Debug)]
pub struct Relay {
    client: prometheus::Client,
    last: Mutex<Option<(Instant, Arc<FleetSnapshot>)>>,
}

impl Relay {
    pub fn new(url: PrometheusUrl) -> Self {
        Self { client: prometheus::Client::new(url), last: Mutex::new(None) }
    }

    /// The fleet now (or as of a round under [`REUSE_FOR`] old). Concurrent
    /// callers wait for the same round.
    pub async fn snapshot(&self) -> Result<Arc<FleetSnapshot>, QueryError> {
        let mut last = self.last.lock().await;
        if let Some((at, snap)) = last.as_ref()
            && at.elapsed() < REUSE_FOR
        {
            return Ok(snap.clone());
        }
        let round = async {
            let [a, b, c, d] = QUERIES;
            let (free, used, reserved, now) =
                tokio::join!(self.client.query(a), self.client.query(b), self.client.query(c), self.client.query(d));
            Ok::<_, QueryError>(join(&free?, &used?, &reserved?, &now?, unix_ms()))
        };
        let snap = Arc::new(tokio::time::timeout(ROUND_TIMEOUT, round).await.map_err(|_| QueryError::Timeout)??);
        *last = Some((Instant::now(), snap.clone()));
        Ok(snap)
    }
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

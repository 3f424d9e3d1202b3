//! The client's own messages: the opening hello and the sample subscription.

use serde::{Deserialize, Serialize};

use super::DEFAULT_INTERVAL_MS;
#[cfg(doc)]
use super::{MAX_INTERVAL_MS, MIN_INTERVAL_MS, PROTOCOL_VERSION};

/// The first message of every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The agent's token (printed at start, or `--token`).
    pub token: String,
    /// The client's [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// Free-form client name for the agent's log, e.g. `headroom-web/0.1.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// Starts (or re-times) the stream of samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscribe {
    /// Between [`MIN_INTERVAL_MS`] and [`MAX_INTERVAL_MS`]; defaults to
    /// [`DEFAULT_INTERVAL_MS`]. Out of range is an `interval_out_of_range` error.
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u32,
}

fn default_interval_ms() -> u32 {
    DEFAULT_INTERVAL_MS
}

impl Default for Subscribe {
    fn default() -> Self {
        Self { interval_ms: DEFAULT_INTERVAL_MS }
    }
}

//! Bodies of the agent's HTTP endpoints.

use serde::{Deserialize, Serialize};

use super::{HostInfo, Sample};

// ---------------------------------------------------------------------------
// HTTP bodies

/// `GET /api/snapshot`: the host and its latest sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub protocol_version: u32,
    #[serde(flatten)]
    pub host: HostInfo,
    pub sample: Sample,
}

/// `GET /api/health`: deliberately says nothing a stranger could use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    pub status: String,
    pub protocol_version: u32,
    pub simulated: bool,
}

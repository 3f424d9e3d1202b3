//! Readings that may be unavailable, and why.

use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------
// Readings

/// A reading that may be unavailable, and then says why: never a silent zero.
/// JSON: `{"value": 54}` or `{"unavailable": "not_supported"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field<T> {
    Value(T),
    Unavailable(Unavailable),
}

impl<T> Field<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Field::Value(v) => Some(v),
            Field::Unavailable(_) => None,
        }
    }
}

impl<T> From<Result<T, Unavailable>> for Field<T> {
    fn from(r: Result<T, Unavailable>) -> Self {
        match r {
            Ok(v) => Field::Value(v),
            Err(why) => Field::Unavailable(why),
        }
    }
}

/// Why a reading is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unavailable {
    /// This GPU or driver does not report it (e.g. power on some boards,
    /// framebuffer memory on unified-memory parts).
    NotSupported,
    /// The agent's user may not read it.
    NoPermission,
    /// The driver's NVML library lacks the call (too old).
    MissingInDriver,
    /// The driver is known to return garbage for it (e.g. the process list on
    /// drivers 535.43–535.85), so the agent does not show it.
    Unreliable,
    /// The process is not visible from the agent's PID namespace (container).
    NotVisible,
    /// The GPU fell off the bus.
    GpuLost,
    /// Not read yet (the process list is read less often than memory).
    NotSampled,
    /// Any other failure; the agent logs the details.
    Failed,
    /// A reason from a newer agent.
    #[serde(other)]
    Unknown,
}

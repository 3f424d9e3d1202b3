//! The live view's model: pure functions and plain data, no signals, no DOM,
//! tested natively. [`host::HostModel`] takes the agent's messages;
//! [`cards`], [`reality`] and [`status`] turn it into what the page shows.

pub mod cards;
pub mod findings;
pub mod fleet;
pub mod fmt;
pub mod host;
pub mod panels;
pub mod probe;
pub mod reality;
pub mod status;

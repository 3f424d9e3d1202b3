//! The views, one component per file, in folders that mirror the page.

pub mod answer;
pub mod charts;
pub mod diagnose;
pub mod inputs;
pub mod layout;
pub mod live;

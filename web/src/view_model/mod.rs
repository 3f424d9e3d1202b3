//! The view model: pure functions that turn inputs and estimates into what
//! the page shows. No signals, no DOM; everything here is tested natively.

pub mod bars;
pub mod charts;
pub mod diagnose;
pub mod engine;
pub mod figures;
pub mod fixes;
pub mod fold;
pub mod html;
pub mod hub;
pub mod presets;
pub mod read;
pub mod resolve;
pub mod svg;
pub mod synth;

//! The `shared` crate's one integration-test binary.

mod arch;
mod diagnose;
mod engines;
mod gpus;
mod model;
mod oom;
mod params;
mod properties;
mod state;

//! The `shared` crate's one integration-test binary.

mod engines;
mod diagnose;
mod gpus;
mod model;
mod oom;
mod params;
mod properties;

//! The `shared` crate's one integration-test binary.

mod arch;
mod checkpoint;
mod diagnose;
mod engines;
mod gpus;
mod model;
mod oom;
mod params;
mod properties;
mod splits;
mod startup;
mod state;

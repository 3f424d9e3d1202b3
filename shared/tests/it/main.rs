//! The `shared` crate's one integration-test binary.

mod gpus;
mod model;
mod oom;
mod params;

//! The `shared` crate's one integration-test binary.

mod gpus;
mod oom;
mod params;

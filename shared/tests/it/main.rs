//! The `shared` crate's one integration-test binary.

mod accuracy;
mod arch;
mod checkpoint;
mod commands;
mod data_parallel;
mod diagnose;
mod engines;
mod gpus;
mod hostile;
mod layers;
mod llama_commands;
mod llamacpp;
mod llamacpp_fit;
mod llamacpp_ik;
mod llamacpp_logs;
mod llamacpp_split;
mod model;
mod ollama;
mod oom;
mod params;
mod properties;
mod splits;
mod startup;
mod state;
mod vllm_layouts;

use shared::estimate::{Estimate, Scenario};
use shared::model::Model;

/// The estimate of a scenario the test states, which must pass its checks.
pub fn estimate(model: &Model, scenario: Scenario) -> Estimate {
    shared::estimate::estimate(
        model,
        scenario.validate().unwrap_or_else(|e| panic!("the test's scenario fails its checks: {e}")),
    )
}

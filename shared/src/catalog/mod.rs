//! Built-in catalogs: model presets (stored as Hugging Face `config.json` data,
//! never as precomputed answers) and GPUs (with the source of every figure).

pub mod gpus;
pub mod models;

pub use gpus::{Gpu, GpuSources, GpuVendor, gpu, gpu_named, gpus, mac_named};
pub use models::{MODEL_PRESETS, ModelPreset, model_preset};

//! The GPU catalog: memory as the driver reports it, bandwidth and dense bf16
//! throughput, each with its source. Data lives in `catalog/gpus.json`.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    Nvidia,
    Amd,
}

/// One GPU model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gpu {
    /// Short, stable, URL-safe id (`rtx-4090`, `h100-sxm`).
    pub id: String,
    pub name: String,
    pub vendor: GpuVendor,
    /// Total memory in bytes as the driver reports it (nvidia-smi / NVML
    /// `memory.total`, rocm-smi VRAM total): the capacity the model uses.
    pub memory_bytes: u64,
    /// The marketed size as the vendor sells it, e.g. "24 GB" (decimal GB or
    /// GiB as the vendor states it).
    pub memory_label: String,
    /// Peak memory bandwidth in GB/s (decimal).
    pub bandwidth_gb_s: f64,
    /// Peak dense (no sparsity) bf16 tensor throughput in TFLOP/s.
    pub bf16_dense_tflops: f64,
    /// Where each figure comes from.
    pub sources: GpuSources,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuSources {
    pub memory: String,
    pub bandwidth: String,
    pub tflops: String,
}

static GPUS: OnceLock<Vec<Gpu>> = OnceLock::new();

/// All catalog GPUs, smallest memory first.
pub fn gpus() -> &'static [Gpu] {
    GPUS.get_or_init(|| {
        // The catalog is compiled in and checked by tests, so a parse failure is
        // a build defect; fall back to an empty list rather than panic.
        let mut list: Vec<Gpu> = serde_json::from_str(include_str!("../../catalog/gpus.json")).unwrap_or_default();
        list.sort_by_key(|g| g.memory_bytes);
        list
    })
}

/// Looks a GPU up by id (case-insensitive).
pub fn gpu(id: &str) -> Option<&'static Gpu> {
    gpus().iter().find(|g| g.id.eq_ignore_ascii_case(id))
}

//! `headroom models` and `headroom gpus`.

use clap::Args;
use serde::Serialize;
use shared::catalog::{self, MODEL_PRESETS};
use shared::model::Model;
use shared::units::{UnitSystem, format_bytes};

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct ModelRow {
    id: &'static str,
    name: &'static str,
    hf_repo: &'static str,
    family: shared::arch::Family,
    parameters: u64,
    default_format: String,
}

pub fn models(args: ListArgs) -> anyhow::Result<()> {
    let mut rows = Vec::with_capacity(MODEL_PRESETS.len());
    for p in MODEL_PRESETS {
        let m = Model::from_preset(p)?;
        rows.push(ModelRow {
            id: p.id,
            name: p.name,
            hf_repo: p.hf_repo,
            family: m.arch.family,
            parameters: m.parameters(),
            default_format: m.default_format().id(),
        });
    }
    if args.json {
        return super::emit(&(serde_json::to_string_pretty(&rows)? + "\n"));
    }
    let mut out = format!("{:<28} {:<36} {:>18}  {}\n", "ID", "NAME", "PARAMETERS", "FORMAT");
    for r in rows {
        out += &format!(
            "{:<28} {:<36} {:>18}  {}\n",
            r.id,
            r.name,
            shared::explain::thousands(r.parameters),
            r.default_format
        );
    }
    super::emit(&out)
}

#[derive(Serialize)]
struct GpuRow<'a> {
    id: &'a str,
    name: &'a str,
    vendor: catalog::GpuVendor,
    memory_bytes: u64,
    reserved_mib: u16,
    memory_label: &'a str,
    bandwidth_gb_s: f64,
    bf16_dense_tflops: f64,
    /// Unified memory (DGX Spark, Strix Halo, a Mac): the pool the GPU
    /// shares with the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    unified_bytes: Option<u64>,
    /// NVIDIA's compute capability ("8.9"), which vLLM's fp8 needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_capability: Option<&'a str>,
    sources: catalog::gpus::GpuSources,
}

pub fn gpus(args: ListArgs) -> anyhow::Result<()> {
    let gpus = catalog::gpus();
    if args.json {
        let rows: Vec<GpuRow> = gpus
            .iter()
            .map(|g| GpuRow {
                id: &g.id,
                name: &g.name,
                vendor: g.vendor,
                memory_bytes: g.memory_bytes,
                reserved_mib: g.reserved_mib,
                memory_label: &g.memory_label,
                bandwidth_gb_s: g.bandwidth_gb_s,
                bf16_dense_tflops: g.bf16_dense_tflops,
                unified_bytes: g.unified_bytes,
                compute_capability: g.compute_capability.as_deref(),
                sources: g.sources(),
            })
            .collect();
        return super::emit(&(serde_json::to_string_pretty(&rows)? + "\n"));
    }
    let mut out =
        format!("{:<24} {:<34} {:>12} {:>9} {:>10} {:>10}\n", "ID", "NAME", "MEMORY", "SOLD AS", "GB/s", "BF16 TFLOPS");
    for g in gpus {
        out += &format!(
            "{:<24} {:<34} {:>12} {:>9} {:>10} {:>10}\n",
            g.id,
            g.name,
            format_bytes(g.memory_bytes, UnitSystem::Binary),
            g.memory_label,
            g.bandwidth_gb_s,
            g.bf16_dense_tflops
        );
    }
    super::emit(&out)
}

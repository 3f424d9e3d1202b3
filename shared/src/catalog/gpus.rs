//! The GPU catalog: memory as the driver reports it, bandwidth and dense bf16
//! throughput, each with its source. Data lives in `catalog/gpus.json`,
//! compiled into a table by `build.rs` (no JSON parsing at run time).

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    Nvidia,
    Amd,
    /// Apple silicon: the GPU runs Metal, not CUDA or ROCm, so only the
    /// engines with a Metal backend (llama.cpp, Ollama) run on it.
    Apple,
}

impl GpuVendor {
    /// Whether CUDA or ROCm runs on it: what vLLM, SGLang and the
    /// transformers model (PyTorch's CUDA caching allocator) need.
    pub fn runs_cuda_or_rocm(self) -> bool {
        match self {
            Self::Nvidia | Self::Amd => true,
            Self::Apple => false,
        }
    }
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
    /// MiB of `memory_bytes` the driver keeps for itself (nvidia-smi -q
    /// `Reserved`): CUDA's total (`cudaMemGetInfo`, `torch.cuda.mem_get_info`,
    /// which vLLM and SGLang size their budgets from) is `memory_bytes` less
    /// this. It moves with the driver (H100 SXM: 328 MiB on R545, 480 on
    /// R580) and the platform; each GPU's source names the reading taken.
    pub reserved_mib: u16,
    /// The marketed size as the vendor sells it, e.g. "24 GB" (decimal GB or
    /// GiB as the vendor states it).
    pub memory_label: String,
    /// Peak memory bandwidth in GB/s (decimal).
    pub bandwidth_gb_s: f64,
    /// Peak dense (no sparsity) bf16 tensor throughput in TFLOP/s.
    pub bf16_dense_tflops: f64,
    /// Unified memory (NVIDIA GB10, AMD Strix Halo, Apple silicon): the memory the GPU
    /// shares with the host, of which `memory_bytes` is what the GPU's
    /// runtime lets a process allocate. What the host holds (mmap'd weights,
    /// KV kept on the CPU, buffers) comes out of the same memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unified_bytes: Option<u64>,
    /// NVIDIA's compute capability, "major.minor" as NVIDIA's table of CUDA
    /// GPUs prints it (V100 "7.0", RTX 4090 "8.9"): which kernels run, such
    /// as vLLM's fp8. `None` for AMD and Apple GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
}

impl Gpu {
    /// The memory CUDA reports as the device's total: the driver's total
    /// less what it reserves.
    pub fn cuda_total_bytes(&self) -> u64 {
        self.memory_bytes.saturating_sub(u64::from(self.reserved_mib) << 20)
    }

    /// The compute capability as vLLM and PyTorch compare it
    /// (`DeviceCapability.to_int()`, vllm/platforms/interface.py:
    /// `major * 10 + minor`, 8.9 → 89).
    pub fn capability(&self) -> Option<u32> {
        let (major, minor) = self.compute_capability.as_deref()?.split_once('.')?;
        Some(major.parse::<u32>().ok()? * 10 + minor.parse::<u32>().ok()?)
    }

    /// Where each figure comes from (kept in a table of its own, so that code
    /// that never shows them, the page, does not carry them).
    pub fn sources(&self) -> GpuSources {
        let row = SOURCES.iter().find(|r| r[0] == self.id).copied().unwrap_or_default();
        GpuSources {
            memory: row[1].into(),
            reserved: row[2].into(),
            bandwidth: row[3].into(),
            tflops: row[4].into(),
            unified: (!row[5].is_empty()).then(|| row[5].into()),
            compute_capability: (!row[6].is_empty()).then(|| row[6].into()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuSources {
    pub memory: String,
    pub reserved: String,
    pub bandwidth: String,
    pub tflops: String,
    /// Where the unified memory figure comes from, for a unified-memory GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unified: Option<String>,
    /// Where the compute capability comes from, for an NVIDIA GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
}

static GPUS: OnceLock<Vec<Gpu>> = OnceLock::new();

/// One GPU of the table `build.rs` writes from `catalog/gpus.json`.
struct Row {
    id: &'static str,
    name: &'static str,
    vendor: GpuVendor,
    memory_bytes: u64,
    reserved_mib: u16,
    memory_label: &'static str,
    bandwidth_gb_s: f64,
    bf16_dense_tflops: f64,
    /// 0: a discrete GPU.
    unified_bytes: u64,
    /// "": not an NVIDIA GPU.
    compute_capability: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/gpus.rs"));

/// All catalog GPUs, smallest memory first.
pub fn gpus() -> &'static [Gpu] {
    GPUS.get_or_init(|| {
        // `build.rs` wrote the table smallest memory first.
        TABLE
            .iter()
            .map(|r| Gpu {
                id: r.id.into(),
                name: r.name.into(),
                vendor: r.vendor,
                memory_bytes: r.memory_bytes,
                reserved_mib: r.reserved_mib,
                memory_label: r.memory_label.into(),
                bandwidth_gb_s: r.bandwidth_gb_s,
                bf16_dense_tflops: r.bf16_dense_tflops,
                unified_bytes: (r.unified_bytes > 0).then_some(r.unified_bytes),
                compute_capability: (!r.compute_capability.is_empty()).then(|| r.compute_capability.into()),
            })
            .collect()
    })
}

/// The catalog GPU a driver's device name is (`NVIDIA GeForce RTX 4090`,
/// `AMD Radeon RX 7900 XTX`, `NVIDIA RTX A6000`): the same words once the
/// vendor and brand words the catalog leaves out are dropped, case aside;
/// else a data-centre part the driver names by its memory or board
/// ([`DRIVER_NAMES`], `NVIDIA H100 80GB HBM3`). `None` for any other name.
pub fn gpu_named(device: &str) -> Option<&'static Gpu> {
    const BRANDS: [&str; 4] = ["nvidia", "geforce", "tesla", "amd"];
    let words = |s: &str| -> Vec<String> {
        s.split_whitespace().map(str::to_ascii_lowercase).filter(|w| !BRANDS.contains(&w.as_str())).collect()
    };
    let want = words(device);
    if want.is_empty() {
        return None;
    }
    gpus().iter().find(|g| words(&g.name) == want).or_else(|| {
        let (_, id) = DRIVER_NAMES.iter().find(|(name, _)| words(name) == want)?;
        gpu(id)
    })
}

/// The catalog Mac a Metal device is (`Apple M2`, as ggml-metal names it
/// from `MTLDevice.name`) with `free` bytes free before anything loaded:
/// Metal's free memory is the recommended working set less this process's
/// buffers (ggml-metal-device.m `ggml_metal_device_get_memory`), and the
/// working set follows the Mac's memory, not its chip (an 8 and a 16 GB
/// M2), so the chip and the working set name the entry. The catalog keeps
/// it in whole MiB, rounded down, which the log prints the same way.
pub fn mac_named(device: &str, free: u64) -> Option<&'static Gpu> {
    let chip = device.trim().strip_prefix("Apple ")?;
    gpus().iter().find(|g| {
        let named = g.name.split_once('(').and_then(|(_, r)| r.split_once(',')).map(|(c, _)| c.trim());
        g.vendor == GpuVendor::Apple
            && named.is_some_and(|c| c.eq_ignore_ascii_case(chip))
            && g.memory_bytes / crate::units::MIB == free / crate::units::MIB
    })
}

/// Driver (NVML, `nvidia-smi`) names of data-centre parts that the
/// catalog spells otherwise, and the catalog GPU each is. The last three
/// are not in the catalog: each stands in for the catalog part of the same
/// memory, bandwidth and chip (GA100).
const DRIVER_NAMES: &[(&str, &str)] = &[
    // nvidia-smi in NVIDIA/nccl#1264; vLLM's fused-MoE config file names
    // (`E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3.json`, 0.10 – 0.34).
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    // vLLM's `fused_moe.py::get_config_file_name` (0.11 – 0.34) names every
    // H200 (SXM or NVL, 141 GB each) `NVIDIA_H200`.
    ("NVIDIA H200", "h200"),
    // DCGM's `modelName`, vLLM's fused-MoE config file names.
    ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
    // nvidia-smi in bottlerocket-os/bottlerocket-core-kit#834.
    ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
    // The catalog's source of its memory (`gpus.json`).
    ("NVIDIA GH200 480GB", "gh200"),
    // The DGX Spark's superchip as the driver names it (vLLM's fused-MoE
    // config files, `device_name=NVIDIA_GB10`).
    ("NVIDIA GB10", "dgx-spark"),
    // The catalog entry covers both editions (97887 MiB each, `gpus.json`).
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell"),
    // NVIDIA A800 datasheets: 80 GB HBM2e, 1,935 GB/s (PCIe) and 2,039 GB/s
    // (SXM), the A100 80GB's; the A100 40GB PCIe: 40 GB HBM2, 1,555 GB/s
    // (A100 datasheet), the 40GB SXM's.
    ("NVIDIA A800 80GB PCIe", "a100-80gb-pcie"),
    ("NVIDIA A800-SXM4-80GB", "a100-80gb-sxm"),
    ("NVIDIA A100-PCIE-40GB", "a100-40gb-sxm"),
    // HIP's name for the Ryzen AI Max+ 395's GPU (llama.cpp b11151's
    // `using device ROCm0 (Radeon 8060S Graphics)`); how much of the pool
    // it has is the log's own figure where it gives one.
    ("Radeon 8060S Graphics", "strix-halo-128gb"),
];

/// Looks a GPU up by id (case-insensitive).
pub fn gpu(id: &str) -> Option<&'static Gpu> {
    gpus().iter().find(|g| g.id.eq_ignore_ascii_case(id))
}

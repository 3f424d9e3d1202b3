//! The GPU catalog (`catalog/gpus.json`): it parses strictly, ids are unique
//! and URL-safe, every figure is positive and sourced, and a few values are
//! pinned to the driver readings and datasheet figures they came from.

use shared::catalog::gpus::{Gpu, GpuVendor, gpu, gpus};
use std::collections::HashSet;

const MIB: u64 = 1 << 20;

/// `gpus()` is a table `build.rs` writes from the file; parse the very same
/// file strictly here: a malformed catalog must fail this test loudly.
fn strict() -> Vec<Gpu> {
    serde_json::from_str(include_str!("../../catalog/gpus.json"))
        .unwrap_or_else(|e| panic!("catalog/gpus.json does not parse as Vec<Gpu>: {e}"))
}

#[test]
fn catalog_parses_strictly_and_is_large() {
    let parsed = strict();
    assert!(parsed.len() >= 30, "only {} GPUs in the catalog", parsed.len());
    // The build-time table is the same data, GPU by GPU, field by field.
    let mut sorted = parsed;
    sorted.sort_by_key(|g| g.memory_bytes);
    let as_json = |l: &[Gpu]| serde_json::to_value(l).expect("serialises");
    assert_eq!(as_json(gpus()), as_json(&sorted));
    // And the sources, kept in a table of their own.
    let raw: Vec<serde_json::Value> = serde_json::from_str(include_str!("../../catalog/gpus.json")).expect("a list");
    for g in raw {
        let id = g["id"].as_str().expect("an id");
        let sources = serde_json::to_value(gpu(id).expect("in the table").sources()).expect("serialises");
        assert_eq!(sources, g["sources"], "{id}");
    }
}

#[test]
fn gpus_are_sorted_smallest_memory_first() {
    let list = gpus();
    assert!(list.windows(2).all(|w| w[0].memory_bytes <= w[1].memory_bytes));
}

#[test]
fn ids_are_unique_and_url_safe() {
    let mut seen = HashSet::new();
    for g in strict() {
        assert!(!g.id.is_empty(), "empty id for {}", g.name);
        assert!(
            g.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "id {:?} is not lowercase [a-z0-9-]",
            g.id
        );
        assert!(
            !g.id.starts_with('-') && !g.id.ends_with('-') && !g.id.contains("--"),
            "id {:?} has a stray dash",
            g.id
        );
        assert!(seen.insert(g.id.clone()), "duplicate id {:?}", g.id);
    }
}

#[test]
fn every_figure_is_positive_and_every_source_present() {
    for g in strict() {
        assert!(!g.name.trim().is_empty(), "{}: empty name", g.id);
        assert!(g.memory_bytes > 0, "{}: memory_bytes", g.id);
        assert!(!g.memory_label.trim().is_empty(), "{}: memory_label", g.id);
        assert!(g.bandwidth_gb_s.is_finite() && g.bandwidth_gb_s > 0.0, "{}: bandwidth_gb_s", g.id);
        assert!(g.bf16_dense_tflops.is_finite() && g.bf16_dense_tflops > 0.0, "{}: bf16_dense_tflops", g.id);
        assert!(!g.sources().memory.trim().is_empty(), "{}: sources.memory", g.id);
        assert!(!g.sources().bandwidth.trim().is_empty(), "{}: sources.bandwidth", g.id);
        assert!(!g.sources().tflops.trim().is_empty(), "{}: sources.tflops", g.id);
    }
}

#[test]
fn memory_is_a_whole_number_of_mib() {
    for g in strict() {
        assert_eq!(g.memory_bytes % MIB, 0, "{}: {} B is not whole MiB", g.id, g.memory_bytes);
    }
}

#[test]
fn driver_reading_is_near_the_marketed_size() {
    // The driver figure sits within a few percent of the label, read either as
    // decimal GB or as GiB (reservations, ECC and GB-vs-GiB all move it a bit).
    // On unified memory the label is the pool's, of which the GPU side may be
    // much less (a Mac's Metal working set: 2/3 to 3/4 of it).
    for g in strict() {
        let label: f64 = g
            .memory_label
            .trim_end_matches(" GB")
            .parse()
            .unwrap_or_else(|_| panic!("{}: label {:?} is not 'N GB'", g.id, g.memory_label));
        let bytes = g.unified_bytes.unwrap_or(g.memory_bytes) as f64;
        let near = |unit: f64| (bytes / (label * unit) - 1.0).abs() < 0.10;
        assert!(near(1e9) || near(1024.0 * 1024.0 * 1024.0), "{}: {} vs {}", g.id, bytes, g.memory_label);
    }
}

#[test]
fn sparse_figures_were_not_used() {
    // Cheap guard: no part in the catalog reaches 2.5 dense bf16 PFLOPS (B200,
    // the fastest, is 2.25), so a figure above that is a with-sparsity one.
    for g in strict() {
        assert!(g.bf16_dense_tflops < 2500.0, "{}: {} looks like a sparse figure", g.id, g.bf16_dense_tflops);
    }
}

#[test]
fn covers_the_required_models() {
    for id in [
        "rtx-3060-12gb",
        "rtx-3070",
        "rtx-3080-10gb",
        "rtx-3080-ti",
        "rtx-3090",
        "rtx-3090-ti",
        "rtx-4060-ti-16gb",
        "rtx-4070-ti-super",
        "rtx-4080",
        "rtx-4080-super",
        "rtx-4090",
        "rtx-5070-ti",
        "rtx-5080",
        "rtx-5090",
        "rtx-a4000",
        "rtx-a5000",
        "rtx-a6000",
        "rtx-6000-ada",
        "l40s",
        "l40",
        "rtx-pro-6000-blackwell",
        "t4",
        "v100-16gb",
        "v100-32gb",
        "a10",
        "a10g",
        "l4",
        "a100-40gb-sxm",
        "a100-80gb-sxm",
        "a100-80gb-pcie",
        "h100-pcie",
        "h100-sxm",
        "h100-nvl",
        "h200",
        "b200",
        "mi300x",
        "mi325x",
    ] {
        assert!(gpu(id).is_some(), "missing {id}");
    }
}

#[test]
fn lookup_is_case_insensitive() {
    assert_eq!(gpu("RTX-4090").map(|g| g.id.as_str()), Some("rtx-4090"));
    assert!(gpu("no-such-gpu").is_none());
}

#[test]
fn spot_check_driver_readings() {
    let mib = |id: &str| gpu(id).unwrap_or_else(|| panic!("missing {id}")).memory_bytes / MIB;
    assert_eq!(mib("rtx-4090"), 24564);
    assert_eq!(mib("rtx-3090"), 24576);
    assert_eq!(mib("rtx-5090"), 32607);
    assert_eq!(mib("a100-80gb-sxm"), 81920);
    assert_eq!(mib("a100-40gb-sxm"), 40960);
    assert_eq!(mib("h100-sxm"), 81559);
    assert_eq!(mib("h200"), 143771);
    assert_eq!(mib("b200"), 183359);
    assert_eq!(mib("l40s"), 46068);
    assert_eq!(mib("t4"), 15360);
    let mi300x = gpu("mi300x").unwrap_or_else(|| panic!("missing mi300x"));
    assert_eq!(mi300x.memory_bytes, 206_141_652_992);
}

#[test]
fn spot_check_datasheet_figures() {
    let g = |id: &str| gpu(id).unwrap_or_else(|| panic!("missing {id}"));
    assert_eq!(g("h100-sxm").bf16_dense_tflops, 989.4);
    assert_eq!(g("h100-sxm").bandwidth_gb_s, 3350.0);
    assert_eq!(g("a100-80gb-sxm").bf16_dense_tflops, 312.0);
    assert_eq!(g("a100-80gb-sxm").bandwidth_gb_s, 2039.0);
    assert_eq!(g("h200").bandwidth_gb_s, 4800.0);
    // GeForce: the fp32-accumulate (half) rate, which a PyTorch bf16 matmul sees.
    assert_eq!(g("rtx-4090").bf16_dense_tflops, 165.2);
    assert_eq!(g("rtx-4090").bandwidth_gb_s, 1008.0);
    assert_eq!(g("rtx-3090").bf16_dense_tflops, 71.0);
    assert_eq!(g("mi300x").bf16_dense_tflops, 1307.4);
    assert_eq!(g("mi300x").vendor, GpuVendor::Amd);
    assert_eq!(g("h200").vendor, GpuVendor::Nvidia);
    // No bf16 tensor cores on Turing/Volta: the fp16 figure, and the source says so.
    for id in ["t4", "v100-16gb", "v100-32gb"] {
        assert!(g(id).sources().tflops.contains("no bf16"), "{id}: source must say fp16 stands in");
    }
}

#[test]
fn spec_derived_memory_is_flagged() {
    // Entries without a driver reading must say so.
    for id in ["rtx-3080-12gb", "mi325x"] {
        assert!(
            gpu(id).unwrap_or_else(|| panic!("missing {id}")).sources().memory.contains("not a driver reading"),
            "{id}: spec-derived memory must be flagged"
        );
    }
}

/// CUDA's total is the driver's total less its reserve (nvidia-smi -q
/// `Reserved`; `Total − Reserved` equals deviceQuery's bytes within 1 MiB
/// on 20 paired captures): each GPU's reserve is sourced, HBM parts keep
/// 0.3 – 1.2 % and GDDR cards up to 3 %, ROCm none, and the readings the
/// vLLM logs name reproduce (an H100 SXM on R565: 81,106 MiB).
#[test]
fn cuda_totals_are_the_driver_total_less_its_reserve() {
    for g in gpus() {
        assert!(!g.sources().reserved.trim().is_empty(), "{}: sources.reserved", g.id);
        let share = f64::from(g.reserved_mib) * MIB as f64 / g.memory_bytes as f64;
        match g.vendor {
            // Unified memory: CUDA's total is the shared pool itself.
            _ if g.unified_bytes.is_some() => assert_eq!(g.reserved_mib, 0, "{}", g.id),
            GpuVendor::Amd | GpuVendor::Apple => assert_eq!(g.reserved_mib, 0, "{}", g.id),
            GpuVendor::Nvidia => assert!((0.002..0.03).contains(&share), "{}: {share}", g.id),
        }
        assert_eq!(g.cuda_total_bytes(), g.memory_bytes - u64::from(g.reserved_mib) * MIB);
    }
    let cuda_mib = |id: &str| gpu(id).unwrap_or_else(|| panic!("{id}")).cuda_total_bytes() / MIB;
    assert_eq!(cuda_mib("h100-sxm"), 81_105);
    assert_eq!(cuda_mib("h200"), 143_156);
    assert_eq!(cuda_mib("l40s"), 45_589);
    assert_eq!(cuda_mib("rtx-4090"), 24_210);
}

/// A unified-memory GPU says so, with the source of its pool, and its GPU
/// side never exceeds the pool.
#[test]
fn unified_memory_is_sourced_and_holds_the_gpu_side() {
    let spark = gpu("dgx-spark").expect("DGX Spark is in the catalog");
    assert_eq!(spark.unified_bytes, Some(spark.memory_bytes), "GB10: CUDA's total is the pool");
    for g in gpus().iter().filter(|g| g.unified_bytes.is_some()) {
        assert!(g.sources().unified.is_some_and(|s| !s.trim().is_empty()), "{}: sources.unified", g.id);
        assert!(g.memory_bytes <= g.unified_bytes.unwrap_or(0), "{}", g.id);
    }
    assert!(gpus().iter().filter(|g| g.unified_bytes.is_none()).all(|g| g.sources().unified.is_none()));
    // Apple silicon is always unified, and Metal's total is its working-set
    // limit, which macOS keeps well under the pool (2/3 to 3/4 of it, more
    // on the largest Macs: llama.cpp's ggml-metal-device.m reads it).
    for g in gpus().iter().filter(|g| g.vendor == GpuVendor::Apple) {
        let pool = g.unified_bytes.unwrap_or_else(|| panic!("{}: Apple silicon is unified", g.id));
        let share = g.memory_bytes as f64 / pool as f64;
        assert!((0.6..0.9).contains(&share), "{}: {share}", g.id);
        assert!(g.sources().memory.contains("recommendedMaxWorkingSetSize"), "{}", g.id);
    }
    assert!(gpus().iter().filter(|g| g.vendor == GpuVendor::Apple).count() >= 3, "Macs from 16 to 128 GB");
    let strix = gpu("strix-halo-128gb").expect("Strix Halo is in the catalog");
    assert!(strix.vendor == GpuVendor::Amd && strix.memory_bytes < strix.unified_bytes.unwrap_or(0));
}

/// A start-up log names its devices as the driver does; the catalog GPU is
/// the one spelled the same once vendor and brand words are dropped.
#[test]
fn a_driver_s_device_name_is_its_catalog_gpu() {
    let id = |name: &str| shared::catalog::gpu_named(name).map(|g| g.id.as_str());
    assert_eq!(id("NVIDIA GeForce RTX 4090"), Some("rtx-4090"));
    assert_eq!(id("NVIDIA GeForce RTX 3090 Ti"), Some("rtx-3090-ti"));
    assert_eq!(id("NVIDIA RTX A6000"), Some("rtx-a6000"));
    assert_eq!(id("Tesla T4"), Some("t4"));
    assert_eq!(id("AMD Radeon RX 7900 XTX"), Some("rx-7900-xtx"));
    assert_eq!(id("AMD Radeon RX 6600"), Some("rx-6600"));
    // A data-centre part the driver names by its memory or board.
    assert_eq!(id("NVIDIA H100 80GB HBM3"), Some("h100-sxm"));
    assert_eq!(id("NVIDIA GB10"), Some("dgx-spark"));
    assert_eq!(id("NVIDIA A100-SXM4-80GB"), Some("a100-80gb-sxm"));
    // An A800 is the A100 80GB's memory and bandwidth: the catalog's stand-in.
    assert_eq!(id("NVIDIA A800 80GB PCIe"), Some("a100-80gb-pcie"));
    // HIP's name for Strix Halo's GPU.
    assert_eq!(id("Radeon 8060S Graphics"), Some("strix-halo-128gb"));
    // Not guessed: a memory size the name leaves open, a part named otherwise.
    assert_eq!(id("NVIDIA GeForce RTX 3060"), None);
    assert_eq!(id("NVIDIA H800"), None);
    assert_eq!(id(""), None);
}

/// Every NVIDIA GPU carries its compute capability from NVIDIA's table,
/// sourced; AMD and Apple GPUs carry none (vLLM's capability checks are
/// CUDA's).
#[test]
fn nvidia_gpus_carry_a_sourced_compute_capability() {
    for g in gpus() {
        match g.vendor {
            GpuVendor::Nvidia => {
                let c = g.capability().unwrap_or_else(|| panic!("{}: compute_capability", g.id));
                assert!((70..=121).contains(&c), "{}: {c}", g.id);
                let source = g.sources().compute_capability.unwrap_or_default();
                assert!(source.contains("developer.nvidia.com/cuda-gpus"), "{}: {source}", g.id);
            }
            GpuVendor::Amd | GpuVendor::Apple => {
                assert!(g.compute_capability.is_none() && g.sources().compute_capability.is_none(), "{}", g.id)
            }
        }
    }
    let cap = |id: &str| gpu(id).and_then(Gpu::capability);
    assert_eq!(
        (cap("v100-32gb"), cap("a100-80gb-sxm"), cap("rtx-4090"), cap("h100-sxm")),
        (Some(70), Some(80), Some(89), Some(90))
    );
}

/// The RX 6600 and the base M2 hold what real logs of them print: ROCm's
/// total beside the RX 6600's device line (an Ollama runner), and Metal's
/// recommended working set on a 16 GB M2 (a llama.cpp run), in MB of 10^6
/// B as ggml-metal printed it then; an 8 GB Mac keeps 2/3 of its memory.
#[test]
fn the_rx_6600_and_the_base_m2_hold_what_their_logs_print() {
    let fixture = |name: &str| {
        std::fs::read_to_string(format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let after = |text: &str, key: &str| -> String {
        let at = text.find(key).unwrap_or_else(|| panic!("no {key:?}")) + key.len();
        text[at..].trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect()
    };
    let rocm = fixture("ollama-rocm-gemma2-2b-q40-rx6600-np2-swa-full");
    assert!(rocm.contains("Device 0: AMD Radeon RX 6600,"));
    let total: u64 =
        after(&rocm, "utilizing AMD specific memory reporting free: 7877861376 total:").parse().expect("bytes");
    let rx = gpu("rx-6600").expect("the RX 6600 is in the catalog");
    assert_eq!((rx.memory_bytes, rx.vendor, rx.cuda_total_bytes()), (total, GpuVendor::Amd, total));
    let metal = fixture("llamacpp-nogit-deepseek-coder-v2-lite-q4km-metal-m2-ngl24");
    assert!(metal.contains("using device Metal (Apple M2)"));
    let mb: f64 = after(&metal, "recommendedMaxWorkingSetSize  =").parse().expect("MB");
    let m2 = gpu("m2-16gb").expect("the 16 GB M2 is in the catalog");
    assert_eq!(m2.memory_bytes, (mb * 1e6) as u64 / MIB * MIB, "whole MiB, rounded down");
    assert_eq!(m2.unified_bytes, Some(16 << 30));
    let m8 = gpu("m2-8gb").expect("the 8 GB M2 is in the catalog");
    assert_eq!((m8.memory_bytes / MIB, m8.unified_bytes), ((8 << 10) * 2 / 3, Some(8 << 30)));
    assert_eq!((m8.bandwidth_gb_s, m8.bf16_dense_tflops), (m2.bandwidth_gb_s, m2.bf16_dense_tflops), "one chip");
}

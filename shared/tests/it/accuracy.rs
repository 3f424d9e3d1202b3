//! The estimate against real engine start-up logs (`tests/fixtures/startup/`,
//! each citing its thread): the memory vLLM said it left to the KV cache, and
//! SGLang's KV pool in tokens, beside what the estimate predicts for the same
//! launch. The launch is what the log names (its version, TP degree,
//! utilization, `max_model_len`) plus the model and GPU its source names;
//! `docs/measurements.md` holds the table this prints
//! (`cargo test -p shared --test it accuracy -- --nocapture`).

use crate::estimate;
use shared::engines::{Engine, EngineKind, sglang, vllm};
use shared::estimate::{GpuSlot, Scenario};
use shared::formats::WeightFormat;
use shared::model::Model;
use shared::startup::{Amount, Figure, LogEngine, StartupLog, read, reconcile};

/// One logged start and what its source says about the launch that the log
/// itself does not.
struct Case {
    fixture: &'static str,
    preset: &'static str,
    gpu: &'static str,
    /// The checkpoint's weight format when it is not the preset's own.
    weights: Option<&'static str>,
    /// What the source's command line says and the excerpt does not.
    tp: Option<u64>,
    mem_fraction_static: Option<f64>,
    /// The vLLM release, when the log names none (the thread's date).
    release: Option<&'static str>,
    /// vLLM's sampler and `max_num_seqs`, when the excerpt does not say and
    /// the source does.
    sampler: Option<vllm::Sampler>,
    max_num_seqs: Option<u64>,
    /// vLLM's `max_model_len`, when the excerpt prints no configuration and
    /// the source names it.
    max_model_len: Option<u64>,
    /// The checkpoint's own config.json (`tests/fixtures/checkpoints/`),
    /// where the preset is not the checkpoint the log ran.
    config: Option<&'static str>,
    /// What the row is, for the table.
    what: &'static str,
}

/// A case whose log and thread name everything but the model and the GPU.
const fn case(fixture: &'static str, preset: &'static str, gpu: &'static str, what: &'static str) -> Case {
    Case {
        fixture,
        preset,
        gpu,
        weights: None,
        tp: None,
        mem_fraction_static: None,
        release: None,
        sampler: None,
        max_num_seqs: None,
        max_model_len: None,
        config: None,
        what,
    }
}

const CASES: &[Case] = &[
    Case {
        // vllm#10511 was merged into 0.6.5.
        release: Some("0.6.5"),
        ..case("vllm-v0-profile-llama3-8b", "llama-3-8b", "h100-sxm", "Llama-3-8B, 1 × H100, V0")
    },
    // vllm#10517: one RTX 3090 user's V0 runs at 20,000 and 29,000 tokens
    // (the comment's `--max-model-len`); 0.6.4.post1 by the profile line.
    Case {
        release: Some("0.6.4.post1"),
        max_model_len: Some(20_000),
        ..case(
            "vllm-v0-064post1-llama31-8b-rtx3090-mml20k",
            "llama-3.1-8b",
            "rtx-3090",
            "Llama-3.1-8B, 1 × RTX 3090, max_model_len 20000, V0 0.6.4.post1",
        )
    },
    Case {
        release: Some("0.6.4.post1"),
        max_model_len: Some(29_000),
        ..case(
            "vllm-v0-064post1-llama31-8b-rtx3090-mml29k",
            "llama-3.1-8b",
            "rtx-3090",
            "Llama-3.1-8B, 1 × RTX 3090, max_model_len 29000 (refused: the cache holds less), V0 0.6.4.post1",
        )
    },
    case("vllm-v1-0101-qwen2-7b-a100-u025", "qwen2-7b", "a100-80gb-sxm", "Qwen2-7B, 1 × A100 80GB, utilization 0.25"),
    case("vllm-v1-0101-qwen2-7b-a100-u05", "qwen2-7b", "a100-80gb-sxm", "Qwen2-7B, 1 × A100 80GB, utilization 0.5"),
    case("vllm-v1-0101-qwen2-7b-a100-tp2", "qwen2-7b", "a100-80gb-sxm", "Qwen2-7B, TP 2 × A100 80GB, one node"),
    case(
        "vllm-v1-0101-qwen2-7b-a100-40gb-tp2-two-nodes",
        "qwen2-7b",
        "a100-40gb-sxm",
        "Qwen2-7B, TP 2 × A100 40GB, two nodes",
    ),
    case(
        "vllm-v1-0101-gpt-oss-120b-a100-tp4",
        "gpt-oss-120b",
        "a100-80gb-sxm",
        "gpt-oss-120b (MoE, MXFP4), TP 4 × A100 80GB, two nodes",
    ),
    Case {
        weights: Some("fp8"),
        tp: Some(4),
        release: Some("0.9.2"),
        ..case(
            "vllm-v1-qwen3-235b-fp8-tp4-h100",
            "qwen3-235b-a22b",
            "h100-sxm",
            "Qwen3-235B-A22B FP8 (MoE), TP 4 × H100",
        )
    },
    case(
        "vllm-v1-0100-qwen3-32b-h100-tp4-u095",
        "qwen3-32b",
        "h100-sxm",
        "Qwen3-32B, TP 4 × H100, utilization 0.95, vLLM 0.10.0, native sampler",
    ),
    case(
        "vllm-v1-0100-qwen3-32b-h100-tp8-kvfp8",
        "qwen3-32b",
        "h100-sxm",
        "Qwen3-32B, TP 8 × H100, fp8 KV, vLLM 0.10.0, native sampler",
    ),
    Case {
        weights: Some("fp8"),
        // The same run's vllm_predict.log (same repository and commit) says
        // `FlashInfer is not available. Falling back to the PyTorch-native …`.
        sampler: Some(vllm::Sampler::Native),
        ..case(
            "vllm-v1-0100-qwen3-235b-fp8-h100-tp8-ep",
            "qwen3-235b-a22b",
            "h100-sxm",
            "Qwen3-235B-A22B FP8 (MoE), TP 8 × H100 with expert parallel, vLLM 0.10.0",
        )
    },
    case(
        "vllm-v1-012-qwen3-30b-a3b-h100-tp2",
        "qwen3-30b-a3b",
        "h100-sxm",
        "Qwen3-30B-A3B (MoE), TP 2 × H100, max_num_seqs 64, vLLM 0.12.0",
    ),
    // The log's max_num_batched_tokens=8192 is the ≥ 70 GiB non-A100
    // default, which comes with max_num_seqs 1024 (an A800's name): the
    // reading takes it from the log (`LoggedConfig::tier_max_num_seqs`).
    case(
        "vllm-v1-013-llama3-8b-a800-tp4",
        "llama-3-8b",
        "a100-80gb-sxm",
        "Llama-3-8B, TP 4 × 80 GB Ampere (A800 by its defaults), vLLM 0.13.0",
    ),
    case(
        "vllm-v1-026-qwen3-coder-30b-a3b-a100",
        "qwen3-30b-a3b",
        "a100-80gb-sxm",
        "Qwen3-Coder-30B-A3B (MoE, Qwen3-30B-A3B's shapes), 1 × A100 80GB, vLLM 0.26",
    ),
    case(
        "vllm-v1-0112-gpt-oss-120b-h100-u096",
        "gpt-oss-120b",
        "h100-sxm",
        "gpt-oss-120b (MXFP4 MoE), 1 × H100, utilization 0.96, vLLM 0.11.2",
    ),
    case(
        "vllm-v1-019-gpt-oss-20b-a100-u065",
        "gpt-oss-20b",
        "a100-80gb-sxm",
        "gpt-oss-20b (MXFP4 MoE), 1 × A100 80GB, utilization 0.65, vLLM 0.19.0",
    ),
    case("vllm-v1-0112-llama3-8b-h200", "llama-3-8b", "h200", "Llama-3-8B, 1 × H200, vLLM 0.11.2"),
    case(
        "vllm-v1-0110-llama31-8b-a100-40gb",
        "llama-3.1-8b",
        "a100-40gb-sxm",
        "Llama-3.1-8B, 1 × A100 40GB (inferred), vLLM 0.11.0",
    ),
    case("vllm-v1-0171-llama31-8b-a100", "llama-3.1-8b", "a100-80gb-sxm", "Llama-3.1-8B, 1 × A100 80GB, vLLM 0.17.1"),
    case(
        "vllm-v1-0110-llama31-8b-l4-u092",
        "llama-3.1-8b",
        "l4",
        "Llama-3.1-8B, 1 × L4, utilization 0.92, vLLM 0.11.0",
    ),
    case(
        "vllm-v1-0181-qwen25-32b-3090-tp4-eager",
        "qwen2.5-32b",
        "rtx-3090",
        "Qwen2.5-32B, TP 4 × RTX 3090, eager, vLLM 0.18.1",
    ),
    case(
        "vllm-v1-0112-qwen25-coder-14b-l40s",
        "qwen2.5-14b",
        "l40s",
        "Qwen2.5-Coder-14B (Qwen2.5-14B shapes), 1 × L40S, vLLM 0.11.2",
    ),
    case(
        "vllm-v1-012-qwen3-30b-a3b-rtxpro6000-eager",
        "qwen3-30b-a3b",
        "rtx-pro-6000-blackwell",
        "Qwen3-30B-A3B-2507 (MoE), 1 × RTX PRO 6000 Blackwell, eager, vLLM 0.12.0",
    ),
    // Issue 36: Gemma 3 with its vision tower, vLLM 0.19.0 on H100 at DEBUG
    // level (the same campaign): the encoder cache's profile (32 images of
    // 256 tokens) and the sampler's 1,024 rows of 262,144 logits.
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-gemma3-4b-it-h100-debug-vlm",
            "gemma-3-4b",
            "h100-sxm",
            "Gemma-3-4B-it (VLM), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-gemma3-12b-it-h100-debug-vlm",
            "gemma-3-12b",
            "h100-sxm",
            "Gemma-3-12B-it (VLM), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-gemma3-27b-it-h100-debug-vlm",
            "gemma-3-27b",
            "h100-sxm",
            "Gemma-3-27B-it (VLM), 1 × H100, vLLM 0.19.0",
        )
    },
    // Issue 36: vLLM 0.19.0 on H100 80GB HBM3 at DEBUG level, one campaign
    // (llm-d-incubation/llm-d-planner at d3121e05, each fixture's first
    // line): max_model_len 8192, utilization 0.95, prefix caching off.
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-llama31-8b-h100-tp2-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-llama31-8b-h100-tp4-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, TP 4 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-qwen25-7b-h100-tp2-debug",
            "qwen2.5-7b",
            "h100-sxm",
            "Qwen2.5-7B, TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-qwen25-7b-h100-tp4-debug",
            "qwen2.5-7b",
            "h100-sxm",
            "Qwen2.5-7B, TP 4 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("fp8"),
        ..case(
            "vllm-v1-0190-llama33-70b-fp8-h100-tp2-debug",
            "llama-3.3-70b",
            "h100-sxm",
            "Llama-3.3-70B FP8, TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("fp8"),
        ..case(
            "vllm-v1-0190-llama33-70b-fp8-h100-tp4-debug",
            "llama-3.3-70b",
            "h100-sxm",
            "Llama-3.3-70B FP8, TP 4 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("int8"),
        ..case(
            "vllm-v1-0190-llama33-70b-w8a8-h100-tp2-debug",
            "llama-3.3-70b",
            "h100-sxm",
            "Llama-3.3-70B INT8 W8A8, TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-qwen25-72b-h100-tp2-debug",
            "qwen2.5-72b",
            "h100-sxm",
            "Qwen2.5-72B, TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-kimi-dev-72b-h100-tp4-debug",
            "qwen2.5-72b",
            "h100-sxm",
            "Kimi-Dev-72B (Qwen2.5-72B shapes), TP 4 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-mixtral-8x7b-h100-tp2-debug",
            "mixtral-8x7b",
            "h100-sxm",
            "Mixtral-8x7B (MoE), TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-gpt-oss-20b-h100-tp2-debug",
            "gpt-oss-20b",
            "h100-sxm",
            "gpt-oss-20b (MXFP4 MoE), TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        // The preset is transformers' default Llama4Config; the log ran the
        // real checkpoint (10,485,760 positions, a 1,408-wide vision tower).
        config: Some("llama-4-scout-17b-16e-instruct"),
        ..case(
            "vllm-v1-0190-llama4-scout-h100-tp4-debug",
            "llama-4-scout",
            "h100-sxm",
            "Llama-4-Scout (MoE), TP 4 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-qwen3-30b-a3b-h100-debug",
            "qwen3-30b-a3b",
            "h100-sxm",
            "Qwen3-30B-A3B (MoE), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-qwen15-moe-a27b-h100-debug",
            "qwen1.5-moe-a2.7b",
            "h100-sxm",
            "Qwen1.5-MoE-A2.7B (MoE), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-deepseek-v2-lite-h100-debug",
            "deepseek-v2-lite",
            "h100-sxm",
            "DeepSeek-V2-Lite (MoE, MLA), 1 × H100, vLLM 0.19.0",
        )
    },
    // Issue 36, held out: the same 0.19.0 campaign's other single-GPU logs
    // (llm-d-incubation/llm-d-planner at d3121e05), scored after the rules
    // were set.
    Case {
        release: Some("0.19.0"),
        ..case("vllm-v1-0190-gemma2-2b-it-h100-debug", "gemma-2-2b", "h100-sxm", "Gemma-2-2B-it, 1 × H100, vLLM 0.19.0")
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-gemma2-9b-it-h100-debug",
            "gemma-2-9b",
            "h100-sxm",
            "Gemma-2-9B-it (Gemma-2-9B shapes), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-gemma2-27b-it-h100-debug",
            "gemma-2-27b",
            "h100-sxm",
            "Gemma-2-27B-it (Gemma-2-27B shapes), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case("vllm-v1-0190-gemma-7b-h100-debug", "gemma-7b", "h100-sxm", "Gemma-7B, 1 × H100, vLLM 0.19.0")
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-llama31-8b-h100-16k-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, 1 × H100, max_model_len 16384, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        // `--quantization fp8`: vLLM quantises the bf16 checkpoint as it loads.
        weights: Some("fp8"),
        ..case(
            "vllm-v1-0190-llama31-8b-qfp8-h100-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, online FP8 (`--quantization fp8`), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("fp32"),
        ..case(
            "vllm-v1-0190-llama31-8b-fp32-h100-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, `--dtype float32`, 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("fp8"),
        ..case(
            "vllm-v1-0190-qwen25-7b-fp8-dynamic-h100-debug",
            "qwen2.5-7b",
            "h100-sxm",
            "Qwen2.5-7B FP8-dynamic (compressed-tensors), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("int8"),
        ..case(
            "vllm-v1-0190-qwen25-7b-w8a8-h100-debug",
            "qwen2.5-7b",
            "h100-sxm",
            "Qwen2.5-7B INT8 W8A8 (compressed-tensors), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        // No preset: the Hub config (`tests/fixtures/checkpoints/`).
        config: Some("phi-2"),
        ..case(
            "vllm-v1-0190-phi2-h100-2k-debug",
            "phi-2",
            "h100-sxm",
            "Phi-2 (fp16), 1 × H100, max_model_len 2048, vLLM 0.19.0",
        )
    },
    // Mistral Small 3.1 (a Pixtral tower): no preset, the checkpoint's config.
    Case {
        release: Some("0.19.0"),
        config: Some("mistral-small-3.1-24b-instruct-2503"),
        ..case(
            "vllm-v1-0190-mistral-small-31-24b-h100-debug-vlm",
            "mistral-small-3.1-24b",
            "h100-sxm",
            "Mistral-Small-3.1-24B (VLM), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        // RedHatAI's W8A8 copy: the same shapes, compressed-tensors INT8 per
        // channel, which a checkpoint config reads as channel-wise int8
        // (`arch::families::checkpoint::compressed_tensors`) with the vision
        // tower in bf16 (the logged 24.07 GiB holds it so); `int8` is
        // bitsandbytes, which would quantise the tower too.
        weights: Some("gptq-int8-gcol"),
        config: Some("mistral-small-3.1-24b-instruct-2503"),
        ..case(
            "vllm-v1-0190-mistral-small-31-24b-w8a8-h100-debug-vlm",
            "mistral-small-3.1-24b",
            "h100-sxm",
            "Mistral-Small-3.1-24B INT8 W8A8 (VLM), 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("gptq-int8-gcol"),
        config: Some("mistral-small-3.1-24b-instruct-2503"),
        ..case(
            "vllm-v1-0190-mistral-small-31-24b-w8a8-h100-tp2-debug-vlm",
            "mistral-small-3.1-24b",
            "h100-sxm",
            "Mistral-Small-3.1-24B INT8 W8A8 (VLM), TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.11.0"),
        // The checkpoint's own config (the preset): its vision tower,
        // deepstack levels and M-RoPE table, which 0.11's encoder profile
        // pads and keeps.
        ..case(
            "vllm-v1-0110-qwen3-vl-30b-a3b-3090-tp4",
            "qwen3-vl-30b-a3b",
            "rtx-3090",
            "Qwen3-VL-30B-A3B (MoE VLM), TP 4 × RTX 3090, vLLM 0.11.0",
        )
    },
    case(
        "vllm-v1-012-qwen3-vl-30b-a3b-h100-tp2-seqs256",
        "qwen3-vl-30b-a3b",
        "h100-sxm",
        "Qwen3-VL-30B-A3B (MoE VLM), TP 2 × H100, max_num_seqs 256, vLLM 0.12.0",
    ),
    case(
        "vllm-v1-012-qwen3-vl-30b-a3b-h100-tp2-seqs64",
        "qwen3-vl-30b-a3b",
        "h100-sxm",
        "Qwen3-VL-30B-A3B (MoE VLM), TP 2 × H100, max_num_seqs 64, vLLM 0.12.0",
    ),
    // Issue 36, held out (sixth session): the rest of the 0.19.0 campaign's
    // distinct launches (llm-d-incubation/llm-d-planner at d3121e05), scored
    // after the rules were set. Their DEBUG lines were read when the 0.19
    // constants were measured (the single-GPU non-torch median, see
    // `NON_TORCH_SINGLE_0_19`), so they are held out from this table only.
    Case {
        release: Some("0.19.0"),
        ..case("vllm-v1-0190-qwen25-7b-h100-debug", "qwen2.5-7b", "h100-sxm", "Qwen2.5-7B, 1 × H100, vLLM 0.19.0")
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-qwen25-7b-h100-32k-debug",
            "qwen2.5-7b",
            "h100-sxm",
            "Qwen2.5-7B, 1 × H100, max_model_len 32768, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-qwen25-7b-h100-kvfp8-debug",
            "qwen2.5-7b",
            "h100-sxm",
            "Qwen2.5-7B, fp8 KV, 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case("vllm-v1-0190-llama31-8b-h100-debug", "llama-3.1-8b", "h100-sxm", "Llama-3.1-8B, 1 × H100, vLLM 0.19.0")
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-llama31-8b-h100-32k-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, 1 × H100, max_model_len 32768, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-llama31-8b-h100-kvfp8-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, fp8 KV, 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        weights: Some("fp16"),
        ..case(
            "vllm-v1-0190-llama31-8b-fp16-h100-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, `--dtype float16`, 1 × H100, vLLM 0.19.0",
        )
    },
    // Pipeline stages only: the log's `pipeline_parallel_size` puts TP × PP
    // GPUs in the plan (`scenario`); the logged KV is the first stage's.
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-llama31-8b-h100-pp2-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, PP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-llama31-8b-h100-pp4-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B, PP 4 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        ..case("vllm-v1-0190-qwen3-8b-h100-debug", "qwen3-8b", "h100-sxm", "Qwen3-8B, 1 × H100, vLLM 0.19.0")
    },
    Case {
        release: Some("0.19.0"),
        ..case(
            "vllm-v1-0190-kimi-dev-72b-h100-tp2-debug",
            "qwen2.5-72b",
            "h100-sxm",
            "Kimi-Dev-72B (Qwen2.5-72B shapes), TP 2 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        // RedHatAI's GPTQ INT4 copy (the log: `gptq_marlin`, Machete); the
        // log does not print the group size: 128 taken, which the logged
        // 5.38 GiB of weights is consistent with.
        weights: Some("gptq-int4"),
        ..case(
            "vllm-v1-0190-llama31-8b-w4a16-h100-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B INT4 W4A16 (GPTQ), `--dtype float16`, 1 × H100, vLLM 0.19.0",
        )
    },
    Case {
        release: Some("0.19.0"),
        // As the Qwen2.5-7B and Llama-3.3-70B W8A8 rows: `int8`.
        weights: Some("int8"),
        ..case(
            "vllm-v1-0190-llama31-8b-w8a8-h100-debug",
            "llama-3.1-8b",
            "h100-sxm",
            "Llama-3.1-8B INT8 W8A8 (compressed-tensors), `--dtype float16`, 1 × H100, vLLM 0.19.0",
        )
    },
    // The sweep of new logs, held out (no rule set from them): Qwen3-30B-A3B
    // AWQ (compressed-tensors W4A16, Marlin MoE) on a desktop RTX 3090, and
    // a third-party DeepSeek-R1-Distill-Qwen-32B FP8 on an L40S (its config
    // not at hand: Qwen2.5-32B's shapes; +0.24 GiB of weights unexplained).
    Case {
        weights: Some("awq-int4"),
        ..case(
            "vllm-v1-0100-qwen3-30b-a3b-awq-rtx3090",
            "qwen3-30b-a3b",
            "rtx-3090",
            "Qwen3-30B-A3B AWQ (MoE), 1 × RTX 3090, utilization 0.8, vLLM 0.10.0",
        )
    },
    Case {
        weights: Some("fp8"),
        ..case(
            "vllm-v1-0110-r1-distill-qwen32b-fp8-l40s",
            "qwen2.5-32b",
            "l40s",
            "DeepSeek-R1-Distill-Qwen-32B FP8 (Qwen2.5-32B shapes), 1 × L40S, `--dtype half`, vLLM 0.11.0",
        )
    },
    // The sweep of new logs: Qwen2.5-3B (no preset: the Hub config) fp16
    // on an RTX 4090 with one sequence, vLLM 0.10.2.
    Case {
        weights: Some("fp16"),
        config: Some("qwen2.5-3b"),
        ..case(
            "vllm-v1-0102-qwen25-3b-fp16-rtx4090-seqs1",
            "qwen2.5-3b",
            "rtx-4090",
            "Qwen2.5-3B fp16, 1 × RTX 4090, max_num_seqs 1, vLLM 0.10.2",
        )
    },
    // The sweep of new logs: Qwen3-8B fp16 on Kaggle's 2 × T4 (PCIe, custom
    // all-reduce off), eager, with `--enable-lora` (one adapter of rank 16
    // by vLLM's defaults).
    Case {
        weights: Some("fp16"),
        ..case(
            "vllm-v1-0221-qwen3-8b-fp16-lora-t4-tp2-eager",
            "qwen3-8b",
            "t4",
            "Qwen3-8B fp16, TP 2 × T4, eager, `--enable-lora`, vLLM 0.22.1",
        )
    },
    // Issue 36, held out: the same cluster as the two 0.10.1.1 Qwen2-7B TP 2
    // rows above, at utilization 0.25 (custom all-reduce off, no P2P).
    case(
        "vllm-v1-0101-qwen2-7b-a100-tp2-u025",
        "qwen2-7b",
        "a100-80gb-sxm",
        "Qwen2-7B, TP 2 × A100 80GB, one node, utilization 0.25, vLLM 0.10.1.1",
    ),
    // Twenty-fifth vLLM session: six more V1 logs of 0.10.2 and later, held
    // out (no rule set from them): a hybrid MoE at TP 2 on H200s, a block-FP8
    // MoE with expert parallel on two L40S, a Qwen3-VL MoE on an H100 NVL,
    // two FP8 checkpoints with an fp8 cache at low utilizations on a GB10,
    // and ROCm on an MI300X.
    case(
        "vllm-v1-0102-qwen3-next-80b-h200-tp2",
        "qwen3-next-80b-a3b",
        "h200",
        "Qwen3-Next-80B-A3B (hybrid MoE), TP 2 × H200, max_model_len 262144, native sampler, vLLM 0.10.2 (the \
             0.10 rules take the native sampler's fitted 34 B per logit where 0.10.2 sorts as 0.11 does, \
             38 B at 1,024 rows: 4.96 GiB of activation, the sort's 5.54, the log's 5.58; their NVSwitch \
             non-torch, fitted at TP 4 – 8, counts 1.5 GiB more than TP 2's 1.38: the two nearly cancel)",
    ),
    // The note pastes `vllm --version` (0.10.2) and its `vllm serve` command
    // (read for TP 2, expert parallel, utilization 0.95 and `--max-model-len
    // 32K`, vLLM's 32,768) above the KV lines.
    Case {
        weights: Some("fp8"),
        release: Some("0.10.2"),
        ..case(
            "vllm-v1-0102-qwen3-30b-a3b-fp8-l40s-tp2-ep",
            "qwen3-30b-a3b",
            "l40s",
            "Qwen3-30B-A3B-Instruct-2507 FP8 (MoE), TP 2 × L40S with expert parallel, utilization 0.95, vLLM 0.10.2",
        )
    },
    case(
        "vllm-v1-013-qwen3-vl-30b-a3b-h100nvl",
        "qwen3-vl-30b-a3b",
        "h100-nvl",
        "Qwen3-VL-30B-A3B (MoE VLM, a fine-tune of its shapes), 1 × H100 NVL, max_model_len 8192, vLLM 0.13.0",
    ),
    Case {
        weights: Some("fp8"),
        ..case(
            "vllm-v1-013nv-qwen25-14b-fp8dyn-gb10-u04-kvfp8",
            "qwen2.5-14b",
            "dgx-spark",
            "Qwen2.5-14B FP8-dynamic, 1 × GB10, utilization 0.4, fp8 KV, NVIDIA's vLLM 0.13.0 (26.01) (the \
                 host's share as for the Qwen3-30B-A3B run on the same machine: 3.00 GiB where the plan has 1.53)",
        )
    },
    Case {
        weights: Some("fp8"),
        ..case(
            "vllm-v1-013nv-qwen3-30b-a3b-fp8-gb10-u03-kvfp8",
            "qwen3-30b-a3b",
            "dgx-spark",
            "Qwen3-30B-A3B FP8 (MoE), 1 × GB10, utilization 0.3, fp8 KV, NVIDIA's vLLM 0.13.0 (26.01) (on a \
                 unified-memory GPU vLLM takes free memory from psutil, so the host RAM the start-up takes \
                 counts as non-torch: 3.43 GiB of activation and non-torch where the plan has 1.51)",
        )
    },
    case(
        "vllm-v1-0171-rocm-qwen25-14b-mi300x",
        "qwen2.5-14b",
        "mi300x",
        "Qwen2.5-14B, 1 × MI300X (ROCm 7.0), vLLM 0.17.1",
    ),
    Case {
        // Issue 36: SGLang 0.4.3 on 4 × L4 over PCIe (custom all-reduce off);
        // mem_fraction_static 0.85 by its server_args, TP 4 by its command.
        mem_fraction_static: Some(0.85),
        tp: Some(4),
        ..case(
            "sglang-043-qwq-32b-l4-tp4",
            "qwen2.5-32b",
            "l4",
            "QwQ-32B (Qwen2.5-32B shapes), TP 4 × L4, SGLang 0.4.3",
        )
    },
    Case {
        weights: Some("fp8"),
        tp: Some(4),
        mem_fraction_static: Some(0.93),
        ..case(
            "sglang-qwen3-235b-fp8-tp4-h100",
            "qwen3-235b-a22b",
            "h100-sxm",
            "Qwen3-235B-A22B FP8 (MoE), TP 4 × H100, SGLang",
        )
    },
    // Twenty-fourth session: more SGLang logs, each planned with the newest
    // rules and the mem_fraction_static its server_args line or source names.
    case(
        "sglang-qwen3-06b-rtx5080-2508",
        "qwen3-0.6b",
        "rtx-5080",
        "Qwen3-0.6B, 1 × RTX 5080 16 GB, default mem_fraction_static, SGLang of 2025-08",
    ),
    case(
        "sglang-041-llama31-8b-h100-docs",
        "llama-3.1-8b",
        "h100-sxm",
        "Llama-3.1-8B, 1 × H100, mem_fraction_static 0.88, SGLang 0.4.1 (its docs)",
    ),
    case(
        "sglang-042-r1-distill-qwen7b-rtx3090-wsl",
        "qwen2.5-7b",
        "rtx-3090",
        "DeepSeek-R1-Distill-Qwen-7B (Qwen2.5-7B shapes), 1 × RTX 3090 under WSL2 (Windows held memory the plan counts \
             free: 22.76 GB free before the weights), mem_fraction_static 0.88, SGLang 0.4.2",
    ),
    // Five more SGLang logs, each on the GPU its source names or its free
    // memory before the weights points to, with the mem_fraction_static its
    // server_args line names, else the default its date pins.
    case(
        "sglang-044-llama31-8b-h100-tp1-fa3",
        "llama-3.1-8b",
        "h100-sxm",
        "Llama-3.1-8B, 1 × H100 (78.59 GB free before the load), FA3, default mem_fraction_static, SGLang of 2025-03",
    ),
    case(
        "sglang-049-llama31-8b-24gb-docker-tp1",
        "llama-3.1-8b",
        "rtx-4090",
        "Llama-3.1-8B, 1 × 24 GB desktop GPU under Docker Desktop (RTX 4090 assumed), default mem_fraction_static, \
             SGLang of 2025-07 (the desktop held memory the plan counts free: 22.39 GB free before the weights, \
             the plan 23.36; the pool is exactly 7.37 − 22.39 × (1 − 0.879))",
    ),
    case(
        "sglang-054-gpt-oss-20b-a800",
        "gpt-oss-20b",
        "a100-80gb-pcie",
        "gpt-oss-20b (MXFP4 MoE), 1 × A800 80GB PCIe, mem_fraction_static 0.98, triton attention, SGLang of 2025-11",
    ),
    // 44.11 GB free before the weights on a 48 GB-class AWS GPU: an L40S
    // (44.52 GiB CUDA total), not an RTX A6000 / 6000 Ada (47.5).
    case(
        "sglang-057-llama32-3b-48gb-mfs02-hicache",
        "llama-3.2-3b",
        "l40s",
        "Llama-3.2-3B (the Instruct preset's shapes), 1 × 48 GB-class GPU (L40S by its free memory), \
             mem_fraction_static 0.2, hierarchical cache, SGLang 0.5.7 (the load took 6.13 GB, the checkpoint \
             5.98 GiB: the 0.15 GiB the other SGLang loads add too, here on a 2.7 GiB pool)",
    ),
    Case {
        weights: Some("awq-int4"),
        ..case(
            "sglang-qwen25-7b-awq-16gb-nograph",
            "qwen2.5-7b",
            "rtx-4080",
            "Qwen2.5-7B-Instruct-AWQ (int4, group 128), 1 × 16 GB GPU (unnamed; RTX 4080 assumed), \
                 mem_fraction_static 0.82, CUDA graphs off, SGLang of 2026-09 (15.08 GB free before the \
                 weights where the plan's RTX 4080 has 15.40: the desktop's share or another 16 GB card)",
        )
    },
];

fn log(name: &str) -> StartupLog {
    let path = format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    read(&text).unwrap_or_else(|| panic!("{name}: no start-up lines found"))
}

/// The launch a log and its source name.
fn scenario(c: &Case, l: &StartupLog, m: &Model, capacity: Option<u64>) -> Scenario {
    let cfg = &l.config;
    let tp = c.tp.or(cfg.tensor_parallel).unwrap_or(1).max(1);
    // Pipeline stages: TP × PP GPUs, the plan's stages.
    let pp = cfg.pipeline_parallel.unwrap_or(1).max(1);
    // vLLM's data-parallel replicas, each of TP × PP GPUs.
    let dp = cfg.data_parallel.unwrap_or(1).max(1);
    let gpu = shared::catalog::gpu(c.gpu).unwrap_or_else(|| panic!("{}: no GPU {}", c.fixture, c.gpu));
    let utilization = l
        .first(|f| match f {
            Figure::Utilization { permille } => Some(*permille as f64 / 1000.0),
            _ => None,
        })
        .map(|(_, u)| u);
    let engine = match l.engine {
        LogEngine::Vllm => {
            let release = cfg.version.as_deref().or(c.release).unwrap_or_else(|| panic!("{}: no release", c.fixture));
            let options = Engine::Vllm(vllm::Options {
                version: vllm::Version::for_release(release).unwrap_or_else(|| panic!("release {release}")),
                gpu_memory_utilization: utilization,
                max_model_len: c.max_model_len.or(cfg.max_model_len),
                max_num_batched_tokens: cfg.max_num_batched_tokens,
                max_num_seqs: c.max_num_seqs.or(cfg.max_num_seqs),
                block_size: None,
                sampler: c.sampler.or(cfg.sampler),
                mxfp4_kernel: cfg.mxfp4_kernel,
                enforce_eager: cfg.enforce_eager == Some(true),
                data_parallel_size: dp,
                enable_expert_parallel: cfg.expert_parallel == Some(true),
                ..Default::default()
            });
            // LoRA as the log's args name it, at vLLM's defaults where they
            // do not, and max_num_seqs of the tier of the logged default
            // batch: the reading `headroom diagnose` makes.
            let lora = shared::startup::LoggedConfig {
                enable_lora: cfg.enable_lora,
                max_loras: cfg.max_loras,
                max_lora_rank: cfg.max_lora_rank,
                max_num_batched_tokens: cfg.max_num_batched_tokens,
                tier_max_num_seqs: cfg.tier_max_num_seqs,
                ..Default::default()
            };
            shared::startup::configured_engine(LogEngine::Vllm, &lora, options).0
        }
        LogEngine::Sglang => Engine::Sglang(sglang::Options {
            version: sglang::Version::LATEST,
            // The case's, else what the log's server_args line names, else
            // the default of the release its date pins (none after 0.5.2).
            mem_fraction_static: c
                .mem_fraction_static
                .or(cfg.mem_fraction_static_permille.map(|p| p as f64 / 1000.0))
                .or_else(|| {
                    let gpu_mib = gpu.memory_bytes >> 20;
                    let pp = cfg.pipeline_parallel.unwrap_or(1);
                    cfg.date.and_then(|d| sglang::dated_default_mem_fraction(d, gpu_mib, tp, pp, false))
                }),
            context_length: cfg.max_model_len,
            chunked_prefill_size: None,
            ..Default::default()
        }),
        LogEngine::LlamaCpp => EngineKind::LlamaCpp.with_defaults(),
    };
    let weights =
        c.weights.map_or_else(|| m.default_format(), |w| WeightFormat::parse(w).unwrap_or_else(|e| panic!("{e}")));
    // The cache the log names (`kv_cache_dtype=fp8`), else the engine's own.
    let kv_dtype = cfg
        .kv_cache_dtype
        .as_deref()
        .filter(|k| *k != "auto")
        .and_then(|k| shared::kv::KvDtype::parse(k).ok())
        .unwrap_or_else(|| engine.kind().default_kv_dtype(m, weights));
    Scenario {
        weights,
        kv_dtype,
        gpus: vec![
            match capacity {
                Some(bytes) => GpuSlot { cuda_total_bytes: bytes, ..GpuSlot::from_catalog(gpu) },
                None => GpuSlot::from_catalog(gpu),
            };
            (tp * pp * dp) as usize
        ],
        engine,
        tp,
        ..Scenario::default()
    }
}

/// The memory CUDA reports for the GPU of a case, where the logs say: the
/// log's own `total_gpu_memory`, or, for the A100 80GB of the two
/// single-GPU Qwen2-7B runs (same cluster, same vLLM), what their two
/// utilizations imply: `(KV at 0.5 − KV at 0.25) / 0.25`, weights and
/// overheads being equal. vLLM requests `gpu_memory_utilization` × this
/// total (`torch.cuda.mem_get_info`), which is less than the nvidia-smi
/// total the GPU catalog holds.
fn cuda_total(c: &Case, l: &StartupLog) -> Option<u64> {
    if let Some((_, bytes)) = l.first(|f| match f {
        Figure::DeviceTotal { bytes } => Some(*bytes),
        _ => None,
    }) {
        return Some(bytes);
    }
    if c.gpu != "a100-80gb-sxm" {
        return None;
    }
    let kv = |name: &str| {
        log(name).first(|f| match f {
            Figure::AvailableKv { bytes, negative: false } => Some(*bytes),
            _ => None,
        })
    };
    let (_, half) = kv("vllm-v1-0101-qwen2-7b-a100-u05")?;
    let (_, quarter) = kv("vllm-v1-0101-qwen2-7b-a100-u025")?;
    Some(half.saturating_sub(quarter).saturating_mul(4))
}

/// One row of the table: the case, the logged KV figure, the prediction
/// with the catalog GPU and with the CUDA-reported total (when known), and
/// their errors in tenths of a percent.
struct Measured {
    case: &'static Case,
    logged: Amount,
    predicted: Amount,
    error: i64,
    with_cuda_total: Option<(Amount, i64)>,
}

fn kv_row(c: &Case, l: &StartupLog, m: &Model, capacity: Option<u64>, verbose: bool) -> (Amount, Amount, i64) {
    let e = estimate(m, scenario(c, l, m, capacity));
    let (rows, notes) = reconcile(l, &e);
    if verbose {
        for r in &rows {
            println!(
                "  {} GPU {} {}: logged {} predicted {}",
                c.fixture,
                r.gpu,
                r.term,
                show(r.logged),
                r.predicted.map_or_else(|| "-".into(), show)
            );
        }
        if let Some(shared::engines::EngineReport::Vllm(v)) = &e.engine_report
            && let Some(g) = v.per_gpu.first()
        {
            println!(
                "  {} model ({} rules): requested {} weights {} activation {} non-torch {} graphs {}",
                c.fixture,
                v.version.id(),
                show(Amount::Bytes(g.requested_bytes)),
                show(Amount::Bytes(g.weight_bytes)),
                show(Amount::Bytes(g.activation_bytes)),
                show(Amount::Bytes(g.non_torch_bytes)),
                show(Amount::Bytes(g.cuda_graph_bytes)),
            );
        }
    }
    let term = match l.engine {
        LogEngine::Vllm => "available KV cache memory",
        LogEngine::Sglang | LogEngine::LlamaCpp => "KV pool tokens",
    };
    // SGLang before 0.4.3 printed no `#tokens` in its KV line: its
    // `max_total_num_tokens=` is the same pool.
    let row = rows
        .iter()
        .find(|r| r.term == term)
        .or_else(|| rows.iter().find(|r| l.engine == LogEngine::Sglang && r.term == "max_total_num_tokens"))
        .unwrap_or_else(|| panic!("{}: no `{term}` row in {rows:?} ({notes:?})", c.fixture));
    let predicted = row.predicted.unwrap_or_else(|| panic!("{}: no prediction", c.fixture));
    let error = row.error_permille().unwrap_or_else(|| panic!("{}: no error", c.fixture));
    (row.logged, predicted, error)
}

fn measure() -> Vec<Measured> {
    CASES
        .iter()
        .map(|c| {
            let l = log(c.fixture);
            let m = model(c);
            let (logged, predicted, error) = kv_row(c, &l, &m, None, true);
            let with_cuda_total = cuda_total(c, &l).map(|total| {
                let (_, p, e) = kv_row(c, &l, &m, Some(total), false);
                (p, e)
            });
            Measured { case: c, logged, predicted, error, with_cuda_total }
        })
        .collect()
}

/// The case's model: its checkpoint's config where the case has one, else the preset.
fn model(c: &Case) -> Model {
    match c.config {
        Some(file) => {
            let path = format!("{}/tests/fixtures/checkpoints/{file}.json", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            Model::from_config_json(c.preset, &text).unwrap_or_else(|e| panic!("{file}: {e}"))
        }
        None => Model::preset(c.preset).unwrap_or_else(|e| panic!("{e}")),
    }
}

fn percent(permille: i64) -> String {
    format!("{}{}.{} %", if permille < 0 { "−" } else { "+" }, permille.abs() / 10, permille.abs() % 10)
}

fn show(a: Amount) -> String {
    match a {
        Amount::Bytes(b) => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        Amount::Tokens(t) => format!("{t} tokens"),
        Amount::Blocks(b) => format!("{b} blocks"),
        Amount::Hundredths(h) => format!("{}.{:02}x", h / 100, h % 100),
        Amount::Permille(p) => format!("{}.{:03}", p / 1000, p % 1000),
    }
}

/// The `q`-quantile (nearest rank) of the absolute errors.
fn quantile(errors: &[i64], q: f64) -> i64 {
    let mut abs: Vec<i64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_unstable();
    let rank = ((q * abs.len() as f64).ceil() as usize).clamp(1, abs.len());
    abs[rank - 1]
}

#[test]
fn the_kv_estimate_against_real_start_up_logs() {
    let rows = measure();
    println!("| log | launch | logged | predicted (catalog GPU) | error | predicted (CUDA total) | error |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let (cuda, cuda_error) =
            r.with_cuda_total.map_or(("—".to_owned(), "—".to_owned()), |(p, e)| (show(p), percent(e)));
        println!(
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            r.case.fixture,
            r.case.what,
            show(r.logged),
            show(r.predicted),
            percent(r.error),
            cuda,
            cuda_error
        );
    }
    let errors: Vec<i64> = rows.iter().map(|r| r.error).collect();
    let best: Vec<i64> = rows.iter().map(|r| r.with_cuda_total.map_or(r.error, |(_, e)| e)).collect();
    let (median, p90) = (quantile(&errors, 0.5), quantile(&errors, 0.9));
    let (median_cuda, p90_cuda) = (quantile(&best, 0.5), quantile(&best, 0.9));
    println!("catalog GPUs: median |error| {median}‰, 90th percentile {p90}‰ over {} logs", errors.len());
    println!("CUDA totals where known: median |error| {median_cuda}‰, 90th percentile {p90_cuda}‰");
    // The figures docs/measurements.md states; a rule change that moves them
    // must update the table there (and these bounds).
    assert!(median <= 5 && median_cuda <= 5, "median |error| {median}‰ / {median_cuda}‰");
    // 40‰ until the five SGLang logs of the 25th session (044, 049, 054,
    // 057, the AWQ one) moved the 90th percentile from 35‰ to 45‰ over 86
    // logs: two unnamed desktop GPUs with memory held before the start (049
    // +19.5 %, AWQ +4.7 %) and a 0.2 fraction's small pool (057 +6.4 %).
    // The six vLLM logs of the same session: 47‰ over 92 (the GB10's two,
    // +47.6 % and +4.8 %, count host memory as the GPU's).
    assert!(p90 <= 50 && p90_cuda <= 50, "90th percentile |error| {p90}‰ / {p90_cuda}‰");
}

/// A logged start answers what-ifs with its own figures as facts: the
/// Qwen2-7B run at utilization 0.25 (5.01 GiB left to the KV cache), asked
/// "and at 0.5?", gives what the same cluster logged at 0.5 (24.83 GiB,
/// 464,848 tokens) — the residual of the first run carries over — and the
/// launch as logged reproduces its own log.
#[test]
fn a_logged_start_answers_what_ifs_with_its_own_figures() {
    let case = |name: &str| CASES.iter().find(|c| c.fixture == name).expect("a case");
    let (low, high) = (case("vllm-v1-0101-qwen2-7b-a100-u025"), case("vllm-v1-0101-qwen2-7b-a100-u05"));
    let m = Model::preset(low.preset).expect("preset");
    let l = log(low.fixture);
    let logged = scenario(low, &l, &m, None).validate_for(&m).expect("valid");
    let all = shared::startup::what_ifs(&l, &m, &logged).expect("what-ifs");
    let as_logged = &all.rows[0];
    assert_eq!(as_logged.change, "as logged");
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    assert!((gib(as_logged.available_kv_bytes) - 5.01).abs() < 0.01, "{}", gib(as_logged.available_kv_bytes));
    // Longer contexts up to the model's 32,768 and 0.05 more utilization.
    let lens: Vec<u64> = all.rows.iter().map(|r| r.max_model_len).collect();
    assert_eq!(lens, [16_384, 32_768, 16_384], "{:?}", all.rows);
    assert!(all.rows.iter().all(|r| r.starts), "{:?}", all.rows);
    let at_half = shared::startup::what_if(&l, &m, &logged, 16_384, 0.5).expect("a what-if");
    let logged_half = log(high.fixture);
    let kv = |l: &StartupLog| {
        l.first(|f| match f {
            Figure::AvailableKv { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .map(|(_, b)| b)
        .expect("a KV line")
    };
    let error = (at_half.available_kv_bytes as f64 / kv(&logged_half) as f64 - 1.0).abs();
    println!(
        "what-if 0.25 → 0.5: {:.2} GiB against the logged {:.2} GiB",
        gib(at_half.available_kv_bytes),
        gib(kv(&logged_half))
    );
    assert!(error < 0.005, "{error}");
    assert!((at_half.kv_cache_tokens as f64 / 464_848.0 - 1.0).abs() < 0.005, "{}", at_half.kv_cache_tokens);
}

/// vLLM 0.18+'s "Graph capturing finished … took" against the plan's CUDA
/// graphs, in MiB: the logs of 0.18 and later whose figure is positive.
fn captured_graph_errors() -> Vec<(&'static str, u64, i64)> {
    CASES
        .iter()
        .filter_map(|c| {
            let l = log(c.fixture);
            let (_, logged) = l.first(|f| match f {
                Figure::CudaGraphs { bytes } if *bytes > 0 => Some(*bytes),
                _ => None,
            })?;
            let m = model(c);
            let e = estimate(&m, scenario(c, &l, &m, None));
            let Some(shared::engines::EngineReport::Vllm(v)) = &e.engine_report else { return None };
            let g = v.per_gpu.first()?;
            let release = l.config.version.as_deref().or(c.release)?;
            let mut parts = release.split('.').map(|n| n.parse::<u64>().unwrap_or(0));
            let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
            if (major, minor) < (0, 18) {
                return None;
            }
            let error = (g.cuda_graph_bytes as i64 - logged as i64) / (1 << 20);
            Some((c.fixture, logged, error))
        })
        .collect()
}

/// The 256 KiB per layer and size that fits the 0.10 – 0.17 figures misses
/// from 0.18, whose capture counts its largest batch's activations (the
/// cache is emptied first) and FlashAttention 3's split buffers: Llama-3.1-8B
/// on one H100 took 0.91 GiB, the old rule said 0.80. Over the 0.18+ logs
/// the old rule's median miss was 143 MiB (90th percentile 410).
#[test]
fn cuda_graphs_from_0_18_against_real_start_up_logs() {
    let rows = captured_graph_errors();
    for (fixture, logged, error) in &rows {
        println!("{fixture}: logged {} MiB, error {error:+} MiB", logged >> 20);
    }
    let (_, logged, error) = rows
        .iter()
        .find(|(f, ..)| *f == "vllm-v1-0190-llama31-8b-h100-debug")
        .copied()
        .expect("the 0.19 Llama-3.1-8B H100 log");
    assert!(error.unsigned_abs() * 10 <= logged >> 20, "{error} MiB off {} MiB", logged >> 20);
    let errors: Vec<i64> = rows.iter().map(|(_, _, e)| *e).collect();
    let (median, p90) = (quantile(&errors, 0.5), quantile(&errors, 0.9));
    println!("0.18+ CUDA graphs: median |error| {median} MiB, 90th percentile {p90} MiB over {} logs", rows.len());
    assert!(rows.len() >= 40, "{} logs", rows.len());
    assert!(median <= 64 && p90 <= 256, "median {median} MiB, 90th percentile {p90} MiB");
}

/// vLLM's own `Estimated CUDA graph memory` (what 0.21+ subtracts from the
/// KV budget; 0.19 logs it too, from the same `profile_cudagraph_memory`)
/// against what the plan takes for it under the 0.33-graphs rules, in MiB:
/// each case whose log prints a positive estimate, at its own launch with
/// the rules moved to 0.33-graphs (the estimate reads only the model, the
/// GPU, TP/PP and the capture sizes, which the rules share). Returns the
/// fixture, the release, the logged figure and the 0.33-graphs and
/// per-layer-rule (0.24-mm) errors.
fn graph_estimate_errors() -> Vec<(&'static str, String, u64, i64, i64)> {
    CASES
        .iter()
        .filter_map(|c| {
            let l = log(c.fixture);
            let (_, logged) = l.first(|f| match f {
                Figure::CudaGraphEstimate { bytes } if *bytes > 0 => Some(*bytes as u64),
                _ => None,
            })?;
            let release = l.config.version.clone().or(c.release.map(str::to_owned))?;
            let m = model(c);
            let taken = |version| {
                let mut s = scenario(c, &l, &m, None);
                if let Engine::Vllm(o) = &mut s.engine {
                    o.version = version;
                }
                let e = estimate(&m, s);
                let Some(shared::engines::EngineReport::Vllm(v)) = &e.engine_report else { return None };
                v.per_gpu.iter().map(|g| g.subtracted_graph_bytes).max()
            };
            let modelled = taken(vllm::Version::V0_33Graphs)?;
            let per_layer = taken(vllm::Version::V0_24Mm)?;
            let mib = |b: u64| (b as i64 - logged as i64) / (1 << 20);
            Some((c.fixture, release, logged, mib(modelled), mib(per_layer)))
        })
        .collect()
}

/// vLLM's estimate as the 0.33-graphs rules model it beats the per-layer
/// rule the older rules take for it.
#[test]
fn vllm_graph_estimate_against_real_start_up_logs() {
    let rows = graph_estimate_errors();
    for (fixture, release, logged, modelled, per_layer) in &rows {
        println!(
            "{fixture} ({release}): logged {} MiB, 0.33-graphs {modelled:+} MiB, per-layer rule {per_layer:+} MiB",
            logged >> 20
        );
    }
    let modelled: Vec<i64> = rows.iter().map(|r| r.3).collect();
    let per_layer: Vec<i64> = rows.iter().map(|r| r.4).collect();
    println!(
        "vLLM's CUDA-graph estimate: 0.33-graphs median |error| {} MiB, p90 {} MiB; per-layer rule {} / {} MiB over {} logs",
        quantile(&modelled, 0.5),
        quantile(&modelled, 0.9),
        quantile(&per_layer, 0.5),
        quantile(&per_layer, 0.9),
        rows.len()
    );
    // Over the 0.19.0 DEBUG logs and the one 0.21+ case (docs/measurements.md,
    // "vLLM 0.21+'s own CUDA-graph estimate"): 87 / 319 MiB, where the
    // per-layer rule the budget took before was 107 / 504.
    assert!(rows.len() >= 40, "{} logs", rows.len());
    let (median, p90) = (quantile(&modelled, 0.5), quantile(&modelled, 0.9));
    assert!(median <= 96 && p90 <= 336, "median {median} MiB, 90th percentile {p90} MiB");
    assert!(median < quantile(&per_layer, 0.5) && p90 < quantile(&per_layer, 0.9));
}

/// vLLM 0.28.1rc1 with the V2 model runner (a source build, the stock
/// Triton attention backend) on a 24 GB Turing card the catalog lacks,
/// set against the log's own device total (23.47 GiB): Qwen2.5-1.5B in
/// fp16, eager, utilization 0.9. KV 17.59 / 17.36 GiB (+1.3 %) under the
/// `0.33-graphs` rules; not modelled: its `Model loading took 2.98 GiB`
/// against the checkpoint's 2.88 GiB (the V2 runner's own buffers, cause
/// not found) and 0.27 GiB of non-torch memory where the plan has 0.13.
#[test]
fn a_0_28_v2_runner_log_is_planned_within_two_percent() {
    let c = Case {
        release: None,
        ..case(
            "vllm-v1-0281rc1-qwen25-15b-fp16-turing24gb-eager-v2runner",
            "qwen2.5-1.5b",
            "rtx-4090",
            "Qwen2.5-1.5B fp16, eager, V2 runner, 24 GB Turing",
        )
    };
    let l = log(c.fixture);
    assert!(l.config.version.as_deref().is_some_and(|v| v.starts_with("0.28.1rc1")), "{:?}", l.config.version);
    let m = model(&c);
    let total = cuda_total(&c, &l).unwrap_or_else(|| panic!("the log prints its device total"));
    assert_eq!(total / (1 << 20), 24033, "23.47 GiB");
    let (logged, predicted, error) = kv_row(&c, &l, &m, Some(total), false);
    assert!((0..=20).contains(&error), "{} vs {}: {error}‰", show(predicted), show(logged));
}

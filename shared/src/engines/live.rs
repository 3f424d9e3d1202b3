//! How each engine shows up on a live GPU (`crate::live`): the process
//! names it runs under, whether it takes the GPU on purpose, and the knobs a
//! finding's fix names in its own words.

use super::EngineKind;

/// The engine a process name shows: vLLM's engine core titles itself
/// `VLLM::EngineCore` (vllm/v1/engine/core.py, `setproctitle`), SGLang's
/// workers `sglang::scheduler` (sglang/srt/managers/scheduler.py), and the
/// servers' binaries keep their names. A bare `python3` shows none.
pub fn from_process_name(name: &str) -> Option<EngineKind> {
    let n = name.to_ascii_lowercase();
    if n.starts_with("vllm") {
        Some(EngineKind::Vllm)
    } else if n.starts_with("sglang") {
        Some(EngineKind::Sglang)
    } else if n.starts_with("llama-server") || n.starts_with("llama-cli") {
        Some(EngineKind::LlamaCpp)
    } else if n.starts_with("ollama") {
        Some(EngineKind::Ollama)
    } else {
        None
    }
}

/// Servers that take most of the GPU on purpose at start (vLLM's and
/// SGLang's pools sized by a utilisation fraction, llama.cpp's `--fit` that
/// keeps only 1 GiB free, Ollama's context sized by VRAM, TGI's and Triton's
/// pools): near capacity right after their load is their setting, not a
/// mistake; so is holding memory while idle.
pub fn preallocates(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    from_process_name(name).is_some() || n.starts_with("text-generation") || n.starts_with("tritonserver")
}

/// Cause 1's fix: a smaller format, in the engine's words (a Python process
/// is read as transformers).
pub fn loaded_fix(engine: Option<EngineKind>) -> &'static str {
    match engine {
        Some(EngineKind::LlamaCpp | EngineKind::Ollama) => {
            "Load a smaller quantisation (Q4_K_M is about 4.8 bits a weight), or offload fewer layers (-ngl)"
        }
        Some(EngineKind::Transformers | EngineKind::Vllm | EngineKind::Sglang) | None => {
            "Load the weights in lower precision: torch_dtype=torch.bfloat16 halves fp32; quantization_config=BitsAndBytesConfig(load_in_8bit=True) halves 16-bit again, load_in_4bit=True with bnb_4bit_quant_type=\"nf4\" quarters it"
        }
    }
}

/// Cause 2's fix: what bounds the growth.
pub fn growing_fix(engine: Option<EngineKind>) -> &'static str {
    match engine {
        Some(EngineKind::LlamaCpp | EngineKind::Ollama) => {
            "The context grows into a cache sized at start: a smaller -c (Ollama: num_ctx), or -ctk q8_0 -ctv q8_0 to halve the cache"
        }
        Some(EngineKind::Vllm | EngineKind::Sglang) => {
            "The server grows past its pool (CUDA graphs, the sampler, a new batch shape): lower --gpu-memory-utilization (SGLang: --mem-fraction-static) to leave room"
        }
        Some(EngineKind::Transformers) | None => {
            "The KV cache grows with every token: cap max_new_tokens (and truncate long prompts), generate fewer sequences at once, or quantise the cache (cache_implementation=\"quantized\")"
        }
    }
}

/// Cause 3's fix: an even split over `gpus`, each capped at `each_gib`.
pub fn split_fix(engine: Option<EngineKind>, gpus: &[u32], each_gib: u64) -> String {
    match engine {
        Some(EngineKind::LlamaCpp | EngineKind::Ollama) => {
            format!("Split by the GPUs' memory: --tensor-split {}", vec!["1"; gpus.len()].join(","))
        }
        Some(EngineKind::Transformers | EngineKind::Vllm | EngineKind::Sglang) | None => format!(
            "Balance the layers: device_map=\"auto\" (accelerate's balanced split) with max_memory={{{}}}, not device_map=\"sequential\"",
            gpus.iter().map(|g| format!("{g}: \"{each_gib}GiB\"")).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The engine's own knob for a token limit.
pub fn token_limit(engine: EngineKind, tokens: u64) -> String {
    match engine {
        EngineKind::Transformers => format!("model.generate(..., max_new_tokens={tokens})"),
        EngineKind::Vllm => format!("a request's max_tokens={tokens} (or --max-model-len)"),
        EngineKind::Sglang => format!("a request's max_new_tokens={tokens} (or --context-length)"),
        EngineKind::LlamaCpp => format!("-n {tokens} (or a smaller -c)"),
        EngineKind::Ollama => format!("num_predict {tokens} (or a smaller num_ctx)"),
    }
}

//! llama.cpp's levers in Ollama's words, for an error that came through
//! Ollama's runner: Ollama passes `num_ctx` as `-c`, `num_gpu` as `-ngl`,
//! `num_batch` as `-b` and `-ub` (this module's `launch`), and reads
//! `OLLAMA_CONTEXT_LENGTH` and `OLLAMA_FLASH_ATTENTION` from the server's
//! environment (docs/faq.md).

/// The settings, as a Modelfile line or the server's environment.
#[derive(Debug)]
pub struct Levers {
    pub fewer_layers: &'static str,
    pub smaller_quant: &'static str,
    pub half_context: &'static str,
    pub smaller_context: &'static str,
    pub half_batch: &'static str,
    pub smaller_batch: &'static str,
    pub kv_cache: &'static str,
}

pub const LEVERS: Levers = Levers {
    fewer_layers: "PARAMETER num_gpu <fewer layers>   # Ollama passes num_gpu as -ngl",
    smaller_quant: "ollama pull MODEL:TAG   # a tag of a smaller quantisation (…-q4_K_M)",
    half_context: "PARAMETER num_ctx <half of now>   # or: OLLAMA_CONTEXT_LENGTH=<half of now> ollama serve",
    smaller_context: "PARAMETER num_ctx <smaller>   # or: OLLAMA_CONTEXT_LENGTH=<smaller> ollama serve",
    half_batch: "PARAMETER num_batch 256   # with OLLAMA_FLASH_ATTENTION=1 ollama serve",
    smaller_batch: "PARAMETER num_batch <smaller>   # with OLLAMA_FLASH_ATTENTION=1 ollama serve",
    // The environment is `ollama serve`'s (envconfig/config.go): a restart
    // keeps the rest of it.
    kv_cache: "OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve   # with the rest of its environment",
};

/// The Modelfile parameter Ollama sets a llama-server flag through, if any.
pub fn parameter(llama_server_flag: &str) -> Option<&'static str> {
    match llama_server_flag {
        "-c" => Some("num_ctx"),
        "-ub" | "-b" => Some("num_batch"),
        "-ngl" => Some("num_gpu"),
        _ => None,
    }
}

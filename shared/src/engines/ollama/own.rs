//! Ollama's own engine (`ollama runner --ollama-engine`, the Go engine
//! before v0.30.0 removed it for GGML models: "Remove CGO engines, use
//! llama-server exclusively", 9db4bdbad): what its `kv cache` figure holds
//! beyond llama.cpp's cache, for reading its start-up logs. The plan runs
//! llama.cpp's rules ([`super::launch`]); this is only what the Go engine's
//! log reports differently.
//!
//! Every tensor a model's cache makes through a layer's context counts in
//! that layer's `Cache` (ml/backend/ggml/ggml.go `newTensor`:
//! `btDeviceMemory[buft].Cache[layer] += size`), and `ml/device.go` logs
//! their sum per device as `msg="kv cache"`. A hybrid model's cache
//! (kvcache/recurrent.go at v0.17.1 – v0.24.0; model/models/qwen3next/
//! cache.go and checkpoints.go at v0.15.5 – v0.17.0) keeps, beside the
//! attention layers' K and V:
//! - each recurrent layer's live state, one conv and one recurrent row per
//!   sequence (`convBuffer`, `recurrentBuffer`: F32, `maxSequences` rows),
//!   as llama.cpp's recurrent memory does;
//! - checkpoints of both for prefix-cache recovery: `checkpointCount`
//!   entries per sequence slot, each a conv and a recurrent row of F32
//!   (`ensureCheckpointConv`, `ensureCheckpointRecurrent`), all made at the
//!   worst-case reserve (`reserveCheckpointConv`/`…Recurrent` over every
//!   slot's entries) in the layer's own context, so on the layer's device.
//!
//! The KV cache type (`OLLAMA_KV_CACHE_TYPE`) changes none of it: the
//! states are always F32.
//!
//! Its `compute graph` figures are ggml-alloc's over the one worst-case
//! graph it reserves (runner/ollamarunner/runner.go `reserveWorstCaseGraph`,
//! ml/backend/ggml/ggml.go `Reserve`: `ggml_backend_sched_reserve`, then
//! `ggml_backend_sched_get_attempted_buffer_size` per backend, v0.11.10 –
//! v0.24.0), as llama.cpp's are, but not over llama.cpp's graph: the whole
//! `BatchSize` at once (no micro-batch); an output row per slot
//! (`batch.Outputs = make([]int32, s.parallel)`, where llama.cpp's reserve
//! keeps a row per token, so no `vocab × batch` logits); a scheduler made
//! without op offload (`ggml_backend_sched_new_ext(…, false, false, …)`:
//! no host weight staged on a GPU); its graph inputs in buffers of their own,
//! outside every figure (`Context.newTensor`); and each model's own Go
//! graph and tensors (gpt-oss from Ollama's library: fused `attn_qkv` and
//! `ffn_gate_up_exps`, the gate and up halves copied out with `Contiguous`,
//! model/models/gptoss/model.go; Qwen3-Next's own gated delta net). llama.cpp's
//! replay given the first three differences (tried, not kept) gives
//! 95.5 MiB for gpt-oss-120b on ROCm (121.8 logged), 116.0 for
//! Qwen3-30B-A3B Q8_0 with 30 of 48 layers on an A10 (190.5 logged; the
//! same ops as llama.cpp's `qwen3moe`, model/models/qwen3/model.go), and
//! Qwen3-Coder-Next's closed form 96 (884.1 logged): beyond 15 % on every
//! log, so a GPU's compute graph is not predicted. The CPU's, with every
//! layer on the GPUs, is the token embeddings' rows (`llamacpp::host`).

use crate::arch::Family;

/// An Ollama release, `major.minor.patch` (`version.Version`, printed as
/// `Listening on 127.0.0.1:11434 (version 0.17.1)` by server/routes.go).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Version(pub u64, pub u64, pub u64);

impl Version {
    /// `0.17.1`, `v0.17.1`, `0.17.1-rc2` or a build's `0.5.4-0-g2ddc32d-dirty`;
    /// `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim().trim_start_matches('v');
        let core = t.split(['-', '+', ' ', ')']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let (major, minor) = (parts.next()??, parts.next()??);
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Self(major, minor, patch))
    }
}

/// `num_batch` when none is set (api/types.go `DefaultOptions`, `NumBatch:
/// 512`, v0.11.10 – v0.24.0): the Go engine's whole batch, one graph.
pub const DEFAULT_NUM_BATCH: u64 = 512;

/// v0.15.5 (77eb2ca61, "model: add qwen3-next architecture"): Qwen3-Next in
/// the Go engine, its cache with 32 checkpoints (`checkpointCountDefault`,
/// model/models/qwen3next/checkpoints.go).
const QWEN3NEXT: Version = Version(0, 15, 5);
/// v0.17.1 (0ade9205c, "models: add nemotronh architecture support"): the
/// cache moved to kvcache/recurrent.go for every recurrent model (Qwen3-Next,
/// Qwen3.5, Nemotron-H, LFM2), `DefaultCheckpointCount = 24`.
const SHARED_CACHE: Version = Version(0, 17, 1);
/// v0.30.0: no Go engine for GGML models.
const NO_OWN_ENGINE: Version = Version(0, 30, 0);

/// Checkpoints per sequence slot the Go engine's cache of `family` keeps,
/// by release; `None` (the log names no release): the count of the last
/// releases that had the engine, v0.17.1 – v0.24.x.
pub fn recurrent_checkpoints(version: Option<Version>, family: Family) -> u64 {
    let recurrent = matches!(
        family,
        Family::Qwen3Next | Family::Qwen35 | Family::Qwen35Moe | Family::NemotronH | Family::Lfm2 | Family::Lfm2Moe
    );
    match version {
        _ if !recurrent => 0,
        None => 24,
        Some(v) if v >= NO_OWN_ENGINE => 0,
        Some(v) if v >= SHARED_CACHE => 24,
        Some(v) if v >= QWEN3NEXT && family == Family::Qwen3Next => 32,
        Some(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_ollama_prints_them() {
        assert_eq!(Version::parse("0.17.1"), Some(Version(0, 17, 1)));
        assert_eq!(Version::parse("v0.20.3-rc2"), Some(Version(0, 20, 3)));
        assert_eq!(Version::parse("0.5.4-0-g2ddc32d-dirty"), Some(Version(0, 5, 4)));
        assert_eq!(Version::parse("0.12"), Some(Version(0, 12, 0)));
        assert_eq!(Version::parse("0.0.0"), Some(Version(0, 0, 0)));
        assert_eq!(Version::parse("dev"), None);
    }

    /// 32 for Qwen3-Next alone from v0.15.5, 24 for every recurrent model
    /// from v0.17.1, none from v0.30.0 or for a model without state.
    #[test]
    fn checkpoints_follow_the_release() {
        let at = |v: &str, f| recurrent_checkpoints(Version::parse(v), f);
        assert_eq!(at("0.15.4", Family::Qwen3Next), 0);
        assert_eq!(at("0.15.5", Family::Qwen3Next), 32);
        assert_eq!(at("0.17.0", Family::Qwen3Next), 32);
        assert_eq!(at("0.17.0", Family::Lfm2), 0);
        assert_eq!(at("0.17.1", Family::Qwen3Next), 24);
        assert_eq!(at("0.24.0", Family::Qwen35Moe), 24);
        assert_eq!(at("0.30.0", Family::Qwen3Next), 0);
        assert_eq!(recurrent_checkpoints(None, Family::NemotronH), 24);
        assert_eq!(recurrent_checkpoints(None, Family::Llama), 0);
    }
}

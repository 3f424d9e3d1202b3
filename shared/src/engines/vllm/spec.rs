//! What `--speculative-config` adds to vLLM's budget, read from the 0.12.0
//! and 0.24.0 source:
//!
//! - **Weights.** The drafter loads inside the same `DeviceMemoryProfiler`
//!   as the model (`gpu_model_runner.py::load_model`, "Loading drafter
//!   model..."), so its bytes are part of "Model loading took". n-gram and
//!   suffix drafters have none (the 0.18.0 A/B pair of start-up logs in
//!   `tests/fixtures/startup/vllm-v1-0180-qwen3-8b-4090-48gb-eager-*`: 15.27
//!   GiB either way). MTP builds the checkpoint's `num_nextn_predict_layers`
//!   layers, each a decoder layer with `eh_proj` (2·hidden × hidden) and
//!   three norms, and shares the model's embedding and lm_head
//!   (`llm_base_proposer.py::_maybe_share_embeddings`, `_maybe_share_lm_head`).
//! - **KV.** Every attention layer of the drafter gets a KV cache spec
//!   beside the model's (`get_kv_cache_spec` walks all attention layers),
//!   same dtype and block size, in the full-attention group
//!   (`kv_cache_utils.py::get_kv_cache_groups`); with more draft tokens
//!   than layers the same layer runs again, so k does not add KV.
//! - **Profile.** The drafter's dummy run keeps the model's hidden states
//!   (`llm_base_proposer.py::dummy_run`), and the sampler's warm-up runs the
//!   rejection sampler on `torch.randn(2 × seqs, vocab)` logits beside the
//!   bonus rows' own sampler pass (`_dummy_sampler_run`, 0.12.0 and
//!   0.24.0).

use super::{Options, SpecMethod, Version};
use crate::arch::TextModel;
use crate::engines::parallel::SplitError;
use crate::plan::Plan;

/// The model layer an MTP layer is built like: the last full-attention
/// layer with a KV cache (an MoE layer in DeepSeek-V3 and Qwen3-Next).
fn template<E>(p: &Plan<'_, E>) -> Option<usize> {
    p.kv_layers.iter().rposition(|l| l.bytes_per_token > 0 && l.window.is_none())
}

/// Draft layers that hold KV beside the model's, on the last stage.
pub(super) fn draft_kv_layers<E>(p: &Plan<'_, E>, o: Options) -> u64 {
    match o.speculative.map(|s| s.method) {
        Some(SpecMethod::Mtp) if template(p).is_some() => p.model.arch.text.extra.mtp_layers,
        Some(SpecMethod::Mtp | SpecMethod::Ngram | SpecMethod::Suffix) | None => 0,
    }
}

/// Bytes per token of one draft layer's KV: the template layer's.
pub(super) fn draft_kv_bytes_per_token<E>(p: &Plan<'_, E>) -> u64 {
    template(p).and_then(|t| p.kv_layers.get(t)).map_or(0, |l| l.bytes_per_token)
}

/// `num_speculative_tokens` as vLLM resolves it: the given count, else
/// the MTP layers' own (`SpeculativeConfig.__post_init__`: `n_predict`);
/// none without a drafter.
pub(super) fn draft_tokens(text: &TextModel, o: Options) -> u64 {
    o.speculative.map_or(0, |s| s.tokens.unwrap_or(text.extra.mtp_layers))
}

/// The drafter's weights on one GPU of the last stage.
pub(super) fn draft_weight_bytes<E>(p: &Plan<'_, E>, o: Options) -> u64 {
    let layers = draft_kv_layers(p, o);
    let Some(t) = template(p).filter(|_| layers > 0) else { return 0 };
    let hidden = p.model.arch.text.hidden_size;
    let layer = p.weights.per_layer.get(t).copied().unwrap_or(0);
    // `eh_proj` is replicated on every rank (`nn.Linear` in deepseek_mtp.py,
    // `ReplicatedLinear` in qwen3_next_mtp.py); enorm, hnorm and the shared
    // head's norm.
    let own = hidden.saturating_mul(2 * hidden + 3).saturating_mul(p.bytes_per_element());
    layers.saturating_mul(layer.saturating_add(own))
}

/// Bytes the drafter's dummy run adds to the forward pass's peak of
/// `tokens` tokens: the model's hidden states, kept while the MTP layers run.
pub(super) fn draft_forward_bytes(hidden: u64, tokens: u64, bytes_per_element: u64, o: Options) -> u64 {
    match o.speculative.map(|s| s.method) {
        Some(SpecMethod::Mtp) => hidden.saturating_mul(tokens).saturating_mul(bytes_per_element),
        Some(SpecMethod::Ngram | SpecMethod::Suffix) | None => 0,
    }
}

/// Bytes per logit the rejection sampler's warm-up adds to the sampler's:
/// the `2 × seqs` rows of random logits in the logits' dtype while the bonus
/// rows are sampled (0.12.0 and 0.24.0 `_dummy_sampler_run`; the 0.10 rules'
/// warm-up, from 0.10.1, keeps one row per request and runs no second
/// sampler pass, under the sampler's own peak).
pub(super) fn rejection_bytes_per_logit(o: Options, bytes_per_element: u64) -> u64 {
    if o.speculative.is_none() {
        return 0;
    }
    match o.version {
        Version::V0 | Version::V1 | Version::V0_10 => 0,
        Version::V0_12
        | Version::V0_11Mm
        | Version::V0_11Sort
        | Version::V0_12Mm
        | Version::V0_12Sort
        | Version::V0_17Mm
        | Version::V0_16Sort
        | Version::V0_17Triton
        | Version::V0_18
        | Version::V0_19
        | Version::V0_21
        | Version::V0_33
        | Version::V0_24
        | Version::V0_19Rope
        | Version::V0_19Mm
        | Version::V0_19Alloc
        | Version::V0_24Rope
        | Version::V0_24Mm
        | Version::V0_33Graphs
        | Version::V0_34 => 2 * bytes_per_element,
    }
}

/// vLLM's refusal of a plan's drafter for a model, if any.
pub(super) fn check(o: Options, text: &TextModel) -> Result<(), SplitError> {
    let Some(s) = o.speculative else { return Ok(()) };
    let layers = text.extra.mtp_layers;
    match s.method {
        SpecMethod::Mtp if layers == 0 => Err(SplitError::NoMtpLayers),
        // More draft tokens than layers run the layers again, a whole number of times.
        SpecMethod::Mtp => match s.tokens {
            Some(tokens) if tokens > layers && tokens % layers != 0 => Err(SplitError::SpecTokens { tokens, layers }),
            _ => Ok(()),
        },
        SpecMethod::Ngram | SpecMethod::Suffix => Ok(()),
    }
}

//! Hugging Face transformers `generate`: weights, then a cache that grows
//! token by token (prompt + generated, × batch). The prefill peak depends on
//! the attention implementation; logits on the transformers version.

pub mod device_map;
mod fixes;
mod knobs;

pub use device_map::DeviceMap;
pub use fixes::{COMMANDS, Load, weight_code};
pub use knobs::KNOBS;

/// The auto class that loads a checkpoint whole: a multimodal wrapper's config
/// (`Architecture::multimodal`) needs `AutoModelForImageTextToText`, which maps every multimodal wrapper
/// Headroom reads a tower for, where `AutoModelForCausalLM` refuses several
/// (Mistral 3, Qwen-VL, InternVL, GLM-4.1V/4.5V, Kimi K2.5) and loads the
/// text model alone of others (Llama 4, Qwen3.5, Mllama), transformers 5.25.0
/// `models/auto/modeling_auto.py` (`MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`,
/// `MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES`).
pub fn auto_class(model: &crate::model::Model) -> &'static str {
    if model.arch.multimodal { "AutoModelForImageTextToText" } else { "AutoModelForCausalLM" }
}

use serde::{Deserialize, Serialize};

use super::{EngineTerms, EngineWarnings, Plan};
use crate::arch::TextModel;
use crate::explain::{Basis, thousands};
use crate::kv;
use crate::model::Model;
use crate::plan::{GpuBudget, MAX_CONCURRENCY, Placement, Search, Verdict, activations, largest, split};
use crate::state::StateRules;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Options {
    pub attention: AttentionImpl,
    pub logits: LogitsMode,
}

/// `attn_implementation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionImpl {
    /// `sdpa` or `flash_attention_2`: the seq² scores are never materialised.
    #[default]
    Sdpa,
    /// `eager`: batch × heads × seq² scores and probabilities in memory.
    Eager,
}

/// Which positions `generate` computes logits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogitsMode {
    /// transformers ≥ 4.45 (`logits_to_keep=1`): the last position only.
    #[default]
    LastToken,
    /// Older versions: every prompt position, in 16-bit then upcast to fp32.
    AllPositions,
}

impl AttentionImpl {
    /// The id links use (`attn=`), the CLI's `--attention`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Sdpa => "sdpa",
            Self::Eager => "eager",
        }
    }

    /// `attn_implementation` as transformers spells it: `flash_attention_2`
    /// and `flash_attention_3` hold what `sdpa` holds (no seq² scores).
    /// One parser for the CLI and links.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sdpa" | "flash_attention_2" | "flash_attention_3" => Ok(Self::Sdpa),
            "eager" => Ok(Self::Eager),
            _ => Err("use sdpa, flash_attention_2 or eager".into()),
        }
    }
}

impl LogitsMode {
    /// The id links use (`logits=`).
    pub fn id(self) -> &'static str {
        match self {
            Self::LastToken => "last",
            Self::AllPositions => "all",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "last" => Ok(Self::LastToken),
            "all" => Ok(Self::AllPositions),
            _ => Err("use last or all".into()),
        }
    }
}

/// transformers 5.24: `LinearAttentionLayer` keeps `conv_kernel_size`
/// columns in the model dtype (cache_utils.py); the gated-DeltaNet state
/// is computed and kept in float32 (`torch_chunk_gated_delta_rule`,
/// modeling_qwen3_next.py) and the Mamba-2 state in the model dtype.
pub(crate) fn state_rules(model: &Model, bytes_per_element: u64) -> StateRules {
    // transformers 5.25's `kimi_linear` runs the same torch delta rule in
    // float32 (`chunk_kimi_delta_attention`, modeling_kimi_linear.py).
    let deltanet = matches!(
        model.arch.text.recurrent,
        Some(crate::arch::Recurrent::GatedDeltaNet { .. } | crate::arch::Recurrent::KimiDelta { .. })
    );
    StateRules {
        conv_bytes: bytes_per_element,
        ssm_bytes: if deltanet { 4 } else { bytes_per_element },
        conv_columns_full_kernel: true,
        draft_conv_columns: 0,
    }
}

/// accelerate's `device_map="auto"`: contiguous runs of layers balanced by
/// memory (weights and the cache each stage will hold).
pub(crate) fn place(p: &Plan) -> Placement {
    let s = &p.scenario;
    let stages = s.stages();
    let costs = p.layer_costs(s.sequence_tokens(), s.concurrency);
    let mut fixed = vec![p.base_overhead(); stages];
    fixed[0] = fixed[0].saturating_add(p.weights.first);
    fixed[stages - 1] = fixed[stages - 1].saturating_add(p.weights.last);
    Placement::on_gpu(split::balance(&costs, &fixed, &p.stage_capacities()))
}

/// `device_map` places whole layers: more stages than layers leave GPUs empty.
pub(crate) fn too_many_stages(stages: u64, layers: u64) -> String {
    format!("device_map places whole layers, so {} GPU(s) would hold none", stages - layers)
}

/// Eager attention's `batch × heads × seq × seq` scores and their softmax.
pub fn eager_scores(text: &TextModel, seq: u64, batch: u64, bytes_per_element: u64, tp: u64) -> u64 {
    let heads = text.num_heads.div_ceil(tp.max(1));
    batch
        .saturating_mul(heads)
        .saturating_mul(seq)
        .saturating_mul(seq)
        .saturating_mul(bytes_per_element)
        .saturating_mul(2)
}

/// Parts of GPU `g` with `batch` sequences of `seq` tokens, in prefill (the
/// whole prompt in flight) or decode (one new token per sequence).
fn parts(p: &Plan, opts: Options, g: usize, seq: u64, batch: u64, prefill: bool) -> GpuBudget {
    let text = &p.model.arch.text;
    let stage = p.stage(g);
    let kv = kv::sequence_bytes(p.stage_kv(stage), seq, None).saturating_mul(batch);
    let in_flight = if prefill { seq.saturating_mul(batch) } else { batch };
    let mut act = 0u64;
    if !p.stage_range(stage).is_empty() {
        act = activations::layer_peak(text, in_flight, p.bytes_per_element(), p.tp());
        if prefill && opts.attention == AttentionImpl::Eager {
            act = act.saturating_add(eager_scores(text, seq, batch, p.bytes_per_element(), p.tp()));
        }
    }
    if p.is_last_stage(stage) {
        let positions = match (opts.logits, prefill) {
            (LogitsMode::AllPositions, true) => seq,
            _ => 1,
        };
        act = act.saturating_add(activations::logits(text.vocab_size, batch, positions, p.tp()));
    }
    // transformers' hybrid caches (`LinearAttentionLayer` in cache_utils.py)
    // hold one conv + recurrent state per sequence of the batch.
    let state = p.stage_state(stage).saturating_mul(batch);
    GpuBudget {
        weight_bytes: p.stage_weights(stage),
        kv_cache_bytes: kv,
        state_bytes: state,
        activation_bytes: act,
        overhead_bytes: p.base_overhead(),
    }
}

/// The larger of the prefill and end-of-generation states.
pub(crate) fn peak(p: &Plan, o: Options, g: usize, batch: u64) -> GpuBudget {
    let s = &p.scenario;
    let prefill = parts(p, o, g, s.prompt_tokens, batch, true);
    let decode = parts(p, o, g, s.sequence_tokens(), batch, false);
    if prefill.total_bytes() > decode.total_bytes() { prefill } else { decode }
}

/// The first GPU that overflows, with its shortfall.
fn overflow(p: &Plan, o: Options, seq: u64, batch: u64, prefill: bool) -> Option<(usize, u64)> {
    (0..p.scenario.gpus.len()).find_map(|g| {
        let total = parts(p, o, g, seq, batch, prefill).total_bytes();
        let cap = p.scenario.gpus[g].capacity_bytes;
        (total > cap).then(|| (g, total - cap))
    })
}

/// Whether `batch` sequences of `prompt` + `new` tokens fit through prefill and to the last token.
pub(crate) fn fits(p: &Plan, o: Options, prompt: u64, new: u64, batch: u64) -> bool {
    overflow(p, o, prompt, batch, true).is_none() && overflow(p, o, prompt.saturating_add(new), batch, false).is_none()
}

pub(crate) fn verdict(p: &Plan, o: Options, search: Search) -> Verdict {
    let s = &p.scenario;
    let b = s.concurrency;
    if let Some(v) = p.load_verdict() {
        return v;
    }
    if let Some((gpu, shortfall_bytes)) = overflow(p, o, s.prompt_tokens, b, true) {
        return Verdict::RunsOutInPrefill { gpu, shortfall_bytes };
    }
    if overflow(p, o, s.sequence_tokens(), b, false).is_some() {
        // Memory grows with the sequence: find the first token that does not fit.
        let (mut lo, mut hi) = (s.prompt_tokens, s.sequence_tokens());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if overflow(p, o, mid, b, false).is_some() { hi = mid } else { lo = mid }
        }
        let gpu = overflow(p, o, hi, b, false).map_or(0, |(g, _)| g);
        return Verdict::RunsOutAtToken { gpu, token: hi, generated: hi - s.prompt_tokens };
    }
    let (prompt, new) = (s.prompt_tokens, s.max_new_tokens);
    let most = || largest(MAX_CONCURRENCY, |n| fits(p, o, prompt, new, n));
    Verdict::Fits { max_concurrency: search.answer(b, most) }
}

/// transformers' words for the figures it decides.
pub(crate) fn terms(p: &Plan) -> EngineTerms {
    let s = &p.scenario;
    let t = &p.model.arch.text;
    EngineTerms {
        kv_cache: (crate::plan::terms::demand(p), Basis::Exact),
        state: "transformers' cache holds one state per sequence of the batch",
        activations: format!(
            "peak of one decoder layer: {} in-flight tokens at prefill × (2 × hidden {} + max(q/k/v/out, 3 × intermediate {})) × {} bytes, plus fp32 logits and scores (2 × vocab {} × 4 bytes × {} sequences); transformers generate — the bar shows the larger of the prefill and end-of-generation states",
            thousands(s.prompt_tokens.saturating_mul(s.concurrency)),
            t.hidden_size,
            t.intermediate_size,
            p.bytes_per_element(),
            thousands(t.vocab_size),
            s.concurrency
        ),
        overhead: crate::plan::terms::tp_comm_note(p),
        own: Vec::new(),
    }
}

pub(crate) fn warnings(p: &Plan) -> EngineWarnings {
    let mut setup: Vec<String> = super::gguf_warning(p).into_iter().collect();
    if p.scenario.stages() > 1 {
        setup.push("layers are split over the GPUs (device_map / pipeline): one GPU works at a time".into());
    }
    EngineWarnings { setup, fit: Vec::new() }
}

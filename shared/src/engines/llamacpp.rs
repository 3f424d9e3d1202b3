//! llama.cpp (`llama-server` / `llama-cli`): everything is allocated at
//! start-up — the offloaded layers, a KV cache for the whole `n_ctx`, and the
//! compute buffers — so a plan either loads or fails at once.
//!
//! `-c/--ctx-size` is the total context shared by `-np/--parallel` slots
//! (each slot gets `n_ctx / parallel`); `-ngl` offloads the *last* N layers
//! (N > layers also offloads the output head); the token embedding stays on
//! the CPU. Sliding-window layers keep `window × slots + n_ubatch` tokens
//! (`llama_kv_cache_iswa`).

use serde::{Deserialize, Serialize};

use crate::estimate::{CUDA_CONTEXT_BYTES, Depth, Parts, Prepared, Verdict, largest, split};
use crate::units::MIB;

/// The default headroom llama.cpp's `--fit` keeps free on each device
/// (ggml-org/llama.cpp#16653: 1024 MiB).
pub const FIT_MARGIN_BYTES: u64 = 1024 * MIB;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlashAttention {
    /// `-fa on` (the default `auto` picks it on CUDA): no KQ matrix.
    #[default]
    On,
    /// `-fa off`: the compute buffer holds `n_ctx × n_ubatch × heads` scores.
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `-c`: total context; default prompt + new tokens for every slot.
    pub n_ctx: Option<u64>,
    /// `-ngl`; default: every layer and the output head.
    pub n_gpu_layers: Option<u64>,
    /// `-np`; default: the scenario's concurrency.
    pub parallel: Option<u64>,
    /// `-ub`: the physical batch the compute buffer is sized for.
    pub n_ubatch: u64,
    pub flash_attention: FlashAttention,
}

impl Default for Options {
    fn default() -> Self {
        Self { n_ctx: None, n_gpu_layers: None, parallel: None, n_ubatch: 512, flash_attention: FlashAttention::On }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub n_ctx: u64,
    pub parallel: u64,
    pub n_ctx_per_slot: u64,
    pub n_gpu_layers: u64,
    pub layers_on_gpu: u64,
    pub output_on_gpu: bool,
    /// Weights left in system memory (token embedding and CPU layers).
    pub cpu_weight_bytes: u64,
    /// KV cache of the layers that stay on the CPU.
    pub cpu_kv_bytes: u64,
    /// The largest per-GPU compute buffer.
    pub compute_buffer_bytes: u64,
    pub fit_margin_bytes: u64,
    /// Whether every GPU keeps the `--fit` margin free.
    pub keeps_fit_margin: bool,
    pub log_lines: Vec<String>,
}

fn slots(p: &Prepared, o: Options) -> u64 {
    o.parallel.unwrap_or(p.scenario.concurrency).max(1)
}

/// The context llama.cpp allocates: `-c`, where 0 means the model's trained
/// context (`cparams.n_ctx = params.n_ctx == 0 ? hparams.n_ctx_train : …`,
/// src/llama-context.cpp, llama.cpp as vendored by llama-cpp-python 0.3.36);
/// without `-c`, the plan's sequences over its slots.
fn n_ctx(p: &Prepared, o: Options) -> u64 {
    context(p, o, slots(p, o))
}

/// [`n_ctx`] with `slots` slots.
fn context(p: &Prepared, o: Options, slots: u64) -> u64 {
    let planned = || p.scenario.sequence_tokens().saturating_mul(slots);
    match o.n_ctx {
        Some(0) => p.model.arch.text.max_position_embeddings.filter(|&n| n > 0).unwrap_or_else(planned),
        Some(n) => n,
        None => planned(),
    }
    .max(1)
}

fn gpu_layers(p: &Prepared, o: Options) -> (u64, bool) {
    let n = p.kv_layers.len() as u64;
    let ngl = o.n_gpu_layers.unwrap_or(n + 1);
    (ngl.min(n), ngl > n)
}

pub(crate) fn place(p: &mut Prepared, o: Options) {
    let n = p.kv_layers.len();
    let (offloaded, output) = gpu_layers(p, o);
    let start = n - offloaded as usize;
    let ctx = n_ctx(p, o);
    let costs: Vec<u64> = (start..n)
        .map(|i| {
            let kv = &p.kv_layers[i];
            p.weights.per_layer[i].saturating_add(kv.tokens_held(ctx).saturating_mul(kv.bytes_per_token))
        })
        .collect();
    let stages = p.scenario.stages();
    let mut fixed = vec![CUDA_CONTEXT_BYTES; stages];
    if output {
        fixed[stages - 1] = fixed[stages - 1].saturating_add(p.weights.last);
    }
    let caps: Vec<u64> = p.scenario.gpus.iter().map(|g| g.capacity_bytes).collect();
    p.ranges = split::balance(&costs, &fixed, &caps).into_iter().map(|r| r.start + start..r.end + start).collect();
    p.first_on_gpu = false;
    p.last_on_gpu = output;
}

/// Tokens a layer's cache holds for a context of `ctx` over `slots` slots.
fn held(window: Option<u64>, ctx: u64, slots: u64, ubatch: u64) -> u64 {
    match window {
        Some(w) => ctx.min(w.saturating_mul(slots).saturating_add(ubatch)),
        None => ctx,
    }
}

/// The compute buffer of one GPU (Ollama `fs/ggml/ggml.go` `GraphSize` for
/// llama-style graphs: `4 · ubatch · max(1 + 4·embd + attention, embd + vocab)`,
/// where attention is `ctx · (1 + heads)` without flash attention).
fn compute_buffer(p: &Prepared, o: Options, ctx: u64, with_output: bool) -> u64 {
    let t = &p.model.arch.text;
    let attention = match o.flash_attention {
        FlashAttention::On => 0,
        FlashAttention::Off => ctx.saturating_mul(t.num_heads.saturating_add(1)),
    };
    let layer = t.hidden_size.saturating_mul(4).saturating_add(1).saturating_add(attention);
    let output = if with_output { t.hidden_size.saturating_add(t.vocab_size) } else { 0 };
    o.n_ubatch.saturating_mul(4).saturating_mul(layer.max(output))
}

fn gpu_parts(p: &Prepared, o: Options, g: usize, ctx: u64, slots: u64) -> Parts {
    let stage = p.stage(g);
    let range = p.stage_range(stage);
    let kv = p.kv_layers[range.clone()].iter().fold(0u64, |acc, l| {
        acc.saturating_add(held(l.window, ctx, slots, o.n_ubatch).saturating_mul(l.bytes_per_token))
    });
    let has_output = p.is_last_stage(stage);
    let compute = if range.is_empty() && !has_output { 0 } else { compute_buffer(p, o, ctx, has_output) };
    // `llama_memory_recurrent`: one state cell per sequence slot
    // (`mem_size = max(1, n_seq_max)`), allocated at start-up.
    let state = p.stage_state(stage).saturating_mul(slots.max(1));
    Parts { weights: p.stage_weights(stage), kv, state, activations: compute, overhead: CUDA_CONTEXT_BYTES }
}

pub(crate) fn parts(p: &Prepared, o: Options, g: usize, batch: u64) -> Parts {
    let s = slots(p, o).max(batch);
    let ctx = context(p, o, s);
    gpu_parts(p, o, g, ctx, s)
}

fn overflow(p: &Prepared, o: Options, ctx: u64, slots: u64) -> Option<(usize, u64)> {
    (0..p.scenario.gpus.len()).find_map(|g| {
        let total = gpu_parts(p, o, g, ctx, slots).total();
        let cap = p.scenario.gpus[g].capacity_bytes;
        (total > cap).then(|| (g, total - cap))
    })
}

pub(crate) fn fits(p: &Prepared, o: Options, seq: u64, batch: u64) -> bool {
    overflow(p, o, seq.saturating_mul(batch).max(1), batch.max(1)).is_none()
}

pub(crate) fn verdict(p: &Prepared, o: Options, depth: Depth) -> Verdict {
    if let Some(v) = p.load_verdict() {
        return v;
    }
    if let Some((gpu, shortfall_bytes)) = overflow(p, o, n_ctx(p, o), slots(p, o)) {
        // Context and compute buffers are allocated at start-up too.
        return Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes };
    }
    let per_slot = n_ctx(p, o) / slots(p, o);
    Verdict::Fits {
        max_concurrency: depth
            .search(slots(p, o), || largest(crate::estimate::MAX_CONCURRENCY, |k| fits(p, o, per_slot, k))),
    }
}

/// The most layers `-ngl` can offload with everything else unchanged.
pub fn max_gpu_layers(model: &crate::model::Model, scenario: &crate::estimate::Scenario) -> Option<u64> {
    let crate::engines::Engine::LlamaCpp(o) = scenario.engine else { return None };
    let n = model.layout.num_layers as u64;
    let try_ngl = |ngl: u64| {
        let mut s = scenario.clone();
        s.engine = crate::engines::Engine::LlamaCpp(Options { n_gpu_layers: Some(ngl), ..o });
        let p = Prepared::new(model, s);
        p.load_verdict().is_none() && overflow(&p, o, n_ctx(&p, o), slots(&p, o)).is_none()
    };
    if !try_ngl(0) {
        return Some(0);
    }
    // ngl = n + 1 also offloads the output head.
    Some(largest(n + 1, try_ngl))
}

pub(crate) fn report(p: &Prepared, o: Options) -> Report {
    let ctx = n_ctx(p, o);
    let s = slots(p, o);
    let (offloaded, output) = gpu_layers(p, o);
    let gpu_weights: u64 =
        (0..p.scenario.stages()).map(|st| p.stage_weights(st)).fold(0u64, |a, b| a.saturating_add(b));
    let first_gpu_layer = p.kv_layers.len() - offloaded as usize;
    let cpu_kv = p.kv_layers[..first_gpu_layer]
        .iter()
        .fold(0u64, |acc, l| acc.saturating_add(held(l.window, ctx, s, o.n_ubatch).saturating_mul(l.bytes_per_token)));
    let per_gpu: Vec<Parts> = (0..p.scenario.gpus.len()).map(|g| gpu_parts(p, o, g, ctx, s)).collect();
    let keeps_margin = per_gpu
        .iter()
        .zip(&p.scenario.gpus)
        .all(|(parts, slot)| parts.total().saturating_add(FIT_MARGIN_BYTES) <= slot.capacity_bytes);
    let ngl = o.n_gpu_layers.unwrap_or(offloaded + 1);
    Report {
        n_ctx: ctx,
        parallel: s,
        n_ctx_per_slot: ctx / s,
        n_gpu_layers: ngl,
        layers_on_gpu: offloaded,
        output_on_gpu: output,
        cpu_weight_bytes: p.weights.per_rank.saturating_sub(gpu_weights),
        cpu_kv_bytes: cpu_kv,
        compute_buffer_bytes: per_gpu.iter().map(|x| x.activations).max().unwrap_or(0),
        fit_margin_bytes: FIT_MARGIN_BYTES,
        keeps_fit_margin: keeps_margin,
        log_lines: vec![
            format!(
                "offloaded {offloaded}/{} layers to GPU{}",
                p.kv_layers.len(),
                if output { " (and the output layer)" } else { "" }
            ),
            format!("n_ctx = {ctx}, n_ctx_per_seq = {}, n_seq_max = {s}", ctx / s),
        ],
    }
}

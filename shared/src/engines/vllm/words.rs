//! vLLM's words: the terms behind the figures its budget decides, its
//! warnings, and the flags that apply each fix.

use crate::engines::commands::{Commands, Setting, SettingKind, Shorten};
use crate::engines::{Engine, EngineTerms, EngineWarnings, Plan, Scenario};
use crate::explain::{Basis, Term, thousands};
use crate::kv::KvDtype;
use crate::model::Model;
use crate::plan::{Verdict, terms::demand};
use crate::units::{GIB, UnitSystem, decimal, decimal_short, format_bytes};

use super::{
    CUDA_GRAPH_BYTES_PER_LAYER_GRAPH, CUDA_GRAPH_BYTES_PER_LAYER_SIZE, CUDA_GRAPH_FIRST_CAPTURE_BYTES, EncoderPadding,
    EncoderProfile, Options, Report,
};
use crate::engines::ReportRow;

pub(crate) fn terms(p: &Plan, r: &Report, kv_demand_bytes: u64) -> EngineTerms {
    let t = &p.model.arch.text;
    let kv_cache = format!(
        "vLLM pre-allocates every free block: {} blocks of {} tokens; this workload needs {} for {}",
        r.num_gpu_blocks,
        r.block_size,
        format_bytes(kv_demand_bytes, UnitSystem::Binary),
        demand(p)
    );
    let kept = if r.version.moe_workspace_kept() && t.moe.is_some() { " + the MoE workspace kept" } else { "" };
    let sampler = if r.version.profile_peak_is_larger_half() {
        format!(
            "or, if larger, the sampler's {} bytes per logit of {} sequences{kept}",
            super::sampler_bytes_per_logit(
                if let Engine::Vllm(o) = p.scenario.engine {
                    o
                } else {
                    Options { version: r.version, ..Options::default() }
                },
                p.bytes_per_element(),
                r.max_num_seqs.min(r.max_num_batched_tokens),
                t.vocab_size
            ),
            thousands(r.max_num_seqs.min(r.max_num_batched_tokens))
        )
    } else {
        format!(
            "plus fp32 logits and probabilities of {} sequences",
            thousands(r.max_num_seqs.min(r.max_num_batched_tokens))
        )
    };
    let encoder = match (p.scenario.engine, &p.model.arch.vision) {
        (Engine::Vllm(o), Some(v)) => {
            let (mnbt, seqs, mml) = (r.max_num_batched_tokens, r.max_num_seqs, r.max_model_len);
            super::encoder::held(p, o, mnbt, seqs, mml).map(|(pr, held)| {
                let kind = match (pr.video, pr.items) {
                    (true, 1) => "video",
                    (true, _) => "videos",
                    (false, 1) => "image",
                    (false, _) => "images",
                };
                let mut s = format!(
                    "; or the vision tower over {} {kind} of {} patches × 2 × (hidden {} + intermediate {} ÷ TP), \
                         their {} tokens each kept",
                    pr.items,
                    thousands(pr.item.patches),
                    v.hidden_size,
                    v.intermediate_size,
                    thousands(pr.item.tokens)
                );
                let rules = o.version.encoder_profile();
                if let Some(EncoderProfile::Kept { padding, .. }) = rules {
                    s.push_str(&format!(
                        " ({} GiB) with the fp32 pixels ({} GiB)",
                        decimal(held.outputs as f64 / GIB as f64, 2),
                        decimal(held.pixels as f64 / GIB as f64, 2),
                    ));
                    if held.padded > 0 {
                        s.push_str(&format!(
                            " and their copies padded to {} rows ({} GiB)",
                            if padding == Some(EncoderPadding::Budget) { "the budget's" } else { "the largest item's" },
                            decimal(held.padded as f64 / GIB as f64, 2)
                        ));
                    }
                }
                if let Some(rules) = rules {
                    s.push_str(&format!(" (profile_run, {})", rules.read_from()));
                }
                s
            })
        }
        _ => None,
    };
    let activations = format!(
        "vLLM profile run: a dummy batch of {} tokens × 3 × (hidden {} + intermediate {}) × {} bytes (fitted to vLLM's RTX 3090 logs), {sampler}{}",
        thousands(r.max_num_batched_tokens),
        t.hidden_size,
        t.intermediate_size,
        p.bytes_per_element(),
        encoder.unwrap_or_default()
    );
    let graphs = r.per_gpu.first().map_or(0, |g| g.cuda_graph_bytes);
    let non_torch = r.per_gpu.first().map_or(0, |g| g.non_torch_bytes);
    let a2a = r.per_gpu.first().map_or(0, |g| g.all2all_bytes);
    let extensible = matches!(p.scenario.engine, Engine::Vllm(o) if o.extensible_kv_cache());
    let captured = r.version.cuda_graphs(r.max_num_seqs, r.max_num_batched_tokens);
    let per_layer_size = |per: u64| format!("{captured} graphs × {} per layer", format_bytes(per, UnitSystem::Binary));
    let rule = if r.version.empties_cache_before_capture() {
        format!(
            "{} + {} first capture + the largest batch's activations and FlashAttention 3's split buffers, fitted to \
             vLLM 0.18+ logs",
            per_layer_size(CUDA_GRAPH_BYTES_PER_LAYER_GRAPH),
            format_bytes(CUDA_GRAPH_FIRST_CAPTURE_BYTES, UnitSystem::Binary)
        )
    } else {
        format!("{}, fitted to vLLM logs", per_layer_size(CUDA_GRAPH_BYTES_PER_LAYER_SIZE))
    };
    let overhead = format!(
        " + vLLM non-torch memory {} ({}{}) + CUDA graphs {} ({rule}{})",
        format_bytes(non_torch, UnitSystem::Binary),
        r.version
            .non_torch(p.tp(), super::communicating_gpus(p), super::Board::of(&p.scenario.gpus), r.enforce_eager)
            .1,
        if a2a > 0 { ", with the all-to-all buffers" } else { "" },
        format_bytes(graphs, UnitSystem::Binary),
        if extensible {
            "; measured after capture, not estimated, since v0.34".to_owned()
        } else if r.version.subtracts_cuda_graphs() {
            format!(
                "; vLLM's estimate, taken as {} and subtracted from the KV budget since v0.21",
                per_layer_size(CUDA_GRAPH_BYTES_PER_LAYER_SIZE)
            )
        } else {
            "; outside the utilization budget before v0.21".to_owned()
        }
    );
    let mut own = Vec::with_capacity(4);
    if let Some(g) = r.per_gpu.first() {
        own.push(Term::bytes(
            "vLLM requested memory",
            g.requested_bytes,
            format!(
                "{} × gpu_memory_utilization {} (default {} for {})",
                crate::plan::terms::cuda_total(p),
                decimal_short(r.gpu_memory_utilization, 3),
                decimal_short(r.version.plan_utilization(extensible), 3),
                r.version.releases()
            ),
            Basis::EngineRule,
        ));
        let given = matches!(p.scenario.engine, Engine::Vllm(o) if o.kv_cache_memory_bytes.is_some());
        own.push(Term::bytes(
            "vLLM KV budget",
            g.available_kv_bytes,
            if given {
                "kv_cache_memory_bytes, given: no memory profile, gpu_memory_utilization unused (gpu_worker.py)"
            } else if extensible {
                "the extensible KV cache, measured after warmup and CUDA graphs: min(requested, CUDA total − the \
                 CUDA context and TP's buffers − margin) − weights − non-torch − CUDA graphs − activation peak \
                 (0.34 extensible_kv_cache.py)"
            } else {
                "requested − weights − profiled activation peak − non-torch − CUDA graphs (0.21+ only)"
            }
            .to_string(),
            Basis::EngineRule,
        ));
    }
    // The first GPU's, as the other terms.
    let offloaded = if let Engine::Vllm(o) = p.scenario.engine { super::offloaded_bytes(p, o, p.stage(0)) } else { 0 };
    if offloaded > 0 {
        own.push(Term::bytes(
            "vLLM weights in host memory",
            offloaded,
            "--cpu-offload-gb: the decoder layers' parameters moved to pinned host memory, read over PCIe every \
             step, up to the limit and the layers' own bytes (offloader/uva.py); not in the GPU's weights"
                .to_string(),
            Basis::EngineRule,
        ));
    }
    if let Some(g) = r.per_gpu.first().filter(|g| g.margin_bytes > 0) {
        own.push(Term::bytes(
            "vLLM KV cache margin",
            g.margin_bytes,
            format!(
                "kept free beside the activation peak: max({} GiB, ¾ × the peak) (0.34 extensible_kv_cache.py, \
                 KV_CACHE_MARGIN_FLOOR_BYTES and KV_CACHE_MARGIN_FRACTION)",
                super::extensible::margin_floor(super::plan_on_rocm(p)) / GIB
            ),
            Basis::EngineRule,
        ));
    }
    if let Some(g) = r.per_gpu.first().filter(|g| g.buffer_bytes > 0) {
        own.push(Term::bytes(
            "vLLM buffers built with the model",
            g.buffer_bytes,
            "rotary cos/sin tables, positions × head dim (rotary_embedding/base.py; M-RoPE × 4 positions, \
             mrope.py), and on 0.11 – 0.17 Qwen3-VL's deepstack inputs, levels × max_num_batched_tokens × hidden \
             (qwen3_vl.py), in the weights"
                .to_string(),
            Basis::EngineRule,
        ));
    }
    if let Some(g) = r.per_gpu.first().filter(|g| g.block_slack_bytes > 0) {
        own.push(Term::bytes(
            "vLLM weights' allocator blocks",
            g.block_slack_bytes,
            "tensors of 10 MiB+ in 2 MiB-rounded blocks that keep ≤ 1 MiB left over (PyTorch's caching \
             allocator), in the weights"
                .to_string(),
            Basis::EngineRule,
        ));
    }
    if let Some(g) = r.per_gpu.first().filter(|g| g.lora_bytes > 0) {
        own.push(Term::bytes(
            "vLLM LoRA buffers",
            g.lora_bytes,
            format!("{} × rank {} × LoRA layers' in + out widths", r.max_loras, r.max_lora_rank),
            Basis::EngineRule,
        ));
    }
    if let (Some(g), Engine::Vllm(Options { speculative: Some(spec), .. })) = (r.per_gpu.last(), p.scenario.engine) {
        own.push(Term::bytes(
            "vLLM drafter weights",
            g.draft_bytes,
            format!(
                "--speculative-config {}: {} (load_model, 0.24.0)",
                spec.text(),
                if g.draft_bytes > 0 {
                    format!("{} MTP layer(s) like the last one, with eh_proj, in weights and KV", t.extra.mtp_layers)
                } else {
                    "no draft weights or KV".into()
                }
            ),
            Basis::EngineRule,
        ));
    }
    if let Engine::Vllm(o) = p.scenario.engine {
        parallel_terms(p, r, o, &mut own);
    }
    own.push(Term::count(
        "vLLM GPU blocks",
        r.num_gpu_blocks,
        format!("KV budget ÷ (block of {} tokens × layers per group × per-layer page), min over GPUs", r.block_size),
        Basis::EngineRule,
    ));
    own.push(Term::tokens(
        "vLLM KV cache size",
        r.kv_cache_tokens,
        format!(
            "{} blocks ÷ KV groups × {} tokens per block; vLLM's \"maximum concurrency\" {}x counts requests \
             of max_model_len ({} tokens), while the plan's concurrent sequences count sequences of your {} \
             tokens (capped by max_num_seqs {})",
            r.num_gpu_blocks,
            r.block_size,
            decimal(r.max_concurrency, 2),
            thousands(r.max_model_len),
            thousands(p.scenario.sequence_tokens()),
            r.max_num_seqs
        ),
        Basis::EngineRule,
    ));
    EngineTerms {
        kv_cache: (kv_cache, Basis::EngineRule),
        state: "vLLM keeps each request's state in one block per state group of the shared pool (page padded to the attention page)",
        activations,
        overhead,
        own,
    }
}

/// What `--data-parallel-size` and `--enable-expert-parallel` change.
fn parallel_terms(p: &Plan, r: &Report, o: Options, own: &mut Vec<Term>) {
    if o.data_parallel_size > 1 {
        own.push(Term::count(
            "vLLM data-parallel replicas",
            o.data_parallel_size,
            format!(
                "engine cores of {} GPU(s) each (EngineCore_DP0 …), each profiling and sizing its own pool: the blocks \
                 below are one replica's, the requests spread over them (config/parallel.py, v1/engine/core.py, 0.19.0)",
                super::replica_gpus(p)
            ),
            Basis::EngineRule,
        ));
    }
    let Some(m) = p.model.arch.text.moe else { return };
    if let (Some(backend), Some(g)) = (o.all2all_backend, r.per_gpu.first().filter(|g| g.all2all_bytes > 0)) {
        own.push(Term::bytes(
            "vLLM all-to-all buffers",
            g.all2all_bytes,
            format!(
                "--all2all-backend {}: DeepEP's NVLink buffer (VLLM_DEEPEP_BUFFER_SIZE_MB 1,024){}, made after the \
                 weights outside PyTorch (all2all.py, 0.19.0; DeepEP LowLatencyLayout)",
                backend.id(),
                match backend {
                    super::All2All::DeepepLowLatency => {
                        " and its RDMA buffer for 256 tokens per rank to every expert and back, two halves"
                    }
                    _ => " and, across nodes, an RDMA buffer as large",
                }
            ),
            Basis::EngineRule,
        ));
    }
    let split = p.sharding().experts;
    if split.ranks == 1 && o.data_parallel_size > 1 {
        let ranks = split.shards;
        own.push(Term::count(
            "vLLM expert shards",
            ranks,
            format!(
                "each of the {} experts sharded over DP {} × TP {} ranks: the MoE layers span the replicas, \
                 attention stays one replica's, and each rank's experts take every replica's tokens \
                 (fused_moe/config.py FusedMoEParallelConfig.make, all2all.py, 0.19.0)",
                m.num_experts,
                o.data_parallel_size,
                p.tp()
            ),
            Basis::EngineRule,
        ));
    }
    if split.ranks > 1 {
        let ranks = split.ranks;
        let placed = split.placed(m.num_experts);
        let (most, extra) = (placed.div_ceil(ranks.max(1)), placed % ranks.max(1));
        let spread = match extra {
            0 => format!("{most} each"),
            n => format!("{most} on the first {n}, {} on the rest", most - 1),
        };
        own.push(Term::count(
            "vLLM experts per GPU",
            most,
            format!(
                "{} experts{} whole over DP {} × TP {} = {ranks} ranks ({spread}), each at its full width \
                 (--enable-expert-parallel: fused_moe/config.py FusedMoEParallelConfig.make, layer.py \
                 determine_expert_map, 0.19.0)",
                m.num_experts,
                if split.redundant > 0 {
                    format!(" and {} redundant copies (EPLB)", split.redundant)
                } else {
                    String::new()
                },
                o.data_parallel_size,
                p.tp(),
            ),
            Basis::EngineRule,
        ));
    }
}

/// `max_concurrency`: what the KV cache holds of the scenario's sequences.
pub(crate) fn warnings(p: &Plan, verdict: Verdict, max_concurrency: u64) -> EngineWarnings {
    let s = &p.scenario;
    let mut fit = Vec::new();
    if matches!(verdict, Verdict::Fits { max_concurrency } if s.concurrency > max_concurrency) {
        fit.push(format!(
            "{} concurrent requests asked, {} fit in the KV cache: vLLM queues or preempts the rest",
            s.concurrency, max_concurrency
        ));
    }
    let mut setup: Vec<String> = crate::engines::gguf_warning(p).into_iter().collect();
    let offloaded = if let Engine::Vllm(o) = s.engine { super::offloaded_bytes(p, o, p.stage(0)) } else { 0 };
    if offloaded > 0 {
        setup.push(format!(
            "--cpu-offload-gb: {} of each GPU's weights are read from host memory over PCIe at every step; the speed \
             figures leave that out",
            format_bytes(offloaded, UnitSystem::Binary)
        ));
    } else if matches!(s.engine, Engine::Vllm(o) if o.cpu_offload_gb.is_some_and(|g| g > 0.0)) {
        setup.push("--cpu-offload-gb: on one memory pool for the CPU and the GPU, host memory is the GPU's, so it saves nothing".into());
    }
    EngineWarnings { setup, fit }
}

/// vLLM's flags; FP8 is its cheapest KV cache.
pub const COMMANDS: Commands = Commands {
    cheaper_kv_dtype: KvDtype::Fp8,
    kv_dtype: launch,
    shorten: Shorten::Context(launch),
    // The plan carries the cap (`Engine::capped_sequences`).
    concurrency: |model, t, repo, _| launch(model, t, repo),
    more_gpus_are_tensor_parallel: true,
    more_gpus: |model, t, repo, _| launch(model, t, repo),
    weights: launch,
    settings,
    adjusts: crate::engines::commands::no_adjustment,
    launch: Some(launch),
};

/// `vllm serve` for a plan: every flag it depends on that differs from
/// vLLM's default (vllm/engine/arg_utils.py `EngineArgs`): the checkpoint or
/// in-flight quantisation of its format, the context, TP/PP, utilisation,
/// KV cache dtype and sequences at once.
pub(crate) fn launch(model: &Model, s: &Scenario, repo: &str) -> String {
    let (checkpoint, quant) = crate::engines::commands::checkpoint_for(model, s.weights, repo);
    // Past the model's own length vLLM refuses to start unless told to
    // (0.34 config/model.py `_get_and_verify_max_len`: "User-specified
    // max_model_len … is greater than the derived max_model_len", unless
    // `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`). The derived length can be longer
    // (a linear or dynamic RoPE factor); the variable is harmless there.
    let long = crate::engines::commands::past_model_length(model, s.engine.asked_context());
    let mut cmd = String::from(if long { "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 " } else { "" });
    // Before 0.12 the all-to-all backend is the environment's
    // (`VLLM_ALL2ALL_BACKEND`, envs.py; `--all2all-backend` is in the
    // 0.12.0 wheel's arg_utils.py, not in 0.11.0's).
    // A backend the release lacks runs as its default (`setting_refusal`).
    if let Engine::Vllm(o) = s.engine
        && let Some(backend) = o.all2all_backend.filter(|_| !o.version.all2all_flag())
        && super::setting_refusal(o).is_none()
    {
        cmd.push_str(&format!("VLLM_ALL2ALL_BACKEND={} ", backend.id()));
    }
    cmd.push_str(&format!("vllm serve {checkpoint}"));
    let mut flag = |f: String| {
        cmd.push(' ');
        cmd.push_str(&f);
    };
    if let Some(q) = quant {
        flag(q.to_owned());
    }
    let Engine::Vllm(o) = s.engine else { return cmd };
    if let Some(len) = o.max_model_len {
        flag(format!("--max-model-len {len}"));
    }
    if s.tp > 1 {
        flag(format!("--tensor-parallel-size {}", s.tp));
    }
    if s.stages() > 1 {
        flag(format!("--pipeline-parallel-size {}", s.stages()));
    }
    if o.data_parallel_size > 1 {
        flag(format!("--data-parallel-size {}", o.data_parallel_size));
    }
    if o.enable_expert_parallel {
        flag("--enable-expert-parallel".into());
    }
    if let Some(backend) = o.all2all_backend.filter(|_| o.version.all2all_flag()) {
        flag(format!("--all2all-backend {}", backend.id()));
    }
    // `--eplb-config` from 0.10.2; 0.10.0 – 0.11.0 take `--num-redundant-experts`
    // (arg_utils.py of each wheel; 0.11.0 as deprecated), which 0.12.0 dropped.
    if o.num_redundant_experts > 0 && o.version.eplb_config_flag() {
        flag(format!("--enable-eplb --eplb-config '{{\"num_redundant_experts\": {}}}'", o.num_redundant_experts));
    } else if o.num_redundant_experts > 0 {
        flag(format!("--enable-eplb --num-redundant-experts {}", o.num_redundant_experts));
    }
    if let Some(u) = o.gpu_memory_utilization {
        flag(format!("--gpu-memory-utilization {}", crate::units::shortest(u)));
    }
    match s.kv_dtype {
        KvDtype::Fp8 => flag("--kv-cache-dtype fp8".into()),
        KvDtype::Int8 => flag("--kv-cache-dtype int8_per_token_head".into()),
        // `auto`: the weights' 16- or 32-bit type; vLLM keeps none of the
        // rest, which the verdict says (`Engine::kv_refusal`).
        KvDtype::Bf16 | KvDtype::F16 | KvDtype::F32 | KvDtype::Int4 | KvDtype::Q8_0 | KvDtype::Q4_0 => {}
    }
    if let Some(n) = o.max_num_seqs {
        flag(format!("--max-num-seqs {n}"));
    }
    if let Some(n) = o.max_num_batched_tokens {
        flag(format!("--max-num-batched-tokens {n}"));
    }
    if let Some(b) = o.block_size {
        flag(format!("--block-size {b}"));
    }
    if o.max_loras > 0 {
        flag(format!("--enable-lora --max-loras {}", o.max_loras));
        if o.max_lora_rank != super::DEFAULT_MAX_LORA_RANK {
            flag(format!("--max-lora-rank {}", o.max_lora_rank));
        }
    }
    if let Some(n) = o.kv_cache_memory_bytes {
        flag(format!("--kv-cache-memory-bytes {n}"));
    }
    if o.no_extensible_kv_cache {
        flag("--no-enable-extensible-kv-cache".into());
    }
    if o.enforce_eager {
        flag("--enforce-eager".into());
    }
    if let Some(gb) = o.cpu_offload_gb.filter(|g| *g > 0.0) {
        flag(format!("--cpu-offload-gb {}", crate::units::shortest(gb)));
    }
    if !o.mm_limits.is_default() {
        flag(format!("--limit-mm-per-prompt '{}'", o.mm_limits.json()));
    }
    if let Some(spec) = o.speculative {
        flag(format!("--speculative-config '{}'", spec.json()));
    }
    cmd
}

fn settings(_: &Model, s: &Scenario, _: &str) -> Vec<Setting> {
    let Engine::Vllm(o) = s.engine else { return Vec::new() };
    let current = o.utilization();
    // 0.34's extensible cache measures what is free: a utilization below 1.0
    // only withholds memory from it, and its start-up warning says to leave
    // the flag unset unless something vLLM does not see uses the GPU
    // (`extensible_kv_cache.py::measure_kv_cache_blocks`).
    if o.extensible_kv_cache() && current < 1.0 {
        let mut t = s.clone();
        t.engine = Engine::Vllm(Options { gpu_memory_utilization: None, ..o });
        return vec![Setting {
            kind: SettingKind::HigherUtilization,
            title: format!(
                "Leave --gpu-memory-utilization unset: vLLM 0.34 measures the memory free after warmup and gives the \
                 KV cache all of it, not {} % of the GPU",
                decimal(current * 100.0, 0)
            ),
            scenario: t,
            code: "vllm serve ...   # without --gpu-memory-utilization, if nothing else uses the GPU".into(),
        }];
    }
    if current >= 0.95 {
        return Vec::new();
    }
    let mut t = s.clone();
    t.engine = Engine::Vllm(Options { gpu_memory_utilization: Some(0.95), ..o });
    vec![Setting {
        kind: SettingKind::HigherUtilization,
        title: format!("Let vLLM use 95 % of the GPU instead of {} %", decimal(current * 100.0, 0)),
        scenario: t,
        code: "vllm serve ... --gpu-memory-utilization 0.95   # only if nothing else uses the GPU".into(),
    }]
}

/// The bytes a plan needs on a GPU against what vLLM may use there: the
/// fixed parts and the KV cache of the requested work at `max_model_len`,
/// against `gpu_memory_utilization` × capacity plus the overhead kept outside
/// it; with the extensible KV cache (0.34+), against the smaller of that
/// share and the device less the margin it keeps free beyond the
/// `activation` peak.
pub(crate) fn need_and_usable(
    p: &Plan,
    o: Options,
    fixed: u64,
    per_token: u64,
    parts: (u64, u64),
    cap: f64,
) -> (u64, f64) {
    let (overhead, activation) = parts;
    let s = &p.scenario;
    let len = o.max_model_len.or(p.model.arch.text.max_position_embeddings).unwrap_or(s.sequence_tokens());
    let util = o.utilization();
    let work = per_token.saturating_mul(len.max(s.sequence_tokens())).saturating_mul(s.concurrency);
    let usable = if o.extensible_kv_cache() {
        // `measure_kv_cache_bytes`: within the requested share, and within
        // what is free at the snapshot less the margin; the need counts the
        // CUDA context in its overhead, so both sides do.
        let margin = super::extensible::margin(activation, super::plan_on_rocm(p)) as f64;
        let context = crate::plan::CUDA_CONTEXT_BYTES as f64;
        let at_snapshot = p.base_overhead() as f64;
        (cap * util + context).min(cap - (at_snapshot - context) - margin)
    } else {
        cap * util + overhead as f64
    };
    (fixed.saturating_add(work), usable)
}

impl Report {
    /// vLLM's own start-up figures.
    pub(crate) fn rows(&self) -> Vec<ReportRow> {
        vec![
            ReportRow::new("num-gpu-blocks", "# GPU blocks", thousands(self.num_gpu_blocks), self.num_gpu_blocks),
            ReportRow::new(
                "kv-cache-tokens",
                "GPU KV cache size",
                format!("{} tokens", thousands(self.kv_cache_tokens)),
                self.kv_cache_tokens,
            ),
            ReportRow::new(
                "vllm-max-concurrency",
                "Maximum concurrency",
                format!(
                    "{}x for {} tokens per request",
                    decimal(self.max_concurrency, 2),
                    thousands(self.max_model_len)
                ),
                // `shortest`, not `{}`: the same text without the float
                // formatter (9.6 kB of wasm) in the page's first load.
                crate::units::shortest(self.max_concurrency),
            ),
            ReportRow::new(
                "largest-max-model-len",
                "Largest max_model_len that starts",
                self.largest_max_model_len.map_or_else(|| "—".into(), thousands),
                self.largest_max_model_len.unwrap_or(0),
            ),
        ]
    }
}

//! llama.cpp's fixes: the most layers `-ngl` can offload, the smallest
//! `--n-cpu-moe` that loads, and the exact `llama-server` command lines.

use super::super::commands::{Commands, Setting, SettingKind, Shorten};
use super::super::{Engine, EngineAnswer, EnginePlan, Scenario, ValidScenario, transformers};
use super::fit::{Fit, predict};
use super::{CacheType, FitMode, FlashAttention, Options, SplitMode, TensorOverrides, TensorSplit, Tensors};

use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;
use crate::plan::largest;

/// Whether llama.cpp loads `s` (whose engine is llama.cpp with the options
/// being tried): one plan, its devices computed once, of the tensors the
/// solver built once for all its candidates.
fn loads(tensors: &Tensors, s: ValidScenario) -> bool {
    EnginePlan::with_tensors(s, tensors).llamacpp_loads().unwrap_or(false)
}

/// [`max_gpu_layers`] as `headroom estimate --solve max-gpu-layers` says it.
pub fn gpu_layers_answer(model: &Model, scenario: &Scenario) -> EngineAnswer {
    match max_gpu_layers(model, scenario) {
        Some(n) => EngineAnswer {
            value: Some(n),
            choice: None,
            found: n > 0,
            explanation: format!(
                "-ngl {n} offloads {} of {} layers{}",
                n.min(model.layout.num_layers as u64),
                model.layout.num_layers,
                if n > model.layout.num_layers as u64 { " and the output head" } else { "" }
            ),
        },
        None => EngineAnswer::none("only for --engine llama.cpp"),
    }
}

/// [`min_cpu_moe`] as `headroom estimate --solve min-cpu-moe` says it, with
/// the `llama-server` line that loads it.
pub fn cpu_moe_answer(model: &Model, scenario: &Scenario) -> EngineAnswer {
    match min_cpu_moe(model, scenario) {
        Some(Some(n)) => EngineAnswer {
            value: Some(n),
            choice: Some(server_command(model, &with_cpu_moe(scenario, n))),
            found: true,
            explanation: if n == 0 {
                "the plan loads with every routed expert on the GPU (--n-cpu-moe 0)".into()
            } else {
                format!("--n-cpu-moe {n} loads; {} does not", n - 1)
            },
        },
        Some(None) => {
            EngineAnswer::none("even with every layer's routed experts on the CPU (--cpu-moe) the plan does not load")
        }
        None => EngineAnswer::none("only for --engine llama.cpp and a model with routed experts"),
    }
}

/// The most layers `-ngl` can offload with everything else unchanged.
pub fn max_gpu_layers(model: &Model, scenario: &Scenario) -> Option<u64> {
    let Engine::LlamaCpp(o) = scenario.engine else { return None };
    let n = model.layout.num_layers as u64;
    let tensors = Tensors::new(model, scenario.weights);
    let try_ngl = |ngl: u64| {
        let mut s = scenario.clone();
        s.engine = Engine::LlamaCpp(Options { n_gpu_layers: Some(ngl), ..o });
        // `-ngl` is not checked: what `scenario` passed, this passes.
        let Ok(s) = s.validate() else { return false };
        loads(&tensors, s)
    };
    if !try_ngl(0) {
        return Some(0);
    }
    // ngl = n + 1 also offloads the output head.
    Some(largest(n + 1, try_ngl))
}

/// `s` with `--n-cpu-moe n` (unchanged for another engine).
pub fn with_cpu_moe(s: &Scenario, n: u64) -> Scenario {
    let mut t = s.clone();
    if let Engine::LlamaCpp(o) = &mut t.engine {
        o.n_cpu_moe = n;
    }
    t
}

/// Whether the model has routed experts that `--n-cpu-moe` can move.
fn has_routed_experts(model: &Model) -> bool {
    model.layout.groups.iter().any(|g| matches!(g.role, crate::arch::Role::ExpertUp | crate::arch::Role::ExpertDown))
}

/// The smallest `--n-cpu-moe` with which the plan loads, everything else
/// unchanged: `None` for another engine or a model without routed
/// experts, `Some(None)` when even every layer's experts on the CPU do not
/// fit. More experts on the CPU never need more GPU memory, so the answer
/// is a boundary: N loads and N − 1 does not.
pub fn min_cpu_moe(model: &Model, scenario: &Scenario) -> Option<Option<u64>> {
    let Engine::LlamaCpp(o) = scenario.engine else { return None };
    if !has_routed_experts(model) {
        return None;
    }
    let n = model.layout.num_layers as u64;
    let tensors = Tensors::new(model, scenario.weights);
    let fits_with = |k: u64| {
        let mut s = scenario.clone();
        let o = Options { n_cpu_moe: k, ..o };
        s.engine = Engine::LlamaCpp(o);
        let Ok(s) = s.validate() else { return false };
        loads(&tensors, s)
    };
    if !fits_with(n) {
        return Some(None);
    }
    // The first k in 0..=n that loads.
    let (mut lo, mut hi) = (0u64, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits_with(mid) { hi = mid } else { lo = mid + 1 }
    }
    Some(Some(lo))
}

/// The GGUF file a plan loads, as its command names it: `model-Q4_K_M.gguf`
/// for a GGUF quantisation, else a placeholder naming the model (a checkpoint
/// in another format needs converting; no file name is invented for it).
pub(crate) fn gguf_file(model: &Model, weights: WeightFormat) -> String {
    match weights {
        WeightFormat::Gguf(t) => format!("model-{}.gguf", t.id().to_ascii_uppercase()),
        _ => format!("<a GGUF of {}>", model.name),
    }
}

/// The `llama-server` command line of a plan: every knob that differs from
/// llama.cpp's default (common/common.h, common/arg.cpp as vendored by
/// llama-cpp-python 0.3.36).
pub fn server_command(model: &Model, s: &Scenario) -> String {
    let Engine::LlamaCpp(o) = s.engine else { return String::new() };
    let mut cmd = format!("llama-server -m {}", gguf_file(model, s.weights));
    let layers = model.layout.num_layers as u64;
    // Only a -ngl the plan sets: any -ngl makes --fit give up
    // (common/fit.cpp "n_gpu_layers already set by user"), and every layer
    // is llama.cpp's default.
    // Builds before b6325 keep every layer on the CPU and flash attention
    // off unless asked, and take `-fa` bare (mainline only: ik's flags are
    // its own). ik_llama.cpp keeps every layer on the CPU unless asked
    // before its build 4761 ([`super::ik::NGL_AUTO_BUILD`]).
    let old = o.fork == super::Fork::Mainline && o.build.is_some_and(|b| b < super::OFFLOAD_DEFAULT_BUILD);
    let ik_cpu = o.fork == super::Fork::Ik && o.build.is_some_and(|b| b < super::ik::NGL_AUTO_BUILD);
    match o.n_gpu_layers {
        Some(ngl) => cmd.push_str(&format!(" -ngl {ngl}")),
        None if old || ik_cpu => cmd.push_str(" -ngl 999"),
        None => {}
    }
    let slots = o.parallel.unwrap_or(s.concurrency).max(1);
    let ctx = o.n_ctx.unwrap_or_else(|| s.sequence_tokens().saturating_mul(slots));
    cmd.push_str(&format!(" -c {ctx} -np {slots}"));
    if o.n_batch != super::DEFAULT_N_BATCH {
        cmd.push_str(&format!(" -b {}", o.n_batch));
    }
    if o.n_ubatch != super::DEFAULT_N_UBATCH {
        cmd.push_str(&format!(" -ub {}", o.n_ubatch));
    }
    cmd.push_str(flash_attention_flag(o));
    let k = o.cache_type_k.or(CacheType::of(s.kv_dtype));
    let v = o.cache_type_v.or(k);
    for (flag, t) in [("-ctk", k), ("-ctv", v)] {
        if let Some(t) = t.filter(|&t| t != CacheType::F16) {
            cmd.push_str(&format!(" {flag} {}", t.id()));
        }
    }
    if o.n_cpu_moe >= layers && o.n_cpu_moe > 0 {
        cmd.push_str(" --cpu-moe");
    } else if o.n_cpu_moe > 0 {
        cmd.push_str(&format!(" --n-cpu-moe {}", o.n_cpu_moe));
    }
    for (on, flag) in [(o.no_kv_offload, " -nkvo"), (o.kv_unified, " --kv-unified"), (o.swa_full, " --swa-full")] {
        if on {
            cmd.push_str(flag);
        }
    }
    if !o.tensor_overrides.is_empty() {
        cmd.push_str(&format!(" -ot {}", shell_quote(o.tensor_overrides.as_str())));
    }
    if o.split_mode != SplitMode::Layer {
        cmd.push_str(&format!(" -sm {}", o.split_mode.id()));
    }
    if o.tensor_split.is_set() {
        cmd.push_str(&format!(" -ts {}", o.tensor_split.text()));
    }
    if o.main_gpu != 0 {
        cmd.push_str(&format!(" -mg {}", o.main_gpu));
    }
    if !o.has_fit() {
        // No `--fit` on this build (nor on ik_llama.cpp): nothing to turn off.
    } else if o.fit == FitMode::Off {
        cmd.push_str(" --fit off");
    } else if o.fit_target_bytes() != super::FIT_MARGIN_BYTES {
        cmd.push_str(&format!(" --fit-target {}", o.fit_target_mib));
    }
    if o.mmproj {
        cmd.push_str(" --mmproj mmproj.gguf");
        if o.no_mmproj_offload {
            cmd.push_str(" --no-mmproj-offload");
        }
    }
    // ik_llama.cpp's own flags, as its build spells them; a mainline plan
    // sets none (`ik::check`).
    cmd.push_str(&super::ik::flags(o));
    cmd
}

/// `-fa` as the plan's build spells its flash attention (with a leading
/// space; empty where it is the default): a bare switch before b6325
/// ([`super::OFFLOAD_DEFAULT_BUILD`], flash attention off by default),
/// `-fa on|off` from it (common/arg.cpp); ik_llama.cpp's own
/// ([`super::ik::flash_attention_flag`]).
pub fn flash_attention_flag(o: Options) -> &'static str {
    let old = o.build.is_some_and(|b| b < super::OFFLOAD_DEFAULT_BUILD);
    match (o.fork, o.flash_attention) {
        (super::Fork::Mainline, FlashAttention::On) if old => " -fa",
        (super::Fork::Mainline, FlashAttention::Off) if old => "",
        (super::Fork::Mainline, FlashAttention::On) => " -fa on",
        (super::Fork::Mainline, FlashAttention::Off) => " -fa off",
        (super::Fork::Ik, _) => super::ik::flash_attention_flag(o),
    }
}

/// `text` as one POSIX shell word: single-quoted when it holds anything
/// but letters, digits and `._-=,/`.
fn shell_quote(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-=,/".contains(&b)) {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// llama.cpp's flags; q8_0 is its cheapest KV cache that keeps quality.
/// Each changed plan prints as its whole `llama-server` line: `-c` is the
/// context of every slot together (`-np`), `-fa` is spelt as its build
/// spells it, so a flag alone would not launch the plan.
pub const COMMANDS: Commands = Commands {
    cheaper_kv_dtype: KvDtype::Q8_0,
    kv_dtype: |model, t, _| server_command(model, t),
    // `-n`: each request's new tokens (common/common.h `n_predict`), which
    // the server takes as its requests' default.
    shorten: Shorten::NewTokens(|model, t| format!("{} -n {}", server_command(model, t), t.max_new_tokens)),
    concurrency: |model, t, _, _| server_command(model, t),
    more_gpus_are_tensor_parallel: false,
    more_gpus: |model, t, _, n| {
        let gpus = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        format!("CUDA_VISIBLE_DEVICES={gpus} {}", server_command(model, t))
    },
    weights: weight_code,
    settings,
    adjusts: fit_adjustment,
    launch: None,
};

/// The whole `llama-server` line of a plan in another GGUF quantisation;
/// other formats as transformers loads them.
fn weight_code(model: &Model, t: &Scenario, repo: &str) -> String {
    match t.weights {
        WeightFormat::Gguf(_) => server_command(model, t),
        f => transformers::weight_code(model, f, repo),
    }
}

/// Keeping some layers on the CPU (`-ngl`), and for a MoE the routed
/// experts of the first layers (`--n-cpu-moe`), which keeps attention and
/// the shared tensors on the GPU.
fn settings(model: &Model, s: &Scenario, _: &str) -> Vec<Setting> {
    let mut out: Vec<Setting> = fit_setting(model, s).into_iter().collect();
    if let Some(n) = min_cpu_moe(model, s).flatten().filter(|&n| n > 0)
        && let Engine::LlamaCpp(o) = s.engine
        && n > o.n_cpu_moe
    {
        let mut t = s.clone();
        t.engine = Engine::LlamaCpp(Options { n_cpu_moe: n, ..o });
        out.push(Setting {
            kind: SettingKind::OffloadLayers,
            title: format!("Keep the routed experts of the first {n} layers on the CPU (--n-cpu-moe {n})"),
            code: server_command(model, &t),
            scenario: t,
        });
    }
    out.extend(tensor_split(model, s));
    out.extend(experts_of_the_full_gpus(model, s));
    let Some(ngl) = max_gpu_layers(model, s).filter(|&n| n > 0) else { return out };
    let mut t = s.clone();
    if let Engine::LlamaCpp(o) = &mut t.engine {
        o.n_gpu_layers = Some(ngl);
    }
    out.push(Setting {
        kind: SettingKind::OffloadLayers,
        title: format!("Offload {ngl} layers to the GPU and keep the rest on the CPU"),
        code: server_command(model, &t),
        scenario: t,
    });
    out
}

/// What llama.cpp's `--fit` loads instead: with the flags as given, or —
/// when a flag makes it give up, or it is off — without that flag. Applied
/// here as the nearest flags ([`FitChoice::nearest`]).
fn fit_setting(model: &Model, s: &Scenario) -> Option<Setting> {
    fit_setting_of(model, s, predict(model, s, None)?)
}

/// [`fit_setting`] with what `--fit` does to the flags as given.
fn fit_setting_of(model: &Model, s: &Scenario, fit: Fit) -> Option<Setting> {
    let Engine::LlamaCpp(o) = s.engine else { return None };
    let cleared = Options {
        fit: FitMode::On,
        n_gpu_layers: None,
        tensor_split: TensorSplit::BY_MEMORY,
        split_mode: if o.split_mode == SplitMode::Row { SplitMode::Layer } else { o.split_mode },
        tensor_overrides: TensorOverrides::NONE,
        n_cpu_moe: 0,
        ..o
    };
    let (title, base) = match fit {
        Fit::Fitted(c) => (format!("llama.cpp's --fit (on by default) loads it as {}", c.describe()), (c, o)),
        Fit::GivesUp { .. } | Fit::Off => {
            let t = Scenario { engine: Engine::LlamaCpp(cleared), ..s.clone() };
            let Some(Fit::Fitted(c)) = predict(model, &t, None) else { return None };
            let what = if let Fit::GivesUp { flag, .. } = fit {
                format!("Drop {flag} and let llama.cpp's --fit place it")
            } else {
                "Turn llama.cpp's --fit back on".to_owned()
            };
            (format!("{what}: {}", c.describe()), (c, cleared))
        }
        Fit::Unchanged | Fit::Fails { .. } => return None,
    };
    let (choice, flags) = base;
    let runs = Scenario { engine: Engine::LlamaCpp(flags), ..s.clone() };
    let mut t = s.clone();
    t.engine = Engine::LlamaCpp(choice.nearest(flags));
    Some(Setting {
        kind: SettingKind::Fit,
        title,
        code: format!("{}   # --fit on is the default", server_command(model, &runs)),
        scenario: t,
    })
}

/// What `--fit` changes by itself in a plan that fits with less than its
/// target free: [`fit_setting`] when it fits the flags as given.
fn fit_adjustment(model: &Model, s: &Scenario) -> Option<Setting> {
    let fit = predict(model, s, None)?;
    if matches!(fit, Fit::Fitted(_)) { fit_setting_of(model, s, fit) } else { None }
}

/// With several GPUs and `--split-mode layer`, the `--tensor-split` that
/// balances what each GPU holds against its memory: layer counts as the
/// ratios, the output layer counted with the last GPU (llama.cpp gives the
/// k-th offloaded layer to the GPU whose cumulative share passes k / n, so
/// counts as ratios place exactly that many layers). Only when it loads.
fn tensor_split(model: &Model, s: &Scenario) -> Option<Setting> {
    let Engine::LlamaCpp(o) = s.engine else { return None };
    if s.gpus.len() < 2 || o.split_mode != SplitMode::Layer {
        return None;
    }
    let valid = s.clone().validate().ok()?;
    let p = EnginePlan::new(model, valid);
    let (offloaded, output) = super::gpu_layers(&p, o);
    let n = p.kv_layers.len();
    let start = n - offloaded as usize;
    let tensors = Tensors::of(&p);
    let layer_bytes = super::devices::layer_device_bytes(&tensors.of_plan(&p), &o, n);
    let ctx = super::n_ctx(&p, o);
    let slots = super::slots(&p, o);
    let cells = super::cells(&p, o, ctx, slots);
    let kv = super::kv_layers(&p, o);
    let costs: Vec<u64> = (start..n)
        .map(|i| {
            let cache = if o.no_kv_offload { 0 } else { cells.bytes(&kv[i..=i]) };
            layer_bytes[i].saturating_add(cache)
        })
        .collect();
    let gpus = s.gpus.len();
    let context = |g: usize| s.gpus[g].context_bytes();
    // Before the split, each GPU is taken to hold its share of the layers.
    let share = offloaded.div_ceil(gpus as u64);
    let part = |g: usize, output: bool| super::graph::Part {
        // The model's index of the GPU's first layer: the offloaded layers
        // are the last ones.
        start: (start as u64).saturating_add(share.saturating_mul(g as u64)),
        layers: share,
        first: g == 0,
        output,
        staged: None,
        host: None,
    };
    let cells = super::cells(&p, o, ctx, super::slots(&p, o));
    let mut fixed: Vec<u64> = (0..gpus)
        .map(|g| context(g).saturating_add(super::compute_buffer(&p, o, ctx, cells, part(g, false), slots)))
        .collect();
    if output {
        fixed[gpus - 1] = context(gpus - 1)
            .saturating_add(super::compute_buffer(&p, o, ctx, cells, part(gpus - 1, true), slots))
            .saturating_add(p.weights.last);
    }
    let caps: Vec<u64> = s.gpus.iter().map(|g| g.capacity_bytes).collect();
    let ranges = crate::plan::split::balance(&costs, &fixed, &caps);
    let split = split_of(ranges.iter().map(|r| r.len()), output)?;
    let text = split.text();
    if split == o.tensor_split {
        return None;
    }
    let mut t = s.clone();
    t.engine = Engine::LlamaCpp(Options { tensor_split: split, ..o });
    let tv = t.clone().validate().ok()?;
    loads(&tensors, tv).then(|| Setting {
        kind: SettingKind::SplitLayers,
        title: format!("Split the layers by each GPU's memory (--tensor-split {text})"),
        code: server_command(model, &t),
        scenario: t,
    })
}

/// The `llama-server` line of `s` with its layer split pinned: `layers`,
/// each GPU's repeating layers, as `--tensor-split` ratios ([`split_of`]).
pub(crate) fn pinned_split(model: &Model, s: &Scenario, layers: &[usize]) -> Option<String> {
    // `-ts` splits layers only under `-sm layer` (rows under `row`; `none` one GPU).
    let Engine::LlamaCpp(o) = s.engine else { return None };
    if o.split_mode != SplitMode::Layer {
        return None;
    }
    let p = EnginePlan::new(model, s.clone().validate().ok()?);
    let (_, output) = super::gpu_layers(&p, o);
    let o = Options { tensor_split: split_of(layers.iter().copied(), output)?, ..o };
    Some(server_command(model, &Scenario { engine: Engine::LlamaCpp(o), ..s.clone() }))
}

/// Each GPU's repeating layers as `--tensor-split` ratios: llama.cpp spreads
/// them over every offloaded layer (llama-model.cpp `load_tensors`:
/// `act_gpu_layers` is `min(ngl, n_layer + 1)`), so the last GPU's count
/// takes the output layer when it is offloaded; `None` past llama.cpp's
/// device count.
fn split_of(layers: impl Iterator<Item = usize>, output: bool) -> Option<TensorSplit> {
    let mut counts: Vec<u64> = layers.map(|n| n as u64).collect();
    if let (true, Some(last)) = (output, counts.last_mut()) {
        *last += 1;
    }
    (counts.len() <= super::MAX_SPLIT).then(|| TensorSplit::of_counts(&counts))
}

/// llama.cpp's routed-expert tensor names for layers `layers`, as one `-ot`
/// rule to the CPU (the `--n-cpu-moe` pattern of common/common.h with the
/// layer numbers as alternatives; no comma, which `-ot` splits at).
fn experts_rule(layers: &[usize]) -> String {
    let list = layers.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("|");
    format!("blk\\.({list})\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU")
}

/// With several GPUs, `--n-cpu-moe` only lightens the first GPU (it takes
/// the first layers). When a later GPU is the one that overflows, an `-ot`
/// rule keeps the routed experts of that GPU's first layers on the CPU:
/// the fewest layers per full GPU that let the plan load.
fn experts_of_the_full_gpus(model: &Model, s: &Scenario) -> Option<Setting> {
    let Engine::LlamaCpp(o) = s.engine else { return None };
    if s.gpus.len() < 2 || !has_routed_experts(model) || !o.tensor_overrides.is_empty() {
        return None;
    }
    let valid = s.clone().validate().ok()?;
    let p = EnginePlan::new(model, valid);
    let tensors = Tensors::of(&p);
    let d = super::devices(&p, o, Some(&tensors));
    let ctx = super::n_ctx(&p, o);
    let slots = super::slots(&p, o);
    let full: Vec<usize> = (0..s.gpus.len())
        .filter(|&g| super::gpu_parts(&p, o, &d, g, ctx, slots).total_bytes() > s.gpus[g].capacity_bytes)
        .collect();
    if full.is_empty() || full == [0] {
        return None;
    }
    let with = |k: usize| {
        let layers: Vec<usize> = full.iter().flat_map(|&g| d.assignment.range(g).take(k)).collect();
        let rules = super::TensorOverrides::parse(&experts_rule(&layers)).ok()?;
        let o = Options { tensor_overrides: rules, ..o };
        let mut t = s.clone();
        t.engine = Engine::LlamaCpp(o);
        let tv = t.clone().validate().ok()?;
        loads(&tensors, tv).then_some((t, layers))
    };
    let most = full.iter().map(|&g| d.assignment.range(g).len()).max().unwrap_or(0);
    let (t, layers) = (1..=most).find_map(with)?;
    let (first, last) = (layers.first()?, layers.last()?);
    Some(Setting {
        kind: SettingKind::OffloadLayers,
        title: format!(
            "Keep the routed experts of {} layers ({first}–{last}) of the full GPU(s) on the CPU (-ot)",
            layers.len()
        ),
        code: server_command(model, &t),
        scenario: t,
    })
}

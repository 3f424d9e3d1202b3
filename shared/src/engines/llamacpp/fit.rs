//! What llama.cpp's `--fit` (on by default) makes of a plan before it
//! loads it: common/fit.cpp `common_params_fit_impl` (llama.cpp as vendored
//! by llama-cpp-python 0.3.36), replayed on this plan's memory in place of
//! llama.cpp's trial allocations (`no_alloc` loads of the same GGUF).
//!
//! 1. The flags as given: when every GPU keeps `--fit-target` (1024 MiB)
//!    of its free memory, nothing changes.
//! 2. A context left unset would shrink first (towards `--fit-ctx`, 4096);
//!    a plan always names its `-c` (the page's and the CLI's lines carry
//!    it, and `-c 0` turns the shrinking off), so this step never applies.
//! 3. It gives up — a warning, and the model loads as told — when a flag it
//!    would change is set: `-ngl`, `-ts`, `-sm row`, `-ot` (and
//!    `--n-cpu-moe`, which is `-ot` rules), in that order.
//! 4. It fills the GPUs from the last to the first with whole layers, the
//!    output layer first (for a MoE model: layers whose routed experts stay
//!    in host memory), as many as keep the target free.
//! 5. MoE, when the dense weights left room: from the first GPU on it turns
//!    those layers back into whole ones, then tries part of one more: its
//!    experts' up (then also gate) projections kept on the GPU, or else only
//!    its attention, the rest overflowing to the next GPU or host memory.
//!
//! Each count is narrowed as llama.cpp narrows it, by false position between
//! a count that fits and one that does not until they are one apart, in its
//! `uint32_t` arithmetic: memory need not grow with the count (a GPU's one
//! whole layer is its first, so a MoE whose first layers are dense gets
//! cheaper trials as layers are added), and then the boundary depends on
//! the path, so the path is llama.cpp's.
//! Free memory is what `ggml_backend_dev_memory` reads (`cudaMemGetInfo`)
//! once llama.cpp's own CUDA context exists: the memory free now less that
//! context, where the memory free now is known (the CLI's `--fit-free`),
//! else an idle GPU's, CUDA's total. On Metal (a Mac) it is the working-set
//! limit less the buffers already allocated, and no context is counted
//! (`GpuSlot::context_bytes`).

use serde::Serialize;

use super::super::{Engine, EnginePlan, Scenario};
use super::tensors::{Home, Piece};
use super::{Buffer, Options, Plan, SplitMode, TensorSplit, devices, gpu_parts};
use crate::model::Model;
use crate::units::{UnitSystem, format_bytes};

/// What `--fit` does with a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fit {
    /// `--fit off`.
    Off,
    /// Every GPU keeps the target free with the flags as given.
    Unchanged,
    /// A flag it would change is set: it warns (`failed to fit params to
    /// free device memory: …, abort`) and loads the plan as told.
    GivesUp { flag: &'static str, why: &'static str },
    /// It changes `-ngl`, the split and the tensor placement.
    Fitted(FitChoice),
    /// Its own trial throws (its words): it warns and loads with the
    /// overrides it had written so far.
    Fails { why: &'static str },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitChoice {
    /// The `-ngl` it sets (the output layer counted).
    pub n_gpu_layers: u64,
    /// Layers per GPU, the output layer counted: the `--tensor-split` it
    /// writes with several GPUs.
    pub gpu_layers: Vec<u64>,
    /// Offloaded layers whose routed experts stay in host memory (wholly or,
    /// for one layer per GPU at most, in part).
    pub expert_layers_on_host: u64,
    /// Layers of which a part overflows to the next GPU (one per GPU at most).
    pub overflow_layers: u64,
    /// The GPUs it fits over (`--split-mode none`: the main GPU) and each
    /// one's projected use (model, context and compute buffers).
    pub gpus: Vec<usize>,
    pub gpu_used_bytes: Vec<u64>,
    /// Each GPU's free memory less the target.
    pub gpu_target_bytes: Vec<u64>,
    /// Weights left in host memory.
    pub cpu_weight_bytes: u64,
    /// Whether every GPU keeps the target free (false: not even an empty GPU
    /// does, and llama.cpp loads what it found anyway).
    pub meets_targets: bool,
}

/// The part of a layer a partial layer leaves on its device: the rest of
/// its feed-forward tensors overflow (common/fit.cpp
/// `common_layer_fraction_t` and `get_overflow_pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fraction {
    /// Attention only: `blk\.i\.ffn_(gate|up|gate_up|down).*` overflows.
    Attn,
    /// Attention and the up projections: `blk\.i\.ffn_(gate|gate_up|down).*`.
    Up,
    /// Attention, up and gate: `blk\.i\.ffn_down.*`.
    Gate,
    /// Everything but the routed experts: `blk\.i\.ffn_(up|down|gate_up|gate)_(ch|)exps`.
    Moe,
}

impl Fraction {
    /// The pattern llama.cpp writes for layer `il`.
    #[cfg(test)]
    fn pattern(self, il: usize) -> String {
        let rest = match self {
            Self::Attn => "ffn_(gate|up|gate_up|down).*",
            Self::Up => "ffn_(gate|gate_up|down).*",
            Self::Gate => "ffn_down.*",
            Self::Moe => "ffn_(up|down|gate_up|gate)_(ch|)exps",
        };
        format!("blk\\.{il}\\.{rest}")
    }

    /// Whether the pattern for this tensor's layer finds it: `rest` is the
    /// name after `blk.{il}.` (the patterns start with that prefix and
    /// `std::regex_search` finds it only there).
    fn matches(self, rest: &str) -> bool {
        let starts = |ps: &[&str]| ps.iter().any(|p| rest.starts_with(p));
        match self {
            Self::Attn => starts(&["ffn_gate", "ffn_up", "ffn_down"]),
            Self::Up => starts(&["ffn_gate", "ffn_down"]),
            Self::Gate => starts(&["ffn_down"]),
            Self::Moe => ["ffn_up_", "ffn_down_", "ffn_gate_up_", "ffn_gate_"]
                .iter()
                .filter_map(|p| rest.strip_prefix(p))
                .any(|t| t.starts_with("exps") || t.starts_with("chexps")),
        }
    }
}

/// One GPU's share: `n_layer` layers (the output layer counted), of which
/// the last `n_part` are partial (common/fit.cpp `ngl_t`). In `u32` with
/// wrapping arithmetic, as llama.cpp's `uint32_t`s: one of its paths takes
/// `n_part` below zero (see [`one_more`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Share {
    n_layer: u32,
    n_part: u32,
    /// What the first partial layer keeps; the others keep `Moe`.
    overflow: Fraction,
}

impl Share {
    const EMPTY: Self = Self { n_layer: 0, n_part: 0, overflow: Fraction::Moe };

    fn n_full(&self) -> u32 {
        self.n_layer.wrapping_sub(self.n_part)
    }
}

/// One trial: the shares and where each GPU's first partial layer overflows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Trial {
    shares: Vec<Share>,
    to: Vec<Buffer>,
}

/// A layer's override: what stays and where the rest goes.
type Rule = Option<(Fraction, Buffer)>;

struct Fitter<'a, 'p> {
    p: &'a Plan<'p>,
    o: Options,
    pieces: Vec<Piece>,
    /// The GPUs llama.cpp fits over (`--split-mode none`: the main GPU).
    devs: Vec<usize>,
    /// Repeating layers (`hp_ngl`).
    n: u64,
    ctx: u64,
    slots: u64,
    /// Each GPU's free memory less the target (`targets`).
    targets: Vec<i64>,
}

/// What a trial allocates: each fitted GPU's use and the host's weights.
struct Measured {
    used: Vec<u64>,
    cpu_weight_bytes: u64,
}

impl Fitter<'_, '_> {
    /// Memory with `-ngl ngl` (`None`: as given), `-ts counts` (with several
    /// GPUs) and one override per layer.
    fn measure(&self, ngl: Option<u64>, counts: Option<&[u64]>, rules: &[Rule]) -> Measured {
        let mut o = Options { n_gpu_layers: ngl.or(self.o.n_gpu_layers), ..self.o };
        if let Some(c) = counts.filter(|_| self.devs.len() > 1) {
            o.tensor_split = TensorSplit::of_counts(c);
        }
        let d = super::devices_with(self.p, o, &self.pieces, &|t| {
            let Home::Layer(l) = t.home else { return None };
            let (f, b) = rules.get(l).copied().flatten()?;
            // `blk.{l}.{rest}`, written only for the layers with a rule.
            f.matches(&t.name.in_layer(l)?).then_some(b)
        });
        let used = self
            .devs
            .iter()
            .map(|&g| {
                gpu_parts(self.p, o, &d, g, self.ctx, self.slots).total_bytes().saturating_sub(d.overhead(self.p, g))
            })
            .collect();
        Measured { used, cpu_weight_bytes: d.cpu_weights() }
    }

    /// The `-ngl`, split and overrides a trial stands for
    /// (`set_ngl_tensor_split_tbo`): each GPU's layers follow the last GPU's
    /// from the back, whole ones first, then its partial ones. `None` where
    /// llama.cpp throws: more overrides than `llama_max_tensor_buft_overrides()`.
    fn flags(&self, t: &Trial) -> Option<(u64, Vec<u64>, Vec<Rule>)> {
        let ngl = t.shares.iter().fold(0u32, |a, s| a.wrapping_add(s.n_layer));
        let mut rules: Vec<Rule> = vec![None; self.n as usize + 1];
        let mut il0 = (self.n as u32 + 1).wrapping_sub(ngl);
        let mut written = 0usize;
        for (k, s) in t.shares.iter().enumerate() {
            il0 = il0.wrapping_add(s.n_full());
            let end = il0.wrapping_add(s.n_part);
            let mut il = il0;
            while il < end {
                if written + 1 >= MAX_OVERRIDES {
                    return None;
                }
                written += 1;
                let rule = if il == il0 { (s.overflow, t.to[k]) } else { (Fraction::Moe, Buffer::Cpu) };
                if let Some(r) = rules.get_mut(il as usize) {
                    *r = Some(rule);
                }
                il += 1;
            }
            il0 = end;
        }
        let mut counts = vec![0; self.p.scenario.gpus.len()];
        for (k, s) in t.shares.iter().enumerate() {
            counts[self.devs[k]] = u64::from(s.n_layer);
        }
        Some((u64::from(ngl), counts, rules))
    }

    /// A trial's memory; `Err` where llama.cpp's own trial throws.
    fn memory(&self, t: &Trial) -> Result<Measured, Failed> {
        let (ngl, counts, rules) = self.flags(t).ok_or(Failed)?;
        Ok(self.measure(Some(ngl), Some(&counts), &rules))
    }

    fn used(&self, m: &Measured, k: usize) -> i64 {
        i64::try_from(m.used[k]).unwrap_or(i64::MAX)
    }
}

/// llama.cpp's trial threw ("llama_max_tensor_buft_overrides() == 4096 is
/// insufficient for model"): `--fit` fails.
struct Failed;

/// `llama_max_tensor_buft_overrides()` (src/llama.cpp).
const MAX_OVERRIDES: usize = 4096;

/// llama.cpp's next guess between a count that fits (`mem` at it) and one
/// that does not (`mem_high`), `delta` apart: linear interpolation in
/// `int64_t`, stored in a `uint32_t` (a negative guess wraps), then kept
/// within `1..delta` (common/fit.cpp `step_size`).
fn false_position(delta: u32, target: i64, mem: i64, mem_high: i64) -> u32 {
    let span = (mem_high - mem).max(1);
    let guess = (i64::from(delta) * (target - mem) / span) as u32;
    guess.max(1).min(delta - 1)
}

/// The flag for which `--fit` gives up, and its own words, in
/// `common_params_fit_impl`'s order (`--n-cpu-moe` is `-ot` rules:
/// common/arg.cpp pushes one `llm_ffn_exps_block_regex` rule per layer).
pub(crate) fn gives_up(o: Options, gpus: usize) -> Option<(&'static str, &'static str)> {
    if o.n_gpu_layers.is_some() {
        return Some(("-ngl", "n_gpu_layers already set by user"));
    }
    if gpus > 1 && o.tensor_split.is_set() {
        return Some(("--tensor-split", "model_params::tensor_split already set by user"));
    }
    if gpus > 1 && o.split_mode == SplitMode::Row {
        return Some(("--split-mode row", "changing weight allocation for LLAMA_SPLIT_MODE_ROW not implemented"));
    }
    if !o.tensor_overrides.is_empty() {
        return Some(("-ot", "model_params::tensor_buft_overrides already set by user"));
    }
    if o.n_cpu_moe > 0 {
        return Some(("--n-cpu-moe", "model_params::tensor_buft_overrides already set by user"));
    }
    None
}

/// What `--fit` does with a llama.cpp plan (`None`: another engine, a
/// plan that fails its checks, or a llama.cpp without `--fit`:
/// [`Options::has_fit`]). Not part of the estimate, whose figures are
/// the flags as given: the CLI asks for it, the page in its fixes bundle.
///
/// `free`: the memory free on each GPU now (NVML's or nvidia-smi's
/// `memory.free`), where known; else an idle GPU's, CUDA's total.
pub fn predict(model: &Model, s: &Scenario, free: Option<&[u64]>) -> Option<Fit> {
    if !matches!(s.engine, Engine::LlamaCpp(_) | Engine::Ollama(_)) {
        return None;
    }
    let p = EnginePlan::new(model, s.clone().validate().ok()?);
    // Ollama's llama-server runs --fit on the flags it launches.
    let o = crate::engines::llamacpp_flags(&p);
    // A build without `--fit` (or ik_llama.cpp) loads the flags as given.
    o.has_fit().then(|| fit(&p, o, free))
}

/// What `--fit` does with the plan `p` run with `o`.
pub(crate) fn fit(p: &Plan, o: Options, free: Option<&[u64]>) -> Fit {
    if o.fit == super::FitMode::Off {
        return Fit::Off;
    }
    let gpus = p.scenario.gpus.len();
    let devs: Vec<usize> = if o.split_mode == SplitMode::None {
        vec![usize::from(o.main_gpu).min(gpus.saturating_sub(1))]
    } else {
        (0..gpus).collect()
    };
    let margin = o.fit_target_bytes();
    let targets = devs
        .iter()
        .map(|&g| {
            let now = free.and_then(|f| f.get(g).copied()).unwrap_or(p.scenario.gpus[g].cuda_total_bytes);
            // Signed, as llama.cpp's: a target can be below zero.
            i64::try_from(now).unwrap_or(i64::MAX)
                - i64::try_from(p.scenario.gpus[g].context_bytes()).unwrap_or(i64::MAX)
                - i64::try_from(margin).unwrap_or(i64::MAX)
        })
        .collect();
    let slots = super::slots(p, o);
    let f = Fitter {
        p,
        o,
        pieces: super::tensors::pieces(p),
        devs,
        // At most llama.cpp's 1000 layers of override patterns.
        n: (p.kv_layers.len() as u64).min(u64::from(u32::MAX) - 1),
        ctx: super::context(p, o, slots),
        slots,
        targets,
    };
    let nd = f.devs.len();
    // Step 1: the flags as given.
    let given = f.measure(None, None, &[]);
    if (0..nd).all(|k| f.used(&given, k) <= f.targets[k]) {
        return Fit::Unchanged;
    }
    if let Some((flag, why)) = gives_up(o, nd) {
        return Fit::GivesUp { flag, why };
    }
    let moe = f.pieces.iter().any(|t| devices::is_routed_expert(t.role));
    // With every routed expert in host memory (and every layer offloaded),
    // is there room left over all GPUs together?
    let surplus = moe && {
        let rules = vec![Some((Fraction::Moe, Buffer::Cpu)); f.n as usize + 1];
        let m = f.measure(None, None, &rules);
        (0..nd).map(|k| i128::from(f.targets[k]) - i128::from(f.used(&m, k))).sum::<i128>() > 0
    };
    let t = match place(&f, moe, surplus) {
        Ok(t) => t,
        Err(Failed) => {
            return Fit::Fails { why: "llama_max_tensor_buft_overrides() == 4096 is insufficient for model" };
        }
    };
    let (Ok(m), Some((ngl, counts, rules))) = (f.memory(&t), f.flags(&t)) else {
        return Fit::Fails { why: "llama_max_tensor_buft_overrides() == 4096 is insufficient for model" };
    };
    let real = &rules[..f.n as usize];
    let count =
        |gpu: bool| real.iter().filter(|r| matches!(r, Some((_, b)) if matches!(b, Buffer::Gpu(_)) == gpu)).count();
    Fit::Fitted(FitChoice {
        n_gpu_layers: ngl,
        gpu_layers: counts,
        expert_layers_on_host: count(false) as u64,
        overflow_layers: count(true) as u64,
        meets_targets: (0..nd).all(|k| f.used(&m, k) <= f.targets[k]),
        gpus: f.devs.clone(),
        gpu_used_bytes: m.used,
        gpu_target_bytes: f.targets.iter().map(|&t| u64::try_from(t).unwrap_or(0)).collect(),
        cpu_weight_bytes: m.cpu_weight_bytes,
    })
}

impl Fit {
    /// What `--fit` does, in one line (the page's and the CLI's).
    pub fn summary(&self) -> String {
        match self {
            Self::Off => "off (--fit off): the flags load as given".into(),
            Self::Unchanged => "nothing to change: every GPU keeps the --fit target free".into(),
            Self::GivesUp { flag, why } => {
                format!("gives up (\"{why}, abort\"): with {flag} set the plan loads as given")
            }
            Self::Fitted(c) => format!("loads it as {}", c.describe()),
            Self::Fails { why } => format!("fails (\"{why}\") and loads with what it had written"),
        }
    }
}

impl FitChoice {
    /// The choice in one line: the flags it stands for and what each GPU uses.
    pub fn describe(&self) -> String {
        let c = self;
        let b = |x: u64| format_bytes(x, UnitSystem::Binary);
        let mut out = format!("-ngl {}", c.n_gpu_layers);
        if c.gpu_layers.len() > 1 {
            out.push_str(&format!(" -ts {}", TensorSplit::of_counts(&c.gpu_layers).text()));
        }
        if c.expert_layers_on_host > 0 {
            out.push_str(&format!(" with the routed experts of {} layer(s) in host memory", c.expert_layers_on_host));
        }
        if c.overflow_layers > 0 {
            out.push_str(&format!(" ({} overflowing to the next GPU)", c.overflow_layers));
        }
        let uses = c
            .gpu_used_bytes
            .iter()
            .zip(&c.gpu_target_bytes)
            .enumerate()
            .map(|(k, (&u, &t))| format!("GPU {} {} of {}", c.gpus.get(k).copied().unwrap_or(k), b(u), b(t)))
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!(
            ": {uses} usable (free less the --fit target), {} of weights in host memory",
            b(c.cpu_weight_bytes)
        ));
        if !c.meets_targets {
            out.push_str("; even so a GPU keeps less than the target free");
        }
        out
    }

    /// The nearest flags a plan can be given for it: `-ngl` and the split
    /// (dense), or `--n-cpu-moe` over its expert layers (MoE; llama.cpp's
    /// own choice keeps part of one of them on the GPU and takes the
    /// experts of the last layers rather than the first: the same bytes).
    pub fn nearest(&self, o: Options) -> Options {
        let moved = self.expert_layers_on_host + self.overflow_layers;
        if moved > 0 {
            return Options { n_cpu_moe: moved, ..o };
        }
        let mut out = Options { n_gpu_layers: Some(self.n_gpu_layers), ..o };
        if self.gpus.len() > 1 {
            out.tensor_split = TensorSplit::of_counts(&self.gpu_layers);
        }
        out
    }
}

/// Steps 4 and 5, as common/fit.cpp runs them (false position, `uint32_t`
/// counts): the trial it ends with, or [`Failed`] where llama.cpp throws.
fn place(f: &Fitter, moe: bool, surplus: bool) -> Result<Trial, Failed> {
    let nd = f.devs.len();
    let mut t = Trial { shares: vec![Share::EMPTY; nd], to: vec![Buffer::Cpu; nd] };
    let mut mem = f.memory(&t)?;
    let last = nd - 1;
    // Step 4: whole (MoE: dense-only) layers from the last GPU back.
    for id in (0..nd).rev() {
        let taken = t.shares[id + 1..].iter().fold(0u32, |a, s| a.wrapping_add(s.n_layer));
        let mut high = t.clone();
        high.shares[id].n_layer = (f.n as u32 + 1).wrapping_sub(taken);
        if moe {
            let n = high.shares[id].n_layer;
            high.shares[id].n_part = if id < last { n } else { n.wrapping_sub(1) };
        }
        if high.shares[id].n_layer == 0 {
            continue;
        }
        let mut mem_high = f.memory(&high)?;
        if f.used(&mem_high, id) <= f.targets[id] {
            (t, mem) = (high, mem_high);
            continue;
        }
        let mut delta = high.shares[id].n_layer.wrapping_sub(t.shares[id].n_layer);
        while delta > 1 {
            let step = false_position(delta, f.targets[id], f.used(&mem, id), f.used(&mem_high, id));
            let mut test = t.clone();
            let s = &mut test.shares[id];
            s.n_layer = s.n_layer.wrapping_add(step);
            if moe {
                // The first layer of the last GPU is the output layer, never partial.
                s.n_part = s.n_part.wrapping_add(if id == last && s.n_part == 0 { step - 1 } else { step });
            }
            let mem_test = f.memory(&test)?;
            if f.used(&mem_test, id) <= f.targets[id] {
                (t, mem) = (test, mem_test);
            } else {
                (high, mem_high) = (test, mem_test);
            }
            delta = high.shares[id].n_layer.wrapping_sub(t.shares[id].n_layer);
        }
    }
    if moe && surplus {
        convert(f, &mut t, &mut mem)?;
    }
    Ok(t)
}

/// Step 5: dense-only layers become whole ones, from the first GPU on, and
/// each GPU tries part of one more layer.
fn convert(f: &Fitter, t: &mut Trial, mem: &mut Measured) -> Result<(), Failed> {
    let nd = t.shares.len();
    let last = nd - 1;
    let Some(mut dense_start) = (0..nd).rev().take_while(|&id| t.shares[id].n_layer > 0).last() else {
        return Ok(());
    };
    let mut id = 0;
    while id <= dense_start && dense_start < nd {
        let mut high = t.clone();
        for jd in dense_start..nd {
            let n = high.shares[jd].n_layer;
            let moved = if jd < last { n } else { n.wrapping_sub(1) };
            high.shares[id].n_layer = high.shares[id].n_layer.wrapping_add(moved);
            high.shares[jd].n_layer = high.shares[jd].n_layer.wrapping_sub(moved);
            high.shares[jd].n_part = 0;
        }
        let mut mem_high = f.memory(&high)?;
        if f.used(&mem_high, id) > f.targets[id] {
            let mut delta = high.shares[id].n_full().wrapping_sub(t.shares[id].n_full());
            while delta > 1 {
                let step = false_position(delta, f.targets[id], f.used(mem, id), f.used(&mem_high, id));
                let mut test = t.clone();
                let (mut done, mut at) = (0u32, dense_start);
                while at < nd {
                    let n = step.wrapping_sub(done).min(test.shares[at].n_part);
                    test.shares[at].n_layer = test.shares[at].n_layer.wrapping_sub(n);
                    test.shares[at].n_part = test.shares[at].n_part.wrapping_sub(n);
                    test.shares[id].n_layer = test.shares[id].n_layer.wrapping_add(n);
                    done = done.wrapping_add(n);
                    if test.shares[at].n_part > 0 {
                        break;
                    }
                    at += 1;
                }
                let mem_test = f.memory(&test)?;
                if f.used(&mem_test, id) <= f.targets[id] {
                    (*t, *mem, dense_start) = (test, mem_test, at);
                } else {
                    (high, mem_high) = (test, mem_test);
                }
                delta = high.shares[id].n_full().wrapping_sub(t.shares[id].n_full());
            }
        } else {
            // llama.cpp's `id_dense_start_high`: the last GPU.
            (*t, *mem, dense_start) = (high, mem_high, last);
        }
        if dense_start < nd && t.shares[dense_start].n_layer > u32::from(id == last) {
            one_more(f, t, mem, id, &mut dense_start)?;
        }
        id += 1;
    }
    Ok(())
}

/// Part of one more layer on GPU `id`: its experts' up projections kept
/// (then also the gate ones), else only its attention; the rest overflows
/// to the next GPU (host memory on the last). As in llama.cpp, a GPU left
/// with only the output layer gives that too, its `n_part` wrapping below
/// zero; with two GPUs that puts everything on the first (`-ts N+1,0`).
fn one_more(f: &Fitter, t: &mut Trial, mem: &mut Measured, id: usize, dense_start: &mut usize) -> Result<(), Failed> {
    let nd = t.shares.len();
    let ds = *dense_start;
    let mut x = t.clone();
    x.shares[ds].n_layer = x.shares[ds].n_layer.wrapping_sub(1);
    x.shares[ds].n_part = x.shares[ds].n_part.wrapping_sub(1);
    x.shares[id].n_layer = x.shares[id].n_layer.wrapping_add(1);
    x.shares[id].n_part = x.shares[id].n_part.wrapping_add(1);
    let start = if x.shares[ds].n_part == 0 { ds + 1 } else { ds };
    if id + 1 < nd {
        x.to[id] = Buffer::Gpu(f.devs[id + 1]);
    }
    let ok = |m: &Measured| f.used(m, id) < f.targets[id] && (id + 1 == nd || f.used(m, id + 1) < f.targets[id + 1]);
    x.shares[id].overflow = Fraction::Up;
    let m = f.memory(&x)?;
    if ok(&m) {
        (*t, *mem, *dense_start) = (x.clone(), m, start);
        x.shares[id].overflow = Fraction::Gate;
        let m = f.memory(&x)?;
        if ok(&m) {
            (*t, *mem) = (x, m);
        }
    } else {
        x.shares[id].overflow = Fraction::Attn;
        let m = f.memory(&x)?;
        if ok(&m) {
            (*t, *mem, *dense_start) = (x, m, start);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::pattern::Pattern;
    use super::*;

    /// The prefix tests stand for llama.cpp's own patterns.
    #[test]
    fn fractions_match_what_their_patterns_find() {
        let rests = [
            "ffn_up_exps.weight",
            "ffn_gate_exps.weight",
            "ffn_down_exps.weight",
            "ffn_gate_up_exps.weight",
            "ffn_gate_exps.bias",
            "ffn_down_exps.bias",
            "ffn_up_chexps.weight",
            "ffn_gate_inp.weight",
            "ffn_up_shexp.weight",
            "ffn_down_shexp.weight",
            "ffn_gate.weight",
            "ffn_up.weight",
            "ffn_down.weight",
            "ffn_norm.weight",
            "attn_q.weight",
            "exp_probs_b.bias",
        ];
        for f in [Fraction::Attn, Fraction::Up, Fraction::Gate, Fraction::Moe] {
            let pattern = Pattern::new(&f.pattern(7)).unwrap();
            for rest in rests {
                assert_eq!(f.matches(rest), pattern.is_match(&format!("blk.7.{rest}")), "{f:?} {rest}");
                assert!(!pattern.is_match(&format!("blk.17.{rest}")), "{f:?} must not find layer 17's {rest}");
            }
        }
    }

    #[test]
    fn false_position_steps_stay_inside_the_interval() {
        assert_eq!(false_position(10, 50, 0, 100), 5);
        // A low end that does not fit itself gives a negative guess, which
        // wraps in llama.cpp's uint32_t to the largest step.
        assert_eq!(false_position(10, 50, 60, 100), 9);
        assert_eq!(false_position(10, 99, 0, 100), 9);
        assert_eq!(false_position(10, 1, 0, 100), 1);
    }
}

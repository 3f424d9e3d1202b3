//! Where llama.cpp puts each tensor: `-ngl` and the split over GPUs
//! (`--split-mode`, `--tensor-split`, `--main-gpu`), then the tensor
//! overrides (`-ot`, `--cpu-moe`, `--n-cpu-moe`).
//!
//! From `llama_model_base::load_tensors` in src/llama-model.cpp (llama.cpp
//! as vendored by llama-cpp-python 0.3.36): the input layer (token
//! embedding) always stays on the CPU; the offloaded layers, the output
//! layer counted as the last of them, go to GPU
//! `upper_bound(splits, k / n_offloaded)` for the k-th of them, `splits`
//! being the cumulative normalised `--tensor-split` ratios or, when none is
//! given (all zero), each device's free memory; `--split-mode none` keeps
//! only `--main-gpu` (src/llama.cpp `llama_model_load_from_splits`). Then
//! every tensor's buffer: the first `-ot` rule whose pattern
//! `std::regex_search`es its name wins (src/llama-model-loader.cpp), else
//! its layer's device. `--split-mode row` gives each GPU layer's matrices
//! the split buffer type (`make_gpu_buft_list`), which spreads their rows
//! over every GPU by the same ratios; the routed experts (3-D, which the
//! CUDA split buffer does not take) and vectors stay with their layer.
//!
//! `--cpu-moe` and `--n-cpu-moe N` are overrides too (common/arg.cpp):
//! `\.ffn_(up|down|gate|gate_up)_(ch|)exps` → CPU (common/common.h
//! `llm_ffn_exps_cpu_override`), and `blk\.i\.ffn_(up|down|gate|gate_up)_(ch|)exps`
//! → CPU for every `i < N` (`llm_add_n_cpu_ffn_overrides`). Those names are
//! exactly the routed experts, their biases too (`ffn_gate_exps.bias`:
//! roles `ExpertUp` / `ExpertDown` / `ExpertBias`,
//! shared/src/checkpoint/roles.rs); shared experts (`ffn_*_shexp`) and the
//! router (`ffn_gate_inp`) stay with their layer.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::pattern::Pattern;
use super::tensors::{Home, HomeBytes, Piece};
use crate::arch::Role;
use crate::plan::Plan;

/// `-sm/--split-mode` (common/arg.cpp; `tensor` is experimental and not modelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitMode {
    /// The default: whole layers per GPU, KV with its layers.
    #[default]
    Layer,
    /// Matrices split by rows over every GPU.
    Row,
    /// `--main-gpu` only.
    None,
}

impl SplitMode {
    pub const ALL: &[Self] = &[Self::Layer, Self::Row, Self::None];

    pub fn id(self) -> &'static str {
        match self {
            Self::Layer => "layer",
            Self::Row => "row",
            Self::None => "none",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL.iter().copied().find(|m| m.id() == s).ok_or_else(|| match s {
            // ggml-org/llama.cpp#19378 (merged after 2026-03-23): a
            // `Meta()` device over the GPUs splitting weights and KV,
            // newer than the llama.cpp source these rules follow
            // (a0ed91a, 2026-03-05), whose common/arg.cpp takes
            // `{none,layer,row}` only.
            "tensor" => "--split-mode tensor (llama.cpp's tensor parallelism over a `Meta()` device, \
                             ggml-org/llama.cpp#19378, 2026) is not modelled: Headroom follows llama.cpp up to \
                             a0ed91a (2026-03-05), before it; layer, row or none"
                .to_owned(),
            _ => format!("unknown split mode `{s}` (layer, row, none)"),
        })
    }
}

/// A buffer an `-ot` rule names: `CPU` or a GPU's (`CUDA0`, `ROCm1`, `Vulkan0`, `MTL0`, `SYCL0`:
/// `ggml_backend_buft_name` of each device's default buffer type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    Cpu,
    Gpu(usize),
}

/// The GPU backends' buffer-type prefixes (ggml/src/ggml-{cuda,vulkan,metal,sycl}),
/// and Huawei's Ascend NPUs' (ggml/src/ggml-cann/ggml-cann.cpp
/// `ggml_backend_cann_buffer_type`: `"CANN" + std::to_string(i)`, b6115 to
/// 0c1e57098), a device like a GPU to the loader and the scheduler.
const GPU_PREFIXES: &[&str] = &["CUDA", "ROCm", "Vulkan", "MTL", "SYCL", "CANN"];

impl Buffer {
    pub fn parse(s: &str) -> Result<Self, String> {
        if s == "CPU" {
            return Ok(Self::Cpu);
        }
        GPU_PREFIXES
            .iter()
            .find_map(|p| s.strip_prefix(p))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
            .map(Self::Gpu)
            .ok_or_else(|| format!("unknown buffer type `{s}` (CPU, CUDA0, CUDA1, …)"))
    }
}

/// The longest `-ot` text a plan keeps (all rules, comma-joined).
pub const MAX_OVERRIDE_TEXT: usize = 512;

/// `-ot/--override-tensor` rules, `PATTERN=BUFFER[,PATTERN=BUFFER…]`, kept
/// as llama.cpp's own argument text (checked when set) so that the engine's
/// knobs stay plain data that copies.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TensorOverrides {
    len: u16,
    text: [u8; MAX_OVERRIDE_TEXT],
}

impl Default for TensorOverrides {
    fn default() -> Self {
        Self::NONE
    }
}

impl std::fmt::Debug for TensorOverrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl TensorOverrides {
    /// No rules.
    pub const NONE: Self = Self { len: 0, text: [0; MAX_OVERRIDE_TEXT] };

    /// Parses rules as common/arg.cpp `parse_tensor_buffer_overrides` does:
    /// split at every `,` (a pattern cannot hold one), each rule at its
    /// first `=`; the buffer must be a known buffer type and the pattern
    /// one this matcher compiles. Empty text: no rules.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_OVERRIDE_TEXT {
            return Err(format!("tensor overrides are at most {MAX_OVERRIDE_TEXT} characters"));
        }
        if !text.is_empty() {
            for rule in text.split(',') {
                let (pattern, buffer) =
                    rule.split_once('=').ok_or_else(|| format!("`{rule}` is not PATTERN=BUFFER"))?;
                Buffer::parse(buffer)?;
                Pattern::new(pattern).map_err(|e| format!("the pattern `{pattern}` {e}"))?;
            }
        }
        let mut out = Self::default();
        out.text[..text.len()].copy_from_slice(text.as_bytes());
        out.len = text.len() as u16;
        Ok(out)
    }

    pub fn as_str(&self) -> &str {
        // Only `parse` writes the text, from a `&str`.
        std::str::from_utf8(&self.text[..usize::from(self.len)]).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rules in order, as `(pattern, buffer)` text.
    pub fn rules(&self) -> impl Iterator<Item = (&str, Buffer)> {
        let text = self.as_str();
        text.split(',')
            .filter(|_| !text.is_empty())
            .filter_map(|r| r.split_once('='))
            .filter_map(|(p, b)| Buffer::parse(b).ok().map(|b| (p, b)))
    }

    fn compiled(&self) -> Vec<(Pattern, Buffer)> {
        self.rules().filter_map(|(p, b)| Pattern::new(p).ok().map(|p| (p, b))).collect()
    }
}

impl Serialize for TensorOverrides {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TensorOverrides {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// How many ratios `--tensor-split` takes: common/arg.cpp refuses as many
/// as `llama_max_devices()` (16, `GGML_CUDA_MAX_DEVICES`).
pub const MAX_SPLIT: usize = 15;

/// `-ts/--tensor-split N0,N1,…`: a proportion per GPU (all zero: by free
/// memory), kept in millionths (llama.cpp reads `float`s; only the
/// proportions matter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TensorSplit {
    len: u8,
    millionths: [u64; MAX_SPLIT],
}

const MILLION: u64 = 1_000_000;

impl TensorSplit {
    /// No ratios: the split by each GPU's free memory.
    pub const BY_MEMORY: Self = Self { len: 0, millionths: [0; MAX_SPLIT] };

    /// Parses `3,1` or `3/1` (common/arg.cpp splits at `[,/]+` and reads each with `std::stof`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut out = Self::default();
        if text.is_empty() {
            return Ok(out);
        }
        for part in text.split([',', '/']).filter(|p| !p.is_empty()) {
            // The page's decimal reader, not `str::parse::<f32>` (whose float
            // parser would join the first load); negative ratios are refused.
            let r = crate::decimal::Decimal::parse(part.trim())
                .and_then(|d| d.times_rounded(MILLION))
                .ok_or_else(|| format!("`{part}` is not a number ≥ 0"))?;
            let slot = out
                .millionths
                .get_mut(usize::from(out.len))
                .ok_or_else(|| format!("at most {MAX_SPLIT} tensor split ratios (llama.cpp's 16 devices, less one)"))?;
            *slot = r;
            out.len += 1;
        }
        Ok(out)
    }

    /// Whole-number ratios, such as layer counts (past [`MAX_SPLIT`]
    /// GPUs: by memory).
    pub fn of_counts(counts: &[u64]) -> Self {
        let mut out = Self::default();
        if counts.len() <= MAX_SPLIT {
            for (slot, &c) in out.millionths.iter_mut().zip(counts) {
                *slot = c.saturating_mul(MILLION);
            }
            out.len = counts.len() as u8;
        }
        out
    }

    /// The ratios.
    pub fn ratios(&self) -> Vec<f64> {
        self.millionths[..usize::from(self.len)].iter().map(|&m| m as f64 / MILLION as f64).collect()
    }

    pub fn is_set(&self) -> bool {
        self.millionths.iter().any(|&r| r > 0)
    }

    /// The text common/arg.cpp reads back (`3,1`, `0.6,0.4`).
    pub fn text(&self) -> String {
        let one = |m: u64| {
            let frac = format!("{:06}", m % MILLION);
            let frac = frac.trim_end_matches('0');
            if frac.is_empty() { (m / MILLION).to_string() } else { format!("{}.{frac}", m / MILLION) }
        };
        self.millionths[..usize::from(self.len)].iter().map(|&m| one(m)).collect::<Vec<_>>().join(",")
    }
}

impl Serialize for TensorSplit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for TensorSplit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The split points: cumulative ratios over the GPUs, normalised to 1.
/// Ratios from `--tensor-split` (missing ones are 0), else each GPU's free
/// memory (the plan's capacity per GPU); `--split-mode none`: the main GPU
/// alone.
pub(crate) fn splits<E>(p: &Plan<'_, E>, o: &super::Options) -> Vec<f64> {
    let gpus = &p.scenario.gpus;
    let mut r: Vec<f64> = if o.split_mode == SplitMode::None {
        (0..gpus.len()).map(|g| if g == usize::from(o.main_gpu) { 1.0 } else { 0.0 }).collect()
    } else if o.tensor_split.is_set() {
        let ratios = o.tensor_split.ratios();
        (0..gpus.len()).map(|g| ratios.get(g).copied().unwrap_or(0.0)).collect()
    } else {
        gpus.iter().map(|g| g.capacity_bytes as f64).collect()
    };
    let mut sum = 0.0;
    for x in &mut r {
        sum += *x;
        *x = sum;
    }
    if sum > 0.0 {
        for x in &mut r {
            *x /= sum;
        }
    }
    r
}

/// The GPU of the k-th of `count` offloaded layers: `std::upper_bound` of
/// `k / count` in `splits`.
fn gpu_of(splits: &[f64], k: usize, count: usize) -> usize {
    let f = k as f64 / count.max(1) as f64;
    splits.iter().position(|&s| s > f).unwrap_or(splits.len().saturating_sub(1))
}

/// Each repeating layer's device (`None`: the CPU) and the output layer's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assignment {
    pub layers: Vec<Option<usize>>,
    pub output: Option<usize>,
}

/// `-ngl` keeps the last `offloaded` layers (and, past them, the output
/// layer) for the GPUs, split as [`splits`] says.
pub(crate) fn assign<E>(p: &Plan<'_, E>, o: &super::Options, offloaded: usize, output: bool) -> Assignment {
    let n = p.kv_layers.len();
    let start = n - offloaded.min(n);
    let count = offloaded + usize::from(output);
    let s = splits(p, o);
    Assignment {
        layers: (0..n).map(|i| (i >= start).then(|| gpu_of(&s, i - start, count))).collect(),
        output: output.then(|| gpu_of(&s, offloaded, count)),
    }
}

impl Assignment {
    /// The run of layers GPU `g` holds (contiguous: the split is monotone).
    pub fn range(&self, g: usize) -> std::ops::Range<usize> {
        let first = self.layers.iter().position(|&d| d == Some(g));
        let last = self.layers.iter().rposition(|&d| d == Some(g));
        match (first, last) {
            (Some(a), Some(b)) => a..b + 1,
            // No layer: an empty run where the GPU's layers would start.
            _ => {
                let at = self.layers.iter().position(|d| d.is_some_and(|d| d > g)).unwrap_or(self.layers.len());
                at..at
            }
        }
    }

    fn home(&self, h: Home) -> Option<usize> {
        match h {
            Home::Input => None,
            Home::Layer(l) => self.layers.get(l).copied().flatten(),
            Home::Output | Home::OutputCopy => self.output,
        }
    }
}

/// Weights per device.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Weights {
    pub gpu: Vec<u64>,
    pub cpu: u64,
    /// Bytes the overrides (and `--n-cpu-moe`) moved from a GPU to the CPU.
    pub moved_to_cpu: u64,
    /// Bytes of routed experts (their biases too) on the CPU although their
    /// layer is on a GPU.
    pub cpu_experts: u64,
    /// Names of the tensors an `-ot` rule moved, the first few, and how many.
    pub overridden: Vec<String>,
    pub overridden_count: usize,
    /// The largest matrix weight left in host memory by a rule: the copy the
    /// scheduler stages on the first GPU to run its matmul there
    /// (`host_compute`'s sibling, see `mod.rs` `staged_weight`); not the
    /// output head, whose matmul writes the logits (`cpu_head`).
    pub largest_cpu_matrix: u64,
    /// The output head when it stays in host memory (the output layer on
    /// the CPU: `-ngl` short of it, or a rule), tied or not.
    pub cpu_head: u64,
    /// Per home of their layer (each GPU, then the CPU): the largest
    /// routed-expert gate or up tensor (`ffn_gate_exps`, `ffn_up_exps`) and
    /// the largest down tensor (`ffn_down_exps`) a rule left in host memory.
    /// The first GPU stages them one after the other; where the down copy
    /// lands depends on whether the first GPU also holds the layer
    /// (`compute.rs` `staged_moe`). Empty where no rule moved experts.
    pub largest_cpu_experts: Vec<(u64, u64)>,
    /// The layers whose routed experts a rule left in host memory, from the
    /// first to one past the last (`--n-cpu-moe N`: `0..N`); `0..0` where
    /// none.
    pub cpu_expert_layers: std::ops::Range<u64>,
    /// The largest gate and up expert tensors of one layer together, where
    /// a rule left both in host memory with the same bytes (the same type):
    /// the pair ik_llama.cpp's fused up/gate op (`-fmoe`) stages at once.
    pub largest_cpu_gate_up: u64,
    /// Whether some layer left gate and up experts in host memory with
    /// different bytes (types): ik runs those unfused even with `-fmoe`.
    pub cpu_gate_up_differ: bool,
    /// The largest matrices by role (`tensors::HomeBytes::roles`), wherever
    /// the rules put them: the copies a GPU stages for the layers left in
    /// host memory (`graph::Host`).
    pub roles: [u64; 6],
}

pub(crate) fn is_routed_expert(role: Role) -> bool {
    matches!(role, Role::ExpertUp | Role::ExpertDown)
}

/// The tensors `--n-cpu-moe`'s `blk\.i\.ffn_(up|down|gate)_(ch|)exps`
/// finds (common/common.h `LLM_FFN_EXPS_REGEX`): the routed experts and,
/// the pattern being unanchored, their `.bias` vectors.
fn named_by_cpu_moe(role: Role) -> bool {
    is_routed_expert(role) || role == Role::ExpertBias
}

/// The tensors `--split-mode row` splits by rows: 2-D matrix weights
/// (`GGML_OP_MUL_MAT`), the output head among them; not the 3-D routed
/// experts (`MUL_MAT_ID`), which the CUDA split buffer refuses.
fn is_split_matrix(role: Role) -> bool {
    (role.is_linear() || role == Role::LmHead) && !is_routed_expert(role)
}

/// How many overridden names a report keeps.
const KEEP_NAMES: usize = 6;

/// Every tensor's device after the overrides, summed per device. A rule
/// that names a GPU the plan does not have is refused before this
/// (`check_split`); here it is read as the CPU.
///
/// `more`: rules after the `-ot` ones — `--fit`'s own overrides, which it
/// writes into the same list (common/fit.cpp).
pub(crate) fn weights_with(
    pieces: &[Piece],
    a: &Assignment,
    o: &super::Options,
    splits: &[f64],
    more: &dyn Fn(&Piece) -> Option<Buffer>,
) -> Weights {
    let gpus = splits.len();
    let rules = o.tensor_overrides.compiled();
    let n_cpu = usize::try_from(o.n_cpu_moe).unwrap_or(usize::MAX);
    let mut w = Weights { gpu: vec![0; gpus], ..Weights::default() };
    // Each layer's gate and up experts left in host memory (for `-fmoe`).
    let mut gate_up: Vec<(u64, u64)> = Vec::new();
    let shares: Vec<f64> = splits.iter().scan(0.0, |prev, &s| Some(s - std::mem::replace(prev, s))).collect();
    for t in pieces {
        super::tensors::note_role(&mut w.roles, t.home, t.role, t.bytes);
        let home = a.home(t.home);
        // The command line puts `-ot` first, then `--n-cpu-moe`'s rules
        // (`blk\.i\.ffn_(up|down|gate|gate_up)_(ch|)exps`, common/common.h).
        let rule = first_rule(&rules, t).or_else(|| more(t));
        let n_cpu_moe =
            matches!(t.home, Home::Layer(l) if l < n_cpu && named_by_cpu_moe(t.role)).then_some(Buffer::Cpu);
        let target = match rule.or(n_cpu_moe) {
            Some(Buffer::Cpu) => None,
            Some(Buffer::Gpu(g)) => Some(g).filter(|&g| g < gpus),
            None => home,
        };
        if target.is_none() && t.role == Role::LmHead {
            w.cpu_head = w.cpu_head.max(t.bytes);
        }
        // The tied head's copy exists only away from the CPU's embedding.
        if t.home == Home::OutputCopy && target.is_none() {
            continue;
        }
        if rule.is_some() && target != home {
            w.overridden_count += 1;
            if w.overridden.len() < KEEP_NAMES {
                w.overridden.push(t.name.text().into_owned());
            }
        }
        if home.is_some() && target.is_none() {
            w.moved_to_cpu = w.moved_to_cpu.saturating_add(t.bytes);
            if named_by_cpu_moe(t.role) {
                w.cpu_experts = w.cpu_experts.saturating_add(t.bytes);
            }
        }
        if target.is_none() && super::tensors::is_matrix(t.role) && t.role != Role::LmHead {
            w.largest_cpu_matrix = w.largest_cpu_matrix.max(t.bytes);
            if is_routed_expert(t.role) {
                if w.largest_cpu_experts.is_empty() {
                    w.largest_cpu_experts = vec![(0, 0); gpus + 1];
                }
                if let Home::Layer(l) = t.home {
                    let (l, r) = (l as u64, &mut w.cpu_expert_layers);
                    *r = if r.is_empty() { l..l + 1 } else { r.start.min(l)..r.end.max(l + 1) };
                }
                let slot = &mut w.largest_cpu_experts[home.filter(|&g| g < gpus).unwrap_or(gpus)];
                if t.role == Role::ExpertUp {
                    slot.0 = slot.0.max(t.bytes);
                    if let Home::Layer(l) = t.home {
                        if gate_up.len() <= l {
                            gate_up.resize(l + 1, (0, 0));
                        }
                        let name = t.name.text();
                        if name.contains("ffn_gate_exps") {
                            gate_up[l].0 = t.bytes;
                        } else if name.contains("ffn_up_exps") {
                            gate_up[l].1 = t.bytes;
                        }
                    }
                } else {
                    slot.1 = slot.1.max(t.bytes);
                }
            }
        }
        match target {
            None => w.cpu = w.cpu.saturating_add(t.bytes),
            // Row split: a layer's matrices (not an overridden one, not the
            // 3-D experts) spread over every GPU by the split ratios.
            Some(_) if o.split_mode == SplitMode::Row && rule.is_none() && is_split_matrix(t.role) => {
                let mut left = t.bytes;
                for (g, share) in shares.iter().enumerate() {
                    let part = if g + 1 == gpus { left } else { ((t.bytes as f64) * share) as u64 };
                    let part = part.min(left);
                    w.gpu[g] = w.gpu[g].saturating_add(part);
                    left -= part;
                }
            }
            Some(g) => w.gpu[g] = w.gpu[g].saturating_add(t.bytes),
        }
    }
    w.largest_cpu_gate_up =
        gate_up.iter().filter(|&&(g, u)| g == u).map(|&(g, u)| g.saturating_add(u)).max().unwrap_or(0);
    w.cpu_gate_up_differ = gate_up.iter().any(|&(g, u)| g != u);
    w
}

/// Whether no tensor leaves its layer's device and none is split by rows:
/// no `-ot` rule, no `--n-cpu-moe`, `--split-mode` layer or none. Then each
/// device holds the homes placed on it ([`weights_by_home`]).
pub(crate) fn moves_none(o: &super::Options) -> bool {
    o.tensor_overrides.is_empty() && o.n_cpu_moe == 0 && o.split_mode != SplitMode::Row
}

/// [`weights_with`] when [`moves_none`]: each home's bytes on its device.
/// The sums are the same, in any order (saturating sums of non-negative
/// bytes are the true sum capped), and nothing is moved or overridden.
pub(crate) fn weights_by_home(homes: &HomeBytes, a: &Assignment, gpus: usize) -> Weights {
    let mut w = Weights { gpu: vec![0; gpus], roles: homes.roles, ..Weights::default() };
    for (h, bytes) in homes.iter() {
        match a.home(h) {
            None => {
                let largest = homes.largest(h);
                match h {
                    Home::Output | Home::OutputCopy => w.cpu_head = w.cpu_head.max(largest),
                    _ => w.largest_cpu_matrix = w.largest_cpu_matrix.max(largest),
                }
                // The tied head's copy exists only away from the CPU's
                // embedding; its matmul reads the embedding there.
                if h != Home::OutputCopy {
                    w.cpu = w.cpu.saturating_add(bytes);
                }
            }
            Some(g) => w.gpu[g] = w.gpu[g].saturating_add(bytes),
        }
    }
    w
}

/// The buffer of the first rule whose pattern matches `t`'s name (written
/// only when there are rules).
fn first_rule(rules: &[(Pattern, Buffer)], t: &Piece) -> Option<Buffer> {
    if rules.is_empty() {
        return None;
    }
    let name = t.name.text();
    rules.iter().find(|(p, _)| p.is_match(&name)).map(|(_, b)| *b)
}

/// Each repeating layer's bytes that stay with the layer's device: all but
/// the tensors the rules (and `--n-cpu-moe`) send to the CPU. For a split
/// that balances what the GPUs hold.
pub(crate) fn layer_device_bytes(pieces: &[Piece], o: &super::Options, layers: usize) -> Vec<u64> {
    let rules = o.tensor_overrides.compiled();
    let n_cpu = usize::try_from(o.n_cpu_moe).unwrap_or(usize::MAX);
    let mut out = vec![0u64; layers];
    for t in pieces {
        let Home::Layer(l) = t.home else { continue };
        let rule = first_rule(&rules, t);
        let to_cpu = match rule {
            Some(b) => b == Buffer::Cpu,
            None => l < n_cpu && named_by_cpu_moe(t.role),
        };
        if !to_cpu && let Some(slot) = out.get_mut(l) {
            *slot = slot.saturating_add(t.bytes);
        }
    }
    out
}

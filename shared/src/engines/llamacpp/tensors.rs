//! The tensors llama.cpp loads, by name: the GGUF header's own names when
//! the plan loads the GGUF as stored, else llama.cpp's names for the tensor
//! layout's groups (src/llama-arch.cpp `LLM_TENSOR_NAMES`, llama.cpp as
//! vendored by llama-cpp-python 0.3.36), with bytes on the footing of the
//! plan's weights so per-device sums add up to them.

use std::borrow::Cow;

use crate::arch::{Role, TensorGroup, TensorLayout, params::Placement};
use crate::formats::{LayoutContext, WeightFormat};
use crate::model::Model;
use crate::plan::{Plan, Scenario, WeightPlan};

/// Where a tensor sits before any override: llama.cpp's input layer (kept
/// on the CPU), a repeating layer, or the output layer
/// (`LLM_TENSOR_LAYER_INPUT / REPEATING / OUTPUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Home {
    Input,
    Layer(usize),
    Output,
    /// The token embedding again, as the output layer's head of a model
    /// whose head is tied to it: llama.cpp creates it `TENSOR_DUPLICATED`
    /// in the output layer's buffer (src/llama-model.cpp, "init from the
    /// input tok embed"), a copy of its own on a GPU, and none where that
    /// buffer is the CPU's, which already holds the embedding
    /// (`create_tensor`: "check if the original tensor was allocated in the
    /// same buffer type context"). Gemma 3 1B's Q8_0 log: 1013.54 MiB on
    /// the GPU with the copy, 306.00 MiB of embedding on the CPU.
    OutputCopy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    pub name: Name,
    pub home: Home,
    pub role: Role,
    pub bytes: u64,
}

/// A tensor's name: the GGUF header's, or llama.cpp's for a layout group,
/// written only when an `-ot` rule or a report asks for it (most plans have
/// no rule, and writing every name took most of an estimate: issue 39).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Name {
    Stored(String),
    Layout { stem: &'static str, role: Role, layer: Option<u32> },
}

impl Name {
    /// The name as llama.cpp spells it.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Self::Stored(n) => Cow::Borrowed(n),
            Self::Layout { stem, role, layer } => Cow::Owned(name(stem, *role, *layer)),
        }
    }

    /// What follows `blk.{layer}.` in a name of layer `layer`.
    pub fn in_layer(&self, layer: usize) -> Option<Cow<'_, str>> {
        match self {
            Self::Stored(n) => {
                let (l, rest) = n.strip_prefix("blk.")?.split_once('.')?;
                (l.parse::<usize>().ok()? == layer).then_some(Cow::Borrowed(rest))
            }
            Self::Layout { stem, role, layer: Some(l) } if *l as usize == layer => {
                Some(Cow::Owned(format!("{stem}.{}", suffix(*role))))
            }
            Self::Layout { .. } => None,
        }
    }
}

/// The multimodal tower and projector: llama.cpp keeps them in the
/// `--mmproj` file, never in the text model's GGUF.
pub(crate) fn is_multimodal(role: Role) -> bool {
    matches!(role, Role::VisionLinear | Role::VisionOther | Role::Projector | Role::Audio)
}

fn home(role: Role, layer: Option<u32>) -> Home {
    let g = TensorGroup { role, layer, params: 0, in_features: 0 };
    match TensorLayout::placement(&g) {
        Placement::First => Home::Input,
        Placement::Last => Home::Output,
        Placement::Layer(l) => Home::Layer(l as usize),
    }
}

/// How a model's GGUF names what the layout groups by role
/// (convert_hf_to_gguf / gguf-py `tensor_mapping.py` keep a checkpoint's
/// fused tensors fused): gate and up apart unless the checkpoint fuses them
/// (Phi-3's and GLM-4's `gate_up_proj` is one `ffn_up`), and q, k and v as
/// one `attn_qkv` where it does.
#[derive(Debug, Clone, Copy)]
struct Naming {
    gated: bool,
    fused_qkv: bool,
}

impl Naming {
    fn of(model: &Model, ctx: &LayoutContext) -> Self {
        Self { gated: model.arch.text.mlp_gated && !fuses_gate_up(model.arch.family), fused_qkv: ctx.fused_qkv }
    }
}

/// Whether the family's checkpoint keeps gate and up as one `gate_up_proj`,
/// one `ffn_up` of twice the width in its GGUF (`llm_build_glm4`,
/// `llm_build_phi3`, src/llama-model.cpp).
pub(super) fn fuses_gate_up(family: crate::arch::Family) -> bool {
    matches!(family, crate::arch::Family::Glm4 | crate::arch::Family::Phi3)
}

/// llama.cpp's name stems for one group (two for a gated up projection,
/// which the layout keeps as one group of gate and up together).
fn stems(role: Role, naming: Naming) -> &'static [&'static str] {
    let gated = naming.gated;
    match role {
        Role::AttnQ | Role::AttnK | Role::AttnV if naming.fused_qkv => &["attn_qkv"],
        Role::Embedding => &["token_embd"],
        Role::PositionEmbedding => &["position_embd"],
        Role::EmbedProjection => &["token_embd_proj"],
        Role::LmHead => &["output"],
        Role::AttnQ => &["attn_q"],
        Role::AttnK => &["attn_k"],
        Role::AttnV => &["attn_v"],
        Role::AttnO => &["attn_output"],
        Role::AttnQkv => &["attn_qkv"],
        Role::MlaDown => &["attn_kv_a_mqa"],
        Role::MlaUp => &["attn_kv_b"],
        Role::MlpUp if gated => &["ffn_gate", "ffn_up"],
        Role::MlpUp => &["ffn_up"],
        Role::MlpDown => &["ffn_down"],
        Role::ExpertUp if gated => &["ffn_gate_exps", "ffn_up_exps"],
        Role::ExpertUp => &["ffn_up_exps"],
        Role::ExpertDown => &["ffn_down_exps"],
        Role::SharedExpertUp if gated => &["ffn_gate_shexp", "ffn_up_shexp"],
        Role::SharedExpertUp => &["ffn_up_shexp"],
        Role::SharedExpertDown => &["ffn_down_shexp"],
        Role::Router => &["ffn_gate_inp"],
        Role::Norm => &["attn_norm"],
        Role::Bias => &["attn_q"],
        // `ffn_{gate,up,down}_exps.bias` (src/llama-model.cpp, LLM_ARCH_OPENAI_MOE):
        // n_ff_exp, n_ff_exp and n_embd per expert, thirds of gpt-oss's group
        // (its n_ff_exp is n_embd, 2880).
        Role::ExpertBias if gated => &["ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"],
        Role::ExpertBias => &["ffn_up_exps", "ffn_down_exps"],
        Role::Recurrent => &["ssm_in"],
        Role::VisionLinear | Role::VisionOther => &["v"],
        Role::Projector => &["mm"],
        Role::Audio => &["a"],
        Role::Mtp => &["nextn"],
        Role::Other => &["other"],
    }
}

fn suffix(role: Role) -> &'static str {
    if matches!(role, Role::Bias | Role::ExpertBias) { "bias" } else { "weight" }
}

fn name(stem: &str, role: Role, layer: Option<u32>) -> String {
    let suffix = suffix(role);
    match (layer, role) {
        (Some(l), _) => format!("blk.{l}.{stem}.{suffix}"),
        (None, Role::Norm) => "output_norm.weight".to_owned(),
        (None, _) => format!("{stem}.{suffix}"),
    }
}

/// Every text-model tensor llama.cpp loads, with its bytes: exact from a
/// GGUF header (or a safetensors checkpoint's groups) when the plan loads
/// the checkpoint as stored, else the format's estimate rescaled so each
/// layer's pieces sum to the plan's bytes for it.
pub(crate) fn pieces<E>(p: &Plan<'_, E>) -> Vec<Piece> {
    pieces_of(p.model, p.scenario.weights, &p.weights)
}

/// The tensors of one model in one format, built once for the many plans
/// a solver tries that differ only in llama.cpp's flags (`-ngl`,
/// `--n-cpu-moe`, `-ot`, `--tensor-split`): a 70B's ~720 pieces were built
/// again for every `-ngl` candidate (issue 39).
#[derive(Debug, Clone)]
pub(crate) struct Tensors<'m> {
    model: &'m Model,
    format: WeightFormat,
    /// The tensor parallelism of `weights` (1 in every plan llama.cpp
    /// accepts: it splits layers, never tensors).
    tp: u64,
    /// The weights the pieces are rescaled onto.
    weights: WeightPlan,
    pieces: Vec<Piece>,
    homes: HomeBytes,
}

impl<'m> Tensors<'m> {
    /// The tensors of `model` in `format`, as a llama.cpp plan loads them.
    pub fn new(model: &'m Model, format: WeightFormat) -> Self {
        let weights = WeightPlan::new(model, format, 1);
        let pieces = pieces_of(model, format, &weights);
        let homes = HomeBytes::of(&pieces, weights.per_layer.len());
        Self { model, format, tp: 1, weights, pieces, homes }
    }

    /// The tensors of the plan `p`.
    pub fn of<E>(p: &Plan<'m, E>) -> Self {
        let (format, tp) = (p.scenario.weights, p.scenario.tp);
        let pieces = pieces(p);
        let homes = HomeBytes::of(&pieces, p.weights.per_layer.len());
        Self { model: p.model, format, tp, weights: p.weights.clone(), pieces, homes }
    }

    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// The weights of a plan of `s` (of this model): these when it has the
    /// same format and tensor parallelism.
    pub fn weights_for<E>(&self, s: &Scenario<E>) -> Option<WeightPlan> {
        (s.weights == self.format && s.tp == self.tp).then(|| self.weights.clone())
    }

    /// The pieces of `p`: these when `p` has the same model, format and
    /// weights (what [`pieces`] reads), else its own.
    pub fn of_plan<E>(&self, p: &Plan<'_, E>) -> Cow<'_, [Piece]> {
        if self.serves(p) { Cow::Borrowed(&self.pieces) } else { Cow::Owned(pieces(p)) }
    }

    /// [`HomeBytes`] of `p`, as [`Tensors::of_plan`].
    pub fn homes_of_plan<E>(&self, p: &Plan<'_, E>) -> Cow<'_, HomeBytes> {
        if self.serves(p) { Cow::Borrowed(&self.homes) } else { Cow::Owned(home_bytes(p)) }
    }

    fn serves<E>(&self, p: &Plan<'_, E>) -> bool {
        std::ptr::eq(self.model, p.model) && self.format == p.scenario.weights && self.weights == p.weights
    }
}

/// [`pieces`] of `model` in `format` on the footing of `weights`.
fn pieces_of(model: &Model, format: WeightFormat, weights: &WeightPlan) -> Vec<Piece> {
    let mut out = Vec::new();
    each_piece(model, format, weights, &mut out);
    out
}

/// Each home's bytes of every piece: what the pieces put on each device
/// when no rule moves one (no `-ot`, no `--n-cpu-moe`, no row split).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HomeBytes {
    /// The repeating layers in order, then the input layer and the output layer.
    bytes: Vec<u64>,
    /// Each home's largest matrix weight (see [`is_matrix`]).
    largest: Vec<u64>,
    /// The largest Q, K, V, output, gate or up, and down matrices of any
    /// repeating layer (a MoE layer's expert stacks in the last two): the
    /// copies a GPU stages for a layer left in host memory (`graph::Host`).
    pub roles: [u64; 6],
}

/// A weight a matmul reads (`MUL_MAT`, `MUL_MAT_ID`), which ggml's scheduler
/// may run on a GPU while it stays in host memory; not the token embedding
/// (`GET_ROWS`) nor the norms.
pub(crate) fn is_matrix(role: Role) -> bool {
    role.is_linear() || role == Role::LmHead || super::devices::is_routed_expert(role)
}

impl HomeBytes {
    fn new(layers: usize) -> Self {
        Self { bytes: vec![0; layers + 3], largest: vec![0; layers + 3], roles: [0; 6] }
    }

    /// The sums of `pieces`, of a model of `layers` repeating layers.
    fn of(pieces: &[Piece], layers: usize) -> Self {
        let mut out = Self::new(layers);
        for t in pieces {
            out.piece(|| t.name.clone(), t.home, t.role, t.bytes);
        }
        out
    }

    fn add(&mut self, h: Home, bytes: u64) {
        let s = self.slot(h);
        self.bytes[s] = self.bytes[s].saturating_add(bytes);
    }

    /// The largest matrix weight of home `h`.
    pub fn largest(&self, h: Home) -> u64 {
        self.largest[self.slot(h)]
    }

    fn at(&self, h: Home) -> u64 {
        self.bytes[self.slot(h)]
    }

    fn slot(&self, h: Home) -> usize {
        let layers = self.bytes.len() - 3;
        match h {
            Home::Layer(l) => l,
            Home::Input => layers,
            Home::Output => layers + 1,
            Home::OutputCopy => layers + 2,
        }
    }

    /// Every home and its bytes.
    pub fn iter(&self) -> impl Iterator<Item = (Home, u64)> + '_ {
        let layers = self.bytes.len() - 3;
        let home = move |i: usize| match i {
            i if i < layers => Home::Layer(i),
            i if i == layers => Home::Input,
            i if i == layers + 1 => Home::Output,
            _ => Home::OutputCopy,
        };
        self.bytes.iter().enumerate().map(move |(i, &b)| (home(i), b))
    }
}

/// [`HomeBytes`] of the plan `p`, without writing a piece.
pub(crate) fn home_bytes<E>(p: &Plan<'_, E>) -> HomeBytes {
    let mut out = HomeBytes::new(p.weights.per_layer.len());
    each_piece(p.model, p.scenario.weights, &p.weights, &mut out);
    out
}

/// What [`each_piece`] hands every piece to.
trait Sink {
    /// How many pieces follow.
    fn reserve(&mut self, count: usize);
    /// One piece; `name` writes its name (or copies the stored one).
    fn piece(&mut self, name: impl FnOnce() -> Name, home: Home, role: Role, bytes: u64);
}

impl Sink for Vec<Piece> {
    fn reserve(&mut self, count: usize) {
        Vec::reserve(self, count);
    }

    fn piece(&mut self, name: impl FnOnce() -> Name, home: Home, role: Role, bytes: u64) {
        self.push(Piece { name: name(), home, role, bytes });
    }
}

impl Sink for HomeBytes {
    fn reserve(&mut self, _: usize) {}

    fn piece(&mut self, _: impl FnOnce() -> Name, home: Home, role: Role, bytes: u64) {
        self.add(home, bytes);
        if is_matrix(role) {
            let s = self.slot(home);
            self.largest[s] = self.largest[s].max(bytes);
        }
        note_role(&mut self.roles, home, role, bytes);
    }
}

/// A repeating layer's matrix in [`HomeBytes::roles`]: Q, K, V, output,
/// gate or up, down.
pub(crate) fn note_role(roles: &mut [u64; 6], home: Home, role: Role, bytes: u64) {
    let slot = match role {
        Role::AttnQ => 0,
        Role::AttnK => 1,
        Role::AttnV => 2,
        Role::AttnO => 3,
        // A MoE layer's expert stacks stand in for its FFN's matrices.
        Role::MlpUp | Role::ExpertUp => 4,
        Role::MlpDown | Role::ExpertDown => 5,
        _ => return,
    };
    if let Home::Layer(_) = home {
        roles[slot] = roles[slot].max(bytes);
    }
}

/// Every piece of [`pieces`], in order, handed to `sink`: as a list of
/// pieces for the rules that match names and roles, or summed per home
/// when no rule moves one (an estimate's usual case, so the ~300 pieces of
/// an 8B are not written for every plan: issue 39).
fn each_piece(model: &Model, format: WeightFormat, weights: &WeightPlan, sink: &mut impl Sink) {
    let layers = weights.per_layer.len();
    let as_stored = format == model.default_format();
    let keep = |role: Role, layer: Option<u32>| {
        role != Role::Mtp && !is_multimodal(role) && layer.is_none_or(|l| (l as usize) < layers)
    };
    let ctx = model.layout_context();
    let naming = Naming::of(model, &ctx);
    if let Some(c) = model.checkpoint.as_ref().filter(|_| as_stored) {
        if !c.gguf_tensors.is_empty() {
            sink.reserve(c.gguf_tensors.len() + 1);
            for t in c.gguf_tensors.iter().filter(|t| keep(t.role, t.layer)) {
                sink.piece(|| Name::Stored(t.name.clone()), home(t.role, t.layer), t.role, t.bytes);
            }
            if let Some(e) = tied_embedding(c.gguf_tensors.iter().map(|t| (t.role, t.layer, t))) {
                sink.piece(|| Name::Stored(e.name.clone()), Home::OutputCopy, Role::LmHead, e.bytes);
            }
            return;
        }
        for g in c.layout.groups.iter().filter(|g| keep(g.role, g.layer)) {
            split(sink, g.role, g.layer, home(g.role, g.layer), g.bytes, naming);
        }
        if let Some(bytes) = tied_embedding(c.layout.groups.iter().map(|g| (g.role, g.layer, g.bytes))) {
            output_copy(sink, bytes, naming);
        }
        return;
    }
    // The estimate per home, to rescale onto the plan's bytes for it.
    let mut estimated = HomeBytes::new(layers);
    // Every group the plan's weights count (the tower too, which sits with
    // the input layer there), to rescale by; the tower is then left out.
    // One pass, each group's home and bytes kept, the output sized once:
    // this runs for every plan (issue 39).
    let mut groups: Vec<(&TensorGroup, Home, u64)> = Vec::with_capacity(model.layout.groups.len());
    let mut count = 0;
    for g in model.layout.groups.iter().filter(|g| g.role != Role::Mtp && g.layer.is_none_or(|l| (l as usize) < layers))
    {
        let h = home(g.role, g.layer);
        let b = format.bpw(g, &ctx).bytes(g.params);
        estimated.add(h, b);
        if !is_multimodal(g.role) {
            count += stems(g.role, naming).len();
        }
        groups.push((g, h, b));
    }
    let planned = |h: Home| match h {
        Home::Layer(l) => weights.per_layer[l],
        Home::Input => weights.first,
        Home::Output => weights.last,
        // No group is homed there; the copy is sized from the embedding.
        Home::OutputCopy => 0,
    };
    sink.reserve(count + 1);
    let rescaled = |h: Home, b: u64| {
        let est = estimated.at(h);
        if est == 0 {
            0
        } else {
            u64::try_from(u128::from(planned(h)) * u128::from(b) / u128::from(est)).unwrap_or(u64::MAX)
        }
    };
    for &(g, h, b) in groups.iter().filter(|(g, ..)| !is_multimodal(g.role)) {
        split(sink, g.role, g.layer, h, rescaled(h, b), naming);
    }
    if let Some((h, b)) = tied_embedding(groups.iter().map(|&(g, h, b)| (g.role, g.layer, (h, b)))) {
        output_copy(sink, rescaled(h, b), naming);
    }
}

/// The token embedding of a model with no head of its own (its head is tied
/// to it), from `(role, layer, item)` in one pass; `None` when it has a head.
fn tied_embedding<T>(groups: impl IntoIterator<Item = (Role, Option<u32>, T)>) -> Option<T> {
    let mut embedding = None;
    for (role, layer, item) in groups {
        match role {
            Role::LmHead => return None,
            Role::Embedding if layer.is_none() && embedding.is_none() => embedding = Some(item),
            _ => {}
        }
    }
    embedding
}

/// The tied head's copy of the token embedding ([`Home::OutputCopy`]), by
/// llama.cpp's name for the embedding.
fn output_copy(sink: &mut impl Sink, bytes: u64, naming: Naming) {
    let stem = stems(Role::Embedding, naming).first().copied().unwrap_or("token_embd");
    sink.piece(|| Name::Layout { stem, role: Role::Embedding, layer: None }, Home::OutputCopy, Role::LmHead, bytes);
}

/// One group as llama.cpp's tensors: a gated up projection is two tensors
/// of the same shape (gate and up), so half each.
fn split(sink: &mut impl Sink, role: Role, layer: Option<u32>, home: Home, bytes: u64, naming: Naming) {
    let stems = stems(role, naming);
    let parts = stems.len() as u64;
    for (i, &stem) in stems.iter().enumerate() {
        // The first part takes the odd byte, so the parts sum to `bytes`.
        let part = bytes / parts + if i == 0 { bytes % parts } else { 0 };
        sink.piece(|| Name::Layout { stem, role, layer }, home, role, part);
    }
}

/// The multimodal projector's bytes on the plan's footing: the tower and
/// projector groups of the layout (what an `--mmproj` GGUF holds).
pub(crate) fn multimodal_bytes<E>(p: &Plan<'_, E>) -> u64 {
    let model = p.model;
    let as_stored = p.scenario.weights == model.default_format();
    if let Some(c) = model.checkpoint.as_ref().filter(|_| as_stored) {
        return c.layout.groups.iter().filter(|g| is_multimodal(g.role)).fold(0u64, |a, g| a.saturating_add(g.bytes));
    }
    let ctx = model.layout_context();
    model
        .layout
        .groups
        .iter()
        .filter(|g| is_multimodal(g.role))
        .fold(0u64, |a, g| a.saturating_add(p.scenario.weights.bpw(g, &ctx).bytes(g.params)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{Engine, EnginePlan, Scenario, llamacpp};

    /// A solver's tensors serve the plans of their model and format, and
    /// any other plan builds its own: the same pieces either way.
    #[test]
    fn tensors_built_once_serve_only_their_own_plans() {
        let m = Model::preset("llama-3.1-8b").unwrap();
        let format = |id| WeightFormat::parse(id).unwrap();
        let plan = |f| {
            let s =
                Scenario { weights: f, engine: Engine::LlamaCpp(llamacpp::Options::default()), ..Scenario::default() };
            EnginePlan::new(&m, s.validate().unwrap())
        };
        let t = Tensors::new(&m, format("q4_k_m"));
        let same = plan(format("q4_k_m"));
        assert!(matches!(t.of_plan(&same), Cow::Borrowed(_)));
        assert_eq!(t.of_plan(&same).as_ref(), pieces(&same).as_slice());
        assert_eq!(t.weights_for(&same.scenario).as_ref(), Some(&same.weights));
        let other = plan(format("q8_0"));
        assert!(matches!(t.of_plan(&other), Cow::Owned(_)));
        assert_eq!(t.of_plan(&other).as_ref(), pieces(&other).as_slice());
        assert_eq!(t.weights_for(&other.scenario), None);
        // Summed per home, without writing a piece: the same as the pieces' sums.
        for p in [&same, &other] {
            assert_eq!(home_bytes(p), HomeBytes::of(&pieces(p), p.weights.per_layer.len()));
        }
        assert!(matches!(t.homes_of_plan(&same), Cow::Borrowed(_)));
        assert_eq!(t.homes_of_plan(&other).as_ref(), &home_bytes(&other));
    }

    /// gpt-oss's routed-expert biases are named as its GGUF names them
    /// (src/llama-model.cpp, LLM_ARCH_OPENAI_MOE: `ffn_gate_exps.bias`
    /// {n_ff_exp, n_expert}, `ffn_up_exps.bias` the same, `ffn_down_exps.bias`
    /// {n_embd, n_expert}; F32), so the `_exps` rules of `--n-cpu-moe` and
    /// `-ot` find them; the attention's stay `attn_*`.
    #[test]
    fn expert_biases_take_the_experts_names() {
        let m = Model::preset("gpt-oss-20b").unwrap();
        let s = Scenario {
            weights: WeightFormat::parse("gguf-mxfp4-moe").unwrap(),
            engine: Engine::LlamaCpp(llamacpp::Options::default()),
            ..Scenario::default()
        };
        let p = EnginePlan::new(&m, s.validate().unwrap());
        let pieces = pieces(&p);
        let biases: Vec<(String, u64)> = pieces
            .iter()
            .filter(|t| t.role == Role::ExpertBias && t.home == Home::Layer(5))
            .map(|t| (t.name.text().into_owned(), t.bytes))
            .collect();
        let each = 32 * 2880 * 4;
        let names = ["blk.5.ffn_gate_exps.bias", "blk.5.ffn_up_exps.bias", "blk.5.ffn_down_exps.bias"];
        assert_eq!(biases, names.map(|n| (n.to_owned(), each)).to_vec());
        let layer: Vec<String> = pieces.iter().filter_map(|t| t.name.in_layer(5).map(|n| n.into_owned())).collect();
        assert!(layer.contains(&"attn_q.bias".to_owned()), "{layer:?}");
    }

    /// A model whose checkpoint fuses q/k/v and gate/up is named as its GGUF
    /// names it: Phi-4's `attn_qkv` and one `ffn_up` (the Phi-4 Q4_K_M log's
    /// 40 q5_K tensors are those `attn_qkv`), so `-ot attn_qkv=CPU` matches.
    #[test]
    fn fused_checkpoints_keep_their_fused_names() {
        let names = |id: &str| {
            let m = Model::preset(id).unwrap();
            let s = Scenario {
                weights: WeightFormat::parse("q4_k_m").unwrap(),
                engine: Engine::LlamaCpp(llamacpp::Options::default()),
                ..Scenario::default()
            };
            let p = EnginePlan::new(&m, s.validate().unwrap());
            pieces(&p).iter().filter_map(|t| t.name.in_layer(0).map(|n| n.into_owned())).collect::<Vec<_>>()
        };
        let phi = names("phi-4");
        assert!(phi.contains(&"attn_qkv.weight".to_owned()), "{phi:?}");
        assert!(phi.contains(&"ffn_up.weight".to_owned()), "{phi:?}");
        assert!(!phi.iter().any(|n| n == "attn_q.weight" || n == "ffn_gate.weight"), "{phi:?}");
        let llama = names("llama-3.1-8b");
        for n in ["attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight", "ffn_up.weight"] {
            assert!(llama.contains(&n.to_owned()), "{n}: {llama:?}");
        }
    }
}

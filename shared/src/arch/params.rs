//! The tensor layout of a model: every parameter group with its role and
//! layer, derived from the architecture. Weight bytes, quantisation rules,
//! layer-wise splits and probe chunks all read this one layout.

use serde::{Deserialize, Serialize};

use super::{Architecture, AttentionKind, Ffn, LayerAttention, LayerSpec, NormKind, Recurrent, TextModel};

/// What a group of parameters is, which decides how each weight format
/// stores it (quantised linear weights vs 16/32-bit embeddings and norms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Embedding,
    PositionEmbedding,
    /// OPT-350m's project_in/out between embedding and hidden width.
    EmbedProjection,
    LmHead,
    AttnQ,
    AttnK,
    AttnV,
    AttnO,
    /// Gate and up projections of a dense MLP.
    MlpUp,
    MlpDown,
    ExpertUp,
    ExpertDown,
    SharedExpertUp,
    SharedExpertDown,
    Router,
    Norm,
    Bias,
    VisionLinear,
    VisionOther,
    /// Fused q/k/v projection (`qkv_proj`, `c_attn`, `attn_qkv`).
    AttnQkv,
    /// MLA down-projections to the latents (`q_a_proj`, `kv_a_proj_with_mqa`),
    /// replicated under tensor parallelism.
    MlaDown,
    /// MLA up-projections from the latents (`q_b_proj`, `kv_b_proj`).
    MlaUp,
    /// Multimodal projector between a tower and the language model.
    Projector,
    /// Audio encoder.
    Audio,
    /// Multi-token-prediction head (`mtp.*`, `nextn`, layers past the last).
    Mtp,
    /// Recurrent / linear-attention mixers (Mamba, gated DeltaNet, short convolutions).
    Recurrent,
    /// A checkpoint tensor no rule classifies: counted, shown as "other".
    Other,
    /// The routed experts' biases (gpt-oss's `gate_up_proj_bias` E × 2I and
    /// `down_proj_bias` E × H): vectors stored as biases are, placed and
    /// sharded with their experts. llama.cpp names them
    /// `blk.N.ffn_{gate,up,down}_exps.bias`, which its `--n-cpu-moe` rules
    /// move with the expert weights.
    ExpertBias,
}

/// Roles a checkpoint's quantisation leaves in its 16-bit dtype
/// (`modules_to_not_convert`, compressed-tensors `ignore`), beyond the rules
/// every format already has (embeddings, head, norms, routers, vision).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct KeptRoles(u64);

impl KeptRoles {
    pub fn with(self, role: Role) -> Self {
        Self(self.0 | 1 << role as u64)
    }
    pub fn contains(self, role: Role) -> bool {
        self.0 & 1 << role as u64 != 0
    }
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }
}

impl Role {
    /// Weight matrices of linear layers: what quantisation methods quantise.
    pub fn is_linear(self) -> bool {
        use Role::*;
        matches!(
            self,
            EmbedProjection
                | AttnQkv
                | MlaDown
                | MlaUp
                | AttnQ
                | AttnK
                | AttnV
                | AttnO
                | MlpUp
                | MlpDown
                | ExpertUp
                | ExpertDown
                | SharedExpertUp
                | SharedExpertDown
        )
    }

    /// The summary bucket shown to users.
    pub fn category(self) -> Category {
        use Role::*;
        match self {
            Embedding | PositionEmbedding | EmbedProjection => Category::Embeddings,
            LmHead => Category::LmHead,
            AttnQ | AttnK | AttnV | AttnO | AttnQkv | MlaDown | MlaUp => Category::Attention,
            MlpUp | MlpDown => Category::Mlp,
            ExpertUp | ExpertDown | SharedExpertUp | SharedExpertDown | Router => Category::Experts,
            Norm | Bias | ExpertBias => Category::NormsAndBiases,
            VisionLinear | VisionOther | Projector | Audio => Category::Vision,
            Mtp | Recurrent | Other => Category::Other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Embeddings,
    Attention,
    Mlp,
    Experts,
    NormsAndBiases,
    LmHead,
    Vision,
    /// MTP heads, recurrent mixers, unclassified checkpoint tensors.
    Other,
}

impl Category {
    /// How many categories there are (see [`TensorLayout::params_by_category`]).
    pub const COUNT: usize = Self::Other as usize + 1;
}

/// One group of tensors of the same role in the same place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorGroup {
    pub role: Role,
    /// The decoder layer, or `None` for embeddings, head, final norm, vision.
    pub layer: Option<u32>,
    pub params: u64,
    /// Input width of the linear layers in the group (for per-row scales and
    /// per-column quantisation groups); 0 for non-linear tensors.
    pub in_features: u64,
}

/// Where a non-layer group sits in a layer-wise split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Before the first layer (embeddings, vision tower).
    First,
    Layer(u32),
    /// After the last layer (final norm, lm_head).
    Last,
}

/// All parameter groups of a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorLayout {
    pub groups: Vec<TensorGroup>,
    pub num_layers: u32,
}

impl TensorLayout {
    pub fn total_params(&self) -> u64 {
        self.groups.iter().fold(0u64, |acc, g| acc.saturating_add(g.params))
    }

    /// Parameters of every category in one pass over the groups, indexed by
    /// `Category as usize`: an estimate reads all eight twice, and a pass
    /// per category over a 61-layer MoE's 845 groups was a quarter of its
    /// time (issue 39).
    pub fn params_by_category(&self) -> [u64; Category::COUNT] {
        let mut sums = [0u64; Category::COUNT];
        for g in &self.groups {
            let sum = &mut sums[g.role.category() as usize];
            *sum = sum.saturating_add(g.params);
        }
        sums
    }

    pub fn params_in(&self, category: Category) -> u64 {
        self.groups.iter().filter(|g| g.role.category() == category).fold(0u64, |acc, g| acc.saturating_add(g.params))
    }

    pub fn placement(group: &TensorGroup) -> Placement {
        match (group.layer, group.role) {
            (Some(l), _) => Placement::Layer(l),
            (None, super::Role::LmHead | super::Role::Norm | super::Role::Mtp) => Placement::Last,
            (None, _) => Placement::First,
        }
    }
}

struct Builder {
    groups: Vec<TensorGroup>,
}

impl Builder {
    fn push(&mut self, role: Role, layer: Option<u32>, params: u64, in_features: u64) {
        if params > 0 {
            self.groups.push(TensorGroup { role, layer, params, in_features });
        }
    }
    fn linear(&mut self, role: Role, layer: u32, rows_in: u64, cols_out: u64) {
        self.push(role, Some(layer), rows_in.saturating_mul(cols_out), rows_in);
    }
    fn vector(&mut self, role: Role, layer: Option<u32>, len: u64) {
        self.push(role, layer, len, 0);
    }
}

pub(super) fn layout(arch: &Architecture) -> TensorLayout {
    let t = &arch.text;
    let mut b = Builder { groups: Vec::with_capacity(t.layers.len() * 12 + 8) };
    let width = t.embed_proj_dim.unwrap_or(t.hidden_size);
    // Rows `width` wide, as a checkpoint's `[vocab, width]` tensor reads.
    b.push(Role::Embedding, None, t.embedding_rows.saturating_mul(width), width);
    b.vector(Role::PositionEmbedding, None, t.learned_positions.saturating_mul(t.hidden_size));
    let norm_width = |n: u64| match t.norm {
        NormKind::Layer if !t.extra.norm_without_bias => n.saturating_mul(2),
        _ => n,
    };
    if t.extra.embedding_norm {
        b.vector(Role::Norm, None, norm_width(t.hidden_size));
    }
    for (i, spec) in t.layers.iter().enumerate() {
        let l = i as u32;
        if spec.attention != LayerAttention::None {
            attention(&mut b, t, l, spec, arch.family);
        }
        if let (true, Some(r)) = (spec.state, t.recurrent) {
            recurrent(&mut b, t.hidden_size, l, r);
        }
        b.vector(Role::Norm, Some(l), norm_width(t.hidden_size).saturating_mul(t.norms_per_layer));
        match (spec.ffn, t.moe) {
            (Ffn::None, _) => {}
            (Ffn::Moe, Some(m)) => {
                let per_expert_up = if t.mlp_gated { 2 } else { 1 };
                let n = m.num_experts;
                b.push(
                    Role::ExpertUp,
                    Some(l),
                    t.hidden_size
                        .saturating_mul(m.expert_intermediate_size)
                        .saturating_mul(per_expert_up)
                        .saturating_mul(n),
                    t.hidden_size,
                );
                b.push(
                    Role::ExpertDown,
                    Some(l),
                    m.expert_intermediate_size.saturating_mul(t.hidden_size).saturating_mul(n),
                    m.expert_intermediate_size,
                );
                let shared = if spec.shape.ffn_width == 0 { m.shared_intermediate_size } else { spec.shape.ffn_width };
                b.linear(Role::SharedExpertUp, l, t.hidden_size, shared.saturating_mul(per_expert_up));
                b.linear(Role::SharedExpertDown, l, shared, t.hidden_size);
                b.vector(Role::Router, Some(l), t.hidden_size.saturating_mul(n));
                if t.extra.router_scales {
                    b.vector(Role::Router, Some(l), t.hidden_size.saturating_add(n));
                }
                if m.shared_expert_gate {
                    b.vector(Role::Router, Some(l), t.hidden_size);
                }
                if spec.shape.hash_routed {
                    // DeepSeek-V4's `hash_moe` layers: `tid2eid`, the experts
                    // of every token id, in place of the correction bias
                    // (transformers 5.25 `DeepseekV4HashRouter`; vLLM 0.34
                    // nvidia/model.py `gate.tid2eid`).
                    b.vector(Role::Router, Some(l), t.vocab_size.saturating_mul(m.experts_per_token));
                } else if m.router_bias {
                    b.vector(Role::Bias, Some(l), n);
                }
                if m.expert_bias {
                    // gpt-oss: gate_up_proj_bias (E × 2I) and down_proj_bias (E × H);
                    // its router bias is `router_bias`.
                    let per_expert =
                        m.expert_intermediate_size.saturating_mul(per_expert_up).saturating_add(t.hidden_size);
                    b.vector(Role::ExpertBias, Some(l), per_expert.saturating_mul(n));
                }
            }
            _ => {
                let up = if t.mlp_gated { 2 } else { 1 };
                let width = if spec.shape.ffn_width == 0 { t.intermediate_size } else { spec.shape.ffn_width };
                b.linear(Role::MlpUp, l, t.hidden_size, width.saturating_mul(up));
                b.linear(Role::MlpDown, l, width, t.hidden_size);
                if t.mlp_bias {
                    b.vector(Role::Bias, Some(l), t.intermediate_size.saturating_mul(up).saturating_add(t.hidden_size));
                }
            }
        }
        if t.extra.activation_params > 0 {
            b.vector(Role::Norm, Some(l), t.extra.activation_params);
        }
        // DeepSeek-V4's hyper-connections, one before attention and one
        // before the MLP (`attn_hc`, `ffn_hc`: `fn` of (2 + n) × n rows over
        // the n streams, `base` of (2 + n) × n, three scales), fp32 in the
        // checkpoint (transformers 5.25 `DeepseekV4HyperConnection`).
        let streams = t.extra.hyper_connections;
        if streams > 0 {
            let mix = streams.saturating_add(2).saturating_mul(streams);
            let one = mix.saturating_mul(streams.saturating_mul(t.hidden_size)).saturating_add(mix).saturating_add(3);
            b.vector(Role::Norm, Some(l), one.saturating_mul(2));
        }
        // Gemma 4's per-layer input: a gate into its width and a projection
        // back (`per_layer_input_gate`, `per_layer_projection`); its norm is
        // one of `norms_per_layer`.
        let pli = t.extra.per_layer_input;
        if pli > 0 {
            b.linear(Role::MlpUp, l, t.hidden_size, pli);
            b.linear(Role::MlpDown, l, pli, t.hidden_size);
        }
        // Gemma 3n (`Gemma3nTextAltUp`): the output scale, the correction and
        // prediction coefficients, the modality router and its norm.
        let n = t.extra.altup_inputs;
        if n > 0 {
            let coefs = n.saturating_mul(n).saturating_add(n.saturating_pow(3));
            b.vector(Role::Norm, Some(l), t.hidden_size.saturating_mul(2).saturating_add(coefs));
            b.vector(Role::Router, Some(l), t.hidden_size.saturating_mul(n));
        }
        // `Gemma3nTextLaurelBlock`: hidden → rank → hidden and a norm.
        let rank = t.extra.laurel_rank;
        if rank > 0 {
            b.linear(Role::MlpUp, l, t.hidden_size, rank);
            b.linear(Role::MlpDown, l, rank, t.hidden_size);
            b.vector(Role::Norm, Some(l), t.hidden_size);
        }
    }
    if t.extra.altup_inputs > 1 {
        // `altup_projections` and `altup_unembed_projections`: hidden × hidden
        // for each stream but the first.
        let streams = t.extra.altup_inputs - 1;
        b.push(
            Role::EmbedProjection,
            None,
            t.hidden_size.saturating_mul(t.hidden_size).saturating_mul(streams * 2),
            t.hidden_size,
        );
    }
    if t.extra.per_layer_input > 0 {
        // `embed_tokens_per_layer` (one slice per layer), the
        // `per_layer_model_projection` from the hidden state and its norm.
        let all_layers = t.extra.per_layer_input.saturating_mul(t.layers.len() as u64);
        b.vector(Role::Embedding, None, t.extra.per_layer_vocab.saturating_mul(all_layers));
        b.push(Role::EmbedProjection, None, t.hidden_size.saturating_mul(all_layers), t.hidden_size);
        b.vector(Role::Norm, None, t.extra.per_layer_input);
    }
    if let Some(proj) = t.embed_proj_dim {
        // OPT: project_in (proj → hidden) and project_out (hidden → proj), no bias.
        b.push(Role::EmbedProjection, None, proj.saturating_mul(t.hidden_size).saturating_mul(2), proj);
    }
    if t.final_norm {
        b.vector(Role::Norm, None, norm_width(t.hidden_size));
    }
    // `DeepseekV4HyperHead`: `hc_fn` (n × n·hidden), `hc_base` (n), `hc_scale` (1).
    let streams = t.extra.hyper_connections;
    if streams > 0 {
        let head =
            streams.saturating_mul(streams).saturating_mul(t.hidden_size).saturating_add(streams).saturating_add(1);
        b.vector(Role::Norm, None, head);
    }
    if !t.tie_word_embeddings {
        b.push(Role::LmHead, None, t.vocab_size.saturating_mul(width), width);
    }
    if let Some(v) = &arch.vision {
        b.push(Role::VisionLinear, None, v.linear_params, v.hidden_size);
        b.vector(Role::VisionOther, None, v.other_params);
    }
    TensorLayout { groups: b.groups, num_layers: t.layers.len() as u32 }
}

fn attention(b: &mut Builder, t: &TextModel, l: u32, spec: &LayerSpec, family: super::Family) {
    let h = t.hidden_size;
    let kind = spec.attention;
    match t.attention {
        AttentionKind::Standard { qkv_bias, o_bias } => {
            let (head_dim, v_head_dim) = spec.head_dims(t.head_dim, t.v_head_dim);
            let q_heads = t.num_heads.saturating_mul(head_dim);
            // Qwen3-Next: q_proj yields the queries and an output gate of the same width.
            let q = if t.extra.attn_output_gate { q_heads.saturating_mul(2) } else { q_heads };
            // A layer that reuses an earlier layer's cache has no k/v
            // projections; one whose keys are its values has no v_proj (Gemma 4).
            let kv_heads = if spec.shape.kv_shared { 0 } else { spec.kv_heads(t.num_kv_heads) };
            let k = kv_heads.saturating_mul(head_dim);
            let v = if spec.shape.k_eq_v { 0 } else { kv_heads.saturating_mul(v_head_dim) };
            let o_in = t.num_heads.saturating_mul(v_head_dim);
            b.linear(Role::AttnQ, l, h, q);
            b.linear(Role::AttnK, l, h, k);
            b.linear(Role::AttnV, l, h, v);
            b.linear(Role::AttnO, l, o_in, h);
            if qkv_bias {
                b.vector(Role::Bias, Some(l), q.saturating_add(k).saturating_add(v));
            }
            if o_bias {
                b.vector(Role::Bias, Some(l), h);
            }
            // Qwen3 / Gemma 3 normalise each query and key head; Llama 3.2
            // Vision's cross-attention layers do too, and add two scalar gates.
            let cross = kind == LayerAttention::Cross && family == super::Family::Mllama;
            if t.extra.qk_norm_full {
                b.vector(Role::Norm, Some(l), q_heads.saturating_add(k));
            } else if t.qk_norm || cross {
                // No k_norm where there are no keys of the layer's own.
                let norms = if spec.shape.kv_shared { 1 } else { 2 };
                b.vector(Role::Norm, Some(l), head_dim.saturating_mul(norms));
            }
            if t.extra.attn_sinks || spec.shape.sinks {
                b.vector(Role::Norm, Some(l), t.num_heads);
            }
            if cross {
                b.vector(Role::Norm, Some(l), 2);
            }
        }
        AttentionKind::Compressed(c) => compressed(b, t, l, spec, c),
        AttentionKind::Mla(m) => {
            let heads = t.num_heads;
            let qk = m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim);
            match m.q_lora_rank {
                Some(r) => {
                    b.linear(Role::AttnQ, l, h, r);
                    b.vector(Role::Norm, Some(l), r);
                    b.linear(Role::AttnQ, l, r, heads.saturating_mul(qk));
                }
                None => b.linear(Role::AttnQ, l, h, heads.saturating_mul(qk)),
            }
            b.linear(Role::AttnK, l, h, m.kv_lora_rank.saturating_add(m.qk_rope_head_dim));
            b.vector(Role::Norm, Some(l), m.kv_lora_rank);
            b.linear(
                Role::AttnK,
                l,
                m.kv_lora_rank,
                heads.saturating_mul(m.qk_nope_head_dim.saturating_add(m.v_head_dim)),
            );
            b.linear(Role::AttnO, l, heads.saturating_mul(m.v_head_dim), h);
            if let Some(ix) = m.indexer {
                // DeepseekV32Indexer: wq_b from the q latent, wk and
                // weights_proj from the hidden state, k_norm a LayerNorm.
                b.linear(Role::AttnQ, l, m.q_lora_rank.unwrap_or(h), ix.heads.saturating_mul(ix.head_dim));
                b.linear(Role::AttnK, l, h, ix.head_dim);
                b.vector(Role::Norm, Some(l), ix.head_dim.saturating_mul(2));
                b.linear(Role::AttnQ, l, h, ix.heads);
            }
        }
    }
}

/// DeepSeek-V4's attention (transformers 5.25 `DeepseekV4Attention`, the
/// same tensors as vLLM 0.34 `models/deepseek_v4/attention.py`).
fn compressed(b: &mut Builder, t: &TextModel, l: u32, spec: &LayerSpec, c: super::CompressedAttention) {
    let h = t.hidden_size;
    let heads_width = t.num_heads.saturating_mul(c.head_dim);
    // `wq_a` and `wkv`: vLLM's replicated `fused_wqa_wkv`.
    b.linear(Role::MlaDown, l, h, c.q_lora_rank);
    b.linear(Role::MlaDown, l, h, c.head_dim);
    b.vector(Role::Norm, Some(l), c.q_lora_rank.saturating_add(c.head_dim));
    b.linear(Role::AttnQ, l, c.q_lora_rank, heads_width);
    // The grouped output: each of `o_groups` groups of heads to
    // `o_lora_rank` (`wo_a`, block-diagonal), then all of them to the
    // hidden width (`wo_b`).
    let groups_width = c.o_groups.saturating_mul(c.o_lora_rank);
    b.linear(Role::AttnO, l, heads_width / c.o_groups.max(1), groups_width);
    b.linear(Role::AttnO, l, groups_width, h);
    // One sink logit per head.
    b.vector(Role::Norm, Some(l), t.num_heads);
    let ratio = spec.shape.compress_ratio;
    if ratio == 0 {
        return;
    }
    // The compressor (`DeepseekCompressor`): kv and gate projections of
    // `coff × head_dim` (2 where windows overlap, compressed sparse
    // attention), a position bias of `ratio` rows, a norm. vLLM keeps the
    // projections unquantised and replicated (`quant_config=None`,
    // `disable_tp=True`), so they are not quantisable linears here.
    let indexed = c.indexed(ratio);
    let compressor = |b: &mut Builder, width: u64| {
        let coff = if indexed { 2 } else { 1 };
        let out = width.saturating_mul(coff);
        b.vector(Role::Other, Some(l), h.saturating_mul(out).saturating_mul(2));
        b.vector(Role::Norm, Some(l), ratio.saturating_mul(out).saturating_add(width));
    };
    compressor(b, c.head_dim);
    if indexed {
        // The lightning indexer: its own compressor at `index_head_dim`,
        // `wq_b` from the query latent (replicated, quantised) and the
        // unquantised `weights_proj` scoring each head.
        let ix = c.indexer;
        compressor(b, ix.head_dim);
        b.linear(Role::MlaDown, l, c.q_lora_rank, ix.heads.saturating_mul(ix.head_dim));
        b.vector(Role::Router, Some(l), h.saturating_mul(ix.heads));
    }
}

/// The parameters of one recurrent mixer, from the transformers modules.
fn recurrent(b: &mut Builder, h: u64, l: u32, r: Recurrent) {
    match r {
        Recurrent::GatedDeltaNet { key_heads, value_heads, key_head_dim, value_head_dim, conv_kernel } => {
            // Qwen3NextGatedDeltaNet (transformers 5.24): in_proj_qkvz (q, k, v
            // and the output gate z), in_proj_ba (β and the decay a per value
            // head), a depthwise conv over q, k, v without bias, dt_bias and
            // A_log per value head, a gated RMSNorm of one value head, out_proj.
            let key = key_heads.saturating_mul(key_head_dim);
            let value = value_heads.saturating_mul(value_head_dim);
            let conv_dim = key.saturating_mul(2).saturating_add(value);
            b.linear(Role::AttnQ, l, h, conv_dim.saturating_add(value));
            b.linear(Role::AttnK, l, h, value_heads.saturating_mul(2));
            b.vector(Role::Norm, Some(l), conv_dim.saturating_mul(conv_kernel));
            b.vector(Role::Norm, Some(l), value_heads.saturating_mul(2).saturating_add(value_head_dim));
            b.linear(Role::AttnO, l, value, h);
        }
        Recurrent::Mamba2 { heads, head_dim, d_state, groups, conv_kernel, conv_bias, proj_bias, gated_norm } => {
            // NemotronHMamba2Mixer / GraniteMoeHybridMambaLayer: in_proj to
            // (z, x, B, C, dt), a depthwise conv over (x, B, C), dt_bias, A_log
            // and D per head, a gated RMSNorm of the inner width, out_proj.
            let inner = heads.saturating_mul(head_dim);
            let bc = groups.saturating_mul(d_state).saturating_mul(2);
            let conv_dim = inner.saturating_add(bc);
            let in_out = inner.saturating_mul(2).saturating_add(bc).saturating_add(heads);
            b.linear(Role::AttnQ, l, h, in_out);
            b.vector(Role::Norm, Some(l), conv_dim.saturating_mul(conv_kernel));
            if conv_bias {
                b.vector(Role::Bias, Some(l), conv_dim);
            }
            let norm = if gated_norm { inner } else { 0 };
            b.vector(Role::Norm, Some(l), heads.saturating_mul(3).saturating_add(norm));
            b.linear(Role::AttnO, l, inner, h);
            if proj_bias {
                b.vector(Role::Bias, Some(l), in_out.saturating_add(h));
            }
        }
        Recurrent::Mamba1 { inner, d_state, dt_rank, conv_kernel, conv_bias, proj_bias } => {
            // JambaMambaMixer (transformers 5.24): in_proj to (x, z), a
            // depthwise conv over x, x_proj to (dt, B, C), dt_proj with a
            // bias, A_log (inner × d_state) and D, RMSNorms over dt, B and C,
            // out_proj.
            let x_out = dt_rank.saturating_add(d_state.saturating_mul(2));
            b.linear(Role::AttnQ, l, h, inner.saturating_mul(2));
            b.vector(Role::Norm, Some(l), inner.saturating_mul(conv_kernel));
            if conv_bias {
                b.vector(Role::Bias, Some(l), inner);
            }
            b.linear(Role::AttnK, l, inner, x_out);
            b.linear(Role::AttnV, l, dt_rank, inner);
            b.vector(Role::Bias, Some(l), inner);
            b.vector(Role::Norm, Some(l), inner.saturating_mul(d_state).saturating_add(inner).saturating_add(x_out));
            b.linear(Role::AttnO, l, inner, h);
            if proj_bias {
                b.vector(Role::Bias, Some(l), inner.saturating_mul(2).saturating_add(h));
            }
        }
        Recurrent::ShortConv { kernel, bias } => {
            // Lfm2ShortConv: in_proj (hidden → 3 × hidden: B, C, x), a depthwise
            // conv of `conv_L_cache` taps, out_proj; biases when `conv_bias`.
            b.linear(Role::AttnQ, l, h, h.saturating_mul(3));
            b.vector(Role::Norm, Some(l), h.saturating_mul(kernel));
            b.linear(Role::AttnO, l, h, h);
            if bias {
                b.vector(Role::Bias, Some(l), h.saturating_mul(5));
            }
        }
        Recurrent::KimiDelta { heads, head_dim, conv_kernel } => {
            // vLLM 0.34 `KimiGatedDeltaNetAttention` (the checkpoint's names):
            // q, k and v projections of `heads × head_dim`, β per head
            // (`b_proj`), the decay's and the output gate's low-rank pairs
            // through `head_dim` (`f_a_proj`/`f_b_proj`, `g_a_proj`/`g_b_proj`),
            // a depthwise conv of `kernel` taps over each of q, k and v,
            // `dt_bias` per channel, `A_log` per head, the gated RMSNorm of one
            // head (`o_norm`), `o_proj`.
            let width = heads.saturating_mul(head_dim);
            b.linear(Role::AttnQ, l, h, width);
            b.linear(Role::AttnK, l, h, width);
            b.linear(Role::AttnV, l, h, width);
            b.linear(Role::AttnK, l, h, heads.saturating_add(head_dim.saturating_mul(2)));
            b.linear(Role::AttnK, l, head_dim, width.saturating_mul(2));
            b.vector(Role::Norm, Some(l), width.saturating_mul(3).saturating_mul(conv_kernel));
            b.vector(Role::Norm, Some(l), width.saturating_add(heads).saturating_add(head_dim));
            b.linear(Role::AttnO, l, width, h);
        }
    }
}

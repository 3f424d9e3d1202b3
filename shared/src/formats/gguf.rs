//! GGUF tensor types and the quantisation mixes (`Q4_K_M` …) that llama.cpp's
//! `llama_tensor_get_type` (src/llama-quant.cpp) builds from them: which
//! tensors get more bits than the base type.

use crate::arch::{Role, TensorGroup};

use super::{Bpw, LayoutContext};

/// A GGUF file type as users name it: a base type, or a K-quant mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgufType {
    F16,
    Q8_0,
    Q6K,
    Q5KM,
    Q5KS,
    Q4KM,
    Q4KS,
    Q4_0,
    Iq4Xs,
    Q3KM,
    Q2K,
}

/// The ggml block types the mixes use (sizes from [`crate::checkpoint::ggml`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    F32,
    F16,
    /// 34 bytes / 32 weights = 8.5 bpw.
    Q8_0,
    /// 210 bytes / 256 = 6.5625 bpw.
    Q6K,
    /// 176 bytes / 256 = 5.5 bpw.
    Q5K,
    /// 144 bytes / 256 = 4.5 bpw.
    Q4K,
    /// 18 bytes / 32 = 4.5 bpw.
    Q4_0,
    /// 136 bytes / 256 = 4.25 bpw.
    Iq4Xs,
    /// 110 bytes / 256 = 3.4375 bpw.
    Q3K,
    /// 84 bytes / 256 = 2.625 bpw.
    Q2K,
    /// The fallbacks for rows no K-quant block fits: 22 bytes / 32 = 5.5 bpw,
    Q5_0,
    /// 24 bytes / 32 = 6 bpw,
    Q5_1,
    /// and 18 bytes / 32 = 4.5 bpw.
    Iq4Nl,
}

impl Block {
    /// The exact storage, from the one table of ggml block sizes.
    fn bpw(self) -> Bpw {
        let t = self.ggml();
        Bpw::new(t.block_bytes() * 8, t.block())
    }

    fn ggml(self) -> crate::checkpoint::ggml::GgmlType {
        use crate::checkpoint::ggml::GgmlType as G;
        match self {
            Block::F32 => G::F32,
            Block::F16 => G::F16,
            Block::Q8_0 => G::Q8_0,
            Block::Q6K => G::Q6K,
            Block::Q5K => G::Q5K,
            Block::Q4K => G::Q4K,
            Block::Q4_0 => G::Q4_0,
            Block::Iq4Xs => G::Iq4Xs,
            Block::Q3K => G::Q3K,
            Block::Q2K => G::Q2K,
            Block::Q5_0 => G::Q5_0,
            Block::Q5_1 => G::Q5_1,
            Block::Iq4Nl => G::Iq4Nl,
        }
    }

    /// Weights per block.
    fn block(self) -> u64 {
        self.ggml().block()
    }

    /// The type a tensor with rows `width` wide gets instead when this
    /// block does not divide them (`llama_tensor_get_type`'s
    /// `convert_incompatible_tensor`; F16 when the fallback does not either).
    /// Vectors (width 0) keep theirs.
    fn fitting(self, width: u64) -> Block {
        if width == 0 || width % self.block() == 0 {
            return self;
        }
        let fallback = match self {
            Block::Q2K | Block::Q3K | Block::Iq4Xs => Block::Iq4Nl,
            Block::Q4K => Block::Q5_0,
            Block::Q5K => Block::Q5_1,
            Block::Q6K => Block::Q8_0,
            other => other,
        };
        if width % fallback.block() == 0 { fallback } else { Block::F16 }
    }
}

impl GgufType {
    pub fn id(self) -> &'static str {
        match self {
            Self::F16 => "gguf-f16",
            Self::Q8_0 => "q8_0",
            Self::Q6K => "q6_k",
            Self::Q5KM => "q5_k_m",
            Self::Q5KS => "q5_k_s",
            Self::Q4KM => "q4_k_m",
            Self::Q4KS => "q4_k_s",
            Self::Q4_0 => "q4_0",
            Self::Iq4Xs => "iq4_xs",
            Self::Q3KM => "q3_k_m",
            Self::Q2K => "q2_k",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let s = s.strip_prefix("gguf-").unwrap_or(s);
        [
            Self::F16,
            Self::Q8_0,
            Self::Q6K,
            Self::Q5KM,
            Self::Q5KS,
            Self::Q4KM,
            Self::Q4KS,
            Self::Q4_0,
            Self::Iq4Xs,
            Self::Q3KM,
            Self::Q2K,
        ]
        .into_iter()
        .find(|t| t.id().strip_prefix("gguf-").unwrap_or(t.id()) == s)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Self::F16 => "GGUF F16",
            Self::Q8_0 => "GGUF Q8_0: 8.5 bits per weight",
            Self::Q6K => "GGUF Q6_K: 6.56 bits per weight",
            Self::Q5KM => "GGUF Q5_K_M: Q5_K (5.5 bpw), with attn_v, half of ffn_down and output in Q6_K",
            Self::Q5KS => "GGUF Q5_K_S: Q5_K (5.5 bpw), output in Q6_K",
            Self::Q4KM => "GGUF Q4_K_M: Q4_K (4.5 bpw), with attn_v, half of ffn_down and output in Q6_K",
            Self::Q4KS => "GGUF Q4_K_S: Q4_K (4.5 bpw), first layers' attn_v/ffn_down in Q5_K, output in Q6_K",
            Self::Q4_0 => "GGUF Q4_0: 4.5 bits per weight, output in Q6_K",
            Self::Iq4Xs => "GGUF IQ4_XS: 4.25 bits per weight, output in Q6_K",
            Self::Q3KM => "GGUF Q3_K_M: Q3_K (3.44 bpw), attn_v/attn_output/ffn_down in Q4_K/Q5_K, output in Q6_K",
            Self::Q2K => "GGUF Q2_K: Q2_K (2.63 bpw), attn_v/ffn_down/attn_output in Q3_K/Q4_K, output in Q6_K",
        }
    }

    /// Bits per weight of the mix's base type.
    pub fn nominal_bpw(self) -> f64 {
        self.base().bpw().as_f64()
    }

    fn base(self) -> Block {
        match self {
            Self::F16 => Block::F16,
            Self::Q8_0 => Block::Q8_0,
            Self::Q6K => Block::Q6K,
            Self::Q5KM | Self::Q5KS => Block::Q5K,
            Self::Q4KM | Self::Q4KS => Block::Q4K,
            Self::Q4_0 => Block::Q4_0,
            Self::Iq4Xs => Block::Iq4Xs,
            Self::Q3KM => Block::Q3K,
            Self::Q2K => Block::Q2K,
        }
    }

    /// The block type llama.cpp picks for one tensor: `llama_tensor_get_type`
    /// (src/llama-quant.cpp, llama-cpp-python 0.3.16) for the mixes above,
    /// imatrix assumed (IQ4_XS keeps its first ffn_down layers; the GLM-Z1
    /// IQ4_XS start-up log's type counts show it).
    pub(super) fn bpw(self, g: &TensorGroup, ctx: &LayoutContext) -> Bpw {
        let block = match g.role {
            Role::Norm | Role::Bias | Role::Router => Block::F32,
            Role::VisionLinear | Role::VisionOther => Block::F16,
            Role::LmHead => self.output(g.in_features, ctx),
            // Without an output tensor of its own the token embedding (rows
            // as wide as the model; not Gemma 3n's per-layer table) is
            // quantised as the output (`!qs.has_output`).
            Role::Embedding if !ctx.own_head && g.in_features > 0 => self.output(g.in_features, ctx),
            _ => self.weight(g, ctx),
        };
        // Rows whose width is no multiple of the block fall back
        // (`convert_incompatible_tensor`): Qwen2.5-0.5B's 896, Gemma 3 1B's
        // 1152, a 1408-wide expert.
        block.fitting(g.in_features).bpw()
    }

    /// The output head, rows `width` wide: Q8_0 when they are no multiple of
    /// the base block, or for Falcon; Q8_0 and F16 files keep theirs; Q6_K
    /// otherwise.
    fn output(self, width: u64, ctx: &LayoutContext) -> Block {
        let base = self.base();
        match base {
            Block::F16 => base,
            _ if ctx.falcon || width % base.block() != 0 => Block::Q8_0,
            Block::Q8_0 => base,
            _ => Block::Q6K,
        }
    }

    /// Every other weight matrix.
    fn weight(self, g: &TensorGroup, ctx: &LayoutContext) -> Block {
        let base = self.base();
        let i = g.layer.unwrap_or(0);
        let n = ctx.num_layers.max(1);
        // `use_more_bits`: the first and last eighth of the layers and every
        // third layer in between.
        let more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
        // "for the 8-expert model, bumping this to Q8_0 trades just ~128MB".
        let eight_experts = ctx.experts == 8;
        let role = match g.role {
            Role::AttnQ | Role::AttnK | Role::AttnV if ctx.fused_qkv => Role::AttnQkv,
            role => role,
        };
        match role {
            Role::AttnV => {
                let v = match self {
                    Self::Q2K if ctx.gqa_ratio >= 4 => Block::Q4K,
                    Self::Q2K => Block::Q3K,
                    Self::Q3KM if i < 2 => Block::Q5K,
                    Self::Q3KM => Block::Q4K,
                    Self::Q4KM | Self::Q5KM if more_bits => Block::Q6K,
                    Self::Q4KS if i < 4 => Block::Q5K,
                    Self::Iq4Xs if ctx.gqa_ratio >= 4 => Block::Q5K,
                    _ => base,
                };
                // "8 heads sharing the same attn_v weights … nearly
                // negligible increase in model size".
                let v = match v {
                    Block::Q3K | Block::Q4K if ctx.class_70b => Block::Q5K,
                    v => v,
                };
                if eight_experts && self.is_quantised() { Block::Q8_0 } else { v }
            }
            Role::AttnK if eight_experts && self.is_quantised() => Block::Q8_0,
            Role::AttnQkv => match self {
                Self::Q3KM => Block::Q4K,
                Self::Q4KM => Block::Q5K,
                Self::Q5KM => Block::Q6K,
                _ => base,
            },
            Role::MlpDown | Role::ExpertDown | Role::SharedExpertDown => match self {
                Self::Q2K => Block::Q3K,
                Self::Q3KM if i < n / 16 => Block::Q5K,
                Self::Q3KM if !ctx.falcon || more_bits => Block::Q4K,
                Self::Q3KM => Block::Q3K,
                Self::Q4KM if ctx.falcon && i < n / 16 => Block::Q6K,
                Self::Q4KM if ctx.falcon && more_bits => Block::Q5K,
                Self::Q4KM if ctx.falcon => Block::Q4K,
                Self::Q4KM | Self::Q5KM if more_bits => Block::Q6K,
                Self::Q4KS if !ctx.falcon && i < n / 8 => Block::Q5K,
                _ => base,
            },
            Role::AttnO if ctx.falcon => base,
            Role::AttnO if eight_experts => match self {
                Self::Q2K | Self::Q3KM | Self::Q4KS | Self::Q4KM | Self::Iq4Xs => Block::Q5K,
                _ => base,
            },
            Role::AttnO => match self {
                Self::Q2K => Block::Q3K,
                Self::Q3KM => Block::Q4K,
                _ => base,
            },
            _ => base,
        }
    }

    /// Whether the mix quantises at all (an F16 file keeps every weight).
    fn is_quantised(self) -> bool {
        self != Self::F16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bits per weight of one group under a mix.
    fn bpw(t: GgufType, role: Role, layer: u32, in_features: u64, ctx: &LayoutContext) -> f64 {
        t.bpw(&TensorGroup { role, layer: Some(layer), params: 1 << 20, in_features }, ctx).as_f64()
    }

    const Q4_K: f64 = 4.5;
    const Q5_K: f64 = 5.5;
    const Q6_K: f64 = 6.5625;
    const Q8_0: f64 = 8.5;

    #[test]
    fn a_tied_embedding_is_quantised_as_the_output() {
        let own = LayoutContext::dense(24, 7);
        let tied = LayoutContext { own_head: false, ..own };
        let emb = |ctx: &LayoutContext, width: u64| {
            GgufType::Q4KM
                .bpw(&TensorGroup { role: Role::Embedding, layer: None, params: 1 << 20, in_features: width }, ctx)
                .as_f64()
        };
        assert_eq!(emb(&own, 2048), Q4_K);
        assert_eq!(emb(&tied, 2048), Q6_K);
        // Qwen2.5-0.5B's 896-wide rows: no multiple of 256, so Q8_0.
        assert_eq!(emb(&tied, 896), Q8_0);
        // A Q8_0 file keeps Q8_0, an F16 one F16.
        assert_eq!(
            GgufType::Q8_0
                .bpw(&TensorGroup { role: Role::Embedding, layer: None, params: 1, in_features: 2048 }, &tied)
                .as_f64(),
            Q8_0
        );
        assert_eq!(
            GgufType::F16
                .bpw(&TensorGroup { role: Role::Embedding, layer: None, params: 1, in_features: 2048 }, &tied)
                .as_f64(),
            16.0
        );
        // Gemma 3n's per-layer table (no row width in the layout) keeps the base.
        assert_eq!(emb(&tied, 0), Q4_K);
    }

    #[test]
    fn rows_no_block_divides_fall_back() {
        let ctx = LayoutContext::dense(24, 7);
        // q4_K → q5_0, q5_K → q5_1, q6_K → q8_0, q2_K / q3_K / iq4_xs → iq4_nl.
        assert_eq!(bpw(GgufType::Q4KM, Role::MlpUp, 5, 896, &ctx), 5.5);
        assert_eq!(bpw(GgufType::Q5KS, Role::MlpUp, 5, 896, &ctx), 6.0);
        assert_eq!(bpw(GgufType::Q6K, Role::MlpUp, 5, 896, &ctx), Q8_0);
        assert_eq!(bpw(GgufType::Q2K, Role::AttnQ, 5, 1408, &ctx), 4.5);
        assert_eq!(bpw(GgufType::Iq4Xs, Role::AttnQ, 5, 1408, &ctx), 4.5);
        // Widths the block divides keep the mix's type.
        assert_eq!(bpw(GgufType::Q4KM, Role::MlpUp, 5, 1024, &ctx), Q4_K);
        assert_eq!(bpw(GgufType::Q4_0, Role::MlpUp, 5, 896, &ctx), Q4_K);
    }

    #[test]
    fn a_fused_qkv_takes_one_step_more() {
        // Phi-4 (40 layers): its Q4_K_M GGUF logs 40 q5_K tensors, the attn_qkv.
        let ctx = LayoutContext { fused_qkv: true, ..LayoutContext::dense(40, 4) };
        for role in [Role::AttnQ, Role::AttnK, Role::AttnV, Role::AttnQkv] {
            assert_eq!(bpw(GgufType::Q4KM, role, 0, 5120, &ctx), Q5_K, "{role:?}");
            assert_eq!(bpw(GgufType::Q5KM, role, 20, 5120, &ctx), Q6_K, "{role:?}");
            assert_eq!(bpw(GgufType::Q3KM, role, 20, 5120, &ctx), Q4_K, "{role:?}");
        }
        // Separate projections: attn_v by layer, q and k the base.
        let split = LayoutContext::dense(40, 4);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnV, 0, 5120, &split), Q6_K);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnV, 5, 5120, &split), Q4_K);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnQ, 0, 5120, &split), Q4_K);
    }

    #[test]
    fn eight_experts_keep_attention_in_more_bits() {
        let ctx = LayoutContext { experts: 8, ..LayoutContext::dense(32, 4) };
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnK, 5, 4096, &ctx), Q8_0);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnV, 5, 4096, &ctx), Q8_0);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnO, 5, 4096, &ctx), Q5_K);
        assert_eq!(bpw(GgufType::Q2K, Role::AttnO, 5, 4096, &ctx), Q5_K);
        assert_eq!(bpw(GgufType::Q5KM, Role::AttnO, 5, 4096, &ctx), Q5_K);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnQ, 5, 4096, &ctx), Q4_K);
        // 128 experts: the usual rules.
        let many = LayoutContext { experts: 128, ..ctx };
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnK, 5, 4096, &many), Q4_K);
        assert_eq!(bpw(GgufType::Q2K, Role::AttnO, 5, 4096, &many), 3.4375);
    }

    #[test]
    fn the_70b_class_keeps_attn_v_in_q5_k() {
        let ctx = LayoutContext { class_70b: true, ..LayoutContext::dense(80, 8) };
        // Layer 11 is not one `use_more_bits` picks (80 / 8 = 10; (11 − 10) % 3 = 1).
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnV, 11, 8192, &ctx), Q5_K);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnV, 0, 8192, &ctx), Q6_K);
        assert_eq!(bpw(GgufType::Q2K, Role::AttnV, 11, 8192, &ctx), Q5_K);
        assert_eq!(bpw(GgufType::Q4KM, Role::AttnV, 11, 8192, &LayoutContext::dense(80, 8)), Q4_K);
    }

    #[test]
    fn falcon_has_its_own_rules() {
        let ctx = LayoutContext { falcon: true, fused_qkv: true, ..LayoutContext::dense(32, 1) };
        let head = TensorGroup { role: Role::LmHead, layer: None, params: 1, in_features: 4544 };
        assert_eq!(GgufType::Q4KM.bpw(&head, &ctx).as_f64(), Q8_0);
        assert_eq!(bpw(GgufType::Q4KM, Role::MlpDown, 1, 18176, &ctx), Q6_K);
        assert_eq!(bpw(GgufType::Q4KM, Role::MlpDown, 6, 18176, &ctx), Q5_K);
        assert_eq!(bpw(GgufType::Q4KM, Role::MlpDown, 5, 18176, &ctx), Q4_K);
        assert_eq!(bpw(GgufType::Q3KM, Role::MlpDown, 5, 18176, &ctx), 3.4375);
        assert_eq!(bpw(GgufType::Q2K, Role::AttnO, 5, 4608, &ctx), 2.625);
    }
}

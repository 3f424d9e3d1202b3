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
}

impl Block {
    /// The exact storage, from the one table of ggml block sizes.
    fn bpw(self) -> Bpw {
        use crate::checkpoint::ggml::GgmlType as G;
        let t = match self {
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
        };
        Bpw::new(t.block_bytes() * 8, t.block())
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

    /// The block type llama.cpp picks for one tensor (simplified
    /// `llama_tensor_get_type`: the rules that move whole-model size; the
    /// fallbacks for rows not divisible by 256 are not modelled).
    pub(super) fn bpw(self, g: &TensorGroup, ctx: &LayoutContext) -> Bpw {
        let base = self.base();
        let i = g.layer.unwrap_or(0);
        let n = ctx.num_layers.max(1);
        // llama.cpp `use_more_bits`: the first and last eighth of the layers
        // and every third layer in between.
        let more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
        let block = match g.role {
            Role::Norm | Role::Bias | Role::Router => Block::F32,
            Role::VisionLinear | Role::VisionOther => Block::F16,
            Role::LmHead => match base {
                Block::Q8_0 | Block::F16 => base,
                _ => Block::Q6K,
            },
            Role::AttnV => match self {
                Self::Q2K if ctx.gqa_ratio >= 4 => Block::Q4K,
                Self::Q2K => Block::Q3K,
                Self::Q3KM if i < 2 => Block::Q5K,
                Self::Q3KM => Block::Q4K,
                Self::Q4KM | Self::Q5KM if more_bits => Block::Q6K,
                Self::Q4KS if i < 4 => Block::Q5K,
                Self::Iq4Xs if ctx.gqa_ratio >= 4 => Block::Q5K,
                _ => base,
            },
            Role::MlpDown | Role::ExpertDown | Role::SharedExpertDown => match self {
                Self::Q2K => Block::Q3K,
                Self::Q3KM if i < n / 16 => Block::Q5K,
                Self::Q3KM => Block::Q4K,
                Self::Q4KM | Self::Q5KM if more_bits => Block::Q6K,
                Self::Q4KS if i < n / 8 => Block::Q5K,
                _ => base,
            },
            Role::AttnO => match self {
                Self::Q2K => Block::Q3K,
                Self::Q3KM => Block::Q4K,
                _ => base,
            },
            _ => base,
        };
        block.bpw()
    }
}

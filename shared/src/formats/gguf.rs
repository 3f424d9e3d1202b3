//! GGUF file types as llama.cpp's quantiser makes them: a default tensor
//! type, and the tensors `llama_tensor_get_type` (src/llama-quant.cpp) gives
//! more or fewer bits. Source: llama.cpp as vendored by llama-cpp-python
//! 0.3.16 — `include/llama.h` (`enum llama_ftype`), `llama_model_quantize_impl`
//! (the default type of each), `llama_model_ftype_name`
//! (src/llama-model-loader.cpp: the name a start-up log prints).

use crate::arch::{Role, TensorGroup};
use crate::checkpoint::ggml::GgmlType as T;

use super::{Bpw, LayoutContext};

/// A GGUF file type as users name it (`Q4_K_M`, `IQ2_XXS`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgufType {
    F16,
    Q8_0,
    Q6K,
    Q5KM,
    Q5KS,
    Q5_1,
    Q5_0,
    Q4KM,
    Q4KS,
    Q4_1,
    Q4_0,
    Iq4Nl,
    Iq4Xs,
    /// `MXFP4_MOE` (38): the routed experts (3-D tensors) in MXFP4, every
    /// other matrix, the embedding and the head in Q8_0 (gpt-oss's GGUFs).
    Mxfp4Moe,
    Q3KL,
    Q3KM,
    Q3KS,
    Iq3M,
    Iq3S,
    Iq3Xs,
    Iq3Xxs,
    Q2K,
    Q2KS,
    Iq2M,
    Iq2S,
    Iq2Xs,
    Iq2Xxs,
    Iq1M,
    Iq1S,
}

impl GgufType {
    /// Every file type, from most to least precise.
    pub const ALL: &[GgufType] = &[
        Self::F16,
        Self::Q8_0,
        Self::Q6K,
        Self::Q5_1,
        Self::Q5KM,
        Self::Q5KS,
        Self::Q5_0,
        Self::Q4_1,
        Self::Q4KM,
        Self::Q4KS,
        Self::Q4_0,
        Self::Iq4Nl,
        Self::Iq4Xs,
        Self::Mxfp4Moe,
        Self::Q3KL,
        Self::Q3KM,
        Self::Q3KS,
        Self::Iq3M,
        Self::Iq3S,
        Self::Iq3Xs,
        Self::Iq3Xxs,
        Self::Q2K,
        Self::Q2KS,
        Self::Iq2M,
        Self::Iq2S,
        Self::Iq2Xs,
        Self::Iq2Xxs,
        Self::Iq1M,
        Self::Iq1S,
    ];

    /// Headroom's id on the command line and in links.
    pub fn id(self) -> &'static str {
        match self {
            Self::F16 => "gguf-f16",
            Self::Q8_0 => "q8_0",
            Self::Q6K => "q6_k",
            Self::Q5KM => "q5_k_m",
            Self::Q5KS => "q5_k_s",
            Self::Q5_1 => "q5_1",
            Self::Q5_0 => "q5_0",
            Self::Q4KM => "q4_k_m",
            Self::Q4KS => "q4_k_s",
            Self::Q4_1 => "q4_1",
            Self::Q4_0 => "q4_0",
            Self::Iq4Nl => "iq4_nl",
            Self::Iq4Xs => "iq4_xs",
            // `mxfp4-moe` is the safetensors format (the rest in 16-bit).
            Self::Mxfp4Moe => "gguf-mxfp4-moe",
            Self::Q3KL => "q3_k_l",
            Self::Q3KM => "q3_k_m",
            Self::Q3KS => "q3_k_s",
            Self::Iq3M => "iq3_m",
            Self::Iq3S => "iq3_s",
            Self::Iq3Xs => "iq3_xs",
            Self::Iq3Xxs => "iq3_xxs",
            Self::Q2K => "q2_k",
            Self::Q2KS => "q2_k_s",
            Self::Iq2M => "iq2_m",
            Self::Iq2S => "iq2_s",
            Self::Iq2Xs => "iq2_xs",
            Self::Iq2Xxs => "iq2_xxs",
            Self::Iq1M => "iq1_m",
            Self::Iq1S => "iq1_s",
        }
    }

    /// `enum llama_ftype`: `general.file_type` in the GGUF.
    fn ftype(self) -> u64 {
        match self {
            Self::F16 => 1,
            Self::Q8_0 => 7,
            Self::Q6K => 18,
            Self::Q5KM => 17,
            Self::Q5KS => 16,
            Self::Q5_1 => 9,
            Self::Q5_0 => 8,
            Self::Q4KM => 15,
            Self::Q4KS => 14,
            Self::Q4_1 => 3,
            Self::Q4_0 => 2,
            Self::Iq4Nl => 25,
            Self::Iq4Xs => 30,
            Self::Mxfp4Moe => 38,
            Self::Q3KL => 13,
            Self::Q3KM => 12,
            Self::Q3KS => 11,
            Self::Iq3M => 27,
            Self::Iq3S => 26,
            Self::Iq3Xs => 22,
            Self::Iq3Xxs => 23,
            Self::Q2K => 10,
            Self::Q2KS => 21,
            Self::Iq2M => 29,
            Self::Iq2S => 28,
            Self::Iq2Xs => 20,
            Self::Iq2Xxs => 19,
            Self::Iq1M => 31,
            Self::Iq1S => 24,
        }
    }

    /// What `llama_model_ftype_name` prints as a log's `file type`.
    pub fn printed(self) -> &'static str {
        match self {
            Self::F16 => "F16",
            Self::Q8_0 => "Q8_0",
            Self::Q6K => "Q6_K",
            Self::Q5KM => "Q5_K - Medium",
            Self::Q5KS => "Q5_K - Small",
            Self::Q5_1 => "Q5_1",
            Self::Q5_0 => "Q5_0",
            Self::Q4KM => "Q4_K - Medium",
            Self::Q4KS => "Q4_K - Small",
            Self::Q4_1 => "Q4_1",
            Self::Q4_0 => "Q4_0",
            Self::Iq4Nl => "IQ4_NL - 4.5 bpw",
            Self::Iq4Xs => "IQ4_XS - 4.25 bpw",
            Self::Mxfp4Moe => "MXFP4 MoE",
            Self::Q3KL => "Q3_K - Large",
            Self::Q3KM => "Q3_K - Medium",
            Self::Q3KS => "Q3_K - Small",
            Self::Iq3M => "IQ3_S mix - 3.66 bpw",
            Self::Iq3S => "IQ3_S - 3.4375 bpw",
            Self::Iq3Xs => "IQ3_XS - 3.3 bpw",
            Self::Iq3Xxs => "IQ3_XXS - 3.0625 bpw",
            Self::Q2K => "Q2_K - Medium",
            Self::Q2KS => "Q2_K - Small",
            Self::Iq2M => "IQ2_M - 2.7 bpw",
            Self::Iq2S => "IQ2_S - 2.5 bpw",
            Self::Iq2Xs => "IQ2_XS - 2.3125 bpw",
            Self::Iq2Xxs => "IQ2_XXS - 2.0625 bpw",
            Self::Iq1M => "IQ1_M - 1.75 bpw",
            Self::Iq1S => "IQ1_S - 1.5625 bpw",
        }
    }

    /// The default tensor type (`llama_model_quantize_impl`).
    fn base(self) -> T {
        match self {
            Self::F16 => T::F16,
            Self::Q8_0 => T::Q8_0,
            Self::Q6K => T::Q6K,
            Self::Q5KM => T::Q5K,
            Self::Q5KS => T::Q5K,
            Self::Q5_1 => T::Q5_1,
            Self::Q5_0 => T::Q5_0,
            Self::Q4KM => T::Q4K,
            Self::Q4KS => T::Q4K,
            Self::Q4_1 => T::Q4_1,
            Self::Q4_0 => T::Q4_0,
            Self::Iq4Nl => T::Iq4Nl,
            Self::Iq4Xs => T::Iq4Xs,
            Self::Mxfp4Moe => T::Mxfp4,
            Self::Q3KL => T::Q3K,
            Self::Q3KM => T::Q3K,
            Self::Q3KS => T::Q3K,
            Self::Iq3M => T::Iq3S,
            Self::Iq3S => T::Iq3S,
            Self::Iq3Xs => T::Iq3S,
            Self::Iq3Xxs => T::Iq3Xxs,
            Self::Q2K => T::Q2K,
            Self::Q2KS => T::Q2K,
            Self::Iq2M => T::Iq2S,
            Self::Iq2S => T::Iq2Xs,
            Self::Iq2Xs => T::Iq2Xs,
            Self::Iq2Xxs => T::Iq2Xxs,
            Self::Iq1M => T::Iq1M,
            Self::Iq1S => T::Iq1S,
        }
    }

    /// The mix in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::F16 => "GGUF F16",
            Self::Q8_0 => "GGUF Q8_0: 8.5 bits per weight",
            Self::Q6K => "GGUF Q6_K: 6.56 bits per weight",
            Self::Q5KM => "GGUF Q5_K_M: Q5_K (5.5 bpw), with attn_v, half of ffn_down and output in Q6_K",
            Self::Q5KS => "GGUF Q5_K_S: Q5_K (5.5 bpw), output in Q6_K",
            Self::Q5_1 => "GGUF Q5_1: 6 bits per weight, output in Q6_K",
            Self::Q5_0 => "GGUF Q5_0: 5.5 bits per weight, output in Q6_K",
            Self::Q4KM => "GGUF Q4_K_M: Q4_K (4.5 bpw), with attn_v, half of ffn_down and output in Q6_K",
            Self::Q4KS => "GGUF Q4_K_S: Q4_K (4.5 bpw), first layers' attn_v/ffn_down in Q5_K, output in Q6_K",
            Self::Q4_1 => "GGUF Q4_1: 5 bits per weight, output in Q6_K",
            Self::Q4_0 => "GGUF Q4_0: 4.5 bits per weight, output in Q6_K",
            Self::Iq4Nl => "GGUF IQ4_NL: 4.5 bits per weight, output in Q6_K",
            Self::Iq4Xs => "GGUF IQ4_XS: 4.25 bits per weight, output in Q6_K",
            Self::Mxfp4Moe => {
                "GGUF MXFP4 MoE: routed experts in MXFP4 (4.25 bpw), every other matrix and the output in Q8_0"
            }
            Self::Q3KL => "GGUF Q3_K_L: Q3_K (3.44 bpw), attn_v/attn_output/ffn_down in Q5_K, output in Q6_K",
            Self::Q3KM => "GGUF Q3_K_M: Q3_K (3.44 bpw), attn_v/attn_output/ffn_down in Q4_K/Q5_K, output in Q6_K",
            Self::Q3KS => "GGUF Q3_K_S: Q3_K (3.44 bpw), output in Q6_K",
            Self::Iq3M => {
                "GGUF IQ3_M: IQ3_S (3.44 bpw), attn_v/attn_output and the first ffn_down in Q4_K, output in Q6_K"
            }
            Self::Iq3S => "GGUF IQ3_S: 3.44 bits per weight, output in Q6_K",
            Self::Iq3Xs => {
                "GGUF IQ3_XS: IQ3_S (3.44 bpw), attn_q/attn_k and the middle layers' ffn_gate/ffn_up in IQ3_XXS"
            }
            Self::Iq3Xxs => "GGUF IQ3_XXS: 3.06 bits per weight, attn_q/attn_k in IQ2_S, output in Q5_K",
            Self::Q2K => "GGUF Q2_K: Q2_K (2.63 bpw), attn_v/ffn_down/attn_output in Q3_K/Q4_K, output in Q6_K",
            Self::Q2KS => "GGUF Q2_K_S: Q2_K (2.63 bpw), the first ffn_down in Q4_K, output in Q6_K",
            Self::Iq2M => "GGUF IQ2_M: IQ2_S (2.56 bpw), attn_v in Q4_K or IQ3_S, output in Q5_K",
            Self::Iq2S => "GGUF IQ2_S: IQ2_XS (2.31 bpw), attn_v in Q4_K or IQ3_S, output in Q5_K",
            Self::Iq2Xs => "GGUF IQ2_XS: 2.31 bits per weight, attn_v in Q4_K or Q2_K, output in Q5_K",
            Self::Iq2Xxs => "GGUF IQ2_XXS: 2.06 bits per weight, attn_v in Q4_K or Q2_K, output in Q5_K",
            Self::Iq1M => "GGUF IQ1_M: 1.75 bits per weight, attn_v in Q4_K or Q2_K, output in Q5_K",
            Self::Iq1S => "GGUF IQ1_S: 1.56 bits per weight, attn_v in Q4_K or Q2_K, output in Q5_K",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let s = s.strip_prefix("gguf-").unwrap_or(s);
        Self::ALL.iter().copied().find(|t| t.id().strip_prefix("gguf-").unwrap_or(t.id()) == s)
    }

    /// The file type a GGUF's `general.file_type` names.
    pub fn from_ftype(n: u64) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.ftype() == n)
    }

    /// The file type a start-up log prints (`Q4_K - Medium`, `IQ2_XXS -
    /// 2.0625 bpw`), with or without the old `mostly` prefix.
    pub fn from_printed(s: &str) -> Option<Self> {
        let s = s.trim().trim_start_matches("MOSTLY ").trim_start_matches("mostly ");
        let s = if s == "Q2_K" { "Q2_K - Medium" } else { s };
        Self::ALL.iter().copied().find(|t| t.printed() == s)
    }

    /// Bits per weight of the file type's default tensor type.
    pub fn nominal_bpw(self) -> f64 {
        bpw(self.base()).as_f64()
    }

    /// The IQ1/IQ2 mixes, which `llama_tensor_get_type` treats apart.
    fn is_iq2(self) -> bool {
        matches!(self, Self::Iq2Xxs | Self::Iq2Xs | Self::Iq2S | Self::Iq2M | Self::Iq1S | Self::Iq1M)
    }

    /// The storage of one tensor group: `llama_tensor_get_type`. An
    /// importance matrix is assumed for the IQ and K mixes (what their
    /// makers use; the GLM-Z1 IQ4_XS log's type counts show it), not for
    /// Q4_0 and Q5_0 (the Q4_0 Llama 3.1 log shows none). Two counters are
    /// approximated by the layer: `i_attention_wv` counts attention layers
    /// only (hybrid models differ), and an MoE model's `i_ffn_down` for the
    /// IQ1/IQ2 mixes counts shared-expert and dense downs too.
    pub(super) fn bpw(self, g: &TensorGroup, ctx: &LayoutContext) -> Bpw {
        let t = match g.role {
            Role::Norm | Role::Bias | Role::ExpertBias | Role::Router => T::F32,
            Role::VisionLinear | Role::VisionOther => T::F16,
            // Left as converted (`llama_model_quantize_impl`'s `quantize &=`
            // list): learned positions (`pos_embd`), Gemma 3n's `altup` and
            // `per_layer_model_proj`.
            Role::PositionEmbedding | Role::EmbedProjection => T::F16,
            // An F16 file is not requantised.
            _ if self == Self::F16 => T::F16,
            // src/llama-quant.cpp: "MoE tensors -> MXFP4, other tensors ->
            // Q8_0", the output and a tied embedding Q8_0 too.
            Role::ExpertUp | Role::ExpertDown if self == Self::Mxfp4Moe => T::Mxfp4,
            _ if self == Self::Mxfp4Moe => T::Q8_0,
            Role::LmHead => self.output(g.in_features, ctx),
            // Without an output tensor of its own the token embedding (rows
            // as wide as the model; not Gemma 3n's per-layer table) is
            // quantised as the output (`!qs.has_output`).
            Role::Embedding if !ctx.own_head && g.in_features > 0 => self.output(g.in_features, ctx),
            Role::Embedding => self.token_embedding(),
            _ if self.is_iq2() => self.iq2_weight(g, ctx),
            _ => self.weight(g, ctx),
        };
        // Rows whose width is no multiple of the block fall back
        // (`convert_incompatible_tensor`): Qwen2.5-0.5B's 896, Gemma 3 1B's
        // 1152, a 1408-wide expert.
        bpw(fitting(t, g.in_features))
    }

    /// The output head, rows `width` wide.
    fn output(self, width: u64, ctx: &LayoutContext) -> T {
        let base = self.base();
        if ctx.falcon || !width.is_multiple_of(base.block()) {
            T::Q8_0
        } else if self.is_iq2() || self == Self::Iq3Xxs {
            T::Q5K
        } else if base != T::Q8_0 {
            T::Q6K
        } else {
            base
        }
    }

    fn token_embedding(self) -> T {
        match self {
            Self::Iq2Xxs | Self::Iq2Xs | Self::Iq1S | Self::Iq1M => T::Q2K,
            Self::Iq2S | Self::Iq2M | Self::Iq3Xxs => T::Iq3S,
            _ => self.base(),
        }
    }

    /// The IQ1/IQ2 mixes' weights.
    fn iq2_weight(self, g: &TensorGroup, ctx: &LayoutContext) -> T {
        let i = g.layer.unwrap_or(0);
        let n = ctx.num_layers.max(1);
        let s_or_m = matches!(self, Self::Iq2S | Self::Iq2M);
        match role(g, ctx) {
            Role::AttnV if ctx.gqa_ratio >= 4 || ctx.experts >= 4 => T::Q4K,
            Role::AttnV if s_or_m => T::Iq3S,
            Role::AttnV => T::Q2K,
            Role::AttnK if ctx.experts == 8 => T::Q4K,
            Role::MlpDown | Role::ExpertDown | Role::SharedExpertDown if i < n / 8 => {
                if s_or_m {
                    T::Iq3S
                } else {
                    T::Q2K
                }
            }
            Role::AttnO if ctx.experts == 8 => T::Q5K,
            Role::AttnO if matches!(self, Self::Iq1S | Self::Iq1M) => T::Iq2Xxs,
            Role::AttnO if s_or_m => T::Iq3S,
            _ => self.base(),
        }
    }

    /// Every other mix's weights.
    fn weight(self, g: &TensorGroup, ctx: &LayoutContext) -> T {
        let base = self.base();
        let i = g.layer.unwrap_or(0);
        let n = ctx.num_layers.max(1);
        // `use_more_bits`: the first and last eighth of the layers and every
        // third layer in between.
        let more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
        // "for the 8-expert model, bumping this to Q8_0 trades just ~128MB".
        let eight_experts = ctx.experts == 8;
        let gqa4 = ctx.gqa_ratio >= 4;
        match role(g, ctx) {
            Role::AttnV => {
                let v = match self {
                    Self::Q2K if gqa4 => T::Q4K,
                    Self::Q2K => T::Q3K,
                    Self::Q2KS if gqa4 => T::Q4K,
                    Self::Iq3Xxs if gqa4 => T::Q4K,
                    Self::Iq3Xs | Self::Iq3S if gqa4 => T::Q4K,
                    Self::Iq3M => T::Q4K,
                    Self::Q3KM if i < 2 => T::Q5K,
                    Self::Q3KM => T::Q4K,
                    Self::Q3KL => T::Q5K,
                    Self::Iq4Nl | Self::Iq4Xs if gqa4 => T::Q5K,
                    Self::Q4KM | Self::Q5KM if more_bits => T::Q6K,
                    Self::Q4KS if i < 4 => T::Q5K,
                    _ => base,
                };
                // "8 heads sharing the same attn_v weights … nearly
                // negligible increase in model size".
                let v = match v {
                    T::Q3K | T::Q4K if ctx.class_70b => T::Q5K,
                    v => v,
                };
                if eight_experts { T::Q8_0 } else { v }
            }
            Role::AttnK if eight_experts => T::Q8_0,
            Role::AttnK | Role::AttnQ => match self {
                Self::Iq3Xs => T::Iq3Xxs,
                Self::Iq3Xxs => T::Iq2S,
                _ => base,
            },
            Role::MlpDown | Role::ExpertDown | Role::SharedExpertDown => match self {
                Self::Q2K => T::Q3K,
                Self::Q2KS if i < n / 8 => T::Q4K,
                Self::Q3KM if i < n / 16 => T::Q5K,
                Self::Q3KM if !ctx.falcon || more_bits => T::Q4K,
                Self::Q3KM => T::Q3K,
                Self::Iq3M if i < n / 8 || (eight_experts && more_bits) => T::Q4K,
                Self::Q3KL if ctx.falcon => T::Q4K,
                Self::Q3KL => T::Q5K,
                Self::Q4KM if ctx.falcon && i < n / 16 => T::Q6K,
                Self::Q4KM if ctx.falcon && more_bits => T::Q5K,
                Self::Q4KM if ctx.falcon => T::Q4K,
                Self::Q4KM | Self::Q5KM if more_bits => T::Q6K,
                Self::Q4KS if !ctx.falcon && i < n / 8 => T::Q5K,
                _ => base,
            },
            Role::AttnO if ctx.falcon => match self {
                Self::Q3KL => T::Q4K,
                _ => base,
            },
            Role::AttnO if eight_experts => match self {
                Self::Q2K
                | Self::Iq3Xs
                | Self::Iq3Xxs
                | Self::Q3KS
                | Self::Q3KM
                | Self::Iq4Nl
                | Self::Q4KS
                | Self::Q4KM
                | Self::Iq3S
                | Self::Iq3M
                | Self::Iq4Xs => T::Q5K,
                _ => base,
            },
            Role::AttnO => match self {
                Self::Q2K => T::Q3K,
                Self::Iq3Xxs => T::Iq3S,
                Self::Q3KM | Self::Iq3M => T::Q4K,
                Self::Q3KL => T::Q5K,
                _ => base,
            },
            Role::AttnQkv => match self {
                Self::Q3KM | Self::Q3KL | Self::Iq3M => T::Q4K,
                Self::Q4KM => T::Q5K,
                Self::Q5KM => T::Q6K,
                _ => base,
            },
            Role::MlpUp | Role::ExpertUp | Role::SharedExpertUp
                if self == Self::Iq3Xs && i >= n / 8 && i < 7 * n / 8 =>
            {
                T::Iq3Xxs
            }
            _ => base,
        }
    }
}

/// The role llama.cpp's tensor name gives a group: q, k and v of a model
/// whose GGUF fuses them are its `attn_qkv`.
fn role(g: &TensorGroup, ctx: &LayoutContext) -> Role {
    match g.role {
        Role::AttnQ | Role::AttnK | Role::AttnV if ctx.fused_qkv => Role::AttnQkv,
        role => role,
    }
}

/// The exact storage of a ggml type, from the one table of block sizes.
fn bpw(t: T) -> Bpw {
    Bpw::new(t.block_bytes() * 8, t.block())
}

/// The type a tensor with rows `width` wide gets instead when `t`'s block
/// does not divide them (`convert_incompatible_tensor`; F16 when the
/// fallback does not either). Vectors (width 0) keep theirs.
fn fitting(t: T, width: u64) -> T {
    if width.is_multiple_of(t.block()) {
        return t;
    }
    let fallback = match t {
        T::Tq1_0 | T::Tq2_0 => T::Q4_0,
        T::Iq2Xxs | T::Iq2Xs | T::Iq2S | T::Iq3Xxs | T::Iq3S | T::Iq1S | T::Iq1M | T::Q2K | T::Q3K | T::Iq4Xs => {
            T::Iq4Nl
        }
        T::Q4K => T::Q5_0,
        T::Q5K => T::Q5_1,
        T::Q6K => T::Q8_0,
        other => other,
    };
    if width.is_multiple_of(fallback.block()) { fallback } else { T::F16 }
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
        // Learned positions are not quantised.
        let pos = TensorGroup { role: Role::PositionEmbedding, layer: None, params: 1, in_features: 0 };
        assert_eq!(GgufType::Q4KM.bpw(&pos, &own).as_f64(), 16.0);
    }

    /// `MXFP4_MOE` (llama_ftype 38, "MXFP4 MoE"): 3-D expert tensors in
    /// MXFP4, every other matrix, the head and the embedding in Q8_0.
    #[test]
    fn mxfp4_moe_puts_the_experts_in_mxfp4_and_the_rest_in_q8_0() {
        let ctx = LayoutContext::dense(24, 7);
        let t = GgufType::Mxfp4Moe;
        assert_eq!(bpw(t, Role::ExpertUp, 3, 2880, &ctx), 4.25);
        assert_eq!(bpw(t, Role::ExpertDown, 3, 2880, &ctx), 4.25);
        assert_eq!(bpw(t, Role::AttnQ, 3, 2880, &ctx), Q8_0);
        assert_eq!(bpw(t, Role::LmHead, 3, 2880, &ctx), Q8_0);
        assert_eq!(bpw(t, Role::Router, 3, 2880, &ctx), 32.0);
        let embedding = TensorGroup { role: Role::Embedding, layer: None, params: 1, in_features: 2880 };
        assert_eq!(t.bpw(&embedding, &ctx).as_f64(), Q8_0);
        assert_eq!(GgufType::from_ftype(38), Some(t));
        assert_eq!(GgufType::from_printed("MXFP4 MoE"), Some(t));
        assert_eq!(
            crate::formats::WeightFormat::parse("gguf-mxfp4-moe").ok(),
            Some(crate::formats::WeightFormat::Gguf(t))
        );
        // `mxfp4-moe` stays the safetensors format.
        assert_eq!(
            crate::formats::WeightFormat::parse("mxfp4-moe").ok(),
            Some(crate::formats::WeightFormat::Mxfp4 { experts_only: true })
        );
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

    #[test]
    fn every_file_type_reads_back_by_id_number_and_printed_name() {
        for &t in GgufType::ALL {
            assert_eq!(GgufType::parse(t.id()), Some(t), "{}", t.id());
            assert_eq!(GgufType::from_ftype(t.ftype()), Some(t), "{}", t.id());
            assert_eq!(GgufType::from_printed(t.printed()), Some(t), "{}", t.id());
            assert_eq!(GgufType::from_printed(&format!("mostly {}", t.printed())), Some(t));
        }
        // Builds before Q2_K_S printed the plain name.
        assert_eq!(GgufType::from_printed("mostly Q2_K"), Some(GgufType::Q2K));
        assert_eq!(GgufType::from_ftype(4), None, "Q4_1_SOME_F16 is gone");
        // The list runs from most to least precise.
        let bits: Vec<f64> = GgufType::ALL.iter().map(|t| t.nominal_bpw()).collect();
        assert!(bits.windows(2).all(|w| w[0] >= w[1]), "{bits:?}");
    }

    #[test]
    fn the_iq2_mixes_keep_attention_values_and_ends_in_more_bits() {
        let ctx = LayoutContext::dense(48, 16);
        let t = GgufType::Iq2Xxs;
        assert_eq!(bpw(t, Role::AttnQ, 20, 4096, &ctx), 2.0625);
        assert_eq!(bpw(t, Role::AttnV, 20, 4096, &ctx), Q4_K, "GQA ≥ 4");
        assert_eq!(bpw(t, Role::AttnV, 20, 4096, &LayoutContext::dense(48, 1)), 2.625, "Q2_K without GQA");
        assert_eq!(bpw(t, Role::MlpDown, 5, 4096, &ctx), 2.625, "the first eighth of ffn_down in Q2_K");
        assert_eq!(bpw(t, Role::MlpDown, 6, 4096, &ctx), 2.0625);
        let head = TensorGroup { role: Role::LmHead, layer: None, params: 1, in_features: 4096 };
        assert_eq!(t.bpw(&head, &ctx).as_f64(), Q5_K);
        let emb = TensorGroup { role: Role::Embedding, ..head };
        assert_eq!(t.bpw(&emb, &ctx).as_f64(), 2.625);
        // IQ2_M: IQ2_S by default, IQ3_S where IQ2_XXS has Q2_K.
        assert_eq!(bpw(GgufType::Iq2M, Role::AttnQ, 20, 4096, &ctx), 2.5625);
        assert_eq!(bpw(GgufType::Iq2M, Role::MlpDown, 0, 4096, &ctx), 3.4375);
        assert_eq!(bpw(GgufType::Iq1S, Role::AttnO, 20, 4096, &ctx), 2.0625);
        // IQ3_XXS is not one of them: q and k in IQ2_S, output in Q5_K.
        assert_eq!(bpw(GgufType::Iq3Xxs, Role::AttnK, 20, 4096, &ctx), 2.5625);
        assert_eq!(GgufType::Iq3Xxs.bpw(&head, &ctx).as_f64(), Q5_K);
        // IQ3_XS: the middle layers' gate and up in IQ3_XXS.
        assert_eq!(bpw(GgufType::Iq3Xs, Role::MlpUp, 20, 4096, &ctx), 3.0625);
        assert_eq!(bpw(GgufType::Iq3Xs, Role::MlpUp, 0, 4096, &ctx), 3.4375);
    }
}

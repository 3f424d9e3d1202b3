//! Weight formats: how many bits each tensor takes, including the scales and
//! zero points a quantisation method stores, and which tensors a method leaves
//! in 16 (or 32) bits.

mod gguf;

pub use gguf::GgufType;

use serde::{Deserialize, Serialize};

use crate::arch::{CheckpointDtype, CheckpointQuant, KeptRoles, Role, TensorGroup, TensorLayout};

/// Bits per weight as an exact fraction: `bits` bits for every `per` weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bpw {
    pub bits: u64,
    pub per: u64,
}

impl Bpw {
    pub const fn new(bits: u64, per: u64) -> Self {
        Self { bits, per }
    }
    pub const fn whole(bits: u64) -> Self {
        Self { bits, per: 1 }
    }
    /// Bytes for `n` weights, rounded up.
    pub fn bytes(self, n: u64) -> u64 {
        // In u64 when nothing overflows, the same quotient without a call to
        // the u128 division routine (once per tensor group: issue 39).
        if let (Some(num), Some(den)) = (n.checked_mul(self.bits), self.per.max(1).checked_mul(8)) {
            return num.div_ceil(den);
        }
        let num = u128::from(n) * u128::from(self.bits);
        let den = u128::from(self.per.max(1)) * 8;
        u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX)
    }
    pub fn as_f64(self) -> f64 {
        self.bits as f64 / self.per.max(1) as f64
    }
}

/// A weight format the user can choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum WeightFormat {
    F32,
    Bf16,
    F16,
    /// FP8 (e4m3) weights with fp32 scales, per tensor or per `block`×`block` tile.
    Fp8 {
        block: Option<u32>,
    },
    /// bitsandbytes LLM.int8(): int8 weights and an fp32 scale per output row.
    Int8,
    /// bitsandbytes 4-bit (NF4 or FP4), blocksize 64, optional double quantisation.
    Bnb4 {
        nf4: bool,
        double_quant: bool,
    },
    /// GPTQ: `bits`-bit weights, fp16 scales and packed zeros per group.
    Gptq {
        bits: u8,
        group_size: u32,
    },
    /// AWQ: same storage shape as GPTQ (no act-order index).
    Awq {
        bits: u8,
        group_size: u32,
    },
    Gguf(GgufType),
    /// OCP microscaling FP4: E2M1 values with one E8M0 (power-of-two) scale
    /// per 32 — 4.25 bits. `experts_only`: the gpt-oss layout, where only the
    /// MoE experts are MXFP4 and attention, router, embeddings and head stay
    /// in 16-bit (`modules_to_not_convert`).
    Mxfp4 {
        experts_only: bool,
    },
    /// NVIDIA NVFP4: E2M1 values with an FP8 E4M3 scale per 16 and one FP32
    /// global scale per tensor — 4.5 bits (plus a few bytes a tensor).
    Nvfp4,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown weight format `{0}` (try {ids})", ids = accepted_ids())]
pub struct UnknownFormat(pub String);

impl WeightFormat {
    /// The formats offered in lists and sweeps, from most to least precise.
    pub const CHOICES: &[WeightFormat] = &[
        WeightFormat::F32,
        WeightFormat::Bf16,
        WeightFormat::F16,
        WeightFormat::Fp8 { block: None },
        WeightFormat::Fp8 { block: Some(128) },
        WeightFormat::Int8,
        WeightFormat::Gguf(GgufType::Q8_0),
        WeightFormat::Gguf(GgufType::Q6K),
        WeightFormat::Gguf(GgufType::Q5KM),
        WeightFormat::Gguf(GgufType::Q5KS),
        WeightFormat::Gptq { bits: 4, group_size: 128 },
        WeightFormat::Awq { bits: 4, group_size: 128 },
        WeightFormat::Nvfp4,
        WeightFormat::Mxfp4 { experts_only: true },
        WeightFormat::Mxfp4 { experts_only: false },
        WeightFormat::Bnb4 { nf4: true, double_quant: false },
        WeightFormat::Bnb4 { nf4: true, double_quant: true },
        WeightFormat::Bnb4 { nf4: false, double_quant: false },
        WeightFormat::Gguf(GgufType::Q4KM),
        WeightFormat::Gguf(GgufType::Q4KS),
        WeightFormat::Gguf(GgufType::Q4_0),
        WeightFormat::Gguf(GgufType::Iq4Xs),
        WeightFormat::Gguf(GgufType::Q3KM),
        WeightFormat::Gguf(GgufType::Iq3Xxs),
        // The floor: the IQ2 and IQ1 mixes lose too much for the fixes to
        // offer them before offloading (they parse, and a link keeps them).
        WeightFormat::Gguf(GgufType::Q2K),
    ];

    /// The stable short id used on the command line and in links.
    pub fn id(self) -> String {
        match self {
            Self::F32 => "fp32".into(),
            Self::Bf16 => "bf16".into(),
            Self::F16 => "fp16".into(),
            Self::Fp8 { block: None } => "fp8".into(),
            Self::Fp8 { block: Some(b) } => format!("fp8-b{b}"),
            Self::Int8 => "int8".into(),
            Self::Bnb4 { nf4, double_quant } => {
                format!("{}{}", if nf4 { "nf4" } else { "fp4" }, if double_quant { "-dq" } else { "" })
            }
            Self::Gptq { bits, group_size } => quant_id("gptq", bits, group_size),
            Self::Awq { bits, group_size } => quant_id("awq", bits, group_size),
            Self::Gguf(t) => t.id().into(),
            Self::Mxfp4 { experts_only: false } => "mxfp4".into(),
            Self::Mxfp4 { experts_only: true } => "mxfp4-moe".into(),
            Self::Nvfp4 => "nvfp4".into(),
        }
    }

    pub fn parse(text: &str) -> Result<Self, UnknownFormat> {
        let s = text.trim().to_ascii_lowercase();
        let unknown = || UnknownFormat(text.trim().to_owned());
        Ok(match s.as_str() {
            "fp32" | "f32" | "float32" => Self::F32,
            "bf16" | "bfloat16" => Self::Bf16,
            "fp16" | "f16" | "float16" | "half" => Self::F16,
            "fp8" | "float8" | "fp8_e4m3" => Self::Fp8 { block: None },
            "int8" | "llm.int8" | "bnb-int8" | "8bit" => Self::Int8,
            "nf4" => Self::Bnb4 { nf4: true, double_quant: false },
            "nf4-dq" => Self::Bnb4 { nf4: true, double_quant: true },
            "fp4" => Self::Bnb4 { nf4: false, double_quant: false },
            "fp4-dq" => Self::Bnb4 { nf4: false, double_quant: true },
            "mxfp4" => Self::Mxfp4 { experts_only: false },
            "mxfp4-moe" | "mxfp4-experts" => Self::Mxfp4 { experts_only: true },
            "nvfp4" => Self::Nvfp4,
            _ => {
                if let Some(t) = GgufType::parse(&s) {
                    return Ok(Self::Gguf(t));
                }
                if let Some(b) = s.strip_prefix("fp8-b") {
                    return b.parse().map(|b| Self::Fp8 { block: Some(b) }).map_err(|_| unknown());
                }
                let (method, rest) = s.split_once('-').ok_or_else(unknown)?;
                let (bits, group) = parse_quant(rest).ok_or_else(unknown)?;
                match method {
                    "gptq" => Self::Gptq { bits, group_size: group },
                    "awq" => Self::Awq { bits, group_size: group },
                    _ => return Err(unknown()),
                }
            }
        })
    }

    /// A one-line description for lists and explanations.
    pub fn describe(self) -> String {
        match self {
            Self::F32 => "32-bit float: every tensor 4 bytes".into(),
            Self::Bf16 | Self::F16 => "16-bit: every tensor 2 bytes".into(),
            Self::Fp8 { block } => format!(
                "FP8 e4m3 linear weights with fp32 scales ({}); embeddings, lm_head, norms and router in 16-bit",
                block.map_or("one per tensor".into(), |b| format!("one per {b}×{b} tile"))
            ),
            Self::Int8 => "bitsandbytes LLM.int8(): int8 linear weights + an fp32 scale per output row; embeddings, lm_head, norms in 16-bit".into(),
            Self::Bnb4 { nf4, double_quant } => format!(
                "bitsandbytes {}: 4-bit linear weights, one absmax per 64 weights ({}); embeddings, lm_head, norms in 16-bit",
                if nf4 { "NF4" } else { "FP4" },
                if double_quant { "absmax quantised to 8 bits per 256 blocks, double quantisation" } else { "fp32 absmax" }
            ),
            Self::Gptq { bits, group_size } | Self::Awq { bits, group_size } => format!(
                "{}: {bits}-bit linear weights, an fp16 scale and a {bits}-bit zero per {} ; embeddings, lm_head, norms in 16-bit",
                if matches!(self, Self::Gptq { .. }) { "GPTQ" } else { "AWQ" },
                if group_size == u32::MAX { "output column".into() } else { format!("group of {group_size} inputs") }
            ),
            Self::Gguf(t) => t.describe().into(),
            Self::Mxfp4 { experts_only } => format!(
                "MXFP4: E2M1 weights with an E8M0 scale per 32 (4.25 bits) on {}; the rest in 16-bit. \
                 Native on Blackwell; vLLM runs it through Marlin (weight-only, same storage) on Ampere/Hopper",
                if experts_only { "the MoE experts (gpt-oss layout)" } else { "every linear layer" }
            ),
            Self::Nvfp4 => "NVFP4: E2M1 linear weights with an FP8 E4M3 scale per 16 and an FP32 scale per tensor \
                 (4.5 bits); embeddings, lm_head, norms and router in 16-bit. Native on Blackwell; vLLM's \
                 Marlin FP4 fallback on Hopper keeps the same storage"
                .into(),
        }
    }

    /// The format a checkpoint loads in by default: its quantisation, else its dtype.
    pub fn from_checkpoint(dtype: Option<CheckpointDtype>, quant: Option<CheckpointQuant>) -> Self {
        match quant {
            Some(CheckpointQuant::Gptq { bits, group_size }) => Self::Gptq { bits, group_size },
            Some(CheckpointQuant::Awq { bits, group_size }) => Self::Awq { bits, group_size },
            Some(CheckpointQuant::Fp8 { block }) => Self::Fp8 { block },
            Some(CheckpointQuant::BitsAndBytes4 { double_quant, nf4 }) => Self::Bnb4 { nf4, double_quant },
            Some(CheckpointQuant::BitsAndBytes8) => Self::Int8,
            Some(CheckpointQuant::Mxfp4 { experts_only }) => Self::Mxfp4 { experts_only },
            Some(CheckpointQuant::Nvfp4) => Self::Nvfp4,
            None => match dtype {
                Some(CheckpointDtype::F32) => Self::F32,
                Some(CheckpointDtype::F16) => Self::F16,
                Some(CheckpointDtype::Fp8) => Self::Fp8 { block: None },
                Some(CheckpointDtype::Bf16) | None => Self::Bf16,
            },
        }
    }

    /// Whether activations and the KV cache default to 32-bit.
    pub fn is_fp32(self) -> bool {
        self == Self::F32
    }

    /// The storage of one tensor group in this format.
    pub fn bpw(self, group: &TensorGroup, ctx: &LayoutContext) -> Bpw {
        const HALF: Bpw = Bpw::whole(16);
        if ctx.kept.is_some_and(|(format, kept)| format == self && kept.contains(group.role)) {
            return HALF;
        }
        let quantised = group.role.is_linear()
            // bitsandbytes replaces every nn.Linear but the head, vision ones included.
            || (group.role == Role::VisionLinear && matches!(self, Self::Int8 | Self::Bnb4 { .. }));
        match self {
            Self::F32 => Bpw::whole(32),
            Self::Bf16 | Self::F16 => HALF,
            Self::Gguf(t) => t.bpw(group, ctx),
            _ if !quantised => HALF,
            // fp32 scale per tensor (negligible) or per block×block tile.
            Self::Fp8 { block: None } => Bpw::whole(8),
            Self::Fp8 { block: Some(b) } => {
                let tile = u64::from(b).saturating_mul(u64::from(b)).max(1);
                Bpw::new(tile.saturating_mul(8).saturating_add(32), tile)
            }
            // OCP MX spec v1.0: 32 E2M1 values (4 bits) share one 8-bit E8M0 scale.
            Self::Mxfp4 { experts_only } => {
                let expert = matches!(group.role, Role::ExpertUp | Role::ExpertDown);
                if experts_only && !expert { HALF } else { Bpw::new(32 * 4 + 8, 32) }
            }
            // NVFP4 (NVIDIA Blackwell / ModelOpt, compressed-tensors `nvfp4`):
            // 16 E2M1 values share one FP8 E4M3 scale. The FP32 per-tensor
            // `weight_scale_2` and `input_scale` (8 bytes a tensor: 0.4 MB for
            // the ~46k expert tensors of a 256-expert, 60-layer model) are not
            // counted: the layout groups tensors by role, not one by one.
            Self::Nvfp4 => Bpw::new(16 * 4 + 8, 16),
            // bitsandbytes Linear8bitLt: int8 weight + fp32 SCB per output row.
            Self::Int8 => {
                let fan_in = group.in_features.max(1);
                Bpw::new(fan_in.saturating_mul(8).saturating_add(32), fan_in)
            }
            // QLoRA paper §2: 4 + 32/64 bits; with double quantisation
            // 4 + 8/64 + 32/(64·256) bits per weight.
            Self::Bnb4 { double_quant: false, .. } => Bpw::new(4 * 64 + 32, 64),
            Self::Bnb4 { double_quant: true, .. } => Bpw::new(4 * 64 * 256 + 8 * 256 + 32, 64 * 256),
            // Per group of g inputs: g·b bits of weights, a 16-bit scale, a b-bit zero.
            Self::Gptq { bits, group_size } | Self::Awq { bits, group_size } => {
                let g = if group_size == u32::MAX { group.in_features.max(1) } else { u64::from(group_size).max(1) };
                let b = u64::from(bits);
                Bpw::new(g.saturating_mul(b).saturating_add(16 + b), g)
            }
        }
    }

    /// Bytes of every group of a layout in this format.
    pub fn layout_bytes(self, layout: &TensorLayout, ctx: &LayoutContext) -> u64 {
        layout.groups.iter().fold(0u64, |acc, g| acc.saturating_add(self.bpw(g, ctx).bytes(g.params)))
    }

    /// Which tensors this format leaves unquantised, in words.
    pub fn kept_in_high_precision(self) -> &'static str {
        match self {
            Self::F32 | Self::Bf16 | Self::F16 => "",
            Self::Gguf(_) => {
                "norms, biases and router in F32; lm_head (or a tied embedding) in Q6_K (Q8_0 for Q8_0); vision tower (mmproj) in F16"
            }
            Self::Int8 | Self::Bnb4 { .. } => "embeddings, lm_head, norms, biases and routers stay in 16-bit",
            Self::Mxfp4 { experts_only: true } => {
                "attention, embeddings, lm_head, norms, biases, routers and the vision tower stay in 16-bit"
            }
            _ => "embeddings, lm_head, norms, biases, routers and the vision tower stay in 16-bit",
        }
    }
}

/// Facts about the whole model that per-tensor rules need (GGUF mixes vary by
/// layer position and by the grouped-query ratio).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutContext {
    pub num_layers: u32,
    pub gqa_ratio: u64,
    /// Routed experts per MoE layer (0 for a dense model).
    pub experts: u64,
    /// Whether the model has an output head of its own; a tied one is the
    /// token embedding, which llama.cpp then quantises as the output.
    pub own_head: bool,
    /// The model size class that llama.cpp's loader calls `LLM_TYPE_70B`
    /// (80 layers of Llama with grouped KV, of Qwen2 and Qwen2-VL:
    /// src/llama-model.cpp `load_hparams`, llama-cpp-python 0.3.16).
    pub class_70b: bool,
    /// Falcon, whose mixes llama.cpp quantises by rules of their own.
    pub falcon: bool,
    /// Whether the checkpoint stores q, k and v as one tensor, which its
    /// GGUF keeps as one `attn_qkv` (gguf-py `tensor_mapping.py`: Phi-3's
    /// `qkv_proj`, GPT-2's `c_attn`, GPT-NeoX, Falcon and BLOOM's
    /// `query_key_value`).
    pub fused_qkv: bool,
    /// The checkpoint's own format and the roles its quantisation left
    /// unconverted: they stay 16-bit when that format is the one chosen.
    pub kept: Option<(WeightFormat, KeptRoles)>,
}

impl LayoutContext {
    /// A dense model with its own output head, of no special size class.
    pub fn dense(num_layers: u32, gqa_ratio: u64) -> Self {
        Self {
            num_layers,
            gqa_ratio,
            experts: 0,
            own_head: true,
            class_70b: false,
            falcon: false,
            fused_qkv: false,
            kept: None,
        }
    }
}

impl From<WeightFormat> for String {
    fn from(f: WeightFormat) -> String {
        f.id()
    }
}

impl TryFrom<String> for WeightFormat {
    type Error = UnknownFormat;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

fn quant_id(method: &str, bits: u8, group: u32) -> String {
    match group {
        128 => format!("{method}-int{bits}"),
        u32::MAX => format!("{method}-int{bits}-gcol"),
        g => format!("{method}-int{bits}-g{g}"),
    }
}

/// `int4`, `int4-g32`, `int8-gcol`, `4bit`.
/// Every format id [`WeightFormat::parse`] accepts, for its error: the
/// named ones, the GPTQ / AWQ family by its 4-bit form, every GGUF type.
fn accepted_ids() -> String {
    const NAMED: &str = "fp32, bf16, fp16, fp8, fp8-b128, int8, nvfp4, mxfp4, mxfp4-moe, nf4, nf4-dq, fp4, fp4-dq, \
                         gptq-int4, awq-int4";
    GgufType::ALL.iter().fold(NAMED.to_owned(), |mut all, t| {
        all.push_str(", ");
        all.push_str(t.id());
        all
    })
}

fn parse_quant(rest: &str) -> Option<(u8, u32)> {
    let (bits, group) = match rest.split_once('-') {
        Some((b, g)) => (b, Some(g)),
        None => (rest, None),
    };
    let bits: u8 = bits.strip_prefix("int").or_else(|| bits.strip_suffix("bit"))?.parse().ok()?;
    if !(2..=8).contains(&bits) {
        return None;
    }
    let group = match group {
        None => 128,
        Some("gcol") => u32::MAX,
        Some(g) => g.strip_prefix('g')?.parse().ok().filter(|&g: &u32| g > 0)?,
    };
    Some((bits, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unknown-format error offers every format the CLI accepts (it once
    /// left out q5_k_s, q4_k_s and gguf-f16).
    #[test]
    fn the_unknown_format_error_lists_every_choice() {
        let message = UnknownFormat("x".into()).to_string();
        let listed: Vec<&str> = message.split(['(', ')', ',']).map(|w| w.trim().trim_start_matches("try ")).collect();
        for f in WeightFormat::CHOICES {
            assert!(listed.contains(&f.id().as_str()), "{} missing from {message}", f.id());
        }
    }

    #[test]
    fn ids_round_trip() {
        for f in WeightFormat::CHOICES.iter().copied().chain([
            WeightFormat::Gptq { bits: 8, group_size: 32 },
            WeightFormat::Awq { bits: 4, group_size: u32::MAX },
            WeightFormat::Fp8 { block: Some(128) },
            WeightFormat::Bnb4 { nf4: false, double_quant: true },
            WeightFormat::Mxfp4 { experts_only: false },
        ]) {
            assert_eq!(WeightFormat::parse(&f.id()), Ok(f), "{}", f.id());
        }
        assert!(WeightFormat::parse("int3000").is_err());
        assert!(WeightFormat::parse("gptq-int9").is_err());
        assert!(WeightFormat::parse("gptq-int4-g0").is_err());
    }

    #[test]
    fn bits_per_weight_match_the_published_figures() {
        let g = TensorGroup { role: Role::MlpUp, layer: Some(0), params: 1 << 20, in_features: 4096 };
        let ctx = LayoutContext::dense(32, 4);
        let bpw = |f: WeightFormat| f.bpw(&g, &ctx).as_f64();
        assert_eq!(bpw(WeightFormat::Bnb4 { nf4: true, double_quant: false }), 4.5);
        // QLoRA: double quantisation costs 0.127 bits per parameter.
        assert!((bpw(WeightFormat::Bnb4 { nf4: true, double_quant: true }) - 4.127).abs() < 0.001);
        // GPTQ 4-bit g128: 4 + 20/128 = 4.156.
        assert!((bpw(WeightFormat::Gptq { bits: 4, group_size: 128 }) - 4.15625).abs() < 1e-9);
        assert_eq!(bpw(WeightFormat::Fp8 { block: None }), 8.0);
        assert!((bpw(WeightFormat::Int8) - 8.0078125).abs() < 1e-9);
        // MXFP4: 4 + 8/32 bits; NVFP4: 4 + 8/16 bits.
        assert_eq!(bpw(WeightFormat::Mxfp4 { experts_only: false }), 4.25);
        assert_eq!(bpw(WeightFormat::Nvfp4), 4.5);
        let expert = TensorGroup { role: Role::ExpertUp, ..g };
        assert_eq!(WeightFormat::Mxfp4 { experts_only: true }.bpw(&expert, &ctx).as_f64(), 4.25);
        assert_eq!(bpw(WeightFormat::Mxfp4 { experts_only: true }), 16.0);
        // Embeddings stay in 16-bit under bitsandbytes.
        let emb = TensorGroup { role: Role::Embedding, ..g };
        assert_eq!(WeightFormat::Int8.bpw(&emb, &ctx).as_f64(), 16.0);
    }
}

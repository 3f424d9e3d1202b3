//! vLLM's knobs as a plan holds them (`vllm serve` flags and the two a
//! start-up log names), their defaults and vLLM's checks of them.

use serde::{Deserialize, Serialize};

use super::{Mxfp4Kernel, Sampler, Version};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub version: Version,
    pub gpu_memory_utilization: Option<f64>,
    /// Default: the model's `max_position_embeddings`, as vLLM does.
    pub max_model_len: Option<u64>,
    pub max_num_batched_tokens: Option<u64>,
    pub max_num_seqs: Option<u64>,
    /// `--block-size` (`None`: the version's default, [`Version::default_block_size`]).
    #[serde(default)]
    pub block_size: Option<u64>,
    /// `--max-loras` with `--enable-lora` (0: LoRA off): adapters resident
    /// on the GPU at once, each with buffers of `max_lora_rank`.
    #[serde(default)]
    pub max_loras: u64,
    /// `--max-lora-rank` (vLLM's default 16).
    #[serde(default = "default_lora_rank")]
    pub max_lora_rank: u64,
    /// The sampler the profile runs (`None`: the version's default; a
    /// pasted start-up log names it).
    #[serde(default)]
    pub sampler: Option<Sampler>,
    /// The MXFP4 MoE kernel (`None`: the GPU's usual one; a pasted start-up
    /// log names it).
    #[serde(default)]
    pub mxfp4_kernel: Option<Mxfp4Kernel>,
    /// `--kv-cache-memory-bytes` (vLLM 0.11+): the KV pool of every rank,
    /// given; the memory profile is skipped and `gpu_memory_utilization`
    /// no longer sizes the pool (`gpu_worker.py::determine_available_memory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_memory_bytes: Option<u64>,
    /// `--no-enable-extensible-kv-cache` (0.34+): the pool is the profile's
    /// estimate within `gpu_memory_utilization` (0.92 by default), as
    /// before 0.34, instead of the memory measured after warmup.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_extensible_kv_cache: bool,
    /// `--enforce-eager`: no CUDA graph is captured (and none profiled).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enforce_eager: bool,
    /// `--speculative-config` (`None`: no speculative decoding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<Speculative>,
    /// `--limit-mm-per-prompt`: the items of each modality one prompt may
    /// hold, which size the vision tower's profile run.
    #[serde(default, skip_serializing_if = "MmLimits::is_default")]
    pub mm_limits: MmLimits,
    /// `--data-parallel-size`: replicas of the model's TP × PP group, each
    /// an engine core of its own (`EngineCore_DP{n}`) with its own KV pool,
    /// the requests spread over them (vLLM 0.19.0 `config/parallel.py`,
    /// `v1/engine/core.py`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub data_parallel_size: u64,
    /// `--enable-expert-parallel`: a MoE model's experts go whole to the
    /// DP × TP ranks instead of every expert being sharded by TP (0.19.0
    /// `fused_moe/config.py::FusedMoEParallelConfig.make`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_expert_parallel: bool,
    /// `--enable-eplb` with `num_redundant_experts` (`--eplb-config`; 0:
    /// load balancing off): copies of experts placed beside the model's, the
    /// experts then `E + redundant` over the EP ranks (`determine_expert_map`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub num_redundant_experts: u64,
    /// `--all2all-backend` (`None`: the release's gathering default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all2all_backend: Option<super::All2All>,
    /// `--cpu-offload-gb` (GiB per GPU; `None`: 0): the decoder layers'
    /// parameters, one after another as the layers are built, move to pinned
    /// host memory until this much has (0.24.0 `model_executor/offloader/uva.py`
    /// `_maybe_offload_to_cpu`, `models/utils.py::make_layers`; 0.10.0
    /// `models/utils.py::maybe_offload_to_cpu`, the same rule), read over
    /// PCIe at every step ([`super::offloaded_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_offload_gb: Option<f64>,
}

impl Options {
    /// Whether vLLM sizes the pool with its extensible KV cache: the
    /// version's default (0.34+), off when `--kv-cache-memory-bytes` gives
    /// the pool (`config/vllm.py::_resolve_extensible_kv_cache`) or
    /// `--no-enable-extensible-kv-cache` turns it off.
    pub fn extensible_kv_cache(self) -> bool {
        self.version.extensible_kv_cache() && self.kv_cache_memory_bytes.is_none() && !self.no_extensible_kv_cache
    }

    /// `gpu_memory_utilization`, given or the plan's default
    /// ([`Version::plan_utilization`]).
    pub fn utilization(self) -> f64 {
        self.gpu_memory_utilization.unwrap_or_else(|| self.version.plan_utilization(self.extensible_kv_cache()))
    }

    /// How a MoE model's experts lie on `tp`-way groups: the MoE layers
    /// span every data-parallel replica (`flatten_tp_across_dp_and_pcp`:
    /// their TP is DP × TP), each expert sharded over those ranks, or, with
    /// expert parallelism, their TP 1 and EP DP × TP, whole experts
    /// (0.19.0, the same in 0.11.0: `fused_moe/config.py::FusedMoEParallelConfig.make`,
    /// `fused_moe/layer.py::FusedMoE.__init__`).
    pub fn expert_split(self, tp: u64) -> crate::plan::ExpertSplit {
        let ranks = tp.max(1).saturating_mul(self.data_parallel_size.max(1));
        if self.enable_expert_parallel {
            crate::plan::ExpertSplit { redundant: self.num_redundant_experts, ..crate::plan::ExpertSplit::whole(ranks) }
        } else {
            crate::plan::ExpertSplit::sharded(ranks)
        }
    }
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The largest `--data-parallel-size` the knobs take (vLLM's own bound is
/// the GPUs there are; the plan's is `crate::plan::MAX_GPUS`).
pub const MAX_DATA_PARALLEL: u64 = 1024;

/// `--limit-mm-per-prompt` for the modalities a vision tower takes
/// (`None`: vLLM's 999, 0.24.0 `config/multimodal.py`; 0 turns a modality
/// off and, with every modality off, the encoder's profile run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<u64>,
}

/// `MultiModalConfig.get_limit_per_prompt`'s default for a modality left out.
pub const DEFAULT_MM_LIMIT: u64 = 999;

impl MmLimits {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// `image:2,video:0` (the link's and the page's text; empty: the defaults).
    pub fn text(self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.image {
            parts.push(format!("image:{n}"));
        }
        if let Some(n) = self.video {
            parts.push(format!("video:{n}"));
        }
        parts.join(",")
    }

    /// `image:2,video:0`, one count for every modality (`0`), or vLLM's JSON
    /// (`{"image": 2, "video": 0}`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let count = |v: &str| {
            v.trim()
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .filter(|&n| n <= 1024)
                .ok_or_else(|| format!("{}: a count of items per prompt, 0 to 1024", v.trim()))
        };
        if !t.contains(':') {
            let n = count(t)?;
            return Ok(Self { image: Some(n), video: Some(n) });
        }
        let mut limits = Self::default();
        for part in t.trim_start_matches('{').trim_end_matches('}').split(',').filter(|p| !p.trim().is_empty()) {
            let (modality, n) = part.split_once(':').ok_or_else(|| format!("{part}: use modality:count"))?;
            let n = count(n)?;
            match modality.trim().trim_matches('"').to_ascii_lowercase().as_str() {
                "image" => limits.image = Some(n),
                "video" => limits.video = Some(n),
                // Audio towers are not modelled; their limit sizes nothing here.
                "audio" => {}
                other => return Err(format!("{other}: use image, video or audio")),
            }
        }
        Ok(limits)
    }

    /// vLLM's own `--limit-mm-per-prompt` value.
    pub fn json(self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.image {
            parts.push(format!("\"image\": {n}"));
        }
        if let Some(n) = self.video {
            parts.push(format!("\"video\": {n}"));
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// `--speculative-config`: the method and `num_speculative_tokens`, the two
/// fields that decide its memory (vLLM 0.12.0 – 0.24.0 `config/speculative.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Speculative {
    pub method: SpecMethod,
    /// `num_speculative_tokens` (`None`: the MTP layers' own `n_predict`,
    /// `num_nextn_predict_layers`, as vLLM defaults it).
    pub tokens: Option<u64>,
}

/// The drafters that need no model of their own. EAGLE heads and draft
/// models are refused: their weights and KV come from their own config,
/// which a plan does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpecMethod {
    /// Prompt-lookup drafting (`NgramProposer`): no weights, no KV.
    Ngram,
    /// Suffix decoding (`SuffixDecodingProposer`, 0.12+): no weights, no KV.
    Suffix,
    /// The checkpoint's own multi-token-prediction layers (DeepSeek-V3,
    /// GLM-4.5, Qwen3-Next, Qwen3.5, MiMo): `num_nextn_predict_layers`
    /// layers beside the model, sharing its embedding and lm_head.
    Mtp,
}

/// The most draft tokens a link or flag may ask for (`MAX_SPEC_LEN`,
/// 0.24.0 `v1/sample/rejection_sampler.py`).
pub const MAX_SPEC_TOKENS: u64 = 128;

impl SpecMethod {
    pub fn id(self) -> &'static str {
        match self {
            Self::Ngram => "ngram",
            Self::Suffix => "suffix",
            Self::Mtp => "mtp",
        }
    }
}

impl Speculative {
    /// `ngram:4`, `mtp` (the link's and the page's text).
    pub fn text(self) -> String {
        match self.tokens {
            Some(k) => format!("{}:{k}", self.method.id()),
            None => self.method.id().into(),
        }
    }

    /// `ngram:4`, `mtp:2`, or vLLM's own JSON
    /// (`{"method": "ngram", "num_speculative_tokens": 4, …}`: its other
    /// fields, such as `prompt_lookup_max`, change no memory and are left).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let (method, tokens) = if t.starts_with('{') {
            let field = |key: &str| json_field(t, key);
            (field("method").unwrap_or_default(), field("num_speculative_tokens"))
        } else {
            match t.split_once(':') {
                Some((m, k)) => (m.trim(), Some(k.trim())),
                None => (t, None),
            }
        };
        let method = match method.to_ascii_lowercase().as_str() {
            "ngram" | "[ngram]" => SpecMethod::Ngram,
            "suffix" => SpecMethod::Suffix,
            // The per-family names vLLM folds into `mtp` (`MTPModelTypes`).
            "mtp" | "deepseek_mtp" | "mimo_mtp" | "glm4_moe_mtp" | "qwen3_next_mtp" | "ernie_mtp"
            | "longcat_flash_mtp" => SpecMethod::Mtp,
            "eagle" | "eagle3" | "draft_model" | "medusa" | "mlp_speculator" => {
                return Err(format!(
                    "{method}: a drafter with its own model is not modelled yet; use ngram, suffix or mtp"
                ));
            }
            "" => return Err("name a method: ngram, suffix or mtp".into()),
            other => return Err(format!("{other}: use ngram, suffix or mtp")),
        };
        let tokens = match tokens {
            None => None,
            Some(k) => Some(
                k.parse::<u64>()
                    .ok()
                    .filter(|k| (1..=MAX_SPEC_TOKENS).contains(k))
                    .ok_or_else(|| format!("num_speculative_tokens must be between 1 and {MAX_SPEC_TOKENS}"))?,
            ),
        };
        if tokens.is_none() && method != SpecMethod::Mtp {
            return Err(format!("{} needs num_speculative_tokens (e.g. {}:4)", method.id(), method.id()));
        }
        Ok(Self { method, tokens })
    }

    /// vLLM's own `--speculative-config` value.
    pub fn json(self) -> String {
        match self.tokens {
            Some(k) => format!("{{\"method\": \"{}\", \"num_speculative_tokens\": {k}}}", self.method.id()),
            None => format!("{{\"method\": \"{}\"}}", self.method.id()),
        }
    }
}

/// The value of `key` in a flat JSON object, unquoted: what
/// `--speculative-config` holds (strings and numbers; nested values are
/// not read).
fn json_field<'t>(json: &'t str, key: &str) -> Option<&'t str> {
    let quoted = format!("\"{key}\"");
    let rest = &json[json.find(&quoted)? + quoted.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim().trim_matches('"'))
}

/// `LoRAConfig.max_lora_rank` default (vLLM 0.33.0 `config/lora.py`).
pub const DEFAULT_MAX_LORA_RANK: u64 = 16;

/// `LoRAConfig.max_loras` default: the adapters `--enable-lora` alone keeps
/// on the GPU (`config/lora.py`, 1 in 0.10.2, 0.12.0, 0.24.0 and 0.33.0).
pub const DEFAULT_MAX_LORAS: u64 = 1;

fn default_lora_rank() -> u64 {
    DEFAULT_MAX_LORA_RANK
}

impl Default for Options {
    fn default() -> Self {
        Self {
            version: Version::default(),
            gpu_memory_utilization: None,
            max_model_len: None,
            max_num_batched_tokens: None,
            max_num_seqs: None,
            block_size: None,
            max_loras: 0,
            max_lora_rank: DEFAULT_MAX_LORA_RANK,
            sampler: None,
            mxfp4_kernel: None,
            kv_cache_memory_bytes: None,
            no_extensible_kv_cache: false,
            enforce_eager: false,
            speculative: None,
            mm_limits: MmLimits::default(),
            data_parallel_size: 1,
            enable_expert_parallel: false,
            all2all_backend: None,
            num_redundant_experts: 0,
            cpu_offload_gb: None,
        }
    }
}

/// A setting the plan's release does not have, said before the verdict;
/// the plan is estimated and launched as the release runs it (a link made
/// before the rule still opens). 0.10.0 and 0.10.2 `cuda_communicator.py`
/// raise "Unknown all2all backend" for `allgather_reducescatter`, which
/// 0.11.0 added: their default `naive` gathers every replica's tokens the
/// same way (`all2all::buffer_bytes`).
pub(crate) fn setting_refusal(o: Options) -> Option<String> {
    (o.all2all_backend == Some(super::All2All::AllgatherReducescatter) && !o.version.allgather_reducescatter()).then(|| {
        format!(
            "vLLM's {} rules have no allgather_reducescatter all-to-all backend (0.11 added it): run as naive, which gathers the same",
            o.version.id()
        )
    })
}

/// vLLM's checks of its knobs.
/// The most `--cpu-offload-gb` a plan takes (vLLM takes any; a host has
/// less): 16 TiB.
pub const MAX_CPU_OFFLOAD_GB: u64 = 16_384;

pub(crate) fn check_knobs(o: Options) -> Result<(), String> {
    crate::engines::fraction("gpu_memory_utilization", o.gpu_memory_utilization)?;
    if let Some(g) = o.cpu_offload_gb.filter(|g| !(0.0..=MAX_CPU_OFFLOAD_GB as f64).contains(g)) {
        return Err(format!(
            "cpu_offload_gb must be between 0 and {MAX_CPU_OFFLOAD_GB} GiB, got {}",
            crate::units::shortest(g)
        ));
    }
    if let Some(b) = o.block_size.filter(|b| !(1..=1024).contains(b)) {
        return Err(format!("block_size must be between 1 and 1024, got {b}"));
    }
    // The flag exists from 0.34 (`engine/arg_utils.py`), where the cache does.
    if o.no_extensible_kv_cache && !o.version.extensible_kv_cache() {
        return Err(format!(
            "--no-enable-extensible-kv-cache needs vLLM 0.34 or later; the {} rules size the pool from the profile already",
            o.version.id()
        ));
    }
    // `LoRAConfig`: max_loras ≥ 1 when LoRA is on; ranks up to 512.
    if o.max_loras > 1024 {
        return Err(format!("max_loras must be at most 1024, got {}", o.max_loras));
    }
    if !(1..=512).contains(&o.max_lora_rank) {
        return Err(format!("max_lora_rank must be between 1 and 512, got {}", o.max_lora_rank));
    }
    if o.speculative.is_some() && o.version == Version::V0 {
        return Err("the V0 rules do not model speculative decoding; use the V1 engine's".into());
    }
    // `ParallelConfig`: "num_redundant_experts is set to … but EPLB is not
    // enabled", and EPLB needs expert parallelism.
    if o.num_redundant_experts > 0 && !o.enable_expert_parallel {
        return Err("vLLM's redundant experts (EPLB) need --enable-expert-parallel".into());
    }
    if o.kv_cache_memory_bytes.is_some() && !o.version.kv_memory_tools() {
        return Err(format!("kv_cache_memory_bytes arrived in vLLM 0.11; the {} rules are older", o.version.id()));
    }
    Ok(())
}

//! The link format's versions (`v=`), the defaults each one froze, and the
//! engine versions newer than the one a link pins.
//!
//! A key a link leaves out takes the default *of the link's version*, kept
//! here as data, never the moving [`LinkState::default`] or
//! [`EngineKind::with_defaults`]: a link means the same plan in every later
//! release. `docs/links.md` states the promise and the history.

use super::state::{GpuChoice, LinkState, ModelSource};
use crate::engines::{Engine, EngineKind, llamacpp, ollama, sglang, transformers, vllm};
use crate::units::UnitSystem;

/// A version of the link format. A link without `v=` (every link made before
/// v2) is version 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum LinkVersion {
    /// No `v=`: links of Headroom up to 2026-12. `vllm=latest` and a vLLM
    /// link without `vllm=` mean vLLM 0.21, the newest rules then.
    #[default]
    V1,
    /// `v=2`: the page writes `v=2` and pins the engine version
    /// (`vllm=0.21`). It changed no default.
    V2,
    /// `v=3`: a link that leaves `kv` out means the engine's own cache
    /// ([`EngineKind::default_kv_dtype`]: f16 for llama.cpp and Ollama), where
    /// v1 and v2 meant the activation dtype (bf16 for most checkpoints), which
    /// a v3 link writes `kv=act`. `vllm=latest` means 0.34.
    V3,
}

impl LinkVersion {
    /// The version the page writes.
    pub const CURRENT: Self = Self::V3;

    pub fn number(self) -> u64 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
            Self::V3 => 3,
        }
    }

    /// `Err` names the newest version this build reads.
    pub fn from_number(n: u64) -> Result<Self, String> {
        match n {
            1 => Ok(Self::V1),
            2 => Ok(Self::V2),
            3 => Ok(Self::V3),
            _ => Err(format!("this page reads link versions 1 to {}", Self::CURRENT.number())),
        }
    }

    /// The state a link of this version means before its keys apply.
    pub fn defaults(self) -> LinkState {
        match self {
            Self::V1 | Self::V2 => LinkState { kv_activation: true, ..defaults_2026_12() },
            Self::V3 => defaults_2026_12(),
        }
    }

    /// The engine `e=` names, with every knob the link leaves out at this
    /// version's default.
    pub fn engine(self, kind: EngineKind) -> Engine {
        match self {
            Self::V1 | Self::V2 | Self::V3 => engine_2026_12(kind),
        }
    }

    /// The engine of a link without `e=`.
    pub fn engine_kind(self) -> EngineKind {
        match self {
            Self::V1 | Self::V2 | Self::V3 => EngineKind::Transformers,
        }
    }

    /// The vLLM version `vllm=latest` means in a link of this version: the
    /// newest when the version was current, frozen.
    pub fn vllm_latest(self) -> vllm::Version {
        match self {
            Self::V1 | Self::V2 => vllm::Version::V0_21,
            Self::V3 => vllm::Version::V0_34,
        }
    }
}

/// Whether `kv=act` (the activation dtype's cache, what a link before v3
/// meant by leaving `kv` out) plans otherwise than the engine's own cache:
/// llama.cpp's, whose line printed it (`-ctk bf16`). Ollama ran its
/// llama-server's f16 for it before v3 as after, and the other engines'
/// own cache is the activation dtype's.
pub(super) fn activation_kv_differs(kind: EngineKind) -> bool {
    match kind {
        EngineKind::LlamaCpp => true,
        EngineKind::Ollama | EngineKind::Transformers | EngineKind::Vllm | EngineKind::Sglang => false,
    }
}

/// The engine a new plan gets when the person picks `kind`: the current
/// link version's knob defaults with the newest engine version this build
/// knows. Always representable in a link, so copying it loses nothing.
pub fn new_engine(kind: EngineKind) -> Engine {
    match LinkVersion::CURRENT.engine(kind) {
        Engine::Vllm(o) => Engine::Vllm(vllm::Options { version: vllm::Version::LATEST, ..o }),
        Engine::Sglang(o) => Engine::Sglang(sglang::Options { version: sglang::Version::LATEST, ..o }),
        e @ (Engine::Transformers(_) | Engine::LlamaCpp(_) | Engine::Ollama(_)) => e,
    }
}

/// The defaults of links v1 and v2, as the page of 2026-12 applied them
/// (`LinkState::default`, `docs/links.md` "Default when absent"). A new
/// key gets, here, the value that keeps older links' plans (usually "as
/// before the key existed"); a new default for new links is a new version.
fn defaults_2026_12() -> LinkState {
    LinkState {
        model: ModelSource::Preset("llama-3.1-8b".into()),
        checkpoint_bytes: None,
        weights: None,
        kv_dtype: None,
        kv_activation: false,
        prompt_tokens: 2048,
        max_new_tokens: 512,
        concurrency: 1,
        gpu: GpuChoice::Catalog("rtx-4090".into()),
        gpu_count: 1,
        more_gpus: Vec::new(),
        tp: 1,
        engine: engine_2026_12(LinkVersion::V1.engine_kind()),
        oom: None,
        units: UnitSystem::Binary,
        hub: None,
    }
}

/// Each engine's knobs left out of a link of 2026-12. The `None`s resolve in
/// the engine by rules that are themselves versioned where they moved
/// (vLLM's by [`vllm::Version`]).
fn engine_2026_12(kind: EngineKind) -> Engine {
    match kind {
        EngineKind::Transformers => Engine::Transformers(transformers::Options {
            attention: transformers::AttentionImpl::Sdpa,
            logits: transformers::LogitsMode::LastToken,
        }),
        EngineKind::Vllm => Engine::Vllm(vllm::Options {
            version: vllm::Version::V0_21,
            gpu_memory_utilization: None,
            max_model_len: None,
            max_num_batched_tokens: None,
            max_num_seqs: None,
            // `None`: the pinned version's own default (16 before vLLM 0.34).
            block_size: None,
            // Knobs added after v2 (issue 15): frozen at "as before".
            max_loras: 0,
            max_lora_rank: vllm::DEFAULT_MAX_LORA_RANK,
            // The version's own sampler and the GPU's own MXFP4 kernel.
            sampler: None,
            mxfp4_kernel: None,
            kv_cache_memory_bytes: None,
            // Came with the 0.34 rules: the rules' own default.
            no_extensible_kv_cache: false,
            enforce_eager: false,
            cpu_offload_gb: None,
            speculative: None,
            mm_limits: vllm::MmLimits { image: None, video: None },
            // Data and expert parallelism came after v2 (issue 36): one
            // replica, experts sharded by TP, as every link before the keys.
            data_parallel_size: 1,
            enable_expert_parallel: false,
            all2all_backend: None,
            num_redundant_experts: 0,
        }),
        EngineKind::Sglang => Engine::Sglang(sglang::Options {
            // Links of 2026-12 without `sglang=`: the TP-degree table.
            version: sglang::Version::TpTable,
            mem_fraction_static: None,
            context_length: None,
            chunked_prefill_size: None,
            // Data parallelism came after v2 (issue 36): one replica, no
            // data-parallel attention, experts sharded by TP.
            dp_size: 1,
            enable_dp_attention: false,
            ep_size: 1,
            ep_num_redundant_experts: 0,
            // DeepEP came after v2: no all-to-all backend.
            moe_a2a_deepep: false,
            deepep_mode: sglang::DeepepMode::Auto,
        }),
        EngineKind::LlamaCpp => Engine::LlamaCpp(llamacpp::Options {
            n_ctx: None,
            n_gpu_layers: None,
            parallel: None,
            n_ubatch: 512,
            n_batch: llamacpp::DEFAULT_N_BATCH,
            flash_attention: llamacpp::FlashAttention::On,
            // Knobs added after v1: their defaults are frozen here.
            cache_type_k: None,
            cache_type_v: None,
            n_cpu_moe: 0,
            no_kv_offload: false,
            kv_unified: false,
            swa_full: false,
            tensor_overrides: llamacpp::TensorOverrides::NONE,
            tensor_split: llamacpp::TensorSplit::BY_MEMORY,
            split_mode: llamacpp::SplitMode::Layer,
            main_gpu: 0,
            mmproj: false,
            no_mmproj_offload: false,
            // `--fit` changes no figure of the plan, only what the page
            // says llama.cpp would load instead: its defaults for every link.
            fit: llamacpp::FitMode::On,
            fit_target_mib: llamacpp::FIT_MARGIN_BYTES / crate::units::MIB,
            host_ram_bytes: None,
            // The newest build's rules, as every link before the key.
            build: None,
            // ik_llama.cpp came after v2 (issue 35): links without `fork=`
            // are mainline llama.cpp, and ik's flags unset.
            fork: llamacpp::Fork::Mainline,
            mla: None,
            attn_max_batch_mib: None,
            fused_moe: None,
            run_time_repack: false,
            // Read from a log only, never from a link.
            blas: false,
            no_gpu_backend: false,
            ollama_engine: false,
        }),
        // Ollama came after v2: its links always name `e=ollama`, and its
        // knobs left out are Ollama's own defaults.
        EngineKind::Ollama => Engine::Ollama(ollama::Options {
            num_ctx: None,
            num_parallel: 1,
            kv_cache_type: None,
            flash_attention: None,
            num_gpu: None,
            num_batch: None,
            n_cpu_moe: 0,
            mmproj: false,
            host_ram_bytes: None,
        }),
    }
}

/// Newer rules than those a plan's engine version names: what the page
/// offers when it opens an older link.
#[derive(Debug, Clone, PartialEq)]
pub struct NewerEngine {
    /// The releases the plan's rules cover (`vLLM 0.8 – 0.9 (V1 engine)`).
    pub planned: &'static str,
    /// The newest releases this build knows (`vLLM 0.21+`).
    pub newest: &'static str,
    /// What each newer version changed, oldest first.
    pub changes: Vec<&'static str>,
    /// The same engine and knobs with the newest version.
    pub engine: Engine,
}

impl NewerEngine {
    /// "Planned for vLLM 0.8 – 0.9 (V1 engine) defaults; newer: vLLM 0.21+ …".
    pub fn message(&self) -> String {
        format!("Planned for {} defaults; newer: {} — {}.", self.planned, self.newest, self.changes.join("; "))
    }
}

/// The newer engine version, when the plan's is not the newest this build knows.
pub fn newer_engine(engine: &Engine) -> Option<NewerEngine> {
    match *engine {
        Engine::Vllm(o) if o.version < vllm::Version::LATEST => {
            // Rules read after the newest, for older releases only (0.19-alloc), are not in it.
            let mut changes: Vec<&str> = vllm::Version::ALL
                .iter()
                .filter(|v| **v > o.version && **v <= vllm::Version::LATEST)
                .map(|v| v.changes())
                .collect();
            // Two variants may add the same rule to two release ranges.
            changes.dedup();
            Some(NewerEngine {
                planned: o.version.releases(),
                newest: vllm::Version::LATEST.releases(),
                changes,
                engine: Engine::Vllm(vllm::Options { version: vllm::Version::LATEST, ..o }),
            })
        }
        // SGLang's older rules are not offered the newer ones (the page's
        // first load has no room for the text); the knob's select shows them.
        // One rule set each so far: nothing newer.
        Engine::Vllm(_) | Engine::Transformers(_) | Engine::Sglang(_) | Engine::LlamaCpp(_) | Engine::Ollama(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_their_numbers() {
        for v in [LinkVersion::V1, LinkVersion::V2, LinkVersion::V3] {
            assert_eq!(LinkVersion::from_number(v.number()), Ok(v));
        }
        assert!(LinkVersion::from_number(4).is_err());
        assert!(LinkVersion::from_number(0).is_err());
    }

    #[test]
    fn older_vllm_versions_are_offered_the_newest() {
        let v1 = Engine::Vllm(vllm::Options {
            version: vllm::Version::V1,
            gpu_memory_utilization: Some(0.8),
            ..Default::default()
        });
        let newer = newer_engine(&v1).expect(
            "0.10, 0.12, 0.11-mm, 0.17-mm, 0.18, 0.19, 0.21, 0.33, 0.24, the -rope, the -mm and the 0.34 rules are newer",
        );
        assert_eq!(newer.changes.len(), 12);
        assert!(newer.message().contains("CUDA-graph"), "{}", newer.message());
        // The person's own knobs stay; only the version moves.
        let Engine::Vllm(o) = newer.engine else { panic!("vLLM") };
        assert_eq!((o.version, o.gpu_memory_utilization), (vllm::Version::LATEST, Some(0.8)));
        let v0 = Engine::Vllm(vllm::Options { version: vllm::Version::V0, ..Default::default() });
        assert_eq!(newer_engine(&v0).expect("newer").changes.len(), 13);
        assert_eq!(newer_engine(&newer.engine), None);
        // 0.19-alloc, read after the newest for 0.18 – 0.19 only, is neither
        // offered the newest nor listed among its changes.
        let alloc = Engine::Vllm(vllm::Options { version: vllm::Version::V0_19Alloc, ..Default::default() });
        assert_eq!(newer_engine(&alloc), None);
        assert!(!newer.message().contains("allocator"), "{}", newer.message());
        for kind in EngineKind::ALL {
            assert_eq!(newer_engine(&kind.with_defaults()), None, "a new plan gets the newest rules");
        }
    }
}

//! The vLLM releases whose memory rules Headroom models, each frozen once
//! released (share links pin one).

use serde::{Deserialize, Serialize};

/// The vLLM releases whose memory rules the estimator models, oldest first.
/// Each variant's rules are frozen once released: a share link that names it
/// (`vllm=v1`) means the same plan in every later Headroom. A new vLLM rule
/// set is a new variant (and [`Version::LATEST`] moves), never an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub enum Version {
    /// The V0 engine (vLLM ≤ 0.7): utilization 0.90, no chunked prefill below
    /// 32K context, sliding windows not per layer, CUDA graphs unaccounted.
    #[serde(rename = "v0")]
    V0,
    /// The V1 engine (0.8 – 0.20): utilization 0.90, chunked prefill, KV
    /// groups for sliding-window layers, CUDA graphs unaccounted.
    #[serde(rename = "v1")]
    V1,
    /// vLLM 0.21 and later: utilization 0.92 (`vllm/config/cache.py`), CUDA
    /// graphs estimated and subtracted from the KV budget
    /// (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`, "default since v0.21.0").
    #[default]
    #[serde(rename = "0.21", alias = "latest")]
    V0_21,
}

impl Version {
    /// Every known version, oldest first.
    pub const ALL: &[Version] = &[Self::V0, Self::V1, Self::V0_21];
    /// The newest rules this build knows: what a new plan gets.
    pub const LATEST: Version = Self::V0_21;
    /// Their ids, newest first (the page's choices).
    pub const IDS_NEWEST_FIRST: &[&str] = &["0.21", "v1", "v0"];

    /// The id links and the CLI use: `v0`, `v1`, `0.21`.
    pub fn id(self) -> &'static str {
        match self {
            Self::V0 => "v0",
            Self::V1 => "v1",
            Self::V0_21 => "0.21",
        }
    }

    /// The releases the rules cover, for people.
    pub fn releases(self) -> &'static str {
        match self {
            Self::V0 => "vLLM ≤ 0.7 (V0 engine)",
            Self::V1 => "vLLM 0.8 – 0.20 (V1 engine)",
            Self::V0_21 => "vLLM 0.21+",
        }
    }

    /// What this version's rules changed from the previous version's.
    pub fn changes(self) -> &'static str {
        match self {
            Self::V0 => "the V0 engine: no chunked prefill below 32K context",
            Self::V1 => "chunked prefill and KV groups for sliding-window layers",
            Self::V0_21 => "utilization 0.92 instead of 0.90, and CUDA-graph memory subtracted from the KV budget",
        }
    }

    /// An id (`v0`, `v1`, `0.21`, also `0.21.0`, `0`, `1`) or `latest`
    /// (the newest this build knows: for the CLI; links pin instead).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "latest" | "new" => Some(Self::LATEST),
            other => Self::parse_pinned(other),
        }
    }

    /// An id naming one version (not the moving `latest`).
    pub fn parse_pinned(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().trim_start_matches('v') {
            "0" => Some(Self::V0),
            "1" => Some(Self::V1),
            "0.21" | "0.21.0" => Some(Self::V0_21),
            _ => None,
        }
    }

    /// `gpu_memory_utilization` default: 0.9 historically, 0.92 in
    /// `vllm/config/cache.py` since 0.21.
    pub fn default_utilization(self) -> f64 {
        match self {
            Self::V0 | Self::V1 => 0.90,
            Self::V0_21 => 0.92,
        }
    }

    /// Whether the estimated CUDA-graph memory comes out of the KV budget.
    pub fn subtracts_cuda_graphs(self) -> bool {
        match self {
            Self::V0 | Self::V1 => false,
            Self::V0_21 => true,
        }
    }

    /// Whether sliding-window layers get their own KV cache groups.
    pub(super) fn groups_sliding_windows(self) -> bool {
        match self {
            Self::V0 => false,
            Self::V1 | Self::V0_21 => true,
        }
    }
}

//! vLLM's all-to-all backends, which move a MoE model's tokens to their
//! experts when expert parallelism spans data-parallel replicas
//! (`--all2all-backend`; `VLLM_ALL2ALL_BACKEND` before 0.12), and the GPU
//! buffers DeepEP's take. vLLM 0.19.0
//! `distributed/device_communicators/all2all.py`: the default
//! `allgather_reducescatter` (and 0.10's `naive`) gathers the hidden states
//! into ordinary tensors (the profile's peak counts them); DeepEP's
//! managers create a `deep_ep.Buffer` after the weights are measured
//! (`gpu_model_runner.load_model` → `prepare_communication_buffer_for_model`),
//! outside PyTorch, so it comes out of the KV budget: an NVLink buffer of
//! `VLLM_DEEPEP_BUFFER_SIZE_MB` (1,024) MiB, and an RDMA buffer, the same
//! size for the high-throughput kernels across nodes, or sized by
//! `Buffer.get_low_latency_rdma_size_hint` for the low-latency ones.
//! The kernels run only where expert parallelism spans replicas
//! (`FusedMoEParallelConfig.use_all2all_kernels`: DP > 1 and EP).

use serde::{Deserialize, Serialize};

use super::{Options, Plan};
use crate::units::MIB;

/// `--all2all-backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum All2All {
    /// The default from 0.11: all-gather before the experts, reduce-scatter after.
    AllgatherReducescatter,
    /// 0.10's default: broadcasts into one buffer of every replica's tokens.
    Naive,
    DeepepHighThroughput,
    DeepepLowLatency,
}

impl All2All {
    /// The page's choices, the default first.
    pub const IDS: &[&str] = &["allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency", "naive"];

    pub fn id(self) -> &'static str {
        match self {
            Self::AllgatherReducescatter => "allgather_reducescatter",
            Self::Naive => "naive",
            Self::DeepepHighThroughput => "deepep_high_throughput",
            Self::DeepepLowLatency => "deepep_low_latency",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "allgather_reducescatter" => Some(Self::AllgatherReducescatter),
            "naive" => Some(Self::Naive),
            "deepep_high_throughput" => Some(Self::DeepepHighThroughput),
            "deepep_low_latency" => Some(Self::DeepepLowLatency),
            _ => None,
        }
    }
}

/// `VLLM_DEEPEP_BUFFER_SIZE_MB`'s default, in bytes (0.19.0 `envs.py`).
pub const DEEPEP_BUFFER_BYTES: u64 = 1024 * MIB;

/// The tokens per rank DeepEP's low-latency buffer is sized for:
/// `VLLM_MOE_DP_CHUNK_SIZE`'s default (0.11.0 – 0.19.0 `envs.py`), the
/// chunk its dispatch takes at a time.
pub const DEEPEP_LOW_LATENCY_TOKENS: u64 = 256;

/// GPUs one node links by NVLink as DeepEP counts them (`NUM_MAX_NVL_PEERS`).
const NVL_PEERS: u64 = 8;

/// `Buffer.get_low_latency_rdma_size_hint` (DeepEP `csrc/config.hpp`,
/// `LowLatencyLayout`): two symmetric halves, each a send buffer, a
/// receive buffer and one signal per expert. A dispatch message is 16
/// bytes of header and the larger of the bf16 token and its FP8 form with
/// one fp32 scale per 128 values; a combine message the bf16 token and
/// two bf16 per scale group. Sends hold a rank's tokens (dispatch) or
/// every expert's (combine); receives every expert's. Aligned to 128 bytes.
pub fn low_latency_rdma_bytes(tokens: u64, hidden: u64, experts: u64) -> u64 {
    const ALIGN: u64 = 128;
    let scales = hidden / 128;
    let dispatch_msg = 16 + (hidden * 2).max(hidden + scales * 4);
    let combine_msg = scales * 4 + hidden * 2;
    let per_expert = experts.saturating_mul(tokens);
    let send = tokens.saturating_mul(dispatch_msg).max(per_expert.saturating_mul(combine_msg));
    let recv = per_expert.saturating_mul(dispatch_msg.max(combine_msg));
    let signals = (experts * 4).next_multiple_of(ALIGN);
    send.saturating_add(recv).saturating_add(signals).saturating_mul(2).next_multiple_of(ALIGN)
}

/// The all-to-all buffers one rank of the plan holds outside PyTorch:
/// DeepEP's, where its kernels run (a MoE model, expert parallelism over
/// more than one replica); nothing for the gathering backends.
pub fn buffer_bytes(p: &Plan, o: Options) -> u64 {
    let Some(m) = p.model.arch.text.moe else { return 0 };
    if o.data_parallel_size <= 1 || !o.enable_expert_parallel {
        return 0;
    }
    let ranks = p.sharding().experts.ranks;
    match o.all2all_backend {
        None | Some(All2All::AllgatherReducescatter | All2All::Naive) => 0,
        // The RDMA buffer only across nodes (`internode`).
        Some(All2All::DeepepHighThroughput) => DEEPEP_BUFFER_BYTES * if ranks > NVL_PEERS { 2 } else { 1 },
        Some(All2All::DeepepLowLatency) => DEEPEP_BUFFER_BYTES.saturating_add(low_latency_rdma_bytes(
            DEEPEP_LOW_LATENCY_TOKENS,
            p.model.arch.text.hidden_size,
            m.num_experts,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepseek_v3s_low_latency_buffer() {
        // hidden 7,168, 256 experts, 256 tokens: 2 × (954 MB send + 954 MB
        // receive + 1 KiB of signals) = 3.55 GiB.
        let bytes = low_latency_rdma_bytes(256, 7168, 256);
        assert_eq!(bytes, 3_816_818_688);
        assert_eq!(format!("{:.2}", bytes as f64 / (1u64 << 30) as f64), "3.55");
    }
}

//! One GPU's bytes by part ([`GpuBudget`]), that budget on a named GPU of
//! the plan ([`GpuPeak`]), and the answer in one line ([`Verdict`]).

use serde::{Deserialize, Serialize};

use super::GpuSlot;

/// The bytes one GPU holds, by part: the one budget type every engine fills
/// and every front end shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GpuBudget {
    pub weight_bytes: u64,
    pub kv_cache_bytes: u64,
    /// Recurrent state (Mamba, gated DeltaNet, short conv) of the sequences
    /// this GPU holds, beside the KV cache; 0 for models without recurrent layers.
    pub state_bytes: u64,
    pub activation_bytes: u64,
    pub overhead_bytes: u64,
}

impl GpuBudget {
    pub fn total_bytes(&self) -> u64 {
        self.weight_bytes
            .saturating_add(self.kv_cache_bytes)
            .saturating_add(self.state_bytes)
            .saturating_add(self.activation_bytes)
            .saturating_add(self.overhead_bytes)
    }
}

/// One GPU of the plan at its peak: its budget, and how that compares with
/// its capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuPeak {
    pub index: usize,
    pub name: String,
    pub capacity_bytes: u64,
    /// `budget.total_bytes()`.
    pub total_bytes: u64,
    #[serde(flatten)]
    pub budget: GpuBudget,
    /// `capacity − total` when it fits, else 0.
    pub free_bytes: u64,
    /// `total − capacity` when it does not fit, else 0.
    pub shortfall_bytes: u64,
    pub fits: bool,
    /// Decoder layers placed on this GPU (`[start, end)`).
    pub layers: [usize; 2],
}

impl GpuPeak {
    pub fn new(index: usize, slot: &GpuSlot, layers: std::ops::Range<usize>, budget: GpuBudget) -> Self {
        let (cap, total) = (slot.capacity_bytes, budget.total_bytes());
        Self {
            index,
            name: slot.name.clone(),
            capacity_bytes: cap,
            total_bytes: total,
            budget,
            free_bytes: cap.saturating_sub(total),
            shortfall_bytes: total.saturating_sub(cap),
            fits: total <= cap,
            layers: [layers.start, layers.end],
        }
    }

    /// The sum of one figure over GPUs (saturating).
    pub fn sum(gpus: &[GpuPeak], figure: impl Fn(&GpuPeak) -> u64) -> u64 {
        gpus.iter().fold(0u64, |a, g| a.saturating_add(figure(g)))
    }
}

/// The answer in one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Verdict {
    /// Everything fits; `max_concurrency` sequences of this length would.
    Fits { max_concurrency: u64 },
    /// The weights and fixed overhead alone exceed GPU `gpu`.
    DoesNotFitAtLoad { gpu: usize, shortfall_bytes: u64 },
    /// Loading works, but processing the prompt runs out on GPU `gpu`.
    RunsOutInPrefill { gpu: usize, shortfall_bytes: u64 },
    /// Generation runs out when the sequence reaches `token` tokens
    /// (`generated` of them new).
    RunsOutAtToken { gpu: usize, token: u64, generated: u64 },
    /// The engine refuses to start (one request of its configured context
    /// does not fit its pool, or no memory is left for the pool).
    /// `largest_context` is the longest context it would start with (0: none).
    EngineRefuses { gpu: usize, largest_context: u64 },
}

//! What a diagnosis says: the checklist's cause, the readings that show it,
//! how sure it is and the fix.

use crate::engines::EngineKind;

/// The checklist's causes, numbered as the checklist numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cause {
    /// 1. Memory rose in one burst and settled near capacity before any
    ///    generation: the weights' precision is too high for the card.
    NearCapacity,
    /// 2. Memory climbs step by step while the GPU computes: the KV cache
    ///    grows with every generated token.
    Growing,
    /// 3. One process on several GPUs, one near full and another near empty:
    ///    the split (`device_map`) is wrong.
    Unbalanced,
    /// 4. Memory held by an idle process beside a working one, or by no
    ///    listed process at all: leftovers.
    Leftover,
}

impl Cause {
    pub const ALL: [Cause; 4] = [Cause::NearCapacity, Cause::Growing, Cause::Unbalanced, Cause::Leftover];

    /// The checklist's number.
    pub fn number(self) -> u8 {
        match self {
            Cause::NearCapacity => 1,
            Cause::Growing => 2,
            Cause::Unbalanced => 3,
            Cause::Leftover => 4,
        }
    }

    /// The id on the wire and in metrics.
    pub fn id(self) -> &'static str {
        match self {
            Cause::NearCapacity => "near_capacity",
            Cause::Growing => "growing",
            Cause::Unbalanced => "unbalanced",
            Cause::Leftover => "leftover",
        }
    }

    pub fn parse(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.id() == id)
    }

    pub fn title(self) -> &'static str {
        match self {
            Cause::NearCapacity => "Loaded near capacity",
            Cause::Growing => "Growing during generation",
            Cause::Unbalanced => "Unbalanced split",
            Cause::Leftover => "Leftover memory",
        }
    }
}

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Certainty {
    /// The readings show the pattern plainly.
    Likely,
    /// The readings fit, but another explanation would too (said in the evidence).
    Possible,
}

impl Certainty {
    pub fn id(self) -> &'static str {
        match self {
            Certainty::Likely => "likely",
            Certainty::Possible => "possible",
        }
    }

    pub fn parse(id: &str) -> Option<Self> {
        [Certainty::Likely, Certainty::Possible].into_iter().find(|c| c.id() == id)
    }
}

/// A climb and where it leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// Bytes per second, from the first step of the climb to the last.
    pub bytes_per_s: u64,
    /// How much the climb has added so far.
    pub climbed_bytes: u64,
    /// The steps seen (the caching allocator grabs memory in segments).
    pub steps: u32,
    /// The GPU's free memory at the last reading.
    pub free_bytes: u64,
    /// At this rate, when the free memory runs out.
    pub seconds_to_capacity: u64,
}

/// One finding on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub cause: Cause,
    pub gpu: u32,
    /// The process it is about, when the readings name one.
    pub pid: Option<u32>,
    pub process: Option<String>,
    pub certainty: Certainty,
    /// Unix ms of the first reading that shows it.
    pub since_ms: u64,
    /// Unix ms of the reading at which it was first found.
    pub found_ms: u64,
    /// The bytes it is about: what the process holds, what no process holds.
    pub bytes: u64,
    pub gpu_total_bytes: u64,
    /// The engine the process's name shows, when it shows one.
    pub engine: Option<EngineKind>,
    /// The readings, in a sentence.
    pub evidence: String,
    /// What to do, with the engine's own words.
    pub fix: String,
    pub growth: Option<Growth>,
    /// Unbalanced: what the process holds on each of its GPUs, `(gpu, bytes)`.
    pub spread: Vec<(u32, u64)>,
}

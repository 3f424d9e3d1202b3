//! The simulated GPU as an [`Allocator`]: the blocks of
//! [`crate::telemetry::simulated::probe_memory`], first fit, with a delay per
//! allocation so a probe takes visible time (and tests can cancel it midway).

use std::time::Duration;

use super::modes::{AllocError, Allocator};
use crate::telemetry::simulated::SimProbeMemory;

#[derive(Debug)]
pub struct SimAllocator {
    /// Free bytes left in each block.
    blocks: Vec<u64>,
    /// Live allocations: `(block, bytes)`, indexed by handle.
    live: Vec<Option<(usize, u64)>>,
    step_delay: Duration,
}

impl SimAllocator {
    pub fn new(memory: &SimProbeMemory, step_delay: Duration) -> Self {
        Self { blocks: memory.blocks.clone(), live: Vec::new(), step_delay }
    }

    pub fn free_bytes(&self) -> u64 {
        self.blocks.iter().sum()
    }
}

impl Allocator for SimAllocator {
    fn alloc(&mut self, bytes: u64) -> Result<Option<u64>, AllocError> {
        std::thread::sleep(self.step_delay);
        let Some(block) = self.blocks.iter().position(|&free| free >= bytes && bytes > 0) else {
            return Ok(None);
        };
        self.blocks[block] -= bytes;
        self.live.push(Some((block, bytes)));
        Ok(Some(self.live.len() as u64))
    }

    fn free(&mut self, handle: u64) -> Result<(), AllocError> {
        let slot = handle.checked_sub(1).and_then(|i| self.live.get_mut(i as usize));
        match slot.and_then(Option::take) {
            Some((block, bytes)) => {
                self.blocks[block] += bytes;
                Ok(())
            }
            None => Err(AllocError(format!("simulated free of an unknown handle {handle}"))),
        }
    }
}

//! llama.cpp / ggml buffer allocation failures, by what was being allocated.

use crate::fixes::GivesUp;
use crate::kv::KvDtype;
use crate::oom::LlamaCppStage;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::gib;
use crate::oom::diagnose::{CauseId, FixId};

pub(super) fn llama_cpp(f: &Facts, b: &mut Board) {
    let q = f.requested;
    let on = f.r.gpu_index.map_or(String::new(), |i| format!(" on GPU {i}"));
    let size = q.map_or(String::new(), |q| format!(" of {}", gib(q)));
    match f.r.llama_cpp_stage {
        Some(LlamaCppStage::ModelWeights) => {
            b.add(
                CauseId::WeightsTooLarge,
                85,
                format!("llama.cpp failed while loading the weights: the weight buffer{size}{on} did not fit"),
            );
            b.fix(fix(
                FixId::OffloadLayers,
                CauseId::WeightsTooLarge,
                "Offload fewer layers to the GPU (the rest run on the CPU)".into(),
                GivesUp::Speed,
                None,
                "llama-server ... --fit on   # or lower -ngl until the model loads".into(),
            ));
            b.fix(fix(
                FixId::WeightFormat,
                CauseId::WeightsTooLarge,
                "Use a smaller GGUF quantisation".into(),
                GivesUp::Quality,
                None,
                "llama-server -m model-Q4_K_M.gguf ...".into(),
            ));
        }
        Some(LlamaCppStage::KvCache) => {
            b.add(
                CauseId::KvCacheGrowth,
                85,
                format!("llama.cpp failed to allocate the KV cache{size}{on} for the context (-c)"),
            );
            b.fix(fix(
                FixId::SmallerContext,
                CauseId::KvCacheGrowth,
                "Halve the context (-c): the cache is pre-allocated for all of it".into(),
                GivesUp::Length,
                q.map(|q| q / 2),
                "llama-server ... -c <half of now>".into(),
            ));
            let q8 = KvDtype::Q8_0.bpw(128).as_f64() / 16.0;
            b.fix(fix(
                FixId::KvCacheDtype,
                CauseId::KvCacheGrowth,
                "Store the KV cache in q8_0".into(),
                GivesUp::CachePrecision,
                q.map(|q| (q as f64 * (1.0 - q8)) as u64),
                "llama-server ... -fa on -ctk q8_0 -ctv q8_0".into(),
            ));
        }
        Some(LlamaCppStage::ComputeBuffers) => {
            b.add(
                CauseId::TooLargeOverall,
                60,
                format!(
                    "llama.cpp loaded the weights and the KV cache, then the compute buffers{size}{on} did not fit: \
                     the GPU is full to the last buffer"
                ),
            );
            b.add(
                CauseId::KvCacheGrowth,
                50,
                "the compute buffers grow with the batch (-ub) and, without flash attention, with the context (-c)"
                    .into(),
            );
            b.fix(fix(
                FixId::SmallerBatch,
                CauseId::TooLargeOverall,
                "Halve the physical batch the compute buffers are sized for".into(),
                GivesUp::Speed,
                q.map(|q| q / 2),
                "llama-server ... -ub 256 -fa on".into(),
            ));
            b.fix(fix(
                FixId::SmallerContext,
                CauseId::KvCacheGrowth,
                "Shrink the context (-c) to free room for the buffers".into(),
                GivesUp::Length,
                None,
                "llama-server ... -c <smaller>".into(),
            ));
        }
        None => {
            b.add(
                CauseId::TooLargeOverall,
                50,
                format!("ggml ran out of memory{on} while running, after the model and cache were allocated"),
            );
            b.add(
                CauseId::KvCacheGrowth,
                45,
                "the buffers that grow at run time scale with the batch (-ub) and the context (-c)".into(),
            );
            b.fix(fix(
                FixId::SmallerBatch,
                CauseId::TooLargeOverall,
                "Halve the physical batch".into(),
                GivesUp::Speed,
                None,
                "llama-server ... -ub 256 -fa on".into(),
            ));
            b.fix(fix(
                FixId::OffloadLayers,
                CauseId::TooLargeOverall,
                "Offload one or two fewer layers to leave room at run time".into(),
                GivesUp::Speed,
                None,
                "llama-server ... -ngl <fewer>".into(),
            ));
        }
    }
}

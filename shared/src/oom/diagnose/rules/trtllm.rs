//! TensorRT-LLM's executor that could not create a component at start-up,
//! and the `trtllm-serve` flags its message points to (`tuning_knobs`,
//! tensorrt_llm/_torch/pyexecutor/py_executor_creator.py; flags from
//! tensorrt_llm/commands/serve.py at NVIDIA/TensorRT-LLM 00209af1:
//! `--kv_cache_free_gpu_memory_fraction` (0.9 by default), `--max_num_tokens`,
//! `--max_seq_len`, `--max_batch_size`, `--tp_size`).

use crate::fixes::GivesUp;
use crate::oom::TrtllmComponent;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::gib;
use crate::oom::diagnose::{CauseId, FixId};

pub(super) fn trtllm_executor_memory(f: &Facts, b: &mut Board) {
    let figures = match (f.free, f.total) {
        (Some(free), Some(t)) => format!(" ({} of {} was free before it)", gib(free), gib(t)),
        _ => String::new(),
    };
    let serve = |flags: &str| format!("trtllm-serve MODEL {flags}");
    match f.r.trtllm_component {
        Some(TrtllmComponent::Model) => {
            b.add(CauseId::WeightsTooLarge, 85, format!("TensorRT-LLM could not load the model's weights{figures}"));
            b.fix(fix(
                FixId::MoreGpus,
                CauseId::WeightsTooLarge,
                "Shard the weights over more GPUs (tensor parallel)".into(),
                GivesUp::Money,
                None,
                serve("--tp_size <more GPUs>"),
            ));
        }
        Some(TrtllmComponent::KvCache) => {
            b.add(
                CauseId::KvCacheGrowth,
                80,
                format!(
                    "TensorRT-LLM sizes its KV cache as a fraction of the memory free after the model and buffers \
                     (kv_cache_free_gpu_memory_fraction, 0.9 by default), and that cache could not be allocated{figures}"
                ),
            );
            b.fix(fix(
                FixId::GpuMemoryUtilization,
                CauseId::KvCacheGrowth,
                "Give the KV cache a smaller share of the free memory".into(),
                GivesUp::Length,
                None,
                serve("--kv_cache_free_gpu_memory_fraction 0.8   # 0.9 by default"),
            ));
            b.fix(fix(
                FixId::MaxNumSeqs,
                CauseId::KvCacheGrowth,
                "Schedule fewer requests at once".into(),
                GivesUp::Speed,
                None,
                serve("--max_batch_size <fewer>"),
            ));
        }
        Some(TrtllmComponent::Sampler) => {
            b.add(
                CauseId::KvCacheGrowth,
                75,
                format!("TensorRT-LLM's sampler or drafter, sized by max_seq_len, did not fit{figures}"),
            );
            b.fix(fix(
                FixId::MaxModelLen,
                CauseId::KvCacheGrowth,
                "Serve shorter requests".into(),
                GivesUp::Length,
                None,
                serve("--max_seq_len <shorter>"),
            ));
        }
        Some(TrtllmComponent::Activations) | None => {
            b.add(
                CauseId::KvCacheGrowth,
                75,
                format!(
                    "TensorRT-LLM's buffers for one batch of max_num_tokens (or its temporary cache for sizing the KV \
                     cache) did not fit{figures}"
                ),
            );
        }
    }
    b.fix(fix(
        FixId::SmallerBatch,
        match f.r.trtllm_component {
            Some(TrtllmComponent::Model) => CauseId::WeightsTooLarge,
            Some(TrtllmComponent::KvCache | TrtllmComponent::Sampler | TrtllmComponent::Activations) | None => {
                CauseId::KvCacheGrowth
            }
        },
        "Batch fewer tokens per step".into(),
        GivesUp::Speed,
        None,
        serve("--max_num_tokens <smaller>"),
    ));
}

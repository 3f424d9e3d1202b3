//! Rules from the error's figures.

mod gpus;
mod graphs;
mod leftovers;
mod llama_cpp;
mod mlx;
mod mps;
mod ollama;
mod pytorch;
mod sglang;
mod tgi;
mod transformers;
mod trtllm;
mod vllm;
mod workload;

use crate::oom::OomKind;
use crate::oom::diagnose::CauseId;
use crate::oom::diagnose::board::Board;
use crate::oom::diagnose::facts::Facts;
pub(super) use gpus::several_gpus;
use graphs::graph_capture;
use leftovers::inspect_fix;
pub(super) use leftovers::leftovers;
use llama_cpp::llama_cpp;
use mlx::{mlx_buffer_size, mlx_out_of_memory};
use mps::{mps, mps_buffer_size};
use ollama::ollama_host_memory;
use pytorch::pytorch_workload;
use sglang::{sglang_no_kv_pool, sglang_pool_full};
use tgi::tgi_prefill_warmup;
use transformers::quantized_offload;
use trtllm::trtllm_executor_memory;
use vllm::{
    vllm_free_below_request, vllm_kv_too_small, vllm_max_seq_len, vllm_no_cache_blocks, vllm_preemption,
    vllm_sampler_warmup,
};

/// Steps 1–3 from the error alone: what this process's own memory is made of.
pub(super) fn from_the_error(f: &Facts, b: &mut Board) {
    if f.r.graph_capture {
        // Not the workload: the cache was sized before the graphs.
        graph_capture(f, b);
        if f.r.kind == Some(OomKind::CudaError) && !b.has(CauseId::OtherProcesses) {
            b.add(
                CauseId::OtherProcesses,
                30,
                "without figures, memory held by other processes cannot be ruled out".into(),
            );
            inspect_fix(f, b, None);
        }
        return;
    }
    match f.r.kind {
        Some(OomKind::Pytorch | OomKind::PytorchLegacy | OomKind::PytorchAsync) => pytorch_workload(f, b),
        Some(OomKind::PytorchMps) => mps(f, b),
        Some(OomKind::PytorchMpsBufferSize) => mps_buffer_size(f, b),
        Some(OomKind::MlxBufferSize) => mlx_buffer_size(f, b),
        Some(OomKind::MlxOutOfMemory) => mlx_out_of_memory(f, b),
        Some(OomKind::QuantizedOffload) => quantized_offload(f, b),
        Some(OomKind::CudaError) => {
            if workload::preallocated_cache(f) {
                // The runtime's own error in a step of serving: the pool was
                // allocated whole at start-up, so what needed memory beside
                // it was the step's (its activations, a library's workspace).
                b.add(
                    CauseId::Activations,
                    45,
                    "the CUDA runtime ran out in a step of serving, after the engine allocated its whole KV cache at \
                     start-up: the step's own tensors (activations, logits, a library's workspace) did not fit \
                     beside it"
                        .into(),
                );
                if !f.has_plan {
                    pytorch::runtime_fixes(f, b, CauseId::Activations);
                }
            }
            b.add(
                CauseId::TooLargeOverall,
                40,
                "the error came from the CUDA runtime or a library (cuBLAS, NCCL), outside PyTorch's cache and \
                 without figures: the GPU was already full when a context or workspace needed memory"
                    .into(),
            );
            if !b.has(CauseId::OtherProcesses) {
                b.add(
                    CauseId::OtherProcesses,
                    30,
                    "without figures, memory held by other processes cannot be ruled out".into(),
                );
            }
            inspect_fix(f, b, None);
        }
        Some(OomKind::VllmMaxSeqLen) => vllm_max_seq_len(f, b),
        Some(OomKind::VllmKvCacheTooSmall) => vllm_kv_too_small(f, b),
        Some(OomKind::VllmNoCacheBlocks) => vllm_no_cache_blocks(f, b),
        Some(OomKind::VllmSamplerWarmup) => vllm_sampler_warmup(f, b),
        Some(OomKind::VllmFreeBelowRequest) => vllm_free_below_request(f, b),
        Some(OomKind::SglangNoKvPool) => sglang_no_kv_pool(f, b),
        Some(OomKind::SglangKvPoolFull | OomKind::SglangKvAllocFailed) => sglang_pool_full(f, b),
        Some(OomKind::VllmPreempted | OomKind::VllmPreemptions) => vllm_preemption(f, b),
        Some(OomKind::TgiPrefillWarmup) => tgi_prefill_warmup(f, b),
        Some(OomKind::TrtllmExecutorMemory) => trtllm_executor_memory(f, b),
        Some(OomKind::OllamaHostMemory) => ollama_host_memory(f, b),
        Some(OomKind::LlamaCpp) => llama_cpp(f, b),
        None => {}
    }
}

/// A recognised error no rule could place (its figures cut off, a request
/// with no capacity to weigh it against): still a cause to check and a way
/// to see the GPU, never an empty diagnosis.
pub(super) fn too_few_figures(f: &Facts, b: &mut Board) {
    b.add(
        CauseId::TooLargeOverall,
        30,
        "the error gives too few figures to tell what filled the GPU: the model, its cache and what else runs there \
         are all to check"
            .into(),
    );
    inspect_fix(f, b, None);
}

//! Workloads other than LLM inference (`oom::Workload`): the words their
//! growth is told in, and their own levers in place of `model.generate`'s,
//! a table per workload.
//!
//! - ComfyUI's launch flags as comfy/cli_args.py declares them
//!   (comfyanonymous/ComfyUI@005d79c): `--lowvram` ("Split the unet in
//!   parts to use less vram"), `--novram` ("When lowvram isn't enough"),
//!   one group, so one of them; `--reserve-vram` (GB left to the OS and
//!   other software).
//! - diffusers' `DiffusionPipeline.enable_model_cpu_offload()`,
//!   `AutoencoderKL.enable_tiling()` (`pipe.vae`, which every pipeline with
//!   a VAE has; the pipeline-level `enable_vae_tiling` is deprecated on newer
//!   pipelines) and `enable_attention_slicing()`.
//! - transformers' `TrainingArguments` (`per_device_train_batch_size`,
//!   `gradient_accumulation_steps`, `gradient_checkpointing`, `fsdp`,
//!   `deepspeed`) and PEFT's `LoraConfig` / `get_peft_model`.

use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::{Facts, Server};
use crate::oom::diagnose::{CauseId, FixId};
use crate::oom::{ServingPhase, Workload};

/// The growth cause for the paste's workload: the KV cache's for inference,
/// but activations where the cache cannot grow ([`preallocated_cache`]).
pub(crate) fn growth(f: &Facts) -> CauseId {
    if f.r.workload.is_some() || preallocated_cache(f) { CauseId::Activations } else { CauseId::KvCacheGrowth }
}

/// vLLM and SGLang allocate their whole KV cache at start-up and never grow
/// it. vLLM's worker measures a profile run, logs `Available KV cache
/// memory` and allocates that many blocks (0.11 – 0.34
/// `v1/worker/gpu_worker.py` `determine_available_memory`, then
/// `initialize_from_config` with `v1/core/kv_cache_utils.py`'s block
/// count); SGLang's `ModelRunner.init_memory_pool` sizes its pool from
/// `profile_max_num_token` and allocates it once, before the CUDA graphs
/// (model_executor/model_runner.py, sglang 0.4.4.post1 – 0.5.5), and when
/// the pool runs short the scheduler retracts requests
/// (`ScheduleBatch.retract_decode`, managers/schedule_batch.py) rather
/// than grow it. Requests only take blocks or slots of that pool, so a
/// PyTorch OOM in such a process that held the GPU is a peak past what
/// the budget left beside the pool (a prefill chunk, a decode batch's
/// logits and sampling, input logprobs, a model's own scratch buffers),
/// not a cache growing token by token. Only where the paste shows it
/// served ([`crate::oom::OomReport::serving`]): an error of its start-up
/// (the profile run, the load, the pool itself) came before any cache
/// existed.
pub(crate) fn preallocated_cache(f: &Facts) -> bool {
    f.r.workload.is_none() && matches!(f.serving, Some(Server::Vllm | Server::Sglang)) && f.r.serving
}

/// What took the room SGLang's pool left, by the step its frames show.
fn sglang_activations(f: &Facts) -> &'static str {
    match f.r.serving_phase {
        Some(ServingPhase::Prefill) => "a prefill chunk's activations",
        Some(ServingPhase::InputLogprobs) => "a prefill's input logprobs (logits over every prompt token)",
        Some(ServingPhase::Decode) => "a decode batch's activations, logits and sampling over the running requests",
        None => "the forward pass's activations (a prefill chunk, a decode batch, logits or input logprobs)",
    }
}

/// What this process's own tensors are.
pub(crate) fn tensors(f: &Facts) -> &'static str {
    match f.r.workload {
        None => "weights, KV cache, activations",
        Some(Workload::ComfyUi | Workload::Diffusers) => {
            "the models' weights and the activations of the image or video"
        }
        Some(Workload::Training) => "weights, gradients, optimizer state, activations",
    }
}

/// How memory that filled step by step grew.
pub(crate) fn step_by_step(f: &Facts) -> String {
    match f.r.workload {
        None if preallocated_cache(f) && f.serving == Some(Server::Sglang) => format!(
            "but SGLang allocated its whole KV pool at start-up and does not grow it: {} did not fit beside the pool",
            sglang_activations(f)
        ),
        None if preallocated_cache(f) => "but vLLM allocated its whole KV cache at start-up and does not grow it: \
                                          activations past what its start-up profile measured (a long prefill \
                                          chunk, the sampler over many sequences) took the rest"
            .into(),
        None => "the signature of a KV cache growing token by token".into(),
        Some(Workload::ComfyUi | Workload::Diffusers) => {
            "as the models and the image's or video's activations took it".into()
        }
        Some(Workload::Training) => {
            "as weights (loaded tensor by tensor), gradients, optimizer state and activations took it".into()
        }
    }
}

/// What one large allocation is.
pub(crate) fn large_allocation(f: &Facts) -> String {
    match f.r.workload {
        None if preallocated_cache(f) && f.serving == Some(Server::Sglang) => {
            format!("{} (SGLang allocated its KV pool at start-up)", sglang_activations(f))
        }
        None if preallocated_cache(f) => {
            "activations for a long prefill chunk or many sequences at once (vLLM allocated its KV cache at start-up)"
                .into()
        }
        None => "activations or cache for a long input or a large batch".into(),
        Some(Workload::ComfyUi | Workload::Diffusers) => "activations for a large image, many frames or a batch".into(),
        Some(Workload::Training) => "activations or gradients for a large batch or long sequences".into(),
    }
}

/// (fix, title, what it gives up, code) for each workload.
type Row = (FixId, &'static str, GivesUp, &'static str);

const COMFYUI: &[Row] = &[
    (
        FixId::SmallerBatch,
        "A lower resolution, fewer frames or a smaller batch in the workflow",
        GivesUp::Length,
        "# in the workflow: lower width/height, length (frames) or batch_size",
    ),
    (
        FixId::OffloadLayers,
        "Keep less of the model on the GPU (ComfyUI's --lowvram; --novram when that is not enough)",
        GivesUp::Speed,
        "python main.py --lowvram   # or --novram",
    ),
    (
        FixId::OffloadLayers,
        "Leave GB of the GPU to other software, so ComfyUI offloads sooner",
        GivesUp::Speed,
        "python main.py --reserve-vram 2",
    ),
];

const DIFFUSERS: &[Row] = &[
    (
        FixId::SmallerBatch,
        "A lower resolution, fewer frames or fewer images at once",
        GivesUp::Length,
        "pipe(prompt, height=<lower>, width=<lower>, num_images_per_prompt=1)   # video: fewer num_frames",
    ),
    (
        FixId::OffloadLayers,
        "Keep only the running component on the GPU",
        GivesUp::Speed,
        "pipe.enable_model_cpu_offload()   # instead of pipe.to(\"cuda\")",
    ),
    (
        FixId::SmallerBatch,
        "Decode the VAE in tiles and compute attention in slices",
        GivesUp::Speed,
        "pipe.vae.enable_tiling()\npipe.enable_attention_slicing()",
    ),
];

const TRAINING: &[Row] = &[
    (
        FixId::SmallerBatch,
        "A smaller batch per GPU, the same effective batch by gradient accumulation",
        GivesUp::Speed,
        "TrainingArguments(..., per_device_train_batch_size=1, gradient_accumulation_steps=8)",
    ),
    (
        FixId::GradientCheckpointing,
        "Recompute activations in the backward pass instead of keeping them",
        GivesUp::Speed,
        "TrainingArguments(..., gradient_checkpointing=True)",
    ),
    (
        FixId::Lora,
        "Train LoRA adapters on a 4-bit base (QLoRA) instead of every weight",
        GivesUp::Quality,
        "model = AutoModelForCausalLM.from_pretrained(MODEL_ID, quantization_config=BitsAndBytesConfig(load_in_4bit=True))\n\
         model = get_peft_model(model, LoraConfig(r=16, target_modules=\"all-linear\"))",
    ),
    (
        FixId::ShardTraining,
        "Shard weights, gradients and optimizer state over the GPUs, offloaded to the CPU (FSDP or DeepSpeed ZeRO-3)",
        GivesUp::Speed,
        "TrainingArguments(..., fsdp=\"full_shard auto_wrap offload\")   # or deepspeed=\"ds_zero3_offload.json\"",
    ),
];

/// The workload's own levers, for `cause`.
pub(crate) fn workload_fixes(f: &Facts, b: &mut Board, cause: CauseId) {
    let rows = match f.r.workload {
        None => return,
        Some(Workload::ComfyUi) => COMFYUI,
        Some(Workload::Diffusers) => DIFFUSERS,
        Some(Workload::Training) => TRAINING,
    };
    for &(id, title, gives_up, code) in rows {
        b.fix(fix(id, cause, title.into(), gives_up, None, code.into()));
    }
}

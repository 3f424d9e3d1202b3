//! transformers' refusal to load a bitsandbytes model that `device_map="auto"`
//! could not place on the GPUs (`QuantizedOffload`): the quantized weights do
//! not fit in what the GPUs had free, counted before anything was allocated.

use super::inspect_fix;
use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::{CauseId, FixId};

/// quantizer_bnb_4bit.py / quantizer_bnb_8bit.py (4.40.0 – 4.57.1): the
/// placement counts each GPU's free memory × 0.90 (`adjust_max_memory`), and
/// `validate_environment` refuses a map with `cpu` or `disk` in it unless
/// `llm_int8_enable_fp32_cpu_offload` keeps those modules unquantized.
pub(super) fn quantized_offload(f: &Facts, b: &mut Board) {
    b.add(
        CauseId::WeightsTooLarge,
        80,
        "device_map=\"auto\" found no room on the GPU for some of the quantized model's modules (it counts 90 % of \
         each GPU's free memory, the rest kept for quantization buffers) and sent them to the CPU or disk, where \
         bitsandbytes' layers do not run: the quantized weights do not fit in what the GPU had free"
            .into(),
    );
    b.add(
        CauseId::OtherProcesses,
        35,
        "the placement counts what is free when the model loads: a model still loaded earlier in the session or \
         another process shrinks it, and a PyTorch built without CUDA sees no GPU and places everything on the CPU"
            .into(),
    );
    let load = |quant: &str, repo: &str| {
        format!(
            "from transformers import {auto}, BitsAndBytesConfig\n\
             quant = BitsAndBytesConfig({quant})\n\
             model = {auto}.from_pretrained(\"{repo}\", quantization_config=quant, device_map=\"auto\")",
            auto = f.auto_class
        )
    };
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::WeightsTooLarge,
        "Load it in 4 bits (NF4) if it was 8: half the weights".into(),
        GivesUp::Quality,
        None,
        load("load_in_4bit=True, bnb_4bit_quant_type=\"nf4\"", &f.repo),
    ));
    b.fix(fix(
        FixId::SmallerModel,
        CauseId::WeightsTooLarge,
        "A smaller model (fewer parameters) at the same bit width".into(),
        GivesUp::Quality,
        None,
        load("load_in_4bit=True, bnb_4bit_quant_type=\"nf4\"", "SMALLER_MODEL_ID"),
    ));
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::WeightsTooLarge,
        "Run the modules that do not fit on the CPU, unquantized in 32 bits: it loads, but runs slowly and needs \
         that much host RAM"
            .into(),
        GivesUp::Speed,
        None,
        load("load_in_4bit=True, llm_int8_enable_fp32_cpu_offload=True", &f.repo),
    ));
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::WeightsTooLarge,
        "More GPU memory: a larger GPU, or a second one, which device_map=\"auto\" fills in turn".into(),
        GivesUp::Nothing,
        None,
        "CUDA_VISIBLE_DEVICES=0,1 python your_script.py".into(),
    ));
    b.fix(fix(
        FixId::InspectGpu,
        CauseId::OtherProcesses,
        "Check that PyTorch sees the GPU and what it has free before loading".into(),
        GivesUp::Nothing,
        None,
        "python -c \"import torch; print(torch.cuda.is_available() and torch.cuda.mem_get_info())\"".into(),
    ));
    inspect_fix(f, b, None);
}

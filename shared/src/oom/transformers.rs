//! transformers' refusal to load a bitsandbytes-quantized model that
//! `device_map="auto"` could not place on the GPUs whole (`ValueError`,
//! `validate_environment` of src/transformers/quantizers/quantizer_bnb_4bit.py
//! and quantizer_bnb_8bit.py, 4.40.0 – 4.57.1):
//!
//! ```text
//! ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the
//! quantized model. If you want to dispatch the model on the CPU or the disk while keeping these modules in 32-bit,
//! you need to set `llm_int8_enable_fp32_cpu_offload=True` and pass a custom `device_map` to `from_pretrained`. …
//! ```
//!
//! Not a CUDA OOM but the same verdict, before anything is allocated: the
//! placement (each GPU's free memory × 0.90, `adjust_max_memory`) left
//! modules off the GPU. Releases of 2023 named the flag
//! `load_in_8bit_fp32_cpu_offload`, which no `BitsAndBytesConfig` takes.

use super::scan;
use super::{Occurrence, OomKind, OomReport};

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    // A traceback quotes the source's lines and the message again: one failure.
    let Some((start, _)) = scan::find_last(t, t.len(), "Some modules are dispatched on the CPU or the disk") else {
        return;
    };
    let mut r = OomReport { kind: Some(OomKind::QuantizedOffload), ..OomReport::default() };
    if scan::find(t, 0, t.len(), "load_in_8bit_fp32_cpu_offload").is_some() {
        r.notes.push(
            "The message's `load_in_8bit_fp32_cpu_offload=True` is older transformers' wording and no argument of \
             any release: the setting is `BitsAndBytesConfig(llm_int8_enable_fp32_cpu_offload=True)`."
                .into(),
        );
    }
    out.push(Occurrence { start, report: r });
}

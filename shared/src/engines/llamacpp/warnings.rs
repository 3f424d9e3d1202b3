//! What llama.cpp would say of a plan before it runs it: a quantised V
//! cache without flash attention, `-ot` rules that match no tensor, the
//! flags for which `--fit` gives up, and less than its margin left free.

use super::{FIT_MARGIN_BYTES, FlashAttention, Options, SplitMode, devices, types};
use crate::engines::{EngineWarnings, Plan};
use crate::plan::GpuPeak;
use crate::units::{UnitSystem, format_bytes};

/// A quantised V cache with flash attention off: src/llama-context.cpp
/// (llama-cpp-python 0.3.36 vendor) fails the context ("quantized V cache
/// requires flash_attn to be enabled"); `-fa auto` turns it on instead.
/// A warning, not a refusal, so that links made before this rule still open.
fn quantised_v_without_flash_attention(p: &Plan, o: Options) -> Option<String> {
    let v = types(p, o).v.filter(|v| v.is_quantized() && o.flash_attention == FlashAttention::Off)?;
    Some(format!(
        "llama.cpp refuses a quantised V cache ({}) without flash attention (\"quantized V cache requires flash_attn \
         to be enabled\"): use -fa on (or auto), or -ctv f16",
        v.id()
    ))
}

/// The flag for which llama.cpp's `--fit` (on by default) gives up on the
/// layers and the tensor placement, and its own words: common/fit.cpp
/// (`common_params_fit_impl`, ggml-org/llama.cpp at 08033df) tries a smaller
/// context when `-c` is 0, then throws on each of these in this order, and
/// the model loads as told and runs out of memory (llama.cpp#27872).
/// `--cpu-moe` and `--n-cpu-moe` are tensor overrides too (common/arg.cpp
/// pushes one `llm_ffn_exps_block_regex` rule per layer).
fn fit_gives_up(o: Options, gpus: usize) -> Option<(&'static str, &'static str)> {
    if o.n_gpu_layers.is_some() {
        return Some(("-ngl", "n_gpu_layers already set by user"));
    }
    if gpus > 1 && o.tensor_split.is_set() {
        return Some(("--tensor-split", "model_params::tensor_split already set by user"));
    }
    if gpus > 1 && o.split_mode == SplitMode::Row {
        return Some(("--split-mode row", "changing weight allocation for LLAMA_SPLIT_MODE_ROW not implemented"));
    }
    if !o.tensor_overrides.is_empty() {
        return Some(("-ot", "model_params::tensor_buft_overrides already set by user"));
    }
    if o.n_cpu_moe > 0 {
        return Some(("--n-cpu-moe", "model_params::tensor_buft_overrides already set by user"));
    }
    None
}

pub(crate) fn warnings(p: &Plan, o: Options, per_gpu: &[GpuPeak]) -> EngineWarnings {
    let mut setup: Vec<String> = quantised_v_without_flash_attention(p, o).into_iter().collect();
    if !o.tensor_overrides.is_empty() && o.tensor_overrides.rules().count() > 0 {
        let d = devices(p, o);
        if d.weights.overridden_count == 0 {
            setup.push(format!(
                "no tensor of this model matches the -ot rules `{}`: llama.cpp loads it as without them",
                o.tensor_overrides.as_str()
            ));
        }
    }
    if per_gpu.iter().any(|g| !g.fits)
        && let Some((flag, why)) = fit_gives_up(o, per_gpu.len())
    {
        setup.push(format!(
            "with {flag} set, llama.cpp's --fit gives up on -ngl and the tensor placement (\"{why}, abort\"; \
             it only shrinks a -c 0 context first): this plan fails to load instead of being fitted"
        ));
    }
    let mut fit = Vec::new();
    if per_gpu.iter().any(|g| g.fits && g.free_bytes < FIT_MARGIN_BYTES) {
        fit.push(format!(
            "less than llama.cpp's {} --fit margin stays free: loading may fail once other buffers appear",
            format_bytes(FIT_MARGIN_BYTES, UnitSystem::Binary)
        ));
    }
    EngineWarnings { setup, fit }
}

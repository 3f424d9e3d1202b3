//! What llama.cpp would say of a plan before it runs it: a quantised V
//! cache without flash attention, `-ot` rules that match no tensor, the
//! flags for which `--fit` gives up, and less than its margin left free.

use super::fit;
use super::{Devices, FlashAttention, Options, types};
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

/// DeepSeek-V4 with different key and value types: src/llama-context.cpp
/// (llama.cpp 0c1e57098, `llama_init_from_model`) fails the context ("model
/// does not support different K (…) and V (…) cache types"); its caches are
/// K-only, of `-ctk`. (MLA models fail the same way; not said here yet.)
fn deepseek4_mixed_cache_types(p: &Plan, o: Options) -> Option<String> {
    let t = types(p, o);
    (super::deepseek4(p) && t.k != t.v).then(|| {
        let name =
            |c: Option<super::CacheType>| c.map_or_else(|| p.scenario.kv_dtype.id().to_owned(), |c| c.id().into());
        format!(
            "llama.cpp refuses DeepSeek-V4 with different K ({}) and V ({}) cache types (\"model does not support \
             different K and V cache types\"): give -ctk and -ctv the same type",
            name(t.k),
            name(t.v)
        )
    })
}

/// What the plan needs in host memory against the host's RAM, when given.
/// llama.cpp maps the weights it leaves on the CPU (`--mmap`, the default)
/// and reads every page of them for each token, so past the RAM they are
/// read from disk again and again; `--no-mmap` would fail to load instead.
/// On unified memory the host's share is what the GPU side leaves.
fn host_ram(p: &Plan, o: Options, d: &Devices, per_gpu: &[GpuPeak]) -> Option<String> {
    let totals: Vec<u64> = per_gpu.iter().map(|g| g.total_bytes).collect();
    let ram = super::host::host_ram_limit(p, o, &totals)?;
    let need = super::host::host_ram_need(p, o, d);
    let whose =
        if o.host_ram_bytes.is_some() { "this host's" } else { "the unified memory's, beside the GPU's share," };
    (need > ram).then(|| {
        let b = |x| format_bytes(x, UnitSystem::Binary);
        format!(
            "the plan needs {} of host RAM, more than {whose} {}: llama.cpp would read its memory-mapped \
             weights from disk for every token (--no-mmap fails instead)",
            b(need),
            b(ram)
        )
    })
}

/// `d`: the plan's devices, computed once with the plan.
pub(crate) fn warnings(p: &Plan, o: Options, d: &Devices, per_gpu: &[GpuPeak]) -> EngineWarnings {
    let mut setup: Vec<String> = quantised_v_without_flash_attention(p, o).into_iter().collect();
    setup.extend(deepseek4_mixed_cache_types(p, o));
    if !o.tensor_overrides.is_empty() && o.tensor_overrides.rules().count() > 0 && d.weights.overridden_count == 0 {
        setup.push(format!(
            "no tensor of this model matches the -ot rules `{}`: llama.cpp loads it as without them",
            o.tensor_overrides.as_str()
        ));
    }
    if let Some(w) = host_ram(p, o, d, per_gpu) {
        setup.push(w);
    }
    let margin = o.fit_target_bytes();
    if per_gpu.iter().any(|g| !g.fits)
        && o.runs_fit()
        && let Some((flag, why)) = fit::gives_up(o, per_gpu.len())
    {
        setup.push(format!(
            "with {flag} set, llama.cpp's --fit gives up on -ngl and the tensor placement (\"{why}, abort\"; \
             it only shrinks a -c 0 context first): this plan fails to load instead of being fitted"
        ));
    }
    let mut fit = Vec::new();
    let short = per_gpu.iter().any(|g| !g.fits || g.free_bytes < margin);
    let tight = per_gpu.iter().any(|g| g.fits && g.free_bytes < margin);
    let margin = format_bytes(margin, UnitSystem::Binary);
    if short && o.runs_fit() && fit::gives_up(o, per_gpu.len()).is_none() {
        fit.push(format!(
            "llama.cpp's --fit (on by default) moves layers or experts off the GPU to keep {margin} free: see the fixes"
        ));
    } else if tight && o.has_fit() {
        fit.push(format!(
            "less than llama.cpp's {margin} --fit margin stays free: loading may fail once other buffers appear"
        ));
    }
    EngineWarnings { setup, fit }
}

//! llama.cpp's fixes: the most layers `-ngl` can offload, the smallest
//! `--n-cpu-moe` that loads, and the exact `llama-server` command lines.

use super::super::commands::{Commands, Setting, SettingKind, Shorten};
use super::super::{Engine, EnginePlan, Scenario, transformers};
use super::{CacheType, FlashAttention, Options, load_verdict, n_ctx, overflow, slots};
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;
use crate::plan::largest;

/// The most layers `-ngl` can offload with everything else unchanged.
pub fn max_gpu_layers(model: &Model, scenario: &Scenario) -> Option<u64> {
    let Engine::LlamaCpp(o) = scenario.engine else { return None };
    let n = model.layout.num_layers as u64;
    let try_ngl = |ngl: u64| {
        let mut s = scenario.clone();
        s.engine = Engine::LlamaCpp(Options { n_gpu_layers: Some(ngl), ..o });
        // `-ngl` is not checked: what `scenario` passed, this passes.
        let Ok(s) = s.validate() else { return false };
        let p = EnginePlan::new(model, s);
        load_verdict(&p, o).is_none() && overflow(&p, o, n_ctx(&p, o), slots(&p, o)).is_none()
    };
    if !try_ngl(0) {
        return Some(0);
    }
    // ngl = n + 1 also offloads the output head.
    Some(largest(n + 1, try_ngl))
}

/// `s` with `--n-cpu-moe n` (unchanged for another engine).
pub fn with_cpu_moe(s: &Scenario, n: u64) -> Scenario {
    let mut t = s.clone();
    if let Engine::LlamaCpp(o) = &mut t.engine {
        o.n_cpu_moe = n;
    }
    t
}

/// Whether the model has routed experts that `--n-cpu-moe` can move.
fn has_routed_experts(model: &Model) -> bool {
    model.layout.groups.iter().any(|g| matches!(g.role, crate::arch::Role::ExpertUp | crate::arch::Role::ExpertDown))
}

/// The smallest `--n-cpu-moe` with which the plan loads, everything else
/// unchanged: `None` for another engine or a model without routed
/// experts, `Some(None)` when even every layer's experts on the CPU do not
/// fit. More experts on the CPU never need more GPU memory, so the answer
/// is a boundary: N loads and N − 1 does not.
pub fn min_cpu_moe(model: &Model, scenario: &Scenario) -> Option<Option<u64>> {
    let Engine::LlamaCpp(o) = scenario.engine else { return None };
    if !has_routed_experts(model) {
        return None;
    }
    let n = model.layout.num_layers as u64;
    let loads = |k: u64| {
        let mut s = scenario.clone();
        let o = Options { n_cpu_moe: k, ..o };
        s.engine = Engine::LlamaCpp(o);
        let Ok(s) = s.validate() else { return false };
        let p = EnginePlan::new(model, s);
        load_verdict(&p, o).is_none() && overflow(&p, o, n_ctx(&p, o), slots(&p, o)).is_none()
    };
    if !loads(n) {
        return Some(None);
    }
    // The first k in 0..=n that loads.
    let (mut lo, mut hi) = (0u64, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if loads(mid) { hi = mid } else { lo = mid + 1 }
    }
    Some(Some(lo))
}

/// The `llama-server` command line of a plan: every knob that differs from
/// llama.cpp's default (common/common.h, common/arg.cpp as vendored by
/// llama-cpp-python 0.3.36).
pub fn server_command(model: &Model, s: &Scenario) -> String {
    let Engine::LlamaCpp(o) = s.engine else { return String::new() };
    let file = match s.weights {
        WeightFormat::Gguf(t) => format!("model-{}.gguf", t.id().to_ascii_uppercase()),
        _ => format!("<a GGUF of {}>", model.name),
    };
    let mut cmd = format!("llama-server -m {file}");
    let layers = model.layout.num_layers as u64;
    let ngl = o.n_gpu_layers.unwrap_or(layers + 1);
    cmd.push_str(&format!(" -ngl {ngl}"));
    let slots = o.parallel.unwrap_or(s.concurrency).max(1);
    let ctx = o.n_ctx.unwrap_or_else(|| s.sequence_tokens().saturating_mul(slots));
    cmd.push_str(&format!(" -c {ctx} -np {slots}"));
    if o.n_ubatch != 512 {
        cmd.push_str(&format!(" -ub {}", o.n_ubatch));
    }
    cmd.push_str(match o.flash_attention {
        FlashAttention::On => " -fa on",
        FlashAttention::Off => " -fa off",
    });
    let k = o.cache_type_k.or(CacheType::of(s.kv_dtype));
    let v = o.cache_type_v.or(k);
    for (flag, t) in [("-ctk", k), ("-ctv", v)] {
        if let Some(t) = t.filter(|&t| t != CacheType::F16) {
            cmd.push_str(&format!(" {flag} {}", t.id()));
        }
    }
    if o.n_cpu_moe >= layers && o.n_cpu_moe > 0 {
        cmd.push_str(" --cpu-moe");
    } else if o.n_cpu_moe > 0 {
        cmd.push_str(&format!(" --n-cpu-moe {}", o.n_cpu_moe));
    }
    for (on, flag) in [(o.no_kv_offload, " -nkvo"), (o.kv_unified, " --kv-unified"), (o.swa_full, " --swa-full")] {
        if on {
            cmd.push_str(flag);
        }
    }
    cmd
}

/// llama.cpp's flags; q8_0 is its cheapest KV cache that keeps quality.
pub const COMMANDS: Commands = Commands {
    cheaper_kv_dtype: KvDtype::Q8_0,
    kv_dtype: "llama-server ... -fa on -ctk q8_0 -ctv q8_0",
    shorten: Shorten::NewTokens(|prompt, n| format!("llama-server ... -c {} -n {n}", prompt.saturating_add(n))),
    concurrency: |_, n| format!("llama-server ... -np {n}"),
    more_gpus_are_tensor_parallel: false,
    more_gpus: |_, _, _, n| {
        format!("CUDA_VISIBLE_DEVICES={} llama-server ...", (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(","))
    },
    weights: weight_code,
    rebalance: |_, layers| {
        let split: Vec<String> = layers.iter().map(|n| n.to_string()).collect();
        format!("llama-server ... --tensor-split {}", split.join(","))
    },
    serve: |repo, weights| format!("llama-server -m <a {} GGUF of {repo}> ...", weights.id()),
    settings,
};

/// GGUF files for llama-server; other formats as transformers loads them.
fn weight_code(f: WeightFormat, repo: &str) -> String {
    match f {
        // GGUF type ids are ASCII (`q4_k_m`): no Unicode case tables needed.
        WeightFormat::Gguf(t) => format!("llama-server -m model-{}.gguf ...", t.id().to_ascii_uppercase()),
        f => transformers::weight_code(f, repo),
    }
}

/// Keeping some layers on the CPU (`-ngl`), and for a MoE the routed
/// experts of the first layers (`--n-cpu-moe`), which keeps attention and
/// the shared tensors on the GPU.
fn settings(model: &Model, s: &Scenario, _: &str) -> Vec<Setting> {
    let mut out = Vec::new();
    if let Some(n) = min_cpu_moe(model, s).flatten().filter(|&n| n > 0)
        && let Engine::LlamaCpp(o) = s.engine
        && n > o.n_cpu_moe
    {
        let mut t = s.clone();
        t.engine = Engine::LlamaCpp(Options { n_cpu_moe: n, ..o });
        out.push(Setting {
            kind: SettingKind::OffloadLayers,
            title: format!("Keep the routed experts of the first {n} layers on the CPU (--n-cpu-moe {n})"),
            code: server_command(model, &t),
            scenario: t,
        });
    }
    let Some(ngl) = max_gpu_layers(model, s).filter(|&n| n > 0) else { return out };
    let mut t = s.clone();
    if let Engine::LlamaCpp(o) = &mut t.engine {
        o.n_gpu_layers = Some(ngl);
    }
    out.push(Setting {
        kind: SettingKind::OffloadLayers,
        title: format!("Offload {ngl} layers to the GPU and keep the rest on the CPU"),
        scenario: t,
        code: format!("llama-server ... -ngl {ngl}"),
    });
    out
}

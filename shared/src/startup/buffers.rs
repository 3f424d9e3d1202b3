//! A llama.cpp start-up log beside the estimate of the plan it ran: each
//! buffer the log states (per device and on the host) with the figure the
//! estimate predicts for it.

use serde::Serialize;

use super::{Buffer, Figure, LogEngine, StartupLog};
use crate::engines::{llamacpp, ollama};
use crate::estimate::Estimate;

/// One logged buffer and its prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BufferCheck {
    /// 1-based line of the log.
    pub line: usize,
    /// The device the log names (`CUDA0`, `CPU_Mapped`, `CUDA_Host`), or
    /// `all` for the KV and recurrent-state summaries.
    pub device: String,
    /// `model`, `kv`, `state`, `compute`, `output`, `kv_total` or
    /// `state_total`; from a memory breakdown table `context`, from a
    /// `--fit` projection `projected`.
    pub buffer: &'static str,
    pub logged_bytes: u64,
    /// `None` where the estimate has no such figure (say why in `note`).
    pub predicted_bytes: Option<u64>,
    pub note: Option<&'static str>,
}

impl BufferCheck {
    /// (predicted − logged) / logged in tenths of a percent, as
    /// [`super::Row::error_permille`].
    pub fn error_permille(&self) -> Option<i64> {
        super::reconcile::error_permille(self.logged_bytes, self.predicted_bytes?)
    }

    /// (predicted − logged) / logged, in percent.
    pub fn error_percent(&self) -> Option<f64> {
        let p = self.predicted_bytes?;
        (self.logged_bytes > 0).then(|| (p as f64 - self.logged_bytes as f64) / self.logged_bytes as f64 * 100.0)
    }
}

/// Where a llama.cpp buffer lives: a GPU by its index, or the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Gpu(usize),
    Host,
}

/// The CPU backend's own buffer types: `CPU`, `CPU_Mapped`, the repacked
/// `CPU_REPACK` / `CPU_AARCH64` (ggml-cpu/repack.cpp, earlier
/// ggml-cpu-aarch64.cpp) and Intel's `AMX` (ggml-cpu/amx/amx.cpp
/// `ggml_backend_amx_buffer_type_get_name`): host memory that no GPU
/// backend's pinned `*_Host` copy is.
pub(super) fn cpu_backend(device: &str) -> bool {
    device.starts_with("CPU") || device == "AMX"
}

/// ggml backend names (`CUDA0`, `ROCm1`, `Vulkan0`, `SYCL0`, `Metal`, `OpenCL`, `CPU`,
/// `CPU_Mapped`, `AMX`, `CUDA_Host` …, ggml/src/ggml-*/): host buffers end in
/// `_Host` or are the CPU backend's ([`cpu_backend`]); a device's number is
/// its trailing digits.
fn place(device: &str) -> Option<Place> {
    // The memory breakdown's row of every host buffer type together.
    if cpu_backend(device) || device.ends_with("_Host") || device == "Host" {
        return Some(Place::Host);
    }
    // Apple's unified memory maps the file into the GPU's own buffer
    // (`Metal_Mapped`, ggml-metal's `ggml_backend_metal_buffer_from_ptr`).
    let device = device.strip_suffix("_Mapped").unwrap_or(device);
    let digits = device.trim_start_matches(|c: char| !c.is_ascii_digit());
    // Metal and OpenCL name their buffers without a number: ggml-opencl's
    // buffer type is `OpenCL` for its device `GPUOpenCL`
    // (ggml/src/ggml-opencl/ggml-opencl.cpp, b8211
    // `ggml_backend_opencl_buffer_type_get_name`), the first GPU.
    if digits.is_empty() {
        return matches!(device, "Metal" | "OpenCL").then_some(Place::Gpu(0));
    }
    digits.parse().ok().map(Place::Gpu)
}

/// What a GPU compute buffer of Ollama's own engine is checked against:
/// nothing. Its graph is llama.cpp's ops with differences that move the
/// peak by more than the 10 % llama.cpp's buffers are held to
/// (`ollama::own`, the module's note).
const OWN_GRAPH: &str = "Ollama's own engine builds its own graph (the whole batch at once, an output row per slot, \
                         its own tensors), not llama.cpp's: not modelled";
/// Its CPU compute buffer where layers run on the CPU: their graph, not modelled.
const OWN_HOST_GRAPH: &str = "Ollama's own engine runs the CPU's layers in this buffer: not modelled";

/// A memory breakdown's figure: whole MiB, rounded down.
const WHOLE_MIB: &str = "the memory breakdown's whole MiB, rounded down";

/// A `--fit` projection's figure.
const PROJECTED: &str = "--fit's projection with the launch's own parameters: model, context and compute";

/// Where a buffer of the log lives: a GPU by its place among the model's
/// devices (`-dev ROCm1` makes `ROCm1` the plan's first), else [`place`].
fn at(log: &StartupLog, device: &str) -> Option<Place> {
    match place(device)? {
        Place::Gpu(g) => Some(Place::Gpu(log.config.model_gpu(device).unwrap_or(g))),
        Place::Host => Some(Place::Host),
    }
}

/// Whether the log prints `buffer` of the device at `at` line by line
/// (`CUDA0 model buffer size = …`; the KV's with the recurrent state's).
fn printed(log: &StartupLog, at: Place, buffer: Buffer) -> bool {
    log.facts.iter().any(|f| match f.figure {
        Figure::Buffer { buffer: b, .. } => {
            let same = b == buffer || (buffer == Buffer::Kv && b == Buffer::State);
            same && f.scope.as_deref().and_then(|d| self::at(log, d)) == Some(at)
        }
        _ => false,
    })
}

/// Whether the log states a GPU's own figures (its buffer lines or its
/// breakdown row; any GPU's for `None`), beside which a `--fit` projection
/// would count them twice. Per-device projections also stand for the sum.
fn stated(log: &StartupLog, gpu: Option<Place>) -> bool {
    log.facts.iter().any(|f| {
        let at = f.scope.as_deref().and_then(|d| self::at(log, d));
        let on = match gpu {
            Some(g) => at == Some(g),
            None => matches!(at, Some(Place::Gpu(_))),
        };
        on && matches!(f.figure, Figure::Buffer { .. } | Figure::MemoryBreakdown { .. })
            || gpu.is_none() && f.scope.is_some() && matches!(f.figure, Figure::FitProjection { .. })
    })
}

/// A KV buffer logged on the host where the plan keeps every layer's cache
/// on the GPU with its layer: llama.cpp leaves a layer's cache in the CPU's
/// buffer type only with KV offload off (src/llama-kv-cache.cpp at b8211,
/// `buft = ggml_backend_cpu_buffer_type()` unless `offload`, which is
/// `cparams.offload_kqv`: `-nkvo`/`--no-kv-offload`, or
/// `LLAMA_ARG_KV_OFFLOAD` false in its environment, common/arg.cpp). Ollama
/// 0.30+ passes llama-server no such flag (llm/llama_server.go at
/// fb3076099) but starts it with Ollama's own environment.
const KV_ON_HOST: &str = "the KV cache is in host memory although the plan keeps it on the GPU with its layers: \
                          llama.cpp puts it there only with KV offload off (-nkvo / --no-kv-offload, or \
                          LLAMA_ARG_KV_OFFLOAD=0 in its environment; Ollama 0.30+ passes no such flag but hands \
                          llama-server its own environment): drop it to put the cache back on the GPU, or plan with \
                          --no-kv-offload to check the log as it ran";

/// Each buffer of a llama.cpp log with the estimate's figure for it; empty
/// for another engine's log or an estimate of another engine.
pub fn llamacpp_buffers(log: &StartupLog, e: &Estimate) -> Vec<BufferCheck> {
    let Some(r) = llamacpp::Report::of(e.engine_report.as_ref()) else { return Vec::new() };
    if log.engine != LogEngine::LlamaCpp {
        return Vec::new();
    }
    // Some buffers print one line per part, and the plan budgets their sum:
    // a model with sliding layers has two caches, each printing its KV buffer
    // and its total (`llama_kv_cache_iswa`: non-SWA, then SWA); a model in
    // split files maps each file (`CPU_Mapped` once per file, src/llama-model.cpp
    // `load_all_data`). So a device's first line of a buffer is checked
    // against the sum of its lines, and the others are not. The CPU
    // backend's model buffers are one figure, the plan's host weights, over
    // all their types: `CPU`, and with `--no-mmap` the repacked tensors'
    // own buffers (`AMX`, `CPU_REPACK`: llama-model.cpp's extra buffer
    // types). Mapped from the file (`CPU_Mapped`), each file's span holds
    // the repacked tensors' originals too: the repacked ones are copies.
    // Without mmap, the host weights a GPU's ops can read sit in its pinned
    // `*_Host` buffer instead (src/llama-model.cpp `make_cpu_buft_list`
    // puts the first GPU's host type before the CPU's, and `load_tensors`
    // falls back to the CPU's only under mmap, "avoid using a host buffer
    // when using mmap", since c5b0f4b5, b3990, #10026): not copies, the rest
    // of the host weights (Phi-4 on Ollama 0.5.x with `--no-mmap`:
    // token_embd's 275.62 MiB in `CPU`, the 11 host layers and the output
    // in `CUDA_Host`).
    let mapped = log.facts.iter().any(|f| f.scope.as_deref() == Some("CPU_Mapped"));
    // Ollama's own engine builds its own graph, which llama.cpp's replay is
    // not, and logs a hybrid's recurrent state, live and checkpointed, in its
    // `kv cache` (`ollama::own`).
    let own_engine = log.config.ollama_engine == Some(true);
    // With every layer and the output on the GPUs, its CPU buffer holds the
    // token embeddings alone, which the engine predicts
    // (`llamacpp::host`, `Options::ollama_engine`); every layer with a cache
    // or state on a GPU stands for every layer there.
    let own_host_graph = own_engine && !(r.output_on_gpu && r.cpu_kv_bytes == 0 && r.cpu_state_bytes == 0);
    let kv = |kv: u64, state: u64| {
        if !own_engine {
            return kv;
        }
        let copies = ollama::own::recurrent_checkpoints(log.config.ollama_version, e.family).saturating_add(1);
        kv.saturating_add(state.saturating_mul(copies))
    };
    // The breakdown's `context`: the KV cache and the recurrent state
    // (llama.cpp's `memory->memory_breakdown()`; Ollama's own engine books
    // the state with its KV, `kv` above).
    let context = |kv_bytes: u64, state: u64| {
        if own_engine { kv(kv_bytes, state) } else { kv_bytes.saturating_add(state) }
    };
    let copy = |f: &super::Fact| {
        mapped
            && matches!(f.figure, Figure::Buffer { buffer: Buffer::Model, .. })
            && f.scope.as_deref().is_some_and(|d| cpu_backend(d) && !matches!(d, "CPU" | "CPU_Mapped"))
    };
    let key = |f: &super::Fact| match f.figure {
        _ if copy(f) => None,
        Figure::Buffer { buffer: Buffer::Model, .. }
            if f.scope.as_deref().is_some_and(|d| cpu_backend(d) || d.ends_with("_Host")) =>
        {
            Some(("CPU".to_owned(), Some(Buffer::Model)))
        }
        Figure::Buffer { buffer: buffer @ (Buffer::Kv | Buffer::Model), .. } => {
            Some((f.scope.clone().unwrap_or_default(), Some(buffer)))
        }
        Figure::KvSummary { .. } => Some((String::new(), None)),
        _ => None,
    };
    // Each (device, buffer): the index of its first fact and the sum of its lines.
    let mut sums: Vec<((String, Option<Buffer>), usize, u64)> = Vec::new();
    for (i, f) in log.facts.iter().enumerate() {
        let (Some(k), Figure::Buffer { bytes, .. } | Figure::KvSummary { bytes, .. }) = (key(f), f.figure) else {
            continue;
        };
        match sums.iter_mut().find(|(have, ..)| *have == k) {
            Some((_, first, sum)) => {
                *sum = sum.saturating_add(bytes);
                // The host weights' row is the CPU backend's line where the log
                // has one, after a `*_Host` line too.
                let host = |j: usize| log.facts[j].scope.as_deref().is_some_and(|d| d.ends_with("_Host"));
                if host(*first) && !host(i) {
                    *first = i;
                }
            }
            None => sums.push((k, i, bytes)),
        }
    }
    let mut out = Vec::new();
    for (i, f) in log.facts.iter().enumerate() {
        let device = f.scope.clone().unwrap_or_default();
        let figure = match key(f) {
            Some(k) => match (sums.iter().find(|(have, ..)| *have == k), f.figure) {
                (Some(&(_, first, sum)), Figure::Buffer { buffer, .. }) if first == i => {
                    Figure::Buffer { buffer, bytes: sum }
                }
                (Some(&(_, first, sum)), Figure::KvSummary { .. }) if first == i => {
                    let mut summary = f.figure;
                    if let Figure::KvSummary { bytes, .. } = &mut summary {
                        *bytes = sum;
                    }
                    summary
                }
                _ => continue,
            },
            None => f.figure,
        };
        let (buffer, logged, predicted, note) = match (figure, at(log, &device)) {
            (Figure::Buffer { buffer, bytes }, Some(Place::Gpu(g))) => {
                let Some(gpu) = e.per_gpu.get(g) else {
                    out.push(check(f.line, device, name(buffer), bytes, None, Some("the plan has no such GPU")));
                    continue;
                };
                let b = &gpu.budget;
                match buffer {
                    Buffer::Model => (name(buffer), bytes, Some(b.weight_bytes), None),
                    Buffer::Kv => (name(buffer), bytes, Some(kv(b.kv_cache_bytes, b.state_bytes)), None),
                    Buffer::State => (name(buffer), bytes, Some(b.state_bytes), None),
                    Buffer::Compute if own_engine => (name(buffer), bytes, None, Some(OWN_GRAPH)),
                    Buffer::Compute => (name(buffer), bytes, Some(b.activation_bytes), None),
                    Buffer::Output => (name(buffer), bytes, None, Some("the output buffer is not modelled")),
                }
            }
            (Figure::Buffer { buffer, bytes }, Some(Place::Host)) => match buffer {
                Buffer::Model if copy(f) => (
                    name(buffer),
                    bytes,
                    None,
                    Some("repacked copies of weights the mapped file also holds are not modelled"),
                ),
                Buffer::Model => (name(buffer), bytes, Some(r.cpu_weight_bytes), None),
                Buffer::Kv => {
                    let kept_on_gpu = r.cpu_kv_bytes == 0 && bytes > 0;
                    (
                        name(buffer),
                        bytes,
                        Some(kv(r.cpu_kv_bytes, r.cpu_state_bytes)),
                        kept_on_gpu.then_some(KV_ON_HOST),
                    )
                }
                Buffer::State => (name(buffer), bytes, Some(r.cpu_state_bytes), None),
                Buffer::Compute if own_host_graph => (name(buffer), bytes, None, Some(OWN_HOST_GRAPH)),
                Buffer::Compute => (name(buffer), bytes, Some(r.host_compute_bytes), None),
                Buffer::Output => (name(buffer), bytes, None, Some("the output buffer is not modelled")),
            },
            (Figure::Buffer { buffer, bytes }, None) if device.starts_with("Meta(") => (
                name(buffer),
                bytes,
                None,
                Some(
                    "the `Meta()` device of --split-mode tensor (llama.cpp's tensor parallelism, \
                     ggml-org/llama.cpp#19378), which Headroom does not model",
                ),
            ),
            (Figure::Buffer { buffer, bytes }, None) => {
                (name(buffer), bytes, None, Some("a device this reader does not know"))
            }
            (Figure::StateSummary { bytes, .. }, _) => {
                let all = e.per_gpu.iter().fold(r.cpu_state_bytes, |a, g| a.saturating_add(g.budget.state_bytes));
                out.push(check(f.line, "all".into(), "state_total", bytes, Some(all), None));
                continue;
            }
            (Figure::KvSummary { bytes, .. }, _) => {
                let all = e.per_gpu.iter().fold(r.cpu_kv_bytes, |a, g| a.saturating_add(g.budget.kv_cache_bytes));
                out.push(check(f.line, "all".into(), "kv_total", bytes, Some(all), None));
                continue;
            }
            (Figure::MemoryBreakdown { model_bytes, context_bytes, compute_bytes, .. }, Some(at)) => {
                let parts =
                    [(Buffer::Model, model_bytes), (Buffer::Kv, context_bytes), (Buffer::Compute, compute_bytes)];
                for (buffer, bytes) in parts {
                    // A buffer the log also prints line by line is checked
                    // there, to the hundredth of a MiB.
                    if printed(log, at, buffer) {
                        continue;
                    }
                    let (predicted, note) = match (at, buffer) {
                        (Place::Gpu(g), _) => match e.per_gpu.get(g) {
                            None => (None, Some("the plan has no such GPU")),
                            Some(gpu) => {
                                let b = &gpu.budget;
                                match buffer {
                                    Buffer::Model => (Some(b.weight_bytes), Some(WHOLE_MIB)),
                                    Buffer::Compute if own_engine => (None, Some(OWN_GRAPH)),
                                    Buffer::Compute => (Some(b.activation_bytes), Some(WHOLE_MIB)),
                                    _ => (Some(context(b.kv_cache_bytes, b.state_bytes)), Some(WHOLE_MIB)),
                                }
                            }
                        },
                        // Another host buffer type than the host's row (the
                        // CPU backend's repacked weights, `CPU_REPACK`),
                        // whose weights the plan counts in the host's.
                        (Place::Host, _) if device != "Host" => {
                            if bytes == 0 {
                                continue;
                            }
                            (None, Some("a host buffer type beside the host's row (repacked weights): not modelled"))
                        }
                        (Place::Host, Buffer::Model) => (Some(r.cpu_weight_bytes), Some(WHOLE_MIB)),
                        (Place::Host, Buffer::Compute) if own_engine => (None, Some(OWN_GRAPH)),
                        (Place::Host, Buffer::Compute) => (Some(r.host_compute_bytes), Some(WHOLE_MIB)),
                        (Place::Host, _) => (Some(context(r.cpu_kv_bytes, r.cpu_state_bytes)), Some(WHOLE_MIB)),
                    };
                    // Nothing logged and nothing planned says nothing.
                    if bytes == 0 && predicted == Some(0) {
                        continue;
                    }
                    let name = if buffer == Buffer::Kv { "context" } else { name(buffer) };
                    out.push(check(f.line, device.clone(), name, bytes, predicted, note));
                }
                continue;
            }
            (Figure::FitProjection { used_bytes, .. }, _) => {
                let own = |g: &crate::plan::GpuPeak| {
                    let b = &g.budget;
                    b.weight_bytes
                        .saturating_add(context(b.kv_cache_bytes, b.state_bytes))
                        .saturating_add(b.activation_bytes)
                };
                let predicted = match at(log, &device) {
                    // One device's projection where the log states nothing
                    // else of it: its model, context and compute together.
                    Some(Place::Gpu(g)) if !stated(log, Some(Place::Gpu(g))) => e.per_gpu.get(g).map(own),
                    // The sum, where no device's figure is in the log.
                    None if f.scope.is_none() && !stated(log, None) => {
                        Some(e.per_gpu.iter().map(own).fold(0u64, u64::saturating_add))
                    }
                    _ => continue,
                };
                let device = if f.scope.is_none() { "all".to_owned() } else { device };
                let note = predicted.map_or(Some("the plan has no such GPU"), |_| Some(PROJECTED));
                out.push(check(f.line, device, "projected", used_bytes, predicted, note));
                continue;
            }
            _ => continue,
        };
        out.push(check(f.line, device, buffer, logged, predicted, note));
    }
    out
}

fn check(
    line: usize,
    device: String,
    buffer: &'static str,
    logged_bytes: u64,
    predicted_bytes: Option<u64>,
    note: Option<&'static str>,
) -> BufferCheck {
    BufferCheck { line, device, buffer, logged_bytes, predicted_bytes, note }
}

fn name(b: Buffer) -> &'static str {
    match b {
        Buffer::Model => "model",
        Buffer::Kv => "kv",
        Buffer::State => "state",
        Buffer::Compute => "compute",
        Buffer::Output => "output",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_map_to_gpus_and_the_host() {
        assert_eq!(place("CUDA0"), Some(Place::Gpu(0)));
        assert_eq!(place("ROCm12"), Some(Place::Gpu(12)));
        assert_eq!(place("Metal"), Some(Place::Gpu(0)));
        assert_eq!(place("Metal_Mapped"), Some(Place::Gpu(0)));
        assert_eq!(place("MTL0"), Some(Place::Gpu(0)));
        assert_eq!(place("CPU_Mapped"), Some(Place::Host));
        assert_eq!(place("AMX"), Some(Place::Host));
        assert_eq!(place("CPU_REPACK"), Some(Place::Host));
        assert_eq!(place("CUDA_Host"), Some(Place::Host));
        assert_eq!(place("BLAS"), None);
    }
}

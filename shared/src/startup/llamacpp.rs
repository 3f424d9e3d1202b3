//! llama.cpp's start-up lines, old and new names: the model buffers
//! (`llm_load_tensors: CUDA0 buffer size`, now `load_tensors: CUDA0 model
//! buffer size`, `llama-model.cpp`), the KV buffers and summary
//! (`llama_kv_cache_init`, `llama_kv_cache_unified`, `llama_kv_cache`:
//! `llama-kv-cache.cpp`), the output and compute buffers
//! (`llama_new_context_with_model`, `llama_init_from_model`,
//! `llama_context`: `llama-context.cpp`) and the context parameters they
//! print. Sizes are MiB.

use super::{Buffer, Fact, Figure, LoggedConfig, after, count, size};

pub(super) fn read(lines: &[(usize, String)]) -> (LoggedConfig, Vec<Fact>) {
    let mut config = LoggedConfig::default();
    let mut facts = Vec::new();
    for (n, line) in lines {
        if let Some(fact) = buffer(line) {
            facts.push(Fact { line: *n, ..fact });
            continue;
        }
        if let Some(figure) = summary(line) {
            facts.push(Fact { line: *n, scope: None, figure });
            continue;
        }
        if let Some(rest) = after(line, "offloaded ") {
            let (layers, of) = rest.split_once('/').unwrap_or_default();
            if let (Some(layers), Some(of)) = (count(layers), count(of)) {
                facts.push(Fact { line: *n, scope: None, figure: Figure::Offloaded { layers, of } });
            }
            continue;
        }
        context(line, &mut config);
    }
    (config, facts)
}

/// `<device> model|KV|RS|compute|output buffer size = X MiB`, and the old
/// `llm_load_tensors: <device> buffer size = X MiB` (model weights).
fn buffer(line: &str) -> Option<Fact> {
    let (head, rest) = line.split_once(" buffer size =")?;
    let bytes = size(rest, false)?;
    let mut words = head.rsplit(' ').filter(|w| !w.is_empty());
    let last = words.next()?;
    let (kind, device) = match last {
        "model" => (Buffer::Model, words.next()?),
        "KV" => (Buffer::Kv, words.next()?),
        "RS" => (Buffer::State, words.next()?),
        "compute" => (Buffer::Compute, words.next()?),
        "output" => (Buffer::Output, words.next()?),
        device if head.contains("load_tensors:") => (Buffer::Model, device),
        _ => return None,
    };
    let device = device.trim_end_matches(':');
    if device.is_empty() || device.contains(':') || device.ends_with("ctx") {
        return None;
    }
    Some(Fact { line: 0, scope: Some(device.to_owned()), figure: Figure::Buffer { buffer: kind, bytes } })
}

/// `llama_kv_cache: size = X MiB (N cells, L layers, 1/1 seqs), K (f16): A
/// MiB, V (f16): B MiB`, or the old `KV self size = X MiB, K (f16): A MiB, V
/// (f16): B MiB`.
fn summary(line: &str) -> Option<Figure> {
    let rest = after(line, "KV self size  =")
        .or_else(|| after(line, "KV self size ="))
        .or_else(|| after(line, "llama_kv_cache: size ="))
        .or_else(|| after(line, "llama_kv_cache_unified: size ="))?;
    let bytes = size(rest, false)?;
    let k_bytes = after(rest, "K (").and_then(|r| after(r, "):")).and_then(|r| size(r, false))?;
    let v_bytes = after(rest, "V (").and_then(|r| after(r, "):")).and_then(|r| size(r, false))?;
    let inside = after(rest, "(").and_then(|r| r.split(')').next()).unwrap_or_default();
    let cells = inside.split(',').find(|p| p.contains("cells")).and_then(|p| count(p.trim_start()));
    let layers = inside.split(',').find(|p| p.contains("layers")).and_then(|p| count(p.trim_start()));
    Some(Figure::KvSummary { bytes, k_bytes, v_bytes, cells, layers })
}

/// `n_ctx = 4096`, `n_batch`, `n_ubatch`, `n_seq_max`, `flash_attn`, and
/// `type_k = 'q4_0', type_v = 'f16'` (older `llama_kv_cache_init`) or
/// `K (q8_0)` in the summary line.
fn context(line: &str, c: &mut LoggedConfig) {
    let value = |key: &str| -> Option<&str> {
        let rest = after(line, key)?;
        let rest = rest.trim_start().strip_prefix('=')?;
        Some(rest.trim().trim_matches('\''))
    };
    if !line.contains("llama_context:") && !line.contains("_with_model:") && !line.contains("llama_init_from_model:") {
        if let (Some(k), Some(v)) = (after(line, "type_k = '"), after(line, "type_v = '")) {
            c.cache_type_k = k.split('\'').next().map(str::to_owned);
            c.cache_type_v = v.split('\'').next().map(str::to_owned);
        }
        return;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let key = words.iter().position(|w| w.ends_with(':')).and_then(|i| words.get(i + 1)).copied().unwrap_or("");
    match key {
        "n_ctx" => c.n_ctx = value("n_ctx").and_then(count),
        "n_batch" => c.n_batch = value("n_batch").and_then(count),
        "n_ubatch" => c.n_ubatch = value("n_ubatch").and_then(count),
        "n_seq_max" => c.n_seq_max = value("n_seq_max").and_then(count),
        "flash_attn" => c.flash_attn = value("flash_attn").map(str::to_owned),
        _ => {}
    }
}

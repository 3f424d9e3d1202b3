//! vLLM's start-up lines, V0 and V1. The phrases are those of
//! `vllm/v1/worker/gpu_model_runner.py` (`Model loading took`,
//! `Estimated CUDA graph memory`, `Graph capturing finished`),
//! `vllm/v1/worker/gpu_worker.py` (`Available KV cache memory`, the
//! `kv_cache_memory_bytes` line), `vllm/v1/core/kv_cache_utils.py` (`GPU KV
//! cache size`, `Maximum concurrency`), `vllm/model_executor/models/config.py`
//! (the hybrid attention block size) and, before V1, `vllm/worker/worker.py`
//! (the `Memory profiling results` table) and `vllm/engine/llm_engine.py`
//! (the engine configuration line). Sizes are GiB throughout; V0 printed
//! them as `GB` (`/ float(2**30)`), read as GiB.

use super::{Fact, Figure, LoggedConfig, after, count, field, fixed, size};

pub(super) fn read(lines: &[(usize, String)]) -> (LoggedConfig, Vec<Fact>) {
    let mut config = LoggedConfig::default();
    let mut facts = Vec::new();
    for (n, line) in lines {
        if let Some(rest) = after(line, "LLM engine (v") {
            config.version = rest.split(')').next().map(str::to_owned);
            read_config(line, &mut config);
            continue;
        }
        // V0 0.6.4–0.7 put the whole profile on one line, `;`-separated:
        // `total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.90) =
        // 71.29GiB; model weights take 14.99GiB; non_torch_memory takes …`.
        for segment in line.split(';') {
            for figure in figures(segment) {
                facts.push(Fact { line: *n, scope: scope(line), figure });
            }
        }
    }
    (config, facts)
}

fn read_config(line: &str, c: &mut LoggedConfig) {
    c.model = field(line, "model");
    c.dtype = field(line, "dtype").map(|d| d.trim_start_matches("torch.").to_owned());
    c.quantization = field(line, "quantization");
    c.kv_cache_dtype = field(line, "kv_cache_dtype");
    c.tensor_parallel = field(line, "tensor_parallel_size").and_then(|v| v.parse().ok());
    c.pipeline_parallel = field(line, "pipeline_parallel_size").and_then(|v| v.parse().ok());
    c.max_model_len = field(line, "max_seq_len").and_then(|v| v.parse().ok());
    c.enforce_eager = field(line, "enforce_eager").map(|v| v == "True");
}

/// Builds a figure from its bytes.
type Make = fn(u64) -> Figure;

fn figures(segment: &str) -> Vec<Figure> {
    if let Some(f) = figure(segment) {
        return vec![f];
    }
    // The profile's own terms; `total_gpu_memory` and `gpu_memory_utilization`
    // share a segment in the one-line form.
    let mut out = Vec::new();
    let terms: [(&str, Make); 3] = [
        ("total_gpu_memory", |bytes| Figure::DeviceTotal { bytes }),
        ("non_torch_memory", |bytes| Figure::NonTorch { bytes }),
        ("PyTorch activation peak memory", |bytes| Figure::ActivationPeak { bytes }),
    ];
    for (key, make) in terms {
        if let Some(bytes) = after(segment, key).and_then(|r| size(value(r), true)) {
            out.push(make(bytes));
        }
    }
    if let Some(rest) = after(segment, "gpu_memory_utilization").map(value)
        && rest.starts_with(|c: char| c.is_ascii_digit())
        && let Some(permille) = fixed(rest, 1000)
    {
        out.push(Figure::Utilization { permille });
    }
    out
}

/// The value after a profile-table key: `  14.96GiB`, `takes 0.19GiB`, `(0.90)`.
fn value(rest: &str) -> &str {
    rest.trim_start().trim_start_matches("takes").trim_start_matches(['(', ' '])
}

fn figure(line: &str) -> Option<Figure> {
    // V1: `Model loading took 15.26 GiB memory and 23.1 seconds`;
    // V1 before 0.8: `Loading model weights took 67.7229 GB`;
    // the V0 profile table: `model weights take 14.96GiB`.
    for key in ["Model loading took", "Loading model weights took", "model weights take"] {
        if let Some(bytes) = after(line, key).and_then(|r| size(r, true)) {
            return Some(Figure::Weights { bytes });
        }
    }
    if let Some(bytes) = after(line, "Estimated CUDA graph memory:").and_then(|r| size(r, true)) {
        return Some(Figure::CudaGraphs { bytes, estimated: true });
    }
    if let Some(rest) = after(line, "Graph capturing finished")
        && let Some(bytes) = after(rest, "took").and_then(|r| size(r, true))
    {
        return Some(Figure::CudaGraphs { bytes, estimated: false });
    }
    if let Some(rest) = after(line, "Available KV cache memory:")
        .or_else(|| after(line, "available_kv_cache_memory"))
        .or_else(|| after(line, "the rest of the memory reserved for KV Cache is"))
    {
        let rest = rest.trim_start();
        let (negative, rest) = match rest.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        return size(rest, true).map(|bytes| Figure::AvailableKv { bytes, negative });
    }
    if let Some(rest) = after(line, "reserved")
        && line.contains("kv_cache_memory_bytes")
    {
        return size(rest, true).map(|bytes| Figure::PinnedKv { bytes });
    }
    if let Some(tokens) = after(line, "GPU KV cache size:").and_then(|r| count(r.trim_start())) {
        return Some(Figure::KvTokens { tokens });
    }
    if let Some(blocks) = after(line, "# GPU blocks:").and_then(|r| count(r.trim_start())) {
        return Some(Figure::KvBlocks { blocks });
    }
    if let Some(rest) = after(line, "Maximum concurrency for ") {
        let tokens_per_request = count(rest)?;
        let hundredths = after(rest, "per request:").and_then(|r| fixed(r, 100))?;
        return Some(Figure::Concurrency { tokens_per_request, hundredths });
    }
    if let Some(tokens) = after(line, "Setting attention block size to").and_then(|r| count(r.trim_start())) {
        return Some(Figure::AttentionBlock { tokens });
    }
    None
}

/// `(Worker_TP3 pid=…)` or `(EngineCore_DP0 pid=…)`: the process the line
/// came from, when it is a rank of its own.
fn scope(line: &str) -> Option<String> {
    let open = line.find('(')?;
    let name = line[open + 1..].split([' ', ')']).next()?;
    name.starts_with("Worker").then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v0_profile_table_and_the_v1_lines() {
        assert_eq!(
            figure("worker.py:243] model weights take   14.96GiB"),
            Some(Figure::Weights { bytes: 1496 * (1 << 30) / 100 })
        );
        assert_eq!(
            figure("Maximum concurrency for 131,072 tokens per request: 5.23x"),
            Some(Figure::Concurrency { tokens_per_request: 131_072, hundredths: 523 })
        );
        assert_eq!(
            figure("Available KV cache memory: -1.5 GiB"),
            Some(Figure::AvailableKv { bytes: 1_610_612_736, negative: true })
        );
        assert_eq!(
            figures("worker.py:243] gpu_memory_utilization       0.90"),
            [Figure::Utilization { permille: 900 }]
        );
        assert_eq!(figures("increase --gpu-memory-utilization from 0.7000 to 0.7021"), []);
        let one_line = "total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.90) = 71.29GiB; model weights take \
                        14.99GiB; non_torch_memory takes 0.19GiB; PyTorch activation peak memory takes 1.26GiB; the \
                        rest of the memory reserved for KV Cache is 54.85GiB.";
        let (_, facts) = read(&[(1, one_line.to_owned())]);
        let kinds: Vec<_> = facts.iter().map(|f| f.figure).collect();
        assert_eq!(kinds.len(), 6, "{kinds:?}");
        assert!(
            matches!(kinds[0], Figure::DeviceTotal { .. }) && matches!(kinds[1], Figure::Utilization { permille: 900 })
        );
        assert!(matches!(kinds[5], Figure::AvailableKv { negative: false, .. }));
        assert_eq!(scope("(Worker_TP3 pid=9) INFO"), Some("Worker_TP3".into()));
        assert_eq!(scope("(EngineCore pid=9) INFO"), None);
    }
}

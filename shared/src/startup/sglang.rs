//! SGLang's start-up lines (sglang 0.5.23): `Init torch distributed ends`
//! (0.4.x – 0.5.x, no longer printed by 0.5.23) and `Load weight end` in
//! `srt/model_executor/model_runner.py`, `KV Cache is allocated` in
//! `srt/mem_cache/memory_pool.py` (with `Mamba Cache is allocated`, the
//! recurrent-state pool), `Memory pool end` and the CUDA-graph
//! lines in `srt/model_executor/model_runner_components/cuda_graph_setup.py`,
//! `max_total_num_tokens=` from the scheduler, and the `server_args=` line.
//! Every `GB` is bytes / 2^30 (`GB = 1024 * 1024 * 1024`).

use super::{Fact, Figure, LoggedConfig, Stage, after, count, field, fixed, size};

pub(super) fn read(lines: &[(usize, String)]) -> (LoggedConfig, Vec<Fact>) {
    let mut config = LoggedConfig::default();
    let mut facts = Vec::new();
    // The checkpoint's own quantisation, which SGLang detects and its
    // `server_args` print as `quantization=None`: from `Load weight end.`'s
    // `quant=awq, bits=4`, else from the kernel it converts to.
    let (mut loaded_quant, mut kernel_quant) = (None, None);
    for (n, line) in lines {
        if config.date.is_none() {
            config.date = date(line);
        }
        if line.contains("server_args=ServerArgs(") {
            read_config(line, &mut config);
            continue;
        }
        let scope = scope(line);
        let mut push = |figure| facts.push(Fact { line: *n, scope: scope.clone(), figure });
        if let Some(kernel) = after(line, "The model is convertible to").and_then(|r| r.split_whitespace().next()) {
            // 0.4 – 0.5.23 `layers/quantization/{awq,gptq}/*.py::override_quantization_method`:
            // `The model is convertible to awq_marlin during runtime. Using awq_marlin kernel.`
            kernel_quant = Some(kernel.to_owned());
            continue;
        }
        if let Some(bytes) =
            after(line, "Load weight begin.").and_then(|r| after(r, "avail mem=")).and_then(|r| size(r, true))
        {
            // 0.4 – 0.5.23 `model_runner.py::load_model`: what was free on
            // this rank as the weights began to load, which the device holds
            // at least.
            push(Figure::Free { after: Stage::Init, bytes });
            continue;
        }
        if let Some(rest) = after(line, "Load weight end.") {
            if let Some(q) = checkpoint_quantization(rest) {
                loaded_quant = Some(q);
            }
            if let Some(bytes) = after(rest, "mem usage=").and_then(|r| size(r, true)) {
                push(Figure::Weights { bytes });
            }
            if let Some(bytes) = after(rest, "avail mem=").and_then(|r| size(r, true)) {
                push(Figure::Free { after: Stage::Weights, bytes });
            }
        } else if let Some(rest) = after(line, "KV Cache is allocated.").or_else(|| after(line, "KV cache allocated."))
        {
            let tokens = after(rest, "#tokens:").and_then(|r| count(r.trim_start()));
            let k = after(rest, " K size:").and_then(|r| size(r, true));
            let v = after(rest, " V size:").and_then(|r| size(r, true));
            // A pool not split in K and V (MLA's) prints one `KV size:`
            // (0.5.23 `mem_cache/memory_pool.py`, where `get_kv_size_bytes`
            // is no `(k, v)` tuple).
            let kv = after(rest, " KV size:").and_then(|r| size(r, true));
            if let Some(tokens) = tokens {
                match (k, v, kv) {
                    (Some(k), Some(v), _) => {
                        push(Figure::KvPool { tokens, bytes: k.saturating_add(v), k_bytes: Some(k), v_bytes: Some(v) })
                    }
                    (_, _, Some(bytes)) => push(Figure::KvPool { tokens, bytes, k_bytes: None, v_bytes: None }),
                    _ => {}
                }
            }
        } else if let Some(rest) = after(line, "Mamba Cache is allocated.") {
            // 0.5.23 `mem_cache/memory_pool.py::MambaPool`: `max_mamba_cache_size: N,
            // conv_state size: 0.38GB, ssm_state size: 10.81GB` and, with
            // speculative decoding, its intermediate caches; each `GB` 2^30 bytes.
            let sequences = after(rest, "max_mamba_cache_size:").and_then(|r| count(r.trim_start()));
            let parts = [
                "conv_state size:",
                "ssm_state size:",
                "intermediate_ssm_state_cache size:",
                "intermediate_conv_window_cache size:",
            ]
            .into_iter()
            .filter_map(|key| after(rest, key).and_then(|r| size(r, true)));
            let bytes = parts.fold(None, |sum: Option<u64>, b| Some(sum.unwrap_or(0).saturating_add(b)));
            if let (Some(sequences), Some(bytes)) = (sequences, bytes) {
                push(Figure::StatePool { sequences, bytes });
            }
        } else if let Some(bytes) =
            after(line, "Init torch distributed ends.").and_then(|r| after(r, "mem usage=")).and_then(|r| size(r, true))
        {
            // `model_runner.py::init_torch_distributed` (0.4 – 0.5.x): what
            // the distributed init took on this rank.
            push(Figure::DistInit { bytes });
        } else if let Some(bytes) =
            after(line, "Memory pool end.").and_then(|r| after(r, "avail mem=")).and_then(|r| size(r, true))
        {
            push(Figure::Free { after: Stage::MemoryPool, bytes });
        } else if let Some(rest) = after(line, "Capture cuda graph end.")
            .or_else(|| after(line, "Capture target decode CUDA graph end."))
            .or_else(|| after(line, "Capture target verify CUDA graph end."))
        {
            // The target model's decode graphs: `Capture cuda graph end. Time
            // elapsed: … mem usage=…` until 0.5.10, `Capture target decode
            // CUDA graph end. elapsed=…, mem usage=…` (`target verify` under
            // speculative decoding) after it (0.5.23
            // `model_runner_components/cuda_graph_setup.py::capture_decode_graph`).
            // Its prefill graphs and a drafter's are captured apart and not read.
            if let Some(bytes) = after(rest, "mem usage=").and_then(|r| size(r, true)) {
                push(Figure::CudaGraphs { bytes });
            }
            if let Some(bytes) = after(rest, "avail mem=").and_then(|r| size(r, true)) {
                push(Figure::Free { after: Stage::CudaGraphs, bytes });
            }
        } else if let Some(tokens) = after(line, "max_total_num_tokens=").and_then(count) {
            push(Figure::MaxTotalTokens { tokens });
            if let Some(len) = after(line, "context_len=").and_then(count) {
                config.max_model_len = Some(len);
            }
        }
    }
    config.quantization = config.quantization.take().or(loaded_quant).or(kernel_quant);
    // A command pasted above a log that prints no `server_args` (the
    // benchmarks, `sglang.bench_one_batch`): what it sets, where the log
    // says nothing of its own.
    if let Some(launch) = super::launch::pasted(lines, super::launch::Launcher::Sglang) {
        let given = launch.config;
        config.model = config.model.take().or_else(|| launch.model.map(|m| m.name().to_owned()));
        config.tensor_parallel = config.tensor_parallel.or(given.tensor_parallel);
        config.mem_fraction_static_permille =
            config.mem_fraction_static_permille.or(given.mem_fraction_static_permille);
        config.max_model_len = config.max_model_len.or(given.max_model_len);
        config.kv_cache_dtype = config.kv_cache_dtype.take().or(given.kv_cache_dtype);
        config.quantization = config.quantization.take().or(given.quantization);
    }
    (config, facts)
}

/// The checkpoint's quantisation as `Load weight end.` names it (0.5.23
/// `model_runner.py` with `ModelConfig::get_quantization_config_log_str`:
/// `quant={quant_method}` then `, bits=…`, `, quant_algo=…`, `, fmt=…` where
/// the checkpoint's config has them): the method, or for GPTQ and AWQ of
/// other than 4 bits the format of those bits (`gptq-int8`), so that no
/// 8-bit checkpoint is read as the methods' usual 4-bit.
fn checkpoint_quantization(rest: &str) -> Option<String> {
    let value = |key: &str| {
        let v = after(rest, key)?;
        let end = v.find([',', ' ']).unwrap_or(v.len());
        Some(v[..end].trim().to_ascii_lowercase()).filter(|v| !v.is_empty())
    };
    let method = value(" quant=")?;
    let bits = value(" bits=");
    match (method.as_str(), bits.as_deref()) {
        ("awq" | "gptq", Some(bits)) if bits != "4" => {
            let format = format!("{method}-int{bits}");
            crate::formats::WeightFormat::parse(&format).is_ok().then_some(format)
        }
        _ => Some(method),
    }
}

fn read_config(line: &str, c: &mut LoggedConfig) {
    c.model = field(line, "model_path");
    c.dtype = field(line, "dtype");
    c.quantization = field(line, "quantization");
    c.kv_cache_dtype = field(line, "kv_cache_dtype");
    c.tensor_parallel = field(line, "tp_size").and_then(|v| v.parse().ok());
    c.pipeline_parallel = field(line, "pp_size").and_then(|v| v.parse().ok());
    c.data_parallel = field(line, "dp_size").and_then(|v| v.parse().ok());
    c.dp_attention = field(line, "enable_dp_attention").map(|v| v == "True");
    c.ep_size = field(line, "ep_size").and_then(|v| v.parse().ok());
    c.redundant_experts = field(line, "ep_num_redundant_experts").and_then(|v| v.parse().ok());
    c.deepep = field(line, "moe_a2a_backend").and_then(|v| crate::engines::sglang::moe_a2a_deepep(&v));
    c.deepep_mode = field(line, "deepep_mode").and_then(|v| crate::engines::sglang::DeepepMode::parse(&v));
    c.max_model_len = field(line, "context_length").and_then(|v| v.parse().ok());
    c.mem_fraction_static_permille = field(line, "mem_fraction_static").and_then(|v| fixed(&v, 1000));
}

/// `[2025-03-25 16:37:06 TP0]` (`utils.py::configure_logger`'s
/// `[%(asctime)s …]`): its date.
fn date(line: &str) -> Option<crate::engines::sglang::Date> {
    let d = line.strip_prefix('[')?.get(..10)?.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        d[r].iter().try_fold(0u16, |n, &c| c.is_ascii_digit().then(|| n * 10 + u16::from(c - b'0')))
    };
    let (y, m, day) = (digits(0..4)?, u8::try_from(digits(5..7)?).ok()?, u8::try_from(digits(8..10)?).ok()?);
    (d[4] == b'-' && d[7] == b'-' && (1..=12).contains(&m) && (1..=31).contains(&day)).then_some((y, m, day))
}

/// `[2025-10-16 09:06:22 TP5]`: the rank.
fn scope(line: &str) -> Option<String> {
    let inside = line.strip_prefix('[')?.split(']').next()?;
    let last = inside.rsplit(' ').next()?;
    (last.starts_with("TP") || last.starts_with("DP") || last.starts_with("PP")).then(|| last.to_owned())
}

//! vLLM's start-up lines, V0 and V1. The phrases are those of
//! `vllm/v1/worker/gpu_model_runner.py` (`Model loading took`,
//! `Estimated CUDA graph memory`, `Graph capturing finished`),
//! `vllm/v1/worker/gpu_worker.py` (`Available KV cache memory`, the
//! `kv_cache_memory_bytes` line), `vllm/v1/core/kv_cache_utils.py` (`GPU KV
//! cache size`, `Maximum concurrency`), `vllm/model_executor/models/config.py`
//! (the hybrid attention block size) and, before V1, `vllm/worker/worker.py`
//! (the `Memory profiling results` table, or 0.6.4's one `key=value` line)
//! and `vllm/engine/llm_engine.py` (the engine configuration line). Sizes are GiB throughout; V0 printed
//! them as `GB` (`/ float(2**30)`), read as GiB.
//!
//! Every V1 line also names its logger call (`[gpu_worker.py:298]`,
//! `[v1/worker/gpu_worker.py:435]`), whose line moves between releases:
//! [`CallSites`] narrows a log that prints no version to the releases whose
//! sources log its messages there (`vllm_sites.rs`, generated from each
//! release's wheel by `scripts/vllm-call-sites.py`).

use super::vllm_sites::{FILES, PHRASES, RELEASES, SITES};
use super::{Fact, Figure, LoggedConfig, after, count, field, fixed, size};
use crate::engines::vllm::{Mxfp4Kernel, Sampler, Version};

pub(super) fn read(lines: &[(usize, String)]) -> (LoggedConfig, Vec<Fact>) {
    let mut config = LoggedConfig::default();
    let mut facts = Vec::new();
    let mut sites: Option<CallSites> = None;
    // Whether the log prints its non-default args, whether they size the
    // batch, the batched tokens the scheduler logs, and whether the API
    // server ran (its usage context): what [`tier_max_num_seqs`] reads.
    let (mut args, mut batch_args, mut chunked, mut server) = (false, false, None, false);
    let mut throughput = false;
    for (n, line) in lines {
        args |= line.contains("non-default args:");
        config.rocm |= line.contains("[rocm.py:") || line.contains("detected platform rocm");
        throughput |= line.contains("'performance_mode': 'throughput'");
        batch_args |= line.contains("'max_num_batched_tokens':") || line.contains("'max_num_seqs':");
        server |=
            ["(APIServer pid=", "API server version", "api_server.py", "'model_tag':"].iter().any(|m| line.contains(m));
        if let Some(releases) = site_releases(line) {
            let narrowed = sites.map_or(releases, |s| s.releases & releases);
            sites = Some(CallSites { releases: narrowed, lines: sites.map_or(1, |s| s.lines.saturating_add(1)) });
        }
        if let Some(rest) = after(line, "LLM engine (v") {
            config.version = rest.split(')').next().map(str::to_owned);
            read_config(line, &mut config);
            continue;
        }
        // The release: `vLLM API server version 0.10.1.1`, or the start-up
        // banner of 0.18 and later, `▄▄ ▄█ █ … █  version 0.26.1` (`utils.py`).
        let banner =
            line.rfind('█').map(|i| line[i + '█'.len_utf8()..].trim_start()).and_then(|r| r.strip_prefix("version "));
        if let Some(rest) = after(line, "API server version ").or(banner).filter(|_| config.version.is_none()) {
            config.version = rest.split_whitespace().next().map(str::to_owned);
        }
        // The banner's next row names the model: `█▄█▀ █ █ █ █  model openai/gpt-oss-20b`.
        let banner_model =
            line.rfind('█').map(|i| line[i + '█'.len_utf8()..].trim_start()).and_then(|r| r.strip_prefix("model "));
        if let Some(model) = banner_model.and_then(|r| r.split_whitespace().next()).filter(|_| config.model.is_none()) {
            config.model = Some(model.to_owned());
        }
        read_args(line, &mut config, *n, &mut facts);
        // `v1/sample/ops/topk_topp_sampler.py` (0.10.1.1 – 0.33.0) says which
        // top-k/top-p sampler it set up, at info or warning level.
        // `quantization/mxfp4.py::get_mxfp4_backend` (0.11.0 – 0.33.0); the
        // attention selector and other MoE methods say "Using … backend" too.
        if !line.contains("mxfp4.py") {
        } else if line.contains("Using Marlin backend") {
            config.mxfp4_kernel = Some(Mxfp4Kernel::Marlin);
        } else if line.contains("Using Triton backend") {
            config.mxfp4_kernel = Some(Mxfp4Kernel::Triton);
        } else if line.contains("Using FlashInfer MXFP4") {
            config.mxfp4_kernel = Some(Mxfp4Kernel::FlashInfer);
        }
        if line.contains("Using FlashInfer for top-p & top-k sampling") {
            config.sampler = Some(Sampler::FlashInfer);
        } else if line.contains("Falling back to the PyTorch-native implementation of top-p")
            || line.contains("Falling back to default sampling implementation")
        {
            config.sampler = Some(Sampler::Native);
        }
        // 0.25.1 `v1/attention/backends/flashinfer.py`: `FlashInfer resolved
        // query dtypes: …, kv_cache_dtype=torch.float8_e4m3fn, …`, the cache
        // an `auto` launch took (a checkpoint's FP8 KV scheme, which the
        // engine line still calls `auto`).
        if let Some(kv) = after(line, "FlashInfer resolved query dtypes")
            .and_then(|rest| field(rest, "kv_cache_dtype"))
            .and_then(|d| resolved_fp8(&d))
            .filter(|_| config.kv_cache_dtype.as_deref().is_none_or(|k| k == "auto"))
        {
            config.kv_cache_dtype = Some(kv.into());
        }
        // `fused_moe/layer.py` (0.10 – 0.2x): `[EP Rank 0/8] Expert parallelism
        // is enabled. … Local/global number of experts: 16/128`: EP on, the
        // global count the model's experts with any redundant copies.
        if let Some(rest) = after(line, "Expert parallelism is enabled") {
            config.expert_parallel = Some(true);
            if let Some(global) = after(rest, "Local/global number of experts: ")
                .and_then(|r| r.split_once('/'))
                .and_then(|(_, g)| count(g))
            {
                config.global_experts.get_or_insert(global);
            }
        }
        // 0.34 `executor/abstract.py::disable_extensible_kv_cache`: the driver
        // (or a rank) cannot map the cache, so the profile sizes the pool.
        if line.contains("Disabling the extensible KV cache") {
            config.extensible_kv_cache = Some(false);
        }
        if let Some(mnbt) = after(line, "Chunked prefill is enabled with max_num_batched_tokens=").and_then(count) {
            config.max_num_batched_tokens = Some(mnbt);
            chunked = Some(mnbt);
        }
        if let Some(len) = after(line, "Using max model len ").and_then(count) {
            config.max_model_len.get_or_insert(len);
        }
        // 0.11 – 0.2x `gpu_worker.py`: `Free memory on device (77.78/79.33 GiB)
        // on startup. Desired GPU memory utilization is (0.85, 67.43 GiB).
        // Actual usage is 16.92 GiB for weight, 5.66 GiB for peak activation,
        // 0.13 GiB for non-torch memory, and 1.34 GiB for CUDAGraph memory.
        // Replace … `--kv-cache-memory=N` … to fit into requested memory …`.
        if after(line, "Free memory on device (").is_some() {
            for figure in breakdown(line) {
                facts.push(Fact { line: *n, scope: scope(line), figure });
            }
            continue;
        }
        // V0 0.6.5–0.7 put the whole profile on one line, `;`-separated:
        // `total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.90) =
        // 71.29GiB; model weights take 14.99GiB; non_torch_memory takes …`.
        for segment in line.split(';') {
            for figure in figures(segment) {
                facts.push(Fact { line: *n, scope: scope(line), figure });
            }
        }
        // 0.6.4's `peak_torch_memory=` is PyTorch's whole peak, the weights
        // in it: the activation peak is it less the weights loaded before.
        if let Some(peak) = after(line, "peak_torch_memory=").and_then(|r| size(r, true))
            && let Some(weights) = facts.iter().rev().find_map(|f| match f.figure {
                Figure::Weights { bytes } if f.scope == scope(line) => Some(bytes),
                _ => None,
            })
        {
            let bytes = peak.saturating_sub(weights);
            facts.push(Fact { line: *n, scope: scope(line), figure: Figure::ActivationPeak { bytes } });
        }
    }
    config.call_sites = sites;
    pasted_command(lines, &mut config, &mut facts);
    if config.version.is_none() {
        config.version = stated_release(lines);
    }
    if args && !batch_args {
        config.tier_max_num_seqs = chunked.and_then(|t| tier_max_num_seqs(t, server, throughput));
    }
    (config, facts)
}

/// A `vllm serve` (or `python -m vllm.entrypoints…`) command pasted above a
/// log that prints no non-default args of its own (an excerpt of the KV
/// lines under the command that made them): what it sets, where the log
/// says nothing; its `--gpu-memory-utilization` is what vLLM ran where no
/// line states one (0.10.2 `EngineArgs.add_cli_args`, the flags
/// [`super::launch`] reads).
fn pasted_command(lines: &[(usize, String)], c: &mut LoggedConfig, facts: &mut Vec<Fact>) {
    let Some(launch) = super::launch::pasted(lines, super::launch::Launcher::Vllm) else { return };
    let given = launch.config;
    c.model = c.model.take().or_else(|| launch.model.map(|m| m.name().to_owned()));
    c.tensor_parallel = c.tensor_parallel.or(given.tensor_parallel);
    c.pipeline_parallel = c.pipeline_parallel.or(given.pipeline_parallel);
    c.data_parallel = c.data_parallel.or(given.data_parallel);
    c.expert_parallel = c.expert_parallel.or(given.expert_parallel);
    c.max_model_len = c.max_model_len.or(given.max_model_len);
    c.max_num_seqs = c.max_num_seqs.or(given.max_num_seqs);
    c.max_num_batched_tokens = c.max_num_batched_tokens.or(given.max_num_batched_tokens);
    c.kv_cache_memory_bytes = c.kv_cache_memory_bytes.or(given.kv_cache_memory_bytes);
    c.kv_cache_dtype = c.kv_cache_dtype.take().or(given.kv_cache_dtype);
    c.quantization = c.quantization.take().or(given.quantization);
    c.enforce_eager = c.enforce_eager.or(given.enforce_eager);
    let logged = facts.iter().any(|f| matches!(f.figure, Figure::Utilization { .. }));
    if let Some(permille) = given.gpu_memory_utilization_permille.filter(|_| !logged) {
        let flag = |l: &str| ["--gpu-memory-utilization", "--gpu_memory_utilization"].iter().any(|f| l.contains(f));
        let line = lines.iter().find(|(_, l)| flag(l)).map_or(0, |(n, _)| *n);
        facts.push(Fact { line, scope: None, figure: Figure::Utilization { permille } });
    }
}

/// The release a paste's words give vLLM where no line of vLLM's prints
/// one: `vLLM 0.29.1rc1.dev17+gd2d649e67` (eugr/spark-vllm-docker#396 quotes
/// the error under that sentence), `vLLM v0.11.0`, a pin `vllm==0.10.1`.
/// Every such mention must name the same rules
/// ([`Version::for_release`]): a paste comparing two releases names none.
fn stated_release(lines: &[(usize, String)]) -> Option<String> {
    let mut found: Option<String> = None;
    for (_, line) in lines {
        for key in ["vLLM ", "vllm=="] {
            for (i, _) in line.match_indices(key) {
                let rest = line[i + key.len()..].trim_start_matches('v');
                let end =
                    rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '+'))).unwrap_or(rest.len());
                let release = rest[..end].trim_end_matches('.');
                let numbered =
                    release.split('.').take(2).filter(|p| p.starts_with(|c: char| c.is_ascii_digit())).count() == 2;
                let Some(rules) = Version::for_release(release).filter(|_| numbered) else { continue };
                match &found {
                    Some(f) if Version::for_release(f) != Some(rules) => return None,
                    Some(_) => {}
                    None => found = Some(release.to_owned()),
                }
            }
        }
    }
    found
}

/// vLLM's default `max_num_seqs` beside the default `max_num_batched_tokens`
/// it logged: `engine/arg_utils.py::_set_default_args` (0.10.0 – 0.34.0)
/// takes both from one tier by GPU ([`crate::engines::vllm::Tier`], the API
/// server's), doubled by `--performance-mode throughput`. The `LLM` class's
/// tiers are 8192 tokens with 256 sequences and 16384 with 1024: a count of
/// 8192 where no line shows the API server (its process prefix, its version
/// line, `vllm serve`'s `model_tag`) is of two tiers, and a count of none
/// (a CPU's, a TPU's) gives `None`.
pub(super) fn tier_max_num_seqs(batched_tokens: u64, server: bool, throughput: bool) -> Option<u64> {
    use crate::engines::vllm::Tier;
    let scale = if throughput { 2 } else { 1 };
    let tokens = batched_tokens.checked_div(scale).filter(|t| t * scale == batched_tokens)?;
    let tier = match (tokens, server) {
        (8192, false) => return None,
        (16_384, false) => Tier::Largest,
        _ => Tier::ALL.into_iter().find(|t| t.batched_tokens() == tokens)?,
    };
    Some(tier.max_num_seqs() * scale)
}

/// The vLLM releases, of those `vllm_sites.rs` was read from (0.10.0 –
/// 0.34.0), that log every message a log prints at the `[file.py:LINE]` it
/// prints beside it: only messages the table knows count, each against the
/// calls of its file (the log names the file by its basename, or by its
/// path under `vllm/` as the 0.19.0 DEBUG fixtures do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSites {
    /// Bit `i`: `RELEASES[i]`.
    releases: u64,
    /// The lines that narrowed them.
    lines: u32,
}

impl CallSites {
    /// The releases that remain, oldest first.
    pub fn releases(self) -> impl Iterator<Item = &'static str> {
        RELEASES.iter().enumerate().filter(move |(i, _)| self.releases >> i & 1 == 1).map(|(_, r)| *r)
    }

    /// How many of the log's lines narrowed them.
    pub fn lines(self) -> u32 {
        self.lines
    }

    /// The releases for people, in runs: `0.11.0 – 0.11.1, 0.12.0`; `none`
    /// when no release fits.
    pub fn shown(self) -> String {
        let mut runs: Vec<String> = Vec::new();
        let mut start: Option<usize> = None;
        for i in 0..=RELEASES.len() {
            let kept = i < RELEASES.len() && self.releases >> i & 1 == 1;
            match (kept, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    let run = if s + 1 == i {
                        RELEASES[s].to_owned()
                    } else {
                        format!("{} – {}", RELEASES[s], RELEASES[i - 1])
                    };
                    runs.push(run);
                    start = None;
                }
                _ => {}
            }
        }
        if runs.is_empty() { "none".to_owned() } else { runs.join(", ") }
    }

    /// The rule sets of the releases that remain ([`Version::for_release`]),
    /// oldest first: one names the rules the log ran.
    pub fn rule_sets(self) -> Vec<Version> {
        let mut out: Vec<Version> = Vec::new();
        for v in self.releases().filter_map(Version::for_release) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// The releases the table was read from, oldest first.
    pub const READ_FROM: &'static [&'static str] = &RELEASES;
}

/// The releases whose sources log this line's message at the call site it
/// prints; `None` when the line names no call site, or its message or file
/// is not in the table.
fn site_releases(line: &str) -> Option<u64> {
    let (file, at, message) = call_site(line)?;
    // A path the format shortened (`model_executor/.../oracle/mxfp4.py`) by what follows `.../`.
    let file = file.rsplit_once(".../").map_or(file, |(_, tail)| tail);
    let phrase = PHRASES.iter().position(|p| message.contains(p))?;
    // The log's `gpu_worker.py` or `v1/worker/gpu_worker.py` ends the wheel's path.
    let names = |f: &str| f.strip_suffix(file).is_some_and(|head| head.is_empty() || head.ends_with('/'));
    let mut known = false;
    let mut releases = 0;
    for site in SITES.iter().filter(|s| usize::from(s.phrase) == phrase && names(FILES[usize::from(s.file)])) {
        known = true;
        if u32::from(site.line) == at {
            releases |= site.releases;
        }
    }
    known.then_some(releases)
}

/// vLLM's name of an FP8 cache held as a torch dtype (`torch.float8_e4m3fn`).
fn resolved_fp8(dtype: &str) -> Option<&'static str> {
    match dtype.trim_start_matches("torch.") {
        "float8_e4m3fn" | "float8_e4m3fnuz" => Some("fp8_e4m3"),
        "float8_e5m2" | "float8_e5m2fnuz" => Some("fp8_e5m2"),
        _ => None,
    }
}

/// `[file.py:LINE] message`: the file, the line and what follows.
fn call_site(line: &str) -> Option<(&str, u32, &str)> {
    line.match_indices('[').find_map(|(i, _)| {
        let rest = &line[i + 1..];
        let end = rest.find(']')?;
        let (file, at) = rest[..end].rsplit_once(':')?;
        let name_ok = file.ends_with(".py")
            && file.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | '-'));
        let at = at.parse().ok().filter(|_| name_ok)?;
        Some((file, at, &rest[end + 1..]))
    })
}

/// The engine configuration line. What it names is what the engine
/// resolved, so it replaces what the non-default args gave; a field it
/// lacks keeps that, as [`read_args`] does: a pasted line is often cut off
/// (club-3090#652 quotes it to `model='…'` and the cudagraph fields).
fn read_config(line: &str, c: &mut LoggedConfig) {
    c.model = field(line, "model").or(c.model.take());
    c.dtype = field(line, "dtype").map(|d| d.trim_start_matches("torch.").to_owned()).or(c.dtype.take());
    c.quantization = field(line, "quantization").or(c.quantization.take());
    c.kv_cache_dtype = field(line, "kv_cache_dtype").or(c.kv_cache_dtype.take());
    c.tensor_parallel = field(line, "tensor_parallel_size").and_then(|v| v.parse().ok()).or(c.tensor_parallel.take());
    c.pipeline_parallel =
        field(line, "pipeline_parallel_size").and_then(|v| v.parse().ok()).or(c.pipeline_parallel.take());
    c.max_model_len = field(line, "max_seq_len").and_then(|v| v.parse().ok()).or(c.max_model_len.take());
    c.enforce_eager = field(line, "enforce_eager").map(|v| v == "True").or(c.enforce_eager.take());
    c.speculative = speculative_config(line).or(c.speculative.take());
}

/// The engine config's `speculative_config=SpeculativeConfig(method='ngram',
/// model=None, num_spec_tokens=4)` (0.12 – 0.24 `SpeculativeConfig.__repr__`).
fn speculative_config(line: &str) -> Option<crate::engines::vllm::Speculative> {
    let rest = after(line, "speculative_config=SpeculativeConfig(")?;
    let inner = &rest[..rest.find(')').unwrap_or(rest.len())];
    let method = field(inner, "method")?;
    let text = match field(inner, "num_spec_tokens") {
        Some(k) => format!("{method}:{k}"),
        None => method,
    };
    crate::engines::vllm::Speculative::parse(&text).ok()
}

/// The non-default args dict (`{'model': 'x', 'tensor_parallel_size': 2,
/// 'gpu_memory_utilization': 0.5}`, `entrypoints/utils.py`), which a pasted
/// log may wrap: each key is read from whichever line holds it.
fn read_args(line: &str, c: &mut LoggedConfig, n: usize, facts: &mut Vec<Fact>) {
    let arg = |key: &str| {
        let rest = after(line, &format!("'{key}': "))?;
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim().trim_matches(['\'', '"']).to_owned())
    };
    let number = |key: &str| arg(key).and_then(|v| v.parse::<u64>().ok());
    // `vllm serve MODEL` logs `'model_tag'` and (0.18 and later) `'model'`;
    // a drafter's `'model'` inside `'speculative_config': {…}` is not the log's.
    let model = top_level_arg(line, "model").or_else(|| top_level_arg(line, "model_tag"));
    c.model = model.or(c.model.take());
    // A key the line names replaces what an earlier line gave; one it does not name keeps it.
    c.tensor_parallel = number("tensor_parallel_size").or(c.tensor_parallel.take());
    c.pipeline_parallel = number("pipeline_parallel_size").or(c.pipeline_parallel.take());
    c.data_parallel = number("data_parallel_size").or(c.data_parallel.take());
    c.expert_parallel = arg("enable_expert_parallel").map(|v| v == "True").or(c.expert_parallel.take());
    // `'num_redundant_experts': 32`, alone (0.9 – 0.11) or in `'eplb_config'`.
    c.redundant_experts = number("num_redundant_experts").or(c.redundant_experts.take());
    c.all2all_backend =
        arg("all2all_backend").and_then(|v| crate::engines::vllm::All2All::parse(&v)).or(c.all2all_backend.take());
    c.max_model_len = number("max_model_len").or(c.max_model_len.take());
    c.max_num_batched_tokens = number("max_num_batched_tokens").or(c.max_num_batched_tokens.take());
    c.max_num_seqs = number("max_num_seqs").or(c.max_num_seqs.take());
    c.kv_cache_memory_bytes = number("kv_cache_memory_bytes").or(c.kv_cache_memory_bytes.take());
    c.kv_cache_dtype = arg("kv_cache_dtype").or(c.kv_cache_dtype.take());
    c.quantization = arg("quantization").or(c.quantization.take());
    c.enforce_eager = arg("enforce_eager").map(|v| v == "True").or(c.enforce_eager.take());
    c.cpu_offload_gb = arg("cpu_offload_gb").and_then(|v| super::offload_gb(&v)).or(c.cpu_offload_gb.take());
    // `'enable_lora': True`, with `'max_loras'` and `'max_lora_rank'` when
    // not vLLM's defaults (`plan.rs` fills those in).
    c.enable_lora = arg("enable_lora").map(|v| v == "True").or(c.enable_lora.take());
    c.max_loras = number("max_loras").or(c.max_loras.take());
    c.max_lora_rank = number("max_lora_rank").or(c.max_lora_rank.take());
    c.extensible_kv_cache = arg("enable_extensible_kv_cache").map(|v| v == "True").or(c.extensible_kv_cache.take());
    // `'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 4}`.
    let spec = after(line, "'speculative_config': {").map(|r| format!("{{{}", &r[..r.find('}').unwrap_or(r.len())]));
    if let Some(s) = spec.and_then(|s| crate::engines::vllm::Speculative::parse(&s.replace('\'', "\"")).ok()) {
        c.speculative = Some(s);
    }
    // `'limit_mm_per_prompt': {'image': 2, 'video': 0}`.
    let mm = after(line, "'limit_mm_per_prompt': {").map(|r| format!("{{{}}}", &r[..r.find('}').unwrap_or(r.len())]));
    if let Some(l) = mm.and_then(|m| crate::engines::vllm::MmLimits::parse(&m.replace('\'', "")).ok()) {
        c.mm_limits = Some(l);
    }
    if let Some(permille) = arg("gpu_memory_utilization").and_then(|v| fixed(&v, 1000)) {
        facts.push(Fact { line: n, scope: None, figure: Figure::Utilization { permille } });
    }
}

/// A key of the non-default args dict itself, not of a dict nested in it:
/// the line after `non-default args: {` (or a wrapped line's own text) has
/// as many `{` as `}` before it.
fn top_level_arg(line: &str, key: &str) -> Option<String> {
    let dict = after(line, "non-default args:").map_or(line, |r| r.trim_start().strip_prefix('{').unwrap_or(r));
    let quoted = format!("'{key}': ");
    let (at, _) = dict.match_indices(&quoted).find(|(at, _)| {
        let head = &dict[..*at];
        head.matches('{').count() == head.matches('}').count()
    })?;
    let rest = &dict[at + quoted.len()..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    let value = rest[..end].trim().trim_matches(['\'', '"']);
    (!value.is_empty() && value != "None").then(|| value.to_owned())
}

/// The figures of the `Free memory on device` line.
fn breakdown(line: &str) -> Vec<Figure> {
    let mut out = Vec::new();
    if let Some(total) = after(line, "Free memory on device (").and_then(|r| r.split_once('/')).map(|(_, t)| t) {
        out.extend(size(total, true).map(|bytes| Figure::DeviceTotal { bytes }));
    }
    if let Some(permille) = after(line, "Desired GPU memory utilization is (").and_then(|r| fixed(r, 1000)) {
        out.push(Figure::Utilization { permille });
    }
    // `X GiB for weight`, `X GiB for peak activation`, … : the size before each phrase.
    let before = |phrase: &str| {
        let at = line.find(phrase)?;
        let head = line[..at].trim_end().strip_suffix("GiB")?.trim_end();
        // The figure is the digits and dots that end `head`; what comes before
        // may be any character (a no-break space in logs copied from a page).
        let figure = &head[head.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.').len()..];
        size(&format!("{figure} GiB"), true)
    };
    let terms: [(&str, Make); 4] = [
        (" for weight,", |bytes| Figure::Weights { bytes }),
        (" for peak activation", |bytes| Figure::ActivationPeak { bytes }),
        (" for non-torch memory", |bytes| Figure::NonTorch { bytes }),
        (" for CUDAGraph memory", |bytes| Figure::CudaGraphs { bytes }),
    ];
    for (phrase, make) in terms {
        out.extend(before(phrase).map(make));
    }
    if let Some(bytes) = after(line, "--kv-cache-memory=").and_then(count) {
        out.push(Figure::SuggestedKv { bytes });
    }
    out
}

/// Builds a figure from its bytes.
type Make = fn(u64) -> Figure;

fn figures(segment: &str) -> Vec<Figure> {
    if let Some(f) = figure(segment) {
        return vec![f];
    }
    // The profile's own terms; `total_gpu_memory` and `gpu_memory_utilization`
    // share a segment in the one-line forms. 0.6.4.post1 `worker.py::determine_num_available_blocks`
    // logs them all as `key=value` on one line: `Memory profiling results:
    // total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB
    // peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB
    // non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90`,
    // `kv_cache_size` being `total × utilization − peak` (non-torch in the
    // peak), the memory left to the KV cache (0.6.4 spells one `Gib`).
    let mut out = Vec::new();
    let terms: [(&str, Make); 4] = [
        ("total_gpu_memory", |bytes| Figure::DeviceTotal { bytes }),
        ("non_torch_memory", |bytes| Figure::NonTorch { bytes }),
        ("PyTorch activation peak memory", |bytes| Figure::ActivationPeak { bytes }),
        ("kv_cache_size=", |bytes| Figure::AvailableKv { bytes, negative: false }),
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

/// The value after a profile-table key: `  14.96GiB`, `takes 0.19GiB`,
/// `(0.90)`, `=0.35GiB`.
fn value(rest: &str) -> &str {
    rest.trim_start().trim_start_matches("takes").trim_start_matches(['(', ' ', '='])
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
    // `Estimated CUDA graph memory: -0.81 GiB total` (0.18+
    // `v1/worker/gpu_model_runner.py::profile_cudagraph_memory` returns
    // `int(total_estimate)`, a difference of free memory that may be
    // negative; 0.21+ `v1/worker/gpu_worker.py::determine_available_memory`
    // takes it from the KV budget as it is).
    if let Some(rest) = after(line, "Estimated CUDA graph memory:") {
        let rest = rest.trim_start();
        let (negative, rest) = match rest.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        if let Some(bytes) = size(rest, true).and_then(|b| i64::try_from(b).ok()) {
            return Some(Figure::CudaGraphEstimate { bytes: if negative { -bytes } else { bytes } });
        }
    }
    if let Some(rest) = after(line, "Graph capturing finished")
        && let Some(bytes) = after(rest, "took").and_then(|r| size(r, true))
    {
        return Some(Figure::CudaGraphs { bytes });
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
    // 0.34's extensible KV cache commits its measured size
    // (`extensible_kv_cache.py::extend_kv_cache`): `Extended KV cache to 7654 blocks (59.80 GiB).`
    // V0's `# GPU blocks: 1478, # CPU blocks: 2048` (0.6.4.post1
    // `executor/gpu_executor.py`) is read without its `# ` too, which a
    // log quoted in GitHub markdown loses to a heading.
    let blocks_line = after(line, "GPU blocks:").or_else(|| after(line, "Extended KV cache to"));
    if let Some(blocks) = blocks_line.and_then(|r| count(r.trim_start())) {
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
    // `kv_cache_utils.py::_auto_fit_max_model_len` (0.21+).
    if let Some(rest) = after(line, "Auto-fit max_model_len: reduced from ") {
        let tokens = after(rest, " to ").and_then(count)?;
        return Some(Figure::AutoMaxModelLen { tokens });
    }
    if let Some(tokens) = after(line, "Auto-fit max_model_len: full model context length ").and_then(count) {
        return Some(Figure::AutoMaxModelLen { tokens });
    }
    None
}

/// `(Worker_TP3 pid=…)`, `(VllmWorker TP1 pid=…)` (0.9 – 0.10),
/// `(VllmWorker rank=0 pid=…)` (0.8) or `(EngineCore_DP0 pid=…)`: the
/// process the line came from, when it is a rank of its own.
fn scope(line: &str) -> Option<String> {
    let open = line.find('(')?;
    let mut words = line[open + 1..].split([' ', ')']);
    let name = words.next()?;
    if name == "VllmWorker" {
        let rank = words.next().filter(|w| w.starts_with("TP") || w.starts_with("rank="))?;
        return Some(format!("{name} {rank}"));
    }
    name.starts_with("Worker").then(|| name.to_owned())
}

#[cfg(test)]
mod tests {

    /// The tier a logged default batch comes from, the API server's or the
    /// `LLM` class's, and doubled by `--performance-mode throughput`
    /// (0.34.0 `arg_utils.py::_set_default_args`).
    #[test]
    fn a_logged_default_batch_names_its_tiers_sequences() {
        assert_eq!(tier_max_num_seqs(2048, true, false), Some(256));
        assert_eq!(tier_max_num_seqs(8192, true, false), Some(1024));
        assert_eq!(tier_max_num_seqs(8192, false, false), None);
        assert_eq!(tier_max_num_seqs(16_384, false, false), Some(1024));
        assert_eq!(tier_max_num_seqs(16_384, true, true), Some(2048));
        assert_eq!(tier_max_num_seqs(4096, true, true), Some(512));
        assert_eq!(tier_max_num_seqs(4097, true, true), None);
        assert_eq!(tier_max_num_seqs(4096, true, false), None);
    }

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
        // 0.34's extensible KV cache: the committed size after warmup.
        assert_eq!(
            figure(
                "(EngineCore pid=812) INFO extensible_kv_cache.py:536] Extended KV cache to 7654 blocks (59.80 GiB)."
            ),
            Some(Figure::KvBlocks { blocks: 7654 })
        );
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
        assert_eq!(scope("(VllmWorker TP1 pid=3975) INFO"), Some("VllmWorker TP1".into()));
        assert_eq!(scope("(VllmWorker rank=2 pid=107) INFO"), Some("VllmWorker rank=2".into()));
    }

    #[test]
    fn call_sites_are_read_by_file_line_and_message() {
        let kv =
            "(EngineCore_DP0 pid=6880) INFO 10-31 15:07:49 [gpu_worker.py:298] Available KV cache memory: 1.71 GiB";
        assert_eq!(call_site(kv), Some(("gpu_worker.py", 298, " Available KV cache memory: 1.71 GiB")));
        // 0.10.2 – 0.11.0 log it there, by basename or by path.
        let at_298 = site_releases(kv).expect("a known message");
        assert_eq!(at_298, site_releases(&kv.replace("[gpu_worker", "[v1/worker/gpu_worker")).expect("known"));
        let shown = CallSites { releases: at_298, lines: 1 }.shown();
        assert_eq!(shown, "0.10.2 – 0.11.0");
        // Another line of a known message fits no release; an unknown
        // message, a file that does not log it or no call site tells nothing.
        assert_eq!(site_releases(&kv.replace(":298]", ":297]")), Some(0));
        assert_eq!(site_releases(&kv.replace("Available KV", "Unknown KV")), None);
        assert_eq!(site_releases(&kv.replace("gpu_worker.py", "cpu_worker.py")), None);
        assert_eq!(site_releases("[rank0]: Available KV cache memory: 1.71 GiB [see above]"), None);
        assert_eq!(CallSites { releases: 0, lines: 2 }.shown(), "none");
        let mxfp4 = "DEBUG 04-22 19:59:33 [model_executor/.../quantization/mxfp4.py:98] Using Marlin backend";
        assert!(site_releases(mxfp4).is_some_and(|r| r != 0));
        assert_eq!(site_releases(mxfp4), site_releases(&mxfp4.replace("model_executor/.../", "")));
    }
}

//! llama.cpp's start-up lines, old and new names: the model buffers
//! (`llm_load_tensors: CUDA0 buffer size`, now `load_tensors: CUDA0 model
//! buffer size`, `llama-model.cpp`), the KV buffers and summary
//! (`llama_kv_cache_init`, `llama_kv_cache_unified`, `llama_kv_cache`:
//! `llama-kv-cache.cpp`), the output and compute buffers
//! (`llama_new_context_with_model`, `llama_init_from_model`,
//! `llama_context`: `llama-context.cpp`) and the context parameters they
//! print, and the memory breakdown table and `--fit` projection
//! (`llama_memory_breakdown_print`, `llama_params_fit_impl`). Sizes are MiB.
//! Ollama's logs carry these lines (its runner is
//! llama.cpp) or, from its own engine, `model weights` / `kv cache` /
//! `compute graph` per device, and the launch it asked for.

use super::{Buffer, Fact, Figure, LoggedConfig, after, count, size};
use crate::engines::ollama::own::Version;

pub(super) fn read(lines: &[(usize, String)]) -> (LoggedConfig, Vec<Fact>) {
    let mut config = LoggedConfig::default();
    let mut facts = Vec::new();
    // The lines of Ollama's own buffer figures.
    let mut ollama: Vec<usize> = Vec::new();
    // `offloading N repeating layers to GPU` (llama.cpp's `load_tensors`,
    // Ollama's Go backend).
    let mut repeating: Option<u64> = None;
    // The devices the `--fit` lines name (in full) and the memory
    // breakdown does (without the vendor's words), by their index.
    let mut fit_names: Vec<(String, String)> = Vec::new();
    let mut table_names: Vec<(String, String)> = Vec::new();
    // The model's devices (`using device …`): backend, description, free.
    let mut using: Vec<(String, String, Option<u64>)> = Vec::new();
    // Ollama's llama.cpp runner (`starting go runner`, runner/llamarunner),
    // and what its scheduler printed beside the estimate: `"model
    // layers"=29`, `GPULayers:29[…]`, the GPUs' `available="10.3 GiB"`.
    let (mut llama_runner, mut of, mut placed, mut available) = (false, None, None, 0u64);
    // Every device figure Ollama printed, in order.
    let mut estimated: Vec<Fact> = Vec::new();
    // A line of Ollama's own (Go's slog: `level=INFO source=sched.go:715 msg=…`).
    let mut ollama_log = false;
    // The context printed its `freq_scale`: whether its next line names
    // `n_outputs_max` ([`NO_OUTPUTS_MAX_LAST_BUILD`]).
    let mut after_freq_scale = false;
    for (n, line) in lines {
        if let Some(rest) = after(line, "llama_context: ").filter(|_| after_freq_scale) {
            after_freq_scale = false;
            if !(rest.starts_with("n_rs_seq") || rest.starts_with("n_outputs_max")) {
                let last = NO_OUTPUTS_MAX_LAST_BUILD;
                config.newest_build = Some(config.newest_build.map_or(last, |b| b.min(last)));
            }
        }
        after_freq_scale |= after(line, "llama_context: freq_scale").is_some();
        ollama_log |= line.contains(" source=") && line.contains(" msg=");
        if line.contains("msg=\"starting go runner\"") {
            llama_runner = true;
        }
        of = after(line, "\"model layers\"=").and_then(count).or(of);
        placed = after(line, "GPULayers:").and_then(count).or(placed);
        if line.contains("msg=\"gpu memory\"") {
            available += after(line, " available=\"").and_then(|r| size(r, false)).unwrap_or(0);
        }
        // The context's own figures (`…: n_ctx = …`), printed under the
        // function's name while it made the context: today's builds still
        // name `llama_init_from_model` in their failures (`failed to
        // initialize the context`), which date nothing.
        for (name, last) in [
            ("llama_kv_cache_unified", UNIFIED_NAME_LAST_BUILD),
            ("llama_init_from_model: n_", INIT_FROM_MODEL_LAST_BUILD),
            ("llama_new_context_with_model: n_", NEW_CONTEXT_LAST_BUILD),
        ] {
            if line.contains(name) {
                config.newest_build = Some(config.newest_build.map_or(last, |b| b.min(last)));
            }
        }
        // `llama_kv_cache_dsa` prints the latent's cache, then the indexer's
        // keys as a second `llama_kv_cache` with its own KV buffer lines and
        // summary: both are read, and summed by device and in all.
        if line.contains("llama_kv_cache_dsa: creating indexer KV cache") {
            config.dsa_indexer_line.get_or_insert(*n);
            continue;
        }
        // The memory breakdown: each table printed (one per `--fit` trial
        // with `-v`, the last at exit) replaces the one before.
        if let Some(rest) = after(line, "memory_breakdown_print:") {
            if rest.contains("memory breakdown [MiB]") {
                facts.retain(|f: &Fact| !matches!(f.figure, Figure::MemoryBreakdown { .. }));
            } else if let Some((device, name, figure)) = breakdown_row(rest) {
                if let Some(name) = name.filter(|_| gpu_index(&device).is_some()) {
                    table_names.push((device.clone(), name));
                }
                facts.push(Fact { line: *n, scope: Some(device), figure });
            }
            continue;
        }
        if let Some(rest) = after(line, "params_fit_impl:") {
            if let Some((device, figure)) = fit_projection(rest) {
                if let Some((device, name)) = &device
                    && gpu_index(device).is_some()
                {
                    fit_names.push((device.clone(), name.clone()));
                }
                let scope = device.map(|(d, _)| d);
                facts.retain(|f: &Fact| !(matches!(f.figure, Figure::FitProjection { .. }) && f.scope == scope));
                facts.push(Fact { line: *n, scope, figure });
            }
            continue;
        }
        if let Some(fact) = buffer(line) {
            // Compute buffers printed by the context's constructor, not by
            // `sched_reserve` (#18547, before #18867 of 2026-01-15): a build
            // before the embeddings input (#18898, opened 2026-01-17).
            if line.contains("llama_context:") && matches!(fact.figure, Figure::Buffer { buffer: Buffer::Compute, .. })
            {
                let last = crate::engines::llamacpp::EMBD_INPUT_BUILD - 1;
                config.newest_build = Some(config.newest_build.map_or(last, |b| b.min(last)));
            }
            // llama.cpp's own figure replaces Ollama's one-decimal one.
            facts.retain(|f: &Fact| {
                !(ollama.contains(&f.line) && f.scope == fact.scope && same_buffer(&f.figure, &fact.figure))
            });
            facts.push(Fact { line: *n, ..fact });
            continue;
        }
        // Ollama logs its memory at each step of a load (`fit`, `alloc`,
        // `commit`): the last figure of a device and buffer is the one kept.
        // llama.cpp's own line for the same buffer (to the hundredth of a
        // MiB) wins over Ollama's (one decimal).
        if let Some(fact) = ollama_buffer(line) {
            estimated.push(Fact { line: *n, ..fact.clone() });
            let same = |f: &Fact| f.scope == fact.scope && same_buffer(&f.figure, &fact.figure);
            if !facts.iter().any(|f| same(f) && !ollama.contains(&f.line)) {
                facts.retain(|f| !same(f));
                ollama.push(*n);
                facts.push(Fact { line: *n, ..fact });
            }
            continue;
        }
        if let Some(figure) = ollama_estimate(line) {
            facts.push(Fact { line: *n, scope: None, figure });
            continue;
        }
        ollama_launch(line, &mut config);
        if let Some(figure) = state_summary(line) {
            // Its `N seqs` is the context's `n_seq_max`.
            let seqs = after(line, " layers,").and_then(|r| count(r.trim_start()));
            config.n_seq_max = config.n_seq_max.or(seqs.filter(|&n| n > 0));
            facts.push(Fact { line: *n, scope: None, figure });
            continue;
        }
        if let Some(figure) = summary(line) {
            summary_types(line, &mut config);
            facts.push(Fact { line: *n, scope: None, figure });
            continue;
        }
        // `--swa-full`, or Ollama's runner, which asks for it without a flag:
        // llama.cpp src/llama-kv-cache-iswa.cpp (b8211; under
        // `llama_kv_cache_unified_iswa:` before b6233) warns `using
        // full-size SWA cache` exactly when `swa_full` sizes the SWA cache
        // as the base one.
        if line.contains("using full-size SWA cache") {
            config.swa_full = Some(true);
            continue;
        }
        // llama-server's `-np auto` (tools/server/server.cpp, b6700 on):
        // `n_parallel is set to auto, using n_parallel = 4 and kv_unified = true`.
        if let Some(rest) = after(line, "n_parallel is set to auto, using n_parallel = ") {
            config.parallel = count(rest).filter(|&n| n > 0).or(config.parallel);
            if line.contains("kv_unified = true") {
                config.kv_unified = Some(true);
            }
            continue;
        }
        if let Some(n) = after(line, "offloading ").filter(|r| r.contains(" repeating layers")).and_then(count) {
            repeating = Some(n);
            continue;
        }
        if let Some(rest) = after(line, "offloaded ") {
            let (layers, of) = rest.split_once('/').unwrap_or_default();
            if let (Some(layers), Some(of)) = (count(layers), count(of)) {
                facts.push(Fact { line: *n, scope: None, figure: Figure::Offloaded { layers, of } });
            }
            continue;
        }
        // ik_llama.cpp's own switch after its context line printed the
        // asked `mla_attn`: `llama_kv_cache_init: changing MLA from 0 to 1`
        // when no layer has `wkv_b` (a GGUF converted by mainline for its
        // MLA, src/llama.cpp@47fa8380c `llama_kv_cache_init`, build 3679,
        // and @8337e4c:1310-1330), which then caches the latent alone.
        if let Some(rest) = after(line, "changing MLA from ") {
            if let Some(to) = after(rest, " to ").and_then(count) {
                config.ik_mla = Some(to);
            }
            continue;
        }
        // ik_llama.cpp's `-rtr` after loading (src/llama.cpp@18b0375:9534).
        if line.contains("============ Repacked ") {
            config.ik_run_time_repack = Some(true);
            continue;
        }
        // Build 0 is none: llama.cpp's cmake/build-info.cmake starts from
        // `BUILD_NUMBER 0` / `BUILD_COMMIT "unknown"` and keeps them where git
        // is not found (a source tarball, a Docker build without `.git`), so
        // `build: 0 (unknown)` may be any release; `git rev-list --count`
        // of a checkout is 1 or more (1 for a shallow clone: Ollama's, below).
        if let Some(b) = build(line) {
            config.build = (b > 0).then_some(b);
            config.unknown_build = b == 0;
            continue;
        }
        if let Some((i, name)) = device(line) {
            // A draft model (`-md`) or a second load names its devices again.
            if let Some((backend, _)) = after(line, "using device ").and_then(|r| r.split_once(" ("))
                && !using.iter().any(|(b, ..)| b == backend)
            {
                using.push((
                    backend.to_owned(),
                    name.to_owned(),
                    free_mib(line).and_then(|f| f.checked_mul(crate::units::MIB)),
                ));
            }
            if i == config.devices.len() {
                config.devices.push(name.to_owned());
            }
            if let Some(free) = free_mib(line).filter(|_| i < config.devices.len()) {
                config.devices_free.resize(config.devices.len(), None);
                config.devices_free[i] = free.checked_mul(crate::units::MIB);
            }
            continue;
        }
        context(line, &mut config);
    }
    // Ollama builds llama.cpp from a shallow clone (`GIT_SHALLOW TRUE`,
    // llama/server/CMakeLists.txt at v0.33.0-rc2, LLAMA_CPP_VERSION b10488),
    // whose `git rev-list --count` is 1: its llama-server prints `build 1
    // (74ade5274)` and its 0.3 runner `build=1 commit="1e6f655"` whatever
    // the release, so an Ollama log's build 1 is an unknown build.
    if ollama_log && config.build == Some(1) {
        config.build = None;
        config.unknown_build = true;
    }
    // From v0.12.11 (f560bd077, "llm: Use Ollama engine memory layouts for
    // both old and new engines") to v0.29, Ollama's llama.cpp runner logs
    // `model weights` / `kv cache` / `compute graph` through ml/device.go
    // too, but they are its estimate (llm/server.go `llamaServer.Load`,
    // v0.20.2: "Synthesize memory allocation information based on our
    // estimates", `GraphSize` in fs/ggml/ggml.go), not what llama.cpp
    // allocated: those llama.cpp's own lines did not replace are one
    // `OllamaEstimate`, not buffers.
    if llama_runner && config.ollama_engine != Some(true) {
        facts.retain(|f| !ollama.contains(&f.line));
        let (mut weights, mut kv, mut graph) = (0u64, 0u64, 0u64);
        // The last figure of each device and buffer (it logs each step).
        for (i, f) in estimated.iter().enumerate() {
            let later = |g: &Fact| g.scope == f.scope && same_buffer(&g.figure, &f.figure);
            let (Figure::Buffer { buffer, bytes }, false) = (f.figure, estimated[i + 1..].iter().any(later)) else {
                continue;
            };
            match buffer {
                Buffer::Model => weights += bytes,
                Buffer::Kv | Buffer::State => kv += bytes,
                Buffer::Compute | Buffer::Output => graph += bytes,
            }
        }
        if let (Some(line), Some(of)) = (estimated.first().map(|f| f.line), of) {
            let required = weights.saturating_add(kv).saturating_add(graph);
            let figure = Figure::OllamaEstimate {
                layers: placed.unwrap_or(of),
                of,
                available_bytes: available,
                required_bytes: required,
                weights_bytes: weights,
                kv_bytes: kv,
                graph_bytes: graph,
            };
            facts.push(Fact { line, scope: None, figure });
        }
    }
    // `offloading N repeating layers` with `offloaded N/M` (N < M): the
    // output layer stayed on the CPU while repeating layers went to a GPU,
    // which builds from b7467 never do (`i_gpu_start = max(n_layer + 1 -
    // ngl, 0)` offloads the output first, `llamacpp::OUTPUT_FIRST_BUILD`),
    // nor does `-ngl` under their rules say where the layers went. Ollama's
    // Go engine places layers as the older builds do (`GPULayers`, its
    // `offloading output layer to CPU`).
    let offloaded = facts.iter().find_map(|f| match f.figure {
        Figure::Offloaded { layers, of } => Some((layers, of)),
        _ => None,
    });
    if let (Some(n), Some((layers, of))) = (repeating, offloaded)
        && n >= 1
        && n == layers
        && layers < of
    {
        let last = crate::engines::llamacpp::OUTPUT_FIRST_BUILD - 1;
        config.newest_build = Some(config.newest_build.map_or(last, |b| b.min(last)));
    }
    // A model on other devices than ggml's first ones (`-dev ROCm1`, or an
    // iGPU left out, src/llama.cpp `llama_prepare_model_devices`): its
    // devices, named as ggml listed them where it did, in the model's order.
    if using.iter().enumerate().any(|(i, (b, ..))| gpu_index(b).is_some_and(|g| g != i)) {
        let listed = std::mem::take(&mut config.devices);
        config.devices =
            using.iter().map(|(b, name, _)| gpu_index(b).and_then(|g| listed.get(g)).unwrap_or(name).clone()).collect();
        config.devices_free = using.iter().map(|u| u.2).collect();
    }
    config.model_devices = using.into_iter().map(|u| u.0).collect();
    // A log that lists no devices (`ggml_cuda_init`'s lines come before
    // what was pasted) still names them in `--fit`'s lines or the breakdown.
    if config.devices.is_empty() {
        for names in [fit_names, table_names] {
            let mut names: Vec<(usize, String)> =
                names.into_iter().filter_map(|(d, name)| Some((slot(&config, &d)?, name))).collect();
            crate::order::sort_by(&mut names, |a, b| a.0.cmp(&b.0));
            names.dedup_by(|later, first| later.0 == first.0);
            if !names.is_empty() && names.iter().enumerate().all(|(i, (g, _))| *g == i) {
                config.devices = names.into_iter().map(|(_, name)| name).collect();
                break;
            }
        }
    }
    if let Some(launch) = super::launch::pasted_llamacpp(lines) {
        take_command(&mut config, launch.config);
    }
    (config, facts)
}

/// A pasted command line's flags where the log prints no value of its own:
/// what llama.cpp printed (`n_ctx`, `n_ubatch`, `type_k`, `flash_attn`, ik's
/// `mla_attn`) is what ran, whatever the tool's defaults made of the flags
/// (llama-perplexity's `-c` is one chunk of a larger context).
fn take_command(c: &mut LoggedConfig, given: LoggedConfig) {
    fn or<T>(slot: &mut Option<T>, given: Option<T>) {
        if slot.is_none() {
            *slot = given;
        }
    }
    or(&mut c.n_ctx, given.n_ctx);
    or(&mut c.n_batch, given.n_batch);
    or(&mut c.n_ubatch, given.n_ubatch);
    or(&mut c.flash_attn, given.flash_attn);
    or(&mut c.cache_type_k, given.cache_type_k);
    or(&mut c.cache_type_v, given.cache_type_v);
    or(&mut c.parallel, given.parallel);
    or(&mut c.n_gpu_layers, given.n_gpu_layers);
    or(&mut c.tensor_split, given.tensor_split);
    or(&mut c.n_cpu_moe, given.n_cpu_moe);
    or(&mut c.override_tensor, given.override_tensor);
    or(&mut c.no_kv_offload, given.no_kv_offload);
    or(&mut c.kv_unified, given.kv_unified);
    or(&mut c.swa_full, given.swa_full);
    or(&mut c.split_mode, given.split_mode);
    or(&mut c.main_gpu, given.main_gpu);
    or(&mut c.fit, given.fit);
    or(&mut c.fit_target_mib, given.fit_target_mib);
    or(&mut c.mmproj, given.mmproj);
    or(&mut c.no_mmproj_offload, given.no_mmproj_offload);
    or(&mut c.ik_mla, given.ik_mla);
    or(&mut c.ik_attn_max_batch, given.ik_attn_max_batch);
    or(&mut c.ik_fused_moe, given.ik_fused_moe);
    or(&mut c.ik_run_time_repack, given.ik_run_time_repack);
}

/// A device ggml lists at start-up: `  Device 1: NVIDIA GeForce RTX 3090,
/// compute capability 8.6, VMM: yes` (ggml-cuda.cu `ggml_cuda_init`; ROCm's
/// line is the same); Vulkan's `ggml_vulkan: 0 = AMD Radeon RX 580 Series
/// (RADV POLARIS10) (radv) | uma: 0 | …` (ggml-vulkan.cpp
/// `ggml_vk_print_gpu_info`: the name, then the driver in parentheses); or
/// the device a model is loaded on, `using device Vulkan1 (Radeon RX 560
/// Series) (unknown id) - 3169 MiB free` (src/llama.cpp
/// `llama_model_load_from_file_impl`: the backend's name and, in
/// parentheses, its description). Its index and name.
fn device(line: &str) -> Option<(usize, &str)> {
    if let Some(rest) = after(line, "ggml_vulkan: ") {
        let (index, rest) = rest.split_once(" = ")?;
        let name = rest.split(" | ").next()?;
        let name = name.find(" (").map_or(name, |cut| &name[..cut]);
        return Some((index.trim().parse().ok()?, name.trim()));
    }
    if let Some(rest) = after(line, "using device ") {
        let (backend, rest) = rest.split_once(" (")?;
        // ggml-metal before its devices were numbered (`MTL0`) named its one
        // device `Metal`: `using device Metal (Apple M2) - 10922 MiB free`.
        let metal = (backend == "Metal").then_some(crate::engines::llamacpp::Buffer::Gpu(0));
        let index = metal.or(crate::engines::llamacpp::Buffer::parse(backend).ok()).and_then(|b| match b {
            crate::engines::llamacpp::Buffer::Gpu(i) => Some(i),
            crate::engines::llamacpp::Buffer::Cpu => None,
        })?;
        // The description up to its own closing parenthesis (it may hold one:
        // `AMD Radeon Graphics (RADV GFX1151)`).
        let mut depth = 1usize;
        let end = rest.char_indices().find_map(|(i, c)| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i)
        })?;
        return Some((index, rest[..end].trim()));
    }
    let rest = after(line, "Device ")?;
    let (index, rest) = rest.split_once(": ")?;
    // ROCm's names the arch where CUDA's names the capability (ggml-cuda.cu
    // `ggml_cuda_init`: `%s, %s (0x%x), VMM: %s, Wave Size: %d`).
    let (name, _) = rest.split_once(", compute capability").or_else(|| rest.split_once(", gfx"))?;
    Some((index.trim().parse().ok()?, name.trim()))
}

/// What a `using device … - 16383 MiB free` line says was free, in MiB.
fn free_mib(line: &str) -> Option<u64> {
    let rest = line.trim_end().strip_suffix(" MiB free")?;
    let (_, n) = rest.rsplit_once(" - ")?;
    n.trim().parse().ok()
}

/// The last mainline build whose KV cache logs as `llama_kv_cache_unified:`
/// (and `llama_kv_cache_unified_iswa:`): llama.cpp 715a6db0 (b6233, "kv-cache :
/// drop the \"unified\" prefix", #15467) renamed the class, whose
/// constructor prints its lines under `__func__`.
pub const UNIFIED_NAME_LAST_BUILD: u64 = 6232;

/// The last mainline build whose context does not print `n_outputs_max`:
/// ggml-org/llama.cpp#23861 gave the context the limit
/// (`compute::OUTPUTS_MAX_BUILD`, its first known build) and prints it in the
/// context's parameter block, after `freq_scale` and `n_rs_seq`
/// (src/llama-context.cpp `llama_context::llama_context`, llama-cpp-python
/// 0.3.36's copy, 0c1e57098). A log whose `freq_scale` line is followed by
/// another context line that is neither is older: its graphs reserve an
/// output row per token (an app's own context, llama-cli, or a llama-server
/// of its time), whatever `n_seq_max` says.
pub const NO_OUTPUTS_MAX_LAST_BUILD: u64 = crate::engines::llamacpp::OUTPUTS_MAX_BUILD - 1;

/// The last mainline build whose context logs as `llama_init_from_model:`:
/// llama.cpp e0dbec0b (b4881, "llama : refactor llama_context,
/// llama_kv_cache, llm_build_context", #12181) moved the constructor to
/// src/llama-context.cpp, printing as `llama_context:`.
pub const INIT_FROM_MODEL_LAST_BUILD: u64 = 4880;

/// The last mainline build whose context logs as
/// `llama_new_context_with_model:`: llama.cpp afa8a9ec (b4463, "llama : add
/// `llama_vocab`, functions -> methods, naming", #11110) made
/// `llama_init_from_model` the function that prints them.
pub const NEW_CONTEXT_LAST_BUILD: u64 = 4462;

/// The build a llama.cpp log names: `build: 5192 (e59a5f1e) with cc …`
/// (common/common.cpp `common_init`), `main: build = 1 (18b0375)` (older
/// and ik_llama.cpp), `build info | … build=3673 commit=…` (the old server).
/// Newer builds print `llama_build_info()`, `b<N>-<commit>`
/// (common/build-info.cpp.in): the server's `build_info: b8999-b97ebdc98`
/// and llama-cli's banner `build      : b11151-bd4f514db`
/// (tools/cli/cli-context.cpp; llama-cpp-python 0.3.36's vendored copy),
/// and `common_params_print_info: build 10505 (ee4c505a4) with GNU …`
/// (common/common.cpp, the same copy: `build %d (%s) with %s for %s`).
fn build(line: &str) -> Option<u64> {
    if let Some(rest) = after(line, "common_params_print_info: build ") {
        let digits: &str = rest.split(|c: char| !c.is_ascii_digit()).next()?;
        return (!digits.is_empty() && rest[digits.len()..].starts_with(" (")).then(|| digits.parse().ok()).flatten();
    }
    if let Some(rest) = after(line, "build_info: b").or_else(|| {
        let rest = line.trim_start().strip_prefix("build")?;
        rest.trim_start().strip_prefix(": b")
    }) {
        let digits: &str = rest.split(|c: char| !c.is_ascii_digit()).next()?;
        return (!digits.is_empty() && rest[digits.len()..].starts_with('-')).then(|| digits.parse().ok()).flatten();
    }
    let rest = after(line, "build: ").or_else(|| after(line, "build = ")).or_else(|| after(line, " build="))?;
    let digits: &str = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    let tail = rest[digits.len()..].trim_start();
    // A build number is followed by its commit.
    (tail.starts_with('(') || tail.starts_with("commit=")).then(|| digits.parse().ok()).flatten()
}

/// `<device> model|KV|RS|compute|output buffer size = X MiB`, and the old
/// `llm_load_tensors: <device> buffer size = X MiB` (model weights).
fn buffer(line: &str) -> Option<Fact> {
    let (head, rest) = line.split_once(" buffer size =")?;
    // The `--mmproj` vision encoder's own graph, not the model's: clip.cpp
    // prints it under `reserve_compute_meta` (tools/mtmd/clip.cpp,
    // llama-cpp-python 0.3.36's copy), `alloc_compute_meta` in builds of
    // early 2026 (b9140).
    if head.contains("_compute_meta:") {
        return None;
    }
    let bytes = size(rest, false)?;
    let mut words = head.rsplit(' ').filter(|w| !w.is_empty());
    let last = words.next()?;
    let (kind, device) = match last {
        "model" => (Buffer::Model, words.next()?),
        "KV" => (Buffer::Kv, words.next()?),
        // DeepSeek-V4's compressor state, part of its cache
        // (`llama_dsv4_comp_state:      CUDA0 DSV4 csa state buffer size`,
        // src/llama-kv-cache-dsv4.cpp at 0c1e57098; the plan counts it
        // in the KV cache, `engines::llamacpp` `Cells::bytes`).
        "state" if head.contains(" DSV4 ") => {
            let _cache = words.next()?;
            let _dsv4 = words.next()?;
            (Buffer::Kv, words.next()?)
        }
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

/// The plan GPU a device of the log is: its place among the model's
/// devices where the log lists them, else its number.
pub(super) fn slot(c: &LoggedConfig, device: &str) -> Option<usize> {
    c.model_gpu(device).or_else(|| gpu_index(device))
}

/// The GPU a backend's device name is (`CUDA1`, `ROCm0`, `Vulkan2`).
fn gpu_index(device: &str) -> Option<usize> {
    match crate::engines::llamacpp::Buffer::parse(device).ok()? {
        crate::engines::llamacpp::Buffer::Gpu(i) => Some(i),
        crate::engines::llamacpp::Buffer::Cpu => None,
    }
}

/// One row of the memory breakdown after its function's name
/// (src/llama-context.cpp `llama_memory_breakdown_print`, a0ed91a; common/
/// `common_memory_breakdown_print` prints the same columns, its
/// `unaccounted` signed): a device's `|   - CUDA0 (RTX 3090)   | 24117 =
/// 23773 + (20903 = 12096 + 7504 + 1302) + 17592186023856 |` (total is
/// free, plus self = model + context + compute, plus unaccounted), the
/// host's `|   - Host | 72498 = 72257 + 0 + 240 |` and any other buffer
/// type's alike (`CPU_REPACK`). The row's device, its description where it
/// gives one (the backend's, less `NVIDIA `, `GeForce `, `AMD `, …) and its
/// figures.
fn breakdown_row(rest: &str) -> Option<(String, Option<String>, Figure)> {
    let mut cells = rest.split('|').map(str::trim);
    cells.next()?;
    let label = cells.next()?.strip_prefix("- ")?.trim();
    let values = cells.next()?;
    let (device, name) = match label.split_once(" (") {
        Some((device, name)) => (device.trim(), name.strip_suffix(')').map(|n| n.trim().to_owned())),
        None => (label, None),
    };
    let numbers: Vec<&str> = values.split(['=', '+', '(', ')']).map(str::trim).filter(|v| !v.is_empty()).collect();
    let mib = |v: &str| v.parse::<u64>().ok().and_then(|n| n.checked_mul(crate::units::MIB));
    let figure = match numbers[..] {
        // `unaccounted` is what the backend's figures leave over: not read
        // (llama.cpp's own wraps below zero, `size_t`).
        [total, free, _self, model, context, compute, _unaccounted] => Figure::MemoryBreakdown {
            total_bytes: Some(mib(total)?),
            free_bytes: Some(mib(free)?),
            model_bytes: mib(model)?,
            context_bytes: mib(context)?,
            compute_bytes: mib(compute)?,
        },
        [_self, model, context, compute] => Figure::MemoryBreakdown {
            total_bytes: None,
            free_bytes: None,
            model_bytes: mib(model)?,
            context_bytes: mib(context)?,
            compute_bytes: mib(compute)?,
        },
        _ => return None,
    };
    (!device.is_empty() && !device.contains(' ')).then(|| (device.to_owned(), name, figure))
}

/// `--fit`'s projection with the launch's own parameters, after its
/// function's name (src/llama.cpp `llama_params_fit_impl`, a0ed91a, step 1;
/// common/'s `common_params_fit_impl` alike): a device's `  - CUDA0 (NVIDIA
/// GeForce RTX 3090):  24117 total,  20903 used,   2870 free vs. target of
/// 1024` (the device's name padded before the colon), or the sum of one
/// device's or all, `projected to use 19187 MiB of device memory vs. 24077
/// MiB of free device memory`. The device and its name where the line
/// gives one, and the figure; `None` for its other lines (the layers it
/// places, a trial's memory).
fn fit_projection(rest: &str) -> Option<(Option<(String, String)>, Figure)> {
    let mib = |v: &str| v.trim().parse::<u64>().ok().and_then(|n| n.checked_mul(crate::units::MIB));
    let signed = |v: &str| v.trim().parse::<i64>().ok().and_then(|n| n.checked_mul(crate::units::MIB as i64));
    if let Some(rest) = after(rest, "projected to use ") {
        let (used, rest) = rest.split_once(" MiB of device memory vs. ")?;
        let free = rest.trim_end().strip_suffix(" MiB of free device memory")?;
        let used_bytes = mib(used)?;
        let free_before = signed(free)?;
        let figure = Figure::FitProjection {
            used_bytes,
            free_bytes: free_before.checked_sub(i64::try_from(used_bytes).ok()?)?,
            total_bytes: None,
            target_bytes: None,
        };
        return Some((None, figure));
    }
    let rest = rest.trim_start().strip_prefix("- ")?;
    let (head, numbers) = rest.rsplit_once(':')?;
    let (device, name) = head.trim_end().strip_suffix(')')?.split_once(" (")?;
    let (total, numbers) = numbers.split_once(" total,")?;
    let (used, numbers) = numbers.split_once(" used,")?;
    let (free, target) = numbers.split_once(" free vs. target of ")?;
    let figure = Figure::FitProjection {
        used_bytes: mib(used)?,
        free_bytes: signed(free)?,
        total_bytes: Some(mib(total)?),
        target_bytes: Some(mib(target)?),
    };
    let device = device.trim();
    (!device.is_empty() && !device.contains(' ')).then(|| (Some((device.to_owned(), name.trim().to_owned())), figure))
}

/// Ollama's own engine (no llama.cpp buffer lines): `msg="model weights"
/// buffer=CUDA0 size="11.0 GiB"` (0.9 – 0.11 `ml/backend/ggml/ggml.go`),
/// `msg="model weights" device=CUDA0 size="7.0 GiB"`, `msg="kv cache"
/// device=CUDA0 …` and `msg="compute graph" device=CUDA0 …` (0.12 and later
/// `ml/device.go`; `backend=CUDA0 buffer_type=CUDA0` in ggml.go). Ollama
/// prints one decimal: the figure is good to 0.05 of its unit.
fn ollama_buffer(line: &str) -> Option<Fact> {
    let kind = if line.contains("msg=\"model weights\"") {
        Buffer::Model
    } else if line.contains("msg=\"kv cache\"") {
        Buffer::Kv
    } else if line.contains("msg=\"compute graph\"") {
        Buffer::Compute
    } else {
        return None;
    };
    let device = after(line, " device=")
        .or_else(|| after(line, " buffer_type="))
        .or_else(|| after(line, " buffer="))?
        .split_whitespace()
        .next()?
        .trim_matches('"');
    let bytes = size(after(line, " size=\"")?, false)?;
    (!device.is_empty()).then(|| Fact {
        line: 0,
        scope: Some(device.to_owned()),
        figure: Figure::Buffer { buffer: kind, bytes },
    })
}

/// Ollama's estimate line (`llm/memory.go`, later `llm/server.go`):
/// `layers.offload=33 layers.model=33 … memory.available="[23.3 GiB]" …
/// memory.required.full="6.5 GiB" memory.required.partial="6.5 GiB"
/// memory.required.kv="1.0 GiB" … memory.weights.total="4.9 GiB" …
/// memory.graph.full="560.0 MiB" memory.graph.partial="677.5 MiB"`. A full
/// offload uses the `full` figures, a partial one the `partial` ones; with
/// several GPUs the first GPU's free memory.
fn ollama_estimate(line: &str) -> Option<Figure> {
    if !(line.contains("msg=\"offload to ") || line.contains("msg=offload ")) {
        return None;
    }
    let quoted =
        |key: &str| after(line, &format!("{key}=\"")).map(|r| r.trim_start_matches('[')).and_then(|r| size(r, false));
    let layers = after(line, "layers.offload=").and_then(count)?;
    let of = after(line, "layers.model=").and_then(count)?;
    let full = layers >= of;
    Some(Figure::OllamaEstimate {
        layers,
        of,
        available_bytes: quoted("memory.available")?,
        required_bytes: quoted(if full { "memory.required.full" } else { "memory.required.partial" })?,
        weights_bytes: quoted("memory.weights.total")?,
        kv_bytes: quoted("memory.required.kv")?,
        graph_bytes: quoted(if full { "memory.graph.full" } else { "memory.graph.partial" })?,
    })
}

fn same_buffer(a: &Figure, b: &Figure) -> bool {
    matches!((a, b), (Figure::Buffer { buffer: x, .. }, Figure::Buffer { buffer: y, .. }) if x == y)
}

/// The launch Ollama asked its runner for: `msg="starting llama server"
/// cmd="… runner --model … --ctx-size 8192 --batch-size 512 --n-gpu-layers 33
/// … --parallel 4 …"` (`llm/server.go`); from 0.30 `msg="starting
/// llama-server" cmd="…/llama-server --model … -c 32768 -np 4 --cache-type-k
/// q8_0 …"` (`startLlamaServer` in llm/llama_server.go, v0.33.0-rc2); or
/// the new runner's `msg=load
/// request="{… Parallel:1 BatchSize:512 FlashAttention:true KvSize:26624
/// KvCacheType:q4_0 …}"` (`runner/ollamarunner/runner.go`). llama.cpp's
/// own context lines, when the log has them, say the same and win.
fn ollama_launch(line: &str, c: &mut LoggedConfig) {
    // The Go engine's backend logs its placement itself
    // (ml/backend/ggml/ggml.go, v0.11 – v0.24: `source=ggml.go:494
    // msg="offloaded 20/49 layers to GPU"`); llama.cpp's runner prints
    // llama.cpp's `load_tensors: offloaded …` instead.
    let go_backend = line.contains("source=ggml.go:") && line.contains("msg=\"offload");
    if go_backend
        || line.contains("msg=\"starting ollama engine\"")
        || (line.contains("cmd=\"") && line.contains(" --ollama-engine"))
    {
        c.ollama_engine = Some(true);
    }
    if let Some(v) = after(line, "Listening on ").and_then(|r| after(r, "(version ")).and_then(Version::parse) {
        c.ollama_version = Some(v);
    }
    let flag = |name: &str| after(line, name).and_then(count);
    // The runner's command line, read as the agent reads a running one.
    if ["msg=\"starting llama server\"", "msg=\"starting llama-server\"", "msg=\"starting runner\""]
        .iter()
        .any(|m| line.contains(m))
        && let Some(cmd) = after(line, "cmd=\"").map(|r| r.split('"').next().unwrap_or(r))
        && let Some(launch) = super::launch::read_command_line(&cmd.split_whitespace().collect::<Vec<_>>())
    {
        let l = launch.config;
        c.n_ctx = c.n_ctx.or(l.n_ctx);
        c.n_seq_max = c.n_seq_max.or(l.parallel);
        c.n_batch = c.n_batch.or(l.n_batch);
        c.flash_attn = c.flash_attn.take().or(l.flash_attn);
        c.cache_type_k = c.cache_type_k.take().or(l.cache_type_k);
        c.cache_type_v = c.cache_type_v.take().or(l.cache_type_v);
    }
    if line.contains("msg=load request=") {
        c.n_ctx = c.n_ctx.or(flag("KvSize:"));
        c.n_seq_max = c.n_seq_max.or(flag("Parallel:"));
        c.n_batch = c.n_batch.or(flag("BatchSize:"));
        // `true`/`false`, or `Enabled`/`Disabled`/`Auto` in later runners.
        if let Some(on) = after(line, "FlashAttention:").and_then(|r| r.split(' ').next()) {
            let on = on.to_ascii_lowercase();
            let value =
                if on.starts_with("true") || on.starts_with("enabled") || on.starts_with("auto") { "1" } else { "0" };
            c.flash_attn.get_or_insert_with(|| value.into());
        }
        // An empty `KvCacheType:` is the default (f16).
        if let Some(t) = after(line, "KvCacheType:").and_then(|r| r.split(' ').next()).filter(|t| !t.is_empty()) {
            c.cache_type_k.get_or_insert_with(|| t.to_owned());
            c.cache_type_v.get_or_insert_with(|| t.to_owned());
        }
    }
}

/// `llama_kv_cache: size = X MiB (N cells, L layers, 1/1 seqs), K (f16): A
/// MiB, V (f16): B MiB`, or the old `KV self size = X MiB, K (f16): A MiB, V
/// (f16): B MiB`; and DeepSeek-V4's compressor state, F32, beside its
/// caches: `llama_dsv4_comp_state: csa ratio = 4, state = 8 x 1024,
/// streams = 1, rs_seq = 0, layers = 21, size =    1.31 MiB`
/// (src/llama-kv-cache-dsv4.cpp at 0c1e57098).
fn summary(line: &str) -> Option<Figure> {
    if let Some(rest) = after(line, "llama_dsv4_comp_state:").filter(|r| r.contains(" ratio = ")) {
        let bytes = after(rest, " size =").and_then(|r| size(r, false))?;
        let layers = after(rest, " layers =").and_then(|r| count(r.trim_start()));
        return Some(Figure::KvSummary { bytes, k_bytes: bytes, v_bytes: 0, cells: None, layers });
    }
    let rest = after(line, "KV self size  =")
        .or_else(|| after(line, "KV self size ="))
        .or_else(|| after(line, "llama_kv_cache: size ="))
        .or_else(|| after(line, "llama_kv_cache_unified: size ="))?;
    let bytes = size(rest, false)?;
    // ik_llama.cpp's MLA cache: `c^KV (f16): X MiB, kv^T: not used` or
    // `kv^T (f16): Y MiB` (src/llama.cpp@18b0375:21243-21250).
    if let Some(latent) = after(rest, "c^KV (").and_then(|r| after(r, "):")).and_then(|r| size(r, false)) {
        let v_bytes = after(rest, "kv^T (").and_then(|r| after(r, "):")).and_then(|r| size(r, false)).unwrap_or(0);
        return Some(Figure::KvSummary { bytes, k_bytes: latent, v_bytes, cells: None, layers: None });
    }
    let k_bytes = after(rest, "K (").and_then(|r| after(r, "):")).and_then(|r| size(r, false))?;
    let v_bytes = after(rest, "V (").and_then(|r| after(r, "):")).and_then(|r| size(r, false))?;
    let inside = after(rest, "(").and_then(|r| r.split(')').next()).unwrap_or_default();
    let cells = inside.split(',').find(|p| p.contains("cells")).and_then(|p| count(p.trim_start()));
    let layers = inside.split(',').find(|p| p.contains("layers")).and_then(|p| count(p.trim_start()));
    Some(Figure::KvSummary { bytes, k_bytes, v_bytes, cells, layers })
}

/// `llama_memory_recurrent: size = 299.25 MiB (2 cells, 64 layers, 2
/// seqs), R (f32): 11.25 MiB, S (f32): 288.00 MiB`
/// (src/llama-memory-recurrent.cpp:117 @a0ed91a; later builds add `N
/// rs_seq` inside the parentheses).
fn state_summary(line: &str) -> Option<Figure> {
    let rest = after(line, "llama_memory_recurrent: size =")?;
    let bytes = size(rest, false)?;
    let part = |key: &str| after(rest, key).and_then(|r| after(r, "):")).and_then(|r| size(r, false));
    let inside = after(rest, "(").and_then(|r| r.split(')').next()).unwrap_or_default();
    let cells = inside.split(',').find(|p| p.contains("cells")).and_then(|p| count(p.trim_start()));
    Some(Figure::StateSummary { bytes, r_bytes: part(" R (")?, s_bytes: part(" S (")?, cells })
}

/// The cache types a KV summary names, where no `type_k = '…'` line gave
/// them: `K (q8_0): …, V (q8_0): …`, or ik_llama.cpp's MLA latent cache
/// `c^KV (q8_0): …`, whose type `-ctk` sets (src/llama.cpp@18b0375:21243,
/// `llama_kv_cache_init` makes the latent cache of `type_k`).
fn summary_types(line: &str, c: &mut LoggedConfig) {
    let named = |key: &str| after(line, key).and_then(|r| r.split(')').next()).map(str::to_owned);
    if let Some(latent) = named("c^KV (") {
        c.cache_type_k.get_or_insert(latent);
        return;
    }
    if let (Some(k), Some(v)) = (named(" K ("), named(" V (")) {
        c.cache_type_k.get_or_insert(k);
        c.cache_type_v.get_or_insert(v);
    }
}

/// `n_ctx = 4096`, `n_batch`, `n_ubatch`, `n_seq_max`, `flash_attn`, ik's
/// `mla_attn`, `attn_max_b` and `fused_moe`, and
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
        // b6700 on: a server's `-np auto` turns it on (`kv_unified = true`).
        "kv_unified" => c.kv_unified = value("kv_unified").map(|v| v == "true").or(c.kv_unified),
        // ik_llama.cpp's own (src/llama.cpp@18b0375:21040ff).
        "mla_attn" => c.ik_mla = value("mla_attn").and_then(count),
        "attn_max_b" => c.ik_attn_max_batch = value("attn_max_b").and_then(count),
        "fused_moe" => c.ik_fused_moe = value("fused_moe").and_then(count).map(|n| n != 0),
        _ => {}
    }
}

/// The layer split a llama.cpp log ran with, as `--tensor-split` text: each
/// GPU's layers from its `CUDA<i> KV buffer size` (the KV of a model whose
/// `layers` layers all hold the same cache is proportional to its layers;
/// every GPU backend's, `Vulkan1` as `CUDA1`),
/// the output layer counted with the last GPU when the log offloaded it
/// (`offloaded N+1/N+1`, or more with a NextN layer that `layers` leaves
/// out: GLM-5.2's `offloaded 80/80` of 78 decoder layers). `None` unless two or more GPUs hold KV and every
/// layer is on one: llama.cpp splits by the free memory of that moment,
/// which the log does not state, so this is how a rebuilt plan splits alike.
/// A DSA cache's indexer keys are on some layers only: the latent's
/// buffers, printed first, are the ones read.
pub fn layer_split(log: &super::StartupLog, layers: u64) -> Option<String> {
    let latent = |line: usize| log.config.dsa_indexer_line.is_none_or(|from| line < from);
    let mut kv: Vec<(usize, u64)> = log
        .facts
        .iter()
        .filter(|f| latent(f.line))
        .filter_map(|f| match f.figure {
            Figure::Buffer { buffer: Buffer::Kv, bytes } => {
                // Any GPU backend's buffer (`CUDA1`, `ROCm0`, `Vulkan1`, `SYCL0`, `MTL0`).
                Some((slot(&log.config, f.scope.as_deref()?)?, bytes))
            }
            _ => None,
        })
        .collect();
    // A log that prints no KV buffer: its memory breakdown's context
    // (the KV cache, and the recurrent state, which is also by layer).
    if kv.is_empty() {
        kv = log
            .facts
            .iter()
            .filter_map(|f| match f.figure {
                Figure::MemoryBreakdown { context_bytes, .. } if context_bytes > 0 => {
                    Some((slot(&log.config, f.scope.as_deref()?)?, context_bytes))
                }
                _ => None,
            })
            .collect();
    }
    let mut counts: Vec<u64> = match cache_layers(log, &latent) {
        Some(by_gpu) => by_gpu,
        None => {
            crate::order::sort(&mut kv);
            let total: u64 = kv.iter().map(|&(_, b)| b).sum();
            if kv.len() < 2 || total == 0 || layers == 0 || kv.iter().enumerate().any(|(i, &(g, _))| g != i) {
                return None;
            }
            kv.iter().map(|&(_, b)| share(b, layers, total)).collect()
        }
    };
    if counts.iter().sum::<u64>() != layers {
        return None;
    }
    let output =
        log.facts.iter().any(|f| matches!(f.figure, Figure::Offloaded { layers: a, of } if a == of && of > layers));
    if let (true, Some(last)) = (output, counts.last_mut()) {
        *last += 1;
    }
    Some(counts.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
}

/// `b` of `total` bytes as a share of `layers`, to the nearest layer.
fn share(b: u64, layers: u64, total: u64) -> u64 {
    u64::try_from((u128::from(b) * u128::from(layers) + u128::from(total) / 2) / u128::from(total)).unwrap_or(0)
}

/// Each GPU's layers where the log prints more than one KV cache: a cache
/// prints its buffers, then its `size = … (N cells, L layers, …)` summary
/// (src/llama-kv-cache.cpp `llama_kv_cache::llama_kv_cache`, b6115 to
/// 0c1e57098), and an iSWA model's two caches (gpt-oss, Gemma 2/3:
/// src/llama-kv-cache-iswa.cpp, the non-SWA cache then the SWA one) hold
/// different bytes a layer, so the bytes of all the caches together are not
/// proportional to the layers. A buffer's layers are its share of its own
/// cache's; a GPU's, the sum over the caches. `None` with one cache (the
/// proportional split says the same) or where a summary is missing.
fn cache_layers(log: &super::StartupLog, keep: &dyn Fn(usize) -> bool) -> Option<Vec<u64>> {
    let mut by_gpu: Vec<u64> = Vec::new();
    let mut caches = 0;
    let mut seen = None;
    for f in log.facts.iter().filter(|f| keep(f.line)) {
        let Figure::Buffer { buffer: Buffer::Kv, bytes } = f.figure else { continue };
        let gpu = slot(&log.config, f.scope.as_deref()?)?;
        let (at, total, of) = log.facts.iter().filter(|s| s.line > f.line).find_map(|s| match s.figure {
            Figure::KvSummary { bytes, layers, .. } => Some((s.line, bytes, layers)),
            _ => None,
        })?;
        if seen != Some(at) {
            (seen, caches) = (Some(at), caches + 1);
        }
        if total == 0 {
            return None;
        }
        if by_gpu.len() <= gpu {
            by_gpu.resize(gpu + 1, 0);
        }
        by_gpu[gpu] += share(bytes, of?, total);
    }
    (caches > 1 && by_gpu.len() > 1 && by_gpu.iter().all(|&n| n > 0)).then_some(by_gpu)
}

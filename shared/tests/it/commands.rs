//! Every command line the tool prints is one the engine's own argument parser
//! accepts (issue 34: a command is the plan in the engine's language). The
//! option lists are the engines' parsers at a pinned version
//! (`tests/fixtures/engines/`, each file's first line names its source):
//! `vllm serve` of vLLM 0.24.0, `sglang.launch_server` of SGLang 0.5.23,
//! `llama-server` of llama.cpp 0c1e57098 (as vendored by llama-cpp-python
//! 0.3.36), Ollama's environment and Modelfile `PARAMETER`s at fb30760,
//! TGI's `text-generation-launcher` at 3.3.7 (the OOM diagnosis's). The
//! plans cover every engine, weight format and KV dtype the fixes reach,
//! fitting or not, on one GPU and several.

use std::collections::{BTreeMap, BTreeSet};

use shared::engines::{Engine, EngineKind, llamacpp, ollama, sglang, vllm};
use shared::estimate::{GpuSlot, Scenario};
use shared::fixes::fixes;
use shared::formats::WeightFormat;
use shared::kv::KvDtype;
use shared::model::Model;

/// The non-comment lines of a fixture.
fn lines(name: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/engines/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned).collect()
}

/// One engine's parser: its options, and the closed values of some of them.
struct Parser {
    options: BTreeSet<String>,
    choices: BTreeMap<String, BTreeSet<String>>,
    /// Options whose value is not checked when parsing (vLLM's
    /// `--quantization`: its config checks it later, against the same list).
    checked_later: &'static [&'static str],
}

impl Parser {
    fn new(options: &str, choices: &str, checked_later: &'static [&'static str]) -> Self {
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in lines(choices) {
            if let Some((flag, value)) = line.split_once(' ') {
                map.entry(flag.to_owned()).or_default().insert(value.trim().to_owned());
            }
        }
        Self { options: lines(options).into_iter().collect(), choices: map, checked_later }
    }

    /// Why `command` would not parse, if it would not.
    fn refuses(&self, command: &str) -> Option<String> {
        let words = words(command);
        for (i, w) in words.iter().enumerate() {
            // An option (not a negative number or a value such as `-1`).
            if !w.starts_with('-') || w.len() < 2 || w[1..].starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            let flag = w.split('=').next().unwrap_or(w);
            if !self.options.contains(flag) {
                return Some(format!("`{flag}` is not an option"));
            }
            if let (Some(values), Some(value)) = (self.choices.get(flag), words.get(i + 1)) {
                let value = value.trim_matches('\'');
                if !values.contains(value) {
                    let when =
                        if self.checked_later.contains(&flag) { "when the config is built" } else { "by the parser" };
                    return Some(format!("`{flag} {value}` is refused {when}"));
                }
            }
        }
        None
    }
}

/// A shell line's words: placeholders (`<a GPTQ checkpoint of …>`) and
/// comments out, quoted words kept whole.
fn words(line: &str) -> Vec<String> {
    let line = line.split(" # ").next().unwrap_or(line);
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut placeholder) = (false, false);
    for c in line.chars() {
        match c {
            '<' if !quoted => placeholder = true,
            '>' if placeholder => {
                placeholder = false;
                word.push_str("PLACEHOLDER");
            }
            _ if placeholder => {}
            '\'' => {
                quoted = !quoted;
                word.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

fn model(id: &str) -> Model {
    Model::preset(id).unwrap_or_else(|e| panic!("{e}"))
}

/// Plans across the engines' knobs: each engine with its knobs set, on one
/// small GPU (the fixes) and on GPUs that fit it (the launch).
fn plans() -> Vec<(Model, Scenario)> {
    let gpu = |id: &str| GpuSlot::from_catalog(shared::catalog::gpu(id).unwrap_or_else(|| panic!("{id}")));
    let engines = [
        Engine::Vllm(vllm::Options::default()),
        Engine::Vllm(vllm::Options {
            max_model_len: Some(32_768),
            gpu_memory_utilization: Some(0.95),
            max_num_seqs: Some(64),
            max_loras: 2,
            ..Default::default()
        }),
        // A pool given (issue 33: `--kv-cache-memory-bytes` as an input).
        Engine::Vllm(vllm::Options {
            kv_cache_memory_bytes: Some(20 << 30),
            enforce_eager: true,
            ..Default::default()
        }),
        // Weights kept in host memory (`--cpu-offload-gb`).
        Engine::Vllm(vllm::Options { cpu_offload_gb: Some(2.5), ..Default::default() }),
        Engine::Vllm(vllm::Options { cpu_offload_gb: Some(0.1), ..Default::default() }),
        Engine::Sglang(sglang::Options::default()),
        Engine::Sglang(sglang::Options {
            mem_fraction_static: Some(0.85),
            context_length: Some(32_768),
            ..Default::default()
        }),
        EngineKind::LlamaCpp.with_defaults(),
        Engine::LlamaCpp(llamacpp::Options {
            n_ctx: Some(16_384),
            flash_attention: llamacpp::FlashAttention::Off,
            cache_type_k: Some(llamacpp::CacheType::Q8_0),
            cache_type_v: Some(llamacpp::CacheType::Q8_0),
            n_cpu_moe: 8,
            parallel: Some(2),
            ..Default::default()
        }),
        EngineKind::Ollama.with_defaults(),
        Engine::Ollama(ollama::Options {
            num_ctx: Some(16_384),
            num_parallel: 2,
            kv_cache_type: Some(llamacpp::CacheType::Q8_0),
            ..Default::default()
        }),
    ];
    let mut out = Vec::new();
    for id in ["llama-3.1-8b", "qwen3-30b-a3b", "llama-3.1-70b", "gpt-oss-20b"] {
        let m = model(id);
        for engine in engines {
            let gguf = matches!(engine.kind(), EngineKind::LlamaCpp | EngineKind::Ollama);
            let formats: &[&str] = if gguf { &["q4_k_m", "q8_0"] } else { &["bf16", "fp8"] };
            for format in formats {
                let weights = WeightFormat::parse(format).unwrap_or_else(|e| panic!("{e}"));
                for (gpus, tp, kv) in [
                    (vec![gpu("rtx-4090")], 1, None),
                    (vec![gpu("h100-sxm"); 2], 2, Some(KvDtype::Fp8)),
                    (vec![gpu("rtx-4090"); 2], 1, None),
                ] {
                    // llama.cpp splits layers: several GPUs without TP.
                    let tp = if engine.kind().splits_tensors() { tp } else { 1 };
                    let s = Scenario {
                        weights,
                        kv_dtype: kv.filter(|_| !gguf).unwrap_or_else(|| engine.kind().default_kv_dtype(&m, weights)),
                        gpus,
                        engine,
                        tp,
                        ..Scenario::default()
                    };
                    out.push((m.clone(), s));
                }
            }
        }
    }
    out
}

/// Every command line the tool prints for a plan: its fixes' code (each a
/// whole launch for vLLM and SGLang) and the launch itself.
fn printed(m: &Model, s: &Scenario) -> Vec<String> {
    let mut out: Vec<String> = fixes(m, s).into_iter().map(|f| f.code).collect();
    if let Some(launch) = s.engine.kind().commands().launch {
        out.push(launch(m, s, "org/model"));
    }
    out
}

#[test]
fn every_printed_command_is_one_its_engine_parses() {
    let vllm = Parser::new("vllm-0.24.0-serve.txt", "vllm-0.24.0-choices.txt", &["--quantization", "-q"]);
    let sglang = Parser::new("sglang-0.5.23-launch_server.txt", "sglang-0.5.23-choices.txt", &[]);
    let llama = Parser::new("llamacpp-0c1e57098-server.txt", "llamacpp-0c1e57098-choices.txt", &[]);
    let engines = [("vllm serve", &vllm), ("sglang.launch_server", &sglang), ("llama-server", &llama)];
    let env: BTreeSet<String> = lines("ollama-env.txt").into_iter().collect();
    let parameters: BTreeSet<String> = lines("ollama-parameters.txt").into_iter().collect();
    let mut refused = Vec::new();
    let mut seen = [0usize; 4];
    for (m, s) in plans() {
        for code in printed(&m, &s) {
            for line in code.lines().map(str::trim) {
                let engine = engines
                    .iter()
                    .enumerate()
                    .find_map(|(n, (marker, parser))| line.find(marker).map(|i| (n, parser, &line[i..])));
                let Some((n, parser, at)) = engine else {
                    // Ollama: `OLLAMA_X=… ollama serve` and Modelfile `PARAMETER name value`.
                    for w in words(line) {
                        if let Some((name, _)) = w.split_once('=').filter(|(n, _)| n.starts_with("OLLAMA_")) {
                            seen[3] += 1;
                            if !env.contains(name) {
                                refused.push(format!("{line}: Ollama reads no {name}"));
                            }
                        }
                    }
                    if let Some(why) = ollama_model_refused(&m, line) {
                        seen[3] += 1;
                        refused.push(format!("{line}: {why}"));
                    }
                    if let Some(name) = line.strip_prefix("PARAMETER ").and_then(|r| r.split_whitespace().next()) {
                        seen[3] += 1;
                        if !parameters.contains(name) {
                            refused.push(format!("{line}: no Modelfile parameter {name}"));
                        }
                    }
                    continue;
                };
                seen[n] += 1;
                if let Some(why) = parser.refuses(at) {
                    refused.push(format!("{at}: {why}"));
                }
            }
        }
    }
    refused.sort();
    refused.dedup();
    assert!(refused.is_empty(), "{} refused:\n{}", refused.len(), refused.join("\n"));
    // Every engine's lines were seen: vLLM, SGLang, llama.cpp, Ollama.
    assert!(seen.iter().all(|&n| n > 10), "{seen:?}");
}

/// The OOM diagnosis's fixes over the whole corpus (`tests/fixtures/oom/`),
/// from the error alone: every `vllm serve`, `sglang.launch_server` and
/// `text-generation-launcher` line it prints is one the pinned parser takes
/// (placeholders and comments aside), as the plans' commands are above.
#[test]
fn every_diagnosis_command_is_one_its_engine_parses() {
    use shared::oom::{self, DiagnoseContext};
    let vllm = Parser::new("vllm-0.24.0-serve.txt", "vllm-0.24.0-choices.txt", &["--quantization", "-q"]);
    let sglang = Parser::new("sglang-0.5.23-launch_server.txt", "sglang-0.5.23-choices.txt", &[]);
    let tgi = Parser::new("tgi-3.3.7-launcher.txt", "tgi-3.3.7-choices.txt", &[]);
    let engines = [("vllm serve", &vllm), ("sglang.launch_server", &sglang), ("text-generation-launcher", &tgi)];
    let dir = format!("{}/tests/fixtures/oom", env!("CARGO_MANIFEST_DIR"));
    let mut refused = Vec::new();
    let mut seen = [0usize; 3];
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let d = oom::diagnose(&oom::parse(&text), &DiagnoseContext::error_only());
        for line in d.fixes.iter().flat_map(|f| f.code.lines()).map(str::trim) {
            let Some((n, parser, at)) = engines
                .iter()
                .enumerate()
                .find_map(|(n, (marker, parser))| line.find(marker).map(|i| (n, parser, &line[i..])))
            else {
                continue;
            };
            seen[n] += 1;
            if let Some(why) = parser.refuses(at) {
                refused.push(format!("{}: {at}: {why}", entry.file_name().to_string_lossy()));
            }
        }
    }
    refused.sort();
    assert!(refused.is_empty(), "{} refused:\n{}", refused.len(), refused.join("\n"));
    assert!(seen.iter().all(|&n| n > 5), "{seen:?}");
    // TGI's parser refuses what TGI refuses: the test can fail.
    assert!(tgi.refuses("text-generation-launcher --kv-cache-dtype fp8").is_some());
    assert!(tgi.refuses("text-generation-launcher --max-num-seqs 8").is_some());
}

/// Why Ollama would not find the model a printed line names, if it would not.
/// A Modelfile's `FROM` and `ollama pull|run` take an Ollama library tag, a
/// GGUF repository of the Hub as `hf.co/REPO:TAG`, or a file's path
/// (docs/import.md); the tool knows a Hub repository holds GGUF files only
/// when it read the model from one (its checkpoint is GGUF), and names no
/// library tag (it cannot know one exists).
fn ollama_model_refused(m: &Model, line: &str) -> Option<String> {
    let target = line
        .strip_prefix("FROM ")
        .or_else(|| line.strip_prefix("ollama pull "))
        .or_else(|| line.strip_prefix("ollama run "))?
        .trim();
    if target.starts_with('<') || target.starts_with("./") && target.ends_with(".gguf") {
        return None;
    }
    let Some(repo) = target.strip_prefix("hf.co/").and_then(|t| t.rsplit_once(':')).map(|(r, _)| r) else {
        return Some(
            "neither a GGUF file's path nor a Hub GGUF repository: Ollama would look it up in its library".into(),
        );
    };
    let gguf = matches!(m.default_format(), WeightFormat::Gguf(_)) && m.repo.as_deref() == Some(repo);
    (!gguf).then(|| format!("{repo} was not read as a GGUF repository: `hf.co/` pulls only those"))
}

/// A model read from a Hub GGUF repository is pulled from it by tag; the same
/// model from its safetensors repository needs a GGUF file, which `FROM`
/// imports by path.
#[test]
fn ollama_pulls_only_a_gguf_repository() {
    let mut m = model("llama-3.1-8b");
    let s = Scenario { weights: WeightFormat::Gguf(shared::formats::GgufType::Q4KM), ..Default::default() };
    let s = Scenario { engine: EngineKind::Ollama.with_defaults(), ..s };
    let setup = ollama::ollama_command(&m, &s);
    assert!(setup.contains("FROM ./model-Q4_K_M.gguf"), "{setup}");
    assert_eq!(ollama_model_refused(&m, "FROM meta-llama/Llama-3.1-8B-Instruct").map(|_| ()), Some(()));
    m.repo = Some("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF".into());
    m.stored_format = Some(WeightFormat::Gguf(shared::formats::GgufType::Q4KM));
    let setup = ollama::ollama_command(&m, &s);
    assert!(setup.contains("FROM hf.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M"), "{setup}");
    for line in setup.lines() {
        assert_eq!(ollama_model_refused(&m, line), None, "{line}");
    }
    // Another quantisation is the whole set-up, pulled from the same repository by its tag.
    let q8 = Scenario { weights: WeightFormat::Gguf(shared::formats::GgufType::Q8_0), ..s };
    let other = (EngineKind::Ollama.commands().weights)(&m, &q8, "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF");
    assert_eq!(other, ollama::ollama_command(&m, &q8));
    assert!(other.contains("FROM hf.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q8_0"), "{other}");
}

/// A context past the model's own starts only with the engine's permission
/// (vLLM's `VLLM_ALLOW_LONG_MAX_MODEL_LEN`, SGLang's
/// `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`), so the launch carries it;
/// a context within it does not.
#[test]
fn a_context_past_the_models_own_is_launched_with_the_engines_permission() {
    let m = model("llama-3-8b");
    let own = m.arch.text.max_position_embeddings.expect("a trained context");
    let launch = |engine: Engine| {
        let s = Scenario { engine, ..Default::default() };
        (s.engine.kind().commands().launch.expect("a launch"))(&m, &s, "org/model")
    };
    let vllm_at = |n| launch(Engine::Vllm(vllm::Options { max_model_len: Some(n), ..Default::default() }));
    let sglang_at = |n| launch(Engine::Sglang(sglang::Options { context_length: Some(n), ..Default::default() }));
    assert!(vllm_at(own * 2).starts_with("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve "), "{}", vllm_at(own * 2));
    assert!(vllm_at(own).starts_with("vllm serve "), "{}", vllm_at(own));
    assert!(sglang_at(own + 1).starts_with("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang"));
    assert!(sglang_at(own).starts_with("python -m sglang"));
}

/// A quantised checkpoint keeps its quantisation whatever `--dtype` or
/// `--quantization` say (vLLM refuses a different one), so its weights in
/// another format are another checkpoint, named as a placeholder.
#[test]
fn a_quantised_checkpoint_in_another_format_is_another_checkpoint() {
    let m = model("qwen3-8b-fp8");
    let repo = m.repo.clone().expect("a repo");
    for weights in [WeightFormat::Bf16, WeightFormat::Bnb4 { nf4: true, double_quant: true }] {
        let s = Scenario { engine: Engine::Vllm(vllm::Options::default()), weights, ..Default::default() };
        let launch = vllm_launch(&m, &s, &repo);
        assert!(launch.starts_with(&format!("vllm serve <a {} checkpoint of {repo}>", weights.id())), "{launch}");
        assert!(!launch.contains("--dtype") && !launch.contains("--quantization"), "{launch}");
    }
    // Its own format is the checkpoint itself.
    let s =
        Scenario { engine: Engine::Vllm(vllm::Options::default()), weights: m.default_format(), ..Default::default() };
    assert!(vllm_launch(&m, &s, &repo).starts_with(&format!("vllm serve {repo}")));
}

fn vllm_launch(m: &Model, s: &Scenario, repo: &str) -> String {
    let launch = EngineKind::Vllm.commands().launch.unwrap_or_else(|| panic!("vLLM has a launch"));
    launch(m, s, repo)
}

/// A KV dtype the engine keeps no cache of is said in its words before the
/// verdict (the plan still opens, as a link made before the rule does),
/// not planned silently and left out of its command; vLLM's int8 cache is
/// its `int8_per_token_head`, from 0.20, and reads back as int8.
#[test]
fn kv_dtypes_are_the_engines_own() {
    let m = model("llama-3.1-8b");
    let with = |engine: Engine, kv_dtype: KvDtype| Scenario { engine, kv_dtype, ..Default::default() };
    let refused = |s: &Scenario| s.engine.kv_refusal(s.kv_dtype, s.weights);
    let verdict = |s: &Scenario| {
        let e = shared::estimate::estimate(&m, s.clone().validate().expect("a link's plan opens"));
        shared::estimate::verdict_text(&e, shared::units::UnitSystem::Binary)
    };
    let vllm_q4 = with(EngineKind::Vllm.with_defaults(), KvDtype::Q4_0);
    assert!(verdict(&vllm_q4).starts_with("vLLM keeps no q4_0 KV cache"), "{}", verdict(&vllm_q4));
    assert!(refused(&with(EngineKind::Sglang.with_defaults(), KvDtype::Int8)).is_some());
    assert!(refused(&with(EngineKind::LlamaCpp.with_defaults(), KvDtype::Fp8)).is_some());
    // Ollama passes `OLLAMA_KV_CACHE_TYPE` to llama-server as it is (v0.30.0 on).
    let ollama_fp8 = with(EngineKind::Ollama.with_defaults(), KvDtype::Fp8);
    assert!(refused(&ollama_fp8).is_some_and(|w| w.ends_with("it runs fp16")));
    assert!(!ollama::ollama_command(&m, &ollama_fp8).contains("OLLAMA_KV_CACHE_TYPE"), "Ollama runs f16");
    let ollama_bf16 = with(EngineKind::Ollama.with_defaults(), KvDtype::Bf16);
    assert!(ollama::ollama_command(&m, &ollama_bf16).starts_with("OLLAMA_KV_CACHE_TYPE=bf16 ollama serve\n"));
    let ollama_f32 = with(EngineKind::Ollama.with_defaults(), KvDtype::F32);
    assert!(refused(&ollama_f32).is_none());
    assert!(ollama::ollama_command(&m, &ollama_f32).starts_with("OLLAMA_KV_CACHE_TYPE=f32 ollama serve\n"));
    assert!(refused(&with(EngineKind::Transformers.with_defaults(), KvDtype::Int4)).is_none());
    let old = vllm::Options { version: vllm::Version::for_release("0.19.0").expect("a release"), ..Default::default() };
    assert!(refused(&with(Engine::Vllm(old), KvDtype::Int8)).is_some(), "int8_per_token_head arrived in 0.20");
    let s = with(EngineKind::Vllm.with_defaults(), KvDtype::Int8);
    assert!(refused(&s).is_none());
    let launch = vllm_launch(&m, &s, "org/model");
    assert!(launch.ends_with("--kv-cache-dtype int8_per_token_head"), "{launch}");
    assert_eq!(KvDtype::parse("int8_per_token_head"), Ok(KvDtype::Int8));
}

/// vLLM 0.28 removed bitsandbytes: the rules from there (and those of 0.20 –
/// 0.33, which take the later side) neither plan it as loaded nor convert
/// to it; the rules of releases that had it keep it.
#[test]
fn vllm_after_0_28_loads_no_bitsandbytes() {
    let nf4 = WeightFormat::Bnb4 { nf4: true, double_quant: true };
    let at = |release: &str| {
        Engine::Vllm(vllm::Options {
            version: vllm::Version::for_release(release).expect("a release"),
            ..Default::default()
        })
    };
    assert!(at("0.34.0").refuses(nf4).is_some());
    assert!(at("0.24.0").refuses(nf4).is_some());
    assert!(at("0.19.0").refuses(nf4).is_none());
    // No fix converts to it: the solver's formats are those the engine loads.
    assert!(!shared::solve::runs_on_gpus(nf4, &at("0.34.0"), &[]));
    assert!(shared::solve::runs_on_gpus(nf4, &at("0.19.0"), &[]));
    let m = model("llama-3.1-70b");
    let s = Scenario { engine: at("0.34.0"), weights: nf4, ..Default::default() };
    let e = shared::estimate::estimate(&m, s.validate().expect("valid"));
    let verdict = shared::estimate::verdict_text(&e, shared::units::UnitSystem::Binary);
    assert!(verdict.starts_with("vLLM does not load nf4"), "{verdict}");
}

/// "Run N sequences at once" launches with the engine's cap on sequences:
/// vLLM's `--max-num-seqs` from the fixed plan, SGLang's
/// `--max-running-requests` kept from the fix beside the plan's launch.
#[test]
fn fewer_sequences_launch_with_the_engines_cap() {
    let m = model("qwen2.5-7b");
    for (kind, flag) in [(EngineKind::Vllm, "--max-num-seqs"), (EngineKind::Sglang, "--max-running-requests")] {
        let s = Scenario {
            engine: kind.with_defaults(),
            concurrency: 64,
            prompt_tokens: 30_000,
            gpus: vec![GpuSlot::from_catalog(shared::catalog::gpu("rtx-4090").expect("a GPU"))],
            ..Default::default()
        };
        let fixes = fixes(&m, &s);
        let fix = fixes.iter().find(|f| f.title.starts_with("Run ") && f.title.contains("at once")).expect("a fix");
        let n = fix.scenario.concurrency;
        assert!(fix.code.contains(&format!("{flag} {n}")), "{}", fix.code);
        assert_eq!(fix.code.matches(flag).count(), 1, "{}", fix.code);
    }
}

/// Expert-parallel settings in the release's own words: the all-to-all
/// backend is `VLLM_ALL2ALL_BACKEND` before 0.12's `--all2all-backend`, and
/// 0.10 takes `--num-redundant-experts`, not the later `--eplb-config`.
#[test]
fn vllm_expert_settings_by_release() {
    let m = model("qwen3-30b-a3b");
    let launch = |release: &str| {
        let o = vllm::Options {
            version: vllm::Version::for_release(release).expect("a release"),
            enable_expert_parallel: true,
            all2all_backend: Some(vllm::All2All::DeepepHighThroughput),
            num_redundant_experts: 16,
            ..Default::default()
        };
        let s = Scenario { engine: Engine::Vllm(o), ..Default::default() };
        vllm_launch(&m, &s, "org/model")
    };
    let new = launch("0.24.0");
    assert!(new.starts_with("vllm serve ") && new.contains("--all2all-backend deepep_high_throughput"), "{new}");
    assert!(new.contains("--eplb-config"), "{new}");
    let old = launch("0.10.1");
    assert!(old.starts_with("VLLM_ALL2ALL_BACKEND=deepep_high_throughput vllm serve "), "{old}");
    assert!(old.contains("--enable-eplb --num-redundant-experts 16") && !old.contains("--all2all-backend"), "{old}");
}

/// transformers' SDPA fix loads the plan's weights on the GPUs: its
/// quantisation config and `device_map`, not a bare `from_pretrained` that
/// would load 16-bit weights on the CPU.
#[test]
fn sdpa_loads_the_plans_weights() {
    use shared::engines::transformers;
    let m = model("llama-3.1-8b");
    let s = Scenario {
        engine: Engine::Transformers(transformers::Options {
            attention: transformers::AttentionImpl::Eager,
            ..Default::default()
        }),
        weights: WeightFormat::Bnb4 { nf4: true, double_quant: true },
        ..Default::default()
    };
    let settings = (EngineKind::Transformers.commands().settings)(&m, &s, "org/model");
    let sdpa = settings.iter().find(|x| x.code.contains("sdpa")).expect("an SDPA setting");
    for part in [
        "quantization_config=quant",
        "device_map=\"auto\"",
        "attn_implementation=\"sdpa\"",
        "bnb_4bit_quant_type=\"nf4\"",
    ] {
        assert!(sdpa.code.contains(part), "{part} in {}", sdpa.code);
    }
}

/// A sequence cap is the engine's own, per vLLM replica, and never raises a
/// lower cap the plan has.
#[test]
fn sequence_caps_are_per_replica_and_never_raised() {
    let dp = Engine::Vllm(vllm::Options { data_parallel_size: 2, ..Default::default() }).capped_sequences(5);
    assert!(matches!(dp, Engine::Vllm(o) if o.max_num_seqs == Some(3)), "{dp:?}");
    let low = Engine::Vllm(vllm::Options { max_num_seqs: Some(2), ..Default::default() }).capped_sequences(8);
    assert!(matches!(low, Engine::Vllm(o) if o.max_num_seqs == Some(2)), "{low:?}");
    let o = Engine::Ollama(ollama::Options { num_parallel: 8, ..Default::default() }).capped_sequences(3);
    assert!(matches!(o, Engine::Ollama(o) if o.num_parallel == 3), "{o:?}");
    let l = Engine::LlamaCpp(llamacpp::Options { parallel: Some(4), ..Default::default() }).capped_sequences(2);
    assert!(matches!(l, Engine::LlamaCpp(o) if o.parallel == Some(2)), "{l:?}");
}

/// A fix that changes the engine or the weights keeps a KV cache the new
/// plan's engine holds: vLLM's fp8 cache is not carried into llama.cpp, an
/// fp32 cache not kept beside 16-bit weights.
#[test]
fn a_fix_that_changes_engine_or_weights_keeps_a_kv_cache_it_holds() {
    let m = model("llama-3.1-8b");
    let s = Scenario {
        engine: EngineKind::Vllm.with_defaults(),
        weights: WeightFormat::Gguf(shared::formats::GgufType::Q4KM),
        kv_dtype: KvDtype::Fp8,
        ..Default::default()
    };
    let fixes = fixes(&m, &s);
    assert!(!fixes.is_empty());
    for f in &fixes {
        let t = &f.scenario;
        assert_eq!(t.engine.kv_refusal(t.kv_dtype, t.weights), None, "{}: {:?}", f.title, t.kv_dtype);
    }
}

/// A plan's default KV dtype (the activation dtype) is one every engine
/// keeps, for every format it loads: the note before the verdict is for a
/// dtype someone chose.
#[test]
fn the_default_kv_dtype_is_never_refused() {
    for id in ["llama-3.1-8b", "qwen3-8b-fp8"] {
        let m = model(id);
        for kind in EngineKind::ALL {
            let engine = kind.with_defaults();
            for &f in WeightFormat::CHOICES.iter().filter(|&&f| kind.runs(f)) {
                let kv = kind.default_kv_dtype(&m, f);
                assert_eq!(engine.kv_refusal(kv, f), None, "{} {} {}", kind.name(), f.id(), kv.id());
            }
        }
    }
}

/// A quantised KV cache needs flash attention in llama.cpp (it refuses a
/// quantised V cache without it), so the cache fix of a plan with flash
/// attention off turns it on, and the engine's own cache types give way.
#[test]
fn a_quantised_cache_fix_turns_flash_attention_on() {
    let m = model("llama-3.1-8b");
    let gpu = GpuSlot::from_catalog(shared::catalog::gpu("rtx-3060-12gb").expect("a GPU"));
    let base = |engine: Engine| Scenario {
        engine,
        weights: WeightFormat::Gguf(shared::formats::GgufType::Q8_0),
        prompt_tokens: 60_000,
        gpus: vec![gpu.clone()],
        ..Default::default()
    };
    let llama = base(Engine::LlamaCpp(llamacpp::Options {
        flash_attention: llamacpp::FlashAttention::Off,
        cache_type_k: Some(llamacpp::CacheType::F16),
        // Every layer asked on the GPU: `--fit` gives up, the plan does not fit.
        n_gpu_layers: Some(999),
        ..Default::default()
    }));
    let ollama = Scenario {
        prompt_tokens: 30_000,
        ..base(Engine::Ollama(ollama::Options {
            flash_attention: Some(llamacpp::FlashAttention::Off),
            num_gpu: Some(999),
            num_ctx: Some(32_768),
            ..Default::default()
        }))
    };
    for s in [llama, ollama] {
        let fixes = fixes(&m, &s);
        let titles: Vec<&str> = fixes.iter().map(|f| f.title.as_str()).collect();
        // Both plans had flash attention off: the title says the fix turns it on.
        let fix = fixes
            .iter()
            .find(|f| f.title == "Turn flash attention on and store the KV cache in q8_0")
            .unwrap_or_else(|| panic!("{titles:?}"));
        assert!(!fix.code.contains("-fa off") && !fix.code.contains("OLLAMA_FLASH_ATTENTION=0"), "{}", fix.code);
        assert!(fix.code.contains("-ctk q8_0") || fix.code.contains("OLLAMA_KV_CACHE_TYPE=q8_0"), "{}", fix.code);
    }
}

/// The check itself refuses what the engines refuse.
#[test]
fn the_parsers_refuse_what_the_engines_refuse() {
    let sglang = Parser::new("sglang-0.5.23-launch_server.txt", "sglang-0.5.23-choices.txt", &[]);
    assert!(sglang.refuses("sglang.launch_server --model-path x --kv-cache-dtype fp8").is_some());
    assert!(sglang.refuses("sglang.launch_server --model-path x --kv-cache-dtype fp8_e4m3 --tp-size 2").is_none());
    let vllm = Parser::new("vllm-0.24.0-serve.txt", "vllm-0.24.0-choices.txt", &["--quantization", "-q"]);
    assert!(vllm.refuses("vllm serve x --quantization gptq_int4").is_some());
    assert!(vllm.refuses("vllm serve x --max-model-len 4096 --no-such-flag 1").is_some());
    assert!(vllm.refuses("vllm serve <a GPTQ checkpoint of org/x> --quantization gptq").is_none());
    let llama = Parser::new("llamacpp-0c1e57098-server.txt", "llamacpp-0c1e57098-choices.txt", &[]);
    assert!(llama.refuses("llama-server -m x.gguf -ot 'exps=CPU' -fa on -ctk q8_0").is_none());
    assert!(llama.refuses("llama-server -m x.gguf -ctk q5").is_some());
}

/// A launch reads back as its plan (issue 34): every vLLM and SGLang launch
/// the tool prints, read by the same reader that reads a running engine's
/// command line (`startup::read_command_line`, then `configured_engine`),
/// gives the plan's TP degree, stages, KV dtype, in-flight quantisation and
/// every engine knob the plan set.
#[test]
fn every_launch_reads_back_as_its_plan() {
    use shared::startup::{configured_engine, read_command_line};
    let mut checked = 0;
    for (m, s) in plans() {
        let Some(launch) = s.engine.kind().commands().launch else { continue };
        let Ok(valid) = s.clone().validate_for(&m) else { continue };
        let line = launch(&m, &valid, "org/model");
        let argv = words(&line);
        let read = read_command_line(&argv).unwrap_or_else(|| panic!("not read: {line}"));
        let c = &read.config;
        assert_eq!(c.tensor_parallel.unwrap_or(1), s.tp, "{line}");
        assert_eq!(c.pipeline_parallel.unwrap_or(1), s.stages() as u64, "{line}");
        let kv = c.kv_cache_dtype.as_deref().map(|k| KvDtype::parse(k).unwrap_or_else(|e| panic!("{line}: {e}")));
        assert_eq!(kv.unwrap_or_else(|| s.engine.kind().default_kv_dtype(&m, s.weights)), s.kv_dtype, "{line}");
        if let Some(q) = c.quantization.as_deref() {
            let format = WeightFormat::parse(q).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(format, s.weights, "{line}");
        }
        let (back, _) = configured_engine(read.launcher.engine(), c, s.engine.kind().with_defaults());
        match (s.engine, back) {
            (Engine::Vllm(o), Engine::Vllm(b)) => {
                assert_eq!(b.gpu_memory_utilization, o.gpu_memory_utilization, "{line}");
                assert_eq!(b.max_model_len, o.max_model_len, "{line}");
                assert_eq!(b.max_num_seqs, o.max_num_seqs, "{line}");
                assert_eq!(b.max_num_batched_tokens, o.max_num_batched_tokens, "{line}");
                assert_eq!(b.kv_cache_memory_bytes, o.kv_cache_memory_bytes, "{line}");
                assert_eq!(b.enforce_eager, o.enforce_eager, "{line}");
                assert_eq!(b.cpu_offload_gb, o.cpu_offload_gb, "{line}");
            }
            (Engine::Sglang(o), Engine::Sglang(b)) => {
                assert_eq!(b.mem_fraction_static, o.mem_fraction_static, "{line}");
                assert_eq!(b.context_length, o.context_length, "{line}");
            }
            (planned, back) => panic!("{line}: {planned:?} read back as {back:?}"),
        }
        checked += 1;
    }
    assert!(checked > 20, "{checked}");
}

/// Stand-ins for `torch` and `transformers` that record what a snippet
/// passes (`HEADROOM_RECORD`, one JSON object per call).
const TORCH_STANDIN: &str = "bfloat16 = 'bfloat16'\nfloat16 = 'float16'\nfloat32 = 'float32'\n";
const TRANSFORMERS_STANDIN: &str = r#"
import json, os

def _record(kind, kw):
    with open(os.environ["HEADROOM_RECORD"], "a") as f:
        f.write(json.dumps({"kind": kind, "kw": kw}) + "\n")

class _Config:
    def __init__(self, **kw):
        self.kw = kw
        _record(type(self).__name__, kw)

class BitsAndBytesConfig(_Config):
    pass

class FineGrainedFP8Config(_Config):
    pass

class AutoModelForCausalLM:
    @classmethod
    def from_pretrained(cls, repo, **kw):
        q = kw.get("quantization_config")
        kw["quantization_config"] = None if q is None else dict(q.kw, type=type(q).__name__)
        kw["repo"] = repo
        kw["class"] = cls.__name__
        _record("from_pretrained", kw)
        return object()

class AutoModelForImageTextToText(AutoModelForCausalLM):
    pass
"#;

/// Every transformers snippet the fixes print runs (issue 34), against
/// stand-ins that record its keyword arguments, and loads its plan: the
/// quantisation config of 4- and 8-bit loading and FP8 with the format's
/// options, the dtype, a checkpoint placeholder for formats stored as such,
/// `max_memory` caps for every GPU of a `device_map` plan, and the auto class
/// that builds the checkpoint whole (`AutoModelForImageTextToText` for a
/// multimodal wrapper).
#[test]
fn every_transformers_snippet_runs_and_loads_its_plan() {
    use std::process::Command;
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("python3 is not installed: the transformers snippets are not executed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("headroom-standins-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("transformers")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("torch.py"), TORCH_STANDIN).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("transformers/__init__.py"), TRANSFORMERS_STANDIN).unwrap_or_else(|e| panic!("{e}"));
    let gpu = |id: &str| GpuSlot::from_catalog(shared::catalog::gpu(id).unwrap_or_else(|| panic!("{id}")));
    let mut snippets: Vec<(String, Scenario, &str)> = Vec::new();
    // Gemma 4 31B: a multimodal wrapper, loaded by `AutoModelForImageTextToText`.
    for id in ["llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "gemma-4-31b"] {
        let m = model(id);
        for format in ["bf16", "fp16", "fp32", "nf4", "int8", "fp8"] {
            let weights = WeightFormat::parse(format).unwrap_or_else(|e| panic!("{e}"));
            for gpus in [vec![gpu("rtx-4090")], vec![gpu("rtx-4090"); 2], vec![gpu("h100-sxm"); 2]] {
                let s = Scenario {
                    weights,
                    kv_dtype: EngineKind::Transformers.default_kv_dtype(&m, weights),
                    gpus,
                    engine: EngineKind::Transformers.with_defaults(),
                    ..Scenario::default()
                };
                for f in fixes(&m, &s) {
                    if f.code.contains(".from_pretrained(") && f.code.contains("from transformers import") {
                        let class =
                            if m.arch.multimodal { "AutoModelForImageTextToText" } else { "AutoModelForCausalLM" };
                        snippets.push((f.code, f.scenario, class));
                    }
                }
            }
        }
    }
    snippets.sort_by(|a, b| a.0.cmp(&b.0));
    snippets.dedup_by(|a, b| a.0 == b.0);
    assert!(snippets.len() > 10, "{}", snippets.len());
    let (mut with_caps, mut quantised) = (0, 0);
    let mut multimodal = 0;
    for (i, (code, planned, class)) in snippets.iter().enumerate() {
        let record = dir.join(format!("record-{i}.jsonl"));
        let out = Command::new("python3")
            .arg("-c")
            .arg(code)
            .env("PYTHONPATH", &dir)
            .env("HEADROOM_RECORD", &record)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{code}\n{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&record).unwrap_or_else(|e| panic!("{code}: {e}"));
        let calls: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}"))).collect();
        // The first load is the plan's (a comment may show the same call by hand).
        let load = &calls.iter().find(|c| c["kind"] == "from_pretrained").unwrap_or_else(|| panic!("{code}"))["kw"];
        assert_eq!(load["class"], *class, "{code}");
        multimodal += usize::from(*class == "AutoModelForImageTextToText");
        let q = &load["quantization_config"];
        let dtype = load["dtype"].as_str().or_else(|| load["torch_dtype"].as_str());
        match planned.weights {
            WeightFormat::Bnb4 { nf4, double_quant } => {
                assert_eq!(q["type"], "BitsAndBytesConfig", "{code}");
                assert_eq!(q["load_in_4bit"], true, "{code}");
                assert_eq!(q["bnb_4bit_quant_type"], if nf4 { "nf4" } else { "fp4" }, "{code}");
                assert_eq!(q["bnb_4bit_use_double_quant"], double_quant, "{code}");
            }
            WeightFormat::Int8 => {
                assert_eq!((q["type"].as_str(), q["load_in_8bit"].as_bool()), (Some("BitsAndBytesConfig"), Some(true)));
            }
            WeightFormat::Fp8 { .. } => assert_eq!(q["type"], "FineGrainedFP8Config", "{code}"),
            WeightFormat::Bf16 => assert_eq!((q.is_null(), dtype), (true, Some("bfloat16")), "{code}"),
            WeightFormat::F16 => assert_eq!((q.is_null(), dtype), (true, Some("float16")), "{code}"),
            WeightFormat::F32 => assert_eq!((q.is_null(), dtype), (true, Some("float32")), "{code}"),
            other => {
                let repo = load["repo"].as_str().unwrap_or("");
                assert!(repo.starts_with('<'), "{other:?} names a checkpoint placeholder: {code}");
            }
        }
        quantised += usize::from(!q.is_null());
        if let Some(caps) = load["max_memory"].as_object() {
            with_caps += 1;
            assert_eq!(caps.len(), planned.gpus.len(), "{code}");
            assert!(caps.values().all(|v| v.as_str().is_some_and(|c| c.ends_with("MiB"))), "{code}");
        }
    }
    assert!(
        with_caps > 0 && quantised > 0 && multimodal > 0,
        "{with_caps} with caps, {quantised} quantised, {multimodal} multimodal"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every transformers snippet the OOM diagnosis prints over the corpus
/// (`tests/fixtures/oom/`, from the error alone) runs against the recording
/// stand-ins and loads with the arguments it names: a bitsandbytes CPU
/// offload is `llm_int8_enable_fp32_cpu_offload` on `BitsAndBytesConfig`,
/// the one argument transformers reads (quantizer_bnb_4bit.py, 4.57.1).
#[test]
fn every_diagnosis_transformers_snippet_runs() {
    use shared::oom::{self, DiagnoseContext};
    use std::process::Command;
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("python3 is not installed: the transformers snippets are not executed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("headroom-oom-standins-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("transformers")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("torch.py"), TORCH_STANDIN).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("transformers/__init__.py"), TRANSFORMERS_STANDIN).unwrap_or_else(|e| panic!("{e}"));
    let fixtures = format!("{}/tests/fixtures/oom", env!("CARGO_MANIFEST_DIR"));
    let mut snippets: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(&fixtures).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let d = oom::diagnose(&oom::parse(&text), &DiagnoseContext::error_only());
        snippets.extend(d.fixes.into_iter().map(|f| f.code).filter(|c| c.starts_with("from transformers import")));
    }
    snippets.sort();
    snippets.dedup();
    let mut offloads = 0;
    for (i, code) in snippets.iter().enumerate() {
        let record = dir.join(format!("record-{i}.jsonl"));
        let out = Command::new("python3")
            .arg("-c")
            .arg(code)
            .env("PYTHONPATH", &dir)
            .env("HEADROOM_RECORD", &record)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{code}\n{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&record).unwrap_or_else(|e| panic!("{code}: {e}"));
        let load = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|c| c["kind"] == "from_pretrained")
            .unwrap_or_else(|| panic!("{code}: no from_pretrained"));
        let q = &load["kw"]["quantization_config"];
        assert_eq!(q["type"], "BitsAndBytesConfig", "{code}");
        assert_eq!(load["kw"]["device_map"], "auto", "{code}");
        offloads += usize::from(q["llm_int8_enable_fp32_cpu_offload"] == true);
    }
    assert!(snippets.len() >= 3 && offloads == 1, "{} snippets, {offloads} offloads", snippets.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A shell line's words as a shell gives them to the program: quotes
/// removed.
fn shell_words(line: &str) -> Vec<String> {
    words(line).into_iter().map(|w| w.replace('\'', "")).collect()
}

mod llamacpp_round_trip {
    use super::*;
    use proptest::prelude::*;
    use shared::engines::llamacpp::{
        CacheType, FitMode, FlashAttention, Fork, SplitMode, TensorOverrides, TensorSplit,
    };
    use shared::startup::{configured_engine, read_command_line};

    fn pick<T: Clone + std::fmt::Debug + 'static>(options: Vec<T>) -> impl Strategy<Value = T> {
        proptest::sample::select(options)
    }

    /// Random llama.cpp settings: every flag `server_command` writes.
    fn options() -> impl Strategy<Value = llamacpp::Options> {
        let cache = || pick(vec![None, Some(CacheType::F16), Some(CacheType::Q8_0), Some(CacheType::Q4_0)]);
        (
            (
                pick(vec![None, Some(4096), Some(16_384), Some(0)]),
                pick(vec![None, Some(0), Some(10), Some(1000)]),
                pick(vec![None, Some(1), Some(4)]),
                pick(vec![256, 512, 1024]),
                pick(vec![512, 2048, 4096]),
                pick(vec![FlashAttention::On, FlashAttention::Off]),
                cache(),
                cache(),
            ),
            (
                pick(vec![0, 8, u64::from(u32::MAX)]),
                any::<(bool, bool, bool)>(),
                pick(vec!["", "exps=CPU", "blk\\.(1[0-9])\\.ffn_.*_exps=CPU,token_embd=CPU"]),
                pick(vec!["", "3,1"]),
                pick(vec![SplitMode::Layer, SplitMode::Row, SplitMode::None]),
                pick(vec![0u16, 1]),
                pick(vec![(FitMode::On, 1024), (FitMode::On, 2048), (FitMode::Off, 1024)]),
                pick(vec![(false, false), (true, false), (true, true)]),
            ),
            // ik_llama.cpp's flags, only on an ik plan (mainline refuses them).
            pick(vec![
                None,
                Some((Some(3), Some(1024), Some(true), true)),
                Some((Some(0), None, Some(false), false)),
                Some((None, Some(256), None, false)),
            ]),
        )
            .prop_map(
                |((n_ctx, ngl, np, ub, b, fa, ctk, ctv), (ncmoe, (nkvo, kvu, swa), ot, ts, sm, mg, fit, mm), ik)| {
                    let (fork, (mla, amb, fmoe, rtr)) = match ik {
                        Some(flags) => (Fork::Ik, flags),
                        None => (Fork::Mainline, (None, None, None, false)),
                    };
                    llamacpp::Options {
                        fork,
                        mla,
                        attn_max_batch_mib: amb,
                        fused_moe: fmoe,
                        run_time_repack: rtr,
                        n_ctx,
                        n_gpu_layers: ngl,
                        parallel: np,
                        n_ubatch: ub,
                        n_batch: b,
                        flash_attention: fa,
                        cache_type_k: ctk,
                        cache_type_v: ctv,
                        n_cpu_moe: ncmoe,
                        no_kv_offload: nkvo,
                        kv_unified: kvu,
                        swa_full: swa,
                        tensor_overrides: TensorOverrides::parse(ot).unwrap_or_else(|e| panic!("{ot}: {e}")),
                        tensor_split: TensorSplit::parse(ts).unwrap_or_else(|e| panic!("{ts}: {e}")),
                        split_mode: sm,
                        main_gpu: mg,
                        fit: fit.0,
                        fit_target_mib: fit.1,
                        mmproj: mm.0,
                        no_mmproj_offload: mm.1,
                        ..Default::default()
                    }
                },
            )
    }

    /// `line`, read back as a running server's command line, is the
    /// llama.cpp plan `o` of scenario `s` (as llama.cpp runs it: `-c` and
    /// `-np` resolved, `--cpu-moe` for every layer).
    fn reads_back(m: &Model, s: &Scenario, o: llamacpp::Options, line: &str) -> Result<(), TestCaseError> {
        let llama = Parser::new("llamacpp-0c1e57098-server.txt", "llamacpp-0c1e57098-choices.txt", &[]);
        let at = line.find("llama-server").map_or(line, |i| &line[i..]);
        // The option list is mainline's (0c1e57098): ik's own flags are
        // checked by reading them back.
        if o.fork == Fork::Mainline {
            prop_assert_eq!(llama.refuses(at), None, "{}", line);
        }
        let (kv, concurrency) = (s.kv_dtype, s.concurrency);
        let read = read_command_line(&shell_words(line)).unwrap_or_else(|| panic!("not read: {line}"));
        let (back, _) = configured_engine(read.launcher.engine(), &read.config, EngineKind::LlamaCpp.with_defaults());
        let Engine::LlamaCpp(b) = back else { panic!("{line}: read back as {back:?}") };
        let slots = o.parallel.unwrap_or(concurrency).max(1);
        prop_assert_eq!(b.parallel, Some(slots), "{}", line);
        prop_assert_eq!(b.n_ctx, Some(o.n_ctx.unwrap_or(s.sequence_tokens() * slots)), "{}", line);
        prop_assert_eq!(b.n_gpu_layers, o.n_gpu_layers, "{}", line);
        prop_assert_eq!(
            (b.n_batch, b.n_ubatch, b.flash_attention),
            (o.n_batch, o.n_ubatch, o.flash_attention),
            "{}",
            line
        );
        let k = o.cache_type_k.or(CacheType::of(kv)).unwrap_or(CacheType::F16);
        let v = o.cache_type_v.or(Some(k)).unwrap_or(CacheType::F16);
        let f16 = |t: Option<CacheType>| t.unwrap_or(CacheType::F16);
        prop_assert_eq!((f16(b.cache_type_k), f16(b.cache_type_v)), (k, v), "{}", line);
        let layers = m.layout.num_layers as u64;
        prop_assert_eq!(b.n_cpu_moe.min(layers), o.n_cpu_moe.min(layers), "{}", line);
        prop_assert_eq!(
            (b.no_kv_offload, b.kv_unified, b.swa_full),
            (o.no_kv_offload, o.kv_unified, o.swa_full),
            "{}",
            line
        );
        prop_assert_eq!(b.tensor_overrides.as_str(), o.tensor_overrides.as_str(), "{}", line);
        prop_assert_eq!(
            (b.tensor_split.text(), b.split_mode, b.main_gpu),
            (o.tensor_split.text(), o.split_mode, o.main_gpu),
            "{}",
            line
        );
        // ik_llama.cpp has no `--fit` (its line says nothing of it, and the
        // plan's figures do not depend on it).
        if o.fork == Fork::Mainline {
            prop_assert_eq!(b.fit, o.fit, "{}", line);
            if o.fit == FitMode::On {
                prop_assert_eq!(b.fit_target_mib, o.fit_target_mib, "{}", line);
            }
        }
        prop_assert_eq!((b.mmproj, b.no_mmproj_offload), (o.mmproj, o.no_mmproj_offload), "{}", line);
        // An ik line names its fork by its flags; one that sets none reads
        // as mainline, which runs the same.
        // (The newest ik build fuses by default: `-fmoe` is gone, only
        // `-no-fmoe` is written.)
        let ik_set =
            o.mla.is_some() || o.attn_max_batch_mib.is_some() || o.fused_moe == Some(false) || o.run_time_repack;
        prop_assert_eq!(b.fork == Fork::Ik, ik_set, "{}", line);
        prop_assert_eq!(
            (b.mla, b.attn_max_batch_mib, b.run_time_repack),
            (o.mla, o.attn_max_batch_mib, o.run_time_repack),
            "{}",
            line
        );
        let fused = |x: llamacpp::Options| llamacpp::ik::fused_moe(llamacpp::Options { fork: Fork::Ik, ..x });
        prop_assert_eq!(fused(b), fused(o), "{}", line);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Issue 34: the `llama-server` line a plan prints is that plan:
        /// read back by the reader that reads a running server's command
        /// line, every setting is the plan's (as llama.cpp runs it: `-c`
        /// and `-np` resolved, `--cpu-moe` for every layer).
        #[test]
        fn every_llama_server_line_reads_back_as_its_plan(
            o in options(),
            id in pick(vec!["llama-3.1-8b", "qwen3-30b-a3b"]),
            gpus in 1usize..=2,
            kv in pick(vec![KvDtype::F16, KvDtype::Q8_0]),
            concurrency in 1u64..=3,
        ) {
            let m = model(id);
            let gpu = GpuSlot::from_catalog(shared::catalog::gpu("rtx-4090").expect("a catalog GPU"));
            let s = Scenario {
                weights: WeightFormat::parse("q4_k_m").expect("a GGUF type"),
                kv_dtype: kv,
                gpus: vec![gpu; gpus],
                concurrency,
                engine: Engine::LlamaCpp(o),
                ..Scenario::default()
            };
            // `-mg 1` on one GPU is refused as llama.cpp does.
            let Ok(valid) = s.clone().validate_for(&m) else { return Ok(()) };
            let line = llamacpp::server_command(&m, &valid);
            reads_back(&m, &s, o, &line)?;
        }

        /// Issue 34: the `llama-server` line `headroom estimate` prints for
        /// an Ollama plan launches what Ollama would: the llama.cpp
        /// settings its launch policy gives (`ollama::launch`).
        #[test]
        fn every_ollama_launch_reads_back_as_the_llama_cpp_it_runs(
            num_ctx in pick(vec![None, Some(8192), Some(32_768)]),
            num_parallel in 1u64..=3,
            kvt in pick(vec![None, Some(CacheType::Q8_0), Some(CacheType::Q4_0)]),
            fa in pick(vec![None, Some(FlashAttention::On), Some(FlashAttention::Off)]),
            num_gpu in pick(vec![None, Some(20), Some(1000)]),
            num_batch in pick(vec![None, Some(256), Some(4096)]),
            n_cpu_moe in pick(vec![0, 8, u64::from(u32::MAX)]),
            mmproj in any::<bool>(),
            id in pick(vec!["llama-3.1-8b", "qwen3-30b-a3b"]),
            gpus in 1usize..=2,
        ) {
            let m = model(id);
            let gpu = GpuSlot::from_catalog(shared::catalog::gpu("rtx-4090").expect("a catalog GPU"));
            let o = ollama::Options {
                num_ctx, num_parallel, kv_cache_type: kvt, flash_attention: fa, num_gpu, num_batch, n_cpu_moe, mmproj,
                ..Default::default()
            };
            let s = Scenario {
                weights: WeightFormat::parse("q4_k_m").expect("a GGUF type"),
                gpus: vec![gpu; gpus],
                engine: Engine::Ollama(o),
                ..Scenario::default()
            };
            let Ok(valid) = s.clone().validate_for(&m) else { return Ok(()) };
            let plan = shared::engines::EnginePlan::new(&m, valid);
            let line = plan.launched().expect("Ollama launches llama-server");
            let runs = plan.llamacpp_options().expect("the llama.cpp it runs");
            reads_back(&m, &s, runs, &line)?;
        }
    }
}

mod serving_round_trip {
    use super::*;
    use proptest::prelude::*;
    use shared::startup::{configured_engine, read_command_line};

    fn pick<T: Clone + std::fmt::Debug + 'static>(options: Vec<T>) -> impl Strategy<Value = T> {
        proptest::sample::select(options)
    }

    fn vllm_options() -> impl Strategy<Value = Engine> {
        (
            (
                pick(vec![None, Some(4096), Some(32_768)]),
                pick(vec![None, Some(0.8), Some(0.95)]),
                pick(vec![None, Some(64), Some(512)]),
                pick(vec![None, Some(4096), Some(16_384)]),
            ),
            (
                pick(vec![None, Some(16), Some(64)]),
                pick(vec![(0, 16), (2, 16), (4, 64)]),
                pick(vec![None, Some(20u64 << 30)]),
                any::<bool>(),
            ),
            pick(vec![(1u64, false), (1, true), (2, false), (2, true)]),
            (
                pick(vec![None, Some(vllm::All2All::DeepepLowLatency), Some(vllm::All2All::AllgatherReducescatter)]),
                pick(vec![0u64, 16]),
            ),
        )
            .prop_map(|((mml, gmu, mns, mbt), (bs, (loras, rank), kvmem, eager), (dp, ep), (a2a, ner))| {
                Engine::Vllm(vllm::Options {
                    max_model_len: mml,
                    gpu_memory_utilization: gmu,
                    max_num_seqs: mns,
                    max_num_batched_tokens: mbt,
                    block_size: bs,
                    max_loras: loras,
                    max_lora_rank: rank,
                    kv_cache_memory_bytes: kvmem,
                    enforce_eager: eager,
                    data_parallel_size: dp,
                    enable_expert_parallel: ep,
                    all2all_backend: a2a,
                    num_redundant_experts: ner,
                    ..Default::default()
                })
            })
    }

    fn sglang_options() -> impl Strategy<Value = Engine> {
        (
            pick(vec![None, Some(0.7), Some(0.88)]),
            pick(vec![None, Some(8192), Some(65_536)]),
            pick(vec![None, Some(2048), Some(8192)]),
            pick(vec![(1u64, false, 1u64), (2, false, 1), (2, true, 1), (2, true, 2), (1, false, 2)]),
            pick(vec![0u64, 16]),
            pick(vec![
                (false, sglang::DeepepMode::Auto),
                (true, sglang::DeepepMode::Auto),
                (true, sglang::DeepepMode::Normal),
                (true, sglang::DeepepMode::LowLatency),
            ]),
        )
            .prop_map(|(mfs, cl, chunk, (dp, dpa, ep), ner, (deepep, mode))| {
                Engine::Sglang(sglang::Options {
                    mem_fraction_static: mfs,
                    context_length: cl,
                    chunked_prefill_size: chunk,
                    dp_size: dp,
                    enable_dp_attention: dpa,
                    ep_size: ep,
                    ep_num_redundant_experts: ner,
                    moe_a2a_deepep: deepep,
                    deepep_mode: mode,
                    ..Default::default()
                })
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Issue 34: the `vllm serve` and `sglang.launch_server` lines a plan
        /// prints read back, by the reader of a running server's command
        /// line, as the plan: its split, KV dtype, in-flight quantisation and
        /// every setting it sets, over random plans.
        #[test]
        fn every_serving_launch_reads_back_as_its_plan(
            engine in prop_oneof![vllm_options(), sglang_options()],
            id in pick(vec!["llama-3.1-8b", "qwen3-30b-a3b"]),
            (tp, pp) in pick(vec![(1u64, 1usize), (2, 1), (4, 1), (2, 2)]),
            weights in pick(vec!["bf16", "fp8"]),
            kv in pick(vec![KvDtype::Bf16, KvDtype::Fp8, KvDtype::Int8]),
        ) {
            let m = model(id);
            let gpu = GpuSlot::from_catalog(shared::catalog::gpu("h100-sxm").expect("a catalog GPU"));
            // The data-parallel replicas each hold TP × PP GPUs.
            let dp = shared::plan::EngineRules::replicas(&engine) as usize;
            let s = Scenario {
                weights: WeightFormat::parse(weights).unwrap_or_else(|e| panic!("{e}")),
                kv_dtype: kv,
                gpus: vec![gpu; tp as usize * pp * dp],
                engine,
                tp,
                ..Scenario::default()
            };
            let Ok(valid) = s.clone().validate_for(&m) else { return Ok(()) };
            // A cache the engine does not keep is printed as its `auto` (the verdict says so).
            if s.engine.kv_refusal(kv, s.weights).is_some() {
                return Ok(());
            }
            let launch = s.engine.kind().commands().launch.expect("a whole launch");
            let line = launch(&m, &valid, "org/model");
            // Every flag is one the engine's own parser takes (from the program on).
            let (parser, marker) = match s.engine {
                Engine::Vllm(_) => (
                    Parser::new("vllm-0.24.0-serve.txt", "vllm-0.24.0-choices.txt", &["--quantization", "-q"]),
                    "vllm serve",
                ),
                Engine::Sglang(_) => {
                    (Parser::new("sglang-0.5.23-launch_server.txt", "sglang-0.5.23-choices.txt", &[]), "sglang.launch_server")
                }
                Engine::Transformers(_) | Engine::LlamaCpp(_) | Engine::Ollama(_) => panic!("not a serving engine"),
            };
            let at = line.find(marker).map_or(line.as_str(), |i| &line[i..]);
            prop_assert_eq!(parser.refuses(at), None, "{}", line);
            let read = read_command_line(&shell_words(&line)).unwrap_or_else(|| panic!("not read: {line}"));
            let c = &read.config;
            prop_assert_eq!(c.tensor_parallel.unwrap_or(1), tp, "{}", line);
            prop_assert_eq!(c.pipeline_parallel.unwrap_or(1), pp as u64, "{}", line);
            let kv_back = c.kv_cache_dtype.as_deref().map(|k| KvDtype::parse(k).unwrap_or_else(|e| panic!("{line}: {e}")));
            prop_assert_eq!(kv_back.unwrap_or_else(|| s.engine.kind().default_kv_dtype(&m, s.weights)), kv, "{}", line);
            let format = c.quantization.as_deref().map(|q| WeightFormat::parse(q).unwrap_or_else(|e| panic!("{line}: {e}")));
            prop_assert_eq!(format.unwrap_or_else(|| m.default_format()), s.weights, "{}", line);
            let (back, _) = configured_engine(read.launcher.engine(), c, s.engine.kind().with_defaults());
            match (s.engine, back) {
                (Engine::Vllm(o), Engine::Vllm(b)) => prop_assert_eq!(b, o, "{}", line),
                (Engine::Sglang(o), Engine::Sglang(b)) => prop_assert_eq!(b, o, "{}", line),
                (planned, back) => panic!("{line}: {planned:?} read back as {back:?}"),
            }
        }
    }
}

//! What each fuzz target runs: every parser of untrusted input, called the
//! way the page and the CLI call it, and carried through to an estimate in
//! every engine and a solver, so that hostile dimensions reach the
//! arithmetic. The libFuzzer targets (`fuzz_targets/`, built by `cargo xtask
//! fuzz` on nightly with the `libfuzzer` feature) are one line each over
//! these functions; `tests/replay.rs` runs every committed finding
//! (`regressions/<target>/`) through them on stable, in CI.
//!
//! A target fails by panicking (an overflow, a slice inside a character, an
//! assertion below), by running long, or by allocating past libFuzzer's
//! `-malloc_limit_mb`; refusing an input with an error is the right answer.

use shared::checkpoint::Checkpoint;
use shared::checkpoint::read::{self, Step};
use shared::engines::llamacpp::{self, Pattern, TensorOverrides};
use shared::engines::{Engine, EngineKind};
use shared::estimate::{GpuSlot, Scenario, estimate};
use shared::model::Model;
use shared::protocol::{ClientMessage, ServerMessage};
use shared::solve::{Question, solve};
use web::view_model::diagnose::findings_for;
use web::view_model::hub::HubState;
use web::view_model::read::Linked;
use web::view_model::resolve;

/// One target: its name (`fuzz_targets/<name>.rs`, `regressions/<name>/`)
/// and what it runs.
#[derive(Debug)]
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: &[Target] = &[
    Target { name: "safetensors", run: safetensors },
    Target { name: "gguf", run: gguf },
    Target { name: "config", run: config },
    Target { name: "config_checkpoint", run: config_checkpoint },
    Target { name: "oom", run: oom },
    Target { name: "startup", run: startup },
    Target { name: "link", run: link },
    Target { name: "protocol", run: protocol },
    Target { name: "ot_pattern", run: ot_pattern },
];

/// The share link the pasted texts are diagnosed against: the page's own
/// first plan, and a llama.cpp plan for its buffer checks.
const PLANS: &[&str] = &["", "?model=llama-3.1-8b&e=llama.cpp&gpu=rtx-4090&g=2"];

/// A safetensors file, as the CLI and the page read one: its header from the
/// first bytes (the file's size known), then a model from it alone.
pub fn safetensors(data: &[u8]) {
    if let Some(checkpoint) = safetensors_checkpoint(data) {
        plan_everything(Model::from_checkpoint("fuzz", None, &checkpoint).ok(), data.len());
    }
}

/// A GGUF file, read as the CLI and the page read one, then planned.
pub fn gguf(data: &[u8]) {
    if let Some(checkpoint) = gguf_checkpoint(data) {
        plan_everything(Model::from_checkpoint("fuzz", None, &checkpoint).ok(), data.len());
    }
}

/// A pasted `config.json`, as the page's config box and `--config` read it.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = shared::link::read_config(text);
    plan_everything(Model::from_config_json("fuzz", text).ok(), data.len());
}

/// A `config.json` beside a checkpoint (a Hub repository, a local folder):
/// two little-endian bytes give the config's length, the config follows,
/// then the checkpoint's first bytes (GGUF by its magic, else safetensors).
pub fn config_checkpoint(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else { return };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (config, file) = rest.split_at(len);
    let Ok(config) = std::str::from_utf8(config) else { return };
    let checkpoint = if file.starts_with(b"GGUF") { gguf_checkpoint(file) } else { safetensors_checkpoint(file) };
    if let Some(checkpoint) = checkpoint {
        plan_everything(Model::from_checkpoint("fuzz", Some(config), &checkpoint).ok(), data.len());
    }
}

/// A pasted out-of-memory error, in the page's "Diagnose an OOM" against
/// each plan (the CLI's `diagnose` runs the same parse and diagnosis).
pub fn oom(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for plan in PLANS {
        let _ = findings_for(plan, &HubState::Idle, &Linked, &text);
    }
}

/// A pasted engine start-up log: read, the plan rebuilt as it ran, every
/// term and buffer set beside the estimate, the what-ifs.
pub fn startup(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = shared::startup::read(&text);
    for plan in PLANS {
        let _ = findings_for(plan, &HubState::Idle, &Linked, &text);
    }
}

/// A share link opened in the page: decoded, its model and plan resolved
/// and estimated, fixes ranked; and the link the page writes back for it
/// must read back as the same plan.
pub fn link(data: &[u8]) {
    let query = String::from_utf8_lossy(data);
    let decoded = shared::link::decode(&query);
    let again = shared::link::decode(&shared::link::encode(&decoded.state));
    assert_eq!(again.state, decoded.state, "the link the page writes reads back as another plan");
    let Ok(model) = resolve::model(&decoded.state, &HubState::Idle) else { return };
    let Ok(scenario) = resolve::scenario(&decoded.state, &model) else { return };
    let s: Scenario = (*scenario).clone();
    let _ = estimate(&model, scenario);
    let _ = shared::fixes::fixes(&model, &s);
    let _ = solve(&model, &s, Question::MaxContext);
}

/// A WebSocket text frame, as the agent reads a client's and the page an
/// agent's; what decodes encodes and decodes again to itself.
pub fn protocol(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(m) = ClientMessage::decode(text) {
        assert_eq!(ClientMessage::decode(&m.encode()).ok(), Some(m));
    }
    if let Ok(m) = ServerMessage::decode(text) {
        assert_eq!(ServerMessage::decode(&m.encode()).ok(), Some(m));
    }
}

/// An `-ot` rule text (`PATTERN=BUFFER,…`, a link's `ot=` or the CLI's
/// `-ot`): compiled, matched against every tensor name of a preset, and
/// planned in llama.cpp, as the page does when a link carries it.
pub fn ot_pattern(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(p) = Pattern::new(text) {
        for name in ["blk.0.ffn_up_exps.weight", "output.weight", "token_embd.weight", "blk.47.attn_k.weight"] {
            let _ = p.is_match(name);
        }
    }
    let Ok(overrides) = TensorOverrides::parse(text) else { return };
    let Ok(model) = Model::preset("qwen3-30b-a3b") else { return };
    let options = llamacpp::Options { tensor_overrides: overrides, ..Default::default() };
    let s = Scenario { engine: Engine::LlamaCpp(options), weights: gguf_format(), ..Scenario::default() };
    if let Ok(valid) = s.clone().validate_for(&model) {
        let _ = estimate(&model, valid);
    }
}

/// The GGUF mix the llama.cpp plans use: Q4_K_M, what most people pull.
fn gguf_format() -> shared::formats::WeightFormat {
    shared::formats::WeightFormat::Gguf(shared::formats::GgufType::Q4KM)
}

fn safetensors_checkpoint(data: &[u8]) -> Option<Checkpoint> {
    let size = Some(data.len() as u64);
    let Ok(Step::Done(header)) = read::safetensors(data, size) else { return None };
    Checkpoint::from_safetensors(vec![("model.safetensors".into(), header)]).ok()
}

fn gguf_checkpoint(data: &[u8]) -> Option<Checkpoint> {
    let size = Some(data.len() as u64);
    let Ok(Step::Done(file)) = read::gguf(data, size) else { return None };
    Checkpoint::from_gguf(vec![("model.gguf".into(), file)]).ok()
}

/// The model in every engine on one and two GPUs, in the checkpoint's own
/// format where it has one: each estimate, and a solver that re-runs it in
/// one engine, picked by `pick` (the input's length), so that every engine's
/// solvers are reached over a run and no one input does the work of five
/// (a DeepSeek-V3 config took 0.2 s under AddressSanitizer with all five).
fn plan_everything(model: Option<Model>, pick: usize) {
    let Some(model) = model else { return };
    let solved = EngineKind::ALL[pick % EngineKind::ALL.len()];
    for &kind in EngineKind::ALL {
        for gpus in [1, 2] {
            let s = Scenario {
                weights: match kind {
                    EngineKind::LlamaCpp | EngineKind::Ollama if model.checkpoint.is_none() => gguf_format(),
                    EngineKind::LlamaCpp
                    | EngineKind::Ollama
                    | EngineKind::Transformers
                    | EngineKind::Vllm
                    | EngineKind::Sglang => model.default_format(),
                },
                engine: kind.with_defaults(),
                gpus: vec![GpuSlot::custom("fuzz", 24 << 30); gpus],
                // Tensor parallel where the engine splits tensors; a layer split elsewhere.
                tp: match kind {
                    EngineKind::Vllm | EngineKind::Sglang => gpus as u64,
                    EngineKind::Transformers | EngineKind::LlamaCpp | EngineKind::Ollama => 1,
                },
                ..Scenario::default()
            };
            if let Ok(valid) = s.clone().validate_for(&model) {
                let e = estimate(&model, valid);
                assert!(e.per_gpu.iter().all(|g| g.total_bytes == g.budget.total_bytes()), "a total is its parts");
            }
            if gpus == 1 && kind == solved {
                let question = match kind {
                    EngineKind::LlamaCpp | EngineKind::Ollama => Question::MaxGpuLayers,
                    EngineKind::Transformers | EngineKind::Vllm | EngineKind::Sglang => Question::MaxConcurrency,
                };
                let _ = solve(&model, &s, question);
            }
        }
    }
}

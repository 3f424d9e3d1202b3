//! Every architecture reader against what transformers itself builds.
//!
//! `shared/tests/fixtures/arch/*.json` are configs (the transformers config
//! classes' defaults, `defaults-*.json`, and real Hub configs, see
//! `sources.json`); `counts.json` holds the unique-parameter counts that
//! `scripts/param-oracle.py` produced by instantiating each of them on the meta
//! device, with the transformers version that made them. No count is typed in
//! here: where a reader differs on purpose, the difference is computed from
//! the oracle's own per-module counts or from the config, and explained.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use shared::arch::{Architecture, Family, Ffn, LayerAttention};

#[derive(Deserialize)]
struct Counts {
    transformers: String,
    counts: BTreeMap<String, Count>,
}

#[derive(Deserialize)]
struct Count {
    class: String,
    total: u64,
    parts: BTreeMap<String, u64>,
    /// Every parameter's module path, decoder-layer indices as `*`.
    #[serde(default)]
    modules: Vec<String>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/arch")
}

fn counts() -> Counts {
    let text = std::fs::read_to_string(dir().join("counts.json")).unwrap_or_else(|e| panic!("counts.json: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("counts.json parses: {e}"))
}

/// A fixture's JSON, to change before reading it.
fn fixture_json(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read(name: &str) -> Architecture {
    let text = std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap_or_else(|e| panic!("fixture: {e}"));
    Architecture::from_config_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Vision towers and projectors that these readers do not count yet: the
/// oracle's parameters under those modules.
const VISION_MODULES: &[&str] = &[
    "model.visual",
    "vision_model",
    "multi_modal_projector",
    "model.vision_tower",
    "model.multi_modal_projector",
    "model.mm_projector",
    "model.vision_model",
    "model.connector",
];

/// The count a reader must give for a fixture, and why it differs from the
/// oracle's total if it does.
fn expected(arch: &Architecture, c: &Count) -> (u64, Vec<String>) {
    let mut want = c.total;
    let mut why = Vec::new();
    if arch.vision.is_none() {
        let vision: u64 = VISION_MODULES.iter().filter_map(|m| c.parts.get(*m)).sum();
        if vision > 0 {
            want -= vision;
            why.push(format!("vision tower and projector not read ({vision} parameters in the oracle)"));
        }
    }
    // DeepSeek-style routers keep `e_score_correction_bias` as a buffer in
    // transformers (not a parameter) but as a tensor in the checkpoint; the
    // readers count it because it takes memory.
    // ERNIE 4.5's is a parameter (transformers 5.25 `modeling_ernie4_5_moe.py`,
    // `Ernie4_5_MoeStatics`), counted by the oracle already.
    let buffer = arch.family != Family::Ernie45Moe;
    if let Some(m) = arch.text.moe.filter(|m| buffer && m.router_bias && !m.expert_bias) {
        let moe_layers = arch.text.layers.iter().filter(|l| l.ffn == Ffn::Moe).count() as u64;
        want += moe_layers * m.num_experts;
        why.push(format!("{moe_layers} × {} router correction biases (buffers in transformers)", m.num_experts));
    }
    (want, why)
}

#[test]
fn every_reader_matches_the_transformers_count() {
    let counts = counts();
    assert!(counts.transformers.starts_with('5'), "the oracle must be transformers ≥ 5");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, c) in &counts.counts {
        if PENDING.contains(&name.as_str()) {
            continue;
        }
        let arch = read(name);
        assert!(
            !arch.warnings.iter().any(|w| w.starts_with("unknown architecture")),
            "{name} ({}) is read generically: {:?}",
            c.class,
            arch.warnings
        );
        let (want, why) = expected(&arch, c);
        let got = arch.parameters();
        if got != want {
            failures.push(format!(
                "{name} ({}): reader {got}, transformers {} → expected {want} [{}] (diff {})",
                c.class,
                c.total,
                why.join("; "),
                got as i128 - want as i128
            ));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{} of {checked} differ:\n{}", failures.len(), failures.join("\n"));
}

/// Fixtures of families without a reader yet (issue 13 lists them): they
/// must still be read generically with a warning, or refused with an error —
/// never silently as a known family. Adding a reader fails this test until
/// the fixture leaves the list.
/// Empty since every family the issue lists has a reader; kept so that a
/// fixture added before its reader has a place to wait.
const PENDING: &[&str] = &[];

#[test]
fn pending_families_are_not_read_as_known() {
    for name in PENDING {
        let text =
            std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap_or_else(|e| panic!("fixture: {e}"));
        if let Ok(arch) = Architecture::from_config_json(&text) {
            assert!(
                arch.warnings.iter().any(|w| w.starts_with("unknown architecture")),
                "{name} is now read as {:?}: move it out of PENDING",
                arch.family
            );
        }
    }
}

#[test]
fn every_fixture_has_an_oracle_count() {
    let counts = counts();
    for entry in std::fs::read_dir(dir()).unwrap_or_else(|e| panic!("fixture dir: {e}")) {
        let path = entry.unwrap_or_else(|e| panic!("entry: {e}")).path();
        // `remote/`: configs of remote code, which the oracle cannot build.
        if path.is_dir() {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        if stem == "counts" || stem == "sources" || KNOWN_UNCOUNTED.contains(&stem.as_str()) {
            continue;
        }
        assert!(counts.counts.contains_key(&stem), "{stem}.json has no count: run scripts/param-oracle.py {stem}");
    }
}

/// Fixtures the oracle could not build, each with the reason it gave.
const KNOWN_UNCOUNTED: &[&str] = &[
    // Gemma3nForConditionalGeneration needs `timm` and `pillow` for its vision
    // tower (transformers raises ImportError); its text model is counted as
    // defaults-gemma3n_text.
    "defaults-gemma3n",
    // DeepseekV4ForCausalLM was not run through the oracle (no torch in the
    // session that added it); `deepseek_v4_counts_its_modules` derives the
    // count from the modules instead.
    "deepseek-v4-flash-0731",
];

/// The presets of this generation are fixture configs plus, for gpt-oss, the
/// Hub's `quantization_config`: their counts are the oracle's.
#[test]
fn new_presets_count_what_transformers_builds() {
    let counts = counts();
    for (preset, fixture) in [
        ("gpt-oss-20b", "gpt-oss-20b"),
        ("gpt-oss-120b", "defaults-gpt_oss"),
        ("qwen3.5-35b-a3b", "defaults-qwen3_5_moe"),
        ("llama-4-scout", "defaults-llama4"),
        ("minimax-m2", "defaults-minimax_m2"),
        ("glm-4.5-air", "glm-4.5-air"),
        ("nemotron-nano-9b-v2", "nemotron-nano-9b-v2"),
        ("lfm2-1.2b", "lfm2-1.2b"),
        ("qwen3.5-27b", "qwen3.5-27b"),
        ("gemma-4-31b", "gemma-4-31b"),
        ("gemma-4-26b-a4b", "gemma-4-26b-a4b"),
        ("qwen3-next-80b-a3b", "qwen3-next-80b-a3b"),
        ("granite-4.0-h-tiny", "granite-4.0-h-tiny"),
    ] {
        let m = shared::model::Model::preset(preset).unwrap_or_else(|e| panic!("{preset}: {e}"));
        let c = &counts.counts[fixture];
        let (want, why) = expected(&m.arch, c);
        assert_eq!(m.parameters(), want, "{preset} vs {fixture} ({})", why.join("; "));
    }
    // gpt-oss ships its experts in MXFP4 and keeps attention in bf16.
    let m = shared::model::Model::preset("gpt-oss-20b").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        shared::formats::WeightFormat::from_checkpoint(m.arch.checkpoint_dtype, m.arch.quantization),
        shared::formats::WeightFormat::Mxfp4 { experts_only: true }
    );
}

/// DeepSeek sparse attention keeps the MLA latent and, beside it, the
/// indexer's keys (FP8 + an fp32 scale per 128 in vLLM) for every token.
/// Its FP8 latent is FlashMLA's scaled row: the latent in fp8, an fp32
/// scale per 128 of it, the RoPE part in bf16 (656 bytes, not 576).
#[test]
fn dsa_indexer_keys_are_a_cache_of_their_own() {
    use shared::arch::AttentionKind;
    use shared::kv::{KvDtype, layer_costs};
    for name in ["defaults-deepseek_v32", "defaults-glm_moe_dsa"] {
        let arch = read(name);
        let AttentionKind::Mla(m) = arch.text.attention else { panic!("{name}: not MLA") };
        let ix = m.indexer.unwrap_or_else(|| panic!("{name}: no indexer"));
        let indexer = ix.head_dim + ix.head_dim / 128 * 4;
        let latent = m.kv_lora_rank + m.qk_rope_head_dim;
        let scaled = m.kv_lora_rank + m.kv_lora_rank / 128 * 4 + m.qk_rope_head_dim * 2;
        assert_eq!(scaled, 656, "{name}");
        for (dtype, latent_bytes) in [(KvDtype::Bf16, latent * 2), (KvDtype::Fp8, scaled)] {
            let costs = layer_costs(&arch.text, dtype, 8);
            assert!(costs.iter().all(|c| c.bytes_per_token == latent_bytes + indexer), "{name} {dtype:?}: {costs:?}");
        }
    }
    // A plain MLA model (no indexer) keeps the unscaled fp8 latent.
    let v3 = shared::model::Model::preset("deepseek-v3").unwrap_or_else(|e| panic!("{e}"));
    let AttentionKind::Mla(m) = v3.arch.text.attention else { panic!("deepseek-v3: not MLA") };
    assert!(m.indexer.is_none());
    let costs = layer_costs(&v3.arch.text, KvDtype::Fp8, 8);
    assert!(costs.iter().all(|c| c.bytes_per_token == m.kv_lora_rank + m.qk_rope_head_dim), "{costs:?}");
}

/// MiMo-V2-Flash's sliding layers hold twice the KV heads of its full ones
/// (`MiMoV2FlashAttention`: `num_key_value_heads * 2 if is_swa`), with keys
/// of `head_dim` and values of `v_head_dim`; under TP each rank keeps its
/// share of each layer's own heads.
#[test]
fn mimo_sliding_layers_cache_their_own_heads() {
    use shared::arch::LayerAttention;
    use shared::kv::{KvDtype, layer_costs};
    let arch = read("defaults-mimo_v2_flash");
    let t = &arch.text;
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("defaults-mimo_v2_flash.json")).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let kv = raw["num_key_value_heads"].as_u64().unwrap_or_default();
    let (k_dim, v_dim) = (raw["head_dim"].as_u64().unwrap_or_default(), raw["v_head_dim"].as_u64().unwrap_or_default());
    let window = raw["sliding_window"].as_u64().unwrap_or_default();
    assert!(kv > 0 && k_dim != v_dim && window > 0);
    for tp in [1, 2, 8] {
        let costs = layer_costs(t, KvDtype::Bf16, tp);
        let per_rank = |heads: u64| if tp >= heads { 1 } else { heads.div_ceil(tp) };
        for (i, (l, c)) in t.layers.iter().zip(&costs).enumerate() {
            let (heads, want_window) = match l.attention {
                LayerAttention::Sliding(w) => (kv * 2, Some(w)),
                LayerAttention::Full => (kv, None),
                other => panic!("layer {i}: {other:?}"),
            };
            assert_eq!(c.bytes_per_token, per_rank(heads) * (k_dim + v_dim) * 2, "layer {i}, tp {tp}");
            assert_eq!(c.window, want_window, "layer {i}");
        }
    }
    let full = t.layers.iter().filter(|l| l.attention == LayerAttention::Full).count();
    // The first layer and every 6th after it are global (`__post_init__`).
    assert_eq!(full, (0..t.layers.len()).filter(|&i| i == 0 || (i + 1) % 6 == 0).count());
    assert_eq!(t.layers[1].attention, LayerAttention::Sliding(window));
}

/// vLLM's state storage for a bf16 model (`engines::vllm::state_rules`:
/// conv and SSM state in the model dtype, `kernel − 1` conv columns).
const VLLM_BF16: shared::state::StateRules =
    shared::state::StateRules { conv_bytes: 2, ssm_bytes: 2, conv_columns_full_kernel: false, draft_conv_columns: 0 };

/// Falcon-H1 runs attention and Mamba-2 side by side: every layer keeps a KV
/// cache that grows and a Mamba-2 state that does not (vLLM's
/// `mamba2_state_shape`: conv over x, B, C of `kernel − 1` columns, an SSM
/// state of heads × head_dim × d_state).
#[test]
fn falcon_h1_layers_hold_a_cache_and_a_state() {
    use shared::arch::{LayerAttention, Recurrent};
    use shared::kv::{KvDtype, layer_costs};
    use shared::state::layer_states;
    let arch = read("defaults-falcon_h1");
    let t = &arch.text;
    let Some(Recurrent::Mamba2 { heads, head_dim, d_state, groups, conv_kernel, .. }) = t.recurrent else {
        panic!("no Mamba-2 mixer")
    };
    let kv = layer_costs(t, KvDtype::Bf16, 1);
    let states = layer_states(t, VLLM_BF16, 1);
    let conv = (heads * head_dim + 2 * groups * d_state) * (conv_kernel - 1) * 2;
    let ssm = heads * head_dim * d_state * 2;
    for (i, ((l, c), s)) in t.layers.iter().zip(&kv).zip(&states).enumerate() {
        assert_eq!(l.attention, LayerAttention::Full, "layer {i}");
        assert_eq!(c.bytes_per_token, t.num_kv_heads * t.head_dim * 2 * 2, "layer {i}");
        assert_eq!((s.conv_bytes, s.ssm_bytes), (conv, ssm), "layer {i}");
    }
}

/// Gemma 4: global layers cache `num_global_key_value_heads` keys and values
/// of `global_head_dim` (the keys serve as values but both are cached: k_norm
/// and RoPE on one, v_norm on the other); the last `num_kv_shared_layers`
/// layers read an earlier layer's cache and keep none.
#[test]
fn gemma4_global_and_shared_layers_cache_what_they_own() {
    use shared::arch::LayerAttention;
    use shared::kv::{KvDtype, layer_costs};
    let raw = fixture_json("gemma4-every-option");
    let get = |k: &str| raw[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    let arch = read("gemma4-every-option");
    let costs = layer_costs(&arch.text, KvDtype::Bf16, 1);
    let first_shared = get("num_hidden_layers") - get("num_kv_shared_layers");
    let mut seen = (0, 0, 0);
    for (i, (l, c)) in arch.text.layers.iter().zip(&costs).enumerate() {
        let want = if i as u64 >= first_shared {
            seen.2 += 1;
            0
        } else if let LayerAttention::Sliding(w) = l.attention {
            assert_eq!(w, get("sliding_window"));
            seen.0 += 1;
            get("num_key_value_heads") * get("head_dim") * 2 * 2
        } else {
            seen.1 += 1;
            get("num_global_key_value_heads") * get("global_head_dim") * 2 * 2
        };
        assert_eq!(c.bytes_per_token, want, "layer {i}");
    }
    assert!(seen.0 > 0 && seen.1 > 0 && seen.2 > 0, "{seen:?}");
}

/// Jamba's Mamba layers hold vLLM's `mamba1_state_shape` per sequence (conv:
/// inner × (kernel − 1), SSM: inner × d_state, both split by TP); only its
/// attention layers (every 8th from the 4th) keep a KV cache.
#[test]
fn jamba_mamba_layers_hold_a_state_and_attention_layers_a_cache() {
    use shared::arch::{LayerAttention, Recurrent};
    use shared::kv::{KvDtype, layer_costs};
    use shared::state::layer_states;
    let arch = read("defaults-jamba");
    let t = &arch.text;
    let Some(Recurrent::Mamba1 { inner, d_state, conv_kernel, .. }) = t.recurrent else { panic!("no Mamba mixer") };
    for tp in [1, 2, 4] {
        let kv = layer_costs(t, KvDtype::Bf16, tp);
        let states = layer_states(t, VLLM_BF16, tp);
        for (i, ((l, c), s)) in t.layers.iter().zip(&kv).zip(&states).enumerate() {
            if i % 8 == 4 {
                assert_eq!(l.attention, LayerAttention::Full, "layer {i}");
                assert!(c.bytes_per_token > 0 && s.bytes() == 0, "layer {i}");
            } else {
                assert_eq!(c.bytes_per_token, 0, "layer {i}");
                let per_rank = inner.div_ceil(tp);
                assert_eq!((s.conv_bytes, s.ssm_bytes), (per_rank * (conv_kernel - 1) * 2, per_rank * d_state * 2));
            }
        }
    }
}

/// Every fixture whose oracle built a vision module is read with its tower.
#[test]
fn vision_towers_are_read_where_transformers_builds_one() {
    let counts = counts();
    for (name, c) in &counts.counts {
        if KNOWN_UNCOUNTED.contains(&name.as_str()) || PENDING.contains(&name.as_str()) {
            continue;
        }
        let built = VISION_MODULES.iter().any(|m| c.parts.get(*m).is_some_and(|&n| n > 0));
        assert_eq!(read(name).vision.is_some(), built, "{name}: tower read vs built by transformers");
    }
}

/// Gemma 3n's last `num_kv_shared_layers` layers keep no cache of their own;
/// the others cache `num_key_value_heads` keys and values of `head_dim`.
#[test]
fn gemma3n_shared_layers_keep_no_cache() {
    use shared::kv::{KvDtype, layer_costs};
    let raw = fixture_json("defaults-gemma3n_text");
    let get = |k: &str| raw[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    let arch = read("defaults-gemma3n_text");
    let first_shared = (get("num_hidden_layers") - get("num_kv_shared_layers")) as usize;
    let own = get("num_key_value_heads") * get("head_dim") * 2 * 2;
    for (i, c) in layer_costs(&arch.text, KvDtype::Bf16, 1).iter().enumerate() {
        assert_eq!(c.bytes_per_token, if i < first_shared { own } else { 0 }, "layer {i}");
    }
    assert!(first_shared > 0 && first_shared < arch.text.layers.len());
}

/// Gemma 4 31B against its own checkpoint: the report that printed its
/// config (see `sources.json`, "gemma-4-31b") lists the checkpoint's tensors,
/// 31,273,088,876 elements. Of those, these are buffers, stored but not
/// parameters (transformers 5.24.0 `modeling_gemma4.py`): one `layer_scalar`
/// per decoder layer, and with `standardize` the vision tower's `std_bias`
/// and `std_scale` of the vision width each.
#[test]
fn gemma4_31b_counts_its_checkpoints_tensors() {
    const CHECKPOINT_ELEMENTS: u64 = 31_273_088_876;
    let m = shared::model::Model::preset("gemma-4-31b").unwrap_or_else(|e| panic!("{e}"));
    let vision = m.arch.vision.as_ref().expect("Gemma 4 31B has a vision tower");
    let buffers = m.arch.text.num_layers() + 2 * vision.hidden_size;
    assert_eq!(m.parameters() + buffers, CHECKPOINT_ELEMENTS);
    assert_eq!(read("gemma-4-31b").parameters(), m.parameters(), "the preset is the fixture");
}

/// Qwen3-Next 80B-A3B against its own checkpoint: the report that printed
/// its config (see `sources.json`, "qwen3-next-80b-a3b") lists the
/// checkpoint's tensors, 81,324,862,720 elements. Beside what transformers
/// builds they hold one multi-token-prediction layer, `mtp.*` (vLLM 0.11
/// `qwen3_next_mtp.py`, `Qwen3NextMultiTokenPredictor`): `fc` from the
/// concatenated embedding and hidden state (2H → H), the norms
/// `pre_fc_norm_embedding`, `pre_fc_norm_hidden` and `norm`, and one
/// full-attention decoder layer with its gated query, q/k norms and the
/// sparse MoE block with its shared expert and gate.
#[test]
fn qwen3_next_counts_its_checkpoints_tensors_but_the_mtp_layer() {
    const CHECKPOINT_ELEMENTS: u64 = 81_324_862_720;
    let m = shared::model::Model::preset("qwen3-next-80b-a3b").unwrap_or_else(|e| panic!("{e}"));
    let raw = fixture_json("qwen3-next-80b-a3b");
    let get = |k: &str| raw[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    let (h, heads, kv, d) =
        (get("hidden_size"), get("num_attention_heads"), get("num_key_value_heads"), get("head_dim"));
    let attention = h * heads * d * 2 + 2 * h * kv * d + heads * d * h + 2 * d;
    let (experts, e, s) = (get("num_experts"), get("moe_intermediate_size"), get("shared_expert_intermediate_size"));
    let moe = experts * 3 * e * h + experts * h + 3 * s * h + h;
    let mtp = 2 * h * h + 3 * h + attention + moe + 2 * h;
    assert_eq!(m.parameters() + mtp, CHECKPOINT_ELEMENTS);
    assert_eq!(read("qwen3-next-80b-a3b").parameters(), m.parameters(), "the preset is the fixture");
}

/// The layers' attention as transformers' config classes fill `layer_types`
/// when a config leaves it out (OLMo 3 and EXAONE MoE: `(i + 1) % 4 != 0` slides; dots1:
/// `i >= max_window_layers` slides): the fixtures hold the list the class
/// wrote, and the readers give the same layers without it.
#[test]
fn sliding_patterns_without_layer_types_are_the_config_classes() {
    use shared::arch::LayerAttention;
    for name in ["defaults-olmo3", "dots1-every-option", "defaults-exaone_moe"] {
        let mut raw = fixture_json(name);
        let listed = read(name).text.layers;
        assert!(listed.iter().any(|l| matches!(l.attention, LayerAttention::Sliding(_))), "{name} slides");
        assert!(listed.iter().any(|l| l.attention == LayerAttention::Full), "{name} has global layers");
        raw.as_object_mut().map(|m| m.remove("layer_types")).unwrap_or_else(|| panic!("{name}: an object"));
        let unlisted = Architecture::from_config_json(&raw.to_string()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(unlisted.text.layers, listed, "{name}");
    }
}

/// ERNIE 4.5 MoE's expert layers run from `moe_layer_start_index` to
/// `moe_layer_end_index`, −1 meaning the last layer
/// (`Ernie4_5_MoeConfig.__post_init__`).
#[test]
fn ernie_experts_span_their_index_range() {
    let mut raw = fixture_json("defaults-ernie4_5_moe");
    let experts = |raw: &serde_json::Value| -> Vec<bool> {
        let arch = Architecture::from_config_json(&raw.to_string()).unwrap_or_else(|e| panic!("{e}"));
        arch.text.layers.iter().map(|l| l.ffn == Ffn::Moe).collect()
    };
    let n = raw["num_hidden_layers"].as_u64().unwrap_or_else(|| panic!("layers")) as usize;
    let start = raw["moe_layer_start_index"].as_u64().unwrap_or_else(|| panic!("start")) as usize;
    let all = experts(&raw);
    assert_eq!(all.iter().position(|&m| m), Some(start));
    assert!(all[start..].iter().all(|&m| m) && all.len() == n);
    raw["moe_layer_end_index"] = serde_json::json!(-1);
    assert_eq!(experts(&raw), all, "−1 is the last layer");
    raw["moe_layer_end_index"] = serde_json::json!(start + 1);
    let two = experts(&raw);
    assert_eq!(two.iter().filter(|&&m| m).count(), 2);
    raw["moe_layer_end_index"] = serde_json::json!(-2);
    assert!(Architecture::from_config_json(&raw.to_string()).is_err(), "only −1 counts from the end");
}

/// transformers' explicit `device_map` for a model split over two GPUs names
/// modules the model has, and places every one of them: each of the oracle's
/// parameter paths (decoder-layer indices as `*`) lies under one entry of the
/// map, and each entry is a module of the model. The snippet loads the
/// checkpoint with the auto class that builds it whole.
#[test]
fn device_maps_name_and_place_every_module_transformers_builds() {
    use shared::engines::{EngineKind, EnginePlan};
    use shared::plan::{GpuSlot, Scenario};
    let counts = counts();
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, c) in &counts.counts {
        let text = std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap_or_else(|e| panic!("{e}"));
        let m = shared::model::Model::from_config_json(name, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let big = 1u64 << 50; // room for any fixture: the split is what is checked
        let s = Scenario {
            gpus: vec![GpuSlot::custom("A", big), GpuSlot::custom("B", big)],
            engine: EngineKind::Transformers.with_defaults(),
            ..Scenario::default()
        };
        let Ok(v) = s.validate_for(&m) else { panic!("{name}: a two-GPU transformers plan") };
        let ep = EnginePlan::new(&m, v);
        let map = ep.device_map().unwrap_or_else(|| panic!("{name}: a layer-wise split has a map"));
        let mut entries: Vec<String> = map
            .modules
            .iter()
            .map(|(k, _)| match k.rsplit_once('.') {
                Some((prefix, i)) if i.bytes().all(|b| b.is_ascii_digit()) => format!("{prefix}.*"),
                _ => k.clone(),
            })
            .collect();
        entries.dedup();
        let under = |module: &str, entry: &str| module == entry || module.starts_with(&format!("{entry}."));
        for module in c.modules.iter().filter(|module| !entries.iter().any(|e| under(module, e))) {
            failures.push(format!("{name}: {module} is in no entry"));
        }
        for e in entries.iter().filter(|e| !c.modules.iter().any(|module| under(module, e))) {
            failures.push(format!("{name}: {e} is not a module of {}", c.class));
        }
        let class = if m.arch.multimodal { "AutoModelForImageTextToText" } else { "AutoModelForCausalLM" };
        let snippet = map.snippet("org/m", ep.plan.scenario.weights);
        assert!(snippet.contains(&format!("from transformers import {class}")), "{name}: {snippet}");
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 60, "{checked} fixtures");
}

/// A key a Hub config leaves out takes the config class's default: each
/// class-defaults fixture read without them gives the same model (the
/// fixtures hold every default, written by transformers itself).
#[test]
fn absent_keys_take_the_config_classes_defaults() {
    let cases: &[(&str, &[&str])] = &[
        ("defaults-mistral4", &["q_lora_rank", "n_routed_experts", "n_shared_experts", "num_experts_per_tok"]),
        ("defaults-glm4_moe_lite", &["q_lora_rank", "n_routed_experts", "n_shared_experts", "num_experts_per_tok"]),
        ("defaults-glm4v_moe", &["text_config.attention_bias", "text_config.vocab_size"]),
        ("defaults-glm4v", &["vision_config.depth"]),
        ("defaults-ernie4_5_moe", &["moe_k", "moe_num_experts"]),
        ("dots1-every-option", &["layer_types"]),
        ("defaults-llava", &["vision_config.model_type"]),
        ("defaults-llava_onevision", &["vision_config.model_type"]),
    ];
    for (name, keys) in cases {
        let mut raw = fixture_json(name);
        for key in *keys {
            let (object, key) = match key.split_once('.') {
                Some((sub, key)) => (&mut raw[sub], key),
                None => (&mut raw, *key),
            };
            let removed = object.as_object_mut().and_then(|o| o.remove(key));
            assert!(removed.is_some(), "{name}: {key} is in the fixture");
        }
        let without = Architecture::from_config_json(&raw.to_string()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let full = read(name);
        assert_eq!(without.parameters(), full.parameters(), "{name} without {keys:?}");
        assert_eq!(without.text.layers, full.text.layers, "{name} without {keys:?}");
    }
}

/// dots1 slides only from `max_window_layers` (62 by default) on: a config
/// with a window and neither `layer_types` nor `max_window_layers` slides
/// nowhere in a shorter model (`Dots1Config.__post_init__`).
#[test]
fn dots1_slides_from_its_default_window_layer() {
    use shared::arch::LayerAttention;
    let mut raw = fixture_json("dots1-every-option");
    let o = raw.as_object_mut().unwrap_or_else(|| panic!("an object"));
    o.remove("layer_types");
    o.remove("max_window_layers");
    let arch = Architecture::from_config_json(&raw.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert!(arch.text.layers.len() < 62);
    assert!(arch.text.layers.iter().all(|l| l.attention == LayerAttention::Full));
}

/// A wrapper whose tower Headroom does not read (LLaVA holding a Pixtral
/// tower, as Pixtral-12B's `-hf` checkpoint does) is warned about and gets no
/// explicit device map: one that leaves the tower's modules out does not load.
#[test]
fn an_unread_tower_gets_a_warning_and_no_device_map() {
    use shared::engines::{EngineKind, EnginePlan};
    use shared::plan::{GpuSlot, Scenario};
    let mut raw = fixture_json("defaults-llava");
    raw["vision_config"]["model_type"] = serde_json::json!("pixtral");
    let m = shared::model::Model::from_config_json("llava-pixtral", &raw.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert!(m.arch.vision.is_none() && m.arch.towers_unread);
    assert!(m.arch.warnings.iter().any(|w| w.contains("vision tower is not counted")), "{:?}", m.arch.warnings);
    let s = Scenario {
        gpus: vec![GpuSlot::custom("A", 1 << 40), GpuSlot::custom("B", 1 << 40)],
        engine: EngineKind::Transformers.with_defaults(),
        ..Scenario::default()
    };
    let ep = EnginePlan::new(&m, s.validate_for(&m).unwrap_or_else(|e| panic!("{e}")));
    assert!(ep.device_map().is_none());
    // Kimi K2.5's merge kernel is bounded like every other size.
    let mut raw = fixture_json("defaults-kimi_k25");
    raw["vision_config"]["merge_kernel_size"] = serde_json::json!([u64::MAX, u64::MAX]);
    assert!(Architecture::from_config_json(&raw.to_string()).is_err());
}

/// EXAONE 3.x checkpoints name the layer count `num_layers`, the config
/// class's alias of `num_hidden_layers`.
#[test]
fn exaone_reads_its_own_layer_count_key() {
    let mut raw = fixture_json("defaults-exaone");
    let o = raw.as_object_mut().unwrap_or_else(|| panic!("an object"));
    o.remove("num_hidden_layers");
    o.insert("num_layers".into(), serde_json::json!(5));
    let arch = Architecture::from_config_json(&raw.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(arch.text.layers.len(), 5);
    assert!(!arch.warnings.iter().any(|w| w.starts_with("unknown architecture")), "{:?}", arch.warnings);
}

/// An explicit `null` head width or key/value head count is what the config
/// classes fall back from (`hidden_size // num_attention_heads`, every
/// head), not the class's numeric default: ERNIE 4.5's 128-wide, 2-KV-head
/// defaults become 64 wide and 16 heads at its 1,024 width and 16 heads.
#[test]
fn explicit_nulls_fall_back_as_transformers_does() {
    let mut raw = fixture_json("defaults-ernie4_5");
    let get = |raw: &serde_json::Value, k: &str| raw[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    let (hidden, heads) = (get(&raw, "hidden_size"), get(&raw, "num_attention_heads"));
    assert_ne!(get(&raw, "head_dim"), hidden / heads, "the fixture's default differs from the fallback");
    raw["head_dim"] = serde_json::Value::Null;
    raw["num_key_value_heads"] = serde_json::Value::Null;
    let arch = Architecture::from_config_json(&raw.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((arch.text.head_dim, arch.text.num_kv_heads), (hidden / heads, heads));
}

/// InternVL's own repositories ship remote code (`internvl_chat`): InternViT
/// under the keys of `InternVisionConfig`, the language model in
/// `llm_config`. Read so, InternVL3-1B is the same model as its translation
/// into transformers' `internvl` config, whose count is the oracle's; and
/// InternViT-6B's options (RMSNorm, q/k norms, no q/k/v bias: the remote
/// code's defaults) count as their native keys do.
#[test]
fn internvl_chat_counts_as_transformers_own_internvl() {
    let remote_text = std::fs::read_to_string(dir().join("remote/internvl3-1b.json")).expect("remote fixture");
    let remote = Architecture::from_config_json(&remote_text).unwrap_or_else(|e| panic!("internvl_chat: {e}"));
    let native = read("internvl3-1b-hf");
    assert_eq!(remote.family, Family::Qwen2, "the language model is llm_config's");
    assert_eq!(remote.parameters(), counts().counts["internvl3-1b-hf"].total, "the oracle's count");
    assert_eq!(remote.text, native.text);
    assert_eq!(
        remote.vision.as_ref().map(|v| v.linear_params + v.other_params),
        native.vision.as_ref().map(|v| v.linear_params + v.other_params)
    );

    // The 6B tower as InternVL3-38B ships it, against the native keys.
    let six_b = |native: bool| {
        let mut raw: serde_json::Value = serde_json::from_str(&remote_text).expect("json");
        let keys = if native {
            serde_json::json!({"model_type": "internvl_vision", "hidden_size": 3200, "intermediate_size": 12800,
                "num_hidden_layers": 45, "num_attention_heads": 25, "norm_type": "rms_norm",
                "use_qk_norm": true, "attention_bias": false, "image_size": 448, "patch_size": 14})
        } else {
            // `qkv_bias`, `qk_normalization` and `norm_type` left to InternVisionConfig's defaults.
            serde_json::json!({"model_type": "intern_vit_6b", "hidden_size": 3200, "intermediate_size": 12800,
                "num_hidden_layers": 45, "num_attention_heads": 25, "image_size": 448, "patch_size": 14})
        };
        raw["vision_config"] = keys;
        if native {
            let text = raw["llm_config"].take();
            raw["text_config"] = text;
            raw["model_type"] = "internvl".into();
        }
        Architecture::from_config_json(&raw.to_string()).unwrap_or_else(|e| panic!("6B tower: {e}"))
    };
    let (remote, native) = (six_b(false), six_b(true));
    assert!(remote.parameters() > 5_000_000_000, "InternViT-6B is counted");
    assert_eq!(remote.parameters(), native.parameters());
}

/// A wrapper around a language model no reader knows names that model.
#[test]
fn internvl_chat_around_an_unknown_model_names_it() {
    let mut raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("remote/internvl3-1b.json")).expect("fixture"))
            .expect("json");
    raw["llm_config"]["model_type"] = "chatglm".into();
    raw["llm_config"]["architectures"] = serde_json::json!(["ChatGLMModel"]);
    let err = Architecture::from_config_json(&raw.to_string()).expect_err("ChatGLM has no reader").to_string();
    assert!(err.contains("`chatglm`") && err.contains("internvl_chat"), "{err}");
}

/// InternLM2 / 2.5 (remote code; InternVL 1.5 – 2.5's language model) is a
/// Llama decoder whose q/k/v are one `wqkv` and whose `wqkv` and `wo` carry
/// a bias with `bias`, on by default (`InternLM2Config`): counted as the
/// Llama config of the same shapes with `attention_bias` set to it, and read
/// inside an InternVL2.5 wrapper without its `model_type` (InternVLChatConfig
/// takes the class from `architectures`).
#[test]
fn internlm2_counts_as_llama_with_its_bias() {
    let shapes = serde_json::json!({"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 92544});
    let with = |model_type: &str, extra: serde_json::Value| {
        let mut c = shapes.clone();
        c["model_type"] = model_type.into();
        for (k, v) in extra.as_object().expect("an object") {
            c[k] = v.clone();
        }
        Architecture::from_config_json(&c.to_string()).unwrap_or_else(|e| panic!("{model_type}: {e}"))
    };
    for bias in [true, false] {
        let internlm2 = if bias {
            with("internlm2", serde_json::json!({}))
        } else {
            with("internlm2", serde_json::json!({"bias": false}))
        };
        let llama = with("llama", serde_json::json!({"attention_bias": bias, "tie_word_embeddings": false}));
        assert_eq!(internlm2.family, Family::InternLm2);
        assert_eq!(internlm2.parameters(), llama.parameters(), "bias {bias}");
    }
    let mut wrapped: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("remote/internvl3-1b.json")).expect("fixture"))
            .expect("json");
    let mut llm = shapes.clone();
    llm["architectures"] = serde_json::json!(["InternLM2ForCausalLM"]);
    llm["bias"] = false.into();
    wrapped["llm_config"] = llm;
    let a = Architecture::from_config_json(&wrapped.to_string()).unwrap_or_else(|e| panic!("InternVL2.5: {e}"));
    assert_eq!(a.family, Family::InternLm2);
    assert!(a.vision.is_some());
}

/// Real configs of models no reader knows whose vision tower is declared
/// without a `vision_config` (remote code): read as a plain decoder they lost
/// the tower (a LLaVA-style Logics-Thinking 13.5 % and MiniCPM-V-2 12.4 %
/// below their checkpoints' `total_size`) or, Molmo's fused gate-and-up
/// width read as three matrices, 36 % above. Each is refused, naming what it
/// holds. MiMo-7B (`mimo`) is Qwen2 as vLLM 0.34 builds it (`mimo.py`) with
/// one multi-token-prediction layer, which the read leaves out and says so:
/// with that layer (vLLM's `mimo_mtp.py`: `input_proj` 2H → H, three norms,
/// one Qwen2 decoder layer) the count is its checkpoint's `total_size` in
/// bf16 (sources.json, "remote/mimo-7b"), where the generic Llama read
/// counted an `o_proj` bias too.
#[test]
fn unknown_vision_models_are_refused_and_a_plain_decoders_mtp_is_said() {
    let read_remote = |name: &str| {
        let text = std::fs::read_to_string(dir().join(format!("remote/{name}.json"))).expect("remote fixture");
        Architecture::from_config_json(&text)
    };
    for (name, what) in [
        ("logics-thinking", "a vision tower (`mm_vision_tower`)"),
        ("minicpm-v-2", "a vision tower (`vision_encoder`)"),
        ("molmo-7b-d", "(`MolmoForCausalLM`)"),
    ] {
        let err = read_remote(name).map(|a| a.family).expect_err(name).to_string();
        assert!(err.contains(what), "{name}: {err}");
    }
    // Phi-3-vision's tower is `img_processor` (a CLIP name) beside `embd_layer`.
    let phi3_v = r#"{"architectures": ["Phi3VForCausalLM"], "model_type": "phi3_v", "hidden_size": 3072,
        "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 32064,
        "img_processor": {"image_dim_out": 1024, "model_name": "openai/clip-vit-large-patch14-336"},
        "embd_layer": {"embedding_cls": "image"}}"#;
    let err = Architecture::from_config_json(phi3_v).map(|a| a.family).expect_err("phi3_v").to_string();
    assert!(err.contains("a vision tower (`img_processor`)"), "{err}");
    const MIMO_TOTAL_SIZE_BYTES: u64 = 15_666_819_072;
    let mimo = read_remote("mimo-7b").unwrap_or_else(|e| panic!("mimo: {e}"));
    assert_eq!(mimo.family, Family::Qwen2);
    assert!(mimo.warnings.iter().any(|w| w.contains("multi-token-prediction")), "{:?}", mimo.warnings);
    let t = &mimo.text;
    let (h, kv) = (t.hidden_size, t.num_kv_heads * t.head_dim);
    let decoder_layer = h * h + h + 2 * (h * kv + kv) + h * h + 3 * h * t.intermediate_size + 2 * h;
    let mtp = 2 * h * h + 3 * h + decoder_layer;
    assert_eq!(2 * (mimo.parameters() + t.extra.mtp_layers * mtp), MIMO_TOTAL_SIZE_BYTES);
}

/// MiMo-V2.5-Pro (`mimo_v2`, remote code) is MiMo-V2-Flash's model as vLLM
/// 0.34 builds it (`models/mimo_v2.py`), its layers stated in the Hub's own
/// keys: `hybrid_layer_pattern` (1: sliding), `moe_layer_freq` (1: MoE) and
/// the sliding layers' own `swa_num_key_value_heads`, here the full layers'
/// 8, not the 16 transformers' `mimo_v2_flash` class would double them to.
/// Against its checkpoint: the report that printed its config (sources.json,
/// "remote/mimo-v2.5-pro") lists 1,023,244,718,976 elements. Beside the
/// model they hold the FP8 block scales (one per 128 × 128 block of every
/// FP8 matrix: all but the `ignored_layers` o_proj) and three
/// multi-token-prediction layers (`model.mtp.layers.0-2`, which the config
/// does not count): each an `eh_proj` (2H → H), five norms, a sliding
/// attention layer with its sinks and a dense MLP, scales included.
#[test]
fn mimo_v2_counts_its_checkpoints_tensors_but_the_scales_and_mtp() {
    const CHECKPOINT_ELEMENTS: u64 = 1_023_244_718_976;
    const MTP_LAYERS: u64 = 3;
    let text = std::fs::read_to_string(dir().join("remote/mimo-v2.5-pro.json")).expect("remote fixture");
    let raw: serde_json::Value = serde_json::from_str(&text).expect("json");
    let a = Architecture::from_config_json(&text).unwrap_or_else(|e| panic!("mimo_v2: {e}"));
    assert_eq!(a.family, Family::MimoV2Flash);
    let get = |k: &str| raw[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    let flags = |k: &str| -> Vec<bool> {
        raw[k].as_array().unwrap_or_else(|| panic!("{k}")).iter().map(|v| v.as_u64() == Some(1)).collect()
    };
    let sliding: Vec<bool> = a.text.layers.iter().map(|l| matches!(l.attention, LayerAttention::Sliding(_))).collect();
    assert_eq!(sliding, flags("hybrid_layer_pattern"));
    let sparse: Vec<bool> = a.text.layers.iter().map(|l| l.ffn == Ffn::Moe).collect();
    assert_eq!(sparse, flags("moe_layer_freq"));
    let kv = get("swa_num_key_value_heads");
    assert!(a.text.layers.iter().all(|l| l.kv_heads(a.text.num_kv_heads) == kv), "8 KV heads in every layer");

    let (h, heads, d, dv) = (get("hidden_size"), get("num_attention_heads"), get("head_dim"), get("v_head_dim"));
    let (inter, experts, e) = (get("intermediate_size"), get("n_routed_experts"), get("moe_intermediate_size"));
    let blocks = |rows: u64, cols: u64| rows.div_ceil(128) * cols.div_ceil(128);
    let qkv = (heads + kv) * d + kv * dv;
    // The fused `qkv_proj` is quantised in one chunk per KV head, each padded
    // to whole blocks (vLLM 0.34 `mimo_v2.py`, `fused_qkv_chunks`).
    let qkv_scales = kv * blocks(qkv / kv, h);
    let layers = a.text.num_layers();
    let moe_layers = sparse.iter().filter(|s| **s).count() as u64;
    let scales =
        layers * qkv_scales + (layers - moe_layers) * 3 * blocks(inter, h) + moe_layers * experts * 3 * blocks(e, h);
    let mtp = 2 * h * h + 5 * h + heads + qkv * h + qkv_scales + heads * dv * h + 3 * inter * h + 3 * blocks(inter, h);
    assert_eq!(a.parameters() + scales + MTP_LAYERS * mtp, CHECKPOINT_ELEMENTS);

    // A sliding layer whose query heads differ from the full layers' is
    // refused, naming the key, rather than counted with the full layers'.
    let mut other = raw.clone();
    other["swa_num_attention_heads"] = 64.into();
    let err = Architecture::from_config_json(&other.to_string()).expect_err("own query heads").to_string();
    assert!(err.contains("swa_num_attention_heads"), "{err}");
}

/// DeepSeek-V4-Flash (`deepseek_v4`): every module of transformers 5.25's
/// `modeling_deepseek_v4.py` (the tensors vLLM 0.34's
/// `models/deepseek_v4/` loads), counted by hand from the config and set
/// against the reader; the total is the model card's "284B total
/// parameters" (sources.json, "deepseek-v4-flash-0731").
#[test]
fn deepseek_v4_counts_its_modules() {
    let arch = read("deepseek-v4-flash-0731");
    assert_eq!(arch.family, Family::DeepseekV4);
    assert!(arch.warnings.iter().any(|w| w.contains("multi-token-prediction")), "{:?}", arch.warnings);
    let (h, heads, d, q, groups, o_rank) = (4096u64, 64u64, 512u64, 1024u64, 8u64, 1024u64);
    let (ix_heads, ix_d, streams, experts, width, vocab, top_k) =
        (64u64, 128u64, 4u64, 256u64, 2048u64, 129_280u64, 6u64);
    // q_a, q_a_norm, q_b, kv_proj, kv_norm, o_a (grouped), o_b, sinks.
    let attention =
        h * q + q + q * heads * d + h * d + d + (heads * d / groups) * (groups * o_rank) + groups * o_rank * h + heads;
    // `DeepseekV4HCACompressor`: kv and gate projections, position bias of 128 rows, norm.
    let hca = 2 * h * d + 128 * d + d;
    // `DeepseekV4CSACompressor` (twice as wide), its `DeepseekV4Indexer`
    // (its own compressor, q_b_proj) and the scorer's weights_proj.
    let csa =
        2 * h * 2 * d + 4 * 2 * d + d + 2 * h * 2 * ix_d + 4 * 2 * ix_d + ix_d + q * ix_heads * ix_d + h * ix_heads;
    // attn_hc and ffn_hc: fn ((2 + n)·n × n·h), base, scale.
    let hyper = 2 * ((2 + streams) * streams * streams * h + (2 + streams) * streams + 3);
    // Routed experts, the shared one, the router with its correction bias
    // (a hash layer's `tid2eid` of vocab × top k instead of the bias), two norms.
    let moe = experts * 3 * h * width + 3 * h * width + experts * h;
    let ratios: Vec<u64> = [0, 0].into_iter().chain([4, 128].repeat(20)).chain([4]).collect();
    let layers: u64 = ratios
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let compressor = match r {
                4 => csa,
                128 => hca,
                _ => 0,
            };
            let route = if i < 3 { vocab * top_k } else { experts };
            attention + compressor + hyper + moe + route + 2 * h
        })
        .sum();
    // Embedding and head, the final norm, `DeepseekV4HyperHead`.
    let model = 2 * vocab * h + h + streams * streams * h + streams + 1;
    assert_eq!(arch.parameters(), layers + model);
    assert_eq!(arch.parameters(), 284_334_567_511);
    // The model card: "284B total parameters".
    assert_eq!((arch.parameters() + 500_000_000) / 1_000_000_000, 284);
}

/// DeepSeek-V4's legacy keys and the config class's own defaults read the
/// same model: `compress_ratios` is `layer_types` by ratio, `num_hash_layers`
/// is `mlp_layer_types`' count of `hash_moe`.
#[test]
fn deepseek_v4_reads_its_layer_types_either_way() {
    let mut json = fixture_json("deepseek-v4-flash-0731");
    let legacy = Architecture::from_config_json(&json.to_string()).expect("legacy keys");
    let ratios: Vec<u64> =
        json["compress_ratios"].as_array().expect("list").iter().filter_map(|v| v.as_u64()).collect();
    let types: Vec<&str> = ratios[..43]
        .iter()
        .map(|r| match r {
            4 => "compressed_sparse_attention",
            128 => "heavily_compressed_attention",
            _ => "sliding_attention",
        })
        .collect();
    let map = json.as_object_mut().expect("object");
    map.remove("compress_ratios");
    map.remove("num_hash_layers");
    map.insert("layer_types".into(), serde_json::json!(types));
    let mlp: Vec<&str> = (0..43).map(|i| if i < 3 { "hash_moe" } else { "moe" }).collect();
    map.insert("mlp_layer_types".into(), serde_json::json!(mlp));
    let modern = Architecture::from_config_json(&json.to_string()).expect("modern keys");
    assert_eq!(legacy.text, modern.text);
    // Too few layer kinds is an error naming the key.
    json["layer_types"] = serde_json::json!(["sliding_attention"]);
    let err = Architecture::from_config_json(&json.to_string()).expect_err("short layer_types").to_string();
    assert!(err.contains("layer_types"), "{err}");
}

/// DeepSeek-V4-Flash's KV cache per layer as vLLM 0.34 specifies it, by
/// hand from its `get_kv_cache_spec`s (`kv::layer_costs`' comment names
/// them): with its default `fp8_ds_mla` rows of 584 bytes, pages padded to
/// 576 bytes, the sliding window's pages of 64 tokens and the compressed
/// caches' of 256.
#[test]
fn deepseek_v4_caches_as_vllm_pages_them() {
    use shared::kv::{KvDtype, bytes_per_token, layer_costs, sequence_bytes};
    let arch = read("deepseek-v4-flash-0731");
    let pad = |bytes: u64, to: u64| bytes.div_ceil(to) * to;
    // The sliding window: 64 rows a page.
    let window = pad(64 * 584, 576) / 64;
    assert_eq!(window, 585);
    // Ratio 4: 64 entries a page, and the indexer's 64 keys of 128 fp8
    // values and one fp32 scale; the compressors' fp32 state of 2 × 2 × 512
    // and 2 × 2 × 128 values a token, 4 tokens a page, over 8 tokens.
    let csa_page = pad(64 * 584, 576) + pad(64 * (128 + 4), 576);
    assert_eq!(csa_page, 46_080);
    let csa_state = (pad(4 * 2 * 2 * 512 * 4, 576) + pad(4 * 2 * 2 * 128 * 4, 576)) / 4;
    assert_eq!(csa_state, 10_368);
    // Ratio 128: 2 entries a page; state of 2 × 512 values, 8 tokens a page, over 128.
    let hca_page = pad(2 * 584, 576);
    assert_eq!(hca_page, 1_728);
    let hca_state = pad(8 * 2 * 512 * 4, 576) / 8;
    assert_eq!(hca_state, 4_104);

    let layers = layer_costs(&arch.text, KvDtype::Fp8, 8);
    assert_eq!(layers.len(), 43);
    for (i, l) in layers.iter().enumerate() {
        assert_eq!((l.bytes_per_token, l.window), (window, Some(128)), "layer {i}");
        let c = l.compressed.map(|c| (c.page_tokens, c.page_bytes, c.state_bytes_per_token, c.state_window));
        let want = match i {
            0 | 1 => None,
            _ if i % 2 == 0 => Some((256, csa_page, csa_state, 8)),
            _ => Some((256, hca_page, hca_state, 128)),
        };
        assert_eq!(c, want, "layer {i}");
    }
    // A sequence of 1M tokens: every window full, 4,096 pages of each
    // compressed layer.
    let tokens = 1 << 20;
    let want = 43 * 128 * window + 21 * (4096 * csa_page + 8 * csa_state) + 20 * (4096 * hca_page + 128 * hca_state);
    assert_eq!(sequence_bytes(&layers, tokens, None), want);
    assert_eq!(want, 4_120_642_944);
    // While every cache grows: the window, the pages' share (180 and 6.75,
    // rounded up) and the state.
    assert_eq!(bytes_per_token(&layers), 43 * 585 + 21 * (180 + csa_state) + 20 * (7 + hca_state));

    // vLLM's own cache for it is fp8 (`auto` is `fp8_ds_mla`).
    let model = shared::model::Model::from_architecture("deepseek-v4-flash", arch);
    let kind = shared::engines::EngineKind::Vllm;
    assert_eq!(kind.default_kv_dtype(&model, model.default_format()), KvDtype::Fp8);
}

/// DeepSeek-V4-Flash on SGLang 0.5.23 (four GPUs, TP 4, its defaults): the
/// pools `DSV4PoolConfigurator` sizes (model_executor/pool_configurator.py),
/// derived by hand from its source. One token of the full pool costs
/// `bytes_per_full_token`: a tenth of a window-pool token (43 layers of
/// `KVLayout.V4`'s 585 B, `page_bytes(256) / 256`, and the ratio-4 state's
/// ring of 8 rows per 256-token page, 2 × 2 × (512 + 128) fp32 values, on 21
/// layers: 25,155 + 6,720 B) plus a quarter of a compressed entry (585 B at
/// 64 tokens a page) and of an fp8 indexer key (132 B) on each ratio-4
/// layer, 1/128 of an entry (`page_bytes(2) / 2` = 864 B) on each
/// ratio-128 one: 3,187.5 + 21 × 179.25 + 20 × 6.75 = 7,086.75 B. On SM100
/// the `V41` layout (528 B a token, pages to 512): 2,942.4 + 21 × 165 +
/// 20 × 6 = 6,527.4 B. Paid first, the ratio-128 state's rings for 257
/// request slots (`max_running_requests` 256 + 1): ⌈(257 × 128 + 129) /
/// 128⌉ × 128 rows of 2 × 512 fp32 on 20 layers. Before, the pool took
/// vLLM's per-layer growth, 347,242 B a token on H200: 174,095 tokens
/// where SGLang makes 8,147,200.
#[test]
fn deepseek_v4_is_pooled_as_sglang_sizes_it() {
    use shared::engines::{Engine, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    let model = shared::model::Model::from_architecture("deepseek-v4-flash", read("deepseek-v4-flash-0731"));
    let run = |gpu: &str| {
        let slot = GpuSlot::from_catalog(shared::catalog::gpu(gpu).unwrap_or_else(|| panic!("{gpu}")));
        let s = Scenario {
            weights: model.default_format(),
            engine: Engine::Sglang(Default::default()),
            gpus: vec![slot; 4],
            tp: 4,
            ..Scenario::default()
        };
        shared::estimate::estimate(&model, s.validate_for(&model).unwrap_or_else(|e| panic!("{e}")))
    };
    let fixed = 33_152u64 * 2 * 512 * 4 * 20;
    assert_eq!(fixed, 2_715_811_840);
    for (gpu, per_token, cell) in [("h200", 7_086.75, 7_087), ("b200", 6_527.4, 6_528)] {
        let e = run(gpu);
        let Some(EngineReport::Sglang(r)) = &e.engine_report else { panic!("no SGLang report") };
        let full = r.max_total_num_tokens;
        assert_eq!(r.cell_size_bytes, cell, "{gpu}");
        assert!(full > 0 && full.is_multiple_of(256), "{gpu}: {full}");
        assert_eq!(e.per_gpu[0].budget.kv_cache_bytes, (full as f64 * per_token) as u64 + fixed, "{gpu}");
        let swa = full / 10 / 256 * 256;
        let line = format!("DSV4 pool sizes: full={full}, swa={swa}, c4={}, c128={}", full / 4, full / 128);
        assert!(r.log_lines.contains(&line), "{gpu}: {:?}", r.log_lines);
    }
}

/// DeepSeek-V4-Flash on vLLM 0.34 (H200s, TP 4 and TP 8, its defaults):
/// the KV cache groups `_get_packed_kv_cache_groups` makes
/// (v1/core/kv_cache_planning.py), derived by hand from its source. The
/// caches bucket by type: the 43 windows (64-token blocks of 37,440 B),
/// the full-attention caches of 256-token blocks (21 ratio-4 entries of
/// 37,440 B, their 21 indexer pages of 8,640 B, 20 ratio-128 entries of
/// 1,728 B: unbalanced, one group), the ratio-4 states (4-token blocks over
/// 8 tokens, 21 of 32,832 B and 21 indexer states of 8,640 B: balanced)
/// and the ratio-128 states (8-token blocks over 128 tokens, 20 of 32,832
/// B). The balanced buckets' counts 43, 21, 20 split in `_approximate_gcd`
/// ≥ 21 repeats: 22 (padding 1 + 1 + 2), so the windows make two groups
/// of 22 and 21. A block is the widest group's pages, the full one's
/// 1,002,240 B, on every rank alike (one KV head, `max_tp_shards=1`). A
/// request of 1,048,576 tokens takes 4,096 full blocks and, with two
/// batches of 8,192 in flight (async scheduling), 2 × (⌈16,511 / 64⌉ + 1)
/// window blocks, ⌈16,391 / 4⌉ + 1 ratio-4 state blocks and ⌈16,511 / 8⌉ +
/// 1 ratio-128 ones: 10,778. Before, the layers were one full-attention
/// group of the window's 585 B a token and their compressed caches were
/// not in the block at all.
#[test]
fn deepseek_v4_is_packed_as_vllm_groups_it() {
    use shared::engines::{Engine, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    let model = shared::model::Model::from_architecture("deepseek-v4-flash", read("deepseek-v4-flash-0731"));
    let run = |tp: u64| {
        let slot = GpuSlot::from_catalog(shared::catalog::gpu("h200").unwrap_or_else(|| panic!("h200")));
        let s = Scenario {
            weights: model.default_format(),
            engine: Engine::Vllm(Default::default()),
            // vLLM's own cache for it (`auto`: `fp8_ds_mla`).
            kv_dtype: shared::kv::KvDtype::Fp8,
            gpus: vec![slot; tp as usize],
            tp,
            ..Scenario::default()
        };
        shared::estimate::estimate(&model, s.validate_for(&model).unwrap_or_else(|e| panic!("{e}")))
    };
    let pad = |bytes: u64| bytes.div_ceil(576) * 576;
    let block_bytes = 21 * pad(64 * 584) + 21 * pad(64 * 132) + 20 * pad(2 * 584);
    assert_eq!(block_bytes, 1_002_240);
    // The other groups are narrower: 22 windows, the ratio-4 states, the ratio-128 ones.
    assert!(
        [22 * pad(64 * 584), 21 * (pad(4 * 2048 * 4) + pad(4 * 512 * 4)), 20 * pad(8 * 1024 * 4)]
            .iter()
            .all(|&g| g < block_bytes)
    );
    let len = 1u64 << 20;
    let in_flight = 2 * 8192u64;
    let per_request = len.div_ceil(256)
        + 2 * ((127 + in_flight).div_ceil(64) + 1)
        + ((7 + in_flight).div_ceil(4) + 1)
        + ((127 + in_flight).div_ceil(8) + 1);
    assert_eq!(per_request, 10_778);
    for (tp, blocks, tokens, concurrency) in [(4, 68_222, 6_637_219, 6.33), (8, 103_998, 10_117_814, 9.65)] {
        let e = run(tp);
        let Some(EngineReport::Vllm(r)) = &e.engine_report else { panic!("no vLLM report") };
        let by_hand = r.per_gpu.iter().map(|g| g.available_kv_bytes / block_bytes).min().unwrap_or(0);
        assert!(r.per_gpu.iter().all(|g| g.block_bytes == block_bytes), "TP {tp}: {:?}", r.per_gpu[0]);
        assert_eq!(r.num_gpu_blocks, by_hand, "TP {tp}");
        assert_eq!(r.blocks_per_request, per_request, "TP {tp}");
        assert_eq!(r.kv_cache_tokens, (by_hand as f64 / per_request as f64 * len as f64) as u64, "TP {tp}");
        assert_eq!(
            (r.num_gpu_blocks, r.kv_cache_tokens, r.max_concurrency),
            (blocks, tokens, concurrency),
            "TP {tp}: {:?}",
            r.log_lines
        );
    }
}

/// Kimi-Linear-48B-A3B (`kimi_linear`, remote code; vLLM 0.34 builds it in
/// `models/kimi_k3`): its 1-based `kda_layers` are Kimi-delta-attention
/// layers, the rest MLA without a query LoRA; layer 0 is a dense MLP, the
/// others 256 experts and one shared. Counted from vLLM's modules, the total
/// is the checkpoint's: the report that printed the config (sources.json,
/// "remote/kimi-linear-48b-a3b") lists 49,122,681,728 elements — per KDA
/// layer q, k, v (3 × 4096 × 2304), b_proj (32 × 2304), f_a/g_a (2 × 128 ×
/// 2304), f_b/g_b (2 × 4096 × 128), three convs (3 × 4096 × 4), dt_bias
/// (4096), A_log (32), o_norm (128), o_proj (2304 × 4096).
#[test]
fn kimi_linear_counts_its_checkpoints_tensors() {
    const CHECKPOINT_ELEMENTS: u64 = 49_122_681_728;
    let text = std::fs::read_to_string(dir().join("remote/kimi-linear-48b-a3b.json")).expect("remote fixture");
    let raw: serde_json::Value = serde_json::from_str(&text).expect("json");
    let a = Architecture::from_config_json(&text).unwrap_or_else(|e| panic!("kimi_linear: {e}"));
    assert_eq!(a.family, Family::KimiLinear);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    let kda: Vec<u64> = raw["linear_attn_config"]["kda_layers"]
        .as_array()
        .expect("kda_layers")
        .iter()
        .map(|v| v.as_u64().expect("index"))
        .collect();
    for (i, l) in a.text.layers.iter().enumerate() {
        let is_kda = kda.contains(&(i as u64 + 1));
        assert_eq!(l.state, is_kda, "layer {i}");
        assert_eq!(l.attention == LayerAttention::Full, !is_kda, "layer {i}");
        assert_eq!(l.ffn == Ffn::Moe, i >= 1, "layer {i}: first_k_dense_replace = 1");
    }
    assert_eq!(a.text.layers.iter().filter(|l| l.state).count(), 20);
    assert_eq!(a.text.max_position_embeddings, Some(1_048_576), "vLLM takes model_max_length");
    assert_eq!(a.parameters(), CHECKPOINT_ELEMENTS);
}

/// Bad Kimi-Linear configs are refused naming the key: the KDA shape vLLM
/// indexes without a default, layer lists that do not split the layers, and
/// Kimi-K3's modules, which the reader does not count.
#[test]
fn kimi_linear_errors_name_the_key() {
    let base: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("remote/kimi-linear-48b-a3b.json")).expect("remote fixture"),
    )
    .expect("json");
    let err = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut c = base.clone();
        edit(&mut c);
        Architecture::from_config_json(&c.to_string()).map(|a| a.family).expect_err("refused").to_string()
    };
    type Edit<'a> = &'a dyn Fn(&mut serde_json::Value);
    let cases: [(&str, Edit); 8] = [
        ("linear_attn_config.num_heads", &|c| {
            c["linear_attn_config"].as_object_mut().expect("object").remove("num_heads");
        }),
        ("linear_attn_config.short_conv_kernel_size", &|c| {
            c["linear_attn_config"]["short_conv_kernel_size"] = 0.into()
        }),
        ("linear_attn_config.kda_layers", &|c| c["linear_attn_config"]["kda_layers"] = serde_json::json!([0, 1])),
        ("linear_attn_config.full_attn_layers", &|c| {
            c["linear_attn_config"]["full_attn_layers"] = serde_json::json!([1])
        }),
        ("linear_attn_config.use_full_rank_gate", &|c| c["linear_attn_config"]["use_full_rank_gate"] = true.into()),
        ("linear_attn_config", &|c| {
            c.as_object_mut().expect("object").remove("linear_attn_config");
        }),
        ("kv_lora_rank", &|c| {
            c.as_object_mut().expect("object").remove("kv_lora_rank");
        }),
        ("attn_res_block_size", &|c| c["attn_res_block_size"] = 12.into()),
    ];
    for (key, edit) in cases {
        let e = err(edit);
        assert!(e.contains(&format!("`{key}`")), "{key}: {e}");
    }
}

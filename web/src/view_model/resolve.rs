//! From the link state (what the person chose) to the model and scenario the
//! estimator takes. Parse, don't validate: by here every value is in range.

use shared::arch::Architecture;
use shared::catalog::{gpus, model_preset};
use shared::estimate::{GpuSlot, Scenario, ValidScenario, WeightSource};
use shared::formats::WeightFormat;
use shared::kv::KvDtype;
use shared::link::{GpuChoice, LinkState, ModelSource};
use shared::model::Model;

use super::hub::HubState;
use super::presets;
use super::read::{Linked, Reader};
use super::synth::stand_in_name;

/// Why there is no model to estimate yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoModel {
    /// A hub fetch is under way.
    Loading(String),
    /// Something the person can fix (message shown as is).
    Problem(String),
}

/// The model a state names, given what the hub has answered so far, read
/// with the readers linked in.
pub fn model(state: &LinkState, hub: &HubState) -> Result<Model, NoModel> {
    model_with(state, hub, &Linked)
}

/// [`model`] with `reader` for what is not a preset (presets come from their
/// build-time reading, [`presets`]).
pub fn model_with(state: &LinkState, hub: &HubState, reader: &dyn Reader) -> Result<Model, NoModel> {
    let loading = || NoModel::Loading("Loading the model reader…".into());
    match &state.model {
        ModelSource::Preset(id) => {
            let preset = model_preset(id).ok_or_else(|| NoModel::Problem(format!("unknown preset `{id}`")))?;
            presets::model(preset).map_err(NoModel::Problem)
        }
        ModelSource::Config(json) => reader
            .config(json)
            .ok_or_else(loading)?
            .map(|arch| {
                Model::from_architecture(config_name(&arch), arch).with_checkpoint_bytes(state.checkpoint_bytes)
            })
            .map_err(NoModel::Problem),
        ModelSource::Params(n) => reader
            .stand_in(*n)
            .ok_or_else(loading)?
            .map(|arch| Model::from_architecture(stand_in_name(*n), arch))
            .map_err(NoModel::Problem),
        ModelSource::Hub(id) => match hub {
            HubState::Loaded { id: got, checkpoint, .. } if got == id && !checkpoint.is_empty() => {
                presets::decode_model(checkpoint).map_err(NoModel::Problem)
            }
            HubState::Loaded { id: got, config, checkpoint_bytes, .. } if got == id => reader
                .config(config)
                .ok_or_else(loading)?
                .map(|arch| Model::from_architecture(id.clone(), arch).with_checkpoint_bytes(*checkpoint_bytes))
                .map_err(|e| NoModel::Problem(format!("`{id}`: {e}"))),
            HubState::Failed { id: got, message, .. } if got == id => Err(NoModel::Problem(message.clone())),
            HubState::Loading { id: got, read: Some((done, all)) } if got == id => Err(NoModel::Loading(format!(
                "Loading `{id}` from {}: checkpoint headers {done} of {all}…",
                state.hub_base()
            ))),
            _ => Err(NoModel::Loading(format!("Loading `{id}` from {}…", state.hub_base()))),
        },
        ModelSource::Local(name) => match hub {
            HubState::Loaded { id: got, checkpoint, .. } if got == name && !checkpoint.is_empty() => {
                presets::decode_model(checkpoint).map_err(NoModel::Problem)
            }
            HubState::Loading { id: got, .. } if got == name => {
                Err(NoModel::Loading(format!("Reading the headers of `{name}`…")))
            }
            HubState::Failed { id: got, message, .. } if got == name => Err(NoModel::Problem(message.clone())),
            _ => Err(NoModel::Problem(local_prompt(name, state.checkpoint_bytes))),
        },
    }
}

/// What a `file=` link's recipient is told: the files stayed with whoever
/// made the link, so the figures need the same files dropped here (never a
/// silently different answer from a guess).
pub fn local_prompt(name: &str, bytes: Option<u64>) -> String {
    let size = bytes.map(|b| format!(" ({b} bytes of weights)")).unwrap_or_default();
    format!(
        "This link was made from the local checkpoint `{name}`{size}, which never left its owner's browser. \
         Drop the same files under \"Read a local checkpoint\" to get the exact figures."
    )
}

/// The banner for a model whose architecture no family reader knows: its
/// figures come from a generic read of the config (a plain dense decoder),
/// or from a checkpoint's tensors.
pub fn architecture_note(model: &Model) -> Option<String> {
    if model.architecture_known() {
        return None;
    }
    let t = &model.arch.model_type;
    Some(match model.checkpoint {
        Some(_) => format!(
            "Headroom has no reader for `{t}`: the weights are the checkpoint's exact bytes, the KV cache is read from its attention tensors."
        ),
        None => format!(
            "Headroom has no reader for `{t}`: it is read as a plain dense decoder, so every figure is a guess. \
             Load it from Hugging Face or drop its checkpoint files (or run `headroom estimate --checkpoint` or `--hf`) for exact weights."
        ),
    })
}

/// Where the weight figure of an estimate comes from, as the CLI's JSON
/// says it (`weights_source`), in words: "exact bytes" for `checkpoint`,
/// "estimated" for `estimated`.
pub fn weights_note(e: &shared::estimate::Estimate) -> String {
    match (e.weights_source, &e.checkpoint) {
        (WeightSource::Checkpoint, Some(c)) => {
            format!(
                "Weights: the exact bytes of the checkpoint's headers ({} tensors in {} files).",
                c.tensors, c.files
            )
        }
        (WeightSource::Checkpoint, None) => "Weights: the exact bytes of the safetensors index.".into(),
        (WeightSource::Estimated, _) => {
            "Weights: estimated from the architecture's parameters and the format's bits per weight.".into()
        }
    }
}

/// `pasted config.json (llama)`: the config's own `model_type`.
fn config_name(arch: &Architecture) -> String {
    match arch.model_type.as_str() {
        "" => "pasted config.json".into(),
        t => format!("pasted config.json ({t})"),
    }
}

/// The weight format in effect: the chosen one, or the checkpoint's own.
pub fn weights(state: &LinkState, model: &Model) -> WeightFormat {
    state.weights_for(model)
}

/// The KV dtype in effect.
pub fn kv_dtype(state: &LinkState, model: &Model) -> KvDtype {
    state.kv_dtype_for(model)
}

/// One GPU slot as the state names it.
pub fn gpu_slot(choice: &GpuChoice) -> GpuSlot {
    choice.slot()
}

/// The scenario for a state and its model, or why it cannot run.
pub fn scenario(state: &LinkState, model: &Model) -> Result<ValidScenario, String> {
    state.scenario_for(model)
}

/// The inputs that give `target`, a changed plan (a fix's scenario), keeping
/// everything else of `current`.
pub fn inputs_for(target: &Scenario, current: &LinkState, model: &Model) -> LinkState {
    let mut next = current.clone();
    if target.weights != weights(current, model) {
        next.weights = Some(target.weights);
    }
    // The KV dtype the next state has without one chosen is its engine's
    // (a fix may change the engine, whose own cache differs).
    next.engine = target.engine;
    if target.engine.kind() != current.engine.kind() {
        next.kv_activation = false;
    }
    if target.kv_dtype != kv_dtype(&next, model) {
        (next.kv_dtype, next.kv_activation) = (Some(target.kv_dtype), false);
    }
    next.prompt_tokens = target.prompt_tokens;
    next.max_new_tokens = target.max_new_tokens;
    next.concurrency = target.concurrency;
    next.tp = target.tp;
    let now: Vec<GpuSlot> = current.gpu_choices().iter().map(gpu_slot).collect();
    if now != target.gpus {
        let choices: Vec<GpuChoice> = target.gpus.iter().map(choice_of).collect();
        let first = choices.first().cloned().unwrap_or_else(|| current.gpu.clone());
        let same = choices.iter().take_while(|c| **c == first).count().max(1);
        next.gpu = first;
        next.gpu_count = same as u64;
        next.more_gpus = choices.into_iter().skip(same).collect();
    }
    next
}

/// The catalog GPU a slot came from, else its size.
fn choice_of(slot: &GpuSlot) -> GpuChoice {
    gpus()
        .iter()
        .find(|g| g.name == slot.name && g.memory_bytes == slot.capacity_bytes)
        .map_or(GpuChoice::Custom(slot.capacity_bytes), |g| GpuChoice::Catalog(g.id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::estimate::estimate;

    #[test]
    fn unknown_architectures_get_a_banner_or_no_model() {
        let dense = r#"{"model_type":"brand_new","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100}"#;
        let s = LinkState { model: ModelSource::Config(dense.into()), ..LinkState::default() };
        let m = model(&s, &HubState::Idle).expect("a plain dense decoder is read generically");
        assert!(architecture_note(&m).is_some_and(|n| n.contains("brand_new") && n.contains("guess")));
        assert_eq!(architecture_note(&Model::preset("llama-3.1-8b").expect("preset")), None);
        let moe = dense.replace("\"vocab_size\":100", "\"vocab_size\":100,\"num_local_experts\":8");
        let s = LinkState { model: ModelSource::Config(moe), ..LinkState::default() };
        match model(&s, &HubState::Idle) {
            Err(NoModel::Problem(msg)) => assert!(msg.contains("brand_new") && msg.contains("--checkpoint"), "{msg}"),
            other => panic!("an unknown MoE config got a model: {other:?}"),
        }
    }

    #[test]
    fn the_default_state_gives_the_cli_default_plan() {
        let s = LinkState::default();
        let m = model(&s, &HubState::Idle).expect("default model");
        let sc = scenario(&s, &m).expect("valid");
        assert_eq!(sc.weights, WeightFormat::Bf16);
        assert_eq!(sc.gpus.len(), 1);
        assert_eq!(sc.gpus[0].name, "GeForce RTX 4090");
        assert!(estimate(&m, sc).fits);
    }

    #[test]
    fn a_fix_applied_through_the_inputs_gives_its_plan() {
        let s = LinkState {
            model: ModelSource::Preset("llama-3.1-70b".into()),
            more_gpus: vec![GpuChoice::Custom(16 << 30)],
            ..LinkState::default()
        };
        let m = model(&s, &HubState::Idle).expect("model");
        let sc = scenario(&s, &m).expect("valid");
        let fixes = shared::fixes::fixes(&m, &sc);
        assert!(!fixes.is_empty());
        for f in fixes {
            let next = inputs_for(&f.scenario, &s, &m);
            let got = scenario(&next, &m).expect("valid").into_inner();
            let caps = |x: &Scenario| x.gpus.iter().map(|g| g.capacity_bytes).collect::<Vec<_>>();
            assert_eq!(caps(&got), caps(&f.scenario), "{:?}", f.kind);
            assert_eq!(
                Scenario { gpus: Vec::new(), ..got },
                Scenario { gpus: Vec::new(), ..f.scenario },
                "{:?}",
                f.kind
            );
            let rt = shared::link::decode(&shared::link::encode(&next));
            assert!(rt.notices.is_empty() && rt.state == next, "{:?}", f.kind);
        }
    }

    #[test]
    fn tp_must_divide_the_gpus() {
        let s = LinkState { tp: 2, ..LinkState::default() };
        let m = model(&s, &HubState::Idle).expect("model");
        assert!(scenario(&s, &m).is_err());
        assert!(scenario(&LinkState { gpu_count: 2, ..s }, &m).is_ok());
    }

    #[test]
    fn dropped_checkpoints_travel_encoded_and_their_links_ask_for_the_files() {
        let config = r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,
            "num_key_value_heads":2,"intermediate_size":128,"vocab_size":100,"torch_dtype":"bfloat16"}"#;
        let header = r#"{"model.embed_tokens.weight":{"dtype":"BF16","shape":[100,64],"data_offsets":[0,12800]},
            "model.layers.0.self_attn.k_proj.weight":{"dtype":"BF16","shape":[32,64],"data_offsets":[12800,16896]}}"#;
        let header = shared::safetensors::parse_header(header.as_bytes(), None).expect("a header");
        let checkpoint =
            shared::checkpoint::Checkpoint::from_safetensors(vec![("m.safetensors".into(), header)]).expect("one file");
        let read = Model::from_checkpoint("m.safetensors", Some(config), &checkpoint).expect("a model");
        let s = LinkState {
            model: ModelSource::Local("m.safetensors".into()),
            checkpoint_bytes: read.checkpoint_bytes,
            ..LinkState::default()
        };
        // The recipient of the link: no figures, the files asked for.
        match model(&s, &HubState::Idle) {
            Err(NoModel::Problem(m)) => assert!(m.contains("m.safetensors") && m.contains("16896"), "{m}"),
            other => panic!("a file= link without its files got {other:?}"),
        }
        let loaded = HubState::Loaded {
            id: "m.safetensors".into(),
            config: config.into(),
            checkpoint_bytes: read.checkpoint_bytes,
            checkpoint: presets::encode_model(&read).expect("encodes"),
        };
        let got = model(&s, &loaded).expect("the dropped files' model");
        assert_eq!(got, read);
        let e = estimate(&got, scenario(&s, &got).expect("valid"));
        assert_eq!(e.weights_source, WeightSource::Checkpoint);
        assert!(weights_note(&e).contains("exact bytes of the checkpoint's headers"));
        // A link round trip keeps the name and the bytes.
        assert_eq!(shared::link::decode(&shared::link::encode(&s)).state, s);
    }

    #[test]
    fn hub_models_wait_for_their_fetch() {
        let s = LinkState { model: ModelSource::Hub("a/b".into()), ..LinkState::default() };
        assert!(matches!(model(&s, &HubState::Idle), Err(NoModel::Loading(_))));
        let failed = HubState::Failed { id: "a/b".into(), message: "gone".into(), kept: None };
        assert_eq!(model(&s, &failed), Err(NoModel::Problem("gone".into())));
        let config = shared::catalog::model_preset("gpt2").expect("preset").config_json().to_owned();
        let loaded = HubState::Loaded { id: "a/b".into(), config, checkpoint_bytes: Some(123), checkpoint: Vec::new() };
        let m = model(&s, &loaded).expect("loads");
        assert_eq!(m.checkpoint_bytes, Some(123));
        // A stale answer for another id does not count.
        let other =
            HubState::Loaded { id: "c/d".into(), config: "{}".into(), checkpoint_bytes: None, checkpoint: Vec::new() };
        assert!(matches!(model(&s, &other), Err(NoModel::Loading(_))));
    }
}

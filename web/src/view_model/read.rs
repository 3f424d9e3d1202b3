//! Reading a model that is not a preset: a pasted or fetched `config.json`
//! (the family readers), or a stand-in for a bare parameter count. The page's
//! first load has no readers linked in; it asks the on-demand reader bundle
//! (`state::reader`), which may not have loaded yet. The native tests and
//! the reader bundle link them: [`Linked`]. The diagnose bundle takes the
//! page's own reading with the plan instead: [`Handed`] (live mode takes the
//! page's computed plan, `live::plan`).

use shared::arch::Architecture;

use super::presets::decode;
use super::synth::model_with_params;

/// Reads models. `None`: the reader is still loading (ask again when it is).
pub trait Reader {
    /// The architecture of a `config.json`, or the reader's error.
    fn config(&self, json: &str) -> Option<Result<Architecture, String>>;
    /// The stand-in architecture for a model of about `params` parameters.
    fn stand_in(&self, params: u64) -> Option<Result<Architecture, String>>;
}

/// The readers compiled into this binary.
#[derive(Debug, Clone, Copy)]
pub struct Linked;

impl Reader for Linked {
    fn config(&self, json: &str) -> Option<Result<Architecture, String>> {
        Some(Architecture::from_config_json(json).map_err(|e| e.to_string()))
    }

    fn stand_in(&self, params: u64) -> Option<Result<Architecture, String>> {
        Some(model_with_params(params).map(|m| m.arch))
    }
}

/// The page's reading of the plan's model when it is not a preset: the
/// reader bundle's encoded architecture, handed to the diagnose bundle with
/// the plan (`state::bundles::plan_args`), so that it reads a plan's model
/// as the page did, without the link's `cfg=` checked again. Empty when the page has none: a preset, a checkpoint's
/// own model, or a reading still loading.
#[derive(Debug, Clone, Copy)]
pub struct Handed<'a>(pub &'a [u8]);

impl Handed<'_> {
    fn read(&self) -> Option<Result<Architecture, String>> {
        Some(if self.0.is_empty() { Err("the page has not read this model yet".into()) } else { decode(self.0) })
    }
}

impl Reader for Handed<'_> {
    fn config(&self, _json: &str) -> Option<Result<Architecture, String>> {
        self.read()
    }

    fn stand_in(&self, _params: u64) -> Option<Result<Architecture, String>> {
        self.read()
    }
}

/// A share link's state as a bundle takes it from the page: the page checked
/// a `cfg=` config when it read it, so the link's decoding checks nothing
/// again (the family readers stay out of the bundle).
pub fn handed_state(query: &str) -> shared::link::LinkState {
    shared::link::decode_with(query, &|_| Ok(())).state
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view_model::presets::encode;

    #[test]
    fn the_handed_reading_is_the_linked_one() {
        let json = r#"{"model_type":"llama","hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":16,
            "num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256}"#;
        let linked = Linked.config(json).unwrap_or_else(|| panic!("linked")).unwrap_or_else(|e| panic!("{e}"));
        let bytes = encode(&linked).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Handed(&bytes).config(json), Some(Ok(linked.clone())));
        assert_eq!(Handed(&bytes).stand_in(7), Some(Ok(linked)), "the page's reading, whatever the count");
        assert!(Handed(&[]).config(json).is_some_and(|r| r.is_err()), "nothing handed is an error, not a wait");
        assert!(Handed(&[1, 2, 3]).config(json).is_some_and(|r| r.is_err()), "broken bytes are an error");
    }
}

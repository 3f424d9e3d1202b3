//! Reading a model that is not a preset: a pasted or fetched `config.json`
//! (the family readers), or a stand-in for a bare parameter count. The page's
//! first load has no readers linked in; it asks the on-demand reader bundle
//! (`state::reader`), which may not have loaded yet. Everything else (the
//! native tests, the diagnose and live bundles) links them: [`Linked`].

use shared::arch::Architecture;

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

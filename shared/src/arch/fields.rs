//! Typed access to the fields of a `config.json` object, so that every error
//! names the field it is about (`text_config.hidden_size: must be at least 1`).

use serde_json::{Map, Value};

/// Why a config could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("config.json is not valid JSON: {0}")]
    Json(String),
    #[error("config.json must be a JSON object")]
    NotAnObject,
    #[error("config.json is missing `{field}`")]
    Missing { field: String },
    #[error("config.json field `{field}`: {reason}")]
    Invalid { field: String, reason: String },
    /// An architecture no family reader knows that is not a plain dense
    /// decoder: a generic read would be a guess, so there is no estimate.
    #[error(
        "unknown architecture `{model_type}` with {what}: no reader knows its layout, so no verdict is given on a guess. \
         Give its checkpoint instead for exact weights: `headroom estimate --checkpoint PATH` (a local folder, \
         Hugging Face cache entry or .gguf) or `--hf ORG/NAME` (the Hub)"
    )]
    UnknownArchitecture { model_type: String, what: String },
}

/// The largest width, vocabulary or rank accepted. Real models stay far below
/// (the widest published vocabulary is ~262k); bounding inputs keeps every
/// product in the counter far from `u64` overflow.
pub const MAX_DIM: u64 = 1 << 24;
/// The most layers accepted (real models: ≤ 126 in Llama 3.1 405B).
pub const MAX_LAYERS: u64 = 4096;
/// The longest context or window a checkpoint may state: the most tokens a
/// plan takes (`plan::MAX_TOKENS`, 2^30; Llama 4 Scout's 10M is far below).
pub const MAX_CONTEXT: u64 = 1 << 30;

/// A view of one JSON object with a path prefix for error messages.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    prefix: &'a str,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>, prefix: &'a str) -> Self {
        Self { map, prefix }
    }

    pub fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() { key.to_owned() } else { format!("{}.{key}", self.prefix) }
    }

    fn invalid(&self, key: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { field: self.path(key), reason: reason.into() }
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    /// The raw value of a key.
    pub fn value(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// A nested object (`text_config`), if present and an object.
    pub fn object(&self, key: &str) -> Option<&'a Map<String, Value>> {
        self.map.get(key).and_then(Value::as_object)
    }

    /// A non-negative integer; `null` and absence are `None`. Integral floats
    /// (`4096.0`) are accepted because some exporters write them.
    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(v) = n.as_u64() {
                    return Ok(Some(v));
                }
                match n.as_f64() {
                    Some(f) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Ok(Some(f as u64)),
                    _ => Err(self.invalid(key, format!("expected a whole number ≥ 0, got {n}"))),
                }
            }
            Some(other) => Err(self.invalid(key, format!("expected a number, got {}", kind(other)))),
        }
    }

    /// A dimension: at least 1 and at most `max`.
    pub fn opt_dim(&self, key: &str, max: u64) -> Result<Option<u64>, ConfigError> {
        match self.opt_u64(key)? {
            None => Ok(None),
            Some(0) => Err(self.invalid(key, "must be at least 1")),
            Some(v) if v > max => Err(self.invalid(key, format!("{v} is implausibly large (limit {max})"))),
            Some(v) => Ok(Some(v)),
        }
    }

    /// A required dimension.
    pub fn dim(&self, key: &str) -> Result<u64, ConfigError> {
        self.opt_dim(key, MAX_DIM)?.ok_or_else(|| ConfigError::Missing { field: self.path(key) })
    }

    /// The first present of several synonymous keys (`n_embd` / `hidden_size`).
    pub fn dim_any(&self, keys: &[&str]) -> Result<u64, ConfigError> {
        for key in keys {
            if let Some(v) = self.opt_dim(key, MAX_DIM)? {
                return Ok(v);
            }
        }
        Err(ConfigError::Missing { field: self.path(keys.first().copied().unwrap_or("?")) })
    }

    pub fn dim_or(&self, key: &str, default: u64) -> Result<u64, ConfigError> {
        Ok(self.opt_dim(key, MAX_DIM)?.unwrap_or(default))
    }

    /// The number of layers (bounded by [`MAX_LAYERS`]).
    pub fn layers(&self, key: &str) -> Result<u64, ConfigError> {
        self.opt_dim(key, MAX_LAYERS)?.ok_or_else(|| ConfigError::Missing { field: self.path(key) })
    }

    /// A count that may be zero (`n_shared_experts: 0`, `first_k_dense_replace`).
    pub fn count_or(&self, key: &str, default: u64) -> Result<u64, ConfigError> {
        match self.opt_u64(key)? {
            Some(v) if v > MAX_DIM => Err(self.invalid(key, format!("{v} is implausibly large"))),
            Some(v) => Ok(v),
            None => Ok(default),
        }
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.invalid(key, format!("expected true or false, got {}", kind(other)))),
        }
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        Ok(self.opt_bool(key)?.unwrap_or(default))
    }

    pub fn opt_str(&self, key: &str) -> Option<&'a str> {
        self.map.get(key).and_then(Value::as_str)
    }

    /// A list of layer indices (`mlp_only_layers`, `cross_attention_layers`).
    pub fn index_list(&self, key: &str) -> Result<Vec<u64>, ConfigError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_u64().ok_or_else(|| self.invalid(key, "expected a list of layer indices")))
                .collect(),
            Some(other) => Err(self.invalid(key, format!("expected a list, got {}", kind(other)))),
        }
    }

    /// A list of strings (`layer_types`, `architectures`).
    pub fn str_list(&self, key: &str) -> Result<Vec<&'a str>, ConfigError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().ok_or_else(|| self.invalid(key, "expected a list of strings")))
                .collect(),
            Some(other) => Err(self.invalid(key, format!("expected a list, got {}", kind(other)))),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

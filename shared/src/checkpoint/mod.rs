//! The checkpoint is the truth: every tensor's dtype and shape read from a
//! checkpoint's own headers (safetensors or GGUF), with a role and a layer
//! from its name, so weights are exact for any architecture — even one no
//! family reader knows.
//!
//! Everything here is pure: callers hand in bytes (a file's first bytes, a
//! Range response) and get typed results or an error naming the problem.
//! [`safetensors`] and [`gguf`] read one file each; [`Checkpoint`] puts the
//! files of one model together; [`roles`] classifies names; [`layout`] turns
//! tensors into the exact per-role, per-layer groups the estimate uses; and
//! [`infer`] builds an architecture from the tensors when the config is of an
//! unknown kind.

pub mod ggml;
pub mod gguf;
pub mod infer;
pub mod layout;
pub mod read;
pub mod roles;
pub mod safetensors;

use serde::{Deserialize, Serialize};

use ggml::GgmlType;
use safetensors::StDtype;

/// A tensor's storage type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum TensorDtype {
    Safetensors(StDtype),
    Ggml(GgmlType),
}

impl TensorDtype {
    pub fn name(self) -> &'static str {
        match self {
            Self::Safetensors(d) => d.name(),
            Self::Ggml(t) => t.name(),
        }
    }
}

/// One tensor as its header describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    pub name: String,
    pub dtype: TensorDtype,
    /// Outermost dimension first (GGUF's innermost-first sizes are reversed).
    pub shape: Vec<u64>,
    pub elements: u64,
    /// Exact bytes in the file.
    pub bytes: u64,
}

/// Which format the files are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    Safetensors,
    Gguf,
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileSummary {
    pub name: String,
    pub tensors: usize,
    pub data_bytes: u64,
}

/// All files of one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub kind: CheckpointKind,
    pub files: Vec<FileSummary>,
    pub tensors: Vec<Tensor>,
    /// The GGUF header of the first part (its metadata describes the model).
    pub gguf: Option<gguf::File>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the file ends too soon: {needed} bytes are needed, {have} are there")]
    Truncated { needed: u64, have: u64 },
    #[error("the header claims {claimed} bytes, more than the {limit} any safetensors reader accepts")]
    HeaderTooLarge { claimed: u64, limit: u64 },
    #[error("the header claims {claimed} bytes but the whole file is {file_bytes}")]
    HeaderPastEnd { claimed: u64, file_bytes: u64 },
    #[error("the tensors run to byte {end} of the data, past its end at {data_bytes}")]
    DataPastEnd { end: u64, data_bytes: u64 },
    #[error("the header is not valid UTF-8 (from byte {0})")]
    Utf8(u64),
    #[error("the header is not valid JSON: {0}")]
    Json(String),
    #[error("tensor `{tensor}` has an unknown dtype `{dtype}`")]
    UnknownDtype { tensor: String, dtype: String },
    #[error("tensor `{tensor}` {problem}")]
    Tensor { tensor: String, problem: String },
    #[error("{0}")]
    Invalid(String),
}

impl CheckpointError {
    pub(crate) fn tensor(name: &str, problem: impl Into<String>) -> Self {
        Self::Tensor { tensor: name.to_owned(), problem: problem.into() }
    }
}

/// Elements of a shape, refusing one whose product overflows.
pub(crate) fn elements(name: &str, shape: &[u64]) -> Result<u64, CheckpointError> {
    shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| CheckpointError::tensor(name, format!("has a shape {shape:?} too large to count")))
}

impl Checkpoint {
    /// The shards of a safetensors checkpoint, `(file name, header)` each.
    /// A tensor in two shards is an error.
    pub fn from_safetensors(files: Vec<(String, safetensors::Header)>) -> Result<Self, CheckpointError> {
        let mut seen = std::collections::HashMap::new();
        let mut out = Self { kind: CheckpointKind::Safetensors, files: Vec::new(), tensors: Vec::new(), gguf: None };
        for (file, header) in files {
            for t in &header.tensors {
                if let Some(other) = seen.insert(t.name.clone(), file.clone()) {
                    return Err(CheckpointError::tensor(&t.name, format!("is in both {other} and {file}")));
                }
            }
            out.files.push(FileSummary { name: file, tensors: header.tensors.len(), data_bytes: header.data_bytes });
            out.tensors.extend(header.tensors);
        }
        if out.tensors.is_empty() {
            return Err(CheckpointError::Invalid("the checkpoint holds no tensors".into()));
        }
        Ok(out)
    }

    /// The parts of a GGUF model, in order; a split model's parts must all
    /// be there (`split.count`) and hold `split.tensors.count` tensors in all.
    pub fn from_gguf(parts: Vec<(String, gguf::File)>) -> Result<Self, CheckpointError> {
        let Some((first_name, first)) = parts.first() else {
            return Err(CheckpointError::Invalid("no GGUF file given".into()));
        };
        let expected = first.split().map_or(1, |(_, count)| count);
        if parts.len() as u64 != expected {
            return Err(CheckpointError::Invalid(format!(
                "{first_name} is part of a split model of {expected} files, but {} were read",
                parts.len()
            )));
        }
        for (i, (name, file)) in parts.iter().enumerate() {
            let no = file.split().map_or(0, |(no, _)| no);
            if expected > 1 && no != i as u64 {
                return Err(CheckpointError::Invalid(format!(
                    "{name} says it is part {} of {expected}, not part {}",
                    no + 1,
                    i + 1
                )));
            }
        }
        let gguf = first.clone();
        let mut out = Self { kind: CheckpointKind::Gguf, files: Vec::new(), tensors: Vec::new(), gguf: None };
        let mut seen = std::collections::HashSet::new();
        for (name, file) in parts {
            for t in &file.tensors {
                if !seen.insert(t.name.clone()) {
                    return Err(CheckpointError::tensor(&t.name, format!("appears again in {name}")));
                }
            }
            out.files.push(FileSummary { name, tensors: file.tensors.len(), data_bytes: file.data_bytes });
            out.tensors.extend(file.tensors);
        }
        if let Some(total) = gguf.get_u64("split.tensors.count")
            && expected > 1
            && total != out.tensors.len() as u64
        {
            return Err(CheckpointError::Invalid(format!(
                "the split model should hold {total} tensors but its parts hold {}",
                out.tensors.len()
            )));
        }
        if out.tensors.is_empty() {
            return Err(CheckpointError::Invalid("the GGUF file holds no tensors".into()));
        }
        out.gguf = Some(gguf);
        Ok(out)
    }

    /// Bytes of every tensor.
    pub fn total_bytes(&self) -> u64 {
        self.tensors.iter().fold(0u64, |a, t| a.saturating_add(t.bytes))
    }
}

//! A checkpoint's tensors summed by role and layer: the exact bytes and
//! parameters of every group, and the [`TensorLayout`] the estimate's
//! what-if formats use.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::roles::{Packing, QuantPart, classify};
use super::safetensors::StDtype;
use super::{Checkpoint, CheckpointKind, TensorDtype};
use crate::arch::{Role, TensorGroup, TensorLayout};

/// One role in one place, summed over its tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactGroup {
    pub role: Role,
    pub layer: Option<u32>,
    /// Parameters (packed 4-bit values unpacked; quantisation side tensors count none).
    pub params: u64,
    /// Exact bytes in the checkpoint, side tensors included.
    pub bytes: u64,
    /// Of `bytes`, the scales, zeros and indexes.
    pub quant_bytes: u64,
    /// Input width of the group's first weight (for what-if formats).
    pub in_features: u64,
}

/// What the classification needs beyond the names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hints {
    /// Decoder layers (from the config or GGUF metadata): tensors of later
    /// layers are multi-token-prediction heads.
    pub num_layers: Option<u32>,
    /// Bits per value of int32-packed weights (GPTQ/AWQ `bits`; 4 if unknown).
    pub packed_bits: Option<u8>,
}

/// Bytes by storage type, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DtypeBytes {
    pub dtype: String,
    pub tensors: usize,
    pub bytes: u64,
}

/// A checkpoint's tensors by role and layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExactLayout {
    pub kind: CheckpointKind,
    pub groups: Vec<ExactGroup>,
    pub num_layers: u32,
    pub tensors: usize,
    pub files: usize,
    pub dtypes: Vec<DtypeBytes>,
    /// Names of tensors no rule knows (counted under "other"), the first few.
    pub unclassified: Vec<String>,
    pub unclassified_count: usize,
}

/// How many unclassified names to keep for display.
const KEEP_UNCLASSIFIED: usize = 8;

impl ExactLayout {
    pub fn of(checkpoint: &Checkpoint, hints: Hints) -> Self {
        let names: HashSet<&str> = checkpoint.tensors.iter().map(|t| t.name.as_str()).collect();
        let bits = u64::from(hints.packed_bits.filter(|b| (1..=16).contains(b)).unwrap_or(4));
        let mut index: HashMap<(Role, Option<u32>), usize> = HashMap::new();
        let mut groups: Vec<ExactGroup> = Vec::new();
        let mut dtypes: Vec<DtypeBytes> = Vec::new();
        let mut unclassified = Vec::new();
        let mut unclassified_count = 0;
        let mut max_layer: Option<u32> = None;
        for t in &checkpoint.tensors {
            let c = classify(&t.name, hints.num_layers);
            if c.role == Role::Other {
                unclassified_count += 1;
                if unclassified.len() < KEEP_UNCLASSIFIED {
                    unclassified.push(t.name.clone());
                }
            }
            let st = match t.dtype {
                TensorDtype::Safetensors(d) => Some(d),
                TensorDtype::Ggml(_) => None,
            };
            // A `U8` weight beside a scale packs two 4-bit values per byte
            // (bitsandbytes 4-bit with `absmax`, ModelOpt NVFP4 with `weight_scale`).
            let packing = match (c.packing, st) {
                (Packing::Int32, Some(StDtype::U8)) => Packing::TwoPerByte,
                (Packing::Plain, Some(StDtype::U8))
                    if c.quant.is_none()
                        && (names.contains(format!("{}.absmax", t.name).as_str())
                            || names.contains(format!("{}_scale", t.name).as_str())) =>
                {
                    Packing::TwoPerByte
                }
                (p, _) => p,
            };
            let per_element = match packing {
                Packing::Plain => 1,
                Packing::TwoPerByte => 2,
                Packing::Int32 => (32 / bits).max(1),
            };
            let params = if c.quant.is_some() { 0 } else { t.elements.saturating_mul(per_element) };
            let in_features = match (packing, t.shape.as_slice()) {
                (Packing::Int32, [rows, ..]) if st == Some(StDtype::I32) => rows.saturating_mul(per_element),
                (_, [.., last]) if t.shape.len() >= 2 => {
                    last.saturating_mul(if packing == Packing::TwoPerByte { 2 } else { 1 })
                }
                _ => 0,
            };
            if let Some(l) = c.layer {
                max_layer = Some(max_layer.map_or(l, |m| m.max(l)));
            }
            let slot = *index.entry((c.role, c.layer)).or_insert_with(|| {
                groups.push(ExactGroup {
                    role: c.role,
                    layer: c.layer,
                    params: 0,
                    bytes: 0,
                    quant_bytes: 0,
                    in_features: 0,
                });
                groups.len() - 1
            });
            let g = &mut groups[slot];
            g.params = g.params.saturating_add(params);
            g.bytes = g.bytes.saturating_add(t.bytes);
            if matches!(c.quant, Some(QuantPart::Scale | QuantPart::Zero | QuantPart::Index)) {
                g.quant_bytes = g.quant_bytes.saturating_add(t.bytes);
            } else if g.in_features == 0 {
                g.in_features = in_features;
            }
            match dtypes.iter_mut().find(|d| d.dtype == t.dtype.name()) {
                Some(d) => {
                    d.tensors += 1;
                    d.bytes = d.bytes.saturating_add(t.bytes);
                }
                None => dtypes.push(DtypeBytes { dtype: t.dtype.name().to_owned(), tensors: 1, bytes: t.bytes }),
            }
        }
        crate::order::sort_by_key(&mut dtypes, |d| std::cmp::Reverse(d.bytes));
        let num_layers = hints.num_layers.unwrap_or_else(|| max_layer.map_or(0, |m| m.saturating_add(1)));
        Self {
            kind: checkpoint.kind,
            groups,
            num_layers,
            tensors: checkpoint.tensors.len(),
            files: checkpoint.files.len(),
            dtypes,
            unclassified,
            unclassified_count,
        }
    }

    pub fn total_bytes(&self) -> u64 {
        self.groups.iter().fold(0u64, |a, g| a.saturating_add(g.bytes))
    }

    pub fn total_params(&self) -> u64 {
        self.groups.iter().fold(0u64, |a, g| a.saturating_add(g.params))
    }

    /// Bytes of the groups with `role`.
    pub fn bytes_of(&self, role: Role) -> u64 {
        self.groups.iter().filter(|g| g.role == role).fold(0u64, |a, g| a.saturating_add(g.bytes))
    }

    /// The parameters by role and layer, for formats other than the checkpoint's own.
    pub fn tensor_layout(&self) -> TensorLayout {
        let groups = self
            .groups
            .iter()
            .filter(|g| g.params > 0)
            .map(|g| TensorGroup { role: g.role, layer: g.layer, params: g.params, in_features: g.in_features })
            .collect();
        TensorLayout { groups, num_layers: self.num_layers }
    }
}

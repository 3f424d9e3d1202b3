//! safetensors headers and indexes, read without the tensor data.
//!
//! A file is an 8-byte little-endian header length `N`, `N` bytes of JSON
//! (`{"name": {"dtype", "shape", "data_offsets": [start, end]}, …,
//! "__metadata__": {…}}`), then the data. [`header_len`] reads the prefix and
//! says how many bytes to fetch next — checked against the file size and
//! [`MAX_HEADER_BYTES`] before anything is allocated; [`parse_header`] checks
//! every tensor the way the `safetensors` crate (0.6) does: a known dtype, a
//! byte length equal to elements × dtype bits, offsets that neither overlap
//! nor leave gaps nor run past the data. [`parse_index`] reads
//! `model.safetensors.index.json`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{CheckpointError, Tensor, TensorDtype};

/// The largest header the `safetensors` crate accepts (`MAX_HEADER_SIZE`,
/// 100,000,000 bytes in safetensors 0.6 `tensor.rs`).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Every dtype the safetensors format defines (safetensors 0.6 `Dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[allow(non_camel_case_types)]
pub enum StDtype {
    BOOL,
    /// Two e2m1 values per byte (MXFP4/NVFP4 payloads).
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    /// The power-of-two scales of MX formats.
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

impl StDtype {
    pub const ALL: &[StDtype] = &[
        Self::BOOL,
        Self::F4,
        Self::F6_E2M3,
        Self::F6_E3M2,
        Self::U8,
        Self::I8,
        Self::F8_E5M2,
        Self::F8_E4M3,
        Self::F8_E8M0,
        Self::F8_E4M3FNUZ,
        Self::F8_E5M2FNUZ,
        Self::I16,
        Self::U16,
        Self::F16,
        Self::BF16,
        Self::I32,
        Self::U32,
        Self::F32,
        Self::C64,
        Self::F64,
        Self::I64,
        Self::U64,
    ];

    /// The name the header writes.
    pub fn name(self) -> &'static str {
        use StDtype::*;
        match self {
            BOOL => "BOOL",
            F4 => "F4",
            F6_E2M3 => "F6_E2M3",
            F6_E3M2 => "F6_E3M2",
            U8 => "U8",
            I8 => "I8",
            F8_E5M2 => "F8_E5M2",
            F8_E4M3 => "F8_E4M3",
            F8_E8M0 => "F8_E8M0",
            F8_E4M3FNUZ => "F8_E4M3FNUZ",
            F8_E5M2FNUZ => "F8_E5M2FNUZ",
            I16 => "I16",
            U16 => "U16",
            F16 => "F16",
            BF16 => "BF16",
            I32 => "I32",
            U32 => "U32",
            F32 => "F32",
            C64 => "C64",
            F64 => "F64",
            I64 => "I64",
            U64 => "U64",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|d| d.name() == name)
    }

    /// Bits per element (`Dtype::bitsize`).
    pub fn bits(self) -> u64 {
        use StDtype::*;
        match self {
            F4 => 4,
            F6_E2M3 | F6_E3M2 => 6,
            BOOL | U8 | I8 | F8_E5M2 | F8_E4M3 | F8_E8M0 | F8_E4M3FNUZ | F8_E5M2FNUZ => 8,
            I16 | U16 | F16 | BF16 => 16,
            I32 | U32 | F32 => 32,
            C64 | F64 | I64 | U64 => 64,
        }
    }
}

/// One file's header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub tensors: Vec<Tensor>,
    /// `__metadata__` (string → string in the format; other values kept as text).
    pub metadata: BTreeMap<String, String>,
    /// Bytes of the data section the offsets describe.
    pub data_bytes: u64,
}

/// The length `N` of the JSON header, from a file's first 8 bytes, checked
/// against [`MAX_HEADER_BYTES`] and, when known, the file's size.
pub fn header_len(prefix: &[u8], file_bytes: Option<u64>) -> Result<u64, CheckpointError> {
    let Some(first) = prefix.get(..8) else {
        return Err(CheckpointError::Truncated { needed: 8, have: prefix.len() as u64 });
    };
    let mut le = [0u8; 8];
    le.copy_from_slice(first);
    let n = u64::from_le_bytes(le);
    if n > MAX_HEADER_BYTES {
        return Err(CheckpointError::HeaderTooLarge { claimed: n, limit: MAX_HEADER_BYTES });
    }
    if let Some(size) = file_bytes
        && n.saturating_add(8) > size
    {
        return Err(CheckpointError::HeaderPastEnd { claimed: n, file_bytes: size });
    }
    if n < 2 {
        return Err(CheckpointError::Invalid("a safetensors header of fewer than 2 bytes cannot be JSON".into()));
    }
    Ok(n)
}

/// Parses the JSON header (the `N` bytes after the 8-byte prefix). With
/// `file_bytes`, the tensors must end exactly where the file does.
pub fn parse_header(json: &[u8], file_bytes: Option<u64>) -> Result<Header, CheckpointError> {
    let text = std::str::from_utf8(json).map_err(|e| CheckpointError::Utf8(e.valid_up_to() as u64))?;
    // Writers pad the header with spaces to align the data.
    let value: Value = serde_json::from_str(text.trim_end()).map_err(|e| CheckpointError::Json(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(CheckpointError::Invalid("the header is not a JSON object".into()));
    };
    let mut metadata = BTreeMap::new();
    let mut spans: Vec<(u64, u64, usize)> = Vec::with_capacity(map.len());
    let mut tensors = Vec::with_capacity(map.len());
    for (name, entry) in &map {
        if name == "__metadata__" {
            let Value::Object(meta) = entry else {
                return Err(CheckpointError::Invalid("`__metadata__` is not an object".into()));
            };
            for (k, v) in meta {
                metadata.insert(k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned));
            }
            continue;
        }
        let tensor = parse_tensor(name, entry)?;
        let Some([start, end]) = entry.get("data_offsets").and_then(offsets) else {
            return Err(CheckpointError::tensor(name, "has no valid `data_offsets` [start, end]"));
        };
        if end < start {
            return Err(CheckpointError::tensor(name, format!("ends (byte {end}) before it starts (byte {start})")));
        }
        if end - start != tensor.bytes {
            return Err(CheckpointError::tensor(
                name,
                format!(
                    "holds {} bytes but {} {:?} values need {}",
                    end - start,
                    tensor.dtype.name(),
                    tensor.shape,
                    tensor.bytes
                ),
            ));
        }
        spans.push((start, end, tensors.len()));
        tensors.push(tensor);
    }
    spans.sort_unstable();
    let mut at = 0u64;
    for &(start, end, i) in &spans {
        let name = &tensors[i].name;
        if start < at {
            return Err(CheckpointError::tensor(
                name,
                format!("overlaps the tensor before it (starts at {start}, before {at})"),
            ));
        }
        if start > at {
            return Err(CheckpointError::tensor(
                name,
                format!("leaves a gap: starts at {start}, the previous ends at {at}"),
            ));
        }
        at = end;
    }
    if let Some(size) = file_bytes {
        let data = size.saturating_sub(8).saturating_sub(json.len() as u64);
        if at > data {
            return Err(CheckpointError::DataPastEnd { end: at, data_bytes: data });
        }
    }
    Ok(Header { tensors, metadata, data_bytes: at })
}

fn offsets(v: &Value) -> Option<[u64; 2]> {
    match v.as_array()?.as_slice() {
        [a, b] => Some([a.as_u64()?, b.as_u64()?]),
        _ => None,
    }
}

fn parse_tensor(name: &str, entry: &Value) -> Result<Tensor, CheckpointError> {
    let dtype_name =
        entry.get("dtype").and_then(Value::as_str).ok_or_else(|| CheckpointError::tensor(name, "has no `dtype`"))?;
    let dtype = StDtype::parse(dtype_name)
        .ok_or_else(|| CheckpointError::UnknownDtype { tensor: name.to_owned(), dtype: dtype_name.to_owned() })?;
    let shape = entry
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| CheckpointError::tensor(name, "has no `shape`"))?
        .iter()
        .map(Value::as_u64)
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| CheckpointError::tensor(name, "has a `shape` that is not a list of sizes"))?;
    let elements = super::elements(name, &shape)?;
    let bits = u128::from(elements) * u128::from(dtype.bits());
    if bits % 8 != 0 {
        return Err(CheckpointError::tensor(
            name,
            format!("{elements} {dtype_name} values are not a whole number of bytes"),
        ));
    }
    let bytes = u64::try_from(bits / 8).map_err(|_| CheckpointError::tensor(name, "is too large"))?;
    Ok(Tensor { name: name.to_owned(), dtype: TensorDtype::Safetensors(dtype), shape, elements, bytes })
}

/// `model.safetensors.index.json`: which file holds each tensor, and the
/// exporter's own total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// Tensor name → file name.
    pub weight_map: BTreeMap<String, String>,
    /// `metadata.total_size`, when written.
    pub total_size: Option<u64>,
}

impl Index {
    /// The shard files, each once, in name order.
    pub fn files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = self.weight_map.values().map(String::as_str).collect();
        files.sort_unstable();
        files.dedup();
        files
    }
}

pub fn parse_index(text: &str) -> Result<Index, CheckpointError> {
    let value: Value = serde_json::from_str(text).map_err(|e| CheckpointError::Json(e.to_string()))?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| CheckpointError::Invalid("not a safetensors index: no `weight_map` object".into()))?;
    let mut weight_map = BTreeMap::new();
    for (tensor, file) in map {
        let file =
            file.as_str().ok_or_else(|| CheckpointError::tensor(tensor, "maps to a file name that is not a string"))?;
        // A file name is a plain name or a relative path inside the repo; a
        // name that climbs out would let an index read files elsewhere.
        if file.is_empty() || file.starts_with('/') || file.split(['/', '\\']).any(|p| p == "..") {
            return Err(CheckpointError::tensor(tensor, format!("maps to an unsafe file name `{file}`")));
        }
        weight_map.insert(tensor.clone(), file.to_owned());
    }
    let total_size = value.get("metadata").and_then(|m| m.get("total_size")).and_then(number);
    Ok(Index { weight_map, total_size })
}

fn number(total: &Value) -> Option<u64> {
    // Some exporters write the size as a string or a float.
    match total {
        Value::Number(n) => {
            n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
        }
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Total bytes of the weights an index (`metadata.total_size`) or one JSON
/// header describes: what `--safetensors-index` and the page use. A header is
/// summed from its `data_offsets` only — no dtype or shape check — which keeps
/// this path small enough for the page's first load; [`parse_header`] is the
/// full check.
pub fn total_bytes(text: &str) -> Result<u64, CheckpointError> {
    let value: Value = serde_json::from_str(text).map_err(|e| CheckpointError::Json(e.to_string()))?;
    let not_recognised = || {
        CheckpointError::Invalid(
            "neither a safetensors index (metadata.total_size) nor a safetensors header (tensors with data_offsets)"
                .into(),
        )
    };
    let obj = value.as_object().ok_or_else(not_recognised)?;
    if let Some(total) = obj.get("metadata").and_then(|m| m.get("total_size")) {
        return number(total).ok_or_else(not_recognised);
    }
    let mut total = 0u64;
    let mut tensors = 0usize;
    for (name, t) in obj.iter().filter(|(k, _)| *k != "__metadata__") {
        let [start, end] = t.get("data_offsets").and_then(offsets).ok_or_else(not_recognised)?;
        let len = end
            .checked_sub(start)
            .ok_or_else(|| CheckpointError::Tensor { tensor: name.clone(), problem: "ends before it starts".into() })?;
        total = total.saturating_add(len);
        tensors += 1;
    }
    if tensors == 0 {
        return Err(not_recognised());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_index_and_header_totals() {
        assert_eq!(total_bytes(r#"{"metadata":{"total_size":16060522496},"weight_map":{}}"#), Ok(16_060_522_496));
        assert_eq!(total_bytes(r#"{"metadata":{"total_size":"42"}}"#), Ok(42));
        let header = r#"{"__metadata__":{"format":"pt"},
            "a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},
            "b":{"dtype":"F32","shape":[4],"data_offsets":[12,28]}}"#;
        assert_eq!(total_bytes(header), Ok(28));
        assert!(total_bytes("[]").is_err());
        assert!(total_bytes(r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[12,0]}}"#).is_err());
        assert!(total_bytes("{").is_err());
    }
}

//! Exact checkpoint sizes from safetensors metadata: the sharded index
//! (`model.safetensors.index.json`, `metadata.total_size`) or a single file's
//! JSON header (tensors with `dtype`, `shape` and `data_offsets`).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SafetensorsError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("neither a safetensors index (metadata.total_size) nor a safetensors header (tensors with data_offsets)")]
    Unrecognised,
    #[error("tensor `{0}` has malformed data_offsets")]
    BadOffsets(String),
}

/// Total bytes of the weights described by an index or a header.
pub fn total_bytes(text: &str) -> Result<u64, SafetensorsError> {
    let value: Value = serde_json::from_str(text).map_err(|e| SafetensorsError::Json(e.to_string()))?;
    let obj = value.as_object().ok_or(SafetensorsError::Unrecognised)?;
    if let Some(total) = obj.get("metadata").and_then(|m| m.get("total_size")) {
        // Some exporters write the size as a string or a float.
        return match total {
            Value::Number(n) => {
                n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
            }
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
        .ok_or(SafetensorsError::Unrecognised);
    }
    let mut total = 0u64;
    let mut tensors = 0usize;
    for (name, t) in obj.iter().filter(|(k, _)| *k != "__metadata__") {
        let offsets = t.get("data_offsets").and_then(Value::as_array).ok_or(SafetensorsError::Unrecognised)?;
        let [start, end] = offsets.as_slice() else { return Err(SafetensorsError::BadOffsets(name.clone())) };
        let (Some(start), Some(end)) = (start.as_u64(), end.as_u64()) else {
            return Err(SafetensorsError::BadOffsets(name.clone()));
        };
        let len = end.checked_sub(start).ok_or_else(|| SafetensorsError::BadOffsets(name.clone()))?;
        total = total.saturating_add(len);
        tensors += 1;
    }
    if tensors == 0 {
        return Err(SafetensorsError::Unrecognised);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_index_and_header() {
        assert_eq!(total_bytes(r#"{"metadata":{"total_size":16060522496},"weight_map":{}}"#), Ok(16_060_522_496));
        let header = r#"{"__metadata__":{"format":"pt"},
            "a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},
            "b":{"dtype":"F32","shape":[4],"data_offsets":[12,28]}}"#;
        assert_eq!(total_bytes(header), Ok(28));
        assert!(total_bytes("[]").is_err());
        assert!(total_bytes(r#"{"a":{"data_offsets":[12,0]}}"#).is_err());
        assert!(total_bytes("{").is_err());
    }
}

//! GGUF (v2 and v3) headers: metadata key/values, tensor infos and the data
//! offset, read from a prefix of the file without the tensor data.
//!
//! The layout follows llama.cpp's reader (`ggml/src/gguf.cpp`, as vendored in
//! `llama-cpp-python` 0.3.36): the magic `GGUF`, a `u32` version, `u64`
//! tensor and key/value counts, the key/values, then per tensor a name,
//! `u32` dimension count (at most 4), `u64` sizes, a `u32` ggml type and a
//! `u64` offset; the data starts at the next multiple of `general.alignment`
//! (default 32), and every tensor's offset must equal the padded end of the one
//! before it. Like llama.cpp, v1 and files of the other byte order are refused.
//!
//! The reader never trusts a claimed length: each string, array and count is
//! checked against the bytes present before anything is allocated. When the
//! prefix ends too soon it answers [`CheckpointError::Truncated`] with how many
//! bytes it needs, so callers can read more and try again.

use std::collections::BTreeMap;

use super::ggml::GgmlType;
use super::{CheckpointError, Tensor, TensorDtype};

/// `GGUF_DEFAULT_ALIGNMENT` (gguf.h).
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// `GGML_MAX_DIMS` (ggml.h).
const MAX_DIMS: u32 = 4;
/// Nested arrays deeper than this are refused (llama.cpp writes none).
const MAX_DEPTH: u32 = 4;
/// Numeric arrays up to this length keep their values (per-layer arrays
/// such as `head_count_kv`); longer ones (token scores) keep only their length.
const KEEP_ARRAY_VALUES: u64 = 1 << 16;

/// A metadata value. Arrays of strings and long numeric arrays keep only
/// their length: the tokenizer's vocabulary is not needed for memory.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Array { len: u64, values: Vec<Value> },
}

impl Value {
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::Unsigned(v) => Some(v),
            Self::Signed(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
    /// A bool, or an integer 0/1 (per-layer flag arrays are written either way).
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Self::Bool(b) => Some(b),
            Self::Unsigned(v @ (0 | 1)) => Some(v == 1),
            // gguf-py writes a Python int as INT32.
            Self::Signed(v @ (0 | 1)) => Some(v == 1),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::Float(v) => Some(v),
            Self::Unsigned(v) => Some(v as f64),
            Self::Signed(v) => Some(v as f64),
            _ => None,
        }
    }
}

/// One GGUF file's header.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub version: u32,
    pub metadata: BTreeMap<String, Value>,
    pub tensors: Vec<Tensor>,
    pub alignment: u64,
    /// Where the data section starts (bytes from the file's start).
    pub data_offset: u64,
    /// Bytes of the data section the tensors occupy (padding included).
    pub data_bytes: u64,
}

impl File {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
    /// `general.architecture` (`llama`, `qwen3moe`, …).
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }
    /// `{arch}.{key}`.
    pub fn arch_u64(&self, key: &str) -> Option<u64> {
        self.get_u64(&format!("{}.{key}", self.architecture()?))
    }
    /// A per-layer value: an array with one entry per layer, or one value for all.
    pub fn arch_per_layer(&self, key: &str, layers: usize) -> Option<Vec<u64>> {
        match self.get(&format!("{}.{key}", self.architecture()?))? {
            Value::Array { values, .. } if values.len() == layers => values.iter().map(Value::as_u64).collect(),
            Value::Array { .. } => None,
            v => v.as_u64().map(|n| vec![n; layers]),
        }
    }
    /// `(split.no, split.count)` of a split file (0-based part number).
    pub fn split(&self) -> Option<(u64, u64)> {
        Some((self.get_u64("split.no")?, self.get_u64("split.count")?)).filter(|&(_, count)| count > 1)
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], CheckpointError> {
        let end = (self.at as u64).saturating_add(n);
        if end > self.bytes.len() as u64 {
            return Err(CheckpointError::Truncated { needed: end, have: self.bytes.len() as u64 });
        }
        let slice = &self.bytes[self.at..end as usize];
        self.at = end as usize;
        Ok(slice)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], CheckpointError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N as u64)?);
        Ok(out)
    }
    fn u32(&mut self) -> Result<u32, CheckpointError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, CheckpointError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// Requires `count × min_size` more bytes before a loop over `count` items starts.
    fn expect(&self, count: u64, min_size: u64) -> Result<(), CheckpointError> {
        let need = (self.at as u64).saturating_add(count.saturating_mul(min_size));
        if need > self.bytes.len() as u64 {
            return Err(CheckpointError::Truncated { needed: need, have: self.bytes.len() as u64 });
        }
        Ok(())
    }
    fn raw_str(&mut self) -> Result<&'a [u8], CheckpointError> {
        let len = self.u64()?;
        self.take(len)
    }
    fn string(&mut self, what: &str) -> Result<String, CheckpointError> {
        let at = self.at as u64;
        let raw = self.raw_str()?;
        std::str::from_utf8(raw)
            .map(str::to_owned)
            .map_err(|_| CheckpointError::Invalid(format!("{what} at byte {at} is not valid UTF-8")))
    }
}

/// The size of one scalar of GGUF value type `t` (gguf.h `enum gguf_type`),
/// `None` for strings and arrays.
fn scalar_size(t: u32) -> Option<u64> {
    match t {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

fn value(r: &mut Reader, t: u32, key: &str, depth: u32) -> Result<Value, CheckpointError> {
    let bad_type = || CheckpointError::Invalid(format!("metadata `{key}` has an unknown value type {t}"));
    Ok(match t {
        0 => Value::Unsigned(u64::from(r.array::<1>()?[0])),
        1 => Value::Signed(i64::from(r.array::<1>()?[0] as i8)),
        2 => Value::Unsigned(u64::from(u16::from_le_bytes(r.array()?))),
        3 => Value::Signed(i64::from(i16::from_le_bytes(r.array()?))),
        4 => Value::Unsigned(u64::from(r.u32()?)),
        5 => Value::Signed(i64::from(i32::from_le_bytes(r.array()?))),
        6 => Value::Float(f64::from(f32::from_le_bytes(r.array()?))),
        7 => match r.array::<1>()?[0] {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            b => return Err(CheckpointError::Invalid(format!("metadata `{key}` is a bool of value {b}"))),
        },
        8 => Value::Str(r.string(&format!("metadata `{key}`"))?),
        9 => {
            if depth >= MAX_DEPTH {
                return Err(CheckpointError::Invalid(format!("metadata `{key}` nests arrays deeper than {MAX_DEPTH}")));
            }
            let item = r.u32()?;
            let len = r.u64()?;
            match scalar_size(item) {
                Some(size) => {
                    r.expect(len, size)?;
                    if len > KEEP_ARRAY_VALUES {
                        r.take(len * size)?;
                        Value::Array { len, values: Vec::new() }
                    } else {
                        let values = (0..len).map(|_| value(r, item, key, depth + 1)).collect::<Result<_, _>>()?;
                        Value::Array { len, values }
                    }
                }
                None if item == 8 => {
                    // Each string is at least its 8-byte length.
                    r.expect(len, 8)?;
                    for _ in 0..len {
                        r.raw_str()?;
                    }
                    Value::Array { len, values: Vec::new() }
                }
                None if item == 9 => {
                    r.expect(len, 12)?;
                    for _ in 0..len {
                        value(r, 9, key, depth + 1)?;
                    }
                    Value::Array { len, values: Vec::new() }
                }
                None => {
                    return Err(CheckpointError::Invalid(format!(
                        "metadata `{key}` is an array of unknown type {item}"
                    )));
                }
            }
        }
        10 => Value::Unsigned(r.u64()?),
        11 => Value::Signed(i64::from_le_bytes(r.array()?)),
        12 => Value::Float(f64::from_le_bytes(r.array()?)),
        _ => return Err(bad_type()),
    })
}

/// Parses a GGUF header from the first bytes of a file. With `file_bytes`,
/// the tensors must fit in the file.
pub fn parse(bytes: &[u8], file_bytes: Option<u64>) -> Result<File, CheckpointError> {
    let mut r = Reader { bytes, at: 0 };
    if r.array::<4>()? != *b"GGUF" {
        return Err(CheckpointError::Invalid("not a GGUF file (the first 4 bytes are not `GGUF`)".into()));
    }
    let version = r.u32()?;
    match version {
        2 | 3 => {}
        1 => {
            return Err(CheckpointError::Invalid(
                "GGUF v1 is no longer read by llama.cpp; convert the model again".into(),
            ));
        }
        v if v & 0xFFFF == 0 => {
            return Err(CheckpointError::Invalid(format!(
                "GGUF version {v:#x}: a big-endian file, which llama.cpp does not load on this byte order"
            )));
        }
        v => return Err(CheckpointError::Invalid(format!("GGUF version {v} is not supported (2 and 3 are)"))),
    }
    let n_tensors = r.u64()?;
    let n_kv = r.u64()?;
    // A key/value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor
    // info at least 8 + 4 + 4 + 8 — checked before any loop starts.
    r.expect(n_kv, 13)?;
    let mut metadata = BTreeMap::new();
    for _ in 0..n_kv {
        let key = r.string("a metadata key")?;
        let t = r.u32()?;
        let v = value(&mut r, t, &key, 0)?;
        if metadata.insert(key.clone(), v).is_some() {
            return Err(CheckpointError::Invalid(format!("metadata key `{key}` appears twice")));
        }
    }
    let alignment = match metadata.get("general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(v) => match v.as_u64() {
            Some(a) if a.is_power_of_two() && a <= u64::from(u32::MAX) => a,
            _ => return Err(CheckpointError::Invalid("`general.alignment` is not a power of two".into())),
        },
    };
    r.expect(n_tensors, 24)?;
    let mut tensors: Vec<Tensor> = Vec::new();
    let mut offsets = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..n_tensors {
        let name = r.string("a tensor name")?;
        let n_dims = r.u32()?;
        if n_dims > MAX_DIMS {
            return Err(CheckpointError::tensor(&name, format!("has {n_dims} dimensions (ggml allows {MAX_DIMS})")));
        }
        // ggml's `ne` is innermost first; shapes here are outermost first.
        let mut shape = (0..n_dims).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
        shape.reverse();
        let type_id = r.u32()?;
        let offset = r.u64()?;
        let ty = GgmlType::from_id(type_id).ok_or_else(|| CheckpointError::UnknownDtype {
            tensor: name.clone(),
            dtype: format!("ggml type {type_id}"),
        })?;
        if shape.iter().any(|&d| d > i64::MAX as u64) {
            return Err(CheckpointError::tensor(&name, "has a dimension beyond INT64_MAX"));
        }
        let elements = super::elements(&name, &shape)?;
        let row = shape.last().copied().unwrap_or(1);
        let bytes = ty
            .row_bytes(row)
            .ok_or_else(|| {
                CheckpointError::tensor(
                    &name,
                    format!("has rows of {row} values, not a multiple of {}'s block of {}", ty.name(), ty.block()),
                )
            })?
            .checked_mul(elements.checked_div(row).unwrap_or(0))
            .ok_or_else(|| CheckpointError::tensor(&name, "is too large"))?;
        if !seen.insert(name.clone()) {
            return Err(CheckpointError::tensor(&name, "appears twice"));
        }
        offsets.push(offset);
        tensors.push(Tensor { name, dtype: TensorDtype::Ggml(ty), shape, elements, bytes });
    }
    // Tensors follow each other, each padded to the alignment (gguf.cpp).
    let mut size = 0u64;
    let mut end = 0u64;
    for (t, &offset) in tensors.iter().zip(&offsets) {
        if offset != size {
            let why =
                if offset < size { "overlaps the tensor before it" } else { "leaves a gap after the tensor before it" };
            return Err(CheckpointError::tensor(&t.name, format!("{why}: offset {offset}, expected {size}")));
        }
        end = offset.saturating_add(t.bytes);
        size = t
            .bytes
            .checked_next_multiple_of(alignment)
            .and_then(|p| size.checked_add(p))
            .ok_or_else(|| CheckpointError::tensor(&t.name, "runs past any possible file size"))?;
    }
    let header_end = r.at as u64;
    let data_offset = if n_tensors == 0 { header_end } else { header_end.next_multiple_of(alignment) };
    if let Some(total) = file_bytes {
        let end = data_offset.saturating_add(end);
        if end > total {
            return Err(CheckpointError::DataPastEnd { end, data_bytes: total });
        }
    }
    Ok(File { version, metadata, tensors, alignment, data_offset, data_bytes: size })
}

/// For `NAME-00001-of-00003.gguf`: every part's file name, in order.
pub fn split_names(first: &str) -> Option<Vec<String>> {
    let stem = first.strip_suffix(".gguf")?;
    let (head, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = head.rsplit_once('-')?;
    if no.len() != 5 || count.len() != 5 || no != "00001" {
        return None;
    }
    let count: u32 = count.parse().ok()?;
    if count < 2 {
        return None;
    }
    Some((1..=count).map(|i| format!("{prefix}-{i:05}-of-{count:05}.gguf")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_parts_of_a_split_file() {
        assert_eq!(
            split_names("Qwen3-00001-of-00003.gguf"),
            Some(vec![
                "Qwen3-00001-of-00003.gguf".to_owned(),
                "Qwen3-00002-of-00003.gguf".to_owned(),
                "Qwen3-00003-of-00003.gguf".to_owned()
            ])
        );
        assert_eq!(split_names("Qwen3-00002-of-00003.gguf"), None);
        assert_eq!(split_names("model.gguf"), None);
        assert_eq!(split_names("m-00001-of-00001.gguf"), None);
    }
}

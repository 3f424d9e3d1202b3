//! Which bytes of a checkpoint to read next: the pure part of reading
//! headers that the CLI (local files, ureq Range requests) and the page
//! (`File.slice`, `fetch` Range requests) share. Callers own the I/O: they
//! read `0 .. FIRST_READ`, then hand every answer to [`safetensors`] or
//! [`gguf`], which either finish or name the next range; [`plan`] says which
//! files a model's headers are in.

use super::safetensors::{self, Header};
use super::{CheckpointError, gguf};

/// Bytes asked for first: most safetensors headers fit (hf-mem and the
/// Hub's own size read use the same first 100 kB); GGUF metadata is read on.
pub const FIRST_READ: u64 = 100_000;
/// The largest GGUF header read before giving up (tokenizer vocabularies of
/// 256k tokens with merges take ~10 MB; this leaves a wide margin).
pub const MAX_GGUF_HEADER: u64 = 256 << 20;
/// Shard headers the page fetches at once (its fetches share the browser's
/// pool: one HTTP/2 connection to the Hub, at most 6 over HTTP/1.1).
pub const CONCURRENCY: usize = 8;
/// Shard headers the CLI reads at once, each reader keeping one connection
/// per host. 16 reads the shards of most checkpoints (Qwen3-30B-A3B's 16,
/// Llama 3.1 70B's 30 in two rounds) in one or two round trips each; the
/// read is bound by round trips, not CPU: on a stand-in Hub answering after
/// 20 ms, 163 shards took 1.04 s with 8 readers, 0.58 s with 16 and 0.35 s
/// with 32, whose extra 12 MB and 64 handshakes buy little for the common
/// sizes (`bench/hub.py`, docs/measurements.md).
pub const CLI_CONCURRENCY: usize = 16;

/// What the bytes read so far give.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<T> {
    Done(T),
    /// Read `start .. start + len` next and append it.
    Read {
        start: u64,
        len: u64,
    },
}

/// A safetensors header from the first `bytes` of a file of `size` bytes
/// (`None` when the server did not say: the offsets are then not checked
/// against the file's end).
pub fn safetensors(bytes: &[u8], size: Option<u64>) -> Result<Step<Header>, CheckpointError> {
    let n = safetensors::header_len(bytes, size)?;
    let end = 8 + n;
    let have = bytes.len() as u64;
    if have < end {
        return Ok(Step::Read { start: have, len: end - have });
    }
    // `end` ≤ `have`, a length in memory: the conversion holds.
    let json = bytes.get(8..end as usize).ok_or(CheckpointError::Truncated { needed: end, have })?;
    safetensors::parse_header(json, size).map(Step::Done)
}

/// A GGUF header from the first `bytes` of a file of `size` bytes, read on
/// in doubling steps up to [`MAX_GGUF_HEADER`].
pub fn gguf(bytes: &[u8], size: Option<u64>) -> Result<Step<gguf::File>, CheckpointError> {
    match gguf::parse(bytes, size) {
        Ok(f) => Ok(Step::Done(f)),
        Err(CheckpointError::Truncated { needed, .. }) if needed > MAX_GGUF_HEADER => {
            Err(CheckpointError::Invalid(format!("the GGUF header would be larger than {MAX_GGUF_HEADER} bytes")))
        }
        Err(CheckpointError::Truncated { needed, have }) => {
            let want = needed.max(have.saturating_mul(2)).min(size.unwrap_or(u64::MAX)).min(MAX_GGUF_HEADER);
            if want <= have {
                return Err(CheckpointError::Truncated { needed, have });
            }
            Ok(Step::Read { start: have, len: want - have })
        }
        Err(e) => Err(e),
    }
}

/// An answer to [`Step::Read`] that brought nothing: the file ended.
pub fn ended(have: u64, start: u64, len: u64) -> CheckpointError {
    CheckpointError::Truncated { needed: start.saturating_add(len), have }
}

/// The files whose headers make a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Safetensors shards, in the index's order (sorted, deduplicated).
    Safetensors(Vec<String>),
    /// GGUF parts: the first, and the rest of a split model.
    Gguf(Vec<String>),
}

impl Plan {
    /// The shards an index names (`model.safetensors.index.json`'s text).
    pub fn from_index(text: &str) -> Result<Self, CheckpointError> {
        let index = safetensors::parse_index(text)?;
        let files: Vec<String> = index.files().into_iter().map(str::to_owned).collect();
        if files.is_empty() {
            return Err(CheckpointError::Invalid("the index's `weight_map` names no file".into()));
        }
        Ok(Self::Safetensors(files))
    }

    /// A GGUF model from its first file: every part of a split model
    /// (`-00001-of-0000N.gguf`), else the file alone.
    pub fn gguf(first: &str) -> Self {
        Self::Gguf(gguf::split_names(first).unwrap_or_else(|| vec![first.to_owned()]))
    }

    /// The model in a set of files given together (dropped on the page):
    /// a GGUF file (the first part of a split model, with its other parts),
    /// or safetensors shards — those the index names when it is among them
    /// (`index`: its text), else every `.safetensors` file. A part or shard
    /// named but not given is an error naming it.
    pub fn dropped(names: &[&str], index: Option<&str>) -> Result<Self, CheckpointError> {
        let given = |f: &str| names.contains(&f);
        let ggufs: Vec<&str> = names.iter().copied().filter(|n| n.ends_with(".gguf")).collect();
        let plan = if !ggufs.is_empty() {
            let firsts: Vec<&str> =
                ggufs.iter().copied().filter(|g| !g.contains("-of-") || g.contains("-00001-of-")).collect();
            match firsts.as_slice() {
                [one] => Self::gguf(one),
                [] => {
                    return Err(CheckpointError::Invalid(format!(
                        "{} is a later part of a split GGUF model: give its first part (-00001-of-…) too",
                        ggufs[0]
                    )));
                }
                many => {
                    return Err(CheckpointError::Invalid(format!(
                        "several GGUF models were given ({}): give one",
                        many.join(", ")
                    )));
                }
            }
        } else if let Some(text) = index {
            Self::from_index(text)?
        } else {
            let mut shards: Vec<String> =
                names.iter().filter(|n| n.ends_with(".safetensors")).map(|n| (*n).to_owned()).collect();
            crate::order::sort(&mut shards);
            if shards.is_empty() {
                return Err(CheckpointError::Invalid("no .safetensors or .gguf file was given".into()));
            }
            Self::Safetensors(shards)
        };
        let missing: Vec<&str> = plan.files().iter().map(String::as_str).filter(|f| !given(f)).collect();
        if let Some(first) = missing.first() {
            return Err(CheckpointError::Invalid(format!(
                "{first} is part of the model but was not given ({} of {} files missing): give all of them at once",
                missing.len(),
                plan.files().len()
            )));
        }
        Ok(plan)
    }

    pub fn files(&self) -> &[String] {
        match self {
            Self::Safetensors(f) | Self::Gguf(f) => f,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_safetensors_header_asks_for_its_rest() {
        let json = format!(r#"{{"a":{{"dtype":"F16","shape":[{}],"data_offsets":[0,{}]}}}}"#, 4, 8);
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(json.as_bytes());
        file.extend_from_slice(&[0; 8]);
        let size = file.len() as u64;
        assert_eq!(safetensors(&file[..10], Some(size)), Ok(Step::Read { start: 10, len: 8 + json.len() as u64 - 10 }));
        let Ok(Step::Done(h)) = safetensors(&file, Some(size)) else { panic!("the whole header parses") };
        assert_eq!(h.data_bytes, 8);
        assert!(matches!(safetensors(&file[..4], Some(size)), Err(CheckpointError::Truncated { .. })));
    }

    #[test]
    fn a_gguf_prefix_asks_for_twice_as_much_up_to_the_file() {
        let mut file = b"GGUF".to_vec();
        file.extend_from_slice(&3u32.to_le_bytes());
        // 8 bytes read, the counts need 24: read on to twice the bytes (16), then to what is needed.
        assert_eq!(gguf(&file, Some(1000)), Ok(Step::Read { start: 8, len: 8 }));
        assert!(matches!(gguf(&file, Some(8)), Err(CheckpointError::Truncated { .. })));
        assert!(gguf(b"NOPE1234", Some(100)).is_err());
    }

    #[test]
    fn plans_name_the_files() {
        let index = r#"{"weight_map":{"a":"m-2.safetensors","b":"m-1.safetensors","c":"m-1.safetensors"}}"#;
        assert_eq!(Plan::from_index(index).unwrap().files(), ["m-1.safetensors", "m-2.safetensors"]);
        assert!(Plan::from_index(r#"{"weight_map":{}}"#).is_err());
        assert_eq!(Plan::gguf("x-00001-of-00002.gguf").files(), ["x-00001-of-00002.gguf", "x-00002-of-00002.gguf"]);
        assert_eq!(Plan::gguf("x.gguf").files(), ["x.gguf"]);
    }

    #[test]
    fn dropped_files_name_what_is_missing() {
        let two = ["x-00002-of-00002.gguf", "x-00001-of-00002.gguf"];
        assert_eq!(Plan::dropped(&two, None).unwrap().files(), ["x-00001-of-00002.gguf", "x-00002-of-00002.gguf"]);
        let e = Plan::dropped(&two[1..], None).unwrap_err().to_string();
        assert!(e.contains("x-00002-of-00002.gguf"), "{e}");
        assert!(Plan::dropped(&two[..1], None).unwrap_err().to_string().contains("later part"));
        assert!(Plan::dropped(&["a.gguf", "b.gguf"], None).unwrap_err().to_string().contains("several"));
        let st = ["b.safetensors", "config.json", "a.safetensors"];
        assert_eq!(Plan::dropped(&st, None).unwrap().files(), ["a.safetensors", "b.safetensors"]);
        let index = r#"{"weight_map":{"x":"a.safetensors","y":"c.safetensors"}}"#;
        assert!(Plan::dropped(&st, Some(index)).unwrap_err().to_string().contains("c.safetensors"));
        assert!(Plan::dropped(&["config.json"], None).is_err());
    }
}

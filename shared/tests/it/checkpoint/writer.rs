//! Writers for test checkpoints: safetensors headers and GGUF headers, built
//! byte by byte so every field can also be broken on purpose.

/// A safetensors file's first bytes (prefix + JSON header) for `tensors`
/// laid out back to back, and the whole file's size (data not written).
pub fn safetensors(tensors: &[(&str, &str, &[u64])]) -> (Vec<u8>, u64) {
    let mut at = 0u64;
    let mut entries = Vec::new();
    for (name, dtype, shape) in tensors {
        let bytes = shared::safetensors::StDtype::parse(dtype)
            .map_or(1, |d| (shape.iter().product::<u64>() * d.bits()).div_ceil(8));
        entries
            .push(format!(r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{at},{}]}}"#, at + bytes));
        at += bytes;
    }
    let json = format!(r#"{{"__metadata__":{{"format":"pt"}},{}}}"#, entries.join(","));
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    let size = out.len() as u64 + at;
    (out, size)
}

/// A safetensors prefix from raw JSON.
pub fn safetensors_raw(json: &str) -> Vec<u8> {
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out
}

/// GGUF metadata values.
#[derive(Debug, Clone)]
pub enum Kv {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(&'static str),
    U64(u64),
    I64(i64),
    F64(f64),
    ArrU32(Vec<u32>),
    ArrI32(Vec<i32>),
    ArrStr(Vec<&'static str>),
    ArrArr(Vec<Vec<u32>>),
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn value(out: &mut Vec<u8>, v: &Kv, with_type: bool) {
    let (t, body): (u32, Vec<u8>) = match v {
        Kv::U8(x) => (0, vec![*x]),
        Kv::I8(x) => (1, vec![*x as u8]),
        Kv::U16(x) => (2, x.to_le_bytes().to_vec()),
        Kv::I16(x) => (3, x.to_le_bytes().to_vec()),
        Kv::U32(x) => (4, x.to_le_bytes().to_vec()),
        Kv::I32(x) => (5, x.to_le_bytes().to_vec()),
        Kv::F32(x) => (6, x.to_le_bytes().to_vec()),
        Kv::Bool(x) => (7, vec![u8::from(*x)]),
        Kv::Str(s) => {
            let mut b = Vec::new();
            string(&mut b, s);
            (8, b)
        }
        Kv::U64(x) => (10, x.to_le_bytes().to_vec()),
        Kv::I64(x) => (11, x.to_le_bytes().to_vec()),
        Kv::F64(x) => (12, x.to_le_bytes().to_vec()),
        Kv::ArrU32(xs) => {
            let mut b = 4u32.to_le_bytes().to_vec();
            b.extend_from_slice(&(xs.len() as u64).to_le_bytes());
            xs.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
            (9, b)
        }
        Kv::ArrI32(xs) => {
            let mut b = 5u32.to_le_bytes().to_vec();
            b.extend_from_slice(&(xs.len() as u64).to_le_bytes());
            xs.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
            (9, b)
        }
        Kv::ArrStr(xs) => {
            let mut b = 8u32.to_le_bytes().to_vec();
            b.extend_from_slice(&(xs.len() as u64).to_le_bytes());
            xs.iter().for_each(|x| string(&mut b, x));
            (9, b)
        }
        Kv::ArrArr(xs) => {
            let mut b = 9u32.to_le_bytes().to_vec();
            b.extend_from_slice(&(xs.len() as u64).to_le_bytes());
            for inner in xs {
                // Each element is an array body: its item type, length, values.
                value(&mut b, &Kv::ArrU32(inner.clone()), false);
            }
            (9, b)
        }
    };
    if with_type {
        out.extend_from_slice(&t.to_le_bytes());
    }
    out.extend_from_slice(&body);
}

/// A GGUF header (version 3 unless changed) for `tensors` given as
/// (name, ggml `ne` innermost first, ggml type id, bytes), with offsets laid
/// out as llama.cpp writes them. Returns the header bytes and the file size.
pub fn gguf(version: u32, kvs: &[(&str, Kv)], tensors: &[(&str, &[u64], u32, u64)]) -> (Vec<u8>, u64) {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
    for (k, v) in kvs {
        string(&mut out, k);
        value(&mut out, v, true);
    }
    let mut offset = 0u64;
    for (name, ne, ty, bytes) in tensors {
        string(&mut out, name);
        out.extend_from_slice(&(ne.len() as u32).to_le_bytes());
        ne.iter().for_each(|d| out.extend_from_slice(&d.to_le_bytes()));
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offset += bytes.next_multiple_of(32);
    }
    let data_start = (out.len() as u64).next_multiple_of(32);
    let last_end = tensors.iter().fold(0u64, |at, t| at.next_multiple_of(32) + t.3);
    (out, data_start + last_end)
}

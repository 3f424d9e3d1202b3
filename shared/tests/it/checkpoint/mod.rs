//! Checkpoint headers: every dtype and ggml type, broken files, split GGUF,
//! and the estimate's exact weights from them.

mod model;
pub(crate) mod writer;

use proptest::prelude::*;
use shared::checkpoint::ggml::GgmlType;
use shared::checkpoint::safetensors::{self, StDtype};
use shared::checkpoint::{Checkpoint, CheckpointError, gguf};
use writer::Kv;

fn st_header(prefix: &[u8], size: u64) -> Result<safetensors::Header, CheckpointError> {
    let n = safetensors::header_len(prefix, Some(size))?;
    let json =
        prefix.get(8..8 + n as usize).ok_or(CheckpointError::Truncated { needed: 8 + n, have: prefix.len() as u64 })?;
    safetensors::parse_header(json, Some(size))
}

#[test]
fn safetensors_every_dtype_has_its_exact_bytes() {
    let names: Vec<String> = StDtype::ALL.iter().map(|d| format!("t.{}", d.name())).collect();
    let tensors: Vec<(&str, &str, &[u64])> =
        StDtype::ALL.iter().zip(&names).map(|(d, n)| (n.as_str(), d.name(), &[4u64, 2][..])).collect();
    let (prefix, size) = writer::safetensors(&tensors);
    let header = st_header(&prefix, size).unwrap_or_else(|e| panic!("{e}"));
    for d in StDtype::ALL {
        let t = header.tensors.iter().find(|t| t.name == format!("t.{}", d.name())).unwrap_or_else(|| panic!("{d:?}"));
        // 8 values: F4 4 bytes, F6 6 bytes, 8-bit 8 bytes, … 64-bit 64 bytes.
        assert_eq!(t.bytes, d.bits(), "{}", d.name());
        assert_eq!(t.elements, 8);
    }
    assert_eq!(header.metadata.get("format").map(String::as_str), Some("pt"));
}

fn st_error(json: &str, size_extra: u64) -> String {
    let prefix = writer::safetensors_raw(json);
    let size = prefix.len() as u64 + size_extra;
    match st_header(&prefix, size) {
        Ok(h) => panic!("accepted {json}: {h:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_safetensors_headers_are_named() {
    let check = |json: &str, extra: u64, expect: &str| {
        let e = st_error(json, extra);
        assert!(e.contains(expect), "{json}: `{e}` lacks `{expect}`");
    };
    check(
        r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
        12,
        "overlaps",
    );
    check(
        r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[10,18]}}"#,
        18,
        "gap",
    );
    check(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#, 4, "past its end");
    check(r#"{"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}"#, 8, "unknown dtype `F33`");
    check(r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#, 8, "need 12");
    check(r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}"#, 8, "before it starts");
    check(r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}}"#, 8, "too large");
    check(r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#, 8, "whole number of bytes");
    check(r#"{"a":{"dtype":"F32","shape":[2]}}"#, 8, "data_offsets");
    check(r#"{"a":{"dtype":"F32","shape":"2","data_offsets":[0,8]}}"#, 8, "shape");
    check(r#"{"a":"#, 8, "not valid JSON");
    check(r#"[1,2]"#, 8, "not a JSON object");
    // Invalid UTF-8.
    let mut prefix = 4u64.to_le_bytes().to_vec();
    prefix.extend_from_slice(&[b'{', 0xff, 0xfe, b'}']);
    assert!(matches!(st_header(&prefix, 100), Err(CheckpointError::Utf8(1))));
}

#[test]
fn a_claimed_header_length_is_checked_before_anything_is_read() {
    let huge = u64::MAX.to_le_bytes();
    assert!(matches!(safetensors::header_len(&huge, None), Err(CheckpointError::HeaderTooLarge { .. })));
    let past = 5_000u64.to_le_bytes();
    assert!(matches!(safetensors::header_len(&past, Some(1000)), Err(CheckpointError::HeaderPastEnd { .. })));
    assert!(matches!(safetensors::header_len(&[1, 2, 3], None), Err(CheckpointError::Truncated { .. })));
    assert_eq!(safetensors::header_len(&100u64.to_le_bytes(), Some(200)), Ok(100));
}

#[test]
fn index_lists_shards_and_refuses_paths_outside() {
    let index = safetensors::parse_index(
        r#"{"metadata":{"total_size":40},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors","c":"model-00001-of-00002.safetensors"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(index.files(), ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]);
    assert_eq!(index.total_size, Some(40));
    assert!(safetensors::parse_index(r#"{"weight_map":{"a":"../../etc/passwd"}}"#).is_err());
    assert!(safetensors::parse_index(r#"{"weight_map":{"a":"/abs.safetensors"}}"#).is_err());
    assert!(safetensors::parse_index(r#"{"metadata":{}}"#).is_err());
}

#[test]
fn shards_merge_and_a_tensor_in_two_shards_is_refused() {
    let (p1, s1) = writer::safetensors(&[("a", "BF16", &[2, 2])]);
    let (p2, s2) = writer::safetensors(&[("b", "F32", &[3])]);
    let h1 = st_header(&p1, s1).unwrap_or_else(|e| panic!("{e}"));
    let h2 = st_header(&p2, s2).unwrap_or_else(|e| panic!("{e}"));
    let c = Checkpoint::from_safetensors(vec![("1".into(), h1.clone()), ("2".into(), h2)])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.total_bytes(), 8 + 12);
    let err = Checkpoint::from_safetensors(vec![("1".into(), h1.clone()), ("2".into(), h1)]);
    assert!(err.is_err_and(|e| e.to_string().contains("in both 1 and 2")));
}

fn sample_gguf(version: u32) -> (Vec<u8>, u64) {
    let q4k = GgmlType::Q4K;
    let row = 512u64;
    writer::gguf(
        version,
        &[
            ("general.architecture", Kv::Str("llama")),
            ("general.alignment", Kv::U32(32)),
            ("llama.block_count", Kv::U32(2)),
            ("llama.embedding_length", Kv::U64(512)),
            ("llama.attention.head_count", Kv::U32(8)),
            ("llama.attention.head_count_kv", Kv::ArrU32(vec![2, 4])),
            ("t.u8", Kv::U8(1)),
            ("t.i8", Kv::I8(-1)),
            ("t.u16", Kv::U16(2)),
            ("t.i16", Kv::I16(-2)),
            ("t.i32", Kv::I32(-3)),
            ("t.f32", Kv::F32(0.5)),
            ("t.bool", Kv::Bool(true)),
            ("t.i64", Kv::I64(-4)),
            ("t.f64", Kv::F64(0.25)),
            ("tokenizer.ggml.tokens", Kv::ArrStr(vec!["a", "b", "c"])),
            ("t.nested", Kv::ArrArr(vec![vec![1, 2], vec![3]])),
        ],
        &[
            ("token_embd.weight", &[row, 3], GgmlType::Q8_0.id(), 3 * (row / 32) * 34),
            ("blk.0.attn_k.weight", &[row, 64], q4k.id(), 64 * 2 * 144),
            ("blk.1.attn_k.weight", &[row, 128], GgmlType::Iq2Xxs.id(), 128 * 2 * 66),
            ("blk.1.ffn_down_exps.weight", &[row, 16, 4], GgmlType::Mxfp4.id(), 4 * 16 * (row / 32) * 17),
            ("output_norm.weight", &[row], GgmlType::F32.id(), row * 4),
        ],
    )
}

#[test]
fn gguf_reads_every_value_type_and_mixed_tensor_types() {
    for version in [2, 3] {
        let (bytes, size) = sample_gguf(version);
        let f = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(f.version, version);
        assert_eq!(f.architecture(), Some("llama"));
        assert_eq!(f.arch_per_layer("attention.head_count_kv", 2), Some(vec![2, 4]));
        assert_eq!(f.arch_per_layer("attention.head_count", 2), Some(vec![8, 8]));
        assert_eq!(f.get("t.i8"), Some(&gguf::Value::Signed(-1)));
        assert_eq!(f.get("t.bool"), Some(&gguf::Value::Bool(true)));
        assert_eq!(f.get("t.f64"), Some(&gguf::Value::Float(0.25)));
        assert!(matches!(f.get("tokenizer.ggml.tokens"), Some(gguf::Value::Array { len: 3, .. })));
        let bytes_of = |name: &str| f.tensors.iter().find(|t| t.name == name).map(|t| (t.shape.clone(), t.bytes));
        assert_eq!(bytes_of("blk.0.attn_k.weight"), Some((vec![64, 512], 64 * 2 * 144)));
        assert_eq!(bytes_of("blk.1.ffn_down_exps.weight"), Some((vec![4, 16, 512], 4 * 16 * 16 * 17)));
        assert_eq!(f.data_offset % 32, 0);
    }
}

#[test]
fn every_ggml_type_is_read_with_its_block_bytes() {
    let names: Vec<String> = GgmlType::ALL.iter().map(|t| format!("blk.0.t{}", t.id())).collect();
    let tensors: Vec<(&str, &[u64], u32, u64)> = GgmlType::ALL
        .iter()
        .zip(&names)
        .map(|(t, n)| (n.as_str(), &[256u64, 2][..], t.id(), 2 * 256 / t.block() * t.block_bytes()))
        .collect();
    let (bytes, size) = writer::gguf(3, &[], &tensors);
    let f = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("{e}"));
    for (t, info) in GgmlType::ALL.iter().zip(&f.tensors) {
        assert_eq!(info.bytes, 2 * 256 / t.block() * t.block_bytes(), "{}", t.name());
    }
}

fn gguf_error(bytes: &[u8], size: Option<u64>) -> String {
    match gguf::parse(bytes, size) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_gguf_files_are_named() {
    let (good, size) = sample_gguf(3);
    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(gguf_error(&bad, None).contains("not a GGUF file"));
    let mut v1 = good.clone();
    v1[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert!(gguf_error(&v1, None).contains("v1"));
    let mut be = good.clone();
    be[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert!(gguf_error(&be, None).contains("big-endian"));
    assert!(gguf_error(&good, Some(size - 1)).contains("past its end"));
    // An unknown type, a row that is not whole blocks, offsets out of order.
    let (t, _) = writer::gguf(3, &[], &[("a", &[32, 1], 4, 18)]);
    assert!(gguf_error(&t, None).contains("unknown dtype `ggml type 4`"));
    let (t, _) = writer::gguf(3, &[], &[("a", &[100, 1], GgmlType::Q4K.id(), 144)]);
    assert!(gguf_error(&t, None).contains("not a multiple of Q4_K's block of 256"));
    let (mut t, _) = writer::gguf(3, &[], &[("a", &[32], 0, 128), ("b", &[32], 0, 128)]);
    // Point b's offset (the last 8 bytes) into a.
    let n = t.len();
    t[n - 8..].copy_from_slice(&64u64.to_le_bytes());
    assert!(gguf_error(&t, None).contains("overlaps"));
    t[n - 8..].copy_from_slice(&256u64.to_le_bytes());
    assert!(gguf_error(&t, None).contains("gap"));
    // Counts and lengths far beyond the bytes: refused, nothing allocated.
    let mut huge = b"GGUF".to_vec();
    huge.extend_from_slice(&3u32.to_le_bytes());
    huge.extend_from_slice(&u64::MAX.to_le_bytes());
    huge.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(gguf::parse(&huge, None), Err(CheckpointError::Truncated { .. })));
    let (mut s, _) = writer::gguf(3, &[("k", Kv::Str("v"))], &[]);
    s[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(gguf::parse(&s, None), Err(CheckpointError::Truncated { .. })));
    let (mut u, _) = writer::gguf(3, &[("k", Kv::Str("v"))], &[]);
    let n = u.len();
    u[n - 1] = 0xff;
    assert!(gguf_error(&u, None).contains("UTF-8"));
}

#[test]
fn every_prefix_of_a_gguf_header_asks_for_more_bytes() {
    let (good, _) = sample_gguf(3);
    let end = gguf::parse(&good, None).map(|f| f.data_offset).unwrap_or(0) as usize;
    for cut in 0..good.len().min(end) {
        match gguf::parse(&good[..cut], None) {
            Err(CheckpointError::Truncated { needed, .. }) => assert!(needed > cut as u64, "cut {cut}"),
            other => panic!("cut {cut}: {other:?}"),
        }
    }
}

#[test]
fn split_gguf_parts_join_and_a_missing_part_is_named() {
    let part = |no: u16, tensor: &'static str| {
        let (b, s) = writer::gguf(
            3,
            &[
                ("general.architecture", Kv::Str("llama")),
                ("split.no", Kv::U16(no)),
                ("split.count", Kv::U16(2)),
                ("split.tensors.count", Kv::I32(2)),
            ],
            &[(tensor, &[64, 2], 1, 256)],
        );
        gguf::parse(&b, Some(s)).unwrap_or_else(|e| panic!("{e}"))
    };
    let (a, b) = (part(0, "blk.0.attn_q.weight"), part(1, "blk.0.attn_k.weight"));
    let c = Checkpoint::from_gguf(vec![
        ("m-00001-of-00002.gguf".into(), a.clone()),
        ("m-00002-of-00002.gguf".into(), b.clone()),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((c.tensors.len(), c.total_bytes()), (2, 512));
    let missing = Checkpoint::from_gguf(vec![("m-00001-of-00002.gguf".into(), a.clone())]);
    assert!(missing.is_err_and(|e| e.to_string().contains("split model of 2 files")));
    let swapped = Checkpoint::from_gguf(vec![("x".into(), b), ("y".into(), a)]);
    assert!(swapped.is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any byte changed anywhere in a header: an answer or an error, never a panic.
    #[test]
    fn mutated_gguf_headers_never_panic(at in 0usize..2000, byte in any::<u8>(), cut in 0usize..2000) {
        let (mut bytes, size) = sample_gguf(3);
        if !bytes.is_empty() {
            let i = at % bytes.len();
            bytes[i] = byte;
        }
        let cut = cut.min(bytes.len());
        let _ = gguf::parse(&bytes[..cut], Some(size));
        let _ = gguf::parse(&bytes, None);
    }

    #[test]
    fn mutated_safetensors_headers_never_panic(at in 0usize..400, byte in any::<u8>(), size in 0u64..2000) {
        let (mut prefix, _) = writer::safetensors(&[("a", "BF16", &[4, 4]), ("b.weight", "F8_E4M3", &[8, 2])]);
        let i = at % prefix.len();
        prefix[i] = byte;
        let _ = st_header(&prefix, size);
    }

    /// Header sums are exact: every tensor's bytes are elements × bits / 8.
    #[test]
    fn safetensors_bytes_are_elements_times_bits(dims in proptest::collection::vec(1u64..64, 1..4), d in 0usize..22) {
        let dtype = StDtype::ALL[d % StDtype::ALL.len()];
        let mut shape = dims.clone();
        shape[0] *= 4; // F4 and F6 need a whole number of bytes
        let (prefix, size) = writer::safetensors(&[("x", dtype.name(), &shape)]);
        let h = st_header(&prefix, size).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(h.tensors[0].bytes * 8, shape.iter().product::<u64>() * dtype.bits());
    }
}

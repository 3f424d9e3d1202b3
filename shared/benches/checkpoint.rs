//! Header parsing speed: a GGUF file whose metadata block is 2 MB (a
//! 120,000-token vocabulary, as Qwen- and Llama-3-class GGUFs carry) and 1,000
//! tensor infos; a 163-shard-sized safetensors header.
//! Run with `cargo bench -p shared --bench checkpoint`.

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use shared::checkpoint::{gguf, safetensors};

#[path = "../tests/it/checkpoint/writer.rs"]
#[allow(dead_code)]
mod writer;

fn gguf_2mb() -> (Vec<u8>, u64) {
    // 120,000 tokens of 9 bytes: 120,000 × (8 + 9) = 2.04 MB of strings.
    let tokens: Vec<&'static str> = (0..120_000).map(|i| &*Box::leak(format!("tok{i:06}").into_boxed_str())).collect();
    let names: Vec<String> = (0..1000).map(|i| format!("blk.{}.ffn_down.weight", i)).collect();
    let tensors: Vec<(&str, &[u64], u32, u64)> =
        names.iter().map(|n| (n.as_str(), &[4096u64, 4096][..], 12u32, 4096 * 16 * 144)).collect();
    writer::gguf(
        3,
        &[("general.architecture", writer::Kv::Str("llama")), ("tokenizer.ggml.tokens", writer::Kv::ArrStr(tokens))],
        &tensors,
    )
}

fn headers(c: &mut Criterion) {
    let (bytes, size) = gguf_2mb();
    println!("GGUF header: {} bytes", bytes.len());
    c.bench_function("gguf header with 2 MB of metadata", |b| b.iter(|| gguf::parse(black_box(&bytes), Some(size))));
    // One shard of a 163-shard DeepSeek-V3-class checkpoint: ~600 tensors.
    let names: Vec<String> =
        (0..600).map(|i| format!("model.layers.{}.mlp.experts.{}.up_proj.weight", i / 100, i)).collect();
    let tensors: Vec<(&str, &str, &[u64])> =
        names.iter().map(|n| (n.as_str(), "F8_E4M3", &[2048u64, 7168][..])).collect();
    let (prefix, size) = writer::safetensors(&tensors);
    println!("safetensors header: {} bytes", prefix.len());
    c.bench_function("safetensors header of 600 tensors", |b| {
        b.iter(|| safetensors::parse_header(black_box(&prefix[8..]), Some(size)))
    });
}

criterion_group!(benches, headers);
criterion_main!(benches);

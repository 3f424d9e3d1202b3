//! Benchmarks, not tests (ignored by default, no timing asserted), as in
//! `docs/measurements.md`: reading the headers of a 163-shard checkpoint
//! (DeepSeek-V3's shard count) from the stand-in Hub over loopback and from
//! local files with the CLI; parsing a GGUF header whose metadata block is
//! 2 MB. Run: `cargo test -p agent --test it --release bench_ -- --ignored --nocapture`.

use std::process::Command;
use std::time::Instant;

use super::checkpoint::writer;
use super::standin_hub::{self, File, Kind};

const SHARDS: usize = 163;

#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn bench_hub_163_shards() {
    // ~600 tensors per shard, as DeepSeek-V3's shards hold.
    let files = super::checkpoint::sharded_repo(SHARDS, 600);
    let files_for_disk: Vec<(String, File)> = files.iter().map(|(n, f)| ((*n).to_owned(), f.clone())).collect();
    let hub = standin_hub::start(vec![("bench/big", Kind::Public, files)]);
    let mut runs = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args(["estimate", "--hf", "bench/big", "--json", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "8"])
            .env("HF_ENDPOINT", &hub.endpoint)
            .output()
            .expect("run");
        runs.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    runs.sort_by(f64::total_cmp);
    // The same headers from local files: what the reading itself costs.
    let dir = std::env::temp_dir().join(format!("headroom-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, file) in &files_for_disk {
        std::fs::write(dir.join(name), &file.head).unwrap();
        std::fs::OpenOptions::new().write(true).open(dir.join(name)).unwrap().set_len(file.size).unwrap();
    }
    let mut local = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args([
                "estimate",
                "--checkpoint",
                dir.to_str().unwrap(),
                "--json",
                "--gpu",
                "h100-sxm",
                "--gpus",
                "8",
                "--tp",
                "8",
            ])
            .output()
            .expect("run");
        local.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    local.sort_by(f64::total_cmp);
    let _ = std::fs::remove_dir_all(&dir);
    println!("{SHARDS} local shards: median {:.0} ms (min {:.0}, max {:.0})", local[2], local[0], local[4]);
    let requests = hub.stats.requests.load(std::sync::atomic::Ordering::Relaxed) / 5;
    let bytes = hub.stats.body_bytes.load(std::sync::atomic::Ordering::Relaxed) / 5;
    println!(
        "{SHARDS} shards: median {:.0} ms (min {:.0}, max {:.0}); {requests} requests, {bytes} bytes per run",
        runs[2], runs[0], runs[4]
    );
}

#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn bench_gguf_2mb_metadata() {
    // 120,000 tokens of 9 bytes: 120,000 × (8 + 9) = 2.04 MB of strings, as
    // the vocabularies of Qwen- and Llama-3-class GGUFs take; 1,000 tensors.
    let tokens: Vec<&'static str> = (0..120_000).map(|i| &*Box::leak(format!("tok{i:06}").into_boxed_str())).collect();
    let names: Vec<String> = (0..1000).map(|i| format!("blk.{i}.ffn_down.weight")).collect();
    let tensors: Vec<(&str, &[u64], u32, u64)> =
        names.iter().map(|n| (n.as_str(), &[4096u64, 4096][..], 12u32, 4096 * 16 * 144)).collect();
    let (bytes, size) = writer::gguf(
        3,
        &[("general.architecture", writer::Kv::Str("llama")), ("tokenizer.ggml.tokens", writer::Kv::ArrStr(tokens))],
        &tensors,
    );
    let mut runs = Vec::new();
    for _ in 0..21 {
        let start = Instant::now();
        let f = shared::checkpoint::gguf::parse(&bytes, Some(size)).expect("parse");
        runs.push(start.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(f.tensors.len(), 1000);
    }
    runs.sort_by(f64::total_cmp);
    println!(
        "GGUF header of {} bytes: median {:.2} ms (min {:.2}, max {:.2})",
        bytes.len(),
        runs[10],
        runs[0],
        runs[20]
    );
}

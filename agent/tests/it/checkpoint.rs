//! `headroom estimate --checkpoint` and `--hf` as a user runs them: local
//! folders, a Hugging Face cache entry, GGUF and split GGUF files, and the
//! Hub through a stand-in on loopback (redirects, a gated repo, a missing
//! file, an HTML page, a redirect loop). Weights and parameters must equal
//! the header sums exactly.

use std::path::Path;
use std::process::{Command, Output};

use super::standin_hub::{self, File, GATED_TOKEN, Kind};

#[path = "../../../shared/tests/it/checkpoint/writer.rs"]
#[allow(dead_code)]
pub mod writer;

#[path = "two_shards.rs"]
mod two_shards;

/// The unknown MoE model's shards, index and element count.
fn shard_files() -> Vec<(String, Vec<u8>, u64)> {
    two_shards::shard_files(true)
}

fn index() -> String {
    two_shards::index(true)
}

fn elements() -> u64 {
    two_shards::elements(true)
}

fn headroom(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_headroom"));
    cmd.args(args).env_remove("HF_TOKEN").env("HF_HOME", "/nonexistent-headroom-test");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run headroom")
}

fn json(args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let out = headroom(args, env);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn error(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = headroom(args, env);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An unknown MoE architecture: two layers, 4 experts each.
const CONFIG: &str = r#"{"model_type":"brand_new_moe","hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"intermediate_size":128,
    "vocab_size":32000,"num_local_experts":4,"num_experts_per_tok":2,"torch_dtype":"bfloat16"}"#;

/// Writes the header and leaves the data as a hole: the file has its full size.
fn write_sparse(path: &Path, head: &[u8], size: u64) {
    std::fs::write(path, head).unwrap();
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(size).unwrap();
}

fn write_folder(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.json"), CONFIG).unwrap();
    std::fs::write(dir.join("model.safetensors.index.json"), index()).unwrap();
    for (name, head, size) in shard_files() {
        write_sparse(&dir.join(name), &head, size);
    }
}

fn temp(name: &str) -> std::path::PathBuf {
    // Under the build directory (cargo's CARGO_TARGET_TMPDIR), not /tmp:
    // the files stay for a look after a failure without piling up there.
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("headroom-ckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn check_exact(v: &serde_json::Value) {
    assert_eq!(v["weights_source"], "checkpoint", "{v}");
    assert_eq!(v["architecture_known"], false);
    assert_eq!(v["parameters"], elements());
    assert_eq!(v["weight_bytes"], elements() * 2);
    assert_eq!(v["checkpoint"]["files"], 2);
    // bf16 cache: 2 layers × 2 KV heads × 16 × (K + V) × 2 bytes.
    assert_eq!(v["kv_bytes_per_token"], 2 * 2 * 16 * 2 * 2);
}

#[test]
fn an_unknown_moe_config_alone_gets_a_clear_error_and_no_verdict() {
    let dir = temp("config-only");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), CONFIG).unwrap();
    let config = dir.join("config.json");
    let e = error(&["estimate", "--config", config.to_str().unwrap(), "--json"], &[]);
    assert!(e.contains("brand_new_moe") && e.contains("--checkpoint") && e.contains("--hf"), "{e}");
    assert!(!e.contains("Fits"), "{e}");
}

#[test]
fn a_local_folder_and_a_cache_snapshot_give_exact_weights() {
    let dir = temp("folder");
    write_folder(&dir);
    check_exact(&json(&["estimate", "--checkpoint", dir.to_str().unwrap(), "--json"], &[]));
    // The Hugging Face cache layout: refs/main names the snapshot.
    let cache = temp("cache").join("models--acme--brand-new");
    write_folder(&cache.join("snapshots").join("0123abcd"));
    std::fs::create_dir_all(cache.join("refs")).unwrap();
    std::fs::write(cache.join("refs").join("main"), "0123abcd").unwrap();
    check_exact(&json(&["estimate", "--checkpoint", cache.to_str().unwrap(), "--json"], &[]));
}

#[test]
fn a_broken_shard_is_named() {
    let dir = temp("broken");
    write_folder(&dir);
    let shard = dir.join("model-00002-of-00002.safetensors");
    // A header length claiming more than the file holds.
    let mut head = u64::MAX.to_le_bytes().to_vec();
    head.extend_from_slice(b"{}");
    std::fs::write(&shard, head).unwrap();
    let e = error(&["estimate", "--checkpoint", dir.to_str().unwrap()], &[]);
    assert!(e.contains("model-00002-of-00002.safetensors") && e.contains("claims"), "{e}");
}

fn gguf_part(no: u16, count: u16, tensors: &[(&str, &[u64], u32, u64)]) -> (Vec<u8>, u64) {
    use writer::Kv;
    let mut kvs = vec![
        ("general.architecture", Kv::Str("llama")),
        ("general.file_type", Kv::U32(7)),
        ("llama.block_count", Kv::U32(2)),
        ("llama.embedding_length", Kv::U32(64)),
        ("llama.attention.head_count", Kv::U32(4)),
        ("llama.attention.head_count_kv", Kv::U32(2)),
    ];
    if count > 1 {
        kvs.push(("split.no", Kv::U16(no)));
        kvs.push(("split.count", Kv::U16(count)));
        kvs.push(("split.tensors.count", Kv::I32(4)));
    }
    writer::gguf(3, &kvs, tensors)
}

const Q8: u32 = 8;

fn q8(n: u64) -> u64 {
    n / 32 * 34
}

/// A two-layer GGUF's tensors: name, shape, ggml type, bytes.
fn tiny_tensors() -> [(&'static str, &'static [u64], u32, u64); 4] {
    [
        ("token_embd.weight", &[64, 100], Q8, q8(6400)),
        ("blk.0.attn_k.weight", &[64, 32], Q8, q8(2048)),
        ("blk.1.attn_k.weight", &[64, 32], Q8, q8(2048)),
        ("output_norm.weight", &[64], 0, 256),
    ]
}

#[test]
fn gguf_files_and_split_gguf_give_exact_weights() {
    let dir = temp("gguf");
    std::fs::create_dir_all(&dir).unwrap();
    let all = tiny_tensors();
    let total: u64 = all.iter().map(|t| t.3).sum();
    let (head, size) = gguf_part(0, 1, &all);
    write_sparse(&dir.join("m.gguf"), &head, size);
    let v = json(
        &["estimate", "--checkpoint", dir.join("m.gguf").to_str().unwrap(), "--engine", "llama.cpp", "--json"],
        &[],
    );
    assert_eq!(v["weights_source"], "checkpoint");
    assert_eq!(v["weight_bytes"], total);
    assert_eq!(v["parameters"], 6400 + 2048 * 2 + 64);
    for (i, part) in [&all[..2], &all[2..]].iter().enumerate() {
        let (head, size) = gguf_part(i as u16, 2, part);
        write_sparse(&dir.join(format!("s-{:05}-of-00002.gguf", i + 1)), &head, size);
    }
    let first = dir.join("s-00001-of-00002.gguf");
    let v = json(&["estimate", "--checkpoint", first.to_str().unwrap(), "--json"], &[]);
    assert_eq!(v["weight_bytes"], total);
    assert_eq!(v["checkpoint"]["files"], 2);
    std::fs::remove_file(dir.join("s-00002-of-00002.gguf")).unwrap();
    let e = error(&["estimate", "--checkpoint", first.to_str().unwrap()], &[]);
    assert!(e.contains("s-00002-of-00002.gguf"), "{e}");
}

fn hub_files() -> Vec<(&'static str, File)> {
    let mut files = vec![("config.json", File::text(CONFIG)), ("model.safetensors.index.json", File::text(&index()))];
    for (name, head, size) in shard_files() {
        files.push((Box::leak(name.into_boxed_str()), File { head, size }));
    }
    files
}

/// A large checkpoint as the Hub holds one: `shards` safetensors shards of an
/// unknown MoE model, `per_shard` FP8 expert tensors each (2048 × 7168, so
/// every shard is large enough to be redirected to the CDN), its config and
/// its index.
pub fn sharded_repo(shards: usize, per_shard: usize) -> Vec<(&'static str, File)> {
    let config = r#"{"model_type":"bench_moe","hidden_size":7168,"num_hidden_layers":61,
        "num_attention_heads":128,"head_dim":128,"intermediate_size":18432,"vocab_size":129280,
        "num_local_experts":256,"num_experts_per_tok":8,"torch_dtype":"bfloat16"}"#;
    let mut files = vec![("config.json", File::text(config))];
    let mut map = Vec::new();
    for s in 0..shards {
        let name = format!("model-{:05}-of-{shards:05}.safetensors", s + 1);
        let names: Vec<String> = (0..per_shard)
            .map(|i| {
                let n = s * per_shard + i;
                format!("model.layers.{}.mlp.experts.{n}.up_proj.weight", n * 61 / (shards * per_shard))
            })
            .collect();
        let tensors: Vec<(&str, &str, &[u64])> =
            names.iter().map(|n| (n.as_str(), "F8_E4M3", &[2048u64, 7168][..])).collect();
        let (head, size) = writer::safetensors(&tensors);
        map.extend(names.iter().map(|n| format!(r#""{n}":"{name}""#)));
        files.push((Box::leak(name.into_boxed_str()), File { head, size }));
    }
    let index = format!(r#"{{"metadata":{{}},"weight_map":{{{}}}}}"#, map.join(","));
    files.push(("model.safetensors.index.json", File::text(&index)));
    files
}

/// Issue 39: a new connection for about every file (167 for 330 requests)
/// made each reader pay for a handshake per shard. Every reader keeps one
/// connection to the Hub and one to its CDN, across the redirect and across
/// files.
#[test]
fn hub_reads_keep_one_connection_per_reader_and_host() {
    use std::sync::atomic::Ordering::Relaxed;
    let readers = shared::checkpoint::read::CLI_CONCURRENCY as u64;
    let shards = 5 * readers as usize;
    let hub = standin_hub::start(vec![("acme/sharded", Kind::Public, sharded_repo(shards, 4))]);
    let v = json(&["estimate", "--hf", "acme/sharded", "--json"], &[("HF_ENDPOINT", hub.endpoint.as_str())]);
    assert_eq!(v["checkpoint"]["files"], shards);
    let (hub_connections, cdn_connections) =
        (hub.stats.hub_connections.load(Relaxed), hub.stats.cdn_connections.load(Relaxed));
    // Config, index, and a redirect and a Range read per shard: a client
    // connecting per request would open many times more than the bound.
    assert!(hub.stats.requests.load(Relaxed) >= 2 * shards as u64 + 2);
    assert!(
        hub_connections <= readers && cdn_connections <= readers,
        "{hub_connections} connections to the Hub and {cdn_connections} to the CDN for {readers} readers"
    );
}

#[test]
fn the_hub_is_read_with_range_requests_through_redirects() {
    let hub = standin_hub::start(vec![
        ("acme/brand-new", Kind::Public, hub_files()),
        ("acme/gated", Kind::Gated, hub_files()),
        ("acme/html", Kind::Html, hub_files()),
        ("acme/loop", Kind::Loop, hub_files()),
        ("acme/empty", Kind::Public, vec![("config.json", File::text(CONFIG))]),
    ]);
    let env = [("HF_ENDPOINT", hub.endpoint.as_str())];
    let v = json(&["estimate", "--hf", "acme/brand-new@main", "--json"], &env);
    check_exact(&v);
    // Only headers crossed the wire: one first read of 100 kB per shard at
    // most, against shards of 4 MB each.
    let served = hub.stats.body_bytes.load(std::sync::atomic::Ordering::Relaxed);
    let texts = (CONFIG.len() + index().len()) as u64;
    let shard_bytes: u64 = shard_files().iter().map(|(_, _, size)| size).sum();
    assert!(served <= texts + 2 * 100_000, "served {served} bytes");
    assert!(shard_bytes > 8_000_000);

    let e = error(&["estimate", "--hf", "acme/gated"], &env);
    assert!(e.contains("401") && e.contains("HF_TOKEN"), "{e}");
    check_exact(&json(&["estimate", "--hf", "acme/gated", "--json"], &[env[0], ("HF_TOKEN", GATED_TOKEN)]));

    let e = error(&["estimate", "--hf", "acme/html"], &env);
    assert!(e.contains("HTML"), "{e}");
    let e = error(&["estimate", "--hf", "acme/loop"], &env);
    assert!(e.contains("redirect"), "{e}");
    let e = error(&["estimate", "--hf", "acme/brand-new", "--file", "nope.gguf"], &env);
    assert!(e.contains("404") && e.contains("nope.gguf"), "{e}");
    let e = error(&["estimate", "--hf", "acme/empty"], &env);
    assert!(e.contains("no model.safetensors") && e.contains("no GGUF model"), "{e}");
    let e = error(&["estimate", "--hf", "not a repo"], &env);
    assert!(e.contains("ORG/NAME"), "{e}");
}

#[test]
fn a_gguf_on_the_hub_with_a_long_header_is_read_on_in_ranges() {
    use writer::Kv;
    // 30,000 tokens: a 500 kB metadata block, past the first 100 kB read.
    let tokens: Vec<&'static str> = (0..30_000).map(|i| &*Box::leak(format!("token{i:05}").into_boxed_str())).collect();
    let tensors: [(&str, &[u64], u32, u64); 3] = [
        ("token_embd.weight", &[64, 30_000], Q8, q8(64 * 30_000)),
        ("blk.0.attn_k.weight", &[64, 32], Q8, q8(2048)),
        ("blk.1.attn_k.weight", &[64, 32], Q8, q8(2048)),
    ];
    let (head, size) = writer::gguf(
        3,
        &[
            ("general.architecture", Kv::Str("llama")),
            ("llama.block_count", Kv::U32(2)),
            ("llama.attention.head_count", Kv::U32(4)),
            ("llama.attention.key_length", Kv::U32(16)),
            ("tokenizer.ggml.tokens", Kv::ArrStr(tokens)),
        ],
        &tensors,
    );
    assert!(head.len() > 400_000);
    let hub = standin_hub::start(vec![("acme/gguf", Kind::Public, vec![("m-Q8_0.gguf", File { head, size })])]);
    let env = [("HF_ENDPOINT", hub.endpoint.as_str())];
    let v = json(&["estimate", "--hf", "acme/gguf", "--file", "m-Q8_0.gguf", "--engine", "llama.cpp", "--json"], &env);
    assert_eq!(v["weights_source"], "checkpoint");
    assert_eq!(v["weight_bytes"], tensors.iter().map(|t| t.3).sum::<u64>());
    assert_eq!(v["parameter_breakdown"]["embeddings"], 64 * 30_000);
    // 2 layers × 2 KV heads × 16 × (K + V) × 2 bytes (a 16-bit cache).
    assert_eq!(v["kv_bytes_per_token"], 2 * 2 * 16 * 2 * 2);
}

/// A GGUF tensor for the writer: name, shape, ggml type, bytes.
type Tensor = (&'static str, &'static [u64], u32, u64);

/// A GGUF repository without config.json, as unsloth's and bartowski's
/// are: two quantisations, a projector, and a split one in a folder.
fn gguf_repo() -> (Vec<(&'static str, File)>, [Tensor; 4]) {
    let all: [Tensor; 4] = [
        ("token_embd.weight", &[64, 100], Q8, q8(6400)),
        ("blk.0.attn_k.weight", &[64, 32], Q8, q8(2048)),
        ("blk.1.attn_k.weight", &[64, 32], Q8, q8(2048)),
        ("output_norm.weight", &[64], 0, 256),
    ];
    let whole = |tensors: &[(&str, &[u64], u32, u64)]| {
        let (head, size) = gguf_part(0, 1, tensors);
        File { head, size }
    };
    let split = |i: u16| {
        let (head, size) = gguf_part(i, 2, if i == 0 { &all[..2] } else { &all[2..] });
        File { head, size }
    };
    let files = vec![
        ("README.md", File::text("# GGUF")),
        ("m-Q4_K_M.gguf", whole(&all)),
        // Three tensors only: a test that reads this file for another sees the difference.
        ("m-Q8_0.gguf", whole(&all[..3])),
        ("mmproj-F16.gguf", whole(&all[3..])),
        ("Q2_K/m-Q2_K-00001-of-00002.gguf", split(0)),
        ("Q2_K/m-Q2_K-00002-of-00002.gguf", split(1)),
    ];
    (files, all)
}

#[test]
fn a_tag_picks_the_gguf_file_from_the_repository_tree() {
    let (files, all) = gguf_repo();
    let dir = temp("tagged");
    std::fs::create_dir_all(&dir).unwrap();
    let local = dir.join("m-Q4_K_M.gguf");
    write_sparse(&local, &files[1].1.head, files[1].1.size);
    let hub = standin_hub::start(vec![
        ("acme/m-GGUF", Kind::Public, files),
        ("acme/lone-GGUF", Kind::Public, vec![("m-Q4_K_M.gguf", gguf_repo().0.remove(1).1)]),
        ("acme/gated-GGUF", Kind::Gated, gguf_repo().0),
    ]);
    let env = [("HF_ENDPOINT", hub.endpoint.as_str())];
    let run = |spec: &str| json(&["estimate", "--hf", spec, "--engine", "llama.cpp", "--json"], &env);
    let want = json(&["estimate", "--checkpoint", local.to_str().unwrap(), "--engine", "llama.cpp", "--json"], &[]);
    assert_eq!(want["weight_bytes"], all.iter().map(|t| t.3).sum::<u64>());
    let same = |v: &serde_json::Value| {
        assert_eq!(v["weights_source"], "checkpoint", "{v}");
        assert_eq!((&v["weight_bytes"], &v["parameters"]), (&want["weight_bytes"], &want["parameters"]));
    };
    // A tag (any case), a file, a revision with `/`, and the lone model of a repo.
    for spec in
        ["acme/m-GGUF:Q4_K_M", "acme/m-GGUF:q4_k_m", "acme/m-GGUF:m-Q4_K_M.gguf", "acme/m-GGUF@refs/pr/1:Q4_K_M"]
    {
        same(&run(spec));
    }
    same(&json(&["estimate", "--hf", "acme/m-GGUF@refs/pr/1", "--file", "m-Q4_K_M.gguf", "--json"], &env));
    same(&run("acme/lone-GGUF"));
    // The second page of the tree listing, and a split model in a folder.
    let q8 = run("acme/m-GGUF:Q8_0");
    assert_eq!(q8["weight_bytes"], all[..3].iter().map(|t| t.3).sum::<u64>());
    let split = run("acme/m-GGUF:Q2_K");
    assert_eq!(split["checkpoint"]["files"], 2);
    assert_eq!(split["weight_bytes"], want["weight_bytes"]);
    // The token reaches the tree listing too.
    let gated = json(&["estimate", "--hf", "acme/gated-GGUF:Q4_K_M", "--json"], &[env[0], ("HF_TOKEN", GATED_TOKEN)]);
    assert_eq!(gated["weight_bytes"], want["weight_bytes"]);
}

#[test]
fn a_gguf_repository_without_a_pick_lists_its_models() {
    let hub = standin_hub::start(vec![("acme/m-GGUF", Kind::Public, gguf_repo().0)]);
    let env = [("HF_ENDPOINT", hub.endpoint.as_str())];
    let e = error(&["estimate", "--hf", "acme/m-GGUF"], &env);
    assert!(e.contains("no config.json") && e.contains("acme/m-GGUF:TAG"), "{e}");
    for model in ["`m-Q4_K_M.gguf`", "`m-Q8_0.gguf`", "`Q2_K/m-Q2_K-00001-of-00002.gguf`"] {
        assert!(e.contains(model), "{model}: {e}");
    }
    assert!(!e.contains("mmproj") && !e.contains("00002-of-00002.gguf`"), "{e}");
    let e = error(&["estimate", "--hf", "acme/m-GGUF:Q5_K_M"], &env);
    assert!(e.contains("Q5_K_M") && e.contains("`m-Q8_0.gguf`"), "{e}");
    let e = error(&["estimate", "--hf", "acme/m-GGUF:Q4_K_M", "--file", "m-Q8_0.gguf"], &env);
    assert!(e.contains("--file") && e.contains(":Q4_K_M"), "{e}");
    // A revision the repo lacks: the listing's 404 names it.
    let e = error(&["estimate", "--hf", "acme/m-GGUF@v9:Q4_K_M"], &env);
    assert!(e.contains("404") && e.contains("`v9`"), "{e}");
    let e = error(&["estimate", "--hf", "acme/m-GGUF@v9:m-Q4_K_M.gguf"], &env);
    assert!(e.contains("404") && e.contains("m-Q4_K_M.gguf"), "{e}");
    let e = error(&["estimate", "--hf", "acme/m-GGUF:../x.gguf"], &env);
    assert!(e.contains("ORG/NAME"), "{e}");
    // With the original config.json beside the quantisations (no
    // safetensors): pick a GGUF model, they are listed.
    let mut files = gguf_repo().0;
    files.push(("config.json", File::text(CONFIG)));
    let hub = standin_hub::start(vec![("acme/c-GGUF", Kind::Public, files)]);
    let e = error(&["estimate", "--hf", "acme/c-GGUF"], &[("HF_ENDPOINT", hub.endpoint.as_str())]);
    assert!(
        e.contains("no safetensors weights") && e.contains("acme/c-GGUF:TAG") && e.contains("`m-Q8_0.gguf`"),
        "{e}"
    );
}

#[test]
fn a_model_ollama_pulled_is_read_from_its_storage() {
    // Ollama's layout (v0.33): manifests/HOST/NAMESPACE/MODEL/TAG names
    // the GGUF blob blobs/sha256-HEX.
    let models = temp("ollama-models");
    let all = tiny_tensors();
    let total: u64 = all.iter().map(|t| t.3).sum();
    let (head, size) = gguf_part(0, 1, &all);
    let hex = "ab".repeat(32);
    std::fs::create_dir_all(models.join("blobs")).unwrap();
    write_sparse(&models.join("blobs").join(format!("sha256-{hex}")), &head, size);
    let manifest = models.join("manifests/registry.ollama.ai/library/tiny");
    std::fs::create_dir_all(&manifest).unwrap();
    let text = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
            "config":{{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:{hex}","size":1}},
            "layers":[{{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:{hex}","size":1}},
                      {{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:{hex}","size":{size}}}]}}"#
    );
    std::fs::write(manifest.join("latest"), text).unwrap();
    let env = [("OLLAMA_MODELS", models.to_str().unwrap())];
    let v = json(&["estimate", "--ollama", "tiny", "--json"], &env);
    assert_eq!(v["weights_source"], "checkpoint");
    assert_eq!(v["weight_bytes"], total);
    assert_eq!(v["engine"], "ollama", "the engine that pulled it");
    // A tag that is not pulled, a name that would leave the folder, a bad digest.
    let e = error(&["estimate", "--ollama", "tiny:7b"], &env);
    assert!(e.contains("ollama pull tiny:7b") && e.contains("OLLAMA_MODELS"), "{e}");
    let e = error(&["estimate", "--ollama", "../../etc/passwd"], &env);
    assert!(e.contains("not an Ollama"), "{e}");
    std::fs::write(
        manifest.join("bad"),
        r#"{"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../x"}]}"#,
    )
    .unwrap();
    let e = error(&["estimate", "--ollama", "tiny:bad"], &env);
    assert!(e.contains("not a sha256 digest"), "{e}");
}

/// A PyTorch OOM error in `dir`, for `diagnose` to check against a checkpoint.
fn oom_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("oom.txt");
    std::fs::write(
        &path,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity; \
         21.23 GiB already allocated)",
    )
    .unwrap();
    path
}

/// `diagnose` reads the checkpoint that was run as `estimate` does (issue
/// 35): a pasted error is checked against the GGUF's exact bytes, the same
/// plan `estimate --checkpoint` makes; a checkpoint and a preset together are
/// refused.
#[test]
fn diagnose_checks_an_error_against_the_checkpoint_that_was_run() {
    let dir = temp("diagnose-gguf");
    std::fs::create_dir_all(&dir).unwrap();
    let (head, size) = gguf_part(0, 1, &tiny_tensors());
    let gguf = dir.join("m.gguf");
    write_sparse(&gguf, &head, size);
    let error_text = oom_file(&dir);
    let (gguf, error_text) = (gguf.to_str().unwrap(), error_text.to_str().unwrap());
    let plan = ["--engine", "llama.cpp", "--json"];
    let d = json(&[&["diagnose", error_text, "--checkpoint", gguf][..], &plan].concat(), &[]);
    let e = json(&[&["estimate", "--checkpoint", gguf][..], &plan].concat(), &[]);
    assert_eq!(d["plan"]["model"], e["model"], "{d}");
    assert_eq!(d["plan"]["weight_format"], e["weight_format"]);
    let fullest = e["per_gpu"].as_array().unwrap().iter().map(|g| g["total_bytes"].as_u64().unwrap()).max();
    assert_eq!(d["plan"]["need_bytes"].as_u64(), fullest, "the same plan as estimate's");
    let refused = error(&["diagnose", error_text, "--checkpoint", gguf, "--model", "llama-3.1-8b"], &[]);
    assert!(refused.contains("--checkpoint") && refused.contains("--model"), "{refused}");
}

/// `diagnose --hf` reads the repo that was run from the Hub (the stand-in),
/// as `estimate --hf` does: the same plan, from the GGUF's header alone.
#[test]
fn diagnose_reads_the_run_s_gguf_from_the_hub() {
    let dir = temp("diagnose-hub");
    std::fs::create_dir_all(&dir).unwrap();
    let (head, size) = gguf_part(0, 1, &tiny_tensors());
    let hub = standin_hub::start(vec![("acme/tiny-gguf", Kind::Public, vec![("tiny-Q8_0.gguf", File { head, size })])]);
    let env = [("HF_ENDPOINT", hub.endpoint.as_str())];
    let error_text = oom_file(&dir);
    let error_text = error_text.to_str().unwrap();
    let plan = ["--engine", "llama.cpp", "--json"];
    let d = json(&[&["diagnose", error_text, "--hf", "acme/tiny-gguf:tiny-Q8_0.gguf"][..], &plan].concat(), &env);
    let e = json(&[&["estimate", "--hf", "acme/tiny-gguf:tiny-Q8_0.gguf"][..], &plan].concat(), &env);
    assert_eq!(d["plan"]["model"], e["model"], "{d}");
    assert_eq!(d["plan"]["weight_format"], e["weight_format"]);
    let fullest = e["per_gpu"].as_array().unwrap().iter().map(|g| g["total_bytes"].as_u64().unwrap()).max();
    assert_eq!(d["plan"]["need_bytes"].as_u64(), fullest, "the same plan as estimate's");
    let missing = error(&["diagnose", error_text, "--hf", "acme/tiny-gguf:nope.gguf"], &env);
    assert!(missing.contains("nope.gguf"), "{missing}");
}

//! The page reads checkpoint headers as `headroom estimate --hf` and
//! `--checkpoint` do: from the Hub stand-in the CLI tests use (Range
//! requests, a redirect to a second "CDN" origin, a gated repo, an HTML
//! page, a missing shard) and from files set on the page's file input, as a
//! person drops them. Every figure must equal the CLI's for the same files.

use std::path::{Path, PathBuf};

use anyhow::{Context, ensure};
use fantoccini::Locator;

use crate::browser::{Driver, Page, sel, tools};
use crate::cli;
use crate::page::{expect_cli_env, no_errors};
use crate::server::Server;
use crate::standin_hub::{self, File, Kind};
use crate::writer;

/// A small Llama (a family the readers know): 2 layers, hidden 64.
pub const LLAMA: &str = r#"{"model_type":"llama","architectures":["LlamaForCausalLM"],"hidden_size":64,
    "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,
    "vocab_size":32000,"max_position_embeddings":4096,"torch_dtype":"bfloat16","tie_word_embeddings":false}"#;

/// An architecture no reader knows, a mixture of experts: the config alone
/// gets no verdict; with its checkpoint the weights are exact.
pub const UNKNOWN_MOE: &str = r#"{"model_type":"brand_new_moe","hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"intermediate_size":128,
    "vocab_size":32000,"num_local_experts":4,"num_experts_per_tok":2,"torch_dtype":"bfloat16"}"#;

use crate::two_shards::{elements, index, shard_files};

/// Every tensor's bytes: what the page and the CLI must show as the weights.
fn header_sum(moe: bool) -> u64 {
    elements(moe) * 2
}

/// A repo of the model: config.json, the index and both shards.
pub fn repo_files(config: &str, moe: bool) -> Vec<(&'static str, File)> {
    let mut files =
        vec![("config.json", File::text(config)), ("model.safetensors.index.json", File::text(&index(moe)))];
    for (name, head, size) in shard_files(moe) {
        files.push((Box::leak(name.into_boxed_str()), File { head, size }));
    }
    files
}

/// A GGUF file of a 2-layer Llama in Q8_0 (llama.cpp's block: 32 weights in 34 bytes).
fn gguf_file() -> (Vec<u8>, u64, u64) {
    gguf_with(false)
}

/// [`gguf_file`], with `more` a V projection per layer too (another file
/// of the same model, with other weight bytes).
fn gguf_with(more: bool) -> (Vec<u8>, u64, u64) {
    use writer::Kv;
    const Q8_0: u32 = 8;
    let q8 = |n: u64| n / 32 * 34;
    let mut tensors: Vec<(&str, &[u64], u32, u64)> = vec![
        ("token_embd.weight", &[64, 32000], Q8_0, q8(64 * 32000)),
        ("blk.0.attn_q.weight", &[64, 64], Q8_0, q8(4096)),
        ("blk.0.attn_k.weight", &[64, 32], Q8_0, q8(2048)),
        ("blk.1.attn_q.weight", &[64, 64], Q8_0, q8(4096)),
        ("blk.1.attn_k.weight", &[64, 32], Q8_0, q8(2048)),
        ("output_norm.weight", &[64], 0, 256),
    ];
    if more {
        tensors.push(("blk.0.attn_v.weight", &[64, 32], Q8_0, q8(2048)));
        tensors.push(("blk.1.attn_v.weight", &[64, 32], Q8_0, q8(2048)));
    }
    let kvs = [
        ("general.architecture", Kv::Str("llama")),
        ("general.file_type", Kv::U32(7)),
        ("llama.block_count", Kv::U32(2)),
        ("llama.embedding_length", Kv::U32(64)),
        ("llama.attention.head_count", Kv::U32(4)),
        ("llama.attention.head_count_kv", Kv::U32(2)),
    ];
    let (head, size) = writer::gguf(3, &kvs, &tensors);
    (head, size, tensors.iter().map(|t| t.3).sum())
}

/// Writes the header and leaves the data as a hole: the file has its full size.
pub(crate) fn write_sparse(path: &Path, head: &[u8], size: u64) -> anyhow::Result<()> {
    std::fs::write(path, head)?;
    std::fs::OpenOptions::new().write(true).open(path)?.set_len(size)?;
    Ok(())
}

fn temp_dir(name: &str) -> anyhow::Result<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("headroom-e2e-ckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn path(p: &Path) -> anyhow::Result<&str> {
    p.to_str().context("a UTF-8 path")
}

/// Sets files on the page's file input, as a person picks or drops them
/// (chromedriver takes several paths separated by newlines).
pub(crate) async fn drop_files(page: &Page, files: &[PathBuf]) -> anyhow::Result<()> {
    let list: Vec<&str> = files.iter().map(|p| path(p)).collect::<anyhow::Result<_>>()?;
    // A file input with `multiple` adds to what it holds: empty it first.
    page.client
        .execute("document.querySelector(arguments[0]).value = '';", vec![serde_json::json!(sel("checkpoint-files"))])
        .await?;
    let input = page.client.find(Locator::Css(&sel("checkpoint-files"))).await?;
    input.send_keys(&list.join("\n")).await?;
    Ok(())
}

/// The page's banner and weights line agree with the CLI's JSON.
async fn expect_honesty(page: &Page, json: &serde_json::Value, what: &str) -> anyhow::Result<()> {
    let status = page.text("model-status").await?;
    let says = match json["weights_source"].as_str() {
        Some("checkpoint") => "Weights: the exact bytes",
        _ => "Weights: estimated",
    };
    ensure!(
        status.contains(says),
        "{what}: the status says `{status}`, the CLI's weights_source is {}",
        json["weights_source"]
    );
    let known = json["architecture_known"].as_bool().context("architecture_known")?;
    ensure!(page.exists("architecture-note").await? != known, "{what}: the banner and architecture_known={known}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_from_the_hub_and_from_dropped_files() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = cli::dist()?;
    cli::headroom()?;
    let hub = standin_hub::start(vec![
        ("acme/llama", Kind::Public, repo_files(LLAMA, false)),
        ("acme/brand-new", Kind::Public, repo_files(UNKNOWN_MOE, true)),
        ("acme/gated", Kind::Gated, repo_files(LLAMA, false)),
        ("acme/html", Kind::Html, repo_files(LLAMA, false)),
        ("acme/moe-config-only", Kind::Public, vec![("config.json", File::text(UNKNOWN_MOE))]),
        ("acme/missing-shard", Kind::Public, {
            let mut files = repo_files(LLAMA, false);
            files.retain(|(name, _)| *name != "model-00002-of-00002.safetensors");
            files
        }),
    ]);
    let env = [("HF_ENDPOINT", hub.endpoint.as_str())];
    let server = Server::start(dist, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;
    let at = |query: &str| server.page(&format!("{query}&hub={}", hub.endpoint));

    // 1. Sharded safetensors on the Hub: every shard header, exact bytes by
    // role and layer, the same figures as `--hf`, on one GPU and split.
    page.open(&at("hf=acme/llama")).await?;
    let json = expect_cli_env(&page, "a sharded hub checkpoint", &["--hf", "acme/llama"], &env).await?;
    ensure!(json["weight_bytes"].as_u64() == Some(header_sum(false)), "the header sum: {}", json["weight_bytes"]);
    ensure!(page.figure("weight-bytes").await? == header_sum(false), "the page shows the header sum");
    expect_honesty(&page, &json, "a known hub checkpoint").await?;
    // A link names its engine version (without one it keeps the oldest rules).
    page.open(&at("hf=acme/llama&g=2&tp=2&e=vllm&vllm=0.24")).await?;
    expect_cli_env(
        &page,
        "tensor parallel",
        &["--hf", "acme/llama", "--gpus", "2", "--tp", "2", "--engine", "vllm", "--vllm-version", "0.24"],
        &env,
    )
    .await?;
    page.open(&at("hf=acme/llama&g=2&e=llama.cpp")).await?;
    expect_cli_env(
        &page,
        "llama.cpp over 2 GPUs",
        &["--hf", "acme/llama", "--gpus", "2", "--engine", "llama.cpp"],
        &env,
    )
    .await?;
    no_errors(&page, "after the hub checkpoints").await?;

    // 2. An architecture no reader knows: exact from its checkpoint, with
    // the banner; from its config alone, no verdict but the reader's error.
    page.open(&at("hf=acme/brand-new")).await?;
    let json = expect_cli_env(&page, "an unknown MoE with its checkpoint", &["--hf", "acme/brand-new"], &env).await?;
    expect_honesty(&page, &json, "an unknown hub checkpoint").await?;
    ensure!(page.text("architecture-note").await?.contains("brand_new_moe"), "the banner names the model_type");
    page.client.goto(&at("hf=acme/moe-config-only")).await?;
    page.wait_until("an unknown MoE config alone gets only the error", async |p: &Page| {
        Ok(p.text("model-status").await?.contains("brand_new_moe") && p.text("verdict").await?.contains("No model"))
    })
    .await?;

    // 3. Hub failures are named: gated, an HTML page, a missing shard.
    for (repo, says) in [("gated", "gated"), ("html", "HTML"), ("missing-shard", "model-00002-of-00002.safetensors")] {
        page.client.goto(&at(&format!("hf=acme/{repo}"))).await?;
        page.wait_until(&format!("acme/{repo} is explained"), async |p: &Page| {
            Ok(p.text("model-status").await?.contains(says))
        })
        .await?;
    }
    no_errors(&page, "after hub failures").await?;

    // 4. Dropped safetensors shards with config.json and the index: the
    // figures of `--checkpoint DIR`; nothing is uploaded (said on the page).
    let dir = temp_dir("llama")?;
    std::fs::write(dir.join("config.json"), LLAMA)?;
    std::fs::write(dir.join("model.safetensors.index.json"), index(false))?;
    let mut dropped = vec![dir.join("config.json"), dir.join("model.safetensors.index.json")];
    for (name, head, size) in shard_files(false) {
        write_sparse(&dir.join(&name), &head, size)?;
        dropped.push(dir.join(name));
    }
    page.open(&server.page("")).await?;
    page.open_details("checkpoint-details").await?;
    ensure!(page.text("checkpoint-drop").await?.contains("nothing is uploaded"), "the page says nothing is uploaded");
    drop_files(&page, &dropped).await?;
    let json = expect_cli_env(&page, "dropped safetensors shards", &["--checkpoint", path(&dir)?], &[]).await?;
    expect_honesty(&page, &json, "dropped shards").await?;
    // The link carries the name and the bytes; its recipient is asked for the files.
    let url = page.url().await?;
    ensure!(url.contains("file=model-00001-of-00002.safetensors"), "file= in the link: {url}");
    ensure!(url.contains(&format!("st={}", header_sum(false))), "st= in the link: {url}");
    page.client.goto(&url).await?;
    page.wait_until("a file= link asks for the same files", async |p: &Page| {
        Ok(p.text("model-status").await?.contains("Drop the same files"))
    })
    .await?;
    ensure!(page.text("verdict").await?.contains("No model"), "no figures until the files are dropped");

    // 5. A dropped GGUF alone: the architecture from its metadata.
    let (head, size, gguf_bytes) = gguf_file();
    let gguf = dir.join("tiny-Q8_0.gguf");
    write_sparse(&gguf, &head, size)?;
    page.open(&server.page("e=llama.cpp")).await?;
    page.open_details("checkpoint-details").await?;
    drop_files(&page, std::slice::from_ref(&gguf)).await?;
    let json =
        expect_cli_env(&page, "a dropped GGUF", &["--checkpoint", path(&gguf)?, "--engine", "llama.cpp"], &[]).await?;
    ensure!(json["weight_bytes"].as_u64() == Some(gguf_bytes), "the GGUF's tensor bytes: {}", json["weight_bytes"]);
    expect_honesty(&page, &json, "a dropped GGUF").await?;
    no_errors(&page, "after dropped files").await?;

    // 6. Broken files: a clear error naming the file; the plan is untouched.
    let truncated = dir.join("broken.safetensors");
    let (_, head, _) = &shard_files(false)[0];
    std::fs::write(&truncated, &head[..head.len() / 2])?;
    let not_json = dir.join("garbage.safetensors");
    let mut bytes = 16u64.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{not json at all");
    std::fs::write(&not_json, &bytes)?;
    for (file, says) in [(&truncated, "broken.safetensors"), (&not_json, "JSON")] {
        drop_files(&page, std::slice::from_ref(file)).await?;
        page.wait_until(&format!("{} is refused", file.display()), async |p: &Page| {
            let e = p.text("checkpoint-error").await?;
            Ok(e.contains(says) && e.contains(file.file_name().and_then(|n| n.to_str()).unwrap_or("?")))
        })
        .await?;
    }
    ensure!(page.figure("weight-bytes").await? == gguf_bytes, "a broken drop leaves the last model in place");
    no_errors(&page, "after broken files").await?;
    let _ = std::fs::remove_dir_all(&dir);
    page.close().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gguf_repo_is_read_by_its_quantisation_tag() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = cli::dist()?;
    cli::headroom()?;
    let (head, size, gguf_bytes) = gguf_file();
    let (other, other_size, other_bytes) = gguf_with(true);
    ensure!(other_bytes != gguf_bytes, "the two files differ in weight bytes");
    let q8 = || File { head: head.clone(), size };
    // No config.json, as GGUF repos are; three files list in two pages.
    let hub = standin_hub::start(vec![
        (
            "acme/tiny-GGUF",
            Kind::Public,
            vec![
                ("README.md", File::text("# tiny")),
                ("tiny-Q4_K_M.gguf", File { head: other, size: other_size }),
                ("tiny-Q8_0.gguf", q8()),
            ],
        ),
        ("acme/lone-GGUF", Kind::Public, vec![("tiny-Q8_0.gguf", q8())]),
        // The original config.json beside the quantisations, no safetensors.
        ("acme/config-GGUF", Kind::Public, vec![("config.json", File::text(LLAMA)), ("tiny-Q8_0.gguf", q8())]),
    ]);
    let env = [("HF_ENDPOINT", hub.endpoint.as_str())];
    let server = Server::start(dist, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;
    let at = |query: &str| server.page(&format!("{query}&hub={}", hub.endpoint));

    // 1. Typed as `llama-server -hf` takes it: the tagged file's exact bytes, as the CLI reads them.
    page.open(&at("e=llama.cpp")).await?;
    page.open_details("hub-details").await?;
    page.fill("hub-id", "acme/tiny-GGUF:Q8_0").await?;
    page.click("hub-load").await?;
    let args = ["--hf", "acme/tiny-GGUF:Q8_0", "--engine", "llama.cpp"];
    let json = expect_cli_env(&page, "a GGUF picked by its tag", &args, &env).await?;
    ensure!(json["weight_bytes"].as_u64() == Some(gguf_bytes), "the CLI reads the Q8_0 file: {}", json["weight_bytes"]);
    ensure!(page.figure("weight-bytes").await? == gguf_bytes, "the page shows the Q8_0 file's bytes");
    expect_honesty(&page, &json, "a GGUF from the hub").await?;

    // 2. The share link carries the tag, and its recipient reads the same file.
    let url = page.url().await?;
    ensure!(url.contains("hf=acme/tiny-GGUF:Q8_0"), "hf= with its tag in the link: {url}");
    page.open(&url).await?;
    expect_cli_env(&page, "the shared GGUF link", &args, &env).await?;
    ensure!(page.figure("weight-bytes").await? == gguf_bytes, "the link's recipient sees the Q8_0 file's bytes");

    // 3. The other tag reads the other file; a repo of two models without a
    // tag lists them; a repo of one reads it.
    page.open(&at("hf=acme/tiny-GGUF:q4_k_m&e=llama.cpp")).await?;
    expect_cli_env(&page, "the other tag", &["--hf", "acme/tiny-GGUF:Q4_K_M", "--engine", "llama.cpp"], &env).await?;
    ensure!(page.figure("weight-bytes").await? == other_bytes, "the Q4_K_M file's bytes");
    page.client.goto(&at("hf=acme/tiny-GGUF")).await?;
    page.wait_until("a GGUF repo without a tag lists its models", async |p: &Page| {
        let status = p.text("model-status").await?;
        Ok(status.contains("no config.json")
            && status.contains("tiny-Q4_K_M.gguf")
            && status.contains("tiny-Q8_0.gguf"))
    })
    .await?;
    // A GGUF repo that kept its config.json: pick a file, as the CLI says.
    page.client.goto(&at("hf=acme/config-GGUF")).await?;
    page.wait_until("a GGUF repo with a config.json lists its models", async |p: &Page| {
        let status = p.text("model-status").await?;
        Ok(status.contains("no safetensors weights") && status.contains("tiny-Q8_0.gguf"))
    })
    .await?;
    let e = cli::estimate_env(&["--hf", "acme/config-GGUF"], &env).err().context("the CLI refuses it too")?.to_string();
    ensure!(e.contains("no safetensors weights") && e.contains("tiny-Q8_0.gguf"), "the CLI says the same: {e}");
    page.open(&at("hf=acme/lone-GGUF&e=llama.cpp")).await?;
    expect_cli_env(&page, "a repo's only GGUF", &["--hf", "acme/lone-GGUF", "--engine", "llama.cpp"], &env).await?;
    ensure!(page.figure("weight-bytes").await? == gguf_bytes, "the lone GGUF's bytes");
    no_errors(&page, "after GGUF repos").await?;
    page.close().await?;
    Ok(())
}

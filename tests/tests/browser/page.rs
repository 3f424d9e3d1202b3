//! The calculator page, end to end: one browser session walks through every
//! case (a second, fresh one opens the share link), so the whole run stays
//! within a few seconds of browser time.

use std::collections::HashMap;

use anyhow::{Context, ensure};

use crate::browser::{Driver, Page, tools};
use crate::cli::{self, figures};
use crate::server::Server;
use crate::standin_hub::{self, File, Kind};

/// Every figure with `data-bytes`, in the CLI's terms.
pub const FIGURES: &[&str] = &[
    "parameters",
    "weight-bytes",
    "kv-bytes-per-token",
    "kv-cache-bytes",
    "activation-bytes",
    "overhead-bytes",
    "total-bytes",
    "capacity-bytes",
    "max-concurrency",
];

/// Waits until the page shows exactly what `headroom estimate --json ARGS` prints.
pub async fn expect_cli(page: &Page, what: &str, args: &[&str]) -> anyhow::Result<()> {
    expect_cli_env(page, what, args, &[]).await.map(drop)
}

/// [`expect_cli`] with environment variables for the CLI (`HF_ENDPOINT`);
/// answers the CLI's JSON.
pub async fn expect_cli_env(
    page: &Page,
    what: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<serde_json::Value> {
    let json = cli::estimate_env(args, env)?;
    let want: Vec<(String, u64)> = figures(&json).into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let verdict = json["verdict_text"].as_str().context("verdict_text")?.to_owned();
    let result = page
        .wait_until(what, async |p: &Page| Ok(p.figures(FIGURES).await? == want && p.text("verdict").await? == verdict))
        .await;
    if result.is_err() {
        let got = page.figures(FIGURES).await.unwrap_or_default();
        let shown = page.text("verdict").await.unwrap_or_default();
        anyhow::bail!(
            "{what}: the page differs from `headroom estimate {args:?}`\n page: {got:?}\n  cli: {want:?}\n page verdict: {shown}\n  cli verdict: {verdict}"
        );
    }
    Ok(json)
}

pub async fn no_errors(page: &Page, when: &str) -> anyhow::Result<()> {
    let errors = page.errors().await?;
    ensure!(errors.is_empty(), "console errors {when}: {errors:?}");
    Ok(())
}

fn preset_config(id: &str) -> anyhow::Result<String> {
    let path = cli::root().join("shared").join("catalog").join("models").join(format!("{id}.json"));
    std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))
}

/// A single-file `model.safetensors`: one bf16 tensor of 2,471,645,184
/// bytes (Llama 3.2 1B's total), its header and then zeros up to its size.
fn single_safetensors() -> File {
    let (head, size) = crate::writer::safetensors(&[("model.embed_tokens.weight", "BF16", &[1235822592])]);
    File { head, size }
}

fn temp_file(name: &str, text: &str) -> anyhow::Result<String> {
    // Under target/tmp (Cargo's CARGO_TARGET_TMPDIR), not /tmp: nothing outlives `cargo clean`.
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("headroom-e2e-{}-{name}", std::process::id()));
    std::fs::write(&path, text)?;
    Ok(path.display().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calculator_page() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = cli::dist()?;
    cli::headroom()?;

    let tiny = preset_config("llama-3.2-1b")?;
    // The Hub stand-in the CLI tests use: a sharded repo (its index names the
    // one shard), a gated one and a single-file checkpoint.
    let index = r#"{"metadata":{"total_size":2471645184},"weight_map":{"model.embed_tokens.weight":"model-00001-of-00001.safetensors"}}"#;
    let standin = standin_hub::start(vec![
        (
            "test-org/tiny",
            Kind::Public,
            vec![
                ("config.json", File::text(&tiny)),
                ("model.safetensors.index.json", File::text(index)),
                ("model-00001-of-00001.safetensors", single_safetensors()),
            ],
        ),
        ("test-org/gated", Kind::Gated, vec![("config.json", File::text(&tiny))]),
        (
            "test-org/single",
            Kind::Public,
            vec![("config.json", File::text(&tiny)), ("model.safetensors", single_safetensors())],
        ),
    ]);
    let hub_env = [("HF_ENDPOINT", standin.endpoint.as_str())];
    let server = Server::start(dist, HashMap::new()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;

    // 1. The default page answers before anyone touches it, exactly as the CLI does.
    page.open(&server.page("")).await?;
    expect_cli(&page, "the default page", &["--model", "llama-3.1-8b"]).await?;
    ensure!(page.url().await?.contains("model=llama-3.1-8b"), "the URL carries the inputs");
    page.screenshot("default").await?;
    no_errors(&page, "on the default page").await?;

    // 2. Changing model, format and GPU count changes every figure to the CLI's.
    page.select("model-select", "qwen2.5-32b").await?;
    page.select("format-select", "q4_k_m").await?;
    page.fill("gpu-count", "2").await?;
    page.fill("max-new-tokens", "1024").await?;
    let args = ["--model", "qwen2.5-32b", "--weights", "q4_k_m", "--gpus", "2", "--max-new-tokens", "1024"];
    expect_cli(&page, "after changing model, format and GPUs", &args).await?;
    page.select("kv-select", "fp8").await?;
    let args = [&args[..], &["--kv-dtype", "fp8"]].concat();
    expect_cli(&page, "after changing the KV dtype", &args).await?;
    let url = page.url().await?;
    ensure!(url.contains("w=q4_k_m") && url.contains("kv=fp8") && url.contains("g=2"), "URL kept current: {url}");
    ensure!(page.attr("share-url", "value").await?.is_some() || page.exists("share-url").await?, "share field");
    let before = page.figures(FIGURES).await?;
    let verdict = page.text("verdict").await?;

    // 3. The share link in a fresh browser session reproduces every figure.
    {
        let fresh = driver.session(1024, 900).await?;
        fresh.open(&url).await?;
        ensure!(fresh.figures(FIGURES).await? == before, "the share link reproduces the figures");
        ensure!(fresh.text("verdict").await? == verdict, "the share link reproduces the verdict");
        no_errors(&fresh, "in the fresh session").await?;
        fresh.close().await?;
    }

    // 4. A plan that does not fit: verdict and screenshot.
    page.open(&server.page("model=llama-3.1-70b&gpu=rtx-4090&g=1&p=4096&n=1024")).await?;
    expect_cli(
        &page,
        "a does-not-fit plan",
        &["--model", "llama-3.1-70b", "--prompt-tokens", "4096", "--max-new-tokens", "1024"],
    )
    .await?;
    ensure!(page.attr("verdict", "data-fits").await?.as_deref() == Some("no"), "the verdict says it does not fit");
    page.screenshot("does-not-fit").await?;
    page.click("theme-toggle").await?;
    page.screenshot("does-not-fit-dark").await?;
    page.click("theme-toggle").await?;
    page.click("theme-toggle").await?;
    no_errors(&page, "on the does-not-fit page").await?;

    // 5. Garbage in the query: a notice, and a working page with the defaults.
    page.open(&server.page("zzz=1&p=abc&model=no-such-model&cfg=%%%&g=0")).await?;
    ensure!(page.exists("notice").await?, "a notice is shown");
    let notice = page.text("notice").await?;
    ensure!(notice.contains("zzz") && notice.contains("p=abc"), "the notice names what was ignored: {notice}");
    expect_cli(&page, "a garbage link", &["--model", "llama-3.1-8b"]).await?;
    no_errors(&page, "after a garbage link").await?;

    // 6. A pasted config.json (Gemma 2 9B, with sliding windows) and a safetensors index.
    page.open(&server.page("")).await?;
    let config = preset_config("gemma-2-9b")?;
    page.open_details("config-details").await?;
    page.fill("config-text", &config).await?;
    page.fill("index-text", r#"{"metadata":{"total_size":18483411968}}"#).await?;
    page.click("config-apply").await?;
    let cfg_path = temp_file("gemma.json", &config)?;
    let idx_path = temp_file("gemma-index.json", r#"{"metadata":{"total_size":18483411968}}"#)?;
    expect_cli(&page, "a pasted config", &["--config", &cfg_path, "--safetensors-index", &idx_path]).await?;
    let url = page.url().await?;
    ensure!(url.contains("cfg=") && url.contains("st=18483411968"), "the config travels in the link: {url}");
    ensure!(url.len() < 2000, "the cfg link stays compact ({} chars)", url.len());
    page.open(&url).await?;
    expect_cli(&page, "the pasted config's link, reopened", &["--config", &cfg_path, "--safetensors-index", &idx_path])
        .await?;
    no_errors(&page, "with a pasted config").await?;

    // 7. The hub stand-in: success (config, index, shard header), 404 and gated.
    let hub = &standin.endpoint;
    page.open(&server.page(&format!("hf=test-org/tiny&hub={hub}"))).await?;
    expect_cli_env(&page, "a model from the hub", &["--hf", "test-org/tiny"], &hub_env).await?;
    ensure!(page.text("model-status").await?.contains("test-org/tiny"), "the status names the hub model");
    no_errors(&page, "after a hub load").await?;
    page.client.goto(&server.page(&format!("hf=test-org/missing&hub={hub}"))).await?;
    page.wait_until("the hub's 404 is explained", async |p: &Page| {
        Ok(p.text("model-status").await?.contains("not found"))
    })
    .await?;
    ensure!(page.text("verdict").await?.contains("No model"), "no figures without a model, but a verdict line");
    page.client.goto(&server.page(&format!("hf=test-org/gated&hub={hub}"))).await?;
    page.wait_until("the gated model is explained", async |p: &Page| {
        Ok(p.text("model-status").await?.contains("gated"))
    })
    .await?;
    // A single-file checkpoint: its header, read with Range requests, gives the exact size.
    page.open(&server.page(&format!("hf=test-org/single&hub={hub}"))).await?;
    expect_cli_env(&page, "a single-file hub checkpoint", &["--hf", "test-org/single"], &hub_env).await?;
    no_errors(&page, "after a single-file hub load").await?;
    // The hub loader form: type an id and load it.
    page.open_details("hub-details").await?;
    page.fill("hub-id", "test-org/tiny").await?;
    page.click("hub-load").await?;
    expect_cli_env(&page, "a model loaded through the form", &["--hf", "test-org/tiny"], &hub_env).await?;
    no_errors(&page, "after hub failures").await?;

    // 7b. Unknown architectures: a plain dense decoder is flagged as a guess;
    // a mixture of experts gets no figures, only the reader's error.
    let dense = r#"{"model_type":"brand_new","hidden_size":2048,"num_hidden_layers":16,"num_attention_heads":16,"intermediate_size":8192,"vocab_size":32000}"#;
    page.open(&server.page("")).await?;
    page.open_details("config-details").await?;
    page.fill("config-text", dense).await?;
    page.click("config-apply").await?;
    page.wait_until("the unknown architecture is flagged", async |p: &Page| {
        Ok(p.exists("architecture-note").await? && p.text("architecture-note").await?.contains("brand_new"))
    })
    .await?;
    let moe = dense.replace("\"vocab_size\":32000", "\"vocab_size\":32000,\"num_local_experts\":8");
    page.fill("config-text", &moe).await?;
    page.click("config-apply").await?;
    // The paste is refused with the reader's error; no figures come from it.
    page.wait_until("the unknown MoE is refused", async |p: &Page| {
        let error = p.text("config-error").await?;
        Ok(error.contains("brand_new") && error.contains("--checkpoint"))
    })
    .await?;
    ensure!(page.exists("architecture-note").await?, "the refused config leaves the dense one in use, still flagged");
    no_errors(&page, "with unknown architectures").await?;

    // 7c. The model reader is a bundle fetched on demand: a preset page does
    // without it; a bare parameter count loads it and gets its stand-in.
    page.open(&server.page("model=mistral-7b-v0.3")).await?;
    let fetched = page
        .client
        .execute("return performance.getEntriesByType('resource').some(e => e.name.includes('reader'));", vec![])
        .await?;
    ensure!(fetched == serde_json::Value::Bool(false), "a preset page fetched the model reader");
    // The fixes are ranked by the diagnose bundle, which a plan that fits does without.
    ensure!(page.attr("verdict", "data-fits").await?.as_deref() == Some("fits"), "mistral-7b fits the default GPU");
    let fetched = page
        .client
        .execute("return performance.getEntriesByType('resource').some(e => e.name.includes('diagnose'));", vec![])
        .await?;
    ensure!(fetched == serde_json::Value::Bool(false), "a plan that fits fetched the diagnose bundle");
    page.open(&server.page("params=13b")).await?;
    page.wait_until("the stand-in for a parameter count", async |p: &Page| {
        Ok(p.text("model-status").await?.contains("custom 13.00B parameters")
            && p.attr("verdict", "data-fits").await?.is_some_and(|v| v == "fits" || v == "no"))
    })
    .await?;
    no_errors(&page, "with a parameter count").await?;

    // 8. Units, phone width, custom GPU size.
    page.open(&server.page("model=mistral-7b-v0.3&mem=80GB&u=gb")).await?;
    expect_cli(&page, "a custom GPU size", &["--model", "mistral-7b-v0.3", "--gpu-memory", "80GB", "--decimal"])
        .await?;
    ensure!(page.text("total-bytes").await?.ends_with(" GB"), "decimal units");
    page.click("units-gib").await?;
    page.wait_until("GiB units", async |p: &Page| Ok(p.text("total-bytes").await?.ends_with("GiB"))).await?;
    page.resize(390, 2400).await?;
    page.screenshot("phone").await?;
    let overflow =
        page.client.execute("return document.documentElement.scrollWidth > window.innerWidth + 1;", vec![]).await?;
    ensure!(overflow == serde_json::Value::Bool(false), "no sideways scrolling at phone width");
    no_errors(&page, "at phone width").await?;

    page.close().await?;
    Ok(())
}

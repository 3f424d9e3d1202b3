//! Share links across releases (`docs/links.md`, "The compatibility
//! promise"): a link pinned to older vLLM rules opens with that plan and an
//! offer of the newer rules; switching gives the CLI's figures for the newer
//! version; copied links carry the link version and the engine version.

use std::collections::HashMap;

use anyhow::ensure;
use serde_json::json;

use crate::browser::{Driver, Page, sel, tools};
use crate::cli;
use crate::page::{expect_cli, no_errors};
use crate::server::Server;

async fn share_url(page: &Page) -> anyhow::Result<String> {
    let v = page
        .client
        .execute("return document.querySelector(arguments[0]).value;", vec![json!(sel("share-url"))])
        .await?;
    Ok(v.as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_links_keep_their_plan_and_offer_newer_rules() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = cli::dist()?;
    cli::headroom()?;
    let server = Server::start(dist, HashMap::new()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 1600).await?;
    let plan = ["--model", "llama-3.1-8b", "--gpu", "rtx-3090", "--engine", "vllm", "--max-model-len", "20000"];

    // 1. A link made before link versions, pinned to the V1 engine: its plan, and the offer.
    page.open(&server.page("model=llama-3.1-8b&p=2048&n=512&c=1&gpu=rtx-3090&g=1&e=vllm&vllm=v1&mml=20000")).await?;
    expect_cli(&page, "the link's own plan (vLLM V1)", &[&plan[..], &["--vllm-version", "v1"]].concat()).await?;
    page.wait_until("the newer rules are offered", async |p: &Page| p.exists("engine-update").await).await?;
    let offer = page.text("engine-update-text").await?;
    ensure!(offer.contains("V1 engine") && offer.contains("0.21") && offer.contains("CUDA-graph"), "{offer}");
    let url = page.url().await?;
    ensure!(url.contains("?v=3&") && url.contains("vllm=v1"), "the address bar pins the version: {url}");
    page.screenshot("engine-update").await?;

    // 2. Switch: the newest rules, every other setting kept, and the copied link carries them.
    page.click("engine-switch").await?;
    // The newest rules: vLLM 0.34+ with the extensible KV cache (`Version::LATEST`).
    expect_cli(&page, "after switching to the newest vLLM rules", &[&plan[..], &["--vllm-version", "0.34"]].concat())
        .await?;
    page.wait_until("the offer is gone", async |p: &Page| Ok(!p.exists("engine-update").await?)).await?;
    let copied = share_url(&page).await?;
    ensure!(
        copied.contains("?v=3&") && copied.contains("e=vllm&vllm=0.34") && copied.contains("mml=20000"),
        "the copied link carries the link version and the engine version: {copied}"
    );
    no_errors(&page, "after switching").await?;

    // 3. The copied link opens with the same plan and no offer; "Keep" keeps an old link's plan.
    page.open(&copied).await?;
    expect_cli(&page, "the copied link", &[&plan[..], &["--vllm-version", "0.34"]].concat()).await?;
    ensure!(!page.exists("engine-update").await?, "no offer for the newest rules");
    page.open(&server.page("e=vllm&vllm=v0&gpu=rtx-3090&mml=20000")).await?;
    page.wait_until("the offer for V0", async |p: &Page| p.exists("engine-update").await).await?;
    page.click("engine-keep").await?;
    page.wait_until("the offer is dismissed", async |p: &Page| Ok(!p.exists("engine-update").await?)).await?;
    expect_cli(&page, "the kept V0 plan", &[&plan[..], &["--vllm-version", "v0"]].concat()).await?;
    ensure!(page.url().await?.contains("vllm=v0"), "kept: the link still names v0");
    no_errors(&page, "after keeping").await?;
    page.close().await?;
    Ok(())
}

/// Hostile `-ot` links found by fuzzing (`fuzz/regressions/link/`): one
/// froze the tab for minutes (`(.*)*X` backtracked), one overflowed the
/// matcher's stack. Both open at once now: the first is an ordinary pattern
/// that matches no tensor, and the page says so; a pattern whose counts
/// unroll past the matcher's bound is refused with its reason and the rest
/// of the link still applies. The time to the figures is printed, not
/// asserted (speed is the benchmarks' business).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_tensor_override_links_open_at_once() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = cli::dist()?;
    cli::headroom()?;
    let server = Server::start(dist, HashMap::new()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 1600).await?;

    let started = std::time::Instant::now();
    page.open(&server.page("model=llama-3.1-8b&e=llama.cpp&ot=(.*)*X=CPU")).await?;
    let plan = ["--model", "llama-3.1-8b", "--engine", "llama.cpp", "--override-tensor", "(.*)*X=CPU"];
    expect_cli(&page, "the (.*)*X link", &plan).await?;
    eprintln!("ot=(.*)*X=CPU: figures after {} ms", started.elapsed().as_millis());
    page.wait_until("the page says the rule matches no tensor", async |p: &Page| {
        Ok(p.text("warnings").await?.contains("no tensor of this model matches the -ot rules"))
    })
    .await?;
    no_errors(&page, "the (.*)*X link").await?;

    let started = std::time::Instant::now();
    page.open(&server.page("model=llama-3.1-8b&e=llama.cpp&ot=(?:(?:a){1000}){1000}=CPU")).await?;
    expect_cli(&page, "the nested-count link, its rule refused", &plan[..4]).await?;
    eprintln!("ot=(?:(?:a){{1000}}){{1000}}=CPU: figures after {} ms", started.elapsed().as_millis());
    page.wait_until("the notice says why the rule was refused", async |p: &Page| {
        Ok(p.exists("notice").await? && p.text("notice").await?.contains("too complex to check"))
    })
    .await?;
    page.close().await?;
    Ok(())
}

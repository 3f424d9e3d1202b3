//! Engines, fixes and the OOM diagnosis, end to end in one browser session
//! (a second, fresh one opens a share link with engine knobs): every figure
//! is compared with what `headroom estimate --json` / `headroom diagnose
//! --json` print for the same inputs.

use std::collections::HashMap;

use anyhow::{Context, ensure};
use shared::units::{UnitSystem, format_bytes, shortest};

use crate::browser::{Driver, Page, tools};
use crate::cli;
use crate::page::{FIGURES, expect_cli, expect_cli_env, no_errors};
use crate::server::Server;

/// Waits until the element's `data-value` is `want`.
async fn expect_value(page: &Page, testid: &str, want: &str) -> anyhow::Result<()> {
    let what = format!("{testid} = {want}");
    page.wait_until(&what, async |p: &Page| Ok(p.attr(testid, "data-value").await?.as_deref() == Some(want))).await
}

/// Waits until the host-RAM row shows the CLI's need, "of" the CLI's limit
/// (on unified memory: what the pool leaves beside the GPU side).
async fn expect_host_ram(page: &Page, json: &serde_json::Value) -> anyhow::Result<()> {
    let r = &json["engine_report"];
    expect_value(page, "host-ram-bytes", &r["host_ram_bytes"].to_string()).await?;
    let limit = r["host_ram_limit_bytes"].as_u64().context("a unified-memory GPU limits the host's share")?;
    let want = format!("of {}", format_bytes(limit, UnitSystem::Binary));
    page.wait_until(&format!("host RAM {want}"), async |p: &Page| Ok(p.text("host-ram-bytes").await?.contains(&want)))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_fixes_and_diagnosis() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = cli::dist()?;
    cli::headroom()?;
    let server = Server::start(dist, HashMap::new()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;

    // 1. vLLM on an RTX 3090: the blocks, tokens and concurrency vLLM logs.
    page.open(&server.page("gpu=rtx-3090")).await?;
    page.select("engine-select", "vllm").await?;
    page.fill("knob-mml", "20000").await?;
    page.fill("knob-gmu", "0.9").await?;
    let args = [
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "rtx-3090",
        "--engine",
        "vllm",
        "--max-model-len",
        "20000",
        "--gpu-memory-utilization",
        "0.9",
    ];
    expect_cli(&page, "vLLM", &args).await?;
    let json = cli::estimate(&args)?;
    expect_value(&page, "num-gpu-blocks", &json["num_gpu_blocks"].to_string()).await?;
    expect_value(&page, "kv-cache-tokens", &json["kv_cache_tokens"].to_string()).await?;
    // The page writes the number as `units::shortest` does (2, not serde's 2.0).
    let concurrency = json["max_concurrency"].as_f64().context("max_concurrency")?;
    expect_value(&page, "vllm-max-concurrency", &shortest(concurrency)).await?;
    ensure!(page.text("engine-log").await?.contains("GPU KV cache size"), "vLLM's log lines are shown");
    let url = page.url().await?;
    ensure!(url.contains("e=vllm") && url.contains("mml=20000") && url.contains("gmu=0.9"), "knobs in the link: {url}");
    page.screenshot("vllm").await?;
    no_errors(&page, "with vLLM").await?;

    // 2. llama.cpp with partial offload, mixed GPUs (24 GB + 16 GB).
    page.open(&server.page("model=llama-3.1-70b&w=q4_k_m")).await?;
    page.select("engine-select", "llama.cpp").await?;
    page.click("mix-add").await?;
    page.fill("knob-ngl", "40").await?;
    let args =
        ["--model", "llama-3.1-70b", "--weights", "q4_k_m", "--gpu", "rtx-4090,rtx-4080", "--engine", "llama.cpp"];
    let args = [&args[..], &["--n-gpu-layers", "40"]].concat();
    expect_cli(&page, "llama.cpp on mixed GPUs", &args).await?;
    let json = cli::estimate(&args)?;
    let ngl = json["engine_report"]["n_gpu_layers"].to_string();
    expect_value(&page, "n-gpu-layers", &ngl).await?;
    let url = page.url().await?;
    ensure!(url.contains("e=llama.cpp") && url.contains("ngl=40") && url.contains("mix=rtx-4080"), "{url}");
    let before = page.figures(FIGURES).await?;

    // 3. The share link with engine knobs reproduces every figure in a fresh session.
    {
        let fresh = driver.session(1024, 900).await?;
        fresh.open(&url).await?;
        ensure!(fresh.figures(FIGURES).await? == before, "the share link reproduces the figures");
        expect_value(&fresh, "n-gpu-layers", &ngl).await?;
        no_errors(&fresh, "in the fresh session").await?;
        fresh.close().await?;
    }

    // 3b. llama.cpp tensor overrides and a tensor split, as the CLI reads them.
    page.open(&server.page("model=qwen3-30b-a3b&w=q4_k_m&g=2&e=llama.cpp")).await?;
    page.fill("knob-ot", "exps=CPU").await?;
    page.fill("knob-ts", "3,1").await?;
    let args = [
        "--model",
        "qwen3-30b-a3b",
        "--weights",
        "q4_k_m",
        "--gpus",
        "2",
        "--engine",
        "llama.cpp",
        "--override-tensor",
        "exps=CPU",
        "--tensor-split",
        "3,1",
    ];
    expect_cli(&page, "llama.cpp with -ot and -ts", &args).await?;
    let url = page.url().await?;
    ensure!(url.contains("ot=exps%3DCPU") && url.contains("ts=3,1"), "{url}");
    // The host's RAM: what the experts need there is over 8 GiB.
    page.fill("knob-ram", "8").await?;
    expect_cli(&page, "llama.cpp with --host-ram", &[&args[..], &["--host-ram", "8GiB"]].concat()).await?;
    page.wait_until("the page says the host RAM is short", async |p: &Page| {
        Ok(p.text("warnings").await?.contains("of host RAM"))
    })
    .await?;
    let json = cli::estimate(&[&args[..], &["--host-ram", "8GiB"]].concat())?;
    expect_value(&page, "host-ram-bytes", &json["engine_report"]["host_ram_bytes"].to_string()).await?;
    ensure!(page.url().await?.contains("ram=8GiB"), "the host RAM travels in the link");
    no_errors(&page, "with tensor overrides").await?;

    // 3c. llama.cpp's --fit: what it loads instead of a plan that does not
    // fit an 8 GB GPU, as the CLI predicts it; `--fit off` in the link.
    page.open(&server.page("model=llama-3.1-8b&w=q8_0&gpu=rtx-3070&e=llama.cpp&nctx=8192")).await?;
    let args = [
        "--model",
        "llama-3.1-8b",
        "--weights",
        "q8_0",
        "--gpu",
        "rtx-3070",
        "--engine",
        "llama.cpp",
        "--n-ctx",
        "8192",
    ];
    expect_cli(&page, "llama.cpp fitted by --fit", &args).await?;
    let json = cli::estimate(&args)?;
    let fit = &json["engine_report"]["fit"];
    ensure!(fit["kind"] == "fitted", "the CLI fits this plan: {fit}");
    let loads = format!("loads it as -ngl {}:", fit["n_gpu_layers"]);
    page.wait_until("the fixes say what --fit loads", async |p: &Page| {
        Ok(p.exists("fix-fit").await? && p.text("fix-fit").await?.contains(&loads))
    })
    .await?;
    page.select("knob-fit", "off").await?;
    expect_cli(&page, "llama.cpp with --fit off", &[&args[..], &["--fit", "off"]].concat()).await?;
    page.wait_until("with --fit off, the fix turns it back on", async |p: &Page| {
        Ok(p.exists("fix-fit").await? && p.text("fix-fit").await?.starts_with("Turn llama.cpp's --fit back on"))
    })
    .await?;
    ensure!(page.url().await?.contains("fit=off"), "--fit off travels in the link");
    no_errors(&page, "with --fit").await?;

    // 3d. Ollama: the llama-server it launches (num_ctx by the GPU's memory,
    // its own num_batch), its settings in the link, its fixes in its words.
    page.open(&server.page("model=qwen3-30b-a3b&w=q4_k_m&gpu=rtx-4060-ti-16gb")).await?;
    page.select("engine-select", "ollama").await?;
    let args = ["--model", "qwen3-30b-a3b", "--weights", "q4_k_m", "--gpu", "rtx-4060-ti-16gb", "--engine", "ollama"];
    expect_cli(&page, "Ollama's defaults", &args).await?;
    let json = cli::estimate(&args)?;
    let want = format!("default: {}", json["engine_report"]["n_ctx_per_slot"]);
    page.wait_until("num_ctx shows Ollama's default", async |p: &Page| {
        Ok(p.attr("knob-numctx", "placeholder").await?.as_deref() == Some(want.as_str()))
    })
    .await?;
    page.fill("knob-numctx", "8192").await?;
    page.select("knob-kvt", "q8_0").await?;
    let args = [&args[..], &["--num-ctx", "8192", "--kv-cache-type", "q8_0"]].concat();
    expect_cli(&page, "Ollama with num_ctx and OLLAMA_KV_CACHE_TYPE", &args).await?;
    let url = page.url().await?;
    ensure!(url.contains("e=ollama") && url.contains("numctx=8192") && url.contains("kvt=q8_0"), "{url}");
    page.wait_until("the fixes speak Ollama", async |p: &Page| {
        Ok(p.exists("fix-fit").await?
            && p.text("fix-fit").await?.contains("Ollama's llama-server (--fit on) loads it as"))
    })
    .await?;
    let codes = page.text("fixes").await?;
    ensure!(codes.contains("PARAMETER num_ctx 8192") && !codes.contains("llama-server -m"), "{codes}");
    page.screenshot("ollama").await?;
    no_errors(&page, "with Ollama").await?;

    // 3e. Unified memory (DGX Spark): the host's share is what the GPU side
    // leaves of the one pool, as the CLI computes it.
    page.open(&server.page("model=qwen3-235b-a22b&w=q4_k_m&gpu=dgx-spark&e=llama.cpp&ncmoe=94")).await?;
    let args = [
        "--model",
        "qwen3-235b-a22b",
        "--weights",
        "q4_k_m",
        "--gpu",
        "dgx-spark",
        "--engine",
        "llama.cpp",
        "--n-cpu-moe",
        "94",
    ];
    expect_cli(&page, "llama.cpp on unified memory", &args).await?;
    let json = cli::estimate(&args)?;
    expect_value(&page, "host-ram-bytes", &json["engine_report"]["host_ram_bytes"].to_string()).await?;
    page.wait_until("the page says the unified memory is short", async |p: &Page| {
        Ok(p.text("warnings").await?.contains("the unified memory's"))
    })
    .await?;
    no_errors(&page, "on unified memory").await?;

    // 3f. A Mac, chosen in the GPU picker: Metal's working set is the GPU
    // side, with no CUDA context; the host may use what the pool leaves, as
    // the CLI computes it; the share link keeps the GPU.
    page.open(&server.page("model=gpt-oss-120b&w=q4_k_m&e=llama.cpp&ncmoe=12")).await?;
    page.select("gpu-select", "m4-max-128gb").await?;
    let on = |gpu: &'static str| {
        ["--model", "gpt-oss-120b", "--weights", "q4_k_m", "--gpu", gpu, "--engine", "llama.cpp", "--n-cpu-moe", "12"]
    };
    let json = expect_cli_env(&page, "llama.cpp on a Mac", &on("m4-max-128gb"), &[]).await?;
    ensure!(json["overhead_bytes"] == 0, "no CUDA context on Metal: {}", json["overhead_bytes"]);
    expect_host_ram(&page, &json).await?;
    let url = page.url().await?;
    ensure!(url.contains("gpu=m4-max-128gb"), "the link keeps the Mac: {url}");
    page.open(&url).await?;
    expect_cli(&page, "the Mac's share link", &on("m4-max-128gb")).await?;
    no_errors(&page, "on a Mac").await?;

    // 3g. vLLM has no Metal backend: the page refuses it on a Mac in the
    // CLI's words.
    let vllm = ["--model", "gpt-oss-120b", "--gpu", "m4-max-128gb", "--engine", "vllm"];
    let refused = cli::estimate(&vllm).err().context("the CLI refuses vLLM on a Mac")?.to_string();
    let reason = refused.split("headroom: ").last().unwrap_or_default().trim().to_owned();
    ensure!(reason.starts_with("vLLM needs CUDA or ROCm"), "the CLI's reason: {refused}");
    page.open(&server.page("model=gpt-oss-120b&gpu=m4-max-128gb&e=vllm")).await?;
    let want = format!("This plan cannot run: {reason}.");
    page.wait_until("the page refuses vLLM on a Mac", async |p: &Page| Ok(p.text("verdict").await? == want)).await?;
    no_errors(&page, "with vLLM on a Mac").await?;

    // 3h. Strix Halo: the GTT pool ROCm allocates from is the GPU side, a
    // HIP context is counted; the host's share as on the Mac.
    page.open(&server.page("model=gpt-oss-120b&w=q4_k_m&gpu=strix-halo-128gb&e=llama.cpp&ncmoe=12")).await?;
    let json = expect_cli_env(&page, "llama.cpp on Strix Halo", &on("strix-halo-128gb"), &[]).await?;
    expect_host_ram(&page, &json).await?;
    no_errors(&page, "on Strix Halo").await?;

    // 4. A plan that does not fit: ranked fixes; applying the first one makes it fit.
    page.open(&server.page("model=llama-3.1-70b&p=4096&n=1024")).await?;
    page.wait_until("fixes are listed", async |p: &Page| p.exists("fix").await).await?;
    page.screenshot("fixes").await?;
    page.click("fix-apply").await?;
    page.wait_until("the applied fix fits", async |p: &Page| {
        Ok(p.attr("verdict", "data-fits").await?.as_deref() == Some("fits"))
    })
    .await?;
    no_errors(&page, "after applying a fix").await?;

    // 5. Diagnose a pasted PyTorch 2.1+ OOM against the default plan, as the CLI does.
    page.open(&server.page("")).await?;
    let fixture = cli::root().join("shared/tests/fixtures/oom/08-modern-basic.txt");
    let text = std::fs::read_to_string(&fixture).with_context(|| format!("{}", fixture.display()))?;
    let json = cli::diagnose(&fixture, &["--model", "llama-3.1-8b"])?;
    let top = json["causes"][0]["id"].as_str().context("a top cause")?.to_owned();
    page.open_details("diagnose").await?;
    page.fill("oom-text", &text).await?;
    page.wait_until("the top cause is the CLI's", async |p: &Page| {
        Ok(p.attr("oom-cause", "data-id").await?.as_deref() == Some(top.as_str()))
    })
    .await?;
    let requested = page.attr("oom-requested", "data-bytes").await?;
    ensure!(requested == Some(json["requested_bytes"].to_string()), "the requested bytes: {requested:?}");
    ensure!(!page.url().await?.contains("oom="), "the pasted text stays out of the link unless asked");
    page.client.execute("document.querySelector('[data-testid=\"diagnose\"]').scrollIntoView();", vec![]).await?;
    page.screenshot("diagnose").await?;
    page.click("oom-share").await?;
    page.wait_until("the error joins the link", async |p: &Page| Ok(p.url().await?.contains("oom="))).await?;
    let url = page.url().await?;
    page.open(&url).await?;
    page.wait_until("the shared error is diagnosed", async |p: &Page| {
        Ok(p.attr("oom-cause", "data-id").await?.as_deref() == Some(top.as_str()))
    })
    .await?;
    no_errors(&page, "in the diagnose view").await?;

    // 5b. An old message with only capacity and allocated (issue 19): never an
    // empty list; the plan it was checked against is named, as in the CLI.
    let fixture = cli::root().join("shared/tests/fixtures/oom/45-legacy-allocated-only.txt");
    let text = std::fs::read_to_string(&fixture).with_context(|| format!("{}", fixture.display()))?;
    let json = cli::diagnose(&fixture, &["--model", "llama-3.1-8b"])?;
    let top = json["causes"][0]["id"].as_str().context("a top cause for the short message")?.to_owned();
    page.open(&server.page("")).await?;
    page.open_details("diagnose").await?;
    page.fill("oom-text", &text).await?;
    page.wait_until("the short message's top cause is the CLI's", async |p: &Page| {
        Ok(p.attr("oom-cause", "data-id").await?.as_deref() == Some(top.as_str()))
    })
    .await?;
    let asked = page.text("oom-checked-against").await?;
    ensure!(asked.contains("Is this the model and workload that ran?"), "names the plan: {asked}");
    ensure!(page.exists("oom-needs").await?, "says which figures would tell more");

    // 5c. A real vLLM start-up log (Qwen2-7B at utilization 0.25) against a
    // vLLM plan: term by term, then what-ifs with the logged figures as facts,
    // row by row as `headroom diagnose --json` gives them.
    let (fixture, text) = startup_fixture("vllm-v1-0101-qwen2-7b-a100-u025")?;
    let json = cli::diagnose(&fixture, &["--model", "qwen2-7b", "--gpu", "a100-80gb-sxm"])?;
    let want: Vec<String> = json["what_ifs"]["rows"]
        .as_array()
        .context("the CLI's what-ifs")?
        .iter()
        .map(|r| format!("{}:{}:{}", r["max_model_len"], r["kv_cache_tokens"], r["max_concurrency_hundredths"]))
        .collect();
    ensure!(want.len() >= 2, "the CLI gives what-ifs: {want:?}");
    paste(&page, &server.page("model=qwen2-7b&gpu=a100-80gb-sxm&e=vllm"), &text).await?;
    let rows = "return [...document.querySelectorAll('[data-testid=\"whatif-row\"]')]\
                .map(r => r.dataset.mml + ':' + r.dataset.tokens + ':' + r.dataset.concurrency);";
    page.wait_until("the page's what-ifs are the CLI's", async |p: &Page| {
        let got = p.client.execute(rows, vec![]).await?;
        Ok(got == serde_json::json!(want))
    })
    .await?;
    ensure!(page.exists("startup-rows").await?, "the log is reconciled term by term");
    page.client.execute("document.querySelector('[data-testid=\"startup-rows\"]').scrollIntoView();", vec![]).await?;
    page.screenshot("startup-log").await?;
    no_errors(&page, "with a pasted start-up log").await?;

    // 5d. A real Ollama log (its runner prints llama.cpp's lines) against a
    // llama.cpp plan: each buffer beside the plan's, as the CLI gives them.
    let (fixture, text) = startup_fixture("ollama-054-llama31-8b-q4km-rtx4090")?;
    let json = cli::diagnose(&fixture, &["--model", "llama-3.1-8b", "--weights", "q4_k_m", "--engine", "llama.cpp"])?;
    let want: Vec<String> = json["buffers"]
        .as_array()
        .context("the CLI's buffers")?
        .iter()
        .map(|b| {
            let predicted = b["predicted_bytes"].as_u64().map_or_else(String::new, |p| p.to_string());
            format!(
                "{}:{}:{}:{predicted}",
                b["device"].as_str().unwrap_or(""),
                b["buffer"].as_str().unwrap_or(""),
                b["logged_bytes"]
            )
        })
        .collect();
    ensure!(want.len() >= 5, "the CLI checks the buffers: {want:?}");
    paste(&page, &server.page("model=llama-3.1-8b&w=q4_k_m&e=llama.cpp"), &text).await?;
    let rows = "return [...document.querySelectorAll('[data-testid=\"buffer-row\"]')]\
                .map(r => [r.dataset.device, r.dataset.buffer, r.dataset.logged, r.dataset.predicted].join(':'));";
    page.wait_until("the page's buffers are the CLI's", async |p: &Page| {
        Ok(p.client.execute(rows, vec![]).await? == serde_json::json!(want))
    })
    .await?;
    let estimate = page.text("ollama-estimate").await?;
    ensure!(estimate.contains("Ollama's estimate: 33 of 33 layers on the GPU"), "Ollama's own estimate: {estimate}");
    no_errors(&page, "with a pasted Ollama log").await?;

    // 5e. SGLang's "KV cache pool is full" warnings while serving: no error,
    // its own cause, the CLI's top cause on the page too.
    let fixture = cli::root().join("shared/tests/fixtures/oom/138-sglang-0518-kv-pool-full-retract-qwen3-4b-4090.txt");
    let text = std::fs::read_to_string(&fixture).with_context(|| format!("{}", fixture.display()))?;
    let json = cli::diagnose(&fixture, &["--model", "llama-3.1-8b", "--engine", "sglang"])?;
    let top = json["causes"][0]["id"].as_str().context("a top cause for the full pool")?.to_owned();
    ensure!(top == "kv_pool_full", "the CLI's top cause for a full pool: {top}");
    paste(&page, &server.page("model=llama-3.1-8b&e=sglang"), &text).await?;
    page.wait_until("the full pool's top cause is the CLI's", async |p: &Page| {
        Ok(p.attr("oom-cause", "data-id").await?.as_deref() == Some(top.as_str()))
    })
    .await?;
    page.client.execute("document.querySelector('[data-testid=\"diagnose\"]').scrollIntoView();", vec![]).await?;
    page.screenshot("pool-full").await?;
    no_errors(&page, "with SGLang's full-pool warnings").await?;

    // 6. Phone width still works with the new panels.
    page.resize(390, 2400).await?;
    page.screenshot("diagnose-phone").await?;
    let overflow =
        page.client.execute("return document.documentElement.scrollWidth > window.innerWidth + 1;", vec![]).await?;
    ensure!(overflow == serde_json::Value::Bool(false), "no sideways scrolling at phone width");
    page.close().await?;
    Ok(())
}

/// A start-up log fixture: its path (for the CLI) and its text (to paste).
fn startup_fixture(name: &str) -> anyhow::Result<(std::path::PathBuf, String)> {
    let path = cli::root().join(format!("shared/tests/fixtures/startup/{name}.txt"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    Ok((path, text))
}

/// Opens the page at `url` and pastes `text` into the diagnose view.
async fn paste(page: &Page, url: &str, text: &str) -> anyhow::Result<()> {
    page.open(url).await?;
    page.open_details("diagnose").await?;
    page.fill("oom-text", text).await
}

//! Issue 34's page as a new user meets it: a laptop's form, the llama.cpp
//! form's `--n-cpu-moe`, `32k` in a knob, the footer's engine, the GPU found
//! by typing, the favicon; and the seven journeys of "Done when" (fp32 7B →
//! fix → Apply, the pasted error with and without a plan, an offline Hub id,
//! 70B NF4 on two GPUs, vLLM 70B FP8 at 32k on one H100 and on a phone,
//! gpt-oss-120b and Qwen3-30B-A3B in llama.cpp with experts on the CPU, the
//! agent's URL without its token) and a context past the model's training,
//! each by its headline, first fix and command.

use anyhow::{Context, ensure};
use fantoccini::Locator;
use serde_json::json;

use crate::browser::{Driver, Page, sel, tools};
use crate::cli;
use crate::page::no_errors;
use crate::server::Server;

async fn js(page: &Page, script: &str) -> anyhow::Result<serde_json::Value> {
    Ok(page.client.execute(script, vec![]).await?)
}

async fn verdict_starts(page: &Page, want: &str) -> anyhow::Result<()> {
    page.wait_until(&format!("the verdict starts {want:?}"), async |p: &Page| {
        Ok(p.text("verdict").await?.starts_with(want))
    })
    .await
}

async fn url_has(page: &Page, want: &str) -> anyhow::Result<()> {
    page.wait_until(&format!("the link carries {want}"), async |p: &Page| Ok(p.url().await?.contains(want))).await
}

/// The first fix's title and code, once the fixes are ranked.
async fn first_fix(page: &Page) -> anyhow::Result<(String, String)> {
    page.wait_until("the fixes are ranked", async |p: &Page| p.exists("fix").await).await?;
    let v = js(
        page,
        "const f = document.querySelector('[data-testid=fix]');\
         return [f.querySelector('strong').textContent, document.getElementById('fix-code-0').textContent];",
    )
    .await?;
    Ok((v[0].as_str().context("title")?.to_owned(), v[1].as_str().context("code")?.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn laptop_form_and_knobs() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1366, 768).await?;
    page.open(&server.page("")).await?;
    page.screenshot("laptop-1366").await?;
    // The sticky form was taller than the window: Engine, GPU and "How many"
    // sat below it, and focus went off-screen.
    for id in ["engine-select", "gpu-select", "gpu-count"] {
        let v = page
            .client
            .execute(
                "const e = document.querySelector(arguments[0]); e.focus(); const r = e.getBoundingClientRect();\
                 return [r.top, r.bottom, innerHeight, document.activeElement === e];",
                vec![json!(sel(id))],
            )
            .await?;
        let (top, bottom, h) = (v[0].as_f64(), v[1].as_f64(), v[2].as_f64().map(|h| h + 1.0));
        ensure!(v[3] == json!(true), "{id} takes focus");
        // Within a pixel: focus scrolls a field to the edge, sub-pixel layout past it.
        ensure!(top >= Some(0.0) && bottom <= h, "at 1366×768 focused {id} is off-screen: {v}");
    }
    ensure!(js(&page, "return !!document.querySelector('link[rel=icon]');").await? == json!(true), "a favicon");
    // The GPU select finds "RTX 4060" by typing (its options started "GeForce").
    let gpu = page.client.find(Locator::Css(&sel("gpu-select"))).await?;
    gpu.send_keys("RTX 4060").await?;
    let picked = js(&page, "return document.querySelector('[data-testid=gpu-select]').value;").await?;
    ensure!(picked == json!("rtx-4060-ti-16gb"), "typing RTX 4060 picks {picked}");

    // llama.cpp: --n-cpu-moe, `all` for --cpu-moe; the footer names the engine.
    page.select("engine-select", "llama.cpp").await?;
    page.wait_until("the footer names llama.cpp", async |p: &Page| Ok(p.text("footer-engine").await? == "llama.cpp"))
        .await?;
    page.fill("knob-ncmoe", "all").await?;
    url_has(&page, "ncmoe=4294967295").await?;
    let shown = js(&page, "return document.querySelector('[data-testid=knob-ncmoe]').value;").await?;
    ensure!(shown == json!("all"), "--cpu-moe shows as all: {shown}");

    // vLLM: max_model_len takes 32k, as the prompt does.
    page.select("engine-select", "vllm").await?;
    page.fill("knob-mml", "32k").await?;
    url_has(&page, "mml=32000").await?;
    ensure!(page.attr("knob-mml", "aria-invalid").await?.as_deref() == Some("false"), "32k is accepted");
    ensure!(page.text("footer-engine").await? == "vLLM", "the footer follows the engine");
    no_errors(&page, "on a laptop").await?;
    page.close().await
}

/// Issue 36: vLLM's data and expert parallelism on the page: two replicas of
/// TP 2 on four H100s hold one pipeline stage each, the link carries the
/// settings, and the plan's terms say how the experts lie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_parallel_journey() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1366, 768).await?;
    page.open(&server.page("model=qwen3-30b-a3b&gpu=h100-sxm&g=4&tp=2&e=vllm")).await?;
    page.wait_until("four GPUs in two stages", async |p: &Page| {
        Ok(js(p, "return document.querySelector('[data-testid=pp]').value;").await? == json!("2"))
    })
    .await?;
    page.fill("knob-dp", "2").await?;
    page.select("knob-ep", "on").await?;
    url_has(&page, "dp=2").await?;
    url_has(&page, "ep=on").await?;
    page.wait_until("one stage per replica", async |p: &Page| {
        Ok(js(p, "return document.querySelector('[data-testid=pp]').value;").await? == json!("1"))
    })
    .await?;
    verdict_starts(&page, "Fits").await?;
    let terms = js(&page, "return document.body.textContent;").await?;
    let terms = terms.as_str().unwrap_or_default();
    for want in ["vLLM data-parallel replicas", "vLLM experts per GPU", "128 experts whole over DP 2 × TP 2 = 4 ranks"]
    {
        ensure!(terms.contains(want), "the page explains {want:?}");
    }
    page.screenshot("data-parallel").await?;
    no_errors(&page, "with data and expert parallelism").await?;
    page.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_34_journeys() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;

    // fp32 7B on a 24 GB card → the first fix loads bf16 → Apply → it fits.
    page.open(&server.page("model=llama-2-7b&w=fp32&gpu=rtx-4090")).await?;
    verdict_starts(&page, "Does not fit at load").await?;
    let (title, code) = first_fix(&page).await?;
    ensure!(title == "Load the weights as bf16", "first fix: {title}");
    ensure!(code.contains("import torch") && code.contains(" dtype=torch.bfloat16"), "its command: {code}");
    page.client.find(Locator::Css(&sel("fix-apply"))).await?.click().await?;
    verdict_starts(&page, "Fits").await?;
    ensure!(page.attr("verdict", "data-fits").await?.as_deref() == Some("fits"), "applied, it fits");
    let kv =
        js(&page, "return document.querySelector('[data-testid=kv-cache-bytes]').previousElementSibling.textContent;")
            .await?;
    ensure!(kv.as_str().is_some_and(|k| k.starts_with("KV cache at ")), "the KV row names its moment: {kv}");
    page.screenshot("journey-fp32-7b-applied").await?;

    // 70B NF4 on two RTX 4090s: the snippet loads NF4, not bf16.
    page.open(&server.page("model=llama-3.1-70b&w=nf4&gpu=rtx-4090&g=2")).await?;
    verdict_starts(&page, "Fits").await?;
    let map = js(&page, "return document.getElementById('device-map-code').textContent;").await?;
    let map = map.as_str().context("the device_map snippet")?;
    ensure!(
        map.contains("BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\"")
            && map.contains("device_map=\"sequential\", max_memory="),
        "the NF4 snippet: {map}"
    );

    // gpt-oss-120b (MXFP4) and Qwen3-30B-A3B in llama.cpp: --fit loads them
    // with experts in host memory; --cpu-moe in the form makes them fit.
    for (query, gguf) in [
        ("model=gpt-oss-120b&w=mxfp4&gpu=rtx-4090&e=llama.cpp", "gpt-oss"),
        ("model=qwen3-30b-a3b&w=q4_k_m&gpu=rtx-3070&e=llama.cpp", "qwen3"),
    ] {
        page.open(&server.page(query)).await?;
        verdict_starts(&page, "Loads with llama.cpp's default --fit").await?;
        let (title, code) = first_fix(&page).await?;
        ensure!(title.starts_with("llama.cpp's --fit (on by default) loads it"), "{gguf} first fix: {title}");
        ensure!(code.starts_with("llama-server -m ") && code.contains("--fit on is the default"), "{gguf}: {code}");
        page.fill("knob-ncmoe", "all").await?;
        verdict_starts(&page, "Fits").await?;
        page.screenshot(&format!("journey-{gguf}-cpu-moe")).await?;
    }

    // Past the trained context: SGLang with a 200k prompt said a green "Fits".
    page.open(&server.page("model=llama-3.1-8b&e=sglang&p=200000&gpu=mi325x")).await?;
    verdict_starts(&page, "Past the model's training: it was trained to 131,072 tokens").await?;
    let class = page.attr("verdict", "class").await?.unwrap_or_default();
    ensure!(!class.contains("fits"), "not green: {class}");
    page.screenshot("journey-past-training").await?;
    no_errors(&page, "in the journeys").await?;
    page.close().await
}

/// The error most people paste: its figures and nothing else.
const BARE_OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB \
                        (GPU 0; 23.69 GiB total capacity; 21.23 GiB already allocated)";

/// Port 9 (discard) on the loopback: refused at once, as a hub the page cannot reach.
const OFFLINE_HUB: &str = "http://127.0.0.1:9";

/// "Diagnose an OOM"'s fixes: (title, what it gives up and saves, code), in order.
async fn oom_fixes(page: &Page) -> anyhow::Result<Vec<(String, String, String)>> {
    page.wait_until("the diagnosis gives fixes", async |p: &Page| p.exists("oom-fix").await).await?;
    let v = js(
        page,
        "return [...document.querySelectorAll('[data-testid=oom-fix]')].map((f, i) => \
         [f.querySelector('strong').textContent, f.querySelector('p.hint').textContent, \
          document.getElementById('oom-fix-code-' + i).textContent]);",
    )
    .await?;
    let rows = v.as_array().context("the fixes")?;
    Ok(rows
        .iter()
        .map(|r| {
            let s = |i: usize| r[i].as_str().unwrap_or_default().to_owned();
            (s(0), s(1), s(2))
        })
        .collect())
}

async fn paste_oom(page: &Page, url: &str) -> anyhow::Result<()> {
    page.open(url).await?;
    page.open_details("diagnose").await?;
    page.fill("oom-text", BARE_OOM).await
}

/// A start-up log pasted into "Diagnose an OOM" on GPT-2's link, once the
/// page plans the log's own model: the note that says which.
async fn paste_log_against_another_model(page: &Page, server: &Server, log: &str) -> anyhow::Result<String> {
    page.open(&server.page("model=gpt2")).await?;
    page.open_details("diagnose").await?;
    page.fill("oom-text", log).await?;
    page.wait_until("the log's own model", async |p: &Page| {
        Ok(p.exists("startup-logged-model").await? && p.exists("startup-rows").await?)
    })
    .await?;
    page.text("startup-logged-model").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pasted_error_journey() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;

    // Against the default plan (Llama 3.1 8B, bf16: 15.70 GiB), a process
    // that held 21.23 GiB ran more than the plan: the notebook's leftovers
    // are named, and no fix claims the 340.96 MiB shortfall as its saving.
    paste_oom(&page, &server.page("")).await?;
    let fixes = oom_fixes(&page).await?;
    let asked = page.text("oom-checked-against").await?;
    ensure!(asked.contains("Llama 3.1 8B"), "names the plan: {asked}");
    ensure!(!fixes.iter().any(|f| f.1.contains("340.96 MiB")), "a shortfall shown as a saving: {fixes:?}");
    let (title, _, code) = &fixes[0];
    ensure!(title.contains("earlier model") || title.contains("session"), "first fix with a plan: {fixes:?}");
    ensure!(code.contains("torch.cuda.empty_cache()"), "its command: {code}");
    page.screenshot("journey-pasted-error-plan").await?;

    // A model that is not a preset (a parameter count, read by the reader
    // bundle): the diagnosis plans it from the page's own reading.
    paste_oom(&page, &server.page("params=3b")).await?;
    page.wait_until("the stand-in's plan", async |p: &Page| {
        Ok(p.exists("oom-checked-against").await?
            && p.text("oom-checked-against").await?.contains("custom 3.00B parameters"))
    })
    .await?;

    // A llama.cpp log (Ollama's runner) that prints its model's metadata,
    // pasted against a link of another model: set against the model it ran
    // (issue 35), term by term.
    let log = include_str!("../../../shared/tests/fixtures/startup/ollama-054-llama31-8b-q4km-rtx4090.txt");
    let note = paste_log_against_another_model(&page, &server, log).await?;
    ensure!(note.contains("the model the log describes"), "{note}");
    page.screenshot("journey-pasted-log-own-model").await?;

    // A vLLM log names its model's repo and its GPU's memory: pasted against
    // another model's link it is planned with that preset on the GPU it
    // names (an H100 by its 79.19 GiB), its KV budget within 0.1 %.
    let log = include_str!("../../../shared/tests/fixtures/startup/vllm-v1-0190-qwen25-7b-h100-debug.txt");
    let note = paste_log_against_another_model(&page, &server, log).await?;
    ensure!(note.contains("Qwen/Qwen2.5-7B-Instruct"), "{note}");
    let taken = page.text("startup-engine").await?;
    ensure!(taken.contains("GPU H100 SXM (79.19 GiB as CUDA reported it)"), "{taken}");
    let kv = page
        .client
        .execute(
            "return document.querySelector('[data-testid=\"startup-row\"][data-term=\"available KV cache memory\"]')\
             .dataset.errorPermille;",
            vec![],
        )
        .await?;
    ensure!(kv.as_str().and_then(|e| e.parse::<i64>().ok()).is_some_and(|e| e.abs() <= 1), "the KV row: {kv}");
    page.client
        .execute("document.querySelector('[data-testid=\"startup-logged-model\"]').scrollIntoView();", vec![])
        .await?;
    page.screenshot("journey-pasted-vllm-log").await?;

    // Without a plan (the link's hub model cannot be fetched): the
    // checklist's fixes in its order, with no figure.
    paste_oom(&page, &server.page(&format!("hf=test-org/offline&hub={OFFLINE_HUB}"))).await?;
    page.wait_until("no model, and Retry", async |p: &Page| {
        Ok(p.text("verdict").await?.contains("No model") && p.attr("hub-failed", "hidden").await?.is_none())
    })
    .await?;
    let fixes = oom_fixes(&page).await?;
    let titles: Vec<&str> = fixes.iter().map(|f| f.0.as_str()).collect();
    ensure!(
        titles.len() >= 4
            && titles[0].starts_with("Load the weights in 8 or 4 bits")
            && titles[1].starts_with("Bound the new tokens")
            && titles[2].starts_with("Free what the session still holds")
            && titles[3].starts_with("Let PyTorch's allocator grow segments"),
        "the checklist's fixes first, in order: {titles:?}"
    );
    ensure!(!fixes.iter().any(|f| f.1.contains("saves")), "no figure without a plan: {fixes:?}");
    ensure!(fixes[0].2.contains("BitsAndBytesConfig(load_in_4bit=True"), "4-bit loading: {}", fixes[0].2);
    ensure!(!page.exists("oom-checked-against").await?, "no plan to name");
    no_errors(&page, "diagnosing the pasted error").await?;
    page.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_32k_on_one_h100() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;
    let query = "model=llama-3.1-70b&w=fp8&gpu=h100-sxm&e=vllm&mml=32768";
    page.open(&server.page(query)).await?;
    verdict_starts(&page, "vLLM refuses to start with --max-model-len 32768: only ").await?;
    let verdict = page.text("verdict").await?;
    ensure!(verdict.contains(" tokens fit"), "how many tokens fit: {verdict}");
    // The fixes that keep the 32k come first (a 4-bit checkpoint, TP 2, a
    // bigger GPU), each with the FP8 and the 32k in its command; the one that
    // cuts the context says so and comes after them.
    first_fix(&page).await?;
    let v = js(
        &page,
        "return [...document.querySelectorAll('[data-testid=fix]')].map((f, i) => \
         [f.querySelector('strong').textContent, document.getElementById('fix-code-' + i).textContent]);",
    )
    .await?;
    let fixes: Vec<(String, String)> = v
        .as_array()
        .context("the fixes")?
        .iter()
        .map(|f| (f[0].as_str().unwrap_or_default().to_owned(), f[1].as_str().unwrap_or_default().to_owned()))
        .collect();
    // Every fix before the first that cuts the context keeps the 32k.
    let cut = fixes.iter().position(|f| !f.1.contains("--max-model-len 32768")).unwrap_or(fixes.len());
    let tp = fixes.iter().position(|f| f.0.starts_with("Use 2 × H100")).with_context(|| format!("TP 2: {fixes:?}"))?;
    ensure!(tp < cut && cut > 1, "the ways that keep the 32k come first: {fixes:?}");
    ensure!(fixes[cut..].iter().all(|f| f.0.starts_with("Limit the context")), "the cuts say so: {fixes:?}");
    let code = &fixes[tp].1;
    ensure!(
        code.contains("--quantization fp8")
            && code.contains("--max-model-len 32768")
            && code.contains("--tensor-parallel-size 2"),
        "TP 2's command: {code}"
    );
    page.screenshot("journey-vllm-32k").await?;

    // On a phone the verdict is one sentence, vLLM's own error folded under
    // it, and it stays on the first screen.
    page.resize(390, 844).await?;
    page.open(&server.page(query)).await?;
    verdict_starts(&page, "vLLM refuses to start").await?;
    let v = js(
        &page,
        "const r = document.querySelector('[data-testid=verdict]').getBoundingClientRect(); \
         const e = document.querySelector('[data-testid=engine-error]'); \
         return [r.bottom, innerHeight, !e || !!e.closest('details:not([open])')];",
    )
    .await?;
    ensure!(v[0].as_f64() <= v[1].as_f64(), "the verdict is below the first screen on a phone: {v}");
    ensure!(v[2] == json!(true), "vLLM's own error is folded: {v}");
    page.screenshot("journey-vllm-32k-phone").await?;
    no_errors(&page, "in the vLLM journey").await?;
    page.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_hub_keeps_the_plan() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2400).await?;
    page.open(&server.page(&format!("model=llama-2-7b&gpu=rtx-4090&hub={OFFLINE_HUB}"))).await?;
    verdict_starts(&page, "Fits").await?;
    let verdict = page.text("verdict").await?;
    page.open_details("hub-details").await?;
    page.fill("hub-id", "test-org/offline").await?;
    page.click("hub-load").await?;
    let failed = async |p: &Page| {
        let status = p.text("model-status").await?;
        Ok(status.contains("Could not reach")
            && status.contains("Kept the plan of Llama 2 7B")
            && p.attr("hub-failed", "hidden").await?.is_none())
    };
    page.wait_until("the failure is said, the plan kept", failed).await?;
    ensure!(page.text("verdict").await? == verdict, "the previous plan is kept");
    ensure!(page.url().await?.contains("model=llama-2-7b"), "the link keeps the previous model");
    // Retry asks again (and fails again, keeping the plan).
    page.click("hub-retry").await?;
    page.wait_until("retried", failed).await?;
    ensure!(page.text("verdict").await? == verdict, "the plan is kept after Retry");
    // The config paste opens, focused.
    page.click("hub-paste-config").await?;
    let focused = js(&page, "return document.activeElement && document.activeElement.id;").await?;
    ensure!(focused == json!("config-text"), "the config paste takes focus: {focused}");
    page.screenshot("journey-offline-hub").await?;
    // Choosing another model clears the failure.
    page.select("model-select", "mistral-7b-v0.3").await?;
    page.wait_until("the failure is gone", async |p: &Page| Ok(p.attr("hub-failed", "hidden").await?.is_some()))
        .await?;
    no_errors(&page, "with an offline hub").await?;
    page.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_url_without_token() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let lab = crate::live::Agent::start("rtx-4090", &crate::live::dist()?, &[]).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 1600).await?;
    page.open(&format!("{}/", lab.origin())).await?;
    page.wait_until("the page says how to connect", async |p: &Page| p.exists("agent-no-token").await).await?;
    let said = page.text("agent-no-token").await?;
    ensure!(said.contains("#token=") && said.contains("Connect to a GPU host"), "how to connect: {said}");
    page.screenshot("journey-agent-no-token").await?;
    // With the token, no such note.
    page.open(&format!("{}/#token={}", lab.origin(), crate::live::TOKEN)).await?;
    page.wait_until("connected", async |p: &Page| {
        Ok(p.attr("live-status", "data-state").await?.as_deref() == Some("live"))
    })
    .await?;
    ensure!(!page.exists("agent-no-token").await?, "no note with the token");
    page.close().await
}

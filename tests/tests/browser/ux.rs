//! The page as a new user meets it (issue 19): on a phone the verdict comes
//! first and nothing overflows; "Diagnose an OOM" and "Live" are within
//! reach of the verdict; an `oom=` link lands on the diagnosis; "Apply"
//! leaves focus on the verdict.

use anyhow::{Context, ensure};
use serde_json::json;

use crate::browser::{Driver, Page, sel, tools};
use crate::cli;
use crate::page::{expect_cli, no_errors};
use crate::server::Server;

async fn js(page: &Page, script: &str) -> anyhow::Result<serde_json::Value> {
    Ok(page.client.execute(script, vec![]).await?)
}

async fn focused(page: &Page) -> anyhow::Result<serde_json::Value> {
    js(page, "return document.activeElement?.dataset.testid ?? document.activeElement?.id ?? null;").await
}

/// The smallest rendered size of the charts' text, in CSS pixels: the
/// computed font size times the SVG's scale (its width over the view box's).
async fn smallest_chart_text(page: &Page) -> anyhow::Result<f64> {
    let v = js(
        page,
        "let min = Infinity; for (const t of document.querySelectorAll('.chart svg text')) {\
           const svg = t.ownerSVGElement; const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;\
           min = Math.min(min, parseFloat(getComputedStyle(t).fontSize) * scale); } return min;",
    )
    .await?;
    v.as_f64().context("a font size")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phone_layout() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(390, 844).await?;
    // A plan that does not fit: fixes, the table and the charts all show.
    page.open(&server.page("model=llama-3.1-70b&gpu=rtx-4090&g=2&p=4096&n=1024")).await?;
    page.wait_until("the fixes are ranked", async |p: &Page| p.exists("fix").await).await?;
    page.screenshot("phone-390").await?;
    page.click("theme-toggle").await?;
    page.screenshot("phone-390-dark").await?;
    page.click("theme-toggle").await?;
    page.click("theme-toggle").await?;
    ensure!(js(&page, "return innerWidth;").await? == json!(390), "a 390 px viewport");
    let (top, height) = {
        let v = js(
            &page,
            "return [document.querySelector('[data-testid=verdict]').getBoundingClientRect().top, innerHeight];",
        )
        .await?;
        (v[0].as_f64().context("top")?, v[1].as_f64().context("height")?)
    };
    ensure!(
        (0.0..height).contains(&top),
        "at 390×844 the verdict starts at {top} px, below the first screen ({height})"
    );
    // Sticky: still on screen after scrolling to the GPU table.
    js(&page, "document.querySelector('[data-testid=gpu-table]').scrollIntoView(); return 0;").await?;
    let v = js(
        &page,
        "const r = document.querySelector('[data-testid=verdict]').getBoundingClientRect(); return [r.top, r.bottom];",
    )
    .await?;
    ensure!(v[0].as_f64() >= Some(0.0) && v[1].as_f64() <= Some(height), "the verdict stays in view: {v}");
    let text = smallest_chart_text(&page).await?;
    ensure!(text >= 11.0 - 0.01, "chart text at 390 px is {text:.1} px");
    // The per-GPU table: a named, keyboard-focusable scrolling region.
    let region = js(
        &page,
        "const t = document.querySelector('[data-testid=gpu-table]').closest('.table-wrap');\
         return [t.tabIndex, t.getAttribute('role'), t.getAttribute('aria-label') || '', t.scrollWidth > t.clientWidth];",
    )
    .await?;
    ensure!(region[0] == json!(0) && region[1] == json!("region"), "the table's scroller is focusable: {region}");
    ensure!(!region[2].as_str().unwrap_or("").is_empty(), "the table's scroller has a name: {region}");

    page.close().await?;
    let page = driver.session(320, 700).await?;
    for query in ["", "model=llama-3.1-70b&gpu=rtx-4090&g=2&p=4096&n=1024"] {
        page.open(&server.page(query)).await?;
        page.open_details("connect-panel").await?;
        page.wait_until("the connect form", async |p: &Page| Ok(p.exists("agent-url").await?)).await?;
        let width = js(&page, "return document.documentElement.scrollWidth;").await?;
        ensure!(width.as_u64() <= Some(320), "at 320 px the page is {width} px wide ({query:?})");
        let text = smallest_chart_text(&page).await?;
        ensure!(text >= 11.0 - 0.01, "chart text at 320 px is {text:.1} px");
    }
    page.screenshot("phone-320").await?;
    page.close().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_within_reach() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1400, 900).await?;
    page.open(&server.page("")).await?;

    // Both tools sit in the header, on the first screen, above the verdict.
    for id in ["nav-diagnose", "nav-live"] {
        let v = js(&page, &format!(
            "const a = document.querySelector('{}').getBoundingClientRect(); const v = document.querySelector('[data-testid=verdict]').getBoundingClientRect(); return [a.bottom, v.top, innerHeight];",
            sel(id)
        ))
        .await?;
        ensure!(
            v[0].as_f64() <= v[1].as_f64() && v[0].as_f64() < v[2].as_f64(),
            "{id} is above the verdict, on screen: {v}"
        );
    }
    page.click("nav-diagnose").await?;
    page.wait_until("the diagnosis opens, its heading focused", async |p: &Page| {
        Ok(p.attr("diagnose", "open").await?.is_some() && focused(p).await? == json!("diagnose-heading"))
    })
    .await?;
    page.click("nav-live").await?;
    page.wait_until("the connect panel opens, its heading focused", async |p: &Page| {
        Ok(p.attr("connect-panel", "open").await?.is_some() && focused(p).await? == json!("connect-heading"))
    })
    .await?;

    // An `oom=` link scrolls to the diagnosis and focuses its heading.
    page.open(&server.page("oom=Tried%20to%20allocate%202.00%20GiB")).await?;
    page.wait_until("the oom= link's diagnosis has focus", async |p: &Page| {
        Ok(p.exists("oom-summary").await? && focused(p).await? == json!("diagnose-heading"))
    })
    .await?;
    let v = js(
        &page,
        "const r = document.getElementById('diagnose-heading').getBoundingClientRect(); return [r.top, innerHeight];",
    )
    .await?;
    ensure!(v[0].as_f64() >= Some(0.0) && v[0].as_f64() < v[1].as_f64(), "the diagnosis heading is on screen: {v}");

    // "Apply to the plan": focus goes to the verdict, and the change is announced.
    page.open(&server.page("model=llama-3.1-70b&gpu=rtx-4090&g=1&p=4096&n=1024")).await?;
    page.wait_until("the fixes are ranked", async |p: &Page| p.exists("fix-apply").await).await?;
    page.click("fix-apply").await?;
    page.wait_until("focus on the verdict after applying a fix", async |p: &Page| {
        Ok(focused(p).await? == json!("verdict") && p.text("answer-announce").await?.starts_with("Applied: "))
    })
    .await?;
    page.close().await?;
    Ok(())
}

/// Token fields read `32k`, `1.5k` and `128K` as the CLI reads its flags (the
/// same text goes to both), and refuse anything else beside the field,
/// keeping the last good value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_fields() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1400, 900).await?;
    page.open(&server.page("")).await?;
    ensure!(
        page.attr("prompt-tokens", "type").await?.as_deref() == Some("text"),
        "a text field with inputmode=numeric"
    );

    page.fill("prompt-tokens", "32k").await?;
    expect_cli(&page, "32k prompt tokens", &["--model", "llama-3.1-8b", "--prompt-tokens", "32k"]).await?;
    ensure!(page.url().await?.contains("p=32000"), "32k is 32,000 tokens: {}", page.url().await?);
    page.fill("max-new-tokens", "1.5k").await?;
    let args = ["--model", "llama-3.1-8b", "--prompt-tokens", "32k", "--max-new-tokens", "1.5k"];
    expect_cli(&page, "1.5k new tokens", &args).await?;
    page.fill("prompt-tokens", "128K").await?;
    let args = ["--model", "llama-3.1-8b", "--prompt-tokens", "128K", "--max-new-tokens", "1.5k"];
    expect_cli(&page, "128K prompt tokens", &args).await?;
    ensure!(page.url().await?.contains("p=131072"), "128K is 131,072 tokens");

    page.fill("prompt-tokens", "abc").await?;
    page.wait_until("the refusal beside the field", async |p: &Page| {
        Ok(p.attr("prompt-tokens", "aria-invalid").await?.as_deref() == Some("true")
            && p.attr("prompt-tokens-error", "hidden").await?.is_none()
            && p.text("prompt-tokens-error").await?.contains("token count"))
    })
    .await?;
    expect_cli(&page, "the last good value stays", &args).await?;
    page.fill("prompt-tokens", "4096").await?;
    page.wait_until("the error clears", async |p: &Page| {
        Ok(p.attr("prompt-tokens", "aria-invalid").await?.as_deref() == Some("false"))
    })
    .await?;
    no_errors(&page, "after token fields").await?;
    page.close().await?;
    Ok(())
}

/// The "more GPUs" fix under transformers carries a per-module `device_map`:
/// it folds (the call first, the map behind a closed toggle), and Copy
/// still takes the whole snippet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_device_map_folds() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(390, 844).await?;
    page.open(&server.page("model=llama-3.1-70b&gpu=rtx-4090&g=1&e=transformers")).await?;
    page.wait_until("the fixes are ranked", async |p: &Page| p.exists("device-map-fold").await).await?;
    let v = js(
        &page,
        "const f = document.querySelector('[data-testid=device-map-fold]'); if (!f) return null;\
         const li = f.closest('li'); const copy = li.querySelector('pre[hidden]');\
         return [f.open, f.querySelector('summary').textContent, f.getBoundingClientRect().height, copy ? copy.textContent : '',\
                 li.querySelector('[data-testid=fix-code]').textContent];",
    )
    .await?;
    ensure!(!v.is_null(), "a folded device_map in the fixes");
    ensure!(v[0] == json!(false), "the map is collapsed by default: {v}");
    ensure!(v[1].as_str().is_some_and(|s| s.contains("modules (GPU 0:")), "the summary says where modules go: {v}");
    ensure!(v[2].as_f64() < Some(80.0), "the folded map is one line: {v}");
    ensure!(
        v[3].as_str().is_some_and(|s| s.contains("device_map={\"model.embed_tokens\": 0")),
        "Copy keeps the map: {v}"
    );
    ensure!(v[4].as_str().is_some_and(|s| s.ends_with("device_map=device_map)")), "the call shows first: {v}");
    page.screenshot("device-map-fold").await?;
    page.close().await?;
    Ok(())
}

/// A page whose origin the agent does not allow (the static server's, with
/// no `--allow-origin`): "refused: origin not allowed", and no more attempts.
/// The page's WebSocket constructor is wrapped to count the attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_origin_stops_retrying() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = crate::live::dist()?;
    let agent = crate::live::Agent::start("rtx-4090", &dist, &[]).await?;
    let server = Server::start(dist, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 1600).await?;
    page.open(&server.page("")).await?;
    js(
        &page,
        "window.__ws = 0; window.WebSocket = new Proxy(WebSocket, {construct(t, a) { window.__ws++; return new t(...a); }}); return 0;",
    )
    .await?;
    page.open_details("connect-panel").await?;
    page.wait_until("the connect form", async |p: &Page| Ok(p.exists("agent-url").await?)).await?;
    page.fill("agent-url", &format!("127.0.0.1:{}", agent.port)).await?;
    page.fill("agent-token", crate::live::TOKEN).await?;
    page.click("agent-connect").await?;
    crate::live::expect_state(&page, "live-host", 0, "refused").await?;
    let status = page.text("live-status").await?;
    ensure!(status.contains("refused: origin not allowed"), "the header says why: {status}");
    ensure!(page.text("host-advice").await?.contains("--allow-origin"), "the advice names the flag");
    let attempts = js(&page, "return window.__ws;").await?;
    ensure!(attempts.as_u64().is_some_and(|n| n >= 1), "the page tried: {attempts}");
    // Longer than the next backoff steps (0.5 s, 1 s, 2 s): no attempt comes.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    ensure!(js(&page, "return window.__ws;").await? == attempts, "the page kept retrying after the refusal");
    ensure!(page.attr("live-status", "data-state").await?.as_deref() == Some("refused"), "still refused");
    ensure!(!page.exists("no-processes").await?, "a refused host does not claim “No process holds GPU memory”");
    page.close().await?;
    Ok(())
}

/// The model field is a combobox: type-ahead, arrows, Enter picks, Escape
/// closes; a Hub id or a model page's URL in the same field loads from the Hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_combobox() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let standin = crate::standin_hub::start(vec![(
        "test-org/tiny",
        crate::standin_hub::Kind::Public,
        crate::checkpoint::repo_files(crate::checkpoint::LLAMA, false),
    )]);
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1400, 900).await?;
    page.open(&server.page(&format!("hub={}", standin.endpoint))).await?;
    let field = page.client.find(fantoccini::Locator::Css(&sel("model-search"))).await?;
    ensure!(page.attr("model-search", "role").await?.as_deref() == Some("combobox"), "role=combobox");

    field.send_keys("qwen 32").await?;
    page.wait_until("the listbox opens", async |p: &Page| {
        Ok(p.attr("model-search", "aria-expanded").await?.as_deref() == Some("true"))
    })
    .await?;
    field.send_keys("\u{E007}").await?;
    page.wait_until("Enter picks a Qwen 32B preset", async |p: &Page| {
        let id = js(p, "return document.querySelector('[data-testid=model-select]').value;").await?;
        Ok(id.as_str().is_some_and(|id| id.starts_with("qwen") && id.contains("32b")))
    })
    .await?;
    ensure!(page.attr("model-search", "aria-expanded").await?.as_deref() == Some("false"), "closed after picking");

    // Arrows move the highlight (aria-activedescendant); Escape closes.
    field.send_keys("llama").await?;
    field.send_keys("\u{E015}").await?;
    ensure!(page.attr("model-search", "aria-activedescendant").await?.as_deref() == Some("preset-opt-1"), "ArrowDown");
    let second = js(&page, "return document.getElementById('preset-opt-1').dataset.id;").await?;
    field.send_keys("\u{E00C}").await?;
    ensure!(page.attr("model-search", "aria-expanded").await?.as_deref() == Some("false"), "Escape closes");
    // ArrowDown reopens it on the same highlight; Enter picks that one.
    field.send_keys("\u{E015}\u{E007}").await?;
    page.wait_until("Enter picks the highlighted option", async |p: &Page| {
        Ok(js(p, "return document.querySelector('[data-testid=model-select]').value;").await? == second)
    })
    .await?;

    // A pasted model page URL (with its /tree/main tail) loads through the Hub stand-in.
    field.send_keys("https://huggingface.co/test-org/tiny/tree/main\u{E007}").await?;
    page.wait_until("the Hub model loads", async |p: &Page| {
        Ok(p.text("model-status").await?.contains("test-org/tiny"))
    })
    .await?;
    ensure!(
        page.url().await?.contains("hf=test-org%2Ftiny") || page.url().await?.contains("hf=test-org/tiny"),
        "hf= in the link"
    );
    no_errors(&page, "after the combobox").await?;
    page.close().await?;
    Ok(())
}

/// Fields that do not apply are hidden: tensor parallel and pipeline stages
/// for one GPU and for llama.cpp (which splits by its own flags).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_fields_only_where_they_apply() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1400, 900).await?;
    for (query, shown) in [("", false), ("g=2", true), ("g=2&e=llama.cpp", false), ("g=4&e=vllm", true)] {
        page.open(&server.page(query)).await?;
        let v =
            js(&page, "const f = document.getElementById('tp'); return f ? f.offsetParent !== null : null;").await?;
        ensure!(v == json!(shown), "`{query}`: the tp field shown = {shown}, got {v}");
    }
    no_errors(&page, "after the split fields").await?;
    page.close().await?;
    Ok(())
}

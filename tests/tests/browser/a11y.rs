//! Accessibility: axe-core (npm's `axe-core`, installed by `cargo xtask
//! e2e`/`test` into `<target>/axe`) injected through WebDriver and run with
//! WCAG 2.0/2.1 A + AA and best practice on five views (default, dark,
//! diagnose open, live mode, phone width); any violation fails the test,
//! listed. By hand: the bar segments' contrast against their card (WCAG
//! 1.4.11 wants 3:1) and the skip link.

use anyhow::{Context, ensure};
use serde_json::{Value, json};

use crate::browser::{Driver, Page, tools};
use crate::cli;
use crate::live::{Agent, TOKEN, dist, expect_state};
use crate::server::Server;

/// `<target>/axe/node_modules/axe-core/axe.min.js`, next to `CARGO_TARGET_TMPDIR`.
fn axe_source() -> anyhow::Result<Option<String>> {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = tmp.parent().context("target dir")?.join("axe/node_modules/axe-core/axe.min.js");
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok(Some(s)),
        Err(_) => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            let why = format!("axe-core is not at {} (`cargo xtask e2e` installs it)", path.display());
            ensure!(!ci, "CI=true and {why}");
            eprintln!("SKIPPED: {why}");
            Ok(None)
        }
    }
}

/// Runs axe on the page as it is now; the violations as one line each.
async fn axe(page: &Page, source: &str) -> anyhow::Result<Vec<String>> {
    page.client.execute(&format!("{source}\n;window.__axe = axe; return true;"), vec![]).await?;
    let result = page
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];\
             window.__axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})\
               .then(r => done(r.violations.map(v => v.impact + ' ' + v.id + ': ' + v.help + ' — ' +\
                  v.nodes.slice(0, 4).map(n => n.target.join(' ')).join(' | ') + (v.nodes.length > 4 ? ' (+' + (v.nodes.length - 4) + ')' : ''))))\
               .catch(e => done(['axe failed: ' + e]));",
            vec![],
        )
        .await?;
    Ok(result.as_array().map(|a| a.iter().map(|v| v.as_str().unwrap_or("?").to_owned()).collect()).unwrap_or_default())
}

/// Fails listing every view's violations together.
fn report(found: &[(&str, Vec<String>)]) -> anyhow::Result<()> {
    for (view, v) in found {
        eprintln!("axe {view}: {} violation(s)", v.len());
    }
    let bad: Vec<String> =
        found.iter().filter(|(_, v)| !v.is_empty()).map(|(view, v)| format!("{view}:\n  {}", v.join("\n  "))).collect();
    ensure!(bad.is_empty(), "axe-core violations:\n{}", bad.join("\n"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axe_static_views() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let Some(source) = axe_source()? else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1400, 900).await?;
    let mut found = Vec::new();

    page.open(&server.page("")).await?;
    found.push(("default", axe(&page, &source).await?));
    // The model combobox open on its matches.
    page.fill("model-search", "qwen").await?;
    page.wait_until("the listbox", async |p: &Page| {
        Ok(p.attr("model-search", "aria-expanded").await?.as_deref() == Some("true"))
    })
    .await?;
    found.push(("combobox open", axe(&page, &source).await?));
    page.fill("model-search", "").await?;

    // The page's own theme switch: system → dark.
    page.click("theme-toggle").await?;
    page.wait_until("the dark theme", async |p: &Page| {
        Ok(p.attr("app", "data-theme").await?.as_deref() == Some("dark"))
    })
    .await?;
    page.screenshot("a11y-dark").await?;
    found.push(("dark", axe(&page, &source).await?));
    page.click("theme-toggle").await?;
    page.click("theme-toggle").await?;

    page.open(&server.page("oom=Tried%20to%20allocate%202.00%20GiB")).await?;
    page.wait_until("the diagnosis", async |p: &Page| Ok(p.exists("oom-summary").await?)).await?;
    found.push(("diagnose", axe(&page, &source).await?));

    page.close().await?;
    let phone = driver.session(390, 844).await?;
    phone.open(&server.page("model=llama-3.1-70b&gpu=rtx-4090&g=2&p=4096&n=1024")).await?;
    found.push(("phone", axe(&phone, &source).await?));
    phone.close().await?;
    report(&found)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axe_live_view() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let Some(source) = axe_source()? else { return Ok(()) };
    let lab = Agent::start("2xl40s", &dist()?, &[]).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1400, 900).await?;
    page.open(&format!("{}/#token={TOKEN}", lab.origin())).await?;
    expect_state(&page, "live-status", 0, "live").await?;
    page.wait_until("a process row", async |p: &Page| {
        Ok(p.client.execute("return document.querySelectorAll('[data-testid=process-row]').length;", vec![]).await?
            != json!(0))
    })
    .await?;
    let mut found = vec![("live", axe(&page, &source).await?)];
    page.close().await?;
    // A GPU card with a finding under its timeline (cause 2, projected).
    let growing = Agent::start("rtx-4090", &dist()?, &["--scenario".into(), "kv-growth".into()]).await?;
    let page = driver.session(1400, 900).await?;
    page.open(&format!("{}/#token={TOKEN}", growing.origin())).await?;
    expect_state(&page, "live-status", 0, "live").await?;
    let found_one = async |p: &Page| Ok(p.exists("live-finding").await?);
    if page.wait_until("a finding", found_one).await.is_err() {
        page.wait_until("a finding, later", found_one).await?;
    }
    found.push(("live finding", axe(&page, &source).await?));
    page.close().await?;
    report(&found)
}

/// sRGB relative luminance contrast of two `rgb(…)` colours (WCAG 2.x).
fn contrast(a: &Value, b: &Value) -> anyhow::Result<f64> {
    let lum = |c: &Value| -> anyhow::Result<f64> {
        let parts: Vec<f64> = c.as_array().context("rgb")?.iter().filter_map(Value::as_f64).collect();
        ensure!(parts.len() == 3, "rgb {c}");
        let lin = |v: f64| {
            let s = v / 255.0;
            if s <= 0.039_28 { s / 12.92 } else { ((s + 0.055) / 1.055).powf(2.4) }
        };
        Ok(0.2126 * lin(parts[0]) + 0.7152 * lin(parts[1]) + 0.0722 * lin(parts[2]))
    };
    let (x, y) = (lum(a)?, lum(b)?);
    Ok((x.max(y) + 0.05) / (x.min(y) + 0.05))
}

/// Each bar segment's fill against the background of the card it sits on
/// (the nearest ancestor with an opaque background), in both themes.
async fn segment_contrasts(page: &Page) -> anyhow::Result<Vec<(String, f64)>> {
    let v = page
        .client
        .execute(
            "const rgb = s => { const m = s.match(/[\\d.]+/g) || []; return {c: m.slice(0, 3).map(Number), a: m.length > 3 ? Number(m[3]) : 1}; };\
             return [...document.querySelectorAll('.seg')].map(seg => {\
               const cs = getComputedStyle(seg);\
               let fill = cs.fill && cs.fill !== 'none' && seg instanceof SVGElement ? cs.fill : cs.backgroundColor;\
               let e = (seg.closest('.bar') || seg).parentElement, bg = null;\
               while (e) { const b = rgb(getComputedStyle(e).backgroundColor); if (b.a > 0.99) { bg = b.c; break; } e = e.parentElement; }\
               return [seg.className.baseVal ?? seg.className, rgb(fill).c, bg || [255, 255, 255]];\
             });",
            vec![],
        )
        .await?;
    let mut out = Vec::new();
    for row in v.as_array().context("segments")? {
        out.push((row[0].as_str().unwrap_or("?").to_owned(), contrast(&row[1], &row[2])?));
    }
    Ok(out)
}

/// Presses one key (WebDriver's key codes: Tab is U+E004, Enter U+E007) wherever focus is.
pub async fn key(page: &Page, code: char) -> anyhow::Result<()> {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let press =
        KeyActions::new("keyboard".into()).then(KeyAction::Down { value: code }).then(KeyAction::Up { value: code });
    page.client.perform_actions(press).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bar_segments_and_skip_link() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, Default::default()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1400, 900).await?;
    page.open(&server.page("")).await?;

    for theme in ["light", "dark"] {
        if theme == "dark" {
            page.click("theme-toggle").await?;
        }
        let segs = segment_contrasts(&page).await?;
        ensure!(segs.len() >= 3, "{theme}: bar segments found: {segs:?}");
        let low: Vec<_> = segs.iter().filter(|(_, c)| *c < 3.0).collect();
        ensure!(low.is_empty(), "{theme}: bar segments under 3:1 against their card: {low:?}");
    }

    // The first Tab lands on "Skip to the answer", which moves focus to the verdict.
    let first = page
        .client
        .execute(
            "const f = [...document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]')]\
               .filter(e => e.tabIndex >= 0 && !e.disabled)[0]; return f ? f.textContent.trim() : null;",
            vec![],
        )
        .await?;
    ensure!(first == json!("Skip to the answer"), "the first focusable element: {first}");
    // By keyboard, as the person who needs it would: Tab from the top, then Enter.
    // A fresh load: the theme clicks above moved the sequential focus starting point.
    page.open(&server.page("")).await?;
    key(&page, '\u{E004}').await?;
    let active = page.client.execute("return document.activeElement?.dataset.testid ?? null;", vec![]).await?;
    ensure!(active == json!("skip-link"), "the first Tab lands on the skip link: {active}");
    key(&page, '\u{E007}').await?;
    let focused = page.client.execute("return document.activeElement?.dataset.testid ?? null;", vec![]).await?;
    ensure!(focused == json!("verdict"), "the skip link moves focus to the verdict: {focused}");
    page.close().await?;
    Ok(())
}

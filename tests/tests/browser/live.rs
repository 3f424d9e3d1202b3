//! Live mode end to end: the real agent (`headroom serve --simulate`, started
//! here on free ports with a known token and `--web-dir dist`) serves the
//! page; headless Chromium opens the URL the agent prints (`#token=…`) and
//! the page connects by itself. One browser session walks through
//! connecting, cards, processes, the timeline, "fits now", a probe, a second
//! host, a wrong token, and an agent restart.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::json;

use crate::browser::{Driver, Page, sel, tools};
use crate::cli;

pub const TOKEN: &str = "e2e-live-token-0123456789";

/// One `headroom serve` process; killed on drop.
#[derive(Debug)]
pub struct Agent {
    child: Option<Child>,
    pub port: u16,
    args: Vec<String>,
}

pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Agent {
    pub async fn start(simulate: &str, dist: &Path, extra: &[String]) -> anyhow::Result<Self> {
        let port = free_port()?;
        let mut args: Vec<String> =
            ["serve", "--simulate", simulate, "--token", TOKEN, "--web-dir"].iter().map(|s| (*s).to_owned()).collect();
        args.push(dist.display().to_string());
        args.push("--bind".into());
        args.push(format!("127.0.0.1:{port}"));
        args.extend(extra.iter().cloned());
        let mut agent = Self { child: None, port, args };
        agent.restart().await?;
        Ok(agent)
    }

    /// Starts (again) on the same port.
    async fn restart(&mut self) -> anyhow::Result<()> {
        let child = Command::new(cli::headroom()?)
            .args(&self.args)
            .env("HEADROOM_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting headroom serve")?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                bail!("headroom serve did not listen on port {}", self.port);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `HEADROOM_E2E_DIST` (a bundle built elsewhere), else the workspace's `dist/`.
pub fn dist() -> anyhow::Result<PathBuf> {
    match std::env::var_os("HEADROOM_E2E_DIST") {
        Some(d) => Ok(PathBuf::from(d)),
        None => cli::dist(),
    }
}

pub async fn count(page: &Page, testid: &str) -> anyhow::Result<u64> {
    let v =
        page.client.execute("return document.querySelectorAll(arguments[0]).length;", vec![json!(sel(testid))]).await?;
    v.as_u64().context("a count")
}

/// `data-state` of the n-th element with this test id.
async fn nth_attr(page: &Page, testid: &str, n: usize, name: &str) -> anyhow::Result<Option<String>> {
    let v = page
        .client
        .execute(
            "const e = document.querySelectorAll(arguments[0])[arguments[1]]; return e ? e.getAttribute(arguments[2]) : null;",
            vec![json!(sel(testid)), json!(n), json!(name)],
        )
        .await?;
    Ok(v.as_str().map(str::to_owned))
}

/// How many readings the first GPU's timeline holds.
async fn points(page: &Page) -> anyhow::Result<u64> {
    Ok(page.attr("live-timeline", "data-points").await?.unwrap_or_default().parse().unwrap_or(0))
}

/// Scrolls the element with this test id to the top, then saves a screenshot.
async fn shot(page: &Page, testid: &str, name: &str) -> anyhow::Result<()> {
    page.client
        .execute("document.querySelector(arguments[0])?.scrollIntoView({block: 'start'});", vec![json!(sel(testid))])
        .await?;
    page.screenshot(name).await?;
    Ok(())
}

pub async fn expect_state(page: &Page, testid: &str, n: usize, want: &str) -> anyhow::Result<()> {
    let what = format!("{testid}[{n}] is {want}");
    page.wait_until(&what, async |p: &Page| Ok(nth_attr(p, testid, n, "data-state").await?.as_deref() == Some(want)))
        .await
}

/// The token must never reach the address bar, the share link or localStorage.
async fn token_stays_private(page: &Page, when: &str) -> anyhow::Result<()> {
    let url = page.url().await?;
    let share = page
        .client
        .execute("return document.querySelector(arguments[0]).value;", vec![json!(sel("share-url"))])
        .await?;
    let stored = page.client.execute("return localStorage.getItem('headroom.agents');", vec![]).await?;
    ensure!(!url.contains(TOKEN) && !url.contains("token="), "{when}: the address bar holds the token: {url}");
    ensure!(!share.to_string().contains(TOKEN), "{when}: the share link holds the token: {share}");
    ensure!(stored.is_null(), "{when}: localStorage holds {stored} without “remember”");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_mode() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = dist()?;
    let mut lab1 = Agent::start("2xl40s", &dist, &[]).await?;
    let lab2 = Agent::start("rtx-4090", &dist, &["--allow-origin".into(), lab1.origin()]).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2600).await?;

    // 1. The page served by the agent connects by itself with the printed URL's token.
    page.open(&format!("{}/#token={TOKEN}", lab1.origin())).await?;
    expect_state(&page, "live-status", 0, "live").await?;
    token_stays_private(&page, "after connecting").await?;
    page.wait_until("two GPU cards", async |p: &Page| Ok(count(p, "live-gpu").await? == 2)).await?;
    ensure!(page.exists("live-simulated").await?, "the simulated agent is labelled");

    // 2. Cards, processes and timelines update (the simulated server loads its weights).
    let first = page.text("live-gpu-memory").await?;
    page.wait_until("the memory reading changes", async |p: &Page| Ok(p.text("live-gpu-memory").await? != first))
        .await?;
    page.wait_until("a process row", async |p: &Page| Ok(count(p, "process-row").await? >= 1)).await?;
    let before = points(&page).await?;
    page.wait_until("the timeline grows", async |p: &Page| Ok(points(p).await? >= before + 2)).await?;
    ensure!(page.exists("live-balance").await?, "two GPUs: the balance view");

    // 3. Plan against reality: the GPU input takes the live GPU, "fits now" answers.
    ensure!(!page.exists("verdict-now").await?, "no live verdict before a GPU is picked");
    page.click("use-gpu").await?;
    page.wait_until("fits now", async |p: &Page| {
        Ok(p.attr("verdict-now", "data-fits").await?.is_some_and(|v| v == "yes" || v == "no"))
    })
    .await?;
    let now = page.text("verdict-now").await?;
    ensure!(now.starts_with("Fits now") || now.starts_with("Does not fit now"), "fits-now text: {now}");
    let gpu = page
        .client
        .execute("return document.querySelector(arguments[0]).value;", vec![json!(sel("gpu-select"))])
        .await?;
    ensure!(gpu == json!("l40s"), "the GPU input took the live GPU: {gpu}");
    ensure!(page.exists("now-bar").await?, "the plan over the real free memory");
    shot(&page, "verdict", "live-verdict-now").await?;
    shot(&page, "live", "live").await?;

    // 4. A probe of a small plan runs to completion on the simulated GPU.
    page.select("model-select", "llama-3.2-1b").await?;
    ensure!(page.exists("probe-limits").await?, "the agent's probe limits are shown");
    page.click("probe-start").await?;
    page.wait_until("the probe's result", async |p: &Page| Ok(p.exists("probe-result").await?)).await?;
    let result = page.text("probe-result").await?;
    ensure!(result.contains("fits on GPU 0 for real"), "probe result: {result}");
    if page.exists("probe-use-context").await? {
        page.click("probe-use-context").await?;
        page.wait_until("the measured context term", async |p: &Page| Ok(p.exists("context-override").await?)).await?;
    }
    shot(&page, "probe-panel", "live-probe").await?;
    // Checking the plan on GPU 1 moves the probe's GPU select there too.
    page.client.execute("document.querySelectorAll(arguments[0])[1].click();", vec![json!(sel("use-gpu"))]).await?;
    page.wait_until("the probe follows GPU 1", async |p: &Page| {
        Ok(p.client
            .execute("return document.querySelector(arguments[0]).value;", vec![json!(sel("probe-gpu"))])
            .await?
            == json!("1"))
    })
    .await?;

    // 5. A second host, through the connect form (another origin: it allows this one).
    page.open_details("connect-panel").await?;
    page.fill("agent-url", &format!("127.0.0.1:{}", lab2.port)).await?;
    page.fill("agent-token", TOKEN).await?;
    page.click("agent-connect").await?;
    page.wait_until("two live hosts", async |p: &Page| {
        Ok(count(p, "live-host").await? == 2
            && nth_attr(p, "live-host", 1, "data-state").await?.as_deref() == Some("live"))
    })
    .await?;
    page.wait_until("three GPU cards", async |p: &Page| Ok(count(p, "live-gpu").await? == 3)).await?;
    ensure!(page.text("live-status").await?.contains("2 hosts"), "the header counts the hosts");

    // 6. A wrong token is refused, with the agent's reason.
    page.fill("agent-url", &format!("127.0.0.1:{}", lab2.port)).await?;
    page.fill("agent-token", "wrong-token-0123456789").await?;
    page.click("agent-connect").await?;
    expect_state(&page, "live-host", 1, "refused").await?;
    expect_state(&page, "live-status", 0, "refused").await?;
    let advice = page.text("host-advice").await?;
    ensure!(advice.contains("token"), "the refusal says why: {advice}");
    shot(&page, "live", "live-refused").await?;
    page.client
        .execute("document.querySelectorAll(arguments[0])[1]?.click();", vec![json!(sel("host-remove"))])
        .await?;
    page.wait_until("one host again", async |p: &Page| Ok(count(p, "live-host").await? == 1)).await?;

    // 7. The agent stops: reconnecting with backoff; it comes back on the same port: live again.
    lab1.stop();
    expect_state(&page, "live-status", 0, "reconnecting").await?;
    page.wait_until("the process list says it is not live", async |p: &Page| Ok(p.exists("processes-offline").await?))
        .await?;
    ensure!(!page.exists("no-processes").await?, "disconnected: not “No process holds GPU memory”");
    shot(&page, "live", "live-reconnecting").await?;
    lab1.restart().await?;
    expect_state(&page, "live-status", 0, "live").await?;
    page.wait_until("cards after the restart", async |p: &Page| Ok(count(p, "live-gpu").await? == 2)).await?;
    token_stays_private(&page, "at the end").await?;

    page.close().await?;
    Ok(())
}

/// Whether the page fetched the live bundle (`live_bg.wasm`).
async fn live_bundle_fetched(page: &Page) -> anyhow::Result<bool> {
    let v = page
        .client
        .execute("return performance.getEntriesByType('resource').some(e => e.name.includes('live_bg.wasm'));", vec![])
        .await?;
    Ok(v.as_bool().unwrap_or(false))
}

/// Live mode is a bundle of its own: a page opened without `#token=` (and
/// with no agent in this tab's storage) does not fetch it; opening "Connect
/// to a GPU host" does, and the form connects; a reload reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_mode_loads_on_demand() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let dist = dist()?;
    let lab = Agent::start("rtx-4090", &dist, &[]).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 1600).await?;

    page.open(&format!("{}/", lab.origin())).await?;
    ensure!(nth_attr(&page, "live-status", 0, "data-state").await?.as_deref() == Some("none"), "not connected");
    ensure!(!live_bundle_fetched(&page).await?, "the first load fetched the live bundle");
    ensure!(!page.exists("agent-url").await?, "the connect form comes with the live bundle");

    page.open_details("connect-panel").await?;
    page.wait_until("the connect form", async |p: &Page| Ok(p.exists("agent-url").await?)).await?;
    ensure!(live_bundle_fetched(&page).await?, "opening the panel fetched the live bundle");
    page.fill("agent-token", TOKEN).await?;
    page.click("agent-connect").await?;
    expect_state(&page, "live-status", 0, "live").await?;
    page.wait_until("one GPU card", async |p: &Page| Ok(count(p, "live-gpu").await? == 1)).await?;
    token_stays_private(&page, "after connecting by hand").await?;

    // A reload reconnects by itself (this tab's sessionStorage): the bundle loads at once.
    page.open(&format!("{}/", lab.origin())).await?;
    expect_state(&page, "live-status", 0, "live").await?;

    page.close().await?;
    Ok(())
}

/// The agent's diagnosis on the page: a simulated notebook whose memory
/// climbs while it generates (`--scenario kv-growth`) gets the checklist's
/// cause 2 under its timeline, marked where it was found and projected to
/// the card's capacity, with the page's plan's figures beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_findings() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let lab = Agent::start("rtx-4090", &dist()?, &["--scenario".into(), "kv-growth".into()]).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1366, 768).await?;
    page.open(&format!("{}/?model=llama-2-7b&gpu=rtx-4090#token={TOKEN}", lab.origin())).await?;
    expect_state(&page, "live-status", 0, "live").await?;
    // The climb starts 6 s after the agent does and is found within 10 s.
    let found = async |p: &Page| Ok(p.exists("live-finding").await?);
    if page.wait_until("a finding", found).await.is_err() {
        page.wait_until("a finding, later", found).await?;
    }
    ensure!(nth_attr(&page, "live-finding", 0, "data-cause").await?.as_deref() == Some("growing"), "cause 2");
    ensure!(page.exists("live-projection").await?, "the climb projected to capacity");
    ensure!(page.exists("live-finding-mark").await?, "the timeline marks where it was found");
    let text = page.text("live-finding").await?;
    ensure!(text.contains("2. Growing during generation"), "{text}");
    ensure!(text.contains("Your plan:") && text.contains("512.00 KiB of KV cache per token"), "{text}");
    shot(&page, "live-findings", "live-finding").await?;
    page.resize(390, 844).await?;
    shot(&page, "live-findings", "live-finding-phone").await?;
    // A model that is not a preset (a parameter count, read by the reader
    // bundle): live mode takes the page's own reading with the plan. The
    // tab knows the agent, so the page reconnects by itself.
    page.open(&format!("{}/?params=3b&gpu=rtx-4090", lab.origin())).await?;
    page.wait_until("the stand-in's figures beside the finding", async |p: &Page| {
        Ok(p.exists("live-finding").await? && p.text("live-finding").await?.contains("Your plan:"))
    })
    .await?;
    page.close().await?;
    Ok(())
}

/// Bytes over the wire for everything the page has fetched so far:
/// `transferSize` of the navigation and every resource (Resource Timing).
async fn transferred(page: &Page) -> anyhow::Result<u64> {
    let v = page
        .client
        .execute(
            "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))\
             .reduce((sum, e) => sum + (e.transferSize || 0), 0);",
            vec![],
        )
        .await?;
    v.as_u64().context("a byte count")
}

/// The agent serves the page as a static host should (issue 38): the first
/// visit with live mode (web + live bundles) comes precompressed, and a
/// second visit revalidates every file with a 304.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_page_is_compressed_and_revalidated() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let lab = Agent::start("rtx-4090", &dist()?, &[]).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 900).await?;
    page.open(&format!("{}/#token={TOKEN}", lab.origin())).await?;
    expect_state(&page, "live-status", 0, "live").await?;
    page.wait_until("one GPU card", async |p: &Page| Ok(count(p, "live-gpu").await? == 1)).await?;
    let first = transferred(&page).await?;
    ensure!(first > 100_000 && first < 600_000, "the first visit (web + live) moved {first} B");
    page.client.refresh().await?;
    expect_state(&page, "live-status", 0, "live").await?;
    page.wait_until("one GPU card again", async |p: &Page| Ok(count(p, "live-gpu").await? == 1)).await?;
    let second = transferred(&page).await?;
    ensure!(second < 5_000, "the second visit moved {second} B (first {first} B)");
    eprintln!("the agent's page: first visit {first} B, second {second} B");
    page.close().await?;
    Ok(())
}

//! Headless Chromium through chromedriver, and a page object for the calculator.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// Where the browser and its driver are, if installed.
#[derive(Debug, Clone)]
pub struct Tools {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|dir| names.iter().map(move |n| dir.join(n))).find(|p| p.is_file())
}

/// The tools, or `None` after printing why the browser tests are skipped.
/// In CI (`CI=true`) a missing tool is an error instead.
pub fn tools() -> Option<Tools> {
    let chromium = which(&["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]);
    let chromedriver = which(&["chromedriver"]);
    match (chromium, chromedriver) {
        (Some(chromium), Some(chromedriver)) => Some(Tools { chromium, chromedriver }),
        (c, d) => {
            let why = format!(
                "browser tests need chromium ({}) and chromedriver ({}): apt-get install -y chromium chromium-driver, or run `cargo xtask e2e`",
                if c.is_some() { "found" } else { "missing" },
                if d.is_some() { "found" } else { "missing" }
            );
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(!ci, "CI=true and {why}");
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

/// A running chromedriver; killed on drop.
#[derive(Debug)]
pub struct Driver {
    child: Child,
    pub url: String,
    tools: Tools,
    profiles: Vec<PathBuf>,
}

impl Driver {
    pub async fn start(tools: &Tools) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(&tools.chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting chromedriver")?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("chromedriver did not listen on port {port}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Self { child, url: format!("http://127.0.0.1:{port}"), tools: tools.clone(), profiles: Vec::new() })
    }

    /// A fresh browser session (its own profile directory) at `width`×`height`
    /// (a phone's viewport under 500 px: see below).
    pub async fn session(&mut self, width: u32, height: u32) -> anyhow::Result<Page> {
        // Unique across the tests of this process (they run in parallel, each with its own
        // driver): Chromium instances that share a profile directory share one browser.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let profile = std::env::temp_dir().join(format!("headroom-e2e-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        let args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-background-networking".into(),
            "--no-first-run".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--hide-scrollbars".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.display()),
        ];
        self.profiles.push(profile);
        let mut options = json!({ "binary": self.tools.chromium.display().to_string(), "args": args });
        // Headless Chromium keeps windows at least 500 px wide: a phone's
        // width takes the device emulation (its viewport, as DevTools does).
        if width < 500 {
            options["mobileEmulation"] =
                json!({ "deviceMetrics": { "width": width, "height": height, "pixelRatio": 1.0 } });
        }
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), options);
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .context("opening a chromedriver session")?;
        Ok(Page { client })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for p in &self.profiles {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// The calculator page, selected by `data-testid` only.
#[derive(Debug)]
pub struct Page {
    pub client: Client,
}

pub fn sel(testid: &str) -> String {
    format!("[data-testid=\"{testid}\"]")
}

impl Page {
    /// Opens `url` and waits until the verdict is no longer pending.
    pub async fn open(&self, url: &str) -> anyhow::Result<()> {
        self.client.goto(url).await?;
        self.wait_until("the page renders a verdict", async |p: &Page| {
            Ok(p.attr("verdict", "data-fits").await?.is_some_and(|v| v != "pending"))
        })
        .await
    }

    pub async fn wait_until<F>(&self, what: &str, mut ready: F) -> anyhow::Result<()>
    where
        F: AsyncFnMut(&Self) -> anyhow::Result<bool>,
    {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if ready(self).await.unwrap_or(false) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let verdict = self.text("verdict").await.unwrap_or_default();
                let errors = self.errors().await.unwrap_or_default();
                let shot = self.screenshot("failure").await.map(|p| p.display().to_string()).unwrap_or_default();
                bail!("timed out waiting until {what} (verdict: {verdict:?}, errors: {errors:?}, screenshot: {shot})");
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    }

    /// An attribute of the element with this test id (`None` if absent).
    pub async fn attr(&self, testid: &str, name: &str) -> anyhow::Result<Option<String>> {
        let v = self
            .client
            .execute(
                "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
                vec![json!(sel(testid)), json!(name)],
            )
            .await?;
        Ok(v.as_str().map(str::to_owned))
    }

    pub async fn text(&self, testid: &str) -> anyhow::Result<String> {
        let v = self
            .client
            .execute(
                "const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;",
                vec![json!(sel(testid))],
            )
            .await?;
        v.as_str().map(str::to_owned).with_context(|| format!("no element {testid}"))
    }

    pub async fn exists(&self, testid: &str) -> anyhow::Result<bool> {
        Ok(self.client.execute("return !!document.querySelector(arguments[0]);", vec![json!(sel(testid))]).await?
            == Value::Bool(true))
    }

    /// The exact number behind a figure (`data-bytes`).
    pub async fn figure(&self, testid: &str) -> anyhow::Result<u64> {
        let v = self.attr(testid, "data-bytes").await?.with_context(|| format!("no figure {testid}"))?;
        Ok(v.parse()?)
    }

    pub async fn figures(&self, ids: &[&str]) -> anyhow::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for id in ids {
            out.push(((*id).to_owned(), self.figure(id).await?));
        }
        Ok(out)
    }

    /// Picks an option the way a person does (WebDriver click on the option).
    pub async fn select(&self, testid: &str, value: &str) -> anyhow::Result<()> {
        let el = self.client.find(Locator::Css(&sel(testid))).await?;
        el.select_by_value(value).await?;
        Ok(())
    }

    /// Types into a field: sets its value and fires `input` and `change`.
    pub async fn fill(&self, testid: &str, value: &str) -> anyhow::Result<()> {
        self.client
            .execute(
                "const e = document.querySelector(arguments[0]); e.value = arguments[1];\
                 e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));",
                vec![json!(sel(testid)), json!(value)],
            )
            .await?;
        Ok(())
    }

    pub async fn click(&self, testid: &str) -> anyhow::Result<()> {
        self.client.find(Locator::Css(&sel(testid))).await?.click().await?;
        Ok(())
    }

    /// Opens a `<details>` disclosure by clicking its summary.
    pub async fn open_details(&self, testid: &str) -> anyhow::Result<()> {
        self.client.find(Locator::Css(&format!("{} > summary", sel(testid)))).await?.click().await?;
        Ok(())
    }

    /// Errors the page logged since it loaded.
    pub async fn errors(&self) -> anyhow::Result<Vec<String>> {
        let v = self.client.execute("return window.__errors || ['error hook missing'];", vec![]).await?;
        Ok(v.as_array().map(|a| a.iter().map(|e| e.as_str().unwrap_or("?").to_owned()).collect()).unwrap_or_default())
    }

    pub async fn url(&self) -> anyhow::Result<String> {
        Ok(self.client.current_url().await?.to_string())
    }

    /// Saves a PNG of the whole page under `target/screenshots/`.
    pub async fn screenshot(&self, name: &str) -> anyhow::Result<PathBuf> {
        let png = self.client.screenshot().await?;
        let dir = crate::cli::root().join("target").join("screenshots");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png)?;
        Ok(path)
    }

    pub async fn resize(&self, width: u32, height: u32) -> anyhow::Result<()> {
        self.client.set_window_size(width, height).await?;
        Ok(())
    }

    pub async fn close(self) -> anyhow::Result<()> {
        self.client.close().await?;
        Ok(())
    }
}

/// A DevTools command through chromedriver's `goog/cdp/execute` endpoint
/// (`Performance.getMetrics` for the benchmark's page work).
#[derive(Debug)]
pub struct Cdp {
    pub cmd: &'static str,
    pub params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/goog/cdp/execute", session_id.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({ "cmd": self.cmd, "params": self.params }).to_string()))
    }
}

impl Page {
    /// Chromium's cumulative counters (`Performance.getMetrics`), by name;
    /// durations in seconds. `Performance.enable` first.
    pub async fn metrics(&self) -> anyhow::Result<std::collections::HashMap<String, f64>> {
        let reply = self.client.issue_cmd(Cdp { cmd: "Performance.getMetrics", params: json!({}) }).await?;
        let list = reply.get("metrics").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(list.iter().filter_map(|m| Some((m.get("name")?.as_str()?.to_owned(), m.get("value")?.as_f64()?))).collect())
    }
}

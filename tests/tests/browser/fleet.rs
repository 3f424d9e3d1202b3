//! Fleets end to end: a real Prometheus server (Debian's `prometheus`,
//! started here on loopback, a free port and a temporary data directory,
//! scraping every second) scrapes three simulated agents with their token.
//! Then the queries of dcgm-exporter's own Grafana dashboard and of
//! `deploy/grafana/headroom.json` must return data, and the example alert
//! rules load; the first agent relays the fleet (`--prometheus`), and its
//! page's fleet view in Chromium shows every GPU of the three and where the
//! plan fits; stopping one agent marks its GPUs stale, stopping the relaying
//! one leaves the last figures, said to be the last.
//!
//! Without `prometheus` the test prints why and passes, unless `CI=true`
//! (`cargo xtask test` installs it).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use crate::browser::{Driver, Page, sel, tools};
use crate::cli;
use crate::live::{Agent, TOKEN, count, dist, free_port};

/// A Prometheus server; killed (and its data removed) on drop.
struct Prometheus {
    child: Child,
    addr: String,
    dir: PathBuf,
}

impl Prometheus {
    /// Listens on `port` and scrapes the agents on `targets` every second.
    fn start_on(port: u16, targets: &[u16]) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("headroom-e2e-prometheus-{}-{port}", std::process::id()));
        std::fs::create_dir_all(dir.join("data"))?;
        std::fs::write(dir.join("token"), TOKEN)?;
        std::fs::copy(cli::root().join("deploy/prometheus/headroom-rules.yml"), dir.join("headroom-rules.yml"))?;
        let list: Vec<String> = targets.iter().map(|p| format!("\"127.0.0.1:{p}\"")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files: [headroom-rules.yml]\n\
             scrape_configs:\n  - job_name: headroom\n    authorization:\n      type: Bearer\n      credentials_file: {}\n\
             \x20   static_configs:\n      - targets: [{}]\n",
            dir.join("token").display(),
            list.join(", ")
        );
        std::fs::write(dir.join("prometheus.yml"), config)?;
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting prometheus")?;
        let prom = Self { child, addr, dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&prom.addr, "/-/ready", None).map(|r| r.0).ok() != Some(200) {
            ensure!(Instant::now() < deadline, "prometheus did not become ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(prom)
    }

    /// An instant query's result vector.
    fn query(&self, promql: &str) -> anyhow::Result<Vec<Value>> {
        let q: String = form_urlencoded::byte_serialize(promql.as_bytes()).collect();
        let (status, body) = get(&self.addr, &format!("/api/v1/query?query={q}"), None)?;
        let v: Value = serde_json::from_str(&body).with_context(|| format!("{promql}: {body}"))?;
        ensure!(status == 200 && v["status"] == "success", "{promql}: HTTP {status}: {body}");
        Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
    }

    /// Grafana's `label_values(metric, label)`, as the series API answers it.
    fn label_values(&self, metric: &str, label: &str) -> anyhow::Result<Vec<Value>> {
        let m: String = form_urlencoded::byte_serialize(metric.as_bytes()).collect();
        let (_, body) = get(&self.addr, &format!("/api/v1/label/{label}/values?match[]={m}"), None)?;
        let v: Value = serde_json::from_str(&body)?;
        Ok(v["data"].as_array().cloned().unwrap_or_default())
    }

    /// Waits until `promql` returns `n` series.
    async fn wait_for(&self, promql: &str, n: usize) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.query(promql)?.len();
            if got == n {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{promql}: {got} series, not {n}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A bare HTTP/1.0 GET on loopback: status and body.
fn get(addr: &str, path: &str, token: Option<&str>) -> anyhow::Result<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((status, body))
}

fn prometheus_installed() -> bool {
    let found = Command::new("prometheus").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "CI=true and prometheus is missing (cargo xtask test installs it)");
        eprintln!("SKIPPED: the fleet test needs prometheus: apt-get install -y prometheus, or run `cargo xtask test`");
    }
    found
}

/// The queries of dcgm-exporter's dashboard: all but the profiling one
/// (DCGM_FI_PROF_*, which needs DCGM itself) return data for every agent.
fn dcgm_dashboard(prom: &Prometheus, agents: usize, gpus: usize) -> anyhow::Result<()> {
    let fixture = cli::root().join("agent/tests/it/fixtures/dcgm-exporter-dashboard-queries.tsv");
    let text = std::fs::read_to_string(fixture)?;
    let mut panels = 0;
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (title, expr) = line.split_once('\t').context("title<TAB>query")?;
        if let Some(var) = title.strip_prefix("variable ") {
            let inner = expr.trim_start_matches("label_values(").trim_end_matches(')');
            let (metric, label) = inner.split_once(", ").context("label_values(metric, label)")?;
            let values = prom.label_values(metric, label)?;
            let want = if var == "instance" { agents } else { 1 };
            ensure!(values.len() >= want, "variable {var}: {values:?}");
            continue;
        }
        let expr = expr.replace("$instance", ".+").replace("$gpu", ".+");
        let result = prom.query(&expr)?;
        if expr.contains("DCGM_FI_PROF_") {
            ensure!(result.is_empty(), "{title}: the agent exports no profiling fields");
            continue;
        }
        let aggregated = expr.starts_with("avg(") || expr.starts_with("sum(");
        ensure!(result.len() == if aggregated { 1 } else { gpus }, "{title}: {expr} gave {result:?}");
        panels += 1;
    }
    ensure!(panels == 7, "{panels} of dcgm-exporter's panels checked");
    Ok(())
}

/// Every panel of Headroom's own dashboard returns data (the pod panel
/// only where processes run in pods: none do in the simulation).
fn headroom_dashboard(prom: &Prometheus) -> anyhow::Result<()> {
    let dash: Value =
        serde_json::from_str(&std::fs::read_to_string(cli::root().join("deploy/grafana/headroom.json"))?)?;
    for panel in dash["panels"].as_array().context("panels")? {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().context("targets")? {
            let expr = target["expr"].as_str().context("expr")?.replace("$host", ".+");
            let result = prom.query(&expr)?;
            let may_be_empty = title.contains("per pod") || title.contains("Leftovers");
            ensure!(may_be_empty || !result.is_empty(), "{title}: {expr} returned nothing");
        }
    }
    Ok(())
}

async fn attrs(page: &Page, testid: &str, name: &str) -> anyhow::Result<Vec<String>> {
    let v = page
        .client
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.getAttribute(arguments[1]) || '');",
            vec![json!(sel(testid)), json!(name)],
        )
        .await?;
    Ok(v.as_array().context("a list")?.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_view_from_a_real_prometheus() -> anyhow::Result<()> {
    if !prometheus_installed() {
        return Ok(());
    }
    let dist = dist()?;
    let prom_port = free_port()?;
    let host = |name: &str| vec!["--hostname".to_owned(), name.to_owned()];
    let mut first = host("lab-a");
    first.extend(["--prometheus".to_owned(), format!("http://127.0.0.1:{prom_port}")]);
    let mut a = Agent::start("2xl40s", &dist, &first).await?;
    let b = Agent::start("rtx-4090", &dist, &host("lab-b")).await?;
    let mut c = Agent::start("2xh100-sxm", &dist, &host("lab-c")).await?;
    let prom = Prometheus::start_on(prom_port, &[a.port, b.port, c.port])?;
    prom.wait_for("up{job=\"headroom\"} == 1", 3).await?;
    prom.wait_for("DCGM_FI_DEV_FB_FREE", 5).await?;
    let labels = prom.query("DCGM_FI_DEV_FB_FREE{Hostname=\"lab-c\"}")?;
    for key in ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "hostname", "DCGM_FI_DRIVER_VERSION"] {
        ensure!(labels.iter().all(|s| s["metric"].get(key).is_some()), "{key} missing: {labels:?}");
    }
    dcgm_dashboard(&prom, 3, 5)?;
    headroom_dashboard(&prom)?;
    // The example alert rules load and evaluate in the real server.
    let (_, rules) = get(&prom.addr, "/api/v1/rules", None)?;
    let rules: Value = serde_json::from_str(&rules)?;
    let loaded: Vec<&str> = rules["data"]["groups"][0]["rules"]
        .as_array()
        .context("rules")?
        .iter()
        .filter(|r| r["health"] != "err")
        .filter_map(|r| r["name"].as_str())
        .collect();
    ensure!(
        loaded
            == [
                "HeadroomGpuMemoryLow",
                "HeadroomGpuMemoryLeftover",
                "HeadroomGpuMemoryExhaustionSoon",
                "HeadroomAgentDown"
            ],
        "rules: {rules}"
    );

    // The relay answers with every GPU, none stale.
    let (status, body) = get(&format!("127.0.0.1:{}", a.port), "/api/fleet", Some(TOKEN))?;
    ensure!(status == 200, "/api/fleet: HTTP {status}: {body}");
    let fleet: Value = serde_json::from_str(&body)?;
    let gpus = fleet["gpus"].as_array().context("gpus")?;
    ensure!(gpus.len() == 5 && gpus.iter().all(|g| g["stale"] == false), "{body}");

    let Some(tools) = tools() else { return Ok(()) };
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 2600).await?;
    page.open(&format!("{}/#token={TOKEN}", a.origin())).await?;
    page.select("model-select", "llama-3.2-1b").await?;
    page.wait_until("the fleet view with five GPUs", async |p: &Page| Ok(count(p, "fleet-gpu").await? == 5)).await?;
    let hosts = attrs(&page, "fleet-host", "data-host").await?;
    let mut sorted = hosts.clone();
    sorted.sort();
    ensure!(sorted == ["lab-a", "lab-b", "lab-c"], "grouped by host: {hosts:?}");
    // A 1B model fits on a free GPU: the summary counts exactly the rows marked as fits.
    let states = attrs(&page, "fleet-gpu", "data-state").await?;
    let fits = states.iter().filter(|s| *s == "fits").count();
    let summary = page.attr("fleet-summary", "data-fits").await?.unwrap_or_default();
    ensure!(fits >= 1 && summary == fits.to_string(), "fits: {states:?}, summary {summary}");
    ensure!(page.text("fleet-summary").await?.starts_with(&format!("Fits on these {fits} GPU")), "headline");
    page.client
        .execute("document.querySelector(arguments[0])?.scrollIntoView({block: 'start'});", vec![json!(sel("fleet"))])
        .await?;
    page.screenshot("fleet").await?;

    // lab-c stops: Prometheus's next scrape fails, its two GPUs go stale.
    c.stop();
    page.wait_until("lab-c's GPUs are stale", async |p: &Page| {
        Ok(p.attr("fleet-summary", "data-stale").await?.as_deref() == Some("2"))
    })
    .await?;
    let lab_c = page
        .client
        .execute(
            "return [...document.querySelectorAll('[data-host=\"lab-c\"] [data-testid=\"fleet-gpu\"]')].map(e => e.dataset.state);",
            vec![],
        )
        .await?;
    ensure!(lab_c == json!(["stale", "stale"]), "lab-c: {lab_c}");
    let hosts = attrs(&page, "fleet-host", "data-host").await?;
    ensure!(hosts.last().map(String::as_str) == Some("lab-c"), "a stale host sorts last: {hosts:?}");
    page.screenshot("fleet-stale").await?;

    // The relaying agent stops: the last figures stay, said to be the last.
    a.stop();
    page.wait_until("the fleet view says nobody relays it now", async |p: &Page| {
        Ok(p.text("fleet-error").await.unwrap_or_default().contains("no connected agent relays"))
    })
    .await?;
    ensure!(count(&page, "fleet-gpu").await? == 5, "the last figures stay");
    page.close().await?;
    Ok(())
}

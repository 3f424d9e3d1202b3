//! The agent's footprint, measured on the real binary: idle RSS, CPU at 1 Hz
//! with 100 WebSocket clients, and sample fan-out latency. Run by
//! `bench/agent.sh` (which builds the release binary first):
//!
//! `cargo run --release -p agent --example bench_agent -- <path/to/headroom> [clients] [seconds] [interval_ms] [serve flags…]`
//!
//! Flags after the interval go to `headroom serve` (e.g. `--scenario kv-growth`,
//! whose findings the agent then computes on every reading).
//!
//! Targets (issue 5): under 25 MB RSS and under 2 % of one core.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use shared::protocol::{ClientMessage, Hello, PROTOCOL_VERSION, ServerMessage, Subscribe};
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "bench-token-0123456789abcdef";

fn proc_field(pid: u32, file: &str, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap();
    let line = text.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// utime + stime in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(100.0)
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let binary = args.get(1).cloned().unwrap_or_else(|| "target/release/headroom".into());
    let clients: usize = args.get(2).map_or(100, |a| a.parse().unwrap());
    let seconds: u64 = args.get(3).map_or(30, |a| a.parse().unwrap());
    let interval_ms: u32 = args.get(4).map_or(1000, |a| a.parse().unwrap());
    let extra: Vec<String> = args.iter().skip(5).cloned().collect();

    let mut child = Command::new(&binary)
        .args(["serve", "--simulate", "2xh100-sxm", "--bind", "127.0.0.1:0", "--token", TOKEN])
        .args(&extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start headroom");
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let url = std::io::BufReader::new(stdout).lines().find_map(|l| l.ok().filter(|l| l.contains("#token="))).unwrap();
    let addr = url.trim().trim_start_matches("http://").split('/').next().unwrap().to_owned();

    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_rss_kb = proc_field(pid, "status", "VmRSS:");
    let idle_start = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle_cpu = (cpu_ticks(pid) - idle_start) as f64 / ticks_per_second() / 10.0 * 100.0;

    // 100 clients subscribed at 1 Hz; each records (seq, receipt time).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64, u64)>();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (addr, tx) = (addr.clone(), tx.clone());
        tasks.push(tokio::spawn(async move {
            let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.unwrap();
            let hello =
                ClientMessage::Hello(Hello { token: TOKEN.into(), protocol_version: PROTOCOL_VERSION, client: None });
            ws.send(Message::text(hello.encode())).await.unwrap();
            ws.send(Message::text(ClientMessage::Subscribe(Subscribe { interval_ms }).encode())).await.unwrap();
            while let Some(Ok(message)) = ws.next().await {
                if let Message::Text(text) = message
                    && let Ok(ServerMessage::Sample(s)) = ServerMessage::decode(&text)
                {
                    let _ = tx.send((s.seq, s.timestamp_ms, unix_us()));
                }
            }
        }));
    }
    drop(tx);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let start = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let busy_cpu = (cpu_ticks(pid) - start) as f64 / ticks_per_second() / seconds as f64 * 100.0;
    let busy_rss_kb = proc_field(pid, "status", "VmRSS:");
    let threads = proc_field(pid, "status", "Threads:");

    let _ = child.kill();
    let _ = child.wait();
    for t in tasks {
        t.abort();
    }
    let mut by_seq: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    while let Ok((seq, ts_ms, recv_us)) = rx.try_recv() {
        by_seq.entry(seq).or_default().push((ts_ms, recv_us));
    }
    // Latency: receipt minus the reading's timestamp (ms resolution); spread:
    // last client's receipt minus the first's, for the same reading.
    let mut latency_ms: Vec<f64> = Vec::new();
    let mut spread_ms: Vec<f64> = Vec::new();
    for receipts in by_seq.values().filter(|r| r.len() == clients) {
        for &(ts_ms, recv_us) in receipts {
            latency_ms.push(recv_us as f64 / 1000.0 - ts_ms as f64);
        }
        let first = receipts.iter().map(|r| r.1).min().unwrap();
        let last = receipts.iter().map(|r| r.1).max().unwrap();
        spread_ms.push((last - first) as f64 / 1000.0);
    }
    latency_ms.sort_by(f64::total_cmp);
    spread_ms.sort_by(f64::total_cmp);
    let complete = spread_ms.len();

    println!("headroom serve --simulate 2xh100-sxm {} ({binary}), clients every {interval_ms} ms", extra.join(" "));
    println!("  idle RSS                      {:>8.1} MB  (target < 25 MB)", idle_rss_kb as f64 / 1024.0);
    println!("  idle CPU (no clients, 10 s)   {idle_cpu:>8.2} % of one core");
    println!("  RSS with {clients} clients          {:>8.1} MB", busy_rss_kb as f64 / 1024.0);
    println!("  CPU, {clients} clients, {seconds} s   {busy_cpu:>6.2} % of one core  (target < 2 %)");
    println!("  threads                       {threads:>8}");
    if latency_ms.is_empty() {
        println!("  no reading reached all clients");
    } else {
        println!(
            "  delivery latency (reading → client)  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            percentile(&latency_ms, 0.5),
            percentile(&latency_ms, 0.99),
            latency_ms[latency_ms.len() - 1]
        );
        println!(
            "  fan-out spread (first → last of {clients})  p50 {:.2} ms  p99 {:.2} ms  ({complete} readings)",
            percentile(&spread_ms, 0.5),
            percentile(&spread_ms, 0.99)
        );
    }
}

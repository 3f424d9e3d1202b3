//! `headroom watch` as a person runs it: plain text, JSON lines, the
//! full-screen view in a pseudo-terminal (util-linux `script`), and reading a
//! running agent.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent::telemetry::simulated::{Scenario, SimSpec};

use crate::support::{self, TOKEN};

fn headroom() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_headroom"));
    cmd.env_remove("HEADROOM_TOKEN");
    cmd
}

/// Reads JSON lines from `child` until one has a finding of `cause`.
fn json_until(child: &mut Child, cause: &str, within: Duration) -> serde_json::Value {
    let start = Instant::now();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).expect("one JSON object per line");
        let findings = v["findings"].as_array().unwrap();
        assert!(findings.iter().all(|f| f["cause"] == cause), "only {cause}: {findings:?}");
        if !findings.is_empty() {
            let _ = child.kill();
            return v;
        }
        assert!(start.elapsed() < within, "no {cause} within {within:?}");
    }
    panic!("watch ended before finding {cause}");
}

#[test]
fn once_prints_one_refresh() {
    let out = headroom().args(["watch", "--simulate", "2xl4", "--scenario", "steady", "--once"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("· simulated ·"), "{text}");
    assert_eq!(text.matches("L4 (simulated)").count(), 2, "{text}");
    assert!(text.contains("VLLM::EngineCore"), "{text}");
    assert!(text.contains("No finding"), "{text}");
}

#[test]
fn json_lines_carry_each_finding_with_its_evidence() {
    let mut child = headroom()
        .args(["watch", "--simulate", "rtx-4090", "--scenario", "fp32-load", "--json"])
        .args(["--plan", "https://headroom.example/?model=gemma-2-9b&gpu=rtx-4090"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let v = json_until(&mut child, "near_capacity", Duration::from_secs(20));
    let f = &v["findings"][0];
    assert_eq!((f["number"].as_u64(), f["pid"].as_u64()), (Some(1), Some(41_000)));
    assert_eq!(f["title"], "Loaded near capacity");
    assert!(f["evidence"].as_str().unwrap().contains("before anything was generated"), "{f}");
    let notes = f["plan_notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("Gemma 2 9B in 16-bit")), "{notes:?}");
    let _ = child.wait();
}

#[test]
fn the_full_screen_view_shows_the_finding_and_leaves_on_q() {
    let log = std::env::temp_dir().join(format!("headroom-watch-{}.log", std::process::id()));
    let bin = env!("CARGO_BIN_EXE_headroom");
    let mut child = Command::new("script")
        .args(["-qfec", &format!("stty cols 120 rows 40; {bin} watch --simulate 2xrtx-4090 --scenario unbalanced")])
        .arg(&log)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("util-linux `script` gives watch a pseudo-terminal");
    let start = Instant::now();
    let screen = loop {
        let raw = std::fs::read(&log).unwrap_or_default();
        let text = String::from_utf8_lossy(&raw).into_owned();
        if text.contains("Unbalanced split") {
            break text;
        }
        assert!(start.elapsed() < Duration::from_secs(25), "no finding on screen: {text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(screen.contains("\u{1b}[?1049h"), "the alternate screen");
    assert!(screen.contains("SIMULATED"));
    child.stdin.as_mut().unwrap().write_all(b"q").unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "q did not quit");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success());
    let after = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
    assert!(after.contains("\u{1b}[?1049l"), "the terminal is restored");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_reads_a_running_agent() {
    let spec = SimSpec::parse("2xrtx-4090").unwrap().with_scenario(Scenario::Leftover).unwrap();
    let server = support::start_simulating(support::config(), spec).await;
    let addr = server.addr;
    let v = tokio::task::spawn_blocking(move || {
        let mut child = headroom()
            .args(["watch", "--agent", &format!("http://{addr}"), "--json"])
            .env("HEADROOM_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let v = json_until(&mut child, "leftover", Duration::from_secs(20));
        let _ = child.wait();
        v
    })
    .await
    .unwrap();
    assert_eq!(v["findings"][0]["pid"], 38_100);
    assert_eq!(v["gpus"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_input_gets_a_clear_error() {
    for (args, says) in [
        (&["--scenario", "oom"][..], "unknown scenario `oom`"),
        (&["--simulate", "rtx-4090", "--scenario", "unbalanced"][..], "needs two or more GPUs"),
        (&["--agent", "https://gpu1:7878"][..], "SSH tunnel"),
        (&["--agent", "gpu1:7878"][..], "needs the agent's token"),
        (&["--plan", "?params=7000000000"][..], "only a parameter count"),
        (&["--interval", "5"][..], "from 100 to 60000 ms"),
    ] {
        let out = headroom().arg("watch").args(args).arg("--once").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{args:?}: {err}");
    }
}

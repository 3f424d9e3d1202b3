//! `deploy/` cannot rot: the Kubernetes manifests validate against the
//! Kubernetes schemas (`kubernetes-validate --strict`, offline) and the
//! ServiceMonitor against the Prometheus Operator's CRD; the Prometheus
//! config, alert rules and their unit tests pass `promtool`; the Grafana
//! dashboard loads and only asks for series the agent exports.
//!
//! Without `promtool` or `kubernetes-validate` a check prints why and
//! passes, unless `CI=true` (`cargo xtask test` installs both first).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `name` if it runs; `None` (with a note) where it is missing outside CI.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if found.is_ok_and(|s| s.success()) {
        return Some(PathBuf::from(name));
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{name} is missing (cargo xtask test installs it)");
    eprintln!("skipped: {name} is not installed (cargo xtask test installs it)");
    None
}

/// Runs `cmd`; its output in the failure message.
pub fn passes(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

fn manifests() -> Vec<PathBuf> {
    let mut list: Vec<PathBuf> = std::fs::read_dir(root().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    list.sort();
    list
}

#[test]
fn kubernetes_manifests_validate() {
    let list = manifests();
    let names: Vec<_> = list.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["daemonset.yaml", "service.yaml", "servicemonitor.yaml"]);
    let daemonset = std::fs::read_to_string(&list[0]).unwrap();
    for needed in ["nvidia.com/gpu.present", "--token-file=", "secretName: headroom-token", "path: /api/health"] {
        assert!(daemonset.contains(needed), "the DaemonSet lacks {needed}");
    }
    if let Some(kv) = tool("kubernetes-validate") {
        let out = passes(Command::new(kv).args(["--strict", "--no-warn"]).args(&list[..2]));
        assert_eq!(out.matches("passed").count(), 2, "{out}");
    }
    if tool("python3").is_some() {
        let fixtures = root().join("agent/tests/it/fixtures");
        let out = passes(
            Command::new("python3")
                .arg(fixtures.join("validate_crd.py"))
                .arg(fixtures.join("servicemonitor-v1.schema.json"))
                .arg(&list[2]),
        );
        assert!(out.contains("ServiceMonitor/headroom passed"), "{out}");
        // The strict check rejects what Kubernetes would: a misspelt field fails.
        let bad = std::env::temp_dir().join(format!("headroom-bad-sm-{}.yaml", std::process::id()));
        std::fs::write(&bad, std::fs::read_to_string(&list[2]).unwrap().replace("interval:", "intervall:")).unwrap();
        let status = Command::new("python3")
            .arg(fixtures.join("validate_crd.py"))
            .arg(fixtures.join("servicemonitor-v1.schema.json"))
            .arg(&bad)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        std::fs::remove_file(&bad).unwrap();
        assert!(!status.success(), "a misspelt field must fail the check");
    }
}

#[test]
fn prometheus_config_and_rules_pass_promtool() {
    let Some(promtool) = tool("promtool") else { return };
    let dir = root().join("deploy/prometheus");
    passes(Command::new(&promtool).args(["check", "rules"]).arg(dir.join("headroom-rules.yml")));
    let out = passes(Command::new(&promtool).args(["test", "rules"]).arg(dir.join("headroom-rules.test.yml")));
    assert!(out.contains("SUCCESS"), "{out}");
    // promtool checks that the token file exists: point it at a real one.
    let tmp = std::env::temp_dir().join(format!("headroom-promcfg-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("token"), support::TOKEN).unwrap();
    std::fs::copy(dir.join("headroom-rules.yml"), tmp.join("headroom-rules.yml")).unwrap();
    let token = tmp.join("token").display().to_string();
    for file in ["prometheus.yml", "kubernetes-scrape.yml", "demo.yml"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap().replace("/etc/prometheus/headroom/token", &token);
        std::fs::write(tmp.join(file), text).unwrap();
    }
    for file in ["prometheus.yml", "demo.yml"] {
        passes(Command::new(&promtool).args(["check", "config"]).arg(tmp.join(file)));
    }
    // Debian's build leaves Kubernetes service discovery out; upstream builds check it all.
    let k8s =
        Command::new(&promtool).args(["check", "config"]).arg(tmp.join("kubernetes-scrape.yml")).output().unwrap();
    let text = String::from_utf8_lossy(&k8s.stderr).into_owned() + &String::from_utf8_lossy(&k8s.stdout);
    if text.contains("field kubernetes_sd_configs not found") {
        eprintln!("kubernetes-scrape.yml: this promtool has no Kubernetes service discovery; not checked");
    } else {
        assert!(k8s.status.success(), "kubernetes-scrape.yml:\n{text}");
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// Every PromQL expression of a Grafana dashboard, with its panel's title.
pub fn dashboard_queries(path: &Path) -> Vec<(String, String)> {
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap().to_owned();
            p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |t| (title.clone(), t["expr"].as_str().unwrap().to_owned()))
        })
        .collect()
}

#[test]
fn the_dashboard_loads_and_asks_only_for_exported_series() {
    let path = root().join("deploy/grafana/headroom.json");
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(dash["uid"], "headroom-gpu-memory");
    let vars: Vec<_> = dash["templating"]["list"].as_array().unwrap().iter().map(|v| v["name"].clone()).collect();
    assert_eq!(vars, ["datasource", "host"]);
    let queries = dashboard_queries(&path);
    assert!(queries.len() >= 6, "{queries:?}");
    // The series the agent exports, from a real /metrics.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let body = rt.block_on(async {
        let server = support::start().await;
        server.get("/metrics", &[("Authorization", &format!("Bearer {}", support::TOKEN))]).await.1
    });
    let mut ids = std::collections::BTreeSet::new();
    for (title, expr) in &queries {
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("headroom_") {
                ids.insert(word.to_owned());
                assert!(body.contains(&format!("# TYPE {word} gauge")), "panel {title} asks for {word}, not exported");
            }
        }
    }
    assert!(ids.contains("headroom_gpu_process_memory_used_bytes") && ids.contains("headroom_agent_info"));
}

//! `GET /metrics`: the latest sample in the Prometheus text exposition format
//! (0.0.4), so existing monitoring can scrape a fleet. Every GPU series
//! carries `gpu`, `uuid`, `name` and `simulated` labels; an unavailable
//! reading is left out, never exported as zero.

use std::fmt::Write as _;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use shared::protocol::{Field, HostInfo, Sample};

use super::{ApiError, AppState, PeerAddr, http};

pub async fn metrics(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<PeerAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if !state.config().public_metrics {
        http::check_bearer(&state, peer, &headers)?;
    }
    let published = http::reading(&state).await?;
    let body = render(state.sampler().host(), &published.sample);
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    Ok(response)
}

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    lines: String,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Self {
        Self { name, help, kind, lines: String::new() }
    }

    fn push(&mut self, labels: &str, value: impl std::fmt::Display) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.lines, "{}{{{labels}}} {value}", self.name);
    }

    fn field<T: Copy + std::fmt::Display>(&mut self, labels: &str, value: &Field<T>) {
        if let Field::Value(v) = value {
            self.push(labels, *v);
        }
    }

    fn write(&self, out: &mut String) {
        if self.lines.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {} {}\n# TYPE {} {}", self.name, self.help, self.name, self.kind);
        out.push_str(&self.lines);
    }
}

/// Renders one sample. Pure, for tests.
pub fn render(host: &HostInfo, sample: &Sample) -> String {
    let simulated = if host.simulated { "true" } else { "false" };
    let mut info = Family::new("headroom_agent_info", "gauge", "The agent; 1 per agent, details in labels.");
    info.push(
        &format!(
            "version=\"{}\",hostname=\"{}\",driver_version=\"{}\",simulated=\"{simulated}\"",
            escape(&host.agent_version),
            escape(&host.hostname),
            escape(host.driver_version.value().map_or("", String::as_str))
        ),
        1,
    );
    let mut total = Family::new("headroom_gpu_memory_total_bytes", "gauge", "Framebuffer memory, total.");
    let mut used = Family::new("headroom_gpu_memory_used_bytes", "gauge", "Framebuffer memory in use (NVML `used`).");
    let mut free = Family::new("headroom_gpu_memory_free_bytes", "gauge", "Framebuffer memory free.");
    let mut reserved = Family::new("headroom_gpu_memory_reserved_bytes", "gauge", "Memory the driver reserves.");
    let mut util = Family::new("headroom_gpu_utilization_ratio", "gauge", "Share of time a kernel ran, 0-1.");
    let mut mem_util =
        Family::new("headroom_gpu_memory_utilization_ratio", "gauge", "Share of time memory was read or written, 0-1.");
    let mut temp = Family::new("headroom_gpu_temperature_celsius", "gauge", "GPU core temperature.");
    let mut power = Family::new("headroom_gpu_power_draw_watts", "gauge", "Board power draw.");
    let mut limit = Family::new("headroom_gpu_power_limit_watts", "gauge", "Enforced board power limit.");
    let mut sm = Family::new("headroom_gpu_sm_clock_hertz", "gauge", "SM clock.");
    let mut mem_clock = Family::new("headroom_gpu_memory_clock_hertz", "gauge", "Memory clock.");
    let mut process =
        Family::new("headroom_gpu_process_memory_used_bytes", "gauge", "GPU memory held by each process.");
    for g in &sample.gpus {
        let info = host.gpus.iter().find(|i| i.index == g.index);
        let text = |f: Option<&Field<String>>| f.and_then(Field::value).map_or(String::new(), |s| escape(s));
        let labels = format!(
            "gpu=\"{}\",uuid=\"{}\",name=\"{}\",simulated=\"{simulated}\"",
            g.index,
            text(info.map(|i| &i.uuid)),
            text(info.map(|i| &i.name))
        );
        if let Field::Value(m) = &g.memory {
            total.push(&labels, m.total_bytes);
            used.push(&labels, m.used_bytes);
            free.push(&labels, m.free_bytes);
            reserved.field(&labels, &m.reserved_bytes);
        }
        if let Field::Value(u) = &g.utilization {
            util.push(&labels, f64::from(u.gpu_pct) / 100.0);
            mem_util.push(&labels, f64::from(u.memory_pct) / 100.0);
        }
        temp.field(&labels, &g.temperature_c);
        if let Field::Value(mw) = g.power_draw_mw {
            power.push(&labels, f64::from(mw) / 1000.0);
        }
        if let Field::Value(mw) = g.power_limit_mw {
            limit.push(&labels, f64::from(mw) / 1000.0);
        }
        if let Field::Value(mhz) = g.sm_clock_mhz {
            sm.push(&labels, u64::from(mhz) * 1_000_000);
        }
        if let Field::Value(mhz) = g.memory_clock_mhz {
            mem_clock.push(&labels, u64::from(mhz) * 1_000_000);
        }
        if let Field::Value(list) = &g.processes {
            for p in list {
                let name = p.name.value().map_or(String::new(), |n| escape(n));
                process.field(&format!("{labels},pid=\"{}\",process=\"{name}\"", p.pid), &p.used_bytes);
            }
        }
    }
    let mut out = String::new();
    for family in
        [&info, &total, &used, &free, &reserved, &util, &mem_util, &temp, &power, &limit, &sm, &mem_clock, &process]
    {
        family.write(&mut out);
    }
    out
}

/// Label values escape `\`, `"` and newlines.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}

//! `GET /metrics`: the latest sample in the Prometheus text exposition format
//! (0.0.4), so existing monitoring can scrape a fleet. Every `headroom_*` GPU
//! series carries `gpu`, `uuid`, `name` and `simulated` labels; beside them
//! the dcgm-exporter-compatible `DCGM_FI_*` series ([`dcgm`]). An unavailable
//! reading is left out, never exported as zero.

mod dcgm;
mod text;

pub use dcgm::NAMES as DCGM_NAMES;
use text::{Family, Labels};

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use shared::live;
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
    let body = render(state.sampler().host(), &published.sample, &published.findings, state.config().dcgm_metrics);
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    Ok(response)
}

/// Renders one sample and the diagnosis made from it: the `headroom_*`
/// families, then (unless `dcgm` is [`Dcgm::Off`]) the dcgm-exporter-compatible
/// ones. Pure, for tests.
pub fn render(host: &HostInfo, sample: &Sample, findings: &[live::Finding], dcgm: Dcgm) -> String {
    let mut out = headroom(host, sample, findings);
    match dcgm {
        Dcgm::On => dcgm::render(host, sample, &mut out),
        Dcgm::Off => {}
    }
    out
}

/// Whether `/metrics` carries the dcgm-exporter-compatible series
/// (`--no-dcgm-metrics` turns them off, e.g. beside a real dcgm-exporter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dcgm {
    On,
    Off,
}

fn headroom(host: &HostInfo, sample: &Sample, findings: &[live::Finding]) -> String {
    let simulated = if host.simulated { "true" } else { "false" };
    let mut info = Family::gauge("headroom_agent_info", "The agent; 1 per agent, details in labels.");
    info.push(
        &Labels::new()
            .with("version", &host.agent_version)
            .with("hostname", &host.hostname)
            .with("driver_version", host.driver_version.value().map_or("", String::as_str))
            .with("simulated", simulated),
        1,
    );
    let mut total = Family::gauge("headroom_gpu_memory_total_bytes", "Framebuffer memory, total.");
    let mut used = Family::gauge("headroom_gpu_memory_used_bytes", "Framebuffer memory in use (NVML `used`).");
    let mut free = Family::gauge("headroom_gpu_memory_free_bytes", "Framebuffer memory free.");
    let mut reserved = Family::gauge("headroom_gpu_memory_reserved_bytes", "Memory the driver reserves.");
    let mut util = Family::gauge("headroom_gpu_utilization_ratio", "Share of time a kernel ran, 0-1.");
    let mut mem_util =
        Family::gauge("headroom_gpu_memory_utilization_ratio", "Share of time memory was read or written, 0-1.");
    let mut temp = Family::gauge("headroom_gpu_temperature_celsius", "GPU core temperature.");
    let mut power = Family::gauge("headroom_gpu_power_draw_watts", "Board power draw.");
    let mut limit = Family::gauge("headroom_gpu_power_limit_watts", "Enforced board power limit.");
    let mut sm = Family::gauge("headroom_gpu_sm_clock_hertz", "SM clock.");
    let mut mem_clock = Family::gauge("headroom_gpu_memory_clock_hertz", "Memory clock.");
    let mut process = Family::gauge(
        "headroom_gpu_process_memory_used_bytes",
        "GPU memory held by each process, with its container and Kubernetes pod when it runs in one.",
    );
    let mut finding = Family::gauge(
        "headroom_gpu_finding",
        "A cause of the OOM checklist the agent sees in this GPU's readings (1 per finding): near_capacity, growing, unbalanced, leftover.",
    );
    let mut to_capacity = Family::gauge(
        "headroom_gpu_seconds_to_capacity",
        "At the rate a process's memory climbs during generation, seconds until the GPU's free memory runs out.",
    );
    for g in &sample.gpus {
        let info = host.gpus.iter().find(|i| i.index == g.index);
        let text = |f: Option<&Field<String>>| f.and_then(Field::value).cloned().unwrap_or_default();
        let labels = Labels::new()
            .with("gpu", g.index)
            .with("uuid", text(info.map(|i| &i.uuid)))
            .with("name", text(info.map(|i| &i.name)))
            .with("simulated", simulated);
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
        for p in g.processes.value().into_iter().flatten() {
            let pod = p.pod.as_ref();
            let l = labels
                .clone()
                .with("pid", p.pid)
                .with("process", p.name.value().map_or("", String::as_str))
                .with_some("container_id", p.container.as_ref())
                .with_some("pod_uid", pod.map(|p| &p.uid))
                .with_some("namespace", pod.and_then(|p| p.namespace.as_ref()))
                .with_some("pod", pod.and_then(|p| p.name.as_ref()))
                .with_some("container", pod.and_then(|p| p.container.as_ref()));
            process.field(&l, &p.used_bytes);
        }
        for f in findings.iter().filter(|f| f.gpu == g.index) {
            let l = labels
                .clone()
                .with("cause", f.cause.id())
                .with("certainty", f.certainty.id())
                .with_some("pid", f.pid)
                .with_some("process", f.process.as_ref());
            finding.push(&l, 1);
            if let Some(growth) = f.growth {
                to_capacity.push(&l, growth.seconds_to_capacity);
            }
        }
    }
    let mut out = String::new();
    let families = [
        &info,
        &total,
        &used,
        &free,
        &reserved,
        &util,
        &mem_util,
        &temp,
        &power,
        &limit,
        &sm,
        &mem_clock,
        &process,
        &finding,
        &to_capacity,
    ];
    for family in families {
        family.write(&mut out);
    }
    out
}

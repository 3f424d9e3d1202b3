//! What a GPU card shows: the memory bar from the reading (used, reserved,
//! free), utilisation, temperature and power, and the ten-minute timeline;
//! and the process table with its leftovers.

use shared::protocol::{Field, Finding, GpuSample, PodRef, Unavailable};
use shared::units::{GIB, MIB, UnitSystem, format_bytes};

use crate::html::bar::Segment;

use super::fmt::{fixed, path, pct};
use super::host::{HostModel, WINDOW_MS};
use super::status::seconds;

/// A live bar's segments from `(class, what, bytes)` parts, each as a share
/// of `scale`, titled with its bytes.
pub fn segments<'a>(
    parts: impl IntoIterator<Item = (&'static str, &'a str, u64)>,
    scale: u64,
    units: UnitSystem,
) -> Vec<Segment> {
    parts
        .into_iter()
        .map(|(class, what, bytes)| Segment {
            class,
            bytes,
            width: pct(bytes, scale),
            title: format!("{what}: {}", format_bytes(bytes, units)),
        })
        .collect()
}

/// One GPU card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuCard {
    pub index: u32,
    pub title: String,
    pub simulated: bool,
    pub segments: Vec<Segment>,
    /// `used 12.3 GiB · reserved 256 MiB · free 11.4 GiB of 24 GiB`.
    pub memory: String,
    /// Exact free bytes for `data-free` (0 when unknown).
    pub free_bytes: u64,
    pub utilization: String,
    pub temperature: String,
    pub power: String,
}

/// A missing reading in words.
pub fn why(u: Unavailable) -> &'static str {
    match u {
        Unavailable::NotSupported => "not supported",
        Unavailable::NoPermission => "no permission",
        Unavailable::MissingInDriver => "driver too old",
        Unavailable::Unreliable => "unreliable on this driver",
        Unavailable::NotVisible => "not visible",
        Unavailable::GpuLost => "GPU lost",
        Unavailable::NotSampled => "not read yet",
        Unavailable::Failed => "read failed",
        Unavailable::Unknown => "unavailable",
    }
}

fn field<T>(f: &Field<T>, show: impl FnOnce(&T) -> String) -> String {
    match f {
        Field::Value(v) => show(v),
        Field::Unavailable(u) => format!("n/a ({})", why(*u)),
    }
}

pub fn gpu_card(host: &HostModel, g: &GpuSample, units: UnitSystem) -> GpuCard {
    let info = host.info(g.index);
    let name = info.and_then(|i| i.name.value().cloned()).unwrap_or_else(|| "GPU".into());
    let b = |x: u64| format_bytes(x, units);
    let (segments, memory, free_bytes) = match &g.memory {
        Field::Value(m) => {
            let reserved = m.reserved_bytes.value().copied().unwrap_or(0);
            let segs = [
                ("live-used", "Used by processes", m.used_bytes),
                ("live-reserved", "Reserved by the driver", reserved),
                ("live-free", "Free", m.free_bytes),
            ];
            let segments = segments(segs, m.total_bytes, units);
            let reserved_text = match m.reserved_bytes {
                Field::Value(r) => format!(" · reserved {}", b(r)),
                Field::Unavailable(_) => " (incl. the driver's reserve)".into(),
            };
            let text =
                format!("used {}{reserved_text} · free {} of {}", b(m.used_bytes), b(m.free_bytes), b(m.total_bytes));
            (segments, text, m.free_bytes)
        }
        Field::Unavailable(u) => (Vec::new(), format!("memory: n/a ({})", why(*u)), 0),
    };
    GpuCard {
        index: g.index,
        title: format!("GPU {} · {name}", g.index),
        simulated: host.simulated(),
        segments,
        memory,
        free_bytes,
        utilization: field(&g.utilization, |u| format!("{} % busy · memory {} %", u.gpu_pct, u.memory_pct)),
        temperature: field(&g.temperature_c, |t| format!("{t} °C")),
        power: match (&g.power_draw_mw, g.power_limit_mw.value()) {
            (Field::Value(d), Some(l)) => format!("{} / {} W", d / 1_000, l / 1_000),
            (f, _) => field(f, |d| format!("{} W", d / 1_000)),
        },
    }
}

/// The timeline's SVG canvas, in user units; coordinates are computed in tenths.
pub const TL_WIDTH_PX: u64 = 320;
pub const TL_HEIGHT_PX: u64 = 80;

/// One GPU's ten minutes of memory as SVG path data, with the plan's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    /// Used memory as a line (`M … L …`), empty before the first reading.
    pub used: String,
    /// The same, closed to the baseline, for a filled area.
    pub area: String,
    /// The plan's predicted use, as a horizontal line's y (None without a plan
    /// or above the card).
    pub plan_y: Option<String>,
    pub plan_label: String,
    pub points: usize,
    /// `12.3 GiB now · peak 20.1 GiB`.
    pub caption: String,
    /// A growing process's climb carried on to the capacity (`M … L …`).
    pub projection: String,
    /// `full in about 34 s`.
    pub projection_label: String,
    /// Where each finding was made: x and a title.
    pub marks: Vec<(String, String)>,
    /// The x of "now" when the chart runs on into the projection.
    pub now_x: Option<String>,
}

/// `plan_bytes` is what the plan predicts this GPU's serving process holds;
/// `findings` are the agent's findings on this GPU: each is marked where it
/// was made, and a growing process's climb is projected to the card's
/// capacity over the next two minutes (the chart then spans twelve).
pub fn timeline(
    host: &HostModel,
    index: u32,
    plan_bytes: Option<u64>,
    findings: &[&Finding],
    units: UnitSystem,
) -> Timeline {
    let now = host.now_ms();
    let points = host.history(index).map(|h| h.points.iter().copied().collect::<Vec<_>>()).unwrap_or_default();
    let total = points.last().map_or(0, |p| p.total_bytes).max(1);
    let growth = findings.iter().find_map(|f| f.growth);
    let future = if growth.is_some() { PROJECTION_MS } else { 0 };
    let span = WINDOW_MS + future;
    let scale = |v: u64, num: u64, den: u64| u64::try_from(u128::from(v) * u128::from(num) / u128::from(den.max(1)));
    // Tenths: x from 0 (ten minutes ago) to 3200 (now, or two minutes on when
    // projecting); y from 800 (empty) up to 20 (full).
    let x = |t: u64| scale((t + WINDOW_MS).saturating_sub(now).min(span), TL_WIDTH_PX * 10, span).unwrap_or(0);
    let y = |b: u64| TL_HEIGHT_PX * 10 - scale(b.min(total), (TL_HEIGHT_PX - 2) * 10, total).unwrap_or(0);
    let xy: Vec<(u64, u64)> = points.iter().map(|p| (x(p.t_ms), y(p.used_bytes))).collect();
    let used = path(&xy);
    let base = fixed(TL_HEIGHT_PX * 10, 1);
    let area = match (xy.first(), xy.last()) {
        (Some(a), Some(z)) => format!("{used} L{} {base} L{} {base} Z", fixed(z.0, 1), fixed(a.0, 1)),
        _ => String::new(),
    };
    let peak = points.iter().map(|p| p.used_bytes).max().unwrap_or(0);
    let caption = match points.last() {
        Some(p) => {
            format!("{} now · peak {} (last {})", format_bytes(p.used_bytes, units), format_bytes(peak, units), {
                let span = p.t_ms - points.first().map_or(p.t_ms, |f| f.t_ms);
                if span == 0 { "reading".to_owned() } else { seconds(span) }
            })
        }
        None => "no reading yet".into(),
    };
    let plan_y = plan_bytes.filter(|&b| b <= total && total > 1).map(|b| fixed(y(b), 1));
    let plan_label = match plan_bytes {
        Some(b) if b > total && total > 1 => format!("plan {} (above this GPU)", format_bytes(b, units)),
        Some(b) => format!("plan {}", format_bytes(b, units)),
        None => String::new(),
    };
    let (projection, projection_label) = match (growth, points.last()) {
        (Some(g), Some(last)) => {
            let ahead_ms = (g.seconds_to_capacity * 1000).min(PROJECTION_MS);
            let reached = last.used_bytes.saturating_add(g.bytes_per_s.saturating_mul(ahead_ms) / 1000);
            let d = path(&[(x(last.t_ms), y(last.used_bytes)), (x(last.t_ms + ahead_ms), y(reached))]);
            (d, format!("full in about {}", seconds(g.seconds_to_capacity * 1000)))
        }
        _ => (String::new(), String::new()),
    };
    let marks = findings
        .iter()
        .filter(|f| f.found_ms + WINDOW_MS >= now)
        .map(|f| (fixed(x(f.found_ms), 1), format!("{}. found here", f.number)))
        .collect();
    Timeline {
        used,
        area,
        plan_y,
        plan_label,
        points: points.len(),
        caption,
        projection,
        projection_label,
        marks,
        now_x: (future > 0).then(|| fixed(x(now), 1)),
    }
}

/// How far ahead a growing process's climb is drawn.
pub const PROJECTION_MS: u64 = 2 * 60 * 1_000;

/// One row of the process table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcRow {
    pub gpu: u32,
    pub pid: String,
    pub name: String,
    pub memory: String,
    pub bytes: u64,
    /// `for 3 min 12 s`.
    pub since: String,
    pub leftover: bool,
    /// Why the row stands out, or what it is.
    pub note: String,
    /// The engine launch the agent recognised: `vLLM · TP 2 · util 0.9 ·
    /// org/model · predicted 71.3 GiB` (empty without one).
    pub launch: String,
    /// The plan those flags describe, as a share-link query.
    pub plan_query: Option<String>,
}

/// A process this large on a GPU idle this long is probably left over (a
/// notebook kernel, a crashed server's orphan): the checklist's "clear
/// memory between loads".
pub const LEFTOVER_MIN_BYTES: u64 = GIB;
pub const LEFTOVER_IDLE_MS: u64 = 30_000;
/// Memory in use beyond what the listed processes hold, worth a row.
const UNATTRIBUTED_MIN_BYTES: u64 = 256 * MIB;

fn desktop(name: &str) -> bool {
    matches!(name, "Xorg" | "Xwayland" | "gnome-shell" | "kwin_x11" | "kwin_wayland" | "sway" | "plasmashell")
}

/// A pod as `namespace/name`, or `uid …` when the agent cannot see names.
pub fn pod_text(pod: &PodRef) -> String {
    match (&pod.namespace, &pod.name) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        _ => format!("uid {}", pod.uid),
    }
}

/// `just now`, `for 3 min 12 s`.
fn since(ms: u64) -> String {
    if ms < 1_000 { "just now".into() } else { format!("for {}", seconds(ms)) }
}

pub fn process_rows(host: &HostModel, units: UnitSystem) -> Vec<ProcRow> {
    let Some(sample) = &host.latest else { return Vec::new() };
    let now = sample.timestamp_ms;
    let mut rows = Vec::new();
    for g in &sample.gpus {
        let hist = host.history(g.index);
        let idle_for = hist.and_then(|h| h.idle_since_ms).map(|t| now.saturating_sub(t));
        let listed = match &g.processes {
            Field::Value(list) => list,
            Field::Unavailable(u) => {
                rows.push(ProcRow {
                    gpu: g.index,
                    pid: "—".into(),
                    name: format!("process list n/a ({})", why(*u)),
                    memory: String::new(),
                    bytes: 0,
                    since: String::new(),
                    leftover: false,
                    note: String::new(),
                    launch: String::new(),
                    plan_query: None,
                });
                continue;
            }
        };
        let mut held = 0;
        for p in listed {
            let bytes = p.used_bytes.value().copied().unwrap_or(0);
            held += bytes;
            let name = match (&p.name, &p.pod, &p.container) {
                (Field::Value(n), Some(pod), _) => format!("{n} (pod {})", pod_text(pod)),
                (Field::Value(n), None, Some(c)) => format!("{n} (container {c})"),
                (Field::Value(n), None, None) => n.clone(),
                (Field::Unavailable(u), _, _) => format!("? ({})", why(*u)),
            };
            let first = hist.and_then(|h| h.first_seen(p.pid));
            let is_desktop = p.name.value().is_some_and(|n| desktop(n));
            let leftover = !is_desktop
                && bytes >= LEFTOVER_MIN_BYTES
                && idle_for.is_some_and(|i| i >= LEFTOVER_IDLE_MS)
                && first.is_some_and(|f| now.saturating_sub(f) >= LEFTOVER_IDLE_MS);
            let note = if leftover {
                format!(
                    "holds memory on an idle GPU for {}: left over? free it before loading",
                    seconds(idle_for.unwrap_or(0))
                )
            } else if is_desktop {
                "desktop".into()
            } else {
                String::new()
            };
            rows.push(ProcRow {
                gpu: g.index,
                pid: p.pid.to_string(),
                name,
                memory: field(&p.used_bytes, |b| format_bytes(*b, units)),
                bytes,
                since: first.map(|f| since(now.saturating_sub(f))).unwrap_or_default(),
                leftover,
                note,
                launch: p.launch.as_ref().map(|l| l.summary(units)).unwrap_or_default(),
                plan_query: p.launch.as_ref().and_then(|l| l.plan_query.clone()),
            });
        }
        // Compare with the memory read together with the process list: the
        // list is read less often, and memory read later may have grown.
        let used_then = hist
            .and_then(|h| h.points.iter().rev().find(|p| p.t_ms == sample.processes_timestamp_ms))
            .map(|p| p.used_bytes);
        if let Some(used) = used_then {
            let rest = used.saturating_sub(held);
            if rest >= UNATTRIBUTED_MIN_BYTES {
                rows.push(ProcRow {
                    gpu: g.index,
                    pid: "—".into(),
                    name: "not attributed to a listed process".into(),
                    memory: format_bytes(rest, units),
                    bytes: rest,
                    since: String::new(),
                    leftover: true,
                    note: "processes in other containers, or memory a crashed process left behind".into(),
                    launch: String::new(),
                    plan_query: None,
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::super::host::fixtures::*;
    use super::*;
    use shared::protocol::ServerMessage;

    fn host(samples: impl IntoIterator<Item = shared::protocol::Sample>) -> HostModel {
        let mut h = HostModel::new("ws://lab1:7878/ws");
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        for s in samples {
            h.apply(ServerMessage::Sample(s));
        }
        h
    }

    #[test]
    fn the_card_shows_the_reading() {
        let h = host([sample(5, &[(G24, 12 * GIB, 87, &[(41, "vllm", 12 * GIB)])])]);
        let g = h.latest.as_ref().map(|s| s.gpus[0].clone()).expect("sample");
        let c = gpu_card(&h, &g, UnitSystem::Binary);
        assert_eq!(c.title, "GPU 0 · NVIDIA GeForce RTX 4090 (simulated)");
        assert!(c.simulated);
        assert_eq!(c.segments.iter().map(|s| s.width.as_str()).collect::<Vec<_>>(), ["50.000%", "1.042%", "48.958%"]);
        assert!(c.memory.starts_with("used 12.00 GiB · reserved 256"), "{}", c.memory);
        assert_eq!(c.utilization, "87 % busy · memory 43 %");
        assert_eq!((c.temperature.as_str(), c.power.as_str()), ("60 °C", "300 / 450 W"));
    }

    #[test]
    fn the_timeline_grows_and_carries_the_plan() {
        let h = host((0..=60).map(|t| sample(t, &[(G24, t * GIB / 4, 50, &[])])));
        let t = timeline(&h, 0, Some(12 * GIB), &[], UnitSystem::Binary);
        assert_eq!(t.points, 61);
        assert!(t.used.starts_with('M') && t.area.ends_with('Z'));
        assert_eq!(t.plan_y.as_deref(), Some("41.0"));
        assert!(t.caption.contains("peak 15.00 GiB") && t.caption.contains("1 min 0 s"), "{}", t.caption);
        let over = timeline(&h, 0, Some(30 * GIB), &[], UnitSystem::Binary);
        assert!(over.plan_y.is_none() && over.plan_label.contains("above"));
        assert_eq!(timeline(&h, 9, None, &[], UnitSystem::Binary).caption, "no reading yet");
    }

    #[test]
    fn idle_holders_stand_out_and_desktops_do_not() {
        let procs: &[(u32, &str, u64)] = &[(1312, "Xorg", 2 * GIB), (900, "python3", 6 * GIB)];
        let busy = host((0..=40).map(|t| sample(t, &[(G24, 8 * GIB, 60, procs)])));
        assert!(process_rows(&busy, UnitSystem::Binary).iter().all(|r| !r.leftover));
        let idle = host((0..=40).map(|t| sample(t, &[(G24, 9 * GIB, 0, procs)])));
        let rows = process_rows(&idle, UnitSystem::Binary);
        assert_eq!(rows.len(), 3, "two processes and the unattributed gigabyte");
        assert!(!rows[0].leftover && rows[0].note == "desktop");
        assert!(rows[1].leftover && rows[1].since == "for 40 s", "{rows:?}");
        assert!(rows[2].leftover && rows[2].name.contains("not attributed"));
    }
}

//! The fleet view: every GPU the team's Prometheus knows (relayed by an
//! agent started with `--prometheus`, `GET /api/fleet`), grouped by host,
//! with the calculator's plan laid over each — "fits on these N GPUs now",
//! sorted by headroom. A GPU that is no longer scraped is shown stale and
//! never counted as a fit.
//!
//! A plan over several GPUs (tensor or pipeline parallel) fits on a host
//! when that host has as many fresh GPUs each with room for its share: the
//! largest share on the GPU with the most free memory, and so on.

use shared::live::PlanGpu;
use shared::units::{UnitSystem, format_bytes};

use super::cards::segments;
use crate::html::bar::StackedBar;
use shared::protocol::FleetGpu;

/// How one GPU stands against the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The plan (or its share `k`) fits here now.
    Fits { share: Option<usize> },
    /// Fresh, but not enough free (or not enough GPUs on its host for the plan).
    Short,
    /// Not needed: a split plan already fits on this host's other GPUs.
    Spare,
    /// No longer scraped: its figures are the last seen.
    Stale,
    /// No runnable plan to compare with.
    NoPlan,
}

impl Standing {
    pub fn key(self) -> &'static str {
        match self {
            Standing::Fits { .. } => "fits",
            Standing::Short => "short",
            Standing::Spare => "spare",
            Standing::Stale => "stale",
            Standing::NoPlan => "none",
        }
    }
}

/// One GPU row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetRow {
    pub uuid: String,
    pub standing: Standing,
    /// Free minus the need (the plan's largest share), signed.
    pub headroom: i128,
    /// The label, the summary and the bar: in use, the plan's need, free
    /// after it (no capacity line: the bar is the GPU).
    pub bar: StackedBar,
}

/// One host with its GPUs, best headroom first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetHost {
    pub name: String,
    pub rows: Vec<FleetRow>,
    /// GPUs the plan fits on now.
    pub fits: usize,
}

/// The whole view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetView {
    pub headline: String,
    /// GPUs the plan fits on now, over all hosts.
    pub fits: usize,
    pub stale: usize,
    pub hosts: Vec<FleetHost>,
}

/// The view of `gpus` with the plan's GPUs `plan` (their totals) laid over them.
pub fn view(gpus: &[FleetGpu], plan: Option<&[PlanGpu]>, units: UnitSystem) -> FleetView {
    let b = |x: u64| format_bytes(x, units);
    let mut needs: Vec<u64> = plan.map(|p| p.iter().map(|g| g.total_bytes).collect()).unwrap_or_default();
    shared::order::sort_by(&mut needs, |a, b| b.cmp(a));
    let largest = needs.first().copied();
    let mut names: Vec<&str> = gpus.iter().map(|g| g.host.as_str()).collect();
    names.dedup();
    shared::order::sort(&mut names);
    names.dedup();
    let mut hosts: Vec<FleetHost> = names
        .into_iter()
        .map(|name| {
            let mut mine: Vec<&FleetGpu> = gpus.iter().filter(|g| g.host == name).collect();
            shared::order::sort_by_key(&mut mine, |g| (g.stale, std::cmp::Reverse(g.free_bytes)));
            let fresh = mine.iter().filter(|g| !g.stale).count();
            // Shares by size onto GPUs by free memory: fits when every pair fits.
            let placed = !needs.is_empty()
                && fresh >= needs.len()
                && needs.iter().zip(&mine).all(|(need, g)| g.free_bytes >= *need);
            let rows: Vec<FleetRow> = mine
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let share = needs.get(i).copied().filter(|_| placed);
                    let standing = match (g.stale, largest) {
                        (true, _) => Standing::Stale,
                        (false, None) => Standing::NoPlan,
                        (false, Some(_)) if share.is_some() => Standing::Fits { share: (needs.len() > 1).then_some(i) },
                        (false, Some(need)) if needs.len() == 1 && g.free_bytes >= need => {
                            Standing::Fits { share: None }
                        }
                        (false, Some(_)) if placed => Standing::Spare,
                        (false, Some(_)) => Standing::Short,
                    };
                    row(g, share.or(largest), standing, units)
                })
                .collect();
            let fits = rows.iter().filter(|r| matches!(r.standing, Standing::Fits { .. })).count();
            FleetHost { name: name.to_owned(), rows, fits }
        })
        .collect();
    let best = |h: &FleetHost| h.rows.iter().filter(|r| r.standing != Standing::Stale).map(|r| r.headroom).max();
    shared::order::sort_by(&mut hosts, |a, b| {
        (b.fits > 0).cmp(&(a.fits > 0)).then(best(b).cmp(&best(a))).then(a.name.cmp(&b.name))
    });
    let fits = hosts.iter().map(|h| h.fits).sum();
    let stale = gpus.iter().filter(|g| g.stale).count();
    let fit_hosts = hosts.iter().filter(|h| h.fits > 0).count();
    let headline = match (gpus.len(), largest, needs.len()) {
        (0, _, _) => "The fleet's Prometheus lists no GPU (no DCGM_FI_DEV_FB_FREE series).".to_owned(),
        (n, None, _) => format!("{n} GPUs on {} hosts; no runnable plan to place.", hosts.len()),
        (_, Some(need), 1) if fits > 0 => format!(
            "Fits on these {fits} GPU{} now (needs {} each), on {fit_hosts} host{}.",
            if fits == 1 { "" } else { "s" },
            b(need),
            if fit_hosts == 1 { "" } else { "s" }
        ),
        (_, Some(need), 1) => format!("Fits on no GPU now: it needs {} free on one GPU.", b(need)),
        (_, Some(_), k) if fit_hosts > 0 => format!(
            "Fits on {fit_hosts} host{} now ({k} GPUs each: these {fits} GPUs).",
            if fit_hosts == 1 { "" } else { "s" }
        ),
        (_, Some(need), k) => {
            format!("Fits on no host now: it needs {k} GPUs on one host, the largest share {} free.", b(need))
        }
    };
    FleetView { headline, fits, stale, hosts }
}

fn row(g: &FleetGpu, need: Option<u64>, standing: Standing, units: UnitSystem) -> FleetRow {
    let b = |x: u64| format_bytes(x, units);
    let name = if g.model.is_empty() { String::new() } else { format!(" · {}", g.model) };
    let label = format!("GPU {}{name}", g.gpu);
    let taken = g.total_bytes.saturating_sub(g.free_bytes);
    let need_bytes = need.unwrap_or(0);
    let scale = g.total_bytes.max(taken + need_bytes);
    let parts = [
        ("live-used", "In use now", taken),
        ("seg-weights", "The plan", need_bytes),
        ("live-free", "Free after the plan", g.free_bytes.saturating_sub(need_bytes)),
    ];
    let segments = segments(parts.into_iter().filter(|p| p.2 > 0), scale, units);
    let headroom = i128::from(g.free_bytes) - i128::from(need_bytes);
    let summary = match (standing, need) {
        (Standing::Stale, _) => format!("not scraped any more: {} free when last seen", b(g.free_bytes)),
        (Standing::NoPlan, _) | (_, None) => format!("{} free of {}", b(g.free_bytes), b(g.total_bytes)),
        (Standing::Spare, _) => format!("{} free; the plan fits on this host's other GPUs", b(g.free_bytes)),
        (Standing::Fits { share }, Some(n)) => {
            let what = share.map_or("the plan".to_owned(), |k| format!("plan share {}", k + 1));
            format!(
                "{what} fits: {} of {} free, {} to spare",
                b(n),
                b(g.free_bytes),
                b(g.free_bytes - n.min(g.free_bytes))
            )
        }
        (Standing::Short, Some(n)) if g.free_bytes >= n => {
            format!("{} free, but its host has too few GPUs with room for the plan", b(g.free_bytes))
        }
        (Standing::Short, Some(n)) => {
            format!("needs {} but {} is free: {} short", b(n), b(g.free_bytes), b(n - g.free_bytes))
        }
    };
    let bar = StackedBar {
        label,
        aria: summary.clone(),
        summary,
        fits: standing != Standing::Short,
        segments,
        capacity: None,
    };
    FleetRow { uuid: g.uuid.clone(), standing, headroom, bar }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn gpu(host: &str, index: u32, free_gib: u64, stale: bool) -> FleetGpu {
        FleetGpu {
            host: host.into(),
            instance: format!("{host}:7878"),
            gpu: index.to_string(),
            uuid: format!("GPU-{host}-{index}"),
            model: "NVIDIA L40S".into(),
            total_bytes: 48 * GIB,
            free_bytes: free_gib * GIB,
            used_bytes: (48 - free_gib) * GIB,
            reserved_bytes: None,
            stale,
        }
    }

    fn plan(shares_gib: &[u64]) -> Vec<PlanGpu> {
        let share = |(index, g): (usize, &u64)| PlanGpu { index, total_bytes: g * GIB, budget: Default::default() };
        shares_gib.iter().enumerate().map(share).collect()
    }

    fn standings(v: &FleetView) -> Vec<(String, Vec<(String, &'static str)>)> {
        v.hosts
            .iter()
            .map(|h| (h.name.clone(), h.rows.iter().map(|r| (r.uuid.clone(), r.standing.key())).collect()))
            .collect()
    }

    #[test]
    fn one_gpu_plans_fit_where_there_is_room_sorted_by_headroom() {
        let gpus = [gpu("b", 0, 10, false), gpu("a", 0, 30, false), gpu("a", 1, 40, false), gpu("c", 0, 45, true)];
        let v = view(&gpus, Some(&plan(&[20])), UnitSystem::Binary);
        assert_eq!(v.fits, 2);
        assert_eq!(v.stale, 1);
        assert!(v.headline.starts_with("Fits on these 2 GPUs now"), "{}", v.headline);
        let s = standings(&v);
        assert_eq!(s[0], ("a".into(), vec![("GPU-a-1".into(), "fits"), ("GPU-a-0".into(), "fits")]));
        // A stale GPU never counts, even with room.
        assert_eq!(s[1].0, "b");
        assert_eq!(s[2], ("c".into(), vec![("GPU-c-0".into(), "stale")]));
        let a1 = &v.hosts[0].rows[0];
        assert_eq!(a1.headroom, i128::from(20 * GIB));
        assert!(a1.bar.summary.contains("20.00 GiB to spare"), "{}", a1.bar.summary);
        assert!(v.hosts[1].rows[0].bar.summary.contains("10.00 GiB short"), "{}", v.hosts[1].rows[0].bar.summary);
    }

    #[test]
    fn split_plans_need_enough_gpus_with_room_on_one_host() {
        let gpus = [
            gpu("a", 0, 30, false),
            gpu("a", 1, 12, false),
            gpu("c", 2, 20, false),
            gpu("b", 0, 30, false),
            gpu("b", 1, 30, true),
            gpu("c", 0, 25, false),
            gpu("c", 1, 21, false),
        ];
        let v = view(&gpus, Some(&plan(&[20, 20])), UnitSystem::Binary);
        let s = standings(&v);
        assert_eq!(
            s[0],
            ("c".into(), vec![("GPU-c-0".into(), "fits"), ("GPU-c-1".into(), "fits"), ("GPU-c-2".into(), "spare")])
        );
        assert!(s[1..].iter().all(|(_, rows)| rows.iter().all(|r| r.1 != "fits")), "{s:?}");
        assert!(v.headline.starts_with("Fits on 1 host now (2 GPUs each"), "{}", v.headline);
        let a0 = &v.hosts.iter().find(|h| h.name == "a").unwrap().rows[0];
        assert!(a0.bar.summary.contains("too few GPUs"), "{}", a0.bar.summary);
    }

    #[test]
    fn empty_fleets_and_plans_say_so() {
        assert!(view(&[], None, UnitSystem::Binary).headline.contains("no GPU"));
        let gpus = [gpu("gpu1", 0, 30, true)];
        assert!(view(&gpus, None, UnitSystem::Binary).headline.contains("no runnable plan"));
    }
}

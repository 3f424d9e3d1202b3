//! The fixed queries and how their answers become one [`FleetSnapshot`].
//! Pure, tested on canned answers.

use std::collections::{BTreeMap, HashSet};

use shared::protocol::{FleetGpu, FleetSnapshot};

/// A GPU that stopped being scraped is listed (as stale) this long: the
/// `[10m]` of [`QUERIES`].
const LOOKBACK_S: u32 = 600;

/// The only queries the relay ever sends, in the order [`join`] takes
/// them: the last free, used and reserved memory of every whole GPU (not a
/// MIG instance) within [`LOOKBACK`], and which GPUs the latest scrapes hold.
/// dcgm-exporter's names, so its GPUs count as much as Headroom agents'.
pub const QUERIES: [&str; 4] = [
    "last_over_time(DCGM_FI_DEV_FB_FREE{GPU_I_ID=\"\"}[10m])",
    "last_over_time(DCGM_FI_DEV_FB_USED{GPU_I_ID=\"\"}[10m])",
    "last_over_time(DCGM_FI_DEV_FB_RESERVED{GPU_I_ID=\"\"}[10m])",
    "DCGM_FI_DEV_FB_FREE{GPU_I_ID=\"\"}",
];

/// The most GPUs one answer lists; the rest are counted in `truncated`.
pub const MAX_GPUS: usize = 4096;

const MIB: u64 = 1 << 20;

/// One series of an instant vector: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Series {
    fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }

    /// A GPU is one scrape target's UUID (its index where there is no UUID).
    fn key(&self) -> (String, String) {
        let id = match self.label("UUID") {
            "" => self.label("gpu"),
            uuid => uuid,
        };
        (self.label("instance").to_owned(), id.to_owned())
    }

    fn mib_bytes(&self) -> Option<u64> {
        (self.value.is_finite() && self.value >= 0.0).then(|| (self.value as u64).saturating_mul(MIB))
    }
}

/// The four answers of [`QUERIES`] as one snapshot, sorted by host and GPU index.
pub fn join(
    free: &[Series],
    used: &[Series],
    reserved: &[Series],
    now: &[Series],
    queried_at_ms: u64,
) -> FleetSnapshot {
    let by_key = |list: &[Series]| -> BTreeMap<(String, String), u64> {
        list.iter().filter_map(|s| Some((s.key(), s.mib_bytes()?))).collect()
    };
    let (used, reserved) = (by_key(used), by_key(reserved));
    let fresh: HashSet<(String, String)> = now.iter().map(Series::key).collect();
    let mut seen = HashSet::new();
    let mut gpus = Vec::new();
    for s in free {
        let key = s.key();
        let Some(free_bytes) = s.mib_bytes() else { continue };
        // A label change within the lookback (a new pod on the GPU) gives two series: keep one.
        if !seen.insert(key.clone()) {
            continue;
        }
        let used_bytes = used.get(&key).copied().unwrap_or(0);
        let reserved_bytes = reserved.get(&key).copied();
        let host = [s.label("Hostname"), s.label("hostname"), s.label("instance")]
            .into_iter()
            .find(|h| !h.is_empty())
            .unwrap_or("unknown")
            .to_owned();
        gpus.push(FleetGpu {
            host,
            instance: key.0.clone(),
            gpu: s.label("gpu").to_owned(),
            uuid: s.label("UUID").to_owned(),
            model: s.label("modelName").to_owned(),
            total_bytes: free_bytes + used_bytes + reserved_bytes.unwrap_or(0),
            free_bytes,
            used_bytes,
            reserved_bytes,
            stale: !fresh.contains(&key),
        });
    }
    gpus.sort_by(|a, b| {
        let index = |g: &FleetGpu| g.gpu.parse::<u32>().unwrap_or(u32::MAX);
        (&a.host, &a.instance, index(a), &a.gpu).cmp(&(&b.host, &b.instance, index(b), &b.gpu))
    });
    let truncated = gpus.len().saturating_sub(MAX_GPUS) as u32;
    gpus.truncate(MAX_GPUS);
    FleetSnapshot { queried_at_ms, lookback_s: LOOKBACK_S, gpus, truncated }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(instance: &str, host: &str, gpu: &str, value: f64) -> Series {
        let mut labels: BTreeMap<String, String> = [
            ("instance", instance),
            ("gpu", gpu),
            ("UUID", &*format!("GPU-{instance}-{gpu}")),
            ("modelName", "NVIDIA L4"),
            ("Hostname", host),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        if host.is_empty() {
            labels.remove("Hostname");
        }
        Series { labels, value }
    }

    #[test]
    fn answers_join_by_target_and_uuid_and_stale_gpus_are_marked() {
        let free = [
            series("b:9400", "", "0", 100.0),
            series("a:7878", "gpu-a", "10", 1.0),
            series("a:7878", "gpu-a", "2", 2048.0),
            // The same GPU again under another label set: listed once.
            series("a:7878", "gpu-a", "2", 4096.0),
            series("c:7878", "gpu-c", "0", f64::NAN),
        ];
        let used = [series("a:7878", "gpu-a", "2", 1024.0), series("b:9400", "", "0", 5.0)];
        let reserved = [series("a:7878", "gpu-a", "2", 512.0)];
        let now = [series("a:7878", "gpu-a", "2", 2048.0), series("a:7878", "gpu-a", "10", 1.0)];
        let snap = join(&free, &used, &reserved, &now, 7);
        let rows: Vec<_> = snap.gpus.iter().map(|g| (g.host.as_str(), g.gpu.as_str(), g.stale)).collect();
        assert_eq!(rows, [("b:9400", "0", true), ("gpu-a", "2", false), ("gpu-a", "10", false)]);
        let g = &snap.gpus[1];
        assert_eq!((g.free_bytes, g.used_bytes, g.reserved_bytes), (2048 * MIB, 1024 * MIB, Some(512 * MIB)));
        assert_eq!(g.total_bytes, 3584 * MIB);
        assert_eq!((snap.gpus[0].reserved_bytes, snap.gpus[0].total_bytes), (None, 105 * MIB));
        assert_eq!((snap.queried_at_ms, snap.truncated), (7, 0));
    }

    #[test]
    fn the_lookback_is_the_queries_window() {
        assert!(QUERIES[..3].iter().all(|q| q.contains(&format!("[{}m]", LOOKBACK_S / 60))));
    }

    #[test]
    fn a_huge_fleet_is_truncated_and_counted() {
        let free: Vec<Series> = (0..MAX_GPUS + 3).map(|i| series("x", "h", &i.to_string(), 1.0)).collect();
        let snap = join(&free, &[], &[], &[], 0);
        assert_eq!((snap.gpus.len(), snap.truncated), (MAX_GPUS, 3));
    }
}

//! Step 4 from the error and the live readings: several GPUs, one fuller than the others.

use crate::fixes::GivesUp;
use crate::oom::OomKind;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::{gib, pct};
use crate::oom::diagnose::{CauseId, FixId, LiveGpu};

/// Step 4 from the error: messages naming several GPUs.
pub(crate) fn several_gpus(f: &Facts, b: &mut Board) {
    live_imbalance(f, b);
    let seen = &f.r.gpus_seen;
    if seen.len() < 2 {
        return;
    }
    let list: Vec<String> = seen.iter().map(u32::to_string).collect();
    b.add(
        CauseId::GpuImbalance,
        25,
        format!(
            "the log has out-of-memory errors on GPUs {}: the work is split over several GPUs; check whether one \
             carries more than its share",
            list.join(", ")
        ),
    );
    let code = match f.r.kind {
        Some(OomKind::LlamaCpp) => {
            "llama-server ... --tensor-split 1,1   # proportional to each GPU's free memory".into()
        }
        _ => format!("{}.from_pretrained(\"{}\", device_map=\"balanced\")", f.auto_class, f.repo),
    };
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::GpuImbalance,
        "Balance the split over the GPUs".into(),
        GivesUp::Nothing,
        None,
        code,
    ));
}

/// Step 4 from the live readings: the failing GPU is much fuller than the others.
fn live_imbalance(f: &Facts, b: &mut Board) {
    let Some(failing) = f.live else { return };
    let others: Vec<&LiveGpu> = f.all_live.iter().filter(|g| g.index != failing.index && g.total_bytes > 0).collect();
    let Some(emptiest) = others.iter().max_by_key(|g| g.free_bytes) else { return };
    let used = |g: &LiveGpu| g.used_bytes as f64 / g.total_bytes.max(1) as f64;
    if used(failing) >= 0.8 && used(emptiest) <= used(failing) * 0.6 {
        b.add(
            CauseId::GpuImbalance,
            55,
            format!(
                "GPU {} uses {} now while GPU {} uses {} and has {} free (agent reading)",
                failing.index,
                pct(failing.used_bytes, failing.total_bytes),
                emptiest.index,
                pct(emptiest.used_bytes, emptiest.total_bytes),
                gib(emptiest.free_bytes)
            ),
        );
    }
}

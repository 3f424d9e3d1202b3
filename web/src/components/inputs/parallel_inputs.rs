//! Tensor-parallel degree and pipeline stages: the GPUs are `tp × stages`
//! in each of the engine's data-parallel replicas (vLLM's `dp`), shown for
//! two GPUs or more, and not for llama.cpp.

use leptos::prelude::*;
use shared::estimate::MAX_GPUS;
use shared::link::LinkState;
use shared::plan::EngineRules;

use super::NumberField;
use crate::state::use_app;

/// The GPUs of one pipeline stage over every data-parallel replica.
fn stage_gpus(s: &LinkState, tp: u64) -> u64 {
    tp.max(1).saturating_mul(s.engine.replicas().max(1))
}

/// Sets `tp × stages` GPUs in each replica, keeping the mixed ones; `false`
/// if that is too few or too many.
fn set_split(s: &mut LinkState, tp: u64, stages: u64) -> bool {
    let total = stage_gpus(s, tp).saturating_mul(stages);
    let more = s.more_gpus.len() as u64;
    if total <= more || total > MAX_GPUS as u64 {
        return false;
    }
    s.tp = tp;
    s.gpu_count = total - more;
    true
}

#[component]
pub fn ParallelInputs() -> impl IntoView {
    let app = use_app();
    let tp = Signal::derive(move || app.inputs.with(|s| s.tp));
    let stages = Signal::derive(move || app.inputs.with(|s| s.total_gpus() / stage_gpus(s, s.tp)));
    // One GPU has nothing to split, and llama.cpp splits by its own flags.
    let no_tp = Memo::new(move |_| app.inputs.with(|s| s.total_gpus() < 2 || !s.engine.kind().splits_tensors()));
    view! {
        <div class="row2" hidden=move || no_tp.get()>
            <NumberField id="tp" label="Tensor parallel (tp)" value=tp lo=1 hi=MAX_GPUS as u64
                on_commit=Callback::new(move |v| app.edit(|s| { let st = s.total_gpus().div_ceil(stage_gpus(s, s.tp)); let _ = set_split(s, v, st.max(1)); }))/>
            <NumberField id="pp" label="Pipeline stages (pp)" value=stages lo=1 hi=MAX_GPUS as u64
                on_commit=Callback::new(move |v| app.edit(|s| { let t = s.tp; let _ = set_split(s, t, v); }))/>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_keep_the_mixed_gpus() {
        let mut s = LinkState::default();
        assert!(set_split(&mut s, 2, 2));
        assert_eq!((s.tp, s.gpu_count), (2, 4));
        s.more_gpus.push(shared::link::GpuChoice::Custom(1 << 34));
        assert!(set_split(&mut s, 1, 2));
        assert_eq!(s.total_gpus(), 2);
        assert!(!set_split(&mut s, 1, 1));
    }

    #[test]
    fn stages_are_counted_in_one_replica() {
        let mut s = LinkState { engine: shared::engines::EngineKind::Vllm.with_defaults(), ..LinkState::default() };
        s.engine.set_setting("dp", "2").unwrap_or_else(|e| panic!("{e}"));
        assert!(set_split(&mut s, 2, 2));
        assert_eq!((s.tp, s.gpu_count), (2, 8), "2 replicas of 2 stages of TP 2");
    }
}

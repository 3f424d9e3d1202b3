//! More GPUs of other kinds after the first kind (e.g. one 24 GB and one 16 GB card).

use leptos::prelude::*;
use shared::catalog::gpus;
use shared::estimate::MAX_GPUS;
use shared::link::GpuChoice;
use shared::units::{UnitSystem, format_bytes};

use crate::state::use_app;

/// The GPU "Add a different GPU" starts with: a 16 GB card.
const ADDED: &str = "rtx-4080";

#[component]
pub fn MixedGpus() -> impl IntoView {
    let app = use_app();
    let count = Memo::new(move |_| app.inputs.with(|s| s.more_gpus.len()));
    let add = move |_| {
        app.edit(|s| {
            if s.total_gpus() < MAX_GPUS as u64 {
                s.more_gpus.push(GpuChoice::Catalog(ADDED.into()));
            }
        })
    };
    view! {
        <div class="mixed">
            {move || (0..count.get()).map(|i| view! { <MixedRow index=i/> }).collect_view()}
            <button type="button" class="ghost" data-testid="mix-add" on:click=add>"+ Add a different GPU"</button>
        </div>
    }
}

#[component]
fn MixedRow(index: usize) -> impl IntoView {
    let app = use_app();
    let current = Memo::new(move |_| app.inputs.with(|s| s.more_gpus.get(index).cloned()));
    let change = move |ev| {
        let v = event_target_value(&ev);
        app.edit(|s| {
            if let Some(slot) = s.more_gpus.get_mut(index)
                && !v.is_empty()
            {
                *slot = GpuChoice::Catalog(v);
            }
        })
    };
    let remove = move |_| {
        app.edit(|s| {
            if index < s.more_gpus.len() {
                s.more_gpus.remove(index);
            }
        })
    };
    let custom = move || match current.get() {
        Some(GpuChoice::Custom(b)) => Some(format!("custom {}", format_bytes(b, UnitSystem::Binary))),
        _ => None,
    };
    view! {
        <div class="inline mix-row">
            <label for=format!("mix-{index}")>{format!("GPU {} (another kind)", index + 2)}</label>
            <select id=format!("mix-{index}") data-testid=format!("mix-gpu-{index}") on:change=change>
                {move || custom().map(|c| view! { <option value="" selected=true>{c}</option> })}
                {gpus().iter().map(|g| {
                    let id = g.id.clone();
                    let id2 = id.clone();
                    let text = format!("{} · {}", g.name, format_bytes(g.memory_bytes, UnitSystem::Binary));
                    view! { <option value=id selected=move || current.with(|c| matches!(c, Some(GpuChoice::Catalog(x)) if *x == id2))>{text}</option> }
                }).collect_view()}
            </select>
            <button type="button" class="ghost" data-testid=format!("mix-remove-{index}") aria-label="Remove this GPU" on:click=remove>"×"</button>
        </div>
    }
}

//! The GPU (catalog or custom size) and how many.

use leptos::prelude::*;
use shared::catalog::gpus;
use shared::estimate::MAX_GPUS;
use shared::link::GpuChoice;
use shared::units::{UnitSystem, format_bytes, parse_size};

use super::NumberField;
use crate::state::use_app;

const CUSTOM: &str = "custom";

/// The name as people type it: a select finds its options by their first
/// letters, and "RTX 4060" did not find "GeForce RTX 4060 Ti" (issue 34).
pub fn typed_name(name: &str) -> &str {
    name.trim_start_matches("GeForce ").trim_start_matches("Tesla ")
}

#[component]
pub fn GpuPicker() -> impl IntoView {
    let app = use_app();
    let chosen = Memo::new(move |_| {
        app.inputs.with(|s| match &s.gpu {
            GpuChoice::Catalog(id) => id.clone(),
            GpuChoice::Custom(_) => CUSTOM.into(),
        })
    });
    let start = app.inputs.with_untracked(|s| match s.gpu {
        GpuChoice::Custom(b) => format_bytes(b, UnitSystem::Binary).replace(' ', ""),
        GpuChoice::Catalog(_) => "24GiB".into(),
    });
    let custom_text = RwSignal::new(start);
    let custom_error = RwSignal::new(String::new());
    let apply_custom = move || match parse_size(&custom_text.get_untracked()) {
        Ok(b) if b > 0 && b <= u64::MAX / 4 => {
            custom_error.set(String::new());
            app.edit(|s| s.gpu = GpuChoice::Custom(b));
        }
        Ok(_) => custom_error.set("out of range".into()),
        Err(e) => custom_error.set(e.to_string()),
    };
    let change = move |ev| {
        let v = event_target_value(&ev);
        if v == CUSTOM {
            apply_custom();
        } else {
            app.edit(|s| s.gpu = GpuChoice::Catalog(v));
        }
    };
    let count = Signal::derive(move || app.inputs.with(|s| s.gpu_count));
    view! {
        <fieldset class="row2">
            <legend>"GPUs"</legend>
            <div class="field">
                <label for="gpu">"GPU"</label>
                <select id="gpu" data-testid="gpu-select" on:change=change>
                    {gpus().iter().map(|g| {
                        let id = g.id.clone();
                        let id2 = id.clone();
                        let text = format!("{} · {}", typed_name(&g.name), format_bytes(g.memory_bytes, UnitSystem::Binary));
                        view! { <option value=id selected=move || chosen.with(|c| *c == id2)>{text}</option> }
                    }).collect_view()}
                    <option value=CUSTOM selected=move || chosen.with(|c| c == CUSTOM)>"Custom size…"</option>
                </select>
                <Show when=move || chosen.with(|c| c == CUSTOM)>
                    <form class="inline" on:submit=move |ev| { ev.prevent_default(); apply_custom(); }>
                        <label for="gpu-mem">"Memory per GPU"</label>
                        <input id="gpu-mem" type="text" data-testid="gpu-mem" placeholder="24GiB, 80GB, 81559MiB"
                            prop:value=move || custom_text.get() on:input=move |ev| custom_text.set(event_target_value(&ev))
                            on:change=move |_| apply_custom()/>
                        <p class="error" role="alert">{move || custom_error.get()}</p>
                    </form>
                </Show>
            </div>
            <NumberField id="gpu-count" label="How many" value=count lo=1 hi=MAX_GPUS as u64
                on_commit=Callback::new(move |v| app.edit(|s| s.gpu_count = v))/>
        </fieldset>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_gpu_option_starts_with_what_people_type() {
        let names: Vec<&str> = shared::catalog::gpus().iter().map(|g| super::typed_name(&g.name)).collect();
        for typed in ["RTX 4060", "RTX 4090", "RTX A6000", "T4", "H100", "A100", "L40S"] {
            assert!(names.iter().any(|n| n.starts_with(typed)), "{typed}");
        }
    }
}

//! The searchable preset list.

use leptos::prelude::*;
use shared::catalog::{MODEL_PRESETS, ModelPreset};
use shared::link::ModelSource;

use crate::state::use_app;

/// Presets whose name, id or repository contains every word of `query`
/// (ASCII case folding: the names are ASCII, and `to_lowercase` would bring
/// the Unicode case tables into the bundle).
pub fn matching(query: &str) -> Vec<&'static ModelPreset> {
    let words: Vec<String> = query.split_whitespace().map(str::to_ascii_lowercase).collect();
    MODEL_PRESETS
        .iter()
        .filter(|p| {
            let hay = format!("{} {} {}", p.name, p.id, p.hf_repo).to_ascii_lowercase();
            words.iter().all(|w| hay.contains(w.as_str()))
        })
        .collect()
}

#[component]
pub fn PresetSelect() -> impl IntoView {
    let app = use_app();
    let query = RwSignal::new(String::new());
    let selected = Memo::new(move |_| {
        app.inputs.with(|s| match &s.model {
            ModelSource::Preset(id) => id.clone(),
            _ => String::new(),
        })
    });
    // The chosen preset stays listed whatever the filter says.
    let options = Memo::new(move |_| {
        let sel = selected.get();
        let mut list: Vec<(&'static str, &'static str)> =
            query.with(|q| matching(q)).into_iter().map(|p| (p.id, p.name)).collect();
        if let Some(p) = MODEL_PRESETS.iter().find(|p| p.id == sel)
            && !list.iter().any(|(id, _)| *id == p.id)
        {
            list.insert(0, (p.id, p.name));
        }
        list
    });
    let choose = move |ev| {
        let id = event_target_value(&ev);
        if !id.is_empty() {
            app.edit(|s| s.model = ModelSource::Preset(id));
        }
    };
    view! {
        <div class="field">
            <label for="preset-search">"Search presets"</label>
            <input id="preset-search" type="search" placeholder="llama 8b, qwen, mixtral…" data-testid="model-search"
                on:input=move |ev| query.set(event_target_value(&ev)) prop:value=move || query.get()/>
            <label for="preset-select" class="sr-only">"Preset"</label>
            <select id="preset-select" data-testid="model-select" on:change=choose>
                <Show when=move || selected.with(String::is_empty)>
                    <option value="" selected>"(custom model)"</option>
                </Show>
                <For each=move || options.get() key=|(id, _)| *id let:opt>
                    <option value=opt.0 selected=move || selected.with(|s| s == opt.0)>{opt.1}</option>
                </For>
            </select>
        </div>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn filters_by_every_word() {
        let ids: Vec<&str> = super::matching("llama 8b").iter().map(|p| p.id).collect();
        assert!(ids.contains(&"llama-3.1-8b"));
        assert!(!ids.contains(&"qwen3-8b"));
        assert_eq!(super::matching("").len(), shared::catalog::MODEL_PRESETS.len());
        assert!(super::matching("no such model").is_empty());
    }
}

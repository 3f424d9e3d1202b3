//! The searchable preset list.

use leptos::prelude::*;
use shared::catalog::{MODEL_PRESETS, ModelPreset};
use shared::link::ModelSource;

use wasm_bindgen::JsCast;

use crate::html::Html;
use crate::state::use_app;
use crate::view_model::hub::{HubState, repo_from_text};

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

/// How many matches the combobox lists at once (the select below lists all).
const SHOWN: usize = 8;

/// The preset whose repository is `id` (a pasted id of a preset is the preset).
fn preset_of_repo(id: &str) -> Option<&'static ModelPreset> {
    MODEL_PRESETS.iter().find(|p| p.hf_repo.eq_ignore_ascii_case(id))
}

/// The model field: an ARIA 1.2 combobox (type-ahead over the presets, arrow
/// keys, Enter picks the highlighted or first match, Escape closes) that also
/// takes a Hub id or a model page's URL (Enter loads it from the Hub), and
/// the full preset list as a plain select.
#[component]
pub fn PresetSelect() -> impl IntoView {
    let app = use_app();
    let query = RwSignal::new(String::new());
    let open = RwSignal::new(false);
    let active = RwSignal::new(0usize);
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
    let shown = Memo::new(move |_| {
        query.with(|q| {
            if q.trim().is_empty() {
                Vec::new()
            } else {
                matching(q).into_iter().take(SHOWN).map(|p| (p.id, p.name)).collect()
            }
        })
    });
    let hub_id = Memo::new(move |_| query.with(|q| app.inputs.with(|s| repo_from_text(q, s.hub_base()))));
    let done = move || {
        query.set(String::new());
        open.set(false);
    };
    let pick = move |id: &'static str| {
        app.edit(|s| s.model = ModelSource::Preset(id.to_owned()));
        done();
    };
    let enter = move || {
        if let Some(id) = hub_id.get_untracked() {
            match preset_of_repo(&id) {
                Some(p) => pick(p.id),
                None => {
                    // A second Enter retries a failed fetch.
                    app.hub.set(HubState::Idle);
                    app.edit(|s| s.model = ModelSource::Hub(id));
                    done();
                }
            }
        } else if let Some((id, _)) = shown.with_untracked(|m| m.get(active.get_untracked()).or(m.first()).copied()) {
            pick(id);
        }
    };
    let keydown = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "ArrowDown" | "ArrowUp" => {
            ev.prevent_default();
            let n = shown.with_untracked(Vec::len);
            if !open.get_untracked() {
                open.set(true);
            } else if n > 0 {
                active.update(|a| *a = if ev.key() == "ArrowDown" { (*a + 1) % n } else { (*a + n - 1) % n });
            }
        }
        "Enter" => {
            ev.prevent_default();
            enter();
        }
        "Escape" if open.get_untracked() => {
            ev.prevent_default();
            open.set(false);
        }
        "Escape" => query.set(String::new()),
        _ => {}
    };
    let expanded = move || open.get() && shown.with(|m| !m.is_empty());
    // One escaped HTML string (as the answer's panels): a typed view per
    // option cost ~5 kB gzip of first load. Picked by one delegated handler.
    let listbox = move || {
        let mut h = Html::new();
        let now = active.get();
        for (i, (id, name)) in shown.get().into_iter().enumerate() {
            h.raw("<li role=\"option\" data-testid=\"preset-option\"")
                .attr("id", &["preset-opt-", &i.to_string()].concat())
                .attr("data-id", id)
                .attr("aria-selected", if i == now { "true" } else { "false" })
                .raw(">")
                .t(name)
                .raw("</li>");
        }
        h.finish()
    };
    let press = move |ev: leptos::ev::MouseEvent| {
        // Keeps focus in the field (a click would blur it first).
        ev.prevent_default();
        let id = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|e| e.closest("[data-id]").ok().flatten())
            .and_then(|e| e.get_attribute("data-id"));
        if let Some(p) = id.and_then(|id| MODEL_PRESETS.iter().find(|p| p.id == id)) {
            pick(p.id);
        }
    };
    // The full list, escaped through the builder as the listbox is (a keyed
    // `<For>` of options brought tachys's list diffing into the first load).
    let all = move || {
        selected.with(|sel| {
            let mut h = Html::new();
            if sel.is_empty() {
                h.raw("<option value=\"\" selected>(custom model)</option>");
            }
            options.with(|list| {
                for (id, name) in list {
                    h.raw("<option").attr("value", id);
                    if id == sel {
                        h.raw(" selected");
                    }
                    h.raw(">").t(name).raw("</option>");
                }
            });
            h.finish()
        })
    };
    let choose = move |ev| {
        let id = event_target_value(&ev);
        if !id.is_empty() {
            app.edit(|s| s.model = ModelSource::Preset(id));
        }
    };
    view! {
        <div class="field">
            <label for="preset-search">"Search presets or paste a Hub id or URL"</label>
            <div class="combo">
            <input id="preset-search" type="text" role="combobox" aria-autocomplete="list" aria-controls="preset-listbox"
                aria-expanded=move || expanded().to_string() autocomplete="off" spellcheck="false"
                aria-activedescendant=move || expanded().then(|| format!("preset-opt-{}", active.get()))
                placeholder="llama 8b, qwen 32, Qwen/Qwen2.5-7B…" data-testid="model-search"
                on:input=move |ev| { query.set(event_target_value(&ev)); open.set(true); active.set(0); }
                on:keydown=keydown on:blur=move |_| open.set(false) prop:value=move || query.get()/>
            <ul id="preset-listbox" class="listbox" role="listbox" aria-label="Matching presets" data-testid="preset-listbox"
                hidden=move || !expanded() inner_html=listbox on:mousedown=press></ul>
            </div>
            <p class="hint" data-testid="hub-hint" hidden=move || hub_id.with(Option::is_none)>
                "Enter loads " {move || hub_id.get().unwrap_or_default()} " from the Hub."
            </p>
            <label for="preset-select" class="sr-only">"Preset"</label>
            <select id="preset-select" data-testid="model-select" on:change=choose inner_html=all></select>
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

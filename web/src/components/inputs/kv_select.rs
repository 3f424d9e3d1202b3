//! The KV cache dtype.

use leptos::prelude::*;
use shared::kv::KvDtype;

use crate::state::use_app;

#[component]
pub fn KvSelect() -> impl IntoView {
    let app = use_app();
    let chosen = Memo::new(move |_| app.inputs.with(|s| s.kv_dtype.map(|k| k.id()).unwrap_or_default()));
    let default_label = Memo::new(move |_| {
        app.scenario.with(|s| match (s, app.inputs.with(|i| i.kv_dtype)) {
            (Some(s), None) => format!("default ({})", s.kv_dtype.id()),
            _ => "default (the engine's own)".into(),
        })
    });
    let change = move |ev| {
        let v = event_target_value(&ev);
        // A chosen dtype replaces an old link's default, as its link says.
        app.edit(|s| {
            s.kv_dtype = KvDtype::parse(&v).ok();
            s.kv_activation &= s.kv_dtype.is_none();
        });
    };
    view! {
        <div class="field">
            <label for="kv">"KV cache dtype"</label>
            <select id="kv" data-testid="kv-select" on:change=change>
                <option value="" selected=move || chosen.with(|c| c.is_empty())>{move || default_label.get()}</option>
                {KvDtype::CHOICES.iter().map(|k| {
                    let id = k.id();
                    view! { <option value=id selected=move || chosen.get() == id>{id}</option> }
                }).collect_view()}
            </select>
        </div>
    }
}

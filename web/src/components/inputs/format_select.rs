//! The weight format.

use leptos::prelude::*;
use shared::formats::WeightFormat;

use crate::state::use_app;

#[component]
pub fn FormatSelect() -> impl IntoView {
    let app = use_app();
    let chosen = Memo::new(move |_| app.inputs.with(|s| s.weights.map(WeightFormat::id).unwrap_or_default()));
    let default_label = Memo::new(move |_| {
        app.model.with(|m| match m {
            Ok(m) => format!("checkpoint ({})", m.default_format().id()),
            Err(_) => "checkpoint".into(),
        })
    });
    let describe =
        Memo::new(move |_| app.scenario.with(|s| s.as_ref().map(|s| s.weights.describe()).unwrap_or_default()));
    let change = move |ev| {
        let v = event_target_value(&ev);
        app.edit(|s| s.weights = WeightFormat::parse(&v).ok());
    };
    view! {
        <div class="field">
            <label for="weights">"Weight format"</label>
            <select id="weights" data-testid="format-select" on:change=change aria-describedby="weights-desc">
                <option value="" selected=move || chosen.with(String::is_empty)>{move || default_label.get()}</option>
                {WeightFormat::CHOICES.iter().map(|f| {
                    let id = f.id();
                    let (value, text) = (id.clone(), id.clone());
                    view! { <option value=value selected=move || chosen.with(|c| *c == id)>{text}</option> }
                }).collect_view()}
                // A format a link or a log names beyond the list (`iq2_xxs`,
                // `gptq-int4-g32`): shown as chosen rather than dropped.
                {move || {
                    let c = chosen.get();
                    (!c.is_empty() && !WeightFormat::CHOICES.iter().any(|f| f.id() == c)).then(|| {
                        view! { <option value=c.clone() selected=true>{c.clone()}</option> }
                    })
                }}
            </select>
            <p class="hint" id="weights-desc">{move || describe.get()}</p>
        </div>
    }
}

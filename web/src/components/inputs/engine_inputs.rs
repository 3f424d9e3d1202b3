//! The engine and its knobs (each engine's own settings, empty for its default).

use leptos::prelude::*;
use shared::engines::EngineKind;
use shared::link::{new_engine, with_knob};

use crate::state::use_app;
use shared::engines::knobs::About;

use crate::view_model::engine::{knob_default, knob_text, knobs};

#[component]
pub fn EngineInputs() -> impl IntoView {
    let app = use_app();
    let kind = Memo::new(move |_| app.inputs.with(|s| s.engine.kind()));
    let change = move |ev| {
        if let Ok(k) = EngineKind::parse(&event_target_value(&ev)) {
            app.edit(|s| {
                s.engine = new_engine(k);
                // A new engine's default cache is its own, not an old link's.
                s.kv_activation = false;
                if !k.splits_tensors() {
                    s.tp = 1;
                }
            });
        }
    };
    view! {
        <fieldset>
            <legend>"Engine"</legend>
            <div class="field">
                <label for="engine">"Inference engine"</label>
                <select id="engine" data-testid="engine-select" on:change=change>
                    {EngineKind::ALL.iter().map(|k| {
                        let k = *k;
                        view! { <option value=k.id() selected=move || kind.get() == k>{k.title()}</option> }
                    }).collect_view()}
                </select>
            </div>
            {move || view! { <div class="knobs">{knobs(kind.get()).into_iter().map(|k| view! { <KnobInput knob=k/> }).collect_view()}</div> }}
        </fieldset>
    }
}

#[component]
fn KnobInput(knob: &'static About) -> impl IntoView {
    let app = use_app();
    let key = knob.key;
    let id = format!("knob-{key}");
    let error = RwSignal::new(String::new());
    let value = Memo::new(move |_| app.inputs.with(|s| knob_text(&s.engine, knob)));
    let kind = app.inputs.with_untracked(|s| s.engine.kind());
    let hint =
        Memo::new(move |_| app.estimate.with(|e| e.as_ref().map(|e| knob_default(e, kind, key)).unwrap_or_default()));
    let commit = move |text: String| {
        let next = app.inputs.with_untracked(|s| with_knob(&s.engine, key, &text));
        match next {
            Ok(e) => {
                error.set(String::new());
                app.edit(|s| s.engine = e);
            }
            Err(why) => error.set(why),
        }
    };
    let control = if knob.choices.is_empty() {
        view! {
            <input id=id.clone() type="text" data-testid=id.clone() placeholder=move || hint.get()
                prop:value=move || value.get() on:change=move |ev| commit(event_target_value(&ev))
                aria-invalid=move || (!error.with(String::is_empty)).to_string()/>
        }
        .into_any()
    } else {
        let first = knob.choices[0];
        view! {
            <select id=id.clone() data-testid=id.clone() on:change=move |ev| {
                let v = event_target_value(&ev);
                commit(if v == first { String::new() } else { v })
            }>
                {knob.choices.iter().map(|c| {
                    let c = *c;
                    view! { <option value=c selected=move || value.with(|v| v == c || (v.is_empty() && c == first))>{c}</option> }
                }).collect_view()}
            </select>
        }
        .into_any()
    };
    view! {
        <div class="field">
            <label for=id>{knob.label}</label>
            {control}
            <p class="error" role="alert">{move || error.get()}</p>
        </div>
    }
}

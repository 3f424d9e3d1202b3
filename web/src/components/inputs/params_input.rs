//! The last resort: a parameter count alone.

use leptos::prelude::*;
use shared::link::{ModelSource, parse_params};

use crate::state::use_app;

#[component]
pub fn ParamsInput() -> impl IntoView {
    let app = use_app();
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(String::new());
    let apply = move || match parse_params(&text.get_untracked()) {
        Ok(n) => {
            error.set(String::new());
            app.edit(|s| s.model = ModelSource::Params(n));
        }
        Err(e) => error.set(e),
    };
    view! {
        <form class="field inline" on:submit=move |ev| { ev.prevent_default(); apply(); }>
            <label for="params">"Parameters"</label>
            <input id="params" type="text" placeholder="8b, 1.5b, 350m" data-testid="params-input"
                on:input=move |ev| text.set(event_target_value(&ev)) prop:value=move || text.get()/>
            <button type="submit" data-testid="params-apply">"Use"</button>
            <p class="hint">"The architecture is then guessed: weights are right, the KV cache is rough."</p>
            <p class="error" role="alert">{move || error.get()}</p>
        </form>
    }
}

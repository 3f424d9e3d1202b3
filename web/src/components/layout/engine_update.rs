//! "Planned for vLLM 0.8 – 0.20 defaults; newer: vLLM 0.21+ … — switch?":
//! shown when the opened link pins older engine rules than the newest this
//! page knows. The link's plan stays until the person switches.

use leptos::prelude::*;
use shared::link::{NewerEngine, newer_engine};

use crate::state::use_app;

#[component]
pub fn EngineUpdate() -> impl IntoView {
    let app = use_app();
    // Gone once the plan's engine is the newest (switched here or by hand).
    let shown = Memo::new(move |_| {
        app.engine_offer.with(Option::is_some) && app.inputs.with(|s| newer_engine(&s.engine).is_some())
    });
    // From the plan as it is now (the person may have changed the version by hand).
    let text = move |f: fn(&NewerEngine) -> String| {
        app.inputs.with(|s| newer_engine(&s.engine).as_ref().map(f).unwrap_or_default())
    };
    let switch = move |_| {
        if let Some(newer) = app.inputs.with_untracked(|s| newer_engine(&s.engine)) {
            app.edit(|s| s.engine = newer.engine);
        }
        app.engine_offer.set(None);
    };
    view! {
        <Show when=move || shown.get()>
            <div class="notice" role="status" data-testid="engine-update">
                <p data-testid="engine-update-text">{move || text(|o| format!("{} Switch?", o.message()))}</p>
                <div class="actions">
                    <button type="button" class="primary" data-testid="engine-switch" on:click=switch>
                        {move || text(|o| format!("Switch to {}", o.newest))}
                    </button>
                    <button type="button" class="ghost" data-testid="engine-keep" on:click=move |_| app.engine_offer.set(None)>
                        "Keep the link's"
                    </button>
                </div>
            </div>
        </Show>
    }
}

//! "Planned for vLLM 0.8 – 0.20 defaults; newer: vLLM 0.21+ … — switch?":
//! shown when the opened link pins older engine rules than the newest this
//! page knows. The link's plan stays until the person switches.

use leptos::prelude::*;
use shared::link::newer_engine;

use crate::state::use_app;

#[component]
pub fn EngineUpdate() -> impl IntoView {
    let app = use_app();
    // Gone once the plan's engine is the newest (switched here or by hand).
    let offer = Memo::new(move |_| app.engine_offer.get().and_then(|_| app.inputs.with(|s| newer_engine(&s.engine))));
    let switch = move |_| {
        if let Some(newer) = offer.get_untracked() {
            app.edit(|s| s.engine = newer.engine);
        }
        app.engine_offer.set(None);
    };
    let keep = move |_| app.engine_offer.set(None);
    view! {
        {move || offer.get().map(|o| view! {
            <div class="notice" role="status" data-testid="engine-update">
                <p data-testid="engine-update-text">{o.message()}" Switch?"</p>
                <div class="actions">
                    <button type="button" class="primary" data-testid="engine-switch" on:click=switch>
                        {format!("Switch to {}", o.newest)}
                    </button>
                    <button type="button" class="ghost" data-testid="engine-keep" on:click=keep>"Keep the link's"</button>
                </div>
            </div>
        })}
    }
}

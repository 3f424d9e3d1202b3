//! The page: header, notices, the plan's inputs, and the answer.

use leptos::prelude::*;

use crate::components::answer::Answer;
use crate::components::inputs::Inputs;
use crate::components::layout::{EngineUpdate, Footer, Header, Notices};
use crate::state::{self, AppState};

#[component]
pub fn App() -> impl IntoView {
    let decoded = state::url::initial();
    let app = AppState::new(decoded.state, decoded.notices);
    provide_context(app);
    // Before the URL sync rewrites the address bar: reads `#token=` once.
    crate::components::live::provide(app);
    state::url::sync(app);
    state::hub::watch(app);
    state::reader::watch(app);
    // Marks the moment the first render is done, for `cargo xtask bench-web`.
    Effect::new(move |_| {
        if let Some(p) = window().performance() {
            let _ = p.mark("headroom-ready");
        }
    });
    view! {
        <div class="app" data-theme=move || app.theme.get().attr() data-testid="app">
            <Header/>
            <Notices/>
            <EngineUpdate/>
            <main class="layout">
                <Inputs/>
                <Answer/>
            </main>
            <crate::components::live::LiveSection/>
            <Footer/>
        </div>
    }
}

//! What a link or an input could not use, shown instead of a blank page.

use leptos::prelude::*;

use crate::state::use_app;

#[component]
pub fn Notices() -> impl IntoView {
    let app = use_app();
    let has = move || app.notices.with(|n| !n.is_empty());
    view! {
        <Show when=has>
            <div class="notice" role="alert" data-testid="notice">
                <ul>
                    <For each=move || app.notices.get() key=|n| n.clone() let:n>
                        <li>{n}</li>
                    </For>
                </ul>
                <button type="button" class="ghost" data-testid="notice-dismiss" on:click=move |_| app.notices.set(Vec::new())>
                    "Dismiss"
                </button>
            </div>
        </Show>
    }
}

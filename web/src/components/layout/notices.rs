//! What a link or an input could not use, shown instead of a blank page.

use leptos::prelude::*;

use crate::html::Html;
use crate::state::use_app;

#[component]
pub fn Notices() -> impl IntoView {
    let app = use_app();
    let has = move || app.notices.with(|n| !n.is_empty());
    // Escaped items through the page's builder: a keyed `<For>` brought
    // tachys's list diffing into the first load for two short lists.
    let items = move || {
        app.notices.with(|n| {
            let mut h = Html::new();
            for text in n {
                h.el("li", "", text);
            }
            h.finish()
        })
    };
    view! {
        <Show when=has>
            <div class="notice" role="alert" data-testid="notice">
                <ul inner_html=items></ul>
                <button type="button" class="ghost" data-testid="notice-dismiss" on:click=move |_| app.notices.set(Vec::new())>
                    "Dismiss"
                </button>
            </div>
        </Show>
    }
}

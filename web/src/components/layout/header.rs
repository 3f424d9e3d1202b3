//! The title and the page-wide controls.

use leptos::prelude::*;

use super::{CopyLink, ThemeToggle, UnitsToggle};

#[component]
pub fn Header() -> impl IntoView {
    view! {
        <header class="top">
            <div class="brand">
                <h1>"Headroom"</h1>
                <p class="tagline">"Will this LLM fit on this GPU for inference?"</p>
            </div>
            <div class="toolbar" role="toolbar" aria-label="Page settings">
                <UnitsToggle/>
                <ThemeToggle/>
                <CopyLink/>
                <crate::components::live::LiveStatusChip/>
            </div>
        </header>
    }
}

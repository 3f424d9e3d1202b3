//! The title, the page's tools within reach of the verdict ("Diagnose an
//! OOM", "Live") and the page-wide controls.

use leptos::prelude::*;

use super::{CopyLink, SkipLink, ThemeToggle, UnitsToggle, focus_id};

/// Opens the `<details>` with id `details` (if closed: its `toggle` handler
/// then loads what it needs) and focuses the heading `heading` inside it.
fn open_and_focus(details: &str, heading: &str) {
    if let Some(d) = document().get_element_by_id(details)
        && !d.has_attribute("open")
    {
        let _ = d.set_attribute("open", "");
    }
    focus_id(heading);
}

#[component]
pub fn Header() -> impl IntoView {
    let go = |details: &'static str, heading: &'static str| {
        move |ev: leptos::ev::MouseEvent| {
            ev.prevent_default();
            open_and_focus(details, heading);
        }
    };
    view! {
        <header class="top">
            <SkipLink/>
            <div class="brand">
                <h1>"Headroom"</h1>
                <p class="tagline">"Will this LLM fit on this GPU for inference?"</p>
            </div>
            <nav class="tools" aria-label="Tools">
                <a href="#diagnose" data-testid="nav-diagnose" on:click=go("diagnose", "diagnose-heading")>"Diagnose an OOM"</a>
                <a href="#live" data-testid="nav-live" on:click=go("connect-panel", "connect-heading")>"Live"</a>
            </nav>
            <div class="toolbar" role="toolbar" aria-label="Page settings">
                <UnitsToggle/>
                <ThemeToggle/>
                <CopyLink/>
                <crate::components::live::LiveStatusChip/>
            </div>
        </header>
    }
}

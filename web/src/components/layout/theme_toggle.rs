//! Light, dark or the system's choice.

use leptos::prelude::*;

use crate::state::{Theme, use_app};

#[component]
pub fn ThemeToggle() -> impl IntoView {
    let app = use_app();
    let next = move |_| {
        app.theme.update(|t| {
            *t = match t {
                Theme::System => Theme::Dark,
                Theme::Dark => Theme::Light,
                Theme::Light => Theme::System,
            }
        })
    };
    let label = move || match app.theme.get() {
        Theme::System => "Theme: system",
        Theme::Dark => "Theme: dark",
        Theme::Light => "Theme: light",
    };
    view! {
        <button type="button" class="ghost" data-testid="theme-toggle" on:click=next aria-label=label>
            {label}
        </button>
    }
}

//! The cheapest changes that make the plan fit, ranked by what they give up,
//! each with the memory it saves, copyable code and an "apply" button.

use leptos::prelude::*;

use super::panel;
use crate::state::use_app;
use crate::view_model::html::fixes_html;

#[component]
pub fn FixesPanel() -> impl IntoView {
    let app = use_app();
    panel(move || {
        let units = app.units.get();
        app.fixes.with(|f| fixes_html(f, units))
    })
}

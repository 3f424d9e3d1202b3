//! Assumptions and caveats of the estimate.

use leptos::prelude::*;

use super::panel;
use crate::state::use_app;
use crate::view_model::html::warnings_html;

#[component]
pub fn Warnings() -> impl IntoView {
    let app = use_app();
    panel(move || app.estimate.with(|e| e.as_ref().map(|e| warnings_html(&e.warnings)).unwrap_or_default()))
}

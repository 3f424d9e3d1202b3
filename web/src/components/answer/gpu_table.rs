//! The per-GPU figures as a table (the bars' exact numbers, for reading and screen readers).

use leptos::prelude::*;

use super::panel;
use crate::state::use_app;
use crate::view_model::bars::rows;
use crate::view_model::html::table_html;

#[component]
pub fn GpuTable() -> impl IntoView {
    let app = use_app();
    panel(move || {
        let units = app.units.get();
        app.estimate.with(|e| table_html(&e.as_ref().map(|e| rows(e, units)).unwrap_or_default()))
    })
}

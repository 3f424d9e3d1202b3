//! Per GPU, a stacked bar of weights, KV cache, activations, overhead and
//! free memory against its capacity, with exact figures on hover.

use leptos::prelude::*;

use super::panel;
use crate::state::use_app;
use crate::view_model::bars::bars;
use crate::view_model::html::bars_html;

#[component]
pub fn GpuBars() -> impl IntoView {
    let app = use_app();
    panel(move || {
        let units = app.units.get();
        app.estimate.with(|e| bars_html(&e.as_ref().map(|e| bars(e, units)).unwrap_or_default()))
    })
}

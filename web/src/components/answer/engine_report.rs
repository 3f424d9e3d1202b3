//! What the engine itself would report (vLLM's log lines, SGLang's token
//! pool, llama.cpp's offload), the layer-wise `device_map`, and speed bounds.

use leptos::prelude::*;

use super::panel;
use crate::state::use_app;
use crate::view_model::engine::{report_view, speed_text};
use crate::view_model::html::engine_html;

#[component]
pub fn EngineReport() -> impl IntoView {
    let app = use_app();
    panel(move || {
        let units = app.units.get();
        app.estimate.with(|e| {
            let Some(e) = e.as_ref() else { return String::new() };
            let repo = app.model.with(|m| m.as_ref().ok().and_then(|m| m.repo.clone()));
            let map = e.device_map.as_ref().map(|m| m.snippet(repo.as_deref().unwrap_or("MODEL_ID"), e.weight_format));
            engine_html(report_view(e, units).as_ref(), map.as_deref(), speed_text(e).as_deref())
        })
    })
}

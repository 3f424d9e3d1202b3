//! The key figures, each opening into the terms that produced it. An opened
//! explanation stays open while inputs change: the figures open in the DOM
//! are read back before each re-render.

use leptos::prelude::*;

use super::panel;
use crate::state::use_app;
use crate::view_model::figures::figures;
use crate::view_model::html::figures_html;

#[component]
pub fn Figures() -> impl IntoView {
    let app = use_app();
    panel(move || {
        let units = app.units.get();
        app.estimate.with(|e| {
            let list = e.as_ref().map(|e| figures(e, units)).unwrap_or_default();
            // `data-key` is the figures' own attribute. Mostly none is open:
            // one query then, not one per figure.
            let opened = |selector: &str| document().query_selector(selector).ok().flatten().is_some();
            let any = opened("details[data-key][open]");
            let open: Vec<&str> = list
                .iter()
                .map(|f| f.testid)
                .filter(|id| any && opened(&format!("details[data-key=\"{id}\"][open]")))
                .collect();
            figures_html(&list, &open)
        })
    })
}

//! "Skip to the answer", the page's first focusable element, and the one
//! helper that moves focus to an element (the skip link, an applied fix, an
//! `oom=` link's diagnosis).

use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Focuses (and so scrolls to) the element with this id, if there is one.
pub fn focus_id(id: &str) {
    if let Some(e) = document().get_element_by_id(id).and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = e.focus();
    }
}

#[component]
pub fn SkipLink() -> impl IntoView {
    let skip = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        focus_id("verdict");
    };
    view! { <a class="skip-link" href="#verdict" data-testid="skip-link" on:click=skip>"Skip to the answer"</a> }
}

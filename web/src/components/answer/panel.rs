//! A read-only panel rendered from one escaped HTML string (see
//! [`crate::view_model::html`]), and the one delegated click handler for the
//! buttons such panels carry ([`AnswerAction`], decoded by [`Action::parse`]).

use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::link::decode_with;
use wasm_bindgen::JsCast;

use crate::components::layout::focus_id;
use crate::html::action::{Action, AnswerAction};
use crate::state::reader::check_config;
use crate::state::{AppState, clipboard};

/// The id of the answer's polite live region (what "Apply" changed).
pub const ANNOUNCE: &str = "answer-announce";

/// `<div class="html-panel">` (CSS `display: contents`) holding `html`.
pub fn panel(html: impl Fn() -> String + Send + Sync + 'static) -> impl IntoView {
    view! { <div class="html-panel" inner_html=html></div> }
}

/// Handles a click on any `[data-action]` button inside the answer.
pub fn on_action(app: AppState, ev: leptos::ev::MouseEvent) {
    let Some(button) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|e| e.closest("[data-action]").ok().flatten())
    else {
        return;
    };
    let attr = |name: &str| button.get_attribute(name).unwrap_or_default();
    let Some(Action::Answer(action)) = Action::parse(&attr("data-action")) else { return };
    match action {
        AnswerAction::Copy => {
            let text = document().get_element_by_id(&attr("data-target")).and_then(|e| e.text_content());
            spawn_local(async move {
                let ok = clipboard::copy(text.unwrap_or_default()).await;
                button.set_text_content(Some(if ok { "Copied" } else { "Select and copy" }));
            });
        }
        AnswerAction::Apply => {
            // The fixed plan as a link (`view_model::fixes`), decoded as the
            // page decodes its own; what it could not use stays as it was.
            let next = decode_with(&attr("data-query"), &check_config).state;
            app.inputs.set(next);
            // The button goes away with the fixes: focus goes to the new
            // verdict (not to <body>), and the change is announced.
            if let Some(live) = document().get_element_by_id(ANNOUNCE) {
                live.set_text_content(Some(&["Applied: ", attr("data-title").as_str(), "."].concat()));
            }
            focus_id("verdict");
        }
    }
}

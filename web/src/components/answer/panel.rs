//! A read-only panel rendered from one escaped HTML string (see
//! [`crate::view_model::html`]), and the one delegated click handler for the
//! buttons such panels carry ([`AnswerAction`], decoded by [`Action::parse`]).

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;

use crate::components::layout::focus_id;
use crate::html::action::{Action, AnswerAction};
use crate::state::{AppState, clipboard};
use crate::view_model::resolve::inputs_for;

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
            let Ok(i) = attr("data-index").parse::<usize>() else { return };
            let Some((target, title)) =
                app.fixes.with_untracked(|f| f.get(i).map(|f| (f.scenario.clone(), f.title.clone())))
            else {
                return;
            };
            let next = app
                .model
                .with_untracked(|m| m.as_ref().ok().map(|m| app.inputs.with_untracked(|s| inputs_for(&target, s, m))));
            if let Some(next) = next {
                app.inputs.set(next);
                // The button goes away with the fixes: focus goes to the new
                // verdict (not to <body>), and the change is announced.
                if let Some(live) = document().get_element_by_id(ANNOUNCE) {
                    live.set_text_content(Some(&["Applied: ", title.as_str(), "."].concat()));
                }
                focus_id("verdict");
            }
        }
    }
}

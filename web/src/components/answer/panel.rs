//! A read-only panel rendered from one escaped HTML string (see
//! [`crate::view_model::html`]), and the one delegated click handler for the
//! buttons such panels carry ([`AnswerAction`], decoded by [`Action::parse`]).
//! A new string is applied to the nodes the panel has where only texts and
//! attribute values changed ([`Patched`]).

use leptos::prelude::*;
use leptos::tachys::html::element::InnerHtmlValue;
use leptos::task::spawn_local;
use shared::link::decode_with;
use wasm_bindgen::JsCast;
use web_sys::{Element, Node};

use crate::components::layout::focus_id;
use crate::html::action::{Action, AnswerAction};
use crate::html::patch::{Tree, patch};
use crate::state::reader::check_config;
use crate::state::{AppState, clipboard};

/// The id of the answer's polite live region (what "Apply" changed).
pub const ANNOUNCE: &str = "answer-announce";

/// `<div class="html-panel">` (CSS `display: contents`) holding `html`.
pub fn panel(html: impl Fn() -> String + Send + Sync + 'static) -> impl IntoView {
    marked(move || Patched { html: html(), current: None })
}

/// [`panel`] for markup whose one row marked `current` moves on its own
/// ([`Patched::current`]).
pub fn marked(html: impl Fn() -> Patched + Send + Sync + 'static) -> impl IntoView {
    // Boxed: one instance of the render effect for every panel (as `view!`
    // makes with `erase_components`), not one per closure.
    let html: Box<dyn Fn() -> Patched + Send + Sync> = Box::new(html);
    leptos::html::div().class("html-panel").inner_html(html)
}

/// A panel's markup as `inner_html` takes it: set whole the first time,
/// then patched into the nodes already there ([`crate::html::patch`]), or
/// set whole again when its structure changed. A new weight format changes
/// a few dozen texts and values of the answer's few hundred nodes; setting
/// every panel whole made the browser parse, restyle and lay out all of
/// them (issue 38, docs/measurements.md).
#[derive(Debug, Clone)]
pub struct Patched {
    pub html: String,
    /// The `data-format` of the row (`<tr>`) that gets `class="current"`,
    /// set apart from `html`: the what-if grid's markup stays as it is while
    /// the plan's format moves, and two rows change class. (As a stylesheet
    /// keyed by the format, each change restyled every `th` of the page.)
    pub current: Option<String>,
}

impl InnerHtmlValue for Patched {
    type AsyncOutput = Self;
    // As `String`'s: one render effect type with the page's other `inner_html`.
    type State = (Element, String);
    type Cloneable = Self;
    type CloneableOwned = Self;

    fn html_len(&self) -> usize {
        self.html.len()
    }

    fn to_html(self, buf: &mut String) {
        buf.push_str(&self.html);
    }

    fn to_template(_buf: &mut String) {}

    fn hydrate<const FROM_SERVER: bool>(self, el: &Element) -> Self::State {
        (el.clone(), self.html)
    }

    fn build(self, el: &Element) -> Self::State {
        el.set_inner_html(&self.html);
        if let Some(current) = &self.current {
            mark(el, current);
        }
        (el.clone(), self.html)
    }

    fn rebuild(self, state: &mut Self::State) {
        let (el, old) = state;
        if self.html != *old {
            let root: &Node = el;
            if !patch(root, old, &self.html) {
                el.set_inner_html(&self.html);
            }
            *old = self.html;
        }
        // Only a marked panel (the grid) runs again for its mark alone.
        if let Some(current) = &self.current {
            mark(el, current);
        }
    }

    fn into_cloneable(self) -> Self {
        self
    }

    fn into_cloneable_owned(self) -> Self {
        self
    }

    fn dry_resolve(&mut self) {}

    async fn resolve(self) -> Self {
        self
    }
}

/// Moves `class="current"` to the row whose `data-format` is `current` (an
/// id of `WeightFormat`: letters, digits, `-` and `_`).
fn mark(root: &Element, current: &str) {
    if let Ok(Some(row)) = root.query_selector("tr.current") {
        let _ = row.remove_attribute("class");
    }
    if let Ok(Some(row)) = root.query_selector(&["tr[data-format=\"", current, "\"]"].concat()) {
        let _ = row.set_attribute("class", "current");
    }
}

impl Tree for Node {
    fn first_child(&self) -> Option<Self> {
        Node::first_child(self)
    }

    fn next_sibling(&self) -> Option<Self> {
        Node::next_sibling(self)
    }

    fn is(&self, tag: Option<&str>) -> bool {
        match tag {
            // `#text`, `#comment` or a tag: upper case for HTML, as written for SVG.
            Some(tag) => self.node_name().eq_ignore_ascii_case(tag),
            None => self.node_type() == Node::TEXT_NODE,
        }
    }

    fn set_text(&self, text: &str) {
        self.set_text_content(Some(text));
    }

    fn set_attr(&self, name: &str, value: Option<&str>) {
        // `is` found an element here.
        let el: &Element = self.unchecked_ref();
        let _ = match value {
            Some(v) => el.set_attribute(name, v),
            None => el.remove_attribute(name),
        };
    }
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

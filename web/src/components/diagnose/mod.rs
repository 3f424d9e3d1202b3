//! "Diagnose an OOM": paste an error or a whole log; the page reads its
//! figures, ranks the causes against the current plan, walks the checklist
//! and gives the fixes. The text stays out of the share link unless the
//! person ticks "include it in the link".
//!
//! The parser and the diagnosis live in a second wasm bundle
//! (`diagnose.js`, from `src/bin/diagnose.rs`), fetched the first time the
//! view opens: the first load of the page does without them. The page hands
//! it the plan as a share-link query and sets the HTML it returns.

use leptos::prelude::*;

use crate::components::answer::panel;
use crate::html::Html;
use crate::state::bundles::{DiagnoseCall, Load, call_diagnose, load_diagnose, plan_args};
use crate::state::use_app;

#[component]
pub fn Diagnose() -> impl IntoView {
    let app = use_app();
    let open = app.oom_text.with_untracked(|t| !t.is_empty());
    let start = move || load_diagnose(app);
    if open {
        start();
        // An `oom=` link: the diagnosis is what it was sent for.
        Effect::new(move |focused: Option<bool>| {
            let ready = app.diagnose.get() == Load::Ready;
            if ready && focused != Some(true) {
                crate::components::layout::focus_id("diagnose-heading");
            }
            ready || focused == Some(true)
        });
    }
    // Keeps the link's copy of the text current (compacted by the bundle).
    Effect::new(move |_| {
        if app.diagnose.get() != Load::Ready {
            return;
        }
        let args = js_sys::Array::of1(&app.oom_text.with(|t| t.as_str().into()));
        app.oom_link.set(call_diagnose(DiagnoseCall::Compact, &args));
    });
    let findings = move || {
        if app.oom_text.with(|t| t.trim().is_empty()) {
            return String::new();
        }
        match app.diagnose.get() {
            Load::Idle | Load::Loading => "<p class=\"hint\" role=\"status\">Loading the diagnosis…</p>".to_owned(),
            Load::Failed(e) => {
                let mut h = Html::new();
                h.raw("<p class=\"error\" role=\"alert\">The diagnosis could not load: ").t(&e).raw("</p>");
                h.finish()
            }
            Load::Ready => {
                let args = plan_args(app);
                app.oom_text.with(|t| args.push(&t.as_str().into()));
                call_diagnose(DiagnoseCall::Findings, &args).unwrap_or_default()
            }
        }
    };
    view! {
        <details class="card diagnose" id="diagnose" data-testid="diagnose" open=open on:toggle=move |_| start()>
            <summary><h2 id="diagnose-heading" tabindex="-1">"Diagnose an OOM"</h2></summary>
            <p class="hint">"Paste a CUDA out-of-memory error (PyTorch, vLLM, llama.cpp) or a whole log. It is checked against the plan above."</p>
            <label for="oom-text" class="sr-only">"The error or log"</label>
            <textarea id="oom-text" data-testid="oom-text" rows="6" spellcheck="false"
                placeholder="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate …"
                prop:value=move || app.oom_text.get() on:input=move |ev| app.oom_text.set(event_target_value(&ev))/>
            <label class="check">
                <input type="checkbox" data-testid="oom-share" prop:checked=move || app.share_oom.get()
                    on:change=move |ev| app.share_oom.set(event_target_checked(&ev))/>
                " Include the error in the share link"
            </label>
            {panel(findings)}
        </details>
    }
}

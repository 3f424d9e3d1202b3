//! Where the numbers come from, and which engine they model.

use leptos::prelude::*;

use crate::state::use_app;

#[component]
pub fn Footer() -> impl IntoView {
    let app = use_app();
    // The plan's engine (issue 34: the footer named transformers whatever the
    // plan ran in). A closure, not a `Memo<&str>`: a new memo type costs first-load bytes.
    let engine = move || app.inputs.with(|s| s.engine.kind().name());
    view! {
        <footer class="bottom">
            <p>
                "Engine modelled: " <span data-testid="footer-engine">{engine}</span> ", as the Engine field sets it. "
                "Every figure opens into its terms; each empirical constant names its source. "
                "Runs entirely in your browser: nothing is sent anywhere, except the config fetch when you load a model from the hub."
            </p>
        </footer>
    }
}

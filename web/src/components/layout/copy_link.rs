//! "Copy link": the share link of the current inputs, copied to the
//! clipboard and shown in a field for copying by hand.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::state::{clipboard, url, use_app};

#[component]
pub fn CopyLink() -> impl IntoView {
    let app = use_app();
    let status = RwSignal::new(String::new());
    let link = Memo::new(move |_| url::share_link(&app.link_state()));
    let copy = move |_| {
        let text = link.get_untracked();
        spawn_local(async move {
            let ok = clipboard::copy(text).await;
            status.set(if ok { "Copied".into() } else { "Select the link and copy it".into() });
        });
    };
    view! {
        <div class="copy-link">
            <button type="button" class="primary" data-testid="copy-link" on:click=copy>"Copy link"</button>
            <input type="text" readonly data-testid="share-url" aria-label="Share link" prop:value=move || link.get()
                on:focus=move |ev| {
                    use wasm_bindgen::JsCast;
                    if let Some(input) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) {
                        input.select();
                    }
                }/>
            <span class="status" role="status" aria-live="polite" data-testid="copy-status">{move || status.get()}</span>
        </div>
    }
}

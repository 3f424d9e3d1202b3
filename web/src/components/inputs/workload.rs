//! Prompt tokens, new tokens and concurrency.

use leptos::prelude::*;
use shared::estimate::{MAX_CONCURRENCY, MAX_TOKENS};

use super::NumberField;
use crate::state::use_app;

#[component]
pub fn Workload() -> impl IntoView {
    let app = use_app();
    let get = move |f: fn(&shared::link::LinkState) -> u64| Signal::derive(move || app.inputs.with(f));
    view! {
        <fieldset class="row3">
            <legend>"Workload"</legend>
            <NumberField id="prompt-tokens" label="Prompt tokens" value=get(|s| s.prompt_tokens) lo=0 hi=MAX_TOKENS tokens=true
                on_commit=Callback::new(move |v| app.edit(|s| s.prompt_tokens = v))/>
            <NumberField id="max-new-tokens" label="Max new tokens" value=get(|s| s.max_new_tokens) lo=0 hi=MAX_TOKENS tokens=true
                on_commit=Callback::new(move |v| app.edit(|s| s.max_new_tokens = v))/>
            <NumberField id="concurrency" label="Concurrent sequences" value=get(|s| s.concurrency) lo=1 hi=MAX_CONCURRENCY
                on_commit=Callback::new(move |v| app.edit(|s| s.concurrency = v))/>
        </fieldset>
    }
}

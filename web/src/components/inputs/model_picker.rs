//! The model: a preset, or (behind disclosures) a hub id, local checkpoint
//! files, a pasted config.json, or a bare parameter count.

use leptos::prelude::*;

use super::{CheckpointDrop, ConfigPaste, HubLoader, ModelStatus, ParamsInput, PresetSelect};

#[component]
pub fn ModelPicker() -> impl IntoView {
    view! {
        <fieldset class="model-picker">
            <legend>"Model"</legend>
            <PresetSelect/>
            <details class="more" data-testid="hub-details">
                <summary>"Load from Hugging Face"</summary>
                <HubLoader/>
            </details>
            <details class="more" data-testid="checkpoint-details">
                <summary>"Read a local checkpoint"</summary>
                <CheckpointDrop/>
            </details>
            <details class="more" id="config-details" data-testid="config-details">
                <summary>"Paste a config.json"</summary>
                <ConfigPaste/>
            </details>
            <details class="more" data-testid="params-details">
                <summary>"Only know the parameter count"</summary>
                <ParamsInput/>
            </details>
            <ModelStatus/>
        </fieldset>
    }
}

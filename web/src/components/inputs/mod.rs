//! The plan: model, precision, workload and GPUs.

mod checkpoint_drop;
mod config_paste;
mod engine_inputs;
mod format_select;
mod gpu_picker;
mod hub_loader;
mod kv_select;
mod mixed_gpus;
mod model_picker;
mod model_status;
mod number_field;
mod parallel_inputs;
mod params_input;
mod preset_select;
mod workload;

pub use checkpoint_drop::CheckpointDrop;
pub use config_paste::ConfigPaste;
pub use engine_inputs::EngineInputs;
pub use format_select::FormatSelect;
pub use gpu_picker::GpuPicker;
pub use hub_loader::HubLoader;
pub use kv_select::KvSelect;
pub use mixed_gpus::MixedGpus;
pub use model_picker::ModelPicker;
pub use model_status::ModelStatus;
pub use number_field::NumberField;
pub use parallel_inputs::ParallelInputs;
pub use params_input::ParamsInput;
pub use preset_select::PresetSelect;
pub use workload::Workload;

use leptos::prelude::*;

#[component]
pub fn Inputs() -> impl IntoView {
    view! {
        <section class="inputs card" aria-labelledby="plan-heading">
            <h2 id="plan-heading">"Your plan"</h2>
            <ModelPicker/>
            <div class="row2">
                <FormatSelect/>
                <KvSelect/>
            </div>
            <Workload/>
            <EngineInputs/>
            <GpuPicker/>
            <MixedGpus/>
            <ParallelInputs/>
        </section>
    }
}

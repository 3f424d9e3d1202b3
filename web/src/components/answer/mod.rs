//! The answer: verdict first, then the fixes, the bars, the engine's report,
//! the explained figures, the per-GPU table, warnings and the charts. The
//! read-only panels are HTML strings from [`crate::view_model::html`]; their buttons
//! go through one delegated click handler ([`panel::on_action`]).

mod engine_report;
mod figures;
mod fixes_panel;
mod gpu_bars;
mod gpu_table;
mod panel;
mod verdict;
mod warnings;

pub use engine_report::EngineReport;
pub use figures::Figures;
pub use fixes_panel::FixesPanel;
pub use gpu_bars::GpuBars;
pub use gpu_table::GpuTable;
pub use panel::{Patched, marked, on_action, panel};
pub use verdict::Verdict;
pub use warnings::Warnings;

use leptos::prelude::*;

use crate::components::charts::Charts;
use crate::components::diagnose::Diagnose;
use crate::state::use_app;

#[component]
pub fn Answer() -> impl IntoView {
    let app = use_app();
    let ready = move || app.estimate.with(Option::is_some);
    view! {
        <section class="answer" aria-labelledby="answer-heading" on:click=move |ev| on_action(app, ev)>
            <h2 id="answer-heading" class="sr-only">"Answer"</h2>
            <p class="sr-only" id=panel::ANNOUNCE data-testid="answer-announce" role="status" aria-live="polite"></p>
            <Verdict/>
            <crate::components::live::VerdictNow/>
            <Show when=ready>
                <FixesPanel/>
                <GpuBars/>
                <EngineReport/>
                <Figures/>
                <GpuTable/>
                <Warnings/>
                <Charts/>
            </Show>
            <Diagnose/>
        </section>
    }
}

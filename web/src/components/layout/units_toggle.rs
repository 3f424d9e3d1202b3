//! GiB (what nvidia-smi and PyTorch speak) or GB (what vendors sell).

use leptos::prelude::*;
use shared::units::UnitSystem;

use crate::state::use_app;

#[component]
pub fn UnitsToggle() -> impl IntoView {
    let app = use_app();
    let set = move |u: UnitSystem| app.edit(|s| s.units = u);
    let pressed = move |u: UnitSystem| move || (app.units.get() == u).to_string();
    view! {
        <div class="segmented" role="group" aria-label="Units">
            <button type="button" data-testid="units-gib" aria-pressed=pressed(UnitSystem::Binary)
                on:click=move |_| set(UnitSystem::Binary)>"GiB"</button>
            <button type="button" data-testid="units-gb" aria-pressed=pressed(UnitSystem::Decimal)
                on:click=move |_| set(UnitSystem::Decimal)>"GB"</button>
        </div>
    }
}

//! Where the numbers come from.

use leptos::prelude::*;

#[component]
pub fn Footer() -> impl IntoView {
    view! {
        <footer class="bottom">
            <p>
                "Engine modelled: Hugging Face transformers generate (SDPA), layer-wise split over several GPUs. "
                "Every figure opens into its terms; each empirical constant names its source. "
                "Runs entirely in your browser: nothing is sent anywhere, except the config fetch when you load a model from the hub."
            </p>
        </footer>
    }
}

//! A labelled whole-number input that only commits values in range.

use leptos::prelude::*;

/// Parses a whole number in `lo..=hi` (spaces, `_` and `,` allowed as separators).
pub fn parse_whole(text: &str, lo: u64, hi: u64) -> Option<u64> {
    let digits: String = text.chars().filter(|c| !matches!(c, ' ' | '_' | ',')).collect();
    digits.parse().ok().filter(|v| (lo..=hi).contains(v))
}

#[component]
pub fn NumberField(
    /// Element id and `data-testid`.
    id: &'static str,
    label: &'static str,
    value: Signal<u64>,
    lo: u64,
    hi: u64,
    /// Called with each valid value.
    on_commit: Callback<u64>,
) -> impl IntoView {
    let invalid = RwSignal::new(false);
    let input = move |ev| match parse_whole(&event_target_value(&ev), lo, hi) {
        Some(v) => {
            invalid.set(false);
            on_commit.run(v);
        }
        None => invalid.set(true),
    };
    let err_id = format!("{id}-err");
    view! {
        <div class="field">
            <label for=id>{label}</label>
            <input id=id type="number" inputmode="numeric" min=lo max=hi data-testid=id
                prop:value=move || value.get().to_string() on:input=input
                aria-invalid=move || invalid.get().to_string() aria-describedby=err_id.clone()/>
            <p class="error" id=err_id hidden=move || !invalid.get()>{format!("Enter a whole number from {lo} to {hi}.")}</p>
        </div>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_in_range_only() {
        assert_eq!(super::parse_whole("2,048", 0, 10_000), Some(2048));
        assert_eq!(super::parse_whole("0", 1, 5), None);
        assert_eq!(super::parse_whole("-3", 0, 5), None);
        assert_eq!(super::parse_whole("", 0, 5), None);
    }
}

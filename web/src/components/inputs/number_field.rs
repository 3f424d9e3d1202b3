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
    /// A token count: also `32k` (32,000) and `128K` (131,072), read by
    /// [`shared::link::parse_tokens`] exactly as the CLI reads its flags (a
    /// text field: a number field would drop the suffix and keep `32`).
    #[prop(optional)]
    tokens: bool,
) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let input = move |ev| {
        let text = event_target_value(&ev);
        let parsed = if tokens {
            shared::link::parse_tokens(&text, hi)
                .and_then(|v| if v >= lo { Ok(v) } else { Err(format!("Enter at least {lo}.")) })
        } else {
            parse_whole(&text, lo, hi).ok_or_else(|| format!("Enter a whole number from {lo} to {hi}."))
        };
        match parsed {
            Ok(v) => {
                error.set(None);
                on_commit.run(v);
            }
            Err(e) => error.set(Some(e)),
        }
    };
    let err_id = format!("{id}-err");
    view! {
        <div class="field">
            <label for=id>{label}</label>
            <input id=id type=if tokens { "text" } else { "number" } inputmode="numeric" min=lo max=hi data-testid=id
                prop:value=move || value.get().to_string() on:input=input
                aria-invalid=move || error.with(Option::is_some).to_string() aria-describedby=err_id.clone()/>
            <p class="error" id=err_id data-testid=format!("{id}-error") hidden=move || error.with(Option::is_none)>
                {move || error.get().unwrap_or_default()}
            </p>
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

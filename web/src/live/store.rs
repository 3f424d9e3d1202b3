//! Where agent addresses and tokens are kept: this tab's `sessionStorage`
//! (so a reload reconnects), `localStorage` only when the person ticks
//! "remember". Never the URL: the `#token=` an agent prints is read once and
//! removed from the address bar, so it cannot land in a share link or history.

use serde_json::{Value, json};
use wasm_bindgen::JsValue;
use web_sys::window;

const KEY: &str = "headroom.agents";

/// Reads `#token=…` from the address bar, then removes the fragment.
pub fn take_fragment_token() -> Option<String> {
    let window = window()?;
    let loc = window.location();
    let hash = loc.hash().ok()?;
    let token = fragment_token(&hash)?;
    let clean = format!("{}{}", loc.pathname().unwrap_or_default(), loc.search().unwrap_or_default());
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&clean));
    }
    Some(token)
}

/// `#token=abc&x=1` → `abc`.
pub fn fragment_token(hash: &str) -> Option<String> {
    hash.trim_start_matches('#')
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// Encodes the list for storage.
pub fn encode(list: &[(String, String)]) -> String {
    Value::Array(list.iter().map(|(u, t)| json!({"url": u, "token": t})).collect()).to_string()
}

/// Decodes a stored list; anything unreadable is an empty list.
pub fn decode(text: &str) -> Vec<(String, String)> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else { return Vec::new() };
    items.iter().filter_map(|i| Some((i["url"].as_str()?.to_owned(), i["token"].as_str()?.to_owned()))).collect()
}

pub fn save(list: &[(String, String)], remember: bool) {
    let Some(window) = window() else { return };
    let text = encode(list);
    if let Ok(Some(s)) = window.session_storage() {
        let _ = s.set_item(KEY, &text);
    }
    if let Ok(Some(s)) = window.local_storage() {
        let _ = if remember { s.set_item(KEY, &text) } else { s.remove_item(KEY) };
    }
}

/// The tab's list, else the remembered one; and whether one was remembered.
pub fn load() -> (Vec<(String, String)>, bool) {
    let (session, remembered) = stored();
    let list = session.or_else(|| remembered.clone()).map(|t| decode(&t)).unwrap_or_default();
    (list, remembered.is_some())
}

/// The stored lists as text: this tab's, the remembered one.
fn stored() -> (Option<String>, Option<String>) {
    let Some(window) = window() else { return (None, None) };
    let get = |s: Option<web_sys::Storage>| s.and_then(|s| s.get_item(KEY).ok().flatten());
    (get(window.session_storage().ok().flatten()), get(window.local_storage().ok().flatten()))
}

/// Whether this tab or this browser knows agents to reconnect to: the page
/// then loads live mode at once (a reload reconnects). A plain text check,
/// so the page's first load carries no JSON reader for it (the live bundle
/// decodes the list).
pub fn has_saved() -> bool {
    let (session, remembered) = stored();
    session.or(remembered).is_some_and(|t| t.contains("\"url\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fragment_token_is_found() {
        assert_eq!(fragment_token("#token=abc-123"), Some("abc-123".into()));
        assert_eq!(fragment_token("#x=1&token=t"), Some("t".into()));
        assert_eq!(fragment_token("#token="), None);
        assert_eq!(fragment_token(""), None);
    }

    #[test]
    fn lists_round_trip() {
        let list = vec![("ws://a:1/ws".to_owned(), "t1".to_owned()), ("wss://b/ws".into(), "t\"2".into())];
        assert_eq!(decode(&encode(&list)), list);
        assert!(decode("nonsense").is_empty());
        assert!(encode(&list).contains("\"url\"") && !encode(&[]).contains("\"url\""));
    }
}

//! The tensor-name patterns of `-ot/--override-tensor` in the browser: the
//! page's wasm leaves `pattern.rs`'s matcher out (2.4 kB of the first load)
//! and asks its host for ECMAScript's own `RegExp`, the grammar llama.cpp's
//! `std::regex` uses by default, tested as `std::regex_search` does (a match
//! anywhere in the name). The host installs it once with [`set_search`]
//! before it plans; `shared` stays pure (no wasm or JS dependency here).

use std::sync::OnceLock;

/// `search(pattern, name)`: whether `pattern` matches anywhere in `name`,
/// `Err` with the reason when the host's regex engine refuses the pattern.
pub type Search = fn(pattern: &str, name: &str) -> Result<bool, String>;

static SEARCH: OnceLock<Search> = OnceLock::new();

/// Installs the host's matcher; a second call keeps the first.
pub fn set_search(search: Search) {
    let _ = SEARCH.set(search);
}

fn search(pattern: &str, name: &str) -> Result<bool, String> {
    match SEARCH.get() {
        Some(f) => f(pattern, name),
        None => Err("cannot be checked: this build has no pattern matcher".into()),
    }
}

/// A pattern the host's matcher compiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    source: String,
}

impl Pattern {
    /// Checks `pattern` with the host's matcher; `Err` says why it refuses it.
    pub fn new(pattern: &str) -> Result<Self, String> {
        search(pattern, "")?;
        Ok(Self { source: pattern.into() })
    }

    /// `std::regex_search`: whether the pattern matches anywhere in `name`.
    pub fn is_match(&self, name: &str) -> bool {
        search(&self.source, name).unwrap_or(false)
    }
}

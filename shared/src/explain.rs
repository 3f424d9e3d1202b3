//! Explanations: every figure carries the terms that produced it, so the page
//! and the CLI can show where each number comes from.

use serde::{Deserialize, Serialize};

/// How much to trust a term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Follows from the architecture and the data types alone.
    Exact,
    /// A rule an engine applies (block rounding, utilization, sharding).
    EngineRule,
    /// A measured or rule-of-thumb constant; its source is named.
    Empirical,
}

/// One line of a derivation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// What the figure is (`weights`, `kv cache per token`, …).
    pub name: String,
    /// The figure itself: bytes, or a count when `unit` says so.
    pub value: u64,
    pub unit: TermUnit,
    /// A one-line formula with the numbers filled in.
    pub formula: String,
    pub basis: Basis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TermUnit {
    Bytes,
    Count,
    Tokens,
}

impl Term {
    pub fn bytes(name: impl Into<String>, value: u64, formula: impl Into<String>, basis: Basis) -> Self {
        Self { name: name.into(), value, unit: TermUnit::Bytes, formula: formula.into(), basis }
    }

    pub fn count(name: impl Into<String>, value: u64, formula: impl Into<String>, basis: Basis) -> Self {
        Self { name: name.into(), value, unit: TermUnit::Count, formula: formula.into(), basis }
    }

    pub fn tokens(name: impl Into<String>, value: u64, formula: impl Into<String>, basis: Basis) -> Self {
        Self { name: name.into(), value, unit: TermUnit::Tokens, formula: formula.into(), basis }
    }
}

/// `s` with its first letter in upper case: "the plan" → "The plan", unless
/// its first word is cased on its own ([`acronym`]: "vLLM ran out"). ASCII
/// only (the sentences it starts are the tool's own): `char::to_uppercase`
/// would bring core's Unicode case table into the bundle, 12 kB of data.
pub fn upper_first(s: &str) -> String {
    let mut out = s.to_owned();
    if let Some(first) = out.get_mut(..1).filter(|_| !acronym(s)) {
        first.make_ascii_uppercase();
    }
    out
}

/// A first word cased on its own, whose first letter stays as it is:
/// `vLLM`, `GPU`, `iGPU` (a capital second letter).
pub fn acronym(s: &str) -> bool {
    s.as_bytes().get(1).is_some_and(u8::is_ascii_uppercase)
}

/// Groups thousands for formulas: 13015864320 → 13,015,864,320.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn groups_thousands() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1,000");
        assert_eq!(super::thousands(13_015_864_320), "13,015,864,320");
    }

    #[test]
    fn upper_first_changes_an_ascii_letter_only() {
        assert_eq!(super::upper_first("the plan"), "The plan");
        assert_eq!(super::upper_first("The plan"), "The plan");
        assert_eq!(super::upper_first("µ-batch"), "µ-batch");
        assert_eq!(super::upper_first(""), "");
        // A name cased on its own keeps its case.
        assert_eq!(super::upper_first("vLLM ran out"), "vLLM ran out");
        assert_eq!(super::upper_first("a GPU"), "A GPU");
    }
}

//! Small formatting helpers.

pub(super) use crate::oom::gib;

/// `x / of` as a percentage: one decimal under 10 %.
pub(super) fn pct(x: u64, of: u64) -> String {
    let p = x as f64 * 100.0 / of.max(1) as f64;
    if p < 10.0 { format!("{p:.1} %") } else { format!("{p:.0} %") }
}

/// `x / of` as a factor: "5.5×", two decimals under 2 ("1.05×", where one
/// decimal would print 1.0× for a ratio that is over 1).
pub(super) fn times(x: u64, of: u64) -> String {
    let r = x as f64 / of.max(1) as f64;
    if r < 2.0 { format!("{r:.2}×") } else { format!("{r:.1}×") }
}

/// Thousandths as the engines' flags take them, every digit kept and
/// none rounded away: `0.86`, `0.9`, `0.925`, `1.0`.
pub(super) fn fraction(permille: u64) -> String {
    let s = format!("{}.{:03}", permille / 1000, permille % 1000);
    let s = s.trim_end_matches('0');
    if s.ends_with('.') { format!("{s}0") } else { s.to_owned() }
}

/// `s` with its first letter in lower case, ASCII only, as
/// [`crate::explain::upper_first`] (no Unicode case table in the bundle).
pub(super) fn lower_first(s: &str) -> String {
    let mut out = s.to_owned();
    if let Some(first) = out.get_mut(..1).filter(|_| !crate::explain::acronym(s)) {
        first.make_ascii_lowercase();
    }
    out
}

/// A finding as a sentence: first letter up, a full stop at the end.
pub(super) fn capitalise(s: &str) -> String {
    let mut out = crate::explain::upper_first(s);
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

//! Integer formatting for the live view: fixed-point numbers without
//! `{:.1}`/`{:.3}` of `f64` (which pull `core::fmt::float` into the wasm).

/// `value / 10^decimals` with exactly `decimals` digits: `fixed(41250, 3)` is `41.250`.
pub fn fixed(value: u64, decimals: u32) -> String {
    let scale = 10u64.pow(decimals);
    let frac = (value % scale).to_string();
    let pad = "0".repeat(decimals as usize - frac.len().min(decimals as usize));
    if decimals == 0 { (value / scale).to_string() } else { format!("{}.{pad}{frac}", value / scale) }
}

/// `part / whole` as a CSS percentage with three decimals, rounded: `41.250%`.
pub fn pct(part: u64, whole: u64) -> String {
    let whole = u128::from(whole.max(1));
    let milli = (u128::from(part) * 100_000 + whole / 2) / whole;
    format!("{}%", fixed(u64::try_from(milli).unwrap_or(u64::MAX), 3))
}

/// `M x y L x y …` from points in tenths of a unit.
pub fn path(points: &[(u64, u64)]) -> String {
    let mut d = String::with_capacity(points.len() * 14);
    for (i, &(x, y)) in points.iter().enumerate() {
        d.push_str(if i == 0 { "M" } else { " L" });
        d.push_str(&fixed(x, 1));
        d.push(' ');
        d.push_str(&fixed(y, 1));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_reads_like_float_formatting() {
        assert_eq!(fixed(41250, 3), "41.250");
        assert_eq!(fixed(5, 3), "0.005");
        assert_eq!(fixed(410, 1), "41.0");
        assert_eq!(fixed(7, 0), "7");
        assert_eq!(pct(1, 2), "50.000%");
        assert_eq!(pct(256, 24 * 1024), "1.042%");
        assert_eq!(pct(0, 0), "0.000%");
        assert_eq!(pct(u64::MAX, u64::MAX), "100.000%");
        assert_eq!(path(&[(0, 800), (3200, 15)]), "M0.0 80.0 L320.0 1.5");
    }
}

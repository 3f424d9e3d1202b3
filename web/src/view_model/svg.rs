//! Small helpers for hand-drawn SVG charts: scales, ticks and path data.

use shared::units::decimal;

/// Chart canvas in SVG user units, with margins for axis labels.
pub const WIDTH: f64 = 640.0;
pub const HEIGHT: f64 = 260.0;
pub const LEFT: f64 = 64.0;
pub const RIGHT: f64 = 16.0;
pub const TOP: f64 = 16.0;
pub const BOTTOM: f64 = 40.0;

/// Maps `[lo, hi]` onto `[a, b]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub a: f64,
    pub b: f64,
}

impl Scale {
    pub fn x(lo: f64, hi: f64) -> Self {
        Self { lo, hi, a: LEFT, b: WIDTH - RIGHT }
    }
    pub fn y(lo: f64, hi: f64) -> Self {
        Self { lo, hi, a: HEIGHT - BOTTOM, b: TOP }
    }
    pub fn at(&self, v: f64) -> f64 {
        let span = if (self.hi - self.lo).abs() < f64::EPSILON { 1.0 } else { self.hi - self.lo };
        self.a + (v - self.lo) / span * (self.b - self.a)
    }
}

/// A number for an SVG attribute (one decimal is plenty at this size).
pub fn n(v: f64) -> String {
    decimal(v, 1)
}

/// `M x0 y0 L x1 y1 …`.
pub fn polyline(points: &[(f64, f64)]) -> String {
    let mut d = String::with_capacity(points.len() * 14);
    for (i, (x, y)) in points.iter().enumerate() {
        d.push_str(if i == 0 { "M" } else { " L" });
        d.push_str(&format!("{} {}", decimal(*x, 1), decimal(*y, 1)));
    }
    d
}

/// About `count` round tick values covering `[0, hi]` (1, 2, 5 × 10^k steps).
pub fn ticks(hi: f64, count: usize) -> Vec<f64> {
    if !(hi.is_finite() && hi > 0.0) {
        return vec![0.0];
    }
    let raw = hi / count.max(1) as f64;
    // The power of ten at or below `raw`, by steps: no `powf`/`log10` in
    // the first load (libm's pow is 2.2 kB of wasm).
    let mut mag = 1.0;
    while mag > raw && mag > f64::MIN_POSITIVE {
        mag /= 10.0;
    }
    while mag * 10.0 <= raw {
        mag *= 10.0;
    }
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    (0..).map(|i| i as f64 * step).take_while(|v| *v <= hi * 1.000_001).collect()
}

/// `1k`, `32k`, `1.5M` for token counts on axes.
pub fn short_tokens(v: u64) -> String {
    if v >= 1_000_000 && v.is_multiple_of(1_000_000) {
        format!("{}M", v / 1_000_000)
    } else if v >= 1_000_000 {
        format!("{}M", decimal(v as f64 / 1e6, 1))
    } else if v >= 1024 && v.is_multiple_of(1024) {
        format!("{}k", v / 1024)
    } else if v >= 1000 {
        format!("{}k", decimal(v as f64 / 1000.0, 1))
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_ticks_and_paths() {
        let s = Scale::x(0.0, 10.0);
        assert_eq!(s.at(0.0), LEFT);
        assert_eq!(s.at(10.0), WIDTH - RIGHT);
        assert_eq!(Scale::y(0.0, 1.0).at(1.0), TOP);
        assert_eq!(ticks(10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(23.99, 4), vec![0.0, 10.0, 20.0]);
        assert_eq!(ticks(23.99, 6), vec![0.0, 5.0, 10.0, 15.0, 20.0]);
        assert_eq!(ticks(0.0, 4), vec![0.0]);
        // Half away from zero (`units::decimal`), not float formatting's half to even.
        assert_eq!(polyline(&[(1.0, 2.0), (3.25, 4.0)]), "M1.0 2.0 L3.3 4.0");
        assert_eq!(short_tokens(32_768), "32k");
        assert_eq!(short_tokens(512), "512");
        assert_eq!(short_tokens(1500), "1.5k");
    }
}

#[cfg(test)]
mod tick_tests {
    use super::ticks;

    /// The stepped power of ten gives the ticks `10^floor(log10)` gave.
    #[test]
    fn ticks_step_by_one_two_five_at_every_magnitude() {
        let reference = |hi: f64, count: usize| {
            let raw = hi / count as f64;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
            (0..).map(|i| i as f64 * step).take_while(|v| *v <= hi * 1.000_001).collect::<Vec<f64>>()
        };
        for hi in [0.0031, 0.5, 1.0, 7.0, 80.0, 99.9, 100.0, 1234.5, 81_920.0, 3.2e9] {
            for count in [1, 4, 5, 8] {
                let (got, want) = (ticks(hi, count), reference(hi, count));
                assert_eq!(got.len(), want.len(), "hi {hi} count {count}: {got:?} vs {want:?}");
                assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= b.abs() * 1e-9), "{got:?} vs {want:?}");
            }
        }
        assert_eq!(ticks(80.0, 4), [0.0, 20.0, 40.0, 60.0, 80.0]);
    }
}

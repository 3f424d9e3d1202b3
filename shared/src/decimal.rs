//! Decimal numbers read from text (`23.58`, `1.5`, `7e9`, `0.9`) without
//! `str::parse::<f64>`: its algorithm (Eisel-Lemire with a table of 650
//! powers of five, and a big-decimal fallback) cost the page's first load
//! 15 kB gzip, for reading sizes, parameter counts and fractions people type.
//! A [`Decimal`] keeps the digits exactly (36 of them), so sizes and counts
//! are rounded once, from the exact value, and [`Decimal::to_f64`] is
//! correctly rounded by long division in `u128`.

/// `digits × 10^exponent`, with its sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    digits: u128,
    exponent: i32,
}

/// Digits beyond this many are dropped (rounded away): more than any size,
/// count or fraction a person types.
const MAX_DIGITS: u128 = 10u128.pow(36);

impl Decimal {
    /// `[+-]digits[.digits][(e|E)[+-]digits]` with at least one digit before
    /// the exponent, as `str::parse::<f64>` reads it (but no `inf`/`nan`);
    /// `None` for anything else, surrounding spaces included.
    pub fn parse(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        let mut i = 0;
        let negative = match b.first() {
            Some(b'-') => {
                i = 1;
                true
            }
            Some(b'+') => {
                i = 1;
                false
            }
            _ => false,
        };
        let mut d = Self { negative, digits: 0, exponent: 0 };
        let mut any = false;
        let mut fraction = false;
        while let Some(&c) = b.get(i) {
            match c {
                b'0'..=b'9' => {
                    any = true;
                    if d.digits < MAX_DIGITS {
                        d.digits = d.digits * 10 + u128::from(c - b'0');
                        d.exponent -= i32::from(fraction);
                    } else if !fraction {
                        d.exponent += 1;
                    }
                }
                b'.' if !fraction => fraction = true,
                _ => break,
            }
            i += 1;
        }
        if !any {
            return None;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            let minus = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            let mut e: i32 = 0;
            while let Some(c @ b'0'..=b'9') = b.get(i) {
                e = e.saturating_mul(10).saturating_add(i32::from(c - b'0'));
                i += 1;
            }
            if i == start {
                return None;
            }
            d.exponent = d.exponent.saturating_add(if minus { -e } else { e });
        }
        (i == b.len()).then_some(d)
    }

    /// The nearest `f64` (ties to even), as `str::parse` gives it, for any
    /// exponent from -38 to 38 (a few units in the last place off beyond).
    pub fn to_f64(self) -> f64 {
        let v = if self.digits == 0 {
            0.0
        } else if self.exponent >= 0 {
            // `as` from an integer rounds to nearest, ties to even.
            match 10u128.checked_pow(self.exponent.unsigned_abs()).and_then(|p| self.digits.checked_mul(p)) {
                Some(n) => n as f64,
                None => self.digits as f64 * 10f64.powi(self.exponent),
            }
        } else {
            match 10u128.checked_pow(self.exponent.unsigned_abs()) {
                Some(d) => quotient(self.digits, d),
                None => self.digits as f64 / 10f64.powi(-self.exponent),
            }
        };
        if self.negative { -v } else { v }
    }

    /// `self × scale` rounded half away from zero, from the exact value;
    /// `None` when negative (but for zero) or beyond `u64`.
    pub fn times_rounded(self, scale: u64) -> Option<u64> {
        if self.digits == 0 {
            return Some(0);
        }
        if self.negative {
            return None;
        }
        let (mut digits, mut exponent) = (self.digits, self.exponent);
        // At most 20 significant digits below the point: the product then fits u128.
        while digits >= 10u128.pow(20) && exponent < 0 {
            digits = (digits + 5) / 10;
            exponent += 1;
        }
        let product = digits.checked_mul(u128::from(scale))?;
        let exact = if exponent >= 0 {
            product.checked_mul(10u128.checked_pow(exponent.unsigned_abs())?)?
        } else {
            match 10u128.checked_pow(exponent.unsigned_abs()) {
                Some(div) => (product + div / 2) / div,
                None => 0,
            }
        };
        u64::try_from(exact).ok()
    }
}

/// `m / d` rounded to the nearest `f64`, ties to even (`d` > 0), by long
/// division: 55 significant bits and whether anything is left.
fn quotient(m: u128, d: u128) -> f64 {
    const TOP: u128 = 1 << 54;
    let (mut sig, mut r, mut exp2) = (m / d, m % d, 0i32);
    let mut sticky = false;
    while sig >= TOP << 1 {
        sticky |= sig & 1 == 1;
        sig >>= 1;
        exp2 += 1;
    }
    while sig < TOP {
        // r < d < 2^127: doubling stays in range.
        r <<= 1;
        sig <<= 1;
        if r >= d {
            r -= d;
            sig |= 1;
        }
        exp2 -= 1;
    }
    sticky |= r != 0;
    let (half, rest) = (sig & 2 != 0, sig & 1 != 0 || sticky);
    sig >>= 2;
    exp2 += 2;
    if half && (rest || sig & 1 == 1) {
        sig += 1;
    }
    // sig < 2^54 and a power of two: both exact.
    sig as f64 * 2f64.powi(exp2)
}

#[cfg(test)]
mod tests {
    use super::Decimal;

    fn f(text: &str) -> Option<f64> {
        Decimal::parse(text).map(Decimal::to_f64)
    }

    #[test]
    fn reads_what_str_parse_reads() {
        for t in [
            "0",
            "-0",
            "+1",
            "1.",
            ".5",
            "0.9",
            "0.92",
            "0.85",
            "23.58",
            "1.5",
            "7e9",
            "7E9",
            "1e+5",
            "1.5e-3",
            "-2.25",
            "8030261248",
            "0.000001",
            "123456789012345",
            "1e22",
            "1e-22",
            "1e38",
            "1e-38",
            "0.1",
            "0.3",
            "0.30000000000000004",
            "912128.8685608369",
            "0.12345678901234567",
            "9007199254740993",
            "2.2250738585072014e-20",
        ] {
            assert_eq!(f(t), t.parse::<f64>().ok(), "{t}");
        }
        for t in ["", ".", "e5", "1e", "1e+", "+", "-", " 1", "1 ", "1.2.3", "inf", "NaN", "0x10", "1_000", "1e5.5"] {
            assert_eq!(Decimal::parse(t), None, "{t}");
        }
    }

    #[test]
    fn rounds_products_from_the_exact_value() {
        let r = |t: &str, scale: u64| Decimal::parse(t).and_then(|d| d.times_rounded(scale));
        assert_eq!(r("23.58", 1 << 30), Some(25_318_832_210));
        assert_eq!(r("0.5", 1), Some(1));
        assert_eq!(r("2.5", 1), Some(3));
        assert_eq!(r("2.49", 1), Some(2));
        assert_eq!(r("1.5", 1_000_000_000), Some(1_500_000_000));
        assert_eq!(r("7e9", 1), Some(7_000_000_000));
        assert_eq!(r("1e-40", 1 << 40), Some(0));
        assert_eq!(r("18446744073709551615", 1), Some(u64::MAX));
        assert_eq!(r("18446744073709551616", 1), None);
        assert_eq!(r("1e30", 1), None);
        assert_eq!(r("-1", 1), None);
        assert_eq!(r("-0", 1), Some(0));
        assert_eq!(r("1.00000000000000000000000000000000000001", 1000), Some(1000));
    }

    proptest::proptest! {
        #[test]
        fn every_printed_f64_reads_back(x in 1e-20f64..1e20) {
            for t in [format!("{x}"), format!("{x:e}")] {
                proptest::prop_assert_eq!(f(&t), Some(x), "{}", t);
            }
        }

        #[test]
        fn typed_numbers_read_as_str_parse_reads_them(whole in 0u64..1_000_000, frac in 0u64..1_000_000_000, exp in -10i32..10) {
            for t in [format!("{whole}.{frac}"), format!("{whole}.{frac}e{exp}"), format!("{frac}")] {
                proptest::prop_assert_eq!(f(&t), t.parse::<f64>().ok(), "{}", t);
            }
        }
    }
}

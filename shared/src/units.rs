//! Byte sizes: parsing what people type (`24GiB`, `80GB`, `81559MiB`, plain
//! bytes) and formatting in binary (GiB, what nvidia-smi and PyTorch speak) or
//! decimal (GB, what vendors sell) units.

use serde::{Deserialize, Serialize};

use crate::decimal::Decimal;

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
pub const TIB: u64 = 1 << 40;
pub const KB: u64 = 1_000;
pub const MB: u64 = 1_000_000;
pub const GB: u64 = 1_000_000_000;
pub const TB: u64 = 1_000_000_000_000;

/// Which family of units to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitSystem {
    /// KiB/MiB/GiB (powers of 1024): nvidia-smi, PyTorch, vLLM logs.
    #[default]
    Binary,
    /// kB/MB/GB (powers of 1000): vendor spec sheets, disk sizes.
    Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("empty size")]
    Empty,
    #[error("`{0}` is not a size (examples: 24GiB, 80GB, 81559MiB, 1073741824)")]
    Malformed(String),
    #[error("unknown unit `{0}` (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)")]
    UnknownUnit(String),
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// Parses a byte size. A bare number is bytes; units are case-insensitive and
/// may be separated by a space. `G`/`M`/`K` alone are read as binary, as
/// `nvidia-smi` and most tools print them.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let unit = unit.trim();
    let value = Decimal::parse(&num).ok_or_else(|| SizeError::Malformed(s.to_owned()))?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" | "byte" => 1,
        "k" | "kib" => KIB,
        "m" | "mib" => MIB,
        "g" | "gib" => GIB,
        "t" | "tib" => TIB,
        "kb" => KB,
        "mb" => MB,
        "gb" => GB,
        "tb" => TB,
        other => return Err(SizeError::UnknownUnit(other.to_owned())),
    };
    // Rounded once, from the exact decimal.
    value.times_rounded(scale).ok_or_else(|| SizeError::TooLarge(s.to_owned()))
}

/// `12.34 GiB` / `13.25 GB`, choosing the largest unit that keeps the number ≥ 1.
///
/// Integer arithmetic only: float formatting would pull several kilobytes of
/// `core::fmt::float` code and tables into the page's wasm.
pub fn format_bytes(bytes: u64, units: UnitSystem) -> String {
    let (base, names): (u128, [&str; 5]) = match units {
        UnitSystem::Binary => (1024, ["B", "KiB", "MiB", "GiB", "TiB"]),
        UnitSystem::Decimal => (1000, ["B", "kB", "MB", "GB", "TB"]),
    };
    let mut unit = 0;
    let mut scale = 1u128;
    while u128::from(bytes) >= scale * base && unit < names.len() - 1 {
        scale *= base;
        unit += 1;
    }
    if unit == 0 {
        return format!("{bytes} B");
    }
    // Hundredths, rounded half up: under 2·10^9 (at most 1,024 of a unit
    // below TiB, 2^24 TiB), so printed as a u64 (u128's formatter is 1.3 kB
    // more of the page's wasm).
    let hundredths = ((u128::from(bytes) * 100 + scale / 2) / scale) as u64;
    format!("{}.{:02} {}", hundredths / 100, hundredths % 100, names[unit])
}

/// `x` with `places` decimals (rounded half away from zero), without float
/// formatting code: `decimal(0.9, 2)` → `0.90`, `decimal(1.5616, 2)` → `1.56`.
pub fn decimal(x: f64, places: u32) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let scale = 10u64.pow(places.min(9));
    let scaled = (x.abs() * scale as f64).round();
    let n = if scaled >= u64::MAX as f64 { u64::MAX } else { scaled as u64 };
    let sign = if x < 0.0 && n > 0 { "-" } else { "" };
    if places == 0 {
        return format!("{sign}{n}");
    }
    format!("{sign}{}.{:0width$}", n / scale, n % scale, width = places as usize)
}

/// Like [`decimal`] with trailing zeros dropped: `0.92`, `0.9`, `1`.
pub fn decimal_short(x: f64, places: u32) -> String {
    let s = decimal(x, places);
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
}

/// What `{}` prints for an `f64`: the shortest decimal that reads back as
/// the same value (the nearest one of that length), without the float
/// formatting code `{}` brings into the page's wasm (13 kB): for the
/// fractions a link or an engine report carries. Exact arithmetic on the
/// value's binary form, in `u128`: a value whose shortest form needs more
/// than 22 decimal places, or 10^15 and beyond, gets [`decimal`] with 9
/// places instead.
pub fn shortest(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let a = x.abs();
    if a < 1e15 {
        // a = mantissa × 2^-shift exactly (a < 2^50: the shift is positive).
        let bits = a.to_bits();
        let biased = (bits >> 52) & 0x7ff;
        let fraction = u128::from(bits & ((1 << 52) - 1));
        let (mantissa, shift) = match biased {
            0 => (fraction, 1074),
            b => (fraction | 1 << 52, 1075 - b as u32),
        };
        for places in 0..=38u32 {
            let scale = 10u128.pow(places);
            let Some(scaled) = mantissa.checked_mul(scale) else { break };
            // The nearest decimal of `places` places (half up).
            let n = match shift {
                0 => scaled,
                s if s < 128 => (scaled >> s) + ((scaled >> (s - 1)) & 1),
                _ => 0,
            };
            // `n / scale`, a point and `n % scale` in `places` digits.
            let mut text = digits(n);
            let p = places as usize;
            if p > 0 {
                if text.len() <= p {
                    text.insert_str(0, &"0".repeat(p + 1 - text.len()));
                }
                text.insert(text.len() - p, '.');
            }
            if Decimal::parse(&text).map(Decimal::to_f64) == Some(a) {
                return format!("{sign}{text}");
            }
        }
    }
    decimal(x, 9)
}

/// `n` in decimal, as `n.to_string()` writes it, by u64 pieces: u128's own
/// formatter is 1.3 kB of the page's wasm.
fn digits(n: u128) -> String {
    const E19: u128 = 10_000_000_000_000_000_000;
    match u64::try_from(n) {
        Ok(n) => n.to_string(),
        Err(_) => format!("{}{:019}", digits(n / E19), (n % E19) as u64),
    }
}

/// What `format!("{:.2}", bytes as f64 / MIB as f64)` prints (llama.cpp
/// logs sizes with `%.2f` of MiB), without the float formatter `{:.2}`
/// brings into the page's wasm (9.6 kB): the quotient is exact in binary
/// (below 2^53 B), and both round it half to even.
pub fn mib_2dp(bytes: u64) -> String {
    let scaled = u128::from(bytes) * 100;
    let (whole, rest) = (scaled / u128::from(MIB), scaled % u128::from(MIB));
    let half = u128::from(MIB / 2);
    // Under 2^64 · 100 / 2^20: printed as a u64 (see `format_bytes`).
    let n = (whole + u128::from(rest > half || (rest == half && whole % 2 == 1))) as u64;
    format!("{}.{:02}", n / 100, n % 100)
}

/// Bytes in GiB as a float, for display and charts.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB as f64
}

// Counts and sizes as people type them: one reader for links, the CLI and
// the page (each engine's settings read through these).

/// A token count as vLLM reads `--max-model-len` (`human_readable_int` in
/// vllm/engine/arg_utils.py, v0.10): plain `32768`, decimal `k`/`m`
/// (`32k` = 32,000, `1.5k` = 1,500), binary `K`/`M` (`128K` = 131,072;
/// decimals refused with a binary suffix, as vLLM does). `_` and `,` may
/// separate digits. Whole results only, up to `hi`.
pub fn parse_tokens(value: &str, hi: u64) -> Result<u64, String> {
    let refused = || format!("not a token count from 0 to {hi} (e.g. 4096, 32k = 32,000, 128K = 131,072)");
    let v: String = value.trim().chars().filter(|c| !matches!(c, '_' | ',')).collect();
    let (num, scale, binary) = match v.chars().last() {
        Some('k') => (&v[..v.len() - 1], 1_000, false),
        Some('m') => (&v[..v.len() - 1], 1_000_000, false),
        Some('K') => (&v[..v.len() - 1], 1 << 10, true),
        Some('M') => (&v[..v.len() - 1], 1 << 20, true),
        _ => (v.as_str(), 1, false),
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (num.contains('.') && (binary || scale == 1 || !digits(frac))) {
        return Err(refused());
    }
    // Exact: whole × scale + frac × scale / 10^len(frac), which must be whole.
    let denom = 10u64.checked_pow(u32::try_from(frac.len()).map_err(|_| refused())?).ok_or_else(refused)?;
    let frac_n: u64 = if frac.is_empty() { 0 } else { frac.parse().map_err(|_| refused())? };
    let part = frac_n.checked_mul(scale).ok_or_else(refused)?;
    if !part.is_multiple_of(denom) {
        return Err(refused());
    }
    let n = whole.parse::<u64>().ok().and_then(|w| w.checked_mul(scale)).and_then(|w| w.checked_add(part / denom));
    match n {
        Some(n) if n <= hi => Ok(n),
        _ => Err(refused()),
    }
}

pub fn parse_count(value: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let n: u64 = value.parse().map_err(|_| format!("not a whole number from {lo} to {hi}"))?;
    in_range(n, lo, hi)
}

pub fn in_range(n: u64, lo: u64, hi: u64) -> Result<u64, String> {
    if (lo..=hi).contains(&n) { Ok(n) } else { Err(format!("must be from {lo} to {hi}")) }
}

/// `24GiB`, `24564MiB`, `80GB` or plain bytes: the shortest exact form.
pub fn size_text(bytes: u64) -> String {
    if bytes.is_multiple_of(GIB) {
        format!("{}GiB", bytes / GIB)
    } else if bytes.is_multiple_of(GB) {
        format!("{}GB", bytes / GB)
    } else if bytes.is_multiple_of(MIB) {
        format!("{}MiB", bytes / MIB)
    } else {
        bytes.to_string()
    }
}

/// `24564MiB`, `80GB`, plain bytes: whole numbers read without float rounding.
pub fn exact_size(value: &str) -> Option<u64> {
    let split = value.find(|c: char| !c.is_ascii_digit()).unwrap_or(value.len());
    let (num, unit) = value.split_at(split);
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => MIB,
        "gib" => GIB,
        "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => GB,
        "tb" => 1_000_000_000_000,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_as_vllm_reads_them() {
        let hi = 10_000_000;
        assert_eq!(parse_tokens("32k", hi), Ok(32_000));
        assert_eq!(parse_tokens("1.5k", hi), Ok(1_500));
        assert_eq!(parse_tokens("128K", hi), Ok(131_072));
        assert_eq!(parse_tokens("1M", hi), Ok(1_048_576));
        assert_eq!(parse_tokens(" 2,048 ", hi), Ok(2_048));
        assert_eq!(parse_tokens("0", hi), Ok(0));
        for bad in ["abc", "", "1.5K", "1.2345k", "1.5", "k", "-3", "32kk", ".5k", "20m"] {
            assert!(parse_tokens(bad, hi).is_err(), "{bad}");
        }
    }

    #[test]
    fn digits_are_u128s_own() {
        let e19 = 10_000_000_000_000_000_000u128;
        for n in
            [0, 9, u128::from(u64::MAX), u128::from(u64::MAX) + 1, e19 - 1, e19, e19 * e19 - 1, e19 * e19, u128::MAX]
        {
            assert_eq!(digits(n), n.to_string());
        }
    }

    #[test]
    fn shortest_prints_as_display_does() {
        for x in [0.0, -0.0, 1.0, 0.9, 0.92, 0.85, 0.123456, 1e-7, 0.1 + 0.2, 2.5, 123.456, 1e14 + 0.5, -0.75, f64::NAN]
        {
            assert_eq!(shortest(x), format!("{x}"), "{x}");
        }
        assert_eq!(shortest(f64::INFINITY), format!("{}", f64::INFINITY));
        for i in 1..=1000 {
            let x = f64::from(i) / 1000.0;
            assert_eq!(shortest(x), format!("{x}"), "{x}");
        }
    }

    proptest::proptest! {
        #[test]
        fn shortest_is_display(x in 1e-5f64..1e12) {
            proptest::prop_assert_eq!(shortest(x), format!("{x}"));
        }

        #[test]
        fn shortest_of_typed_fractions(digits in 1u64..1_000_000_000, places in 1u32..10) {
            let x: f64 = format!("0.{digits:0width$}", width = places.max(digits.to_string().len() as u32) as usize)
                .parse()
                .expect("a number");
            proptest::prop_assert_eq!(shortest(x), format!("{x}"));
        }
    }

    #[test]
    fn parses_the_forms_people_type() {
        let check = |text: &str, want: u64| assert_eq!(parse_size(text), Ok(want), "{text}");
        check("24GiB", 24 * GIB);
        check("24 GiB", 24 * GIB);
        check("80GB", 80 * GB);
        check("81559MiB", 81559 * MIB);
        check("1073741824", GIB);
        check("1_024", 1024);
        check("23.58GiB", (23.58 * GIB as f64).round() as u64);
        check("16g", 16 * GIB);
        assert!(parse_size("").is_err());
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("1e400").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }

    #[test]
    fn formats_in_both_systems() {
        assert_eq!(format_bytes(512, UnitSystem::Binary), "512 B");
        assert_eq!(format_bytes(24 * GIB, UnitSystem::Binary), "24.00 GiB");
        assert_eq!(format_bytes(24 * GIB, UnitSystem::Decimal), "25.77 GB");
        assert_eq!(format_bytes(u64::MAX, UnitSystem::Binary), "16777216.00 TiB");
        assert_eq!(format_bytes(1023 * MIB, UnitSystem::Binary), "1023.00 MiB");
        assert_eq!(format_bytes(GIB + GIB / 100, UnitSystem::Binary), "1.01 GiB");
        assert_eq!(format_bytes(1_995 * MB, UnitSystem::Decimal), "2.00 GB");
    }

    #[test]
    fn mebibytes_print_as_precision_two_does() {
        let check = |b: u64| assert_eq!(mib_2dp(b), format!("{:.2}", b as f64 / MIB as f64), "{b}");
        // Ties (quarters and eighths of a MiB) and their neighbours.
        for b in [0, 1, MIB / 8, MIB / 8 * 3, MIB / 8 * 5, MIB / 8 * 7, MIB + MIB / 8, 3 * MIB / 2, 1023 * MIB] {
            for d in [0, 1] {
                check(b + d);
                check(b.saturating_sub(d));
            }
        }
        for i in 0..20_000u64 {
            check(i * 5_243); // a step that is not a divisor of 2^20
        }
    }

    proptest::proptest! {
        #[test]
        fn mebibytes_match_float_formatting(b in 0u64..(1 << 52)) {
            proptest::prop_assert_eq!(mib_2dp(b), format!("{:.2}", b as f64 / MIB as f64));
        }
    }

    #[test]
    fn decimals_without_float_formatting() {
        assert_eq!(decimal(0.9, 2), "0.90");
        assert_eq!(decimal(1.5616, 2), "1.56");
        assert_eq!(decimal(4.15625, 3), "4.156");
        assert_eq!(decimal(-2.5, 0), "-3");
        assert_eq!(decimal(f64::NAN, 2), "–");
        assert_eq!(decimal_short(0.92, 3), "0.92");
        assert_eq!(decimal_short(1.0, 2), "1");
        for x in [0.0, 0.005, 1.25, 99.999, 12345.678] {
            assert_eq!(decimal(x, 2), format!("{x:.2}"), "{x}");
        }
    }
}

//! Byte sizes: parsing what people type (`24GiB`, `80GB`, `81559MiB`, plain
//! bytes) and formatting in binary (GiB, what nvidia-smi and PyTorch speak) or
//! decimal (GB, what vendors sell) units.

use serde::{Deserialize, Serialize};

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
    let value: f64 = num.parse().map_err(|_| SizeError::Malformed(s.to_owned()))?;
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
    let bytes = (value * scale as f64).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(SizeError::TooLarge(s.to_owned()));
    }
    Ok(bytes as u64)
}

/// `12.34 GiB` / `13.25 GB`, choosing the largest unit that keeps the number ≥ 1.
pub fn format_bytes(bytes: u64, units: UnitSystem) -> String {
    let (base, names): (f64, [&str; 5]) = match units {
        UnitSystem::Binary => (1024.0, ["B", "KiB", "MiB", "GiB", "TiB"]),
        UnitSystem::Decimal => (1000.0, ["B", "kB", "MB", "GB", "TB"]),
    };
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= base && unit < names.len() - 1 {
        value /= base;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.2} {}", names[unit]) }
}

/// Bytes in GiB as a float, for display and charts.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB as f64
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}

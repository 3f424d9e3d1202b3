//! Readers and writers of single link values: ids, counts, sizes, URLs.

use super::base64url::base64url_decode;
use super::state::GpuChoice;
use super::{DEFAULT_HUB, MAX_CFG, MAX_PARAMS, MIN_PARAMS};
use crate::arch::Architecture;
use crate::catalog::{gpu, model_preset};
use crate::decimal::Decimal;
use crate::units::{GB, GIB, MIB, parse_size};

/// A GPU of `mix=`: a catalog id or a memory size.
pub(super) fn parse_choice(value: &str) -> Result<GpuChoice, String> {
    if let Some(g) = gpu(value) {
        return Ok(GpuChoice::Catalog(g.id.clone()));
    }
    exact_size(value)
        .map_or_else(|| parse_size(value), Ok)
        .map_err(|_| format!("`{}` is neither a catalog GPU nor a size", shorten(value)))
        .and_then(|b| in_range(b, 1, u64::MAX / 4))
        .map(GpuChoice::Custom)
}

pub(super) fn parse_preset(value: &str) -> Result<String, String> {
    model_preset(value).map(|p| p.id.to_owned()).ok_or_else(|| "not a model preset".into())
}

/// A `cfg=` value: base64url of a config.json that `read` (the family
/// readers: [`read_config`]) accepts.
pub(super) fn parse_cfg(value: &str, read: ConfigCheck) -> Result<String, String> {
    if value.len() > MAX_CFG {
        return Err("the config is too long".into());
    }
    let bytes = base64url_decode(value).ok_or("not base64url")?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text")?;
    read(&text)?;
    Ok(text)
}

/// Whether a config.json reads as a model, with the reader's error if not.
pub type ConfigCheck<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// The check [`super::decode`] makes of a `cfg=` config: the family readers.
pub fn read_config(text: &str) -> Result<(), String> {
    Architecture::from_config_json(text).map(drop).map_err(|e| e.to_string())
}

/// A Hugging Face model as `shared::hub` names it, kept as typed:
/// `ORG/NAME[@REVISION][:PICK]` (a GGUF file or quantisation tag after `:`).
pub fn parse_repo_id(value: &str) -> Result<String, String> {
    crate::hub::HubRef::parse(value).map(|_| value.to_owned())
}

/// The longest file name a `file=` link carries (ext4's and NTFS's limit).
pub const MAX_FILE_NAME: usize = 255;

/// A dropped checkpoint file's name: no path, no control characters, no
/// space at either end (a query value loses it).
pub fn parse_file_name(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.trim() == value
        && value.len() <= MAX_FILE_NAME
        && !value.chars().any(|c| c.is_control() || c == '/' || c == '\\');
    if ok { Ok(value.to_owned()) } else { Err("not a file name".into()) }
}

/// A parameter count: `8030261248`, `8b`, `1.5B`, `350m`, `7e9`.
pub fn parse_params(value: &str) -> Result<u64, String> {
    let v = value.trim().replace('_', "");
    let (num, scale) = match v.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('b') => (&v[..v.len() - 1], 1_000_000_000),
        Some('m') => (&v[..v.len() - 1], 1_000_000),
        Some('t') => (&v[..v.len() - 1], 1_000_000_000_000),
        Some('k') => (&v[..v.len() - 1], 1_000),
        _ => (v.as_str(), 1),
    };
    let n = Decimal::parse(num.trim()).ok_or("not a parameter count (e.g. 8b, 1.5b, 350m)")?;
    match n.times_rounded(scale) {
        Some(n) if (MIN_PARAMS..=MAX_PARAMS).contains(&n) => Ok(n),
        _ => Err("a parameter count must be between 1M and 10T".into()),
    }
}

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

pub(super) fn parse_hub(value: &str) -> Result<Option<String>, String> {
    let v = value.trim_end_matches('/');
    let rest = v.strip_prefix("https://").or_else(|| v.strip_prefix("http://")).ok_or("must start with https://")?;
    if rest.is_empty() || rest.len() > 200 || rest.chars().any(|c| c.is_whitespace() || matches!(c, '?' | '#')) {
        return Err("not a base URL".into());
    }
    Ok(if v == DEFAULT_HUB { None } else { Some(v.to_owned()) })
}

pub(super) fn parse_u64(value: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let n: u64 = value.parse().map_err(|_| format!("not a whole number from {lo} to {hi}"))?;
    in_range(n, lo, hi)
}

pub(super) fn in_range(n: u64, lo: u64, hi: u64) -> Result<u64, String> {
    if (lo..=hi).contains(&n) { Ok(n) } else { Err(format!("must be from {lo} to {hi}")) }
}

/// `24GiB`, `24564MiB`, `80GB` or plain bytes: the shortest exact form.
pub(super) fn size_text(bytes: u64) -> String {
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
pub(super) fn exact_size(value: &str) -> Option<u64> {
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

pub(super) fn shorten(s: &str) -> String {
    if s.chars().count() <= 40 { s.to_owned() } else { format!("{}…", s.chars().take(40).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_parameter_counts() {
        assert_eq!(parse_params("8b"), Ok(8_000_000_000));
        assert_eq!(parse_params("1.5B"), Ok(1_500_000_000));
        assert_eq!(parse_params("350m"), Ok(350_000_000));
        assert_eq!(parse_params("7e9"), Ok(7_000_000_000));
        assert_eq!(parse_params("8030261248"), Ok(8_030_261_248));
        assert!(parse_params("12").is_err());
        assert!(parse_params("lots").is_err());
    }

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
}

//! Readers and writers of single link values: ids, counts, sizes, URLs.

use super::base64url::base64url_decode;
use super::state::GpuChoice;
use super::{DEFAULT_HUB, MAX_CFG, MAX_PARAMS, MIN_PARAMS};
use crate::arch::Architecture;
use crate::catalog::{gpu, model_preset};
use crate::decimal::Decimal;
use crate::units::parse_size;
pub(super) use crate::units::{exact_size, in_range, parse_count as parse_u64, size_text};

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

pub(super) fn parse_hub(value: &str) -> Result<Option<String>, String> {
    let v = value.trim_end_matches('/');
    let rest = v.strip_prefix("https://").or_else(|| v.strip_prefix("http://")).ok_or("must start with https://")?;
    if rest.is_empty() || rest.len() > 200 || rest.chars().any(|c| c.is_whitespace() || matches!(c, '?' | '#')) {
        return Err("not a base URL".into());
    }
    Ok(if v == DEFAULT_HUB { None } else { Some(v.to_owned()) })
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
}

//! Engine knobs (`e=`, `gmu=`, `ngl=`, …): written, read and edited one key
//! at a time, as each engine declares them (`crate::engines::knobs`).

use super::version::LinkVersion;
use crate::engines::Engine;

/// The engine key, its pinned version, and the knobs that differ from what
/// a link of the current version reads when they are left out.
pub(super) fn encode_engine(e: &Engine, pairs: &mut Vec<(&'static str, String)>) {
    let kind = e.kind();
    if kind != LinkVersion::CURRENT.engine_kind() {
        pairs.push(("e", kind.id().into()));
    }
    let default = LinkVersion::CURRENT.engine(kind);
    for about in kind.settings() {
        let text = e.setting(about.key).unwrap_or_default();
        let differs = about.always || default.setting(about.key).is_none_or(|d| d != text);
        if differs && !text.is_empty() {
            pairs.push((about.key, text));
        }
    }
}

/// The text of one engine knob key (`gmu`, `ngl`, …) as a link writes it;
/// empty when the knob has its default (`vllm` and `sglang`, the pinned
/// versions, are always written).
pub fn knob(e: &Engine, key: &str) -> String {
    let mut pairs = Vec::new();
    encode_engine(e, &mut pairs);
    pairs.into_iter().find(|(k, _)| *k == key).map(|(_, v)| v).unwrap_or_default()
}

/// The engine with one knob set from text (empty text: back to the default,
/// for `vllm` the newest version).
pub fn with_knob(e: &Engine, key: &str, value: &str) -> Result<Engine, String> {
    let mut pairs = Vec::new();
    encode_engine(e, &mut pairs);
    let mut next = super::version::new_engine(e.kind());
    for (k, v) in pairs.iter().filter(|(k, _)| *k != key && *k != "e") {
        next.set_setting(k, v)?;
    }
    let value = value.trim();
    if !value.is_empty() {
        next.set_setting(key, value)?;
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::EngineKind;

    #[test]
    fn knobs_read_and_write_one_key() {
        let e = EngineKind::Vllm.with_defaults();
        let e = with_knob(&e, "gmu", "0.8").expect("valid");
        let e = with_knob(&e, "mml", "4096").expect("valid");
        assert_eq!(knob(&e, "gmu"), "0.8");
        let e = with_knob(&e, "gmu", "").expect("reset");
        assert_eq!(knob(&e, "gmu"), "");
        assert_eq!(knob(&e, "mml"), "4096");
        assert!(with_knob(&e, "gmu", "2").is_err());
        assert!(with_knob(&e, "ngl", "2").is_err());
    }

    /// Issue 34: `max_model_len` refused `32k` while the prompt took it.
    #[test]
    fn every_token_knob_reads_32k_as_the_prompt_does() {
        for (kind, keys) in [
            (EngineKind::Vllm, &["mml", "mbt"][..]),
            (EngineKind::Sglang, &["cl", "mbt"]),
            (EngineKind::LlamaCpp, &["nctx"]),
            (EngineKind::Ollama, &["numctx"]),
        ] {
            for key in keys {
                let e = kind.with_defaults();
                for (text, want) in [("32k", "32000"), ("128K", "131072"), ("4,096", "4096")] {
                    let set = with_knob(&e, key, text).unwrap_or_else(|why| panic!("{key}={text}: {why}"));
                    assert_eq!(knob(&set, key), want, "{key}={text}");
                }
                // llama.cpp's `-c 0` is the trained context, as the CLI read it.
                assert_eq!(with_knob(&e, key, "0").is_err(), *key != "nctx", "{key}=0");
                assert!(with_knob(&e, key, "32q").is_err(), "{key}=32q");
            }
        }
    }

    /// `--cpu-moe` is `--n-cpu-moe` over every layer: `all` in the form.
    #[test]
    fn cpu_moe_all_is_every_layer() {
        for kind in [EngineKind::LlamaCpp, EngineKind::Ollama] {
            let e = with_knob(&kind.with_defaults(), "ncmoe", "All").expect("all");
            assert_eq!(knob(&e, "ncmoe"), u32::MAX.to_string());
            assert_eq!(knob(&with_knob(&e, "ncmoe", "12").expect("12"), "ncmoe"), "12");
        }
    }
}

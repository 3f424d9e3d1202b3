//! Share links: every input of the calculator page as a short, readable URL
//! query (`?model=llama-3.1-8b&w=nf4&p=2048&n=512&c=1&gpu=rtx-4090&g=1`), and
//! back. The keys are a stable contract documented in `docs/links.md`.
//!
//! Decoding never fails: unknown keys and bad values are skipped, each with a
//! notice the page shows, and the rest of the link still applies. A pasted
//! `config.json` travels as base64url of its minified JSON, trimmed to the
//! fields the memory model reads ([`compact_config`]). A pasted
//! out-of-memory error travels only when the person asks (`oom=`), trimmed by
//! [`compact_oom`].
//!
//! Links are versioned ([`LinkVersion`], `v=`): a key left out takes the
//! default frozen for the link's version, and the engine version is pinned
//! (`vllm=0.21`), so a link means the same plan after the next release.

mod base64url;
mod compact;
mod decode;
mod encode;
mod knobs;
mod percent;
mod state;
#[cfg(test)]
mod tests;
mod values;
mod version;

pub use crate::units::parse_tokens;
pub use base64url::{base64url_decode, base64url_encode};
pub use compact::{compact_config, compact_oom};
pub use decode::{decode, decode_with};
pub use encode::encode;
pub use knobs::{knob, with_knob};
pub use percent::{percent_decode, percent_encode};
pub use state::{Decoded, GpuChoice, LinkState, ModelSource};
pub use values::{ConfigCheck, parse_params, parse_repo_id, read_config};
pub use version::{LinkVersion, NewerEngine, new_engine, newer_engine};

/// The preset the page opens with.
pub const DEFAULT_MODEL: &str = "llama-3.1-8b";
/// The GPU the page opens with: the estimator's default (the CLI's too).
pub use crate::estimate::DEFAULT_GPU;
/// The Hugging Face hub; `hub=` replaces it (mirrors, tests).
pub const DEFAULT_HUB: &str = "https://huggingface.co";
/// Bounds of a custom parameter count (`params=`).
pub const MIN_PARAMS: u64 = 1_000_000;
pub const MAX_PARAMS: u64 = 10_000_000_000_000;
/// Longest accepted `cfg=` value (base64 characters).
const MAX_CFG: usize = 64 * 1024;
/// Longest pasted error `oom=` carries (characters of text, before encoding).
pub const MAX_OOM: usize = 8 * 1024;

//! transformers' settings, declared once (`super::super::knobs`): in the
//! order a link writes them.

#[cfg(feature = "cli")]
use crate::engines::knobs::Cli;
use crate::engines::knobs::{About, Knob};

use super::{AttentionImpl, LogitsMode, Options};

type K = Knob<Options, ()>;

pub static KNOBS: &[K] = &[
    K {
        about: About {
            key: "attn",
            label: "Attention",
            choices: &["sdpa", "eager"],
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "attention",
                help: "attention implementation (sdpa, flash_attention_2, eager)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.attention.id().into(),
        set: |o, v| {
            o.attention = AttentionImpl::parse(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "logits",
            label: "Logits",
            choices: &["last", "all"],
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[("full-logits", "all", "logits for every prompt position (transformers < 4.45)")],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.logits.id().into(),
        set: |o, v| {
            o.logits = LogitsMode::parse(v)?;
            Ok(())
        },
        effective: None,
    },
];

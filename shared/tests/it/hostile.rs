//! The inputs a first fuzzing run found (`fuzz/regressions/`, described in
//! docs/fuzzing.md), each refused with an error that names the field it
//! read, or read as the engine printed it. `fuzz/tests/replay.rs` replays
//! them through the page's and the CLI's whole path; these hold the answers.

use shared::checkpoint::read::{self, Step};
use shared::checkpoint::{Checkpoint, CheckpointError};
use shared::model::Model;
use shared::startup::{Figure, read as read_log};
use shared::units::parse_size;

fn finding(target: &str, name: &str) -> Vec<u8> {
    let path = format!("{}/../fuzz/regressions/{target}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn gguf(bytes: &[u8]) -> Checkpoint {
    let Ok(Step::Done(file)) = read::gguf(bytes, Some(bytes.len() as u64)) else { panic!("the header reads") };
    Checkpoint::from_gguf(vec![("m.gguf".into(), file)]).unwrap_or_else(|e| panic!("{e}"))
}

fn safetensors(bytes: &[u8]) -> Checkpoint {
    let Ok(Step::Done(h)) = read::safetensors(bytes, Some(bytes.len() as u64)) else { panic!("the header reads") };
    Checkpoint::from_safetensors(vec![("m.safetensors".into(), h)]).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(model: Result<Model, CheckpointError>) -> String {
    match model {
        Ok(m) => panic!("{} was read with {} layers", m.name, m.arch.text.num_layers()),
        Err(e) => e.to_string(),
    }
}

/// A claimed layer count never sizes an allocation: GGUF `block_count`, a
/// config's `num_hidden_layers` beside a checkpoint (of a known family or
/// not) and the largest layer index in a tensor name are each refused over
/// `MAX_LAYERS`, by name.
#[test]
fn claimed_layer_counts_are_refused_by_name() {
    let e = refused(Model::from_checkpoint("m", None, &gguf(&finding("gguf", "gguf-block-count-oom.bin"))));
    assert_eq!(e, "GGUF metadata `x.block_count`: 100000000 is implausibly large (limit 4096)");
    let e = refused(Model::from_checkpoint("m", None, &gguf(&finding("gguf", "gguf-swa-block-count-oom.bin"))));
    assert!(e.starts_with("GGUF metadata `gemma2.block_count`: 1099511627776 is implausibly large"), "{e}");
    let e = refused(Model::from_checkpoint("m", None, &safetensors(&finding("safetensors", "st-layer-index-oom.bin"))));
    assert!(e.contains("the layers the tensor names count: 100000001 is implausibly large (limit 4096)"), "{e}");
    for name in ["cfg-num-layers-oom", "cfg-llama-layers-oom"] {
        let config = String::from_utf8(finding("config", &format!("{name}.json"))).unwrap_or_default();
        let beside = finding("config_checkpoint", &format!("{name}.bin"));
        let checkpoint = safetensors(&beside[2 + config.len()..]);
        let e = refused(Model::from_checkpoint("m", Some(&config), &checkpoint));
        assert_eq!(e, "config.json field `num_hidden_layers`: 100000000 is implausibly large (limit 4096)");
    }
}

/// Widths read by inference are bounded as the family readers bound theirs,
/// so no product of them wraps: a GGUF `embedding_length` and a config's
/// `hidden_size` near `u64::MAX / 3` are refused by name.
#[test]
fn claimed_widths_are_refused_by_name() {
    let e = refused(Model::from_checkpoint("m", None, &gguf(&finding("gguf", "gguf-hidden-overflow.bin"))));
    assert!(e.starts_with("GGUF metadata `x.embedding_length`: "), "{e}");
    assert!(e.ends_with("is implausibly large (limit 16777216)"), "{e}");
    let config = String::from_utf8(finding("config", "cfg-hidden-overflow.json")).unwrap_or_default();
    let beside = finding("config_checkpoint", "cfg-hidden-overflow.bin");
    let e = refused(Model::from_checkpoint("m", Some(&config), &safetensors(&beside[2 + config.len()..])));
    assert_eq!(e, "config.json field `hidden_size`: 11529215046068470016 is implausibly large (limit 16777216)");
}

/// vLLM's "Free memory on device" line copied from a page, with a no-break
/// space before the first figure, reads its figures as the plain line does.
#[test]
fn a_no_break_space_before_a_figure_reads_as_a_space() {
    let text = String::from_utf8(finding("startup", "startup-no-break-space.txt")).unwrap_or_default();
    assert!(text.contains("is\u{a0}16.92 GiB"), "the fixture keeps its no-break space");
    let log = read_log(&text).unwrap_or_else(|| panic!("no lines read"));
    let figures: Vec<Figure> = log.facts.iter().map(|f| f.figure).collect();
    let gib = |t: &str| parse_size(t).unwrap_or_else(|e| panic!("{e}"));
    assert!(figures.contains(&Figure::Weights { bytes: gib("16.92GiB") }), "{figures:?}");
    assert!(figures.contains(&Figure::ActivationPeak { bytes: gib("5.66GiB") }), "{figures:?}");
    // The invalid byte of the fuzzer's form reads as U+FFFD: no figure, no panic.
    let broken = String::from_utf8_lossy(&finding("startup", "startup-char-boundary.txt")).into_owned();
    let _ = read_log(&broken);
}

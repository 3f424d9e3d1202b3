//! Every committed finding (`regressions/<target>/`) run through its target
//! on stable, as CI runs the tests: a defect a fuzzer found stays fixed
//! without a nightly toolchain. The inputs of the first run are described in
//! `docs/fuzzing.md`; `cargo xtask fuzz` adds new ones here.

use std::path::{Path, PathBuf};

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions")
}

#[test]
fn every_finding_is_answered_without_a_panic() {
    let mut ran = 0;
    for target in fuzz::TARGETS {
        let dir = regressions().join(target.name);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            eprintln!("{}: {}", target.name, file.display());
            (target.run)(&data);
            ran += 1;
        }
    }
    // The first run's findings (research/fuzz-inputs.md) at least: a replay
    // that found no files would pass without testing anything.
    assert!(ran >= 19, "only {ran} findings replayed from {}", regressions().display());
}

/// Every folder under `regressions/` is a target's, so no finding is
/// committed where the replay never looks.
#[test]
fn every_regression_folder_names_a_target() {
    for entry in std::fs::read_dir(regressions()).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(fuzz::TARGETS.iter().any(|t| t.name == name), "regressions/{name} is no target's");
    }
}

/// The committed binary seeds are real starting points: each reads as a
/// checkpoint, and each GGUF as a model (its metadata is its config), so the
/// fuzzer begins past the header checks, in inference and the engines; a
/// safetensors file alone lacks the head width, which `config_checkpoint`
/// seeds give it. Each runs through its target.
#[test]
fn the_binary_seeds_read_as_models() {
    use shared::checkpoint::Checkpoint;
    use shared::checkpoint::read::{self, Step};
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let mut read = 0;
    for (target, run) in [("gguf", fuzz::gguf as fn(&[u8])), ("safetensors", fuzz::safetensors)] {
        for entry in std::fs::read_dir(seeds.join(target)).into_iter().flatten().flatten() {
            let data = std::fs::read(entry.path()).unwrap_or_default();
            let size = Some(data.len() as u64);
            let checkpoint = match target {
                "gguf" => match read::gguf(&data, size) {
                    Ok(Step::Done(f)) => Checkpoint::from_gguf(vec![("m.gguf".into(), f)]),
                    other => panic!("{}: {other:?}", entry.path().display()),
                },
                _ => match read::safetensors(&data, size) {
                    Ok(Step::Done(h)) => Checkpoint::from_safetensors(vec![("m.safetensors".into(), h)]),
                    other => panic!("{}: {other:?}", entry.path().display()),
                },
            };
            let checkpoint = checkpoint.unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
            let model = shared::model::Model::from_checkpoint("seed", None, &checkpoint);
            if target == "gguf" {
                assert!(model.is_ok(), "{}: {:?}", entry.path().display(), model.err());
            }
            run(&data);
            read += 1;
        }
    }
    assert_eq!(read, 7, "three GGUF and four safetensors seeds");
}

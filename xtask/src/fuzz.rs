//! `cargo xtask fuzz [--seconds N] [--coverage] [TARGET…]`: every target of
//! `fuzz/` (or those named) in turn under libFuzzer, each for N seconds
//! (600 by default), seeded from the test fixtures.
//!
//! It installs what it needs (the nightly toolchain, cargo-fuzz), as the
//! README's commands install theirs. A run stops an input that takes over a
//! second or allocates over 256 MiB (`-timeout`, `-malloc_limit_mb`); a
//! finding is minimised (`cargo fuzz tmin`) into `fuzz/regressions/<target>/`,
//! where `cargo test --workspace` replays it on stable. The summary gives
//! each target's executions and coverage as libFuzzer counts them, and with
//! `--coverage` the lines of `shared`'s files the corpus reached
//! (`cargo fuzz coverage`, `llvm-cov`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::cmd::{found, output, step};

/// libFuzzer's limits, as the fuzzing issue sets them: a hang is an input
/// over a second, a leak or a bomb an allocation over 256 MiB. The RSS
/// limit is above it: AddressSanitizer's own shadow memory counts there.
const LIBFUZZER_LIMITS: &[&str] = &["-timeout=1", "-malloc_limit_mb=256", "-rss_limit_mb=4096", "-print_final_stats=1"];

/// The longest input tried: the largest seed (a GGUF of a few layers) and
/// room to grow, far below what a header reader reads in one step.
const MAX_LEN: &str = "-max_len=65536";

/// The release profile links the agent with LTO, which drops the symbols
/// AddressSanitizer's module destructors name (`__sancov_gen_`;
/// rust-fuzz/cargo-fuzz#384): fuzz builds leave it off, and build in
/// parallel as a development build does.
const PROFILE: &[(&str, &str)] =
    &[("CARGO_PROFILE_RELEASE_LTO", "false"), ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")];

/// What one target's run counted.
struct Run {
    target: String,
    seconds: u64,
    executions: Option<u64>,
    coverage: Option<String>,
    lines: Option<String>,
    finding: Option<PathBuf>,
    /// A timeout that did not come back when the input ran again alone:
    /// the machine was busy, not the input slow.
    flaky: Option<PathBuf>,
}

pub fn fuzz(args: &[String]) -> anyhow::Result<()> {
    let root = crate::cmd::dirs()?.0;
    let fuzz_dir = root.join("fuzz");
    let mut seconds = 600u64;
    let mut coverage = false;
    let mut chosen = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let n = it.next().context("--seconds needs a number")?;
                seconds = n.parse().with_context(|| format!("--seconds {n}: not a whole number of seconds"))?;
            }
            "--coverage" => coverage = true,
            name => chosen.push(name.to_owned()),
        }
    }
    let all = targets(&fuzz_dir)?;
    for name in &chosen {
        if !all.contains(name) {
            bail!("unknown fuzz target `{name}` (one of {})", all.join(", "));
        }
    }
    let targets = if chosen.is_empty() { all } else { chosen };
    install(coverage)?;
    let mut runs = Vec::new();
    for target in &targets {
        let corpus = seed(&root, &fuzz_dir, target)?;
        let mut run = run(&fuzz_dir, target, &corpus, seconds)?;
        if coverage {
            match lines(&root, &fuzz_dir, target, &corpus) {
                Ok(l) => run.lines = Some(l),
                Err(e) => eprintln!("warning: no line coverage for {target}: {e:#}"),
            }
        }
        runs.push(run);
    }
    report(&runs);
    let found: Vec<&Run> = runs.iter().filter(|r| r.finding.is_some()).collect();
    if !found.is_empty() {
        bail!(
            "{} target(s) found an input that fails: minimised into fuzz/regressions/ (replayed by cargo test); fix it and \
             commit the file",
            found.len()
        );
    }
    Ok(())
}

/// The targets, from `fuzz_targets/*.rs`.
fn targets(fuzz_dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(fuzz_dir.join("fuzz_targets"))
        .context("reading fuzz/fuzz_targets")?
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "rs").then(|| p.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.sort();
    Ok(names)
}

/// The nightly toolchain (cargo-fuzz's instrumentation flags are nightly's)
/// and cargo-fuzz; with `coverage`, LLVM's tools.
fn install(coverage: bool) -> anyhow::Result<()> {
    let toolchains = output(Command::new("rustup").args(["toolchain", "list"])).unwrap_or_default();
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        step(
            "install the nightly toolchain (for cargo-fuzz)",
            Command::new("rustup").args(["toolchain", "install", "nightly", "--profile", "minimal"]),
        )?;
    }
    if !found("cargo-fuzz") {
        step("install cargo-fuzz", crate::cmd::cargo().args(["install", "cargo-fuzz", "--locked"]))?;
    }
    if coverage {
        step(
            "install LLVM's coverage tools (nightly)",
            Command::new("rustup").args(["component", "add", "llvm-tools-preview", "--toolchain", "nightly"]),
        )?;
    }
    Ok(())
}

/// `fuzz/corpus/<target>/` (kept between runs, not committed), seeded from
/// the test fixtures, the committed seeds and the regressions.
fn seed(root: &Path, fuzz_dir: &Path, target: &str) -> anyhow::Result<PathBuf> {
    let corpus = fuzz_dir.join("corpus").join(target);
    std::fs::create_dir_all(&corpus)?;
    let mut sources = vec![fuzz_dir.join("seeds").join(target), fuzz_dir.join("regressions").join(target)];
    let fixtures = root.join("shared/tests/fixtures");
    match target {
        "config" => sources.extend([fixtures.join("arch"), root.join("shared/catalog/models")]),
        "oom" => sources.push(fixtures.join("oom")),
        "startup" => sources.push(fixtures.join("startup")),
        _ => {}
    }
    for dir in &sources {
        for file in files(dir) {
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            std::fs::copy(&file, corpus.join(format!("seed-{name}")))?;
        }
    }
    match target {
        // Each seed config beside each seed checkpoint, as the target reads
        // them: the config's length in two bytes, the config, the file.
        "config_checkpoint" => {
            let configs = files(&root.join("shared/catalog/models"));
            let checkpoints: Vec<PathBuf> =
                ["safetensors", "gguf"].iter().flat_map(|t| files(&fuzz_dir.join("seeds").join(t))).collect();
            for (i, config) in configs.iter().enumerate().take(12) {
                let text = std::fs::read(config)?;
                let Ok(len) = u16::try_from(text.len()) else { continue };
                let file = &checkpoints[i % checkpoints.len().max(1)];
                let mut input = len.to_le_bytes().to_vec();
                input.extend(&text);
                input.extend(std::fs::read(file)?);
                std::fs::write(corpus.join(format!("seed-{i}")), input)?;
            }
        }
        // The golden links, one per file.
        "link" => {
            let text = std::fs::read_to_string(root.join("web/tests/it/golden-links.json"))?;
            for (i, link) in text.split('"').filter(|s| s.starts_with('?')).enumerate() {
                std::fs::write(corpus.join(format!("seed-golden-{i}")), link)?;
            }
        }
        // The frames `docs/protocol.md` shows.
        "protocol" => {
            let text = std::fs::read_to_string(root.join("docs/protocol.md"))?;
            for (i, line) in text.lines().filter(|l| l.trim_start().starts_with("{\"type\"")).enumerate() {
                std::fs::write(corpus.join(format!("seed-doc-{i}")), line.trim())?;
            }
        }
        _ => {}
    }
    Ok(corpus)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "py"))
        .collect();
    out.sort();
    out
}

/// One target for `seconds`; a failing input is minimised into `regressions/`.
fn run(fuzz_dir: &Path, target: &str, corpus: &Path, seconds: u64) -> anyhow::Result<Run> {
    let log = fuzz_dir.join("artifacts").join(format!("{target}.log"));
    std::fs::create_dir_all(fuzz_dir.join("artifacts").join(target))?;
    eprintln!("\n==> fuzz {target} for {seconds} s (log: {})", log.display());
    let before: Vec<PathBuf> = files(&fuzz_dir.join("artifacts").join(target));
    let mut args = vec![
        "+nightly".to_owned(),
        "fuzz".into(),
        "run".into(),
        "--features".into(),
        "libfuzzer".into(),
        target.into(),
        corpus.display().to_string(),
        "--".into(),
        format!("-max_total_time={seconds}"),
        MAX_LEN.into(),
    ];
    args.extend(LIBFUZZER_LIMITS.iter().map(|s| (*s).to_owned()));
    let dict = fuzz_dir.join("dicts").join(format!("{target}.dict"));
    if dict.exists() {
        args.push(format!("-dict={}", dict.display()));
    }
    let status = Command::new("cargo")
        .args(&args)
        .envs(PROFILE.iter().copied())
        .current_dir(fuzz_dir.parent().unwrap_or(fuzz_dir))
        .stderr(std::fs::File::create(&log)?)
        .status()
        .context("starting cargo fuzz")?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let stat =
        |key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.trim().trim_start_matches(':').trim().parse().ok());
    let last = text.lines().rev().find(|l| l.contains(" cov: ")).unwrap_or_default();
    let coverage = last.split_once("cov: ").map(|(_, rest)| {
        let cov = rest.split_whitespace().next().unwrap_or("");
        let ft = rest.split_once("ft: ").map_or("", |(_, f)| f.split_whitespace().next().unwrap_or(""));
        format!("{cov} edges, {ft} features")
    });
    let (mut finding, mut flaky) = (None, None);
    if !status.success() {
        let new: Vec<PathBuf> =
            files(&fuzz_dir.join("artifacts").join(target)).into_iter().filter(|f| !before.contains(f)).collect();
        let Some(artifact) = new.first() else {
            bail!("cargo fuzz run {target} failed ({status}) without a finding: see {}", log.display());
        };
        match minimise(fuzz_dir, target, artifact)? {
            Some(kept) => finding = Some(kept),
            None => flaky = Some(artifact.clone()),
        }
    }
    let executions = stat("stat::number_of_executed_units");
    Ok(Run { target: target.into(), seconds, executions, coverage, lines: None, finding, flaky })
}

/// `cargo fuzz tmin`, then the smallest input into `regressions/<target>/`;
/// `None` for a timeout that does not come back (tmin runs it again first).
fn minimise(fuzz_dir: &Path, target: &str, artifact: &Path) -> anyhow::Result<Option<PathBuf>> {
    let name = artifact.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let reproduced = step(
        &format!("minimise {name}"),
        Command::new("cargo")
            .envs(PROFILE.iter().copied())
            .args(["+nightly", "fuzz", "tmin", "--features", "libfuzzer", target])
            .arg(artifact)
            .args(["--", "-timeout=1", "-malloc_limit_mb=256", "-rss_limit_mb=4096"])
            .current_dir(fuzz_dir.parent().unwrap_or(fuzz_dir)),
    )
    .is_ok();
    if !reproduced && name.starts_with("timeout-") {
        return Ok(None);
    }
    let smallest = files(&fuzz_dir.join("artifacts").join(target))
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("minimized-from-")))
        .min_by_key(|f| std::fs::metadata(f).map_or(u64::MAX, |m| m.len()))
        .unwrap_or_else(|| artifact.to_path_buf());
    let dest = fuzz_dir.join("regressions").join(target);
    std::fs::create_dir_all(&dest)?;
    let out = dest.join(name);
    std::fs::copy(&smallest, &out)?;
    Ok(Some(out))
}

/// With `--coverage`: the share of `shared/src` lines the corpus reached,
/// per file of the target's parser, as `llvm-cov report` gives it.
fn lines(root: &Path, fuzz_dir: &Path, target: &str, corpus: &Path) -> anyhow::Result<String> {
    step(
        &format!("coverage of {target}"),
        Command::new("cargo")
            .envs(PROFILE.iter().copied())
            .args(["+nightly", "fuzz", "coverage", "--features", "libfuzzer", target])
            .arg(corpus)
            .current_dir(root),
    )?;
    let sysroot = output(Command::new("rustc").args(["+nightly", "--print", "sysroot"]))?;
    let host = output(Command::new("rustc").args(["+nightly", "-vV"]))?;
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or("x86_64-unknown-linux-gnu").to_owned();
    let llvm_cov = PathBuf::from(sysroot.trim()).join("lib/rustlib").join(&host).join("bin/llvm-cov");
    // cargo fuzz coverage builds under the workspace's own `target/`,
    // whatever `CARGO_TARGET_DIR` says (cargo-fuzz 0.13).
    let binary = [root.join("target"), crate::cmd::dirs()?.1]
        .iter()
        .map(|t| t.join(&host).join("coverage").join(&host).join("release").join(target))
        .find(|b| b.exists())
        .with_context(|| format!("no coverage build of {target} under target/"))?;
    let profile = fuzz_dir.join("coverage").join(target).join("coverage.profdata");
    let report = output(
        Command::new(llvm_cov)
            .args(["report", "--ignore-filename-regex=(/rustc/|/.cargo/|/fuzz/)"])
            .arg(format!("--instr-profile={}", profile.display()))
            .arg(&binary),
    )?;
    let parser = parser_files(target);
    let rows: Vec<String> = report
        .lines()
        .filter(|l| parser.iter().any(|p| l.contains(p)))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // Filename, regions (3), functions (3), lines: total, missed, cover.
            let cover = cols.get(9)?;
            let file = cols.first()?.rsplit("shared/src/").next()?;
            Some(format!("{file} {cover}"))
        })
        .collect();
    Ok(rows.join(", "))
}

/// The files of `shared/src` that a target exists to test.
fn parser_files(target: &str) -> &'static [&'static str] {
    match target {
        "safetensors" => &["checkpoint/safetensors.rs", "checkpoint/infer.rs", "checkpoint/layout.rs"],
        "gguf" => &["checkpoint/gguf.rs", "checkpoint/infer.rs", "checkpoint/layout.rs"],
        "config" => &["arch/fields.rs", "arch/mod.rs"],
        "config_checkpoint" => &["checkpoint/infer.rs", "model.rs"],
        "oom" => &["oom/mod.rs", "oom/scan.rs"],
        "startup" => &["startup/mod.rs", "startup/vllm.rs", "startup/llamacpp.rs"],
        "link" => &["link/decode.rs", "link/knobs.rs", "link/values.rs"],
        "protocol" => &["protocol/envelope.rs"],
        "ot_pattern" => &["engines/llamacpp/pattern.rs", "engines/llamacpp/devices.rs"],
        _ => &[],
    }
}

fn report(runs: &[Run]) {
    eprintln!("\n==> fuzz summary");
    eprintln!("{:<18} {:>8} {:>12}  {:<28} result", "target", "seconds", "executions", "libFuzzer coverage");
    for r in runs {
        eprintln!(
            "{:<18} {:>8} {:>12}  {:<28} {}",
            r.target,
            r.seconds,
            r.executions.map_or_else(|| "?".into(), |n| n.to_string()),
            r.coverage.as_deref().unwrap_or("?"),
            match (&r.finding, &r.flaky) {
                (Some(f), _) => format!("FOUND {}", f.display()),
                (None, Some(f)) => format!("stopped by a timeout that did not come back alone ({})", f.display()),
                (None, None) => "no finding".into(),
            },
        );
        if let Some(lines) = &r.lines {
            eprintln!("{:<18} lines covered: {lines}", "");
        }
    }
}

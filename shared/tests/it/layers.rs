//! The layers of `shared`, and a tidy check that no module imports one above
//! it (as rust-analyzer's tidy tests read the sources). The order is written
//! once, here and in ARCHITECTURE.md; a new top-level module must be given
//! its layer before the test passes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first. A module may use modules of strictly lower layers only;
/// modules of one layer do not use each other.
const LAYERS: &[&[&str]] = &[
    &["units", "explain"],
    &["arch"],
    &["checkpoint", "catalog", "state"],
    &["formats"],
    &["kv"],
    &["model"],
    // The plan: scenario, weights per rank, KV/state per layer, split, budget, verdict.
    &["plan"],
    // Each engine's rules over the plan; speed bounds of the plan.
    &["engines", "speed"],
    &["probe", "solve"],
    &["fixes"],
    // Orchestration: plan → engine → Estimate.
    &["estimate"],
    &["oom"],
    &["link", "protocol"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Text without `//` comments (doc comments included), so prose naming a
/// path is not an import.
fn code(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

/// The top-level modules a source file names through `crate::` paths: plain
/// (`crate::kv::KvDtype`, `use crate::kv;`) and grouped (`use crate::{kv, plan::Plan}`).
fn crate_paths(text: &str) -> BTreeSet<String> {
    let code = code(text);
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find_map(|(j, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    (depth == 0).then_some(j)
                })
                .unwrap_or(group.len());
            let mut depth = 0;
            let mut item = String::new();
            for c in group[..end].chars().chain([',']) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.extend(first_segment(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            out.extend(first_segment(rest));
        }
    }
    out
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// Every violation in one file of module `module`: imports of a module in
/// the same or a higher layer, or of a module without a layer.
fn violations(module: &str, text: &str) -> Vec<String> {
    let Some(own) = layer(module) else { return vec![format!("`{module}` has no layer in LAYERS")] };
    crate_paths(text)
        .into_iter()
        .filter(|used| used != module)
        .filter_map(|used| match layer(&used) {
            None => Some(format!("`{module}` uses `{used}`, which has no layer in LAYERS")),
            Some(l) if l >= own => Some(format!("`{module}` (layer {own}) uses `{used}` (layer {l})")),
            Some(_) => None,
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { panic!("cannot read {}", dir.display()) };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap_or(file);
        let Some(first) = rel.components().next() else { continue };
        let module = first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        problems.extend(violations(&module, &text).into_iter().map(|v| format!("{}: {v}", rel.display())));
    }
    assert!(files.len() > 50, "read only {} files under {}", files.len(), src.display());
    assert!(problems.is_empty(), "imports against the layer order:\n{}", problems.join("\n"));
}

#[test]
fn every_top_level_module_has_a_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .unwrap_or_else(|e| panic!("lib.rs: {e}"));
    for line in code(&lib).lines() {
        if let Some(name) = line.trim().strip_prefix("pub mod ").and_then(|r| r.strip_suffix(';')) {
            assert!(layer(name).is_some(), "`{name}` has no layer in LAYERS");
        }
    }
}

#[test]
fn an_import_from_above_is_caught() {
    // Plain, grouped and nested paths from above are caught; comments and
    // paths from below are not.
    assert_eq!(violations("plan", "use crate::engines::Engine;").len(), 1);
    assert_eq!(violations("kv", "use crate::{arch::TextModel, estimate::{Estimate, Verdict}};").len(), 1);
    assert_eq!(violations("engines", "fn f() { crate::estimate::estimate(m, s) }").len(), 1);
    assert_eq!(violations("engines", "use crate::speed::SpeedBounds;").len(), 1, "same layer");
    assert_eq!(violations("plan", "use crate::newcomer::X;").len(), 1, "no layer");
    assert!(violations("plan", "// see crate::engines::Engine\nuse crate::{kv, model::Model};").is_empty());
    assert!(violations("estimate", "use crate::plan::{self, Plan};\nuse crate::engines::EnginePlan;").is_empty());
}

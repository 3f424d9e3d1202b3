//! The layers of `shared`, and a tidy check that no module imports one above
//! it (as rust-analyzer's tidy tests read the sources). The order is written
//! once, here and in ARCHITECTURE.md; a new top-level module must be given
//! its layer before the test passes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first. A module may use modules of strictly lower layers only;
/// modules of one layer do not use each other.
const LAYERS: &[&[&str]] = &[
    // Exact decimals, read without the float parser, and one stable sorter
    // for every element type (both for the page's size).
    &["decimal", "order"],
    &["units", "explain"],
    &["arch"],
    &["checkpoint", "catalog", "state", "hub"],
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
    // Start-up logs: read with the OOM scanner.
    &["startup"],
    &["link", "protocol"],
    // The OOM checklist on an agent's samples, with a plan's figures.
    &["live"],
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

/// Every source file under `shared/src`: its top-level module, its path
/// there, and its text.
fn sources() -> Vec<(String, String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "read only {} files under {}", files.len(), src.display());
    files
        .iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&src).unwrap_or(file);
            let module = rel.components().next()?.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            Some((module, rel.display().to_string(), text))
        })
        .collect()
}

#[test]
fn no_module_imports_one_above_it() {
    let mut problems = Vec::new();
    for (module, path, text) in sources().iter().filter(|(m, ..)| m != "lib") {
        problems.extend(violations(module, text).into_iter().map(|v| format!("{path}: {v}")));
    }
    assert!(problems.is_empty(), "imports against the layer order:\n{}", problems.join("\n"));
}

/// The enums whose variants are engines.
const ENGINE_ENUMS: &[&str] = &["Engine::", "EngineKind::", "EngineReport::", "Ready::"];

fn names_an_engine(line: &str) -> bool {
    ENGINE_ENUMS.iter().any(|e| {
        line.match_indices(e).any(|(i, _)| {
            let before = line[..i].chars().next_back();
            let rest = &line[i + e.len()..];
            let ident: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            // A variant (`Vllm`), not an associated constant (`ALL`).
            let constant = ident.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                && ident.starts_with(|c: char| c.is_ascii_uppercase())
                && !constant
        })
    })
}

/// An arm's pattern (the text before `=>`, without its guard) as its
/// elements: a tuple's top-level elements, or the one pattern.
fn arm_elements(line: &str) -> Option<Vec<String>> {
    let (pattern, _) = line.split_once("=>")?;
    let pattern = pattern.split(" if ").next().unwrap_or(pattern).trim();
    let Some(inner) = pattern.strip_prefix('(').and_then(|p| p.strip_suffix(')')) else {
        return Some(vec![pattern.to_owned()]);
    };
    let (mut depth, mut elements, mut element) = (0, Vec::new(), String::new());
    for c in inner.chars().chain([',']) {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                elements.push(element.trim().to_owned());
                element.clear();
                continue;
            }
            _ => {}
        }
        element.push(c);
    }
    Some(elements)
}

/// The marker that says, in the comment just above an arm, why a `_` beside
/// engine arms is not an engine (a pair whose first element lists them all).
const NOT_AN_ENGINE: &str = "`_` is not an engine here";

/// Lines (1-based) of arms with a `_` where the match's other arms name
/// engines (at the same tuple position): there a new engine would take
/// another engine's answer silently.
fn engine_wildcards(text: &str) -> Vec<usize> {
    wildcards(text, names_an_engine, NOT_AN_ENGINE)
}

/// The marker that says, in the comment just above an arm, that a `_`
/// beside vLLM rule-set arms is every later rule set on purpose.
const EVERY_LATER_RULE_SET: &str = "`_` is every later rule set";

/// Whether a line names a vLLM rule set (`Self::V0_19`, `Version::V1`).
fn names_a_vllm_version(line: &str) -> bool {
    ["Self::V", "Version::V"]
        .iter()
        .any(|p| line.match_indices(p).any(|(i, _)| line[i + p.len()..].starts_with(['0', '1'])))
}

/// [`engine_wildcards`] for any family of variants `names` recognises.
fn wildcards(text: &str, names: fn(&str) -> bool, marker: &str) -> Vec<usize> {
    let raw: Vec<&str> = text.lines().collect();
    let code = code(text);
    let lines: Vec<&str> = code.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(elements) = arm_elements(line) else { continue };
        let wild: Vec<usize> = (0..elements.len()).filter(|&k| elements[k] == "_").collect();
        let comment_above = raw[..i].iter().rev().take_while(|l| l.trim_start().starts_with("//"));
        if wild.is_empty() || comment_above.into_iter().any(|l| l.contains(marker)) {
            continue;
        }
        let own = indent(line);
        let same_match = |l: &&&str| l.trim().is_empty() || indent(l) >= own;
        let before = lines[..i].iter().rev().take_while(same_match);
        let after = lines[i + 1..].iter().take_while(same_match);
        let arms: Vec<Vec<String>> = before
            .chain(after)
            .filter(|l| indent(l) == own)
            .filter_map(|l| arm_elements(l))
            .filter(|e| e.len() == elements.len())
            .collect();
        let engine_at = |k: usize| arms.iter().any(|a| names(&a[k]));
        if names(line.split_once("=>").map_or("", |(_, r)| r)) || wild.into_iter().any(engine_at) {
            out.push(i + 1);
        }
    }
    out
}

/// A `_` beside vLLM rule-set arms would give the next rule set another's
/// answer silently (the `-rope` rules missed Triton's sampler byte so).
#[test]
fn no_wildcard_arm_stands_in_for_a_vllm_rule_set() {
    let mut problems = Vec::new();
    for (_, path, text) in sources().iter().filter(|(_, path, _)| path.starts_with("engines/vllm/")) {
        let found = wildcards(text, names_a_vllm_version, EVERY_LATER_RULE_SET);
        problems.extend(found.into_iter().map(|line| format!("{path}:{line}")));
    }
    assert!(problems.is_empty(), "`_` arms beside vLLM rule-set arms (list every one):\n{}", problems.join("\n"));
    let v = "match v {\n    Self::V0_19 => 1,\n    _ => 0,\n}";
    assert_eq!(wildcards(v, names_a_vllm_version, EVERY_LATER_RULE_SET), [3]);
}

#[test]
fn no_wildcard_arm_stands_in_for_an_engine() {
    let mut problems = Vec::new();
    for (_, path, text) in sources() {
        problems.extend(engine_wildcards(&text).into_iter().map(|line| format!("{path}:{line}")));
    }
    assert!(problems.is_empty(), "`_` arms beside engine arms (list every engine):\n{}", problems.join("\n"));
}

/// Engines are named in their own modules; the share link (which encodes
/// their knobs), the OOM diagnosis and the start-up logs (which read their
/// logs, and set those beside their reports) name them as data. Anywhere else
/// an engine is reached through `crate::engines`.
#[test]
fn engines_are_named_only_where_they_live() {
    let allowed = ["engines", "oom", "startup"];
    // The link's frozen defaults name each engine's knobs by version.
    let link_data = ["link/version.rs", "link/tests.rs"];
    let named: Vec<String> = sources()
        .into_iter()
        .filter(|(m, path, _)| !allowed.contains(&m.as_str()) && !link_data.contains(&path.as_str()))
        .filter(|(_, _, text)| code(without_tests(text)).lines().any(names_an_engine))
        .map(|(_, path, _)| path)
        .collect();
    assert!(named.is_empty(), "engine variants named outside crate::engines: {named:?}");
}

/// `super::` chains in a file's code that climb to the crate's root, where
/// the next name is another top-level module: such an import escapes the
/// layer check, which reads `crate::` paths. `path` is the file's path under
/// `src` (`engines/llamacpp/fixes.rs`).
fn supers_to_the_root(path: &str, text: &str) -> Vec<String> {
    let path = path.trim_end_matches(".rs");
    let depth = path.split('/').filter(|p| *p != "mod").count();
    let code = code(without_tests(text));
    let mut out = Vec::new();
    for (i, _) in code.match_indices("super::") {
        // Count each chain once, from its first `super::`.
        if code[..i].ends_with("super::") {
            continue;
        }
        let n = code[i..].split("super::").take_while(|p| p.is_empty()).count();
        if n >= depth {
            let rest: String =
                code[i + n * "super::".len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push(format!("{path}: `{}{rest}`: write `crate::{rest}`", "super::".repeat(n)));
        }
    }
    out
}

#[test]
fn no_super_path_climbs_out_of_a_top_level_module() {
    let problems: Vec<String> = sources()
        .iter()
        .filter(|(m, ..)| m != "lib")
        .flat_map(|(_, path, text)| supers_to_the_root(path, text))
        .collect();
    assert!(problems.is_empty(), "imports that reach the crate root by `super::`:\n{}", problems.join("\n"));
}

#[test]
fn a_super_path_to_the_root_is_caught() {
    assert_eq!(supers_to_the_root("plan/weights.rs", "use super::super::engines::Engine;").len(), 1);
    assert_eq!(supers_to_the_root("units.rs", "use super::decimal::Decimal;").len(), 1);
    assert!(supers_to_the_root("engines/llamacpp/fixes.rs", "use super::super::commands::Setting;").is_empty());
    // From `engines/mod.rs`, `super::` is the root; its test module's `super::*` is its own.
    let engines = "use super::x;\n#[cfg(test)]\nmod tests { use super::*; }";
    assert_eq!(supers_to_the_root("engines/mod.rs", engines).len(), 1);
    assert!(supers_to_the_root("engines/knobs.rs", "use super::{Engine, vllm};").is_empty());
}

/// A file's code before its `#[cfg(test)]` module: tests may build plans of
/// any engine by name.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

/// Issue 33: the front ends (the agent's CLI and server, the page) are
/// driven by the engines' declarations and predicates, so a new engine or
/// setting changes none of them: no engine variant is named there outside
/// tests.
#[test]
fn the_front_ends_name_no_engine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut named = Vec::new();
    for part in ["agent/src", "web/src"] {
        let mut files = Vec::new();
        rust_files(&root.join(part), &mut files);
        assert!(files.len() > 10, "read only {} files under {part}", files.len());
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if code(without_tests(&text)).lines().any(names_an_engine) {
                named.push(file.strip_prefix(&root).unwrap_or(&file).display().to_string());
            }
        }
    }
    assert!(named.is_empty(), "engine variants named in the front ends: {named:?}");
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
fn a_wildcard_beside_engine_arms_is_caught() {
    let text = "match e {\n    EngineKind::Vllm => 1,\n    _ => 2,\n}\nmatch (f, e) {\n    (Some(m), _) => 0,\n    (None, Engine::LlamaCpp(o)) => 1,\n    (None, _) => 2,\n}";
    assert_eq!(engine_wildcards(text), [3, 6, 8]);
    let answers = "match n {\n    0 => EngineKind::Vllm,\n    _ => EngineKind::Sglang,\n}";
    assert_eq!(engine_wildcards(answers), [3], "a wildcard that answers with an engine is one too");
    let knobs = "match (e, key) {\n    (Engine::Vllm(o), \"bs\") => 1,\n    (e, _) => 2,\n}";
    assert!(engine_wildcards(knobs).is_empty(), "the wildcard is over the key, not the engine");
    let marked = "match (a, b) {\n    (Engine::Vllm(o), Engine::Vllm(d)) => 1,\n    // `_` is not an engine here: …\n    (Engine::Vllm(_), _) => 2,\n}";
    assert!(engine_wildcards(marked).is_empty());
    let formats = "match f {\n    WeightFormat::Bf16 => 1,\n    _ => 2,\n}";
    assert!(engine_wildcards(formats).is_empty());
    assert!(
        names_an_engine("Engine::Vllm(o)") && !names_an_engine("MyEngine::Vllm") && !names_an_engine("Engine::new")
    );
    assert!(!names_an_engine("EngineKind::ALL.iter()") && names_an_engine("EngineKind::LlamaCpp =>"));
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

//! Tidy checks over the page's own source (as rust-analyzer's `tidy.rs`
//! does): HTML is built only by the one escaping builder (`web/src/html/`),
//! never by `format!`/`write!` and a hand-called escaper, where one
//! forgotten call is an injection.

use std::path::{Path, PathBuf};

/// Literals that look like markup but are not: `(file, literal, why)`. None
/// today; an entry that no longer matches fails the test.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// Macros that write a string from a template.
const FORMATTERS: [&str; 5] = ["format!(", "write!(", "writeln!(", "format_args!(", "concat!("];

/// `<p`, `</p`, `<!--`: what starts a tag. `a < b` and `<=` do not.
fn has_markup(literal: &str) -> bool {
    literal.as_bytes().windows(2).any(|w| w[0] == b'<' && (w[1].is_ascii_alphabetic() || w[1] == b'/' || w[1] == b'!'))
}

/// The string literal starting at `src[at..]` (`"…"`, `r"…"`, `r#"…"#`),
/// with escapes left as written, and where it ends.
fn literal(src: &str, at: usize) -> Option<(&str, usize)> {
    let rest = &src[at..];
    if let Some(raw) = rest.strip_prefix('r') {
        let hashes = raw.bytes().take_while(|&b| b == b'#').count();
        let body = raw[hashes..].strip_prefix('"')?;
        let close = ["\"", &"#".repeat(hashes)].concat();
        let end = body.find(&close)?;
        let start = at + 1 + hashes + 1;
        return Some((&src[start..start + end], start + end + close.len()));
    }
    let body = rest.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some((&body[..i], at + 1 + i + 1)),
            _ => escaped = false,
        }
    }
    None
}

/// The string literals among a call's arguments: from `open` (just after
/// `(`) to the matching `)`.
fn argument_literals(src: &str, open: usize) -> Vec<&str> {
    let (mut depth, mut i, mut found) = (1usize, open, Vec::new());
    let bytes = src.as_bytes();
    while i < bytes.len() && depth > 0 {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'"' | b'r' if bytes[i] == b'"' || matches!(bytes.get(i + 1), Some(b'"' | b'#')) => {
                let word_before = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
                if !word_before && let Some((lit, end)) = literal(src, i) {
                    found.push(lit);
                    i = end;
                    continue;
                }
            }
            b'\'' => {
                // A char literal such as '"' or '(' (lifetimes have no closing quote nearby).
                if let Some(len) = src[i + 1..].find('\'').filter(|&n| n <= 4) {
                    i += len + 2;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Source with line comments blanked (doc comments name the macros too).
fn code(src: &str) -> String {
    src.lines().map(|l| if l.trim_start().starts_with("//") { "" } else { l }).collect::<Vec<_>>().join("\n")
}

/// `(what, literal)` for each markup-looking literal fed to a formatter, or to
/// `push_str` outside the builder, in one file's source.
fn findings(src: &str, in_builder: bool) -> Vec<(String, String)> {
    let src = code(src);
    let mut out = Vec::new();
    let calls: Vec<&str> = if in_builder { FORMATTERS.to_vec() } else { [&FORMATTERS[..], &["push_str("]].concat() };
    for call in calls {
        for (at, _) in src.match_indices(call) {
            let before = src[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            for lit in argument_literals(&src, at + call.len()) {
                if has_markup(lit) {
                    out.push((call.trim_end_matches('(').to_owned(), lit.to_owned()));
                }
            }
        }
    }
    out
}

/// `data-action=\"copy\"` or `data-action") == "copy"`-like literals: an
/// action named in a string rather than through `crate::html::Action`.
fn spells_an_action(code: &str) -> bool {
    code.match_indices("data-action=\\\"")
        .any(|(at, m)| code.as_bytes().get(at + m.len()).is_some_and(u8::is_ascii_lowercase))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_markup_is_formatted_by_hand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 50, "found the page's sources ({})", files.len());
    let mut bad = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for f in &files {
        let rel = f.strip_prefix(root).unwrap_or(f).to_string_lossy().replace('\\', "/");
        let src = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{rel}: {e}"));
        for (call, lit) in findings(&src, rel.starts_with("src/html/")) {
            match ALLOWED.iter().position(|(file, allowed, _)| *file == rel && lit.contains(allowed)) {
                Some(i) => used[i] = true,
                None => bad.push(format!("{rel}: {call} with markup {lit:?}")),
            }
        }
        // The escaper is the builder's: called by hand outside it (and outside tests) is the old habit.
        let (body, _tests) = src.split_once("#[cfg(test)]").unwrap_or((&src, ""));
        if !rel.starts_with("src/html/") && code(body).contains("escape_html(") {
            bad.push(format!("{rel}: calls escape_html by hand; build the markup with crate::html::Html"));
        }
        // Actions are written by `Html::action` and read by `Action::parse`, never spelled out.
        if !rel.starts_with("src/html/") && spells_an_action(&code(body)) {
            bad.push(format!("{rel}: spells a data-action by hand; use Html::action and Action::parse"));
        }
    }
    assert!(bad.is_empty(), "HTML built by hand (use crate::html::Html):\n{}", bad.join("\n"));
    for (i, (file, lit, _)) in ALLOWED.iter().enumerate() {
        assert!(used[i], "stale allow-list entry: {file} {lit:?}");
    }
}

#[test]
fn the_scanner_finds_markup_in_every_formatter_and_nothing_else() {
    let found = |src: &str| findings(src, false).into_iter().map(|(c, _)| c).collect::<Vec<_>>();
    assert_eq!(found(r#"let s = format!("<p>{}</p>", esc(x));"#), ["format!"]);
    assert_eq!(found(r#"let _ = write!(s, "{}<td class=\"n\">{}</td>", a, b);"#), ["write!"]);
    assert_eq!(found(r##"s.push_str(r#"<div class="x">"#);"##), ["push_str"]);
    assert_eq!(found("let s = format!(\n    \"x {}\",\n    \"</b>\"\n);"), ["format!"]);
    assert_eq!(found(r#"s.push_str(&format!("{a} < {b} <= c", a = 1));"#), Vec::<String>::new());
    assert_eq!(
        found(r#"let sel = format!("[data-action=\"{a}\"]"); let c = '"'; let t = format!("<i>");"#),
        ["format!"]
    );
    assert_eq!(found("// format!(\"<p>\") in a comment\nlet x = 1;"), Vec::<String>::new());
    assert!(findings(r#"s.push_str("<b>")"#, true).is_empty(), "the builder itself pushes markup");
    assert!(spells_an_action(r#"h.raw("<button data-action=\"copy\">")"#));
    assert!(!spells_an_action(r#"format!("[data-action=\"{action}\"]")"#));
}

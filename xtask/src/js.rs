//! wasm-bindgen's JS glue as `dist` ships it: without its comments (JSDoc
//! blocks, the "Cast intrinsic" notes), indentation and blank lines, about
//! 1 kB less gzip on the first load (measured on `web.js`, wasm-bindgen
//! 0.2). Lines are kept, so automatic semicolon insertion reads the code as
//! before. A string or template literal over several lines could hold text
//! that looks like a comment: the glue has none, and if it ever has one (an
//! odd number of backticks on a line of code: the literal's first line stays
//! as code whatever follows it) the glue is left as it is. Backticks in the
//! comments themselves (the exports' JSDoc, copied from their Rust docs,
//! where a code span may wrap) are not code, and do not count.
//!
//! It also drops the exported classes no code can make an instance of: a
//! class wasm-bindgen writes without a `constructor` and never wraps
//! (`Name.__wrap(ptr)`, how Rust hands one to JS). Leptos turns on
//! `server_fn`'s `browser` feature, whose `wasm-streams` exports three such
//! classes (`IntoUnderlyingSource`, `…Sink`, `…ByteSource`): 370 B gzip of
//! the first load's glue. (Those three are now dropped with their exports
//! before `wasm-opt`, `wasm.rs`, so the glue has none of them; this stays
//! for any other class nothing makes.)

/// `js` slimmed, or `None` when a template literal spans lines.
pub fn slim(js: &str) -> Option<String> {
    let mut out = String::with_capacity(js.len());
    let mut in_block = false;
    for line in js.lines().map(str::trim) {
        if in_block {
            in_block = !line.ends_with("*/");
            continue;
        }
        if let Some(rest) = line.strip_prefix("/*") {
            match rest.find("*/") {
                // A comment alone on its line.
                Some(end) if end + 2 == rest.len() => continue,
                // Code after a comment (`/*#__PURE__*/ f()`): kept as written.
                Some(_) => {}
                None => {
                    in_block = true;
                    continue;
                }
            }
        }
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if out.lines().any(|l| l.matches('`').count() % 2 == 1) {
        return None;
    }
    Some(drop_unmade_classes(&out))
}

/// `js` (slimmed: one statement part per line, no indentation) without the
/// exported classes nothing constructs, nor their finalization registries.
fn drop_unmade_classes(js: &str) -> String {
    let mut lines: Vec<&str> = js.lines().collect();
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("export class ")?.strip_suffix(" {"))
        .filter(|name| !js.contains(&format!("{name}.__wrap(")))
        .collect();
    for name in names {
        let start = lines.iter().position(|l| *l == format!("export class {name} {{"));
        let dispose = format!("if (Symbol.dispose) {name}.prototype[Symbol.dispose] = {name}.prototype.free;");
        let end = lines.iter().position(|l| *l == dispose);
        let (Some(start), Some(end)) = (start, end) else { continue };
        if start > end || lines[start..end].iter().any(|l| l.starts_with("constructor(")) {
            continue;
        }
        lines.drain(start..=end);
        // `const NameFinalization = (typeof FinalizationRegistry === 'undefined')`, then `? …` and `: …;`.
        let registry = format!("const {name}Finalization = ");
        if let Some(at) = lines.iter().position(|l| l.starts_with(&registry)) {
            let last = lines[at..].iter().position(|l| l.ends_with(';')).map_or(at, |n| at + n);
            lines.drain(at..=last);
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::slim;

    #[test]
    fn drops_comments_and_indentation_only() {
        let js = "export class A {\n    /**\n     * @returns {number}\n     */\n    get n() {\n        // Cast intrinsic for `Ref(String) -> Externref`.\n        return `${x}` + '/* kept */';\n    }\n}\n\n/* one line */\nconst b = 1 // trailing stays\n";
        assert_eq!(
            slim(js).as_deref(),
            Some("export class A {\nget n() {\nreturn `${x}` + '/* kept */';\n}\n}\nconst b = 1 // trailing stays\n")
        );
        assert_eq!(slim("const t = `a\n// b`;\n"), None);
        assert_eq!(slim("const t = `a\n/* b */\nc`;\n"), None);
        // An export's JSDoc, a code span wrapped over two lines.
        let doc = "/**\n * Files (`File`s): `[name,\n * bytes]`, or why.\n */\nexport function local(files) {\n    return 1;\n}\n";
        assert_eq!(slim(doc).as_deref(), Some("export function local(files) {\nreturn 1;\n}\n"));
        assert_eq!(slim("  /*#__PURE__*/ f();\n/* a\n b */\ng();\n").as_deref(), Some("/*#__PURE__*/ f();\ng();\n"));
    }

    #[test]
    fn drops_the_classes_nothing_makes() {
        let js = "export class Made {\n    static __wrap(ptr) {}\n}\nif (Symbol.dispose) Made.prototype[Symbol.dispose] = Made.prototype.free;\n\
                  export class Built {\n    constructor() {}\n}\nif (Symbol.dispose) Built.prototype[Symbol.dispose] = Built.prototype.free;\n\
                  export class Unmade {\n    free() {\n        UnmadeFinalization.unregister(this);\n    }\n}\n\
                  if (Symbol.dispose) Unmade.prototype[Symbol.dispose] = Unmade.prototype.free;\n\
                  const UnmadeFinalization = (typeof FinalizationRegistry === 'undefined')\n    ? { register: () => {}, unregister: () => {} }\n    : new FinalizationRegistry(ptr => wasm.free(ptr, 1));\n\
                  function f() { return Made.__wrap(1); }\n";
        let out = slim(js).expect("slimmed");
        assert!(!out.contains("Unmade"), "{out}");
        assert!(out.contains("export class Made {") && out.contains("export class Built {"), "{out}");
        assert!(out.ends_with("function f() { return Made.__wrap(1); }\n"), "{out}");
    }
}

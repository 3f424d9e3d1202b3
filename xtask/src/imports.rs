//! A bundle's imports under short names, in its wasm and its glue alike.
//!
//! wasm-bindgen names each function the glue hands the wasm after the
//! binding and a hash of its signature (`__wbg_createElement_de4a31ed2fb252be`)
//! and the module after the glue's file (`./web_bg.js`). Both names are
//! written twice, as the import section's strings and as the glue's keys of
//! the imports object, and sixteen hex digits do not compress: 118 imports
//! were 5.3 kB of names in the first load's wasm and 3.8 kB in its glue. The
//! names matter to nothing but the instantiation, which matches the wasm's
//! strings against the object's keys, so here both become `a`, `b`, … `Z`,
//! `aa`, … in the order of the import section, and the module `a`: about
//! 4 kB less gzip of the first load (docs/measurements.md, "Short import
//! names"), and of each on-demand bundle.
//!
//! The glue is changed only where each name is a key of the imports object:
//! a name written anywhere else, or not exactly once, imported twice, or an
//! import section this does not read, is an error, and `dist` ships the
//! bundle as wasm-bindgen wrote it.

use anyhow::{Context, bail};

use crate::wasm::{self, Reader, push_leb};

/// The `n`th short name: `a` … `z`, `A` … `Z`, then two letters, and so on.
fn short(mut n: usize) -> String {
    const LETTERS: &[u8; 52] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = String::new();
    loop {
        out.insert(0, char::from(LETTERS[n % 52]));
        n /= 52;
        if n == 0 {
            return out;
        }
        n -= 1;
    }
}

/// Reads one import's description (what follows its two names), so that the
/// next import can be found.
fn skip_description(r: &mut Reader) -> anyhow::Result<()> {
    let limits = |r: &mut Reader| -> anyhow::Result<()> {
        let flags = r.byte()?;
        r.leb()?;
        if flags & 1 == 1 {
            r.leb()?;
        }
        Ok(())
    };
    match r.byte()? {
        // A function: its type's index.
        0 => r.leb().map(drop),
        // A table: its element type, then its limits.
        1 => match r.byte()? {
            0x70 | 0x6f => limits(r),
            other => bail!("a table of reference type {other:#x}"),
        },
        // A memory: its limits.
        2 => limits(r),
        // A global: its value type and mutability.
        3 => r.take(2).map(drop),
        // A tag: its attribute and type index.
        4 => {
            r.byte()?;
            r.leb().map(drop)
        }
        kind => bail!("an import of kind {kind}"),
    }
}

/// Where `name` is written in `js` as a whole identifier.
fn occurrences(js: &str, name: &str) -> Vec<usize> {
    let identifier = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    let bytes = js.as_bytes();
    js.match_indices(name)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(at + name.len()).copied();
            !before.is_some_and(identifier) && !after.is_some_and(identifier)
        })
        .collect()
}

/// `wasm` and its glue `js` with every import from `module` (the glue's own
/// module, `./{name}_bg.js`) and that module under short names.
pub(crate) fn shorten(wasm: &[u8], js: &str, module: &str) -> anyhow::Result<(Vec<u8>, String)> {
    const MODULE: &str = "a";
    // (where in the glue, how long, the new text), for every key replaced.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let out = wasm::rewrite_sections(wasm, |id, body| {
        if id != 2 {
            return Ok(None);
        }
        let mut s = Reader::new(body);
        let count = s.leb()?;
        let mut section = Vec::new();
        push_leb(&mut section, count);
        for i in 0..count as usize {
            let from = s.name()?;
            let name = std::str::from_utf8(s.name()?).context("an import's name is not UTF-8")?;
            let start = s.at;
            skip_description(&mut s)?;
            let description = &body[start..s.at];
            let (from, name) = if from == module.as_bytes() {
                if !seen.insert(name) {
                    bail!("the wasm imports {name} twice");
                }
                let at = match occurrences(js, name)[..] {
                    [at] => at,
                    ref all => bail!("the glue writes the import {name} {} times, not once", all.len()),
                };
                if !js[at + name.len()..].trim_start().starts_with(':') {
                    bail!("the glue writes the import {name} other than as a key");
                }
                let new = short(i);
                edits.push((at, name.len(), new.clone()));
                (MODULE.as_bytes(), new)
            } else {
                (from, name.to_owned())
            };
            for part in [from, name.as_bytes()] {
                push_leb(&mut section, u32::try_from(part.len())?);
                section.extend_from_slice(part);
            }
            section.extend_from_slice(description);
        }
        if !s.done() {
            bail!("the import section has bytes after its {count} imports");
        }
        Ok(Some(section))
    })?;
    if !edits.is_empty() {
        let quoted = format!("\"{module}\"");
        let at = match js.match_indices(&quoted).map(|(at, _)| at).collect::<Vec<_>>()[..] {
            [at] => at,
            ref all => bail!("the glue names the module {quoted} {} times, not once", all.len()),
        };
        edits.push((at, quoted.len(), format!("\"{MODULE}\"")));
    }
    edits.sort_by_key(|&(at, _, _)| at);
    let mut glue = String::with_capacity(js.len());
    let mut from = 0;
    for (at, len, new) in edits {
        glue.push_str(&js[from..at]);
        glue.push_str(&new);
        from = at + len;
    }
    glue.push_str(&js[from..]);
    Ok((out, glue))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(out: &mut Vec<u8>, name: &str) {
        push_leb(out, name.len() as u32);
        out.extend_from_slice(name.as_bytes());
    }

    /// A module of a type section and an import section of `imports`
    /// (module, name, description).
    fn module(imports: &[(&str, &str, &[u8])]) -> Vec<u8> {
        let mut section = Vec::new();
        push_leb(&mut section, imports.len() as u32);
        for (from, name, description) in imports {
            named(&mut section, from);
            named(&mut section, name);
            section.extend_from_slice(description);
        }
        let mut out = b"\0asm\x01\0\0\0".to_vec();
        out.extend_from_slice(&[1, 4, 1, 0x60, 0, 0]);
        out.push(2);
        push_leb(&mut out, section.len() as u32);
        out.extend_from_slice(&section);
        out
    }

    const GLUE: &str = "const import0 = {\n__proto__: null,\n__wbg_body_5f97: function(arg0) {\nreturn arg0.body;\n},\n\
                        __wbindgen_init_externref_table: function() {\n},\n};\nreturn {\n\"./web_bg.js\": import0,\n};\n\
                        wasm.__wbindgen_start();\n";

    #[test]
    fn names_become_letters_in_the_wasm_and_the_glue_alike() {
        let wasm = module(&[
            ("./web_bg.js", "__wbg_body_5f97", &[0, 0]),
            ("./web_bg.js", "__wbindgen_init_externref_table", &[0, 0]),
            ("env", "memory", &[2, 1, 17, 0xac, 0x02]),
            ("./web_bg.js", "__wbindgen_externrefs", &[1, 0x6f, 0, 128, 1]),
        ]);
        let glue = GLUE.replace("},\n};", "},\n__wbindgen_externrefs: new WebAssembly.Table({}),\n};");
        let (short_wasm, short_glue) = shorten(&wasm, &glue, "./web_bg.js").expect("shortened");
        let want = module(&[
            ("a", "a", &[0, 0]),
            ("a", "b", &[0, 0]),
            ("env", "memory", &[2, 1, 17, 0xac, 0x02]),
            ("a", "d", &[1, 0x6f, 0, 128, 1]),
        ]);
        assert_eq!(short_wasm, want);
        assert_eq!(
            short_glue,
            "const import0 = {\n__proto__: null,\na: function(arg0) {\nreturn arg0.body;\n},\nb: function() {\n},\n\
             d: new WebAssembly.Table({}),\n};\nreturn {\n\"a\": import0,\n};\nwasm.__wbindgen_start();\n"
        );
    }

    #[test]
    fn a_name_the_glue_writes_twice_or_not_as_a_key_is_refused() {
        let wasm = module(&[("./web_bg.js", "__wbg_body_5f97", &[0, 0])]);
        let twice = GLUE.replace("return arg0.body;", "return __wbg_body_5f97;");
        assert!(shorten(&wasm, &twice, "./web_bg.js").is_err());
        let called = GLUE.replace("__wbg_body_5f97: function(arg0)", "f(__wbg_body_5f97)");
        assert!(shorten(&wasm, &called, "./web_bg.js").is_err());
        let twice = module(&[("./web_bg.js", "__wbg_body_5f97", &[0, 0]), ("./web_bg.js", "__wbg_body_5f97", &[0, 0])]);
        assert!(shorten(&twice, GLUE, "./web_bg.js").is_err());
        let missing = module(&[("./web_bg.js", "__wbg_gone_0000", &[0, 0])]);
        assert!(shorten(&missing, GLUE, "./web_bg.js").is_err());
        assert!(shorten(b"\0asm\x01\0\0\0\x02\x05\x01", GLUE, "./web_bg.js").is_err());
    }

    #[test]
    fn short_names_are_distinct_letters() {
        let names: Vec<String> = (0..3000).map(short).collect();
        assert_eq!((&names[0][..], &names[51][..], &names[52][..], &names[53][..]), ("a", "Z", "aa", "ab"));
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert!(names.iter().all(|n| n.bytes().all(|b| b.is_ascii_alphabetic())));
    }
}

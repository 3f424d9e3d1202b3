//! The page's wasm as the linker wrote it, before `wasm-opt`: without the
//! exported classes nothing makes.
//!
//! Leptos turns on `server_fn`'s `browser` feature, whose `wasm-streams`
//! exports three classes to JS ([`UNMADE_CLASSES`]). Only Rust makes one (it
//! hands a stream source to the browser when a server function streams), and
//! the page has no server functions; but an export is a root, so their
//! methods, the futures they run and the browser calls those make stayed in
//! every bundle, and wasm-bindgen wrote a class, a finalization registry and
//! import shims for them. The page's linker leaves their exports out
//! (`link.rs`), so that the link keeps nothing only they reached; here their
//! descriptions leave wasm-bindgen's custom section (`__wasm_bindgen_unstable`:
//! one length-prefixed schema string and one program per `#[wasm_bindgen]`
//! item), and so do their exports where the page was linked by rustc's own
//! linker (no `rust-lld` found), so that `wasm-opt` removes the functions only
//! they called. `dist` then checks that the glue names none of them: if the
//! page ever made one, the build fails instead of shipping a class without
//! its methods.

use anyhow::{Context, bail};

/// `wasm-streams`' classes (0.5), which no bundle of the page makes.
pub(crate) const UNMADE_CLASSES: &[&str] = &["IntoUnderlyingSource", "IntoUnderlyingSink", "IntoUnderlyingByteSource"];

/// A reader over one section's bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    pub(crate) fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    pub(crate) fn byte(&mut self) -> anyhow::Result<u8> {
        let b = *self.bytes.get(self.at).context("the wasm ends inside a section")?;
        self.at += 1;
        Ok(b)
    }

    /// An unsigned LEB128 number (counts, lengths, indices).
    pub(crate) fn leb(&mut self) -> anyhow::Result<u32> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            value |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(value);
            }
        }
        bail!("a LEB128 number longer than five bytes")
    }

    pub(crate) fn take(&mut self, len: usize) -> anyhow::Result<&'a [u8]> {
        let end = self.at.checked_add(len).filter(|&e| e <= self.bytes.len()).context("a length past the section")?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// A LEB128-length-prefixed name.
    pub(crate) fn name(&mut self) -> anyhow::Result<&'a [u8]> {
        let len = self.leb()? as usize;
        self.take(len)
    }
}

pub(crate) fn push_leb(out: &mut Vec<u8>, mut n: u32) {
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// `wasm` with each section's body handed to `edit` by id: its answer
/// replaces the body, `None` keeps it. The one walk over a module's sections
/// that `drop_classes`, `imports::shorten` and `data::join_segments` share.
pub(crate) fn rewrite_sections<'a>(
    wasm: &'a [u8],
    mut edit: impl FnMut(u8, &'a [u8]) -> anyhow::Result<Option<Vec<u8>>>,
) -> anyhow::Result<Vec<u8>> {
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        bail!("not a wasm module");
    }
    let mut out = wasm[..8].to_vec();
    let mut r = Reader::new(&wasm[8..]);
    while !r.done() {
        let id = r.byte()?;
        let len = r.leb()? as usize;
        let body = r.take(len)?;
        let new_body = edit(id, body)?;
        let body = new_body.as_deref().unwrap_or(body);
        out.push(id);
        push_leb(&mut out, u32::try_from(body.len())?);
        out.extend_from_slice(body);
    }
    Ok(out)
}

/// Whether a wasm-bindgen program describes one of `classes`: the class
/// itself (no exports, enums or imports; one struct of that name) or one
/// method of it (one export whose class is that name).
fn describes(program: &[u8], classes: &[&str]) -> anyhow::Result<bool> {
    let mut r = Reader::new(program);
    let named = |name: &[u8]| classes.iter().any(|c| c.as_bytes() == name);
    Ok(match r.leb()? {
        1 => r.byte()? == 1 && named(r.name()?),
        0 => r.leb()? == 0 && r.leb()? == 0 && r.leb()? == 1 && named(r.name()?),
        _ => false,
    })
}

/// Whether an export belongs to one of `classes`: wasm-bindgen names a
/// method `{class}_{method}` and the destructor `__wbg_{class}_free`, the
/// class in lower case.
pub(crate) fn exported_by(name: &[u8], classes: &[&str]) -> bool {
    let name = String::from_utf8_lossy(name);
    classes.iter().any(|c| {
        let c = c.to_lowercase();
        name.starts_with(&format!("{c}_")) || name.starts_with(&format!("__wbg_{c}_"))
    })
}

/// `wasm` without the descriptions and the exports of `classes`, and how
/// many of each it dropped.
pub(crate) fn drop_classes(wasm: &[u8], classes: &[&str]) -> anyhow::Result<(Vec<u8>, usize, usize)> {
    let (mut programs, mut exports) = (0, 0);
    let out = rewrite_sections(wasm, |id, body| {
        let mut s = Reader::new(body);
        Ok(Some(match id {
            0 if s.name()? == b"__wasm_bindgen_unstable" => {
                let mut kept = body[..s.at].to_vec();
                while !s.done() {
                    let start = s.at;
                    let blob = |s: &mut Reader| -> anyhow::Result<()> {
                        let len = u32::from_le_bytes(s.take(4)?.try_into()?);
                        s.take(len as usize).map(drop)
                    };
                    // The schema version, then the program it heads.
                    blob(&mut s)?;
                    let program_at = s.at + 4;
                    blob(&mut s)?;
                    if describes(&body[program_at..s.at], classes)? {
                        programs += 1;
                    } else {
                        kept.extend_from_slice(&body[start..s.at]);
                    }
                }
                kept
            }
            7 => {
                let count = s.leb()?;
                let mut entries = Vec::new();
                let mut kept = 0;
                for _ in 0..count {
                    let start = s.at;
                    let name = s.name()?;
                    s.byte()?;
                    s.leb()?;
                    if exported_by(name, classes) {
                        exports += 1;
                    } else {
                        entries.extend_from_slice(&body[start..s.at]);
                        kept += 1;
                    }
                }
                let mut section = Vec::new();
                push_leb(&mut section, kept);
                section.extend_from_slice(&entries);
                section
            }
            _ => return Ok(None),
        }))
    })?;
    Ok((out, programs, exports))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(id: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![id];
        push_leb(&mut out, body.len() as u32);
        out.extend_from_slice(body);
        out
    }

    fn named(name: &str) -> Vec<u8> {
        let mut out = Vec::new();
        push_leb(&mut out, name.len() as u32);
        out.extend_from_slice(name.as_bytes());
        out
    }

    /// One schema string and one program, each with its u32 length.
    fn pair(program: &[u8]) -> Vec<u8> {
        let schema = br#"{"schema_version":"0"}"#;
        let mut out = (schema.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(schema);
        out.extend_from_slice(&(program.len() as u32).to_le_bytes());
        out.extend_from_slice(program);
        out
    }

    fn export(name: &str) -> Vec<u8> {
        let mut out = named(name);
        out.extend_from_slice(&[0, 0x85, 0x01]);
        out
    }

    #[test]
    fn drops_the_classes_descriptions_and_exports_only() {
        let struct_of = |c: &str| [&[0, 0, 0, 1][..], &named(c), &[0, 0, 0]].concat();
        let method_of = |c: &str| [&[1, 1][..], &named(c), &[0, 4, 1, 2]].concat();
        let function = [&[1, 0][..], &named("main"), &[0]].concat();
        let imports = [&[0, 0, 2][..], &named("Foo"), &[0]].concat();
        let programs = [pair(&struct_of("Gone")), pair(&method_of("Gone")), pair(&function), pair(&imports)].concat();
        let custom = [named("__wasm_bindgen_unstable"), programs].concat();
        let mut exports = vec![4];
        for e in ["gone_pull", "__wbg_gone_free", "main", "stay_gone_x"] {
            exports.extend(export(e));
        }
        let module = [&b"\0asm\x01\0\0\0"[..], &section(1, &[0]), &section(0, &custom), &section(7, &exports)].concat();

        let (out, programs, dropped) = drop_classes(&module, &["Gone"]).expect("a module");
        assert_eq!((programs, dropped), (2, 2));
        let kept = [named("__wasm_bindgen_unstable"), pair(&function), pair(&imports)].concat();
        let kept_exports = [&[2][..], &export("main"), &export("stay_gone_x")].concat();
        let want =
            [&b"\0asm\x01\0\0\0"[..], &section(1, &[0]), &section(0, &kept), &section(7, &kept_exports)].concat();
        assert_eq!(out, want);

        let (same, 0, 0) = drop_classes(&module, &["Other"]).expect("a module") else { panic!("dropped something") };
        assert_eq!(same, module);
    }

    #[test]
    fn a_cut_module_is_an_error() {
        assert!(drop_classes(b"\0asm\x01\0\0\0\x07\x05\x01", UNMADE_CLASSES).is_err());
        assert!(drop_classes(b"nope", UNMADE_CLASSES).is_err());
    }
}

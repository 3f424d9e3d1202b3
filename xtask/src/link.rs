//! The page's linker: `rust-lld` without the exports of the classes nothing
//! makes, so that the linker's own garbage collection removes what only
//! they reached.
//!
//! `wasm.rs` drops those exports after the link, and `wasm-opt` then removes
//! the functions only they called; but not the data those functions used
//! (`wasm-opt` cannot tell which bytes of a data segment are read: the
//! `io::ErrorKind` texts of `wasm-streams`' byte source stayed in every
//! bundle) nor the functions a vtable in that data names (a table entry is
//! a root for `wasm-opt`). Before the link each function and each constant
//! is its own section, and `wasm-ld --gc-sections` keeps only what an export
//! reaches: −3,952 B gzip of the first load, −6,070 B of the diagnosis,
//! −3,329 B of live mode, −3,239 B of the reader (docs/measurements.md,
//! "The linker without the unmade classes").
//!
//! `dist` names the xtask binary itself as cargo's linker for the wasm
//! target ([`LLD_VAR`] names the real one); rustc calls it as it calls
//! `rust-lld` (`-flavor wasm`, then `--export NAME` for each exported
//! symbol), and [`main`] hands `rust-lld` the same arguments without the
//! exports [`wasm::exported_by`] assigns to [`wasm::UNMADE_CLASSES`].

use crate::wasm;
use std::ffi::OsString;

/// The environment variable that holds the path of `rust-lld` for the
/// linker that `dist` names (set on the cargo build it runs).
pub(crate) const LLD_VAR: &str = "HEADROOM_RUST_LLD";

/// Whether xtask was called as the linker: rustc calls an LLD-flavoured
/// linker with `-flavor wasm` first, which no task is named.
pub(crate) fn called_as_linker(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == "-flavor")
}

/// The linker's arguments without the exports of `classes` (in either
/// spelling, `--export NAME` and `--export=NAME`), and how many it dropped.
pub(crate) fn without_exports(args: &[OsString], classes: &[&str]) -> (Vec<OsString>, usize) {
    let unmade = |name: &std::ffi::OsStr| wasm::exported_by(name.as_encoded_bytes(), classes);
    let (mut kept, mut dropped) = (Vec::with_capacity(args.len()), 0);
    let mut args = args.iter();
    while let Some(a) = args.next() {
        if a == "--export" {
            match args.next() {
                Some(name) if unmade(name) => dropped += 1,
                Some(name) => kept.extend([a.clone(), name.clone()]),
                None => kept.push(a.clone()),
            }
        } else if let Some(name) = a.as_encoded_bytes().strip_prefix(b"--export=")
            && wasm::exported_by(name, classes)
        {
            dropped += 1;
        } else {
            kept.push(a.clone());
        }
    }
    (kept, dropped)
}

/// Runs `rust-lld` ([`LLD_VAR`]) with rustc's arguments (`args` without
/// the program's own name) less the unmade classes' exports, and exits
/// with its status.
pub(crate) fn main(args: &[OsString]) -> std::process::ExitCode {
    let Some(lld) = std::env::var_os(LLD_VAR) else {
        eprintln!(
            "error: xtask was called as a linker without {LLD_VAR} naming rust-lld (only `cargo xtask dist` sets it)"
        );
        return std::process::ExitCode::FAILURE;
    };
    let (args, _) = without_exports(args, wasm::UNMADE_CLASSES);
    match std::process::Command::new(&lld).args(&args).status() {
        Ok(s) if s.success() => std::process::ExitCode::SUCCESS,
        Ok(s) => std::process::ExitCode::from(s.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: starting {}: {e}", std::path::Path::new(&lld).display());
            std::process::ExitCode::FAILURE
        }
    }
}

/// `rust-lld` of the toolchain that builds the page: in its sysroot, under
/// the host's triple (`rustc -vV`), where rustup and the Rust release
/// tarballs put it. `None` when it is not there.
pub(crate) fn rust_lld() -> Option<std::path::PathBuf> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&rustc).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let sysroot = run(&["--print", "sysroot"])?;
    let version = run(&["-vV"])?;
    let host = version.lines().find_map(|l| l.strip_prefix("host: "))?;
    let lld = std::path::Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(host.trim())
        .join(format!("bin/rust-lld{}", std::env::consts::EXE_SUFFIX));
    lld.is_file().then_some(lld)
}

#[cfg(test)]
mod tests {
    use super::{called_as_linker, without_exports};
    use std::ffi::OsString;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_unmade_classes_exports_leave_in_either_spelling() {
        let classes = &["IntoUnderlyingSource", "IntoUnderlyingByteSource"];
        let given = args(&[
            "-flavor",
            "wasm",
            "--export",
            "__wbg_intounderlyingsource_free_58a9",
            "--export",
            "main",
            "--export=intounderlyingbytesource_pull_58a9",
            "--export",
            "__wbindgen_describe___wbg_new_with_into_underlying_source_10a8",
            "--export=__heap_base",
            "-o",
            "web.wasm",
        ]);
        let (kept, dropped) = without_exports(&given, classes);
        assert_eq!(dropped, 2);
        let expected = args(&[
            "-flavor",
            "wasm",
            "--export",
            "main",
            "--export",
            "__wbindgen_describe___wbg_new_with_into_underlying_source_10a8",
            "--export=__heap_base",
            "-o",
            "web.wasm",
        ]);
        assert_eq!(kept, expected);
    }

    #[test]
    fn a_dangling_export_flag_is_handed_on() {
        let (kept, dropped) = without_exports(&args(&["-flavor", "wasm", "--export"]), &["IntoUnderlyingSink"]);
        assert_eq!((kept, dropped), (args(&["-flavor", "wasm", "--export"]), 0));
    }

    #[test]
    fn only_rustcs_call_is_a_link() {
        assert!(called_as_linker(&args(&["xtask", "-flavor", "wasm"])));
        assert!(!called_as_linker(&args(&["xtask", "dist"])));
        assert!(!called_as_linker(&args(&["xtask"])));
    }
}

//! Project automation — the one entry point for what is not plain cargo:
//!
//! - `cargo xtask test`: everything CI checks (formatting, lints, tests, the
//!   purity of `shared`), installing what it needs first.
//! - `cargo xtask run`: builds and runs the product.
//! - `cargo xtask bench`: the criterion benchmarks.
//! - `cargo xtask dist`: the calculator page's static bundle in `dist/`.
//! - `cargo xtask e2e`: the bundle, then the browser end-to-end tests.
//! - `cargo xtask bench-web`: time to interactive and re-render time in headless Chromium.
//! - `cargo xtask fuzz [--seconds N] [--coverage] [TARGET…]`: the fuzz targets
//!   of `fuzz/` under libFuzzer (nightly and cargo-fuzz installed on first use).

use anyhow::bail;

mod bench;
mod checks;
mod cmd;
mod css;
mod data;
mod dist;
mod fuzz;
mod html;
mod imports;
mod js;
mod link;
mod run;
mod tools;
mod wasm;

use bench::{bench, bench_agent, bench_web};
use checks::{check_shared, e2e, test};
use dist::{Budget, dist};
use run::run;

fn main() -> std::process::ExitCode {
    // `dist` names this binary as the wasm target's linker (`link.rs`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if link::called_as_linker(&args) {
        return link::main(&args[1..]);
    }
    // Expected failures (a missing tool, a failing step, an over-budget
    // bundle) are one line with their causes, not a Debug dump with a
    // backtrace: `{e:#}` prints the context chain only.
    match dispatch() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn dispatch() -> anyhow::Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    let rest: Vec<String> = std::env::args().skip(2).collect();
    match task.as_str() {
        "test" => test(),
        "run" => run(&rest),
        "bench" => bench(),
        "bench-agent" => bench_agent(&rest),
        "check-shared" => check_shared(),
        "dist" => dist(Budget::Warn),
        "e2e" => e2e(),
        "bench-web" => bench_web(),
        "fuzz" => fuzz::fuzz(&rest),
        _ => {
            eprintln!("usage: cargo xtask <test|run|bench|check-shared|dist|e2e|bench-web|bench-agent|fuzz>");
            bail!("unknown task `{task}`")
        }
    }
}

//! Installing and locating the tools the tasks need: the wasm32 target,
//! wasm-bindgen-cli at the locked version, binaryen's wasm-opt, Debian
//! packages through apt-get (chromium, prometheus, npm), kubernetes-validate
//! and axe-core.

use std::process::Command;

use anyhow::{Context, bail};

use crate::cmd::{cargo, dirs, found, output, step};

/// Installs what the tests need: the wasm32 target (for the purity check).
pub(crate) fn setup() -> anyhow::Result<()> {
    let installed = output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if !installed.lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
        step("install the wasm32 target", Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))?;
    }
    Ok(())
}

/// The `wasm-bindgen` version in Cargo.lock: the CLI must match it exactly.
pub(crate) fn locked_wasm_bindgen(root: &std::path::Path) -> anyhow::Result<String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\"" {
            let version = lines.next().unwrap_or_default().trim();
            if let Some(v) = version.strip_prefix("version = \"").and_then(|v| v.strip_suffix('"')) {
                return Ok(v.to_owned());
            }
        }
    }
    bail!("wasm-bindgen is not in Cargo.lock")
}

/// `<target>/tools/bin/wasm-bindgen` at exactly `version`, installed from crates.io if needed.
pub(crate) fn wasm_bindgen_cli(target: &std::path::Path, version: &str) -> anyhow::Result<std::path::PathBuf> {
    let matches = |bin: &std::path::Path| {
        output(Command::new(bin).arg("--version")).unwrap_or_default().split_whitespace().nth(1) == Some(version)
    };
    // One already on PATH at the exact version (e.g. in ~/.cargo/bin) saves a
    // four-minute build on every fresh clone.
    let on_path = std::path::PathBuf::from("wasm-bindgen");
    if matches(&on_path) {
        return Ok(on_path);
    }
    let root = target.join("tools");
    let bin = root.join("bin").join("wasm-bindgen");
    if matches(&bin) {
        return Ok(bin);
    }
    let install = |locked: bool| {
        let mut cmd = cargo();
        cmd.args(["install", "wasm-bindgen-cli", "--version", &format!("={version}"), "--root"]).arg(&root);
        if locked {
            cmd.arg("--locked");
        }
        // Its own build dir, so the install does not rebuild inside ours.
        cmd.env("CARGO_TARGET_DIR", target.join("tools-build"));
        step(&format!("install wasm-bindgen-cli {version}"), &mut cmd)
    };
    // `--locked` pins the CLI's own lockfile; a registry mirror can lack one of
    // its exact versions, so fall back to a fresh resolution of the same CLI.
    if install(true).is_err() {
        install(false)?;
    }
    Ok(bin)
}

/// The binaryen release whose output the browser tests have run: Debian 12's
/// `binaryen` package. 108 rewrites bindgen's externref table if run after
/// wasm-bindgen (see `bindgen_bundle`), so older or unchecked releases are
/// reported rather than trusted silently.
const WASM_OPT_CHECKED: u32 = 108;

/// The `wasm-opt` to use: the one on PATH, else Debian's `binaryen`
/// installed with apt-get (as `setup_browser` installs chromium). Without
/// it the page still builds, unoptimised and over the size budget; the
/// error says what to install.
pub(crate) fn wasm_opt() -> anyhow::Result<()> {
    let version = || {
        let text = output(Command::new("wasm-opt").arg("--version")).ok()?;
        // "wasm-opt version 108" or "wasm-opt version 116 (version_116)".
        text.split_whitespace().nth(2)?.parse::<u32>().ok()
    };
    if version().is_none() {
        apt_install("binaryen (wasm-opt)", &["binaryen"])?;
    }
    match version() {
        Some(v) if v >= WASM_OPT_CHECKED => {
            if v != WASM_OPT_CHECKED {
                eprintln!("note: wasm-opt {v}; the browser tests were last run on binaryen {WASM_OPT_CHECKED}");
            }
            Ok(())
        }
        Some(v) => bail!("wasm-opt {v} is older than binaryen {WASM_OPT_CHECKED}, the oldest whose output was checked"),
        None => {
            bail!("wasm-opt is still missing after installing binaryen: install binaryen {WASM_OPT_CHECKED}+ by hand")
        }
    }
}

/// Installs Debian `packages` (what `what` names for the user; apt-get
/// options such as `--no-install-recommends` may lead the list) with apt-get,
/// refreshing the package lists once per run. Without apt-get or root the
/// error is one line naming the packages to install by hand.
pub(crate) fn apt_install(what: &str, packages: &[&str]) -> anyhow::Result<()> {
    static UPDATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let by_hand = || {
        format!(
            "{what} is missing: install the Debian package(s) {} yourself",
            packages.iter().filter(|p| !p.starts_with("--")).copied().collect::<Vec<_>>().join(" ")
        )
    };
    let apt = found("apt-get");
    if !apt {
        bail!("{} (apt-get is not available here)", by_hand());
    }
    if !UPDATED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        step("apt-get update", Command::new("apt-get").args(["update", "-q"])).with_context(by_hand)?;
    }
    step(
        &format!("install {what}"),
        Command::new("apt-get").args(["install", "-y", "-q"]).args(packages).env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .with_context(by_hand)
}

/// Chromium and its driver for the browser tests (Debian packages).
pub(crate) fn setup_browser() -> anyhow::Result<()> {
    if (found("chromium") || found("chromium-browser") || found("google-chrome")) && found("chromedriver") {
        return Ok(());
    }
    apt_install("chromium and chromedriver", &["chromium", "chromium-driver"])
}

/// The fleet tests' tools: Debian's `prometheus` (the server and
/// `promtool`) and PyPI's `kubernetes-validate` (Kubernetes schemas, offline).
pub(crate) fn setup_fleet_tools() -> anyhow::Result<()> {
    if !(found("prometheus") && found("promtool")) {
        // Without the recommended exporters and their services: the tests
        // start their own server on loopback.
        apt_install("prometheus (server and promtool)", &["--no-install-recommends", "prometheus"])?;
    }
    if !found("kubernetes-validate") {
        step(
            "install kubernetes-validate",
            Command::new("python3").args(["-m", "pip", "install", "-q", "kubernetes-validate==1.37.0"]),
        )?;
    }
    Ok(())
}

/// The accessibility checker the browser tests inject into the page: npm's
/// `axe-core`, pinned, into `<target>/axe` (the tests read
/// `<target>/axe/node_modules/axe-core/axe.min.js`); Debian's `npm` first if
/// it is missing.
pub(crate) fn setup_axe() -> anyhow::Result<()> {
    const AXE: &str = "axe-core@4.14.1";
    let (_, target) = dirs()?;
    let dir = target.join("axe");
    if dir.join("node_modules/axe-core/package.json").is_file()
        && std::fs::read_to_string(dir.join("node_modules/axe-core/package.json"))
            .is_ok_and(|p| p.contains(&format!("\"version\": \"{}\"", &AXE["axe-core@".len()..])))
    {
        return Ok(());
    }
    if !found("npm") {
        apt_install("npm (for axe-core)", &["--no-install-recommends", "npm"])?;
    }
    std::fs::create_dir_all(&dir)?;
    step(
        &format!("install {AXE}"),
        Command::new("npm").args(["install", "--no-save", "--no-audit", "--no-fund", "--prefix"]).arg(&dir).arg(AXE),
    )
}

//! Running commands, for every task: cargo itself, a named step, a
//! command's output, whether a tool is present, and where the workspace and
//! its target directory are.

use std::process::Command;

use anyhow::{Context, bail};

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

pub(crate) fn step(name: &str, cmd: &mut Command) -> anyhow::Result<()> {
    eprintln!("\n==> {name}");
    let status = cmd.status().with_context(|| format!("starting {name}"))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

pub(crate) fn output(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.output().context("running a command")?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Whether `bin --version` runs and succeeds.
pub(crate) fn found(bin: &str) -> bool {
    Command::new(bin).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The workspace root and the target directory (honours `CARGO_TARGET_DIR`).
pub(crate) fn dirs() -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf)> {
    let meta = output(cargo().args(["metadata", "--format-version", "1", "--no-deps"]))?;
    let field = |key: &str| -> anyhow::Result<std::path::PathBuf> {
        let start = meta.find(&format!("\"{key}\":\"")).with_context(|| format!("cargo metadata has no {key}"))?
            + key.len()
            + 4;
        let end = meta[start..].find('"').context("cargo metadata: unterminated string")? + start;
        Ok(meta[start..end].replace("\\\\", "\\").into())
    };
    Ok((field("workspace_root")?, field("target_directory")?))
}

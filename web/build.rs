//! Reads every model preset's `config.json` with the family readers at build
//! time, so that the page's first load carries the presets' architectures
//! (as the readers derived them) without the readers themselves, which load
//! on demand (`src/bin/reader.rs`). `src/view_model/presets.rs` includes the output;
//! its test checks that it equals what the readers give at run time.

use std::fmt::Write as _;

use shared::arch::Architecture;
use shared::catalog::MODEL_PRESETS;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `shared` is a build-dependency: a change to a reader or a preset's
    // config rebuilds it, and so reruns this script.
    println!("cargo:rerun-if-changed=build.rs");
    let mut out = String::from("/// Each preset's architecture in postcard, in the order of `MODEL_PRESETS`.\n");
    out.push_str("pub(crate) const PRESET_ARCHITECTURES: &[(&str, &[u8])] = &[\n");
    for p in MODEL_PRESETS {
        let arch = Architecture::from_config_json(p.config_json())
            .map_err(|e| format!("preset `{}` does not read: {e}", p.id))?;
        let bytes = postcard::to_allocvec(&arch)?;
        writeln!(out, "    ({:?}, &{:?}),", p.id, bytes)?;
    }
    out.push_str("];\n");
    let dir = std::env::var("OUT_DIR")?;
    std::fs::write(std::path::Path::new(&dir).join("presets.rs"), out)?;
    Ok(())
}

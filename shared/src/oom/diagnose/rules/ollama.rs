//! Ollama's host-RAM check: system memory, not the GPU's.

use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::{gib, times};
use crate::oom::diagnose::{CauseId, FixId};

/// `model requires more system memory (X) than is available (Y)`: X is
/// `TotalSize − VRAMSize` of Ollama's layout (what is not offloaded to a
/// GPU), Y the host's free RAM plus free swap (`llm/server.go`, 0.5 – 0.20).
pub(super) fn ollama_host_memory(f: &Facts, b: &mut Board) {
    let (need, have) = (f.r.host_required_bytes, f.r.host_available_bytes);
    let figures = match (need, have) {
        (Some(n), Some(h)) => {
            format!(
                ": it needs {} of system RAM for the part not on a GPU, {} what is free ({})",
                gib(n),
                times(n, h),
                gib(h)
            )
        }
        _ => String::new(),
    };
    b.add(
        CauseId::HostMemory,
        90,
        format!("Ollama refused to load the model before starting it, on the host's memory (RAM plus swap), not the GPU's{figures}"),
    );
    b.fix(fix(
        FixId::SmallerModel,
        CauseId::HostMemory,
        "Run a smaller model or a smaller quantisation of it".into(),
        GivesUp::Quality,
        None,
        "ollama run MODEL:SMALLER_TAG   # e.g. a q4_K_M tag, or fewer parameters".into(),
    ));
    b.fix(fix(
        FixId::SmallerContext,
        CauseId::HostMemory,
        "Shrink the context: the KV cache kept on the host grows with num_ctx".into(),
        GivesUp::Length,
        None,
        "/set parameter num_ctx 4096   # in `ollama run`; or OLLAMA_CONTEXT_LENGTH=4096 ollama serve".into(),
    ));
    b.fix(fix(
        FixId::KillProcess,
        CauseId::HostMemory,
        "Free the host's RAM: unload models Ollama still holds, stop other large programs".into(),
        GivesUp::Nothing,
        None,
        "ollama ps; ollama stop MODEL   # then check `free -h`".into(),
    ));
}

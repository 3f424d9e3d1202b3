//! What kind of work ran out of memory, as the paste itself shows it: the
//! diagnosis is built for LLM inference, and a diffusion pipeline or a
//! training run has other levers (resolution and frames, offloading,
//! gradient checkpointing, sharded optimizers), never `model.generate`'s.
//! Read only from tracebacks, paths and calls a paste prints, never from
//! the model's name.

use serde::{Deserialize, Serialize};

use super::scan;

/// A workload other than LLM inference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// ComfyUI: its `comfy/` package, `custom_nodes`, or its name in a path.
    ComfyUi,
    /// A diffusers pipeline: `diffusers/` frames, a `pipeline_*.py` file, a
    /// `unet` or `vae` called by name.
    Diffusers,
    /// Training or fine-tuning: `trainer.train()`, `loss.backward()`,
    /// `optimizer.step()`, accelerate's `accelerator.backward`, DeepSpeed's
    /// engine, FSDP. Wins over the other two: a diffusion model being
    /// trained has training's levers.
    Training,
}

impl Workload {
    /// In a few words, for notes.
    pub fn label(self) -> &'static str {
        match self {
            Self::ComfyUi => "a ComfyUI workflow",
            Self::Diffusers => "a diffusers pipeline",
            Self::Training => "a training run",
        }
    }
}

const TRAINING: &[&str] = &[
    "trainer.train(",
    "_inner_training_loop",
    "training_step",
    "loss.backward(",
    "accelerator.backward(",
    "optimizer.step(",
    "autograd/__init__.py",
    "autograd\\__init__.py",
    "deepspeed/runtime/",
    "deepspeed\\runtime\\",
    "torch/distributed/fsdp/",
    "torch\\distributed\\fsdp\\",
];

const COMFYUI: &[&str] = &["custom_nodes", "comfyui", "comfy/", "comfy\\", "comfy.", "comfy_extras"];

const DIFFUSERS: &[&str] = &["diffusers/", "diffusers\\", "/pipeline_", "\\pipeline_", "autoencoderkl", "unet2d"];

/// The workload the raw paste shows, if not LLM inference.
pub(super) fn workload(t: &[u8]) -> Option<Workload> {
    let any = |marks: &[&str]| marks.iter().any(|m| scan::find(t, 0, t.len(), m).is_some());
    if any(TRAINING) {
        Some(Workload::Training)
    } else if any(COMFYUI) {
        Some(Workload::ComfyUi)
    } else if any(DIFFUSERS) || word(t, b"unet") || word(t, b"vae") {
        Some(Workload::Diffusers)
    } else {
        None
    }
}

/// Whether `w` (lower case) stands in `t` as a word of its own, in any case:
/// `self.vae.decode`, `unet(`, not `Kunetz`.
fn word(t: &[u8], w: &[u8]) -> bool {
    let letter = |i: Option<&u8>| i.is_some_and(u8::is_ascii_alphabetic);
    t.windows(w.len()).enumerate().any(|(i, win)| {
        win.eq_ignore_ascii_case(w) && !letter(i.checked_sub(1).and_then(|p| t.get(p))) && !letter(t.get(i + w.len()))
    })
}

/// How many distinct distributed ranks prefix the paste's lines (`[rank0]:`,
/// `[rank12]:`, as torchrun's elastic agent tags each worker's output): more
/// than one is work on several GPUs.
pub(super) fn distributed_ranks(t: &[u8]) -> u32 {
    let mut seen: Vec<&[u8]> = scan::find_all(t, "[rank")
        .into_iter()
        .filter_map(|(_, end)| {
            let digits = t.get(end..)?.iter().take(8).take_while(|b| b.is_ascii_digit()).count();
            (digits > 0 && t.get(end + digits) == Some(&b']')).then(|| t.get(end..end + digits)).flatten()
        })
        .collect();
    crate::order::sort(&mut seen);
    seen.dedup();
    u32::try_from(seen.len()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_workload_from_the_paste() {
        let cases: &[(&str, Option<Workload>)] = &[
            ("File \"custom_nodes\\ComfyUI-VDN-H3\\branch.py\"", Some(Workload::ComfyUi)),
            ("  File \"/app/comfy/model_management.py\", line 1", Some(Workload::ComfyUi)),
            ("site-packages/diffusers/pipelines/pipeline_utils.py", Some(Workload::Diffusers)),
            ("image = self.vae.decode(latents)", Some(Workload::Diffusers)),
            ("[rank2]:     trainer.train()", Some(Workload::Training)),
            ("    loss.backward()\n  File \"custom_nodes/x.py\"", Some(Workload::Training)),
            ("model.generate(**inputs, max_new_tokens=512)", None),
            ("Kunetz unetwork vaeroid", None),
        ];
        for (text, want) in cases {
            assert_eq!(workload(text.as_bytes()), *want, "{text}");
        }
    }

    #[test]
    fn counts_distinct_ranks() {
        assert_eq!(distributed_ranks(b"[rank1]: a\n[rank2]: b\n[rank1]: c\n[rankx]: d\n[rank3 e"), 2);
        assert_eq!(distributed_ranks(b"no ranks"), 0);
    }
}

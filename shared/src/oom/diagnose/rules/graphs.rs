//! Steps 2–3 for an error while capturing CUDA graphs at start-up: the
//! engine sized its cache first, so the graphs get what its budget left.

use super::inspect_fix;
use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::{Facts, Server};
use crate::oom::diagnose::text::{fraction, gib};
use crate::oom::diagnose::{CauseId, FixId};

/// How much lower a utilization or a fraction is suggested when the error
/// says nothing of the graphs' size: a twentieth of the GPU, what vLLM's
/// and SGLang's own docs step by, 2 – 4 GiB on today's 40 – 80 GB GPUs,
/// where the graphs of one model take a few hundred MiB to a few GiB.
pub(super) const STEP_PERMILLE: u64 = 50;

/// Below this a utilization or a fraction is not lowered further by a
/// number: half the GPU for the weights and the cache is already little.
pub(super) const LOWEST_PERMILLE: u64 = 500;

/// The error struck while capturing CUDA graphs (`OomReport::graph_capture`).
///
/// vLLM captures them after the KV cache is allocated: V1's
/// `Worker.compile_or_warm_up_model` calls `capture_model` after
/// `determine_available_memory` gave the cache `gpu_memory_utilization ×
/// total` less the profiled peak, and that profile "does not consider
/// CUDAGraph memory size" (vllm 0.11.0, v1/worker/gpu_worker.py); V0's
/// `Worker._warm_up_model` likewise, after `initialize_cache`
/// (worker/worker.py, 0.5 – 0.10), whose log says "If out-of-memory error
/// occurs during cudagraph capture, consider decreasing
/// `gpu_memory_utilization` or switching to eager mode. You can also reduce
/// the `max_num_seqs`" (worker/model_runner.py). SGLang captures them in
/// the `1 − mem_fraction_static` it keeps back beside the weights and the
/// pool, for batch sizes up to its graph's largest (sglang 0.5.23,
/// arg_groups/fields/schedule.py: "Use a smaller value if you see
/// out-of-memory errors"; model_executor/cuda_graph_runner.py).
pub(super) fn graph_capture(f: &Facts, b: &mut Board) {
    let engine = match f.serving {
        Some(Server::Vllm) => "vLLM",
        Some(Server::Sglang) => "SGLang",
        Some(Server::Tgi) => "TGI",
        None => "",
    };
    let budget = match f.serving {
        Some(Server::Sglang) => match f.r.mem_fraction_static_permille {
            Some(p) => format!("the 1 − mem_fraction_static ({}) it keeps back", fraction(p)),
            None => "the 1 − mem_fraction_static it keeps back".into(),
        },
        // flash_causal_lm.py `warmup` (3.3.7): the KV blocks take the free
        // memory × CUDA_MEMORY_FRACTION × TGI_WIGGLE_ROOM (0.90).
        Some(Server::Tgi) => "the tenth of the free memory its KV cache leaves (TGI_WIGGLE_ROOM 0.90)".into(),
        Some(Server::Vllm) | None => match f.utilization {
            Some((u, from)) => {
                format!("what gpu_memory_utilization {} ({from}) leaves outside its budget", fraction(u))
            }
            None => "what gpu_memory_utilization leaves outside its budget".into(),
        },
    };
    if engine.is_empty() {
        b.add(
            CauseId::GraphCapture,
            70,
            "the error struck while capturing CUDA graphs (torch.cuda.graph, as torch.compile's \
             mode=\"reduce-overhead\" captures them): each graph keeps its own pool of memory beside the model's"
                .into(),
        );
        b.fix(fix(
            FixId::EnforceEager,
            CauseId::GraphCapture,
            "Run without CUDA graphs: your code's torch.compile without mode=\"reduce-overhead\", or the \
             serving engine's own switch for eager mode (or fewer captured shapes)"
                .into(),
            GivesUp::Speed,
            None,
            "model = torch.compile(model)   # if your code compiles: not mode=\"reduce-overhead\", which captures CUDA graphs"
                .into(),
        ));
        inspect_fix(f, b, None);
        return;
    }
    // From 0.21 vLLM takes its own estimate of the graphs out of the budget
    // (`determine_available_memory`, `Version::subtracts_cuda_graphs`): an OOM
    // here then means the estimate fell short.
    let estimate = match f.serving {
        Some(Server::Vllm) => " (from 0.21 inside it, by an estimate of the graphs that can fall short)",
        Some(Server::Sglang | Server::Tgi) | None => "",
    };
    b.add(
        CauseId::GraphCapture,
        85,
        format!(
            "{engine} ran out while capturing CUDA graphs at start-up: it sizes its KV cache first and captures the \
             graphs in {budget}{estimate}, so a budget that leaves too little fails here"
        ),
    );
    match f.serving {
        Some(Server::Sglang) => sglang_fixes(f, b),
        Some(Server::Tgi) => super::tgi::graph_fixes(b),
        Some(Server::Vllm) | None => vllm_fixes(f, b),
    }
}

/// SGLang's largest batch captured in a graph, `n`: 0.5.23 has no
/// `--cuda-graph-max-bs` (arg_groups/fields/exec_.py: one largest batch per
/// phase, `--cuda-graph-max-bs-decode` and `-prefill`), and its argparse
/// refuses the old name as an ambiguous prefix of the two; the 0.4
/// releases took `--cuda-graph-max-bs`, named in the comment.
pub(super) fn sglang_graph_batch(n: &str) -> String {
    format!(
        "python -m sglang.launch_server ... --cuda-graph-max-bs-decode {n}   # before the per-phase flags: --cuda-graph-max-bs {n}"
    )
}

/// A lower setting, by [`STEP_PERMILLE`] when the current one is known and
/// high enough, with what it frees on a GPU of `total` bytes.
fn lower(current: Option<(u64, &'static str)>, total: Option<u64>) -> (String, Option<u64>) {
    match current {
        Some((u, from)) if u >= LOWEST_PERMILLE + STEP_PERMILLE => {
            let frees = total.map(|t| t.saturating_mul(STEP_PERMILLE) / 1000);
            let what = frees.map_or(String::new(), |b| format!("; frees {} for the graphs", gib(b)));
            (format!("{}   # now {} ({from}){what}", fraction(u - STEP_PERMILLE), fraction(u)), frees)
        }
        Some((u, from)) => (format!("<lower than {}>   # now {} ({from})", fraction(u), fraction(u)), None),
        None => ("<lower than now, e.g. 0.05 less>".into(), None),
    }
}

fn vllm_fixes(f: &Facts, b: &mut Board) {
    let (value, frees) = lower(f.utilization, f.vllm_total);
    b.fix(fix(
        FixId::GpuMemoryUtilization,
        CauseId::GraphCapture,
        "Leave room outside vLLM's budget for the graphs: a lower --gpu-memory-utilization (a smaller KV cache)".into(),
        GivesUp::Length,
        frees,
        format!("vllm serve ... --gpu-memory-utilization {value}"),
    ));
    b.fix(fix(
        FixId::EnforceEager,
        CauseId::GraphCapture,
        "Run without CUDA graphs (eager mode): nothing is captured".into(),
        GivesUp::Speed,
        None,
        "vllm serve ... --enforce-eager".into(),
    ));
    b.fix(fix(
        FixId::MaxNumSeqs,
        CauseId::GraphCapture,
        "Serve fewer sequences at once: vLLM captures a graph per batch size up to it".into(),
        GivesUp::Speed,
        None,
        "vllm serve ... --max-num-seqs <fewer than now>".into(),
    ));
}

fn sglang_fixes(f: &Facts, b: &mut Board) {
    let current = f.r.mem_fraction_static_permille.map(|p| (p, "as the paste names it"));
    let (value, frees) = lower(current, f.total);
    b.fix(fix(
        FixId::MemFractionStatic,
        CauseId::GraphCapture,
        "Keep more of the GPU back from the weights and the KV pool: a lower --mem-fraction-static".into(),
        GivesUp::Length,
        frees,
        format!("python -m sglang.launch_server ... --mem-fraction-static {value}"),
    ));
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::GraphCapture,
        "Capture graphs for smaller batches only (larger batches then run without them)".into(),
        GivesUp::Speed,
        None,
        sglang_graph_batch("<smaller>"),
    ));
    b.fix(fix(
        FixId::EnforceEager,
        CauseId::GraphCapture,
        "Run without CUDA graphs: nothing is captured".into(),
        GivesUp::Speed,
        None,
        "python -m sglang.launch_server ... --disable-cuda-graph".into(),
    ));
}

//! Facts: the error's figures, completed from the live readings.

use super::text::{gib, pct};
use super::{DiagnoseContext, LiveGpu};
use crate::estimate::CUDA_CONTEXT_BYTES;
use crate::oom::{GpuBackend, OomKind, OomReport};
use crate::units::MIB;

/// Another holder of memory on the failing GPU.
#[derive(Debug, Clone)]
pub(super) struct Holder {
    pub(super) pid: Option<u32>,
    pub(super) name: Option<String>,
    pub(super) bytes: u64,
    /// Read by the agent now rather than listed by the error.
    pub(super) now: bool,
}

impl Holder {
    pub(super) fn who(&self) -> String {
        match (&self.pid, &self.name) {
            (Some(pid), Some(name)) => format!("process {pid} ({name})"),
            (Some(pid), None) => format!("process {pid}"),
            (None, _) => "another process".into(),
        }
    }
}

/// A serving engine whose flags a PyTorch OOM's fixes speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Server {
    Vllm,
    Sglang,
    /// Text Generation Inference: `text-generation-launcher`, which its
    /// image runs with the arguments after the image's name
    /// (tgi-entrypoint.sh, 3.3.7).
    Tgi,
}

#[derive(Debug)]
pub(super) struct Facts<'r> {
    pub(super) r: &'r OomReport,
    /// The GPU's capacity: the error's, else the live reading's.
    pub(super) total: Option<u64>,
    pub(super) free: Option<u64>,
    pub(super) requested: Option<u64>,
    /// What was missing: requested − free (0 when the free memory would have held it).
    pub(super) shortage: Option<u64>,
    /// This process's use of the GPU.
    pub(super) this_process: Option<u64>,
    pub(super) others: Vec<Holder>,
    /// Held outside this process and not listed (other containers, users, the
    /// display server), when it is large enough to matter.
    pub(super) unlisted: u64,
    pub(super) live: Option<&'r LiveGpu>,
    /// Every live GPU, for comparing GPUs of a split.
    pub(super) all_live: &'r [LiveGpu],
    /// Whether a plan is known: its exact fixes then replace the generic ones.
    pub(super) has_plan: bool,
    /// The plan's repository, for code snippets.
    pub(super) repo: String,
    /// The transformers auto class that loads the plan's model whole.
    pub(super) auto_class: &'static str,
    /// vLLM's `gpu_memory_utilization` in thousandths: the paste's, else the
    /// plan's (given or its version's default), with where it came from.
    pub(super) utilization: Option<(u64, &'static str)>,
    /// vLLM's total memory per GPU when the error has none: the plan's.
    pub(super) vllm_total: Option<u64>,
    /// The plan's weight format.
    pub(super) plan_weights: Option<crate::formats::WeightFormat>,
    /// The plan's GPUs (none without a plan).
    pub(super) plan_gpus: &'r [crate::estimate::GpuSlot],
    /// The plan's KV cache dtype.
    pub(super) plan_kv: Option<crate::kv::KvDtype>,
    /// The plan's tensor-parallel degree (1 without a plan).
    pub(super) plan_tp: u64,
    /// vLLM as the plan runs it, else at its newest rules: what its fixes
    /// are checked against (its fp8 minimum moves by release).
    pub(super) vllm: crate::engines::Engine,
    /// The serving engine a PyTorch OOM happened in: vLLM, SGLang or TGI
    /// when the paste shows one ran out (`OomReport::vllm_process`,
    /// `sglang_process`, `tgi_process`), else the plan's vLLM or SGLang
    /// (TGI is no engine a plan runs); `None` for a script (transformers).
    pub(super) serving: Option<Server>,
    /// SGLang's own `mem_fraction_static` for the plan, in thousandths: what
    /// its release picks when the flag is left out (`engines::sglang::
    /// default_mem_fraction_for`, through the plan's estimate); `None`
    /// without an SGLang plan.
    pub(super) sglang_default_fraction: Option<u64>,
    /// An SGLang plan's weights on its fullest GPU and that GPU's capacity:
    /// whether a higher `mem_fraction_static` could hold them at all.
    pub(super) sglang_weights: Option<(u64, u64)>,
    /// llama.cpp as the plan runs it, else at its newest rules: the build
    /// its levers' flags are spelt for (`-fa`, `--fit`).
    pub(super) llama_cpp: crate::engines::llamacpp::Options,
    /// The plan runs llama.cpp with flash attention on: its fixes' `...`
    /// already carries it.
    pub(super) llama_cpp_fa_planned: bool,
    pub(super) notes: Vec<String>,
}

impl<'r> Facts<'r> {
    pub(super) fn new(r: &'r OomReport, ctx: &DiagnoseContext<'r>) -> Self {
        let live = match r.gpu_index {
            Some(i) => ctx.live.iter().find(|g| g.index == i),
            None if ctx.live.len() == 1 => ctx.live.first(),
            None => None,
        };
        let mut notes = Vec::new();
        let total = r.total_bytes.or(live.map(|g| g.total_bytes)).filter(|&t| t > 0);
        if r.total_bytes.is_none()
            && let Some(t) = total
        {
            notes.push(format!("The GPU's capacity ({}) is the agent's live reading.", gib(t)));
        }
        let requested = r.requested_bytes;
        let shortage = match (requested, r.free_bytes) {
            (Some(q), Some(f)) => Some(q.saturating_sub(f)),
            _ => None,
        };
        // PyTorch lists this process as "Process P" when it runs in another PID
        // namespace (a container): the listed process that holds at least
        // everything PyTorch reserved is this one.
        let mut self_pid = None;
        let mut this_process = r.process_in_use_bytes;
        if this_process.is_none()
            && let Some(reserved) = r.reserved_bytes.or(r.allocated_bytes)
            && let Some(p) =
                r.processes.iter().filter(|p| p.used_bytes.is_some_and(|u| u >= reserved)).max_by_key(|p| p.used_bytes)
        {
            self_pid = p.pid;
            this_process = p.used_bytes;
            notes.push(format!(
                "Process {} holds at least everything PyTorch reserved, so it is taken to be the process that failed.",
                p.pid.map_or("?".into(), |p| p.to_string())
            ));
        }
        let mut others: Vec<Holder> = r
            .processes
            .iter()
            .filter(|p| self_pid.is_none() || p.pid != self_pid)
            .filter_map(|p| Some(Holder { pid: p.pid, name: None, bytes: p.used_bytes?, now: false }))
            .collect();
        let estimated_self = this_process.or(r.reserved_bytes.map(|v| v.saturating_add(CUDA_CONTEXT_BYTES)));
        if let Some(g) = live {
            for p in &g.processes {
                if let Some(h) = others.iter_mut().find(|h| h.pid == Some(p.pid)) {
                    h.name = h.name.take().or(p.name.clone());
                    continue;
                }
                if Some(p.pid) == self_pid {
                    continue;
                }
                // A live process using what the failing one used is most likely it
                // (a notebook kernel still alive), seen from another PID namespace.
                if estimated_self.is_some_and(|s| p.used_bytes.abs_diff(s) <= s / 20) {
                    notes.push(format!(
                        "Process {} holds about what the failing process held ({}): taken to be that process, still running.",
                        p.pid,
                        gib(p.used_bytes)
                    ));
                    continue;
                }
                others.push(Holder { pid: Some(p.pid), name: p.name.clone(), bytes: p.used_bytes, now: true });
            }
        }
        let listed: u64 = others.iter().filter(|h| !h.now).map(|h| h.bytes).fold(0, u64::saturating_add);
        let unlisted = match (total, r.free_bytes, estimated_self) {
            (Some(t), Some(f), Some(me)) => {
                let rest = t.saturating_sub(f).saturating_sub(me).saturating_sub(listed);
                if rest >= 512 * MIB && rest >= t / 50 { rest } else { 0 }
            }
            _ => 0,
        };
        let plan_vllm = ctx.plan.and_then(|p| match &p.scenario.engine {
            crate::engines::Engine::Vllm(o) => Some((*o, p.scenario.gpus.first().map(|g| g.cuda_total_bytes))),
            crate::engines::Engine::Transformers(_)
            | crate::engines::Engine::Sglang(_)
            | crate::engines::Engine::LlamaCpp(_)
            | crate::engines::Engine::Ollama(_) => None,
        });
        // The plan's own setting first, as a start-up log's figures fill
        // only what the plan leaves at its defaults (`startup::logged_engine`):
        // a paste's words may name a value tried after the failure
        // ("--gpu-memory-utilization 0.85 fixes it", eugr/spark-vllm-docker#396,
        // whose run had 0.8). Then the paste's, then the engine's own answer
        // (`Options::utilization`): 1.0 under 0.34's extensible KV cache, the
        // release's default before.
        let per_mille = |o: &crate::engines::vllm::Options| (o.utilization() * 1000.0).round() as u64;
        let utilization = plan_vllm
            .filter(|(o, _)| o.gpu_memory_utilization.is_some())
            .map(|(o, _)| (per_mille(&o), "as the plan sets it"))
            .or_else(|| r.gpu_memory_utilization_permille.map(|u| (u, "as the paste names it")))
            .or_else(|| plan_vllm.map(|(o, _)| (per_mille(&o), "vLLM's default")));
        let vllm_total = total.or(plan_vllm.and_then(|(_, t)| t)).filter(|&t| t > 0);
        let llama_cpp = ctx.plan.and_then(|p| match p.scenario.engine {
            crate::engines::Engine::LlamaCpp(o) => Some(o),
            crate::engines::Engine::Transformers(_)
            | crate::engines::Engine::Vllm(_)
            | crate::engines::Engine::Sglang(_)
            | crate::engines::Engine::Ollama(_) => None,
        });
        // An SGLang plan estimated once with the release's own
        // `mem_fraction_static` (the flag left out): that fraction, and the
        // weights on the fullest GPU, which no fraction changes.
        let sglang = ctx.plan.and_then(|p| match p.scenario.engine {
            crate::engines::Engine::Sglang(o) => {
                let mut s = p.scenario.clone();
                s.engine =
                    crate::engines::Engine::Sglang(crate::engines::sglang::Options { mem_fraction_static: None, ..o });
                let e = crate::estimate::estimate(p.model, s.validate().ok()?);
                let fraction = match e.engine_report.as_ref()? {
                    crate::engines::EngineReport::Sglang(report) => {
                        (report.mem_fraction_static * 1000.0).round() as u64
                    }
                    crate::engines::EngineReport::Vllm(_) | crate::engines::EngineReport::LlamaCpp(_) => return None,
                };
                let g = e.per_gpu.iter().max_by_key(|g| g.budget.weight_bytes)?;
                Some((fraction, (g.budget.weight_bytes, g.capacity_bytes)))
            }
            crate::engines::Engine::Transformers(_)
            | crate::engines::Engine::Vllm(_)
            | crate::engines::Engine::LlamaCpp(_)
            | crate::engines::Engine::Ollama(_) => None,
        });
        let (sglang_default_fraction, sglang_weights) = (sglang.map(|(f, _)| f), sglang.map(|(_, w)| w));
        Self {
            r,
            total,
            sglang_default_fraction,
            sglang_weights,
            utilization,
            vllm_total,
            plan_weights: ctx.plan.map(|p| p.scenario.weights),
            plan_gpus: ctx.plan.map_or(&[], |p| p.scenario.gpus.as_slice()),
            plan_kv: ctx.plan.map(|p| p.scenario.kv_dtype),
            plan_tp: ctx.plan.map_or(1, |p| p.scenario.tp.max(1)),
            vllm: plan_vllm.map_or_else(
                || crate::engines::EngineKind::Vllm.with_defaults(),
                |(o, _)| crate::engines::Engine::Vllm(o),
            ),
            llama_cpp_fa_planned: llama_cpp
                .is_some_and(|o| o.flash_attention == crate::engines::llamacpp::FlashAttention::On),
            llama_cpp: llama_cpp.unwrap_or_default(),
            free: r.free_bytes,
            requested,
            shortage,
            this_process,
            others,
            unlisted,
            live,
            all_live: ctx.live,
            serving: if r.vllm_process {
                Some(Server::Vllm)
            } else if r.sglang_process {
                Some(Server::Sglang)
            } else if r.tgi_process || r.kind == Some(OomKind::TgiPrefillWarmup) {
                Some(Server::Tgi)
            } else {
                ctx.plan.and_then(|p| match p.scenario.engine.kind() {
                    crate::engines::EngineKind::Vllm => Some(Server::Vllm),
                    crate::engines::EngineKind::Sglang => Some(Server::Sglang),
                    crate::engines::EngineKind::Transformers
                    | crate::engines::EngineKind::LlamaCpp
                    | crate::engines::EngineKind::Ollama => None,
                })
            },
            has_plan: ctx.plan.is_some(),
            repo: ctx.plan.and_then(|p| p.model.repo.clone()).unwrap_or_else(|| "MODEL_ID".into()),
            auto_class: ctx.plan.map_or("AutoModelForCausalLM", |p| crate::engines::transformers::auto_class(p.model)),
            notes,
        }
    }

    /// Whether the paste shows work split over several GPUs: buffers on
    /// several devices, llama.cpp's pipeline (on only over several devices,
    /// llama-context.cpp `model.n_devices() > 1 && …`), a vLLM pipeline of
    /// several stages, several vLLM worker ranks, or several torchrun ranks.
    pub(super) fn split(&self) -> bool {
        self.r.devices_in_log.len() > 1
            || self.r.pipeline_copies.is_some()
            || self.r.pipeline_parallel_size.is_some_and(|n| n > 1)
            || self.r.worker_ranks > 1
            || self.r.distributed_ranks > 1
    }

    pub(super) fn others_total(&self) -> u64 {
        self.others.iter().map(|h| h.bytes).fold(self.unlisted, u64::saturating_add)
    }

    /// `x` as a share of the GPU: "18 %" (one decimal under 10 %).
    pub(super) fn share(&self, x: u64) -> Option<String> {
        self.total.map(|t| pct(x, t))
    }

    pub(super) fn is_legacy(&self) -> bool {
        self.r.kind == Some(OomKind::PytorchLegacy)
    }

    /// The environment variable PyTorch's caching allocator reads its
    /// settings from, for the paste's backend; `None` on XPU, whose
    /// allocator (c10/xpu/XPUCachingAllocator.cpp) reads its own settings,
    /// a set that differs by release (expandable segments only where SYCL
    /// has virtual memory, `XPUAllocatorConfig::expandable_segments`), so no
    /// setting is offered rather than one the release may ignore; `None` on
    /// MPS, whose allocator (MPSAllocator.mm) reads only its watermark
    /// ratios and debug flags from the environment.
    pub(super) fn alloc_conf(&self) -> Option<&'static str> {
        match self.r.backend {
            Some(GpuBackend::Hip) => Some("PYTORCH_HIP_ALLOC_CONF"),
            Some(GpuBackend::Xpu | GpuBackend::Mps | GpuBackend::Sycl) => None,
            Some(GpuBackend::Cuda | GpuBackend::Vulkan | GpuBackend::Metal) | None => Some("PYTORCH_CUDA_ALLOC_CONF"),
        }
    }

    /// PyTorch's module for the paste's device: `torch.xpu` on Intel GPUs
    /// (`torch.xpu.empty_cache`, `torch.xpu.set_per_process_memory_fraction`),
    /// `torch.mps` on a Mac (`torch.mps.empty_cache`,
    /// `torch.mps.set_per_process_memory_fraction`), else `torch.cuda`,
    /// which ROCm builds answer too.
    pub(super) fn torch_module(&self) -> &'static str {
        match self.r.backend {
            Some(GpuBackend::Xpu | GpuBackend::Sycl) => "torch.xpu",
            Some(GpuBackend::Mps) => "torch.mps",
            Some(GpuBackend::Cuda | GpuBackend::Hip | GpuBackend::Vulkan | GpuBackend::Metal) | None => "torch.cuda",
        }
    }

    /// The vendor's tool that shows who holds the GPU's memory, as an
    /// instruction ("run `nvidia-smi`") and as a command, for the paste's
    /// backend: `nvidia-smi` only for NVIDIA;
    /// AMD's `amd-smi process` (ROCm 6; `rocm-smi --showpids` before);
    /// on Apple silicon the GPU shares the system's memory, so the processes
    /// holding the most of it (macOS `top`).
    pub(super) fn process_tool(&self) -> (&'static str, &'static str) {
        match self.r.backend {
            Some(GpuBackend::Cuda) | None => {
                ("run `nvidia-smi`", "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv")
            }
            Some(GpuBackend::Hip) => (
                "`amd-smi process` (or `rocm-smi --showpids`)",
                "amd-smi process   # before ROCm 6: rocm-smi --showpids",
            ),
            Some(GpuBackend::Metal | GpuBackend::Mps) => (
                "open Activity Monitor's Memory tab (the GPU shares the system's memory)",
                "top -l 1 -o mem -n 10   # the processes holding the most of the shared memory",
            ),
            // Intel's XPU Manager lists the processes on each GPU (`xpu-smi ps`,
            // Linux only, XPU Manager 2.0 docs).
            Some(GpuBackend::Xpu | GpuBackend::Sycl) => (
                "run `xpu-smi ps` (Intel's XPU Manager, Linux; on Windows, Task Manager's GPU columns)",
                "xpu-smi ps   # Intel XPU Manager, Linux",
            ),
            // Vulkan runs on any vendor's GPU: name each vendor's tool, run none.
            Some(GpuBackend::Vulkan) => (
                "run the GPU vendor's tool (`nvidia-smi`, `amd-smi process`, `intel_gpu_top`)",
                "# NVIDIA: nvidia-smi   AMD: amd-smi process   Intel: intel_gpu_top",
            ),
        }
    }

    pub(super) fn gpu_label(&self) -> String {
        match (self.r.gpu_index, self.total) {
            (Some(i), Some(t)) => format!("GPU {i} ({})", gib(t)),
            (Some(i), None) => format!("GPU {i}"),
            (None, Some(t)) => format!("the {} GPU", gib(t)),
            (None, None) => "the GPU".into(),
        }
    }
}

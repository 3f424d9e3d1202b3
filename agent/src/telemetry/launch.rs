//! Which plan is running: a GPU process's command line
//! (`/proc/<pid>/cmdline`) read by `shared::startup::launch`, the plan its
//! flags describe as a share-link query, and — when the model's config.json
//! is in the host's Hugging Face cache, or the model is a local folder or
//! GGUF file — what that plan predicts the process holds on its GPU.
//!
//! Each process is read once, keyed by its PID and start time
//! (`/proc/<pid>/stat` field 22), not every sample. The command line is
//! never kept or sent: only what the reader recognised. Every failure leaves
//! the process without a launch.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use shared::checkpoint::Checkpoint;
use shared::checkpoint::read::{self, Step};
use shared::link::{self, GpuChoice, LinkState, ModelSource};
use shared::model::Model;
use shared::protocol::{Field, GpuProcess, Launch};
use shared::startup::{self, LaunchModel};

/// The most of a command line read (Linux's own `ARG_MAX` page limit is
/// far above; an engine's launch fits in a few hundred bytes).
pub const MAX_CMDLINE_BYTES: u64 = 64 * 1024;
/// The most of a config.json read (the largest in the catalog is ~20 KiB).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// How far up the parents a launch is looked for: vLLM's workers are
/// `multiprocessing` children (`spawn_main`) of its engine core, itself a
/// child of `vllm serve` (vllm/v1/executor/multiproc_executor.py).
const MAX_ANCESTORS: usize = 3;

/// Where the host's Hugging Face cache is: `$HF_HUB_CACHE`, else
/// `$HF_HOME/hub`, else `~/.cache/huggingface/hub` (huggingface_hub
/// `constants.py`).
pub fn hf_hub_cache() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("HF_HUB_CACHE")
        .or_else(|| var("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/huggingface/hub")))
}

/// A recognised launch and its model, once per process.
#[derive(Debug)]
struct Known {
    launch: startup::Launch,
    /// What the link names the model by; `None` when the launch names none.
    link_model: Option<ModelSource>,
    model: Option<Model>,
    /// The wire launch for each GPU (host index) it was set beside.
    per_gpu: HashMap<u32, Launch>,
}

/// The launches of the processes seen, by PID and start time.
#[derive(Debug, Default)]
pub struct Launches {
    seen: HashMap<u32, (u64, Option<Known>)>,
}

/// A GPU as the plan takes it: its catalog id (simulated) and capacity.
#[derive(Debug, Clone)]
pub struct GpuKind {
    pub catalog_id: Option<String>,
    pub total_bytes: Option<u64>,
}

impl Launches {
    /// Sets `launch` on every process of `lists` (one list per GPU, in
    /// host index order) whose command line is an engine's.
    pub fn annotate(
        &mut self,
        proc_root: &Path,
        hf_cache: Option<&Path>,
        gpus: &[GpuKind],
        lists: &mut [Field<Vec<GpuProcess>>],
    ) {
        // Each PID's GPUs, in index order: a llama.cpp process spans several.
        let mut spans: HashMap<u32, Vec<u32>> = HashMap::new();
        for (i, list) in (0u32..).zip(lists.iter()) {
            if let Field::Value(ps) = list {
                for p in ps {
                    spans.entry(p.pid).or_default().push(i);
                }
            }
        }
        self.seen.retain(|pid, _| spans.contains_key(pid));
        for (i, list) in (0u32..).zip(lists.iter_mut()) {
            let Field::Value(ps) = list else { continue };
            for p in ps.iter_mut() {
                let Some(started) = start_time(proc_root, p.pid) else { continue };
                if !matches!(self.seen.get(&p.pid), Some((s, _)) if *s == started) {
                    let known = recognise(proc_root, hf_cache, p.pid);
                    self.seen.insert(p.pid, (started, known));
                }
                let Some((_, Some(known))) = self.seen.get_mut(&p.pid) else { continue };
                let span = spans.get(&p.pid).map_or(&[][..], Vec::as_slice);
                let gpu = gpus.get(i as usize).cloned().unwrap_or(GpuKind { catalog_id: None, total_bytes: None });
                let wire = known.per_gpu.entry(i).or_insert_with(|| {
                    plan(&known.launch, known.link_model.as_ref(), known.model.as_ref(), &gpu, span, i)
                });
                p.launch = Some(wire.clone());
            }
        }
    }
}

/// The process's launch, or its nearest recognised parent's.
fn recognise(proc_root: &Path, hf_cache: Option<&Path>, pid: u32) -> Option<Known> {
    let mut at = pid;
    for _ in 0..=MAX_ANCESTORS {
        let dir = proc_root.join(at.to_string());
        if let Some(launch) = read_capped(&dir.join("cmdline"), MAX_CMDLINE_BYTES).and_then(|b| command_line(&b)) {
            let (link_model, model) = resolve_model(&dir, hf_cache, launch.model.as_ref());
            return Some(Known { launch, link_model, model, per_gpu: HashMap::new() });
        }
        at = parent(proc_root, at).filter(|&p| p > 1)?;
    }
    None
}

/// The NUL-separated arguments, each read as UTF-8 with bad bytes replaced
/// (the reader then refuses values holding them).
fn command_line(bytes: &[u8]) -> Option<startup::Launch> {
    let args: Vec<String> =
        bytes.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    startup::read_command_line(&args)
}

/// The link's model and, when the agent can read it, the model itself.
fn resolve_model(
    dir: &Path,
    hf_cache: Option<&Path>,
    model: Option<&LaunchModel>,
) -> (Option<ModelSource>, Option<Model>) {
    match model {
        None => (None, None),
        Some(LaunchModel::Hub(id)) => {
            // `org/name:Q4_K_M` (llama-server -hf) is a GGUF the page fetches.
            let config = (!id.contains(':'))
                .then(|| hf_cache.and_then(|c| hub_config(c, id)))
                .flatten()
                .and_then(|text| Model::from_config_json(id.clone(), &text).ok());
            (Some(ModelSource::Hub(id.clone())), config)
        }
        Some(m @ LaunchModel::Path(path)) => {
            // The process's own view of the filesystem (a container's too).
            let Some(relative) = path.strip_prefix('/') else {
                return (Some(ModelSource::Local(m.name().into())), None);
            };
            let at = dir.join("root").join(relative);
            if let Some(text) =
                read_capped(&at.join("config.json"), MAX_CONFIG_BYTES).and_then(|b| String::from_utf8(b).ok())
                && let Ok(model) = Model::from_config_json(m.name(), &text)
            {
                let source =
                    link::compact_config(&text).map_or(ModelSource::Local(m.name().into()), ModelSource::Config);
                return (Some(source), Some(model));
            }
            (Some(ModelSource::Local(m.name().into())), gguf_model(&at, m.name()))
        }
    }
}

/// `models--ORG--NAME/snapshots/<refs/main or the first>/config.json`.
fn hub_config(cache: &Path, id: &str) -> Option<String> {
    let entry = cache.join(format!("models--{}", id.replace('/', "--")));
    let snapshots = entry.join("snapshots");
    let main = std::fs::read_to_string(entry.join("refs/main")).ok().map(|c| c.trim().to_owned());
    let mut names: Vec<String> = std::fs::read_dir(&snapshots)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    if let Some(main) = main.filter(|m| names.contains(m)) {
        names.insert(0, main);
    }
    names.iter().find_map(|n| {
        read_capped(&snapshots.join(n).join("config.json"), MAX_CONFIG_BYTES).and_then(|b| String::from_utf8(b).ok())
    })
}

/// A single GGUF file's header, read on as `shared::checkpoint::read` asks.
fn gguf_model(path: &Path, name: &str) -> Option<Model> {
    let mut file = std::fs::File::open(path).ok()?;
    let size = file.metadata().ok().filter(std::fs::Metadata::is_file)?.len();
    let mut bytes = vec![0; usize::try_from(read::FIRST_READ.min(size)).ok()?];
    file.read_exact(&mut bytes).ok()?;
    let header = loop {
        match read::gguf(&bytes, Some(size)).ok()? {
            Step::Done(h) => break h,
            Step::Read { start, len } => {
                file.seek(SeekFrom::Start(start)).ok()?;
                let before = bytes.len();
                (&mut file).take(len).read_to_end(&mut bytes).ok()?;
                if bytes.len() == before {
                    return None;
                }
            }
        }
    };
    let checkpoint = Checkpoint::from_gguf(vec![(name.to_owned(), header)]).ok()?;
    Model::from_checkpoint(name.to_owned(), None, &checkpoint).ok()
}

/// The wire launch on GPU `gpu`: the plan's link and its prediction for
/// this GPU (the process's `span` position among the GPUs it holds).
fn plan(
    launch: &startup::Launch,
    link_model: Option<&ModelSource>,
    model: Option<&Model>,
    kind: &GpuKind,
    span: &[u32],
    gpu: u32,
) -> Launch {
    // Without a model there is no plan to describe.
    let Some(link_model) = link_model else { return Launch::of(launch, None, None) };
    let choice = GpuChoice::of_device(kind.catalog_id.as_deref(), kind.total_bytes.unwrap_or(0));
    let state = LinkState::of_launch(launch, link_model.clone(), choice, span.len() as u64);
    let predicted = model.and_then(|m| {
        let scenario = state.scenario_for(m).ok()?;
        let estimate = shared::estimate::estimate(m, scenario);
        let rank = span.iter().position(|&g| g == gpu).unwrap_or(0);
        estimate.per_gpu.get(rank.min(estimate.per_gpu.len().saturating_sub(1))).map(|p| p.total_bytes)
    });
    Launch::of(launch, Some(link::encode(&state)), predicted)
}

/// At most `cap` bytes of a file.
fn read_capped(path: &Path, cap: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    std::fs::File::open(path).ok()?.take(cap).read_to_end(&mut out).ok()?;
    Some(out)
}

/// `/proc/<pid>/stat` after the command name (which may hold spaces and
/// parentheses): field 3 is the state, 4 the parent, 22 the start time.
fn stat_fields(proc_root: &Path, pid: u32) -> Option<Vec<String>> {
    let stat = read_capped(&proc_root.join(pid.to_string()).join("stat"), 4096)?;
    let stat = String::from_utf8_lossy(&stat);
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

fn start_time(proc_root: &Path, pid: u32) -> Option<u64> {
    stat_fields(proc_root, pid)?.get(22 - 3)?.parse().ok()
}

fn parent(proc_root: &Path, pid: u32) -> Option<u32> {
    stat_fields(proc_root, pid)?.get(4 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use shared::protocol::LaunchEngine;

    use super::*;

    /// A fake `/proc` and Hugging Face cache: `vllm serve` of a model in the
    /// cache (with an API key), its `spawn_main` worker on a second GPU, a
    /// llama-server whose GGUF is not there, a training script, and a
    /// command line with bytes that are not UTF-8.
    #[test]
    fn launches_are_read_once_from_a_fake_proc_tree_and_planned_from_the_hf_cache() {
        let root = std::env::temp_dir().join(format!("headroom-fakelaunch-{}", std::process::id()));
        let proc = root.join("proc");
        let write = |pid: u32, parent: u32, started: u64, argv: &[&[u8]]| {
            let dir = proc.join(pid.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            let mut cmdline = Vec::new();
            for a in argv {
                cmdline.extend_from_slice(a);
                cmdline.push(0);
            }
            std::fs::write(dir.join("cmdline"), cmdline).unwrap();
            // `pid (comm) state ppid …`: field 22 is the start time.
            let rest: Vec<String> = (5..22).map(|n| n.to_string()).collect();
            let stat = format!("{pid} (py (x) y) S {parent} {} {started} 0 0\n", rest.join(" "));
            std::fs::write(dir.join("stat"), stat).unwrap();
        };
        let secret: &[u8] = b"sk-live-0123456789";
        write(
            4242,
            1,
            900,
            &[
                b"python3",
                b"/venv/bin/vllm",
                b"serve",
                b"meta-llama/Llama-3.1-8B-Instruct",
                b"-tp",
                b"2",
                b"--gpu-memory-utilization",
                b"0.5",
                b"--api-key",
                secret,
            ],
        );
        write(
            4300,
            4242,
            950,
            &[b"/venv/bin/python3", b"-c", b"from multiprocessing.spawn import spawn_main", b"--multiprocessing-fork"],
        );
        write(88, 1, 10, &[b"llama-server", b"-m", b"/srv/private/models/q.gguf", b"-c", b"8192", b"-ngl", b"99"]);
        write(77, 1, 10, &[b"python", b"train.py", b"--model", b"meta-llama/Llama-3.1-8B"]);
        write(66, 1, 10, &[b"llama-server", b"-c", b"40\xff96", b"--api-key", b"sk-\xfe\xff"]);
        let cache = root.join("hub");
        let snapshot = cache.join("models--meta-llama--Llama-3.1-8B-Instruct/snapshots/0e9e39f");
        std::fs::create_dir_all(&snapshot).unwrap();
        let config = include_str!("../../../shared/catalog/models/llama-3.1-8b.json");
        std::fs::write(snapshot.join("config.json"), config).unwrap();

        let process = |pid| GpuProcess {
            pid,
            name: Field::Value("python3".into()),
            container: None,
            pod: None,
            used_bytes: Field::Value(1 << 30),
            mig: None,
            launch: None,
        };
        let h100 = GpuKind {
            catalog_id: Some("h100-sxm".into()),
            total_bytes: shared::catalog::gpu("h100-sxm").map(|g| g.memory_bytes),
        };
        let gpus = [h100.clone(), h100];
        let lists = || {
            vec![
                Field::Value(vec![process(4242), process(88), process(77), process(66)]),
                Field::Value(vec![process(4300)]),
            ]
        };
        let mut launches = Launches::default();
        let mut out = lists();
        launches.annotate(&proc, Some(&cache), &gpus, &mut out);
        let (Field::Value(first), Field::Value(second)) = (&out[0], &out[1]) else { panic!("lists") };

        let vllm = first[0].launch.as_ref().expect("vllm serve is recognised");
        assert_eq!(vllm.engine, LaunchEngine::Vllm);
        assert_eq!(vllm.model.as_deref(), Some("meta-llama/Llama-3.1-8B-Instruct"));
        let query = vllm.plan_query.as_deref().unwrap();
        assert!(
            query.contains("hf=meta-llama/Llama-3.1-8B-Instruct")
                && query.contains("tp=2")
                && query.contains("gmu=0.5"),
            "{query}"
        );
        // The plan's own figure: TP 2 at half of an H100 holds about 40 GiB.
        let predicted = vllm.predicted_bytes.expect("the HF cache gives a prediction");
        let gpu_bytes = gpus[0].total_bytes.unwrap();
        assert!(predicted > gpu_bytes * 4 / 10 && predicted < gpu_bytes * 6 / 10, "{predicted}");
        // The worker, a `spawn_main` child, is its parent's launch.
        assert_eq!(second[0].launch.as_ref().map(|l| &l.plan_query), Some(&vllm.plan_query));

        let llama = first[1].launch.as_ref().expect("llama-server is recognised");
        assert_eq!(
            (llama.engine, llama.model.as_deref(), llama.predicted_bytes),
            (LaunchEngine::LlamaServer, Some("q.gguf"), None)
        );
        assert!(llama.plan_query.as_deref().unwrap().contains("nctx=8192"));
        assert_eq!(first[2].launch, None, "a training script is not guessed at");
        let odd = first[3].launch.as_ref().expect("still llama-server");
        assert!(odd.flags.is_empty(), "{odd:?}");

        let wire = serde_json::to_string(&out).unwrap();
        for hidden in ["sk-", "private", "/srv", "train.py", "--api-key"] {
            assert!(!wire.contains(hidden), "{hidden} in {wire}");
        }

        // Read once: a changed command line of the same process is not read
        // again; a new process under the same PID is.
        write(88, 1, 10, &[b"llama-server", b"-c", b"1024"]);
        let mut again = lists();
        launches.annotate(&proc, Some(&cache), &gpus, &mut again);
        let Field::Value(again_first) = &again[0] else { panic!("list") };
        assert_eq!(again_first[1].launch, first[1].launch);
        write(88, 1, 11, &[b"llama-server", b"-c", b"1024"]);
        let mut restarted = lists();
        launches.annotate(&proc, Some(&cache), &gpus, &mut restarted);
        let Field::Value(restarted) = &restarted[0] else { panic!("list") };
        assert_eq!(restarted[1].launch.as_ref().map(|l| l.flags[0].value.as_str()), Some("1024"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}

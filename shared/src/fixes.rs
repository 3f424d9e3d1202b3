//! Fixes: the cheapest changes that make a plan fit, ranked by what they give
//! up, each with the memory it saves and the code or flags that apply it.

use serde::Serialize;

use crate::engines::commands::{SettingKind, Shorten};
use crate::engines::{EngineKind, EnginePlan, Scenario};
use crate::explain::thousands;
use crate::formats::WeightFormat;
use crate::model::Model;
use crate::plan::{GpuSlot, Verdict, largest};
use crate::solve;

/// What a fix costs, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GivesUp {
    /// A setting: nothing is lost.
    Nothing,
    /// A little numerical precision in the KV cache.
    CachePrecision,
    /// Shorter sequences or fewer at once.
    Length,
    /// Weight precision (model quality).
    Quality,
    /// Speed (layers on the CPU).
    Speed,
    /// More or bigger hardware.
    Money,
}

/// Stable ids of the kinds of fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FixKind {
    /// An engine that loads the weight format.
    Engine,
    SdpaAttention,
    HigherUtilization,
    KvCacheDtype,
    MaxNewTokens,
    MaxModelLen,
    Concurrency,
    WeightFormat,
    OffloadLayers,
    /// llama.cpp's `--tensor-split` by each GPU's memory.
    SplitLayers,
    /// What llama.cpp's own `--fit` loads instead.
    Fit,
    MoreGpus,
    BiggerGpu,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    pub kind: FixKind,
    pub title: String,
    pub gives_up: GivesUp,
    /// How much closer to fitting the change brings the tightest GPU: memory
    /// freed, or capacity added (a bigger GPU, a larger utilization share).
    pub saves_bytes: u64,
    /// Whether the plan fits with this change alone.
    pub fits: bool,
    /// The code, flags or settings that apply it.
    pub code: String,
    /// The changed plan (for "apply" buttons).
    #[serde(skip)]
    pub scenario: Scenario,
}

/// How far the plan is from fitting on its tightest GPU
/// ([`EnginePlan::gap_bytes`]); a plan that fails its checks is infinitely far.
fn gap(model: &Model, s: &Scenario) -> i128 {
    s.clone().validate().map_or(i128::MAX, |v| EnginePlan::new(model, v).gap_bytes())
}

/// `s` for sequences of `len` (≥ 2) tokens that keeps both the prompt and
/// the new tokens above zero: a prompt shorter than `len` is kept, else the
/// new tokens are while the prompt keeps a token, else both shrink in
/// proportion.
fn shortened(s: &Scenario, len: u64) -> Scenario {
    let mut t = s.clone();
    let len = len.max(2);
    if s.prompt_tokens < len {
        // The prompt is kept and the new tokens fill the rest.
        t.max_new_tokens = (len - s.prompt_tokens).min(s.max_new_tokens).max(1);
        t.prompt_tokens = len - t.max_new_tokens;
    } else if s.max_new_tokens < len {
        // The prompt is truncated to make room for the new tokens.
        t.max_new_tokens = s.max_new_tokens.max(1);
        t.prompt_tokens = len - t.max_new_tokens;
    } else {
        let total = u128::from(s.sequence_tokens().max(1));
        let new = u64::try_from(u128::from(s.max_new_tokens) * u128::from(len) / total).unwrap_or(1);
        t.max_new_tokens = new.clamp(1, len - 1);
        t.prompt_tokens = len - t.max_new_tokens;
    }
    t.engine = s.engine.for_length(len);
    t
}

/// What a shorter scenario `t` cuts of `s`, in words.
fn cut(s: &Scenario, t: &Scenario) -> String {
    let mut parts = Vec::new();
    if t.prompt_tokens < s.prompt_tokens {
        parts.push(format!("prompt {} → {}", thousands(s.prompt_tokens), thousands(t.prompt_tokens)));
    }
    if t.max_new_tokens < s.max_new_tokens {
        parts.push(format!("max new tokens {} → {}", thousands(s.max_new_tokens), thousands(t.max_new_tokens)));
    }
    parts.join(", ")
}

/// The longest context in `workload..=asked` the plan fits with.
fn largest_context(model: &Model, s: &Scenario, workload: u64, asked: u64) -> u64 {
    let fits = |len: u64| solve::fits(model, &Scenario { engine: s.engine.for_length(len), ..s.clone() });
    largest(asked, |len| len <= workload || fits(len)).max(workload)
}

/// `line` after the comment lines of `code`, with its trailing comment; a
/// command of `code` that is `line` with more (a setting the plan does not
/// model, such as SGLang's `--max-running-requests`) is kept whole.
fn with_comments(code: &str, line: String) -> String {
    let mut out = String::new();
    for l in code.lines().filter(|l| l.starts_with('#')) {
        out.push_str(l);
        out.push('\n');
    }
    if let Some(whole) =
        code.lines().last().filter(|l| l.strip_prefix(line.as_str()).is_some_and(|r| r.starts_with(' ')))
    {
        out.push_str(whole);
        return out;
    }
    out.push_str(&line);
    if let Some((_, comment)) = code.lines().last().filter(|l| !l.starts_with('#')).and_then(|l| l.split_once("   # "))
    {
        out.push_str("   # ");
        out.push_str(comment);
    }
    out
}

/// "1 × H100 SXM at fp8".
fn on_gpus(s: &Scenario) -> String {
    format!("{} × {} at {}", s.gpus.len(), s.gpus[0].name, s.weights.id())
}

fn repo(model: &Model) -> String {
    model.repo.clone().unwrap_or_else(|| "MODEL_ID".into())
}

/// The ranked fixes for a plan that does not fit; for one that fits, what
/// the engine itself changes before loading it (usually nothing).
pub fn fixes(model: &Model, s: &Scenario) -> Vec<Fix> {
    // An engine that does not load the weight format: run it where it loads.
    let kind = s.engine.kind();
    if let Some(why) = s.engine.refuses(s.weights)
        && let Some(to) = EngineKind::runner_of(s.weights)
    {
        let tp = if to.commands().more_gpus_are_tensor_parallel { s.tp } else { 1 };
        let t = solve::kept_kv(model, Scenario { engine: to.with_defaults(), tp, ..s.clone() });
        let fits = solve::fits(model, &t);
        let mut out = vec![Fix {
            kind: FixKind::Engine,
            title: format!(
                "Run it in {}, which loads {} weights ({} does not: {why})",
                to.name(),
                s.weights.id(),
                kind.name()
            ),
            gives_up: GivesUp::Nothing,
            saves_bytes: 0,
            fits,
            code: format!("# {} weights are {}'s format", s.weights.id(), to.name()),
            scenario: t,
        }];
        // Or keep the engine and convert to the closest format it loads:
        // precision is given up only when the new format stores less.
        if let Some(f) = solve::least_aggressive_format(model, s) {
            let t = solve::kept_kv(model, Scenario { weights: f, ..s.clone() });
            let ctx = model.layout_context();
            let bytes = |f: WeightFormat| f.layout_bytes(&model.layout, &ctx);
            let gives_up = if bytes(f) >= bytes(s.weights) { GivesUp::Nothing } else { GivesUp::Quality };
            let saves_bytes = u64::try_from(gap(model, s).saturating_sub(gap(model, &t)).max(0)).unwrap_or(0);
            out.push(Fix {
                kind: FixKind::WeightFormat,
                title: format!("Load the weights as {}, which {} loads", f.id(), kind.name()),
                gives_up,
                saves_bytes,
                fits: solve::fits(model, &t),
                code: (kind.commands().weights)(model, &t, &repo(model)),
                scenario: t,
            });
        }
        return out;
    }
    let Ok(valid) = s.clone().validate() else { return Vec::new() };
    let plan = EnginePlan::new(model, valid);
    let verdict = plan.verdict();
    let commands = s.engine.kind().commands();
    if matches!(verdict, Verdict::Fits { max_concurrency } if max_concurrency >= s.concurrency) {
        // It fits; the engine may still change it before loading.
        return (commands.adjusts)(model, s)
            .map(|a| Fix {
                kind: FixKind::Fit,
                title: a.title,
                gives_up: GivesUp::Speed,
                saves_bytes: 0,
                fits: solve::fits(model, &a.scenario),
                code: a.code,
                scenario: a.scenario,
            })
            .into_iter()
            .collect();
    }
    let before = plan.gap_bytes();
    let mut out: Vec<Fix> = Vec::new();
    let launch = commands.launch;
    let repo_name = repo(model);
    let mut push = |kind, title: String, gives_up, scenario: Scenario, code: String| {
        let fits = solve::fits(model, &scenario);
        let after = gap(model, &scenario);
        // An engine launched by one command line gets the whole launch of
        // the fixed plan, with the fix's own comments kept.
        let code = match launch {
            Some(launch) => with_comments(&code, launch(model, &scenario, &repo_name)),
            None => code,
        };
        let saves_bytes = u64::try_from(before.saturating_sub(after).max(0)).unwrap_or(u64::MAX);
        out.push(Fix { kind, title, gives_up, saves_bytes, fits, code, scenario });
    };
    let repo = repo(model);

    // The engine's own settings first: they give up nothing (or speed).
    for setting in (commands.settings)(model, s, &repo) {
        let (kind, gives_up) = match setting.kind {
            SettingKind::SdpaAttention => (FixKind::SdpaAttention, GivesUp::Nothing),
            SettingKind::HigherUtilization => (FixKind::HigherUtilization, GivesUp::Nothing),
            SettingKind::OffloadLayers => (FixKind::OffloadLayers, GivesUp::Speed),
            SettingKind::SplitLayers => (FixKind::SplitLayers, GivesUp::Nothing),
            SettingKind::Fit => (FixKind::Fit, GivesUp::Speed),
        };
        push(kind, setting.title, gives_up, setting.scenario, setting.code);
    }
    // A cheaper KV cache.
    let cheaper_kv = commands.cheaper_kv_dtype;
    if s.kv_dtype.bpw(128).as_f64() > cheaper_kv.bpw(128).as_f64() {
        let t = Scenario { kv_dtype: cheaper_kv, engine: s.engine.with_kv_cache(cheaper_kv), ..s.clone() };
        let code = (commands.kv_dtype)(model, &t, &repo);
        // llama.cpp keeps a quantised V cache only with flash attention,
        // which the fix turns on: the title says so, since much of what it
        // saves can be that alone.
        let title = if t.engine.flash_attention_off() != s.engine.flash_attention_off() {
            format!("Turn flash attention on and store the KV cache in {}", cheaper_kv.id())
        } else {
            format!("Store the KV cache in {}", cheaper_kv.id())
        };
        push(FixKind::KvCacheDtype, title, GivesUp::CachePrecision, t, code);
    }
    // More GPUs of the same kind: also what keeps an asked context.
    let min_gpus = solve::min_gpus(model, s).filter(|&n| n as usize > s.gpus.len());
    // Shorter sequences.
    match commands.shorten {
        Shorten::Context(command) => {
            let workload = s.sequence_tokens();
            let configured = plan.configured_context();
            let asked = s.engine.asked_context();
            // The engine reserves for a longer context than the workload
            // uses: setting it to the workload gives up nothing asked for,
            // unless the person asked for that context.
            let to_workload = Scenario { engine: s.engine.for_length(workload), ..s.clone() };
            if let Some(c) = configured.filter(|&c| c > workload)
                && solve::fits(model, &to_workload)
            {
                match asked {
                    Some(asked) => {
                        // Keep as much of it as fits.
                        let len = largest_context(model, s, workload, asked);
                        let t = Scenario { engine: s.engine.for_length(len), ..s.clone() };
                        let title = format!(
                            "{} tokens do not fit on {}: {} do{}",
                            thousands(asked),
                            on_gpus(s),
                            thousands(len),
                            min_gpus.map_or(String::new(), |n| format!(
                                "; {} need {n} × {}{}",
                                thousands(asked),
                                s.gpus[0].name,
                                if commands.more_gpus_are_tensor_parallel {
                                    format!(" with TP {n}")
                                } else {
                                    String::new()
                                }
                            ))
                        );
                        let code = command(model, &t, &repo);
                        push(FixKind::MaxModelLen, title, GivesUp::Length, t, code);
                    }
                    None => {
                        let code = command(model, &to_workload, &repo);
                        push(
                            FixKind::MaxModelLen,
                            format!(
                                "Set the context to your {} tokens (prompt + new tokens) instead of the model's {}",
                                thousands(workload),
                                thousands(c)
                            ),
                            GivesUp::Nothing,
                            to_workload,
                            code,
                        )
                    }
                }
            } else {
                // The workload itself is too long: it is what gets shorter,
                // the prompt and the new tokens both kept above zero.
                let len = largest(workload.saturating_sub(1), |len| solve::fits(model, &shortened(s, len)));
                if len >= 2 {
                    let t = shortened(s, len);
                    let code = command(model, &t, &repo);
                    push(
                        FixKind::MaxModelLen,
                        format!("Limit the context to {} tokens ({})", thousands(len), cut(s, &t)),
                        GivesUp::Length,
                        t,
                        code,
                    );
                }
            }
        }
        Shorten::NewTokens(command) => {
            if let Some(n) = solve::max_new_tokens(model, s).filter(|&n| n > 0 && n < s.max_new_tokens) {
                let mut t = s.clone();
                t.max_new_tokens = n;
                let code = command(model, &t);
                push(
                    FixKind::MaxNewTokens,
                    format!("Generate at most {} new tokens", thousands(n)),
                    GivesUp::Length,
                    t,
                    code,
                );
            }
        }
    }
    // Fewer sequences at once.
    if s.concurrency > 1 {
        let n = plan.max_concurrency();
        if n >= 1 && n < s.concurrency {
            let mut t = s.clone();
            t.concurrency = n;
            t.engine = t.engine.capped_sequences(n);
            let code = (commands.concurrency)(model, &t, &repo, n);
            push(
                FixKind::Concurrency,
                format!("Run {n} sequence{} at once instead of {}", if n == 1 { "" } else { "s" }, s.concurrency),
                GivesUp::Length,
                t,
                code,
            );
        }
    }
    // A lighter weight format.
    if let Some(f) = solve::least_aggressive_format(model, s).filter(|&f| f != s.weights) {
        let t = solve::kept_kv(model, Scenario { weights: f, ..s.clone() });
        let gives_up =
            if matches!(f, WeightFormat::Bf16 | WeightFormat::F16) { GivesUp::Nothing } else { GivesUp::Quality };
        let code = (commands.weights)(model, &t, &repo);
        push(FixKind::WeightFormat, format!("Load the weights as {}", f.id()), gives_up, t, code);
    }
    // More GPUs of the same kind.
    if let Some(n) = min_gpus {
        let t = solve::with_gpus(s, s.gpus[0].clone(), n, commands.more_gpus_are_tensor_parallel);
        let code = (commands.more_gpus)(model, &t, &repo, n);
        push(FixKind::MoreGpus, format!("Use {n} × {}", s.gpus[0].name), GivesUp::Money, t, code);
    }
    // A bigger GPU.
    if let Some(g) = solve::smallest_gpu_like(model, s).filter(|g| g.memory_bytes > s.gpus[0].capacity_bytes) {
        let mut t = s.clone();
        t.gpus = vec![GpuSlot::from_catalog(g); s.gpus.len()];
        push(
            FixKind::BiggerGpu,
            // A name that says its memory ("Mac (M2 Max, 32 GB)") is not told it twice.
            if g.name.contains(g.memory_label.as_str()) {
                format!("Run on {} × {}", s.gpus.len(), g.name)
            } else {
                format!("Run on {} × {} ({})", s.gpus.len(), g.name, g.memory_label)
            },
            GivesUp::Money,
            t,
            format!(
                "# rent or use a {} ({} as the driver reports it)",
                g.name,
                crate::units::format_bytes(g.memory_bytes, crate::units::UnitSystem::Binary)
            ),
        );
    }
    let any_fits = out.iter().any(|f| f.fits);
    if any_fits {
        out.retain(|f| f.fits);
    }
    // What `sort_by` gives (stable), as an insertion sort: a plan has a
    // few dozen fixes at most, and core's stable sort costs the page's first
    // load 1.5 kB gzip.
    // The ways that keep the length asked for come before those that cut it.
    let cuts =
        |f: &Fix| matches!(f.kind, FixKind::MaxModelLen | FixKind::MaxNewTokens) && f.gives_up == GivesUp::Length;
    let later = |a: &Fix, b: &Fix| {
        b.fits
            .cmp(&a.fits)
            .then(cuts(a).cmp(&cuts(b)))
            .then(a.gives_up.cmp(&b.gives_up))
            .then(b.saves_bytes.cmp(&a.saves_bytes))
            == std::cmp::Ordering::Greater
    };
    for i in 1..out.len() {
        let mut j = i;
        while j > 0 && later(&out[j - 1], &out[j]) {
            out.swap(j - 1, j);
            j -= 1;
        }
    }
    out
}

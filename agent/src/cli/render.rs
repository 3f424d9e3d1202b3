//! The human-readable breakdown printed by `headroom estimate`.

use std::fmt::Write;

use shared::engines::llamacpp;
use shared::estimate::{Estimate, verdict_text};
use shared::explain::{Basis, TermUnit, thousands};
use shared::units::{UnitSystem, format_bytes};

/// `launched`: the command the engine starts (Ollama's `llama-server` line).
pub fn breakdown(
    e: &Estimate,
    fit: Option<&llamacpp::Fit>,
    launched: Option<&str>,
    units: UnitSystem,
    explain: bool,
) -> String {
    let b = |v: u64| format_bytes(v, units);
    let mut out = String::new();
    let active = if e.active_parameters != e.parameters {
        format!(" ({} active per token)", thousands(e.active_parameters))
    } else {
        String::new()
    };
    let _ = writeln!(out, "{} — {} parameters{active}", e.model, thousands(e.parameters));
    let _ = writeln!(
        out,
        "{} prompt + {} new tokens × {} sequence(s); weights {}, KV cache {}\n",
        thousands(e.prompt_tokens),
        thousands(e.max_new_tokens),
        e.concurrency,
        e.weight_format.id(),
        e.kv_dtype.id()
    );
    let row = |out: &mut String, name: &str, v: u64, note: String| {
        let _ = writeln!(out, "  {name:<13} {:>12}  {note}", b(v));
    };
    row(&mut out, "weights", e.weight_bytes, format!("{:?}", e.weight_bytes_source).to_lowercase());
    row(&mut out, "KV cache", e.kv_cache_bytes, format!("{} per token", b(e.kv_bytes_per_token)));
    if e.state_bytes_per_sequence > 0 {
        row(&mut out, "state", e.state_bytes, format!("recurrent, {} per sequence", b(e.state_bytes_per_sequence)));
    }
    row(&mut out, "activations", e.activation_bytes, "peak".into());
    let overhead = if e.overhead_bytes > 0 {
        "CUDA context, engine buffers"
    } else {
        "none: no CUDA context on Metal, or no layer on the GPU"
    };
    row(&mut out, "overhead", e.overhead_bytes, overhead.into());
    row(&mut out, "total", e.total_bytes, format!("of {}", b(e.capacity_bytes)));
    if let Some(r) = shared::engines::llamacpp::Report::of(e.engine_report.as_ref()) {
        let experts =
            if r.cpu_expert_bytes > 0 { format!(" (routed experts {})", b(r.cpu_expert_bytes)) } else { String::new() };
        row(
            &mut out,
            "host RAM",
            r.host_ram_bytes,
            format!(
                "CPU weights {}{experts}, KV on host {}, host compute {}{}",
                b(r.cpu_weight_bytes),
                b(r.cpu_kv_bytes.saturating_add(r.cpu_state_bytes)),
                b(r.host_compute_bytes),
                r.host_ram_limit_bytes.map(|ram| format!("; the host may use {}", b(ram))).unwrap_or_default()
            ),
        );
        // Ollama's `llama-server` line (an engine that launches another).
        if let Some(line) = launched {
            let _ = writeln!(out, "  {:<13} {line}", e.engine.id());
        }
        if let Some(fit) = fit {
            let _ = writeln!(out, "  --fit         {}", fit.summary());
        }
    }
    let _ = writeln!(out);
    if e.per_gpu.len() > 1 {
        let _ = writeln!(
            out,
            "  {:<4} {:<10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
            "GPU", "layers", "weights", "KV", "activ.", "overhead", "total", "capacity"
        );
        for g in &e.per_gpu {
            let _ = writeln!(
                out,
                "  {:<4} {:<10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}{}",
                g.index,
                format!("{}-{}", g.layers[0], g.layers[1].saturating_sub(1)),
                b(g.budget.weight_bytes),
                b(g.budget.kv_cache_bytes),
                b(g.budget.activation_bytes),
                b(g.budget.overhead_bytes),
                b(g.total_bytes),
                b(g.capacity_bytes),
                if g.fits { "" } else { "  OVER" }
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "{}", verdict_text(e, units));
    // The verdict leads with the outcome; the engine's own words follow it.
    if let Some(error) = e.engine_report.as_ref().and_then(|r| r.startup_error()) {
        let _ = writeln!(out, "  {} would print: {error}", e.engine.name());
    }
    if explain {
        let _ = writeln!(out, "\nHow each figure is derived:");
        for t in &e.terms {
            let value = match t.unit {
                TermUnit::Bytes => b(t.value),
                TermUnit::Count | TermUnit::Tokens => thousands(t.value),
            };
            let basis = match t.basis {
                Basis::Exact => "exact",
                Basis::EngineRule => "engine rule",
                Basis::Empirical => "empirical",
            };
            let _ = writeln!(out, "  {:<18} {:>16}  [{basis}] {}", t.name, value, t.formula);
        }
    }
    for w in &e.warnings {
        let _ = writeln!(out, "note: {w}");
    }
    out
}

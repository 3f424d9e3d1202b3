//! `cargo xtask bench-web`: time to interactive and re-render time of the
//! page in headless Chromium on localhost. Prints figures; asserts nothing.

use std::collections::HashMap;

use serde_json::json;

use crate::browser::{Driver, Page, sel, tools};
use crate::cli;
use crate::server::Server;

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    let median = v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let max = v.last().copied().unwrap_or(f64::NAN);
    format!("median {median:.1} ms, max {max:.1} ms over {} runs", v.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with `cargo xtask bench-web`"]
async fn bench_web() -> anyhow::Result<()> {
    let Some(tools) = tools() else { return Ok(()) };
    let server = Server::start(cli::dist()?, HashMap::new()).await?;
    let mut driver = Driver::start(&tools).await?;
    let page = driver.session(1280, 1000).await?;
    let mut tti = Vec::new();
    for i in 0..7 {
        page.open(&server.page(&format!("model=llama-3.1-8b&p={}", 2048 + i))).await?;
        let ms = page
            .client
            .execute(
                "const m = performance.getEntriesByName('headroom-ready')[0]; return m ? m.startTime : -1;",
                vec![],
            )
            .await?;
        tti.push(ms.as_f64().unwrap_or(f64::NAN));
    }
    // Re-render: change the weight format, then time to the first task after
    // the updates (measured inside the page), three ways (`arguments[1]`):
    // `timer`, a `setTimeout(…, 0)` (nested, so Chromium clamps it to 4 ms);
    // `layout`, a `MessageChannel` message (no clamp) after a forced style
    // and layout (`offsetHeight`): the page's own work up to paint; `message`,
    // that message without the layout: the wasm and the DOM updates alone.
    let script = "const [sel, values, mode, done] = [document.querySelector('[data-testid=\"format-select\"]'), arguments[0], arguments[1], arguments[arguments.length - 1]];\
        const later = f => { if (mode === 'timer') { setTimeout(f, 0); return; }\
          const ch = new MessageChannel(); ch.port1.onmessage = () => { if (mode === 'layout') document.body.offsetHeight; f(); };\
          ch.port2.postMessage(0); };\
        const times = []; let i = 0;\
        const step = () => { if (i >= values.length) { done(times); return; }\
          const before = document.querySelector('[data-testid=\"weight-bytes\"]').getAttribute('data-bytes');\
          const t0 = performance.now(); sel.value = values[i++]; sel.dispatchEvent(new Event('change', {bubbles: true}));\
          later(() => { const after = document.querySelector('[data-testid=\"weight-bytes\"]').getAttribute('data-bytes');\
            times.push(after === before ? -1 : performance.now() - t0); setTimeout(step, 30); }); };\
        step();";
    let values: Vec<&str> = ["q4_k_m", "bf16", "nf4", "fp8", "int8", "q8_0", "awq-int4", "bf16"].repeat(3);
    let times = page.client.execute_async(script, vec![json!(values), json!("timer")]).await?;
    let laid_out = page.client.execute_async(script, vec![json!(values), json!("layout")]).await?;
    let unlaid = page.client.execute_async(script, vec![json!(values), json!("message")]).await?;
    // The page's own work per change, as Chromium counts it
    // (`Performance.getMetrics`: script, style recalculation and layout
    // durations, CPU time of the renderer's main thread): unlike the wall
    // times above it does not include waiting for a busy machine's cores.
    page.client.issue_cmd(crate::browser::Cdp { cmd: "Performance.enable", params: json!({}) }).await?;
    let mut work: [Vec<f64>; 4] = Default::default();
    for value in &values {
        let before = page.metrics().await?;
        page.client.execute_async(script, vec![json!([value]), json!("layout")]).await?;
        let after = page.metrics().await?;
        let ms =
            |name: &str| 1000.0 * (after.get(name).copied().unwrap_or(0.0) - before.get(name).copied().unwrap_or(0.0));
        let (script_ms, style, layout) = (ms("ScriptDuration"), ms("RecalcStyleDuration"), ms("LayoutDuration"));
        for (list, v) in work.iter_mut().zip([script_ms, style, layout, script_ms + style + layout]) {
            list.push(v);
        }
    }
    println!("time to interactive (navigation start → first render): {}", stats(tti));
    for (what, list) in ["script", "style", "layout", "script + style + layout"].iter().zip(work) {
        println!("the page's own work per weight-format change, {what} (Performance.getMetrics): {}", stats(list));
    }
    for (what, times) in [
        ("re-render after a weight-format change (event → DOM updated)", times),
        ("the same, to a MessageChannel task after style and layout", laid_out),
        ("the same, to a MessageChannel task without layout", unlaid),
    ] {
        let renders: Vec<f64> =
            times.as_array().map(|a| a.iter().filter_map(|v| v.as_f64()).collect()).unwrap_or_default();
        let unchanged = renders.iter().filter(|t| **t < 0.0).count();
        println!(
            "{what}: {}{}",
            stats(renders.into_iter().filter(|t| *t >= 0.0).collect()),
            if unchanged > 0 { format!(" ({unchanged} changes did not update in time)") } else { String::new() }
        );
    }
    // Reading a dropped GGUF whose metadata block is 2 MB (issue 12): from
    // the file input's `change` to the new weight figure (a MutationObserver,
    // no timer), in the page: the reader bundle's `File.slice` reads, its
    // wasm parser and layout, the estimate and the render. Two files of
    // other weights take turns, so each drop changes the figure; the first
    // drop also fetches the reader bundle and is given apart.
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("headroom-bench-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let files = [dir.join("big-Q8_0.gguf"), dir.join("big-Q4_K.gguf")];
    big_gguf(&files[0], 8)?;
    big_gguf(&files[1], 12)?;
    page.open(&server.page("e=llama.cpp")).await?;
    let arm = "window.__t0 = null; window.__t1 = null;\
        document.querySelector(arguments[0]).addEventListener('change', () => {\
          window.__t0 = performance.now();\
          const figure = () => document.querySelector('[data-testid=\"weight-bytes\"]')?.getAttribute('data-bytes');\
          const before = figure();\
          const mo = new MutationObserver(() => { const now = figure();\
            if (now != null && now !== before) { window.__t1 = performance.now(); mo.disconnect(); } });\
          mo.observe(document.body, {subtree: true, childList: true, attributes: true});\
        }, {once: true, capture: true});";
    let mut reads = Vec::new();
    for i in 0..8 {
        page.client.execute(arm, vec![json!(sel("checkpoint-files"))]).await?;
        crate::checkpoint::drop_files(&page, std::slice::from_ref(&files[i % 2])).await?;
        page.wait_until("the dropped GGUF's weights are shown", async |p: &Page| {
            Ok(p.client.execute("return window.__t1 != null;", vec![]).await? == json!(true))
        })
        .await?;
        let ms = page.client.execute("return window.__t1 - window.__t0;", vec![]).await?;
        reads.push(ms.as_f64().unwrap_or(f64::NAN));
    }
    println!(
        "a dropped GGUF, 2 MB of metadata and 1,000 tensors (change → weights shown): {:.1} ms with the reader bundle's fetch, then {}",
        reads[0],
        stats(reads[1..].to_vec())
    );
    let _ = std::fs::remove_dir_all(&dir);
    page.close().await?;
    Ok(())
}

/// A GGUF header with a 2 MB metadata block (120,000 tokens of 9 bytes, as
/// the vocabularies of Qwen- and Llama-3-class GGUFs take) and 1,000 tensor
/// infos (250 layers of q, k, v and down projections), `down` in ggml type
/// `down_type`; the file is sparse past its header.
fn big_gguf(path: &std::path::Path, down_type: u32) -> anyhow::Result<()> {
    use crate::writer::{self, Kv};
    const Q8_0: u32 = 8;
    let bytes = |ty: u32, n: u64| if ty == Q8_0 { n / 32 * 34 } else { n / 256 * 144 };
    let tokens: Vec<&'static str> = (0..120_000).map(|i| &*Box::leak(format!("tok{i:06}").into_boxed_str())).collect();
    let names: Vec<(String, &'static [u64], u32, u64)> = (0..250)
        .flat_map(|l| {
            [
                (format!("blk.{l}.attn_q.weight"), &[4096u64, 4096][..], Q8_0, bytes(Q8_0, 4096 * 4096)),
                (format!("blk.{l}.attn_k.weight"), &[4096u64, 1024][..], Q8_0, bytes(Q8_0, 4096 * 1024)),
                (format!("blk.{l}.attn_v.weight"), &[4096u64, 1024][..], Q8_0, bytes(Q8_0, 4096 * 1024)),
                (format!("blk.{l}.ffn_down.weight"), &[14336u64, 4096][..], down_type, bytes(down_type, 14336 * 4096)),
            ]
        })
        .collect();
    let tensors: Vec<(&str, &[u64], u32, u64)> = names.iter().map(|(n, d, t, b)| (n.as_str(), *d, *t, *b)).collect();
    let kvs = [
        ("general.architecture", Kv::Str("llama")),
        ("llama.block_count", Kv::U32(250)),
        ("llama.embedding_length", Kv::U32(4096)),
        ("llama.attention.head_count", Kv::U32(32)),
        ("llama.attention.head_count_kv", Kv::U32(8)),
        ("llama.feed_forward_length", Kv::U32(14336)),
        ("llama.context_length", Kv::U32(8192)),
        ("tokenizer.ggml.tokens", Kv::ArrStr(tokens)),
    ];
    let (head, size) = writer::gguf(3, &kvs, &tensors);
    crate::checkpoint::write_sparse(path, &head, size)
}

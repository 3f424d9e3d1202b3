//! `cargo xtask bench-web`: time to interactive and re-render time of the
//! page in headless Chromium on localhost. Prints figures; asserts nothing.

use std::collections::HashMap;

use serde_json::json;

use crate::browser::{Driver, tools};
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
    // Re-render: change the weight format, wait for the DOM to settle (all
    // microtasks and the next macrotask), measured inside the page.
    let script = "const [sel, values, done] = [document.querySelector('[data-testid=\"format-select\"]'), arguments[0], arguments[arguments.length - 1]];\
        const times = []; let i = 0;\
        const step = () => { if (i >= values.length) { done(times); return; }\
          const before = document.querySelector('[data-testid=\"weight-bytes\"]').getAttribute('data-bytes');\
          const t0 = performance.now(); sel.value = values[i++]; sel.dispatchEvent(new Event('change', {bubbles: true}));\
          setTimeout(() => { const after = document.querySelector('[data-testid=\"weight-bytes\"]').getAttribute('data-bytes');\
            times.push(after === before ? -1 : performance.now() - t0); setTimeout(step, 30); }, 0); };\
        step();";
    let values: Vec<&str> = ["q4_k_m", "bf16", "nf4", "fp8", "int8", "q8_0", "awq-int4", "bf16"].repeat(3);
    let times = page.client.execute_async(script, vec![json!(values)]).await?;
    // The same changes, timed to a `MessageChannel` message instead of
    // `setTimeout(…, 0)` (a task as soon as the updates' microtasks are
    // done, without Chromium's 4 ms clamp of nested timers), after a forced
    // style and layout (`offsetHeight`): the page's own work up to paint.
    let unclamped = script
        .replace(
            "setTimeout(() => {",
            "const ch = new MessageChannel(); ch.port1.onmessage = () => { document.body.offsetHeight;",
        )
        .replace("setTimeout(step, 30); }, 0); };", "setTimeout(step, 30); }; ch.port2.postMessage(0); };");
    let laid_out = page.client.execute_async(&unclamped, vec![json!(values)]).await?;
    // And without the forced layout: the wasm and the DOM updates alone.
    let unlaid =
        page.client.execute_async(&unclamped.replace("document.body.offsetHeight;", ""), vec![json!(values)]).await?;
    println!("time to interactive (navigation start → first render): {}", stats(tti));
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
    page.close().await?;
    Ok(())
}

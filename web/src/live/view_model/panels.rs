//! The read-only live panels as HTML (set with `innerHTML`): a host's head,
//! its GPU cards with their timelines, the balance, the process table, a
//! probe's controls and run, "fits now" under the verdict, the fleet view and
//! the connect form. Pure and natively tested; far smaller in wasm than one
//! Leptos view per panel. Built with the page's one escaping builder
//! ([`crate::html::Html`]), so what an agent sends (hostnames, GPU and
//! process names, pods, probe labels) is text by type.
//!
//! Buttons carry `data-action` (and `data-gpu`, `data-bytes`); one delegated
//! click handler per container acts on them (`live::runtime::events`).

use crate::html::action::{HostAction, NowAction};
use crate::html::{Html, Markup};

use super::cards::{GpuCard, ProcRow, TL_HEIGHT_PX, TL_WIDTH_PX, Timeline};
use super::findings::FindingCard;
use super::fleet::FleetView;
use super::reality::{Balance, NowVerdict};
use crate::html::bar::bar;

/// What a host's head shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub name: String,
    pub state: &'static str,
    pub status: String,
    pub advice: Option<String>,
    pub sub: String,
    pub simulated: bool,
}

/// Name, state, actions (reconnect or disconnect, remove) and the advice.
pub fn head(head: &Head) -> Markup {
    let mut h = Html::new();
    h.raw("<div class=\"host-head\">").el("h3", "", &head.name);
    if head.simulated {
        h.raw("<span class=\"badge sim\" data-testid=\"live-simulated\">simulated</span>");
    }
    h.el("span", "host-sub", &head.sub)
        .raw("<span class=\"host-state\"")
        .attr("data-state", head.state)
        .raw(" data-testid=\"host-status\">")
        .t(&head.status)
        .raw("</span><span class=\"host-actions\">");
    if head.state == "live" {
        h.raw("<button type=\"button\" class=\"ghost\" data-testid=\"host-disconnect\"")
            .action(HostAction::Disconnect)
            .raw(">Disconnect</button>");
    } else {
        h.raw("<button type=\"button\" data-testid=\"host-reconnect\"")
            .action(HostAction::Reconnect)
            .raw(">Reconnect</button>");
    }
    h.raw("<button type=\"button\" class=\"ghost\" data-testid=\"host-remove\"").action(HostAction::Remove).raw(
        " \
         aria-label=\"Remove this host\">✕</button></span></div>",
    );
    if let Some(a) = &head.advice {
        h.raw("<p class=\"host-advice\" data-testid=\"host-advice\">").t(a).raw("</p>");
    }
    h.into_markup()
}

fn timeline(h: &mut Html, t: &Timeline) {
    h.raw("<figure class=\"timeline\" data-testid=\"live-timeline\"")
        .num("data-points", t.points as u64)
        .raw("><svg viewBox=\"0 0 ")
        .int(TL_WIDTH_PX)
        .raw(" ")
        .int(TL_HEIGHT_PX)
        .raw("\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"Memory over the last 10 minutes: ")
        .t(&t.caption)
        .raw("\"><path class=\"tl-area\"")
        .attr("d", &t.area)
        .raw("></path><path class=\"tl-line\"")
        .attr("d", &t.used)
        .raw("></path>");
    if let Some(y) = &t.plan_y {
        h.raw("<line class=\"tl-plan\" x1=\"0\"").num("x2", TL_WIDTH_PX).attr("y1", y).attr("y2", y).raw("></line>");
    }
    if let Some(x) = &t.now_x {
        h.raw("<line class=\"tl-now\" y1=\"0\"").num("y2", TL_HEIGHT_PX).attr("x1", x).attr("x2", x).raw("></line>");
    }
    for (x, title) in &t.marks {
        h.raw("<line class=\"tl-mark\" data-testid=\"live-finding-mark\" y1=\"0\"")
            .num("y2", TL_HEIGHT_PX)
            .attr("x1", x)
            .attr("x2", x)
            .raw("><title>")
            .t(title)
            .raw("</title></line>");
    }
    if !t.projection.is_empty() {
        h.raw("<path class=\"tl-projection\" data-testid=\"live-projection\"").attr("d", &t.projection).raw("></path>");
    }
    h.raw("</svg><figcaption><span>−10 min</span>")
        .el("span", "tl-caption", &t.caption)
        .el("span", "tl-plan-label", &t.plan_label)
        .el("span", "tl-projection-label", &t.projection_label)
        .raw(if t.now_x.is_some() { "<span>+2 min</span>" } else { "<span>now</span>" })
        .raw("</figcaption></figure>");
}

/// The agent's findings on one GPU, under its timeline.
pub fn findings(cards: &[FindingCard]) -> Markup {
    let mut h = Html::new();
    if cards.is_empty() {
        return h.into_markup();
    }
    h.raw("<div class=\"findings\" data-testid=\"live-findings\">");
    for c in cards {
        h.raw("<section class=\"finding ")
            .t(c.certainty)
            .raw("\" data-testid=\"live-finding\"")
            .attr("data-cause", c.cause)
            .raw("><h5>")
            .t(&format!("{}. {}", c.number, c.title))
            .raw(" <span class=\"certainty\">")
            .t(c.certainty)
            .raw("</span></h5>")
            .el("p", "evidence", &c.evidence)
            .raw("<p class=\"fix\"><b>Fix:</b> ")
            .t(&c.fix)
            .raw("</p>");
        for note in &c.notes {
            h.raw("<p class=\"plan-note\"><b>Your plan:</b> ").t(note).raw("</p>");
        }
        h.raw("</section>");
    }
    h.raw("</div>");
    h.into_markup()
}

/// One GPU card: `card` is `None` before the GPU's first reading.
pub fn gpu_card(index: u32, card: Option<&GpuCard>, tl: &Timeline, found: &[FindingCard], targeted: bool) -> Markup {
    let mut h = Html::new();
    h.raw(if targeted { "<article class=\"gpu-card targeted\"" } else { "<article class=\"gpu-card\"" })
        .raw(" data-testid=\"live-gpu\"")
        .num("data-index", index.into())
        .num("data-free", card.map_or(0, |c| c.free_bytes))
        .raw(">");
    if let Some(c) = card {
        h.raw("<header>").el("h4", "", &c.title);
        if c.simulated {
            h.raw("<span class=\"badge sim\">simulated</span>");
        }
        h.raw("</header>");
        bar(&mut h, "bar live-bar", &c.memory, &c.segments, None);
        h.raw("<p class=\"gpu-mem\" data-testid=\"live-gpu-memory\">")
            .t(&c.memory)
            .raw("</p><dl class=\"gpu-stats\"><div><dt>Utilisation</dt><dd data-testid=\"live-gpu-util\">")
            .t(&c.utilization)
            .raw("</dd></div><div><dt>Temperature</dt>")
            .el("dd", "", &c.temperature)
            .raw("</div><div><dt>Power</dt>")
            .el("dd", "", &c.power)
            .raw("</div></dl>");
    }
    timeline(&mut h, tl);
    h.markup(&findings(found));
    h.raw(if targeted {
        "<button type=\"button\" class=\"ghost\""
    } else {
        "<button type=\"button\" class=\"primary\""
    })
    .raw(" data-testid=\"use-gpu\"")
    .action(HostAction::UseGpu)
    .num("data-gpu", index.into())
    .flag("aria-pressed", targeted)
    .raw(if targeted { ">Stop checking the plan here" } else { ">Check my plan on this GPU" })
    .raw("</button></article>");
    h.into_markup()
}

/// The balance between a host's GPUs (empty with fewer than two).
pub fn balance(b: Option<&Balance>) -> Markup {
    let mut h = Html::new();
    let Some(b) = b else { return h.into_markup() };
    h.raw("<div class=\"balance\" data-testid=\"live-balance\"><h4>Balance</h4>").el("p", "", &b.text).raw(
        "<table><thead><tr><th>GPU</th><th class=\"num\">In use now</th><th class=\"num\">Plan</th></tr></thead>\
             <tbody>",
    );
    for (g, real, plan) in &b.rows {
        h.raw("<tr>").el("td", "", g).el("td", "num", real).el("td", "num", plan).raw("</tr>");
    }
    h.raw("</tbody></table></div>");
    h.into_markup()
}

/// Who holds memory; leftovers stand out. `live`: whether the host is
/// connected now (a disconnected host's list is the last one seen, or
/// unknown: never "no process").
pub fn processes(rows: &[ProcRow], live: bool) -> Markup {
    let mut h = Html::new();
    h.raw("<div class=\"procs\"><h4>Processes holding GPU memory</h4>");
    if !live {
        h.raw(if rows.is_empty() {
            "<p class=\"hint\" data-testid=\"processes-offline\">Not connected: the processes show once the agent answers.</p></div>"
        } else {
            "<p class=\"hint\" data-testid=\"processes-offline\">Not connected: the last list seen.</p>"
        });
        if rows.is_empty() {
            return h.into_markup();
        }
    }
    if rows.is_empty() {
        h.raw("<p class=\"hint\" data-testid=\"no-processes\">No process holds GPU memory.</p></div>");
        return h.into_markup();
    }
    h.raw(
        "<div class=\"table-wrap\" tabindex=\"0\" role=\"region\" aria-label=\"Processes (scrolls sideways)\"><table data-testid=\"process-table\"><thead><tr><th>GPU</th><th>PID</th>\
         <th>Process</th><th class=\"num\">Memory</th><th>Seen</th><th>Note</th></tr></thead><tbody>",
    );
    for r in rows {
        h.raw("<tr data-testid=\"process-row\"");
        if r.leftover {
            h.raw(" class=\"leftover\"");
        }
        h.flag("data-leftover", r.leftover)
            .num("data-bytes", r.bytes)
            .raw("><td>")
            .int(r.gpu.into())
            .raw("</td>")
            .el("td", "", &r.pid)
            .el("td", "", &r.name)
            .el("td", "num", &r.memory)
            .el("td", "", &r.since)
            .raw("<td class=\"note\">")
            .t(&r.note);
        if !r.launch.is_empty() {
            h.el("span", "launch", &r.launch);
        }
        // The plan those flags describe opens in the calculator.
        if let Some(query) = &r.plan_query {
            h.raw(" <a data-testid=\"process-plan\"").attr("href", &format!("?{query}")).raw(">open this plan</a>");
        }
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table></div></div>");
    h.into_markup()
}

/// A probe's run: progress, result and "use the measured context cost".
/// `fraction_pct` is 0–100.
pub fn probe_run(key: &str, fraction_pct: u32, progress: &str, result: Option<&str>, context: Option<u64>) -> Markup {
    let mut h = Html::new();
    h.raw("<div class=\"probe-run\"")
        .attr("data-state", key)
        .raw("><progress max=\"100\"")
        .num("value", fraction_pct.into())
        .raw(" data-testid=\"probe-progress-bar\" aria-label=\"Probe progress\"></progress><p data-testid=\"probe-progress\">")
        .t(progress)
        .raw("</p>");
    if let Some(r) = result {
        h.raw("<p class=\"probe-result\" data-testid=\"probe-result\"")
            .attr("data-state", key)
            .raw(">")
            .t(r)
            .raw("</p>");
    }
    if let Some(c) = context {
        h.raw("<button type=\"button\" data-testid=\"probe-use-context\"")
            .action(HostAction::UseContext)
            .num("data-bytes", c)
            .raw(">Use the measured context cost in “fits now”</button>");
    }
    h.raw("</div>");
    h.into_markup()
}

/// The probe panel's heading, the agent's limits and, when probes are
/// allowed, the GPU (`gpus`, `chosen` selected), start and cancel, and why
/// the last probe could not start (`error`). `host` is the panel's id.
pub fn probe_controls(
    host: u32,
    limits: &str,
    enabled: bool,
    gpus: &[u32],
    chosen: u32,
    running: bool,
    error: &str,
) -> Markup {
    let mut h = Html::new();
    h.raw("<h4>Probe the plan on a GPU</h4><p class=\"hint\" data-testid=\"probe-limits\">").t(limits).raw("</p>");
    if enabled {
        let select = ["probe-gpu-", &host.to_string()].concat();
        h.raw("<div class=\"inline\"><label")
            .attr("for", &select)
            .raw(">GPU</label><select")
            .attr("id", &select)
            .raw(" data-testid=\"probe-gpu\"")
            .action(HostAction::ProbeGpu)
            .raw(">");
        for &i in gpus {
            h.raw("<option").num("value", i.into());
            if i == chosen {
                h.raw(" selected");
            }
            h.raw(">GPU ").int(i.into()).raw("</option>");
        }
        h.raw("</select><button type=\"button\" class=\"primary\" data-testid=\"probe-start\"")
            .action(HostAction::ProbeStart);
        if running {
            h.raw(" disabled");
        }
        h.raw(">Allocate the plan for real, then free it</button>");
        if running {
            h.raw("<button type=\"button\" class=\"ghost\" data-testid=\"probe-cancel\"")
                .action(HostAction::ProbeCancel)
                .raw(">Cancel</button>");
        }
        h.raw("</div><p class=\"error\" role=\"alert\">").t(error).raw("</p>");
    }
    h.into_markup()
}

/// "Fits now" under the verdict, when a live GPU is the target: the answer,
/// the plan's bar over each real GPU, and the measured context term when
/// "fits now" uses it (`context_term`).
pub fn now(v: &NowVerdict, context_term: Option<&str>) -> Markup {
    let key = v.key();
    let mut h = Html::new();
    h.raw("<div")
        .attr("class", &["card now ", key].concat())
        .raw("><p class=\"verdict-now\" data-testid=\"verdict-now\"")
        .attr("data-fits", key)
        .raw(" role=\"status\">")
        .t(&v.text)
        .raw("</p>");
    for b in &v.bars {
        h.raw("<div class=\"bar-row\" data-testid=\"now-bar\">");
        b.write(&mut h);
        h.raw("</div>");
    }
    if let Some(term) = context_term {
        h.raw("<p class=\"term\" data-testid=\"context-override\">")
            .t(term)
            .raw(" <button type=\"button\" class=\"ghost\"")
            .action(NowAction::ContextClear)
            .raw(">Use the assumption again</button></p>");
    }
    h.raw("<button type=\"button\" class=\"ghost\" data-testid=\"clear-target\"").action(NowAction::ClearTarget).raw(
        ">\
         Stop checking against the live GPU</button></div>",
    );
    h.into_markup()
}

/// The fleet view: a headline, then each host with its GPUs, the plan laid
/// over each. `source` names the agent that relays, `error` why the last
/// round failed (the last good view stays shown under it).
pub fn fleet(v: &FleetView, source: &str, error: &str) -> Markup {
    let mut h = Html::new();
    h.raw(
        "<div class=\"card fleet\" data-testid=\"fleet\"><h3>Fleet: where the plan fits now</h3>\
         <p class=\"verdict-now\" role=\"status\" data-testid=\"fleet-summary\"",
    )
    .num("data-fits", v.fits as u64)
    .num("data-stale", v.stale as u64)
    .raw(">")
    .t(&v.headline)
    .raw("</p><p class=\"hint\">From the Prometheus of ")
    .t(source)
    .raw(". Stale: no longer scraped.</p>");
    if !error.is_empty() {
        h.raw("<p class=\"error\" role=\"alert\" data-testid=\"fleet-error\">").t(error).raw("</p>");
    }
    for host in &v.hosts {
        h.raw("<div class=\"fleet-host\" data-testid=\"fleet-host\"")
            .attr("data-host", &host.name)
            .num("data-fits", host.fits as u64)
            .raw("><h4>")
            .t(&host.name)
            .raw(" <span class=\"host-sub\">")
            .int(host.fits as u64)
            .raw(" of ")
            .int(host.rows.len() as u64)
            .raw(" GPUs fit</span></h4>");
        for r in &host.rows {
            let key = r.standing.key();
            h.raw("<div")
                .attr("class", &["bar-row fleet-gpu ", key].concat())
                .raw(" data-testid=\"fleet-gpu\"")
                .attr("data-state", key)
                .attr("data-uuid", &r.uuid)
                .raw(">");
            r.bar.write(&mut h);
            h.raw("</div>");
        }
        h.raw("</div>");
    }
    h.raw("</div>");
    h.into_markup()
}

/// A host's panel, empty: the head, the body and the probe, each drawn into
/// by id (`live-host-ID-head`, …) so one part changes without the others.
pub fn host_shell(id: u32) -> Markup {
    let id = id.to_string();
    let mut h = Html::new();
    for part in ["-head", "-body", "-probe"] {
        h.raw("<div class=\"live-html\"").attr("id", &["live-host-", &id, part].concat()).raw("></div>");
    }
    h.into_markup()
}

/// The probe part of host `id`'s panel: the controls and the run, each drawn
/// into by id.
pub fn probe_shell(id: u32) -> Markup {
    let id = id.to_string();
    let mut h = Html::new();
    h.raw("<div class=\"probe\" data-testid=\"probe-panel\">");
    for part in ["-probe-controls", "-probe-run"] {
        h.raw("<div class=\"live-html\"").attr("id", &["live-host-", &id, part].concat()).raw("></div>");
    }
    h.raw("</div>");
    h.into_markup()
}

/// "Connect to a GPU host": the agent's address and token, "remember", and
/// how to reach a lab machine when the browser will not.
pub fn connect_form(address: &str, remembered: bool) -> Markup {
    let mut h = Html::new();
    h.raw(
        "<form class=\"connect-form\" id=\"live-connect-form\">\
         <div class=\"field\"><label for=\"agent-url\">Agent address</label>\
         <input id=\"agent-url\" type=\"text\" data-testid=\"agent-url\" placeholder=\"127.0.0.1:7878\"",
    )
    .attr("value", address)
    .raw(
        "></div>\
         <div class=\"field\"><label for=\"agent-token\">Token</label>\
         <input id=\"agent-token\" type=\"password\" autocomplete=\"off\" data-testid=\"agent-token\" \
         placeholder=\"printed by headroom serve\"></div>\
         <button type=\"submit\" class=\"primary\" data-testid=\"agent-connect\">Connect</button>\
         <label class=\"check\"><input type=\"checkbox\" id=\"agent-remember\" data-testid=\"agent-remember\"",
    );
    if remembered {
        h.raw(" checked");
    }
    h.raw(
        ">Remember on this browser</label>\
         <p class=\"error\" role=\"alert\" id=\"live-connect-error\" data-testid=\"connect-error\"></p></form>\
         <p class=\"hint\">Run <code>headroom serve</code> on the GPU host. The token stays in this tab (never in the \
         share link); “remember” keeps it in this browser's storage.</p>\
         <details class=\"more\"><summary>Cannot connect? Reaching a lab machine</summary><ul class=\"hint\">\
         <li><strong>SSH tunnel</strong> (simplest, safest): <code>ssh -N -L 7878:127.0.0.1:7878 gpu-host</code>, \
         then connect to 127.0.0.1:7878 or open http://127.0.0.1:7878/ on your machine.</li>\
         <li><strong>Open the page from the agent</strong>: the URL <code>headroom serve</code> prints (with \
         <code>#token=…</code>) connects by itself: same origin, nothing for the browser to block.</li>\
         <li><strong>TLS</strong>: an https:// page may not open plain ws:// to a network address (mixed content). \
         Start the agent with <code>--tls-cert</code>/<code>--tls-key</code> and connect with wss://; \
         add <code>--allow-origin</code> with this page's origin.</li>\
         <li>Chrome and Firefox may ask permission before a website reaches local-network addresses; allow it, \
         or use the tunnel.</li></ul></details>",
    );
    h.into_markup()
}

#[cfg(test)]
mod tests {
    use super::super::cards::{gpu_card as card_of, process_rows, timeline as timeline_of};
    use super::super::fleet::view;
    use super::super::host::HostModel;
    use super::super::host::fixtures::*;
    use super::super::reality::{balance as balance_of, verdict_now};
    use super::*;
    use crate::live::wire;
    use shared::protocol::{Field, FleetGpu, PodRef, ServerMessage};
    use shared::units::{GIB, UnitSystem};

    #[test]
    fn text_and_attributes_are_escaped() {
        let rows = [ProcRow {
            gpu: 0,
            pid: "7".into(),
            name: "<script>alert(1)</script>".into(),
            memory: "1 GiB".into(),
            bytes: GIB,
            since: String::new(),
            leftover: true,
            note: "\"x\"".into(),
            launch: "vLLM · <b>TP</b> 2".into(),
            plan_query: Some("v=2&hf=\"><script>".into()),
        }];
        let html = processes(&rows, true).into_string();
        assert!(!html.contains("<script>") && html.contains("&lt;script&gt;") && html.contains("&quot;x&quot;"));
        assert!(html.contains("<span class=\"launch\">vLLM · &lt;b&gt;TP&lt;/b&gt; 2</span>"), "{html}");
        assert!(html.contains("href=\"?v=2&amp;hf=&quot;&gt;&lt;script&gt;\""), "{html}");
        assert!(html.contains("data-testid=\"process-row\" class=\"leftover\" data-leftover=\"true\""), "{html}");
        assert!(processes(&[], true).as_str().contains("no-processes"));
        assert!(processes(&[], false).as_str().contains("processes-offline"));
        assert!(!processes(&[], false).as_str().contains("no-processes"));
    }

    #[test]
    fn a_card_carries_its_test_ids_and_its_action() {
        let mut h = HostModel::new("ws://lab1:7878/ws");
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        for t in 0..3 {
            h.apply(ServerMessage::Sample(sample(t, &[(G24, 12 * GIB, 87, &[])])));
        }
        let c = h.reading(0).map(|g| card_of(&h, g, UnitSystem::Binary));
        let tl = timeline_of(&h, 0, Some(4 * GIB), &[], UnitSystem::Binary);
        let html = gpu_card(0, c.as_ref(), &tl, &[], true).into_string();
        for want in [
            "data-testid=\"live-gpu\" data-index=\"0\"",
            "data-testid=\"live-gpu-memory\"",
            "data-testid=\"live-gpu-util\">87 % busy",
            "data-testid=\"live-timeline\" data-points=\"3\"",
            "<svg viewBox=\"0 0 320 80\" preserveAspectRatio=\"none\"",
            "class=\"tl-plan\" x1=\"0\" x2=\"320\" y1=",
            "data-action=\"use-gpu\" data-gpu=\"0\" aria-pressed=\"true\"",
            "gpu-card targeted",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
        let empty = gpu_card(1, None, &timeline_of(&h, 1, None, &[], UnitSystem::Binary), &[], false);
        assert!(empty.as_str().contains("data-points=\"0\"") && empty.as_str().contains("aria-pressed=\"false\""));
    }

    #[test]
    fn head_and_probe_run_offer_the_right_buttons() {
        let mut h = Head {
            name: "lab<1>".into(),
            state: "live",
            status: "live".into(),
            advice: None,
            sub: "simulated GPUs".into(),
            simulated: true,
        };
        let live = head(&h).into_string();
        assert!(live.contains("lab&lt;1&gt;") && live.contains("host-disconnect") && !live.contains("host-reconnect"));
        assert!(live.contains("live-simulated") && live.contains("data-action=\"remove\""));
        h.state = "refused";
        h.advice = Some("Copy the token".into());
        let refused = head(&h).into_string();
        assert!(refused.contains("host-reconnect") && refused.contains("data-testid=\"host-advice\">Copy the token"));
        let run = probe_run("done", 100, "Finished", Some("The plan fits"), Some(512)).into_string();
        assert!(run.contains("data-testid=\"probe-result\" data-state=\"done\">The plan fits"));
        assert!(run.contains("data-action=\"use-context\" data-bytes=\"512\""));
        assert!(!probe_run("running", 40, "Step 1", None, None).as_str().contains("probe-result"));
        let controls = probe_controls(3, "limits", true, &[0, 1], 1, true, "").into_string();
        assert!(controls.contains("<label for=\"probe-gpu-3\">GPU</label><select id=\"probe-gpu-3\""), "{controls}");
        assert!(controls.contains("<option value=\"1\" selected>GPU 1</option>") && controls.contains(" disabled>"));
        assert!(controls.contains("data-action=\"probe-cancel\""));
        assert!(!probe_controls(3, "off", false, &[0], 0, false, "").as_str().contains("<select"));
    }

    /// What a hostile agent (or a hostile process on its GPUs) may send:
    /// markup, and quotes that would close an attribute.
    const HOSTILE: &str = "<img src=x onerror=alert(1)>\" onmouseover=\"pwn(2)' onfocus='pwn(3)";
    const ESCAPED: &str = "&lt;img src=x onerror=alert(1)&gt;&quot; onmouseover=&quot;pwn(2)&#39; onfocus=&#39;pwn(3)";

    fn assert_inert(panel: &str, html: &str) {
        assert!(html.contains(ESCAPED), "{panel}: the hostile text is shown, escaped: {html}");
        for live in ["<img", "\" onmouseover", "' onfocus", "=\"pwn", "='pwn"] {
            assert!(!html.contains(live), "{panel}: `{live}` reached the markup: {html}");
        }
    }

    /// The agent's finding of a process growing on GPU 0 at `t_s`.
    fn growing(t_s: u64, text: &str) -> shared::protocol::Findings {
        use shared::protocol::{Finding, FindingCause, FindingCertainty, Findings, Growth};
        Findings {
            seq: t_s,
            timestamp_ms: t_s * 1_000,
            findings: vec![Finding {
                cause: FindingCause::Growing,
                number: 2,
                gpu: 0,
                pid: Some(41),
                process: Some(text.into()),
                certainty: FindingCertainty::Likely,
                since_ms: 0,
                found_ms: t_s * 1_000,
                bytes: 4 * GIB,
                gpu_total_bytes: G24,
                evidence: text.into(),
                fix: text.into(),
                growth: Some(Growth {
                    bytes_per_s: 256 << 20,
                    climbed_bytes: 2 * GIB,
                    steps: 6,
                    free_bytes: 15 * GIB,
                    seconds_to_capacity: 60,
                }),
                spread: vec![],
            }],
        }
    }

    #[test]
    fn a_growing_process_is_marked_projected_and_explained_with_the_plan() {
        let units = UnitSystem::Binary;
        let mut h = HostModel::new("ws://lab1:7878/ws");
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        for t in 1..=3 {
            h.apply(ServerMessage::Sample(sample(t, &[(G24, (4 + t) * GIB, 80, &[(41, "python3", (4 + t) * GIB)])])));
        }
        let none = timeline_of(&h, 0, None, &[], units);
        assert!(none.projection.is_empty() && none.marks.is_empty() && none.now_x.is_none());
        h.apply(ServerMessage::Findings(growing(3, "python3")));
        let found = super::super::findings::on_gpu(&h, 0);
        let tl = timeline_of(&h, 0, None, &found, units);
        // Ten minutes past and two ahead over 320 px: now is at 266.6 px; at
        // 256 MiB/s the 15 GiB free run out in 60 s, half the projection.
        assert_eq!(tl.now_x.as_deref(), Some("266.6"));
        assert!(tl.projection.starts_with("M266.6 ") && tl.projection.contains(" L293.3 "), "{}", tl.projection);
        assert_eq!(tl.marks, [("266.6".to_owned(), "2. found here".to_owned())]);
        assert_eq!(tl.projection_label, "full in about 1 min 0 s");
        let model = shared::model::Model::preset("llama-2-7b").expect("preset");
        let e =
            shared::estimate::estimate(&model, shared::estimate::Scenario::default().validate().expect("a valid plan"));
        let plan = shared::live::PlanFacts::of(&model, &e);
        let cards = super::super::findings::cards(&found, Some(&plan));
        assert_eq!((cards[0].number, cards[0].title, cards[0].certainty), (2, "Growing during generation", "likely"));
        assert!(cards[0].notes[0].contains("512.00 KiB of KV cache per token"), "{:?}", cards[0].notes);
        let html = gpu_card(0, None, &tl, &cards, false).into_string();
        assert!(html.contains("data-testid=\"live-finding\" data-cause=\"growing\""), "{html}");
        assert!(html.contains("data-testid=\"live-projection\""), "{html}");
        // A newer agent's cause is skipped, not shown as something else.
        let mut newer = growing(4, "python3");
        newer.findings[0].cause = shared::protocol::FindingCause::Unknown;
        h.apply(ServerMessage::Findings(newer));
        assert!(super::super::findings::on_gpu(&h, 0).is_empty());
    }

    #[test]
    fn hostile_names_from_an_agent_arrive_escaped_in_every_live_panel() {
        let units = UnitSystem::Binary;
        let mut w = welcome(&[G24, G24]);
        w.host.hostname = HOSTILE.into();
        w.host.driver_version = Field::Value(HOSTILE.into());
        for g in &mut w.host.gpus {
            g.name = Field::Value(HOSTILE.into());
        }
        // As the bytes arrive: encoded by the agent's types, read by the page's.
        let arrive = |m: ServerMessage| wire::read(&m.encode()).expect("a message").expect("a known type");
        let mut h = HostModel::new("ws://lab1:7878/ws");
        h.apply(arrive(ServerMessage::Welcome(w)));
        let procs: &[Proc] = &[(41, HOSTILE, 4 * GIB)];
        let mut s = sample(1, &[(G24, 4 * GIB, 10, procs), (G24, 2 * GIB, 10, procs)]);
        if let Field::Value(list) = &mut s.gpus[1].processes {
            let pod = PodRef { uid: HOSTILE.into(), namespace: None, name: None, container: None };
            list[0].pod = Some(pod);
            list[0].container = Some(HOSTILE.into());
        }
        // A launch whose every text is hostile: model, flag, value, the plan's query.
        if let Field::Value(list) = &mut s.gpus[0].processes {
            list[0].launch = Some(shared::protocol::Launch {
                engine: shared::protocol::LaunchEngine::Vllm,
                model: Some(HOSTILE.into()),
                flags: vec![shared::protocol::LaunchFlag { flag: HOSTILE.into(), value: HOSTILE.into() }],
                plan_query: Some(HOSTILE.into()),
                predicted_bytes: Some(4 * GIB),
            });
        }
        h.apply(arrive(ServerMessage::Sample(s)));

        let name = h.name();
        assert_eq!(name, HOSTILE);
        assert_inert(
            "head",
            head(&Head {
                name: name.clone(),
                state: "live",
                status: name.clone(),
                advice: Some(name.clone()),
                sub: name.clone(),
                simulated: true,
            })
            .as_str(),
        );
        let g = h.reading(0).expect("reading").clone();
        h.apply(arrive(ServerMessage::Findings(growing(1, HOSTILE))));
        let found = super::super::findings::on_gpu(&h, 0);
        let tl = timeline_of(&h, 0, Some(GIB), &found, units);
        let cards = super::super::findings::cards(&found, None);
        assert_inert("gpu card", gpu_card(0, Some(&card_of(&h, &g, units)), &tl, &cards, false).as_str());
        let procs = processes(&process_rows(&h, units), true);
        assert_inert("processes", procs.as_str());
        assert!(
            procs.as_str().contains("<span class=\"launch\">vLLM · ")
                && procs.as_str().contains("data-testid=\"process-plan\""),
            "the hostile launch is shown: {}",
            procs.as_str()
        );
        let model = shared::model::Model::preset("llama-3.2-1b").expect("preset");
        let e =
            shared::estimate::estimate(&model, shared::estimate::Scenario::default().validate().expect("a valid plan"));
        let e: Vec<shared::live::PlanGpu> = e.per_gpu.iter().map(shared::live::PlanGpu::from).collect();
        let b = balance_of(&h, Some(&e), units).expect("two GPUs");
        let b = Balance { rows: b.rows.into_iter().map(|(_, u, p)| (HOSTILE.to_owned(), u, p)).collect(), ..b };
        assert_inert("balance", balance(Some(&b)).as_str());
        let v = verdict_now(&e, &h, 0, None, units);
        assert_inert("fits now", now(&v, Some(HOSTILE)).as_str());
        assert_inert("probe run", probe_run(HOSTILE, 50, HOSTILE, Some(HOSTILE), Some(1)).as_str());
        assert_inert("probe controls", probe_controls(1, HOSTILE, true, &[0], 0, false, HOSTILE).as_str());
        let fleet_gpu = FleetGpu {
            host: HOSTILE.into(),
            instance: HOSTILE.into(),
            gpu: HOSTILE.into(),
            uuid: HOSTILE.into(),
            model: HOSTILE.into(),
            total_bytes: 48 * GIB,
            free_bytes: 40 * GIB,
            used_bytes: 8 * GIB,
            reserved_bytes: None,
            stale: false,
        };
        assert_inert("fleet", fleet(&view(&[fleet_gpu], Some(&e), units), HOSTILE, HOSTILE).as_str());
        assert_inert("connect form", connect_form(HOSTILE, true).as_str());
    }

    #[test]
    fn now_and_the_shells_keep_their_ids() {
        let units = UnitSystem::Binary;
        let mut h = HostModel::new("ws://lab1:7878/ws");
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        h.apply(ServerMessage::Sample(sample(1, &[(G24, 0, 0, &[])])));
        let model = shared::model::Model::preset("llama-3.2-1b").expect("preset");
        let e =
            shared::estimate::estimate(&model, shared::estimate::Scenario::default().validate().expect("a valid plan"));
        let e: Vec<shared::live::PlanGpu> = e.per_gpu.iter().map(shared::live::PlanGpu::from).collect();
        let html = now(&verdict_now(&e, &h, 0, None, units), Some("term")).into_string();
        assert!(html.starts_with("<div class=\"card now yes\"><p class=\"verdict-now\" data-testid=\"verdict-now\" data-fits=\"yes\" role=\"status\">"), "{html}");
        assert!(html.contains("data-testid=\"now-bar\"") && html.contains("title=\"real capacity\""));
        assert!(html.contains("data-testid=\"context-override\">term <button"));
        assert_eq!(
            host_shell(4).as_str(),
            "<div class=\"live-html\" id=\"live-host-4-head\"></div><div class=\"live-html\" id=\"live-host-4-body\"></div>\
             <div class=\"live-html\" id=\"live-host-4-probe\"></div>"
        );
        assert!(probe_shell(4).as_str().contains("id=\"live-host-4-probe-run\""));
        let form = connect_form("gpu1:7878", false).into_string();
        assert!(form.contains("placeholder=\"127.0.0.1:7878\" value=\"gpu1:7878\"></div>"));
        assert!(
            form.contains("data-testid=\"agent-remember\">Remember")
                && connect_form("x", true).as_str().contains("\" checked>")
        );
    }
}

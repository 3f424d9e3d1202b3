//! The read-only live panels as HTML strings (set with `innerHTML`): a host's
//! head, its GPU cards with their timelines, the balance, the process table
//! and a probe's run. Pure and natively tested; far smaller in wasm than one
//! Leptos view per panel. Every text and attribute goes through [`esc`].
//!
//! Buttons carry `data-action` (and `data-gpu`, `data-bytes`); one delegated
//! click handler per host panel acts on them ([`crate::live::runtime`]).

use std::fmt::Write;

use super::cards::{GpuCard, LiveSegment, ProcRow, TL_HEIGHT_PX, TL_WIDTH_PX, Timeline};
use super::fleet::FleetView;
use super::reality::Balance;

/// Escapes text for HTML content and quoted attributes (the page's one escaper).
pub use crate::vm::html::escape_html as esc;

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
pub fn head(h: &Head) -> String {
    let mut s = format!("<div class=\"host-head\"><h3>{}</h3>", esc(&h.name));
    if h.simulated {
        s.push_str("<span class=\"badge sim\" data-testid=\"live-simulated\">simulated</span>");
    }
    let _ = write!(
        s,
        "<span class=\"host-sub\">{}</span><span class=\"host-state\" data-state=\"{}\" data-testid=\"host-status\">{}</span>\
         <span class=\"host-actions\">{}<button type=\"button\" class=\"ghost\" data-testid=\"host-remove\" \
         data-action=\"remove\" aria-label=\"Remove this host\">✕</button></span></div>",
        esc(&h.sub),
        h.state,
        esc(&h.status),
        if h.state == "live" {
            "<button type=\"button\" class=\"ghost\" data-testid=\"host-disconnect\" data-action=\"disconnect\">Disconnect</button>"
        } else {
            "<button type=\"button\" data-testid=\"host-reconnect\" data-action=\"reconnect\">Reconnect</button>"
        }
    );
    if let Some(a) = &h.advice {
        let _ = write!(s, "<p class=\"host-advice\" data-testid=\"host-advice\">{}</p>", esc(a));
    }
    s
}

fn timeline(t: &Timeline) -> String {
    let mut s = format!(
        "<figure class=\"timeline\" data-testid=\"live-timeline\" data-points=\"{}\"><svg viewBox=\"0 0 {TL_WIDTH_PX} \
         {TL_HEIGHT_PX}\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"Memory over the last 10 minutes: {}\">\
         <path class=\"tl-area\" d=\"{}\"></path><path class=\"tl-line\" d=\"{}\"></path>",
        t.points,
        esc(&t.caption),
        esc(&t.area),
        esc(&t.used)
    );
    if let Some(y) = &t.plan_y {
        let y = esc(y);
        let _ = write!(s, "<line class=\"tl-plan\" x1=\"0\" x2=\"{TL_WIDTH_PX}\" y1=\"{y}\" y2=\"{y}\"></line>");
    }
    let _ = write!(
        s,
        "</svg><figcaption><span>−10 min</span><span class=\"tl-caption\">{}</span><span class=\"tl-plan-label\">{}\
         </span><span>now</span></figcaption></figure>",
        esc(&t.caption),
        esc(&t.plan_label)
    );
    s
}

/// One GPU card: `card` is `None` before the GPU's first reading.
pub fn gpu_card(index: u32, card: Option<&GpuCard>, tl: &Timeline, targeted: bool) -> String {
    let mut s = format!(
        "<article class=\"gpu-card{}\" data-testid=\"live-gpu\" data-index=\"{index}\" data-free=\"{}\">",
        if targeted { " targeted" } else { "" },
        card.map_or(0, |c| c.free_bytes)
    );
    if let Some(c) = card {
        let _ = write!(s, "<header><h4>{}</h4>", esc(&c.title));
        if c.simulated {
            s.push_str("<span class=\"badge sim\">simulated</span>");
        }
        let _ = write!(s, "</header><div class=\"bar live-bar\" role=\"img\" aria-label=\"{}\">", esc(&c.memory));
        for seg in &c.segments {
            let _ = write!(
                s,
                "<span class=\"seg {}\" style=\"width:{}\" title=\"{}\"></span>",
                seg.class,
                esc(&seg.width),
                esc(&seg.title)
            );
        }
        let _ = write!(
            s,
            "</div><p class=\"gpu-mem\" data-testid=\"live-gpu-memory\">{}</p><dl class=\"gpu-stats\"><div><dt>\
             Utilisation</dt><dd data-testid=\"live-gpu-util\">{}</dd></div><div><dt>Temperature</dt><dd>{}</dd></div>\
             <div><dt>Power</dt><dd>{}</dd></div></dl>",
            esc(&c.memory),
            esc(&c.utilization),
            esc(&c.temperature),
            esc(&c.power)
        );
    }
    s.push_str(&timeline(tl));
    let _ = write!(
        s,
        "<button type=\"button\" class=\"{}\" data-testid=\"use-gpu\" data-action=\"use-gpu\" data-gpu=\"{index}\" \
         aria-pressed=\"{targeted}\">{}</button></article>",
        if targeted { "ghost" } else { "primary" },
        if targeted { "Stop checking the plan here" } else { "Check my plan on this GPU" }
    );
    s
}

/// The balance between a host's GPUs (empty with fewer than two).
pub fn balance(b: Option<&Balance>) -> String {
    let Some(b) = b else { return String::new() };
    let mut s = format!(
        "<div class=\"balance\" data-testid=\"live-balance\"><h4>Balance</h4><p>{}</p><table><thead><tr><th>GPU</th>\
         <th class=\"num\">In use now</th><th class=\"num\">Plan</th></tr></thead><tbody>",
        esc(&b.text)
    );
    for (g, real, plan) in &b.rows {
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(g),
            esc(real),
            esc(plan)
        );
    }
    s.push_str("</tbody></table></div>");
    s
}

/// Who holds memory; leftovers stand out.
pub fn processes(rows: &[ProcRow]) -> String {
    let mut s = "<div class=\"procs\"><h4>Processes holding GPU memory</h4>".to_owned();
    if rows.is_empty() {
        s.push_str("<p class=\"hint\" data-testid=\"no-processes\">No process holds GPU memory.</p></div>");
        return s;
    }
    s.push_str(
        "<div class=\"table-wrap\"><table data-testid=\"process-table\"><thead><tr><th>GPU</th><th>PID</th>\
         <th>Process</th><th class=\"num\">Memory</th><th>Seen</th><th></th></tr></thead><tbody>",
    );
    for r in rows {
        let _ = write!(
            s,
            "<tr data-testid=\"process-row\"{} data-leftover=\"{}\" data-bytes=\"{}\"><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td class=\"note\">{}</td></tr>",
            if r.leftover { " class=\"leftover\"" } else { "" },
            r.leftover,
            r.bytes,
            r.gpu,
            esc(&r.pid),
            esc(&r.name),
            esc(&r.memory),
            esc(&r.since),
            esc(&r.note)
        );
    }
    s.push_str("</tbody></table></div></div>");
    s
}

/// A probe's run: progress, result and "use the measured context cost".
/// `fraction_pct` is 0–100.
pub fn probe_run(key: &str, fraction_pct: u32, progress: &str, result: Option<&str>, context: Option<u64>) -> String {
    let mut s = format!(
        "<div class=\"probe-run\" data-state=\"{key}\"><progress max=\"100\" value=\"{fraction_pct}\" \
         data-testid=\"probe-progress-bar\" aria-label=\"Probe progress\"></progress><p data-testid=\"probe-progress\">\
         {}</p>",
        esc(progress)
    );
    if let Some(r) = result {
        let _ = write!(s, "<p class=\"probe-result\" data-testid=\"probe-result\" data-state=\"{key}\">{}</p>", esc(r));
    }
    if let Some(c) = context {
        let _ = write!(
            s,
            "<button type=\"button\" data-testid=\"probe-use-context\" data-action=\"use-context\" data-bytes=\"{c}\">\
             Use the measured context cost in “fits now”</button>"
        );
    }
    s.push_str("</div>");
    s
}

/// The fleet view: a headline, then each host with its GPUs, the plan laid
/// over each. `source` names the agent that relays, `error` why the last
/// round failed (the last good view stays shown under it).
pub fn fleet(v: &FleetView, source: &str, error: &str) -> String {
    let mut s = format!(
        "<div class=\"card fleet\" data-testid=\"fleet\"><h3>Fleet: where the plan fits now</h3>\
         <p class=\"verdict-now\" role=\"status\" data-testid=\"fleet-summary\" data-fits=\"{}\" data-stale=\"{}\">{}</p>\
         <p class=\"hint\">From the Prometheus of {}. Stale: no longer scraped.</p>",
        v.fits,
        v.stale,
        esc(&v.headline),
        esc(source)
    );
    if !error.is_empty() {
        let _ = write!(s, "<p class=\"error\" role=\"alert\" data-testid=\"fleet-error\">{}</p>", esc(error));
    }
    for h in &v.hosts {
        let _ = write!(
            s,
            "<div class=\"fleet-host\" data-testid=\"fleet-host\" data-host=\"{}\" data-fits=\"{}\"><h4>{} \
             <span class=\"host-sub\">{} of {} GPUs fit</span></h4>",
            esc(&h.name),
            h.fits,
            esc(&h.name),
            h.fits,
            h.rows.len()
        );
        for r in &h.rows {
            let _ = write!(
                s,
                "<div class=\"bar-row fleet-gpu {}\" data-testid=\"fleet-gpu\" data-state=\"{}\" data-uuid=\"{}\">\
                 <div class=\"bar-label\"><span>{}</span><span>{}</span></div>{}</div>",
                r.standing.key(),
                r.standing.key(),
                esc(&r.uuid),
                esc(&r.label),
                esc(&r.summary),
                bar(&r.segments, &r.summary)
            );
        }
        s.push_str("</div>");
    }
    s.push_str("</div>");
    s
}

fn bar(segments: &[LiveSegment], label: &str) -> String {
    let mut s = format!("<div class=\"bar\" role=\"img\" aria-label=\"{}\">", esc(label));
    for seg in segments {
        let _ = write!(
            s,
            "<span class=\"seg {}\" style=\"width:{}\" title=\"{}\"></span>",
            seg.class,
            esc(&seg.width),
            esc(&seg.title)
        );
    }
    s.push_str("</div>");
    s
}

#[cfg(test)]
mod tests {
    use super::super::cards::{gpu_card as card_of, timeline as timeline_of};
    use super::super::host::HostModel;
    use super::super::host::fixtures::*;
    use super::*;
    use crate::live::decode::ServerMessage;
    use shared::units::{GIB, UnitSystem};

    #[test]
    fn text_and_attributes_are_escaped() {
        assert_eq!(esc(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        let rows = [ProcRow {
            gpu: 0,
            pid: "7".into(),
            name: "<script>alert(1)</script>".into(),
            memory: "1 GiB".into(),
            bytes: GIB,
            since: String::new(),
            leftover: true,
            note: "\"x\"".into(),
        }];
        let html = processes(&rows);
        assert!(!html.contains("<script>") && html.contains("&lt;script&gt;") && html.contains("&quot;x&quot;"));
        assert!(html.contains("data-testid=\"process-row\" class=\"leftover\" data-leftover=\"true\""), "{html}");
        assert!(processes(&[]).contains("no-processes"));
    }

    #[test]
    fn a_card_carries_its_test_ids_and_its_action() {
        let mut h = HostModel::new("ws://lab1:7878/ws");
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        for t in 0..3 {
            h.apply(ServerMessage::Sample(sample(t, &[(G24, 12 * GIB, 87, &[])])));
        }
        let c = h.reading(0).map(|g| card_of(&h, g, UnitSystem::Binary));
        let tl = timeline_of(&h, 0, Some(4 * GIB), UnitSystem::Binary);
        let html = gpu_card(0, c.as_ref(), &tl, true);
        for want in [
            "data-testid=\"live-gpu\" data-index=\"0\"",
            "data-testid=\"live-gpu-memory\"",
            "data-testid=\"live-gpu-util\">87 % busy",
            "data-testid=\"live-timeline\" data-points=\"3\"",
            "class=\"tl-plan\"",
            "data-action=\"use-gpu\" data-gpu=\"0\" aria-pressed=\"true\"",
            "gpu-card targeted",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
        assert!(gpu_card(1, None, &timeline_of(&h, 1, None, UnitSystem::Binary), false).contains("data-points=\"0\""));
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
        let live = head(&h);
        assert!(live.contains("lab&lt;1&gt;") && live.contains("host-disconnect") && !live.contains("host-reconnect"));
        assert!(live.contains("live-simulated") && live.contains("data-action=\"remove\""));
        h.state = "refused";
        h.advice = Some("Copy the token".into());
        let refused = head(&h);
        assert!(refused.contains("host-reconnect") && refused.contains("data-testid=\"host-advice\">Copy the token"));
        let run = probe_run("done", 100, "Finished", Some("The plan fits"), Some(512));
        assert!(run.contains("data-testid=\"probe-result\" data-state=\"done\">The plan fits"));
        assert!(run.contains("data-action=\"use-context\" data-bytes=\"512\""));
        assert!(!probe_run("running", 40, "Step 1", None, None).contains("probe-result"));
    }
}

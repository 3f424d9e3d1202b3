//! Read-only panels as one escaped HTML string each, set with `inner_html`:
//! far less wasm than a typed `view!` tree per row. Buttons carry
//! `data-action` (`copy` with `data-target`, the id of the text to copy;
//! `apply` with `data-query`, the fixed plan: see [`super::fixes`]) for one
//! delegated click handler.
//!
//! Built with the page's one escaping builder ([`crate::html::Html`]): every
//! text and attribute value is escaped by type.

use shared::fixes::GivesUp;

use super::bars::{COLUMNS, Row};
use super::charts::{ConcurrencyChart, GRID_LENGTHS, GridRow, MemoryChart};
use super::engine::ReportView;
use super::figures::{Figure, TermRow};
use super::svg::{self, short_tokens};
use crate::html::action::AnswerAction;
use crate::html::bar::StackedBar;

/// The builder moved to [`crate::html`] (shared with live mode); re-exported
/// so panels keep their paths.
pub use crate::html::{Html, escape_html};

/// What a fix gives up, in words.
pub fn gives_up_text(g: GivesUp) -> &'static str {
    match g {
        GivesUp::Nothing => "gives up nothing",
        GivesUp::CachePrecision => "gives up a little KV cache precision",
        GivesUp::Length => "gives up length or concurrency",
        GivesUp::Quality => "gives up weight precision",
        GivesUp::Speed => "gives up speed",
        GivesUp::Money => "costs hardware",
    }
}

/// A copy button for the text of the element with id `target`.
pub fn copy_button(h: &mut Html, testid: &str, target: &str) {
    h.raw("<button type=\"button\" class=\"ghost small\"")
        .action(AnswerAction::Copy)
        .attr("data-testid", testid)
        .attr("data-target", target)
        .raw(">Copy</button>");
}

/// `<pre class="code" id=… data-testid=…>code</pre>`.
pub fn code_block(h: &mut Html, id: &str, testid: &str, code: &str) {
    h.raw("<pre class=\"code\"").attr("id", id);
    if !testid.is_empty() {
        h.attr("data-testid", testid);
    }
    h.raw(">").t(code).raw("</pre>");
}

/// The per-GPU stacked bars and their legend.
pub fn bars_html(bars: &[StackedBar]) -> String {
    let mut h = Html::new();
    h.raw("<div class=\"card bars\" data-testid=\"gpu-bars\"><h3>Memory per GPU</h3>");
    for b in bars {
        h.raw("<div class=\"bar-row\" data-testid=\"gpu-bar\">");
        b.write(&mut h);
        h.raw("</div>");
    }
    h.raw(
        "<ul class=\"legend\" aria-hidden=\"true\">\
         <li><span class=\"swatch seg-weights\"></span>Weights</li>\
         <li><span class=\"swatch seg-kv\"></span>KV cache</li>\
         <li><span class=\"swatch seg-state\"></span>Recurrent state</li>\
         <li><span class=\"swatch seg-act\"></span>Activations</li>\
         <li><span class=\"swatch seg-overhead\"></span>Overhead</li>\
         <li><span class=\"swatch seg-free\"></span>Free</li></ul></div>",
    );
    h.finish()
}

/// The engine's report, the layer-wise `device_map` and the speed bounds
/// (each left out when the estimate has none).
pub fn engine_html(report: Option<&ReportView>, device_map: Option<&str>, speed: Option<&str>) -> String {
    let mut h = Html::new();
    if let Some(r) = report {
        h.raw(
            "<section class=\"card\" data-testid=\"engine-report\" aria-labelledby=\"engine-heading\">\
             <h3 id=\"engine-heading\">What the engine reports</h3><dl class=\"kv\">",
        );
        for row in &r.rows {
            h.raw("<div>")
                .el("dt", "", row.label)
                .raw("<dd")
                .attr("data-testid", row.id)
                .attr("data-value", &row.raw)
                .raw(">")
                .t(&row.text)
                .raw("</dd></div>");
        }
        h.raw("</dl>");
        if let Some(e) = &r.error {
            // Folded: the verdict already says it in one sentence; on a
            // phone the engine's own words took a third of the screen.
            h.raw("<details><summary>The engine's own error</summary><p class=\"error engine-error\" data-testid=\"engine-error\">")
                .t(e)
                .raw("</p></details>");
        }
        h.raw("<pre class=\"log\" data-testid=\"engine-log\">").t(&r.log).raw("</pre></section>");
    }
    if let Some(map) = device_map {
        h.raw(
            "<section class=\"card\" aria-labelledby=\"map-heading\">\
             <h3 id=\"map-heading\">Layer-wise split: device_map</h3>\
             <p class=\"hint\">Balanced by memory; the max_memory caps make \
             device_map=&quot;sequential&quot; place the same modules.</p>",
        );
        crate::view_model::fold::code(&mut h, "device-map-code", "device-map", map);
        copy_button(&mut h, "device-map-copy", "device-map-code");
        h.raw("</section>");
    }
    if let Some(s) = speed {
        h.raw("<p class=\"hint speed\" data-testid=\"speed\"><strong>Speed bounds: </strong>").t(s).raw("</p>");
    }
    h.finish()
}

fn terms_html(h: &mut Html, rows: &[TermRow]) {
    if rows.is_empty() {
        h.raw("<p class=\"hint\">Derived from the other figures.</p>");
        return;
    }
    h.raw("<dl class=\"terms\">");
    for r in rows {
        h.raw("<div class=\"term\"><dt>")
            .t(&r.name)
            .raw(" ")
            .el("span", &format!("badge {}", r.basis_class), r.basis)
            .raw("</dt><dd><span class=\"term-value\"")
            .attr("title", &r.exact)
            .raw(">")
            .t(&r.value)
            .raw("</span>")
            .el("code", "formula", &r.formula)
            .raw("</dd></div>");
    }
    h.raw("</dl>");
}

/// The key figures, each a `<details>` opening into its terms; those whose
/// test id is in `open` stay open across re-renders.
pub fn figures_html(figures: &[Figure], open: &[&str]) -> String {
    let mut h = Html::new();
    h.raw(
        "<div class=\"card figures\"><h3>Where the memory goes</h3>\
         <p class=\"hint\">Open a figure to see the terms behind it.</p>",
    );
    for f in figures {
        h.raw("<details class=\"figure\"").attr("data-key", f.testid);
        if open.contains(&f.testid) {
            h.raw(" open");
        }
        h.raw("><summary>")
            .el("span", "fig-label", f.label)
            .raw("<span class=\"fig-value\"")
            .attr("data-testid", f.testid)
            .num("data-bytes", f.raw)
            .attr("title", &f.exact)
            .raw(">")
            .t(&f.text)
            .raw("</span></summary>")
            .el("p", "exact", &f.exact);
        terms_html(&mut h, &f.terms);
        h.raw("</details>");
    }
    h.raw("</div>");
    h.finish()
}

/// The per-GPU table.
pub fn table_html(rows: &[Row]) -> String {
    let mut h = Html::new();
    h.raw(
        "<div class=\"card table-wrap\" tabindex=\"0\" role=\"region\" aria-label=\"Per-GPU table (scrolls sideways)\"><table data-testid=\"gpu-table\">\
         <caption>Per GPU, at the peak (prefill or last token)</caption><thead><tr><th scope=\"col\">GPU</th>",
    );
    for c in COLUMNS {
        h.raw("<th scope=\"col\">").t(c).raw("</th>");
    }
    h.raw("</tr></thead><tbody>");
    for r in rows {
        h.raw(if r.fits { "<tr>" } else { "<tr class=\"over\">" })
            .raw("<th scope=\"row\">")
            .t(&r.gpu)
            .raw("<br><small>")
            .t(&r.layers)
            .raw("</small></th>");
        for (text, exact) in &r.cells {
            h.raw("<td").attr("title", exact).raw(">").t(text).raw("</td>");
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table></div>");
    h.finish()
}

/// Assumptions and caveats (empty when there are none).
pub fn warnings_html(warnings: &[String]) -> String {
    if warnings.is_empty() {
        return String::new();
    }
    let mut h = Html::new();
    h.raw("<div class=\"card warnings\" data-testid=\"warnings\"><h3>Assumptions and caveats</h3><ul>");
    for w in warnings {
        h.el("li", "", w);
    }
    h.raw("</ul></div>");
    h.finish()
}

/// `0 0 WIDTH HEIGHT`, written out (no float formatting at run time).
const VIEW_BOX: &str = "0 0 640 260";

fn svg_open(h: &mut Html, testid: &str, title: &str, summary: &str) {
    h.raw("<figure class=\"card chart\"")
        .attr("data-testid", testid)
        .raw("><figcaption>")
        .el("h3", "", title)
        .el("p", "hint", summary)
        // Scrolls sideways on phones, where the chart keeps a minimum width so
        // that its text stays at least 11 px (style.css).
        .raw("</figcaption><div class=\"chart-scroll\" tabindex=\"0\" role=\"region\"")
        .attr("aria-label", title)
        .raw("><svg")
        .attr("viewBox", VIEW_BOX)
        .raw(" role=\"img\"")
        .attr("aria-label", summary)
        .raw(" preserveAspectRatio=\"xMidYMid meet\">");
}

/// `<line class=… x1 x2 y1 y2>`.
fn line(h: &mut Html, class: &str, x1: &str, x2: &str, y1: &str, y2: &str) {
    h.raw("<line").attr("class", class).attr("x1", x1).attr("x2", x2).attr("y1", y1).attr("y2", y2).raw(">");
}

/// Memory against generated tokens.
pub fn memory_chart_html(c: &MemoryChart) -> String {
    let left = svg::n(svg::LEFT);
    let right = svg::n(svg::WIDTH - svg::RIGHT);
    let mut h = Html::new();
    svg_open(&mut h, "memory-chart", "Memory as the answer grows", &c.summary);
    for (y, label) in &c.y_ticks {
        line(&mut h, "grid", &left, &right, y, y);
        h.raw("</line><text class=\"tick\" x=\"56\"")
            .attr("y", y)
            .raw(" text-anchor=\"end\" dominant-baseline=\"middle\">")
            .t(label)
            .raw("</text>");
    }
    for (x, label) in &c.x_ticks {
        h.raw("<text class=\"tick\"").attr("x", x).raw(" y=\"236\" text-anchor=\"middle\">").t(label).raw("</text>");
    }
    h.raw("<path class=\"area\"")
        .attr("d", &c.area)
        .raw("></path><path class=\"line\"")
        .attr("d", &c.path)
        .raw("></path>");
    line(&mut h, "capacity", &left, &right, &c.capacity_y, &c.capacity_y);
    h.raw("</line><text class=\"cap-label\" x=\"70\"")
        .attr("y", &c.capacity_y)
        .raw(" dy=\"-4\" text-anchor=\"start\">")
        .t(&c.capacity_label)
        .raw("</text>");
    line(&mut h, "current", &c.current_x, &c.current_x, &svg::n(svg::TOP), &svg::n(svg::HEIGHT - svg::BOTTOM));
    h.raw("<title>your max new tokens</title></line>");
    if let Some((x, y, label, anchor)) = &c.oom {
        h.raw("<circle class=\"oom\"")
            .attr("cx", x)
            .attr("cy", y)
            .raw(" r=\"5\" data-testid=\"oom-point\"><title>")
            .t(label)
            .raw("</title></circle><text class=\"oom-label\"")
            .attr("x", x)
            .attr("y", y)
            .raw(" dy=\"16\"")
            .attr("text-anchor", anchor)
            .raw(">")
            .t(label)
            .raw("</text>");
    }
    h.raw("<text class=\"axis-label\"")
        .attr("x", &svg::n((svg::LEFT + svg::WIDTH) / 2.0))
        .attr("y", &svg::n(svg::HEIGHT - 6.0))
        .raw(" text-anchor=\"middle\">")
        .t(&c.x_label)
        .raw(
            "</text><text class=\"axis-label\" x=\"12\" y=\"130\" transform=\"rotate(-90 12 130)\" \
             text-anchor=\"middle\">",
        )
        .t(&c.y_label)
        .raw("</text></svg></div></figure>");
    h.finish()
}

/// Max concurrent sequences by prompt length.
pub fn concurrency_chart_html(c: &ConcurrencyChart) -> String {
    let mut h = Html::new();
    svg_open(&mut h, "concurrency-chart", "Max concurrent sequences by prompt length", &c.summary);
    line(&mut h, "axis", &svg::n(svg::LEFT), &svg::n(svg::WIDTH - svg::RIGHT), &c.baseline, &c.baseline);
    h.raw("</line>");
    for b in &c.bars {
        h.raw(if b.current { "<g class=\"cbar current\">" } else { "<g class=\"cbar\">" })
            .el("title", "", &b.title)
            .raw("<rect")
            .attr("x", &b.x)
            .attr("y", &b.y)
            .attr("width", &b.width)
            .attr("height", &b.height)
            .raw(" rx=\"2\"></rect><text class=\"tick value\"")
            .attr("x", &b.x)
            .raw(" dx=\"4\"")
            .attr("y", &b.y)
            .raw(" dy=\"-4\">")
            .t(&b.value)
            .raw("</text><text class=\"tick\"")
            .attr("x", &b.x)
            .raw(" dx=\"4\" y=\"240\">")
            .t(&b.label)
            .raw("</text></g>");
    }
    h.raw("</svg></div></figure>");
    h.finish()
}

/// Weight formats × prompt lengths, coloured by fit (the plan's row is
/// marked apart: `components::answer::Patched::current`). The rows carry
/// no `current` class for this reason.
pub fn what_if_html(rows: &[GridRow]) -> String {
    let mut h = Html::new();
    h.raw(
        "<div class=\"card table-wrap what-if\" tabindex=\"0\" role=\"region\" aria-label=\"What if table (scrolls sideways)\" data-testid=\"what-if\"><table class=\"grid-table\"><caption>\
         What if: weight format × prompt length. \
         <span class=\"swatch cell-fits\"></span> fits (peak % of the tightest GPU) \
         <span class=\"swatch cell-grows\"></span> runs out after +N new tokens \
         <span class=\"swatch cell-no\"></span> does not fit</caption>\
         <thead><tr><th scope=\"col\">Format</th>",
    );
    for l in GRID_LENGTHS {
        h.raw("<th scope=\"col\">").t(&short_tokens(l)).raw("</th>");
    }
    h.raw("</tr></thead><tbody>");
    for r in rows {
        h.raw("<tr")
            .attr("data-format", &r.format)
            .raw("><th scope=\"row\"")
            .attr("title", &r.describe)
            .raw(">")
            .t(&r.format)
            .raw("</th>");
        for c in &r.cells {
            h.raw("<td").attr("class", c.class).attr("title", &c.title).raw(">").t(&c.text).raw("</td>");
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table></div>");
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::estimate::{Scenario, estimate};
    use shared::model::Model;
    use shared::units::UnitSystem;

    #[test]
    fn figures_keep_their_test_ids_bytes_and_open_state() {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let e = estimate(&m, Scenario::default().validate().expect("a valid plan"));
        let figs = super::super::figures::figures(&e, UnitSystem::Binary);
        let html = figures_html(&figs, &["weight-bytes"]);
        assert!(html.contains(&format!("data-testid=\"weight-bytes\" data-bytes=\"{}\"", e.weight_bytes)));
        assert!(html.contains("data-key=\"weight-bytes\" open>"));
        assert!(!html.contains("data-key=\"parameters\" open"));
        assert_eq!(html.matches("<details").count(), html.matches("</details>").count());
    }

    #[test]
    fn table_bars_and_engine_panels() {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let e = estimate(&m, Scenario::default().validate().expect("a valid plan"));
        let t = table_html(&super::super::bars::rows(&e, UnitSystem::Binary));
        assert!(t.contains("data-testid=\"gpu-table\"") && t.matches("<td").count() == COLUMNS.len());
        let b = bars_html(&super::super::bars::bars(&e, UnitSystem::Binary));
        assert_eq!(b.matches("data-testid=\"gpu-bar\"").count(), e.per_gpu.len());
        let r = ReportView {
            rows: vec![shared::engines::ReportRow {
                id: "num-gpu-blocks",
                label: "# GPU blocks",
                text: "1,000".into(),
                raw: "1000".into(),
            }],
            log: "INFO <x>".into(),
            error: None,
        };
        let html = engine_html(Some(&r), Some("{'a': 0}"), Some("fast"));
        assert!(html.contains("data-testid=\"num-gpu-blocks\" data-value=\"1000\">1,000</dd>"));
        assert!(html.contains("INFO &lt;x&gt;") && html.contains("{&#39;a&#39;: 0}"));
        assert!(html.contains("data-target=\"device-map-code\"") && html.contains("data-testid=\"speed\""));
        assert_eq!(engine_html(None, None, None), "");
        assert_eq!(warnings_html(&[]), "");
        assert!(warnings_html(&["a < b".into()]).contains("<li>a &lt; b</li>"));
    }

    #[test]
    fn charts_render_as_svg() {
        assert_eq!(VIEW_BOX, format!("0 0 {} {}", svg::WIDTH, svg::HEIGHT));
        let m = Model::preset("llama-3.1-70b").expect("preset");
        let s = Scenario::default().validate().expect("a valid plan");
        let e = estimate(&m, s.clone());
        let mem = memory_chart_html(&super::super::charts::memory_chart(&m, &s, &e, UnitSystem::Binary));
        assert!(mem.starts_with("<figure class=\"card chart\" data-testid=\"memory-chart\">"));
        assert!(mem.ends_with("</svg></div></figure>"));
        let conc = concurrency_chart_html(&super::super::charts::concurrency_chart(&m, &s));
        assert!(conc.contains("data-testid=\"concurrency-chart\""));
        let grid = what_if_html(&super::super::charts::what_if(&m, &s, None));
        assert!(grid.contains("data-testid=\"what-if\""));
        assert!(grid.contains("<tr data-format=\"q4_k_m\"><th scope=\"row\""));
    }
}

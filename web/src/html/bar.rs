//! The one stacked bar: coloured parts against a capacity line, drawn for
//! the calculator's per-GPU bars, live mode's GPU cards, "fits now" and the
//! fleet view. Each caller builds the parts (its own bytes and words); this
//! file is the one type and the one renderer.

use super::Html;

/// One coloured part of a bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// CSS class (`seg-weights`, `live-used`, …).
    pub class: &'static str,
    pub bytes: u64,
    /// Width as a CSS value (`12.345%`) of the bar's scale.
    pub width: String,
    /// Tooltip: what it is and how much.
    pub title: String,
}

/// Where the capacity line sits (`100.000%` unless the parts overflow it) and
/// what its tooltip calls it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityLine {
    pub at: String,
    pub title: &'static str,
}

/// A bar with its label row: the label on the left, the summary on the right
/// (marked as a shortfall unless `fits`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackedBar {
    pub label: String,
    pub summary: String,
    pub fits: bool,
    /// A sentence for screen readers.
    pub aria: String,
    pub segments: Vec<Segment>,
    /// `None` draws no line.
    pub capacity: Option<CapacityLine>,
}

impl StackedBar {
    pub fn capacity_at(&self) -> Option<&str> {
        self.capacity.as_ref().map(|c| c.at.as_str())
    }

    /// `<div class="bar-label">…</div>` and the bar, for the caller's row.
    pub fn write(&self, h: &mut Html) {
        h.raw("<div class=\"bar-label\">")
            .el("span", "", &self.label)
            .el("span", if self.fits { "bar-sum" } else { "bar-sum over" }, &self.summary)
            .raw("</div>");
        bar(h, "bar", &self.aria, &self.segments, self.capacity.as_ref());
    }
}

/// `<div class="{class}" role="img" aria-label="…">`, the parts, the capacity
/// line, `</div>`: the bar alone (a GPU card draws it without a label row).
pub fn bar(h: &mut Html, class: &'static str, aria: &str, segments: &[Segment], capacity: Option<&CapacityLine>) {
    h.raw("<div").attr("class", class).raw(" role=\"img\"").attr("aria-label", aria).raw(">");
    for s in segments {
        h.raw("<span")
            .attr("class", &["seg ", s.class].concat())
            .attr("style", &["width:", &s.width].concat())
            .attr("title", &s.title)
            .raw("></span>");
    }
    if let Some(c) = capacity {
        h.raw("<span class=\"cap-line\"")
            .attr("style", &["left:", &c.at].concat())
            .attr("title", c.title)
            .raw("></span>");
    }
    h.raw("</div>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_with_its_parts_label_and_capacity() {
        let b = StackedBar {
            label: "GPU 0 <a>".into(),
            summary: "2 GiB over".into(),
            fits: false,
            aria: "weights \"1\"".into(),
            segments: vec![Segment { class: "seg-kv", bytes: 1, width: "50.000%".into(), title: "KV: 1".into() }],
            capacity: Some(CapacityLine { at: "80.000%".into(), title: "capacity" }),
        };
        let mut h = Html::new();
        b.write(&mut h);
        assert_eq!(
            h.finish(),
            "<div class=\"bar-label\"><span>GPU 0 &lt;a&gt;</span><span class=\"bar-sum over\">2 GiB over</span></div>\
             <div class=\"bar\" role=\"img\" aria-label=\"weights &quot;1&quot;\"><span class=\"seg seg-kv\" \
             style=\"width:50.000%\" title=\"KV: 1\"></span><span class=\"cap-line\" style=\"left:80.000%\" \
             title=\"capacity\"></span></div>"
        );
        assert_eq!(b.capacity_at(), Some("80.000%"));
        let mut h = Html::new();
        bar(&mut h, "bar live-bar", "m", &[], None);
        assert_eq!(h.finish(), "<div class=\"bar live-bar\" role=\"img\" aria-label=\"m\"></div>");
    }
}

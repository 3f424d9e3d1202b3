//! The page's one HTML builder, used by every read-only panel of the
//! calculator, the diagnose view and live mode alike (all three bundles).
//!
//! Escaping is the default: text and attribute values go in as `&str` and
//! are escaped on the way in ([`Html::t`], [`Html::attr`]); markup goes in
//! only as a `&'static str` literal from this crate's source ([`Html::raw`])
//! or as the finished output of another builder ([`Markup`], which nothing
//! else can make). So a hostname, a process name or a model's text cannot
//! become markup by a forgotten call; `web/tests/it/tidy.rs` fails on any
//! `format!` that writes markup.
//!
//! Panels are one HTML string each, set with `innerHTML`: far less wasm than a
//! typed view per row (see `docs/web.md`). A new string whose structure is
//! the old one's is applied to the nodes already there ([`patch`]).

pub mod action;
pub mod bar;
pub mod patch;

use std::fmt::Write as _;

pub use action::Action;

/// Escapes text for element content and double-quoted attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// Finished HTML from a builder: the only dynamic markup another builder
/// takes ([`Html::markup`]). Made only by [`Html::into_markup`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markup(String);

impl Markup {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A small builder: `raw` adds static markup, `t` escaped text, `attr` an
/// escaped attribute, `markup` another builder's output.
#[derive(Debug, Default)]
pub struct Html(String);

impl Html {
    pub fn new() -> Self {
        Self(String::with_capacity(1024))
    }

    /// Trusted static markup: a literal of this crate, never user, agent or
    /// model text (those go through [`Html::t`] and [`Html::attr`]).
    pub fn raw(&mut self, markup: &'static str) -> &mut Self {
        self.0.push_str(markup);
        self
    }

    /// Another builder's finished output.
    pub fn markup(&mut self, markup: &Markup) -> &mut Self {
        self.0.push_str(&markup.0);
        self
    }

    /// Escaped text.
    pub fn t(&mut self, text: &str) -> &mut Self {
        push_escaped(&mut self.0, text);
        self
    }

    /// A number as text (digits need no escaping).
    pub fn int(&mut self, value: u64) -> &mut Self {
        let _ = write!(self.0, "{value}");
        self
    }

    /// ` name="value"` with the value escaped.
    pub fn attr(&mut self, name: &'static str, value: &str) -> &mut Self {
        self.0.push(' ');
        self.0.push_str(name);
        self.0.push_str("=\"");
        push_escaped(&mut self.0, value);
        self.0.push('"');
        self
    }

    /// ` name="n"` for a number.
    pub fn num(&mut self, name: &'static str, value: u64) -> &mut Self {
        let _ = write!(self.0, " {name}=\"{value}\"");
        self
    }

    /// ` name="true"` or ` name="false"`.
    pub fn flag(&mut self, name: &'static str, value: bool) -> &mut Self {
        self.attr(name, if value { "true" } else { "false" })
    }

    /// ` data-action="…"`: what the page's delegated handlers act on.
    pub fn action(&mut self, action: impl Into<Action>) -> &mut Self {
        self.attr("data-action", action.into().as_attr())
    }

    /// `<tag class="…">text</tag>` (no class attribute when `class` is empty).
    pub fn el(&mut self, tag: &'static str, class: &str, text: &str) -> &mut Self {
        self.raw("<").raw(tag);
        if !class.is_empty() {
            self.attr("class", class);
        }
        self.raw(">").t(text).raw("</").raw(tag).raw(">")
    }

    pub fn finish(self) -> String {
        self.0
    }

    pub fn into_markup(self) -> Markup {
        Markup(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(escape_html(r#"<b a="1">'x' & y</b>"#), "&lt;b a=&quot;1&quot;&gt;&#39;x&#39; &amp; y&lt;/b&gt;");
        assert_eq!(escape_html("plain – text"), "plain – text");
        let mut h = Html::new();
        h.attr("title", "\"><script>").el("p", "c", "<i>");
        assert_eq!(h.finish(), " title=\"&quot;&gt;&lt;script&gt;\"<p class=\"c\">&lt;i&gt;</p>");
    }

    #[test]
    fn nested_output_joins_unchanged_and_numbers_are_digits() {
        let mut inner = Html::new();
        inner.el("b", "", "a&b");
        let inner = inner.into_markup();
        let mut h = Html::new();
        h.raw("<p>").markup(&inner).raw(" ").int(42).flag("data-x", true).raw("</p>");
        assert_eq!(h.finish(), "<p><b>a&amp;b</b> 42 data-x=\"true\"</p>");
        assert!(Markup::default().is_empty());
    }
}

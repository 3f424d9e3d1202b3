//! A panel's new markup applied to the nodes it already has, where only
//! texts and attribute values changed (issue 38: the page's own work per
//! change). Setting `innerHTML` parses the whole panel again and replaces
//! every node, so the browser restyles and lays out all of them; a new
//! weight format changes a few dozen figures of a few hundred nodes.
//!
//! Both strings come from [`super::Html`], so they are read here as that
//! builder writes them: tags with double-quoted, escaped attribute values,
//! every element closed, the five escapes of [`super::escape_html`]. Markup
//! the browser's parser would build differently from its tags (a block
//! inside `<p>`, a row without its table section, HTML inside `<svg>`, text
//! it drops or rewrites), and any change of structure (an element more or
//! less, a text appearing), answer `false`, and the caller sets `innerHTML`
//! as before. The walk checks each node it passes against the old markup
//! and gives up the same way at the first one that differs.
//!
//! What a person changes in a panel is set back as `innerHTML` would: a
//! `<details>` they opened or closed takes the new markup's `open`, and a
//! button's text ("Copied") the new markup's.

/// The nodes the walk needs: a text node or an element, its first child
/// and next sibling, and the two edits.
pub trait Tree: Sized {
    fn first_child(&self) -> Option<Self>;
    fn next_sibling(&self) -> Option<Self>;
    /// An element named `tag` (as written, any case), or a text node for `None`.
    fn is(&self, tag: Option<&str>) -> bool;
    fn set_text(&self, text: &str);
    /// Sets the attribute, or removes it for `None`.
    fn set_attr(&self, name: &str, value: Option<&str>);
}

/// Applies `new` to `root`, whose children were made from `old`. `false`
/// when it could not (the structure changed, or the markup is outside what
/// this reads): then `root` must get `new` as `innerHTML`, as some edits
/// may have been made.
pub fn patch<T: Tree + Clone>(root: &T, old: &str, new: &str) -> bool {
    let (Some(before), Some(mut after)) = (tokens(old), tokens(new)) else { return false };
    if before.len() != after.len() {
        return false;
    }
    // Back to front, so that each token knows where the next edit is.
    let mut next = NONE;
    for (b, a) in before.iter().zip(&mut after).rev() {
        let changed = match (b.kind, a.kind) {
            (Kind::Open(x, xs), Kind::Open(y, ys)) if x == y => a.forced || xs != ys,
            (Kind::Text(x), Kind::Text(y)) => a.forced || x != y,
            (Kind::Close, Kind::Close) => false,
            _ => return false,
        };
        if changed {
            next = a.at;
        }
        a.next = next;
    }
    walk(root, &before, &after).is_some()
}

/// No edit follows.
const NONE: usize = usize::MAX;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind<'a> {
    /// A start tag: its name and what follows the name up to `>`.
    Open(&'a str, &'a str),
    Close,
    Text(&'a str),
}

#[derive(Debug, Clone, Copy)]
struct Tok<'a> {
    kind: Kind<'a>,
    /// Its own index.
    at: usize,
    /// For a start tag, the index of its end tag (its own for a void element).
    end: usize,
    /// Set even when unchanged: a `<details>` (its `open`) or a button's text.
    forced: bool,
    /// The index of the first token from here on with an edit ([`NONE`]).
    next: usize,
}

impl<'a> Tok<'a> {
    fn new(kind: Kind<'a>, at: usize, forced: bool) -> Self {
        Tok { kind, at, end: at, forced, next: NONE }
    }
}

/// Elements without an end tag.
const VOID: &str = "area base br col embed hr img input link meta source track wbr";
/// Elements whose content the parser does not read as tags (`title` is
/// one outside `<svg>`).
const NOT_TAGS: &str = "iframe noembed noframes noscript plaintext script select style template textarea xmp";

fn listed(list: &str, name: &str) -> bool {
    list.split(' ').any(|w| w == name)
}

/// `html` as tokens, each start tag with its end tag, or `None` for markup
/// this does not read. Elements the parser would place elsewhere (a block
/// inside `<p>`, a row outside a table section, HTML inside `<svg>`) are
/// read as written: the walk finds their nodes elsewhere and gives up.
fn tokens(html: &str) -> Option<Vec<Tok<'_>>> {
    let mut out: Vec<Tok> = Vec::new();
    let mut open: Vec<(usize, &str)> = Vec::new();
    let mut rest = html;
    while !rest.is_empty() {
        let top = open.last().map_or("", |o| o.1);
        if let Some(after) = rest.strip_prefix("</") {
            let close = after.find('>')?;
            let (at, name) = open.pop()?;
            if after[..close] != *name {
                return None;
            }
            out[at].end = out.len();
            out.push(Tok::new(Kind::Close, out.len(), false));
            rest = &after[close + 1..];
        } else if let Some(after) = rest.strip_prefix('<') {
            let close = after.find('>')?;
            let tag = &after[..close];
            let (name, attrs) = tag.split_at(tag.find(' ').unwrap_or(tag.len()));
            if name.is_empty()
                || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                || attrs.ends_with('/')
                || listed(NOT_TAGS, name)
                || (name == "title" && !open.iter().any(|o| o.1 == "svg"))
            {
                return None;
            }
            let at = out.len();
            out.push(Tok::new(Kind::Open(name, attrs), at, name == "details"));
            if !listed(VOID, name) {
                open.push((at, name));
            }
            rest = &after[close + 1..];
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let mut text = &rest[..end];
            rest = &rest[end..];
            // The parser drops a newline right after `<pre>`.
            if top == "pre" && out.last().is_some_and(|t| matches!(t.kind, Kind::Open(..))) {
                text = text.strip_prefix('\n').unwrap_or(text);
            }
            if !text.is_empty() {
                out.push(Tok::new(Kind::Text(text), out.len(), top == "button"));
            }
        }
    }
    open.is_empty().then_some(out)
}

/// Text or an attribute value as the parser reads it: the five escapes
/// [`super::escape_html`] writes, nothing else (`None` for any other `&`,
/// and for the carriage returns and NULs the parser rewrites).
fn decode(s: &str) -> Option<String> {
    if s.bytes().any(|b| b == b'\r' || b == 0) {
        return None;
    }
    let mut parts = s.split('&');
    let mut out = String::from(parts.next()?);
    for part in parts {
        let (c, rest) = [("amp;", '&'), ("lt;", '<'), ("gt;", '>'), ("quot;", '"'), ("#39;", '\'')]
            .into_iter()
            .find_map(|(e, c)| Some((c, part.strip_prefix(e)?)))?;
        out.push(c);
        out.push_str(rest);
    }
    Some(out)
}

/// ` a="1" b` as `[("a", "1"), ("b", "")]` (values still escaped: no `"`).
fn attributes(s: &str) -> Option<Vec<(&str, &str)>> {
    let mut out = Vec::new();
    let mut parts = s.split('"');
    while let Some(names) = parts.next() {
        let mut words = names.split(' ').filter(|w| !w.is_empty()).peekable();
        while let Some(word) = words.next() {
            let (name, value) = match word.strip_suffix('=') {
                Some(name) if words.peek().is_none() => (name, parts.next()?),
                _ => (word, ""),
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return None;
            }
            out.push((name, value));
        }
    }
    Some(out)
}

/// Sets what changed: down the elements with edits inside, past the rest.
fn walk<T: Tree + Clone>(root: &T, before: &[Tok], after: &[Tok]) -> Option<()> {
    let mut parents: Vec<T> = Vec::new();
    let mut parent = root.clone();
    let mut prev: Option<T> = None;
    let mut i = 0;
    while let Some(tok) = after.get(i).filter(|t| t.next != NONE) {
        if tok.kind == Kind::Close {
            prev = Some(std::mem::replace(&mut parent, parents.pop()?));
            i += 1;
            continue;
        }
        let node = match &prev {
            Some(p) => p.next_sibling(),
            None => parent.first_child(),
        }?;
        match (tok.kind, before[i].kind) {
            (Kind::Open(name, attrs), Kind::Open(_, old)) => {
                if !node.is(Some(name)) {
                    return None;
                }
                if tok.next == i {
                    set_attributes(&node, old, attrs, name == "details")?;
                }
                if after.get(i + 1).is_some_and(|t| t.next < tok.end) {
                    parents.push(std::mem::replace(&mut parent, node));
                    prev = None;
                    i += 1;
                } else {
                    prev = Some(node);
                    i = tok.end + 1;
                }
            }
            (Kind::Text(text), _) => {
                if !node.is(None) {
                    return None;
                }
                if tok.next == i {
                    node.set_text(&decode(text)?);
                }
                prev = Some(node);
                i += 1;
            }
            _ => return None,
        }
    }
    Some(())
}

/// The attributes of `new` on `node`, which has those of `old` (and for a
/// `<details>`, `open` as the new markup says, whatever a click made it).
fn set_attributes<T: Tree>(node: &T, old: &str, new: &str, details: bool) -> Option<()> {
    let (old, new) = (attributes(old)?, attributes(new)?);
    for (name, value) in &new {
        if (details && *name == "open") || !old.contains(&(*name, *value)) {
            node.set_attr(name, Some(&decode(value)?));
        }
    }
    for (name, _) in &old {
        if !new.iter().any(|(n, _)| n == name) {
            node.set_attr(name, None);
        }
    }
    if details && !new.iter().any(|(n, _)| *n == "open") {
        node.set_attr("open", None);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;

    /// A tree built from our own tokens, serialised back to markup.
    #[derive(Debug, Clone)]
    struct Node(Rc<RefCell<Inner>>);

    #[derive(Debug)]
    struct Inner {
        tag: Option<String>,
        text: String,
        attrs: Vec<(String, String)>,
        children: Vec<Node>,
        parent: Option<Node>,
        edits: usize,
    }

    impl Node {
        fn new(tag: Option<&str>, text: &str, attrs: Vec<(String, String)>, parent: Option<Node>) -> Node {
            Node(Rc::new(RefCell::new(Inner {
                tag: tag.map(str::to_owned),
                text: text.to_owned(),
                attrs,
                children: Vec::new(),
                parent,
                edits: 0,
            })))
        }

        fn parse(html: &str) -> Node {
            Node::read(html).expect("markup this module reads")
        }

        fn read(html: &str) -> Option<Node> {
            let root = Node::new(Some("div"), "", Vec::new(), None);
            let mut at = root.clone();
            for t in tokens(html)? {
                match t.kind {
                    Kind::Open(name, attrs) => {
                        let attrs = attributes(attrs)?
                            .into_iter()
                            .map(|(n, v)| Some((n.to_owned(), decode(v)?)))
                            .collect::<Option<_>>()?;
                        let node = Node::new(Some(name), "", attrs, Some(at.clone()));
                        at.0.borrow_mut().children.push(node.clone());
                        if !listed(VOID, name) {
                            at = node;
                        }
                    }
                    Kind::Close => {
                        let up = at.0.borrow().parent.clone()?;
                        at = up;
                    }
                    Kind::Text(text) => {
                        let node = Node::new(None, &decode(text)?, Vec::new(), Some(at.clone()));
                        at.0.borrow_mut().children.push(node);
                    }
                }
            }
            Some(root)
        }

        /// The children's markup, escaped as [`super::super::Html`] does.
        fn html(&self) -> String {
            let mut out = String::new();
            for c in &self.0.borrow().children {
                let c = c.0.borrow();
                match &c.tag {
                    None => out.push_str(&super::super::escape_html(&c.text)),
                    Some(tag) => {
                        out.push('<');
                        out.push_str(tag);
                        for (n, v) in &c.attrs {
                            out.push(' ');
                            out.push_str(n);
                            if !v.is_empty() || n != "open" {
                                out.push_str("=\"");
                                out.push_str(&super::super::escape_html(v));
                                out.push('"');
                            }
                        }
                        out.push('>');
                        if !listed(VOID, tag) {
                            out.push_str(
                                &Node(Rc::new(RefCell::new(Inner {
                                    tag: None,
                                    text: String::new(),
                                    attrs: Vec::new(),
                                    children: c.children.clone(),
                                    parent: None,
                                    edits: 0,
                                })))
                                .html(),
                            );
                            out.push_str("</");
                            out.push_str(tag);
                            out.push('>');
                        }
                    }
                }
            }
            out
        }

        fn edits(&self) -> usize {
            let n = self.0.borrow();
            n.edits + n.children.iter().map(Node::edits).sum::<usize>()
        }

        fn sibling(&self, by: isize) -> Option<Node> {
            let parent = self.0.borrow().parent.clone()?;
            let siblings = &parent.0.borrow().children;
            let at = siblings.iter().position(|s| Rc::ptr_eq(&s.0, &self.0))?;
            siblings.get(at.checked_add_signed(by)?).cloned()
        }
    }

    impl Tree for Node {
        fn first_child(&self) -> Option<Self> {
            self.0.borrow().children.first().cloned()
        }
        fn next_sibling(&self) -> Option<Self> {
            self.sibling(1)
        }
        fn is(&self, tag: Option<&str>) -> bool {
            self.0.borrow().tag.as_deref() == tag
        }
        fn set_text(&self, text: &str) {
            let mut n = self.0.borrow_mut();
            n.text = text.to_owned();
            n.edits += 1;
        }
        fn set_attr(&self, name: &str, value: Option<&str>) {
            let mut n = self.0.borrow_mut();
            n.edits += 1;
            match (n.attrs.iter().position(|(a, _)| a == name), value) {
                (Some(at), Some(v)) => n.attrs[at].1 = v.to_owned(),
                (Some(at), None) => {
                    n.attrs.remove(at);
                }
                (None, Some(v)) => n.attrs.push((name.to_owned(), v.to_owned())),
                (None, None) => {}
            }
        }
    }

    /// `old` patched to `new`: the markup it leaves and the edits it made.
    fn check(old: &str, new: &str) -> Option<(String, usize)> {
        let root = Node::read(old)?;
        patch(&root, old, new).then(|| (root.html(), root.edits()))
    }

    #[test]
    fn texts_and_values_change_in_place_and_nothing_else_is_touched() {
        let old = "<div class=\"a\"><p>x &amp; y</p><span title=\"1\">2</span><br><i>same</i></div><p>tail</p>";
        let new =
            "<div class=\"a\"><p>x &lt; y</p><span title=\"&quot;3&quot;\">2</span><br><i>same</i></div><p>tail!</p>";
        assert_eq!(check(old, new), Some((new.to_owned(), 3)));
        assert_eq!(check(old, old), Some((old.to_owned(), 0)));
        // Attributes come and go.
        let old = "<tr><td class=\"x\" title=\"t\">1</td></tr>";
        let new = "<tr><td title=\"t\" data-k=\"v\">1</td></tr>";
        let (old, new) = (
            ["<table><tbody>", old, "</tbody></table>"].concat(),
            ["<table><tbody>", new, "</tbody></table>"].concat(),
        );
        assert_eq!(check(&old, &new), Some((new.clone(), 2)));
    }

    #[test]
    fn what_a_person_changed_is_set_back_as_the_new_markup_says() {
        let old =
            "<details><summary>a</summary></details><details open><summary>b</summary></details><button>Copy</button>";
        let root = Node::parse(old);
        // Opened and closed by clicks, and a copy button's feedback.
        root.first_child().expect("details").set_attr("open", Some(""));
        root.first_child().and_then(|d| d.next_sibling()).expect("details").set_attr("open", None);
        let button = root.first_child().and_then(|d| d.next_sibling()).and_then(|d| d.next_sibling()).expect("button");
        button.first_child().expect("text").set_text("Copied");
        let new = old.replace("<summary>a", "<summary>c");
        assert!(patch(&root, old, &new));
        assert_eq!(root.html(), new);
    }

    #[test]
    fn a_change_of_structure_or_markup_the_parser_rebuilds_is_left_to_inner_html() {
        for (old, new) in [
            ("<p>a</p>", "<p>a</p><p>b</p>"),
            ("<p>a</p>", "<p></p>"),
            ("<p>a</p>", "<div>a</div>"),
            ("<p>a &nbsp;</p>", "<p>b &nbsp;</p>"),
            ("<title>a</title>", "<title>b</title>"),
            ("<p>a</p>", "<p>a\r\n</p>"),
            ("<textarea>a</textarea>", "<textarea>b</textarea>"),
            ("<p/>", "<p/>"),
            ("<p>a", "<p>b"),
            ("<P>a</P>", "<P>b</P>"),
            ("<p title='a'>x</p>", "<p title='b'>x</p>"),
        ] {
            assert_eq!(check(old, new), None, "{old} → {new}");
        }
        // Nodes the parser placed elsewhere than the tags say: the walk
        // meets a node that is not the markup's and gives up.
        for (built, old, new) in [
            ("<p></p><div>a</div><p></p>", "<p><div>a</div></p>", "<p><div>b</div></p>"),
            ("<p></p><div>a</div><p></p><i>c</i>", "<p><div>a</div></p><i>c</i>", "<p><div>a</div></p><i>d</i>"),
            (
                "<table><tbody><tr><td>a</td></tr></tbody></table>",
                "<table><tr><td>a</td></tr></table>",
                "<table><tr><td>b</td></tr></table>",
            ),
            ("x<table><tbody></tbody></table>", "<table><tbody>x</tbody></table>", "<table><tbody>y</tbody></table>"),
            ("<svg></svg><span>a</span>", "<svg><span>a</span></svg>", "<svg><span>b</span></svg>"),
            ("<li>a</li><li>b</li>", "<li>a<li>b</li></li>", "<li>a<li>c</li></li>"),
        ] {
            let root = Node::parse(built);
            assert!(!patch(&root, old, new), "{old} → {new}");
        }
    }

    #[test]
    fn the_newline_after_pre_is_the_parsers() {
        let old = "<pre>\nline</pre><pre>\n</pre><p>a</p>";
        let new = "<pre>\nother</pre><pre>\n</pre><p>b</p>";
        let root = Node::parse(old);
        assert!(patch(&root, old, new));
        assert_eq!(root.html(), "<pre>other</pre><pre></pre><p>b</p>");
    }

    /// Every panel of the answer, for a plan in each of `engines` and `formats`.
    fn panels(formats: &[&str], engines: &[&str]) -> Vec<Vec<String>> {
        use crate::view_model::{bars, charts, engine, figures, html};
        use shared::estimate::estimate;
        use shared::model::Model;
        use shared::units::UnitSystem::Binary;
        let mut out = Vec::new();
        for model in ["llama-3.1-8b", "qwen3-30b-a3b"] {
            let m = Model::preset(model).expect("a preset");
            for e in engines {
                for f in formats {
                    let tp = if e.starts_with("llama") { "" } else { "&tp=2" };
                    let query = format!("model={model}&w={f}&e={e}&gpu=rtx-4090&g=2{tp}");
                    let state = shared::link::decode(&query).state;
                    let s = crate::view_model::resolve::scenario(&state, &m).expect("a plan");
                    let est = estimate(&m, s.clone());
                    let fixes = shared::fixes::fixes(&m, &s);
                    let map = est.device_map.as_ref().map(|d| d.snippet("MODEL_ID", est.weight_format));
                    out.push(vec![
                        html::figures_html(&figures::figures(&est, Binary), &["weight-bytes"]),
                        html::bars_html(&bars::bars(&est, Binary)),
                        html::table_html(&bars::rows(&est, Binary)),
                        html::engine_html(
                            engine::report_view(&est, Binary).as_ref(),
                            map.as_deref(),
                            engine::speed_text(&est).as_deref(),
                        ),
                        html::warnings_html(&est.warnings),
                        html::memory_chart_html(&charts::memory_chart(&m, &s, &est, Binary)),
                        html::concurrency_chart_html(&charts::concurrency_chart(&m, &s)),
                        crate::view_model::fixes::fixes_html(&fixes, &state, &m),
                    ]);
                }
            }
        }
        out
    }

    #[test]
    fn the_answers_panels_patch_from_one_plan_to_the_next() {
        let formats = ["bf16", "q4_k_m", "fp8", "nf4", "awq-int4", "fp32"];
        let plans = panels(&formats, &["transformers", "vllm", "llama.cpp"]);
        let mut patched = 0;
        for pair in plans.windows(2) {
            for (old, new) in pair[0].iter().zip(&pair[1]) {
                assert!(tokens(new).is_some(), "markup this reads: {new}");
                if let Some((html, _)) = check(old, new) {
                    assert_eq!(&html, new);
                    patched += 1;
                }
            }
        }
        // Most changes keep the structure and are patched.
        let all = (plans.len() - 1) * plans[0].len();
        assert!(patched * 2 > all, "{patched} of {all} patched");
    }
}

//! Long snippets fold: a `device_map={…}` dict (one entry per module: 66 for
//! an 80-layer model, ~2,000 px on a phone) shows as the call with
//! `device_map=device_map`, a one-line summary of where the modules go, and
//! the full dict behind a `<details>` toggle. The copy button still copies
//! the snippet exactly as the CLI and the share link give it (a hidden copy).

use crate::html::Html;
use crate::view_model::html::code_block;

/// Maps with at most this many modules stay inline (a small model split in two
/// reads at a glance).
const INLINE_MODULES: usize = 8;

/// `(before, dict, after)` around the first `device_map={…}`, or the whole
/// snippet when it is the dict itself (the dict holds no braces: module
/// names and GPU numbers only).
fn split_map(code: &str) -> Option<(&str, &str, &str)> {
    if code.starts_with('{') && code.ends_with('}') {
        return Some(("", code, ""));
    }
    let start = code.find("device_map={")? + "device_map=".len();
    let end = start + code[start..].find('}')? + 1;
    Some((&code[..start], &code[start..end], &code[end..]))
}

/// Modules per GPU in a dict `{"name": gpu, …}`, in the order the GPUs first
/// appear (stage order: the map lists modules front to back).
fn per_gpu(dict: &str) -> Vec<(u64, usize)> {
    let mut out: Vec<(u64, usize)> = Vec::new();
    for entry in dict.trim_matches(|c| c == '{' || c == '}').split(", ") {
        let Some(gpu) = entry.rsplit(": ").next().and_then(|g| g.trim().parse::<u64>().ok()) else { continue };
        match out.iter_mut().find(|(g, _)| *g == gpu) {
            Some((_, n)) => *n += 1,
            None => out.push((gpu, 1)),
        }
    }
    out
}

/// The code block for `code`, folded when it carries a long `device_map`.
pub fn code(h: &mut Html, id: &str, testid: &str, code: &str) {
    let Some((before, dict, after)) = split_map(code) else { return code_block(h, id, testid, code) };
    let gpus = per_gpu(dict);
    let modules: usize = gpus.iter().map(|(_, n)| n).sum();
    if modules <= INLINE_MODULES {
        return code_block(h, id, testid, code);
    }
    let summary = gpus
        .iter()
        .map(|(g, n)| ["GPU ", &g.to_string(), ": ", &n.to_string()].concat())
        .collect::<Vec<_>>()
        .join(", ");
    // What Copy takes: the snippet as given.
    h.raw("<pre hidden").attr("id", id).raw(">").t(code).raw("</pre>");
    if !before.is_empty() {
        h.raw("<pre class=\"code\"");
        if !testid.is_empty() {
            h.attr("data-testid", testid);
        }
        h.raw(">").t(before).t("device_map").t(after).raw("</pre>");
    }
    h.raw("<details class=\"more\" data-testid=\"device-map-fold\"><summary>device_map: ")
        .t(&modules.to_string())
        .t(" modules (")
        .t(&summary)
        .raw(")</summary><pre class=\"code\">")
        .t("device_map = ")
        .t(dict)
        .raw("</pre></details>");
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_map_folds_and_copy_keeps_the_snippet() {
        let layers: Vec<String> = (0..10).map(|i| format!("\"model.layers.{i}\": {}", i / 5)).collect();
        let code = format!(
            "AutoModelForCausalLM.from_pretrained(\"org/m\", device_map={{\"model.embed_tokens\": 0, {}, \"lm_head\": 1}})",
            layers.join(", ")
        );
        let mut h = crate::html::Html::new();
        super::code(&mut h, "fix-code-0", "fix-code", &code);
        let html = h.finish();
        assert!(html.contains("<details class=\"more\" data-testid=\"device-map-fold\"><summary>device_map: 12 modules (GPU 0: 6, GPU 1: 6)</summary>"), "{html}");
        assert!(html.contains("from_pretrained(&quot;org/m&quot;, device_map=device_map)</pre>"), "{html}");
        // The hidden copy is the snippet, escaped, whole.
        let mut whole = crate::html::Html::new();
        whole.t(&code);
        assert!(html.contains(&["<pre hidden id=\"fix-code-0\">", &whole.finish(), "</pre>"].concat()), "{html}");
    }

    #[test]
    fn short_snippets_stay_inline() {
        let mut h = crate::html::Html::new();
        super::code(&mut h, "c", "", "vllm serve org/m --tensor-parallel-size 2");
        assert!(!h.finish().contains("<details"));
        let mut h = crate::html::Html::new();
        super::code(&mut h, "c", "", "f(device_map={\"a\": 0, \"b\": 1})");
        assert!(!h.finish().contains("<details"));
    }
}

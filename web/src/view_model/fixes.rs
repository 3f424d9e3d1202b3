//! The ranked fixes of a plan that does not fit, as the page shows them
//! (`components::answer::FixesPanel`, in the first load). Each "Apply"
//! button carries the fixed plan as a share-link query (`data-query`), which
//! the page decodes as it decodes its own link.

use shared::fixes::{Fix, FixKind};
use shared::link::{LinkState, encode};
use shared::model::Model;
use shared::units::{UnitSystem, format_bytes};

use super::html::{Html, copy_button, gives_up_text};
use super::resolve::inputs_for;
use crate::html::action::AnswerAction;

/// The ranked fixes (empty when there are none); `state` and `model` are
/// the plan's, from which each fix's inputs are derived.
pub fn fixes_html(fixes: &[Fix], state: &LinkState, model: &Model) -> String {
    if fixes.is_empty() {
        return String::new();
    }
    let units: UnitSystem = state.units;
    let mut h = Html::new();
    h.raw(
        "<section class=\"card fixes\" data-testid=\"fixes\" aria-labelledby=\"fixes-heading\">\
         <h3 id=\"fixes-heading\">Fixes, cheapest first</h3><ol class=\"fix-list\">",
    );
    for (i, f) in fixes.iter().enumerate() {
        let code_id = format!("fix-code-{i}");
        h.raw("<li class=\"fix\" data-testid=\"fix\"")
            .attr("data-kind", &format!("{:?}", f.kind))
            .flag("data-fits", f.fits)
            .raw("><div class=\"fix-head\">");
        if f.kind == FixKind::Fit {
            h.raw("<strong data-testid=\"fix-fit\">").t(&f.title).raw("</strong>");
        } else {
            h.el("strong", "", &f.title);
        }
        h.el(
            "span",
            if f.fits { "badge basis-exact" } else { "badge basis-empirical" },
            if f.fits { "fits" } else { "helps" },
        )
        .raw("</div><p class=\"hint\">")
        .t(gives_up_text(f.gives_up))
        .raw(" · <span data-testid=\"fix-saves\"")
        .num("data-bytes", f.saves_bytes)
        .raw(">saves ")
        .t(&format_bytes(f.saves_bytes, units))
        .raw("</span></p>");
        super::fold::code(&mut h, &code_id, "fix-code", &f.code);
        h.raw("<div class=\"fix-actions\">");
        copy_button(&mut h, "fix-copy", &code_id);
        h.raw("<button type=\"button\" class=\"primary small\" data-testid=\"fix-apply\"")
            .action(AnswerAction::Apply)
            .attr("data-query", &encode(&inputs_for(&f.scenario, state, model)))
            .attr("data-title", &f.title)
            .raw(">Apply to the plan</button></div></li>");
    }
    h.raw("</ol></section>");
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::escape_html;
    use crate::view_model::hub::HubState;
    use crate::view_model::resolve;
    use shared::fixes::fixes;
    use shared::link::decode;

    /// The fixes' HTML for the plan of a share link's `query` (and, for a
    /// `hf=` or `file=` model, the hub's answer), as the page shows them;
    /// empty when the plan has no model, is not runnable or fits (unless its
    /// engine changes it before loading: llama.cpp's `--fit` with less than
    /// its target free).
    fn fixes_for(query: &str, hub: &HubState) -> String {
        let state = decode(query).state;
        let Ok(model) = resolve::model(&state, hub) else { return String::new() };
        let Ok(scenario) = resolve::scenario(&state, &model) else { return String::new() };
        // Empty for a plan that fits, unless its engine changes it by itself.
        fixes_html(&fixes(&model, &scenario), &state, &model)
    }

    /// The `data-query` values of the apply buttons, unescaped.
    fn queries(html: &str) -> Vec<String> {
        html.split("data-query=\"")
            .skip(1)
            .map(|rest| rest[..rest.find('"').expect("a closing quote")].replace("&amp;", "&"))
            .collect()
    }

    #[test]
    fn each_fix_applies_as_a_link() {
        let query = "model=llama-3.1-70b&gpu=rtx-4090&g=1&p=4096&n=1024";
        let state = decode(query).state;
        let model = resolve::model(&state, &HubState::Idle).expect("a preset");
        let scenario = resolve::scenario(&state, &model).expect("a plan");
        let fixes = fixes(&model, &scenario);
        assert!(fixes.iter().any(|f| f.fits), "a fix that fits");
        let html = fixes_for(query, &HubState::Idle);
        assert_eq!(html, fixes_html(&fixes, &state, &model));
        assert_eq!(html.matches("data-testid=\"fix\"").count(), fixes.len());
        assert!(html.contains("data-action=\"copy\" data-testid=\"fix-copy\" data-target=\"fix-code-0\""));
        assert!(html.contains(&format!("data-bytes=\"{}\"", fixes[0].saves_bytes)));
        assert!(html.contains(&escape_html(&fixes[0].code)));
        let links = queries(&html);
        assert_eq!(links.len(), fixes.len());
        // Applying a fix gives its plan: the link decodes to the fix's
        // inputs, and a fix that fits makes the plan fit.
        for (f, link) in fixes.iter().zip(&links) {
            let next = decode(link).state;
            assert_eq!(next, inputs_for(&f.scenario, &state, &model), "{}", f.title);
            let m = resolve::model(&next, &HubState::Idle).expect("a preset");
            let fits = shared::estimate::estimate(&m, resolve::scenario(&next, &m).expect("a plan")).fits;
            if f.fits {
                assert!(fits, "{} fits once applied", f.title);
            }
        }
    }

    #[test]
    fn a_plan_that_fits_has_no_fixes() {
        assert_eq!(fixes_for("model=llama-3.1-8b&gpu=h100-sxm", &HubState::Idle), "");
        assert_eq!(fixes_for("model=no-such-model", &HubState::Idle), "");
    }
}

//! The page's state: one validated input struct ([`LinkState`]) in one
//! signal, synced with the URL, and memos over `shared` for everything shown.
//! Effects here only talk to the outside world: the URL ([`url`]), the hub
//! ([`hub`]) and the clipboard ([`clipboard`]).

pub mod bundles;
pub mod clipboard;
pub mod headers;
pub mod hub;
pub mod reader;
pub mod url;

use leptos::prelude::*;
use shared::estimate::{Estimate, ValidScenario, estimate};
use shared::link::{LinkState, NewerEngine, newer_engine};
use shared::model::Model;
use shared::units::UnitSystem;

use crate::view_model::hub::HubState;
use crate::view_model::resolve::{self, NoModel};
use bundles::Load;
use reader::BundleReader;

/// Light, dark, or whatever the system prefers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

impl Theme {
    pub fn attr(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }
}

/// Everything components read, provided as context.
#[derive(Debug, Clone, Copy)]
pub struct AppState {
    /// The one source of truth: every input of the page.
    pub inputs: RwSignal<LinkState>,
    /// What the link (or an input) could not use.
    pub notices: RwSignal<Vec<String>>,
    /// Newer engine rules than those the opened link pins, offered until the
    /// person switches or keeps the link's (`components::layout::EngineUpdate`).
    pub engine_offer: RwSignal<Option<NewerEngine>>,
    /// The answer of the hub for a `hf=` model.
    pub hub: RwSignal<HubState>,
    /// Where the on-demand model reader stands ([`reader`]).
    pub reader: RwSignal<Load>,
    pub theme: RwSignal<Theme>,
    pub units: Memo<UnitSystem>,
    pub model: Memo<Result<Model, NoModel>>,
    pub scenario: Memo<Option<ValidScenario>>,
    /// Why the inputs make no runnable plan (e.g. `tp` does not divide the GPUs).
    pub plan_problem: Memo<Option<String>>,
    pub estimate: Memo<Option<Estimate>>,
    /// Where the on-demand diagnose bundle stands: it computes the
    /// diagnosis of a pasted error or log ([`bundles::load_diagnose`]).
    pub diagnose: RwSignal<Load>,
    /// The pasted out-of-memory error (kept out of the link unless shared).
    pub oom_text: RwSignal<String>,
    /// Whether the pasted error goes into the share link (`oom=`).
    pub share_oom: RwSignal<bool>,
    /// The pasted error as the share link carries it (`shared::link::compact_oom`,
    /// run by the on-demand diagnose bundle; `None` when it is too long).
    pub oom_link: RwSignal<Option<String>>,
}

impl AppState {
    /// The state for a decoded link.
    pub fn new(mut initial: LinkState, notices: Vec<String>) -> Self {
        let engine_offer = RwSignal::new(newer_engine(&initial.engine));
        // A shared error fills the diagnose view; the inputs keep only the plan.
        let initial_oom = initial.oom.take();
        let inputs = RwSignal::new(initial);
        let hub = RwSignal::new(HubState::Idle);
        let units = Memo::new(move |_| inputs.with(|s| s.units));
        let reader = RwSignal::new(reader::initial());
        let model = Memo::new(move |_| {
            let read = BundleReader(reader.get());
            inputs.with(|s| hub.with(|h| resolve::model_with(s, h, &read)))
        });
        let planned =
            Memo::new(move |_| model.with(|m| m.as_ref().ok().map(|m| inputs.with(|s| resolve::scenario(s, m)))));
        let scenario = Memo::new(move |_| planned.with(|p| p.as_ref().and_then(|r| r.as_ref().ok().cloned())));
        let plan_problem = Memo::new(move |_| planned.with(|p| p.as_ref().and_then(|r| r.as_ref().err().cloned())));
        let estimate = Memo::new(move |_| {
            model.with(|m| scenario.with(|s| m.as_ref().ok().zip(s.as_ref()).map(|(m, s)| estimate(m, s.clone()))))
        });
        let oom = initial_oom.unwrap_or_default();
        let share_oom = RwSignal::new(!oom.is_empty());
        // A shared error arrives compacted already.
        let oom_link = RwSignal::new((!oom.is_empty()).then(|| oom.clone()));
        let oom_text = RwSignal::new(oom);
        Self {
            plan_problem,
            diagnose: RwSignal::new(Load::Idle),
            oom_text,
            share_oom,
            oom_link,
            inputs,
            notices: RwSignal::new(notices),
            engine_offer,
            hub,
            reader,
            theme: RwSignal::new(Theme::System),
            units,
            model,
            scenario,
            estimate,
        }
    }

    /// The link state with the pasted error when the person shares it.
    pub fn link_state(&self) -> LinkState {
        let mut s = self.inputs.get();
        if self.share_oom.get() {
            s.oom = self.oom_link.get();
        }
        s
    }

    /// Changes one input.
    pub fn edit(&self, f: impl FnOnce(&mut LinkState)) {
        self.inputs.update(f);
    }
}

/// The state provided by [`crate::App`]. (Not `expect_context`: its panic
/// message formats a `Location` and the type name with `{:?}`, which brings
/// the Unicode escape tables into the first load.)
pub fn use_app() -> AppState {
    use_context::<AppState>().unwrap_or_else(|| panic!("the page's state is provided by App"))
}

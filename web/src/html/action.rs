//! What a button (or select) in a panel does: the `data-action` attribute,
//! written by the builder ([`super::Html::action`]) and decoded in one place
//! ([`Action::parse`]) by the delegated handlers, grouped by the handler that
//! acts on them so each handler's `match` lists all of its own.

/// Every `data-action` the page's panels carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The calculator's answer (`components/answer/panel.rs`).
    Answer(AnswerAction),
    /// A live host's panel (`live/runtime/events.rs`).
    Host(HostAction),
    /// "Fits now" under the verdict (`live/runtime/events.rs`).
    Now(NowAction),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerAction {
    /// Copy the text of the element `data-target` names.
    Copy,
    /// Apply fix number `data-index` to the plan.
    Apply,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAction {
    /// Check the plan on GPU `data-gpu` (again: stop checking).
    UseGpu,
    Reconnect,
    Disconnect,
    Remove,
    /// Use the CUDA context cost a probe measured (`data-bytes`) in "fits now".
    UseContext,
    ProbeStart,
    ProbeCancel,
    /// The probe's GPU `<select>` (a `change`, not a click).
    ProbeGpu,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NowAction {
    /// Stop checking the plan against the live GPU.
    ClearTarget,
    /// Use the calculator's CUDA context assumption again.
    ContextClear,
}

impl From<AnswerAction> for Action {
    fn from(a: AnswerAction) -> Self {
        Action::Answer(a)
    }
}

impl From<HostAction> for Action {
    fn from(a: HostAction) -> Self {
        Action::Host(a)
    }
}

impl From<NowAction> for Action {
    fn from(a: NowAction) -> Self {
        Action::Now(a)
    }
}

impl Action {
    /// Every action, for [`Action::parse`].
    pub const ALL: [Action; 12] = [
        Action::Answer(AnswerAction::Copy),
        Action::Answer(AnswerAction::Apply),
        Action::Host(HostAction::UseGpu),
        Action::Host(HostAction::Reconnect),
        Action::Host(HostAction::Disconnect),
        Action::Host(HostAction::Remove),
        Action::Host(HostAction::UseContext),
        Action::Host(HostAction::ProbeStart),
        Action::Host(HostAction::ProbeCancel),
        Action::Host(HostAction::ProbeGpu),
        Action::Now(NowAction::ClearTarget),
        Action::Now(NowAction::ContextClear),
    ];

    /// The attribute value.
    pub fn as_attr(self) -> &'static str {
        match self {
            Action::Answer(AnswerAction::Copy) => "copy",
            Action::Answer(AnswerAction::Apply) => "apply",
            Action::Host(HostAction::UseGpu) => "use-gpu",
            Action::Host(HostAction::Reconnect) => "reconnect",
            Action::Host(HostAction::Disconnect) => "disconnect",
            Action::Host(HostAction::Remove) => "remove",
            Action::Host(HostAction::UseContext) => "use-context",
            Action::Host(HostAction::ProbeStart) => "probe-start",
            Action::Host(HostAction::ProbeCancel) => "probe-cancel",
            Action::Host(HostAction::ProbeGpu) => "probe-gpu",
            Action::Now(NowAction::ClearTarget) => "clear-target",
            Action::Now(NowAction::ContextClear) => "context-clear",
        }
    }

    /// The action an attribute value names; `None` for anything else.
    pub fn parse(attr: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_attr() == attr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Its position in [`Action::ALL`]: exhaustive, so a new variant does not
    /// compile until it is listed here (and then in `ALL`, or the test fails).
    fn position(a: Action) -> usize {
        use {AnswerAction as A, HostAction as H, NowAction as N};
        match a {
            Action::Answer(A::Copy) => 0,
            Action::Answer(A::Apply) => 1,
            Action::Host(H::UseGpu) => 2,
            Action::Host(H::Reconnect) => 3,
            Action::Host(H::Disconnect) => 4,
            Action::Host(H::Remove) => 5,
            Action::Host(H::UseContext) => 6,
            Action::Host(H::ProbeStart) => 7,
            Action::Host(H::ProbeCancel) => 8,
            Action::Host(H::ProbeGpu) => 9,
            Action::Now(N::ClearTarget) => 10,
            Action::Now(N::ContextClear) => 11,
        }
    }

    #[test]
    fn every_action_round_trips_through_its_attribute() {
        for (i, a) in Action::ALL.into_iter().enumerate() {
            assert_eq!(position(a), i, "{a:?} listed once, in order");
            assert_eq!(Action::parse(a.as_attr()), Some(a), "{a:?}");
            let attr = a.as_attr();
            assert!(!attr.is_empty() && attr.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{attr}");
        }
        for unknown in ["", "Copy", "copy ", "use_gpu", "<x>"] {
            assert_eq!(Action::parse(unknown), None, "{unknown}");
        }
    }
}

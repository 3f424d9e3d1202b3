//! The board: scores, evidence and fixes as rules add them.

use super::{Cause, CauseId, DiagnosisFix, FixId};
use crate::fixes::GivesUp;

/// A sentence of evidence with the score its rule gave.
type Evidence = (u32, String);

#[derive(Debug, Default)]
pub(super) struct Board {
    scores: Vec<(CauseId, u32, Vec<Evidence>)>,
    fixes: Vec<DiagnosisFix>,
    pub(super) notes: Vec<String>,
    /// Findings for the "limits" step.
    pub(super) limits: Vec<String>,
}

impl Board {
    /// Suspects `id` with `score`; the cause's score is the highest of its rules.
    pub(super) fn add(&mut self, id: CauseId, score: u32, evidence: String) {
        let score = score.min(100);
        match self.scores.iter_mut().find(|(c, _, _)| *c == id) {
            Some((_, s, ev)) => {
                *s = (*s).max(score);
                ev.push((score, evidence));
            }
            None => self.scores.push((id, score, vec![(score, evidence)])),
        }
    }

    pub(super) fn fix(&mut self, fix: DiagnosisFix) {
        if !self.fixes.iter().any(|f| f.id == fix.id && f.code == fix.code) {
            self.fixes.push(fix);
        }
    }

    /// Whether no rule suspected any cause.
    pub(super) fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub(super) fn has(&self, id: CauseId) -> bool {
        self.scores.iter().any(|(c, _, _)| *c == id)
    }

    pub(super) fn ranked(&self) -> Vec<Cause> {
        let mut list: Vec<_> = self.scores.clone();
        crate::order::sort_by(&mut list, |a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        list.into_iter()
            .enumerate()
            .map(|(i, (id, score, mut evidence))| {
                crate::order::sort_by_key(&mut evidence, |e| std::cmp::Reverse(e.0));
                Cause {
                    id,
                    rank: u32::try_from(i + 1).unwrap_or(u32::MAX),
                    score,
                    step: id.step(),
                    title: id.title().into(),
                    evidence: evidence.into_iter().map(|(_, e)| e).collect(),
                }
            })
            .collect()
    }

    /// The fixes by the rank of their cause; within a cause by cost when
    /// `by_cost` (a plan measured them), else in the order rules added them
    /// (the OOM checklist's order, when nothing can be measured).
    pub(super) fn ordered_fixes(&self, causes: &[Cause], by_cost: bool) -> Vec<DiagnosisFix> {
        let rank = |id: CauseId| causes.iter().find(|c| c.id == id).map_or(u32::MAX, |c| c.rank);
        let mut out = self.fixes.clone();
        // Stable: within a cause and a cost, rules added the most telling fix first.
        crate::order::sort_by_key(&mut out, |f| {
            (rank(f.cause), f.fits == Some(false), if by_cost { f.gives_up } else { GivesUp::Nothing })
        });
        out
    }
}

pub(super) fn fix(
    id: FixId,
    cause: CauseId,
    title: String,
    gives_up: GivesUp,
    saves: Option<u64>,
    code: String,
) -> DiagnosisFix {
    DiagnosisFix { id, cause, title, gives_up, saves_bytes: saves, fits: None, code }
}

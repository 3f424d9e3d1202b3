//! A DFA built lazily over a compiled pattern's program, as RE2 and the
//! `regex` crate's hybrid engine do: each set of steps alive after some
//! input becomes a state once, and each (state, byte) transition is found
//! once, so that the ~1,000 tensor names of a placement, which share most
//! of their bytes (`blk.N.ffn_up_exps.weight`), cost a table lookup per byte
//! once the first few have been read. A transition not yet known costs one
//! pass over the program, the NFA's price; the cache is bounded and starts
//! over when full, so memory stays small whatever the pattern.

use super::Inst;

/// The most states kept, and the most program steps they may list in all
/// (4 bytes each): about 0.5 MiB of transitions and 1 MiB of steps.
const MAX_STATES: usize = 512;
const MAX_CACHED_STEPS: usize = 1 << 18;
/// A transition not computed yet.
const UNKNOWN: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub(super) struct Dfa {
    states: Vec<State>,
    /// Each state's key (its steps, and a mark for a match) with its id,
    /// sorted by key: a binary search, not a hash map, whose code the
    /// page's first load would carry (5 kB gzip).
    index: Vec<(Box<[u32]>, u32)>,
    cached_steps: usize,
    start: Option<u32>,
    /// How often a full cache started over (a state id is good within one).
    generation: u32,
}

#[derive(Debug, Clone)]
struct State {
    /// The steps alive: those that read a byte, and the `$` steps, which
    /// pass only at the name's end. In program order, so equal sets are one state.
    steps: Box<[u32]>,
    /// `Match` was reached: the name matches, whatever follows.
    matched: bool,
    next: Box<[u32; 256]>,
}

/// The steps reached from `starts` without reading a byte, at a position
/// that is the name's start (`^` passes) or not, and its end (`$` passes)
/// or not, in program order (so equal sets are equal lists, with no sort);
/// whether `Match` is among them. A `$` that does not pass is kept as a
/// step, to pass at the end.
fn closure(program: &[Inst], starts: &[usize], at_start: bool, at_end: bool) -> (Vec<u32>, bool) {
    let mut seen = vec![false; program.len()];
    let mut stack = starts.to_vec();
    let mut matched = false;
    while let Some(pc) = stack.pop() {
        if std::mem::replace(&mut seen[pc], true) {
            continue;
        }
        match &program[pc] {
            Inst::Match => matched = true,
            Inst::Jump(to) => stack.push(*to),
            Inst::Split(a, b) => stack.extend([*b, *a]),
            Inst::Start if at_start => stack.push(pc + 1),
            Inst::End if at_end => stack.push(pc + 1),
            Inst::Start | Inst::End | Inst::Byte(_) | Inst::Any | Inst::Class(_) => {}
        }
    }
    let steps = (0..program.len())
        .filter(|&pc| seen[pc] && matches!(program[pc], Inst::End | Inst::Byte(_) | Inst::Any | Inst::Class(_)))
        .map(|pc| pc as u32)
        .collect();
    (steps, matched)
}

impl Dfa {
    /// `std::regex_search`: whether `program` matches anywhere in `name`.
    pub(super) fn search(&mut self, program: &[Inst], name: &[u8]) -> bool {
        let mut state = self.start(program);
        for &b in name {
            if self.states[state as usize].matched {
                return true;
            }
            state = self.next(program, state, b);
        }
        let last = &self.states[state as usize];
        if last.matched {
            return true;
        }
        // At the end, `$` passes: what follows each one, read to `Match`?
        let ends: Vec<usize> = last
            .steps
            .iter()
            .filter(|&&pc| matches!(program[pc as usize], Inst::End))
            .map(|&pc| pc as usize + 1)
            .collect();
        // `^` holds at the end too when the name is empty.
        !ends.is_empty() && closure(program, &ends, name.is_empty(), true).1
    }

    fn start(&mut self, program: &[Inst]) -> u32 {
        if let Some(s) = self.start {
            return s;
        }
        let (steps, matched) = closure(program, &[0], true, false);
        let s = self.intern(steps, matched);
        self.start = Some(s);
        s
    }

    /// The state after `state` reads `b`: the steps that take it, one on,
    /// and a new start (a search tries every position).
    fn next(&mut self, program: &[Inst], state: u32, b: u8) -> u32 {
        let known = self.states[state as usize].next[usize::from(b)];
        if known != UNKNOWN {
            return known;
        }
        let mut starts: Vec<usize> = self.states[state as usize]
            .steps
            .iter()
            .filter(|&&pc| program[pc as usize].takes(b))
            .map(|&pc| pc as usize + 1)
            .collect();
        starts.push(0);
        let (steps, matched) = closure(program, &starts, false, false);
        let generation = self.generation;
        let next = self.intern(steps, matched);
        // Unless a full cache started over, and `state` with it.
        if self.generation == generation {
            self.states[state as usize].next[usize::from(b)] = next;
        }
        next
    }

    /// The state of `steps` (and `matched`: the same steps with and without
    /// a match are two states), made once.
    fn intern(&mut self, mut steps: Vec<u32>, matched: bool) -> u32 {
        // The key: the sorted steps, and past them a mark for a match.
        if matched {
            steps.push(u32::MAX);
        }
        let mut at = match self.index.binary_search_by(|(k, _)| k.as_ref().cmp(steps.as_slice())) {
            Ok(i) => return self.index[i].1,
            Err(i) => i,
        };
        if self.states.len() >= MAX_STATES || self.cached_steps + steps.len() > MAX_CACHED_STEPS {
            *self = Self { generation: self.generation.wrapping_add(1), ..Self::default() };
            at = 0;
        }
        let id = self.states.len() as u32;
        self.cached_steps += steps.len();
        let key: Box<[u32]> = steps.into();
        let steps = key[..key.len() - usize::from(matched)].into();
        self.index.insert(at, (key, id));
        self.states.push(State { steps, matched, next: Box::new([UNKNOWN; 256]) });
        id
    }
}

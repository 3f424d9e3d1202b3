//! The matcher against ECMAScript's rules, its refusals, the fuzzing
//! findings, and two oracles: the backtracking matcher it replaced and the
//! Thompson NFA its DFA's states are sets of.

use proptest::strategy::Strategy;

use super::{MAX_PROGRAM, Node, Parser, Pattern};

fn m(p: &str, name: &str) -> bool {
    Pattern::new(p).unwrap_or_else(|e| panic!("{p}: {e}")).is_match(name)
}

/// `std::regex_search` semantics, as ECMAScript defines them.
#[test]
fn searches_anywhere_with_ecmascript_syntax() {
    // A match anywhere in the name; `.` is any character.
    assert!(m("exps", "blk.3.ffn_up_exps.weight"));
    assert!(m("ffn_.*_exps", "blk.3.ffn_gate_exps.weight"));
    assert!(!m("exps", "blk.3.ffn_up_shexp.weight"));
    // common/common.h LLM_FFN_EXPS_REGEX and llm_add_n_cpu_ffn_overrides.
    let exps = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps";
    for n in ["blk.0.ffn_up_exps.weight", "blk.9.ffn_gate_up_exps.weight", "blk.1.ffn_down_chexps.weight"] {
        assert!(m(exps, n), "{n}");
    }
    assert!(!m(exps, "blk.0.ffn_gate_inp.weight"));
    assert!(m(r"blk\.1\.ffn_(up|down|gate|gate_up)_(ch|)exps", "blk.1.ffn_up_exps.weight"));
    // `\.` is a dot only; `blk\.1\.` does not match layer 11.
    assert!(!m(r"blk\.1\.", "blk.11.attn_q.weight"));
    assert!(m(r"blk.1.", "blkx1yattn"));
    // Anchors, classes, ranges, negation, shorthands.
    assert!(m(r"^blk\.[0-9]\.", "blk.7.attn_q.weight"));
    assert!(!m(r"^blk\.[0-9]\.", "blk.17.attn_q.weight"));
    assert!(m(r"blk\.(1[0-9]|2[0-3])\.ffn", "blk.23.ffn_up_exps.weight"));
    assert!(!m(r"blk\.(1[0-9]|2[0-3])\.ffn", "blk.24.ffn_up_exps.weight"));
    assert!(m(r"blk\.\d+\.attn_[^o]", "blk.4.attn_q.weight"));
    assert!(!m(r"blk\.\d+\.attn_[^o]", "blk.4.attn_output.weight"));
    assert!(m(r"weight$", "output.weight"));
    assert!(!m(r"^weight", "output.weight"));
    assert!(m(r"\w+_norm", "output_norm.weight"));
    // Bounded, lazy and non-capturing repetition.
    assert!(m(r"blk\.\d{2}\.", "blk.42.x"));
    assert!(!m(r"^blk\.\d{2}\.", "blk.4.x"));
    assert!(m(r"blk\.\d{1,2}?\.", "blk.42.x"));
    assert!(m(r"(?:up|down)_exps", "blk.0.ffn_down_exps.weight"));
    assert!(m(r"a{2,}", "xaax"));
    assert!(!m(r"a{3,}", "xaax"));
    // An empty pattern matches every name (an empty match at 0).
    assert!(m("", "output.weight"));
    // A nested star over an empty body ends.
    assert!(m("(a*)*b", "aaab"));
    assert!(!m("(a*)*c", "aaab"));
}

#[test]
fn refuses_what_it_cannot_match_as_llama_cpp_does() {
    for (p, why) in [
        (r"(a)\1", "back-reference"),
        (r"(?=a)", "look-around"),
        (r"\bblk", "word boundary"),
        ("(blk", "never closed"),
        ("blk)", "never opened"),
        ("[a-", "class"),
        ("*a", "nothing to repeat"),
        ("a**", "repeats a quantifier"),
        ("[z-a]", "out of order"),
        (r"a{3,2}", "bound"),
    ] {
        let e = Pattern::new(p).err().unwrap_or_else(|| panic!("{p} compiled"));
        assert!(e.contains(why), "{p}: {e}");
    }
}

/// The Thompson NFA the DFA's states are sets of, run directly: a
/// second oracle, and the shape of the matcher before the DFA.
mod nfa {
    use super::super::{Inst, Pattern};

    /// The threads alive at one position: program counters, each once.
    struct Threads {
        pcs: Vec<usize>,
        /// `seen[pc] == generation`: already added at this position.
        seen: Vec<u32>,
        generation: u32,
    }

    impl Threads {
        fn new(len: usize) -> Self {
            Self { pcs: Vec::with_capacity(len), seen: vec![0; len], generation: 1 }
        }

        fn clear(&mut self) {
            self.pcs.clear();
            self.generation += 1;
        }

        /// Adds `pc` and everything it reaches without reading a byte at
        /// position `i` of `s`; true when that reaches `Match`.
        fn add(&mut self, program: &[Inst], pc: usize, s: &[u8], i: usize, stack: &mut Vec<usize>) -> bool {
            stack.push(pc);
            while let Some(pc) = stack.pop() {
                if self.seen[pc] == self.generation {
                    continue;
                }
                self.seen[pc] = self.generation;
                match &program[pc] {
                    Inst::Match => return true,
                    Inst::Jump(to) => stack.push(*to),
                    Inst::Split(a, b) => {
                        stack.push(*b);
                        stack.push(*a);
                    }
                    Inst::Start => {
                        if i == 0 {
                            stack.push(pc + 1);
                        }
                    }
                    Inst::End => {
                        if i == s.len() {
                            stack.push(pc + 1);
                        }
                    }
                    Inst::Byte(_) | Inst::Any | Inst::Class(_) => self.pcs.push(pc),
                }
            }
            false
        }
    }

    pub fn search(p: &Pattern, name: &str) -> bool {
        let s = name.as_bytes();
        let program = &p.program;
        let mut now = Threads::new(program.len());
        let mut next = Threads::new(program.len());
        let mut stack = Vec::new();
        for i in 0..=s.len() {
            if now.add(program, 0, s, i, &mut stack) {
                return true;
            }
            let Some(&b) = s.get(i) else { break };
            next.clear();
            for k in 0..now.pcs.len() {
                let pc = now.pcs[k];
                if program[pc].takes(b) && next.add(program, pc + 1, s, i + 1, &mut stack) {
                    return true;
                }
            }
            std::mem::swap(&mut now, &mut next);
        }
        false
    }
}

/// The backtracking matcher this one replaced, kept as the oracle: it
/// follows ECMAScript's steps literally (greedy first, an empty loop
/// iteration stops the loop), so agreeing with it on every small pattern
/// means the NFA answers as `std::regex_search` does.
mod oracle {
    use super::Node;

    type Next<'k> = &'k mut dyn FnMut(usize) -> bool;

    pub fn search(alts: &[Vec<Node>], s: &[u8]) -> bool {
        (0..=s.len()).any(|start| alts.iter().any(|a| sequence(a, s, start, &mut |_| true)))
    }

    fn sequence(nodes: &[Node], s: &[u8], i: usize, k: Next) -> bool {
        match nodes.split_first() {
            None => k(i),
            Some((first, rest)) => one(first, s, i, &mut |j| sequence(rest, s, j, k)),
        }
    }

    fn one(n: &Node, s: &[u8], i: usize, k: Next) -> bool {
        match n {
            Node::Byte(b) => s.get(i) == Some(b) && k(i + 1),
            Node::Any => s.get(i).is_some_and(|&b| b != b'\n' && b != b'\r') && k(i + 1),
            Node::Class(c) => s.get(i).is_some_and(|&b| c.matches(b)) && k(i + 1),
            Node::Start => i == 0 && k(i),
            Node::End => i == s.len() && k(i),
            Node::Group(alts) => alts.iter().any(|a| sequence(a, s, i, k)),
            Node::Repeat { node, min, max } => repeat(node, (*min, *max), s, i, 0, k),
        }
    }

    fn repeat(node: &Node, q: (u32, Option<u32>), s: &[u8], i: usize, count: u32, k: Next) -> bool {
        let (min, max) = q;
        let can_more = max.is_none_or(|m| count < m);
        let more = |k: Next| {
            can_more && one(node, s, i, &mut |j| (j != i || count < min) && repeat(node, q, s, j, count + 1, k))
        };
        if count < min {
            return more(k);
        }
        more(k) || k(i)
    }
}

/// What the random patterns are made of: every construct the parser takes.
const TOKENS: &[&str] = &[
    "a", "b", "1", ".", "^", "$", "|", "*", "+", "?", "*?", "(", ")", "(?:", "[ab]", "[^a]", "[a-b1]", r"\d", r"\w",
    r"\s", r"\.", "{2}", "{1,}", "{0,2}", "{1,3}",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    /// Small patterns over a few bytes, every construct the parser takes:
    /// the NFA and the backtracking oracle agree on every name.
    #[test]
    fn the_dfa_and_the_nfa_answer_as_backtracking_does(
        pattern in proptest::collection::vec(proptest::sample::select(TOKENS), 0..10).prop_map(|t| t.concat()),
        names in proptest::collection::vec("[ab1._]{0,8}", 1..6),
    ) {
        let Ok(compiled) = Pattern::new(&pattern) else { return Ok(()) };
        let mut p = Parser { s: pattern.as_bytes(), i: 0 };
        let alts = p.alternatives(0).unwrap_or_else(|e| panic!("{pattern}: {e:?}"));
        // Several names through one pattern: the DFA's cache carries over.
        for name in &names {
            let want = oracle::search(&alts, name.as_bytes());
            proptest::prop_assert_eq!(compiled.is_match(name), want, "{} on {}", pattern, name);
            proptest::prop_assert_eq!(nfa::search(&compiled, name), want, "NFA: {} on {}", pattern, name);
        }
    }
}

/// The inputs a fuzzer found (research/fuzz-inputs.md): exponential
/// backtracking and nested counts that overflowed the stack. Each now
/// answers at once, as llama.cpp would, or is refused as too complex.
#[test]
fn hostile_patterns_answer_at_once_or_are_refused() {
    let long = format!("blk.{}.ffn_up_exps.weight", "b".repeat(200));
    // (.*)*X took minutes; b(.*)*X 62 s.
    assert!(!m("(.*)*X", &long));
    assert!(!m("b(.*)*X", &long));
    assert!(m("b(.*)*t$", &long));
    // Nested empty counts repeat nothing: every name matches, as an empty pattern does.
    assert!(m("(?:(?:){1000}){1000}", "output.weight"));
    // Nested counts of something unroll past the bound: refused, with the reason.
    for p in [
        "(?:(?:a){1000}){1000}",
        "((((((((((((a{1000}){1000}){1000}){1000}){1000}){1000}){1000}){1000}){1000}){1000}){1000}){1000})",
        "\\d{1000}\\w{1000}[a-z]{1000}.{1000}x{1000}",
    ] {
        let e = Pattern::new(p).err().unwrap_or_else(|| panic!("{p} compiled"));
        assert!(e.contains("too complex to check") && e.contains(&format!("{MAX_PROGRAM} steps")), "{p}: {e}");
    }
    // A large count that fits compiles and matches.
    assert!(m("a{1000}", &"a".repeat(1000)));
    assert!(!m("a{1000}", &"a".repeat(999)));
    // Found by `cargo xtask fuzz` (fuzz/regressions/ot_pattern/): 300
    // copies of an alternation with an empty branch, over every tensor
    // name of a placement, took 3.8 s as an NFA under AddressSanitizer.
    // 300 copies are over the bound now; 200 run through the DFA.
    let p = Pattern::new("(|d()}e){200}U").unwrap_or_else(|e| panic!("{e}"));
    for layer in 0..48 {
        for t in ["attn_q", "attn_k", "ffn_up_exps", "ffn_down_exps"] {
            assert!(!p.is_match(&format!("blk.{layer}.{t}.weight")));
        }
    }
    assert!(p.is_match("blk.0.U"));
}

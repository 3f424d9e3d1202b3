//! The tensor-name patterns of `-ot/--override-tensor`: llama.cpp compiles
//! each with `std::regex` (ECMAScript grammar, case-sensitive) and tests it
//! with `std::regex_search` against the tensor's name
//! (src/llama-model-loader.cpp, llama.cpp as vendored by llama-cpp-python
//! 0.3.36): a match anywhere in the name counts.
//!
//! A small matcher instead of the `regex` crate: `shared` is in the page's
//! first load, and these patterns only ever meet tensor names of a few dozen
//! ASCII bytes. It takes the ECMAScript syntax people write in `-ot`
//! (literals and `\.`, `.`, `[…]` classes with ranges and `^`, `\d \w \s`
//! and their negations, groups `(…)` and `(?:…)`, `|`, the greedy and lazy
//! quantifiers `* + ? {n} {n,} {n,m}`, the anchors `^ $`); what it does not
//! take (back-references, look-around, `\b`) is refused with the reason,
//! never matched differently from llama.cpp.
//!
//! Whether a pattern matches a name is all llama.cpp asks, and without
//! back-references that does not depend on greedy or lazy choices, so the
//! pattern is compiled to a small program and run as an automaton (every
//! alternative advanced together, one byte at a time): a DFA built lazily
//! from the program (`dfa.rs`), whose states are the sets of steps a
//! Thompson NFA would hold. Time is linear in the name for every pattern,
//! with no recursion while matching. A backtracking matcher took minutes on
//! `(.*)*X`, and nested bounded groups overflowed its stack; here the
//! program's size is bounded instead ([`MAX_PROGRAM`]), and a pattern over
//! it is refused as too complex to check.

mod dfa;

/// A compiled pattern: a program for [`Pattern::is_match`], and the DFA
/// states it has met so far (a cache: equal patterns are equal whatever
/// their caches hold).
#[derive(Debug, Clone)]
pub struct Pattern {
    program: Vec<Inst>,
    dfa: std::cell::RefCell<dfa::Dfa>,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.program == other.program
    }
}

impl Eq for Pattern {}

/// One step of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Inst {
    Byte(u8),
    Any,
    Class(Class),
    /// `^`: only at the name's start.
    Start,
    /// `$`: only at the name's end.
    End,
    /// Go on at both.
    Split(usize, usize),
    Jump(usize),
    Match,
}

/// The most steps a compiled pattern may have. A byte costs a table lookup
/// once the lazy DFA has met its state, and one pass over the program when
/// not, so this bounds the worst case: the patterns people write
/// (`blk\.(1[0-9]|2[0-3])\.ffn_.*_exps`) take a few dozen steps, `\d{1000}`
/// alone 1,000.
pub const MAX_PROGRAM: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Byte(u8),
    /// `.`: any character but a line terminator (ECMAScript).
    Any,
    Class(Class),
    Start,
    End,
    Group(Vec<Vec<Node>>),
    /// `node` at least `min` and at most `max` times (greedy or lazy: the
    /// same names match either way).
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Class {
    negated: bool,
    items: Vec<Item>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Range(u8, u8),
    /// `\d`, `\w`, `\s` (`true`) or `\D`, `\W`, `\S` (`false`).
    Digit(bool),
    Word(bool),
    Space(bool),
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

impl Item {
    fn matches(self, b: u8) -> bool {
        match self {
            Self::Range(lo, hi) => (lo..=hi).contains(&b),
            Self::Digit(yes) => b.is_ascii_digit() == yes,
            Self::Word(yes) => is_word(b) == yes,
            Self::Space(yes) => is_space(b) == yes,
        }
    }
}

impl Class {
    fn matches(&self, b: u8) -> bool {
        self.items.iter().any(|i| i.matches(b)) != self.negated
    }
}

/// The most repetitions a `{n,m}` bound may name.
const MAX_BOUND: u32 = 1000;

/// What the pattern does wrong, and at which byte.
type Fail = (&'static str, usize);

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let yes = self.peek() == Some(b);
        self.i += usize::from(yes);
        yes
    }

    fn alternatives(&mut self, depth: u32) -> Result<Vec<Vec<Node>>, Fail> {
        if depth > 32 {
            return Err(("nests groups more than 32 deep", self.i));
        }
        let mut alts = vec![self.sequence(depth)?];
        while self.eat(b'|') {
            alts.push(self.sequence(depth)?);
        }
        Ok(alts)
    }

    fn sequence(&mut self, depth: u32) -> Result<Vec<Node>, Fail> {
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            if b == b'|' || b == b')' {
                break;
            }
            let atom = self.atom(depth)?;
            out.push(self.quantified(atom)?);
        }
        Ok(out)
    }

    fn atom(&mut self, depth: u32) -> Result<Node, Fail> {
        let at = self.i;
        let b = self.peek().ok_or(("ends too soon", self.i))?;
        self.i += 1;
        Ok(match b {
            b'.' => Node::Any,
            b'^' => Node::Start,
            b'$' => Node::End,
            b'(' => {
                if self.eat(b'?') && !self.eat(b':') {
                    return Err(("uses a look-around or named group, which is not supported", at));
                }
                let alts = self.alternatives(depth + 1)?;
                if !self.eat(b')') {
                    return Err(("opens a group that is never closed", at));
                }
                Node::Group(alts)
            }
            b')' => return Err(("closes a group that was never opened", at)),
            b'[' => Node::Class(self.class()?),
            b'\\' => match self.escape(false)? {
                Item::Range(lo, _) => Node::Byte(lo),
                item => Node::Class(Class { negated: false, items: vec![item] }),
            },
            b'*' | b'+' | b'?' => return Err(("has nothing to repeat before a quantifier", at)),
            b'{' if self.bound(at).is_some() => return Err(("has nothing to repeat before a quantifier", at)),
            b => Node::Byte(b),
        })
    }

    /// What follows a `\`: a class shorthand or one literal byte.
    fn escape(&mut self, in_class: bool) -> Result<Item, Fail> {
        let at = self.i;
        let b = self.peek().ok_or(("ends with a lone `\\`", at))?;
        self.i += 1;
        Ok(match b {
            b'd' => Item::Digit(true),
            b'D' => Item::Digit(false),
            b'w' => Item::Word(true),
            b'W' => Item::Word(false),
            b's' => Item::Space(true),
            b'S' => Item::Space(false),
            b't' => Item::Range(b'\t', b'\t'),
            b'n' => Item::Range(b'\n', b'\n'),
            b'r' => Item::Range(b'\r', b'\r'),
            b'1'..=b'9' => return Err(("uses a back-reference, which is not supported", at)),
            b'b' | b'B' if !in_class => {
                return Err(("uses a word boundary, which is not supported", at));
            }
            b'b' => Item::Range(8, 8),
            b if b.is_ascii_alphanumeric() && !matches!(b, b'0') => {
                return Err(("uses an escape that is not supported", at));
            }
            b'0' => Item::Range(0, 0),
            b => Item::Range(b, b),
        })
    }

    fn class(&mut self) -> Result<Class, Fail> {
        let start = self.i;
        let negated = self.eat(b'^');
        let mut items = Vec::new();
        loop {
            let b = self.peek().ok_or(("opens a class that is never closed", start - 1))?;
            self.i += 1;
            if b == b']' {
                break;
            }
            let item = if b == b'\\' { self.escape(true)? } else { Item::Range(b, b) };
            // A range `a-z` (a `-` first, last or beside a shorthand is literal).
            if let Item::Range(lo, _) = item
                && self.peek() == Some(b'-')
                && self.s.get(self.i + 1).is_some_and(|&n| n != b']')
            {
                self.i += 1;
                let hb = self.peek().ok_or(("ends inside a class", self.i))?;
                self.i += 1;
                let hi = if hb == b'\\' { self.escape(true)? } else { Item::Range(hb, hb) };
                let Item::Range(hi, _) = hi else { return Err(("has a class range that ends in a shorthand", self.i)) };
                if hi < lo {
                    return Err(("has a class range out of order", self.i));
                }
                items.push(Item::Range(lo, hi));
            } else {
                items.push(item);
            }
        }
        Ok(Class { negated, items })
    }

    /// `{n}`, `{n,}`, `{n,m}` opening at `at`, with its length.
    fn bound(&self, at: usize) -> Option<(u32, Option<u32>, usize)> {
        let rest = self.s.get(at + 1..)?;
        let close = rest.iter().position(|&b| b == b'}')?;
        let body = std::str::from_utf8(&rest[..close]).ok()?;
        let number =
            |t: &str| (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse::<u32>().ok())?;
        let (min, max) = match body.split_once(',') {
            None => {
                let n = number(body)?;
                (n, Some(n))
            }
            Some((lo, "")) => (number(lo)?, None),
            Some((lo, hi)) => (number(lo)?, Some(number(hi)?)),
        };
        Some((min, max, close + 2))
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, Fail> {
        let at = self.i;
        let (min, max) = match self.peek() {
            Some(b'*') => (0, None),
            Some(b'+') => (1, None),
            Some(b'?') => (0, Some(1)),
            Some(b'{') => match self.bound(at) {
                Some((min, max, len)) => {
                    if max.is_some_and(|m| m < min) || min > MAX_BOUND || max.is_some_and(|m| m > MAX_BOUND) {
                        return Err(("has a bound out of order or above 1000", at));
                    }
                    self.i += len - 1;
                    (min, max)
                }
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        self.i += 1;
        if matches!(atom, Node::Start | Node::End) {
            return Err(("repeats an anchor", at));
        }
        // Lazy or greedy, the same names match.
        self.eat(b'?');
        if matches!(self.peek(), Some(b'*' | b'+' | b'?')) {
            return Err(("repeats a quantifier", self.i));
        }
        Ok(Node::Repeat { node: Box::new(atom), min, max })
    }
}

/// Steps `node` compiles to (saturating: a size over [`MAX_PROGRAM`] is
/// refused before anything is emitted).
fn size(node: &Node) -> usize {
    match node {
        Node::Byte(_) | Node::Any | Node::Class(_) | Node::Start | Node::End => 1,
        Node::Group(alts) => alternatives_size(alts),
        Node::Repeat { node, min, max } => {
            let s = size(node);
            if s == 0 {
                return 0;
            }
            let min = *min as usize;
            let tail = match max {
                // L: split(L+1, out); node; jump L
                None => s.saturating_add(2),
                // (max - min) × (split(next, out); node)
                Some(m) => (*m as usize).saturating_sub(min).saturating_mul(s.saturating_add(1)),
            };
            s.saturating_mul(min).saturating_add(tail)
        }
    }
}

fn alternatives_size(alts: &[Vec<Node>]) -> usize {
    let body = alts.iter().flatten().fold(0usize, |a, n| a.saturating_add(size(n)));
    // split and jump around each alternative but the last
    body.saturating_add(alts.len().saturating_sub(1).saturating_mul(2))
}

/// Emits the program of a pattern whose size was checked.
struct Compiler {
    program: Vec<Inst>,
}

impl Compiler {
    fn alternatives(&mut self, alts: &[Vec<Node>]) {
        let mut jumps = Vec::new();
        for (k, alt) in alts.iter().enumerate() {
            let split = (k + 1 < alts.len()).then(|| self.emit(Inst::Split(0, 0)));
            for n in alt {
                self.node(n);
            }
            if let Some(at) = split {
                jumps.push(self.emit(Inst::Jump(0)));
                self.program[at] = Inst::Split(at + 1, self.program.len());
            }
        }
        let end = self.program.len();
        for at in jumps {
            self.program[at] = Inst::Jump(end);
        }
    }

    fn node(&mut self, n: &Node) {
        match n {
            Node::Byte(b) => self.step(Inst::Byte(*b)),
            Node::Any => self.step(Inst::Any),
            Node::Class(c) => self.step(Inst::Class(c.clone())),
            Node::Start => self.step(Inst::Start),
            Node::End => self.step(Inst::End),
            Node::Group(alts) => self.alternatives(alts),
            Node::Repeat { node, min, max } => {
                // An empty body repeats to nothing, however often.
                if size(node) == 0 {
                    return;
                }
                for _ in 0..*min {
                    self.node(node);
                }
                match max {
                    None => {
                        let split = self.emit(Inst::Split(0, 0));
                        self.node(node);
                        self.step(Inst::Jump(split));
                        self.program[split] = Inst::Split(split + 1, self.program.len());
                    }
                    Some(m) => {
                        let splits: Vec<usize> = (*min..*m)
                            .map(|_| {
                                let at = self.emit(Inst::Split(0, 0));
                                self.node(node);
                                at
                            })
                            .collect();
                        let end = self.program.len();
                        for at in splits {
                            self.program[at] = Inst::Split(at + 1, end);
                        }
                    }
                }
            }
        }
    }

    fn step(&mut self, inst: Inst) {
        self.program.push(inst);
    }

    /// Pushes `inst` and returns where, for a jump to patch.
    fn emit(&mut self, inst: Inst) -> usize {
        self.program.push(inst);
        self.program.len() - 1
    }
}

impl Inst {
    /// Whether a reading step takes byte `b`.
    fn takes(&self, b: u8) -> bool {
        match self {
            Self::Byte(x) => *x == b,
            Self::Any => b != b'\n' && b != b'\r',
            Self::Class(c) => c.matches(b),
            Self::Start | Self::End | Self::Split(..) | Self::Jump(_) | Self::Match => false,
        }
    }
}

impl Pattern {
    /// Compiles `pattern`; `Err` names what llama.cpp's syntax (or this
    /// matcher) does not take.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let mut p = Parser { s: pattern.as_bytes(), i: 0 };
        let alternatives = p.alternatives(0).map_err(|(why, at)| format!("{why} (at byte {at})"))?;
        if p.i < p.s.len() {
            return Err(format!("closes a group that was never opened (at byte {})", p.i));
        }
        let steps = alternatives_size(&alternatives);
        if steps > MAX_PROGRAM {
            return Err(format!(
                "is too complex to check: its repetitions unroll past the {MAX_PROGRAM} steps this matcher takes \
                 (write fewer or smaller `{{n,m}}` counts)"
            ));
        }
        let mut c = Compiler { program: Vec::with_capacity(steps + 1) };
        c.alternatives(&alternatives);
        c.program.push(Inst::Match);
        Ok(Self { program: c.program, dfa: Default::default() })
    }

    /// `std::regex_search`: whether the pattern matches anywhere in `name`.
    pub fn is_match(&self, name: &str) -> bool {
        match self.dfa.try_borrow_mut() {
            Ok(mut dfa) => dfa.search(&self.program, name.as_bytes()),
            // A cache in use higher up the stack (never, today): a fresh one.
            Err(_) => dfa::Dfa::default().search(&self.program, name.as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests;

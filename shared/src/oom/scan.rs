//! Hand-written scanning primitives for the OOM parser: whitespace-tolerant
//! phrase matching, and numbers with units turned into exact bytes.
//!
//! Why not `regex`: it would add about 300 KB to the page's wasm bundle for a
//! handful of fixed phrases. Why whitespace-tolerant: pasted messages are
//! wrapped by terminals, notebooks and log viewers, sometimes mid-word, so a
//! phrase must match across any line break. Everything works on the bytes of
//! the normalised text and never indexes out of bounds: the parser must not
//! panic on any input.

/// Whitespace as the normaliser leaves it (it maps Unicode spaces to ASCII).
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Position of the first non-whitespace byte at or after `i`.
pub(crate) fn skip_ws(t: &[u8], mut i: usize) -> usize {
    while t.get(i).is_some_and(|&b| is_ws(b)) {
        i += 1;
    }
    i
}

/// Matches `pat` at exactly `i`, ASCII case-insensitively, and returns where
/// the match ends.
///
/// A space in `pat` needs one or more whitespace bytes in the text (so
/// "out of memory" does not match inside `OutOfMemoryError`); between two
/// other pattern bytes any whitespace is skipped, which is what lets a phrase
/// survive a line wrapped in the middle of a word.
pub(crate) fn match_at(t: &[u8], mut i: usize, pat: &str) -> Option<usize> {
    let p = pat.as_bytes();
    let mut k = 0;
    let mut first = true;
    while k < p.len() {
        let pb = *p.get(k)?;
        if is_ws(pb) {
            while p.get(k).is_some_and(|&b| is_ws(b)) {
                k += 1;
            }
            let after = skip_ws(t, i);
            if after == i {
                return None;
            }
            i = after;
            continue;
        }
        if !first {
            i = skip_ws(t, i);
        }
        first = false;
        if !t.get(i)?.eq_ignore_ascii_case(&pb) {
            return None;
        }
        i += 1;
        k += 1;
    }
    Some(i)
}

/// The first match of `pat` starting in `from..limit`, as `(start, end)`.
pub(crate) fn find(t: &[u8], from: usize, limit: usize, pat: &str) -> Option<(usize, usize)> {
    let pat = pat.trim_start();
    let first = *pat.as_bytes().first()?;
    let limit = limit.min(t.len());
    (from..limit)
        .filter(|&i| t.get(i).is_some_and(|b| b.eq_ignore_ascii_case(&first)))
        .find_map(|i| match_at(t, i, pat).map(|end| (i, end)))
}

/// Every non-overlapping match of `pat` in the whole text.
pub(crate) fn find_all(t: &[u8], pat: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some((start, end)) = find(t, from, t.len(), pat) {
        out.push((start, end));
        from = end.max(start + 1);
    }
    out
}

/// The last match of `pat` that starts before `limit`.
pub(crate) fn find_last(t: &[u8], limit: usize, pat: &str) -> Option<(usize, usize)> {
    let mut last = None;
    let mut from = 0;
    while let Some((start, end)) = find(t, from, limit, pat) {
        last = Some((start, end));
        from = end.max(start + 1);
    }
    last
}

/// The run of ASCII letters that ends just before `pos` (whitespace before
/// `pos` skipped), with where it starts. Used to read the backend word
/// (`CUDA`, `HIP`) printed in front of "out of memory".
pub(crate) fn word_before(t: &[u8], pos: usize) -> (usize, &[u8]) {
    let mut end = pos.min(t.len());
    while end > 0 && t.get(end - 1).is_some_and(|&b| is_ws(b)) {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && end - start < 16 && t.get(start - 1).is_some_and(u8::is_ascii_alphabetic) {
        start -= 1;
    }
    (start, t.get(start..end).unwrap_or_default())
}

/// Start of the line that holds `pos`.
pub(crate) fn line_start(t: &[u8], pos: usize) -> usize {
    let pos = pos.min(t.len());
    t.get(..pos).and_then(|head| head.iter().rposition(|&b| b == b'\n')).map_or(0, |i| i + 1)
}

/// End of the line that holds `pos`, plus `extra` following lines.
pub(crate) fn line_end(t: &[u8], pos: usize, extra: usize) -> usize {
    let mut i = pos.min(t.len());
    for _ in 0..=extra {
        match t.get(i..).and_then(|tail| tail.iter().position(|&b| b == b'\n')) {
            Some(n) => i += n + 1,
            None => return t.len(),
        }
    }
    i.saturating_sub(1)
}

/// How many line breaks lie in `from..to`.
pub(crate) fn lines_between(t: &[u8], from: usize, to: usize) -> usize {
    t.get(from..to.min(t.len())).map_or(0, |s| s.iter().filter(|&&b| b == b'\n').count())
}

/// A decimal number as printed, kept exact: PyTorch prints sizes with two
/// decimals of a binary unit, so float arithmetic would be off by a byte.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    /// `None` when the integer part does not fit in `u128`.
    int: Option<u128>,
    frac: u128,
    frac_digits: u32,
}

/// Fractional digits past this are read but ignored: they are far below a
/// byte for every unit up to TiB, and keep `frac * unit` inside `u128`.
const MAX_FRAC_DIGITS: u32 = 18;

/// Reads `123`, `1.95` or `.5` at `i`. With `join_lines`, a line break between
/// two digits is read through: a message hard-wrapped at a fixed width can
/// split a number.
fn decimal(t: &[u8], i: usize, join_lines: bool) -> Option<(Decimal, usize)> {
    let mut d = Decimal { int: Some(0), frac: 0, frac_digits: 0 };
    let mut i = i;
    let mut digits = 0usize;
    let mut in_frac = false;
    loop {
        match t.get(i) {
            Some(&b) if b.is_ascii_digit() => {
                let v = u128::from(b - b'0');
                if in_frac {
                    if d.frac_digits < MAX_FRAC_DIGITS {
                        d.frac = d.frac * 10 + v;
                        d.frac_digits += 1;
                    }
                } else {
                    d.int = d.int.and_then(|n| n.checked_mul(10)?.checked_add(v));
                }
                digits += 1;
                i += 1;
            }
            Some(b'.')
                if !in_frac
                    && (t.get(i + 1).is_some_and(u8::is_ascii_digit)
                        || (join_lines
                            && t.get(i + 1) == Some(&b'\n')
                            && t.get(i + 2).is_some_and(u8::is_ascii_digit))) =>
            {
                in_frac = true;
                i += 1;
            }
            Some(b'\n')
                if join_lines && digits > 0 && t.get(i + 1).is_some_and(|&b| b.is_ascii_digit() || b == b'.') =>
            {
                i += 1;
            }
            _ => break,
        }
    }
    (digits > 0).then_some((d, i))
}

/// Bytes per unit. PyTorch, vLLM and llama.cpp print binary units with the
/// IEC names; the SI names are read as decimal, as they are defined, unless
/// `si_is_binary`: SGLang prints `GB` for bytes / 2^30 (`GB = 1024 * 1024 *
/// 1024`, sglang 0.5.23 `srt/mem_cache/memory_pool.py`), and vLLM before V1
/// printed `GB` for the same (`Loading model weights took … GB`).
fn unit_bytes(word: &[u8], si_is_binary: bool) -> Option<u64> {
    let lower: Vec<u8> = word.iter().map(u8::to_ascii_lowercase).collect();
    if si_is_binary {
        match lower.as_slice() {
            b"kb" => return Some(1 << 10),
            b"mb" => return Some(1 << 20),
            b"gb" => return Some(1 << 30),
            b"tb" => return Some(1 << 40),
            _ => {}
        }
    }
    Some(match lower.as_slice() {
        b"b" | b"byte" | b"bytes" => 1,
        b"kib" => 1 << 10,
        b"mib" => 1 << 20,
        b"gib" => 1 << 30,
        b"tib" => 1 << 40,
        b"kb" => 1_000,
        b"mb" => 1_000_000,
        b"gb" => 1_000_000_000,
        b"tb" => 1_000_000_000_000,
        _ => return None,
    })
}

/// The unit word at `u` and where it ends. A unit split by a line break
/// (`Mi` / `B`) is read whole, but only when the first part alone is not a
/// unit, so `MiB` followed by a line starting with a word stays `MiB`.
fn unit_at(t: &[u8], u: usize, si_is_binary: bool) -> Option<(u64, usize)> {
    let letters = |from: usize| t.get(from..).map_or(0, |s| s.iter().take_while(|b| b.is_ascii_alphabetic()).count());
    let len = letters(u);
    if let Some(unit) = t.get(u..u + len).and_then(|w| unit_bytes(w, si_is_binary)) {
        return Some((unit, u + len));
    }
    if len == 0 || t.get(u + len) != Some(&b'\n') {
        return None;
    }
    let rest = letters(u + len + 1);
    let mut word = t.get(u..u + len)?.to_vec();
    word.extend_from_slice(t.get(u + len + 1..u + len + 1 + rest)?);
    unit_bytes(&word, si_is_binary).map(|unit| (unit, u + len + 1 + rest))
}

/// `value × unit` rounded to the nearest byte; `None` when it exceeds `u64`.
fn to_bytes(d: Decimal, unit: u64) -> Option<u64> {
    let unit = u128::from(unit);
    let whole = d.int?.checked_mul(unit)?;
    let scale = 10u128.pow(d.frac_digits);
    let frac = (d.frac * unit + scale / 2) / scale;
    u64::try_from(whole.checked_add(frac)?).ok()
}

/// A size such as `20.00 MiB` at `i`: `Some((bytes, end))` when the text is a
/// size, with `bytes` `None` when it does not fit in `u64`.
fn size_at(t: &[u8], i: usize, si_is_binary: bool) -> Option<(Option<u64>, usize)> {
    // Try reading through a line break first, then without: only the reading
    // followed by a unit is a size.
    for join in [true, false] {
        let Some((d, end)) = decimal(t, i, join) else {
            continue;
        };
        let Some((unit, unit_end)) = unit_at(t, skip_ws(t, end), si_is_binary) else {
            continue;
        };
        return Some((to_bytes(d, unit), unit_end));
    }
    None
}

/// A cursor over the normalised text: each step skips leading whitespace and
/// advances only when it matched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cur<'a> {
    pub t: &'a [u8],
    pub pos: usize,
}

impl<'a> Cur<'a> {
    pub fn new(t: &'a [u8], pos: usize) -> Self {
        Cur { t, pos }
    }

    /// Matches `pat` after any whitespace.
    pub fn lit(&mut self, pat: &str) -> bool {
        match match_at(self.t, skip_ws(self.t, self.pos), pat) {
            Some(end) => {
                self.pos = end;
                true
            }
            None => false,
        }
    }

    /// Moves past the first `pat` that starts within `window` bytes.
    pub fn find(&mut self, pat: &str, window: usize) -> bool {
        match find(self.t, self.pos, self.pos.saturating_add(window), pat) {
            Some((_, end)) => {
                self.pos = end;
                true
            }
            None => false,
        }
    }

    /// An unsigned integer: `Some(value)` if one is here (`Some(None)` when it
    /// overflows `u64`), `None` if the next token is not a number.
    pub fn uint_token(&mut self) -> Option<Option<u64>> {
        let start = skip_ws(self.t, self.pos);
        let (d, end) = decimal(self.t, start, false)?;
        if d.frac_digits > 0 {
            return None;
        }
        self.pos = end;
        Some(d.int.and_then(|n| u64::try_from(n).ok()))
    }

    pub fn uint(&mut self) -> Option<u64> {
        self.uint_token().flatten()
    }

    /// Whether the next token is on this line: a figure a truncated line
    /// left out is not read from the line after it.
    pub fn on_line(&self) -> bool {
        let next = skip_ws(self.t, self.pos);
        !self.t.get(self.pos..next).is_some_and(|gap| gap.contains(&b'\n'))
    }

    /// An unsigned integer that the phrase `then` follows; only the number is
    /// consumed. A number split by a line break is read whole when the phrase
    /// follows the whole: `Process 12` / `345 has`.
    pub fn uint_before(&mut self, then: &str) -> Option<Option<u64>> {
        let start = skip_ws(self.t, self.pos);
        for join in [true, false] {
            let Some((d, end)) = decimal(self.t, start, join) else {
                continue;
            };
            if d.frac_digits > 0 {
                continue;
            }
            if match_at(self.t, skip_ws(self.t, end), then).is_some() {
                self.pos = end;
                return Some(d.int.and_then(|n| u64::try_from(n).ok()));
            }
        }
        None
    }

    /// Like [`Cur::uint`], reading `20,000` as vLLM formats token counts.
    pub fn grouped_uint(&mut self) -> Option<u64> {
        let mut value: u64 = self.uint()?;
        while self.t.get(self.pos) == Some(&b',')
            && self.t.get(self.pos + 1..self.pos + 4).is_some_and(|g| g.iter().all(u8::is_ascii_digit))
            && !self.t.get(self.pos + 4).is_some_and(u8::is_ascii_digit)
        {
            let group = self.t.get(self.pos + 1..self.pos + 4).unwrap_or_default();
            let g = group.iter().fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
            value = value.checked_mul(1000)?.checked_add(g)?;
            self.pos += 4;
        }
        Some(value)
    }

    /// A size with its unit: `Some(bytes)` if one is here (`Some(None)` when
    /// it overflows `u64`), `None` if the next token is not a size.
    pub fn size_token(&mut self) -> Option<Option<u64>> {
        let (bytes, end) = size_at(self.t, skip_ws(self.t, self.pos), false)?;
        self.pos = end;
        Some(bytes)
    }

    /// Like [`Cur::size`], reading `KB`/`MB`/`GB`/`TB` as powers of 1024
    /// (see [`unit_bytes`]).
    pub fn binary_size(&mut self) -> Option<u64> {
        let (bytes, end) = size_at(self.t, skip_ws(self.t, self.pos), true)?;
        self.pos = end;
        bytes
    }

    pub fn size(&mut self) -> Option<u64> {
        self.size_token().flatten()
    }

    /// A fraction such as `0.84` or `1` in thousandths (840, 1000),
    /// rounded; `None` when none is here.
    pub fn fraction_permille(&mut self) -> Option<u64> {
        let start = skip_ws(self.t, self.pos);
        let (d, end) = decimal(self.t, start, false)?;
        let whole = d.int?.checked_mul(1000)?;
        let scale = 10u128.pow(d.frac_digits);
        let frac = (d.frac * 1000 + scale / 2) / scale;
        self.pos = end;
        u64::try_from(whole.checked_add(frac)?).ok()
    }

    /// A size that may be negative (vLLM prints negative available KV cache
    /// memory): `(negative, bytes)`.
    pub fn signed_size(&mut self) -> Option<(bool, Option<u64>)> {
        let mut c = *self;
        let negative = c.lit("-");
        let bytes = c.size_token()?;
        *self = c;
        Some((negative, bytes))
    }

    /// The bytes up to the next `;` or `)` (at most `max`), lower-cased and
    /// without whitespace: a field label of the pre-2.1 PyTorch message.
    pub fn label(&mut self, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = self.pos;
        while let Some(&b) = self.t.get(i) {
            if b == b';' || b == b')' || i - self.pos >= max {
                break;
            }
            if !is_ws(b) {
                out.push(b.to_ascii_lowercase());
            }
            i += 1;
        }
        self.pos = i;
        out
    }

    /// A name such as `CUDA0` or `CUDA_Host` (letters, digits, `_`), at most
    /// 32 bytes.
    pub fn name(&mut self) -> Option<&'a [u8]> {
        let start = skip_ws(self.t, self.pos);
        let tail = self.t.get(start..)?;
        if !tail.first()?.is_ascii_alphabetic() {
            return None;
        }
        let len = tail.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        if len > 32 {
            return None;
        }
        self.pos = start + len;
        tail.get(..len)
    }
}

/// Whether the text names one of `steps` and none of `start_up` (a
/// traceback's frames: an engine that failed while it served, not while it
/// started).
pub fn in_steps_only(t: &[u8], steps: &[&str], start_up: &[&str]) -> bool {
    let any = |marks: &[&str]| marks.iter().any(|m| find(t, 0, t.len(), m).is_some());
    any(steps) && !any(start_up)
}

/// The value `read` takes after the last of `forms` in the text (a later
/// setting overrides an earlier one).
pub fn last_of<T>(t: &[u8], forms: &[&str], read: impl Fn(&mut Cur<'_>) -> Option<T>) -> Option<T> {
    let mut best: Option<(usize, T)> = None;
    for form in forms {
        for (start, end) in find_all(t, form) {
            if best.as_ref().is_some_and(|(at, _)| start <= *at) {
                continue;
            }
            if let Some(v) = read(&mut Cur::new(t, end)) {
                best = Some((start, v));
            }
        }
    }
    best.map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(s: &str) -> Option<u64> {
        Cur::new(s.as_bytes(), 0).size()
    }

    #[test]
    fn sizes_convert_exactly() {
        assert_eq!(size("20.00 MiB"), Some(20 * 1024 * 1024));
        assert_eq!(size("1.95 GiB"), Some(2_093_796_557));
        assert_eq!(size("0 bytes"), Some(0));
        assert_eq!(size("512 KiB"), Some(512 * 1024));
        assert_eq!(size("1.5 TiB"), Some(3 << 39));
        assert_eq!(size("2 GB"), Some(2_000_000_000));
        assert_eq!(size("20.0\n0 MiB"), Some(20 * 1024 * 1024));
        assert_eq!(size("99999999999999999999 GiB"), None);
        assert_eq!(size("12 apples"), None);
    }

    #[test]
    fn fractions_in_thousandths() {
        assert_eq!(Cur::new(b"0.84", 0).fraction_permille(), Some(840));
        assert_eq!(Cur::new(b"0.9", 0).fraction_permille(), Some(900));
        assert_eq!(Cur::new(b"1", 0).fraction_permille(), Some(1000));
        assert_eq!(Cur::new(b"0.0305", 0).fraction_permille(), Some(31));
        assert_eq!(Cur::new(b"x", 0).fraction_permille(), None);
    }

    #[test]
    fn phrases_tolerate_wrapping_but_not_glued_words() {
        let t = b"CUDA out of me\nmory. Tried";
        assert!(find(t, 0, t.len(), "out of memory").is_some());
        let t = b"torch.OutOfMemoryError: x";
        assert!(find(t, 0, t.len(), "out of memory").is_none());
    }

    #[test]
    fn grouped_integers() {
        assert_eq!(Cur::new(b"20,000 tokens", 0).grouped_uint(), Some(20_000));
        assert_eq!(Cur::new(b"1,234,567", 0).grouped_uint(), Some(1_234_567));
        assert_eq!(Cur::new(b"12, 3", 0).grouped_uint(), Some(12));
    }

    #[test]
    fn integers_split_by_a_wrap_join_only_when_the_phrase_follows() {
        assert_eq!(Cur::new(b"12\n345 has", 0).uint_before("has"), Some(Some(12_345)));
        assert_eq!(Cur::new(b"12\n345 has", 0).uint_before("345"), Some(Some(12)));
        assert_eq!(Cur::new(b"7 GiB", 0).uint_before("has"), None);
    }
}

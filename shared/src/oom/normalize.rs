//! Turns a pasted log into one plain text the scanners can read: Python and
//! JSON escapes undone, terminal colours dropped, log metadata stripped from
//! the front of every line, and the lines joined by `\n`.
//!
//! Why strip prefixes at all: the scanners already search past anything in
//! front of a message, but a message wrapped over several lines often carries
//! the prefix again on each line (`[rank0]:` from torchrun, `kubectl logs
//! --timestamps`, `(VllmWorker rank=0 pid=123)`), and that would split a
//! phrase in two. The rules are deliberately narrow: a wrapped continuation of
//! an OOM message never starts with a log level, a timestamp or a bracket.

/// The normalised text; see the module documentation.
pub(super) fn normalize(raw: &str) -> String {
    let text = unescape(raw);
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        let line = strip_prefix(line).trim();
        if line.is_empty() {
            continue;
        }
        // `pprint` splits a long string into adjacent literals on separate
        // lines ('... total ' / 'capacity; ...'): glue them back together.
        if let Some(q) = out.chars().last().filter(|c| matches!(c, '\'' | '"'))
            && let Some(rest) = line.strip_prefix(q)
        {
            out.pop();
            out.push_str(rest);
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

/// Undoes the escapes of a Python `repr` or a JSON string (`\n`, `\'`, `\"`,
/// `\t`, `\uXXXX`, doubled backslashes), drops ANSI colour sequences and maps
/// every other space or control character to a plain space.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                // A run of backslashes is one escape: text escaped twice (a
                // JSON log holding a repr) reads like text escaped once.
                let mut run = 1usize;
                while chars.peek() == Some(&'\\') {
                    chars.next();
                    run += 1;
                }
                match chars.peek().copied() {
                    Some('n') => {
                        chars.next();
                        out.push('\n');
                    }
                    Some('r') => {
                        chars.next();
                    }
                    Some('t') => {
                        chars.next();
                        out.push(' ');
                    }
                    Some(q @ ('\'' | '"')) => {
                        chars.next();
                        out.push(q);
                    }
                    Some('u') => {
                        let hex: String = chars.clone().skip(1).take(4).collect();
                        let decoded = (hex.len() == 4)
                            .then(|| u32::from_str_radix(&hex, 16).ok())
                            .flatten()
                            .and_then(char::from_u32);
                        match decoded {
                            Some(ch) => {
                                for _ in 0..5 {
                                    chars.next();
                                }
                                if ch == '\u{1b}' {
                                    skip_ansi(&mut chars);
                                } else {
                                    push_plain(&mut out, ch);
                                }
                            }
                            None => out.push('\\'),
                        }
                    }
                    Some('x') if chars.clone().skip(1).take(2).eq("1b".chars()) => {
                        for _ in 0..3 {
                            chars.next();
                        }
                        skip_ansi(&mut chars);
                    }
                    _ => out.extend(std::iter::repeat_n('\\', run)),
                }
            }
            '\u{1b}' => skip_ansi(&mut chars),
            '\r' => {
                // A lone carriage return (progress bars) ends a line too.
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            other => push_plain(&mut out, other),
        }
    }
    out
}

/// Pushes `c`, mapping typographic quotes to ASCII ones and any other space
/// or control character to a space.
fn push_plain(out: &mut String, c: char) {
    match c {
        '\n' => out.push('\n'),
        '\u{2018}' | '\u{2019}' => out.push('\''),
        '\u{201c}' | '\u{201d}' => out.push('"'),
        '\u{1b}' => {}
        c if c.is_whitespace() || c.is_control() => out.push(' '),
        c => out.push(c),
    }
}

/// Skips the rest of an ANSI escape sequence whose `ESC` was just read.
fn skip_ansi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    if chars.peek() == Some(&'[') {
        chars.next();
        // Parameters and intermediates, then one final byte in `@`..=`~`.
        for c in chars.by_ref() {
            if ('@'..='~').contains(&c) {
                break;
            }
        }
    } else {
        chars.next();
    }
}

/// Strips log metadata from the front of one line.
fn strip_prefix(line: &str) -> &str {
    let mut rest = line.trim_start();
    let mut in_prefix = false;
    while let Some(next) = strip_one(rest, in_prefix) {
        let next = next.trim_start();
        if next.len() >= rest.len() {
            break;
        }
        rest = next;
        in_prefix = true;
    }
    rest
}

/// What a quoted paste carries in front of each line: markdown's `>`, and
/// the bars a chat client's or a terminal renderer's quote block is copied
/// with (`▎` eugr/spark-vllm-docker#396, `▍`, `▌`, `│`, `┃`), each a token
/// of its own.
const QUOTE_MARKS: [&str; 6] = [">", "\u{258e}", "\u{258d}", "\u{258c}", "\u{2502}", "\u{2503}"];

const LEVELS: [&str; 9] = ["TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// One prefix element off the front of `s`, if `s` starts with one. Rules
/// that could eat message text are only tried once something else was
/// stripped (`in_prefix`).
fn strip_one(s: &str, in_prefix: bool) -> Option<&str> {
    let (tok, after) = split_token(s);
    let (next_tok, after_next) = split_token(after.trim_start());
    let is_sep = |t: &str| matches!(t, "-" | "|" | ":" | "::" | ">" | "\u{2013}" | "\u{2014}");
    None.or_else(|| pid_group(s))
        .or_else(|| delimited(s, '[', ']', 100))
        .or_else(|| delimited(s, '<', '>', 24))
        .or_else(|| QUOTE_MARKS.contains(&tok).then_some(after))
        .or_else(|| level(s, tok))
        .or_else(|| is_glog_header(tok).then_some(after))
        .or_else(|| is_timestamp(tok).then_some(after))
        .or_else(|| {
            let day = !next_tok.is_empty() && next_tok.len() <= 2 && next_tok.bytes().all(|b| b.is_ascii_digit());
            (MONTHS.contains(&tok) && day).then_some(after_next)
        })
        // docker compose: `vllm-1  | message`
        .or_else(|| (tok.len() <= 64 && next_tok == "|").then_some(after_next))
        .or_else(|| {
            if !in_prefix {
                return None;
            }
            let location = tok.ends_with(']') && tok.contains(':');
            let journal_process = tok.ends_with("]:") && tok.contains('[');
            let thread_id =
                tok.bytes().all(|b| b.is_ascii_digit()) && next_tok.ends_with(']') && next_tok.contains(':');
            let named = tok.len() <= 64 && (is_sep(next_tok) || (next_tok.ends_with("]:") && next_tok.contains('[')));
            (is_sep(tok) || location || journal_process || thread_id || named).then_some(after)
        })
}

/// The first whitespace-delimited token and what follows it.
fn split_token(s: &str) -> (&str, &str) {
    match s.find(char::is_whitespace) {
        Some(i) => (s.get(..i).unwrap_or(s), s.get(i..).unwrap_or("")),
        None => (s, ""),
    }
}

/// `(VllmWorker rank=0 pid=123)`, `(RayWorkerWrapper pid=9, ip=10.0.0.2)`,
/// also with its opening parenthesis lost in a copy.
fn pid_group(s: &str) -> Option<&str> {
    let close = head(s, 200).find(')')?;
    let head = s.get(..close)?;
    let opened = head.starts_with('(') && !head.get(1..)?.contains('(');
    let unopened = !head.contains('(') && !head.contains(':');
    let tagged = head.contains("pid=") || head.contains("rank=");
    (tagged && (opened || unopened)).then(|| skip_colon(s.get(close + 1..).unwrap_or("")))
}

/// `[rank0]:`, `[core.py:123]`, `<stderr>:`: an `open`…`close` group at the
/// start of the line, short and without quotes (so a Python list is kept).
fn delimited(s: &str, open: char, close: char, max: usize) -> Option<&str> {
    let inner = s.strip_prefix(open)?;
    let end = head(inner, max).find(close)?;
    let body = inner.get(..end)?;
    if body.is_empty() || body.contains(['\'', '"', open]) {
        return None;
    }
    Some(skip_colon(inner.get(end + 1..).unwrap_or("")))
}

/// At most the first `max` bytes of `s`, cut at a character boundary.
fn head(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

fn skip_colon(s: &str) -> &str {
    s.strip_prefix(':').unwrap_or(s)
}

/// `ERROR`, `WARNING:`, and Python logging's `ERROR:root:`.
fn level<'a>(s: &'a str, tok: &str) -> Option<&'a str> {
    let name = LEVELS.iter().filter(|l| tok.starts_with(**l)).max_by_key(|l| l.len())?;
    let rest = s.get(name.len()..)?;
    match rest.chars().next() {
        None => Some(rest),
        Some(c) if c.is_whitespace() || c == '|' || c == ']' => Some(rest),
        Some(':') => {
            let rest = rest.get(1..)?;
            // `ERROR:root:message`: a logger name glued on with a colon.
            let (tok, _) = split_token(rest);
            match tok.find(':') {
                Some(i) if i > 0 && tok.get(..i)?.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) => {
                    rest.get(i + 1..)
                }
                _ => Some(rest),
            }
        }
        Some(_) => None,
    }
}

/// glog / c10 headers: `E0501`, `W0501`.
fn is_glog_header(tok: &str) -> bool {
    let b = tok.as_bytes();
    b.len() == 5 && b"IWEF".contains(&b[0]) && b[1..].iter().all(u8::is_ascii_digit)
}

/// `05-01`, `12:34:56,789`, `2024-05-01T12:34:56.123Z`: a token of digits and
/// date punctuation with at least four digits and a `-`, `:` or `/`.
fn is_timestamp(tok: &str) -> bool {
    let tok = tok.trim_end_matches([',', ']']);
    let b = tok.as_bytes();
    b.first().is_some_and(u8::is_ascii_digit)
        && b.iter().all(|c| c.is_ascii_digit() || b"-:./,TZ+".contains(c))
        && b.iter().filter(|c| c.is_ascii_digit()).count() >= 4
        && b.iter().any(|c| b"-:/".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_common_prefixes() {
        let cases = [
            ("(VllmWorker rank=0 pid=123) ERROR 05-01 12:00:00 [core.py:1] msg", "msg"),
            ("ERROR 05-01 12:00:00 llm_engine.py:79] msg", "msg"),
            ("[rank0]: msg", "msg"),
            ("2024-05-01T12:00:00.123456Z msg", "msg"),
            ("2024-05-01 12:00:00,123 - vllm.worker - ERROR - msg", "msg"),
            ("ERROR:root:msg", "msg"),
            ("May 01 12:00:00 gpu-box python3[4242]: msg", "msg"),
            ("vllm-1  | INFO 05-01 12:00:00 msg", "msg"),
            ("[1,0]<stderr>: msg", "msg"),
            ("E0501 12:00:00.123456 1234 alloc.cc:12] msg", "msg"),
            ("> msg", "msg"),
            ("\u{258e} ValueError: msg", "ValueError: msg"),
            ("> \u{2502} msg", "msg"),
            ("20.00 MiB (GPU 0; 15.78 GiB", "20.00 MiB (GPU 0; 15.78 GiB"),
            ("['CUDA out of memory']", "['CUDA out of memory']"),
            ("(GPU 0; 1 GiB total capacity)", "(GPU 0; 1 GiB total capacity)"),
        ];
        for (line, want) in cases {
            assert_eq!(strip_prefix(line), want, "{line}");
        }
    }

    #[test]
    fn undoes_repr_escapes_and_colours() {
        assert_eq!(normalize("RuntimeError('a\\nb \\'c\\'')"), "RuntimeError('a\nb 'c'')");
        assert_eq!(normalize("\u{1b}[31mERROR\u{1b}[0m x"), "x");
        assert_eq!(normalize("('total '\n 'capacity')"), "('total capacity')");
        assert_eq!(normalize("a\\u00a0b"), "a b");
    }
}

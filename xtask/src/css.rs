//! The page's stylesheet as `dist` ships it: without comments and the
//! whitespace CSS gives no meaning to (740 B less gzip on the first load,
//! measured on `web/style.css`). Our own stylesheet only, so a few rules
//! suffice and no CSS crate (lightningcss and its tree) enters the build.

/// Characters beside which whitespace means nothing. Not `:` before it (`a
/// :hover` is a descendant), nor `+`, `-`, `*`, `/` (`calc(1rem - 2px)`),
/// nor `(` `)` (`@media (x) and (y)`).
const TIGHT: &[char] = &['{', '}', ';', ',', '>'];

/// `css` minified: comments removed, each run of whitespace made one space
/// or none, `;}` made `}`; strings (`"…"`, `'…'`) are kept as written.
pub fn minify(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut chars = css.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                space = true;
            }
            c if c.is_whitespace() => space = true,
            '"' | '\'' => {
                push_space(&mut out, &mut space, c);
                out.push(c);
                let mut escaped = false;
                for s in chars.by_ref() {
                    out.push(s);
                    if !escaped && s == c {
                        break;
                    }
                    escaped = !escaped && s == '\\';
                }
            }
            '}' if out.ends_with(';') => {
                out.pop();
                out.push('}');
                space = false;
            }
            c => {
                push_space(&mut out, &mut space, c);
                out.push(c);
            }
        }
    }
    out
}

/// Writes the pending space before `next` unless either side makes it meaningless.
fn push_space(out: &mut String, space: &mut bool, next: char) {
    let prev = out.chars().next_back();
    if std::mem::take(space) && prev.is_some_and(|p| !TIGHT.contains(&p) && p != ':') && !TIGHT.contains(&next) {
        out.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::minify;

    #[test]
    fn keeps_what_means_something() {
        let css = "/* theme */\n:root, .app[data-theme=\"light\"] {\n  --bg: #fff;\n}\n\
                   .a :hover > b { margin: 0 auto; width: calc(100% - 2rem); }\n\
                   @media (max-width: 600px) and (prefers-color-scheme: dark) { .x { content: \"a  /* b */\"; } }\n";
        assert_eq!(
            minify(css),
            ":root,.app[data-theme=\"light\"]{--bg:#fff}.a :hover>b{margin:0 auto;width:calc(100% - 2rem)}\
             @media (max-width:600px) and (prefers-color-scheme:dark){.x{content:\"a  /* b */\"}}"
        );
    }

    #[test]
    fn the_page_stylesheets_keep_their_rules() {
        for sheet in ["style.css", "live.css"] {
            let path = format!("{}/../web/{sheet}", env!("CARGO_MANIFEST_DIR"));
            let css = std::fs::read_to_string(&path).expect("a stylesheet");
            let min = minify(&css);
            assert!(min.len() < css.len() * 9 / 10, "{sheet}: {} of {} bytes", min.len(), css.len());
            // Every rule survives: as many blocks, and no comment left.
            assert_eq!(min.matches('{').count(), css.matches('{').count(), "{sheet}");
            assert_eq!(min.matches('}').count(), css.matches('}').count(), "{sheet}");
            assert!(!min.contains("/*"), "{sheet}");
        }
    }
}

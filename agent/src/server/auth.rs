//! Who may talk to the agent: the token (constant-time compare, failures rate
//! limited per address), the `Host` check against DNS rebinding and the
//! WebSocket `Origin` allowlist (browsers apply no same-origin policy to
//! WebSockets, and axum checks no Origin: research/agent.md §4.1).
//!
//! The failure limit slows guessing; it never locks the owner out. The right
//! token is always accepted: it has 128 random bits (or 16+ chosen
//! characters), and behind the recommended SSH tunnel every client, the
//! owner and a guesser alike, is 127.0.0.1.

use std::fmt;
use std::net::IpAddr;

use subtle::ConstantTimeEq;

/// The shared secret. Never logged: `Debug` prints a placeholder.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("a token needs at least {MIN_TOKEN_CHARS} characters")]
    TooShort,
    #[error("a token may only hold letters, digits, `-`, `_` and `.` (it goes into URLs)")]
    BadCharacter,
    #[error("the system's random source failed: {0}")]
    NoRandomness(String),
}

const MIN_TOKEN_CHARS: usize = 16;

impl Token {
    /// 128 random bits as 32 hex digits.
    pub fn generate() -> Result<Self, TokenError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::NoRandomness(e.to_string()))?;
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// An operator-chosen token (`--token`, `--token-file`).
    pub fn parse(text: &str) -> Result<Self, TokenError> {
        let text = text.trim();
        if text.chars().count() < MIN_TOKEN_CHARS {
            return Err(TokenError::TooShort);
        }
        if !text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
            return Err(TokenError::BadCharacter);
        }
        Ok(Self(text.to_owned()))
    }

    /// For the one place that prints it: the ready-to-open URL.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison (the length is not secret).
    pub fn matches(&self, candidate: &str) -> bool {
        self.0.as_bytes().ct_eq(candidate.as_bytes()).into()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Failed authentication attempts per client address, as a token bucket:
/// `burst` failures at once, then one more per `refill`. While a bucket is
/// empty a wrong token is answered `rate_limited`, and late (one refill
/// later); a right one is accepted.
pub type FailureLimiter = crate::limit::AddressBuckets;

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    WrongToken,
    /// Wrong, and this address has failed too often lately.
    RateLimited,
}

/// Checks `presented` against the token; a failure is recorded for `ip`.
pub fn check_token(token: &Token, limiter: &FailureLimiter, ip: IpAddr, presented: &str) -> Result<(), Refusal> {
    if token.matches(presented) {
        return Ok(());
    }
    let limited = !limiter.allows(ip);
    limiter.fail(ip);
    Err(if limited { Refusal::RateLimited } else { Refusal::WrongToken })
}

/// Past this many addresses, full buckets are forgotten.
pub const MAX_TRACKED: usize = 4096;

/// Splits `host[:port]` / `[v6]:port` into the host part.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// The `Host` check against DNS rebinding: a rebinding attack needs a domain
/// name the attacker controls, so IP literals pass, as do `localhost`, this
/// machine's own name and names the operator allowed (`--allow-host`).
pub fn host_allowed(host: &str, allowed_names: &[String]) -> bool {
    let name = host_name(host.trim()).trim_end_matches('.');
    name.parse::<IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || allowed_names.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// The WebSocket `Origin` check. No `Origin` (a script, not a browser) passes;
/// the token is still required. Otherwise the origin must be the agent's own
/// (the page it serves: same scheme and `Host`) or listed exactly in
/// `--allow-origin`. Never a substring match.
pub fn origin_allowed(origin: Option<&str>, host: Option<&str>, tls: bool, allowed: &[String]) -> bool {
    let Some(origin) = origin else { return true };
    let origin = normalize_origin(origin);
    if allowed.contains(&origin) {
        return true;
    }
    let scheme = if tls { "https" } else { "http" };
    host.is_some_and(|host| origin == format!("{scheme}://{}", host.trim().to_ascii_lowercase()))
}

/// `HTTPS://Lab.example:8443/` → `https://lab.example:8443`.
pub fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Why an `--allow-origin` is not an origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    #[error(
        "`{0}` would admit every sandboxed iframe and file:// page (browsers send `Origin: null` for them); \
         give the page's own origin, e.g. https://headroom.example"
    )]
    Null(String),
    #[error("`*` is not allowed: list each origin whose pages may connect (scheme://host[:port])")]
    Wildcard,
    #[error("`{0}` has no scheme: write it as the browser sends it, e.g. https://{0}")]
    NoScheme(String),
    #[error("`{0}` has a scheme browsers do not send for web pages: use http:// or https://")]
    Scheme(String),
    #[error("`{0}` is not an origin: drop the {1} (an origin is scheme://host[:port], nothing after)")]
    Extra(String, &'static str),
    #[error("`{0}` has no host")]
    NoHost(String),
    #[error(
        "`{0}` has a bad host: use letters, digits, `-` and `.`, an IPv4 address or [IPv6] (punycode for other names)"
    )]
    BadHost(String),
    #[error("`{0}` has a bad port (1-65535)")]
    BadPort(String),
}

/// Parses an `--allow-origin` into the serialised origin a browser sends
/// (`scheme://host[:port]`, lowercase, default port dropped: RFC 6454 §6.2).
/// One trailing `/` is forgiven; `null`, `*`, paths and userinfo are not.
pub fn parse_origin(text: &str) -> Result<String, OriginError> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    if lower == "null" {
        return Err(OriginError::Null(trimmed.to_owned()));
    }
    if trimmed.contains('*') {
        return Err(OriginError::Wildcard);
    }
    let Some((scheme, rest)) = lower.split_once("://") else {
        return Err(OriginError::NoScheme(trimmed.to_owned()));
    };
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return Err(OriginError::Scheme(trimmed.to_owned())),
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    for (c, what) in [('/', "path"), ('?', "query"), ('#', "fragment"), ('@', "user name")] {
        if authority.contains(c) {
            return Err(OriginError::Extra(trimmed.to_owned(), what));
        }
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or_else(|| OriginError::BadHost(trimmed.to_owned()))?;
            if host.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(OriginError::BadHost(trimmed.to_owned()));
            }
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| OriginError::BadHost(trimmed.to_owned()))?),
            };
            (format!("[{host}]"), port)
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (authority.to_owned(), None),
        },
    };
    if host.is_empty() {
        return Err(OriginError::NoHost(trimmed.to_owned()));
    }
    let name_ok = host.starts_with('[')
        || host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if !name_ok {
        return Err(OriginError::BadHost(trimmed.to_owned()));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err(OriginError::BadPort(trimmed.to_owned())),
            Ok(p) if p == default_port => None,
            Ok(p) => Some(p),
        },
    };
    Ok(match port {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_and_validate() {
        let t = Token::generate().unwrap();
        assert_eq!(t.reveal().len(), 32);
        assert!(t.matches(t.reveal()));
        assert!(!t.matches("nope"));
        assert_ne!(Token::generate().unwrap(), t);
        assert_eq!(Token::parse("short"), Err(TokenError::TooShort));
        assert_eq!(Token::parse("has space in the token"), Err(TokenError::BadCharacter));
        assert!(Token::parse("lab-token_0123456789").is_ok());
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
    }

    #[test]
    fn hosts_resist_rebinding() {
        let allowed = vec!["gpu1.lab".to_owned()];
        for ok in ["127.0.0.1:7878", "localhost:7878", "[::1]:7878", "10.0.0.5", "GPU1.lab:7878", "app.localhost"] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for bad in ["evil.example:7878", "127.0.0.1.evil.example", "localhost.evil.example"] {
            assert!(!host_allowed(bad, &allowed), "{bad}");
        }
    }

    #[test]
    fn origins_match_exactly() {
        let allowed = vec![normalize_origin("https://headroom.example/")];
        assert!(origin_allowed(None, Some("127.0.0.1:7878"), false, &[]));
        assert!(origin_allowed(Some("http://127.0.0.1:7878"), Some("127.0.0.1:7878"), false, &[]));
        assert!(!origin_allowed(Some("https://127.0.0.1:7878"), Some("127.0.0.1:7878"), false, &[]));
        assert!(origin_allowed(Some("https://headroom.example"), Some("127.0.0.1:7878"), false, &allowed));
        assert!(!origin_allowed(Some("https://headroom.example.evil.com"), Some("x"), false, &allowed));
        assert!(!origin_allowed(Some("null"), Some("127.0.0.1:7878"), false, &allowed));
    }

    #[test]
    fn allowed_origins_are_serialised_origins() {
        for (given, parsed) in [
            ("https://headroom.example", "https://headroom.example"),
            ("HTTPS://Headroom.Example/", "https://headroom.example"),
            ("https://lab.example:443", "https://lab.example"),
            ("http://lab.example:80", "http://lab.example"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://[::1]:7878", "http://[::1]:7878"),
            ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ] {
            assert_eq!(parse_origin(given).as_deref(), Ok(parsed), "{given}");
        }
        let refused = |text: &str| parse_origin(text).unwrap_err();
        assert!(matches!(refused("null"), OriginError::Null(_)));
        assert!(matches!(refused("NULL"), OriginError::Null(_)));
        assert_eq!(refused("*"), OriginError::Wildcard);
        assert_eq!(refused("https://*.example"), OriginError::Wildcard);
        assert!(matches!(refused("headroom.example"), OriginError::NoScheme(_)));
        assert!(refused("headroom.example").to_string().contains("https://headroom.example"));
        assert!(matches!(refused("file:///tmp/x.html"), OriginError::Scheme(_)));
        assert!(matches!(refused("https://a.example/page"), OriginError::Extra(_, "path")));
        assert!(matches!(refused("https://a.example?x"), OriginError::Extra(_, "query")));
        assert!(matches!(refused("https://user@a.example"), OriginError::Extra(_, "user name")));
        assert!(matches!(refused("https://"), OriginError::NoHost(_)));
        assert!(matches!(refused("https://bad_host.example"), OriginError::BadHost(_)));
        assert!(matches!(refused("https://bücher.example"), OriginError::BadHost(_)));
        assert!(matches!(refused("https://[zz]:1"), OriginError::BadHost(_)));
        assert!(matches!(refused("https://a.example:0"), OriginError::BadPort(_)));
        assert!(matches!(refused("https://a.example:99999"), OriginError::BadPort(_)));
        assert!(matches!(refused("https://a.example:"), OriginError::BadPort(_)));
    }

    #[test]
    fn the_right_token_is_accepted_while_the_bucket_is_empty() {
        let token = Token::parse("lab-token_0123456789").unwrap();
        let limiter = FailureLimiter::new(1, std::time::Duration::from_secs(3600), MAX_TRACKED);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(check_token(&token, &limiter, ip, "wrong"), Err(Refusal::WrongToken));
        assert_eq!(check_token(&token, &limiter, ip, "wrong"), Err(Refusal::RateLimited));
        assert_eq!(check_token(&token, &limiter, ip, token.reveal()), Ok(()));
        assert_eq!(check_token(&token, &limiter, ip, "wrong"), Err(Refusal::RateLimited));
    }

    #[test]
    fn failures_are_rate_limited_per_address() {
        let limiter = FailureLimiter::new(2, std::time::Duration::from_secs(60), MAX_TRACKED);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        assert!(limiter.allows(a));
        limiter.fail(a);
        assert!(limiter.allows(a));
        limiter.fail(a);
        assert!(!limiter.allows(a));
        assert!(limiter.allows(b));
    }
}

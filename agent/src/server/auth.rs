//! Who may talk to the agent: the token (constant-time compare, failures rate
//! limited per address), the `Host` check against DNS rebinding and the
//! WebSocket `Origin` allowlist (browsers apply no same-origin policy to
//! WebSockets, and axum checks no Origin: research/agent.md §4.1).

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
/// empty every attempt from that address is refused, right token or not.
pub type FailureLimiter = crate::limit::AddressBuckets;

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

//! A connection's state as the page shows it, the reconnect backoff, what
//! each refusal means, and which agent addresses a browser will refuse to
//! reach from this page (mixed content) before anything is sent.

use shared::protocol::ErrorCode;

/// Where a connection to one agent stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkStatus {
    /// Opening the socket or waiting for `welcome`.
    Connecting,
    /// Handshake done; samples flow.
    Live,
    /// Lost (or never reached); the next attempt starts in `in_ms`.
    Reconnecting { attempt: u32, in_ms: u32, why: String },
    /// The agent said no; retrying would get the same answer.
    Refused { code: ErrorCode, message: String },
    /// The browser will not open this address from this page.
    Blocked(String),
    /// The person disconnected.
    Stopped,
}

impl LinkStatus {
    /// `data-state`, stable for tests and CSS.
    pub fn key(&self) -> &'static str {
        match self {
            LinkStatus::Connecting => "connecting",
            LinkStatus::Live => "live",
            LinkStatus::Reconnecting { .. } => "reconnecting",
            LinkStatus::Refused { .. } => "refused",
            LinkStatus::Blocked(_) => "blocked",
            LinkStatus::Stopped => "stopped",
        }
    }

    /// One short line: `live`, `reconnecting in 2 s (attempt 3)`, `refused: wrong token`.
    pub fn text(&self) -> String {
        match self {
            LinkStatus::Connecting => "connecting…".into(),
            LinkStatus::Live => "live".into(),
            LinkStatus::Reconnecting { attempt, in_ms, .. } => {
                format!("reconnecting in {} (attempt {attempt})", seconds(u64::from(*in_ms)))
            }
            LinkStatus::Refused { code, .. } => format!("refused: {}", refusal(*code)),
            LinkStatus::Blocked(_) => "blocked by the browser".into(),
            LinkStatus::Stopped => "disconnected".into(),
        }
    }

    /// What to do about it, when there is something to say.
    pub fn advice(&self) -> Option<String> {
        match self {
            LinkStatus::Refused { code, message } => Some(format!("{} (agent: “{message}”)", refusal_advice(*code))),
            LinkStatus::Blocked(why) => Some(why.clone()),
            LinkStatus::Reconnecting { why, .. } => Some(why.clone()),
            _ => None,
        }
    }
}

/// `800 ms`, `2 s`, `1 min 5 s`.
pub fn seconds(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{} s", ms.div_ceil(1_000)),
        _ => format!("{} min {} s", ms / 60_000, ms % 60_000 / 1_000),
    }
}

/// Delay before reconnect attempt `attempt` (1-based): 0.5 s doubling to 8 s.
/// Fast enough to catch an agent restart, slow enough never to hammer one.
pub fn backoff_ms(attempt: u32) -> u32 {
    500u32.saturating_mul(1 << attempt.saturating_sub(1).min(4)).min(8_000)
}

/// Whether an error code ends the connection for good (no automatic retry).
pub fn is_refusal(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::Unauthorized
            | ErrorCode::RateLimited
            | ErrorCode::UnsupportedVersion
            | ErrorCode::HandshakeRequired
            | ErrorCode::HandshakeTimeout
            | ErrorCode::ForbiddenOrigin
            | ErrorCode::ForbiddenHost
    )
}

/// The refusal in a few words.
pub fn refusal(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::Unauthorized => "wrong or missing token",
        ErrorCode::RateLimited => "too many failed attempts",
        ErrorCode::UnsupportedVersion => "protocol version mismatch",
        ErrorCode::HandshakeRequired | ErrorCode::HandshakeTimeout => "handshake failed",
        ErrorCode::ForbiddenOrigin => "origin not allowed",
        ErrorCode::ForbiddenHost => "host name not allowed",
        _ => "error",
    }
}

fn refusal_advice(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::Unauthorized => {
            "Copy the token from the line `headroom serve` printed (or its --token) and connect again."
        }
        ErrorCode::RateLimited => {
            "This token was wrong, after several wrong ones from this address; the right token is always accepted: copy it from the line `headroom serve` printed."
        }
        ErrorCode::UnsupportedVersion => {
            "This page and the agent speak different protocol versions; update one of them."
        }
        ErrorCode::ForbiddenOrigin => {
            "Open the page from the agent itself, or start the agent with --allow-origin set to this page's origin."
        }
        _ => "Retry with Connect.",
    }
}

/// Why a socket that never opened failed, in plain words.
pub fn unreachable_advice(url: &str, page_origin: &str) -> String {
    format!(
        "No answer from {url}. Is `headroom serve` running and reachable? If this page is not served by the agent, \
         the agent must list it: --allow-origin {page_origin}. Browsers may also ask for (or deny) permission to \
         reach local-network addresses: use an SSH tunnel (ssh -N -L 7878:127.0.0.1:7878 gpu-host) and open \
         http://127.0.0.1:7878/ from the agent instead."
    )
}

/// Normalises what a person typed into the WebSocket URL of an agent:
/// `gpu1:7878`, `http://gpu1:7878/`, `wss://gpu1:7878/ws` → `ws(s)://gpu1:7878/ws`.
/// `page_https` picks `wss` for bare addresses on an `https://` page.
pub fn agent_ws_url(input: &str, page_https: bool) -> Result<String, String> {
    let t = input.trim().trim_end_matches('/');
    if t.is_empty() {
        return Err("enter the agent's address, e.g. 127.0.0.1:7878".into());
    }
    let (scheme, rest) = match t.split_once("://") {
        Some(("ws" | "http", r)) => ("ws", r),
        Some(("wss" | "https", r)) => ("wss", r),
        Some((other, _)) => {
            return Err(format!("`{other}://` is not an agent address; use ws://, wss://, http:// or https://"));
        }
        None => (if page_https { "wss" } else { "ws" }, t),
    };
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!("`{input}` has no host"));
    }
    Ok(format!("{scheme}://{host}/ws"))
}

/// Host part of `ws://host:port/ws` (for labels).
pub fn url_host(url: &str) -> &str {
    url.split_once("://").map_or(url, |(_, r)| r).split('/').next().unwrap_or(url)
}

fn is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name == "localhost" || name.ends_with(".localhost") || name.starts_with("127.") || name == "::1"
}

/// Why the browser will block `url` from a page served over `page_protocol`
/// (`https:`), in plain words with the fixes; `None` when it may go through.
pub fn blocked_reason(page_protocol: &str, url: &str) -> Option<String> {
    if page_protocol != "https:" || !url.starts_with("ws://") || is_loopback(url_host(url)) {
        return None;
    }
    Some(format!(
        "This page was loaded over https://, and browsers block plain ws:// connections to network addresses from \
         it (mixed content), so {} cannot be reached from here. Three fixes: (1) an SSH tunnel, \
         `ssh -N -L 7878:127.0.0.1:7878 gpu-host`, then connect to 127.0.0.1:7878 (loopback is allowed); \
         (2) open the page from the agent itself: the URL `headroom serve` prints; (3) give the agent a \
         certificate (--tls-cert/--tls-key) and connect with wss://.",
        url_host(url)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap() {
        let d: Vec<u32> = (1..=7).map(backoff_ms).collect();
        assert_eq!(d, [500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
        assert_eq!(backoff_ms(0), 500);
        assert_eq!(backoff_ms(u32::MAX), 8_000);
    }

    #[test]
    fn addresses_normalise() {
        let check = |input: &str, https: bool, want: Result<&str, ()>| {
            assert_eq!(agent_ws_url(input, https).map_err(|_| ()), want.map(str::to_owned), "{input}");
        };
        check("127.0.0.1:7878", false, Ok("ws://127.0.0.1:7878/ws"));
        check("gpu1:7878", true, Ok("wss://gpu1:7878/ws"));
        check("http://gpu1:7878/", false, Ok("ws://gpu1:7878/ws"));
        check("https://gpu1.lab:7878/#token=x", false, Ok("wss://gpu1.lab:7878/ws"));
        check("ws://[::1]:7878/ws", false, Ok("ws://[::1]:7878/ws"));
        check("  ", false, Err(()));
        check("ftp://x", false, Err(()));
        check("http:///ws", false, Err(()));
        assert_eq!(url_host("ws://gpu1:7878/ws"), "gpu1:7878");
    }

    #[test]
    fn mixed_content_is_explained_only_where_browsers_block_it() {
        assert!(blocked_reason("https:", "ws://192.168.1.20:7878/ws").is_some_and(|w| w.contains("SSH tunnel")));
        assert!(blocked_reason("https:", "ws://gpu1:7878/ws").is_some());
        for ok in ["ws://127.0.0.1:7878/ws", "ws://localhost:7878/ws", "ws://[::1]:7878/ws", "wss://gpu1:7878/ws"] {
            assert_eq!(blocked_reason("https:", ok), None, "{ok}");
        }
        assert_eq!(blocked_reason("http:", "ws://192.168.1.20:7878/ws"), None);
    }

    #[test]
    fn states_read_plainly() {
        let r = LinkStatus::Refused { code: ErrorCode::Unauthorized, message: "wrong or missing token".into() };
        assert_eq!(r.key(), "refused");
        assert_eq!(r.text(), "refused: wrong or missing token");
        assert!(r.advice().is_some_and(|a| a.contains("token")));
        let w = LinkStatus::Reconnecting { attempt: 3, in_ms: 2_000, why: "lost".into() };
        assert_eq!(w.text(), "reconnecting in 2 s (attempt 3)");
        assert!(is_refusal(ErrorCode::Unauthorized) && !is_refusal(ErrorCode::ShuttingDown));
        assert_eq!(seconds(65_000), "1 min 5 s");
    }
}

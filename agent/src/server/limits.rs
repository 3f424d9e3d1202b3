//! The open-file limit. Every connection is a file descriptor; systemd starts
//! services with a soft limit of 1,024, where an agent with a few hundred
//! connections stops accepting. The agent raises its soft limit to the hard
//! one at start (what nginx's `worker_rlimit_nofile` and Go's runtime do),
//! and lowers its connection caps where even that is too low.

use super::ServerConfig;

/// Files the agent needs besides connections: the listener, NVML, logs,
/// probe workers' pipes, the page's assets.
const RESERVED_FILES: u64 = 64;

/// The smallest caps the agent lowers to.
const MIN_CAP: u32 = 8;

/// The soft limit before and after raising it to the hard limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    pub before: u64,
    pub now: u64,
}

/// Raises the soft open-file limit to the hard limit.
#[cfg(unix)]
pub fn raise_open_file_limit() -> std::io::Result<OpenFiles> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let before = limit.current.unwrap_or(u64::MAX);
    let target = limit.maximum.unwrap_or(u64::MAX);
    // macOS refuses more than OPEN_MAX (10,240) for an unlimited hard limit.
    #[cfg(target_os = "macos")]
    let target = target.min(10_240);
    if target <= before {
        return Ok(OpenFiles { before, now: before });
    }
    setrlimit(Resource::Nofile, rustix::process::Rlimit { current: Some(target), maximum: limit.maximum })?;
    Ok(OpenFiles { before, now: target })
}

#[cfg(not(unix))]
pub fn raise_open_file_limit() -> std::io::Result<OpenFiles> {
    Ok(OpenFiles { before: u64::MAX, now: u64::MAX })
}

/// File descriptors the caps of `config` can hold at once.
pub fn files_needed(config: &ServerConfig) -> u64 {
    u64::from(config.max_http_connections)
        + u64::from(config.max_connections)
        + 2 * u64::from(config.max_pending)
        + RESERVED_FILES
}

/// Lowers the caps of `config` until they fit `open_files`; says what it did.
pub fn fit_to_open_files(config: &mut ServerConfig, open_files: u64) -> Option<String> {
    let wanted = files_needed(config);
    if wanted <= open_files {
        return None;
    }
    let budget = open_files.saturating_sub(RESERVED_FILES);
    // Scale every cap by the same factor: each pool keeps its share.
    let scale = |cap: u32| -> u32 {
        let scaled = u128::from(cap) * u128::from(budget) / u128::from(wanted - RESERVED_FILES).max(1);
        (scaled as u32).clamp(MIN_CAP.min(cap), cap)
    };
    config.max_http_connections = scale(config.max_http_connections);
    config.max_connections = scale(config.max_connections);
    config.max_pending = scale(config.max_pending);
    Some(format!(
        "the open-file limit ({open_files}) cannot hold the connection caps ({wanted} files); serving at most \
         {} WebSockets, {} waiting for their hello and {} HTTP connections (raise `ulimit -n` or LimitNOFILE= to lift this)",
        config.max_connections, config.max_pending, config.max_http_connections
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_shrink_to_fit_a_low_limit() {
        let mut config = ServerConfig::new(super::super::Token::parse("0123456789abcdef").unwrap());
        assert!(fit_to_open_files(&mut config, 1 << 20).is_none());
        let message = fit_to_open_files(&mut config, 512).unwrap();
        assert!(files_needed(&config) <= 512, "{message}");
        assert!(config.max_connections >= MIN_CAP && config.max_http_connections >= MIN_CAP);
        assert!(message.contains("ulimit -n"), "{message}");
    }

    #[test]
    fn the_soft_limit_rises_to_the_hard_one() {
        let files = raise_open_file_limit().unwrap();
        assert!(files.now >= files.before);
        #[cfg(unix)]
        assert_eq!(Some(files.now), rustix::process::getrlimit(rustix::process::Resource::Nofile).current);
    }
}

//! Process names from `/proc` (containers: [`super::cgroup`]). NVML returns host PIDs whatever
//! the agent's namespace (research/agent.md §1.3): run on the host and every
//! process resolves; run in a container and other containers' processes are
//! "not visible", which is said rather than guessed.

use std::path::Path;

use super::{Reading, Unavailable};

/// The name of `pid` from `/proc/<pid>/comm`.
pub fn name(proc_root: &Path, pid: u32) -> Reading<String> {
    match std::fs::read_to_string(proc_root.join(pid.to_string()).join("comm")) {
        Ok(comm) => Ok(comm.trim_end().to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(Unavailable::NoPermission),
        Err(_) => Err(Unavailable::NotVisible),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_resolves_and_missing_ones_say_so() {
        let root = Path::new("/proc");
        assert!(name(root, std::process::id()).is_ok());
        assert_eq!(name(root, u32::MAX - 1), Err(Unavailable::NotVisible));
    }
}

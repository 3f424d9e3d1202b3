//! Process names and containers from `/proc`. NVML returns host PIDs whatever
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

/// The short (12-character) id of the container `pid` runs in, if any, from
/// the 64-hex-digit id in its cgroup path (docker, containerd, podman, k8s).
pub fn container(proc_root: &Path, pid: u32) -> Option<String> {
    let cgroup = std::fs::read_to_string(proc_root.join(pid.to_string()).join("cgroup")).ok()?;
    container_id(&cgroup)
}

fn container_id(cgroup: &str) -> Option<String> {
    cgroup
        .split(['/', '\n', ':', '-', '.'])
        .find(|part| part.len() == 64 && part.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|id| id[..12].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_come_from_cgroup_paths() {
        let id = "3f4e1c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
        assert_eq!(container_id(&format!("0::/system.slice/docker-{id}.scope\n")), Some(id[..12].into()));
        assert_eq!(container_id(&format!("0::/kubepods/besteffort/pod1/{id}\n")), Some(id[..12].into()));
        assert_eq!(container_id("0::/user.slice/user-1000.slice/session-2.scope\n"), None);
    }

    #[test]
    fn own_process_resolves_and_missing_ones_say_so() {
        let root = Path::new("/proc");
        assert!(name(root, std::process::id()).is_ok());
        assert_eq!(name(root, u32::MAX - 1), Err(Unavailable::NotVisible));
    }
}

//! Which container, and which Kubernetes pod, a GPU process runs in: read
//! from `/proc/<pid>/cgroup`, the one place every runtime writes it.
//!
//! The layouts, as the runtimes and the kubelet name them:
//! - cgroup v2 (one `0::/path` line) or v1 (`N:controller:/path` lines; the
//!   `memory`/`pids` hierarchy holds the same path);
//! - the kubelet's systemd driver, `kubepods-burstable-pod<uid with _>.slice`,
//!   or its cgroupfs driver, `kubepods/burstable/pod<uid with ->`
//!   (kubelet `pkg/kubelet/cm/cgroup_manager_linux.go`, v1.30);
//! - the container scope: `cri-containerd-<id>.scope` (containerd),
//!   `crio-<id>.scope` (CRI-O; `crio-conmon-<id>` is its monitor, not the
//!   container), `docker-<id>.scope` (Docker, cri-dockerd), `libpod-<id>.scope`
//!   (Podman), or a bare 64-hex-digit directory under the cgroupfs driver
//!   (`/docker/<id>`, `/kubepods/.../<id>`, containerd's `/<namespace>/<id>`).

use std::path::Path;

/// The container runtime whose naming the cgroup path follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Containerd,
    CriO,
    Docker,
    Podman,
    /// A bare id directory (cgroupfs driver): the runtime does not say.
    Unknown,
}

impl Runtime {
    /// The scheme Kubernetes uses in `containerID` (`containerd://…`).
    pub fn scheme(self) -> &'static str {
        match self {
            Runtime::Containerd => "containerd",
            Runtime::CriO => "cri-o",
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
            Runtime::Unknown => "unknown",
        }
    }
}

/// Where a process runs, as far as its cgroup says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// The full 64-hex-digit container id.
    pub container: Option<(Runtime, String)>,
    /// The pod's UID with dashes (`6b1e…-…`), when the kubelet made the cgroup.
    pub pod_uid: Option<String>,
}

impl Placement {
    /// The short (12-character) id, as `docker ps` and `crictl ps` show it.
    pub fn short_id(&self) -> Option<String> {
        self.container.as_ref().map(|(_, id)| id[..12].to_owned())
    }
}

/// Reads `/proc/<pid>/cgroup` under `proc_root`; a process that is gone or
/// not visible has no placement.
pub fn read(proc_root: &Path, pid: u32) -> Placement {
    match std::fs::read_to_string(proc_root.join(pid.to_string()).join("cgroup")) {
        Ok(text) => parse(&text),
        Err(_) => Placement::default(),
    }
}

/// The placement a cgroup file describes. The first line that names a
/// container wins (v1 repeats the same path per controller).
pub fn parse(cgroup: &str) -> Placement {
    let mut out = Placement::default();
    for line in cgroup.lines() {
        // `hierarchy-id:controllers:path`; the path may itself hold colons.
        let Some(path) = line.splitn(3, ':').nth(2) else { continue };
        let here = parse_path(path);
        if out.container.is_none() {
            out.container = here.container;
        }
        if out.pod_uid.is_none() {
            out.pod_uid = here.pod_uid;
        }
        if out.container.is_some() && out.pod_uid.is_some() {
            break;
        }
    }
    out
}

fn parse_path(path: &str) -> Placement {
    let mut out = Placement::default();
    for part in path.split('/') {
        if let Some(uid) = pod_uid(part) {
            out.pod_uid = Some(uid);
        } else if let Some(c) = container(part) {
            out.container = Some(c);
        }
    }
    out
}

/// `pod<uid>` (cgroupfs) or `kubepods[-qos]-pod<uid_with_underscores>.slice` (systemd).
fn pod_uid(part: &str) -> Option<String> {
    let rest = part.strip_suffix(".slice").unwrap_or(part);
    let at = rest.rfind("pod")?;
    if at > 0 && !rest[..at].ends_with('-') {
        return None;
    }
    if at > 0 && !rest.starts_with("kubepods") {
        return None;
    }
    let uid = rest[at + 3..].replace('_', "-");
    is_uuid(&uid).then_some(uid)
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A container scope or a bare id directory.
fn container(part: &str) -> Option<(Runtime, String)> {
    let (runtime, id) = match part.strip_suffix(".scope") {
        Some(scope) => {
            let (prefix, id) = scope.rsplit_once('-')?;
            let runtime = match prefix {
                "cri-containerd" => Runtime::Containerd,
                "crio" => Runtime::CriO,
                "docker" => Runtime::Docker,
                "libpod" => Runtime::Podman,
                // `crio-conmon-<id>`, `libpod-conmon-<id>`: the monitor, not the container.
                _ => return None,
            };
            (runtime, id)
        }
        None => (Runtime::Unknown, part),
    };
    (id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| (runtime, id.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f4e1c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
    const UID: &str = "6b1e2f3a-4c5d-4e6f-8a9b-0c1d2e3f4a5b";

    fn check(cgroup: &str, runtime: Option<Runtime>, pod: Option<&str>) {
        let p = parse(cgroup);
        assert_eq!(p.container.as_ref().map(|c| c.0), runtime, "{cgroup}");
        if runtime.is_some() {
            assert_eq!(p.container.as_ref().map(|c| c.1.as_str()), Some(ID), "{cgroup}");
        }
        assert_eq!(p.pod_uid.as_deref(), pod, "{cgroup}");
    }

    #[test]
    fn the_runtimes_and_both_kubelet_drivers() {
        let sys = UID.replace('-', "_");
        check(
            &format!(
                "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{sys}.slice/cri-containerd-{ID}.scope\n"
            ),
            Some(Runtime::Containerd),
            Some(UID),
        );
        check(&format!("0::/kubepods.slice/kubepods-pod{sys}.slice/crio-{ID}.scope\n"), Some(Runtime::CriO), Some(UID));
        check(&format!("0::/system.slice/docker-{ID}.scope\n"), Some(Runtime::Docker), None);
        check(&format!("0::/user.slice/user-1000.slice/libpod-{ID}.scope/container\n"), Some(Runtime::Podman), None);
        // cgroup v1, cgroupfs driver: every controller repeats the path.
        let v1 = format!(
            "12:pids:/kubepods/besteffort/pod{UID}/{ID}\n11:memory:/kubepods/besteffort/pod{UID}/{ID}\n1:name=systemd:/kubepods/besteffort/pod{UID}/{ID}\n"
        );
        check(&v1, Some(Runtime::Unknown), Some(UID));
        check(&format!("11:memory:/docker/{ID}\n"), Some(Runtime::Unknown), None);
    }

    #[test]
    fn monitors_hosts_and_junk_are_not_containers() {
        check(&format!("0::/system.slice/crio-conmon-{ID}.scope\n"), None, None);
        check("0::/user.slice/user-1000.slice/session-2.scope\n", None, None);
        check("0::/\n", None, None);
        check("", None, None);
        check("garbage without colons", None, None);
        // A 63-digit id, a pod uid that is not a uuid.
        check(&format!("0::/docker/{}\n", &ID[1..]), None, None);
        check("0::/kubepods/podnot-a-uid/x\n", None, None);
        assert_eq!(parse(&format!("0::/system.slice/docker-{ID}.scope")).short_id().as_deref(), Some(&ID[..12]));
    }
}

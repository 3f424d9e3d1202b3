//! Pod names and namespaces for the pod UIDs and container ids a cgroup
//! gives, from the kubelet's log directories, when the agent can see them
//! (the DaemonSet mounts the node's `/var/log` read-only).
//!
//! The kubelet names them (`pkg/kubelet/kuberuntime/kuberuntime_manager.go`
//! and `pkg/kubelet/kuberuntime/logs`, v1.30; the layout is the one every log
//! shipper reads):
//! - `/var/log/pods/<namespace>_<pod>_<uid>/<container>/N.log`
//! - `/var/log/containers/<pod>_<namespace>_<container>-<container id>.log`
//!
//! Pod, namespace and container names are DNS labels or subdomains, so they
//! hold no `_`: splitting on it is exact.
//!
//! The kubelet's pod-resources gRPC socket would also say which pod was
//! *allocated* each GPU; reading it needs an HTTP/2 + protobuf client
//! (tonic, prost, h2), several times the agent's own dependency weight, for
//! names the log directories already give. It is not read.

use std::collections::HashMap;
use std::path::Path;

/// A pod as the kubelet names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodName {
    pub namespace: String,
    pub name: String,
}

/// What the log directories say, read once per process-list reading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodDirectory {
    /// Pod UID → pod.
    pods: HashMap<String, PodName>,
    /// Full container id → container name.
    containers: HashMap<String, String>,
}

impl PodDirectory {
    /// Reads `<log_root>/pods` and `<log_root>/containers`; what is missing
    /// or unreadable is simply not known.
    pub fn read(log_root: &Path) -> Self {
        let mut out = Self::default();
        for name in entries(&log_root.join("pods")) {
            let mut parts = name.splitn(3, '_');
            if let (Some(ns), Some(pod), Some(uid)) = (parts.next(), parts.next(), parts.next()) {
                out.pods.insert(uid.to_owned(), PodName { namespace: ns.to_owned(), name: pod.to_owned() });
            }
        }
        for name in entries(&log_root.join("containers")) {
            let Some(stem) = name.strip_suffix(".log") else { continue };
            let mut parts = stem.splitn(3, '_');
            let (Some(_pod), Some(_ns), Some(rest)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let Some((container, id)) = rest.rsplit_once('-') else { continue };
            if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                out.containers.insert(id.to_ascii_lowercase(), container.to_owned());
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty() && self.containers.is_empty()
    }

    pub fn pod(&self, uid: &str) -> Option<&PodName> {
        self.pods.get(uid)
    }

    pub fn container(&self, id: &str) -> Option<&str> {
        self.containers.get(id).map(String::as_str)
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    read.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_kubelet_log_layout() {
        let root = std::env::temp_dir().join(format!("headroom-pods-{}", std::process::id()));
        let id = "3f4e1c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
        let uid = "6b1e2f3a-4c5d-4e6f-8a9b-0c1d2e3f4a5b";
        std::fs::create_dir_all(root.join(format!("pods/ml-serving_vllm-llama-7d9f_{uid}/vllm"))).unwrap();
        std::fs::create_dir_all(root.join("pods/not-a-pod")).unwrap();
        std::fs::create_dir_all(root.join("containers")).unwrap();
        std::fs::write(root.join(format!("containers/vllm-llama-7d9f_ml-serving_vllm-server-{id}.log")), "").unwrap();
        std::fs::write(root.join("containers/junk.log"), "").unwrap();
        let d = PodDirectory::read(&root);
        assert_eq!(d.pod(uid), Some(&PodName { namespace: "ml-serving".into(), name: "vllm-llama-7d9f".into() }));
        assert_eq!(d.container(id), Some("vllm-server"));
        assert_eq!(d.pod("other"), None);
        assert!(PodDirectory::read(&root.join("absent")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}

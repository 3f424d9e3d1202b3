//! The real NVML path without a GPU: the `headroom` binary loads the fake
//! `libnvidia-ml.so` built from `fake-nvml/` through nvml-wrapper's
//! library-path option. Scenarios are environment variables on the child.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use shared::protocol::{Field, MemorySource, Snapshot, Unavailable};

use crate::support::{Agent, TOKEN, http_get};

/// Builds the fake library once, into its own target directory (so it never
/// waits on the lock of the `cargo test` that runs us).
fn fake_nvml() -> &'static PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // <target>/debug/deps/it-<hash>
        let target = exe.ancestors().nth(3).unwrap().join("fake-nvml");
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "fake-nvml", "--target-dir"])
            .arg(&target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building fake-nvml failed");
        target.join("debug").join(format!("{}fake_nvml{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX))
    })
}

async fn snapshot(env: &[(&str, &str)]) -> (Snapshot, Agent) {
    let lib = fake_nvml().to_str().unwrap().to_owned();
    let agent = Agent::spawn(&["--nvml-lib", &lib], env);
    let (status, body) = http_get(agent.addr, "/api/snapshot", &[("Authorization", &format!("Bearer {TOKEN}"))]).await;
    assert_eq!(status, 200, "{body}");
    (serde_json::from_str(&body).unwrap(), agent)
}

#[tokio::test]
async fn reads_the_fake_driver_through_nvml_wrapper() {
    let (s, agent) = snapshot(&[]).await;
    assert!(!s.host.simulated && !s.sample.simulated);
    assert_eq!(s.host.driver_version, Field::Value("570.86.15".into()));
    assert_eq!(s.host.cuda_driver_version, Field::Value("12.8".into()));
    assert_eq!(s.host.gpus.len(), 2);
    assert_eq!(s.host.gpus[0].name, Field::Value("NVIDIA H100 80GB HBM3 (fake)".into()));
    // A symbol the library does not export is said, not zeroed.
    assert_eq!(s.host.gpus[0].pci_bus_id, Field::Unavailable(Unavailable::MissingInDriver));

    let g0 = &s.sample.gpus[0];
    let Field::Value(m) = &g0.memory else { panic!("{g0:?}") };
    assert_eq!(m.source, MemorySource::NvmlV2);
    assert_eq!(m.reserved_bytes, Field::Value(512 << 20));
    assert_eq!(m.used_bytes, 30 << 30);
    assert_eq!(m.total_bytes, m.used_bytes + m.free_bytes + (512 << 20));
    assert_eq!(g0.power_draw_mw, Field::Value(612_000));
    assert_eq!(s.sample.gpus[1].power_draw_mw, Field::Unavailable(Unavailable::NotSupported));

    // GPU 0's process is the agent itself (the fake reports its caller's PID),
    // so /proc resolves it; GPU 1's PID exists in no namespace we can see.
    let Field::Value(p0) = &g0.processes else { panic!() };
    assert_eq!(p0[0].pid, agent.child.id());
    assert_eq!(p0[0].name, Field::Value("headroom".into()));
    assert_eq!(p0[0].used_bytes, Field::Value(30 << 30));
    let Field::Value(p1) = &s.sample.gpus[1].processes else { panic!() };
    assert_eq!(p1[0].name, Field::Unavailable(Unavailable::NotVisible));
}

#[tokio::test]
async fn falls_back_to_memory_v1_and_says_so() {
    let (s, _agent) = snapshot(&[("FAKE_NVML_NO_MEMORY_V2", "1")]).await;
    let Field::Value(m) = &s.sample.gpus[0].memory else { panic!() };
    assert_eq!(m.source, MemorySource::NvmlV1);
    assert_eq!(m.reserved_bytes, Field::Unavailable(Unavailable::NotSupported));
    // v1 `used` includes the reserve.
    assert_eq!(m.used_bytes, (30 << 30) + (512 << 20));
    assert_eq!(s.host.gpus[0].memory_total_bytes, Field::Value(85_520_809_984));
}

#[tokio::test]
async fn reads_535_process_lists_with_their_own_struct() {
    let (s, agent) = snapshot(&[("FAKE_NVML_DRIVER", "535.54.03")]).await;
    let Field::Value(list) = &s.sample.gpus[0].processes else { panic!("{:?}", s.sample.gpus[0].processes) };
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].pid, agent.child.id());
    assert_eq!(list[0].used_bytes, Field::Value(30 << 30));
    assert_eq!(list[0].mig, None);
}

#[tokio::test]
async fn sigterm_stops_the_agent_cleanly() {
    let (_, mut agent) = snapshot(&[]).await;
    agent.signal("TERM");
    let status = tokio::task::spawn_blocking(move || agent.child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
}

/// MIG: the instance's GPU instance id and profile come from the driver, and
/// `/metrics` labels its memory as dcgm-exporter does.
#[tokio::test]
async fn mig_instances_carry_their_gpu_instance_and_profile() {
    let (s, agent) = snapshot(&[("FAKE_NVML_MIG", "1")]).await;
    let Field::Value(list) = &s.sample.gpus[1].mig_instances else { panic!("{:?}", s.sample.gpus[1]) };
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].gpu_instance_id, Field::Value(7));
    assert_eq!(list[0].profile, Field::Value("1g.10gb".into()));
    let (status, body) = http_get(agent.addr, "/metrics", &[("Authorization", &format!("Bearer {TOKEN}"))]).await;
    assert_eq!(status, 200);
    let line = body
        .lines()
        .find(|l| l.starts_with("DCGM_FI_DEV_FB_USED{") && l.contains("GPU_I_ID="))
        .unwrap_or_else(|| panic!("no MIG line:\n{body}"));
    assert!(line.contains("gpu=\"1\",") && line.contains(",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"7\","), "{line}");
    assert!(line.ends_with(" 2048"), "2 GiB in MiB: {line}");
}

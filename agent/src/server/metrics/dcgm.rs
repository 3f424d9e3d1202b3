//! dcgm-exporter-compatible series, so that dashboards and alerts written for
//! NVIDIA's exporter (Grafana 12239, the GPU Operator's) work unchanged.
//!
//! Names, help texts and units are those of dcgm-exporter's
//! `etc/default-counters.csv`; the label set and its order are those of its
//! `internal/pkg/rendermetrics/render_metrics.go` (NVIDIA/dcgm-exporter at
//! d5e5f51, May 2026): `gpu`, `UUID`, `pci_bus_id`, `device` (`nvidiaN`),
//! `modelName`, then `GPU_I_PROFILE`/`GPU_I_ID` for a MIG instance, the host
//! name (`Hostname` as dcgm-exporter 2.x and the GPU Operator's dashboard
//! spell it, `hostname` as 3.x+ does), the `DCGM_FI_DRIVER_VERSION` label
//! field, and `pod`/`namespace`/`container` of the pod on the GPU, as its
//! Kubernetes mapping adds them.
//!
//! Memory is in MiB truncated (DCGM divides bytes by 2^20), utilization in
//! whole percent, clocks in MHz, power in W. Only fields NVML reads are
//! exported; the profiling (`DCGM_FI_PROF_*`) fields need DCGM itself.

use shared::protocol::{Field, GpuInfo, GpuSample, HostInfo, MemoryReading, Sample};

use super::text::{Family, Labels};

const MIB: u64 = 1 << 20;

/// Each family as `default-counters.csv` declares it: name, help.
const FB_FREE: (&str, &str) = ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).");
const FB_USED: (&str, &str) = ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).");
const FB_RESERVED: (&str, &str) = ("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).");
const GPU_UTIL: (&str, &str) = ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).");
const MEM_COPY_UTIL: (&str, &str) = ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).");
const GPU_TEMP: (&str, &str) = ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).");
const POWER_USAGE: (&str, &str) = ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).");
const SM_CLOCK: (&str, &str) = ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).");
const MEM_CLOCK: (&str, &str) = ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).");

/// Every family this module writes, for the docs and the tests.
pub const NAMES: [&str; 9] = [
    FB_FREE.0,
    FB_USED.0,
    FB_RESERVED.0,
    GPU_UTIL.0,
    MEM_COPY_UTIL.0,
    GPU_TEMP.0,
    POWER_USAGE.0,
    SM_CLOCK.0,
    MEM_CLOCK.0,
];

fn family((name, help): (&'static str, &'static str)) -> Family {
    Family::gauge(name, help)
}

/// The DCGM families for one sample, appended to `out`.
pub fn render(host: &HostInfo, sample: &Sample, out: &mut String) {
    let mut free = family(FB_FREE);
    let mut used = family(FB_USED);
    let mut reserved = family(FB_RESERVED);
    let mut util = family(GPU_UTIL);
    let mut copy = family(MEM_COPY_UTIL);
    let mut temp = family(GPU_TEMP);
    let mut power = family(POWER_USAGE);
    let mut sm = family(SM_CLOCK);
    let mut mem = family(MEM_CLOCK);
    let mut memory = |labels: &Labels, m: &MemoryReading| {
        free.push(labels, m.free_bytes / MIB);
        used.push(labels, m.used_bytes / MIB);
        if let Field::Value(r) = m.reserved_bytes {
            reserved.push(labels, r / MIB);
        }
    };
    for g in &sample.gpus {
        let info = host.gpus.iter().find(|i| i.index == g.index);
        let tail = tail_labels(host, g);
        let labels = gpu_labels(g.index, info, None, &tail);
        if let Field::Value(m) = &g.memory {
            memory(&labels, m);
        }
        // A MIG instance's own memory, as dcgm-exporter labels it.
        for mig in g.mig_instances.value().into_iter().flatten() {
            let (Field::Value(m), Field::Value(gi), Field::Value(profile)) =
                (&mig.memory, &mig.gpu_instance_id, &mig.profile)
            else {
                continue;
            };
            memory(&gpu_labels(g.index, info, Some((profile, *gi)), &tail), m);
        }
        if let Field::Value(u) = &g.utilization {
            util.push(&labels, u.gpu_pct);
            copy.push(&labels, u.memory_pct);
        }
        temp.field(&labels, &g.temperature_c);
        if let Field::Value(mw) = g.power_draw_mw {
            power.push(&labels, f64::from(mw) / 1000.0);
        }
        sm.field(&labels, &g.sm_clock_mhz);
        mem.field(&labels, &g.memory_clock_mhz);
    }
    for f in [&free, &used, &reserved, &util, &copy, &temp, &power, &sm, &mem] {
        f.write(out);
    }
}

/// The identity labels, in dcgm-exporter's order.
fn gpu_labels(index: u32, info: Option<&GpuInfo>, mig: Option<(&String, u32)>, tail: &Labels) -> Labels {
    let text = |f: Option<&Field<String>>| f.and_then(Field::value).cloned().unwrap_or_default();
    let mut l = Labels::new()
        .with("gpu", index)
        .with("UUID", text(info.map(|i| &i.uuid)))
        .with("pci_bus_id", text(info.map(|i| &i.pci_bus_id)))
        .with("device", format!("nvidia{index}"))
        .with("modelName", text(info.map(|i| &i.name)));
    if let Some((profile, gi)) = mig {
        l = l.with("GPU_I_PROFILE", profile).with("GPU_I_ID", gi);
    }
    l.append(tail)
}

/// Host name, driver version and the pod holding the GPU (when exactly one
/// pod with known names holds it, as dcgm-exporter's pod mapping reports).
fn tail_labels(host: &HostInfo, g: &GpuSample) -> Labels {
    let mut pods = g.processes.value().into_iter().flatten().filter_map(|p| p.pod.as_ref());
    let first = pods.next();
    let one = first.filter(|f| pods.all(|p| p.uid == f.uid));
    let l = Labels::new()
        .with("Hostname", &host.hostname)
        .with("hostname", &host.hostname)
        .with("DCGM_FI_DRIVER_VERSION", host.driver_version.value().map_or("", String::as_str));
    match one.and_then(|p| Some((p.name.as_ref()?, p.namespace.as_ref()?, p.container.as_ref()))) {
        Some((name, namespace, container)) => {
            l.with("pod", name).with("namespace", namespace).with_some("container", container)
        }
        None => l,
    }
}

#[cfg(test)]
mod tests {
    use shared::protocol::{
        ComputeMode, GpuProcess, MemorySource, MigInstance, MigMode, PodRef, Unavailable, Utilization,
    };

    use super::*;

    const MIB_U: u64 = 1 << 20;

    fn memory(free_mib: u64, used_mib: u64) -> MemoryReading {
        MemoryReading {
            total_bytes: (free_mib + used_mib + 512) * MIB_U,
            used_bytes: used_mib * MIB_U + 5,
            free_bytes: free_mib * MIB_U + MIB_U - 1,
            reserved_bytes: Field::Value(512 * MIB_U),
            source: MemorySource::NvmlV2,
        }
    }

    fn pod(uid: &str, name: &str) -> Option<PodRef> {
        Some(PodRef {
            uid: uid.into(),
            namespace: Some("serving".into()),
            name: Some(name.into()),
            container: Some("vllm".into()),
        })
    }

    fn process(pod: Option<PodRef>) -> GpuProcess {
        GpuProcess {
            pid: 7,
            name: Field::Value("vllm".into()),
            container: None,
            pod,
            used_bytes: Field::Value(1),
            mig: None,
            launch: None,
        }
    }

    fn gpu(index: u32, processes: Vec<GpuProcess>, mig: Vec<MigInstance>) -> GpuSample {
        GpuSample {
            index,
            memory: Field::Value(memory(1000, 2000)),
            utilization: Field::Value(Utilization { gpu_pct: 87, memory_pct: 52 }),
            temperature_c: Field::Value(71),
            power_draw_mw: Field::Value(612_500),
            power_limit_mw: Field::Unavailable(Unavailable::NotSupported),
            sm_clock_mhz: Field::Value(1980),
            memory_clock_mhz: Field::Unavailable(Unavailable::NotSupported),
            mig_instances: Field::Value(mig),
            processes: Field::Value(processes),
        }
    }

    fn info(index: u32) -> GpuInfo {
        GpuInfo {
            index,
            uuid: Field::Value(format!("GPU-{index}")),
            name: Field::Value("NVIDIA A100-SXM4-80GB".into()),
            pci_bus_id: Field::Value(format!("00000000:1{index}:00.0")),
            memory_total_bytes: Field::Value(80 << 30),
            compute_mode: Field::Value(ComputeMode::Default),
            mig_mode: Field::Value(MigMode { enabled: index == 1, pending_enabled: index == 1 }),
            catalog_id: None,
        }
    }

    #[test]
    fn whole_gpus_mig_instances_and_pods_as_dcgm_exporter_labels_them() {
        let host = HostInfo {
            agent_version: "0.1.0".into(),
            hostname: "node-7".into(),
            driver_version: Field::Value("570.86.15".into()),
            cuda_driver_version: Field::Value("12.8".into()),
            simulated: false,
            memory_total_bytes: Field::Value(270_582_939_648),
            gpus: vec![info(0), info(1), info(2)],
        };
        let mig = |gi: u32, profile: &str| MigInstance {
            index: gi,
            uuid: Field::Value(format!("MIG-{gi}")),
            gpu_instance_id: Field::Value(gi),
            profile: Field::Value(profile.into()),
            memory: Field::Value(memory(9000, 700)),
        };
        let unknown = MigInstance { gpu_instance_id: Field::Unavailable(Unavailable::NoPermission), ..mig(9, "x") };
        let sample = Sample {
            seq: 1,
            timestamp_ms: 0,
            processes_timestamp_ms: 0,
            simulated: false,
            gpus: vec![
                gpu(0, vec![process(pod("u1", "vllm-0")), process(pod("u1", "vllm-0"))], vec![]),
                gpu(1, vec![], vec![mig(3, "1g.10gb"), unknown]),
                gpu(2, vec![process(pod("u1", "a")), process(pod("u2", "b"))], vec![]),
            ],
        };
        let mut out = String::new();
        render(&host, &sample, &mut out);
        let ids =
            "UUID=\"GPU-0\",pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\"";
        let tail = "Hostname=\"node-7\",hostname=\"node-7\",DCGM_FI_DRIVER_VERSION=\"570.86.15\"";
        let pod = "pod=\"vllm-0\",namespace=\"serving\",container=\"vllm\"";
        // Whole MiB, truncated; one pod on the GPU labels it.
        assert!(out.contains(&format!("DCGM_FI_DEV_FB_FREE{{gpu=\"0\",{ids},{tail},{pod}}} 1000\n")), "{out}");
        assert!(out.contains(&format!("DCGM_FI_DEV_FB_USED{{gpu=\"0\",{ids},{tail},{pod}}} 2000\n")));
        assert!(out.contains(&format!("DCGM_FI_DEV_FB_RESERVED{{gpu=\"0\",{ids},{tail},{pod}}} 512\n")));
        assert!(out.contains(&format!("DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",{ids},{tail},{pod}}} 612.5\n")));
        assert!(out.contains("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\","));
        // A MIG instance with its profile and GPU instance id; one whose id is unknown is left out.
        assert!(out.contains("DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-1\",pci_bus_id=\"00000000:11:00.0\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"3\",Hostname=\"node-7\""));
        assert_eq!(out.matches("GPU_I_ID=").count(), 3, "free, used, reserved of one instance:\n{out}");
        // Two pods share GPU 2: no pod labels.
        let g2 = out.lines().find(|l| l.starts_with("DCGM_FI_DEV_FB_FREE{gpu=\"2\"")).unwrap();
        assert!(!g2.contains("pod="), "{g2}");
        // Unreported readings are absent, never zero.
        assert!(!out.contains("DCGM_FI_DEV_MEM_CLOCK"));
        assert_eq!(out.matches("# TYPE DCGM_FI_DEV_FB_FREE gauge").count(), 1);
    }
}

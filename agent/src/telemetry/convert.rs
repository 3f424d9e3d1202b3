//! Backend readings → wire types. The one place where telemetry becomes
//! protocol, field by field.

use shared::protocol::{
    Field, GpuInfo, GpuProcess, GpuSample, HostInfo, MemoryReading, MemorySource, MigInstance, MigPlacement, PodRef,
};

use super::cgroup::Placement;
use super::pods::PodDirectory;
use super::{DeviceReading, HostStatic, Memory, MemoryApi, ProcessReading, Reading};

pub fn host_info(host: &HostStatic, hostname: String) -> HostInfo {
    HostInfo {
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        hostname,
        driver_version: field(&host.driver_version, Clone::clone),
        cuda_driver_version: field(&host.cuda_driver_version, |v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
        simulated: host.simulated,
        memory_total_bytes: field(&host.memory_total_bytes, |v| *v),
        gpus: host
            .devices
            .iter()
            .map(|d| GpuInfo {
                index: d.index,
                uuid: field(&d.uuid, Clone::clone),
                name: field(&d.name, Clone::clone),
                pci_bus_id: field(&d.pci_bus_id, Clone::clone),
                memory_total_bytes: field(&d.memory_total_bytes, |&b| b),
                compute_mode: field(&d.compute_mode, |&m| m),
                mig_mode: field(&d.mig_mode, |&m| m),
                catalog_id: d.catalog_id.clone(),
            })
            .collect(),
    }
}

pub fn gpu_sample(index: u32, d: &DeviceReading, processes: Field<Vec<GpuProcess>>) -> GpuSample {
    GpuSample {
        index,
        memory: field(&d.memory, memory),
        utilization: field(&d.utilization, |&u| u),
        temperature_c: field(&d.temperature_c, |&v| v),
        power_draw_mw: field(&d.power_draw_mw, |&v| v),
        power_limit_mw: field(&d.power_limit_mw, |&v| v),
        sm_clock_mhz: field(&d.sm_clock_mhz, |&v| v),
        memory_clock_mhz: field(&d.memory_clock_mhz, |&v| v),
        mig_instances: field(&d.mig_instances, |list| {
            list.iter()
                .map(|m| MigInstance {
                    index: m.index,
                    uuid: field(&m.uuid, Clone::clone),
                    gpu_instance_id: field(&m.gpu_instance_id, |&v| v),
                    profile: field(&m.profile, Clone::clone),
                    memory: field(&m.memory, memory),
                })
                .collect()
        }),
        processes,
    }
}

/// A process on the wire; `name` and its placement come from `/proc` when
/// the backend did not know them, pod names from the kubelet's log layout.
pub fn process(p: &ProcessReading, name: Reading<String>, placement: &Placement, pods: &PodDirectory) -> GpuProcess {
    let full_id = placement.container.as_ref().map(|(_, id)| id.as_str());
    GpuProcess {
        pid: p.pid,
        name: name.into(),
        container: placement.short_id(),
        pod: placement.pod_uid.as_ref().map(|uid| {
            let named = pods.pod(uid);
            PodRef {
                uid: uid.clone(),
                namespace: named.map(|n| n.namespace.clone()),
                name: named.map(|n| n.name.clone()),
                container: full_id.and_then(|id| pods.container(id)).map(str::to_owned),
            }
        }),
        used_bytes: field(&p.used_bytes, |&b| b),
        mig: p.mig.map(|(gpu_instance_id, compute_instance_id)| MigPlacement { gpu_instance_id, compute_instance_id }),
        launch: None,
    }
}

fn memory(m: &Memory) -> MemoryReading {
    MemoryReading {
        total_bytes: m.total_bytes,
        used_bytes: m.used_bytes,
        free_bytes: m.free_bytes,
        reserved_bytes: match m.reserved_bytes {
            Some(b) => Field::Value(b),
            // The v1 call has no such figure.
            None => Field::Unavailable(shared::protocol::Unavailable::NotSupported),
        },
        source: match m.api {
            MemoryApi::NvmlV2 => MemorySource::NvmlV2,
            MemoryApi::NvmlV1 => MemorySource::NvmlV1,
            MemoryApi::Simulated => MemorySource::Simulated,
        },
    }
}

fn field<T, U>(r: &Reading<T>, f: impl FnOnce(&T) -> U) -> Field<U> {
    match r {
        Ok(v) => Field::Value(f(v)),
        Err(why) => Field::Unavailable(*why),
    }
}

/// This machine's name, for the welcome message and the log.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".to_owned())
}

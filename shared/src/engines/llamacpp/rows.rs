//! llama.cpp's report as the page and the CLI show it: its own figures.

use super::Report;
use crate::engines::ReportRow;
use crate::units::{UnitSystem, format_bytes};

impl Report {
    /// llama.cpp's own figures: layers offloaded, buffers per device, host RAM.
    pub(crate) fn rows(&self, units: UnitSystem) -> Vec<ReportRow> {
        let bytes = |b: u64| format_bytes(b, units);
        vec![
            ReportRow::new(
                "n-gpu-layers",
                "Layers offloaded (-ngl)",
                format!(
                    "{} layers on the GPU{}",
                    self.layers_on_gpu,
                    if self.output_on_gpu { " + output" } else { "" }
                ),
                self.n_gpu_layers,
            ),
            ReportRow::new(
                "gpu-weight-bytes",
                "Model buffer per GPU",
                self.gpu_weight_bytes.iter().map(|&b| bytes(b)).collect::<Vec<_>>().join(" + "),
                self.gpu_weight_bytes.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(","),
            ),
            ReportRow::new(
                "cpu-weight-bytes",
                "Weights left on the CPU",
                bytes(self.cpu_weight_bytes),
                self.cpu_weight_bytes,
            ),
            ReportRow::new("cpu-kv-bytes", "KV cache on the CPU", bytes(self.cpu_kv_bytes), self.cpu_kv_bytes),
            ReportRow::new(
                "host-ram-bytes",
                "Host RAM needed",
                match self.host_ram_limit_bytes {
                    Some(ram) => format!("{} of {}", bytes(self.host_ram_bytes), bytes(ram)),
                    None => bytes(self.host_ram_bytes),
                },
                self.host_ram_bytes,
            ),
            ReportRow::new(
                "compute-buffer-bytes",
                "Compute buffer (largest GPU)",
                bytes(self.compute_buffer_bytes),
                self.compute_buffer_bytes,
            ),
        ]
    }
}

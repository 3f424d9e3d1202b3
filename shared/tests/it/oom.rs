//! The OOM parser (`shared::oom`) against a corpus of messages written from
//! the real formats (`tests/fixtures/oom/NN-name.txt`), each with its expected
//! reading spelled out below; and property tests: arbitrary and mutated text
//! never panics, and figures never wrap around.
//!
//! Expected sizes are written in bytes, worked out apart from the parser:
//! `round(value × unit)` with exact decimals (`1.95 GiB` = 2093796557).

use std::collections::BTreeSet;
use std::fs;

use proptest::prelude::*;
use serde_json::{Value, json};
use shared::oom::{self, OomReport};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/oom");

/// At least this many messages, as issue 7 asks for 30.
const MIN_CORPUS: usize = 32;

fn read(file: &str) -> String {
    fs::read_to_string(format!("{FIXTURES}/{file}")).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Parses `file` and compares the report with `expected`. Every field that
/// `expected` leaves out must keep its default (`null`, `[]`, `0`), so each
/// case states the whole reading. `notes` lists fragments that some note
/// must contain: the figures are the contract, the wording may change.
fn check(file: &str, expected: &Value) -> Result<(), String> {
    let report = oom::parse(&read(file));
    let mut actual = serde_json::to_value(&report).map_err(|e| e.to_string())?;
    let mut want = serde_json::to_value(OomReport::default()).map_err(|e| e.to_string())?;
    let (Some(actual_fields), Some(want_fields), Some(expected_fields)) =
        (actual.as_object_mut(), want.as_object_mut(), expected.as_object())
    else {
        return Err(format!("{file}: reports must serialise as objects"));
    };
    for (key, value) in expected_fields {
        if !want_fields.contains_key(key) {
            return Err(format!("{file}: the expected reading names unknown field `{key}`"));
        }
        want_fields.insert(key.clone(), value.clone());
    }
    let notes = actual_fields.remove("notes").unwrap_or_default();
    let fragments = want_fields.remove("notes").unwrap_or_default();

    let mut errors = Vec::new();
    for (key, want_value) in want_fields.iter() {
        let got = actual_fields.get(key).unwrap_or(&Value::Null);
        if got != want_value {
            errors.push(format!("  {key}: expected {want_value}, got {got}"));
        }
    }
    let notes: Vec<&str> = notes.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    for fragment in fragments.as_array().into_iter().flatten().filter_map(Value::as_str) {
        if !notes.iter().any(|n| n.contains(fragment)) {
            errors.push(format!("  notes: none contains {fragment:?}; notes are {notes:?}"));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(format!("{file}:\n{}", errors.join("\n"))) }
}

/// Every corpus file with its expected reading.
fn cases() -> Vec<(&'static str, Value)> {
    vec![
        (
            "01-legacy-traceback-hint.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 20971520, "gpu_index": 0,
                "total_bytes": 16943645983_u64, "free_bytes": 3607101, "allocated_bytes": 15633680957_u64,
                "reserved_bytes": 15762529976_u64, "reserved_unallocated_bytes": 128849019, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            "02-legacy-no-hint-gpu1.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 2147483648_u64, "gpu_index": 1,
                "total_bytes": 11553462026_u64, "free_bytes": 1524713390, "allocated_bytes": 8192650117_u64,
                "reserved_bytes": 9030168740_u64, "reserved_unallocated_bytes": 837518623, "occurrences": 1,
                "gpus_seen": [1]
            }),
        ),
        (
            "03-legacy-cached-pytorch-1-1.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 67108864, "gpu_index": 0,
                "total_bytes": 11993696174_u64, "free_bytes": 6092227, "allocated_bytes": 11467562680_u64,
                "reserved_bytes": 11544370872_u64, "reserved_unallocated_bytes": 76808192, "occurrences": 1,
                "gpus_seen": [0], "notes": ["printed `cached`"]
            }),
        ),
        (
            "04-legacy-zero-free-allowed.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 1073741824, "gpu_index": 0,
                "total_bytes": 42509438812_u64, "free_bytes": 0, "allocated_bytes": 19542101197_u64,
                "reserved_bytes": 20476256584_u64, "reserved_unallocated_bytes": 934155387,
                "allowed_bytes": 21474836480_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "05-legacy-jupyter-kib.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 524288, "gpu_index": 0,
                "total_bytes": 8364448809_u64, "free_bytes": 327680, "allocated_bytes": 6571299963_u64,
                "reserved_bytes": 6796785746_u64, "reserved_unallocated_bytes": 225485783, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            "06-legacy-rocm-hip.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "hip", "requested_bytes": 2093796557, "gpu_index": 0,
                "total_bytes": 68698001900_u64, "free_bytes": 1632087572, "allocated_bytes": 64531883622_u64,
                "reserved_bytes": 65959960248_u64, "reserved_unallocated_bytes": 1428076626, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            "07-legacy-hard-wrapped-64-columns.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 402653184, "gpu_index": 3,
                "total_bytes": 25436943811_u64, "free_bytes": 145814979, "allocated_bytes": 23740431729_u64,
                "reserved_bytes": 24513525842_u64, "reserved_unallocated_bytes": 773094113, "occurrences": 1,
                "gpus_seen": [3]
            }),
        ),
        (
            "08-modern-basic.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 20971520, "gpu_index": 0,
                "total_bytes": 25383256719_u64, "free_bytes": 3208643, "allocated_bytes": 24803436134_u64,
                "reserved_bytes": 24867829186_u64, "reserved_unallocated_bytes": 64393052,
                "process_in_use_bytes": 25361781883_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "09-modern-2-1-capacty-typo.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 180355072, "gpu_index": 0,
                "total_bytes": 15837691904_u64, "free_bytes": 59831747, "allocated_bytes": 14946486190_u64,
                "reserved_bytes": 15560028979_u64, "reserved_unallocated_bytes": 613542789,
                "processes": [{"pid": 11288, "used_bytes": 15773267395_u64}], "occurrences": 1, "gpus_seen": [0],
                "notes": ["No \"this process\" entry"]
            }),
        ),
        (
            "10-modern-several-processes.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 3758096384_u64, "gpu_index": 2,
                "total_bytes": 84986665370_u64, "free_bytes": 1299227607, "allocated_bytes": 19112604467_u64,
                "reserved_bytes": 20197083709_u64, "reserved_unallocated_bytes": 1084479242,
                "process_in_use_bytes": 20712479785_u64,
                "processes": [{"pid": 31337, "used_bytes": 43078521979_u64}, {"pid": 31338, "used_bytes": 19864223744_u64}],
                "occurrences": 1, "gpus_seen": [2]
            }),
        ),
        (
            "11-modern-private-pools-vllm-worker.txt",
            json!({"vllm_process": true,
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 1342177280, "gpu_index": 1,
                "total_bytes": 99879464468_u64, "free_bytes": 1267015352, "allocated_bytes": 97313221509_u64,
                "reserved_bytes": 97439616860_u64, "reserved_unallocated_bytes": 126395351,
                "private_pool_bytes": 2480343613_u64, "processes": [{"pid": 2752205, "used_bytes": 98590974280_u64}],
                "worker_ranks": 1, "graph_capture": true, "occurrences": 1, "gpus_seen": [1],
                "notes": ["No \"this process\" entry"]
            }),
        ),
        (
            "12-modern-memory-fraction-allowed.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 268435456, "gpu_index": 0,
                "total_bytes": 16932908564_u64, "free_bytes": 8568459756_u64, "allocated_bytes": 7623566950_u64,
                "reserved_bytes": 7636149862_u64, "reserved_unallocated_bytes": 12582912,
                "process_in_use_bytes": 7913477243_u64, "allowed_bytes": 8053063680_u64, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            "13-modern-rocm-mi300x.txt",
            json!({
                "kind": "pytorch", "backend": "hip", "requested_bytes": 4294967296_u64, "gpu_index": 0,
                "total_bytes": 206136955372_u64, "free_bytes": 2469606195_u64, "allocated_bytes": 200145475994_u64,
                "reserved_bytes": 201294379746_u64, "reserved_unallocated_bytes": 1148903752, "occurrences": 1,
                "gpus_seen": [0], "distributed_ranks": 1
            }),
        ),
        (
            "14-modern-torchrun-two-ranks.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 939524096, "gpu_index": 1,
                "total_bytes": 47609712476_u64, "free_bytes": 522452992, "allocated_bytes": 46127948759_u64,
                "reserved_bytes": 46541203046_u64, "reserved_unallocated_bytes": 413254287,
                "process_in_use_bytes": 47072841564_u64, "same_on_every_gpu": true, "occurrences": 2, "gpus_seen": [0, 1],
                "notes": ["Found 2 out-of-memory messages", "symmetric split"], "distributed_ranks": 2
            }),
        ),
        (
            "15-modern-split-lines-with-timestamps.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 8385923645_u64, "gpu_index": 0,
                "total_bytes": 85094039552_u64, "free_bytes": 5841155523_u64, "allocated_bytes": 74109660692_u64,
                "reserved_bytes": 76310831431_u64, "reserved_unallocated_bytes": 2201170739_u64,
                "process_in_use_bytes": 76976551363_u64, "processes": [{"pid": 1893, "used_bytes": 2254857830_u64}],
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "16-modern-json-log-escaped.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 2147483648_u64, "gpu_index": 0,
                "total_bytes": 23686744637_u64, "free_bytes": 1567663063, "allocated_bytes": 20025285018_u64,
                "reserved_bytes": 21872120955_u64, "reserved_unallocated_bytes": 1846835937,
                "process_in_use_bytes": 22108344156_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "17-modern-python-repr-ray.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 1181116006, "gpu_index": 3,
                "total_bytes": 84932978278_u64, "free_bytes": 948762051, "allocated_bytes": 82570746266_u64,
                "reserved_bytes": 83293666018_u64, "reserved_unallocated_bytes": 722919752,
                "processes": [{"pid": 40211, "used_bytes": 83977348055_u64}], "vllm_process": true, "occurrences": 1, "gpus_seen": [3],
                "notes": ["No \"this process\" entry"]
            }),
        ),
        (
            "18-modern-pprint-adjacent-literals.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 671088640, "gpu_index": 0,
                "total_bytes": 12627203850_u64, "free_bytes": 441974784, "allocated_bytes": 11628623954_u64,
                "reserved_bytes": 11959156081_u64, "reserved_unallocated_bytes": 330532127,
                "process_in_use_bytes": 12176232284_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "19-modern-bytes-units.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 512, "gpu_index": 0,
                "total_bytes": 4294967296_u64, "free_bytes": 0, "allocated_bytes": 3779571220_u64,
                "reserved_bytes": 3797795471_u64, "reserved_unallocated_bytes": 18224251,
                "process_in_use_bytes": 4262755041_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "20-modern-tib-request.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 1374389534720_u64, "gpu_index": 0,
                "total_bytes": 101468602368_u64, "free_bytes": 99653978685_u64, "allocated_bytes": 524288,
                "reserved_bytes": 2097152, "reserved_unallocated_bytes": 1572864,
                "process_in_use_bytes": 1277752771, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "21-modern-retyped-decimal-units.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 500000000, "gpu_index": 0,
                "total_bytes": 12000000000_u64, "free_bytes": 310500000, "allocated_bytes": 10900000000_u64,
                "reserved_bytes": 11020000000_u64, "reserved_unallocated_bytes": 120000000,
                "process_in_use_bytes": 11200000000_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "22-modern-last-message-cut-off.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 3221225472_u64, "gpu_index": 0,
                "total_bytes": 42283953029_u64, "free_bytes": 2909840343_u64, "allocated_bytes": 36313948488_u64,
                "reserved_bytes": 38837241774_u64, "reserved_unallocated_bytes": 2523293286_u64,
                "process_in_use_bytes": 39363375268_u64, "occurrences": 2, "gpus_seen": [0],
                "notes": ["Found 2 out-of-memory messages", "The last message is incomplete"]
            }),
        ),
        (
            "23-modern-only-message-truncated.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 5497558139_u64, "gpu_index": 0,
                "total_bytes": 50906099876_u64, "free_bytes": 4520453079_u64, "process_in_use_bytes": 46374909379_u64,
                "occurrences": 1, "gpus_seen": [0],
                "notes": ["could not read allocated_bytes, reserved_unallocated_bytes"]
            }),
        ),
        (
            "24-modern-journalctl-ansi.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 2619930051_u64, "gpu_index": 0,
                "total_bytes": 25286619955_u64, "free_bytes": 1964947538, "allocated_bytes": 20916490732_u64,
                "reserved_bytes": 22827751179_u64, "reserved_unallocated_bytes": 1911260447,
                "process_in_use_bytes": 23310934999_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "25-cuda-error-runtime.txt",
            json!({
                "kind": "cuda_error", "backend": "cuda", "occurrences": 1
            }),
        ),
        (
            "26-cublas-alloc-failed.txt",
            json!({
                "kind": "cuda_error", "backend": "cuda", "occurrences": 1
            }),
        ),
        (
            "27-vllm-v0-max-seq-len-repeated.txt",
            json!({
                "kind": "vllm_max_seq_len", "max_seq_len": 32768, "kv_cache_tokens": 20000, "vllm_process": true, "weights_bytes": 28347965270_u64, "occurrences": 2,
                "notes": ["Found 2 out-of-memory messages"]
            }),
        ),
        (
            "28-vllm-v1-kv-too-small-estimate.txt",
            json!({"vllm_process": true,
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 40960, "kv_needed_bytes": 6034429051_u64,
                "kv_available_bytes": 4831838208_u64, "estimated_max_model_len": 32768, "weights_bytes": 16394212291_u64, "occurrences": 1
            }),
        ),
        (
            "29-vllm-v1-kv-too-small-wrapped.txt",
            json!({
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 131072, "kv_needed_bytes": 17179869184_u64,
                "kv_available_bytes": 10458245366_u64, "occurrences": 1
            }),
        ),
        (
            "30-vllm-v1-no-cache-blocks-negative.txt",
            json!({
                // -1.42 GiB: 1524713390.08 bytes short.
                "kind": "vllm_no_cache_blocks", "kv_available_bytes": 0, "kv_deficit_bytes": 1524713390_u64,
                "weights_bytes": 65534651112_u64, "occurrences": 1, "notes": ["negative memory left for the KV cache"]
            }),
        ),
        (
            "31-vllm-v0-no-cache-blocks.txt",
            json!({
                "kind": "vllm_no_cache_blocks", "vllm_process": true, "occurrences": 1
            }),
        ),
        (
            "32-vllm-max-seq-len-with-kv-size-line.txt",
            json!({
                "kind": "vllm_max_seq_len", "max_seq_len": 32768, "kv_cache_tokens": 20464, "occurrences": 1
            }),
        ),
        (
            "33-llama-model-load.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 7974961152_u64, "gpu_index": 0,
                "llama_cpp_stage": "model_weights", "devices_in_log": [0], "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "34-llama-kv-cache-device-1.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 8589934592_u64, "gpu_index": 1,
                "llama_cpp_stage": "kv_cache", "devices_in_log": [1], "occurrences": 1, "gpus_seen": [1]
            }),
        ),
        (
            "35-llama-compute-buffers-gallocr.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 2147483648_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [0], "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "36-llama-ollama-json-escaped.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 5064192000_u64, "gpu_index": 0,
                "llama_cpp_stage": "model_weights", "devices_in_log": [0], "via_ollama": true, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            "37-llama-rocm-model-load.txt",
            json!({
                "kind": "llama_cpp", "backend": "hip", "requested_bytes": 24032559104_u64, "gpu_index": 0,
                "llama_cpp_stage": "model_weights", "devices_in_log": [0], "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "38-llama-ggml-cuda-error-abort.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "gpu_index": 1, "occurrences": 1, "gpus_seen": [1]
            }),
        ),
        (
            "39-llama-two-failures-multi-gpu.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 18119917568_u64, "gpu_index": 0,
                "llama_cpp_stage": "model_weights", "devices_in_log": [0, 1], "occurrences": 2, "gpus_seen": [0, 1],
                "notes": ["Found 2 out-of-memory messages", "several GPUs (0, 1)"]
            }),
        ),
        (
            "40-no-oom-keyerror.txt",
            json!({
                "occurrences": 0, "notes": ["No out-of-memory message found"]
            }),
        ),
        (
            // PyTorch's MPS allocator on a 16 GB Mac: GB printed as 2^30.
            "41-mps-generate-private-pool.txt",
            json!({
                "kind": "pytorch_mps", "backend": "mps", "requested_bytes": 268435456_u64,
                "reserved_bytes": 19080392212_u64, "process_in_use_bytes": 19122859540_u64,
                "allowed_bytes": 19466939269_u64, "mps_pool": "private", "occurrences": 1
            }),
        ),
        (
            "42-modern-docker-compose-prefix.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 1095216660, "gpu_index": 0,
                "total_bytes": 25426206392_u64, "free_bytes": 12756052869_u64, "allocated_bytes": 12283606467_u64,
                "reserved_bytes": 12329313895_u64, "reserved_unallocated_bytes": 45707428,
                "process_in_use_bytes": 12659416105_u64, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "43-modern-hard-wrapped-splits-numbers.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 1642824991, "gpu_index": 0,
                "total_bytes": 85029615043_u64, "free_bytes": 1363652116, "allocated_bytes": 32137092792_u64,
                "reserved_bytes": 33253784289_u64, "reserved_unallocated_bytes": 1116691497,
                "process_in_use_bytes": 33790655201_u64,
                "processes": [
                    {"pid": 1204877, "used_bytes": 32276679229_u64},
                    {"pid": 1205513, "used_bytes": 17577153659_u64}
                ],
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            "44-legacy-windows-crlf-repr.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 83886080, "gpu_index": 0,
                "total_bytes": 6442450944_u64, "free_bytes": 0, "allocated_bytes": 5390183956_u64,
                "reserved_bytes": 5680094249_u64, "reserved_unallocated_bytes": 289910293, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            // Only capacity and allocated, as older PyTorch printed without
            // its "free" and "reserved" clauses (quoted in issue 19).
            "45-legacy-allocated-only.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 2147483648_u64, "gpu_index": 0,
                "total_bytes": 25436943811_u64, "allocated_bytes": 22795538924_u64, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        // The sweep's pastes (`# source:` line first): SGLang, Ollama, Vulkan,
        // 2023's Metal and vLLM messages the parser did not read before.
        ("46-sglang-not-enough-memory.txt", json!({"kind": "sglang_no_kv_pool", "occurrences": 1})),
        (
            // Eight ranks each warn of a negative profiled pool.
            "47-sglang-negative-profiled-tokens.txt",
            json!({
                "kind": "sglang_no_kv_pool", "sglang_process": true, "occurrences": 8,
                "notes": ["profiled a KV pool of -561,981 tokens", "Found 8 out-of-memory messages"]
            }),
        ),
        (
            // 164.8 GiB = 176952652595.2 bytes; 13.4 GiB = 14388140441.6.
            "48-ollama-system-memory.txt",
            json!({
                "kind": "ollama_host_memory", "host_required_bytes": 176952652595_u64,
                "host_available_bytes": 14388140442_u64, "occurrences": 1
            }),
        ),
        (
            // 39.4 GiB = 42305427865.6; 30.0 GiB = 32212254720.
            "49-ollama-system-memory-python-client.txt",
            json!({
                "kind": "ollama_host_memory", "host_required_bytes": 42305427866_u64,
                "host_available_bytes": 32212254720_u64, "occurrences": 1
            }),
        ),
        (
            "50-llama-vulkan-device-memory.txt",
            json!({"kind": "llama_cpp", "backend": "vulkan", "requested_bytes": 118497280, "occurrences": 1}),
        ),
        (
            "51-llama-vulkan-mesa-igpu.txt",
            json!({"kind": "llama_cpp", "backend": "vulkan", "requested_bytes": 1610612736, "occurrences": 1}),
        ),
        (
            // 19283.21 MiB = 20219911208.96; recommendedMaxWorkingSetSize 49152 MiB.
            "52-llama-metal-2023-data-buffer.txt",
            json!({
                "kind": "llama_cpp", "backend": "metal", "requested_bytes": 20219911209_u64,
                "total_bytes": 51539607552_u64, "llama_cpp_stage": "model_weights", "occurrences": 1,
                "notes": ["recommendedMaxWorkingSetSize"]
            }),
        ),
        (
            "53-vllm-v1-sampler-warmup.txt",
            json!({"vllm_process": true, "kind": "vllm_sampler_warmup", "warmup_requests": 256, "worker_ranks": 2, "occurrences": 1}),
        ),
        (
            // `max seq len (1048576),` then `22.5 GiB KV cache is needed` with no
            // parenthesis: 22.5 GiB = 24159191040; 17.39 GiB = 18672370319.36.
            "54-vllm-v1-kv-reworded-no-paren.txt",
            json!({
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 1048576, "kv_needed_bytes": 24159191040_u64,
                "kv_available_bytes": 18672370319_u64, "estimated_max_model_len": 810208, "occurrences": 1
            }),
        ),
        (
            // "11.93 GiB allowed" on an 11.93 GiB GPU: a fraction of 1.0.
            "55-legacy-allowed-equals-capacity.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 4294967296_u64, "gpu_index": 3,
                "total_bytes": 12809739960_u64, "free_bytes": 540415099, "allocated_bytes": 11456825262_u64,
                "reserved_bytes": 11725260718_u64, "reserved_unallocated_bytes": 268435456,
                "allowed_bytes": 12809739960_u64, "occurrences": 1, "gpus_seen": [3]
            }),
        ),
        (
            // TGI sets CUDA_MEMORY_FRACTION=1.0: "79.10 GiB allowed" of 79.10.
            "56-modern-tgi-allowed-equals-capacity.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 32770600468_u64, "gpu_index": 1,
                "total_bytes": 84932978278_u64, "free_bytes": 15429670011_u64, "allocated_bytes": 66776004035_u64,
                "reserved_bytes": 67849745859_u64, "reserved_unallocated_bytes": 1073741824_u64,
                "allowed_bytes": 84932978278_u64, "processes": [{"pid": 3342101, "used_bytes": 69492570849_u64}],
                "tgi_process": true, "occurrences": 1, "gpus_seen": [1], "notes": ["No \"this process\" entry"]
            }),
        ),
        (
            // `--gpu-memory-utilization 0.95` named where the paste quotes the
            // command; 4.54 GiB = 4874787880.96, 1.71 GiB = 1836098519.04.
            "57-vllm-v1-kv-too-small-utilization-0-95.txt",
            json!({"max_num_batched_tokens": 1024, "vllm_process": true,
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 131072, "kv_needed_bytes": 4874787881_u64,
                "kv_available_bytes": 1836098519_u64, "gpu_memory_utilization_permille": 950, "occurrences": 1
            }),
        ),
        (
            "58-vllm-v0-no-cache-blocks-command-line.txt",
            json!({"kind": "vllm_no_cache_blocks", "gpu_memory_utilization_permille": 950, "vllm_process": true, "occurrences": 1}),
        ),
        (
            // 24.0 GiB = 25769803776; 3.18 GiB = 3414499000.32.
            "59-vllm-v1-kv-too-small-pipeline-parallel.txt",
            json!({"vllm_process": true,
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 262144, "kv_needed_bytes": 25769803776_u64,
                "kv_available_bytes": 3414499000_u64, "estimated_max_model_len": 34736,
                "gpu_memory_utilization_permille": 900, "pipeline_parallel_size": 2, "pp_layer_partition": [16, 32],
                "occurrences": 1
            }),
        ),
        (
            // V0's profile: `total_gpu_memory (8.00GiB) x gpu_memory_utilization
            // (0.70)` and `reserved for KV Cache is -1.05GiB` (1127428915.2).
            "60-vllm-v0-negative-kv-profile.txt",
            json!({
                "kind": "vllm_no_cache_blocks", "total_bytes": 8589934592_u64, "kv_available_bytes": 0,
                "kv_deficit_bytes": 1127428915_u64, "gpu_memory_utilization_permille": 700, "vllm_process": true, "weights_bytes": 5583457485_u64, "occurrences": 1,
                "notes": ["negative memory left for the KV cache"], "distributed_ranks": 1
            }),
        ),
        (
            // 19.84 GiB allocated, 22.26 GiB reserved on an 8.00 GiB GPU (Windows
            // sysmem fallback), hard-wrapped: 2.11 GiB = 2265595248.64.
            "61-legacy-windows-sysmem-allocated-over-capacity.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "cuda", "requested_bytes": 2265595249_u64, "gpu_index": 0,
                "total_bytes": 8589934592_u64, "free_bytes": 0, "allocated_bytes": 21303037788_u64,
                "reserved_bytes": 23901493002_u64, "reserved_unallocated_bytes": 2598455214_u64,
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // 38.97 GiB allocated (41843718881.28) on a 22.00 GiB GPU.
            "62-modern-allocated-over-capacity.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 34359738368_u64, "gpu_index": 0,
                "total_bytes": 23622320128_u64, "free_bytes": 0, "allocated_bytes": 41843718881_u64,
                "reserved_bytes": 45279692718_u64, "reserved_unallocated_bytes": 3435973837_u64,
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // ik_llama.cpp over 11 GPUs with its MLA cache (`c^KV (f16)`): the
            // exact 292926534144 bytes of a compute buffer on device 0.
            "63-llama-ik-mla-compute-larger-than-any-gpu.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 292926534144_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "ik_mla": true, "devices_in_log": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
                "pipeline_copies": 4, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // Pipeline parallelism (n_copies=4) over several GPUs; the 144 MiB
            // compute buffer failed on device 4.
            "64-llama-pipeline-parallel-small-fifth-gpu.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 150995968_u64, "gpu_index": 4,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [4], "pipeline_copies": 4,
                "occurrences": 1, "gpus_seen": [4]
            }),
        ),
        (
            // Two vLLM TP ranks fail alike: 1.74 GiB asked, 20.21 GiB allocated on each.
            "65-vllm-tp2-identical-ranks.txt",
            json!({"vllm_process": true,
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 1868310774_u64, "gpu_index": 0,
                "total_bytes": 25308094792_u64, "free_bytes": 623776891_u64, "allocated_bytes": 21700322263_u64,
                "reserved_bytes": 21895336427_u64, "reserved_unallocated_bytes": 195014164_u64,
                "private_pool_bytes": 134217728_u64, "processes": [{"pid": 133267, "used_bytes": 24663849697_u64}],
                "worker_ranks": 2, "occurrences": 2, "gpus_seen": [0, 1], "same_on_every_gpu": true,
                "notes": ["symmetric split"]
            }),
        ),
        (
            // Ollama's 500 with its runner's Metal failure: 17376872352 bytes of compute buffer.
            "66-llama-ollama-metal-compute-64k.txt",
            json!({
                "kind": "llama_cpp", "backend": "metal", "requested_bytes": 17376872352_u64,
                "llama_cpp_stage": "compute_buffers", "via_ollama": true, "occurrences": 1
            }),
        ),
        (
            // vLLM on XPU, hard-wrapped: 4.26 GiB needed (4574140170.24), 4.25 left (4563402752).
            "67-vllm-xpu-kv-short-by-rounding.txt",
            json!({
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 100000, "kv_needed_bytes": 4574140170_u64,
                "kv_available_bytes": 4563402752_u64, "vllm_process": true, "occurrences": 1
            }),
        ),
        (
            // HIP on Strix Halo: 16.00 GiB asked of a 15.24 GiB GPU (16363825398.4), nothing held.
            "68-modern-rocm-request-just-over-capacity.txt",
            json!({
                "kind": "pytorch", "backend": "hip", "requested_bytes": 17179869184_u64, "gpu_index": 0,
                "total_bytes": 16363825398_u64, "free_bytes": 16202764124_u64, "allocated_bytes": 0,
                "reserved_bytes": 0, "reserved_unallocated_bytes": 0, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // Ollama 0.1.32: 24289.03 MiB (25468893921.28) on device 0; the runner's
            // `what():` and the server's closing `no longer running: -1 cudaMalloc
            // failed` repeat it without figures, and 0.1.x's wording is Ollama's.
            "69-llama-ollama-0-1-32-runner-no-longer-running.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 25468893921_u64, "gpu_index": 0,
                "llama_cpp_stage": "model_weights", "via_ollama": true, "devices_in_log": [0], "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            // `failed to allocate compute pp buffers` repeats graph_reserve's failure.
            "70-llama-rocm-compute-pp-buffers-repeated.txt",
            json!({
                "kind": "llama_cpp", "backend": "hip", "requested_bytes": 14822711296_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [0], "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // SGLang 0.4 – 0.5's `{self.server_args.mem_fraction_static=}`.
            "71-sglang-old-fraction-wording-0-2.txt",
            json!({"kind": "sglang_no_kv_pool", "mem_fraction_static_permille": 200, "occurrences": 1}),
        ),
        (
            // 10.12 GiB needed (10866267258.88), 5.59 left (6002216796.16); the cache is
            // fp8 as the user names the flag. The token count is the earlier run's.
            "72-vllm-v1-kv-too-small-fp8-cache-already.txt",
            json!({
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 221000, "kv_needed_bytes": 10866267259_u64,
                "kv_available_bytes": 6002216796_u64, "estimated_max_model_len": 122080, "kv_cache_tokens": 230528,
                "kv_cache_dtype": "fp8", "occurrences": 1
            }),
        ),
        (
            // A PyTorch OOM below `python3 -m sglang.launch_server`, cut off at its end.
            "73-sglang-h20-pytorch-oom-under-launch-server.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 2147483648_u64, "gpu_index": 0,
                "total_bytes": 102091372626_u64, "free_bytes": 1363652116_u64, "allocated_bytes": 99675453522_u64,
                "reserved_bytes": 99681262633_u64, "reserved_unallocated_bytes": 5809111_u64,
                "process_in_use_bytes": 100147899924_u64, "sglang_process": true, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // 44.44 MiB free (46598717.44) of 15.77 GiB, 26 MiB asked; cut off after "13.".
            "74-sglang-tp2-16gb-free-just-over-request.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 27262976_u64, "gpu_index": 1,
                "total_bytes": 16932908564_u64, "free_bytes": 46598717_u64, "process_in_use_bytes": 15086072627_u64,
                "sglang_process": true, "occurrences": 1, "gpus_seen": [1],
                "notes": ["could not read allocated_bytes, reserved_unallocated_bytes"]
            }),
        ),
        (
            // vLLM over Ray: the workers' `(RayWorkerWrapper pid=…)` prefix
            // (cut to `RayWorkerWrapper pid=` on the first line) and V0's
            // profile line name vLLM, and the profile its utilization.
            "75-vllm-ray-graph-capture-util-0-98.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 2097152_u64, "gpu_index": 6,
                "total_bytes": 47813723423_u64, "free_bytes": 458752_u64, "gpu_memory_utilization_permille": 980,
                "vllm_process": true, "graph_capture": true, "occurrences": 1, "gpus_seen": [6],
                "notes": ["could not read allocated_bytes, reserved_unallocated_bytes"]
            }),
        ),
        (
            // `python -m vllm.entrypoints.openai.api_server` in the prose.
            "76-vllm-api-server-dtype-float-2080ti.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 543162368_u64, "gpu_index": 0,
                "total_bytes": 23267985326_u64, "free_bytes": 4257219_u64, "allocated_bytes": 22892175688_u64,
                "reserved_bytes": 22893218120_u64, "reserved_unallocated_bytes": 1042432_u64,
                "processes": [{"pid": 2417585, "used_bytes": 23246510490_u64}], "vllm_process": true,
                "occurrences": 1, "gpus_seen": [0], "notes": ["No \"this process\" entry"]
            }),
        ),
        (
            // `[rank0]:` alone says nothing; the traceback runs through `vllm/worker/`.
            "77-vllm-v0-rank0-graph-capture-405b.txt",
            json!({
                "kind": "cuda_error", "backend": "cuda", "vllm_process": true, "graph_capture": true, "occurrences": 1,
                "distributed_ranks": 1
            }),
        ),
        (
            // V1's worker prefix; `torch.cuda.graph(…)` and `capture_end()` in the traceback.
            "78-vllm-v1-graph-capture-cuda-error-rank3.txt",
            json!({
                "kind": "cuda_error", "backend": "cuda", "worker_ranks": 1, "vllm_process": true,
                "graph_capture": true, "occurrences": 1
            }),
        ),
        (
            // SGLang's `Capture cuda graph failed: …`, cut off after the capacity's figure.
            "79-sglang-capture-cuda-graph-truncated-deepep.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 469762048_u64, "gpu_index": 7,
                "sglang_process": true, "graph_capture": true, "occurrences": 1, "gpus_seen": [7],
                "notes": ["could not read total_bytes, free_bytes, allocated_bytes, reserved_unallocated_bytes"]
            }),
        ),
        (
            // Ollama's journal: the same 9220.57 MiB compute buffer failed on device 1, then device 0.
            "80-ollama-new-engine-backoff-two-gpus.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 9668469760_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [0, 1], "same_on_every_gpu": true,
                "via_ollama": true, "occurrences": 2, "gpus_seen": [0, 1],
                "notes": ["ranks of a symmetric split", "applying backoff"]
            }),
        ),
        (
            // ggml's CUDA abort in Ollama's journal (`ollama[3864382]:`, `source=sched.go`, `runner.num_ctx=`).
            "81-ollama-gptoss-ggml-cuda-abort-journal.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "gpu_index": 0, "via_ollama": true, "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            // Buildkite's `  | [time]` prefix; `Model loading took 0.2389 GB` before the error.
            "82-vllm-v1-buildkite-tiny-weights-no-cache-blocks.txt",
            json!({
                "kind": "vllm_no_cache_blocks", "weights_bytes": 256516922_u64, "vllm_process": true,
                "occurrences": 1
            }),
        ),
        (
            // ggml-vulkan's single-buffer limit, then the gallocr failure it caused.
            "83-llama-vulkan-buffer-size-limit-regression.txt",
            json!({
                "kind": "llama_cpp", "backend": "vulkan", "requested_bytes": 8753520640_u64, "gpu_index": 0,
                "allocation_limit": true, "llama_cpp_stage": "compute_buffers", "devices_in_log": [0],
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // IPEX: the 4GB limit's message (not an OOM message itself), then two `XPU out of memory`.
            "84-xpu-legacy-ipex-4gb-limit-wsl2.txt",
            json!({
                "kind": "pytorch_legacy", "backend": "xpu", "requested_bytes": 1836098519_u64, "gpu_index": 0,
                "total_bytes": 16707422781_u64, "allocated_bytes": 184549376_u64, "reserved_bytes": 184549376_u64,
                "reserved_unallocated_bytes": 0, "allocation_limit": true, "occurrences": 2, "gpus_seen": [0],
                "notes": ["could not read free_bytes", "Found 2 out-of-memory messages"]
            }),
        ),
        (
            // PyTorch's own XPU allocator, 2.1+ wording, with a per-process cap.
            "85-xpu-modern-memory-fraction.txt",
            json!({
                "kind": "pytorch", "backend": "xpu", "requested_bytes": 8708046193_u64, "gpu_index": 0,
                "total_bytes": 17759689769_u64, "free_bytes": 17759689769_u64, "allocated_bytes": 0,
                "reserved_bytes": 0, "reserved_unallocated_bytes": 0, "allowed_bytes": 8879844884_u64,
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // The cudaMallocAsync backend's table, JSON-escaped inside TGI's Rust panic.
            "86-tgi-cudamallocasync-allocation-would-exceed.txt",
            json!({
                "kind": "pytorch_async", "backend": "cuda", "requested_bytes": 5186173010_u64, "gpu_index": 0,
                "total_bytes": 23837068493_u64, "free_bytes": 11660165_u64, "allocated_bytes": 17265768530_u64,
                "tgi_process": true, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // TGI 3.2's v3 router repeating the shard's warm-up error.
            "100-tgi-3-2-prefill-warmup-gemma3-four-shards.txt",
            json!({"kind": "tgi_prefill_warmup", "prefill_tokens": 31000, "tgi_process": true, "occurrences": 1}),
        ),
        (
            // A PyTorch 2.1 message (its "capacty" typo) in TGI's router log after warm-up passed.
            "101-tgi-1-3-prefill-oom-after-warmup-a100-40gb.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 232783872_u64, "gpu_index": 0,
                "total_bytes": 42294690447_u64, "free_bytes": 228526653_u64, "allocated_bytes": 39835821670_u64,
                "reserved_bytes": 41521596334_u64, "reserved_unallocated_bytes": 1685774664_u64,
                "processes": [{"pid": 862944, "used_bytes": 42058467246_u64}], "tgi_process": true,
                "occurrences": 1, "gpus_seen": [0], "notes": ["No \"this process\" entry"]
            }),
        ),
        (
            // The shard's traceback quotes the raise; the message is read once.
            "102-tgi-1-1-awq-warmup-traceback.txt",
            json!({"kind": "tgi_prefill_warmup", "prefill_tokens": 4096, "tgi_process": true, "occurrences": 1}),
        ),
        (
            // A rank's executor account, its figures in GiB with two decimals.
            "103-trtllm-executor-kv-cache-qwen3-235b-tp8.txt",
            json!({
                "kind": "trtllm_executor_memory", "trtllm_component": "kv_cache", "total_bytes": 150388279869_u64,
                "free_bytes": 116887534961_u64, "occurrences": 1
            }),
        ),
        (
            "87-mps-chatglm6b-langchain-chatchat.txt",
            json!({
                "kind": "pytorch_mps", "backend": "mps", "requested_bytes": 268435456_u64,
                "reserved_bytes": 19327352832_u64, "process_in_use_bytes": 19332459397_u64,
                "allowed_bytes": 19466939269_u64, "mps_pool": "private", "occurrences": 1
            }),
        ),
        (
            // "other allocations" (14.76 GB) larger than the heaps (5.50 GB).
            "88-mps-training-other-allocations-pytorch-2-3.txt",
            json!({
                "kind": "pytorch_mps", "backend": "mps", "requested_bytes": 154392330_u64,
                "reserved_bytes": 5905580032_u64, "process_in_use_bytes": 21754009354_u64,
                "allowed_bytes": 21904333210_u64, "mps_pool": "private", "occurrences": 1
            }),
        ),
        (
            // Later releases print c10's GiB, MiB.
            "89-mps-comfyui-gib-units-large-request.txt",
            json!({
                "kind": "pytorch_mps", "backend": "mps", "requested_bytes": 6238439997_u64,
                "reserved_bytes": 16879221473_u64, "process_in_use_bytes": 16881748541_u64,
                "allowed_bytes": 19466939269_u64, "mps_pool": "private", "occurrences": 1, "workload": "comfy_ui"
            }),
        ),
        (
            // 256 bytes on the shared pool.
            "90-mps-64gb-shared-pool-256-bytes.txt",
            json!({
                "kind": "pytorch_mps", "backend": "mps", "requested_bytes": 256,
                "reserved_bytes": 77738908058_u64, "process_in_use_bytes": 94607392113_u64,
                "allowed_bytes": 87617332838_u64, "mps_pool": "shared", "occurrences": 1
            }),
        ),
        (
            // Two messages: the last is reported.
            "91-mps-rl-swarm-two-messages-24gb.txt",
            json!({
                "kind": "pytorch_mps", "backend": "mps", "requested_bytes": 611393208_u64,
                "reserved_bytes": 14345190769_u64, "process_in_use_bytes": 29130615685_u64,
                "allowed_bytes": 29205777613_u64, "mps_pool": "private", "occurrences": 2,
                "notes": ["Found 2 out-of-memory messages"]
            }),
        ),
        (
            // transformers' refusal, in 2023's wording with its flag no release takes.
            "92-transformers-bnb-dispatch-old-wording-minigpt4.txt",
            json!({
                "kind": "quantized_offload", "occurrences": 1,
                "notes": ["llm_int8_enable_fp32_cpu_offload=True"]
            }),
        ),
        (
            "93-transformers-bnb-dispatch-llm-int8-wording-3050.txt",
            json!({"kind": "quantized_offload", "occurrences": 1}),
        ),
        (
            "94-transformers-bnb-dispatch-valueerror-senna.txt",
            json!({"kind": "quantized_offload", "occurrences": 1, "notes": ["older transformers' wording"]}),
        ),
        (
            // ggml's pinned-memory warning alone: host RAM, a fallback, no GPU failure.
            "95-llama-pinned-host-only-ollama-deepseek.txt",
            json!({"notes": ["No GPU out-of-memory error here", "349659.17 MiB of pinned memory", "GGML_CUDA_NO_PINNED=1"]}),
        ),
        (
            "96-llama-pinned-host-2023-warning-wsl.txt",
            json!({"notes": ["No GPU out-of-memory error here", "1024.00 MB of pinned memory"]}),
        ),
        (
            // 11.25 × 2^30: MPS's "GB" is 1024-based as in its other messages.
            "97-mps-invalid-buffer-size-animatediff.txt",
            json!({
                "kind": "pytorch_mps_buffer_size", "backend": "mps", "requested_bytes": 12079595520_u64,
                "allocation_limit": true, "occurrences": 1, "workload": "diffusers"
            }),
        ),
        (
            "98-mps-invalid-buffer-size-hunyuan-video-720p.txt",
            json!({
                "kind": "pytorch_mps_buffer_size", "backend": "mps", "requested_bytes": 681965644677_u64,
                "allocation_limit": true, "occurrences": 1
            }),
        ),
        (
            "99-mps-invalid-buffer-size-comfyui-supir-gib.txt",
            json!({
                "kind": "pytorch_mps_buffer_size", "backend": "mps", "requested_bytes": 20809116549_u64,
                "allocation_limit": true, "occurrences": 1, "workload": "comfy_ui"
            }),
        ),
        (
            // vLLM 0.19's request check on the second GPU of two: 60.87 of
            // 79.19 GiB free against 0.95 (75.23 GiB); the message's own
            // utilization, `format_gib`'s GiB.
            "110-vllm-free-below-utilization-tp2.txt",
            json!({"max_num_batched_tokens": 8192,
                "kind": "vllm_free_below_request", "gpu_index": 1, "total_bytes": 85029615043_u64,
                "free_bytes": 65358664826_u64, "gpu_memory_utilization_permille": 950, "kv_cache_dtype": "auto",
                "vllm_process": true, "pipeline_parallel_size": 1, "worker_ranks": 1, "occurrences": 1,
                "gpus_seen": [1]
            }),
        ),
        (
            // vLLM 0.19's sampler warm-up re-raising PyTorch's message: the
            // figures are PyTorch's, read from the same traceback, and the
            // graphs' overshoot of vLLM's estimate is said.
            "111-vllm-sampler-warmup-graphs-over-estimate.txt",
            json!({"max_num_batched_tokens": 8192,
                "kind": "vllm_sampler_warmup", "backend": "cuda", "requested_bytes": 824180736_u64, "gpu_index": 0,
                "total_bytes": 85029615043_u64, "free_bytes": 579338240_u64, "allocated_bytes": 80434000036_u64,
                "reserved_bytes": 82345260483_u64, "reserved_unallocated_bytes": 1911260447_u64,
                "private_pool_bytes": 656408576_u64, "process_in_use_bytes": 84439057039_u64,
                "warmup_requests": 1024, "kv_available_bytes": 62781684449_u64, "weights_bytes": 14645838479_u64,
                "gpu_memory_utilization_permille": 950, "kv_cache_tokens": 1277184, "vllm_process": true,
                "occurrences": 4, "gpus_seen": [0],
                "notes": ["vLLM's CUDA graphs took 1.84 GiB, 552.96 MiB more than its estimate of 1.30 GiB"], "distributed_ranks": 1
            }),
        ),
        (
            // ik_llama.cpp's compute buffer at 131,072 tokens without flash attention.
            "112-ik-llama-gptoss-compute-buffer-131k-no-fa.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 17752270848_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [0], "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // ik_llama.cpp's compute buffer at 131,072 tokens with flash attention: 682.20 MiB.
            "113-ik-llama-gptoss-compute-buffer-131k-fa.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 715335936_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [0], "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // Ollama 0.30+ runs llama.cpp's own server: `llama-server process
            // has terminated` is Ollama's wording, its levers Ollama's.
            "114-ollama-030-llama-server-terminated-kv.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 1879048192_u64, "gpu_index": 0,
                "llama_cpp_stage": "kv_cache", "via_ollama": true, "devices_in_log": [0], "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            "115-ollama-030-runtime-oom-compute-k8s.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 1914513024_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "via_ollama": true, "devices_in_log": [0], "occurrences": 1,
                "gpus_seen": [0]
            }),
        ),
        (
            // SGLang 0.5.10's message with its `Current value:` suffix.
            "116-sglang-0510-qwen3-8b-bf16-16gb-mfs093.txt",
            json!({"kind": "sglang_no_kv_pool", "mem_fraction_static_permille": 930, "occurrences": 1}),
        ),
        (
            // A ComfyUI custom node's `torch.matmul` on a 5090, cudaMallocAsync's table cut after the limit.
            "120-comfyui-vdnh3-video-5090-async.txt",
            json!({
                "kind": "pytorch_async", "backend": "cuda", "requested_bytes": 1449551462_u64, "gpu_index": 0,
                "total_bytes": 34187939676_u64, "allocated_bytes": 32265941811_u64, "workload": "comfy_ui",
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // FramePack in ComfyUI: no path at all, the note's own "ComfyUI" says whose it is.
            "121-comfyui-framepack-4060ti-over-limit.txt",
            json!({
                "kind": "pytorch_async", "backend": "cuda", "requested_bytes": 4370129224_u64, "gpu_index": 0,
                "total_bytes": 17179869184_u64, "free_bytes": 0, "allocated_bytes": 24084029112_u64,
                "workload": "comfy_ui", "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // `trainer.train()` under torchrun: `[rank1]` and `[rank2]` are two GPUs.
            "122-training-grpo-72b-lora-ranks.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 484442112_u64, "gpu_index": 1,
                "total_bytes": 85029615043_u64, "free_bytes": 424673280_u64, "allocated_bytes": 83107617178_u64,
                "reserved_bytes": 83544223253_u64, "reserved_unallocated_bytes": 436606075_u64,
                "processes": [{"pid": 2957107, "used_bytes": 84600118313_u64}], "workload": "training",
                "distributed_ranks": 2, "occurrences": 1, "gpus_seen": [1]
            }),
        ),
        (
            // `loss.backward()` in llama-recipes, with 2.1's "capacty" typo.
            "123-training-llama-recipes-backward-fragmented.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 10823317586_u64, "gpu_index": 0,
                "total_bytes": 23837068493_u64, "free_bytes": 720497541_u64, "allocated_bytes": 10426033111_u64,
                "reserved_bytes": 21818433864_u64, "reserved_unallocated_bytes": 11392400753_u64,
                "processes": [{"pid": 40666, "used_bytes": 23117661471_u64}], "workload": "training",
                "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // A quoted paste (`▎ ` on every line, eugr/spark-vllm-docker#396):
            // 23.25 GiB = 24964497408, 22.5 GiB = 24159191040; the 0.85 is
            // the reporter's later fix, named in words.
            "130-vllm-0291-kv-too-small-quoted-bars-spark.txt",
            json!({
                "kind": "vllm_kv_cache_too_small", "max_seq_len": 196608, "kv_needed_bytes": 24964497408_u64,
                "kv_available_bytes": 24159191040_u64, "estimated_max_model_len": 190272,
                "gpu_memory_utilization_permille": 850, "occurrences": 1
            }),
        ),
        (
            // A vLLM TP worker out of memory while serving (`worker_busy_loop`):
            // 136 MiB asked of a 23.56 GiB RTX 3090 that it holds 22.82 GiB of.
            "131-vllm-worker-busy-loop-runtime-3090.txt",
            json!({"vllm_process": true, "serving": true,
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 142606336_u64, "gpu_index": 0,
                "total_bytes": 25297357373_u64, "free_bytes": 123081851_u64, "allocated_bytes": 23600845292_u64,
                "reserved_bytes": 24011278910_u64, "reserved_unallocated_bytes": 410433618_u64,
                "private_pool_bytes": 22764585_u64, "process_in_use_bytes": 24502788424_u64,
                "worker_ranks": 1, "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // Cut inside `out of memory`; `--fit` gave up over `--cpu-moe`'s
            // overrides, and the failure follows `sched_reserve: reserving`.
            "124-llama-fit-gave-up-cpu-moe-compute-cut-paste.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 15368055685_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [0], "gpus_seen": [0], "occurrences": 1,
                "fit_gave_up": "model_params::tensor_buft_overrides already set by user",
                "fit_shortfall_bytes": 3694133248_u64
            }),
        ),
        (
            // The projector's warm-up after `--fit` filled the GPUs.
            "125-llama-mmproj-clip-warmup-after-fit-5gpu.txt",
            json!({
                "kind": "llama_cpp", "backend": "cuda", "requested_bytes": 390156544_u64, "gpu_index": 0,
                "llama_cpp_stage": "compute_buffers", "devices_in_log": [0], "gpus_seen": [0], "occurrences": 1,
                "clip_warmup": true, "clip_projector": "qwen3vl_merger", "clip_model_bytes": 2305556480_u64
            }),
        ),
        (
            // ggml-sycl on Level Zero: the runtime's out-of-device-memory
            // code inside a tensor copy, after the buffers were in place;
            // `--device SYCL1` on the command line.
            "126-llama-sycl-level-zero-error39-bench-fa.txt",
            json!({
                "kind": "llama_cpp", "backend": "sycl", "failed_in": "ggml_backend_sycl_get_tensor_async",
                "devices_in_log": [1], "occurrences": 1
            }),
        ),
        (
            // MLX's check of one array against Metal's maxBufferLength, in
            // LM Studio's MLX engine evaluating its batch's prompt cache.
            "127-mlx-lmstudio-metal-malloc-max-buffer.txt",
            json!({
                "kind": "mlx_buffer_size", "backend": "metal", "requested_bytes": 48736917632_u64,
                "max_buffer_bytes": 30150672384_u64, "allocation_limit": true, "occurrences": 1,
                "notes": ["prompt cache's state", "LM Studio's MLX engine"]
            }),
        ),
        (
            // Metal's command-buffer out-of-memory under mlx_lm.evaluate.
            "128-mlx-lm-evaluate-command-buffer-16gb.txt",
            json!({
                "kind": "mlx_out_of_memory", "backend": "metal", "occurrences": 1,
                "notes": ["its --batch-size applies to log-likelihood scoring only"]
            }),
        ),
        (
            // llama.cpp's Metal backend: a command buffer of the graph ran out
            // (status 5, kIOGPUCommandBufferCallbackErrorOutOfMemory) after a
            // 48 GiB KV cache for 131072 tokens and 8.29 GiB of compute
            // buffers were allocated, over a 50.33 GiB working set.
            "132-llama-metal-command-buffer-oom-phi35-131k.txt",
            json!({
                "kind": "llama_cpp", "backend": "metal", "llama_cpp_stage": "graph_compute",
                "failed_in": "ggml_metal_graph_compute", "total_bytes": 54043198095_u64, "occurrences": 1,
                "notes": ["recommendedMaxWorkingSetSize", "come to 56.29 GiB (KV cache 48.00 GiB, compute 8.29 GiB), over"]
            }),
        ),
        (
            // The same through Ollama's runner, repeated for every request.
            "133-ollama-metal-command-buffer-oom-llama31-chat.txt",
            json!({
                "kind": "llama_cpp", "backend": "metal", "llama_cpp_stage": "graph_compute",
                "failed_in": "ggml_metal_graph_compute", "via_ollama": true, "occurrences": 1,
                "notes": ["come to 258.50 MiB (compute 258.50 MiB)"]
            }),
        ),
        (
            // The newer wording, from ggml_metal_synchronize, which aborts.
            "134-llama-metal-synchronize-oom-mtp.txt",
            json!({
                "kind": "llama_cpp", "backend": "metal", "llama_cpp_stage": "graph_compute",
                "failed_in": "ggml_metal_synchronize", "occurrences": 1
            }),
        ),
        (
            // The CUDA runtime's error in SGLang 0.4's overlap thread, which
            // runs the batches while it serves (`forward_thread_func`): no
            // frame names the step. The `vllm/utils.py` frame is SGLang's
            // own patch of vLLM's, not a vLLM process.
            "135-sglang-overlap-thread-cuda-error-serving-a100.txt",
            json!({
                "kind": "cuda_error", "backend": "cuda", "sglang_process": true, "serving": true, "occurrences": 1
            }),
        ),
        (
            // A prefill batch of SGLang 0.5.5 (`event_loop_overlap` →
            // `run_batch` → `forward_batch_generation` → `forward_extend`)
            // under sglang#10736's message: 2 GiB asked, 1.27 GiB free.
            "136-sglang-055-prefill-forward-extend-built-from-source.txt",
            json!({
                "kind": "pytorch", "backend": "cuda", "requested_bytes": 2147483648_u64, "gpu_index": 0,
                "total_bytes": 102091372626_u64, "free_bytes": 1363652116_u64, "allocated_bytes": 99675453522_u64,
                "reserved_bytes": 99681262633_u64, "reserved_unallocated_bytes": 5809111_u64,
                "process_in_use_bytes": 100147899924_u64, "sglang_process": true, "serving": true,
                "serving_phase": "prefill", "occurrences": 1, "gpus_seen": [0]
            }),
        ),
        (
            // SGLang 0.4's wording of a full pool, logged by each of 16 TP
            // ranks: a warning, not an error; the last one's figures.
            "137-sglang-044-decode-oom-happened-retract-tp16.txt",
            json!({
                "kind": "sglang_kv_pool_full", "preempted_requests": 1, "new_token_ratio_permille": 192,
                "sglang_process": true, "occurrences": 11, "notes": ["Found 11 of these warnings"]
            }),
        ),
        (
            // SGLang 0.5.18's wording, with the start-up lines: the fraction
            // of server_args, the last decode batch's token usage (1.00) and
            // the 1.91 GB left outside the pool (round(1.91 × 2^30)).
            "138-sglang-0518-kv-pool-full-retract-qwen3-4b-4090.txt",
            json!({
                "kind": "sglang_kv_pool_full", "preempted_requests": 1, "new_token_ratio_permille": 386,
                "kv_cache_usage_permille": 1000, "available_gpu_mem_bytes": 2050846884_u64,
                "mem_fraction_static_permille": 850, "sglang_process": true, "occurrences": 7
            }),
        ),
        (
            // vLLM V0's warning alone: 101 preemptions so far.
            "139-vllm-v0-preempted-recompute-limo.txt",
            json!({"kind": "vllm_preempted", "preempted_requests": 101, "occurrences": 1}),
        ),
        (
            // V0 swapping (n >= 2), its stats line before the warning at 99.2 %.
            "140-vllm-v0-preempted-swap-n2-stats.txt",
            json!({
                "kind": "vllm_preempted", "preempted_requests": 151, "kv_cache_usage_permille": 992,
                "occurrences": 1, "notes": ["PreemptionMode.SWAP"]
            }),
        ),
    ]
}

#[test]
fn corpus_parses_as_expected() {
    let failures: Vec<String> = cases().iter().filter_map(|(file, expected)| check(file, expected).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus files differ:\n{}",
        failures.len(),
        cases().len(),
        failures.join("\n")
    );
}

/// Fixture 136 (a prefill batch of sglang 0.5.5) with its `forward_extend`
/// frames swapped for `swap`'s, each frame as the 0.5.5 wheel has it.
fn sglang_step(swap: &[(&str, &str)]) -> String {
    const DIR: &str = "/usr/local/lib/python3.12/dist-packages/sglang/srt";
    let mut text = read("136-sglang-055-prefill-forward-extend-built-from-source.txt");
    for (from, to) in swap {
        assert!(text.contains(from), "fixture 136 has no {from:?}");
        text = text.replacen(from, &to.replace("{DIR}", DIR), 1);
    }
    text
}

/// SGLang allocates its KV pool once at start-up (`init_memory_pool`): an
/// error in a batch its scheduler ran is a serving-time one, and the frames
/// tell prefill from decode (model_runner.py `_forward_raw`, 0.5.5). A
/// start-up failure is never read as serving, even when a serving step led
/// to it (a CUDA graph recaptured from `replay`).
#[test]
fn sglang_serving_is_told_by_its_batch_frames_and_start_up_is_not() {
    use shared::oom::ServingPhase;
    const EXTEND: &str = "line 2204, in _forward_raw\n    ret = self.forward_extend(";
    const EXTEND_BODY: &str = "line 2092, in forward_extend";
    let prefill = oom::parse(&read("136-sglang-055-prefill-forward-extend-built-from-source.txt"));
    assert!(prefill.serving && prefill.sglang_process, "{prefill:?}");
    assert_eq!(prefill.serving_phase, Some(ServingPhase::Prefill));

    let decode = oom::parse(&sglang_step(&[
        (EXTEND, "line 2192, in _forward_raw\n    ret = self.forward_decode("),
        (EXTEND_BODY, "line 2064, in forward_decode"),
    ]));
    assert!(decode.serving, "{decode:?}");
    assert_eq!(decode.serving_phase, Some(ServingPhase::Decode));

    // Speculative decoding's verify step runs the target model in extend
    // mode: a decode step all the same (speculative/eagle_worker.py).
    let verify = oom::parse(&sglang_step(&[(
        "line 1987, in run_batch\n    batch_result = self.model_worker.forward_batch_generation(\n",
        "line 1987, in run_batch\n    batch_result = self.model_worker.forward_batch_generation(\n  \
         File \"{DIR}/speculative/eagle_worker.py\", line 283, in forward_batch_generation\n    \
         self.verify(batch, spec_info)\n  \
         File \"{DIR}/speculative/eagle_worker.py\", line 659, in verify\n    \
         batch_result = self.target_worker.forward_batch_generation(\n",
    )]));
    assert_eq!(verify.serving_phase, Some(ServingPhase::Decode), "{verify:?}");

    // The logits processor's input logprobs over the prompt (layers/logits_processor.py).
    let logprobs = oom::parse(&sglang_step(&[(
        "line 469, in forward\n    hidden_states = self.model(",
        "line 483, in forward\n    return self.logits_processor(\n  \
         File \"{DIR}/layers/logits_processor.py\", line 574, in forward\n    \
         logprobs_result = self._process_input_logprobs(\n  \
         File \"{DIR}/layers/logits_processor.py\", line 598, in _process_input_logprobs\n    \
         input_logprobs = self.compute_temp_top_p_normalized_logprobs(\n  \
         File \"{DIR}/layers/logits_processor.py\", line 1149, in compute_temp_top_p_normalized_logprobs\n    \
         probs = torch.softmax(last_logits, dim=-1)",
    )]));
    assert_eq!(logprobs.serving_phase, Some(ServingPhase::InputLogprobs), "{logprobs:?}");

    // Start-up: the pool itself (model_runner.py `initialize` → `init_memory_pool`).
    let pool = oom::parse(&format!(
        "Scheduler hit an exception: Traceback (most recent call last):\n  \
         File \"sglang/srt/model_executor/model_runner.py\", line 322, in __init__\n    \
         self.initialize(min_per_gpu_memory)\n  \
         File \"sglang/srt/model_executor/model_runner.py\", line 471, in initialize\n    \
         self.init_memory_pool(\n  \
         File \"sglang/srt/model_executor/model_runner.py\", line 1806, in init_memory_pool\n    \
         self.token_to_kv_pool = MHATokenToKVPool(\n{}",
        sglang_step(&[]).lines().last().unwrap_or_default()
    ));
    assert!(pool.sglang_process && !pool.serving && pool.serving_phase.is_none(), "{pool:?}");

    // A decode step whose graph replay recaptures (cuda_graph_runner.py
    // `recapture_if_needed`): a capture, read as one, not as serving.
    let recapture = oom::parse(&sglang_step(&[
        (EXTEND, "line 2180, in _forward_raw\n    ret = self.graph_runner.replay("),
        (
            "model_executor/model_runner.py\", line 2092, in forward_extend\n    return self.model.forward(",
            "model_executor/cuda_graph_runner.py\", line 835, in replay\n    self.replay_prepare(forward_batch, pp_proxy_tensors)\n  \
             File \"{DIR}/model_executor/cuda_graph_runner.py\", line 741, in replay_prepare\n    \
             self.recapture_if_needed(forward_batch)\n  \
             File \"{DIR}/model_executor/cuda_graph_runner.py\", line 734, in recapture_if_needed\n    \
             self.capture()\n  \
             File \"{DIR}/model_executor/cuda_graph_runner.py\", line 500, in capture\n    \
             ) = self.capture_one_batch_size(bs, forward)\n  \
             File \"{DIR}/model_executor/cuda_graph_runner.py\", line 692, in capture_one_batch_size\n    \
             run_once()\n  \
             File \"{DIR}/model_executor/cuda_graph_runner.py\", line 660, in run_once\n    \
             return self.model.forward(",
        ),
    ]));
    assert!(recapture.graph_capture && !recapture.serving && recapture.serving_phase.is_none(), "{recapture:?}");
}

/// A serving engine's warning that its KV cache was full (it evicted
/// running requests to recompute later) is read in each engine's and
/// release's wording; a stats line without preemptions, prose, SGLang's
/// test mode and a source line quoted in a traceback are not it.
#[test]
fn full_kv_cache_warnings_are_read_in_each_wording() {
    use shared::oom::OomKind;
    // SGLang 0.4.7 – 0.5.5, as its tuning guide quotes it; 0.5.23 with a hybrid's mamba slots.
    let r = oom::parse(
        "[2025-08-11 17:17:03 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: \
         0.9998 -> 1.0000",
    );
    let read = (r.kind, r.preempted_requests, r.new_token_ratio_permille, r.sglang_process);
    assert_eq!(read, (Some(OomKind::SglangKvPoolFull), Some(1), Some(1000), true));
    let r = oom::parse(
        "KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_tokens_gained: 2048, #mamba_num_gained: 3, \
         #new_token_ratio: 0.5000 -> 0.7000",
    );
    assert_eq!((r.preempted_requests, r.new_token_ratio_permille), (Some(3), Some(700)));
    // vLLM V1's stats line (v1/metrics/loggers.py, 0.34's format string).
    let line = "(APIServer pid=1) INFO 05-12 08:01:49 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, \
                Avg generation throughput: 7.2 tokens/s, Running: 64 reqs, Waiting: 12 reqs, Preemptions: 3, GPU KV \
                cache usage: 99.8%, Prefix cache hit rate: 0.0%";
    let r = oom::parse(line);
    let read = (r.kind, r.preempted_requests, r.kv_cache_usage_permille, r.vllm_process);
    assert_eq!(read, (Some(OomKind::VllmPreemptions), Some(3), Some(998), true));
    // V0's warning as vLLM's docs quote it (docs/configuration/optimization.md).
    let r = oom::parse(
        "WARNING 05-09 00:49:33 scheduler.py:1057 Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode \
         because there is not enough KV cache space. This can affect the end-to-end performance. Increase \
         gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. \
         total_cumulative_preemption_cnt=1",
    );
    assert_eq!((r.kind, r.preempted_requests), (Some(OomKind::VllmPreempted), Some(1)));
    for text in [
        &line.replace("Preemptions: 3", "Preemptions: 0")[..],
        "We saw Preemptions: 3 on the dashboard yesterday",
        "[2025-08-11 17:17:03 TP0] Testing retraction. #retracted_reqs: 1, #new_tokens_gained: 20",
        "    msg_prefix = (\n        \"KV cache pool is full. Retract requests. \"",
    ] {
        assert_eq!(oom::parse(text).kind, None, "{text}");
    }
    // A JSON log quotes the message with its figures: the warning itself.
    let json = r#"{"level": "WARNING", "message": "KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.3000 -> 0.5000"}"#;
    let r = oom::parse(json);
    assert_eq!((r.kind, r.preempted_requests), (Some(OomKind::SglangKvPoolFull), Some(2)), "{json}");
    // The allocator failing after the retractions is the error, the
    // warnings a note beside it; its source line in a traceback is not it.
    let crash = "[TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.3 -> 0.5\n\
                 RuntimeError: Decode out of memory. Try to lower your batch size.\nTry to allocate 8 tokens.";
    let r = oom::parse(crash);
    assert_eq!(r.kind, Some(OomKind::SglangKvAllocFailed));
    assert!(r.notes.iter().any(|n| n.contains("1 warning(s)")), "{:?}", r.notes);
    let alone = "RuntimeError: Prefill out of memory. Try to lower your batch size.\nTry to allocate 8192 tokens.";
    assert_eq!(oom::parse(alone).kind, Some(OomKind::SglangKvAllocFailed));
    let source = "            f\"Prefill out of memory. Try to lower your batch size.\\n\"";
    assert_eq!(oom::parse(source).kind, None, "{source}");
}

/// A warning cut before its figures, or garbage where they stand, is
/// still the warning, with no figure (never the next line's number) and
/// a note saying what could not be read.
#[test]
fn a_full_kv_cache_warning_cut_short_gives_no_figure() {
    use shared::oom::OomKind;
    for text in [
        "KV cache pool is full. Retract requests. #retracted_reqs: ",
        "KV cache pool is full. Retract requests. #retracted_reqs:\n2025-03-07 21:49:33 the next line",
        "KV cache pool is full. Retract requests. #retracted_reqs: many, #new_token_ratio: x -> y",
        "Sequence group 3 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. \
         total_num_cumulative_preemption=",
    ] {
        assert_invariants(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let r = oom::parse(text);
        assert!(r.kind.is_some_and(OomKind::is_pool_full), "{text}");
        let figures = (r.preempted_requests, r.new_token_ratio_permille, r.kv_cache_usage_permille);
        assert_eq!(figures, (None, None, None), "{text}");
        assert!(r.notes.iter().any(|n| n.contains("could not read preempted_requests")), "{text}: {:?}", r.notes);
    }
    // The corpus's own cut line: the count is there, the ratio is not.
    let r = oom::parse("Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.1207 ->");
    assert_eq!((r.preempted_requests, r.new_token_ratio_permille), (Some(1), None));
}

/// A paste with a real out-of-memory error beside the warnings is that
/// error's report, whichever comes first; the warnings are named in a note.
#[test]
fn an_oom_beside_full_kv_cache_warnings_is_the_report() {
    let warnings = read("138-sglang-0518-kv-pool-full-retract-qwen3-4b-4090.txt");
    let oom_text = read("136-sglang-055-prefill-forward-extend-built-from-source.txt");
    for text in [format!("{warnings}\n{oom_text}"), format!("{oom_text}\n{warnings}")] {
        let r = oom::parse(&text);
        assert_eq!(r.kind, Some(shared::oom::OomKind::Pytorch));
        assert_eq!((r.requested_bytes, r.occurrences, r.preempted_requests), (Some(2_147_483_648), 1, None));
        assert!(r.notes.iter().any(|n| n.contains("also has 7 warning(s)")), "{:?}", r.notes);
    }
}

#[test]
fn every_corpus_file_has_an_expected_reading() {
    let on_disk: BTreeSet<String> = fs::read_dir(FIXTURES)
        .unwrap_or_else(|e| panic!("{FIXTURES}: {e}"))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".txt"))
        .collect();
    let checked: BTreeSet<String> = cases().iter().map(|(file, _)| (*file).to_owned()).collect();
    assert_eq!(on_disk, checked, "corpus files and cases differ");
    assert!(checked.len() >= MIN_CORPUS, "the corpus has {} messages, fewer than {MIN_CORPUS}", checked.len());
}

/// A paste the parser reads never gets the reply meant for text it cannot
/// read; one it cannot read is not told that only PyTorch's line will do.
#[test]
fn recognised_pastes_are_never_told_to_paste_the_error() {
    let mut checked = 0;
    for file in (46..=54).filter_map(|n| {
        fs::read_dir(FIXTURES)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.file_name().into_string().unwrap_or_default())
            .find(|f| f.starts_with(&format!("{n}-")))
    }) {
        let r = oom::parse(&read(&file));
        assert!(r.kind.is_some(), "{file}: not recognised");
        assert!(!r.notes.iter().any(|n| n.contains("Paste the whole error")), "{file}: {:?}", r.notes);
        checked += 1;
    }
    assert_eq!(checked, 9, "fixtures 46 – 54, one each");
    let unread = oom::parse("Error: something went wrong");
    assert!(unread.notes.iter().any(|n| n.contains("SGLang") && n.contains("Ollama")), "{:?}", unread.notes);
}

/// Prose about a setting is not the setting: only a flag, `key=value`, a
/// dict entry or vLLM's profile line names gpu_memory_utilization.
#[test]
fn utilization_is_read_from_settings_not_prose() {
    let error = "\nValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`";
    for (text, want) in [
        ("user tried gpu_memory_utilization 0.03-0.4", None),
        ("vllm serve m --gpu-memory-utilization 0.03-0.4", None),
        ("vllm serve m --gpu-memory-utilization=0.5", Some(500)),
        ("non-default args: {'model': 'm', 'gpu_memory_utilization': 0.3}", Some(300)),
        ("vllm serve m --gpu-memory-utilization 0.9\nvllm serve m --gpu-memory-utilization 0.6", Some(600)),
    ] {
        let r = oom::parse(&format!("{text}{error}"));
        assert_eq!(r.gpu_memory_utilization_permille, want, "{text}");
    }
    for (text, want) in [
        ("vllm serve m --kv-cache-dtype fp8_e4m3", Some("fp8_e4m3")),
        ("vllm serve m --kv-cache-dtype=fp8", Some("fp8")),
        ("config: model='m', enforce_eager=False, kv_cache_dtype=fp8, device_config=cuda", Some("fp8")),
        ("non-default args: {'model': 'm', 'kv_cache_dtype': 'fp8'}", Some("fp8")),
        ("kv_cache_dtype=auto, device_config=cuda", Some("auto")),
        ("the kv-cache-dtype flag did not help", None),
    ] {
        let r = oom::parse(&format!("{text}{error}"));
        assert_eq!(r.kv_cache_dtype.as_deref(), want, "{text}");
    }
}

#[test]
fn empty_text_is_explained() {
    let report = oom::parse("");
    assert_eq!(report.kind, None);
    assert_eq!(report.occurrences, 0);
    assert!(!report.notes.is_empty());
}

/// Inputs the property tests once broke the parser on.
#[test]
fn regressions() {
    for text in ["out of memory", ": out of memory", "error: out of memory", "Process has 1 GiB memory in use"] {
        assert_invariants(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

/// What must hold for any input, well-formed or not.
fn assert_invariants(text: &str) -> Result<(), TestCaseError> {
    let r = oom::parse(text);
    prop_assert_eq!(r.kind.is_none(), r.occurrences == 0);
    if r.kind.is_none() {
        prop_assert!(!r.notes.is_empty(), "an unrecognised text must say so");
    }
    if let (Some(reserved), Some(allocated), Some(unallocated)) =
        (r.reserved_bytes, r.allocated_bytes, r.reserved_unallocated_bytes)
    {
        prop_assert_eq!(u128::from(reserved), u128::from(allocated) + u128::from(unallocated));
    }
    prop_assert!(r.gpus_seen.windows(2).all(|w| w[0] < w[1]), "gpus_seen sorted and unique");
    if let Some(gpu) = r.gpu_index {
        prop_assert!(r.gpus_seen.contains(&gpu));
    }
    let json = serde_json::to_string(&r).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: OomReport = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(back, r);
    Ok(())
}

/// Words of the recognised formats, so random text often gets deep into a
/// parser rather than failing at the first phrase.
const VOCABULARY: &[&str] = &[
    "CUDA ",
    "HIP ",
    "out of memory",
    ". ",
    "Tried to allocate ",
    "GPU ",
    "0",
    "7",
    "12",
    "255",
    "4294967296",
    "123456789012345678901234",
    ".5",
    ".99999999999999999999",
    " bytes",
    " KiB",
    " MiB",
    " GiB",
    " TiB",
    " GB",
    "(",
    ")",
    "; ",
    ", ",
    "total capacity",
    "already allocated",
    "free",
    "reserved in total by PyTorch",
    "cached",
    "allowed",
    "has a total capacity of ",
    "of which ",
    "is free",
    "Process ",
    "has ",
    "memory in use",
    "Including non-PyTorch memory, this process has ",
    "Of the allocated memory ",
    "is allocated by PyTorch",
    "with ",
    "allocated in private pools (e.g., CUDA Graphs)",
    "and ",
    "is reserved by PyTorch but unallocated",
    "max seq len",
    "KV cache is needed",
    "available KV cache memory",
    "-",
    "is larger than the maximum number of tokens that can be stored in KV cache",
    "No available memory for the cache blocks",
    "out of memory occurred when warming up sampler with ",
    " dummy requests",
    "Not enough memory. Please try to increase --mem-fraction-static",
    "Current value: mem_fraction_static=",
    "max_total_tokens=",
    "is larger than the profiled value ",
    "model requires more system memory ",
    "than is available ",
    "ggml_vulkan: Device memory allocation of size ",
    " failed.",
    "ErrorOutOfDeviceMemory",
    "failed to allocate 'data ' buffer, size = ",
    "recommendedMaxWorkingSetSize = ",
    "Available KV cache memory: ",
    "GPU KV cache size: ",
    "20,000",
    "cudaMalloc failed: ",
    "allocating ",
    "on device ",
    "failed to allocate ",
    "unable to allocate ",
    "CUDA0 ",
    "ROCm1 ",
    "CUDA_Host ",
    "buffer ",
    "of size ",
    "buffer for kv cache",
    "compute",
    "CUDA error: ",
    "current device: ",
    "ggml",
    "raise ",
    "[rank0]: ",
    "(VllmWorker rank=0 pid=1) ",
    "(Worker_TP1 pid=2) ",
    "-pp ",
    "--pipeline-parallel-size ",
    "VLLM_PP_LAYER_PARTITION=",
    "99999999999999",
    "1,",
    "ERROR 05-01 12:00:00 ",
    "May 01 ",
    "\\n",
    "\\'",
    "\\u00a0",
    "\\x1b[31m",
    "\u{1b}[0m",
    "'",
    "\n",
    "\r",
    " ",
    "\u{e9}",
    "\u{1f600}",
    // Sweep 2's formats: vLLM's processes, graph capture, single-allocation
    // limits, Ollama's journal, the cudaMallocAsync table.
    "(VllmWorkerProcess pid=",
    "RayWorkerWrapper pid=",
    "File \"/x/vllm/",
    "torch.cuda.graph(",
    "Capturing cudagraphs",
    "Graph capturing finished",
    "Capture cuda graph failed: ",
    "exceeds device buffer size limit",
    "Failed to allocate pinned memory",
    "can NOT allocate memory block with size larger than 4GB! ",
    "XPU out of memory. ",
    "ollama[95]: ",
    "source=server.go:824 ",
    "Model loading took ",
    "Allocation on device ",
    "would exceed allowed memory. (out of memory)",
    "Currently allocated : ",
    "Requested : ",
    "Device limit : ",
    "Free (according to CUDA): ",
    // PyTorch's MPS allocator.
    "MPS backend out of memory (",
    "MPS allocated: ",
    "other allocations: ",
    "max allowed: ",
    " on private pool. ",
    " on shared pool",
    // Serving engines' warnings that their KV cache was full.
    "KV cache pool is full. Retract requests. ",
    "Decode out of memory happened. ",
    "#retracted_reqs: ",
    "#new_token_ratio: ",
    " -> ",
    "Decode batch, ",
    "token usage: ",
    "available_gpu_mem=",
    "is preempted by PreemptionMode.SWAP mode because there is not enough KV cache space. ",
    "total_num_cumulative_preemption=",
    "Running: 4 reqs, ",
    "Preemptions: ",
    "GPU KV cache usage: ",
    "%",
];

fn vocabulary_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(VOCABULARY), 0..120).prop_map(|words| words.concat())
}

/// Ways to damage a corpus message: (kind, position, length, filler).
fn mutation() -> impl Strategy<Value = (u8, usize, usize, String)> {
    (0u8..5, any::<usize>(), 0usize..40, "[ -~\n\u{e9}\u{1f600}0-9]{0,12}")
}

fn mutate(text: &str, mutations: &[(u8, usize, usize, String)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for (kind, pos, len, filler) in mutations {
        let at = if chars.is_empty() { 0 } else { pos % chars.len() };
        let end = (at + len).min(chars.len());
        match kind {
            0 => {
                chars.drain(at..end);
            }
            1 => {
                chars.splice(at..at, filler.chars());
            }
            2 => {
                chars.splice(at..end, filler.chars());
            }
            3 => {
                let copy: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, copy);
            }
            _ => chars.truncate(at),
        }
    }
    chars.into_iter().collect()
}

proptest! {
    // Failures are not persisted to a file: a failure found here becomes an
    // explicit case in `regressions` below.
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        assert_invariants(&text)?;
    }

    #[test]
    fn format_vocabulary_never_panics(text in vocabulary_text()) {
        assert_invariants(&text)?;
    }

    #[test]
    fn mutated_corpus_never_panics(
        which in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let all = cases();
        let (file, _) = &all[which % all.len()];
        assert_invariants(&mutate(&read(file), &mutations))?;
    }

    /// Any printed figure, however large, is either the exact byte count or
    /// `None`: never a wrapped-around number.
    #[test]
    fn sizes_never_wrap(
        int in any::<u64>(),
        frac in 0u32..100,
        unit in 0usize..9,
    ) {
        const UNITS: [(&str, u128); 9] = [
            ("bytes", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
            ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("B", 1),
        ];
        let (name, bytes_per_unit) = UNITS[unit];
        let text = format!(
            "CUDA out of memory. Tried to allocate {int}.{frac:02} {name} (GPU 0; 1.00 GiB total capacity; \
             0 bytes already allocated; 0 bytes free; 0 bytes reserved in total by PyTorch)"
        );
        let exact = u128::from(int) * bytes_per_unit + (u128::from(frac) * bytes_per_unit + 50) / 100;
        let report = oom::parse(&text);
        prop_assert_eq!(report.requested_bytes, u64::try_from(exact).ok());
    }
}

/// A paste's pipeline settings are read only as a plan could hold them:
/// `-pp` beyond the most GPUs a plan has, or a layer partition longer than
/// that, is not a setting (a hostile figure must not size the report).
#[test]
fn absurd_pipeline_settings_are_not_read() {
    let kv = "ValueError: To serve at least one request with the models's max seq len (131072), (4.54 GiB KV cache \
              is needed, which is larger than the available KV cache memory (1.71 GiB).";
    let r = shared::oom::parse(&format!("vllm serve m -pp 99999999999999\n{kv}"));
    assert_eq!(r.pipeline_parallel_size, None);
    let r = shared::oom::parse(&format!("vllm serve m -pp 2\n{kv}"));
    assert_eq!(r.pipeline_parallel_size, Some(2));
    let long = format!("VLLM_PP_LAYER_PARTITION={}1 vllm serve m\n{kv}", "1,".repeat(shared::plan::MAX_GPUS + 1));
    assert!(shared::oom::parse(&long).pp_layer_partition.is_empty());
    let r = shared::oom::parse(&format!("VLLM_PP_LAYER_PARTITION=16,32 vllm serve m\n{kv}"));
    assert_eq!(r.pp_layer_partition, [16, 32]);
}

/// A version after a backend's name (`ROCm6.2`, `CUDA12.4`) is not a device.
#[test]
fn backend_versions_are_not_devices() {
    let text = "built with ROCm6.2 and CUDA12.4\nggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB \
                on device 0: cudaMalloc failed: out of memory";
    assert_eq!(oom::parse(text).devices_in_log, [0]);
}

/// A vLLM process is told by what only vLLM prints: its processes' prefixes
/// (V0's, Ray's, V1's engine core), its launchers, its start-up lines, and
/// a traceback through its package, unless SGLang's marks say the paste is
/// SGLang's (its early releases ran vLLM's layers).
#[test]
fn vllm_is_told_by_its_prefixes_launchers_start_up_lines_and_tracebacks() {
    let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 26.00 MiB.";
    for (text, vllm, sglang) in [
        ("(VllmWorkerProcess pid=5121) INFO 07-24 01:10:02 model_runner.py:1173] Capturing", true, false),
        ("(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267]", true, false),
        ("(EngineCore pid=4242) ERROR 05-01 10:00:00 [core.py:600] EngineCore failed to start.", true, false),
        ("python -m vllm.entrypoints.openai.api_server --model m --dtype float", true, false),
        ("$ vllm serve Qwen/Qwen2.5-7B --max-model-len 8192", true, false),
        (
            "INFO 03-27 10:29:01 [worker.py:267] the current vLLM instance can use total_gpu_memory (44.53GiB)",
            true,
            false,
        ),
        (
            "[rank0]:   File \"/usr/lib/python3.10/site-packages/vllm/worker/worker.py\", line 236, in _warm_up_model",
            true,
            false,
        ),
        (
            "  File \"/sgl-workspace/sglang/python/sglang/srt/models/llama.py\", line 9\n  File \
             \"/usr/lib/python3.10/site-packages/vllm/model_executor/layers/linear.py\", line 3",
            false,
            true,
        ),
        ("[rank0]: see https://example.com/vllm/issues and my notes", false, false),
        ("python train.py --model m", false, false),
    ] {
        let r = oom::parse(&format!("{text}\n{oom}"));
        assert_eq!((r.vllm_process, r.sglang_process), (vllm, sglang), "{text}");
    }
}

/// A capture is read from its traceback, or from the engine's log opening
/// one it never reports done; a capture that finished before the error is
/// not where it failed.
#[test]
fn graph_capture_is_read_from_the_traceback_or_an_unfinished_capture() {
    let oom = "RuntimeError: CUDA error: out of memory";
    for (text, want) in [
        ("    with torch.cuda.graph(self._graph, pool=memory_pool, stream=stream):", true),
        ("  File \"/x/vllm/worker/model_runner.py\", line 1173, in capture_model", true),
        ("INFO 03-27 10:29:03 [model_runner.py:1442] Capturing cudagraphs for decoding.", true),
        (
            "INFO 03-27 10:29:03 [model_runner.py:1442] Capturing cudagraphs for decoding.\n\
             INFO 03-27 10:29:09 [model_runner.py:1570] Graph capturing finished in 6 secs, took 0.41 GiB",
            false,
        ),
        ("[2025-04-10 02:11:09 TP0] Capture cuda graph begin. This can take up to several minutes.", true),
        ("python generate.py", false),
        // Replaying graphs captured at start-up is serving, not capturing.
        ("  File \"/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py\", line 612, in replay", false),
    ] {
        assert_eq!(oom::parse(&format!("{text}\n{oom}")).graph_capture, want, "{text}");
    }
    // Not a PyTorch or CUDA error: vLLM's own start-up errors keep their reading.
    let kv = oom::parse(
        "INFO Capturing cudagraphs for decoding.\nValueError: No available memory for the cache blocks. Try \
         increasing `gpu_memory_utilization` when initializing the engine.",
    );
    assert!(!kv.graph_capture);
}

/// Ollama's own log is told by its journal prefix, its slog lines' Go
/// sources and its scheduler's words, not only by the runner's exit line.
#[test]
fn ollama_is_told_by_its_journal_and_its_log_lines() {
    let oom = "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 9668469760";
    for (text, want) in [
        ("Nov 25 06:44:10 ai ollama[95]: llama_context: constructing", true),
        ("time=2025-11-25T06:44:10.202+02:00 level=INFO source=server.go:824 msg=\"load\"", true),
        ("msg=reloading runner.name=gpt-oss:20b runner.num_ctx=42000", true),
        ("ollama[]: no pid", false),
        ("source=main.py:12 msg=x", false),
        ("llama-server -m model.gguf -c 8192", false),
    ] {
        assert_eq!(oom::parse(&format!("{text}\n{oom}")).via_ollama, want, "{text}");
    }
}

/// TGI is told by its log targets, its launcher and its image, and a
/// `vllm/` frame in its traceback (TGI 1.x ran vLLM's kernels) is not vLLM.
#[test]
fn tgi_is_told_by_its_log_targets_launcher_and_image() {
    let oom = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 26.00 MiB.";
    for (text, want) in [
        ("2023-09-26T21:48:00.969072Z ERROR text_generation_launcher: Method Warmup encountered an error.", true),
        ("  File \"/opt/conda/lib/python3.9/site-packages/text_generation_server/models/flash_causal_lm.py\"", true),
        ("docker run --gpus all ghcr.io/huggingface/text-generation-inference:3.3.7 --model-id m", true),
        ("text-generation-launcher --model-id m --num-shard 2", true),
        ("from transformers import pipeline; pipeline(\"text-generation\")", false),
        ("(VllmWorker rank=0 pid=1) text_generation_server", false),
    ] {
        let r = oom::parse(&format!("{text}\n{oom}"));
        assert_eq!(r.tgi_process, want, "{text}");
        assert!(!(r.tgi_process && r.vllm_process), "{text}");
    }
    let through_vllm = "text_generation_launcher: Method Prefill encountered an error.\n  File \"/opt/conda/lib/python3.9/site-packages/vllm/attention.py\", line 1\n";
    let r = oom::parse(&format!("{through_vllm}{oom}"));
    assert!(r.tgi_process && !r.vllm_process);
}

/// ggml-vulkan's single-buffer limit is read from the error it throws, not
/// from the pinned-memory warning that falls back to host memory.
#[test]
fn vulkans_buffer_limit_is_read_from_the_error_not_the_pinned_memory_warning() {
    let failed = "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 8753520640";
    for (line, want) in [
        ("ggml_vulkan: Requested buffer size exceeds device buffer size limit: ErrorOutOfDeviceMemory", true),
        ("ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory", true),
        (
            "ggml_vulkan: Failed to allocate pinned memory (Requested buffer size exceeds device buffer size limit: \
             ErrorOutOfDeviceMemory)",
            false,
        ),
        ("ggml_vulkan: Device memory allocation of size 8753520640 failed.", false),
    ] {
        assert_eq!(oom::parse(&format!("{line}\n{failed}")).allocation_limit, want, "{line}");
    }
}

/// The cudaMallocAsync backend's figures, each by its label; a limit below
/// the device's total is a cap, the total itself is none.
#[test]
fn the_cuda_malloc_async_table_is_read_by_its_labels() {
    let capped = oom::parse(
        "torch.OutOfMemoryError: Allocation on device 1 would exceed allowed memory. (out of memory)\n\
         Currently allocated     : 9.43 GiB\nRequested               : 640.00 MiB\n\
         Device limit            : 11.59 GiB\nFree (according to CUDA): 1.12 GiB\n\
         PyTorch limit (set by user-supplied memory fraction)\n                        : 10.00 GiB",
    );
    assert_eq!(capped.kind, Some(oom::OomKind::PytorchAsync));
    assert_eq!(capped.gpu_index, Some(1));
    assert_eq!(capped.requested_bytes, Some(640 * 1024 * 1024));
    assert_eq!(capped.allowed_bytes, Some(10 * 1024 * 1024 * 1024));
    assert!(capped.notes.is_empty(), "{:?}", capped.notes);
    // Cut after the first figure: read as far as it goes, and said so.
    let cut = oom::parse(
        "Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated : 9.43 GiB",
    );
    assert_eq!(cut.kind, Some(oom::OomKind::PytorchAsync));
    assert!(cut.notes.iter().any(|n| n.contains("requested_bytes")), "{:?}", cut.notes);
}

/// The MPS message read in pieces: without "max allowed" (the watermark
/// off) the limit is absent and a note says why; a paste mixing it with a
/// CUDA message keeps both; a cut message names what it lacks.
#[test]
fn the_mps_message_is_read_by_its_labels() {
    let off = oom::parse(
        "RuntimeError: MPS backend out of memory (MPS allocated: 30.00 GB, other allocations: 2.00 GB). Tried to \
         allocate 512.00 MB on private pool.",
    );
    assert_eq!(off.kind, Some(oom::OomKind::PytorchMps));
    assert_eq!(off.allowed_bytes, None);
    assert_eq!(off.process_in_use_bytes, Some(32 << 30));
    assert!(off.notes.iter().any(|n| n.contains("PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0")), "{:?}", off.notes);

    let cut = oom::parse("RuntimeError: MPS backend out of memory (MPS allocated: 17.77 GB, other allocati");
    assert_eq!(cut.kind, Some(oom::OomKind::PytorchMps));
    assert_eq!(cut.reserved_bytes, Some(19080392212));
    assert!(cut.notes.iter().any(|n| n.contains("requested_bytes")), "{:?}", cut.notes);

    let mixed = oom::parse(&format!(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 \
         GiB of which 1.00 GiB is free. Of the allocated memory 20.00 GiB is allocated by PyTorch, and 1.00 GiB is \
         reserved by PyTorch but unallocated.\n{}",
        read("41-mps-generate-private-pool.txt")
    ));
    assert_eq!(mixed.occurrences, 2);
    assert_eq!(mixed.kind, Some(oom::OomKind::PytorchMps));
    assert_eq!(mixed.requested_bytes, Some(256 << 20));
    // `MPS` anywhere else is not the backend's message.
    assert_eq!(oom::parse("the MPS out of memory killer").kind, None);
}

//! Every protocol message kind, serialized, must equal its example in
//! `docs/protocol.md`, and every example must decode. Run with
//! `UPDATE_PROTOCOL_DOC=1` to rewrite the examples after a deliberate change.

use std::path::Path;

use shared::protocol::*;

fn json(value: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap()
}

/// The launch of the example's vLLM process, read and planned by the
/// agent's own functions: its command line (the API key dropped), the plan
/// as a link, and that plan's figure for the GPU (Llama 3.1 8B is the
/// catalog's preset of the same config).
fn vllm_launch() -> Launch {
    let argv = "/usr/bin/python3 /usr/local/bin/vllm serve meta-llama/Llama-3.1-8B-Instruct \
                --gpu-memory-utilization 0.40 --max-model-len 16384 --api-key sk-example --port 8000";
    let argv: Vec<&str> = argv.split_whitespace().collect();
    let launch = shared::startup::read_command_line(&argv).unwrap();
    let model = shared::link::ModelSource::Hub("meta-llama/Llama-3.1-8B-Instruct".into());
    let gpu = shared::link::GpuChoice::of_device(None, 85_520_809_984);
    let state = shared::link::LinkState::of_launch(&launch, model, gpu, 1);
    let preset = shared::model::Model::preset("llama-3.1-8b").unwrap();
    let estimate = shared::estimate::estimate(&preset, state.scenario_for(&preset).unwrap());
    Launch::of(&launch, Some(shared::link::encode(&state)), Some(estimate.per_gpu[0].total_bytes))
}

fn examples() -> Vec<(&'static str, serde_json::Value)> {
    let host = HostInfo {
        agent_version: "0.1.0".into(),
        hostname: "gpu1".into(),
        driver_version: Field::Value("570.86.15".into()),
        cuda_driver_version: Field::Value("12.8".into()),
        simulated: false,
        memory_total_bytes: Field::Value(270_582_939_648),
        gpus: vec![GpuInfo {
            index: 0,
            uuid: Field::Value("GPU-5e6f4a1c-8d2b-4c3e-9f10-2a3b4c5d6e7f".into()),
            name: Field::Value("NVIDIA H100 80GB HBM3".into()),
            pci_bus_id: Field::Value("00000000:18:00.0".into()),
            memory_total_bytes: Field::Value(85_520_809_984),
            compute_mode: Field::Value(ComputeMode::Default),
            mig_mode: Field::Unavailable(Unavailable::NotSupported),
            catalog_id: None,
        }],
    };
    let sample = Sample {
        seq: 42,
        timestamp_ms: 1_767_225_600_000,
        processes_timestamp_ms: 1_767_225_599_000,
        simulated: false,
        gpus: vec![GpuSample {
            index: 0,
            memory: Field::Value(MemoryReading {
                total_bytes: 85_520_809_984,
                used_bytes: 32_212_254_720,
                free_bytes: 52_771_684_352,
                reserved_bytes: Field::Value(536_870_912),
                source: MemorySource::NvmlV2,
            }),
            utilization: Field::Value(Utilization { gpu_pct: 87, memory_pct: 52 }),
            temperature_c: Field::Value(71),
            power_draw_mw: Field::Value(612_000),
            power_limit_mw: Field::Value(700_000),
            sm_clock_mhz: Field::Value(1980),
            memory_clock_mhz: Field::Value(2619),
            mig_instances: Field::Value(vec![]),
            processes: Field::Value(vec![
                GpuProcess {
                    pid: 48_211,
                    name: Field::Value("vllm".into()),
                    container: Some("3f4e1c2b9a8d".into()),
                    pod: Some(PodRef {
                        uid: "6b1e2f3a-4c5d-4e6f-8a9b-0c1d2e3f4a5b".into(),
                        namespace: Some("ml-serving".into()),
                        name: Some("vllm-llama-0".into()),
                        container: Some("vllm".into()),
                    }),
                    used_bytes: Field::Value(32_212_254_720),
                    mig: None,
                    launch: Some(vllm_launch()),
                },
                GpuProcess {
                    pid: 51_007,
                    name: Field::Unavailable(Unavailable::NotVisible),
                    container: None,
                    pod: None,
                    used_bytes: Field::Value(1_073_741_824),
                    mig: None,
                    launch: None,
                },
            ]),
        }],
    };
    vec![
        (
            "hello",
            json(ClientMessage::Hello(Hello {
                token: "3b1f0c9e8d7a6b5c4d3e2f1a0b9c8d7e".into(),
                protocol_version: PROTOCOL_VERSION,
                client: Some("headroom-web/0.1.0".into()),
            })),
        ),
        ("subscribe", json(ClientMessage::Subscribe(Subscribe { interval_ms: 1000 }))),
        (
            "welcome",
            json(ServerMessage::Welcome(Welcome {
                protocol_version: PROTOCOL_VERSION,
                host: host.clone(),
                limits: Limits::default(),
                probes: ProbeLimits {
                    enabled: true,
                    allow_full_probes: false,
                    margin_bytes: 1_073_741_824,
                    default_hold_ms: 1000,
                    max_hold_ms: 5000,
                    deadline_ms: 30_000,
                    max_steps: MAX_PROBE_STEPS,
                    rate_burst: 3,
                    rate_refill_ms: 10_000,
                },
            })),
        ),
        ("sample", json(ServerMessage::Sample(sample.clone()))),
        ("error", json(ServerMessage::error(ErrorCode::Unauthorized, "wrong or missing token"))),
        (
            "probe_start",
            json(ClientMessage::ProbeStart(ProbeStart {
                gpu: 0,
                mode: ProbeMode::Plan,
                bytes: None,
                steps: vec![
                    ProbeStep { label: "embeddings".into(), bytes: 1_050_673_152 },
                    ProbeStep { label: "layer 0 weights".into(), bytes: 436_207_616 },
                    ProbeStep { label: "KV cache".into(), bytes: 335_544_320 },
                    ProbeStep { label: "activation peak".into(), bytes: 276_824_064 },
                ],
                chunk_bytes: None,
                hold_ms: Some(1000),
                confirm_bytes: Some(2_099_249_152),
            })),
        ),
        ("probe_cancel", json(ClientMessage::ProbeCancel(ProbeCancel { probe_id: Some(7) }))),
        (
            "probe_started",
            json(ServerMessage::ProbeStarted(ProbeStarted {
                probe_id: 7,
                gpu: 0,
                mode: ProbeMode::Plan,
                requested_bytes: 2_099_249_152,
                limit_bytes: 51_697_942_528,
                hold_ms: 1000,
                steps: 4,
                worker_pid: Some(73_112),
                simulated: false,
            })),
        ),
        (
            "probe_progress",
            json(ServerMessage::ProbeProgress(ProbeProgress {
                probe_id: 7,
                phase: ProbePhase::Allocate,
                step: 2,
                label: "layer 0 weights".into(),
                bytes: 436_207_616,
                allocated: true,
                held_bytes: 1_486_880_768,
                context_bytes: None,
                elapsed_ms: 412,
            })),
        ),
        (
            "probe_result",
            json(ServerMessage::ProbeResult(ProbeResult {
                probe_id: 7,
                gpu: 0,
                mode: ProbeMode::Plan,
                simulated: false,
                ok: true,
                outcome: ProbeOutcome::Completed,
                stopped_at: None,
                requested_bytes: 2_099_249_152,
                achieved_bytes: 2_099_249_152,
                largest_block_bytes: 1_050_673_152,
                context_bytes: Some(534_773_760),
                free_before_bytes: Some(52_771_684_352),
                free_after_bytes: Some(52_236_910_592),
                total_bytes: Some(84_987_740_160),
                held_ms: 1001,
                duration_ms: 1630,
                error: None,
            })),
        ),
        (
            "probe_result_stopped",
            json(ServerMessage::ProbeResult(ProbeResult {
                probe_id: 8,
                gpu: 0,
                mode: ProbeMode::Plan,
                simulated: false,
                ok: false,
                outcome: ProbeOutcome::Stopped,
                stopped_at: Some(ProbeStop {
                    step: 34,
                    label: "KV cache".into(),
                    bytes: 21_474_836_480,
                    reason: StopReason::OutOfMemory,
                }),
                requested_bytes: 40_802_189_312,
                achieved_bytes: 16_106_127_360,
                largest_block_bytes: 1_050_673_152,
                context_bytes: Some(534_773_760),
                free_before_bytes: Some(41_875_931_136),
                free_after_bytes: Some(41_341_157_376),
                total_bytes: Some(84_987_740_160),
                held_ms: 1000,
                duration_ms: 2210,
                error: None,
            })),
        ),
        (
            "findings",
            json(ServerMessage::Findings(Findings {
                seq: 42,
                timestamp_ms: 1_767_225_600_000,
                findings: vec![Finding {
                    cause: FindingCause::Growing,
                    number: 2,
                    gpu: 0,
                    pid: Some(48_211),
                    process: Some("python3".into()),
                    certainty: FindingCertainty::Likely,
                    since_ms: 1_767_225_571_000,
                    found_ms: 1_767_225_578_000,
                    bytes: 32_212_254_720,
                    gpu_total_bytes: 85_520_809_984,
                    evidence: "PID 48211 (python3) climbed 3.00 GiB in 8 steps over 29 s while the GPU computed (105.93 MiB/s); at this rate the 49.15 GiB still free run out in about 475 s".into(),
                    fix: "The KV cache grows with every token: cap max_new_tokens (and truncate long prompts), generate fewer sequences at once, or quantise the cache (cache_implementation=\"quantized\")".into(),
                    growth: Some(Growth {
                        bytes_per_s: 111_076_495,
                        climbed_bytes: 3_221_225_472,
                        steps: 8,
                        free_bytes: 52_771_684_352,
                        seconds_to_capacity: 475,
                    }),
                    spread: vec![],
                }],
            })),
        ),
        (
            "probe_error",
            json(ServerMessage::error(
                ErrorCode::ProbeOverMargin,
                "the probe asks for 60.00 GiB but GPU 0 has 49.15 GiB free; with the 1.00 GiB margin it may take at most 48.15 GiB",
            )),
        ),
        ("snapshot", json(Snapshot { protocol_version: PROTOCOL_VERSION, host, sample })),
        ("health", json(Health { status: "ok".into(), protocol_version: PROTOCOL_VERSION, simulated: false })),
        (
            "fleet",
            json(FleetSnapshot {
                queried_at_ms: 1_767_225_600_000,
                lookback_s: 600,
                gpus: vec![
                    FleetGpu {
                        host: "gpu1".into(),
                        instance: "10.0.3.17:7878".into(),
                        gpu: "0".into(),
                        uuid: "GPU-5e6f4a1c-8d2b-4c3e-9f10-2a3b4c5d6e7f".into(),
                        model: "NVIDIA H100 80GB HBM3".into(),
                        total_bytes: 85_520_809_984,
                        free_bytes: 52_771_684_352,
                        used_bytes: 32_212_254_720,
                        reserved_bytes: Some(536_870_912),
                        stale: false,
                    },
                    FleetGpu {
                        host: "gpu7".into(),
                        instance: "10.0.3.23:9400".into(),
                        gpu: "3".into(),
                        uuid: "GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0".into(),
                        model: "NVIDIA L40S".into(),
                        total_bytes: 48_305_799_168,
                        free_bytes: 47_232_057_344,
                        used_bytes: 1_073_741_824,
                        reserved_bytes: None,
                        stale: true,
                    },
                ],
                truncated: 0,
            }),
        ),
    ]
}

fn doc_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md")
}

/// The JSON block after `<!-- example: NAME -->`: (start, end) of its body.
fn block(doc: &str, name: &str) -> (usize, usize) {
    let marker = format!("<!-- example: {name} -->\n```json\n");
    let start =
        doc.find(&marker).unwrap_or_else(|| panic!("docs/protocol.md lacks the `{name}` example")) + marker.len();
    let end = start + doc[start..].find("```").unwrap();
    (start, end)
}

#[test]
fn every_message_kind_matches_docs_protocol_md() {
    let mut doc = std::fs::read_to_string(doc_path()).unwrap();
    let update = std::env::var_os("UPDATE_PROTOCOL_DOC").is_some();
    let mut stale = Vec::new();
    for (name, value) in examples() {
        let expected = serde_json::to_string_pretty(&value).unwrap() + "\n";
        let (start, end) = block(&doc, name);
        if doc[start..end] != expected {
            stale.push(name);
            doc.replace_range(start..end, &expected);
        }
    }
    if update {
        std::fs::write(doc_path(), doc).unwrap();
    } else {
        assert!(stale.is_empty(), "docs/protocol.md is stale for {stale:?}; rerun with UPDATE_PROTOCOL_DOC=1");
    }
}

#[test]
fn every_documented_example_decodes() {
    let doc = std::fs::read_to_string(doc_path()).unwrap();
    for name in ["hello", "subscribe", "probe_start", "probe_cancel"] {
        let (start, end) = block(&doc, name);
        ClientMessage::decode(&doc[start..end]).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for name in [
        "welcome",
        "sample",
        "error",
        "probe_started",
        "probe_progress",
        "probe_result",
        "probe_result_stopped",
        "probe_error",
        "findings",
    ] {
        let (start, end) = block(&doc, name);
        ServerMessage::decode(&doc[start..end]).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let (start, end) = block(&doc, "snapshot");
    serde_json::from_str::<Snapshot>(&doc[start..end]).unwrap();
    let (start, end) = block(&doc, "fleet");
    serde_json::from_str::<FleetSnapshot>(&doc[start..end]).unwrap();
}

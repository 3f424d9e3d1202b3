#!/usr/bin/env bash
# The agent's footprint on this machine: idle RSS, CPU at 1 Hz with 100
# WebSocket clients, sample fan-out latency. Targets: < 25 MB RSS, < 2 % of
# one core. Usage: bench/agent.sh [clients] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p agent --bin headroom
target="${CARGO_TARGET_DIR:-target}"
cargo run --release --quiet -p agent --example bench_agent -- "$target/release/headroom" "${1:-100}" "${2:-30}"

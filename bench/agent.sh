#!/usr/bin/env bash
# The agent's footprint on this machine: idle RSS, CPU at 1 Hz with 100
# WebSocket clients, sample fan-out latency. Targets: < 25 MB RSS, < 2 % of
# one core. Usage: bench/agent.sh [clients] [seconds] [interval_ms] [serve flags…]
# (e.g. `bench/agent.sh 200 30 500 --scenario kv-growth`; HEADROOM_BIN=path
# measures another build, e.g. an older commit's, with the same client).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
if [ -z "${HEADROOM_BIN:-}" ]; then
  cargo build --release --quiet -p agent --bin headroom
fi
cargo run --release --quiet -p agent --example bench_agent -- "${HEADROOM_BIN:-$target/release/headroom}" "${1:-100}" "${2:-30}" "${3:-1000}" "${@:4}"

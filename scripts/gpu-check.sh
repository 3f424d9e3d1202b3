#!/usr/bin/env bash
# Probe allocations on a real NVIDIA GPU, checked against nvidia-smi.
#
# Builds the agent (release), starts `headroom serve` on a free port with a
# token, then on GPU 0 runs each probe mode — plan and largest-block through
# the agent's WebSocket (agent/examples/probe_client.rs), max-total through
# `headroom probe` while the agent keeps sampling NVML — and compares
# nvidia-smi's free memory before, during (the lowest seen) and after each.
# Checks: every probe ran and was `ok`; the drop during a probe covers what it
# reported holding; everything came back afterwards (within a tolerance, as
# other jobs may move); the agent itself never held a CUDA context.
#
# Writes a JSON report to $OUT/gpu-check.json (./gpu-check.json without $OUT)
# and exits non-zero if any check failed. Finishes in under 5 minutes; every
# step runs under `timeout`.
#
# Usage: scripts/gpu-check.sh            (GPU 0; GPU=1 scripts/gpu-check.sh for another)
set -euo pipefail
cd "$(dirname "$0")/.."

GPU="${GPU:-0}"
REPORT="${OUT:-.}/gpu-check.json"
# Free memory may move by this much between readings without anyone probing
# (other jobs, the driver): MiB.
TOLERANCE_MIB="${TOLERANCE_MIB:-256}"
HOLD_MS=3000
MIB=$((1024 * 1024))
WORK="$(mktemp -d)"
AGENT_PID=""
FAILURES=()

cleanup() {
    if [[ -n "$AGENT_PID" ]] && kill -0 "$AGENT_PID" 2>/dev/null; then
        kill -TERM "$AGENT_PID" 2>/dev/null || true
        timeout 10 tail --pid="$AGENT_PID" -f /dev/null 2>/dev/null || kill -KILL "$AGENT_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    FAILURES+=("$*")
}

# nvidia-smi's free and used memory of $GPU, in MiB: "free used".
memory() {
    timeout 10 nvidia-smi --id="$GPU" --query-gpu=memory.free,memory.used --format=csv,noheader,nounits |
        tr -d ' ' | tr ',' ' '
}

free_mib() {
    local free
    read -r free _ < <(memory)
    echo "$free"
}

# Samples free memory every 0.2 s while process $1 lives; prints the lowest.
lowest_free_while() {
    local pid="$1" lowest current
    lowest="$(free_mib)"
    while kill -0 "$pid" 2>/dev/null; do
        current="$(free_mib)" || break
        if ((current < lowest)); then lowest="$current"; fi
        sleep 0.2
    done
    echo "$lowest"
}

json_field() { # json_field FILE FIELD: a top-level number, true/false or null
    grep -o "\"$2\":[^,}]*" "$1" | head -n1 | cut -d: -f2
}

command -v nvidia-smi >/dev/null || { echo "nvidia-smi not found: run this on an NVIDIA host" >&2; exit 2; }
command -v cargo >/dev/null || { echo "cargo not found" >&2; exit 2; }

echo "== building (release)" >&2
# Release, but without fat LTO: the check must finish in 5 minutes.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
timeout 200 cargo build --release --quiet -p agent --bin headroom --example probe_client
TARGET="${CARGO_TARGET_DIR:-target}/release"
HEADROOM="$TARGET/headroom"
CLIENT="$TARGET/examples/probe_client"

DRIVER="$(timeout 10 nvidia-smi --id="$GPU" --query-gpu=driver_version --format=csv,noheader | tr -d ' ')"
NAME="$(timeout 10 nvidia-smi --id="$GPU" --query-gpu=name --format=csv,noheader)"
echo "== GPU $GPU: $NAME, driver $DRIVER" >&2

TOKEN="gpu-check-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
"$HEADROOM" serve --bind 127.0.0.1:0 --token "$TOKEN" --allow-full-probes >"$WORK/serve.out" 2>"$WORK/serve.err" &
AGENT_PID=$!
URL=""
for _ in $(seq 50); do
    URL="$(grep -o 'http://[^/]*/' "$WORK/serve.out" | head -n1 || true)"
    [[ -n "$URL" ]] && break
    sleep 0.2
done
[[ -n "$URL" ]] || { cat "$WORK/serve.err" >&2; echo "the agent did not start" >&2; exit 1; }
WS="ws${URL#http}ws"
echo "== agent at $URL (pid $AGENT_PID)" >&2
grep -q "NVML backend" "$WORK/serve.err" || fail "the agent is not on the NVML backend: $(tr '\n' ' ' <"$WORK/serve.err")"

# probe NAME MODE BYTES VIA: runs one probe, records before/during/after.
RESULTS=()
probe() {
    local name="$1" mode="$2" bytes="$3" via="$4" before during after pid out="$WORK/$1.json"
    before="$(free_mib)"
    if [[ "$via" == ws ]]; then
        timeout 90 "$CLIENT" "$WS" "$TOKEN" "$GPU" "$mode" "$bytes" "$HOLD_MS" >"$out" 2>"$WORK/$name.err" &
    else
        timeout 90 "$HEADROOM" probe --gpu "$GPU" --mode "$mode" --bytes "$bytes" --hold-ms "$HOLD_MS" --json \
            >"$out" 2>"$WORK/$name.err" &
    fi
    pid=$!
    during="$(lowest_free_while "$pid")"
    wait "$pid" || true
    sleep 1
    after="$(free_mib)"
    echo "== $name: free before ${before} MiB, lowest during ${during} MiB, after ${after} MiB" >&2
    if [[ ! -s "$out" ]]; then
        fail "$name: no result ($(tr '\n' ' ' <"$WORK/$name.err"))"
        echo '{}' >"$out"
    fi
    local ok achieved context
    ok="$(json_field "$out" ok)"
    achieved="$(json_field "$out" achieved_bytes)"
    context="$(json_field "$out" context_bytes)"
    [[ "$ok" == true ]] || fail "$name: not ok: $(cat "$out")"
    if [[ "$achieved" =~ ^[0-9]+$ ]]; then
        # The lowest free seen must show what the probe said it held.
        local held_mib=$((achieved / MIB)) drop=$((before - during))
        ((drop + TOLERANCE_MIB >= held_mib)) || fail "$name: held ${held_mib} MiB but free dropped only ${drop} MiB"
    fi
    ((after + TOLERANCE_MIB >= before)) || fail "$name: not released: ${before} MiB free before, ${after} MiB after"
    if pgrep -f "headroom probe-worker" >/dev/null; then fail "$name: a probe worker outlived its probe"; fi
    RESULTS+=("{\"name\":\"$name\",\"mode\":\"$mode\",\"via\":\"$via\",\"bytes\":$bytes,\"free_before_mib\":$before,\"lowest_free_during_mib\":$during,\"free_after_mib\":$after,\"context_bytes\":${context:-null},\"result\":$(cat "$out")}")
}

FREE="$(free_mib)"
MARGIN_MIB=1024
LIMIT=$(((FREE - MARGIN_MIB - 512) * MIB)) # the margin, and room for the worker's context
PLAN=$((FREE * MIB / 4))
probe plan plan "$PLAN" ws
probe largest-block largest-block "$LIMIT" ws
probe max-total max-total "$LIMIT" cli

# The agent never holds a CUDA context of its own.
if timeout 10 nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qx "$AGENT_PID"; then
    fail "the agent ($AGENT_PID) holds a CUDA context"
fi
kill -0 "$AGENT_PID" 2>/dev/null || fail "the agent died"

mkdir -p "$(dirname "$REPORT")"
{
    printf '{"gpu":%s,"name":"%s","driver":"%s","tolerance_mib":%s,"hold_ms":%s,' "$GPU" "$NAME" "$DRIVER" "$TOLERANCE_MIB" "$HOLD_MS"
    printf '"probes":[%s],' "$(IFS=,; echo "${RESULTS[*]}")"
    printf '"failures":['
    for i in "${!FAILURES[@]}"; do
        ((i > 0)) && printf ','
        printf '"%s"' "$(echo "${FAILURES[$i]}" | sed 's/["\\]//g' | tr '\n' ' ')"
    done
    printf '],"passed":%s}\n' "$([[ ${#FAILURES[@]} -eq 0 ]] && echo true || echo false)"
} >"$REPORT"
echo "== report: $REPORT" >&2
if ((${#FAILURES[@]} > 0)); then
    echo "${#FAILURES[@]} check(s) failed" >&2
    exit 1
fi
echo "all checks passed" >&2

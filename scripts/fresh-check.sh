#!/usr/bin/env bash
# Proves the README's two commands as a new user meets them: a clean clone, a
# cold build directory, and none of the tools the build installs for itself
# (binaryen's wasm-opt, Debian's chromium, chromium-driver, prometheus and brotli,
# PyPI's kubernetes-validate, the wasm-bindgen CLI, the toolchain's rust-src). Run as root on a Debian machine with the Rust toolchain:
#
#     scripts/fresh-check.sh            # the committed HEAD of this checkout
#     KEEP=1 scripts/fresh-check.sh     # keep the clone and its logs
#
# It removes binaryen, chromium and chromium-driver first (the README
# commands must put them back), then runs `cargo xtask run` until it prints
# the URL, checks that the URL serves the page, stops it, and runs
# `cargo xtask test`. Each output line is timestamped; the summary gives the
# wall and CPU times that docs/measurements.md records.
set -euo pipefail

repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=$(mktemp -d /tmp/headroom-fresh.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"; kill "${agent_pid:-0}" 2>/dev/null || true' EXIT
echo "fresh check in $work (HEAD $(git -C "$repo" rev-parse --short HEAD))"

# What a fresh machine lacks. The wasm-bindgen CLI lives in the build
# directory (target/tools), so a cold CARGO_TARGET_DIR removes it too; the
# fleet tests' Prometheus and kubernetes-validate go as well.
apt-get remove -y -q binaryen chromium chromium-driver prometheus brotli >/dev/null
python3 -m pip uninstall -y -q kubernetes-validate >/dev/null 2>&1 || true
# std's source, which the page's build compiles std from (xtask/src/dist.rs, LEAN_STD).
rustup component remove rust-src >/dev/null 2>&1 || true
std_source="$(rustc --print sysroot)/lib/rustlib/src/rust/library/Cargo.lock"
[ ! -e "$std_source" ] || { echo "error: $std_source is still there; remove rust-src for a fair check" >&2; exit 1; }
hash -r
for tool in wasm-opt chromium chromedriver wasm-bindgen prometheus promtool kubernetes-validate brotli; do
    if command -v "$tool" >/dev/null; then
        echo "error: $tool is still on PATH ($(command -v "$tool")); remove it for a fair check" >&2
        exit 1
    fi
done

git clone -q "$repo" "$work/headroom"
cd "$work/headroom"
unset CARGO_TARGET_DIR RUSTFLAGS

# Microseconds since the epoch, from bash's own clock (no process per line).
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

# Prefixes each line with seconds since $1 (microseconds, from now_us).
stamp() {
    local t0=$1 dt
    while IFS= read -r line; do
        dt=$(( $(now_us) - t0 ))
        printf '%5d.%d %s\n' $((dt / 1000000)) $((dt % 1000000 / 100000)) "$line"
    done
}

port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/7878) 2>/dev/null; }
port_free || { echo "error: 127.0.0.1:7878 is in use; stop what holds it" >&2; exit 1; }

# 1. cargo xtask run: must end with the URL line and serve the page.
t0=$(now_us)
( /usr/bin/time -f 'cpu %U user %S sys' cargo xtask run 2>&1 | stamp "$t0" >"$work/run.log" ) &
agent_pid=$!
url=""
for _ in $(seq 1 3600); do
    url=$(grep -o 'http://[^ ]*#token=[0-9a-f]*' "$work/run.log" | head -n 1 || true)
    [ -n "$url" ] && break
    sleep 1
done
[ -n "$url" ] || { echo "error: cargo xtask run printed no URL within an hour" >&2; tail -n 20 "$work/run.log"; exit 1; }
sleep 3
tail -n 1 "$work/run.log" | grep -q '#token=' || { echo "error: the URL is not the last line" >&2; tail -n 5 "$work/run.log"; exit 1; }
page=$(curl -fsS "${url%%#*}")
grep -q 'web_bg.wasm\|web.js' <<<"$page" || { echo "error: the URL does not serve the page" >&2; exit 1; }
built=$(grep -F '==> headroom serve' "$work/run.log" | awk '{print $1}')
ready=$(grep -E 'https?://[^ ]*#token=' "$work/run.log" | awk '{print $1}' | head -n 1)
pkill -INT -f 'target/release/headroom serve' || true
wait "$agent_pid" 2>/dev/null || true
agent_pid=""
first_load=$(grep -o 'gzip(wasm + JS + CSS) = [0-9]* B' "$work/run.log" | head -n 1)
echo "run:  URL after ${ready} s (build finished at ${built} s, so $(echo "$ready - $built" | bc) s later); $first_load"

# 2. cargo xtask test: the whole suite, as CI runs it.
t0=$(now_us)
set +e
( /usr/bin/time -f 'cpu %U user %S sys' cargo xtask test 2>&1 ) | stamp "$t0" >"$work/test.log"
rc=${PIPESTATUS[0]}
set -e
total=$(tail -n 1 "$work/test.log" | awk '{print $1}')
echo "test: exit $rc after ${total} s; $(grep -o 'cpu .* sys' "$work/test.log" | tail -n 1)"
echo "      $(grep -E 'test result' "$work/test.log" | awk '{p+=$5; f+=$7} END {print p " passed, " f " failed (sum of cargo test results)"}')"
for tool in wasm-opt chromium chromedriver prometheus promtool kubernetes-validate brotli; do
    command -v "$tool" >/dev/null || { echo "error: $tool was not installed by the README commands" >&2; exit 1; }
done
[ -e "$std_source" ] || { echo "error: rust-src was not installed by the README commands" >&2; exit 1; }
[ "$rc" -eq 0 ] || { tail -n 30 "$work/test.log"; exit "$rc"; }
echo "fresh check passed; logs: $work/{run,test}.log${KEEP:+ (kept)}"

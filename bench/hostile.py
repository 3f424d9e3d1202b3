#!/usr/bin/env python3
"""Issue 18's hostile clients against a `headroom` binary, with figures.

Usage: python3 bench/hostile.py [path/to/headroom]   (default: target/debug/headroom)

Starts `headroom serve --simulate 2xh100-sxm` on a free loopback port and
tries, one after the other: a ping flood from a client that never reads,
connections that never say hello, half-sent HTTP requests, a token guesser
beside the owner, an oversized hello, a subscribe flood; then the CLI cases
(`/dev/zero` inputs under a 1 GiB address-space cap, impossible splits,
llama.cpp `-c 0`, `--allow-origin null`). Standard library only, loopback
only; prints one line per case. docs/measurements.md records its output.
"""

import json
import os
import resource
import socket
import struct
import subprocess
import sys
import time

TOKEN = "bench-token-0123456789abcdef"
BIN = sys.argv[1] if len(sys.argv) > 1 else "target/debug/headroom"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def frame(opcode, payload=b""):
    """A masked client frame (zero mask)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + b"\0\0\0\0" + payload


def upgrade(port, timeout=5, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        # A small receive window: what the agent sends piles up on its side.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    s.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = s.recv(1)
        if not b:
            return None, head
        head += b
    status = head.split(b" ", 2)[1]
    return (s if status == b"101" else None), head


def read_frame(s):
    """(opcode, payload) of the next server frame, or None at the end."""
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf
    try:
        b0, b1 = exact(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", exact(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", exact(8))
        return b0 & 0x0F, exact(n)
    except (EOFError, OSError):
        return None


def next_message(s):
    """The next text message as JSON (pongs and pings skipped), or None."""
    while True:
        f = read_frame(s)
        if f is None or f[0] == 0x8:
            return None
        if f[0] == 0x1:
            return json.loads(f[1])


def hello(s, token=TOKEN, pad=""):
    msg = {"type": "hello", "data": {"token": token, "protocol_version": 1, "client": "bench" + pad}}
    s.sendall(frame(0x1, json.dumps(msg).encode()))
    return next_message(s)


def http_get(port, path, headers=""):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{headers}\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        return int(data.split(b" ", 2)[1]) if data else 0
    except OSError:
        return 0


def start(extra=()):
    port = free_port()
    proc = subprocess.Popen(
        [BIN, "serve", "--simulate", "2xh100-sxm", "--bind", f"127.0.0.1:{port}", "--token", TOKEN, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    for line in proc.stdout:
        if "#token=" in line:
            break
    return proc, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


def case_ping_flood(port, pid):
    s, _ = upgrade(port, rcvbuf=4096)
    s.setblocking(False)
    # 125-byte pings (the most a control frame holds): each pong echoes them.
    burst = frame(0x9, b"p" * 125) * 2048
    before, peak, sent, offset = rss_kib(pid), 0, 0, 0
    end, next_sample = time.time() + 6, 0.0
    while time.time() < end:
        try:
            # Resume where a partial send stopped: frames must stay whole.
            n = s.send(burst[offset:])
            sent, offset = sent + n, (offset + n) % len(burst)
        except BlockingIOError:
            time.sleep(0.005)
        except OSError:
            break
        if time.time() >= next_sample:
            peak, next_sample = max(peak, rss_kib(pid)), time.time() + 0.25
    peak = max(peak, rss_kib(pid))
    s.close()
    time.sleep(1)
    after = rss_kib(pid)
    print(f"ping flood 6 s, no token, never reads: {sent // (1024 * 1024)} MiB of pings taken; "
          f"RSS {before} KiB -> peak {peak} KiB (+{(peak - before) // 1024} MiB), {after} KiB 1 s after it left")


def case_pending(port):
    idle = [upgrade(port, timeout=10)[0] for _ in range(256)]
    held = sum(1 for s in idle if s)
    ok = 0
    for _ in range(5):
        s, head = upgrade(port)
        if s and (m := hello(s)) and m.get("type") == "welcome":
            ok += 1
        if s:
            s.close()
    for s in idle:
        if s:
            s.close()
    print(f"{held} upgraded connections without hello: the real client got in {ok} of 5 tries")


def case_slowloris(port, pid):
    socks = []
    for _ in range(300):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(f"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
            socks.append(s)
        except OSError:
            break
    during = [http_get(port, "/api/health") for _ in range(5)]
    time.sleep(12)
    still_open = answered = 0
    for s in socks:
        s.setblocking(False)
        try:
            # Data: an answer (a 503, or the 408 of a timeout); b"": closed.
            answered += 1 if s.recv(1) else 0
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
        s.close()
    after = http_get(port, "/api/health")
    print(f"{len(socks)} half-sent requests: 5 real GETs meanwhile got {during}; "
          f"{still_open} still open after 12 s ({answered} got an answer); then a GET got {after}")


def case_five_hundred(port):
    """What held before issue 18 must still hold: 500 clients at once."""
    import threading
    results, socks, lock = [], [], threading.Lock()

    def client():
        try:
            s, head = upgrade(port, timeout=20)
            if s is None:
                outcome = "http " + head.split(b" ", 2)[1].decode() if head else "no answer"
            else:
                m = hello(s) or {}
                outcome = "welcome" if m.get("type") == "welcome" else m.get("data", {}).get("code", "closed")
                with lock:
                    socks.append(s)
        except OSError as e:
            outcome = type(e).__name__
        with lock:
            results.append(outcome)
    threads = [threading.Thread(target=client) for _ in range(500)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = {k: results.count(k) for k in sorted(set(results))}
    for s in socks:
        s.close()
    time.sleep(1)
    s, _ = upgrade(port)
    again = (hello(s) or {}).get("type") if s else "refused"
    print(f"500 clients at once: {counts}; after they left, a new client got: {again}")


def case_lockout(port):
    def attempt(token):
        s, _ = upgrade(port)
        m = hello(s, token) if s else None
        if s:
            s.close()
        return (m or {}).get("type") == "welcome"
    for _ in range(12):
        attempt("wrong-token-0123456789")
    right = 0
    for _ in range(10):
        attempt("wrong-token-0123456789")
        right += attempt(TOKEN)
        time.sleep(0.9)
    print(f"one wrong token per ~1 s from 127.0.0.1: the right token accepted {right} of 10 times")


def case_big_hello(port):
    s, _ = upgrade(port)
    m = hello(s, pad="x" * (256 * 1024 - 200))
    kind = (m or {}).get("type")
    code = (m or {}).get("data", {}).get("code", "")
    print(f"a hello of 256 KiB: {'accepted (welcome)' if kind == 'welcome' else f'refused ({kind} {code})'.strip()}")
    s.close()


def case_subscribe_flood(port):
    s, _ = upgrade(port)
    hello(s)
    sub = frame(0x1, json.dumps({"type": "subscribe", "data": {"interval_ms": 1000}}).encode())
    s.sendall(sub * 1000)
    s.settimeout(3)
    seqs = []
    end = time.time() + 3
    try:
        while time.time() < end:
            m = next_message(s)
            if m is None:
                break
            if m.get("type") == "sample":
                seqs.append(m["data"]["seq"])
    except OSError:
        pass
    s.close()
    dups = len(seqs) - len(set(seqs))
    print(f"1000 subscribes at 1 s: {len(seqs)} samples in 3 s, {dups} of them duplicates")


def cli(args, limit_bytes=None):
    def cap():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    t = time.time()
    p = subprocess.run([BIN, *args], capture_output=True, text=True, preexec_fn=cap, timeout=120)
    return p, time.time() - t


def cli_cases():
    for args in (["estimate", "--config", "/dev/zero"], ["diagnose", "/dev/zero"]):
        p, dt = cli(args, limit_bytes=1 << 30)
        err = (p.stderr.strip().splitlines() or ["(nothing)"])[-1][:140]
        print(f"headroom {' '.join(args)} (1 GiB address-space cap): exit {p.returncode} after {dt:.1f} s: {err}")
    for extra in (["--engine", "vllm", "--tp", "3"], ["--engine", "sglang", "--tp", "3"],
                  ["--engine", "vllm", "--pp", "40"], ["--pp", "40"]):
        p, _ = cli(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *extra])
        lines = [l for l in p.stdout.splitlines() if l.strip()] or [""]
        verdict = next((l for l in lines if l.startswith("Fits")), lines[-1])
        print(f"llama-3.1-8b {' '.join(extra)}: exit {p.returncode}: {(p.stderr.strip() or verdict)[:200]}")
    p, _ = cli(["estimate", "--model", "llama-3.1-8b", "--engine", "llama.cpp", "--n-ctx", "0", "--json"])
    try:
        n_ctx = json.loads(p.stdout)["engine_report"]["n_ctx"]
    except (ValueError, KeyError):
        n_ctx = p.stderr.strip()
    print(f"llama.cpp --n-ctx 0 on llama-3.1-8b: n_ctx {n_ctx}")
    port = free_port()
    try:
        p = subprocess.run([BIN, "serve", "--simulate", "l4", "--bind", f"127.0.0.1:{port}", "--token", TOKEN,
                            "--allow-origin", "null"], capture_output=True, text=True, timeout=5)
        print(f"--allow-origin null: exit {p.returncode}: {p.stderr.strip()[:160]}")
    except subprocess.TimeoutExpired:
        print("--allow-origin null: accepted (the agent kept running)")
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "--simulate", "l4", "--bind", f"0.0.0.0:{port}", "--token", TOKEN],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    warning = ""
    for line in proc.stderr:
        if "WARN" in line or "reachable" in line:
            warning = line.strip()
            break
    stop(proc)
    print(f"--bind 0.0.0.0 warns: {warning[warning.find('listening'):][:240]}")


def main():
    proc, port = start()
    try:
        case_ping_flood(port, proc.pid)
        case_pending(port)
        case_slowloris(port, proc.pid)
        case_big_hello(port)
        case_subscribe_flood(port)
        case_five_hundred(port)
        # Last: it empties 127.0.0.1's failure bucket.
        case_lockout(port)
        alive = http_get(port, "/api/health")
        print(f"the agent after all of it: /api/health {alive}, RSS {rss_kib(proc.pid)} KiB")
    finally:
        stop(proc)
    cli_cases()


if __name__ == "__main__":
    os.environ.setdefault("HEADROOM_LOG", "warn")
    main()

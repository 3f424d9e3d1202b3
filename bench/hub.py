#!/usr/bin/env python3
"""`headroom estimate --hf` side by side with hf-mem on a stand-in Hub (issue 39).

Not run in CI. Standard library only (hf-mem itself runs in its own virtual
environment). The stand-in serves a generated safetensors repository with
every tensor of Qwen3-30B-A3B (18,867 tensors, 61,064,245,248 bytes, its
config.json from shared/catalog/models/qwen3-30b-a3b.json) in N shards, as
the Hub serves one: `/{repo}/resolve/main/{file}` answers small files itself
and redirects shards (302) to a second server on another port, the "CDN",
which answers Range requests; `/api/models/{repo}/tree/main` lists the files.
Both servers speak HTTP/1.1 with keep-alive (the Hub and its CDN keep
connections open), count the connections they accept, and can wait a fixed
time before every response (`--latency-ms`, a stand-in for the real Hub's
round trips).

Each round runs the two programs one after the other (the order alternating
between rounds) and takes, per process, the wall time, the CPU time and the
peak RSS (`/usr/bin/time -v`) and the connections each server accepted.
Medians over the rounds are printed as a Markdown table, with the load
average before and after.

hf-mem has https://huggingface.co written into its URLs (no HF_ENDPOINT), so
it is run through a two-line wrapper that rewrites that prefix to the
stand-in in `httpx2.AsyncClient.build_request`, before anything is sent.

    python3 -m venv /tmp/hfmem-venv && /tmp/hfmem-venv/bin/pip install hf-mem==0.5.6
    CARGO_PROFILE_RELEASE_LTO=false cargo build --release -p agent
    python3 bench/hub.py --headroom target/release/headroom --hf-mem /tmp/hfmem-venv/bin/python \\
        --shards 16,163 --latency-ms 0,20 --rounds 7
"""

import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "shared/catalog/models/qwen3-30b-a3b.json"
REPO = "bench/qwen3-30b-a3b"
# Qwen3-30B-A3B's exact weight bytes (its model.safetensors.index.json's
# metadata.total_size on the Hub), which both programs must find.
TOTAL_BYTES = 61_064_245_248


def qwen3_30b_a3b_tensors(config):
    """Every tensor of the checkpoint, in the order its index lists them: (name, shape), all BF16."""
    h, layers, experts = config["hidden_size"], config["num_hidden_layers"], config["num_experts"]
    inter, vocab, hd = config["moe_intermediate_size"], config["vocab_size"], config["head_dim"]
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    out = [("model.embed_tokens.weight", [vocab, h])]
    for i in range(layers):
        p = f"model.layers.{i}"
        out += [(f"{p}.input_layernorm.weight", [h]), (f"{p}.post_attention_layernorm.weight", [h])]
        out += [(f"{p}.self_attn.q_proj.weight", [q, h]), (f"{p}.self_attn.k_proj.weight", [kv, h])]
        out += [(f"{p}.self_attn.v_proj.weight", [kv, h]), (f"{p}.self_attn.o_proj.weight", [h, q])]
        out += [(f"{p}.self_attn.q_norm.weight", [hd]), (f"{p}.self_attn.k_norm.weight", [hd])]
        out += [(f"{p}.mlp.gate.weight", [experts, h])]
        for e in range(experts):
            out += [(f"{p}.mlp.experts.{e}.gate_proj.weight", [inter, h])]
            out += [(f"{p}.mlp.experts.{e}.up_proj.weight", [inter, h])]
            out += [(f"{p}.mlp.experts.{e}.down_proj.weight", [h, inter])]
    out += [("model.norm.weight", [h]), ("lm_head.weight", [vocab, h])]
    return out


def nbytes(shape):
    n = 2  # BF16
    for d in shape:
        n *= d
    return n


def safetensors_head(tensors):
    """The first bytes of a shard: the 8-byte length and the JSON header,
    padded with spaces to 8 bytes as the safetensors writer pads it."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in sorted(tensors):
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + nbytes(shape)]}
        offset += nbytes(shape)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, 8 + len(text) + offset


def repository(shards):
    """{path: (head bytes, size)}: config, index and `shards` shards split by
    bytes in order, as `save_pretrained(max_shard_size=…)` splits them."""
    config = json.loads(CONFIG.read_text())
    tensors = qwen3_30b_a3b_tensors(config)
    per_shard = sum(nbytes(s) for _, s in tensors) / shards
    groups, acc = [[] for _ in range(shards)], 0
    for name, shape in tensors:
        groups[min(int(acc / per_shard), shards - 1)].append((name, shape))
        acc += nbytes(shape)
    files, weight_map = {"config.json": (CONFIG.read_bytes(), None)}, {}
    for i, group in enumerate(groups):
        name = f"model-{i + 1:05}-of-{shards:05}.safetensors"
        files[name] = safetensors_head(group)
        weight_map.update({t: name for t, _ in group})
    index = {"metadata": {"total_size": TOTAL_BYTES}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = (json.dumps(index, indent=2).encode(), None)
    return {path: (head, len(head) if size is None else size) for path, (head, size) in files.items()}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, files, cdn, latency_s):
        super().__init__(("127.0.0.1", 0), Handler)
        self.files, self.cdn, self.latency_s = files, cdn, latency_s
        self.lock = threading.Lock()
        self.connections = self.requests = 0

    def endpoint(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def reset(self):
        with self.lock:
            counts = (self.connections, self.requests)
            self.connections = self.requests = 0
        return counts


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    # The status line and headers go out before the body: without TCP_NODELAY,
    # Nagle's algorithm holds the body of a reused connection until the
    # client's delayed ACK (40 ms on Linux), which real servers do not add.
    disable_nagle_algorithm = True

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", headers=()):
        if self.server.latency_s:
            time.sleep(self.server.latency_s)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with self.server.lock:
            self.server.requests += 1
        path = self.path.split("?")[0]
        if path == f"/api/models/{REPO}/tree/main":
            listing = [{"type": "file", "oid": "0", "size": size, "path": p} for p, (_, size) in self.server.files.items()]
            return self.send(200, json.dumps(listing).encode(), [("Content-Type", "application/json")])
        prefix = f"/{REPO}/resolve/main/"
        file = self.server.files.get(path[len(prefix):]) if path.startswith(prefix) else None
        if file is None:
            return self.send(404, b"Entry not found", [("X-Error-Code", "EntryNotFound")])
        head, size = file
        if self.server.cdn and path.endswith(".safetensors"):
            return self.send(302, b"", [("Location", self.server.cdn + self.path)])
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if not m:
            return self.send(200, head + bytes(size - len(head)))
        a = int(m[1])
        b = min(int(m[2]) if m[2] else size - 1, size - 1)
        if a >= size:
            return self.send(416)
        body = head[a : b + 1] + bytes(max(0, b + 1 - max(a, len(head))))
        self.send(206, body, [("Content-Range", f"bytes {a}-{b}/{size}")])


def start(files, latency_s):
    cdn = Server(files, None, latency_s)
    hub = Server(files, cdn.endpoint(), latency_s)
    for s in (cdn, hub):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    return hub, cdn


HF_MEM_WRAPPER = """
import os, sys, httpx2
from hf_mem.cli import main
build = httpx2.AsyncClient.build_request
def rewrite(self, method, url, **kw):
    url = str(url)
    if url.startswith("https://huggingface.co/"):
        url = os.environ["BENCH_HUB"] + url[len("https://huggingface.co"):]
    return build(self, method, url, **kw)
httpx2.AsyncClient.build_request = rewrite
sys.argv = ["hf-mem"] + sys.argv[1:]
main()
"""


def timed(cmd, env):
    """Runs `cmd` under /usr/bin/time -v: (wall s, CPU s, peak RSS MiB, stdout)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        start = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v", "-o", t.name, *cmd], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stderr[-2000:]}")
        report = t.read()
    field = lambda name: float(re.search(rf"{name}: ([\d.]+)", report)[1])  # noqa: E731
    cpu = field(r"User time \(seconds\)") + field(r"System time \(seconds\)")
    return wall, cpu, field(r"Maximum resident set size \(kbytes\)") / 1024, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--headroom",
        action="append",
        required=True,
        help="the headroom binary: PATH or LABEL=PATH (repeat to compare builds)",
    )
    ap.add_argument("--hf-mem", help="python of a virtual environment with hf-mem installed")
    ap.add_argument("--shards", default="16,163")
    ap.add_argument("--latency-ms", default="0,20")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    rows = []
    for shards in map(int, args.shards.split(",")):
        files = repository(shards)
        for latency_ms in map(int, args.latency_ms.split(",")):
            hub, cdn = start(files, latency_ms / 1000)
            env = dict(os.environ, HF_ENDPOINT=hub.endpoint(), BENCH_HUB=hub.endpoint(), HF_HOME="/nonexistent")
            env.pop("HF_TOKEN", None)
            programs = {}
            for h in args.headroom:
                label, _, path = h.rpartition("=")
                programs[label or "headroom"] = [path, "estimate", "--hf", REPO, "--json"]
            if args.hf_mem:
                programs["hf-mem"] = [args.hf_mem, "-c", HF_MEM_WRAPPER, "--model-id", REPO, "--json-output"]
            runs = {name: [] for name in programs}
            for r in range(args.rounds):
                # Each program takes each place in the order in turn.
                order = list(programs)[r % len(programs) :] + list(programs)[: r % len(programs)]
                for name in order:
                    hub.reset(), cdn.reset()
                    wall, cpu, rss, out = timed(programs[name], env)
                    (hub_conns, hub_reqs), (cdn_conns, cdn_reqs) = hub.reset(), cdn.reset()
                    if name != "hf-mem" and json.loads(out)["weight_bytes"] != TOTAL_BYTES:
                        sys.exit(f"{name}: weight_bytes {json.loads(out)['weight_bytes']} != {TOTAL_BYTES}")
                    if name == "hf-mem" and str(TOTAL_BYTES) not in out:
                        sys.exit(f"hf-mem: {TOTAL_BYTES} not in its output: {out[:500]}")
                    runs[name].append((wall, cpu, rss, hub_conns, cdn_conns, hub_reqs + cdn_reqs))
            for s in (hub, cdn):
                s.shutdown()
                s.server_close()
            for name, rs in runs.items():
                med = [statistics.median(col) for col in zip(*rs)]
                rows.append((shards, latency_ms, name, *med))
            for name in (n for n in runs if n != "hf-mem" and "hf-mem" in runs):
                ratio = statistics.median(h[0] / m[0] for h, m in zip(runs[name], runs["hf-mem"]))
                rows.append((shards, latency_ms, f"{name} / hf-mem wall (median of pairs)", ratio))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    print(f"\n| shards | latency | program | wall | CPU | peak RSS | connections Hub + CDN | requests |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        if len(row) == 4:
            print(f"| {row[0]} | {row[1]} ms | {row[2]} | {row[3]:.2f}× | | | | |")
        else:
            shards, lat, name, wall, cpu, rss, hc, cc, reqs = row
            print(f"| {shards} | {lat} ms | {name} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB | {hc:.0f} + {cc:.0f} | {reqs:.0f} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where each vLLM release logs the start-up lines Headroom reads.

vLLM's log format (`vllm/logger.py`, `[%(fileinfo)s:%(lineno)d]`) prints the
file and line of the logger call with every message, and those lines move
between releases. For every release from FIRST to LAST this downloads the
wheel (`pip download vllm==X --no-deps`), reads its Python sources without
installing them, finds each logger call whose message holds one of PHRASES,
and records the line Python's `logging` reports for it; the wheel is deleted
before the next is fetched. It writes `shared/src/startup/vllm_sites.rs`,
the table `startup::vllm` narrows a log's release with when the log prints no
version (a developer tool, not CI: it needs the network and ~450 MB per
wheel in turn).

The reported line: `logging.Logger.findCaller` takes the caller frame's
`f_lineno`, which for a call spread over several lines is the line of the
called attribute (`logger.info(` — the `.info`), on CPython 3.10 – 3.13
alike (checked by running such calls; a 0.11.0 log's
`[scheduler.py:205] Chunked prefill is enabled` is the `logger.info(` line of
a call whose string sits on 206). `info_once`, `warning_once` and
`debug_once` log with `stacklevel=2` from a function patched onto the logger
(`vllm/logger.py::_print_info_once`), so they too report their caller.

Usage: python3 scripts/vllm-call-sites.py [--cache DIR] [--only 0.11.0,...]
(run it with Python 3.12: pip on 3.13 skips the releases before 0.10.2, whose
wheels require an older Python, and 3.12 parses every release's sources; per-release results are
cached as JSON under --cache, default /tmp/vw, so a rerun downloads nothing.)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

FIRST, LAST = (0, 10, 0), (0, 34, 0)

# The messages, each a phrase of its format string that a printed line
# holds verbatim: the lines `shared/src/startup/vllm.rs` reads, and the
# lines around them that a pasted error keeps (the engine's start and its
# failure, the config and loading lines).
PHRASES = [
    "Available KV cache memory:",
    "Model loading took",
    "GPU KV cache size:",
    "Maximum concurrency for",
    "non-default args:",
    "Using max model len",
    "Chunked prefill is enabled with max_num_batched_tokens",
    "Graph capturing finished in",
    "Estimated CUDA graph memory",
    "init engine (profile, create kv cache, warmup model) took",
    "EngineCore failed to start",
    "Free memory on device (",
    "Memory profiling takes",
    "Setting attention block size to",
    "Expert parallelism is enabled",
    "Using Marlin backend",
    "Using Triton backend",
    "Using FlashInfer MXFP4",
    "Using FlashInfer for top-p & top-k sampling",
    "Falling back to the PyTorch-native implementation of top-p",
    "Falling back to default sampling implementation",
    "Starting to load model",
    "Loading weights took",
    "Auto-fit max_model_len",
    "Disabling the extensible KV cache",
    "Extended KV cache to",
    "memory for KV Cache as specified by kv_cache_memory_bytes",
    "vLLM API server version",
    "Starting vLLM API server",
    "Available routes are",
    "Initializing a V1 LLM engine",
    "Waiting for init message from front-end",
    "Compiling a graph for dynamic shape",
    "torch.compile takes",
    "Using Flash Attention backend",
]

LOG_METHODS = {
    "debug", "info", "warning", "warn", "error", "exception", "critical",
    "debug_once", "info_once", "warning_once",
}

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "shared/src/startup/vllm_sites.rs"


def releases() -> list[str]:
    """The final releases FIRST – LAST that `pip index versions vllm` lists, oldest first."""
    text = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "vllm"],
        capture_output=True, text=True, check=True,
    ).stdout
    listed = re.search(r"Available versions: (.*)", text).group(1).split(", ")
    key = lambda v: tuple(int(p) for p in v.split("."))
    keep = [v for v in listed if re.fullmatch(r"\d+(\.\d+)+", v) and FIRST <= key(v) <= LAST]
    return sorted(keep, key=key)


def template(node: ast.AST | None) -> str | None:
    """A message's format string with each interpolation as `\\0`, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) else "\0" for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left), template(node.right)
        if left is None and right is None:
            return None
        return (left or "\0") + (right or "\0")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return template(node.left)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        return template(node.func.value)
    return None


def logger_calls(tree: ast.AST):
    """(call, message template) for each logger call; a message held in a
    variable is the string last assigned to it before the call in the same
    function (`msg = (f"Memory profiling takes …" …)`, `logger.info(msg)`)."""
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module))]
    for scope in scopes:
        assigned: list[tuple[int, str, str]] = []
        for n in ast.walk(scope):
            if isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                t = template(n.value)
                for target in targets:
                    if isinstance(target, ast.Name) and t is not None:
                        assigned.append((n.lineno, target.id, t))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                t = template(n.value)
                if t is not None:
                    assigned.append((n.lineno, n.target.id, "+" + t))
        for n in ast.walk(scope):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
                continue
            if n.func.attr not in LOG_METHODS:
                continue
            receiver = n.func.value
            name = receiver.id if isinstance(receiver, ast.Name) else getattr(receiver, "attr", "")
            if not name.lower().endswith("logger") or not n.args:
                continue
            first = n.args[0]
            t = template(first)
            if t is None and isinstance(first, ast.Name):
                before = [(line, text) for line, name_, text in assigned if name_ == first.id and line < n.lineno]
                # A `msg +=` extends the last plain assignment before it.
                text = ""
                for _, piece in before:
                    text = text + piece[1:] if piece.startswith("+") else piece
                t = text or None
            if t is not None:
                yield n, t


def sites(wheel: Path) -> list[dict]:
    """Each (phrase, file, line) the wheel's sources log."""
    out = []
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if not (name.startswith("vllm/") and name.endswith(".py")):
                continue
            source = z.read(name).decode("utf-8", "replace")
            if not any(p.split("\0")[0][:12] in source for p in PHRASES):
                continue
            try:
                tree = ast.parse(source)
            except SyntaxError as e:
                print(f"  {name}: not parsed ({e})", file=sys.stderr)
                continue
            seen = set()
            for call, text in logger_calls(tree):
                # The line `logging` reports: the called attribute's (see the docstring).
                line = call.func.end_lineno
                for phrase in PHRASES:
                    if phrase in text and (phrase, line) not in seen:
                        seen.add((phrase, line))
                        out.append({"phrase": phrase, "file": name, "line": line})
    return out


def extract(release: str, cache: Path) -> list[dict]:
    done = cache / f"sites-{release}.json"
    if done.exists():
        return json.loads(done.read_text())
    before = set(cache.glob("vllm-*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"vllm=={release}", "--no-deps",
         "--no-cache-dir", "-q", "-d", str(cache)],
        check=True,
    )
    wheels = [w for w in cache.glob(f"vllm-{release}-*.whl") if w not in before] or list(
        cache.glob(f"vllm-{release}-*.whl")
    )
    try:
        found = sites(wheels[0])
    finally:
        for w in wheels:
            w.unlink()
    done.write_text(json.dumps(found))
    return found


def ranges(indices: list[int], names: list[str]) -> str:
    """`0.10.0 – 0.10.2, 0.12.0` for release indices."""
    out, start = [], None
    for i in range(len(names) + 1):
        if i in indices and start is None:
            start = i
        if i not in indices and start is not None:
            out.append(names[start] if start == i - 1 else f"{names[start]} – {names[i - 1]}")
            start = None
    return ", ".join(out)


def write(names: list[str], per_release: dict[str, list[dict]]) -> None:
    rows: dict[tuple[str, str, int], list[int]] = {}
    for i, r in enumerate(names):
        for s in per_release[r]:
            rows.setdefault((s["phrase"], s["file"], s["line"]), []).append(i)
    phrases = [p for p in PHRASES if any(k[0] == p for k in rows)]
    files = sorted({k[1] for k in rows})
    lines = [
        "//! Where each vLLM release logs the start-up lines Headroom reads: generated by",
        "//! `scripts/vllm-call-sites.py` from the wheels of every release below (their",
        "//! Python sources, each logger call whose message holds a phrase, at the line",
        "//! `logging` reports). Do not edit; rerun the script.",
        "",
        "/// The releases read, oldest first; a site's `releases` has bit `i` for `RELEASES[i]`.",
        f"pub(super) const RELEASES: [&str; {len(names)}] = [",
        *[f'    "{r}",' for r in names],
        "];",
        "",
        "/// The phrases each message holds, as printed.",
        f"pub(super) const PHRASES: [&str; {len(phrases)}] = [",
        *[f"    {json.dumps(p)}," for p in phrases],
        "];",
        "",
        "/// The files of the wheel that log them.",
        f"pub(super) const FILES: [&str; {len(files)}] = [",
        *[f'    "{f}",' for f in files],
        "];",
        "",
        "/// One logger call: its phrase and file (indices into `PHRASES` and",
        "/// `FILES`), its line, and the releases that log it there.",
        "pub(super) struct Site {",
        "    pub phrase: u8,",
        "    pub file: u8,",
        "    pub line: u16,",
        "    pub releases: u64,",
        "}",
        "",
        f"pub(super) const SITES: [Site; {len(rows)}] = [",
    ]
    assert len(names) <= 64 and len(phrases) <= 255 and len(files) <= 255
    for (phrase, file, line), idx in sorted(rows.items(), key=lambda kv: (phrases.index(kv[0][0]), kv[0][1], kv[1][0])):
        assert line < 65536
        mask = sum(1 << i for i in idx)
        lines.append(f"    // {file}:{line}, {ranges(idx, names)}")
        lines.append(
            f"    Site {{ phrase: {phrases.index(phrase)}, file: {files.index(file)}, line: {line}, releases: {mask:#x} }},"
        )
    lines.append("];")
    OUT.write_text("\n".join(lines) + "\n")
    # The workspace's own layout (`rustfmt.toml`), so `cargo fmt --check` holds.
    subprocess.run(["rustfmt", "--edition", "2024", str(OUT)], check=True)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(names)} releases, {len(phrases)} phrases, {len(rows)} sites")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default="/tmp/vw", type=Path)
    ap.add_argument("--only", help="comma-separated releases to (re)extract; the table needs them all")
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    names = releases()
    todo = args.only.split(",") if args.only else names
    per_release = {}
    for r in todo:
        print(f"{r} …", file=sys.stderr, flush=True)
        per_release[r] = extract(r, args.cache)
    if not args.only:
        write(names, per_release)


if __name__ == "__main__":
    main()

"""Bytes on disk of one traced autotune-shaped invocation, by kind (issue 17: texts stored once).

Runs `tltrace run --quiet` (records only) and `--mode html` of bench/autotune_cpu.py
(N configs of a CPU GEMM in a thread pool) into fresh trace dirs, then adds up what is
on disk by kind: the stored texts (`.objects` and the per-pass hard links to them, once),
manifests, source maps, copied Python sources, reproducer data, the compile reports
(and, in them, the page head, the IR texts, the rest), the index and the working files.
Hard links are counted once; `du` is blocks allocated.

    python bench/capture_bytes.py [--configs 24] [--markdown]

Run it with PYTHONPATH pointing at the tree to measure; point it at two trees to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
_CHUNK = re.compile(rb'<script type="([^"]+)" class="tl-d">(.*?)</script>\n', re.S)


def kind_of(path: Path) -> str:
    name = path.name
    parts = path.parts
    if name == "texts.pack":
        return "texts (texts.pack)"
    if ".objects" in parts or (name.endswith((".tir", ".cpp", ".cu", ".c")) and ".run_records" in parts):
        return "texts (.objects, .tir links)"
    if "repro" in parts:
        return "repro/ (frontend.json, context.json)"
    if name.startswith("source_") and name.endswith(".py"):
        return "source_<hash>.py"
    if name in ("manifest.json", "records.jsonl", "sourcemap.jsonl"):
        return name
    if name == "report.html":
        return "compile reports" if ".run_records" in parts else "index report.html"
    if name.startswith("codegen") or name.startswith(".codegen"):
        return "working files"
    return "other"


def measure(root: Path) -> tuple[Counter, Counter, Counter]:
    """Return (bytes, du, report parts) of everything under `root`; hard links once."""
    size: Counter = Counter()
    du: Counter = Counter()
    report: Counter = Counter()
    seen: set[tuple[int, int]] = set()
    for d, _, files in os.walk(root):
        for f in files:
            p = Path(d) / f
            st = p.lstat()
            if (st.st_dev, st.st_ino) in seen or not p.is_file() or p.is_symlink():
                continue
            seen.add((st.st_dev, st.st_ino))
            k = kind_of(p)
            size[k] += st.st_size
            du[k] += st.st_blocks * 512
            if k == "compile reports":
                data = p.read_bytes()
                at = data.find(b'<div id="tl-data" hidden>')
                report["page head (html, css, js)"] += at
                for m in _CHUNK.finditer(data, at):
                    if m.group(1) != b"application/json":  # packed (render/pages.py Packer): a pass's chunks
                        report["packed data (texts, records, maps)"] += len(m.group(0))
                        continue
                    try:
                        t = json.loads(m.group(2)).get("t")
                    except ValueError:
                        t = "cut"
                    report["IR texts" if t == "text" else "records, maps, meta"] += len(m.group(0))
    return size, du, report


def run(mode: str, configs: int, trace_dir: Path) -> None:
    cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", "--trace-dir", str(trace_dir)]
    if mode == "html":
        cmd += ["--mode", "html"]
    cmd += [str(HERE / "autotune_cpu.py"), "--configs", str(configs), "--workers", "2"]
    env = dict(os.environ, TILELANG_DISABLE_CACHE="1")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, cwd=trace_dir.parent)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=24)
    a = ap.parse_args(argv)
    lines = [
        f"| mode | kind | bytes | du ({a.configs} compiles) |",
        "|---|---|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-bytes-") as td:
        for mode in ("records", "html"):
            root = Path(td) / mode
            root.mkdir()
            run(mode, a.configs, root / "traces")
            size, du, report = measure(root / "traces")
            for k, v in size.most_common():
                lines.append(f"| {mode} | {k} | {v:,} | {du[k]:,} |")
            for k, v in report.most_common():
                lines.append(f"| {mode} | (in compile reports) {k} | {v:,} | |")
            lines.append(f"| {mode} | **total** | {sum(size.values()):,} | {sum(du.values()):,} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

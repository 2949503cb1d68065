"""Per-thread summary of a py-spy profile: how much of the compiling threads' time is tltrace's.

    py-spy record --format raw --threads --idle --full-filenames -o prof.txt -- tltrace run ...
    python bench/profile_threads.py prof.txt [--markdown]

A thread is a *compiling* thread when one of its samples is inside TileLang's lowering
(`tilelang/engine/lower.py`). For those threads it gives the share of their samples (idle
ones included: a compiling thread waiting on tltrace is tltrace's cost) with a tltrace frame
below a TileLang or TVM frame (a runner above the script is not a cost) and no TileLang
Python below that (the codegen tltrace wraps is TileLang's work), and which tltrace function was outermost there. The same for the other
threads (tltrace's workers, the tuner's own threads) as a second table.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

_THREAD = re.compile(r"^thread \((\d+|0x[0-9a-fA-F]+)\)(?::\s*([^;]*))?$")
_FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")
LOWER = "tilelang/engine/lower.py"
OURS = "/tltrace/"


def parse(text: str) -> dict[str, list[tuple[list[str], int]]]:
    """{thread id: [(frames, samples)]} of py-spy's raw (collapsed) output."""
    threads: dict[str, list[tuple[list[str], int]]] = defaultdict(list)
    names: dict[str, str] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        parts = stack.split(";")
        head = parts[0]
        if head.startswith("process "):
            parts = parts[1:]
            head = parts[0] if parts else ""
        m = _THREAD.match(head)
        if not m:
            continue
        tid = m.group(1)
        if m.group(2):
            names[tid] = m.group(2)
        threads[tid].append((parts[1:], int(count)))
    return {f"{tid} {names.get(tid, '')}".strip(): v for tid, v in threads.items()}


def _file(frame: str) -> str:
    m = _FRAME.match(frame)
    return m.group(2) if m else frame


def _func(frame: str) -> str:
    m = _FRAME.match(frame)
    if not m:
        return frame
    path = m.group(2)
    i = path.find(OURS)
    return f"{m.group(1)} ({path[i + 1 :] if i >= 0 else path})"


def _below_tilelang(frames: list[str]) -> list[str]:
    """The frames called from TileLang's (a tltrace runner above the user's script is not a cost)."""
    for i, f in enumerate(frames):
        path = _file(f)
        if "/tilelang/" in path or "/tvm/" in path or "/tvm_ffi/" in path:
            return frames[i + 1 :]
    return []


def _wrapped_tilelang(frames: list[str]) -> bool:
    """Whether tltrace, on this stack, is only wrapping TileLang's own work.

    tltrace wraps TileLang's codegen call (the seam's run_codegen): the codegen and the nvcc
    build under it are TileLang's Python (its package, not the TVM it bundles), and not
    tltrace's cost; TVM called from tltrace (the source map's walks) is tltrace's cost.
    """
    seen = False
    for f in frames:
        path = _file(f)
        if OURS in path:
            seen = True
        elif seen and "/tilelang/" in path and "/3rdparty/" not in path:
            return True
    return False


def summarize(threads: dict[str, list[tuple[list[str], int]]]) -> dict:
    out: dict = {"compiling": Counter(), "other": Counter()}
    for group in out.values():
        group.update({"threads": 0, "samples": 0, "tltrace": 0})
    outer: dict[str, Counter] = {"compiling": Counter(), "other": Counter()}
    for samples in threads.values():
        compiling = any(LOWER in _file(f) for frames, _ in samples for f in frames)
        key = "compiling" if compiling else "other"
        out[key]["threads"] += 1
        for frames, n in samples:
            out[key]["samples"] += n
            below = _below_tilelang(frames) if compiling else frames
            ours = [f for f in below if OURS in _file(f)]
            if ours and not _wrapped_tilelang(below):
                out[key]["tltrace"] += n
                outer[key][_func(ours[0])] += n
    return {"groups": out, "outer": outer}


def render(s: dict) -> str:
    lines = ["| threads | count | samples | in tltrace frames |", "|---|---|---|---|"]
    for key, g in s["groups"].items():
        share = g["tltrace"] / g["samples"] if g["samples"] else 0.0
        lines.append(f"| {key} | {g['threads']} | {g['samples']} | {g['tltrace']} ({share:.1%}) |")
    for key, c in s["outer"].items():
        total = s["groups"][key]["samples"] or 1
        if not c:
            continue
        lines += ["", f"Outermost tltrace frames on the {key} threads (share of their samples):", ""]
        lines += [f"- {n / total:.1%} {f}" for f, n in c.most_common(12)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile", type=Path)
    a = ap.parse_args(argv)
    try:
        text = a.profile.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        print(f"profile_threads.py: error: {a.profile}: {e.strerror}", file=sys.stderr)
        return 2
    sys.stdout.write(render(summarize(parse(text))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

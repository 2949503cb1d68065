"""Who holds the GIL: a py-spy `--gil` profile's samples (each one the thread that held the
GIL), split into tltrace's and the rest.

    py-spy record --gil --threads --format raw --full-filenames -o gil.txt -- tltrace run ...
    python bench/profile_gil.py gil.txt

A sample is tltrace's when a tltrace frame lies below the first TileLang, TVM or script frame
on its stack (a hook or a codegen wrapper called by the compile), or when it is on one of
tltrace's own threads (`tltrace-*`: the capture workers). Where the process is bound by the
GIL, tltrace's share of these samples is about its share of the wall time.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_threads import parse  # noqa: E402

OURS = "/tltrace/"
THEIRS = ("/tilelang/", "/tvm/", "/tvm_ffi/", "upstream_autotune", "example_")


def _file(frame: str) -> str:
    i = frame.rfind(" (")
    return frame[i + 2 :] if i >= 0 else frame


def summarize(text: str) -> str:
    threads = parse(text)
    total = ours = 0
    by_thread: Counter[str] = Counter()
    outer: Counter[str] = Counter()
    for tid, stacks in threads.items():
        own_thread = "tltrace" in tid.split(" ", 1)[-1]
        for frames, n in stacks:
            total += n
            files = [_file(f) for f in frames]
            first = next((i for i, f in enumerate(files) if any(t in f for t in THEIRS)), None)
            deep = [i for i, f in enumerate(files) if OURS in f and (first is None or i > first)]
            if own_thread or (first is not None and deep):
                ours += n
                by_thread["tltrace threads" if own_thread else "compiling threads"] += n
                if own_thread:  # the job the worker runs: the frame below its loop
                    mine = [i for i, f in enumerate(files) if OURS in f]
                    k = mine[1] if len(mine) > 1 else (mine[0] if mine else 0)
                else:
                    k = deep[0]
                outer[frames[k] if k < len(frames) else "?"] += n
    lines = [f"GIL-holding samples: {total}; tltrace's: {ours} ({100 * ours / max(total, 1):.1f}%)"]
    for k, v in by_thread.most_common():
        lines.append(f"  {k}: {v} ({100 * v / max(total, 1):.1f}%)")
    lines.append("outermost tltrace frame (top 15):")
    for k, v in outer.most_common(15):
        lines.append(f"  {100 * v / max(total, 1):5.1f}%  {k}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1]).read_text()))

"""Issue 34: what a traced compile's caller waits, with tltrace's worker running beside it.

    PYTHONPATH=<tree> python bench/compile_wall.py [--reps 5] [--lowerings 6]
        [--configs untraced,records,records@0.0005]

One process. Each (configuration, rep) lowers the upstream autotuner's GEMM for sm_90a
`--lowerings` times in a row on this thread, with tltrace's worker writing the records of
the lowerings before on another (the worker is drained after the row, outside the timing):
the per-lowering wall and this thread's CPU, medians over reps. `CFG@S` runs `CFG` with
`sys.setswitchinterval(S)` (the GIL's hand-over interval; 0.005 by default), the lever the
H200's `@switch` variant tries with 14 compiling threads (bench/autotune.py VARIANTS).
On two idle cores this is one compiling thread and one worker: what is left above 1.00x is
the compiling thread's own hooks plus its waits for the GIL the worker holds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import compile_setup  # noqa: E402

compile_setup()

HEADING = "## A traced compile's wall, the worker beside it"
DEFAULT_SWITCH = 0.005


def measure(configs: list[str], reps: int, n: int) -> dict[str, dict[str, list[float]]]:
    from capture_cost import configure, sm90a_lowerer

    lower = sm90a_lowerer()
    res: dict[str, dict[str, list[float]]] = {c: {"wall": [], "thread": []} for c in configs}
    old = sys.getswitchinterval()
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-cwall-") as td:
        for rep in range(reps):
            k = rep % len(configs)  # rotated: no configuration always runs right after another
            for i, cfg in enumerate(configs[k:] + configs[:k]):
                name, _, switch = cfg.partition("@")
                enter, leave = configure(name, Path(td) / f"{rep}-{i}")
                with contextlib.redirect_stdout(io.StringIO()):
                    enter()
                    sys.setswitchinterval(float(switch) if switch else DEFAULT_SWITCH)
                    try:
                        w0, t0 = time.perf_counter(), time.thread_time()
                        for _ in range(n):
                            lower()
                        w1, t1 = time.perf_counter(), time.thread_time()
                    finally:
                        sys.setswitchinterval(old)
                        leave()  # drains the worker: not timed
                res[cfg]["wall"].append((w1 - w0) / n)
                res[cfg]["thread"].append((t1 - t0) / n)
            print(f"rep {rep + 1}/{reps}", file=sys.stderr)
    return res


def table(res: dict[str, dict[str, list[float]]], reps: int, n: int) -> str:
    med = {c: {k: statistics.median(v) for k, v in d.items()} for c, d in res.items()}
    base = next(iter(med.values()))
    lines = [
        HEADING,
        "",
        f"`python bench/compile_wall.py --reps {reps} --lowerings {n}`: {n} sm_90a lowerings in a row on "
        "one thread, tltrace's worker writing beside it (drained after the row, not timed); medians "
        f"over {reps} interleaved reps, in rotated order. `@S`: the GIL's switch interval set to S seconds.",
        "",
        "| configuration | wall per lowering (ms) | vs first | compiling thread CPU (ms) | vs first |",
        "|---|---:|---:|---:|---:|",
    ]
    for cfg, m in med.items():
        lines.append(
            f"| {cfg} | {m['wall'] * 1e3:.1f} | {m['wall'] / base['wall']:.3f}x | {m['thread'] * 1e3:.1f} "
            f"| {m['thread'] / base['thread']:.3f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lowerings", type=int, default=6)
    ap.add_argument("--configs", default="untraced,records,records@0.0005,html")
    a = ap.parse_args(argv)
    configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    print(table(measure(configs, a.reps, a.lowerings), a.reps, a.lowerings))
    return 0


if __name__ == "__main__":
    sys.exit(main())

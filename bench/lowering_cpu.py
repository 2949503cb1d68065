"""Issue 34's CPU target: what tltrace adds to one sm_90a lowering, in CPU time (all threads).

    PYTHONPATH=<tree> python bench/lowering_cpu.py [--reps 9] [--configs untraced,records,html,records --exact]
        [--kernel upstream [--config block_M=...,enable_rasteration=True] [--mnk 4096]]

One process. Each rep lowers the upstream autotuner's GEMM for sm_90a once per
configuration, interleaved (bench/capture_cost.py's kernel and target), and waits for
tltrace's worker after it, so the worker's CPU is counted. CPU: `time.process_time()`
(every thread of the process); the compiling thread's own CPU: `time.thread_time()`.
Added CPU is traced minus untraced, in units of the untraced compiling thread's CPU
(the target: at most 0.20x with records and source maps on). Medians over reps.
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

HEADING = "## CPU added to one sm_90a lowering"
TARGET = 0.20


def _configure(cfg: str, sub: Path):
    from capture_cost import configure

    name = {"untraced": "untraced", "records": "tltrace records", "html": "tltrace html"}[cfg.split()[0]]
    return configure(name + "".join(f" {f}" for f in ("--sync", "--exact") if f in cfg), sub)


def measure(reps: int, configs: list[str], func=None) -> dict[str, dict[str, list[float]]]:
    from capture_cost import sm90a_lowerer

    from tltrace.session import worker

    lower = sm90a_lowerer(func)
    out: dict[str, dict[str, list[float]]] = {
        c: {"cpu": [], "main": [], "call": [], "wall": []} for c in configs
    }
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-lcpu-") as td:
        for rep in range(reps):
            for i, cfg in enumerate(configs):
                enter, leave = _configure(cfg, Path(td) / str(i) / str(rep))
                with contextlib.redirect_stdout(io.StringIO()):
                    enter()
                    try:
                        c0, m0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
                        lower()
                        called = time.perf_counter()  # the lowering call's own wall ends here
                        worker.drain()  # the worker's share of this lowering
                        c1, m1, w1 = time.process_time(), time.thread_time(), time.perf_counter()
                    finally:
                        leave()
                out[cfg]["cpu"].append(c1 - c0)
                out[cfg]["main"].append(m1 - m0)
                out[cfg]["call"].append(called - w0)
                out[cfg]["wall"].append(w1 - w0)
            print(f"rep {rep + 1}/{reps}", file=sys.stderr)
    return out


def table(res: dict[str, dict[str, list[float]]], reps: int) -> str:
    med = {c: {k: statistics.median(v) for k, v in d.items()} for c, d in res.items()}
    base = med["untraced"]
    lines = [
        HEADING,
        "",
        f"`python bench/lowering_cpu.py --reps {reps}`: one process, interleaved, medians; the worker "
        "drained after each lowering and counted. Added CPU: process CPU (all threads) minus the "
        "untraced lowering's, over the untraced compiling thread's CPU. Wall: `call`, the lowering call's "
        "own; `to complete records`, until the worker has written its records (the drain).",
        "",
        "| configuration | process CPU (ms) | compiling thread CPU (ms) | added CPU (ms) "
        "| added / untraced thread | compiling thread vs untraced | call wall (ms) "
        "| wall to complete records (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cfg, m in med.items():
        added = m["cpu"] - base["cpu"]
        lines.append(
            f"| {cfg} | {m['cpu'] * 1e3:.0f} | {m['main'] * 1e3:.0f} | {added * 1e3:.0f} | "
            f"{added / base['main']:.3f}x | {m['main'] / base['main']:.3f}x | {m['call'] * 1e3:.0f} | {m['wall'] * 1e3:.0f} |"
        )
    if "records" in med:
        r = (med["records"]["cpu"] - base["cpu"]) / base["main"]
        lines += [
            "",
            "| target | limit | measured | verdict |",
            "|---|---|---|---|",
            f"| sm_90a lowering, records: added CPU / untraced compiling thread | <= {TARGET:.2f}x "
            f"| {r:.3f}x | {'ok' if r <= TARGET else 'OVER'} |",
        ]
    return "\n".join(lines) + "\n"


def section(reps: int = 9) -> str:
    """Return the markdown section (bench/run.py's `lowering`)."""
    configs = ["untraced", "records", "records --exact", "html"]
    return table(measure(reps, configs), reps)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--configs", default="untraced,records,html")
    from capture_cost import add_kernel_args, kernel_of

    add_kernel_args(ap)
    a = ap.parse_args(argv)
    configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    if configs[0] != "untraced":
        configs.insert(0, "untraced")
    print(table(measure(a.reps, configs, kernel_of(a)), a.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

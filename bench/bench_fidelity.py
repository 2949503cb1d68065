"""Does tltrace's writing disturb a kernel benchmark? (issue 34 round 7; issue 51)

An autotuner compiles every config in a thread pool, then benchmarks them one by one. A
compile returns before its records (session/worker.py), so tltrace's workers may still be
writing while the tuner benchmarks. A benchmark loop that waits for the GIL between its start event and
its launch counts the wait as kernel time. This measures it, on the GPU:

    python bench/bench_fidelity.py [--configs 16] [--samples 7] [--out FILE]

1. compiles one 4096^3 fp16 GEMM (the upstream autotuner's kernel) and benchmarks it with
   TileLang's `do_bench` (events), SAMPLES times, with tltrace tracing and idle: `idle`;
2. compiles CONFIGS more configs in a CONFIGS-thread pool under tracing, then at once
   benchmarks the first kernel SAMPLES times while the workers write what the pool left
   them: `writing` (how many jobs were queued at the start, and when the queues emptied);
3. benchmarks it SAMPLES times again once the queues are empty: `after`.

Run it under `tltrace run --quiet`.
Prints a markdown table of the latencies (ms): median, min, max per phase.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


GRID = [
    (bm, bn, bk, st, th)
    for bm in (64, 128)
    for bn in (64, 128, 256)
    for bk in (32, 64)
    for st in (2, 3, 4)
    for th in (128, 256)
]


def compile_(func):  # noqa: ANN001, ANN201
    import tilelang

    return tilelang.compile(func, out_idx=[2], target="cuda")


def make(cfg):  # noqa: ANN001, ANN201
    """The prim_func of one config (the upstream autotuner's GEMM, bench/capture_cost.py), made on
    the calling thread (T.prim_func parses source: not in a pool)."""
    from capture_cost import sm90a_gemm

    bm, bn, bk, stages, threads = cfg
    return sm90a_gemm(4096, 4096, 4096, bm, bn, bk, stages, threads)


def bench(kernel, samples: int) -> list[float]:  # noqa: ANN001
    prof = kernel.get_profiler()
    return [float(prof.do_bench()) for _ in range(samples)]


def queued() -> int:
    from tltrace.session import worker

    return sum(w.pending() for w in list(worker._workers))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=16)
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--out", help="append the table here too")
    a = ap.parse_args(argv)
    kernel = compile_(make((128, 256, 64, 3, 256)))
    import tltrace

    tltrace.flush()
    rows = [("idle", bench(kernel, a.samples), "")]
    funcs = [make(GRID[(i * 7) % len(GRID)]) for i in range(a.configs)]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(a.configs) as pool:
        list(pool.map(compile_, funcs))
    compiled = time.perf_counter() - t0
    jobs = queued()
    emptied: list[float] = []
    t1 = time.perf_counter()

    def watch() -> None:
        tltrace.flush()
        emptied.append(time.perf_counter() - t1)

    threading.Thread(target=watch, daemon=True).start()
    writing = bench(kernel, a.samples)
    took = time.perf_counter() - t1
    tltrace.flush()
    rows.append(
        (
            "writing",
            writing,
            f"{jobs} jobs queued after the pool's {compiled:.1f} s; the queues emptied "
            f"{emptied[0] if emptied else float('nan'):.1f} s into the {took:.1f} s of benchmarks",
        )
    )
    rows.append(("after", bench(kernel, a.samples), ""))
    lines = ["| phase | median ms | min | max | |", "|---|---:|---:|---:|---|"]
    for name, xs, note in rows:
        lines.append(f"| {name} | {statistics.median(xs):.4f} | {min(xs):.4f} | {max(xs):.4f} | {note} |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

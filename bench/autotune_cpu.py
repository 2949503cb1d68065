"""An autotune-shaped workload for the CPU: many configurations of one GEMM compiled in a thread pool.

Shaped like TileLang's autotuner (`tilelang.autotuner.AutoTuner`): every config is its
own `tilelang.compile` call, made from a pool of worker threads, and every kernel is
named `main`. It compiles for the CPU (`target="c"`, `execution_backend="cython"`), so
it runs here and in CI; `bench/autotune.py` times it untraced, under tltrace and
under TileLang's built-in tracer.

    python bench/autotune_cpu.py [--configs 32] [--workers N]

Prints one line: how many configs compiled and how many failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import os
import sys
import time

GRID = {
    "block_M": [16, 32, 64],
    "block_N": [16, 32, 64],
    "block_K": [8, 16, 32],
    "threads": [64, 128],
    "pipelined": [True, False],
}


def all_configs() -> list[dict]:
    """The whole grid (108 configs), in itertools.product order."""
    return [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]


def configs(n: int) -> list[dict]:
    """`n` configs spread evenly over the grid (all of it when `n` >= its size); more than the grid repeats it."""
    grid = all_configs()
    if n >= len(grid):
        return [grid[i % len(grid)] for i in range(n)]
    step = len(grid) / n
    return [grid[int(i * step)] for i in range(n)]


def make_kernel(
    M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, threads: int, pipelined: bool
):
    import tilelang.language as T

    dtype = accum = "float32"

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype, scope="shared")
            B_shared = T.alloc_shared((block_N, block_K), dtype, scope="shared")
            C_local = T.alloc_local((block_M, block_N), accum)
            T.clear(C_local)
            if pipelined:
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            else:
                for k in T.serial(T.ceildiv(K, block_K)):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def run(n: int, workers: int, size: tuple[int, int, int] = (128, 128, 64)) -> tuple[int, int]:
    """Compile `n` configs in a pool of `workers` threads; return (compiled, failed)."""
    import tilelang

    def compile_one(cfg: dict):
        return tilelang.compile(make_kernel(*size, **cfg), target="c", execution_backend="cython")

    ok = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(compile_one, c) for c in configs(n)]):
            try:
                fut.result()
                ok += 1
            except Exception:
                failed += 1
    return ok, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=32, help="how many configs to compile (grid: 108)")
    ap.add_argument("--workers", type=int, default=max(2, os.cpu_count() or 1), help="compile threads")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import timeline  # BENCH_TIMELINE: where the wall goes (bench/timeline.py)

    if os.environ.get("BENCH_SWITCH_INTERVAL"):  # an experiment: the GIL's switch interval, seconds
        sys.setswitchinterval(float(os.environ["BENCH_SWITCH_INTERVAL"]))
    sampler = timeline.start()
    t0 = time.perf_counter()
    ok, failed = run(a.configs, a.workers)
    # The compile calls' own wall (bench/autotune.py reads it): it stops before tltrace's workers
    # finish, which the process's exit waits for.
    print(f"autotune_cpu: compile calls: {time.perf_counter() - t0:.3f} s")
    if sampler is not None:
        sampler.write("main-end")
    print(f"autotune_cpu: {ok} compiled, {failed} failed, {a.workers} threads")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

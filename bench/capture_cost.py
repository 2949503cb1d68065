"""Issue 17's capture-cost table: tltrace against untraced and TileLang's built-in tracer, in one process.

One unit of work is `tilelang.compile` of two small CPU kernels (elementwise add and
gemm, target c, cython) plus `tilelang.lower` of the upstream autotuner's GEMM for
sm_90a (CUDA codegen, no GPU, no nvcc needed), summed. Every configuration runs the
unit once per rep, interleaved rep by rep, and the table gives medians:

    python bench/capture_cost.py [--reps 7] [--markdown]

Configurations: untraced; tltrace records only (--quiet, the worker); tltrace html
(report, the worker); the same two with --sync (printing on the compiling thread, as
before the worker); TileLang's built-in tracer, terminal and html. `--gpu-proxy N`
instead times the compile phase of N upstream-GEMM configs lowered for sm_90a in N
threads of one process (the H200's compile-phase proxy; there target cuda with nvcc).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_common import cpu_bench_setup  # noqa: E402

cpu_bench_setup()

from bench_common import bench_settings, configuration, disk_bytes, md_head, session  # noqa: E402

HEADING = "## Capture cost: untraced, tltrace (worker and --sync), built-in (CPU + sm_90a lowering)"
CONFIGS = [
    "untraced",
    "tltrace records",
    "tltrace html",
    "tltrace records --sync",
    "tltrace html --sync",
    "built-in terminal",
    "built-in html",
]
TARGETS = {"tltrace records": 1.05, "tltrace html": 1.08}


def sm90a_gemm(
    M=1024, N=1024, K=1024, bm=128, bn=128, bk=64, stages=3, threads=256, raster=True, dtype="float16"
):
    """The upstream autotuner's GEMM kernel (examples/gemm/example_gemm_autotune.py), one config
    (the autotuner's own kernel is of bfloat16: `upstream_gemm`)."""
    import tilelang.language as T

    accum = "float32"

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bn, bk), dtype)
            C_l = T.alloc_fragment((bm, bn), accum)
            C_s = T.alloc_shared((bm, bn), dtype)
            T.use_swizzle(panel_size=10, enable=raster)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * bm, bx * bn])

    return main


def sm90a_target():
    from tilelang import tvm

    return tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})


# The autotuner's config keys (examples/gemm/example_gemm_autotune.py `get_configs`) -> sm90a_gemm's.
UPSTREAM_KEYS = {
    "block_M": "bm",
    "block_N": "bn",
    "block_K": "bk",
    "num_stages": "stages",
    "thread_num": "threads",
    "enable_rasteration": "raster",
}


def upstream_gemm(config: str, mnk: int = 4096):
    """The upstream autotuner's own kernel (`get_best_config.kernel`: bfloat16, M = N = K = `mnk`)
    for one config of its grid, `config` as `block_M=128,block_N=256,...,enable_rasteration=True`."""
    kw: dict = {}
    for part in filter(None, (p.strip() for p in config.split(","))):
        key, _, value = part.partition("=")
        if key not in UPSTREAM_KEYS:
            raise SystemExit(f"capture_cost: unknown config key {key!r} (one of {', '.join(UPSTREAM_KEYS)})")
        kw[UPSTREAM_KEYS[key]] = value == "True" if key == "enable_rasteration" else int(value)
    return sm90a_gemm(mnk, mnk, mnk, dtype="bfloat16", **kw)


def add_kernel_args(ap) -> None:
    """`--kernel`/`--config`/`--mnk`: which kernel `sm90a_lowerer` lowers (bench/capture_steps.py,
    bench/lowering_cpu.py)."""
    ap.add_argument(
        "--kernel",
        default="default",
        choices=("default", "upstream"),
        help="default: the 1024^3 float16 GEMM; upstream: the autotuner's kernel for --config",
    )
    ap.add_argument(
        "--config",
        default="block_M=128,block_N=256,block_K=64,num_stages=3,thread_num=256,enable_rasteration=True",
        help="--kernel upstream: one config of the autotuner's grid",
    )
    ap.add_argument("--mnk", type=int, default=4096, help="--kernel upstream: M = N = K")


def kernel_of(a) -> object:
    """The prim_func that `add_kernel_args`'s options name (None: the default kernel)."""
    return upstream_gemm(a.config, a.mnk) if a.kernel == "upstream" else None


def sm90a_lowerer(func=None):
    """Return `lower()`: `func` (default: the upstream GEMM at 1024^3) lowered for sm_90a, with its
    device codegen (CUDA source, no nvcc), once already (imports, TVM caches)."""
    import tilelang

    big, target = func if func is not None else sm90a_gemm(), sm90a_target()

    def lower() -> None:
        with target:
            tilelang.lower(big, target=target)

    with contextlib.redirect_stdout(io.StringIO()):
        lower()  # warm-up, outside any timing
    return lower


def work_unit():
    """Return [(name, thunk)] of one unit: prim_funcs are made here, outside the timing."""
    import tilelang
    from elementwise_add import make_add
    from gemm import make_gemm

    add = make_add(1024, 128)
    gemm = make_gemm(128, 128, 64, 32, 32, 16, "float32", "float32")
    big = sm90a_gemm()
    target = sm90a_target()

    def lower():
        with target:
            tilelang.lower(big, target=target)

    return [
        ("add", lambda: tilelang.compile(add, target="c", execution_backend="cython")),
        ("gemm", lambda: tilelang.compile(gemm, target="c", execution_backend="cython")),
        ("sm90a", lower),
    ]


def configure(cfg: str, sub: Path):
    """Return (enter, leave) turning configuration `cfg` on and off, writing into `sub`."""

    def tltrace(mode: str):
        from tltrace.render.listeners import Listeners

        s = bench_settings(
            sub,
            mode,
            sync="--sync" in cfg,
            exact="--exact" in cfg,  # issue 34: no equality rule
        )
        return session(s, [Listeners(s)])  # leave waits for the worker: its time is counted

    return configuration(cfg, sub, tltrace)


def lower_configured(cfg: str, sub: Path, lower) -> None:
    """Run `lower()` once under configuration `cfg` (writing into `sub`), the worker drained after it."""
    from tltrace.session import worker

    enter, leave = configure(cfg, sub)
    with contextlib.redirect_stdout(io.StringIO()):
        enter()
        try:
            lower()
            worker.drain()
        finally:
            leave()


def traced_calls(owner, name: str, cfg: str = "tltrace records", arg: int = 0) -> list:
    """Argument `arg` of every call of `owner.name` (wrapped here to keep it) in one traced sm_90a
    lowering under `cfg`: the second of two, the first takes the imports and the printer's checks."""
    from tltrace.session import worker

    lower = sm90a_lowerer()
    kept: list = []
    orig = getattr(owner, name)

    def keep(*a, **k):
        kept.append(a[arg])
        return orig(*a, **k)

    with tempfile.TemporaryDirectory(prefix="tltrace-bench-calls-") as td:
        for rep in range(2):
            kept.clear()
            enter, leave = configure(cfg, Path(td) / str(rep))
            setattr(owner, name, keep)
            try:  # leave() waits for the worker
                with contextlib.redirect_stdout(io.StringIO()):
                    enter()
                    lower()
                    worker.drain()
            finally:
                leave()
                setattr(owner, name, orig)
    return kept


def measure(reps: int, configs: list[str]) -> tuple[dict, dict]:
    unit = work_unit()
    times: dict[tuple[str, str], list[float]] = {}
    for _, thunk in unit:  # warm-up: imports, TVM caches
        with contextlib.redirect_stdout(io.StringIO()):
            thunk()
    sizes: dict[str, tuple[int, int]] = {}
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-cost-") as td:
        tmp = Path(td)
        for rep in range(reps):
            for cfg in configs:
                sub = tmp / str(configs.index(cfg)) / str(rep)
                enter, leave = configure(cfg, sub)
                with contextlib.redirect_stdout(io.StringIO()):
                    c0, m0 = time.process_time(), time.thread_time()
                    enter()
                    try:
                        for name, thunk in unit:
                            t0 = time.perf_counter()
                            thunk()
                            times.setdefault((cfg, name), []).append(time.perf_counter() - t0)
                    finally:
                        t0 = time.perf_counter()
                        leave()
                        times.setdefault((cfg, "drain"), []).append(time.perf_counter() - t0)
                        times.setdefault((cfg, "cpu"), []).append(time.process_time() - c0)
                        times.setdefault((cfg, "main"), []).append(time.thread_time() - m0)
                if rep == 0:
                    sizes[cfg] = disk_bytes(sub)
                print(
                    f"rep {rep + 1}/{reps} {cfg}: {sum(times[(cfg, n)][-1] for n, _ in unit):.2f}s",
                    file=sys.stderr,
                )
    return times, sizes


def table(times: dict, sizes: dict, reps: int, configs: list[str]) -> str:
    names = ["add", "gemm", "sm90a"]

    def total(cfg: str) -> list[float]:
        return [sum(times[(cfg, n)][i] for n in names) + times[(cfg, "drain")][i] for i in range(reps)]

    base = statistics.median(total("untraced"))
    base90 = statistics.median(times[("untraced", "sm90a")])
    cpu0 = statistics.median(times[("untraced", "cpu")])
    main0 = statistics.median(times[("untraced", "main")])
    lines = [
        HEADING,
        "",
        f"One process, {reps} interleaved reps, medians. One unit: `tilelang.compile` of two small CPU "
        "kernels (add, gemm; target c, cython) plus `tilelang.lower` of the upstream autotuner's GEMM "
        "(1024^3, 128x128x64, 3 stages, 256 threads) for sm_90a, summed. `compile calls`: the three calls' "
        "own wall; `unit`: the wall until the records are complete (the compile calls plus the drain, "
        "the wait for tltrace's worker or the built-in's `disable()` at the end). "
        "`--sync` is printing on the compiling thread (tltrace before the worker). "
        "CPU: user + sys of the process (all threads; the C compiler's subprocesses not counted), which a "
        "shared machine disturbs less than wall time; the compiling thread's own CPU time is what lies on "
        "the compile's path when a core is free for the worker. Bytes: one unit into a fresh directory (`du`, hard links once).",
        "",
        "| configuration | compile calls (s) | unit (s) | vs untraced | sm_90a lowering vs untraced | drain (ms) "
        "| CPU s | CPU vs untraced | compiling thread CPU vs untraced | du bytes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cfg in configs:
        med = statistics.median(total(cfg))
        m90 = statistics.median(times[(cfg, "sm90a")])
        drain = statistics.median(times[(cfg, "drain")]) * 1000
        size = sizes.get(cfg, (0, 0))[1]
        cpu = statistics.median(times[(cfg, "cpu")])
        calls = statistics.median(sum(times[(cfg, n)][i] for n in names) for i in range(reps))
        lines.append(
            f"| {cfg} | {calls:.3f} | {med:.3f} | {med / base:.3f}x | {m90 / base90:.3f}x | {drain:.0f} | {cpu:.2f} | "
            f"{cpu / cpu0:.3f}x | {statistics.median(times[(cfg, 'main')]) / main0:.3f}x | {size:,} |"
        )
    lines += ["", *md_head("target", "limit", "measured", "verdict")]
    for cfg, limit in TARGETS.items():
        if cfg in configs:
            r = statistics.median(total(cfg)) / base
            lines.append(
                f"| CPU table: {cfg} | <= {limit:.2f}x | {r:.3f}x | {'ok' if r <= limit else 'OVER'} |"
            )
    return "\n".join(lines) + "\n"


def section(reps: int = 7) -> str:
    """Return the markdown section (bench/run.py's `cost`)."""
    times, sizes = measure(reps, CONFIGS)
    return table(times, sizes, reps, CONFIGS)


def gpu_proxy(n: int, reps: int, configs: list[str]) -> str:
    """Compile phase of n GEMM configs in n threads (target cuda, nvcc): wall time per configuration."""
    import concurrent.futures as cf
    import itertools

    import tilelang

    grid = list(itertools.product([64, 128], [64, 128], [32, 64], [2, 3]))[:n]
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-proxy-") as td:
        for rep in range(reps):
            for cfg in configs:
                funcs = [sm90a_gemm(bm=bm, bn=bn, bk=bk, stages=st, threads=128) for bm, bn, bk, st in grid]
                enter, leave = configure(cfg, Path(td) / str(configs.index(cfg)) / str(rep))
                with contextlib.redirect_stdout(io.StringIO()):
                    enter()
                    t0 = time.perf_counter()
                    try:
                        with cf.ThreadPoolExecutor(n) as pool:
                            list(pool.map(lambda f: tilelang.compile(f, target="cuda"), funcs))
                    finally:
                        leave()
                    times.setdefault(cfg, []).append(time.perf_counter() - t0)
                print(f"rep {rep + 1}/{reps} {cfg}: {times[cfg][-1]:.2f}s", file=sys.stderr)
    base = statistics.median(times["untraced"])
    lines = [
        f"## H200 compile-phase proxy: {n} GEMM configs in {n} threads, one process",
        "",
        f"`tilelang.compile(target='cuda')` of {n} upstream-GEMM configs in a pool of {n} threads; "
        f"{reps} interleaved reps, medians, worker drain included.",
        "",
        *md_head("configuration", "wall (s)", "vs untraced", "reps"),
    ]
    for cfg in configs:
        med = statistics.median(times[cfg])
        lines.append(
            f"| {cfg} | {med:.2f} | {med / base:.3f}x | {', '.join(f'{t:.2f}' for t in times[cfg])} |"
        )
    lines += ["", *md_head("target", "limit", "measured", "verdict")]
    for cfg, limit in (("tltrace records", 1.03), ("tltrace html", 1.05)):
        if cfg in configs:
            r = statistics.median(times[cfg]) / base
            lines.append(
                f"| H200 proxy: {cfg} | <= {limit:.2f}x | {r:.3f}x | {'ok' if r <= limit else 'OVER'} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument(
        "--configs", default=",".join(CONFIGS), help="comma-separated subset of: " + ", ".join(CONFIGS)
    )
    ap.add_argument("--gpu-proxy", type=int, metavar="N", help="the H200 compile-phase proxy with N threads")
    a = ap.parse_args(argv)
    configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or "untraced" not in configs:
        ap.error(f"configs must include untraced and come from: {', '.join(CONFIGS)}")
    if a.gpu_proxy:
        os.environ.pop("TLTRACE_EXAMPLES_CPU", None)
        print(gpu_proxy(a.gpu_proxy, a.reps, configs))
        return 0
    times, sizes = measure(a.reps, configs)
    print(table(times, sizes, a.reps, configs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

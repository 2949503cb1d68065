"""Compile-time overhead and bytes on disk: untraced vs tltrace vs TileLang's built-in tracer.

All configurations run in one process, interleaved rep by rep on the same kernels,
so the ratios compare like with like on a noisy machine. Run:

    python bench/capture.py [--reps 7]
    python bench/capture.py --bytes-only     # the bytes on disk alone (no timed compiles)
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

os.environ["TILELANG_DISABLE_CACHE"] = "1"
os.environ.pop("TL_LOWER_TRACE", None)
if "--gpu" not in sys.argv:
    os.environ.setdefault("TLTRACE_EXAMPLES_CPU", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

from bench_common import bench_settings, configuration, disk_bytes, per_pass_floor, report_listeners, session  # noqa: E402


def kernels():
    from _common import has_cuda
    from elementwise_add import make_add
    from gemm import make_gemm
    from softmax import make_softmax

    if has_cuda():
        return {
            "elementwise": lambda: make_add(1 << 20, 256),
            "gemm": lambda: make_gemm(1024, 1024, 1024, 128, 128, 32, "float16", "float32"),
            "softmax": lambda: make_softmax(4096, 1024, 8),
        }
    return {
        "elementwise": lambda: make_add(1024, 128),
        "gemm": lambda: make_gemm(128, 128, 64, 32, 32, 16, "float32", "float32"),
        "softmax": lambda: make_softmax(256, 128, 8),
    }


CONFIGS = [
    "untraced",
    "tltrace --quiet (records only)",
    "tltrace terminal",
    "built-in terminal",
    "tltrace html",
    "built-in html",
]


def measure(reps: int = 5, bytes_only: bool = False) -> str:
    import tilelang
    from _common import compile_kwargs

    ks = kernels()
    kw = compile_kwargs()
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        cfgs = CONFIGS
        times: dict[tuple[str, str], list[float]] = {}
        # Warm-up: first compiles pay one-off costs (imports, caches in TVM).
        for make in ks.values():
            tilelang.compile(make(), **kw)
        for _ in range(0 if bytes_only else reps):
            for kname, make in ks.items():
                for cfg in cfgs:
                    func = make()
                    enter, leave = _configure(cfg, tmp / "timed" / str(CONFIGS.index(cfg)))
                    enter()
                    # Three figures (issue 51): the compile call's wall; the wall until its records
                    # are complete (leave() waits for tltrace's workers, or the built-in's disable());
                    # the process's CPU over both (every thread: the workers' too).
                    c0 = time.process_time()
                    t0 = time.perf_counter()
                    try:
                        with contextlib.redirect_stdout(io.StringIO()):
                            tilelang.compile(func, **kw)
                            dt = time.perf_counter() - t0
                    finally:
                        leave()
                    done = time.perf_counter() - t0
                    cpu = time.process_time() - c0
                    times.setdefault((kname, cfg), []).append(dt)
                    times.setdefault((kname, cfg, "done"), []).append(done)
                    times.setdefault((kname, cfg, "cpu"), []).append(cpu)
        # Bytes on disk of one run per kernel into a fresh directory, then what a second,
        # identical run adds (tltrace shares stored texts across runs of a script).
        sizes: dict[tuple[str, str], tuple[int, int]] = {}
        floors: dict[tuple[str, str], int] = {}  # the spec's per-pass files and directories alone
        reruns: dict[tuple[str, str], tuple[int, int]] = {}
        for kname, make in ks.items():
            for cfg in cfgs[1:]:
                sub = tmp / "sized" / kname / str(CONFIGS.index(cfg))
                for attempt in (0, 1):
                    enter, leave = _configure(cfg, sub)
                    enter()
                    try:
                        with contextlib.redirect_stdout(io.StringIO()):
                            tilelang.compile(make(), **kw)
                    finally:
                        leave()
                    now = disk_bytes(sub)
                    if attempt == 0:
                        sizes[(kname, cfg)] = now
                        floors[(kname, cfg)] = per_pass_floor(sub)
                    else:
                        first = sizes[(kname, cfg)]
                        reruns[(kname, cfg)] = (now[0] - first[0], now[1] - first[1])
    if bytes_only:
        return _bytes_table(ks, cfgs, sizes, kw, floors) + _rerun_table(ks, cfgs, reruns)
    return _table(ks, cfgs, times, sizes, reps, kw) + _rerun_table(ks, cfgs, reruns)


def _bytes_table(ks, cfgs, sizes, kw, floors) -> str:
    lines = [
        f"Bytes on disk alone (target `{kw['target']}`, backend `{kw['execution_backend']}`): one "
        "compile into a fresh directory; `file bytes` adds up file sizes, `du bytes` is blocks "
        "allocated (directories included); hard links counted once. `per-pass floor`: the blocks "
        "of tltrace's directories and of its distinct per-pass files alone (the spec's "
        "`<phase>/NN_<Pass>_before.tir`/`_after.tir`, one inode per distinct text), what any "
        "store keeping those files as plain text must allocate (bench_common.per_pass_floor).",
        "",
        "| kernel | configuration | file bytes | vs built-in | du bytes | vs built-in | per-pass floor | vs built-in |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kname in ks:
        for cfg in cfgs[1:]:
            size = sizes[(kname, cfg)]
            ref = sizes[(kname, "built-in html" if "html" in cfg else "built-in terminal")]
            ours = cfg.startswith("tltrace")
            ratio = [f"{size[i] / ref[i]:.2f}x" if ours else "-" for i in (0, 1)]
            floor = floors.get((kname, cfg), 0)
            fcells = f"{floor:,} | {floor / ref[1]:.2f}x" if ours else "- | -"
            lines.append(
                f"| {kname} | {cfg} | {size[0]:,} | {ratio[0]} | {size[1]:,} | {ratio[1]} | {fcells} |"
            )
    return "\n".join(lines) + "\n"


def _rerun_table(ks, cfgs, reruns) -> str:
    lines = [
        "",
        "Bytes a second, identical run of the same script adds (the usual edit-and-rerun loop):",
        "",
        "| kernel | configuration | file bytes | vs built-in | du bytes | vs built-in |",
        "|---|---|---|---|---|---|",
    ]
    for kname in ks:
        for cfg in cfgs[1:]:
            if not cfg.startswith("tltrace"):
                continue
            ref = reruns[(kname, "built-in html" if "html" in cfg else "built-in terminal")]
            got = reruns[(kname, cfg)]
            lines.append(
                f"| {kname} | {cfg} | {got[0]:,} | {got[0] / ref[0]:.2f}x | {got[1]:,} | "
                f"{got[1] / ref[1]:.2f}x |"
            )
    return "\n".join(lines) + "\n"


def _configure(cfg: str, sub: Path):
    """Return (enter, leave) that turn configuration `cfg` on and off, writing into `sub`."""

    def tltrace(mode: str):
        from tltrace.render.terminal import TerminalView

        s = bench_settings(sub, mode, quiet="quiet" in cfg or mode == "html")
        return session(s, [TerminalView(s), *report_listeners(s)])

    return configuration(cfg, sub, tltrace)


def _table(ks, cfgs, times, sizes, reps, kw) -> str:
    lines = [
        f"## Compile time and bytes on disk (target `{kw['target']}`, backend `{kw['execution_backend']}`)",
        "",
        f"Median of {reps} interleaved compiles per kernel and configuration, in one process "
        "(stdout discarded). Three figures a compile: `compile` is the `tilelang.compile` call's "
        "own wall; `to complete records` runs on until the records are complete (tltrace's "
        "`uninstall`, which waits for its workers; the built-in tracer's `disable()`); `CPU` is the "
        "process's user + sys time over the same span, every thread (tltrace's workers included, "
        "the C compiler's subprocesses not). Ratios are against the untraced compile "
        "of the same kernel in the same run (median over median, and best over best, which is the "
        "steadier on a shared machine). Bytes: one compile into a fresh directory; `file bytes` "
        "adds up file sizes, `du bytes` is what `du` reports (blocks allocated, directories "
        "included); hard links counted once. tltrace's html figures include its report.",
        "",
        "| kernel | configuration | median compile (s) | vs untraced | best-of vs untraced "
        "| to complete records (s) | vs untraced | CPU (s) | vs untraced "
        "| file bytes | vs built-in | du bytes | vs built-in |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kname in ks:
        base = statistics.median(times[(kname, "untraced")])
        base_min = min(times[(kname, "untraced")])
        done0 = statistics.median(times[(kname, "untraced", "done")])
        cpu0 = statistics.median(times[(kname, "untraced", "cpu")])
        for cfg in cfgs:
            med = statistics.median(times[(kname, cfg)])
            done = statistics.median(times[(kname, cfg, "done")])
            cpu = statistics.median(times[(kname, cfg, "cpu")])
            size = sizes.get((kname, cfg))
            ref = None
            if cfg.startswith("tltrace") and size is not None:
                ref_name = "built-in html" if "html" in cfg else "built-in terminal"
                ref = sizes.get((kname, ref_name))
            cells = []
            for i in (0, 1):
                cells.append(f"{size[i]:,}" if size is not None else "-")
                cells.append(f"{size[i] / ref[i]:.2f}x" if ref else "-")
            best = min(times[(kname, cfg)]) / base_min
            lines.append(
                f"| {kname} | {cfg} | {med:.3f} | {med / base:.3f}x | {best:.3f}x | "
                f"{done:.3f} | {done / done0:.3f}x | {cpu:.3f} | {cpu / cpu0:.3f}x | "
                + " | ".join(cells)
                + " |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--gpu", action="store_true", help="compile for CUDA (examples' GPU shapes)")
    ap.add_argument("--bytes-only", action="store_true", help="measure the bytes on disk alone (no timing)")
    args = ap.parse_args()
    print(measure(args.reps, args.bytes_only))

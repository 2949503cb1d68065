"""Issue 34, round 6: what tltrace's worker pays for handing the GIL away, beside busy Python threads.

    python bench/gil_trips.py [--hogs 2] [--lowerings 3] [--kernel upstream --config ...]

One process lowers the upstream autotuner's GEMM for sm_90a (bench/capture_cost.py) with
tltrace on while HOGS threads run pure Python (an autotuner's compiling threads, lowering at
once, are such neighbours). Every native call or system call that lets the GIL go makes the
worker wait for it again, up to the switch interval (5 ms), and forces the thread that holds
it to give it up. Per lowering, the worker's main steps' wall time against their CPU time:
a step whose wall is far above its CPU is making such round trips.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ["TILELANG_DISABLE_CACHE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

STEPS = [
    ("tltrace.sourcemap.lines", "stamped_map"),
    ("tltrace.sourcemap.lines", "_tags"),
    ("tltrace.sourcemap.lines", "strip_tags"),
    ("tltrace.layouts.capture", "func_layouts"),
    # issue 51, round 5: the reads of TVM containers (the reuse rule's, the layouts', the reproducer's)
    ("tltrace.session.snapshot:TextCache", "resolve"),
    ("tltrace.sourcemap.compose:ModulePrinter", "__call__"),
    ("tltrace.layouts.recorder:LayoutsRecorder", "_look"),
    ("tltrace.rerun.capture:ReproRecorder", "_look_for_target"),
    ("tltrace.rerun.capture:ReproRecorder", "_note_frontend"),
    ("tltrace.session.capture:TraceSession", "add_record"),
    ("tltrace.session.capture:TraceSession", "_resolve"),
    ("tltrace.session.recorder:Recorders", "print"),
    ("tltrace.session.store:RunStore", "link_text"),
]


def _wrap(acc: dict[str, list[float]]) -> None:
    import importlib

    for where, name in STEPS:
        mod, _, cls = where.partition(":")
        try:  # a step that this tree does not have is left out (an older tree runs it too)
            owner: Any = importlib.import_module(mod)
            if cls:
                owner = getattr(owner, cls)
            f = getattr(owner, name)
        except (ImportError, AttributeError):
            continue
        label = f"{cls or mod.rsplit('.', 1)[1]}.{name}"

        def timed(*a: Any, _f: Any = f, _label: str = label, **k: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return _f(*a, **k)
            finally:
                x = acc[_label]
                x[0] += time.perf_counter() - t0
                x[1] += time.thread_time() - c0
                x[2] += 1

        setattr(owner, name, timed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--lowerings", type=int, default=3)
    from capture_cost import add_kernel_args, kernel_of, sm90a_lowerer

    add_kernel_args(ap)
    a = ap.parse_args()

    import tltrace

    acc: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    _wrap(acc)
    lower = sm90a_lowerer(kernel_of(a))
    stop = threading.Event()

    def hog() -> None:
        while not stop.is_set():
            pass

    with tempfile.TemporaryDirectory(prefix="tltrace-bench-trips-") as td:
        tltrace.enable(trace_dir=td, quiet=True)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                lower()  # warm-up: imports, the printer's first texts
            tltrace.flush()
            acc.clear()
            for _ in range(a.hogs):
                threading.Thread(target=hog, daemon=True).start()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                for _ in range(a.lowerings):
                    lower()
            tltrace.flush()
            wall = time.perf_counter() - t0
        finally:
            stop.set()
            tltrace.disable()
    n = a.lowerings
    print(
        f"`python bench/gil_trips.py --hogs {a.hogs} --lowerings {n}`: {wall / n * 1e3:.0f} ms a lowering\n"
    )
    print("| worker step | wall ms a lowering | CPU ms | calls |")
    print("|---|---:|---:|---:|")
    for label, (w, c, k) in sorted(acc.items(), key=lambda kv: -kv[1][0]):
        print(f"| `{label}` | {w / n * 1e3:.1f} | {c / n * 1e3:.1f} | {int(k) // n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

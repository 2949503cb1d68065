"""Per-pass capture cost on the compiling thread, and field snapshots per pass (issue 36, recorders).

    PYTHONPATH=<tree> python bench/recorder_cost.py [--reps 5]

One unit: tilelang.compile of the CPU elementwise add and gemm (target c, cython) and
tilelang.lower of the upstream autotuner's GEMM for sm_90a. Traced with records only
(--quiet), recorders as the tree registers them. Times the compiling thread's pass
callbacks (pass_started + pass_finished of tltrace's observer: wall, and the thread's own
CPU time, steadier on a shared machine) and counts the field snapshots taken
(module_head calls: a pass's input and its output are two), per pass; medians over reps.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_common import bench_settings, cpu_bench_setup  # noqa: E402

cpu_bench_setup()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    import tilelang  # noqa: F401
    from capture_cost import work_unit

    import tltrace
    from tltrace.session import controller, snapshot, tool

    try:
        from tltrace.tracing import recorders

        recorders.register_defaults()
    except ImportError:
        pass  # a tree before the recorder interface: the repro capture is built in
    heads = [0]
    modules = [snapshot]
    try:
        from tltrace.rerun import capture as rc

        if hasattr(rc, "module_head"):
            modules.append(rc)
    except ImportError:
        pass
    for m in modules:
        orig = m.module_head

        def counted(mod, _orig=orig):
            heads[0] += 1
            return _orig(mod)

        m.module_head = counted
    spent = [0.0]
    cpu = [0.0]  # the compiling thread's own CPU time (time.thread_time): steadier on a shared machine
    passes = [0]
    o_start, o_end = tool._Observer.pass_started, tool._Observer.pass_finished

    def started(self, mod, event):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return o_start(self, mod, event)
        finally:
            spent[0] += time.perf_counter() - t
            cpu[0] += time.thread_time() - c
            passes[0] += 1

    def finished(self, mod, event, state):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return o_end(self, mod, event, state)
        finally:
            spent[0] += time.perf_counter() - t
            cpu[0] += time.thread_time() - c

    tool._Observer.pass_started, tool._Observer.pass_finished = started, finished
    unit = work_unit()
    rows: dict[str, list[tuple[float, float, float, float, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps + 1):
            for name, thunk in unit:
                s = bench_settings(Path(tmp) / f"{rep}_{name}")
                spent[0], cpu[0], passes[0], heads[0] = 0.0, 0.0, 0, 0
                controller.install(s, lambda e: None)
                t0 = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    thunk()
                controller.uninstall()
                wall = time.perf_counter() - t0
                if rep:  # rep 0 warms up
                    n = max(passes[0], 1)
                    rows.setdefault(name, []).append(
                        (spent[0] / n * 1e6, cpu[0] / n * 1e6, heads[0] / n, wall, passes[0])
                    )
    print(f"tltrace {tltrace.__file__}")
    print(
        f"{'unit':8} {'passes':>6} {'us/pass wall':>13} {'us/pass cpu':>12} {'snapshots/pass':>15} {'compile s':>10}"
    )
    for name, rs in rows.items():
        print(
            f"{name:8} {rs[0][4]:>6} {statistics.median(r[0] for r in rs):13.1f} "
            f"{statistics.median(r[1] for r in rs):12.1f} {statistics.median(r[2] for r in rs):15.2f} "
            f"{statistics.median(r[3] for r in rs):10.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The facts' cost on the compiling thread, and on the worker (issue 37; docs/benchmarks.md).

    PYTHONPATH=<tree> python bench/facts_cost.py [--reps 5] [--ptxas-reps 1]

One unit, as bench/recorder_cost.py: tilelang.compile of the CPU elementwise add and gemm
(target c, cython) and tilelang.lower of the upstream autotuner's GEMM for sm_90a, traced
with records only (--quiet), the default recorders registered. Every call into the facts
recorder (facts/recorder.FactsRecorder: its own hooks and the base class's no-op ones the
capture calls per pass) is timed and booked to the thread it ran on: the compiling thread
(this one) or the worker. Then the compile's wall time with the facts recorder and without
it (unregistered), alternating, medians over reps. `--ptxas-reps N` also runs the sm_90a
unit N times with --ptxas (the nvcc build runs on the late worker; its codegen hook reads
the pass configs on the compiling thread).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_common import bench_settings, cpu_bench_setup  # noqa: E402

cpu_bench_setup()

HOOKS = ("input", "pass_started", "pass_failed", "codegen", "attach", "recorded", "ended", "value", "finish")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ptxas-reps", type=int, default=0)
    a = ap.parse_args()
    import tilelang  # noqa: F401
    from capture_cost import work_unit

    import tltrace
    from tltrace.facts.recorder import FactsRecorder
    from tltrace.session import controller
    from tltrace.session import recorder as rec_mod
    from tltrace.tracing import recorders

    main_thread = threading.get_ident()
    booked = {"compiling": 0.0, "worker": 0.0}
    calls = {"compiling": 0, "worker": 0}

    def timed(name):
        orig = getattr(FactsRecorder, name)

        def call(self, *args, **kw):
            t = time.perf_counter()
            try:
                return orig(self, *args, **kw)
            finally:
                side = "compiling" if threading.get_ident() == main_thread else "worker"
                booked[side] += time.perf_counter() - t
                calls[side] += 1

        setattr(FactsRecorder, name, call)

    for name in HOOKS:
        timed(name)
    unit = work_unit()

    def run(tmp: str, tag: str, name: str, thunk, facts: bool, ptxas: bool = False) -> float:
        recorders.register_defaults()
        if not facts:
            rec_mod.unregister("facts")
        s = bench_settings(Path(tmp) / tag, ptxas=ptxas)
        controller.install(s, lambda e: None)
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            thunk()
        wall = time.perf_counter() - t0
        controller.uninstall()  # waits for the workers (the facts, an nvcc build)
        return wall

    spent: dict[str, list[tuple[float, float, int, int]]] = {}
    walls: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps + 1):
            for name, thunk in unit:
                for facts in (True, False) if rep % 2 else (False, True):
                    for k in booked:
                        booked[k], calls[k] = 0.0, 0
                    wall = run(tmp, f"{rep}_{name}_{facts}", name, thunk, facts)
                    if not rep:
                        continue  # rep 0 warms up
                    walls.setdefault((name, facts), []).append(wall)
                    if facts:
                        spent.setdefault(name, []).append(
                            (
                                booked["compiling"] * 1e3,
                                booked["worker"] * 1e3,
                                calls["compiling"],
                                calls["worker"],
                            )
                        )
        ptx: list[tuple[float, float, int]] = []
        sm90 = dict(unit)["sm90a"]
        for rep in range(a.ptxas_reps):
            for k in booked:
                booked[k], calls[k] = 0.0, 0
            run(tmp, f"ptxas{rep}", "sm90a", sm90, True, ptxas=True)
            ptx.append((booked["compiling"] * 1e3, booked["worker"] * 1e3, calls["compiling"]))
    print(f"tltrace {tltrace.__file__}")
    print(
        f"{'unit':6} {'compiling ms':>12} {'calls':>6} {'worker ms':>10} {'calls':>6} "
        f"{'compile s, facts':>17} {'without':>8} {'ratio':>6}"
    )
    for name, rs in spent.items():
        with_f = statistics.median(walls[(name, True)])
        without = statistics.median(walls[(name, False)])
        print(
            f"{name:6} {statistics.median(r[0] for r in rs):12.3f} {rs[0][2]:>6} "
            f"{statistics.median(r[1] for r in rs):10.3f} {rs[0][3]:>6} "
            f"{with_f:17.3f} {without:8.3f} {with_f / without:6.3f}"
        )
    for c, w, n in ptx:
        print(
            f"--ptxas sm90a: compiling thread {c:.3f} ms in {n} calls; worker {w:.1f} ms (the facts and nvcc's wait)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

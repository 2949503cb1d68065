"""The garbage collector's share of one sm_90a lowering, traced or not (issue 51).

    PYTHONPATH=<tree> python bench/gc_cost.py [--mode untraced|records|html] [--lowerings 24]

One process lowers bench/capture_cost.py's GEMM for sm_90a `--lowerings` times in one
configuration (after two warm-up lowerings not counted; the worker drained after each, as
bench/lowering_cpu.py does), with a `gc.callbacks` hook timing every collection
(`time.thread_time()` on the thread that collects, start to stop) by generation. Run the
modes in alternating processes: the collector's thresholds are the interpreter's defaults and
are not touched. `--survivors` also counts, per traced lowering, the objects that a
collection of the young generations moved to the oldest (what makes full collections come
sooner), by the type of the object.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import compile_setup  # noqa: E402

compile_setup()


class _GcClock:
    """Collections and their thread CPU, by generation."""

    def __init__(self, survivors: bool) -> None:
        self.count = [0, 0, 0]
        self.ms = [0.0, 0.0, 0.0]
        self._t0 = 0.0
        self.survivors = survivors
        self.promoted: Counter[str] = Counter()
        self._old = 0

    def __call__(self, phase: str, info: dict) -> None:
        g = info["generation"]
        if phase == "start":
            if self.survivors and g == 1:
                self._old = len(gc.get_objects(2))
            self._t0 = time.thread_time()
            return
        self.count[g] += 1
        self.ms[g] += (time.thread_time() - self._t0) * 1e3
        if self.survivors and g == 1:
            # a collection of generation 1 appends its survivors to the oldest generation
            who = threading.current_thread().name[:12]
            self.promoted.update(f"{who}:{type(o).__name__}" for o in gc.get_objects(2)[self._old :])


def measure(mode: str, lowerings: int, survivors: bool) -> dict:
    from capture_cost import lower_configured, sm90a_lowerer

    lower = sm90a_lowerer()
    cfg = {"untraced": "untraced", "records": "tltrace records", "html": "tltrace html"}[mode]
    clock = _GcClock(survivors)
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-gc-") as td:
        for i in range(lowerings + 2):
            if i == 2:
                gc.callbacks.append(clock)
            lower_configured(cfg, Path(td) / str(i), lower)
        gc.callbacks.remove(clock)
    n = lowerings
    return {
        "mode": mode,
        "lowerings": n,
        "collections_per_lowering": [c / n for c in clock.count],
        "gc_ms_per_lowering": [m / n for m in clock.ms],
        "gc_ms_total_per_lowering": sum(clock.ms) / n,
        "promoted_per_lowering": sum(clock.promoted.values()) / n,
        "promoted_by_thread_type": [(k, v / n) for k, v in clock.promoted.most_common(30)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="records", choices=("untraced", "records", "html"))
    ap.add_argument("--lowerings", type=int, default=24)
    ap.add_argument("--survivors", action="store_true")
    a = ap.parse_args(argv)
    res = measure(a.mode, a.lowerings, a.survivors)
    c, ms = res["collections_per_lowering"], res["gc_ms_per_lowering"]
    print(
        f"{a.mode}: {res['lowerings']} lowerings; collections per lowering gen0 {c[0]:.2f} gen1 {c[1]:.2f} "
        f"gen2 {c[2]:.3f}; GC ms per lowering gen0 {ms[0]:.2f} gen1 {ms[1]:.2f} gen2 {ms[2]:.2f} "
        f"total {res['gc_ms_total_per_lowering']:.2f}"
    )
    if a.survivors:
        print(f"moved to the oldest generation per lowering: {res['promoted_per_lowering']:.0f}")
        print(json.dumps(res["promoted_by_thread_type"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The print row of `capture_steps.py` against its quiet-loop floor: is the gap tltrace's, or the machine's?

    PYTHONPATH=<tree> python bench/print_contention.py [--pairs 4] [--reps 5]

One traced sm_90a lowering (bench/capture_cost.py's kernel, records mode) gives the modules that
tltrace's printer printed (`lines.print_module`, wrapped here to keep them). They are then printed
again in a loop on this thread, with the same tags (`mod.script(obj_to_annotate=...)`, TVM's
printer alone, the GIL released) and whole (`lines.print_module`: the walk, the printer and the
strip), this thread's CPU (`time.thread_time`) per pass over all of them, in pairs: alone, then
beside a busy process that shares nothing with this one (another Python spinning on the other
core: no GIL, no memory in common). A printer that costs more beside it is slowed by the machine
(the cores, their caches, the host), not by the compiling thread's Python or the GIL.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ["TILELANG_DISABLE_CACHE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

SPIN = "x = 0\nwhile True:\n    x += 1\n"


def traced_modules() -> list:
    """The modules one traced sm_90a lowering printed, in order."""
    from capture_cost import traced_calls

    from tltrace.sourcemap import lines

    return traced_calls(lines, "print_module")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5, help="passes over the modules per measurement")
    a = ap.parse_args(argv)
    from tltrace.sourcemap import lines

    mods = traced_modules()
    tagged = [(m, lines._tags(m)[0]) for m in mods]
    clock = time.thread_time

    def printer() -> float:
        t0 = clock()
        for m, tags in tagged:
            m.script(obj_to_annotate=tags)
        return clock() - t0

    def whole() -> float:
        held = lines.Tags()
        t0 = clock()
        for m in mods:
            lines.print_module(m, held)
        return clock() - t0

    rows: dict[str, list[float]] = {}
    for _ in range(a.pairs):
        for beside in (False, True):
            spin = subprocess.Popen([sys.executable, "-c", SPIN]) if beside else None
            try:
                if spin is not None:
                    time.sleep(0.3)
                for name, fn in (("printer", printer), ("print_module", whole)):
                    ms = statistics.median(fn() for _ in range(a.reps)) * 1e3
                    rows.setdefault(f"{name}, {'beside a busy process' if beside else 'alone'}", []).append(
                        ms
                    )
            finally:
                if spin is not None:
                    spin.kill()
                    spin.wait()
    print(f"{len(mods)} modules, {sum(len(str(m)) for m in mods)} characters; ms per pass over all, per pair")
    print("| print | per pair (ms) | median |")
    print("|---|---|---:|")
    for name, vals in rows.items():
        print(f"| {name} | {', '.join(f'{v:.1f}' for v in vals)} | {statistics.median(vals):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

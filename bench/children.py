"""Issue 24's budget: what tracing children costs a child that never imports TileLang.

A script starts 20 child interpreters (`python -c pass`, one after the other) and
prints how long the 20 took. It runs plain (`python kids.py`) and under
`tltrace run kids.py` (children inherit the hook: tltrace's _boot dir on PYTHONPATH
and TLTRACE_CHILD), interleaved, 3 times each; the ratio of the medians is the cost.
Only the children's start-up is timed, not the parent's own `import tilelang`.
Other work on a shared machine moves those whole-script times by 2x from one run to
the next, so the section also starts children one by one from this process,
alternating the plain environment with the one `tltrace run` gives its children
(the hook on PYTHONPATH, TLTRACE_CHILD set), 40 of each: the same moment, the same
parent, only the environment differs.
Target: at most 1.3x. Run: `python bench/children.py`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HEADING = "## Children: start-up of a child that never imports TileLang"
CHILDREN = 20
REPS = 5
TARGET = 1.3

KIDS = f"""
import resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.perf_counter()
for _ in range({CHILDREN}):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
wall = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print("KIDS_SECONDS", wall, cpu)
"""


def _seconds(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Return (wall, the children's CPU seconds) of the 20 children, as the script measured them."""
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout
    line = next(ln.split() for ln in out.splitlines() if ln.startswith("KIDS_SECONDS"))
    return float(line[1]), float(line[2])


ALTERNATED = 40


def _alternated() -> tuple[float, float]:
    """Return the median start-up (s) of `python -c pass` in the plain and in the traced child environment."""
    import json
    import time

    from tltrace.config import build_settings
    from tltrace.tracing.children import child_environment

    plain = dict(os.environ)
    settings = build_settings(mode="terminal", trace_dir=tempfile.gettempdir(), script_name="kids")
    traced = {**plain, **child_environment(settings, plain)}
    json.loads(traced["TLTRACE_CHILD"])  # a real child setting, not a stand-in
    times: dict[str, list[float]] = {"plain": [], "traced": []}
    for _ in range(ALTERNATED):
        for key, env in (("plain", plain), ("traced", traced)):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            times[key].append(time.perf_counter() - t0)
    return statistics.median(times["plain"]), statistics.median(times["traced"])


def section() -> str:
    tltrace = shutil.which("tltrace")
    run = [tltrace] if tltrace else [sys.executable, "-m", "tltrace"]
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-children-") as tmp:
        where = Path(tmp)
        (where / "kids.py").write_text(KIDS)
        plain, traced = [], []
        for _ in range(REPS):
            plain.append(_seconds([sys.executable, "kids.py"], where))
            traced.append(_seconds([*run, "run", "-q", "--trace-dir", "T", "kids.py"], where))
    alt_plain, alt_traced = _alternated()
    ratio_alt = alt_traced / alt_plain
    rows = []
    for label, runs in (("plain `python kids.py`", plain), ("`tltrace run kids.py`", traced)):
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        rows.append((label, wall, cpu))
    ratio_wall = rows[1][1] / rows[0][1]
    ratio_cpu = rows[1][2] / rows[0][2]
    verdict = "within" if ratio_wall <= TARGET else "OVER"
    table = "".join(
        f"| {label} | {wall:.3f} | {1000 * wall / CHILDREN:.1f} | {cpu:.3f} |\n" for label, wall, cpu in rows
    )
    return (
        f"{HEADING}\n\n"
        f"{CHILDREN} child interpreters (`python -c pass`), median of {REPS}, interleaved:\n\n"
        f"| | wall s for {CHILDREN} | wall ms per child | children's CPU s |\n|---|---|---|---|\n"
        f"{table}\n"
        "| target | limit | measured | verdict |\n|---|---|---|---|\n"
        f"| 20 children that never import TileLang, `tltrace run` / plain (wall, median) | {TARGET}x "
        f"| {ratio_wall:.2f}x | {'ok' if ratio_wall <= TARGET else 'OVER'} |\n"
        f"| the same, the children's CPU time (median) | {TARGET}x "
        f"| {ratio_cpu:.2f}x | {'ok' if ratio_cpu <= TARGET else 'OVER'} |\n"
        f"| one child's start-up, traced / plain environment, alternated (median of {ALTERNATED}) | {TARGET}x "
        f"| {ratio_alt:.2f}x | {'ok' if ratio_alt <= TARGET else 'OVER'} |\n\n"
        f"Alternated child by child from one process: plain {1000 * alt_plain:.1f} ms, "
        f"traced environment {1000 * alt_traced:.1f} ms ({ratio_alt:.2f}x).\n"
        f"Wall ratio {ratio_wall:.2f}x ({verdict} the {TARGET}x target); CPU ratio {ratio_cpu:.2f}x "
        "(the children's own user+sys time: less sensitive to other load on the machine).\n"
        f"Runs (wall): plain {', '.join(f'{r[0]:.3f}' for r in plain)}; "
        f"traced {', '.join(f'{r[0]:.3f}' for r in traced)}.\n"
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs.\n"
    )


if __name__ == "__main__":
    print(section())

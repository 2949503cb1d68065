"""Issue 11's overhead budgets: what the pytest plugin costs when it is off.

* `pytest --co` on 50 trivial tests, with the plugin loaded (`-p tltrace.pytest_plugin`,
  no `--tltrace`) and without it (`-p no:tltrace`), interleaved, median of 9;
* which heavy modules importing the plugin pulls in (it should pull in none: no
  tilelang, torch, tltrace.session or rich).

The report's own budgets (size, open time, with the profile view) are in bench/report.py's
section. Run: `python bench/overheads.py`.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADING = "## Overheads: the pytest plugin when off"
HEAVY = ("tilelang", "torch", "tvm", "tltrace.session", "tltrace.render", "rich")
REPS = 9
TARGET_MS = 100.0


def _pytest_co(where: Path, plugin: bool) -> tuple[float, float]:
    """Return (wall seconds, CPU seconds) of one `pytest --co` with or without the plugin."""
    extra = ["-p", "tltrace.pytest_plugin"] if plugin else ["-p", "no:tltrace"]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *extra, str(where)],
        cwd=where,
        env=env,
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def section() -> str:
    if importlib.util.find_spec("tltrace.pytest_plugin") is None:
        return f"{HEADING}\n\nSkipped: no tltrace.pytest_plugin here.\n"
    probe = f"import sys, tltrace.pytest_plugin; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    heavy = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-plugin-") as tmp:
        where = Path(tmp)
        (where / "test_many.py").write_text(
            "".join(f"def test_{i}():\n    assert {i} == {i}\n\n" for i in range(50))
        )
        (where / "conftest.py").write_text("")
        _pytest_co(where, True)  # warm the file cache
        on, off = [], []
        for _ in range(REPS):
            on.append(_pytest_co(where, True))
            off.append(_pytest_co(where, False))
    w_on, w_off = (statistics.median(t[0] for t in ts) for ts in (on, off))
    c_on, c_off = (statistics.median(t[1] for t in ts) for ts in (on, off))
    extra_ms = (c_on - c_off) * 1000
    lines = [
        HEADING,
        "",
        f"`pytest --co -q` on 50 trivial tests, median of {REPS}, interleaved. CPU time (user + sys, the "
        f"steady measure on a shared machine): without the plugin {c_off * 1000:.0f} ms, with it loaded but off "
        f"{c_on * 1000:.0f} ms ({extra_ms:+.0f} ms). Wall time: {w_off * 1000:.0f} ms and {w_on * 1000:.0f} ms. "
        f"Heavy modules imported by the plugin: {', '.join(heavy) or 'none'} (checked: {', '.join(HEAVY)}).",
        "",
        "| target | limit | measured | verdict |",
        "|---|---:|---:|---|",
        f"| pytest plugin, off: extra `pytest --co` CPU time | < {TARGET_MS:.0f} ms | {extra_ms:.0f} ms | "
        f"{'ok' if extra_ms < TARGET_MS else 'OVER'} |",
        f"| pytest plugin, off: heavy imports | none | {', '.join(heavy) or 'none'} | "
        f"{'ok' if not heavy else 'OVER'} |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(section())

"""A kill -9 at random points of a traced autotune (issue 51): every reader opens what is left,
and says what was cut.

The workload is bench/autotune_cpu.py (TileLang's autotuner's shape on the CPU: one
`tilelang.compile` per config from a pool of threads, every kernel named `main`) under
`tltrace run --quiet`, into one trace dir. It is killed with SIGKILL KILLS times, each at a
seeded random moment: after the k-th compile began (the script says so, k drawn from the
configs) and a random fraction of a second more. After each kill every reader runs on what
is left: `show` (the list, the killed invocation, --json, --facts), the report of each cut
compile and the invocation's index (`show --html`), `diff-runs` between two killed
invocations and between two cut compiles, `clean --dry-run`, `export --tir`. Each exits 0 or
with its documented status and one line, never a traceback.

The oracle of what was cut is the run directory itself, not tltrace's reading of it: a run
whose final manifest was written has no `records.jsonl` left (the manifest replaces the log,
format/writer.py) and a final status; one that still has the log, has no manifest, or whose
manifest still says `running` (the first one, written as the compile began) was cut by the kill.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ._cli import cli_env
from ._readers import every_reader

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parent.parent / "bench"
CONFIGS = 4  # compiles per autotune (2 threads): a kill lands in any of them
KILLS = 3
SEED = 40  # kills after compiles 4, 1 and 2 (the last, the first, one between)

TUNE = f"""
import sys
sys.path.insert(0, {str(BENCH)!r})
import tilelang  # noqa: F401
import autotune_cpu

_make = autotune_cpu.make_kernel


def make_kernel(*args, **kwargs):  # called right before each config's tilelang.compile
    print("compile", flush=True)
    return _make(*args, **kwargs)


autotune_cpu.make_kernel = make_kernel
autotune_cpu.run({CONFIGS}, 2)
print("done", flush=True)
"""


def _kill_at(cmd: list[str], cwd: Path, nth: int, extra_s: float) -> bool:
    """Run `cmd`, SIGKILL it `extra_s` seconds after its `nth` compile began; return True if it was killed
    (False: it ended first)."""
    p = subprocess.Popen(
        cmd, cwd=cwd, env=cli_env(clean=True), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert p.stdout is not None
        seen = 0
        for line in p.stdout:
            seen += line.strip() == "compile"
            if seen >= nth:
                break
        time.sleep(extra_s)
        alive = p.poll() is None
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(60)
    return alive


def _cut_on_disk(run_dir: Path) -> bool:
    """The oracle: the kill left this run unfinished: its log not replaced by a final manifest, or its
    manifest still the first one, which says `running` (read as plain JSON)."""
    if (run_dir / "records.jsonl").exists() or not (run_dir / "manifest.json").exists():
        return True
    return json.loads((run_dir / "manifest.json").read_text()).get("status") == "running"


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> list[tuple[Path, set[str]]]:
    """Kill the traced autotune KILLS times; after each kill, run every reader (the test's checks) and
    keep (the trace dir, the run ids cut so far) for the summary."""
    work = tmp_path_factory.mktemp("killed")
    (work / "tune.py").write_text(TUNE)
    trace = work / "trace"
    rng = random.Random(SEED)
    cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", "--trace-dir", str(trace), "tune.py"]
    seen: list[tuple[Path, set[str]]] = []
    for i in range(KILLS):
        nth, extra = rng.randint(1, CONFIGS), rng.uniform(0.0, 1.5)
        was_killed = _kill_at(cmd, work, nth, extra)
        records = trace / "tune" / ".run_records"
        cut = {d.name for d in records.glob("run_*") if _cut_on_disk(d)}
        new = cut - {r for _, before in seen for r in before}
        print(
            f"kill {i + 1}: after compile {nth} + {extra:.2f} s, killed={was_killed}, runs it cut: {len(new)}"
        )
        every_reader(trace, "tune", work / f"tir{i}", cut)
        seen.append((trace, cut))
    return seen


def test_every_reader_opens_what_a_kill_9_left_and_says_what_was_cut(killed) -> None:
    cut = [c for _, c in killed]
    print(f"{len(cut)} kills; runs cut so far, after each: {[len(c) for c in cut]}")
    assert cut[-1], "no kill landed while a compile's records were being written (nothing was tested)"

"""`tltrace run --timeout S` and `bisect --timeout S`: a hang is stopped, named and recorded.

Real `tltrace run` subprocesses on the CPU (target c): a kernel whose loop never ends (the
launch holds the GIL), a script that loops in Python after its compile, and a pass that
never returns (a helper tool on TileLang's public seam sleeps inside the 5th top-level
pass). The named line is checked against the script's own source (ast: the line of the
call marked `# HANG-HERE`), the pass against what TileLang's event said, and that nothing
of the process group is left by scanning /proc for the script's path.
"""

from __future__ import annotations

import ast
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tltrace.errors import EXIT_TIMEOUT
from tltrace.format import notes
from tltrace.format.names import pass_display_name
from tltrace.history import runs

from ._records import run_dirs
from .conftest import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "hang"
FLOOR = 20  # seconds: the least timeout, whatever the calibration says


@pytest.fixture(scope="module")
def timeout_s(tmp_path_factory) -> int:
    """The `--timeout` these tests give: 5x a whole traced run of kern_hang.py with its loops cut to
    one step (import, compile, launch, exit) on this machine now, at least FLOOR. A hang must be
    reached well inside it (a run stopped early would fail the tests), and every test waits it out
    in full: a fixed 60 s cost CI over 3 minutes on an idle machine."""
    tmp = tmp_path_factory.mktemp("calibrate")
    script = tmp / "quick.py"
    script.write_text((DATA / "kern_hang.py").read_text().replace("1 << 30", "1"))
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "NO_COLOR": "1"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "tr", str(script)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0 and "never" in p.stdout, (p.returncode, p.stderr[-3000:])
    return max(FLOOR, math.ceil(5 * (time.monotonic() - t0)))


def _hang_line(script: Path) -> int:
    """The line of the call marked `# HANG-HERE`, read from the source with ast (the call, not the comment)."""
    src = script.read_text()
    marked = next(i for i, t in enumerate(src.splitlines(), 1) if "# HANG-HERE" in t)
    calls = [n.lineno for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call) and n.lineno == marked]
    assert calls, marked
    return calls[0]


def _alive(script: Path) -> list[int]:
    """Pids whose command line names `script` (the traced child, or anything of its group)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(script).encode() in cmd and state != "Z":
            out.append(int(d.name))
    return out


def _run(
    tmp: Path, name: str, timeout: int, *args: str, cmd: str = "run"
) -> tuple[subprocess.CompletedProcess, Path]:
    script = tmp / name
    script.write_text((DATA / name).read_text())
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "NO_COLOR": "1"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONFAULTHANDLER", None)
    flags = ["--timeout", str(timeout)] if cmd == "run" else ["--timeout", str(timeout), "--no-repro"]
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", cmd, *(["-q"] if cmd == "run" else []), *flags]
        + ["--trace-dir", "tr", str(script), *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    return p, script


@pytest.mark.slow
def test_a_hung_kernel_launch_is_named_stopped_and_leaves_nothing(tmp_path, timeout_s):
    p, script = _run(tmp_path, "kern_hang.py", timeout_s)
    assert p.returncode == EXIT_TIMEOUT, (p.returncode, p.stderr[-3000:])
    assert "never" not in p.stdout
    line = _hang_line(script)
    m = re.search(r"^tltrace: timed out after (\S+) s (.*), called from kern_hang\.py:(\d+);", p.stderr, re.M)
    assert m, p.stderr[-3000:]
    assert int(m.group(3)) == line
    assert m.group(2).startswith("inside a launch of main (tilelang/jit/adapter/"), m.group(2)
    assert _alive(script) == []
    stacks = tmp_path / "tr" / "kern_hang" / "timeout-stacks.txt"
    assert f'File "{script}", line {line} in <module>' in stacks.read_text()


@pytest.mark.slow
def test_a_script_hung_in_python_after_its_compile_is_named(tmp_path, timeout_s):
    p, script = _run(tmp_path, "py_hang.py", timeout_s)
    assert p.returncode == EXIT_TIMEOUT, (p.returncode, p.stderr[-3000:])
    m = re.search(
        r"^tltrace: timed out after \S+ s in the script, called from py_hang\.py:(\d+);", p.stderr, re.M
    )
    assert m, p.stderr[-3000:]
    assert int(m.group(1)) == _hang_line(script)
    assert _alive(script) == []
    (run,) = run_dirs(tmp_path / "tr" / "py_hang")  # the compile had ended: its records are whole
    assert runs.load_manifest(run).status == "complete"


@pytest.mark.slow
def test_a_pass_that_never_returns_is_recorded_on_its_compile(tmp_path, timeout_s):
    p, script = _run(tmp_path, "pass_hang.py", timeout_s, str(EXAMPLES))
    assert p.returncode == EXIT_TIMEOUT, (p.returncode, p.stderr[-3000:])
    hung = re.search(r"^hanging in (\d+) (\S+)$", p.stdout, re.M)
    assert hung, p.stdout
    index, name = int(hung.group(1)), hung.group(2)
    line = _hang_line(script)
    (run,) = run_dirs(tmp_path / "tr" / "pass_hang")
    manifest = runs.load_manifest(run)
    assert manifest.status == "interrupted"
    expected = f"timed out after {timeout_s} s inside pass {index} ({pass_display_name(name)}), called from pass_hang.py:{line}"
    assert manifest.error is not None and manifest.error.startswith(expected), manifest.error
    assert expected in p.stderr
    assert _alive(script) == []
    shown = subprocess.run(
        [sys.executable, "-m", "tltrace", "show", "tr/pass_hang", "-1", "add"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert f"error: {expected}" in shown.stdout, (shown.stdout[-2000:], shown.stderr[-2000:])


def test_the_timedout_note_reads_back(tmp_path):
    (tmp_path / notes.INFLIGHT).write_bytes(notes.inflight_line("in", "tl.Simplify", 3, "pipeline_c"))
    assert notes.note_of(tmp_path) is not None and "timed out" not in notes.note_of(tmp_path)
    (tmp_path / notes.TIMEDOUT).write_text('{"seconds": 2.5, "file": "/x/s.py", "line": 7}\n')
    assert notes.note_of(tmp_path) == "timed out after 2.5 s inside pass 3 (Simplify), called from s.py:7"
    (tmp_path / notes.TIMEDOUT).write_text('{"seconds": "x"}')
    assert "timed out" not in (notes.note_of(tmp_path) or "")


@pytest.mark.slow
def test_bisect_counts_a_hung_step_and_finishes(tmp_path, timeout_s):
    p, script = _run(tmp_path, "kern_hang.py", timeout_s, cmd="bisect")
    steps = re.findall(r"^bisect: step \d+ .*$", p.stderr, re.M)
    assert steps, p.stderr[-3000:]
    first = steps[0]
    assert " wrong (timed out after " in first and f"called from kern_hang.py:{_hang_line(script)}" in first
    assert p.returncode in (0, 1), (p.returncode, p.stderr[-3000:])  # an answer, not a hang or a crash
    assert _alive(script) == []

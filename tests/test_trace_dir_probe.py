"""`tltrace run`'s probe of the trace dir (runner.check_trace_dir) beside other runs starting at once.

CI's stop 46 lost a run's records: three `tltrace run`s into one new trace dir, and one ran
untraced ("cannot write to trace dir ... No such file or directory"): another run's probe had
removed the trace dir it had just made, empty for an instant, between this run's making of it
and of its script directory. The probe now removes no directory. (Removing only its own empty
script dir was not enough: two runs of one script, and mkdir's "File exists" for a directory
gone between its two looks; the test below caught that one in CI.)
"""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tltrace.config import build_settings
from tltrace.runner import check_trace_dir


def _probe(trace_dir: str, name: str, barrier, results) -> None:  # noqa: ANN001
    s = build_settings(mode="terminal", trace_dir=trace_dir, script_name=name)
    barrier.wait()
    results.put(check_trace_dir(s) or "")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork start method")
def test_runs_starting_together_in_a_new_trace_dir_all_trace(tmp_path: Path) -> None:
    """Six probes at once, forty times over (before the fix, about one round in 25 failed one)."""
    ctx = mp.get_context("fork")
    failed = []
    for i in range(40):
        td = str(tmp_path / f"r{i}" / "traces")
        barrier, results = ctx.Barrier(6), ctx.Queue()
        procs = [ctx.Process(target=_probe, args=(td, f"s{k % 4}", barrier, results)) for k in range(6)]
        for p in procs:
            p.start()
        said = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(60)
        failed += [s for s in said if s]
    assert failed == []


def test_the_probe_removes_no_directory_and_leaves_no_file(tmp_path: Path) -> None:
    td = tmp_path / "a" / "traces"
    s = build_settings(mode="terminal", trace_dir=td, script_name="k")
    assert check_trace_dir(s) is None
    assert [p.name for p in td.iterdir()] == ["k"] and list((td / "k").iterdir()) == []
    (td / "k" / "mine.txt").write_text("x")
    assert check_trace_dir(s) is None
    assert sorted(p.name for p in (td / "k").iterdir()) == ["mine.txt"]  # kept whole, no probe left
    assert (td / "k" / "mine.txt").read_text() == "x"


def test_a_trace_dir_that_cannot_be_made_is_said_once_without_retrying(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    s = build_settings(mode="terminal", trace_dir=tmp_path / "file" / "traces", script_name="k")
    reason = check_trace_dir(s)
    assert reason and "cannot write to trace dir" in reason and "running untraced" in reason
    assert (tmp_path / "file").read_text() == "not a directory"


def test_a_probe_killed_before_removing_its_file_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    """A kill between the probe's write and its unlink leaves `.tltrace-probe-PID`; the next run's
    probe removes it once that process is gone, and leaves a live run's and a look-alike link."""
    td = tmp_path / "traces"
    s = build_settings(mode="terminal", trace_dir=td, script_name="k")
    d = td / "k"
    d.mkdir(parents=True)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = d / f".tltrace-probe-{int(gone.stdout)}"
    dead.write_text("")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        alive = d / f".tltrace-probe-{live.pid}"
        alive.write_text("")
        link = d / ".tltrace-probe-999999999"  # no such process: only its being a link keeps it
        link.symlink_to(tmp_path / "elsewhere")
        assert check_trace_dir(s) is None
        assert not dead.exists() and alive.exists() and link.is_symlink()
    finally:
        live.kill()
        live.wait()


def test_a_trace_dir_that_is_a_file_is_said_before_any_probe(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    s = build_settings(mode="terminal", trace_dir=tmp_path / "file", script_name="k")
    reason = check_trace_dir(s)
    assert (
        reason
        == f"cannot write to trace dir {tmp_path / 'file'} (it is a file, not a directory); running untraced"
    )
    assert (tmp_path / "file").read_text() == "not a directory"


def test_a_linked_script_dir_is_refused_up_front_and_a_linked_trace_dir_is_used(tmp_path: Path) -> None:
    """The store never writes through a linked script dir (each compile was refused, and the run
    ended on "compiled no kernel"); the probe says so before the script runs."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    td = tmp_path / "traces"
    td.mkdir()
    (td / "k").symlink_to(elsewhere, target_is_directory=True)
    s = build_settings(mode="terminal", trace_dir=td, script_name="k")
    reason = check_trace_dir(s)
    assert reason is not None and "is a symbolic link" in reason and str(td / "k") in reason, reason
    assert list(elsewhere.iterdir()) == []  # no probe written through the link
    linked = tmp_path / "linked"
    linked.symlink_to(elsewhere, target_is_directory=True)
    assert check_trace_dir(build_settings(mode="terminal", trace_dir=linked, script_name="k")) is None
    assert [p.name for p in elsewhere.iterdir()] == ["k"]

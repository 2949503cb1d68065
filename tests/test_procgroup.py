"""Every child tltrace starts dies with it: SIGINT, SIGTERM, SIGHUP and an exception take its group down.

Real processes: a real `tltrace bisect`, `watch` and `run` whose script starts a
long-sleeping grandchild gets a real signal; the oracle is /proc, read by the test: every
descendant of the tltrace process, listed before the signal, is gone (or a zombie, which
runs nothing) after it, and the exit status is the one a shell gives for that signal.
Every wait is bounded; whatever a failing test finds alive, it kills.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# A script whose process starts a grandchild that sleeps, then sleeps itself; `tltrace run`
# gets the variant that waits on its child with subprocess.run (its own children are the
# script's business: Python's unwinding, which tltrace run now starts on SIGTERM and SIGHUP,
# kills them).
SPAWN = textwrap.dedent(
    """
    import subprocess, sys, time
    child = [sys.executable, "-c", "import time; time.sleep(600)"]
    if sys.argv[1:] == ["wait"]:
        open("started", "w").write("x")
        subprocess.run(child)
    else:
        p = subprocess.Popen(child)
        open("started", "w").write(str(p.pid))
        time.sleep(600)
    """
)

EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def _procs() -> dict[int, tuple[int, str]]:
    """Return pid -> (parent pid, state) for every process, read from /proc."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[int(d)] = (int(fields[1]), fields[0])
    return out


def _descendants(pid: int) -> set[int]:
    procs, found = _procs(), {pid}
    grew = True
    while grew:
        grew = False
        for p, (parent, _state) in procs.items():
            if parent in found and p not in found:
                found.add(p)
                grew = True
    return found - {pid}


def _running(pids: set[int]) -> set[int]:
    procs = _procs()
    return {p for p in pids if p in procs and procs[p][1] != "Z"}


def _kill_all(pids: set[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def _signal_and_check(cmd: list[str], cwd: Path, sig: int, want: int) -> tuple[int, str]:
    """Start `cmd`, wait for its script's grandchild, send `sig`; return (exit status, output); assert
    that every process it had started is gone."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    log = cwd / "out.txt"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            seen = _descendants(proc.pid)
            if (cwd / "started").exists() and len(seen) >= want and proc.poll() is None:
                break
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        else:
            pytest.fail(f"the script's grandchild never started: {log.read_text()}")
        time.sleep(0.3)
        seen = _descendants(proc.pid)  # the script's grandchild among them
        assert len(seen) >= want
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        deadline = time.monotonic() + 10  # a dead grandchild's reparenting and reaping
        while _running(seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _running(seen)
        assert not left, f"still running after {signal.Signals(sig).name}: {left}\n{log.read_text()}"
        return code, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_all(_running(seen))


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


@pytest.mark.compile  # its step traces the script under `tltrace run`
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_bisect_takes_the_steps_process_group_down(tmp_path: Path, sig: int) -> None:
    (tmp_path / "spawn.py").write_text(SPAWN)
    cmd = [sys.executable, "-m", "tltrace", "bisect", "--trace-dir", "tr", "spawn.py"]
    # The step's `tltrace run`, the script's grandchild: two processes below bisect.
    code, out = _signal_and_check(cmd, tmp_path, sig, 2)
    assert code == EXIT[sig], out


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_watch_takes_the_runs_process_group_down(tmp_path: Path, sig: int) -> None:
    (tmp_path / "spawn.py").write_text(SPAWN)
    cmd = [sys.executable, "-m", "tltrace", "watch", "--mode", "terminal", "--trace-dir", "tr", "spawn.py"]
    code, out = _signal_and_check(cmd, tmp_path, sig, 2)
    assert code == (0 if sig == signal.SIGINT else EXIT[sig]), out  # Ctrl+C is how a watch ends
    assert "tltrace watch: stopped" in out


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_run_unwinds_the_script_and_records_it_interrupted(tmp_path: Path, sig: int) -> None:
    (tmp_path / "spawn.py").write_text(SPAWN)
    cmd = [sys.executable, "-m", "tltrace", "run", "--trace-dir", "tr", "spawn.py", "wait"]
    code, out = _signal_and_check(cmd, tmp_path, sig, 1)
    assert code == EXIT[sig], out
    assert "interrupted before any compile" in out
    assert "Traceback" not in out


# -- the helper itself (no tltrace command): an exception, a timeout, a signal while a worker thread waits --

HELPER = textwrap.dedent(
    """
    import os, sys, subprocess, threading, time
    sys.path.insert(0, {root!r})
    from tltrace.proc import group as procgroup

    what = sys.argv[1]
    # A shell whose own child (the grandchild) sleeps and holds the pipes.
    argv = ["sh", "-c", "sleep 600 & echo $! > grandchild; sleep 600"]
    if what == "exception":
        with procgroup.started(argv):
            while not (os.path.exists("grandchild") and open("grandchild").read().strip()):
                time.sleep(0.05)  # its pid written, not only the file made
            raise ValueError("boom")
    elif what == "timeout":
        try:
            procgroup.run(argv, capture_output=True, timeout=1)
        except subprocess.TimeoutExpired:
            print("timed out")
    elif what == "library":  # the Python API in a script: ptxas in the main thread, no handler around
        procgroup.run(argv)
    elif what == "thread":
        t = threading.Thread(target=procgroup.run, args=(argv,), kwargs=dict(capture_output=True), daemon=True)
        t.start()
        with procgroup.on_signals():
            time.sleep(600)
    """
)


def _grandchild(tmp_path: Path) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = (tmp_path / "grandchild").read_text().strip() if (tmp_path / "grandchild").exists() else ""
        if text:
            return int(text)
        time.sleep(0.05)
    pytest.fail("the grandchild never started")


def _helper(tmp_path: Path, what: str) -> subprocess.Popen:
    root = str(Path(__file__).resolve().parent.parent)
    (tmp_path / "helper.py").write_text(HELPER.format(root=root))
    return subprocess.Popen(
        [sys.executable, "helper.py", what],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.parametrize("what", ["exception", "timeout"])
def test_an_exception_or_a_timeout_takes_the_grandchild_down(tmp_path: Path, what: str) -> None:
    """subprocess.run's timeout kills the child only, and then waits on the pipes its grandchild holds:
    the helper kills the group, and returns."""
    proc = _helper(tmp_path, what)
    gc = None
    try:
        gc = _grandchild(tmp_path)
        out, err = proc.communicate(timeout=60)
        assert not _running({gc}), err
        if what == "exception":
            assert proc.returncode == 1 and "ValueError: boom" in err
        else:
            assert proc.returncode == 0 and out.strip() == "timed out", err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if gc is not None:
            _kill_all(_running({gc}))


def _sigterm_the_helper(tmp_path: Path, what: str) -> tuple[subprocess.Popen, str]:
    """Start the helper doing `what`, SIGTERM it once its grandchild runs, and assert that every process
    it had started is gone; return (the ended helper, its stderr)."""
    proc = _helper(tmp_path, what)
    gc = None
    try:
        gc = _grandchild(tmp_path)
        seen = _descendants(proc.pid)
        assert gc in seen
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
        deadline = time.monotonic() + 10  # a dead grandchild's reparenting and reaping
        while _running(seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(seen)
        return proc, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_all(_running(_descendants(proc.pid) | ({gc} if gc else set())))


def test_sigterm_reaches_a_group_a_worker_thread_started(tmp_path: Path) -> None:
    proc, _err = _sigterm_the_helper(tmp_path, "thread")
    assert proc.returncode == 1  # Terminated unwound the main thread (the helper has no CLI to map it)


def test_sigterm_during_a_library_call_kills_the_group_then_the_process_as_sigterm_does(
    tmp_path: Path,
) -> None:
    """No tltrace command around (the Python API in a script): the group goes down, then the process dies
    of SIGTERM's default action, as it would have without tltrace (no Terminated traceback, no exit 1)."""
    proc, err = _sigterm_the_helper(tmp_path, "library")
    assert proc.returncode == -signal.SIGTERM, err
    assert "Traceback" not in err


def test_the_documented_exit_codes_are_what_a_shell_reports_for_the_signals() -> None:
    from tltrace import errors
    from tltrace.proc import group as procgroup

    # POSIX sh: a command killed by signal N exits with 128+N, as the shell reports it
    for sig, documented in [
        (signal.SIGINT, errors.EXIT_INTERRUPTED),
        (signal.SIGTERM, errors.EXIT_TERMINATED),
        (signal.SIGHUP, errors.EXIT_HANGUP),
    ]:
        said = subprocess.run(
            ["sh", "-c", f'sh -c "kill -{int(sig)} \\$\\$"; echo $?'], capture_output=True, text=True
        ).stdout
        assert int(said) == procgroup.exit_code(sig) == documented == EXIT[sig]

"""`tltrace watch`: a save triggers one rerun; a broken edit shows the compiler's error and the watch goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from tltrace.reconcile.watch import OutputLine, RunDone, RunStarting, Watching, WatchSpec, watch_runs

from ._kernels import swap_op


def _until_done(events, number):
    """Consume events up to RunDone(number); return (starting, lines, done)."""
    start, lines = None, []
    for ev in events:
        if isinstance(ev, RunStarting):
            assert ev.number == number, f"unexpected run {ev.number} ({ev.changed})"
            start = ev
        elif isinstance(ev, OutputLine):
            lines.append(ev.text)
        elif isinstance(ev, RunDone):
            assert ev.number == number
            return start, "\n".join(lines), ev
        elif isinstance(ev, Watching):
            continue
    raise AssertionError(f"watch ended before run {number}")


def test_watch_reruns_on_save(examples_dir, tmp_path):
    script = examples_dir / "elementwise_add.py"
    spec = WatchSpec(script, (), trace_dir=tmp_path / "traces")
    events = watch_runs(spec, debounce_ms=150, max_runs=3)
    working = tmp_path / "traces" / "elementwise_add" / "codegen_device.cpp"

    _, out, done = _until_done(events, 1)
    assert done.exit_code == 0, out
    good = working.read_text()

    working.write_text(good + "this is not C;\n")  # a broken edit
    start, out, done = _until_done(events, 2)
    assert start.changed == (working,)
    assert done.exit_code != 0
    assert done.tags == ("add: PATCHED",)  # read from the run's records, not scraped from its output
    assert "error" in out.lower()  # the C compiler's message reaches the user
    # ... and its errors come again under the run's line, read from the records, at the file's line
    n = len(good.splitlines()) + 1
    assert done.errors[0].startswith("add: build failed (g++, "), done.errors
    assert any(e.strip().startswith(f"{working}:{n}:") and ": error: " in e for e in done.errors[1:]), (
        done.errors
    )

    working.write_text(swap_op(good, "-"))
    start, out, done = _until_done(events, 3)
    assert start.changed == (working,)  # exactly one rerun per save: run 3 is this save's
    assert "WRONG RESULT" in out  # the edit changed the numbers
    assert done.tags == ("add: PATCHED",)
    assert list(events) == []  # --max-runs ends the watch


def _script(tmp_path: Path) -> Path:
    p = tmp_path / "hello.py"
    p.write_text(
        textwrap.dedent("""
        import sys
        print("hello", sys.argv[1:], flush=True)
    """)
    )
    return p


def test_watch_cli_subprocess_max_runs(tmp_path):
    p = _script(tmp_path)
    r = subprocess.run(
        ["tltrace", "watch", "--max-runs", "1", str(p), "x"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "run 1 (first run)" in r.stdout and "hello ['x']" in r.stdout and "run 1: ok" in r.stdout


def test_watch_ctrl_c_exits_zero(tmp_path):
    p = _script(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tltrace", "watch", str(p)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("watching "):
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_watch_cli_errors(run_cli, tmp_path):
    r = run_cli("watch", tmp_path / "missing.py")
    assert r.exit_code == 2 and r.stderr.startswith("tltrace: error: no such script")
    r = run_cli("watch", "--mode", "off", _script(tmp_path))
    assert r.exit_code == 2


def test_watch_command_line(tmp_path):
    spec = WatchSpec(Path("k.py"), ("--n", "4"), trace_dir=tmp_path, codegen_output=tmp_path / "k.cpp")
    cmd = spec.command()
    assert cmd[1:5] == ["-m", "tltrace", "run", "--mode"] and cmd[5] == "both"
    assert cmd[-3:] == ["k.py", "--n", "4"] and str(tmp_path / "k.cpp") in cmd
    assert os.path.isabs(cmd[cmd.index("--trace-dir") + 1])


def test_watch_line_shows_tags_without_markup(monkeypatch, run_cli, tmp_path):
    import tltrace.reconcile.watch as W

    p = _script(tmp_path)

    def fake_runs(spec, **kw):
        yield RunStarting(1, ())
        yield RunDone(1, 0, ("add: PATCHED", "[x] odd: CONFLICT"))

    monkeypatch.setattr(W, "watch_runs", fake_runs)
    r = run_cli("watch", p)
    assert "── run 1: ok (add: PATCHED, [x] odd: CONFLICT) ──" in r.stdout
    assert "[[" not in r.stdout


def test_watch_prints_a_failed_builds_errors_under_the_runs_line(monkeypatch, run_cli, tmp_path):
    import tltrace.reconcile.watch as W

    p = _script(tmp_path)
    errors = ("add: build failed (g++, 1 error)", "  /w/codegen_device.cpp:14:99: error: expected ')'")

    def fake_runs(spec, **kw):
        yield RunStarting(1, ())
        yield OutputLine(1, "g++ said it here, far above")
        yield RunDone(1, 1, ("add: PATCHED",), None, errors)

    monkeypatch.setattr(W, "watch_runs", fake_runs)
    out = run_cli("watch", p).stdout.splitlines()
    at = out.index("── run 1: exit 1 (add: PATCHED) ──")
    assert out[at + 1 : at + 3] == list(errors)


def test_watch_refuses_a_codegen_output_it_did_not_write(run_cli, tmp_path):
    p = _script(tmp_path)
    r = run_cli("watch", "--codegen-output", p, p)
    assert r.exit_code == 2 and "did not write" in r.stderr
    assert 'print("hello"' in p.read_text()


WAITING = textwrap.dedent("""
    import sys, time
    from pathlib import Path

    flag = Path(sys.argv[1])
    {compile}
    print("waiting", flush=True)
    for _ in range(600):
        if flag.exists():
            break
        time.sleep(0.05)
    flag.unlink(missing_ok=True)
    print("done", flush=True)
""")


def _deadline(seconds: float) -> threading.Event:
    """A stop event set after `seconds`: a missed rerun ends the watch (the test fails) instead of hanging."""
    ev = threading.Event()
    t = threading.Timer(seconds, ev.set)
    t.daemon = True
    t.start()
    return ev


def _save_mid_run(events, number, save):
    """Consume run `number`; when it prints "waiting", call save() (a save while it runs)."""
    for ev in events:
        if isinstance(ev, OutputLine) and ev.number == number and ev.text == "waiting":
            save()
        elif isinstance(ev, RunDone):
            assert ev.number == number
            return ev
    raise AssertionError("watch ended")


def test_a_script_saved_while_it_runs_leads_to_a_run(tmp_path):
    script = tmp_path / "slow.py"
    flag = tmp_path / "go"
    script.write_text(WAITING.format(compile=""))
    spec = WatchSpec(script, (str(flag),), trace_dir=tmp_path / "traces")
    events = watch_runs(spec, debounce_ms=100, max_runs=2, stop_event=_deadline(240))

    def save():
        script.write_text(WAITING.format(compile="print('second version', flush=True)"))
        flag.touch()

    _save_mid_run(events, 1, save)
    flag.touch()
    start, out, done = _until_done(events, 2)  # the snapshot predates the run: the save counts
    assert start.changed == (script.absolute(),)
    assert "second version" in out


def test_a_working_file_saved_while_its_run_goes_on_leads_to_a_run(examples_dir, tmp_path):
    """The kernel compiled (and its file was created) in run 1; the edit saved before run 1 ended runs in run 2."""
    script = tmp_path / "k.py"
    flag = tmp_path / "go"
    compile_ = (
        f"sys.path.insert(0, {str(examples_dir)!r}); import elementwise_add as e; e.main(['--n', '256'])"
    )
    script.write_text(WAITING.format(compile=compile_))
    spec = WatchSpec(script, (str(flag),), trace_dir=tmp_path / "traces")
    working = tmp_path / "traces" / "k" / "codegen_device.cpp"
    events = watch_runs(spec, debounce_ms=100, max_runs=2, stop_event=_deadline(400))

    def save():
        working.write_text(swap_op(working.read_text(), "-"))
        flag.touch()

    first = _save_mid_run(events, 1, save)
    assert first.exit_code == 0
    flag.touch()
    start, out, done = _until_done(events, 2)
    assert start.changed == (working,)
    assert done.tags == ("add: PATCHED",) and "WRONG RESULT" in out


def test_watch_sigterm_ends_the_run_going_on(tmp_path):
    """SIGTERM to the watch stops the run in progress too (it is not left running on its own)."""
    p = tmp_path / "sleepy.py"
    p.write_text("import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tltrace", "watch", "--mode", "terminal", str(p)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("pid "):
                child = int(line.split()[1])
                break
        assert child is not None
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143
    stat = Path(f"/proc/{child}/stat")
    for _ in range(100):  # the run's process was terminated and reaped by the watch
        if not stat.exists():
            break
        time.sleep(0.1)
    try:
        alive = stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        alive = False
    if alive:
        os.kill(child, signal.SIGKILL)  # (the test's own child: never left behind)
    assert not alive

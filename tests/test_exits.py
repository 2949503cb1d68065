"""Every way a traced process ends after a compile keeps the compile's records (session/exits.py).

A compile returns before its worker has written its records. Each test here ends a real
process right after real TileLang CPU compiles, in one way: `os._exit`, a `multiprocessing`
child started with `fork` (its Popen ends it with `os._exit`; a pool's `terminate()` with
SIGTERM), `os.fork()` children ending in `os._exit`, a signal handler calling `os._exit`,
`sys.exit` in a thread. Each compile is then checked against TileLang's own word: the
process wrote the kernel source `get_kernel_source()` gave it (and the kernel ran), and the
run of that process must be complete, every record with its texts, its facts, and its
generated code equal to that source. Each way is tried several times: the race lost 2 of
3 compiles before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tltrace.format.records import COMPLETE, EXITED, EXITED_NOTE, INTERRUPTED
from tltrace.format.writer import pid_of
from tltrace.history.runs import load_manifest, run_dirs, text_of

from ._cli import cli_env, cli_proc
from ._kernels import KERNELS
from ._schema import validator

REPO = Path(__file__).resolve().parent.parent

# Compiles the add kernel at size n, runs it, and leaves TileLang's own source of it beside
# the script, named by the process: the oracle of the run that process recorded.
KERN = (
    KERNELS
    + """

import os
import torch  # imported before the compile: nothing slow between its return and the exit


def compile_and_note(n):
    k = build(n)
    a, b, c = torch.ones(n), torch.full((n,), 2.0), torch.empty(n)
    k(a, b, c)
    assert float(c[0]) == 3.0
    with open(f"src_{os.getpid()}_{n}.c", "w") as fh:
        fh.write(k.get_kernel_source())
"""
)


def _env(**extra: str) -> dict[str, str]:
    return cli_env(clean=True, **extra)


def _traced(tmp_path: Path, name: str, body: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "kern.py").write_text(KERN)
    (tmp_path / name).write_text(textwrap.dedent(body))
    return cli_proc("run", "-q", "--trace-dir", "T", name, *args, cwd=tmp_path, env=_env(**env), timeout=300)


def _three_times_complete(tmp_path: Path, name: str, body: str, rc: int) -> None:
    """Three traced runs of `body` as `name`, each exiting `rc`: every compile each one noted is complete."""
    for attempt in range(3):
        (tmp_path / str(attempt)).mkdir()
        r = _traced(tmp_path / str(attempt), name, body)
        assert r.returncode == rc, r.stderr[-3000:]
        _check_every_compile_complete(tmp_path / str(attempt), name.removesuffix(".py"), 2)


def _generated(d: Path, m) -> list[str]:
    return [(text_of(d, r, "after") or "").strip() for r in m.records if r.status == "codegen"]


def _check_every_compile_complete(tmp_path: Path, script: str, expect: int) -> None:
    """Each source a process noted is the generated code of one run of that process, and that
    run is complete: every record with its texts, and its facts."""
    noted = sorted(tmp_path.glob("src_*.c"))
    assert len(noted) == expect, [p.name for p in noted]
    by_pid: dict[int, list] = {}
    for d in run_dirs(tmp_path / "T" / script):
        m = load_manifest(d, derive=True)  # facts of a quiet run are derived when read (history/derived)
        by_pid.setdefault(pid_of(m) or -1, []).append((d, m))
    for src in noted:
        pid = int(src.stem.split("_")[1])
        theirs = by_pid.get(pid, [])
        assert len(theirs) == len(list(tmp_path.glob(f"src_{pid}_*.c"))), [
            (m.status, m.error) for _, m in theirs
        ]
        source = src.read_text().strip()
        mine = [(d, m) for d, m in theirs if source in _generated(d, m)]
        assert len(mine) == 1, (src.name, [(m.status, len(m.records), m.error) for _, m in theirs])
        d, m = mine[0]
        assert m.status == COMPLETE, (src.name, m.status, m.error, len(m.records))
        assert [r.index for r in m.records] == list(range(len(m.records)))
        assert all(text_of(d, r, "after") is not None for r in m.records)
        assert m.facts, src.name  # computed from the whole run as it ended


def test_os_exit_right_after_a_compile_keeps_its_records(tmp_path: Path) -> None:
    body = """
    import os
    from kern import compile_and_note
    compile_and_note(64)
    compile_and_note(128)  # the worker is still behind on the first
    os._exit(0)
    """
    _three_times_complete(tmp_path, "quit.py", body, 0)


def test_a_signal_handler_that_calls_os_exit_keeps_the_records(tmp_path: Path) -> None:
    body = """
    import os, signal, time
    from kern import compile_and_note
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(7))
    compile_and_note(64)
    compile_and_note(128)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)
    """
    _three_times_complete(tmp_path, "sig.py", body, 7)


def test_multiprocessing_fork_children_keep_their_records(tmp_path: Path) -> None:
    """Process children end in os._exit; a pool's workers are ended by terminate()'s SIGTERM."""
    r = _traced(
        tmp_path,
        "mpfork.py",
        """
        import multiprocessing as mp
        from kern import compile_and_note

        if __name__ == "__main__":
            ctx = mp.get_context("fork")
            for n in (64, 128, 192):
                p = ctx.Process(target=compile_and_note, args=(n,))
                p.start()
                p.join()
                assert p.exitcode == 0, p.exitcode
            with ctx.Pool(2) as pool:  # __exit__ terminates the workers: SIGTERM
                pool.map(compile_and_note, [256, 320])
        """,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    _check_every_compile_complete(tmp_path, "mpfork", 5)


def test_os_fork_children_that_end_in_os_exit_keep_their_records(tmp_path: Path) -> None:
    r = _traced(
        tmp_path,
        "forks.py",
        """
        import os
        from kern import compile_and_note

        compile_and_note(64)  # the parent's own compile: its records go on being written
        for n in (128, 192, 256, 320):
            pid = os.fork()
            if pid == 0:
                compile_and_note(n)
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            assert status == 0, status
        """,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    _check_every_compile_complete(tmp_path, "forks", 5)


def test_sys_exit_in_a_thread_after_a_compile_keeps_the_records(tmp_path: Path) -> None:
    r = _traced(
        tmp_path,
        "thread.py",
        """
        import sys, threading
        from kern import compile_and_note

        def work(n):
            compile_and_note(n)
            sys.exit(3)  # ends this thread only

        threads = [threading.Thread(target=work, args=(n,)) for n in (64,)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        """,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    _check_every_compile_complete(tmp_path, "thread", 1)


BOUND = """
import os, sys, time
from tltrace.config import build_settings
from tltrace.session.events import PassRecorded
from tltrace.session.controller import set_up_tilelang
from tltrace.tracing.lifecycle import Lifecycle

def slow(event):
    # A listener that cannot keep up: the worker stops at the compile's sixth pass.
    if isinstance(event, PassRecorded) and event.record.index == 5:
        time.sleep(120)

set_up_tilelang()
settings = build_settings(mode="terminal", trace_dir="T", script_name="bound", quiet=True)
life = Lifecycle(settings, [slow]).open()
life.install()
from kern import compile_and_note
compile_and_note(64)
if sys.argv[1:] == ["kill"]:
    os.kill(os.getpid(), 9)
os._exit(0)
"""


@pytest.mark.parametrize("how", ["os._exit", "kill"])
def test_an_exit_that_cannot_wait_for_the_records_says_so_and_not_interrupted(
    tmp_path: Path, how: str
) -> None:
    """The drain is bounded (TLTRACE_EXIT_WAIT): past it the process exits, and its compile,
    which had returned, reads as exited before its records were written, never interrupted;
    so does one whose process a kill -9 ended after the compile returned."""
    (tmp_path / "kern.py").write_text(KERN)
    (tmp_path / "bound.py").write_text(BOUND)
    r = subprocess.run(
        [sys.executable, "bound.py", how],
        cwd=tmp_path,
        env=_env(TLTRACE_EXIT_WAIT="1"),
        capture_output=True,
        text=True,
        timeout=90,  # the listener sleeps 120 s: an exit that waited for it would time out here
    )
    assert r.returncode == (0 if how == "os._exit" else -9), r.stderr[-3000:]
    assert list(tmp_path.glob("src_*.c"))  # the compile returned and the kernel ran
    (d,) = run_dirs(tmp_path / "T" / "bound")
    m = load_manifest(d)
    assert m.status == EXITED != INTERRUPTED, (m.status, m.error)
    assert EXITED_NOTE in (m.error or ""), m.error
    assert 0 < len(m.records) < 20  # as far as the worker got
    show = subprocess.run(
        [sys.executable, "-m", "tltrace", "show", "--trace-dir", "T", "bound"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "exited" in show.stdout and "interrupted" not in show.stdout, show.stdout + show.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "tltrace", "show", "--json", "--trace-dir", "T", "bound"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(listed.stdout)
    validator(strict=False).validate(data)  # "exited" is a status the published schema names
    assert [c["status"] for inv in data["invocations"] for c in inv["compiles"]] == [EXITED], data


def test_the_os_exit_wrapper_is_there_only_while_tracing_and_leaves_a_later_wrapper_alone() -> None:
    code = textwrap.dedent(
        """
        import os
        from tltrace.session import exits
        before = os._exit
        exits.install(); exits.install()
        during = os._exit
        exits.uninstall()
        after = os._exit
        exits.install()
        def theirs(n): return ours(n)  # someone wraps os._exit over ours (coverage.py does)
        ours, os._exit = os._exit, theirs
        exits.uninstall()
        print(during is exits._exit, during is not before, after is before, os._exit is theirs,
              exits.installed())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True", "True", "False"]


def test_the_summary_says_exited_neither_failed_nor_interrupted() -> None:
    from tltrace.format.records import RunManifest
    from tltrace.render.terminal import summary_line

    m = RunManifest(
        "run_x", "s", kernel="add", status=EXITED, error=f"the compile returned, but its {EXITED_NOTE}"
    )
    line = summary_line(m, Path("/nowhere"), label="add 64").plain
    assert line.startswith("[add 64] exited before its records were written: 0 passes"), line

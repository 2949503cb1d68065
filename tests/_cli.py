"""The tltrace CLI in a child process, one way for every test (conftest's `run_cli` is the in-process one).

A test that needs a real process (a signal, g++ writing to the process's stderr, the installed
entry point, a child's environment) calls `cli_proc`; the `cli_proc` fixture (tests/conftest.py)
runs it in the test's tmp_path. A test that compiles is marked `compile` by conftest from its
source (it names `"run",` or the script), as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# A `tilelang` package that raises ImportError, first on a child's PYTHONPATH while `quick_children` is on:
# conftest turns it on for each test of the quick selection (-m "not compile") that is not marked compile,
# so a test whose child compiles fails and says so instead of making the quick loop slow.
NO_TILELANG = Path(__file__).resolve().parent / "_no_tilelang"
quick_children = False


# tltrace's pytest plugin loaded from this checkout in a pytester run, whether or not the pytest11 entry
# point is installed (blocking the entry point's name keeps it from being registered twice).
PLUGIN = ["-p", "no:tltrace", "-p", "tltrace.pytest_plugin"]


def cli_env(*, clean: bool = False, **extra: str) -> dict[str, str]:
    """The child's environment: this one, TileLang's kernel cache off, no TL_LOWER_TRACE*, this checkout
    first on PYTHONPATH (`clean`: and no TLTRACE_* setting of the caller's); `extra` on top. Under the
    quick selection, a test not marked compile gets a child in which `import tilelang` fails."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR") and not (clean and k.startswith("TLTRACE_"))
    }
    env["TILELANG_DISABLE_CACHE"] = "1"
    first = [str(REPO), *([str(NO_TILELANG)] if quick_children else [])]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*first, env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def proc(
    cmd: list[object],
    *,
    cwd: Path,
    rc: int | None = None,
    timeout: float | None = 600,
    env: dict[str, str] | None = None,
    **extra: str,
) -> subprocess.CompletedProcess:
    """Run `cmd` in `cwd`, its output captured as text, and return it.

    `rc`: assert the exit status, showing the output's ends when it differs. `env` replaces the
    environment (`cli_env()`, else); `extra` variables go on top of it.
    """
    p = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env={**(env if env is not None else cli_env()), **extra},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if rc is not None:
        assert p.returncode == rc, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    return p


def py_proc(*args: object, **kw) -> subprocess.CompletedProcess:
    """`python ARGS` (this interpreter) through `proc`: a script, or `-c CODE`."""
    return proc([sys.executable, *args], **kw)


def cli_argv(*args: object) -> list[str]:
    """The command line of `python -m tltrace ARGS` with this interpreter (for a child the test signals)."""
    return [sys.executable, "-m", "tltrace", *map(str, args)]


def cli_proc(*args: object, entry_point: bool = False, **kw) -> subprocess.CompletedProcess:
    """Run `python -m tltrace ARGS` (the installed `tltrace` with entry_point=True) through `proc`
    (`cwd`, `rc`, `timeout`, `env`, extra variables) and return it."""
    if entry_point:
        from ._records import require_tltrace_executable

        return proc([require_tltrace_executable(), *args], **kw)
    return proc(cli_argv(*args), **kw)


def cli_invoke(*args: object, env: dict[str, str] | None = None, catch_exceptions: bool = False):
    """The tltrace CLI in this process (typer's CliRunner): the Result, stdout and stderr apart.

    conftest's `run_cli` fixture is this in the test's tmp_path; a module-scoped fixture calls it
    directly. sys.argv is put back after (the run command sets it for the script it runs).
    """
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    saved_argv = sys.argv[:]
    try:
        return CliRunner().invoke(app, [str(a) for a in args], env=env, catch_exceptions=catch_exceptions)
    finally:
        sys.argv[:] = saved_argv


def script_traced(
    home: Path,
    name: str,
    text: str,
    *options: object,
    args: tuple[object, ...] = (),
    trace_dir: Path | None = None,
    rc: int | None = 0,
):
    """Write `text` to home/`name` and trace it in this process: `tltrace run -q OPTIONS --trace-dir
    TRACE_DIR SCRIPT ARGS` (TRACE_DIR: home/trace). `rc`: the exit status asserted. Returns (script, Result)."""
    script = home / name
    script.write_text(text)
    res = cli_invoke("run", "-q", *options, "--trace-dir", trace_dir or home / "trace", script, *args)
    if rc is not None:
        assert res.exit_code == rc, res.output
    return script, res


def diff_last_two(trace_dir: object, *more: object) -> list[str]:
    """The arguments of `diff-runs` of the last two elementwise_add compiles under `trace_dir`, `more` after."""
    return [
        "diff-runs",
        "--trace-dir",
        str(trace_dir),
        "elementwise_add:-2",
        "elementwise_add:-1",
        *map(str, more),
    ]


def one_line_error(res, code: int, *needles: str) -> str:
    """Assert an in-process Result refused in one line: exit `code`, a single `tltrace: error: ...` line on
    stderr naming every needle, no traceback. Return the line."""
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tltrace: error: "), res.stderr
    for n in needles:
        assert n in err[0], err[0]
    return err[0]

"""Ctrl+C during a compile: recorded and reported as interrupted, exit 130, every time.

A real SIGINT reaches a real `tltrace run` subprocess while TileLang runs a pass (or
codegen): a helper tool in the script sends it from inside TVM's pass callback, the
moment that used to turn into a FAILED pass with a TVM RuntimeError and exit 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ._records import read_manifest
from .conftest import EXAMPLES

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {examples!r})
    import tilelang
    from tilelang.instrumentation import (PassEventObserver, PassInstrumentationTool, StackedPassInstrument,
                                          register_pass_instrumentation_tool)
    from elementwise_add import make_add

    AT = sys.argv[1]
    SIG = getattr(signal, sys.argv[2]) if len(sys.argv) > 2 else signal.SIGINT
    seen = [0]

    class Obs(PassEventObserver):
        def pass_started(self, mod, event):
            seen[0] += 1
            if AT != "codegen" and seen[0] == int(AT):
                os.kill(os.getpid(), SIG)

    class Tool(PassInstrumentationTool):
        def create_pass_instrument(self):
            return StackedPassInstrument(Obs())

        def run_codegen(self, event, next_call):
            if AT == "codegen":
                os.kill(os.getpid(), SIG)
            return next_call()

    register_pass_instrumentation_tool("sigint-helper", Tool)
    tilelang.compile(make_add(256, 128), target="c", execution_backend="cython")
    print("not reached")
    """
)


@pytest.mark.parametrize("at", ["25", "codegen"])
def test_ctrl_c_mid_compile_is_interrupted(tmp_path: Path, at: str) -> None:
    script = tmp_path / "stop.py"
    script.write_text(SCRIPT.format(examples=str(EXAMPLES)))
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "NO_COLOR": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "tr", str(script), at],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 130, p.stderr[-2000:]
    assert "not reached" not in p.stdout
    assert p.stderr.rstrip().splitlines()[-1] == "KeyboardInterrupt"
    assert "Traceback" not in p.stderr and "RuntimeError" not in p.stderr
    (run,) = (tmp_path / "tr" / "stop" / ".run_records").glob("run_*")
    m = read_manifest(run)
    assert m["status"] == "interrupted" and m["error"] == "KeyboardInterrupt"
    assert [r for r in m["records"] if r["status"] == "failed"] == []
    assert "] interrupted: " in p.stdout and "[add " in p.stdout


@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_or_sighup_mid_compile_is_interrupted_too(tmp_path: Path, sig: str, code: int) -> None:
    """Before, SIGTERM and SIGHUP killed `tltrace run` at once: no manifest, the compile left `running`."""
    script = tmp_path / "stop.py"
    script.write_text(SCRIPT.format(examples=str(EXAMPLES)))
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "NO_COLOR": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "tr", str(script), "25", sig],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == code, p.stderr[-2000:]
    assert "not reached" not in p.stdout
    assert p.stderr.rstrip().splitlines()[-1] == f"{sig} (tltrace run was terminated)"
    assert "Traceback" not in p.stderr and "RuntimeError" not in p.stderr
    (run,) = (tmp_path / "tr" / "stop" / ".run_records").glob("run_*")
    m = read_manifest(run)
    assert m["status"] == "interrupted" and m["error"] == f"KeyboardInterrupt ({sig})"
    assert [r for r in m["records"] if r["status"] == "failed"] == []
    assert "] interrupted: " in p.stdout and "[add " in p.stdout

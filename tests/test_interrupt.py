"""Ctrl+C during a compile: recorded and reported as interrupted, exit 130, every time.

A real SIGINT reaches a real `tltrace run` subprocess while TileLang runs a pass (or
codegen): a helper tool in the script sends it from inside TVM's pass callback, the
moment that used to turn into a FAILED pass with a TVM RuntimeError and exit 1.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ._cli import cli_proc
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


def _stopped(tmp_path: Path, *args: str, rc: int, said: str):
    """`tltrace run` of SCRIPT stopping itself (`args`: where, then the signal): exit `rc`, `said` as the
    last line of stderr and no traceback; returns the process and its one run's manifest."""
    script = tmp_path / "stop.py"
    script.write_text(SCRIPT.format(examples=str(EXAMPLES)))
    p = cli_proc(
        "run", "-q", "--trace-dir", "tr", script, *args, cwd=tmp_path, rc=rc, timeout=180, NO_COLOR="1"
    )
    assert "not reached" not in p.stdout
    assert p.stderr.rstrip().splitlines()[-1] == said
    assert "Traceback" not in p.stderr and "RuntimeError" not in p.stderr
    (run,) = (tmp_path / "tr" / "stop" / ".run_records").glob("run_*")
    return p, read_manifest(run)


@pytest.mark.parametrize("at", ["25", "codegen"])
def test_ctrl_c_mid_compile_is_interrupted(tmp_path: Path, at: str) -> None:
    p, m = _stopped(tmp_path, at, rc=130, said="KeyboardInterrupt")
    assert m["status"] == "interrupted" and m["error"] == "KeyboardInterrupt"
    assert [r for r in m["records"] if r["status"] == "failed"] == []
    assert "] interrupted: " in p.stdout and "[add " in p.stdout


@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_or_sighup_mid_compile_is_interrupted_too(tmp_path: Path, sig: str, code: int) -> None:
    """Before, SIGTERM and SIGHUP killed `tltrace run` at once: no manifest, the compile left `running`."""
    p, m = _stopped(tmp_path, "25", sig, rc=code, said=f"{sig} (tltrace run was terminated)")
    assert m["status"] == "interrupted" and m["error"] == f"KeyboardInterrupt ({sig})"
    assert [r for r in m["records"] if r["status"] == "failed"] == []
    assert "] interrupted: " in p.stdout and "[add " in p.stdout

"""Shared fixtures: real TileLang compiles on the CPU, kernel cache off, traces in tmp dirs."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

os.environ["TILELANG_DISABLE_CACHE"] = "1"
os.environ.pop("TL_LOWER_TRACE", None)
os.environ.pop("TL_LOWER_TRACE_DIR", None)
os.environ.setdefault("TLTRACE_EXAMPLES_CPU", "1")  # examples compile for the CPU in tests

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.fixture
def examples_dir(tmp_path: Path) -> Path:
    """A private copy of examples/ (scripts and working files live beside the trace)."""
    dest = tmp_path / "examples"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.fixture
def run_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Invoke the tltrace CLI in-process (typer CliRunner), cwd = tmp_path; returns the Result."""
    from typer.testing import CliRunner

    from tltrace.cli import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str, env: dict | None = None):
        saved_argv = sys.argv[:]
        try:
            return runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)
        finally:
            sys.argv[:] = saved_argv

    return invoke

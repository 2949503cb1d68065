"""Each command through a real subprocess of the installed `tltrace` entry point."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ._records import EXAMPLES, newest_manifest, require_tltrace_executable, summary, tltrace_executable

TLTRACE = tltrace_executable()


@pytest.fixture(scope="module", autouse=True)
def _entry_point_installed() -> None:
    """Skip without the entry point; under CI (which installs it) fail instead."""
    require_tltrace_executable()


def tltrace(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    assert TLTRACE is not None
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "NO_COLOR": "1"}
    env.pop("TL_LOWER_TRACE", None)
    return subprocess.run(
        [TLTRACE, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """Two identical traced runs of elementwise_add, made by `tltrace run` itself."""
    work = tmp_path_factory.mktemp("cli")
    for _ in range(2):
        res = tltrace("run", "-q", "--trace-dir", "traces", EXAMPLES / "elementwise_add.py", cwd=work)
        assert res.returncode == 0, res.stderr
        assert f"] done: {summary(newest_manifest(work / 'traces' / 'elementwise_add'))}" in res.stdout
    return work


def _passes(work: Path) -> int:
    return len(newest_manifest(work / "traces" / "elementwise_add")["records"])


def test_show(work: Path) -> None:
    res = tltrace("show", "--trace-dir", "traces", "--json", cwd=work)
    assert res.returncode == 0, res.stderr
    assert [r["position"] for r in json.loads(res.stdout)["runs"]] == [-2, -1]
    res = tltrace(
        "show", "--trace-dir", "traces", "elementwise_add", "-1", "--pass", "LayoutInference", cwd=work
    )
    assert res.returncode == 0 and "LayoutInference  CHANGED" in res.stdout


def test_diff_runs_identical_exit_0(work: Path) -> None:
    res = tltrace("diff-runs", "--trace-dir", "traces", "elementwise_add:-2", "elementwise_add:-1", cwd=work)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"same: {_passes(work)} passes" in res.stdout


def test_damaged_run_one_line_no_traceback(work: Path, tmp_path: Path) -> None:
    subprocess.run(["cp", "-a", str(work / "traces"), str(tmp_path / "t")], check=True)
    run = sorted((tmp_path / "t" / "elementwise_add" / ".run_records").glob("run_*"))[-1]
    (run / "manifest.json").write_text('{"schema_version": 1, "records": [{"ind')
    res = tltrace("show", "--trace-dir", tmp_path / "t", "elementwise_add", "latest", cwd=work)
    assert res.returncode == 3 and res.stdout == ""
    assert res.stderr.startswith("tltrace: error: manifest ") and res.stderr.count("\n") == 1


def test_clean_last(work: Path) -> None:
    res = tltrace("clean", "--trace-dir", "traces", "--keep", "1", cwd=work)
    assert res.returncode == 0, res.stderr
    assert "removed 1 run(s) of 1 invocation(s), kept 1" in res.stdout
    assert len(list((work / "traces" / "elementwise_add" / ".run_records").glob("run_*"))) == 1

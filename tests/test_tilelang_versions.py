"""TileLang releases: what tltrace declares, and one clear line on a release without the seam.

The no-seam check runs the real thing: a venv with TileLang 0.1.13 (made by
`.ci/tilelang-venv 0.1.13 DIR`), named by TLTRACE_NOSEAM_VENV. Without it the test
skips, except under CI, where .ci/run makes that venv and a missing one fails.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tltrace.runner import MIN_TILELANG

from ._cli import proc

REPO = Path(__file__).resolve().parent.parent


def _tilelang_requirement() -> str:
    text = (REPO / "pyproject.toml").read_text()
    m = re.search(r'^tilelang\s*=\s*\[\s*"(tilelang[^"]*)"\s*\]', text, re.M)
    assert m, "pyproject.toml has no tilelang extra"
    return m.group(1)


def test_declared_floor_is_the_one_the_cli_names() -> None:
    req = _tilelang_requirement()
    assert f">={MIN_TILELANG}" in req and "<0.2" in req, req
    assert "==" not in req  # a pin would move the user's TileLang


def _noseam_venv() -> Path:
    venv = os.environ.get("TLTRACE_NOSEAM_VENV")
    if not venv or not (Path(venv) / "bin" / "tltrace").exists():
        msg = "set TLTRACE_NOSEAM_VENV to a venv made by `.ci/tilelang-venv 0.1.13 DIR`"
        if os.environ.get("CI"):
            pytest.fail(msg + " (.ci/run makes it)")
        pytest.skip(msg)
    return Path(venv)


def test_tilelang_without_the_seam_is_one_line(tmp_path: Path) -> None:
    venv = _noseam_venv()
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's own tltrace
    have = proc(
        [py, "-c", "import importlib.metadata as m; print(m.version('tilelang'))"],
        cwd=tmp_path,
        env=env,
        rc=0,
    ).stdout.strip()
    script = tmp_path / "kernel.py"
    script.write_text("open('ran', 'w').write('yes')\n")
    p = proc(
        [venv / "bin" / "tltrace", "run", "--trace-dir", "t", script],
        cwd=tmp_path,
        env=env,
        rc=2,
        timeout=300,
    )
    assert p.stdout == "" and "Traceback" not in p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"tltrace: error: TileLang {have} has no ")
    assert f"needs TileLang >= {MIN_TILELANG}" in lines[0]
    assert not (tmp_path / "ran").exists()  # the script did not run untraced


def test_enable_without_the_seam_is_one_line(tmp_path: Path) -> None:
    """enable() checks the seam as `tltrace run` does: a UsageError of one line, not ModuleNotFoundError."""
    venv = _noseam_venv()
    code = (
        "import tltrace\n"
        "from tltrace.errors import UsageError\n"
        "try:\n"
        "    tltrace.enable(trace_dir='t')\n"
        "except UsageError as exc:\n"
        "    print('REFUSED', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's own tltrace
    p = proc([venv / "bin" / "python", "-c", code], cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    [line] = p.stdout.splitlines()
    assert line.startswith("REFUSED TileLang ") and f"needs TileLang >= {MIN_TILELANG}" in line

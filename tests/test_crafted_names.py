"""A kernel name and signature holding control characters, from a crafted manifest (issue 49).

Each command that prints a compile's name (`show --facts`'s heading, `diff-runs`' A:/B: lines,
its note on different kernels and its signature line, `check`'s heading of each compile) prints
it as render/visible.py spells a name: on one line, so a newline in it cannot start a line that
looks like tltrace's own, and no control character reaches the terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ._records import recorded_subset, require_tltrace_executable, run_dirs

KERNEL = "add\n\x1b[31mtltrace: error: forged\r\u2028"
SIGNATURE = "add\ntltrace: error: forged\x1b]0;t\x07 sig\u2029"
RAW = "\x1b\x07\r\u2028\u2029\x85"


@pytest.fixture(scope="module")
def work(recorded: Path, tmp_path_factory) -> Path:
    td = recorded_subset(recorded, tmp_path_factory.mktemp("names") / "traces", elementwise_add=slice(0, 2))
    runs = run_dirs(td / "elementwise_add")
    for run in runs[1:]:
        m = json.loads((run / "manifest.json").read_text())
        m["kernel"], m["signature"] = KERNEL, SIGNATURE
        (run / "manifest.json").write_text(json.dumps(m))
    return td


def tl(td: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [require_tltrace_executable(), *args, "--trace-dir", str(td)],
        capture_output=True, env=env, timeout=120,
    )  # fmt: skip


def _lines(res: subprocess.CompletedProcess) -> list[str]:
    out = (res.stdout + res.stderr).decode()
    assert not any(c in out for c in RAW), out
    return out.split("\n")


@pytest.mark.parametrize(
    "args",
    [
        ("show", "elementwise_add", "-1", "--facts"),
        ("diff-runs", "elementwise_add:-2", "elementwise_add:-1"),
        ("diff-runs", "elementwise_add:-1", "elementwise_add:-2", "--all"),
    ],
)
def test_a_crafted_name_never_starts_a_line(work: Path, args: tuple[str, ...]) -> None:
    res = tl(work, *args)
    assert res.returncode in (0, 1), res
    lines = _lines(res)
    assert not [ln for ln in lines if ln.startswith(("tltrace:", "^[[31mtltrace"))], lines
    assert any("add^Jtltrace: error: forged^[]0;t^G sig<U+2029>" in ln for ln in lines) or any(
        "add^J^[[31mtltrace: error: forged^M<U+2028>" in ln for ln in lines
    ), lines

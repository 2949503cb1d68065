"""The report's JavaScript run under node, one way for every test of a JS twin: `node -e SCRIPT` with the
packaged assets' folder as its first argument and the test's data, written as JSON, as its second."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

ASSETS = resources.files("tltrace.render").joinpath("assets")


def node() -> str:
    """The node executable; the test skips without one, except under CI, where it fails."""
    exe = shutil.which("node")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed")
        pytest.skip("node is not installed")
    return exe


def run_node(script: str, feed: Any = None, tmp_path: Path | None = None, *, timeout: float = 120) -> Any:
    """Run `script` under node (process.argv[1]: the assets' folder; [2]: `feed` as a JSON file in
    `tmp_path`, when given) and return what it printed, read as JSON. Exit 0 is asserted."""
    args = []
    if tmp_path is not None:
        data = tmp_path / "feed.json"
        data.write_text(json.dumps(feed), encoding="utf-8")
        args.append(str(data))
    with resources.as_file(ASSETS) as d:
        proc = subprocess.run(
            [node(), "-e", script, str(d), *args], capture_output=True, text=True, timeout=timeout
        )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)

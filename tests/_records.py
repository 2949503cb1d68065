"""Helpers shared by the run-records tests: real traced runs of the examples, made in-process."""

from __future__ import annotations

import subprocess
from pathlib import Path

from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def trace(trace_dir: Path, *runs: tuple[str, ...]) -> Path:
    """Run each (script, *args) of examples/ under `tltrace run -q`; return trace_dir."""
    from tltrace.cli import app

    runner = CliRunner()
    for script, *args in runs:
        res = runner.invoke(app, ["run", "-q", "--trace-dir", str(trace_dir), str(EXAMPLES / script), *args],
                            catch_exceptions=False)
        assert res.exit_code == 0, res.output
    return trace_dir


def copy_tree(src: Path, dest: Path) -> Path:
    """Copy a trace dir keeping its hard links (the store's .objects rely on link counts)."""
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    return dest


def run_dirs(script_dir: Path) -> list[Path]:
    return sorted((script_dir / ".run_records").glob("run_*"))

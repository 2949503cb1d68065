"""The pytest plugin's cost at collection: `pytest --co` of 50 tests with and without it (no --tltrace).

Prints the numbers (median of 3); a shared machine's timings are noise, so no test
asserts on them (this was a test that only printed).

Run: `python bench/plugin_collect.py`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLUGIN = ("-p", "no:tltrace", "-p", "tltrace.pytest_plugin")  # as tests/test_pytest_plugin.py


def once(cwd: Path, env: dict, *extra: str) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *extra, "test_plain.py"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if res.returncode != 0 or "50 tests collected" not in res.stdout:
        raise SystemExit(res.stdout + res.stderr)
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        cwd = Path(d)
        (cwd / "test_plain.py").write_text("".join(f"def test_{i}():\n    pass\n" for i in range(50)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        without = [once(cwd, env, "-p", "no:tltrace") for _ in range(3)]
        with_plugin = [once(cwd, env, *PLUGIN) for _ in range(3)]
    print(
        f"pytest --co, 50 tests: without the plugin {statistics.median(without) * 1000:.0f} ms, "
        f"with it (no --tltrace) {statistics.median(with_plugin) * 1000:.0f} ms (median of 3)"
    )


if __name__ == "__main__":
    main()

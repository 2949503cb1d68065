"""`tltrace bundle --best`: the compile of the autotuner's best config, as the script noted it.

A CPU autotune-shaped script (bench/autotune_cpu.py's GEMM configs, each its own
`tilelang.compile`) notes one config as best with `tltrace.note_best` on TileLang's own
AutotuneResult (no GPU here to measure latencies, so the script picks one), then
`bundle --best` must hold exactly that compile and replay it the same.
"""

from __future__ import annotations

import io
import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from tltrace.history import runs as history_runs

from ._cli import cli_proc

BENCH = Path(__file__).resolve().parent.parent / "bench"

SCRIPT = f"""
import sys
sys.path.insert(0, {str(BENCH)!r})
import autotune_cpu as A
import tilelang
import tltrace
from tilelang.autotuner.param import AutotuneResult

kernels = []
for cfg in A.configs(3):
    kernels.append((cfg, tilelang.compile(A.make_kernel(64, 64, 32, **cfg), target="c", execution_backend="cython")))
cfg, k = kernels[int(sys.argv[1])]  # the "best" (a stand-in for the measured latency)
result = AutotuneResult(latency=0.25, config=cfg, libcode=k.get_kernel_source(), func=k.prim_func, kernel=k)
note = tltrace.note_best(result)
print("NOTED", note is not None)
"""


def _tltrace(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("best")
    (work / "tune.py").write_text(SCRIPT)
    p = _tltrace("run", "--quiet", "--trace-dir", "tr", "tune.py", "1", cwd=work)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "NOTED True" in p.stdout
    return work


def test_bundle_best_holds_the_noted_compile_and_replays(tuned: Path, run_cli, tmp_path: Path) -> None:
    runs = list(history_runs.open_selection("tune.py", None, tuned / "tr", None).runs)
    assert len(runs) == 3
    res = run_cli("bundle", "--trace-dir", str(tuned / "tr"), "tune.py", "--best", "-o", "-")
    assert res.exit_code == 0, res.output
    zf = zipfile.ZipFile(io.BytesIO(res.stdout_bytes))
    info = json.loads(zf.read("bundle.json"))
    (entry,) = info["compiles"]
    # The second config compiled is the noted one: its run, and its config in bundle.json.
    order = sorted(runs, key=lambda r: r.require().started or 0)
    assert entry["run_id"] == order[1].require().run_id
    assert info["best"]["latency"] == 0.25 and set(info["best"]["config"]) >= {"block_M", "block_N"}
    assert "best: " in res.stderr
    bundle = tmp_path / "best.zip"
    bundle.write_bytes(res.stdout_bytes)
    res = run_cli("replay", str(bundle))
    assert res.exit_code == 0 and res.stdout.count(": same:") == 1, res.output


def test_bundle_best_without_a_note_is_one_line(tmp_path: Path, run_cli) -> None:
    from ._records import trace

    td = trace(tmp_path / "t", ("elementwise_add.py",))
    res = run_cli(
        "bundle", "--trace-dir", str(td), "elementwise_add", "--best", "-o", str(tmp_path / "b.zip")
    )
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.output
    assert "tltrace.note_best(result)" in res.stderr
    assert not (tmp_path / "b.zip").exists()


def test_note_best_is_a_no_op_when_tracing_is_off() -> None:
    import tltrace

    assert tltrace.enabled() is None
    assert tltrace.note_best(object()) is None


def test_bundle_best_falls_back_on_the_launch_shape(tuned: Path, run_cli, tmp_path: Path) -> None:
    """A backend whose kernel source is not the recorded codegen text: the note's launch shape decides."""
    from ._records import copy_tree

    td = copy_tree(tuned / "tr", tmp_path / "tr")
    (note_file,) = (td / ".best").glob("*.json")
    data = json.loads(note_file.read_text())
    data["best"][0]["hash"] = "0" * 20
    note_file.write_text(json.dumps(data))
    res = run_cli("bundle", "--trace-dir", str(td), "tune.py", "--best", "-o", "-")
    assert res.exit_code == 0, res.output
    info = json.loads(zipfile.ZipFile(io.BytesIO(res.stdout_bytes)).read("bundle.json"))
    runs = sorted(
        history_runs.open_selection("tune.py", None, td, None).runs, key=lambda r: r.require().started or 0
    )
    assert info["compiles"][0]["run_id"] == runs[1].require().run_id and info["best"]["matched"] == "launch"

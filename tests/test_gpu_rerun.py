"""Reproducers and bundles on a CUDA GPU (run on the device machine: `python -m pytest -m gpu tests/test_gpu_rerun.py`).

A repro of a pass of TileLang's upstream FlashAttention example (`.upstream/examples/...`,
see tests/test_gpu_upstream.py; skips without the copy), run standalone from another
directory; and a bundle of this repository's GEMM example compiled for CUDA, replayed
from another directory. Passes are picked from the manifest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ._records import read_manifest
from .test_gpu_upstream import AUTOTUNE, FLASH, _env, _need, _trace

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("need_gpu")]

REPO = Path(__file__).resolve().parent.parent


def _tltrace(*args: str, cwd: Path, timeout: int = 540) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
    )
    print(p.stdout[-4000:], p.stderr[-4000:])
    return p


def test_repro_of_an_upstream_flash_attention_pass(tmp_path: Path) -> None:
    _need(FLASH)
    p = _trace(FLASH, tmp_path / "t", "--quiet")
    assert p.returncode == 0
    runs = sorted((tmp_path / "t" / FLASH.stem).glob(".run_records/run_*/manifest.json"))
    assert runs
    manifest = read_manifest(runs[0].parent)
    changed = [r for r in manifest["records"] if r.get("status") == "changed"]
    name = "LowerTileOp" if any(r["name"] == "LowerTileOp" for r in changed) else changed[-1]["name"]
    out = tmp_path / "repro"
    p = _tltrace("repro", "--trace-dir", "t", FLASH.stem, "--pass", name, "-o", str(out), cwd=tmp_path)
    assert p.returncode == 0 and "reproduced" in p.stdout
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(out, elsewhere / "repro")
    p = subprocess.run(
        [sys.executable, *_standalone_flags(), str(elsewhere / "repro" / "repro.py")],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env=_standalone_env(),
        timeout=540,
    )
    print(p.stdout[-4000:], p.stderr[-2000:])
    assert p.returncode == 0 and p.stdout.strip().endswith("reproduced")
    assert "imported tltrace" not in p.stdout


def _standalone_flags() -> list[str]:
    """`-I` where this Python finds TileLang without PYTHONPATH; the device machine's is on PYTHONPATH
    (`.device/env.sh`), which `-I` ignores: there the run keeps PYTHONPATH, less this checkout."""
    p = subprocess.run([sys.executable, "-I", "-c", "import tilelang"], capture_output=True, env=_env())
    return ["-I"] if p.returncode == 0 else []


def _standalone_env() -> dict[str, str]:
    env = _env()
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if Path(p).resolve() != REPO)
    return env


def test_bundle_of_a_cuda_gemm_replays_elsewhere(tmp_path: Path) -> None:
    script = tmp_path / "gemm.py"
    shutil.copy(REPO / "examples" / "gemm.py", script)
    shutil.copy(REPO / "examples" / "_common.py", tmp_path / "_common.py")
    p = _trace(script, tmp_path / "t", "--quiet")
    assert p.returncode == 0
    bundle = tmp_path / "gemm.zip"
    assert _tltrace("bundle", "--trace-dir", "t", "gemm.py", "-o", str(bundle), cwd=tmp_path).returncode == 0
    script.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = _tltrace("replay", str(bundle), cwd=elsewhere)
    assert p.returncode == 0 and ": same:" in p.stdout


BEST = """
import sys
sys.path.insert(0, {upstream!r})
import example_gemm_autotune as ex
import tltrace

grid = ex.get_configs
ex.get_configs = lambda *a, **k: grid(*a, **k)[::72]  # 4 configs of the upstream grid
result = ex.get_best_config(1024, 1024, 1024)
tltrace.note_best(result)
print("BEST", result.config)
"""


def test_bundle_of_the_upstream_autotuners_best_config_replays_elsewhere(tmp_path: Path) -> None:
    _need(AUTOTUNE)
    script = tmp_path / "tune_best.py"
    script.write_text(BEST.format(upstream=str(AUTOTUNE.parent)))
    p = _trace(script, tmp_path / "t", "--quiet")
    assert p.returncode == 0 and "BEST " in p.stdout
    best = p.stdout.split("BEST ", 1)[1].splitlines()[0]
    bundle = tmp_path / "best.zip"
    p = _tltrace("bundle", "--trace-dir", "t", "tune_best.py", "--best", "-o", str(bundle), cwd=tmp_path)
    assert p.returncode == 0 and "best: " in p.stdout
    import ast
    import json
    import zipfile

    info = json.loads(zipfile.ZipFile(bundle).read("bundle.json"))
    assert len(info["compiles"]) == 1
    assert {str(k): str(v) for k, v in info["best"]["config"].items()} == {
        str(k): str(v) for k, v in ast.literal_eval(best).items()
    }
    script.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = _tltrace("replay", str(bundle), cwd=elsewhere)
    assert p.returncode == 0 and p.stdout.count(": same:") == 1
